"""Normalization operations of feature levels 1-2: SOFTMAX, L2_NORMALIZATION and
LOCAL_RESPONSE_NORMALIZATION.

Declared: the FL1 signatures, and SOFTMAX's FL4 TENSOR_QUANT8_ASYMM_SIGNED twin of its FL1
quant8 signature (same inputs and ranks). Not declared: TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM
for L2_NORMALIZATION, the optional ``axis`` input, other ranks (FL3), and quant8-signed
L2_NORMALIZATION (FL4, whose quant8 form is FL3). The FL1 ranks apply (SOFTMAX 2 or 4, the
other two 4). All three normalise along the last dimension.

Semantics: NNAPI ``types.spec`` (``NeuralNetworksTypes.h``, HAL 1.0/1.1 ``types.hal``) for
each operation; parameter checks also follow what the AOSP runtime enforces
(``common/cpu_operations/{Softmax,L2Normalization,LocalResponseNormalization}.cpp``).

The public kernels (:func:`softmax`, :func:`l2_normalization`,
:func:`local_response_normalization`) work on real values in float64; the registered
``execute`` functions dequantize/cast the operands around them.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import from_float, to_float

__all__ = ["softmax", "l2_normalization", "local_response_normalization",
           "SOFTMAX_QUANT8_OUTPUT_SCALE", "SOFTMAX_QUANT8_OUTPUT_ZERO_POINT",
           "SOFTMAX_QUANT8_SIGNED_OUTPUT_ZERO_POINT"]

T = OperandType
F32, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED

#: SOFTMAX TENSOR_QUANT8_ASYMM output quantization required by the spec (FL1+): scale
#: ``1.f / 256`` (exactly representable in binary32) and zeroPoint 0.
SOFTMAX_QUANT8_OUTPUT_SCALE = np.float32(1.0 / 256)
SOFTMAX_QUANT8_OUTPUT_ZERO_POINT = 0
#: SOFTMAX TENSOR_QUANT8_ASYMM_SIGNED output (FL4): scale 1/256 as well, zeroPoint -128.
SOFTMAX_QUANT8_SIGNED_OUTPUT_ZERO_POINT = -128
_SOFTMAX_OUTPUT_ZERO_POINT = {Q8: SOFTMAX_QUANT8_OUTPUT_ZERO_POINT,
                              Q8S: SOFTMAX_QUANT8_SIGNED_OUTPUT_ZERO_POINT}


# --- kernels on real values ------------------------------------------------------------

def softmax(x: np.ndarray, beta: float, axis: int = -1) -> np.ndarray:
    """Softmax of ``x`` along ``axis`` with exponent scale ``beta``.

    ``output = exp((x - max(x)) * beta) / sum(exp((x - max(x)) * beta))`` per 1-D slice
    along ``axis`` (NNAPI SOFTMAX, FL1: the last axis of a rank-2 ``[batch, n]`` or rank-4
    tensor).

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


def l2_normalization(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """L2 normalization of ``x`` along ``axis``:
    ``output = x / sqrt(sum_c x[..., c]^2)`` (NNAPI L2_NORMALIZATION, FL1: the last axis of
    a rank-4 NHWC tensor, i.e. the channels).

    x: real values, any shape, any float dtype (computed in float64). Returns a float64
    array of ``x.shape``. A slice that is all zeros gives zeros: the spec leaves this case
    undefined before feature level 4 and defines it as zero since then, so zero is a valid
    answer at every level.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape, np.float64)
    norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x / norm
    return np.where(norm == 0, 0.0, out)


def local_response_normalization(x: np.ndarray, radius: int, bias: float, alpha: float,
                                 beta: float, axis: int = -1) -> np.ndarray:
    """Local response normalization of ``x`` along ``axis`` (NNAPI
    LOCAL_RESPONSE_NORMALIZATION, FL1: the last axis of a rank-4 NHWC tensor)::

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


# --- SOFTMAX ---------------------------------------------------------------------------

def _softmax_validate(ctx: OpContext) -> None:
    """Model-time rules of SOFTMAX: a TENSOR_QUANT8_ASYMM output (FL1) has scale 1/256 and
    zeroPoint 0, a TENSOR_QUANT8_ASYMM_SIGNED output (FL4) scale 1/256 and zeroPoint -128;
    beta, when constant, is positive."""
    out = ctx.outputs[0]
    if out.type in _SOFTMAX_OUTPUT_ZERO_POINT:
        zp = _SOFTMAX_OUTPUT_ZERO_POINT[out.type]
        check(np.float32(out.scale) == SOFTMAX_QUANT8_OUTPUT_SCALE and out.zero_point == zp,
              f"SOFTMAX: output 0 ({out.type.name}) must have scale 1/256 and zeroPoint {zp}, "
              f"got scale {out.scale} and zeroPoint {out.zero_point}")
    if ctx.has_value(1):
        _check_beta(ctx.scalar(1))


def _check_beta(beta: float) -> None:
    check(beta > 0,
          f"SOFTMAX: input 1 (beta) must be a positive scaling factor, got {beta}")


def _softmax_prepare(ctx: OpContext) -> list[tuple[int, ...]]:
    """Output shape = input shape. Checks input 0 has rank 2 or 4 (FL1-2) and beta > 0
    (spec: "positive scaling factor"; AOSP checks it when preparing)."""
    dims = tuple(ctx.inputs[0].dims)
    check(len(dims) in (2, 4),
          f"SOFTMAX: input 0 must have rank 2 or 4 before feature level 3, got rank {len(dims)}")
    _check_beta(ctx.scalar(1))
    return [dims]


def _softmax_execute(ctx: OpContext) -> list[np.ndarray]:
    """SOFTMAX along the last axis; a quant8 output is quantized with scale 1/256 and
    zeroPoint 0 (probability 1.0 saturates to 255), a quant8-signed one with zeroPoint -128
    (1.0 saturates to 127)."""
    x = ctx.inputs[0]
    real = softmax(to_float(x), np.float64(np.float32(ctx.scalar(1))), axis=-1)
    return [from_float(ctx.outputs[0], real)]


register(OperationDef(
    OperationType.SOFTMAX,
    (
        sig(1, [tensor("input", F32, (2, 4)), scalar("beta", T.FLOAT32)],
            [tensor("output", F32, (2, 4))]),
        sig(1, [tensor("input", Q8, (2, 4)), scalar("beta", T.FLOAT32)],
            [tensor("output", Q8, (2, 4))]),
        sig(4, [tensor("input", Q8S, (2, 4)), scalar("beta", T.FLOAT32)],
            [tensor("output", Q8S, (2, 4))]),
    ),
    _softmax_prepare, _softmax_execute, validate=_softmax_validate,
    summary="exp((x - max) * beta) / sum(exp((x - max) * beta)) over the last axis"))


# --- L2_NORMALIZATION ------------------------------------------------------------------

def _l2_prepare(ctx: OpContext) -> list[tuple[int, ...]]:
    """Output shape = input shape; input 0 must be rank 4 (NHWC) before feature level 3."""
    dims = tuple(ctx.inputs[0].dims)
    check(len(dims) == 4,
          f"L2_NORMALIZATION: input 0 must have rank 4 before feature level 3, got rank {len(dims)}")
    return [dims]


def _l2_execute(ctx: OpContext) -> list[np.ndarray]:
    """x / sqrt(sum of squares over the channels), computed in float64 and stored as
    float32."""
    return [from_float(ctx.outputs[0], l2_normalization(to_float(ctx.inputs[0]), axis=-1))]


register(OperationDef(
    OperationType.L2_NORMALIZATION,
    (sig(1, [tensor("input", F32, (4,))], [tensor("output", F32, (4,))]),),
    _l2_prepare, _l2_execute,
    summary="x / sqrt(sum_c x^2) over the last (depth) axis"))


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
    """Model-time rules of LOCAL_RESPONSE_NORMALIZATION on constant parameters."""
    _lrn_check_params(ctx, need_values=False)


def _lrn_prepare(ctx: OpContext) -> list[tuple[int, ...]]:
    """Output shape = input shape; input 0 must be rank 4 (NHWC) before feature level 3;
    radius >= 0, bias != 0."""
    dims = tuple(ctx.inputs[0].dims)
    check(len(dims) == 4,
          "LOCAL_RESPONSE_NORMALIZATION: input 0 must have rank 4 before feature level 3, "
          f"got rank {len(dims)}")
    _lrn_check_params(ctx, need_values=True)
    return [dims]


def _lrn_execute(ctx: OpContext) -> list[np.ndarray]:
    """LRN over the last (depth) axis in float64 with the float32 parameter values, stored
    as float32."""
    radius = int(ctx.scalar(1))
    bias, alpha, beta = (np.float64(np.float32(ctx.scalar(i))) for i in (2, 3, 4))
    real = local_response_normalization(to_float(ctx.inputs[0]), radius, bias, alpha, beta,
                                        axis=-1)
    return [from_float(ctx.outputs[0], real)]


register(OperationDef(
    OperationType.LOCAL_RESPONSE_NORMALIZATION,
    (sig(1, [tensor("input", F32, (4,)), scalar("radius", T.INT32), scalar("bias", T.FLOAT32),
             scalar("alpha", T.FLOAT32), scalar("beta", T.FLOAT32)],
         [tensor("output", F32, (4,))]),),
    _lrn_prepare, _lrn_execute, validate=_lrn_validate,
    summary="x / (bias + alpha * sum of squares within radius) ** beta over the last axis"))
