"""MEAN (it appears at FL2): TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM at FL2, and the
TENSOR_QUANT8_ASYMM_SIGNED twin (same inputs) at FL4.

Not declared here: TENSOR_FLOAT16 (FL3), and the REDUCE_* operations (FL3).

Sources: NNAPI ``NeuralNetworksTypes.h`` MEAN; level rules of AOSP ``validateOperation``
(LegacyUtils.cpp); shape rules of ``meanPrepare`` (OperationsExecutionUtils.cpp).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import check_same_quant, from_float, int_vector, to_float

T = OperandType


def _validate(ctx: OpContext) -> None:
    """A TENSOR_QUANT8_ASYMM (FL2) or TENSOR_QUANT8_ASYMM_SIGNED (FL4) output has input 0's
    scale and zeroPoint (NNAPI MEAN)."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], "MEAN")


def _axes(ctx: OpContext) -> tuple[tuple[int, ...], bool]:
    """(sorted distinct reduced dimensions, keep_dims). Input 1 is a 1-D TENSOR_INT32 of
    values in [-rank, rank) (negative counts from the end; repeats allowed); input 2
    (INT32) keeps the reduced dimensions with size 1 when > 0. Raises OperationError."""
    rank = ctx.inputs[0].rank
    check(1 <= rank <= 4, f"input 0 must have rank 1 to 4, got {rank}")
    axes = int_vector(ctx, 1, "axis")
    for a in axes:
        check(-rank <= a < rank, f"input 1 (axis) value {a} is out of range [{-rank}, {rank})")
    return tuple(sorted({a % rank for a in axes})), ctx.scalar(2) > 0


def _prepare(ctx: OpContext):
    """Input dims with the reduced ones set to 1 (keep_dims) or removed; [1] if all are
    removed."""
    _validate(ctx)
    axes, keep = _axes(ctx)
    dims = ctx.inputs[0].dims
    if keep:
        return [tuple(1 if i in axes else d for i, d in enumerate(dims))]
    return [tuple(d for i, d in enumerate(dims) if i not in axes) or (1,)]


def _execute(ctx: OpContext):
    """Mean of the real values (dequantized for the quant8 types, summed in float64),
    stored in the output type (quantized: round half away from zero, saturate)."""
    axes, _ = _axes(ctx)
    real = to_float(ctx.inputs[0]).mean(axis=axes)
    return [from_float(ctx.outputs[0], np.reshape(real, _prepare(ctx)[0]))]


register(OperationDef(
    OperationType.MEAN,
    tuple(sig(level, [tensor("input", t), tensor("axis", T.TENSOR_INT32, (1,)),
                      scalar("keep_dims", T.INT32)], [tensor("output", t)])
          for level, t in ((2, T.TENSOR_FLOAT32), (2, T.TENSOR_QUANT8_ASYMM),
                           (4, T.TENSOR_QUANT8_ASYMM_SIGNED))),
    _prepare, _execute, validate=_validate,
    summary="mean over the given dimensions, optionally keeping them"))
