"""Element-wise unary operations: RELU (NNAPI code 19), RELU1 (20), RELU6 (21), LOGISTIC (14),
TANH (28), FLOOR (8) of feature level 1; ABS (38), EXP (49), LOG (60), NEG (67), RSQRT (83),
SIN (85), SQRT (88) of FL3 (quantized RSQRT FL7); HARD_SWISH (99, FL4), ELU (98, FL4,
input 1 the scalar alpha of the input's float type): what the AOSP corpus leaves out.

Definition (NNAPI ``types.spec``): RELU max(0, x); RELU1 min(1, max(-1, x)); RELU6 min(6,
max(0, x)); LOGISTIC 1 / (1 + exp(-x)); TANH tanh(x); HARD_SWISH x * min(6, max(0, x + 3)) /
6; ABS |x|; EXP e^x; LOG ln x; NEG -x; RSQRT 1 / sqrt(x); SIN sin x; SQRT sqrt(x); FLOOR
floor(x). Quantized outputs: RELU, RELU1 and RELU6 keep the input's scale and zeroPoint;
LOGISTIC's is scale 1/256 with zeroPoint 0 (TENSOR_QUANT8_ASYMM) or -128
(TENSOR_QUANT8_ASYMM_SIGNED); TANH's scale 1/128 with zeroPoint 128 (TENSOR_QUANT8_ASYMM,
FL3) or 0 (signed); HARD_SWISH and RSQRT outputs have their own.

Cases: the quant regimes the corpus misses (zero point 0, mid-range, extreme; scale < 1 and
> 1, :data:`.typed.ZP`), on the input where the output's quantization is fixed; float16
RELU1 and LOGISTIC (FL3); batch > 1. Left out: zero-sized inputs of ELU and of the FL3 math
operations (AOSP registers them without ``allowZeroSizedInput``), and of HARD_SWISH (AOSP
accepts them, but a declared dimension 0 of a model input means "unknown": the zero-sized
tensor must come from another operation, as in AOSP's zero-sized tests). Quantized RSQRT meets the unsigned
zero point 255 on its output only (input reals <= 0 lie outside its domain): every result
saturates.

Golden: the numpy formulas of :data:`FORMULAS` on the real input values (dequantized
``(q - zeroPoint) * scale``), quantized outputs rounded half away from zero and saturated
(:func:`.typed.case`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, one_operation
from .typed import ZP, case, q, quarters, stored, v

FAMILY = "unary"
F32, F16, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
GOLDEN = "numpy formula: {} on the real input values (cts/specs/unary.py)"
FORMULAS = {
    Op.RELU: ("max(0, x)", lambda x: np.maximum(x, 0)), Op.RELU1: ("clip(x, -1, 1)", lambda x: np.clip(x, -1, 1)),
    Op.RELU6: ("clip(x, 0, 6)", lambda x: np.clip(x, 0, 6)),
    Op.LOGISTIC: ("1 / (1 + exp(-x))", lambda x: 1 / (1 + np.exp(-x))), Op.TANH: ("tanh(x)", np.tanh),
    Op.HARD_SWISH: ("x * clip(x + 3, 0, 6) / 6", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    Op.ABS: ("abs(x)", np.abs), Op.NEG: ("-x", np.negative), Op.EXP: ("exp(x)", np.exp), Op.LOG: ("log(x)", np.log),
    Op.SIN: ("sin(x)", np.sin), Op.SQRT: ("sqrt(x)", np.sqrt), Op.RSQRT: ("1 / sqrt(x)", lambda x: 1 / np.sqrt(x)),
    Op.FLOOR: ("floor(x)", np.floor),
}
#: Feature level per (operation, type) where it differs from the type's own (float32 and
#: quant8 FL1, float16 FL3, quant8 signed FL4).
LEVELS = {(Op.TANH, Q8): 3, (Op.RSQRT, Q8): 7, (Op.RSQRT, Q8S): 7, (Op.HARD_SWISH, F32): 4, (Op.HARD_SWISH, Q8): 4}
_FL3_MATH = (Op.ABS, Op.EXP, Op.LOG, Op.NEG, Op.RSQRT, Op.SIN, Op.SQRT)
#: Fixed output (scale, zero point) per (operation, type).
FIXED = {(Op.LOGISTIC, Q8): (1 / 256, 0), (Op.LOGISTIC, Q8S): (1 / 256, -128),
         (Op.TANH, Q8): (1 / 128, 128), (Op.TANH, Q8S): (1 / 128, 0)}


def _level(op, t: T) -> int:
    base = {F32: 1, Q8: 1, F16: 3, Q8S: 4}[t]
    return max(base, LEVELS.get((op, t), 3 if op in _FL3_MATH else 1))


def unary(name: str, op, x, out_q=None):
    """One model of ``op`` on tensor ``x``; the output's (scale, zero point): ``out_q``, the
    fixed one of LOGISTIC / TANH, or the input's (RELU, RELU1, RELU6)."""
    text, f = FORMULAS[op]
    scale, zp = out_q or FIXED.get((op, x.t), (x.scale, x.zp))
    return case(name, FAMILY, op, None, [x], f, GOLDEN.format(text), _level(op, x.t), out_t=x.t, out_q=(scale, zp))


def _quantized(rng) -> list:
    z8, z8s = ZP[Q8], ZP[Q8S]
    out = []
    # RELU / RELU1 / RELU6 (output quantization = input's): every regime the corpus misses
    relu_inputs = {
        "quant8_zp0_scale2": lambda: q(Q8, stored(rng, Q8, (2, 4), 0, 8), 2.0, 0),
        "quant8_zp_extreme": lambda: q(Q8, stored(rng, Q8, (2, 4), 100, 255), 0.05, z8["extreme"]),
        "quant8_signed_zp_mid_scale1.5": lambda: q(Q8S, stored(rng, Q8S, (2, 4), -28, -12), 1.5, z8s["mid"]),
        "quant8_signed_zp_extreme": lambda: q(Q8S, stored(rng, Q8S, (2, 4), -128, 20), 0.05, z8s["extreme"]),
    }
    for op in (Op.RELU, Op.RELU1, Op.RELU6):
        out += [unary(f"{op.name.lower()}_{k}", op, make()) for k, make in relu_inputs.items()]
    # LOGISTIC and TANH: fixed output quantization, so the regimes are the input's
    out += [
        unary("logistic_quant8_zp_mid_scale1.5", Op.LOGISTIC, q(Q8, stored(rng, Q8, (2, 4), 94, 106), 1.5, z8["mid"])),
        unary("logistic_quant8_zp_extreme", Op.LOGISTIC, q(Q8, stored(rng, Q8, (2, 4), 100, 255), 0.05, z8["extreme"])),
        unary("logistic_quant8_signed_zp_mid_scale1.25", Op.LOGISTIC,
              q(Q8S, stored(rng, Q8S, (2, 4), -26, -14), 1.25, z8s["mid"])),
        unary("tanh_quant8_zp0_scale1.5", Op.TANH, q(Q8, stored(rng, Q8, (2, 4), 0, 6), 1.5, 0)),
        unary("tanh_quant8_zp_extreme", Op.TANH, q(Q8, stored(rng, Q8, (2, 4), 160, 255), 0.03, z8["extreme"])),
        unary("tanh_quant8_signed_zp_extreme_scale1.25", Op.TANH,
              q(Q8S, stored(rng, Q8S, (2, 4), -128, -124), 1.25, z8s["extreme"])),
    ]
    # HARD_SWISH: own output quantization
    out += [
        unary("hard_swish_quant8_zp_extreme_batch2", Op.HARD_SWISH,
              q(Q8, stored(rng, Q8, (2, 4), 0, 255), 0.02, z8["extreme"]), (0.002, 250)),
        unary("hard_swish_quant8_scale1.25", Op.HARD_SWISH, q(Q8, stored(rng, Q8, (2, 4), 90, 110), 1.25, 100),
              (0.1, 20)),
        unary("hard_swish_quant8_signed_zp_mid_scale1.5", Op.HARD_SWISH,
              q(Q8S, stored(rng, Q8S, (2, 4), -26, -14), 1.5, z8s["mid"]), (0.0625, -120)),
    ]
    # RSQRT (FL7): positive reals only
    out += [
        unary("rsqrt_quant8_scale2", Op.RSQRT, q(Q8, stored(rng, Q8, (2, 4), 1, 255), 2.0, 0), (0.004, 10)),
        unary("rsqrt_quant8_signed_zp_extreme_out_zp0", Op.RSQRT,
              q(Q8S, stored(rng, Q8S, (2, 4), -127, 127), 0.5, z8s["extreme"]), (0.0125, 0)),
        unary("rsqrt_quant8_signed_zp_mid_scale1.5", Op.RSQRT,
              q(Q8S, stored(rng, Q8S, (2, 4), -19, 127), 1.5, z8s["mid"]), (0.005, -100)),
        # output zero point 255 represents reals <= 0 only: every (positive) result saturates
        # to 255, where a wrapping driver gives small values
        unary("rsqrt_quant8_out_zp_extreme_saturates", Op.RSQRT, q(Q8, stored(rng, Q8, (2, 4), 1, 255), 0.5, 0),
              (0.01, z8["extreme"])),
    ]
    return out


def _float(rng) -> list:
    """float16 RELU1 and LOGISTIC (FL3); batch > 1 in float32."""
    out = [unary("relu1_float16_batch2", Op.RELU1, v(F16, quarters(rng, (2, 3), -3, 3))),
           unary("logistic_float16_batch2", Op.LOGISTIC, v(F16, quarters(rng, (2, 3), -6, 6)))]
    for op in (Op.TANH, Op.HARD_SWISH, Op.ABS, Op.NEG, Op.EXP, Op.SIN, Op.FLOOR):
        out.append(unary(f"{op.name.lower()}_batch3", op, v(F32, quarters(rng, (3, 2, 2), -5, 5) + 0.125)))
    for op in (Op.LOG, Op.SQRT, Op.RSQRT):  # positive inputs
        out.append(unary(f"{op.name.lower()}_batch3", op, v(F32, quarters(rng, (3, 2, 2), 0.25, 9))))
    return out


def _elu(rng) -> list:
    """ELU (98, FL4): x if x > 0 else alpha * (exp(x) - 1), float32 (batch 2) and float16."""
    out = []
    for name, t, s, alpha in (("elu_batch2", F32, T.FLOAT32, 0.5), ("elu_float16", F16, T.FLOAT16, 1.5)):
        x = quarters(rng, (2, 4), -4, 4)
        want = np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))
        out.append(one_operation(name, FAMILY, Op.ELU, [inp(t, x), const(s, alpha)], [expect(t, want)], 4,
                                 "numpy formula: where(x > 0, x, alpha * (exp(x) - 1))"))
    return out


def models():
    rng = np.random.default_rng(1)
    return [*_quantized(rng), *_float(rng), *_elu(rng)]
