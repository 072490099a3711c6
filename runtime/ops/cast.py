"""Type conversions of feature level 3: CAST (45) and QUANTIZE (72), with their FL4 forms.

Declared signatures (FL3 unless said; NNAPI ``types.spec`` and AOSP
``common/types/operations/src/{Cast,Quantize}.cpp`` for the levels):

* CAST: input and output each of TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 or
  TENSOR_QUANT8_ASYMM (all 16 pairs, identity casts included). FL4: the identity casts
  (output of the input's type) of TENSOR_BOOL8, TENSOR_QUANT16_ASYMM, TENSOR_QUANT16_SYMM,
  TENSOR_QUANT8_ASYMM_SIGNED and TENSOR_QUANT8_SYMM (spec: "Since Android 11, casting
  tensors of the following OperandType to the same OperandType is supported"; the
  TENSOR_INT32 identity cast it also lists is FL3 already). An identity cast copies the
  stored values (scale and zeroPoint ignored, as for every CAST).
* QUANTIZE: TENSOR_FLOAT16 or TENSOR_FLOAT32 -> TENSOR_QUANT8_ASYMM; FL4: ->
  TENSOR_QUANT8_ASYMM_SIGNED.

Shapes: rank >= 1 ("Supported tensor rank: from 1", no upper bound); the output has the
input's shape; the input may be zero-sized (QUANTIZE: spec; CAST: AOSP accepts it), giving
an empty output.

CAST semantics (spec: "ignores the scale and zeroPoint of quantized tensors", i.e. it
moves the stored numbers; the values beyond that are AOSP ``cpu_operations/Cast.cpp``,
``static_cast`` per element, and the corpus ``cast`` spec agrees):

* to TENSOR_FLOAT16 / TENSOR_FLOAT32: the nearest representable value (round to nearest
  even; beyond the float16 range: +-inf).
* to TENSOR_INT32 from a float: truncation toward zero (2.7 -> 2, -2.7 -> -2). Values
  beyond the int32 range and NaN are undefined in C++; the reference saturates to
  [-2^31, 2^31 - 1] and gives 0 for NaN.
* to TENSOR_QUANT8_ASYMM: the value is first clamped to [0, 255] (AOSP's explicit rule for
  uint8, e.g. 300 -> 255, -5 -> 0), then truncated toward zero (NaN -> 0 in the reference).
* integers to integers otherwise unchanged (TENSOR_QUANT8_ASYMM -> TENSOR_INT32 widens).

QUANTIZE semantics (spec formula ``max(0, min(255, round(input / scale) + zeroPoint))``
for TENSOR_QUANT8_ASYMM, ``max(-128, min(127, ...))`` for TENSOR_QUANT8_ASYMM_SIGNED (FL4),
computed in binary32 as AOSP ``Quantize.cpp`` does: the quotient ``input / scale`` is a
float32 division, ``round`` is C ``std::round``, half away from zero). A NaN input gives
the maximum (255 / 127), as AOSP's ``std::min(255.f, NaN)`` does; +-inf saturate to the
maximum / minimum.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType, operand_dtype
from . import budgets
from .base import OpContext, OperationDef, register, sig, tensor
from .common import QUANT_RANGES, computing_truth, round_half_away, value_dtype
from .decision_rules import cast_decision, quantize_decision
from .elementwise import BOOL8, F16, F32, I32, Q8, Q8S, draft_range, linked, same_shape
from .generation import quant_limits

ANY = None  # tensor rank: from 1, no upper bound
_CAST_TYPES = (F16, F32, I32, Q8)
#: Types whose identity CAST is FL4 (TENSOR_INT32's is among the FL3 pairs).
_FL4_IDENTITY_TYPES = (BOOL8, OperandType.TENSOR_QUANT16_ASYMM, OperandType.TENSOR_QUANT16_SYMM,
                       Q8S, OperandType.TENSOR_QUANT8_SYMM)


def _prepare(ctx: OpContext):
    """Output shape of CAST and QUANTIZE: the input's."""
    return same_shape(ctx, max_rank=None)


def _execute_cast(ctx: OpContext):
    """CAST: the stored values of input 0 converted to the output's type (module docstring
    for the rules); returns an array of the output type's dtype and the input's shape."""
    x, out_type = ctx.value(0), ctx.outputs[0].type
    if out_type in (I32, Q8):
        lo, hi = QUANT_RANGES[out_type]
        if x.dtype.kind == "f":
            x = np.trunc(np.clip(np.nan_to_num(x.astype(np.float64), nan=0.0), lo, hi))
        else:
            x = np.clip(x.astype(np.int64), lo, hi)
    with np.errstate(over="ignore"):
        return [x.astype(value_dtype(out_type))]


#: Preferred input values of a CAST by (input is float, output type): float -> int32
#: fractions of both signs (truncation toward zero), -> quant8 a little beyond [0, 255]
#: (clamped), int32 -> quant8 likewise, -> float16 within its exact integers.
_CAST_RANGES = {(True, I32): (-50.0, 50.0), (True, Q8): (-10.0, 265.0),
                (False, Q8): (-10, 265), (True, F16): (-100.0, 100.0),
                (True, F32): (-100.0, 100.0), (False, F16): (-1000, 1000),
                (False, F32): (-1000, 1000)}


def _generate_cast(d) -> None:
    """CAST drafts: input values whose conversion is meaningful (:data:`_CAST_RANGES`);
    a quantized output gets the input's scale and zeroPoint, else drawn ones (CAST moves
    stored values and ignores both, so the generator's fit has nothing to fit)."""
    t, out_type = d[0].type, d.sig.outputs[0].type
    if t in (F16, F32, I32) and (t in (F16, F32), out_type) in _CAST_RANGES:
        draft_range(d, 0, *_CAST_RANGES[(t in (F16, F32), out_type)])
    if out_type not in (F16, F32, I32, BOOL8):
        d.out_quant[0] = (d[0].scale, d[0].zero_point) if out_type == t and d[0].scale \
            else d.quant(out_type)


def _generate_quantize(d) -> None:
    """QUANTIZE drafts: the output's scale and zeroPoint stated (drawn, or fitted to a
    linked input's values) and inputs mostly within its representable range, a few
    beyond it (saturating)."""
    t = d.sig.outputs[0].type
    qlo, qhi = quant_limits(t)
    if linked(d):
        v = np.asarray(d.primary.value, np.float64)
        lo, hi = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
        scale = float(np.float32(max(hi - lo, 1e-3) * d.uniform(0.9, 1.3) / (qhi - qlo)))
        zp = int(np.clip(round(qlo - lo / scale), qlo, qhi))
    else:
        scale, zp = d.quant(t)
        lo, hi = (qlo - zp) * scale, (qhi - zp) * scale
        margin = 0.03 * (hi - lo)
        d[0].low, d[0].high = lo - margin, hi + margin
    d.out_quant[0] = (scale, zp)


register(OperationDef(
    OperationType.CAST,
    tuple(sig(3, [tensor("input", a, ANY)], [tensor("output", b, ANY)])
          for a in _CAST_TYPES for b in _CAST_TYPES)
    + tuple(sig(4, [tensor("input", t, ANY)], [tensor("output", t, ANY)])
            for t in _FL4_IDENTITY_TYPES),
    _prepare, _execute_cast, generate=_generate_cast, decision=cast_decision,
    error_budget=budgets.elementwise(OperationType.CAST),
    summary="stored values converted to the output type (scale and zeroPoint ignored)",
    aosp_source="CpuExecutor.cpp",
    # coupling: CAST converts stored values and ignores scale / zeroPoint, so a
    # TENSOR_QUANT8_ASYMM operand's values shifted by -128 give another result
    coupling_excluded=True))


def _execute_quantize(ctx: OpContext):
    """QUANTIZE: ``clamp(round(float32(x) / float32(scale)) + zeroPoint, lo, hi)`` with
    [lo, hi] = [0, 255] (uint8) or [-128, 127] (int8, FL4) (module docstring)."""
    out = ctx.outputs[0]
    lo, hi = QUANT_RANGES[out.type]
    with np.errstate(all="ignore"):
        if computing_truth():  # real arithmetic, one rounding (float64_truth)
            quotient = ctx.value(0).astype(np.float64) / np.float64(np.float32(out.scale))
        else:
            quotient = ctx.value(0).astype(np.float32) / np.float32(out.scale)  # binary32
        q = round_half_away(quotient.astype(np.float64)) + out.zero_point
    return [np.clip(np.nan_to_num(q, nan=hi), lo, hi).astype(operand_dtype(out.type))]


register(OperationDef(
    OperationType.QUANTIZE,
    tuple(sig(level, [tensor("input", t, ANY)], [tensor("output", o, ANY)])
          for level, o in ((3, Q8), (4, Q8S)) for t in (F16, F32)),
    _prepare, _execute_quantize, generate=_generate_quantize, decision=quantize_decision,
    summary="round(x / scale) + zeroPoint, saturated", allows_zero_sized_input=True,
    aosp_source="QuantizeExecution.cpp"))
