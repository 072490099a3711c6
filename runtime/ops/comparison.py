"""Comparisons and boolean logic of feature level 3: EQUAL (48), GREATER (53),
GREATER_EQUAL (54), LESS (58), LESS_EQUAL (59), NOT_EQUAL (68), LOGICAL_AND (61),
LOGICAL_OR (63), LOGICAL_NOT (62) and SELECT (84), with their FL4 forms.

Declared signatures (FL3 unless said; NNAPI ``types.spec`` and AOSP
``common/types/operations/src/{Comparisons,LogicalAndOr,LogicalNot,Select}.cpp`` for the
levels):

* EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, NOT_EQUAL(input0, input1):
  TENSOR_BOOL8, TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 or TENSOR_QUANT8_ASYMM (both
  inputs of one type) -> TENSOR_BOOL8; FL4: TENSOR_QUANT8_ASYMM_SIGNED inputs.
* LOGICAL_AND, LOGICAL_OR(input0, input1), LOGICAL_NOT(input): TENSOR_BOOL8 ->
  TENSOR_BOOL8.
* SELECT(condition, input1, input2): TENSOR_BOOL8 condition; input1, input2 and output of
  one type among TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM; FL4:
  TENSOR_QUANT8_ASYMM_SIGNED. The spec lists the signed form "since" FL4 (Android 11);
  AOSP's ``Select.cpp`` validation returns FL3 for every type, a slip: the reference
  follows the spec (the corpus holds the signed SELECT models in V1_3 only).

Shapes: every tensor has rank >= 1 ("Supported tensor rank: from 1", no upper bound).
Comparisons, LOGICAL_AND and LOGICAL_OR broadcast their inputs (trailing dimensions
aligned, equal or one of them 1; AOSP ``calculateBroadcastedShape``); LOGICAL_NOT keeps its
input's shape. SELECT needs condition, input1 and input2 of exactly the same shape (AOSP
``Select.cpp`` ``prepare``; the spec says "of the same shape as input0"), the output has
it. Broken shape rules raise OperationError naming the inputs. Zero-sized tensors give
empty outputs.

Semantics: quantized comparison inputs are compared as real values, each with its own
scale and zeroPoint, computed in binary32 as ``float(q - zeroPoint) * scale`` as AOSP's
``Comparisons.cpp`` does (so equality matches it bit for bit), for TENSOR_QUANT8_ASYMM and
TENSOR_QUANT8_ASYMM_SIGNED alike; other types compare their stored values (TENSOR_BOOL8:
false < true). SELECT takes input1 where the condition is true, else input2; for
TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED the chosen value is requantized from
its input's scale/zeroPoint to the output's (round half away from zero, saturate; the
spec lets all three differ), other types are copied. Any non-zero TENSOR_BOOL8 byte is
true.
"""
from __future__ import annotations

import numpy as np

from ..types import OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, sig, tensor
from .common import from_float, to_float
from .decision_rules import comparison_decision
from .elementwise import (BOOL8, F16, F32, I32, Q8, Q8S, QUANT8, bool_values,
                          broadcast_shape, draft_broadcast, linked, same_shape, unary_sigs)
from .generation import fill, quant_limits

ANY = None  # tensor rank: from 1, no upper bound


def _prepare_broadcast(ctx: OpContext):
    """Output shape of the comparisons and LOGICAL_AND/OR: the broadcast of inputs 0, 1."""
    return [broadcast_shape(ctx, 0, 1)]


def _compared(ctx: OpContext, index: int) -> np.ndarray:
    """Values of input ``index`` as the comparisons see them: binary32 real values
    ``float32(q - zeroPoint) * float32(scale)`` for TENSOR_QUANT8_ASYMM and
    TENSOR_QUANT8_ASYMM_SIGNED, booleans for
    TENSOR_BOOL8, the stored values otherwise."""
    op = ctx.inputs[index]
    if op.type == BOOL8:
        return bool_values(ctx, index)
    v = ctx.value(index)
    if op.type in QUANT8:
        return (v.astype(np.int32) - op.zero_point).astype(np.float32) * np.float32(op.scale)
    return v


def _comparison(fn):
    def execute(ctx: OpContext):
        with np.errstate(invalid="ignore"):
            return [np.asarray(fn(_compared(ctx, 0), _compared(ctx, 1)), dtype=bool)]
    return execute


def _tie(d) -> None:
    """Make inputs 0 and 1 constants where about 40% of input 1's elements equal (as real
    values) the input 0 element they meet after broadcasting. Input 0 keeps a linked
    earlier output's values. A quantized input 1 takes input 0's scale and zeroPoint, or
    half the time twice its scale and its own zeroPoint (equal real values in binary32,
    different stored ones: q1 = z1 + (q0 - z0) / 2 where that is an integer in range)."""
    a, b = d[0], d[1]
    if linked(d):
        v0 = np.asarray(d.primary.value).reshape(a.dims)
    else:
        v0 = fill(d, a)
        d.param(0, v0, a.dims)
    double = a.type in QUANT8 and d.coin(0.5)
    if a.type in QUANT8:
        b.scale, b.zero_point = ((float(np.float32(a.scale) * 2), d.quant(b.type)[1]) if double
                                 else (a.scale, a.zero_point))
    v1 = fill(d, b)
    out = np.broadcast_shapes(v0.shape, v1.shape)
    p0 = (1,) * (len(out) - v0.ndim) + v0.shape
    p1 = (1,) * (len(out) - v1.ndim) + v1.shape
    # input 0's element met by each element of input 1 (index 0 along input 1's 1-dims)
    met = np.broadcast_to(v0.reshape(p0), out)[tuple(slice(0, 1) if n == 1 else slice(None)
                                                     for n in p1)].reshape(v1.shape)
    pick = d.rng.random(v1.shape) < 0.4
    if double:
        qlo, qhi = quant_limits(b.type)
        diff = met.astype(np.int64) - a.zero_point
        met = b.zero_point + diff // 2
        pick &= (diff % 2 == 0) & (met >= qlo) & (met <= qhi)
    d.param(1, np.where(pick, met, v1), list(b.dims))


def _comparison_generator(p_tie: float):
    def generate(d) -> None:
        """Comparison drafts: NNAPI broadcasting shapes half the time; for inputs other
        than TENSOR_BOOL8, often (EQUAL/NOT_EQUAL 85%, others 50%) constant inputs with
        ties (see :func:`_tie`; random real values never tie, and EQUAL, GREATER_EQUAL ...
        differ from their strict or negated forms only there)."""
        draft_broadcast(d)
        if d[0].type != BOOL8 and d.coin(p_tie):
            _tie(d)
    return generate


_COMPARISON_SIGS = tuple(
    sig(level, [tensor("input0", t, ANY), tensor("input1", t, ANY)],
        [tensor("output", BOOL8, ANY)])
    for level, types in ((3, (BOOL8, F16, F32, I32, Q8)), (4, (Q8S,))) for t in types)

for _op, _fn, _symbol in (
        (OperationType.EQUAL, np.equal, "=="),
        (OperationType.GREATER, np.greater, ">"),
        (OperationType.GREATER_EQUAL, np.greater_equal, ">="),
        (OperationType.LESS, np.less, "<"),
        (OperationType.LESS_EQUAL, np.less_equal, "<="),
        (OperationType.NOT_EQUAL, np.not_equal, "!=")):
    register(OperationDef(_op, _COMPARISON_SIGS, _prepare_broadcast, _comparison(_fn),
                          generate=_comparison_generator(
                              0.85 if _op in (OperationType.EQUAL, OperationType.NOT_EQUAL)
                              else 0.5),
                          summary=f"input0 {_symbol} input1 with broadcasting -> TENSOR_BOOL8",
                          aosp_source="ComparisonsExecution.cpp", decision=comparison_decision))


def _logical(fn):
    def execute(ctx: OpContext):
        return [fn(bool_values(ctx, 0), bool_values(ctx, 1))]
    return execute


def _generate_logical(d) -> None:
    """LOGICAL_AND/OR drafts: NNAPI broadcasting shapes half the time."""
    draft_broadcast(d)


_LOGICAL_SIGS = (sig(3, [tensor("input0", BOOL8, ANY), tensor("input1", BOOL8, ANY)],
                     [tensor("output", BOOL8, ANY)]),)
register(OperationDef(OperationType.LOGICAL_AND, _LOGICAL_SIGS, _prepare_broadcast,
                      _logical(np.logical_and), generate=_generate_logical,
                      summary="input0 AND input1 with broadcasting",
                      aosp_source="LogicalAndOrExecution.cpp"))
register(OperationDef(OperationType.LOGICAL_OR, _LOGICAL_SIGS, _prepare_broadcast,
                      _logical(np.logical_or), generate=_generate_logical,
                      summary="input0 OR input1 with broadcasting",
                      aosp_source="LogicalAndOrExecution.cpp"))


def _prepare_not(ctx: OpContext):
    """Output shape of LOGICAL_NOT: the input's."""
    return same_shape(ctx, max_rank=None)


def _execute_not(ctx: OpContext):
    return [np.logical_not(bool_values(ctx, 0))]


register(OperationDef(OperationType.LOGICAL_NOT, unary_sigs(3, (BOOL8,), ANY), _prepare_not,
                      _execute_not, summary="NOT input", aosp_source="LogicalNotExecution.cpp"))


def _prepare_select(ctx: OpContext):
    """Output shape of SELECT: the common shape of condition, input1 and input2, which must
    be equal (no broadcasting). Raises OperationError naming the mismatching input."""
    cond = tuple(ctx.inputs[0].dims)
    for i in (1, 2):
        dims = tuple(ctx.inputs[i].dims)
        check(dims == cond, f"SELECT: input {i} shape {dims} must equal input 0 (condition) "
                            f"shape {cond}")
    return [cond]


def _execute_select(ctx: OpContext):
    cond, out = bool_values(ctx, 0), ctx.outputs[0]
    if out.type in QUANT8:
        return [from_float(out, np.where(cond, to_float(ctx.inputs[1]), to_float(ctx.inputs[2])))]
    return [np.where(cond, ctx.value(1), ctx.value(2))]


def _generate_select(d) -> None:
    """SELECT drafts: input1 and input2 of the condition's shape (NNAPI: no broadcasting,
    all three of one shape)."""
    for k in (1, 2):
        d.tensor(k, d[0].dims)


register(OperationDef(
    OperationType.SELECT,
    tuple(sig(level, [tensor("condition", BOOL8, ANY), tensor("input1", t, ANY),
                      tensor("input2", t, ANY)], [tensor("output", t, ANY)])
          for level, types in ((3, (F16, F32, I32, Q8)), (4, (Q8S,))) for t in types),
    _prepare_select, _execute_select, error_budget=budgets.exact("selection"),
    generate=_generate_select,
    summary="condition ? input1 : input2, element-wise (same shapes)",
    aosp_source="SelectExecution.cpp"))
