"""MEAN (31, FL2), REDUCE_MAX (77), REDUCE_MIN (78), REDUCE_PROD (79), REDUCE_SUM (80),
REDUCE_ALL (75), REDUCE_ANY (76), ARGMAX (39), ARGMIN (40), TOPK_V2 (90) (FL3): the types,
quantization regimes and parameter values the AOSP corpus leaves out.

Definitions (NNAPI ``types.spec``): MEAN input 1 the axes (TENSOR_INT32, negative counts
from the end), input 2 keep_dims (INT32, non-zero = keep reduced dimensions as size 1);
REDUCE_* input 1 the axes, input 2 keep_dims (BOOL); REDUCE_MAX/MIN outputs keep the
input's scale and zero point (MEAN's here too); ARGMAX/ARGMIN input 1 the INT32 axis, output
the TENSOR_INT32 index of the largest/smallest value; TOPK_V2 input 1 k: output 0 the k
largest values of the last dimension in descending order, output 1 their indices.

Cases: TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED in every regime of
:data:`~cts.specs.variations.QUANT_REGIMES` (distinct values where ties would make the
index ambiguous); REDUCE_PROD in TENSOR_FLOAT16 and TENSOR_FLOAT32 with a negative axis,
keep_dims true and a batch of 2; REDUCE_SUM in both float types over two axes, one negative,
keep_dims false; REDUCE_ALL and REDUCE_ANY on TENSOR_BOOL8 with keep_dims true and false.

Goldens: ``numpy.mean``, ``numpy.max``, ``numpy.min``, ``numpy.prod``, ``numpy.sum``,
``numpy.all``, ``numpy.any``, ``numpy.argmax``,
``numpy.argmin``, ``numpy.argsort`` on the dequantized input (:func:`.typed.cases`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import DATA, cases, data

FAMILY = "reduce"
Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
QUANT = {Q8: 3, Q8S: 4}


def _axes(*v):
    return const(T.TENSOR_INT32, np.array(v, np.int32))


def _topk(x, k):
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


def models():
    return [
        *cases("mean_axis1", FAMILY, Op.MEAN, [data(2, 3, 4), _axes(1), const(T.INT32, 0)], [DATA],
               lambda x, **_: x.mean(axis=1), "numpy.mean(x, axis=1)", {Q8: 2, Q8S: 4}),
        *cases("reduce_max_axes0_2", FAMILY, Op.REDUCE_MAX, [data(2, 3, 4), _axes(0, 2), const(T.BOOL, True)],
               [DATA], lambda x, **_: x.max(axis=(0, 2), keepdims=True), "numpy.max(x, axis=(0, 2), keepdims=True)",
               QUANT),
        *cases("reduce_min_axes0_2", FAMILY, Op.REDUCE_MIN, [data(2, 3, 4), _axes(0, 2), const(T.BOOL, True)],
               [DATA], lambda x, **_: x.min(axis=(0, 2), keepdims=True), "numpy.min(x, axis=(0, 2), keepdims=True)",
               QUANT),
        *cases("reduce_prod_negative_keep_dims", FAMILY, Op.REDUCE_PROD,
               [data(2, 3), _axes(-1), const(T.BOOL, True)], [DATA],
               lambda x, **_: x.prod(axis=-1, keepdims=True), "numpy.prod(x, axis=-1, keepdims=True)",
               {T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3}),
        *cases("argmax_axis1", FAMILY, Op.ARGMAX, [data(2, 5, distinct=True), const(T.INT32, 1)],
               [T.TENSOR_INT32], lambda x, **_: np.argmax(x, axis=1).astype(np.int32), "numpy.argmax(x, axis=1)",
               QUANT),
        *cases("argmin_axis1", FAMILY, Op.ARGMIN, [data(2, 5, distinct=True), const(T.INT32, 1)],
               [T.TENSOR_INT32], lambda x, **_: np.argmin(x, axis=1).astype(np.int32), "numpy.argmin(x, axis=1)",
               QUANT),
        *cases("reduce_sum_axes0_neg1", FAMILY, Op.REDUCE_SUM, [data(2, 3, 4), _axes(0, -1), const(T.BOOL, False)],
               [DATA], lambda x, **_: x.sum(axis=(0, -1)), "numpy.sum(x, axis=(0, -1))",
               {T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3}),
        *cases("reduce_all_axis1_keep_dims", FAMILY, Op.REDUCE_ALL, [data(3, 2, 2), _axes(1), const(T.BOOL, True)],
               [DATA], lambda x, **_: x.all(axis=1, keepdims=True), "numpy.all(x, axis=1, keepdims=True)",
               {T.TENSOR_BOOL8: 3}, seed=75),
        *cases("reduce_any_axis_neg1", FAMILY, Op.REDUCE_ANY, [data(3, 2, 2), _axes(-1), const(T.BOOL, False)],
               [DATA], lambda x, **_: x.any(axis=-1), "numpy.any(x, axis=-1)", {T.TENSOR_BOOL8: 3}, seed=76),
        *cases("topk_v2_k2", FAMILY, Op.TOPK_V2, [data(2, 5, distinct=True), const(T.INT32, 2)],
               [DATA, T.TENSOR_INT32], lambda x, **_: _topk(x, 2),
               "the first k of numpy.argsort(-x) on the last axis, values and indices", QUANT),
    ]
