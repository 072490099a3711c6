"""RESHAPE (22, FL1), SQUEEZE (34, FL2), EXPAND_DIMS (50, FL3), TRANSPOSE (37, FL2), RANK
(101, FL4), FILL (100, FL4): the types and quantization regimes the AOSP corpus leaves out.

Definitions (NNAPI ``types.spec``): RESHAPE input 1 the new shape (one -1 inferred);
SQUEEZE input 1 the dimensions of size 1 to drop (optional, NO_VALUE = every size-1
dimension); EXPAND_DIMS input 1 the INT32 axis of the new size-1 dimension; TRANSPOSE
input 1 the permutation (optional: NO_VALUE = the reversed dimensions, AOSP registers it
with ``allowOmittedOperand``); RANK's output is the INT32 scalar rank of any tensor type;
FILL input 0 the output dimensions (TENSOR_INT32), input 1 the scalar value (FLOAT16,
FLOAT32 or INT32 as the output). Quantized outputs keep the input's scale and zero point.

Cases: TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED in every regime of
:data:`~cts.specs.variations.QUANT_REGIMES`; RESHAPE's TENSOR_FLOAT16 and TENSOR_INT32
(FL6) and a batch of 2; TRANSPOSE with the permutation omitted; RANK on every operand
type it accepts (TENSOR_QUANT16_ASYMM/SYMM, TENSOR_QUANT8_SYMM, per-channel, TENSOR_BOOL8).

Goldens: ``numpy.reshape``, ``numpy.squeeze``, ``numpy.expand_dims``, ``numpy.transpose``,
``numpy.ndim`` (:func:`.typed.cases`), ``numpy.full``.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, omitted, one_operation
from .typed import DATA, cases, data

FAMILY = "reshape"
Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED


def _i32(*v):
    return const(T.TENSOR_INT32, np.array(v, np.int32))


def models():
    rank_types = {t: 4 for t in (T.TENSOR_FLOAT16, Q8, Q8S, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM,
                                 T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.TENSOR_BOOL8)}
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    return [
        *cases("reshape_batch2", FAMILY, Op.RESHAPE, [data(2, 3, 4), _i32(4, -1)], [DATA],
               lambda x, **_: x.reshape(4, 6), "numpy.reshape(x, (4, 6))",
               {T.TENSOR_FLOAT16: 3, T.TENSOR_INT32: 6, Q8: 1, Q8S: 4}),
        *cases("squeeze", FAMILY, Op.SQUEEZE, [data(1, 3, 1, 2), _i32(0, 2)], [DATA],
               lambda x, **_: np.squeeze(x, (0, 2)), "numpy.squeeze(x, (0, 2))", {Q8: 2, Q8S: 4}),
        *cases("expand_dims", FAMILY, Op.EXPAND_DIMS, [data(2, 3), const(T.INT32, 1)], [DATA],
               lambda x, **_: np.expand_dims(x, 1), "numpy.expand_dims(x, 1)", {Q8: 3, Q8S: 4}),
        *cases("transpose", FAMILY, Op.TRANSPOSE, [data(2, 3, 4), _i32(2, 0, 1)], [DATA],
               lambda x, **_: np.transpose(x, (2, 0, 1)), "numpy.transpose(x, (2, 0, 1))", {Q8: 2, Q8S: 4}),
        # hand calculation: perm omitted = reversed dimensions, [2, 3, 4] -> [4, 3, 2], out[k, j, i] = x[i, j, k]
        one_operation("transpose_perm_omitted", FAMILY, Op.TRANSPOSE,
                      [inp(T.TENSOR_FLOAT32, x), omitted(T.TENSOR_INT32)],
                      [expect(T.TENSOR_FLOAT32, np.array([[[x[i, j, k] for i in range(2)] for j in range(3)]
                                                          for k in range(4)], np.float32))],
                      2, "hand calculation (reversed dimensions, in cts/specs/reshape.py)"),
        *cases("rank", FAMILY, Op.RANK, [data(2, 1, 3)], [T.INT32], lambda x, **_: np.int32(np.ndim(x)),
               "numpy.ndim(x)", rank_types),
        *[one_operation(f"fill_{name}", FAMILY, Op.FILL, [inp(T.TENSOR_INT32, np.array(dims, np.int32)),
                                                          const(scalar, value)],
                        [expect(tensor, np.full(dims, value))], 4, f"numpy formula: numpy.full({dims}, {value})")
          for name, dims, scalar, tensor, value in (
              ("float32_batch2", (2, 3, 1), T.FLOAT32, T.TENSOR_FLOAT32, -1.25),
              ("float16", (4,), T.FLOAT16, T.TENSOR_FLOAT16, 0.5),
              ("int32", (1, 2, 2, 2), T.INT32, T.TENSOR_INT32, 7))],
    ]
