"""PAD (32, FL2) and PAD_V2 (69, FL3): the quantization regimes and batch sizes the AOSP
corpus leaves out (MIRROR_PAD: :mod:`.mirror_pad`).

Definitions (NNAPI ``types.spec``): input 1 is a [rank, 2] TENSOR_INT32 of (before, after)
paddings per dimension; PAD fills with zero (for quantized tensors the zero point, the
stored value of real 0; before FL3 the pad value of a TENSOR_QUANT8_ASYMM input with a
non-zero zero point is undefined, so those cases are FL3); PAD_V2 fills with input 2, a FLOAT32 (TENSOR_FLOAT32), FLOAT16
(TENSOR_FLOAT16) or INT32 scalar holding a stored value in the input's quantization
(quantized types). The output keeps the input's type, scale and zero point.

Cases: a batch of 2 (rank 3, every dimension padded unevenly, one side 0) in
TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED, every regime of
:data:`~cts.specs.variations.QUANT_REGIMES`.

Golden: ``numpy.pad(x, paddings, constant_values=v)`` on the dequantized input, v = 0
(PAD) or the pad value's real value (PAD_V2) (:func:`.typed.cases`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import DATA, FLOATS, cases, data

FAMILY = "pad"
Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
PADDINGS = np.array([[0, 1], [1, 2], [2, 0]], np.int32)


def _stored_pad(t) -> int:
    """PAD_V2's stored pad value: 37 steps above the type's minimum (no regime's zero point)."""
    return (0 if t == Q8 else -128) + 37


def _pad_value(t, scale, zp):
    if t in FLOATS:
        return const(T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32, 1.5)
    return const(T.INT32, _stored_pad(t))


def _real_pad(q) -> float:
    t, scale, zp = q
    return 1.5 if t in FLOATS else (_stored_pad(t) - zp) * scale


def models():
    paddings = const(T.TENSOR_INT32, PADDINGS)
    return [
        *cases("pad_batch2", FAMILY, Op.PAD, [data(2, 3, 2), paddings], [DATA],
               lambda x, **_: np.pad(x, PADDINGS), "numpy.pad(x, paddings) (zero fill)",
               {Q8: lambda scale, zp: 2 if zp == 0 else 3, Q8S: 4}),
        *cases("pad_v2_batch2", FAMILY, Op.PAD_V2, [data(2, 3, 2), paddings, _pad_value], [DATA],
               lambda x, q: np.pad(x, PADDINGS, constant_values=_real_pad(q)),
               "numpy.pad(x, paddings, constant_values=real pad value)", {Q8: 3, Q8S: 4}),
    ]
