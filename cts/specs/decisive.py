"""Specs that make used-but-undecided coverage cells decide (issue 24, effect coverage:
``nncts coverage`` lists a cell as use-only when no test's expected outputs change if the
cell's value is swapped for another value of its domain, :mod:`cts.coverage.effect`). Each
model here is built so that the swap is valid *and* changes an output:

- GATHER axis -1 on a square input: axis 0 is valid too and picks other values.
- DEPTH_TO_SPACE NHWC / NCHW on a [1, 4, 4, 4] input, valid in both layouts (the other
  layout gives another output shape).
- REDUCE_PROD over a positive axis of a [2, 3] input (the other axis is valid).
- MAX_POOL_2D / AVERAGE_POOL_2D quantized with fused RELU1 / RELU6 over values straddling
  the clamp bounds: the zero point and the scale decide where the activation clamps (without
  an activation both operations map stored values to stored values, whatever the
  quantization).
- RELU1 / RELU6 quantized at scales straddling 1, so the clamp bounds fall on stored values.
- TENSOR_QUANT8_ASYMM_SIGNED at zero point 0 (the corpus uses it only in zero-sized models)
  for DEQUANTIZE, QUANTIZE, L2_NORMALIZATION, LOGISTIC, TANH, SUB; PRELU's at -128; MUL at
  scales on both sides of 1.

Definitions: NNAPI ``types.spec`` (GATHER: out = take(input, indices, axis); DEPTH_TO_SPACE:
out[b, h*bs + i, w*bs + j, c] = in[b, h, w, (i*bs + j)*C_out + c] in NHWC; REDUCE_PROD:
product over the axes; pooling and
FuseCodes as in :mod:`.pool`; RELU1 = clamp(x, -1, 1), RELU6 = clamp(x, 0, 6); quantized
values real = (q - zeroPoint) * scale). Goldens: the numpy formulas below, on the
dequantized inputs, quantized half away from zero (:func:`.variations.quantize`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import FUSE, RELU1, RELU6, case, q, v

FAMILY = "decisive"
F32, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
GOLD = "numpy formula from the NNAPI definition (cts/specs/decisive.py)"


def _ramp(shape, lo, hi, t):
    """Stored values spread evenly over [lo, hi] (every value of a small tensor distinct)."""
    n = int(np.prod(shape))
    return np.round(np.linspace(lo, hi, n)).astype(np.int64).reshape(shape)


def _d2s_nhwc(a, bs):
    b, h, w, c = a.shape
    co = c // (bs * bs)
    return a.reshape(b, h, w, bs, bs, co).transpose(0, 1, 3, 2, 4, 5).reshape(b, h * bs, w * bs, co)


def _depth_to_space(nchw: bool):
    a = np.arange(64, dtype=np.float64).reshape(1, 4, 4, 4) / 4
    out = _d2s_nhwc(a.transpose(0, 2, 3, 1), 2).transpose(0, 3, 1, 2) if nchw else _d2s_nhwc(a, 2)
    name = f"depth_to_space_float32_{'nchw' if nchw else 'nhwc'}_both_layouts_valid"
    return case(name, FAMILY, Op.DEPTH_TO_SPACE, None,
                [v(F32, a), const(T.INT32, 2), const(T.BOOL, nchw)], lambda *_: out, GOLD, 3, out_t=F32)


def _pool(op, t, act, scale, zp, lo, hi):
    """A 2x2 / stride 2 VALID pool of a [1, 4, 4, 1] ramp with fused ``act``; the output
    keeps the input's quantization (NNAPI requires it)."""
    x = q(t, _ramp((1, 4, 4, 1), lo, hi, t), scale, zp)
    lo_f, hi_f = FUSE[act]

    def formula(a, *_):
        win = a.reshape(1, 2, 2, 2, 2, 1).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 2, 4, 1)
        pooled = win.max(axis=3) if op == Op.MAX_POOL_2D else win.mean(axis=3)
        return np.clip(pooled, lo_f, hi_f)
    name = f"{op.name.lower()}_{'quant8' if t == Q8 else 'quant8_signed'}_act{act}_zp{zp}_scale{scale:g}"
    ins = [x, const(T.INT32, 2), const(T.INT32, 2), const(T.INT32, 2), const(T.INT32, 2), const(T.INT32, 2),
           const(T.INT32, act)]
    return case(name, FAMILY, op, None, ins, formula, GOLD + " on the dequantized input", 1 if t == Q8 else 4,
                out_t=t, out_q=(scale, zp))


def _pools():
    # (type, scale, zero point, stored lo, hi): zero points 0 / mid / extreme and scales on
    # both sides of 1, each ramp straddling the activation's bounds in real values
    regimes = [(Q8, 0.5, 0, 0, 40), (Q8, 2.0, 100, 96, 104), (Q8, 0.25, 255, 200, 255), (Q8, 4.0, 128, 126, 130),
               (Q8S, 0.5, 0, -10, 20), (Q8S, 2.0, -20, -24, -16), (Q8S, 0.25, -128, -128, -90),
               (Q8S, 4.0, 10, 8, 12)]
    return [_pool(op, t, act, s, zp, lo, hi) for op in (Op.MAX_POOL_2D, Op.AVERAGE_POOL_2D)
            for t, s, zp, lo, hi in regimes for act in (RELU1, RELU6)]


def _unary(op, t, scale, zp, lo, hi, formula, out_q, level, tag=""):
    x = q(t, _ramp((2, 4), lo, hi, t), scale, zp)
    name = f"{op.name.lower()}_{'quant8' if t == Q8 else 'quant8_signed'}_zp{zp}_scale{scale:g}{tag}"
    return case(name, FAMILY, op, None, [x], formula, GOLD + " on the dequantized input", level,
                out_t=t, out_q=out_q)


def _signed_zero_point_0():
    x = q(Q8S, _ramp((2, 4), -100, 100, Q8S), 0.05, 0)
    l2 = lambda a: a / np.sqrt((a * a).sum(axis=-1, keepdims=True))  # noqa: E731
    sub_b = q(Q8S, _ramp((2, 4), 50, -50, Q8S), 0.05, 0)
    alpha = q(Q8S, np.array([[-128, -100, -60, -1]]), 0.01, -128)
    return [
        case("dequantize_quant8_signed_zp0", FAMILY, Op.DEQUANTIZE, None, [x], lambda a: a, GOLD, 4, out_t=F32),
        case("quantize_quant8_signed_zp0", FAMILY, Op.QUANTIZE, None,
             [v(F32, np.linspace(-3, 3, 8).reshape(2, 4))], lambda a: a, GOLD, 4, out_t=Q8S, out_q=(0.05, 0)),
        case("l2_normalization_quant8_signed_zp0", FAMILY, Op.L2_NORMALIZATION, None, [x], l2, GOLD, 4,
             out_t=Q8S, out_q=(1 / 128, 0)),
        case("logistic_quant8_signed_zp0", FAMILY, Op.LOGISTIC, None, [x], lambda a: 1 / (1 + np.exp(-a)),
             GOLD, 4, out_t=Q8S, out_q=(1 / 256, -128)),
        case("tanh_quant8_signed_zp0", FAMILY, Op.TANH, None, [x], np.tanh, GOLD, 4, out_t=Q8S,
             out_q=(1 / 128, 0)),
        case("sub_quant8_signed_zp0", FAMILY, Op.SUB, None, [x, sub_b, const(T.INT32, 0)],
             lambda a, b, _: a - b, GOLD, 4, out_t=Q8S, out_q=(0.1, 0)),
        case("prelu_quant8_signed_alpha_zp_min", FAMILY, Op.PRELU, None, [x, alpha],
             lambda a, al: np.where(a >= 0, a, a * al), GOLD, 4, out_t=Q8S, out_q=(0.05, 0)),
        case("mul_quant8_scale_large", FAMILY, Op.MUL, None,
             [q(Q8, _ramp((2, 4), 120, 136, Q8), 2.0, 128), q(Q8, _ramp((2, 4), 100, 140, Q8), 0.5, 120),
              const(T.INT32, 0)], lambda a, b, _: a * b, GOLD, 1, out_t=Q8, out_q=(4.0, 128)),
        case("mul_quant8_signed_scale_small", FAMILY, Op.MUL, None,
             [q(Q8S, _ramp((2, 4), -100, 100, Q8S), 0.05, 0), q(Q8S, _ramp((2, 4), 80, -80, Q8S), 0.05, 3),
              const(T.INT32, 0)], lambda a, b, _: a * b, GOLD, 4, out_t=Q8S, out_q=(0.125, -5)),
    ]


def models():
    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    return [
        case("gather_float32_negative_axis_square", FAMILY, Op.GATHER, None,
             [v(F32, a), const(T.INT32, -1), v(T.TENSOR_INT32, np.array([2, 0]))],
             lambda x, axis, idx: np.take(x, idx, axis=-1), GOLD, 3, out_t=F32),
        _depth_to_space(False), _depth_to_space(True),
        case("reduce_prod_float32_positive_axis", FAMILY, Op.REDUCE_PROD, None,
             [v(F32, np.array([[1, 2, 3], [4, 5, 6]], np.float32)), const(T.TENSOR_INT32, np.array([1])),
              const(T.BOOL, False)], lambda x, *_: x.prod(axis=1), GOLD, 3, out_t=F32),
        *_pools(),
        _unary(Op.RELU1, Q8, 4.0, 128, 120, 136, lambda a: np.clip(a, -1, 1), (4.0, 128), 1, "_straddle"),
        _unary(Op.RELU1, Q8S, 4.0, 0, -8, 8, lambda a: np.clip(a, -1, 1), (4.0, 0), 4, "_straddle"),
        _unary(Op.RELU6, Q8, 0.5, 100, 90, 120, lambda a: np.clip(a, 0, 6), (0.5, 100), 1, "_straddle"),
        *_signed_zero_point_0(),
    ]
