"""Normalization operations: SOFTMAX, L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION
(feature levels 1-4; FL4 brings the TENSOR_QUANT8_ASYMM_SIGNED forms of SOFTMAX and
L2_NORMALIZATION, nothing is new at FL5+).

SOFTMAX (25). FL1: TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM input of rank 2 or 4 and a FLOAT32
beta. FL3: the same types at ranks 1-4, TENSOR_FLOAT16 (FLOAT16 beta) at ranks 1-4, and
each of the three with an optional INT32 ``axis`` (input 2, default -1, range
[-rank, rank)). FL4: TENSOR_QUANT8_ASYMM_SIGNED (FLOAT32 beta) at ranks 1-4, with or
without the axis (AOSP ``softmax::validate``: the signed type is FL4 whatever the rank or
input count). Output: same shape and type; a TENSOR_QUANT8_ASYMM output has
scale 1/256 and zeroPoint 0, a TENSOR_QUANT8_ASYMM_SIGNED one scale 1/256 and zeroPoint
-128. Zero-sized inputs (e.g. zero batches from BOX_WITH_NMS_LIMIT) give an empty output.

L2_NORMALIZATION (11). FL1: TENSOR_FLOAT32 of rank 4. FL3: TENSOR_FLOAT32, TENSOR_FLOAT16
and TENSOR_QUANT8_ASYMM at ranks 1-4, each also with an optional INT32 ``axis`` (input 1,
default -1). A TENSOR_QUANT8_ASYMM output has scale 1/128 and zeroPoint 128. FL4:
TENSOR_QUANT8_ASYMM_SIGNED at ranks 1-4, with or without the axis; its output has scale
1/128 and zeroPoint 0. Since FL4 the spec defines an all-zero slice's result as zero.

LOCAL_RESPONSE_NORMALIZATION (13). Inputs: input, radius (INT32), bias, alpha, beta.
FL1: TENSOR_FLOAT32 of rank 4 with FLOAT32 scalars. FL3: TENSOR_FLOAT32 at ranks 1-4,
TENSOR_FLOAT16 at ranks 1-4 with FLOAT16 scalars, each also with an optional INT32
``axis`` (input 5, default -1).

Which level a use needs comes from its lowest matching signature, as AOSP's ``validate``
of each operation computes it (``common/types/operations/src/{Softmax,L2Normalization,
LocalResponseNormalization}.cpp``): a rank other than the FL1 ones, an axis input or a
TENSOR_FLOAT16 / L2 quant8 operand make it FL3, a TENSOR_QUANT8_ASYMM_SIGNED operand FL4.

Errors (OperationError, i.e. GENERAL_FAILURE, naming the input): rank outside 1-4; axis out
of [-rank, rank); SOFTMAX beta <= 0 (spec: "positive scaling factor"; AOSP prepare);
LRN radius < 0 (AOSP prepare) and bias == 0 (spec text); at model time (``validate``) a
quantized output with the wrong scale/zeroPoint (spec text; AOSP prepare imposes the same
values) and the same parameter rules on constant scalars.

Semantics: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` for each operation and the
AOSP CPU kernels (``common/cpu_operations/{Softmax,L2Normalization,
LocalResponseNormalization}.cpp``). Kernels compute in float64 on real values
(dequantized / cast) and store once in the output type (``common.from_float``: round half
away from zero and saturate for quant8; one rounding cast for TENSOR_FLOAT16).
Where the reference follows AOSP rather than the bare spec formula: L2_NORMALIZATION divides
by ``max(norm, 1e-6)`` like AOSP's float kernels (``kEpsilon``), so an all-zero slice gives
zeros (the value the spec defines from FL4; undefined before); AOSP's quant8 kernels are
fixed-point, the reference's float result is within the 1-quantum criterion of them.

The public kernels (:func:`softmax`, :func:`l2_normalization`,
:func:`local_response_normalization`) work on real values in float64; the registered
``execute`` functions dequantize/cast the operands around them.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import (RANKS_1_4, Arg, OpContext, OperationDef, check, register, scalar, sig,
                   tensor)
from .common import from_float, read_axis, to_float
from .elementwise import draft_range, linked
from .error_inputs import axis_out_of_range, chain, fixed_output_quant, scalar_values

__all__ = ["softmax", "l2_normalization", "local_response_normalization", "L2_NORM_EPSILON"]

T = OperandType
F32, F16, Q8, Q8S = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                     T.TENSOR_QUANT8_ASYMM_SIGNED)
#: Scalar type of the float parameters (beta, bias, alpha, ...) for each tensor type.
_FLOAT_SCALAR = {F32: T.FLOAT32, Q8: T.FLOAT32, Q8S: T.FLOAT32, F16: T.FLOAT16}

#: The output quantization the spec fixes (``Arg.fixed_quant`` of the output slots, checked
#: by model validation): SOFTMAX scale ``1.f / 256`` (exactly representable in binary32),
#: zeroPoint 0 (TENSOR_QUANT8_ASYMM, FL1) or -128 (TENSOR_QUANT8_ASYMM_SIGNED, FL4);
#: L2_NORMALIZATION scale 1/128, zeroPoint 128 (TENSOR_QUANT8_ASYMM, FL3) or 0 (signed, FL4).
_SOFTMAX_QUANT = {Q8: (1.0 / 256, 0), Q8S: (1.0 / 256, -128)}
_L2_QUANT = {Q8: (1.0 / 128, 128), Q8S: (1.0 / 128, 0)}


def _out(t, ranks, fixed: dict) -> Arg:
    """The output slot of type ``t``: its spec-fixed quantization from ``fixed``."""
    return tensor("output", t, ranks, fixed_quant=fixed.get(t), fixed_quant_at="validation")


#: Lower bound of the L2 norm a slice is divided by (AOSP ``kEpsilon`` = 1e-6f).
L2_NORM_EPSILON = float(np.float32(1e-6))


# --- kernels on real values ------------------------------------------------------------

def softmax(x: np.ndarray, beta: float, axis: int = -1) -> np.ndarray:
    """Softmax of ``x`` along ``axis`` with exponent scale ``beta``.

    ``output = exp((x - max(x)) * beta) / sum(exp((x - max(x)) * beta))`` per 1-D slice
    along ``axis`` (NNAPI SOFTMAX: FL1 the last axis of a rank-2 or rank-4 tensor; FL3 any
    axis of a rank 1-4 tensor).

    x: real values, any shape, any float dtype (computed in float64). beta: positive
    scalar (the caller checks ``beta > 0``). Returns a float64 array of ``x.shape``. A
    zero-sized ``x`` gives an empty result (no error).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape, np.float64)
    shifted = (x - np.max(x, axis=axis, keepdims=True)) * np.float64(beta)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def l2_normalization(x: np.ndarray, axis: int = -1, epsilon: float = L2_NORM_EPSILON) -> np.ndarray:
    """L2 normalization of ``x`` along ``axis``:
    ``output = x / max(sqrt(sum_axis x^2), epsilon)`` (NNAPI L2_NORMALIZATION: FL1 the
    last axis of a rank-4 tensor; FL3 any axis of a rank 1-4 tensor; ``epsilon`` = AOSP's
    1e-6).

    x: real values, any shape, any float dtype (computed in float64). epsilon: > 0.
    Returns a float64 array of ``x.shape``. A slice that is all zeros gives zeros: the spec leaves this case
    undefined before feature level 4 and defines it as zero since then, so zero is a valid
    answer at every level.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape, np.float64)
    norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    # epsilon > 0 also makes an all-zero slice 0 / epsilon = 0.
    return x / np.maximum(norm, np.float64(epsilon))


def local_response_normalization(x: np.ndarray, radius: int, bias: float, alpha: float,
                                 beta: float, axis: int = -1) -> np.ndarray:
    """Local response normalization of ``x`` along ``axis`` (NNAPI
    LOCAL_RESPONSE_NORMALIZATION: FL1 the last axis of a rank-4 tensor; FL3 any axis of a
    rank 1-4 tensor)::

        sqr_sum[..., d] = sum(x[..., max(0, d - radius) : d + radius + 1] ** 2)
        output = x / (bias + alpha * sqr_sum) ** beta

    The window is clipped at both ends of the axis, so a radius larger than the axis is the
    same as the whole axis.

    x: real values, any shape, any float dtype (computed in float64). radius: int >= 0
    (checked by the caller). bias, alpha, beta: floats. Returns a float64 array of
    ``x.shape``.
    """
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    n = x.shape[-1]
    sq = x * x
    # Windowed sum via a cumulative sum with a leading zero: sum(sq[lo:hi]) = c[hi] - c[lo].
    c = np.concatenate([np.zeros(sq.shape[:-1] + (1,)), np.cumsum(sq, axis=-1)], axis=-1)
    d = np.arange(n)
    lo = np.maximum(d - radius, 0)
    hi = np.minimum(d + radius + 1, n)
    sqr_sum = c[..., hi] - c[..., lo]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = x / np.power(np.float64(bias) + np.float64(alpha) * sqr_sum, np.float64(beta))
    return np.moveaxis(out, -1, axis)


# --- shared pieces ---------------------------------------------------------------------

def _check_rank(ctx: OpContext) -> int:
    """Rank of input 0, which must be 1-4 (all three operations, FL3; FL1-2 ranks are the
    signatures' business). Raises OperationError."""
    rank = ctx.inputs[0].rank
    check(1 <= rank <= 4, f"{ctx.operation.name}: input 0 must have rank 1 to 4, got rank {rank}")
    return rank


def _axis(ctx: OpContext, index: int, rank: int) -> int:
    """The optional INT32 axis input ``index`` (default -1) as an axis in [0, rank)."""
    if index >= len(ctx.inputs) or ctx.inputs[index].omitted:
        return rank - 1
    return read_axis(ctx, index, rank)


def _validate_axis(ctx: OpContext, index: int) -> None:
    """Model-time check of a constant axis against a known input rank."""
    rank = ctx.inputs[0].rank
    if ctx.has_value(index) and rank > 0:
        read_axis(ctx, index, rank)


def _with_axis(sigs, level: int = 3):
    """Each signature of ``sigs`` again (at ``level``) with an optional INT32 axis last."""
    return tuple(sig(level, [*s.inputs, scalar("axis", T.INT32, optional=True)], s.outputs)
                 for s in sigs)


def _draft_axis(d, index: int | None) -> int:
    """The axis of a draft (parameter slot ``index``, or None: the last) whose dimension is
    above 1 where possible (a 1-long axis gives a constant output): an unlinked input 0
    gets that dimension raised to 2..8 (others halved to stay in budget); for a linked one
    the axis moves to a dimension above 1 if it has one. Returns the axis in [0, rank)."""
    dims = d[0].dims
    rank = len(dims)
    axis = rank - 1 if index is None else int(d[index].value) % rank
    if dims[axis] > 1:
        return axis
    if not linked(d):
        dims[axis] = d.dim(2, 8)
        while int(np.prod(dims)) > d.max_elements:
            k = max((k for k in range(rank) if k != axis), key=lambda k: dims[k])
            dims[k] = max(1, dims[k] // 2)
    elif index is not None and any(n > 1 for n in dims):
        axis = d.choice([k for k, n in enumerate(dims) if n > 1])
        d.param(index, axis - rank if d.coin() else axis)
    return axis


# --- SOFTMAX ---------------------------------------------------------------------------

def _softmax_validate(ctx: OpContext) -> None:
    """Model-time rules of SOFTMAX (beyond its output's fixed quantization, declared on the
    output slots): beta, when constant, is positive; a constant axis lies in [-rank, rank)."""
    if ctx.has_value(1):
        _check_beta(ctx.scalar(1))
    _validate_axis(ctx, 2)


def _check_beta(beta: float) -> None:
    check(beta > 0,
          f"SOFTMAX: input 1 (beta) must be a positive scaling factor, got {beta}")


def _softmax_prepare(ctx: OpContext) -> list[tuple[int, ...]]:
    """Output shape = input shape. Checks input 0 has rank 1-4, beta > 0 (spec: "positive
    scaling factor"; AOSP checks it when preparing) and the axis (input 2, optional)."""
    rank = _check_rank(ctx)
    _check_beta(ctx.scalar(1))
    _axis(ctx, 2, rank)
    return [tuple(ctx.inputs[0].dims)]


def _softmax_execute(ctx: OpContext) -> list[np.ndarray]:
    """SOFTMAX along the axis (default the last); a quant8 output is quantized with scale
    1/256 and zeroPoint 0 (probability 1.0 saturates to 255), a quant8-signed one with
    zeroPoint -128 (1.0 saturates to 127). Beta is read at its operand precision
    (FLOAT32 or FLOAT16)."""
    x = ctx.inputs[0]
    axis = _axis(ctx, 2, _check_rank(ctx))
    real = softmax(to_float(x), float(ctx.scalar(1)), axis=axis)
    return [from_float(ctx.outputs[0], real)]


def _generate_softmax(d) -> None:
    """SOFTMAX drafts: beta positive (spec), log-uniform in [0.1, 10]; the axis (input 2,
    or the last) along a dimension above 1; quantized inputs spanning about [-6, 6]; the
    quantized output at its slot's fixed quantization."""
    d.param(1, float(np.exp(d.uniform(np.log(0.1), np.log(10.0)))))
    _draft_axis(d, 2 if len(d.slots) > 2 else None)
    if d[0].type in _SOFTMAX_QUANT:  # the output takes its slot's fixed_quant
        draft_range(d, 0, -6.0, 6.0)


_SOFTMAX_FL3 = tuple(sig(3, [tensor("input", t, RANKS_1_4), scalar("beta", _FLOAT_SCALAR[t])],
                         [_out(t, RANKS_1_4, _SOFTMAX_QUANT)]) for t in (F32, Q8, F16))
_SOFTMAX_FL4 = (sig(4, [tensor("input", Q8S, RANKS_1_4), scalar("beta", T.FLOAT32)],
                    [_out(Q8S, RANKS_1_4, _SOFTMAX_QUANT)]),)
register(OperationDef(
    OperationType.SOFTMAX,
    (
        sig(1, [tensor("input", F32, (2, 4)), scalar("beta", T.FLOAT32)],
            [tensor("output", F32, (2, 4))]),
        sig(1, [tensor("input", Q8, (2, 4)), scalar("beta", T.FLOAT32)],
            [_out(Q8, (2, 4), _SOFTMAX_QUANT)]),
        *_SOFTMAX_FL3, *_with_axis(_SOFTMAX_FL3), *_SOFTMAX_FL4, *_with_axis(_SOFTMAX_FL4, 4),
    ),
    _softmax_prepare, _softmax_execute, validate=_softmax_validate, generate=_generate_softmax,
    error_budget=budgets.softmax(),
    # beta must be positive, the axis in [-rank, rank), a quantized output 1/256 (types.spec)
    error_inputs=chain(scalar_values(1, (0.0, -1.0), "must be a positive scaling factor",
                                     "SOFTMAX beta {value} is not positive (NNAPI types.spec)"),
                       axis_out_of_range(2), fixed_output_quant(OperationType.SOFTMAX)),
    summary="exp((x - max) * beta) / sum(exp((x - max) * beta)) along an axis (default last)",
    allows_zero_sized_input=True, aosp_source="SoftmaxExecution.cpp"))


# --- L2_NORMALIZATION ------------------------------------------------------------------

def _l2_validate(ctx: OpContext) -> None:
    """Model-time rules of L2_NORMALIZATION (beyond its output's fixed quantization,
    declared on the output slots): a constant axis lies in [-rank, rank)."""
    _validate_axis(ctx, 1)


def _l2_prepare(ctx: OpContext) -> list[tuple[int, ...]]:
    """Output shape = input shape; input 0 of rank 1-4, the axis (input 1, optional) in
    [-rank, rank)."""
    _axis(ctx, 1, _check_rank(ctx))
    return [tuple(ctx.inputs[0].dims)]


def _l2_execute(ctx: OpContext) -> list[np.ndarray]:
    """x / max(sqrt(sum of squares along the axis), 1e-6) on real values in float64,
    stored in the output type (quant8: scale 1/128, zeroPoint 128; quant8-signed: 1/128,
    0)."""
    axis = _axis(ctx, 1, _check_rank(ctx))
    return [from_float(ctx.outputs[0], l2_normalization(to_float(ctx.inputs[0]), axis=axis))]


def _generate_l2(d) -> None:
    """L2_NORMALIZATION drafts: the axis (input 1, or the last) along a dimension above 1;
    the quantized output at its slot's fixed quantization."""
    _draft_axis(d, 1 if len(d.slots) > 1 else None)


_L2_FL3 = tuple(sig(3, [tensor("input", t, RANKS_1_4)], [_out(t, RANKS_1_4, _L2_QUANT)])
                for t in (F32, F16, Q8))
_L2_FL4 = (sig(4, [tensor("input", Q8S, RANKS_1_4)], [_out(Q8S, RANKS_1_4, _L2_QUANT)]),)
register(OperationDef(
    OperationType.L2_NORMALIZATION,
    (sig(1, [tensor("input", F32, (4,))], [tensor("output", F32, (4,))]),
     *_L2_FL3, *_with_axis(_L2_FL3), *_L2_FL4, *_with_axis(_L2_FL4, 4)),
    _l2_prepare, _l2_execute, validate=_l2_validate, generate=_generate_l2,
    error_budget=budgets.l2_normalization(),
    # the axis in [-rank, rank), a quantized output 1/128 (types.spec)
    error_inputs=chain(axis_out_of_range(1), fixed_output_quant(OperationType.L2_NORMALIZATION)),
    summary="x / sqrt(sum x^2) along an axis (default the last)",
    aosp_source="L2NormalizationExecution.cpp"))


# --- LOCAL_RESPONSE_NORMALIZATION ------------------------------------------------------

def _lrn_check_params(ctx: OpContext, need_values: bool) -> None:
    """Parameter rules: radius (input 1) >= 0 (AOSP checks it when preparing); bias
    (input 2) must not be zero (spec text, FL1)."""
    if need_values or ctx.has_value(1):
        radius = ctx.scalar(1)
        check(radius >= 0,
              f"LOCAL_RESPONSE_NORMALIZATION: input 1 (radius) must be >= 0, got {radius}")
    if need_values or ctx.has_value(2):
        bias = ctx.scalar(2)
        check(bias != 0, "LOCAL_RESPONSE_NORMALIZATION: input 2 (bias) must not be zero")


def _lrn_validate(ctx: OpContext) -> None:
    """Model-time rules of LOCAL_RESPONSE_NORMALIZATION on constant parameters (radius,
    bias, axis)."""
    _lrn_check_params(ctx, need_values=False)
    _validate_axis(ctx, 5)


def _lrn_prepare(ctx: OpContext) -> list[tuple[int, ...]]:
    """Output shape = input shape; input 0 of rank 1-4; radius >= 0, bias != 0, the axis
    (input 5, optional) in [-rank, rank)."""
    _axis(ctx, 5, _check_rank(ctx))
    _lrn_check_params(ctx, need_values=True)
    return [tuple(ctx.inputs[0].dims)]


def _lrn_execute(ctx: OpContext) -> list[np.ndarray]:
    """LRN along the axis (default the last) in float64 with the parameters at their
    operand precision (FLOAT32 or FLOAT16), stored in the output type."""
    axis = _axis(ctx, 5, _check_rank(ctx))
    radius = int(ctx.scalar(1))
    bias, alpha, beta = (float(ctx.scalar(i)) for i in (2, 3, 4))
    real = local_response_normalization(to_float(ctx.inputs[0]), radius, bias, alpha, beta,
                                        axis=axis)
    return [from_float(ctx.outputs[0], real)]


def _lrn_sig(level: int, t: OperandType, ranks) -> object:
    f = _FLOAT_SCALAR[t]
    return sig(level, [tensor("input", t, ranks), scalar("radius", T.INT32), scalar("bias", f),
                       scalar("alpha", f), scalar("beta", f)], [tensor("output", t, ranks)])


def _generate_lrn(d) -> None:
    """LOCAL_RESPONSE_NORMALIZATION drafts: radius 0..5 (>= 0, AOSP), bias in [0.5, 3]
    (non-zero, spec; positive keeps the power real), alpha in [0.01, 1], beta in
    [0.2, 1.2]; the axis (input 5, or the last) along a dimension above 1."""
    d.param(1, d.integer(0, 5))
    d.param(2, d.uniform(0.5, 3.0))
    d.param(3, d.uniform(0.01, 1.0))
    d.param(4, d.uniform(0.2, 1.2))
    _draft_axis(d, 5 if len(d.slots) > 5 else None)


_LRN_FL3 = (_lrn_sig(3, F32, RANKS_1_4), _lrn_sig(3, F16, RANKS_1_4))
register(OperationDef(
    OperationType.LOCAL_RESPONSE_NORMALIZATION,
    (_lrn_sig(1, F32, (4,)), *_LRN_FL3, *_with_axis(_LRN_FL3)),
    _lrn_prepare, _lrn_execute, validate=_lrn_validate, generate=_generate_lrn,
    error_budget=budgets.local_response_normalization(),
    summary="x / (bias + alpha * sum of squares within radius) ** beta along an axis "
            "(default the last)", aosp_source="LocalResponseNormalizationExecution.cpp"))
