"""SOFTMAX (NNAPI code 25), LOG_SOFTMAX (90, FL3), L2_NORMALIZATION (11) and
LOCAL_RESPONSE_NORMALIZATION (13): the
TENSOR_QUANT8_ASYMM_SIGNED SOFTMAX rows, quantization regimes of the input (zero point 0 /
mid / extreme, scale < 1 / > 1) and batch > 1 the AOSP corpus leaves empty
(``nncts coverage``).

Definitions (NNAPI ``types.spec``). SOFTMAX: input 0, input 1 beta (FLOAT32; FLOAT16 for a
TENSOR_FLOAT16 input), optional input 2 axis (FL3, default -1): out = exp(beta * (x - max))
/ sum exp(beta * (x - max)) along the axis; a TENSOR_QUANT8_ASYMM output has scale 1/256
and zero point 0, a TENSOR_QUANT8_ASYMM_SIGNED one (FL4) scale 1/256 and zero point -128.
LOG_SOFTMAX: input 0, beta, axis: out = beta * x - log(sum exp(beta * x)) along the axis.
L2_NORMALIZATION: input 0, optional axis (FL3, default -1): out = x / sqrt(sum x^2) along
the axis; a TENSOR_QUANT8_ASYMM output has scale 1/128 and zero point 128, a
TENSOR_QUANT8_ASYMM_SIGNED one scale 1/128 and zero point 0.
LOCAL_RESPONSE_NORMALIZATION: input 0, radius, bias, alpha, beta, optional axis (FL3, default
-1): sqr_sum[c] = sum of x[j]^2 for j in [c - radius, c + radius] within the axis, out = x /
(bias + alpha * sqr_sum) ^ beta (here on a non-last axis, and in float16).

Golden: the numpy formulas above (:data:`FORMULAS`), on the dequantized inputs.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, one_operation
from .typed import case, fs, values_for, x
from .variations import QUANT_REGIMES

FAMILY = "normalization"
F32, F16, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED


def softmax(v, beta, axis):
    e = np.exp(beta * (v - v.max(axis=axis, keepdims=True)))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(v, beta, axis):
    z = beta * v
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))


def l2_normalization(v, axis):
    return v / np.sqrt((v * v).sum(axis=axis, keepdims=True))


GOLDEN = {op: f"numpy formula: {text} along the axis (cts/specs/normalization.py)" for op, text in (
    (Op.SOFTMAX, "exp(beta * (x - max)) / sum"), (Op.LOG_SOFTMAX, "beta * x - log(sum exp(beta * x))"),
    (Op.L2_NORMALIZATION, "x / sqrt(sum x^2)"))}
SOFTMAX_OUT = {Q8: (1 / 256, 0), Q8S: (1 / 256, -128)}
L2_OUT = {Q8: (1 / 128, 128), Q8S: (1 / 128, 0)}
_TNAME = {F32: "float32", F16: "float16", Q8: "quant8", Q8S: "quant8_signed"}


def _softmax(k, t, regime, shape, beta, axis, level):
    rname, scale, zp = QUANT_REGIMES[t][regime]
    v = values_for(np.random.default_rng(k), shape, t, (scale, zp))
    extra = [] if axis is None else [const(T.INT32, axis)]
    name = f"softmax_{_TNAME[t]}_rank{len(shape)}" + ("" if axis is None else f"_axis{axis}") + f"_{rname}"
    return case(name, FAMILY, Op.SOFTMAX, t, [x(v), fs(beta), *extra],
                lambda v, b, *_: softmax(v, b, -1 if axis is None else axis), GOLDEN[Op.SOFTMAX], level,
                q=(scale, zp), out_q=SOFTMAX_OUT[t])


def _l2(k, t, regime, shape, axis, level):
    rname, scale, zp = QUANT_REGIMES[t][regime]
    v = values_for(np.random.default_rng(20 + k), shape, t, (scale, zp))
    extra = [] if axis is None else [const(T.INT32, axis)]
    name = f"l2_normalization_{_TNAME[t]}_rank{len(shape)}" + ("" if axis is None else f"_axis{axis}") + f"_{rname}"
    return case(name, FAMILY, Op.L2_NORMALIZATION, t, [x(v), *extra],
                lambda v, *_: l2_normalization(v, -1 if axis is None else axis), GOLDEN[Op.L2_NORMALIZATION],
                level, q=(scale, zp), out_q=L2_OUT[t])


def _log_softmax(k, t, shape, beta, axis):
    v = values_for(np.random.default_rng(40 + k), shape, t)
    return case(f"log_softmax_{_TNAME[t]}_batch{shape[0]}_axis{axis}", FAMILY, Op.LOG_SOFTMAX, t,
                [x(v), fs(beta), const(T.INT32, axis)], lambda v, b, *_: log_softmax(v, b, axis),
                GOLDEN[Op.LOG_SOFTMAX], 3)


def local_response_normalization(v, radius, bias, alpha, beta, axis):
    sq = np.moveaxis(v, axis, -1) ** 2
    n = sq.shape[-1]
    window = np.stack([sq[..., max(0, c - radius):c + radius + 1].sum(-1) for c in range(n)], -1)
    return v / np.moveaxis(bias + alpha * window, -1, axis) ** beta


def _lrn() -> list:
    """FL3 LOCAL_RESPONSE_NORMALIZATION along axis 1 of a [2, 5, 3] input (float32 and
    float16); the corpus has the last axis only."""
    v = (np.arange(30).reshape(2, 5, 3) % 7 - 3) / 2
    out = []
    for t, s in ((F32, T.FLOAT32), (F16, T.FLOAT16)):
        want = local_response_normalization(v, 1, 1.0, 0.5, 0.75, 1)
        out.append(one_operation(f"local_response_normalization_axis1_{'float16' if t == F16 else 'float32'}",
                                 FAMILY, Op.LOCAL_RESPONSE_NORMALIZATION,
                                 [inp(t, v), const(T.INT32, 1), const(s, 1.0), const(s, 0.5), const(s, 0.75),
                                  const(T.INT32, 1)], [expect(t, want)], 3,
                                 "numpy formula: x / (bias + alpha * windowed sum of x^2 along the axis) ^ beta"))
    return out


def models():
    return [
        # SOFTMAX: beta keeps beta * (x - max) within a few units at each regime's scale
        _softmax(0, Q8, 1, (2, 5), 0.008, None, 1),
        _softmax(1, Q8, 2, (2, 1, 2, 4), 0.06, None, 1),
        _softmax(2, Q8S, 0, (3, 4), 0.03, None, 4),
        _softmax(3, Q8S, 1, (2, 3, 4), 0.008, -2, 4),
        _softmax(4, Q8S, 2, (2, 2, 3), 0.06, 1, 4),
        _l2(0, Q8, 0, (1, 2, 2, 3), None, 3),
        _l2(1, Q8, 1, (2, 3, 4), 1, 3),
        _l2(2, Q8, 2, (2, 2, 1, 4), None, 3),
        _l2(3, Q8S, 1, (3, 5), -1, 4),
        _l2(4, Q8S, 2, (2, 1, 3, 2), None, 4),
        _log_softmax(0, F32, (2, 5), 1.0, -1),
        _log_softmax(1, F16, (3, 2, 4), 0.5, 1),
        *_lrn(),
    ]
