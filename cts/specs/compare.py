"""Comparisons, boolean logic and SELECT of feature level 3 (quant8 signed forms FL4): EQUAL
(NNAPI code 48), NOT_EQUAL (68), GREATER (53), GREATER_EQUAL (54), LESS (58), LESS_EQUAL (59),
LOGICAL_AND (61), LOGICAL_OR (63), LOGICAL_NOT (62), SELECT (84): what the AOSP corpus
leaves out.

Definition (NNAPI ``types.spec``): a comparison gives TENSOR_BOOL8 ``input0 OP input1`` of
two tensors of one type (TENSOR_BOOL8, TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32,
TENSOR_QUANT8_ASYMM; FL4 TENSOR_QUANT8_ASYMM_SIGNED), quantized inputs compared as the real
values ``(q - zeroPoint) * scale``, each input with its own scale and zeroPoint;
LOGICAL_AND / LOGICAL_OR the element-wise and / or of two TENSOR_BOOL8 tensors; these
broadcast (trailing dimensions aligned, equal or one of them 1). LOGICAL_NOT negates.
SELECT(condition, input1, input2) takes input1 where the condition is true, else input2
(same shapes), the chosen real value stored with the output's scale and zeroPoint.

Cases: for each comparison, three quantized models whose inputs share real values (so
equality occurs although the grids differ): TENSOR_QUANT8_ASYMM zero point 0 against
mid-range with input1 rank-lower and batch 2; zero point 255 (extreme) against scale 1.5
broadcasting both ways; TENSOR_QUANT8_ASYMM_SIGNED zero point -128 (extreme) against
mid-range with scale 2 and size-1 dims; the FL3 GREATER signatures (bool, float16, float32,
int32); LESS_EQUAL's signed zero point 0. Logical operations with batch 2, size-1 and
both-sides broadcasting. SELECT with quant8 zero points 0 and extreme. No zero-sized
inputs: AOSP registers the comparisons and SELECT without ``allowZeroSizedInput``.

Golden: the numpy operators of :data:`FORMULAS` on the real input values
(:func:`.typed.case`); every quantized value here is exact on its grid.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from .typed import ZP, case, q_of, quarters, v

FAMILY = "compare"
F32, F16, I32, B8 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8
Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
GOLDEN = "numpy formula: {} on the real input values (cts/specs/compare.py)"
FORMULAS = {
    Op.EQUAL: ("a == b", np.equal), Op.NOT_EQUAL: ("a != b", np.not_equal), Op.GREATER: ("a > b", np.greater),
    Op.GREATER_EQUAL: ("a >= b", np.greater_equal), Op.LESS: ("a < b", np.less),
    Op.LESS_EQUAL: ("a <= b", np.less_equal), Op.LOGICAL_AND: ("a and b", np.logical_and),
    Op.LOGICAL_OR: ("a or b", np.logical_or), Op.LOGICAL_NOT: ("not a", np.logical_not),
    Op.SELECT: ("input1 if condition else input2", lambda c, x, y: np.where(c, x, y)),
}
COMPARISONS = (Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LESS, Op.LESS_EQUAL)


def _model(name, op, tensors, out_t=B8, out_q=(0.0, 0)):
    text, f = FORMULAS[op]
    level = 4 if any(x.t == Q8S for x in tensors) else 3
    return case(name, FAMILY, op, None, tensors, f, GOLDEN.format(text), level, out_t=out_t, out_q=out_q)


def _shared(rng, step: float, lo: float, hi: float, sa, sb):
    """Real values for two inputs, multiples of ``step`` in [lo, hi]; input1's first element
    equals input0's first, so equality occurs."""
    grid = np.arange(lo, hi + step / 2, step)
    a, b = rng.choice(grid, sa), rng.choice(grid, sb)
    b.flat[0] = a.flat[0]
    return a, b


def _comparisons(rng) -> list:
    z8, z8s = ZP[Q8], ZP[Q8S]
    out = []
    for op in COMPARISONS:
        name = op.name.lower()
        a, b = _shared(rng, 0.5, 0, 30, (2, 3, 4), (4,))
        out.append(_model(f"{name}_quant8_zp0_mid_rank_lower_batch2", op,
                          [q_of(Q8, a, 0.5, 0), q_of(Q8, b, 0.25, z8["mid"])]))
        a, b = _shared(rng, 1.5, -60, 0, (2, 1, 3), (1, 4, 1))
        out.append(_model(f"{name}_quant8_zp_extreme_scale1.5_broadcast_both", op,
                          [q_of(Q8, a, 0.25, z8["extreme"]), q_of(Q8, b, 1.5, 128)]))
        a, b = _shared(rng, 2.0, 0, 62, (3, 4), (3, 1))
        out.append(_model(f"{name}_quant8_signed_zp_extreme_mid_scale2_size1", op,
                          [q_of(Q8S, a, 0.25, z8s["extreme"]), q_of(Q8S, b, 2.0, z8s["mid"])]))
    a, b = _shared(rng, 0.5, -30, 30, (2, 3), (2, 3))
    out.append(_model("less_equal_quant8_signed_zp0", Op.LESS_EQUAL, [q_of(Q8S, a, 0.5, 0), q_of(Q8S, b, 0.5, 5)]))
    # GREATER's FL3 signatures
    out.append(_model("greater_bool8", Op.GREATER, [v(B8, rng.integers(0, 2, (2, 3))), v(B8, rng.integers(0, 2, (2, 3)))]))
    for t in (F16, F32):
        a, b = _shared(rng, 0.25, -4, 4, (2, 3), (3,))
        out.append(_model(f"greater_{'float16' if t == F16 else 'float32'}", Op.GREATER, [v(t, a), v(t, b)]))
    a, b = _shared(rng, 1, -50, 50, (2, 1, 3), (4, 1))
    out.append(_model("greater_int32_broadcast_both", Op.GREATER, [v(I32, a), v(I32, b)]))
    return out


def _logical(rng) -> list:
    out = []
    for op in (Op.LOGICAL_AND, Op.LOGICAL_OR):
        name = op.name.lower()
        out.append(_model(f"{name}_size1_batch2", op, [v(B8, rng.integers(0, 2, (2, 3))), v(B8, [[True, False, True]])]))
        out.append(_model(f"{name}_broadcast_both", op,
                          [v(B8, rng.integers(0, 2, (2, 1, 3))), v(B8, rng.integers(0, 2, (4, 1)))]))
    out.append(_model("logical_not_batch3", Op.LOGICAL_NOT, [v(B8, rng.integers(0, 2, (3, 4)))]))
    return out


def _select(rng) -> list:
    z8, z8s = ZP[Q8], ZP[Q8S]
    cond = v(B8, rng.integers(0, 2, (2, 4)))
    return [
        _model("select_quant8_zp0_extreme", Op.SELECT,
               [cond, q_of(Q8, quarters(rng, (2, 4), 0, 20) * 2 // 1 / 2, 0.5, 0),
                q_of(Q8, quarters(rng, (2, 4), -20, 0), 0.25, z8["extreme"])], Q8, (0.25, z8["mid"])),
        _model("select_quant8_signed_zp_extreme", Op.SELECT,
               [cond, q_of(Q8S, quarters(rng, (2, 4), 0, 30), 0.25, z8s["extreme"]),
                q_of(Q8S, quarters(rng, (2, 4), -30, 30) * 2 // 1 / 2, 0.5, 10)], Q8S, (0.5, z8s["mid"])),
    ]


def models():
    rng = np.random.default_rng(2)
    return [*_comparisons(rng), *_logical(rng), *_select(rng)]
