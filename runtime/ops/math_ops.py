"""Element-wise math of feature level 3: the unary ABS (38), EXP (49), LOG (60), NEG (67),
RSQRT (83), SIN (85), SQRT (88), and the broadcasting binary POW (70), MAXIMUM (65),
MINIMUM (66), PRELU (71), with their FL4 and FL7 forms.

Declared signatures (FL3 unless said; NNAPI ``types.spec`` and AOSP
``common/types/operations/src/{Elementwise,Neg,Pow,MaximumMinimum,PRelu}.cpp`` for the
levels):

* ABS, EXP, LOG, RSQRT, SIN, SQRT: TENSOR_FLOAT16 or TENSOR_FLOAT32 -> the same type.
  FL4: TENSOR_INT32 ABS. FL7 (AIDL V3, Android 13): TENSOR_QUANT8_ASYMM and
  TENSOR_QUANT8_ASYMM_SIGNED RSQRT, whose output may have its own scale and zeroPoint.
* NEG: TENSOR_FLOAT16, TENSOR_FLOAT32 or TENSOR_INT32 -> the same type.
* POW(base, exponent): TENSOR_FLOAT16 or TENSOR_FLOAT32, both inputs and the output of
  one type.
* MAXIMUM, MINIMUM(input0, input1): TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 or
  TENSOR_QUANT8_ASYMM; FL4: TENSOR_QUANT8_ASYMM_SIGNED. For the quant8 types the inputs
  and output may each have their own scale and zeroPoint.
* PRELU(input, alpha): TENSOR_FLOAT16, TENSOR_FLOAT32 or TENSOR_QUANT8_ASYMM; FL4:
  TENSOR_QUANT8_ASYMM_SIGNED (own scale and zeroPoint for input, alpha and output).

Shapes: every tensor has rank >= 1 ("Supported tensor rank: from 1"; no upper bound, as
AOSP's ``prepare`` sets none). Unary outputs have the input's shape; POW, MAXIMUM, MINIMUM
and PRELU broadcast their two inputs (trailing dimensions aligned, equal or one of them 1;
AOSP ``calculateBroadcastedShape``; OperationError naming both input shapes otherwise).
Zero-sized tensors give empty outputs.

Semantics: ABS |x|, EXP e^x, LOG ln x, NEG -x, RSQRT 1/sqrt(x), SIN sin x (radians), SQRT
sqrt(x), POW base^exponent, MAXIMUM/MINIMUM the larger/smaller element, PRELU
``x if x >= 0 else alpha * x`` (AOSP ``PRelu.cpp``). Outside a function's domain the
result is the IEEE one of the C library (LOG of a negative: NaN, of 0: -inf; RSQRT of 0:
inf), as in AOSP. TENSOR_FLOAT32 is computed in float32; TENSOR_FLOAT16 in float64 with one
rounding cast (:mod:`.common` policy); TENSOR_INT32 NEG in int32 (wrapping: -(-2^31) is
-2^31, the two's-complement result AOSP's kernel gives) and TENSOR_INT32 ABS likewise
(|-2^31| wraps to -2^31); quant8 inputs are dequantized and the result requantized to the
output's scale and zeroPoint (round half away from zero, saturate), as AOSP's
``makeQuantized`` does for RSQRT (a negative real input, NaN, gives the type's maximum as
AOSP's ``std::min(max, NaN)`` does; 0 gives +inf, saturated to the maximum). AOSP requantizes MAXIMUM/MINIMUM inputs before comparing, and computes PRELU in
fixed point: the results agree within the one quantum the criteria allow (requantization
is monotonic).
"""
from __future__ import annotations

import numpy as np

from ..types import OperationType
from . import budgets
from .base import OpContext, OperationDef, register, sig, tensor
from .common import from_float
from .elementwise import (F16, F32, I32, Q8, Q8S, binary_execute, broadcast_shape,
                          draft_broadcast, draft_range, linked, real, same_shape,
                          unary_execute, unary_sigs)
from .generation import quant_limits

ANY = None  # tensor rank: from 1, no upper bound


def _prepare_unary(ctx: OpContext):
    """Output shape of ABS/EXP/LOG/NEG/RSQRT/SIN/SQRT: the input's (any rank)."""
    return same_shape(ctx, max_rank=None)


def _prepare_binary(ctx: OpContext):
    """Output shape of POW/MAXIMUM/MINIMUM/PRELU: the broadcast of inputs 0 and 1."""
    return [broadcast_shape(ctx, 0, 1)]


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _execute_rsqrt(ctx: OpContext):
    """RSQRT: ``1 / sqrt(x)``; float types through :func:`.elementwise.unary_execute`,
    quant8 types (FL7) on dequantized values, requantized to the output with NaN (negative
    input) stored as the type's maximum (module docstring). Returns the output array."""
    if ctx.inputs[0].type in (Q8, Q8S):
        with np.errstate(all="ignore"):
            y = _rsqrt(real(ctx, 0))
        return [from_float(ctx.outputs[0], np.where(np.isnan(y), np.inf, y))]
    return _float_rsqrt(ctx)


_float_rsqrt = unary_execute(_rsqrt)


def _unary_generator(lo: float, hi: float, strict: bool = False):
    """A draft hook for input values in [``lo``, ``hi``]: a constraint when ``strict``
    (the function's domain: LOG, SQRT positive; an input linked to values outside it is
    redrawn), else a preference (EXP moderate, SIN over two periods ...)."""
    def generate(d) -> None:
        if strict:
            d[0].low, d[0].high = lo, hi
        else:
            draft_range(d, 0, lo, hi)
    return generate


def _generate_rsqrt(d) -> None:
    """RSQRT drafts: positive inputs (domain of 1/sqrt); a quantized input (FL7) gets a
    scale spanning about (0, 8] and a zeroPoint near the type's minimum, its values the
    stored ones above the zeroPoint."""
    s = d[0]
    if s.type in (Q8, Q8S) and not linked(d):
        qlo, _ = quant_limits(s.type)
        s.scale = float(np.float32(d.uniform(4.0, 12.0) / 255))
        s.zero_point = qlo + d.integer(0, 16)
    s.low = 0.02 if s.type not in (Q8, Q8S) else 0.5 * s.scale  # quant: stored > zeroPoint
    s.high = 8.0 if s.type not in (Q8, Q8S) else None

_GENERATE_UNARY = {
    OperationType.ABS: _unary_generator(-4.0, 4.0),
    OperationType.EXP: _unary_generator(-4.0, 4.0),
    OperationType.LOG: _unary_generator(0.01, 8.0, strict=True),
    OperationType.NEG: _unary_generator(-4.0, 4.0),
    OperationType.RSQRT: _generate_rsqrt,
    OperationType.SIN: _unary_generator(-6.5, 6.5),
    OperationType.SQRT: _unary_generator(0.0, 8.0, strict=True),
}

for _op, _fn, _sigs, _summary in (
        (OperationType.ABS, unary_execute(np.abs),
         unary_sigs(3, (F16, F32), ANY) + unary_sigs(4, (I32,), ANY), "|x|"),
        (OperationType.EXP, unary_execute(np.exp), unary_sigs(3, (F16, F32), ANY), "e^x"),
        (OperationType.LOG, unary_execute(np.log), unary_sigs(3, (F16, F32), ANY), "ln(x)"),
        (OperationType.NEG, unary_execute(np.negative), unary_sigs(3, (F16, F32, I32), ANY),
         "-x"),
        (OperationType.RSQRT, _execute_rsqrt,
         unary_sigs(3, (F16, F32), ANY) + unary_sigs(7, (Q8, Q8S), ANY), "1 / sqrt(x)"),
        (OperationType.SIN, unary_execute(np.sin), unary_sigs(3, (F16, F32), ANY), "sin(x)"),
        (OperationType.SQRT, unary_execute(np.sqrt), unary_sigs(3, (F16, F32), ANY),
         "sqrt(x)")):
    register(OperationDef(_op, _sigs, _prepare_unary, _fn, summary=_summary,
                          error_budget=budgets.elementwise(_op),
                          generate=_GENERATE_UNARY[_op],
                          aosp_source="NegExecution.cpp" if _op == OperationType.NEG
                          else "ElementwiseExecution.cpp"))


def _binary_sigs(types, names=("input0", "input1"), fl4_types=(Q8S,)):
    """FL3 signatures for ``types`` and FL4 ones for ``fl4_types``: two inputs and the
    output of one type, any rank >= 1."""
    return tuple(sig(level, [tensor(names[0], t, ANY), tensor(names[1], t, ANY)],
                     [tensor("output", t, ANY)])
                 for level, ts in ((3, types), (4, fl4_types)) for t in ts)


def _prelu(x, alpha):
    return np.where(x >= 0, x, x * alpha)


def _generate_binary(d) -> None:
    """POW/MAXIMUM/MINIMUM/PRELU drafts: NNAPI broadcasting shapes half the time; POW with
    a positive base in [0.1, 3] (a constraint: a negative base with a fractional exponent
    is NaN) and a moderate exponent in [-3, 3]; PRELU inputs over [-4, 4], alpha over
    [-1, 2]."""
    draft_broadcast(d)
    if d.opdef.type == OperationType.POW:
        d[0].low, d[0].high = 0.1, 3.0
        d[1].low, d[1].high = -3.0, 3.0
    elif d.opdef.type == OperationType.PRELU:
        draft_range(d, 0, -4.0, 4.0)
        draft_range(d, 1, -1.0, 2.0)


for _op, _fn, _sigs, _summary in (
        (OperationType.POW, np.power, _binary_sigs((F16, F32), ("base", "exponent"), ()),
         "base ^ exponent with broadcasting"),
        (OperationType.MAXIMUM, np.maximum, _binary_sigs((F16, F32, I32, Q8)),
         "max(input0, input1) with broadcasting"),
        (OperationType.MINIMUM, np.minimum, _binary_sigs((F16, F32, I32, Q8)),
         "min(input0, input1) with broadcasting"),
        (OperationType.PRELU, _prelu, _binary_sigs((F16, F32, Q8), ("input", "alpha")),
         "x if x >= 0 else alpha * x, alpha broadcast")):
    register(OperationDef(_op, _sigs, _prepare_binary, binary_execute(_fn), summary=_summary,
                          error_budget=budgets.elementwise(_op),
                          generate=_generate_binary,
                          aosp_source="PReluExecution.cpp" if _op == OperationType.PRELU
                          else "CpuExecutor.cpp"))
