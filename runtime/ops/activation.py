"""Activations of feature level 4: ELU (98) and HARD_SWISH (99).

Declared signatures (NNAPI ``types.spec``, Android 11 / HAL 1.3; AOSP
``common/types/operations/src/{Elu,Activation}.cpp`` give the same level to every form):

* ELU(input, alpha) -> output, FL4: TENSOR_FLOAT32 input with a FLOAT32 ``alpha`` scalar,
  or TENSOR_FLOAT16 input with a FLOAT16 ``alpha`` ("For input tensor of TENSOR_FLOAT16,
  the alpha value must be of FLOAT16"); the output has the input's type.
* HARD_SWISH(input) -> output, FL4: TENSOR_FLOAT16, TENSOR_FLOAT32,
  TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED; the output has the input's type, and
  for the quantized types its own scale and zeroPoint (spec: "Scale and zero point of this
  tensor may be different from the input tensor's parameters").

Shapes: "Supported tensor rank: from 1" for both, with no upper bound (AOSP's
``activation::prepare`` skips its rank-4 limit for HARD_SWISH, and ``elu::prepare`` has
none); the output has the input's shape. The input "may be zero-sized" (spec), giving an
empty output.

Semantics (spec formulas):

* ELU(x) = max(0, x) + min(0, alpha * (exp(x) - 1)). TENSOR_FLOAT32 is computed in
  float32 as AOSP's ``eluFloat`` does; TENSOR_FLOAT16 in float64 with one rounding cast at
  the end (the TENSOR_FLOAT16 policy of :mod:`.common`; AOSP computes it in float32, which
  differs by less than the fp16 tolerance).
* h-swish(x) = x * max(0, min(6, x + 3)) / 6. Float types as ELU. Quantized inputs are
  dequantized ``(q - zeroPoint) * scale``, the formula applied to the real values, and the
  result requantized with the output's scale and zeroPoint (round half away from zero,
  saturate to the type's range). AOSP uses TFLite's fixed-point ``reference_ops::HardSwish``;
  the results agree within the one quantum the criteria allow.

Errors (OperationError): none beyond the signature match (types, the alpha scalar's type)
done by validation; an unknown rank is accepted (any rank >= 1 is valid).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, register, scalar, sig, tensor
from .common import from_float
from .elementwise import (F16, F32, Q8, Q8S, draft_range, real, same_shape, unary_execute,
                          unary_sigs)

ANY = None  # tensor rank: from 1, no upper bound


def _prepare(ctx: OpContext):
    """Output shape of ELU and HARD_SWISH: the input's (any rank, may be zero-sized)."""
    return same_shape(ctx, max_rank=None)


# --- ELU ---------------------------------------------------------------------------------

def _execute_elu(ctx: OpContext):
    """ELU: ``max(0, x) + min(0, alpha * (exp(x) - 1))`` on input 0 with the scalar input 1
    (``alpha``); float32 arithmetic for TENSOR_FLOAT32, float64 for TENSOR_FLOAT16. ``exp(x) -
    1`` is computed as ``expm1(x)``: the subtraction cancels for small |x| (0 instead of x
    below |x| = 2^-25 in float32, 2^-54 in float64, so the float64 truth too; the precision
    sweep found it). Returns an array of the input's shape and dtype."""
    x = real(ctx, 0)
    alpha = np.asarray(ctx.scalar(1), dtype=x.dtype)
    with np.errstate(all="ignore"):
        y = np.maximum(x.dtype.type(0), x) + np.minimum(x.dtype.type(0), alpha * np.expm1(x))
    return [from_float(ctx.outputs[0], y)]


def _generate_elu(d) -> None:
    """ELU drafts: inputs over [-4, 4] (the exponential branch well below 0 too) and alpha
    in [0, 3] (any FLOAT32/FLOAT16 value is valid)."""
    draft_range(d, 0, -4.0, 4.0)
    d.param(1, d.uniform(0.0, 3.0))


register(OperationDef(
    OperationType.ELU,
    (sig(4, [tensor("input", F32, ANY), scalar("alpha", OperandType.FLOAT32)],
         [tensor("output", F32, ANY)]),
     sig(4, [tensor("input", F16, ANY), scalar("alpha", OperandType.FLOAT16)],
         [tensor("output", F16, ANY)])),
    _prepare, _execute_elu, generate=_generate_elu, error_budget=budgets.elementwise(OperationType.ELU),
    summary="max(0, x) + min(0, alpha * (exp(x) - 1))", aosp_source="EluExecution.cpp"))


# --- HARD_SWISH ------------------------------------------------------------------------------

def _hard_swish(x: np.ndarray) -> np.ndarray:
    """``x * max(0, min(6, x + 3)) / 6`` in ``x``'s float dtype, the factor divided first:
    ``x * (6 / 6)`` is ``x`` exactly, where ``(x * 6) / 6`` overflows float32 for x > 5.7e37
    (the precision sweep found it; ``precision/``)."""
    return x * (np.clip(x + 3, 0, 6) / 6)


def _generate_hard_swish(d) -> None:
    """HARD_SWISH drafts: inputs over [-6, 6], all three pieces of the function (0 below
    -3, the quadratic, x above 3)."""
    draft_range(d, 0, -6.0, 6.0)


register(OperationDef(
    OperationType.HARD_SWISH,
    unary_sigs(4, (F16, F32, Q8, Q8S), ANY),
    _prepare, unary_execute(_hard_swish, raw_types=()), generate=_generate_hard_swish,
    error_budget=budgets.elementwise(OperationType.HARD_SWISH),
    summary="x * max(0, min(6, x + 3)) / 6", allows_zero_sized_input=True,
    aosp_source="ActivationExecution.cpp"))
