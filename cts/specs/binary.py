"""Broadcasting binary arithmetic: ADD (NNAPI code 0, FL1), MUL (18, FL1), SUB (36, FL2),
DIV (30, FL2), MAXIMUM (65, FL3), MINIMUM (66, FL3), POW (70, FL3), PRELU (71, FL3), with
their FL3-FL4 types: what the AOSP corpus leaves out.

Definition (NNAPI ``types.spec``): ADD input0 + input1, SUB input0 - input1, MUL input0 *
input1, DIV input0 / input1, each followed by the FuseCode of input 2 (NONE; RELU max(x,
0); RELU1 clamp to [-1, 1]; RELU6 clamp to [0, 6]); MAXIMUM / MINIMUM the larger / smaller
element; POW base ^ exponent; PRELU ``x if x >= 0 else alpha * x``. The two tensors
broadcast numpy-style (trailing dimensions aligned, equal or one of them 1). Quantized
TENSOR_QUANT8_ASYMM (FL1 ADD/MUL, FL3 SUB/MAXIMUM/MINIMUM/PRELU) and
TENSOR_QUANT8_ASYMM_SIGNED (FL4) operands each have their own scale and zeroPoint; MUL's
output scale must exceed input0 scale * input1 scale.

Cases: the fused RELU, RELU1 and RELU6 of ADD, MUL and DIV on results spanning every clamp
(below -1, in (-1, 1), in (1, 6), above 6), with both-sides and rank-lower broadcasting and
batch > 1; quantized operands with zero point 0, mid-range and extreme (the type's min or
max) and scales below and above 1 (:data:`.typed.ZP`); POW with same-shape
and size-1 broadcasting; PRELU in every broadcasting form. No zero-sized inputs: AOSP
registers MAXIMUM, MINIMUM, POW and PRELU without ``allowZeroSizedInput``.

Golden: the numpy formulas of :data:`FORMULAS` (written from the definition above) on the
real values the model feeds (dequantized ``(q - zeroPoint) * scale``), then the FuseCode
clamp, and for quantized outputs round half away from zero with saturation
(:func:`.typed.case`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import FUSE, FUSE_NAMES, RELU, RELU1, RELU6, ZP, case, q, quarters, spans_fuse_codes, stored, v

FAMILY = "binary"
F32, F16, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
GOLDEN = "numpy formula: {} on the real input values, FuseCode clamp (cts/specs/binary.py)"
FORMULAS = {
    Op.ADD: ("a + b", np.add), Op.SUB: ("a - b", np.subtract), Op.MUL: ("a * b", np.multiply),
    Op.DIV: ("a / b", np.divide), Op.MAXIMUM: ("numpy.maximum", np.maximum),
    Op.MINIMUM: ("numpy.minimum", np.minimum), Op.POW: ("numpy.power", np.power),
    Op.PRELU: ("x if x >= 0 else alpha * x", lambda x, a: np.where(x >= 0, x, a * x)),
}
#: Operations with a FuseCode input.
FUSED = (Op.ADD, Op.SUB, Op.MUL, Op.DIV)
#: Feature level of each (operation, quantized type); float32 levels in :data:`F32_LEVEL`.
QUANT_LEVEL = {(Op.ADD, Q8): 1, (Op.MUL, Q8): 1, (Op.SUB, Q8): 3, (Op.MAXIMUM, Q8): 3, (Op.MINIMUM, Q8): 3,
               (Op.PRELU, Q8): 3}
F32_LEVEL = {Op.ADD: 1, Op.MUL: 1, Op.SUB: 2, Op.DIV: 2, Op.MAXIMUM: 3, Op.MINIMUM: 3, Op.POW: 3, Op.PRELU: 3}


def _level(op, t: T) -> int:
    if t == F32:
        return F32_LEVEL[op]
    if t == F16:
        return 3
    return QUANT_LEVEL.get((op, t), 4)


def binary(name: str, op, a, b, out_t: T, out_scale: float = 0.0, out_zp: int = 0, act: int = 0):
    """One model of ``op`` on tensors ``a`` and ``b`` (FuseCode ``act`` for fused ops)."""
    text, f = FORMULAS[op]
    lo, hi = FUSE[act]
    fuse = [const(T.INT32, act)] if op in FUSED else []
    return case(name, FAMILY, op, None, [a, b, *fuse], lambda x, y, *_: np.clip(f(x, y), lo, hi),
                GOLDEN.format(text), _level(op, a.t), out_t=out_t, out_q=(out_scale, out_zp))


def _fused_activations(rng) -> list:
    """RELU, RELU1, RELU6 of ADD, MUL and DIV in float32 on results spanning every clamp."""
    out = []
    shapes = {  # (input0, input1): both sides broadcast; rank-lower with batch > 1
        "broadcast_both": ((2, 1, 3), (1, 4, 1)), "rank_lower_batch2": ((2, 3, 4), (4,))}
    divisors = np.array([-4.0, -2.0, -0.5, 0.5, 1.0, 2.0, 4.0])
    for op in (Op.ADD, Op.MUL, Op.DIV):
        for i, act in enumerate((RELU, RELU1, RELU6)):
            form = list(shapes)[i % 2]
            sa, sb = shapes[form]
            for _ in range(100):  # the first draw whose results span every clamp
                a = quarters(rng, sa, -12, 12)
                b = rng.choice(divisors, sb) if op == Op.DIV else quarters(rng, sb, -3, 3)
                if spans_fuse_codes(FORMULAS[op][1](a, b)):
                    break
            else:
                raise ValueError(f"{op.name} {form}: no draw spans every clamp")
            out.append(binary(f"{op.name.lower()}_{FUSE_NAMES[act]}_{form}", op, v(F32, a), v(F32, b), F32,
                              act=act))
    return out


def _quantized(rng) -> list:
    """Explicit quant regimes (zero point 0 / mid / extreme, scale < 1 / > 1)."""
    z8, z8s = ZP[Q8], ZP[Q8S]
    out = []
    for op in (Op.ADD, Op.SUB):
        # input0 zero point 255 (reals <= 0) and scale < 1; input1 zero point 0 (reals >= 0),
        # scale > 1; output mid-range
        a, b = q(Q8, stored(rng, Q8, (2, 3)), 0.5, z8["extreme"]), q(Q8, stored(rng, Q8, (2, 3), 0, 60), 2.0, 0)
        out.append(binary(f"{op.name.lower()}_quant8_zp_extreme", op, a, b, Q8, 2.0, z8["mid"]))
    # MUL: quant8 zero point 255 x mid-range, output 0.25 > 0.05 * 0.02; signed: zero point 0
    # x -128 with scale 2, output scale 2 > 0.1 * 2, batch 2, input1 rank-lower
    out.append(binary("mul_quant8_zp_extreme", Op.MUL, q(Q8, stored(rng, Q8, (2, 2, 3)), 0.05, z8["extreme"]),
                      q(Q8, stored(rng, Q8, (2, 2, 3)), 0.02, z8["mid"]), Q8, 0.25, 128))
    out.append(binary("mul_quant8_signed_zp0_extreme_scale2_rank_lower", Op.MUL,
                      q(Q8S, stored(rng, Q8S, (2, 3, 4)), 0.1, 0),
                      q(Q8S, stored(rng, Q8S, (4,), -128, -116), 2.0, z8s["extreme"]), Q8S, 2.0, z8s["mid"]))
    # MAXIMUM / MINIMUM: quant8 zero points 0 and 255 (the only overlap of their reals is 0:
    # input0 has mid-range, input1 crosses it), both sides broadcast; signed -128 (extreme)
    # with size-1 dims
    for op in (Op.MAXIMUM, Op.MINIMUM):
        name = op.name.lower()
        out.append(binary(f"{name}_quant8_zp0_extreme_broadcast_both", op,
                          q(Q8, stored(rng, Q8, (2, 1, 3), 0, 80), 0.25, 0),
                          q(Q8, stored(rng, Q8, (1, 4, 1), 175, 255), 0.25, z8["extreme"]), Q8, 0.25, z8["mid"]))
        out.append(binary(f"{name}_quant8_signed_zp_extreme_size1", op,
                          q(Q8S, stored(rng, Q8S, (3, 4), -128, 0), 0.125, z8s["extreme"]),
                          q(Q8S, stored(rng, Q8S, (1, 4)), 0.25, 3), Q8S, 0.25, z8s["mid"]))
    # PRELU: quant8 input zero point 255 (negative reals: alpha applies), alpha zero point 0,
    # output scale > 1; signed input -128 (extreme), alpha scale 2, both sides broadcast
    out.append(binary("prelu_quant8_zp_extreme_zp0_scale2", Op.PRELU,
                      q(Q8, stored(rng, Q8, (2, 3, 4)), 0.5, z8["extreme"]), q(Q8, stored(rng, Q8, (3, 1)), 0.02, 0),
                      Q8, 1.5, 200))
    out.append(binary("prelu_quant8_signed_zp_extreme_scale2_broadcast_both", Op.PRELU,
                      q(Q8S, stored(rng, Q8S, (2, 1, 3)), 0.25, z8s["mid"]),
                      q(Q8S, stored(rng, Q8S, (1, 4, 1), -128, -100), 2.0, z8s["extreme"]), Q8S, 1.25, 0))
    return out


def _shapes(rng) -> list:
    """Broadcasting forms and batch sizes the corpus lacks, float32 and float16."""
    out = []
    for op in (Op.ADD, Op.SUB):  # both sides broadcast with FuseCode NONE
        out.append(binary(f"{op.name.lower()}_broadcast_both", op, v(F32, quarters(rng, (3, 1, 2))),
                          v(F32, quarters(rng, (4, 1))), F32))
    out.append(binary("mul_broadcast_both_batch2_float16", Op.MUL, v(F16, quarters(rng, (2, 1, 3))),
                      v(F16, quarters(rng, (1, 4, 1))), F16))
    for op in (Op.MAXIMUM, Op.MINIMUM):
        out.append(binary(f"{op.name.lower()}_size1_float32", op, v(F32, quarters(rng, (2, 3, 4))),
                          v(F32, quarters(rng, (2, 1, 4))), F32))
    # POW: positive bases (real results), exponents in [-2, 3]
    out.append(binary("pow_same_shape", Op.POW, v(F32, quarters(rng, (2, 3), 0.25, 4)),
                      v(F32, quarters(rng, (2, 3), -2, 3)), F32))
    out.append(binary("pow_size1_float16", Op.POW, v(F16, quarters(rng, (2, 4), 0.5, 3)),
                      v(F16, np.array([[2.0, 0.5, -1.0, 3.0]])), F16))
    # PRELU: same shape with batch 3, size-1 dims (alpha per channel), both sides broadcast
    out.append(binary("prelu_same_shape_batch3", Op.PRELU, v(F32, quarters(rng, (3, 2, 2))),
                      v(F32, quarters(rng, (3, 2, 2), -1, 1)), F32))
    out.append(binary("prelu_size1_float16", Op.PRELU, v(F16, quarters(rng, (2, 2, 3))),
                      v(F16, np.array([[[0.25, -0.5, 2.0]]])), F16))
    out.append(binary("prelu_broadcast_both", Op.PRELU, v(F32, quarters(rng, (2, 1, 3))),
                      v(F32, quarters(rng, (4, 1), -1, 1)), F32))
    return out


def models():
    rng = np.random.default_rng(0)
    return [*_fused_activations(rng), *_quantized(rng), *_shapes(rng)]
