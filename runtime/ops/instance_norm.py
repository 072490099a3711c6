"""INSTANCE_NORMALIZATION (57) and LOG_SOFTMAX (64), both new at feature level 3, for
TENSOR_FLOAT32 and TENSOR_FLOAT16 (their scalar parameters FLOAT32 or FLOAT16 to match).
Quantized and FL4 forms do not exist for them.

INSTANCE_NORMALIZATION (FL3). Inputs: 0 a 4-D tensor [batches, height, width, channels]
(NHWC) or, with input 4 true, [batches, channels, height, width] (NCHW); 1 gamma, 2 beta,
3 epsilon (scalars); 4 the BOOL layout flag (required). Output: same type and shape::

    output[b, h, w, c] = (input[b, h, w, c] - mean[b, c]) * gamma / sqrt(var[b, c] + epsilon) + beta

with the mean and the (biased) variance over height and width. Errors: input 0 not 4-D.
epsilon is not constrained by the spec or AOSP; a variance + epsilon <= 0 gives inf/NaN as
AOSP's kernel would. Zero-sized inputs give an empty output (AOSP rejects zero-sized
tensors for this operation at execution; the spec is silent, the result is empty either
way).

LOG_SOFTMAX (FL3). Inputs: 0 logits of any rank >= 1; 1 beta (spec: "positive scaling
factor"); 2 axis (INT32, range [-rank, rank)). Output: same type and shape::

    output = logits * beta - log(reduce_sum(exp(logits * beta), axis))

computed as ``(x - max) * beta - log(sum(exp((x - max) * beta)))`` along the axis (the same
value, with no overflow). Errors: rank 0; axis out of range; beta <= 0 (spec text; AOSP's
CPU kernel does not check it, the reference follows the spec, as SOFTMAX does, and no
corpus model uses such a beta).

Sources: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` (formulas, types, layout and axis
rules); AOSP ``common/types/operations/src/{InstanceNormalization,LogSoftmax}.cpp``
(signatures: exactly 5 and 3 inputs, feature level 3) and ``common/cpu_operations/`` (the
kernels: same formulas; AOSP computes float16 instance normalization in float16 and
LOG_SOFTMAX's sums in double). The reference computes in float64 and rounds once to the
output type (TENSOR_FLOAT16 policy of ``common``). INSTANCE_NORMALIZATION has no corpus
model: tests/test_kernels_norm.py checks it by hand.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import from_float, from_nhwc, layout_flag, read_axis, to_float, to_nhwc
from .elementwise import linked
from .error_inputs import axis_out_of_range, chain, scalar_values

T = OperandType
F32, F16 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16
#: Scalar type of the float parameters for each tensor type.
_FLOAT_SCALAR = {F32: T.FLOAT32, F16: T.FLOAT16}


# --- kernels on real values ------------------------------------------------------------

def instance_normalization(x: np.ndarray, gamma: float, beta: float, epsilon: float) -> np.ndarray:
    """Instance normalization of NHWC ``x`` [N, H, W, C] (float64 result)::

        (x - mean[n, c]) * gamma / sqrt(var[n, c] + epsilon) + beta

    mean and biased variance over H and W of each (batch, channel). A zero-sized ``x``
    gives an empty result."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape, np.float64)
    mean = x.mean(axis=(1, 2), keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=(1, 2), keepdims=True)
    return centered * np.float64(gamma) / np.sqrt(var + np.float64(epsilon)) + np.float64(beta)


def log_softmax(x: np.ndarray, beta: float, axis: int) -> np.ndarray:
    """``(x - max) * beta - log(sum(exp((x - max) * beta)))`` along ``axis`` (float64
    result, same shape as ``x``); equal to ``x * beta - log(sum(exp(x * beta)))``. A
    zero-sized ``x`` gives an empty result."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape, np.float64)
    shifted = (x - np.max(x, axis=axis, keepdims=True)) * np.float64(beta)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# --- INSTANCE_NORMALIZATION --------------------------------------------------------------

def _in_prepare(ctx: OpContext):
    """Output dims = input dims; input 0 must be 4-D. Raises OperationError."""
    check(ctx.inputs[0].rank == 4,
          f"INSTANCE_NORMALIZATION: input 0 must have rank 4, got rank {ctx.inputs[0].rank}")
    return [tuple(ctx.inputs[0].dims)]


def _in_execute(ctx: OpContext):
    """Normalize each (batch, channel) plane in NHWC on float64 values, store in the output
    type and layout (input 4: NCHW flag)."""
    _in_prepare(ctx)
    nchw = layout_flag(ctx, 4)
    gamma, beta, epsilon = (float(ctx.scalar(i)) for i in (1, 2, 3))
    real = instance_normalization(to_nhwc(to_float(ctx.inputs[0]), nchw), gamma, beta, epsilon)
    return [from_nhwc(from_float(ctx.outputs[0], real), nchw)]


def _generate_instance_norm(d) -> None:
    """INSTANCE_NORMALIZATION drafts: gamma in [-2, 2], beta in [-1, 1], epsilon positive
    (log-uniform in [1e-5, 0.1]; [1e-3, 0.1] for FLOAT16, whose small values are
    subnormal); an unlinked input gets height * width >= 2 (a single pixel normalizes to
    beta)."""
    d.param(1, d.uniform(-2.0, 2.0))
    d.param(2, d.uniform(-1.0, 1.0))
    lo = 1e-3 if d[0].type == F16 else 1e-5
    d.param(3, float(np.exp(d.uniform(np.log(lo), np.log(0.1)))))
    dims = d[0].dims
    hw = (2, 3) if bool(d[4].value) else (1, 2)
    if not linked(d) and dims[hw[0]] * dims[hw[1]] < 2:
        k = d.choice(hw)
        dims[k] = d.dim(2, 8)
        while int(np.prod(dims)) > d.max_elements:
            j = max((j for j in range(4) if j != k), key=lambda j: dims[j])
            dims[j] = max(1, dims[j] // 2)


register(OperationDef(
    OperationType.INSTANCE_NORMALIZATION,
    tuple(sig(3, [tensor("input", t, (4,)), scalar("gamma", _FLOAT_SCALAR[t]),
                  scalar("beta", _FLOAT_SCALAR[t]), scalar("epsilon", _FLOAT_SCALAR[t]),
                  scalar("layout", T.BOOL)], [tensor("output", t, (4,))])
          for t in (F32, F16)),
    _in_prepare, _in_execute, generate=_generate_instance_norm, error_budget=budgets.instance_normalization(),
    summary="(x - mean) * gamma / sqrt(var + epsilon) + beta per batch and channel over H, W",
    aosp_source="InstanceNormalizationExecution.cpp"))


# --- LOG_SOFTMAX -------------------------------------------------------------------------

def _check_beta(beta: float) -> None:
    check(beta > 0, f"LOG_SOFTMAX: input 1 (beta) must be a positive scaling factor, got {beta}")


def _ls_validate(ctx: OpContext) -> None:
    """Model-time rules on constants: beta > 0; the axis in [-rank, rank) when the rank is
    known."""
    if ctx.has_value(1):
        _check_beta(ctx.scalar(1))
    if ctx.has_value(2) and ctx.inputs[0].rank > 0:
        read_axis(ctx, 2, ctx.inputs[0].rank)


def _ls_axis(ctx: OpContext) -> int:
    """Check rank >= 1, beta > 0 and the axis; returns the axis in [0, rank)."""
    rank = ctx.inputs[0].rank
    check(rank >= 1, "LOG_SOFTMAX: input 0 must have rank >= 1, got rank 0")
    _check_beta(ctx.scalar(1))
    return read_axis(ctx, 2, rank)


def _ls_prepare(ctx: OpContext):
    """Output dims = input dims. Raises OperationError (rank 0, beta <= 0, bad axis)."""
    _ls_axis(ctx)
    return [tuple(ctx.inputs[0].dims)]


def _ls_execute(ctx: OpContext):
    """Log-softmax along the axis on float64 values, beta at its operand precision; stored
    in the output type."""
    axis = _ls_axis(ctx)
    real = log_softmax(to_float(ctx.inputs[0]), float(ctx.scalar(1)), axis)
    return [from_float(ctx.outputs[0], real)]


def _generate_log_softmax(d) -> None:
    """LOG_SOFTMAX drafts: beta positive (spec), log-uniform in [0.1, 5]; the axis along a
    dimension above 1 (an unlinked input gets one; a linked input's axis moves to one)."""
    d.param(1, float(np.exp(d.uniform(np.log(0.1), np.log(5.0)))))
    dims = d[0].dims
    rank = len(dims)
    axis = int(d[2].value) % rank
    if dims[axis] > 1:
        return
    if not linked(d):
        dims[axis] = d.dim(2, 8)
        while int(np.prod(dims)) > d.max_elements:
            j = max((j for j in range(rank) if j != axis), key=lambda j: dims[j])
            dims[j] = max(1, dims[j] // 2)
    elif any(n > 1 for n in dims):
        axis = d.choice([k for k, n in enumerate(dims) if n > 1])
        d.param(2, axis - rank if d.coin() else axis)


register(OperationDef(
    OperationType.LOG_SOFTMAX,
    tuple(sig(3, [tensor("input", t, None), scalar("beta", _FLOAT_SCALAR[t]),
                  scalar("axis", T.INT32)], [tensor("output", t, None)])
          for t in (F32, F16)),
    _ls_prepare, _ls_execute, validate=_ls_validate, generate=_generate_log_softmax,
    error_budget=budgets.log_softmax(),
    error_inputs=chain(scalar_values(1, (0.0, -1.0), "must be a positive scaling factor",
                                     "LOG_SOFTMAX beta {value} is not positive (NNAPI types.spec)"),
                       axis_out_of_range(2)),
    summary="x * beta - log(sum(exp(x * beta))) along an axis",
    aosp_source="LogSoftmaxExecution.cpp"))
