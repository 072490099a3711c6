"""MIRROR_PAD (NNAPI code 104, feature level 7): no AOSP corpus model tests it.

Definition (NNAPI ``types.spec``): input 0 a tensor of rank n, input 1 a [n, 2] TENSOR_INT32
of (before, after) paddings, input 2 the INT32 mode, 0 = REFLECT (the border element is not
repeated; paddings < dims) or 1 = SYMMETRIC (it is; paddings <= dims); the output has
input 0's type, scale and zeroPoint. The cases cover both modes, ranks 1 to 4, asymmetric
and maximal paddings, and TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32,
TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED, the quantized types in every regime of
:data:`~cts.specs.variations.QUANT_REGIMES` (:func:`.typed.cases`).

Goldens: ``numpy.pad`` with mode "reflect" (REFLECT) or "symmetric" (SYMMETRIC), an
independent library implementation, or the hand calculation of NNAPI's own example.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, one_operation
from .typed import DATA, cases, data

FAMILY = "mirror_pad"
MODES = {0: "reflect", 1: "symmetric"}


def _case(name, x, paddings, mode, t, scale=0.0, zp=0, expected=None):
    paddings = np.asarray(paddings, np.int32)
    if expected is None:
        expected, golden = np.pad(x, paddings, mode=MODES[mode]), f"numpy formula: numpy.pad(mode={MODES[mode]!r})"
    else:
        golden = "hand calculation (NNAPI's example, in cts/specs/mirror_pad.py)"
    return one_operation(name, FAMILY, Op.MIRROR_PAD,
                         [inp(t, x, scale, zp), const(T.TENSOR_INT32, paddings), const(T.INT32, mode)],
                         [expect(t, expected, scale, zp)], 7, golden)


def models():
    rng = np.random.default_rng(104)
    f32 = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    f16 = rng.uniform(-2, 2, (1, 2, 3, 2)).astype(np.float16)
    q8 = rng.integers(0, 256, (2, 3, 2)).astype(np.uint8)
    q8s = rng.integers(-128, 128, (4, 2)).astype(np.int8)
    return [
        # hand calculation: [1, 2, 3] padded (0, 2): REFLECT [1, 2, 3, 2, 1], SYMMETRIC [1, 2, 3, 3, 2]
        _case("mirror_pad_int32_reflect_example", np.array([1, 2, 3], np.int32), [[0, 2]], 0,
              T.TENSOR_INT32, expected=np.array([1, 2, 3, 2, 1], np.int32)),
        _case("mirror_pad_int32_symmetric_example", np.array([1, 2, 3], np.int32), [[0, 2]], 1,
              T.TENSOR_INT32, expected=np.array([1, 2, 3, 3, 2], np.int32)),
        _case("mirror_pad_float32_reflect", f32, [[2, 1], [0, 3]], 0, T.TENSOR_FLOAT32),
        _case("mirror_pad_float32_symmetric_max", f32, [[3, 3], [4, 0]], 1, T.TENSOR_FLOAT32),
        _case("mirror_pad_float16_symmetric_rank4", f16, [[0, 1], [1, 2], [2, 0], [1, 1]], 1,
              T.TENSOR_FLOAT16),
        _case("mirror_pad_quant8_reflect_rank3", q8, [[1, 1], [2, 1], [0, 1]], 0, T.TENSOR_QUANT8_ASYMM,
              0.5, 128),
        _case("mirror_pad_quant8_signed_symmetric", q8s, [[2, 4], [2, 1]], 1, T.TENSOR_QUANT8_ASYMM_SIGNED,
              0.25, -3),
        # every quantization regime (zero point 0, mid, extreme; scale below and above 1)
        *cases("mirror_pad_reflect", FAMILY, Op.MIRROR_PAD,
               [data(3, 4), const(T.TENSOR_INT32, np.array([[1, 2], [3, 0]], np.int32)), const(T.INT32, 0)],
               [DATA], lambda x, **_: np.pad(x, [[1, 2], [3, 0]], mode="reflect"), "numpy.pad(mode='reflect')",
               {T.TENSOR_QUANT8_ASYMM: 7, T.TENSOR_QUANT8_ASYMM_SIGNED: 7}, seed=104),
    ]
