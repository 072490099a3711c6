"""Selection along an axis: ARGMAX, ARGMIN and TOPK_V2 (all feature level 3; their
TENSOR_QUANT8_ASYMM_SIGNED forms feature level 4).

ARGMAX (39), ARGMIN (40), FL3
    input 0: n-D tensor (n >= 1, non-empty), TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 or
    TENSOR_QUANT8_ASYMM (FL3), TENSOR_QUANT8_ASYMM_SIGNED (FL4); input 1: INT32 axis in
    [-n, n) (negative counts from the end).
    output 0: TENSOR_INT32 of the input shape without ``axis`` ([1] for a 1-D input): the
    index of the largest (smallest) element along ``axis``; ties give the lowest index
    (AOSP ``ArgMinMax.cpp`` replaces the running best only on a strict comparison).
    Quantized values are compared raw (the scale is positive, so the order is the real
    order). NaN inputs follow numpy (the first NaN wins); NNAPI leaves them undefined.

TOPK_V2 (90), FL3
    input 0: n-D tensor (n >= 1), TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 or
    TENSOR_QUANT8_ASYMM (FL3), TENSOR_QUANT8_ASYMM_SIGNED (FL4); input 1: INT32 k,
    1 <= k <= last dimension.
    output 0: values, input 0's type (quantized: input 0's scale and zeroPoint) and shape
    with the last dimension k: the k largest entries of every last-dimension row, in
    descending order; output 1: TENSOR_INT32 of the same shape, their indices within the
    row. Equal values: the larger index comes first (NNAPI text; AOSP ``TopK_V2.cpp`` sorts
    (value, index) pairs and reverses them, which gives the same order).

Errors (OperationError, i.e. GENERAL_FAILURE): axis out of range, an empty input (ARGMAX,
ARGMIN: the reduced axis has size 0), k out of [1, last dimension], a rank-0 input, and
(at model time) a TOPK_V2 quantized values output whose scale/zeroPoint differ from
input 0's.

Sources: NNAPI ``types.spec`` (NeuralNetworksTypes.h) ARGMAX / ARGMIN / TOPK_V2; type and
level rules of AOSP ``common/types/operations/src/{ArgMinMax,TopK_V2}.cpp``; shape and
parameter rules of ``argMinMaxPrepare`` (OperationsExecutionUtils.cpp) and
``topk_v2::prepare`` (``common/cpu_operations/TopK_V2.cpp``). FL4 forms: types.spec
"TENSOR_QUANT8_ASYMM_SIGNED (since NNAPI feature level 4)"; AOSP ``validate`` returns
kVersionFeatureLevel4 for them. int8 values are compared raw like uint8 ones.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import check_same_quant, read_axis
from .decision_rules import arg_decision, topk_decision

T = OperandType
I32 = T.TENSOR_INT32
#: Input types of ARGMAX, ARGMIN and TOPK_V2 at feature level 3.
FL3_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)
#: (feature level, input type) of every form of ARGMAX, ARGMIN and TOPK_V2.
LEVELS = tuple((3, t) for t in FL3_TYPES) + ((4, T.TENSOR_QUANT8_ASYMM_SIGNED),)


def _rank(ctx: OpContext) -> int:
    """Rank of input 0, which must be >= 1. Raises OperationError."""
    r = ctx.inputs[0].rank
    check(r >= 1, f"input 0 must have rank >= 1, got {r}")
    return r


# --- ARGMAX, ARGMIN -----------------------------------------------------------------------

def _arg_prepare(ctx: OpContext):
    """Output: input dims without ``axis`` ([1] for a 1-D input). Raises OperationError for
    an axis out of [-n, n) or an empty reduced axis."""
    dims = ctx.inputs[0].dims
    axis = read_axis(ctx, 1, _rank(ctx))
    check(dims[axis] > 0, f"input 0 dimension {axis} (the axis) is 0; the input must be non-empty")
    return [tuple(d for i, d in enumerate(dims) if i != axis) or (1,)]


def _arg_kernel(pick):
    def execute(ctx: OpContext):
        """Index (int32) of the first extreme element along the axis."""
        shape = _arg_prepare(ctx)[0]
        axis = read_axis(ctx, 1, ctx.inputs[0].rank)
        return [pick(ctx.value(0), axis=axis).astype(np.int32).reshape(shape)]
    return execute


def _generate_arg(d) -> None:
    """Axis in [-n, n) (NNAPI ARGMAX / ARGMIN), mostly of a dimension > 1 (over a size-1
    one every index is 0)."""
    dims = d.dims0
    wide = [a for a in range(len(dims)) if dims[a] > 1]
    axis = d.choice(wide) if wide and d.coin(0.9) else d.integer(0, len(dims) - 1)
    d.param("axis", axis - len(dims) if d.coin(0.3) else axis)


def _arg_sigs():
    return tuple(sig(lv, [tensor("input", t, None), scalar("axis", T.INT32)],
                     [tensor("output", I32, None)]) for lv, t in LEVELS)


register(OperationDef(OperationType.ARGMAX, _arg_sigs(), _arg_prepare, _arg_kernel(np.argmax),
                      summary="index of the largest element along an axis",
                      aosp_source="CpuExecutor.cpp", generate=_generate_arg, decision=arg_decision))
register(OperationDef(OperationType.ARGMIN, _arg_sigs(), _arg_prepare, _arg_kernel(np.argmin),
                      summary="index of the smallest element along an axis",
                      aosp_source="CpuExecutor.cpp", generate=_generate_arg, decision=arg_decision))


# --- TOPK_V2 -------------------------------------------------------------------------------

def _topk_validate(ctx: OpContext) -> None:
    """A quantized values output keeps input 0's scale and zeroPoint (NNAPI TOPK_V2)."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], "TOPK_V2 output 0")


def _topk_prepare(ctx: OpContext):
    """Both outputs: input dims with the last one replaced by k (1 <= k <= last dim)."""
    _topk_validate(ctx)
    dims = ctx.inputs[0].dims
    _rank(ctx)
    k = ctx.scalar(1)
    check(1 <= k <= dims[-1], f"input 1 (k) value {k} is out of range [1, {dims[-1]}] "
                              f"(the last dimension of input 0)")
    out = (*dims[:-1], k)
    return [out, out]


def _topk_execute(ctx: OpContext):
    """Per last-dimension row: stable sort of the reversed row by descending value, so
    equal values keep the larger original index first; the first k are taken."""
    shape = _topk_prepare(ctx)[0]
    x = ctx.value(0)
    n, k = x.shape[-1], shape[-1]
    rows = x.reshape(-1, n)
    order = np.argsort(-rows[:, ::-1].astype(np.float64), axis=1, kind="stable")[:, :k]
    indices = (n - 1 - order).astype(np.int32)
    values = np.take_along_axis(rows, indices, axis=1)
    return [values.reshape(shape), indices.reshape(shape)]


def _generate_topk(d) -> None:
    """k in [1, last dimension] (NNAPI TOPK_V2); an unlinked input 0 gets a last dimension
    > 1 (k = 1 of 1 is a copy)."""
    dims = list(d.dims0)
    if dims[-1] == 1 and d.primary is None:
        dims[-1] = d.dim(2, 64)
        while int(np.prod(dims)) > d.max_elements and max(dims) > 2:
            k = int(np.argmax(dims))
            dims[k] = max(2 if k == len(dims) - 1 else 1, dims[k] // 2)
        d.tensor(0, dims)
    d.param("k", d.integer(1, dims[-1]) if d.coin(0.7) else d.integer(1, min(dims[-1], 4)))


register(OperationDef(
    OperationType.TOPK_V2,
    tuple(sig(lv, [tensor("input", t, None), scalar("k", T.INT32)],
              [tensor("values", t, None), tensor("indices", I32, None)]) for lv, t in LEVELS),
    _topk_prepare, _topk_execute, validate=_topk_validate,
    summary="k largest entries of the last dimension, and their indices",
    aosp_source="TopK_V2Execution.cpp", generate=_generate_topk, decision=topk_decision,
    error_budget=budgets.exact("selection")))
