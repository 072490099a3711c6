"""INSTANCE_NORMALIZATION (NNAPI code 57, feature level 3): no AOSP corpus model tests it.

Definition (NNAPI ``types.spec``): for a 4-D input, each (batch, channel) slice is normalized
over height and width: ``out = (x - mean) * gamma / sqrt(var + epsilon) + beta`` with the
slice's mean and population variance; inputs 0 the tensor (NHWC, or NCHW when input 4 is
true), 1 gamma, 2 beta, 3 epsilon (FLOAT32 scalars for TENSOR_FLOAT32, FLOAT16 for
TENSOR_FLOAT16), 4 the layout flag. The cases cover both layouts, batch > 1, non-square
slices, a constant slice (variance 0) and float16.

Goldens: :func:`_formula` (numpy, float64, the definition above written out), or a hand
calculation given in the comment.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, one_operation

FAMILY = "instance_norm"


def _formula(x_nhwc: np.ndarray, gamma: float, beta: float, eps: float) -> np.ndarray:
    """numpy: mean and population variance over axes (1, 2) per (batch, channel)."""
    x = x_nhwc.astype(np.float64)
    mean = x.mean(axis=(1, 2), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=(1, 2), keepdims=True)
    return (x - mean) * gamma / np.sqrt(var + eps) + beta


def _case(name, x_nhwc, gamma, beta, eps, nchw=False, t=T.TENSOR_FLOAT32, expected=None,
          golden="numpy formula: (x - mean) * gamma / sqrt(var + epsilon) + beta per (batch, channel)"):
    s = T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32
    dtype = np.float16 if t == T.TENSOR_FLOAT16 else np.float32
    want = _formula(x_nhwc, gamma, beta, eps) if expected is None else np.asarray(expected)
    to_layout = (lambda a: a.transpose(0, 3, 1, 2)) if nchw else (lambda a: a)
    return one_operation(name, FAMILY, Op.INSTANCE_NORMALIZATION,
                         [inp(t, to_layout(x_nhwc).astype(dtype)), const(s, gamma), const(s, beta),
                          const(s, eps), const(T.BOOL, nchw)],
                         [expect(t, to_layout(want).astype(dtype))], 3, golden)


def models():
    rng = np.random.default_rng(57)
    x = rng.uniform(-2, 2, size=(2, 2, 3, 2))  # batch 2, 2x3 slices (non-square), 2 channels
    one = np.array([0.0, 2.0, 4.0, 6.0]).reshape(1, 2, 2, 1)
    const_channel = np.stack([np.full((2, 2), 3.0), np.array([[1.0, 2.0], [3.0, 5.0]])], -1)[None]
    return [
        _case("instance_norm_nhwc", x, 1.5, -0.5, 1e-3),
        _case("instance_norm_nchw", x, 1.5, -0.5, 1e-3, nchw=True),
        _case("instance_norm_nhwc_gamma_neg", x, -0.25, 2.0, 1e-5),
        # hand calculation: x = 0, 2, 4, 6 -> mean 3, var (9 + 1 + 1 + 9) / 4 = 5;
        # (x - 3) / sqrt(5) = -1.341641, -0.447214, 0.447214, 1.341641 (gamma 1, beta 0, eps 0)
        _case("instance_norm_float16_hand", one, 1.0, 0.0, 0.0, t=T.TENSOR_FLOAT16,
              expected=np.array([-1.341641, -0.447214, 0.447214, 1.341641]).reshape(1, 2, 2, 1),
              golden="hand calculation (in cts/specs/instance_norm.py)"),
        # hand calculation: channel 0 is constant 3 -> x - mean = 0 everywhere -> beta (0.25);
        # channel 1: 1, 2, 3, 5 -> mean 2.75, var (3.0625 + 0.5625 + 0.0625 + 5.0625) / 4
        # = 2.1875; with eps 0.01 the divisor is sqrt(2.1975) = 1.482396
        _case("instance_norm_constant_slice", const_channel, 1.0, 0.25, 0.01,
              expected=np.stack([np.full((2, 2), 0.25),
                                 (np.array([[1.0, 2.0], [3.0, 5.0]]) - 2.75) / 1.482396 + 0.25], -1)[None],
              golden="hand calculation (in cts/specs/instance_norm.py)"),
    ]
