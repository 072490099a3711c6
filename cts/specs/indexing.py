"""STRIDED_SLICE (35, FL2), SLICE (86, FL3), GATHER (51, FL3), EMBEDDING_LOOKUP (7, FL1),
HASHTABLE_LOOKUP (10, FL1): the types and quantization regimes the AOSP corpus leaves out.

Definitions (NNAPI ``types.spec``): STRIDED_SLICE inputs 1-3 begin, end, strides per
dimension (negative begin/end count from the end, a negative stride walks backwards), 4-6
begin_mask, end_mask, shrink_axis_mask; SLICE inputs 1 begin and 2 size (-1: to the end);
GATHER input 1 the axis, 2 the indices (output shape: input dims before the axis, the
indices' shape, the dims after); EMBEDDING_LOOKUP input 0 the row indices, 1 the values;
HASHTABLE_LOOKUP input 0 the lookups, 1 the sorted keys, 2 the values: output 0 the value
rows of the found keys (a miss gives a row of zeros), output 1 the hits (TENSOR_QUANT8_ASYMM
1 or 0, scale 1, zero point 0). Quantized outputs keep the values' scale and zero point.

Cases: TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED in every regime of
:data:`~cts.specs.variations.QUANT_REGIMES`; SLICE TENSOR_INT32; STRIDED_SLICE with a
negative begin and stride; HASHTABLE_LOOKUP TENSOR_INT32 values with a miss, and quantized
values in every regime with every lookup found (what a miss writes into a quantized row,
stored 0 or the zero point, the definition does not say).

Goldens: numpy indexing, ``numpy.take``, ``numpy.searchsorted`` (:func:`.typed.cases`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import DATA, cases, data

FAMILY = "indexing"
Q8, Q8S, I32 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32
HITS = (Q8, 1.0, 0)


def _i32(v):
    return const(I32, np.array(v, np.int32))


def _hashtable(name, lookups, keys, levels):
    """HASHTABLE_LOOKUP of ``lookups`` in sorted ``keys`` over a [3, 2] values tensor."""
    lookups, keys = np.array(lookups, np.int32), np.array(keys, np.int32)
    pos = np.clip(np.searchsorted(keys, lookups), 0, len(keys) - 1)
    hit = keys[pos] == lookups

    def formula(values, **_):
        return np.where(hit[:, None], values[pos], 0.0), hit.astype(np.uint8)
    return cases(name, FAMILY, Op.HASHTABLE_LOOKUP, [_i32(lookups), _i32(keys), data(3, 2)], [DATA, HITS],
                 formula, "value rows at numpy.searchsorted(keys, lookups) where the key matches, else 0",
                 levels)


def models():
    idx = np.array([[2, 0], [1, 1]], np.int32)
    return [
        *cases("strided_slice_negative", FAMILY, Op.STRIDED_SLICE,
               [data(2, 5, 4), _i32([0, 1, -1]), _i32([2, 5, 0]), _i32([1, 2, -2]),
                const(T.INT32, 0), const(T.INT32, 0), const(T.INT32, 0)], [DATA],
               lambda x, **_: x[0:2, 1:5:2, -1:0:-2], "x[0:2, 1:5:2, -1:0:-2]", {Q8: 2, Q8S: 4}),
        *cases("slice", FAMILY, Op.SLICE, [data(2, 3, 4), _i32([0, 1, 1]), _i32([2, -1, 2])], [DATA],
               lambda x, **_: x[0:2, 1:, 1:3], "x[0:2, 1:, 1:3] (size -1: to the end)", {I32: 3, Q8: 3, Q8S: 4}),
        *cases("gather_axis1", FAMILY, Op.GATHER, [data(3, 4), const(T.INT32, 1), const(I32, idx)], [DATA],
               lambda x, **_: np.take(x, idx, axis=1), "numpy.take(x, indices, axis=1)", {Q8: 3, Q8S: 4}),
        *cases("embedding_lookup", FAMILY, Op.EMBEDDING_LOOKUP, [_i32([3, 0, 3]), data(4, 2)], [DATA],
               lambda v, **_: v[[3, 0, 3]], "values[lookups]", {Q8: 3, Q8S: 4}),
        *_hashtable("hashtable_lookup_miss", [7, 4, 9, 3], [3, 7, 9], {I32: 1}),
        *_hashtable("hashtable_lookup_hits", [7, 3, 9, 3], [3, 7, 9], {Q8: 1}),
    ]
