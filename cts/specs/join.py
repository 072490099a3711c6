"""CONCATENATION (2, FL1), SPLIT (87, FL3), PACK (103, FL6), TILE (89, FL3), REVERSE (105,
FL7): the quantization regimes the AOSP corpus leaves out.

Definitions (NNAPI ``types.spec``): CONCATENATION inputs 0..n-1 tensors equal off the axis,
input n the INT32 axis; SPLIT input 1 the axis, 2 the number of equal outputs; PACK input 0
the INT32 axis of the new dimension, inputs 1..n tensors of equal shape; TILE input 1 the
multiple per dimension; REVERSE input 1 a one-element TENSOR_INT32 axis. Every quantized
input and output shares one scale and zero point.

Cases: TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED in every regime of
:data:`~cts.specs.variations.QUANT_REGIMES`, 2-D and 3-D inputs with a batch of 2. No negative
axis: CONCATENATION and REVERSE are defined for axes in [0, rank), PACK for [0, rank]
(AOSP's kernels check ``axis >= 0``; ``runtime/ops`` documents the same), so the coverage
cells "axis = negative" of these three cannot be filled.

Goldens: ``numpy.concatenate``, ``numpy.split``, ``numpy.stack``, ``numpy.tile``,
``numpy.flip`` (:func:`.typed.cases`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import DATA, cases, data

FAMILY = "join"
Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED


def models():
    return [
        *cases("concatenation_axis1", FAMILY, Op.CONCATENATION, [data(2, 3), data(2, 2), const(T.INT32, 1)],
               [DATA], lambda a, b, **_: np.concatenate([a, b], axis=1), "numpy.concatenate([a, b], axis=1)",
               {Q8: 1, Q8S: 4}),
        *cases("split_axis1_3", FAMILY, Op.SPLIT, [data(2, 6), const(T.INT32, 1), const(T.INT32, 3)],
               [DATA] * 3, lambda x, **_: np.split(x, 3, axis=1), "numpy.split(x, 3, axis=1)", {Q8: 3, Q8S: 4}),
        *cases("pack_axis1", FAMILY, Op.PACK, [const(T.INT32, 1), data(2, 3), data(2, 3), data(2, 3)], [DATA],
               lambda *x, **_: np.stack(x, axis=1), "numpy.stack([a, b, c], axis=1)", {Q8: 6, Q8S: 6}),
        *cases("tile", FAMILY, Op.TILE, [data(2, 3), const(T.TENSOR_INT32, np.array([2, 1], np.int32))], [DATA],
               lambda x, **_: np.tile(x, (2, 1)), "numpy.tile(x, (2, 1))", {Q8: 3, Q8S: 4}),
        *cases("reverse_axis1", FAMILY, Op.REVERSE, [data(2, 3, 2), const(T.TENSOR_INT32, np.array([1], np.int32))],
               [DATA], lambda x, **_: np.flip(x, axis=1), "numpy.flip(x, axis=1)", {Q8: 7, Q8S: 7}),
    ]
