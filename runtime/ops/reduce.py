"""Reductions over a list of dimensions: MEAN (FL2) and REDUCE_ALL, REDUCE_ANY, REDUCE_MAX,
REDUCE_MIN, REDUCE_PROD, REDUCE_SUM (FL3).

Common shape: input 0 a tensor of rank 1-4; input 1 a 1-D TENSOR_INT32 of dimensions to
reduce, each in [-rank, rank) (negative counts from the end; repeats allowed; an empty
list reduces nothing); input 2 keep_dims. Output: the input dims with the reduced ones
set to 1 (keep_dims) or removed, [1] if every dimension is removed.

MEAN (31): TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL2), TENSOR_FLOAT16 (FL3),
    TENSOR_QUANT8_ASYMM_SIGNED (FL4); keep_dims INT32 (> 0 keeps). Mean of the real values
    in float64, stored in the output type (quantized: input 0's scale and zeroPoint, round
    half away from zero, saturate).
REDUCE_ALL (75), REDUCE_ANY (76), FL3: TENSOR_BOOL8 in and out; logical and / or.
REDUCE_MAX (77), REDUCE_MIN (78): TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL3),
    TENSOR_QUANT8_ASYMM_SIGNED (FL4) (output with input 0's scale and zeroPoint; raw
    values compared). A reduction over an
    empty dimension gives AOSP's initial value (the type's lowest / highest finite value).
REDUCE_PROD (79), REDUCE_SUM (80), FL3: TENSOR_FLOAT16, TENSOR_FLOAT32. Computed in float64
    with one rounding to the output type (TENSOR_FLOAT16 policy of common.py). PROD: a
    slice holding a zero gives 0 even with an infinity in it, as AOSP's kernel does
    (``Reduce.cpp`` returns 0 when either factor is 0, so 0 * inf is not NaN).
The keep_dims of the REDUCE_* operations is a BOOL scalar. FL4 forms: types.spec
"TENSOR_QUANT8_ASYMM_SIGNED (since NNAPI feature level 4)" for MEAN, REDUCE_MAX and
REDUCE_MIN (AOSP ``reduce::validateMaxMin`` returns kVersionFeatureLevel4 for them).

Errors (OperationError): input rank outside 1-4, input 1 not 1-D, an axis out of range;
at model time, a quantized output whose scale/zeroPoint differ from input 0's.

Sources: NNAPI ``types.spec`` (NeuralNetworksTypes.h) MEAN and REDUCE_*; level rules of
AOSP ``validateOperation`` (LegacyUtils.cpp, MEAN) and
``common/types/operations/src/Reduce.cpp``; shape rules of ``meanPrepare``
(OperationsExecutionUtils.cpp) and ``reduce::prepare`` (``common/cpu_operations/Reduce.cpp``).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import check_same_quant, from_float, int_vector, to_float
from .error_inputs import chain, output_quant_of_input, tensor_values

T = OperandType
F16, F32, Q8 = T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM


def _validate(ctx: OpContext) -> None:
    """A TENSOR_QUANT8_ASYMM (FL2) or TENSOR_QUANT8_ASYMM_SIGNED (FL4) output has input 0's
    scale and zeroPoint (NNAPI MEAN, REDUCE_MAX, REDUCE_MIN)."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], ctx.operation.name)


def _axes(ctx: OpContext) -> tuple[tuple[int, ...], bool]:
    """(sorted distinct reduced dimensions, keep_dims). Input 1 is a 1-D TENSOR_INT32 of
    values in [-rank, rank) (negative counts from the end; repeats allowed); input 2 keeps
    the reduced dimensions with size 1 when true (BOOL) or > 0 (MEAN's INT32).
    Raises OperationError."""
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


def _mean(ctx: OpContext):
    """Mean of the real values (dequantized for the quant8 types, summed in float64),
    stored in the output type (quantized: round half away from zero, saturate)."""
    axes, _ = _axes(ctx)
    real = to_float(ctx.inputs[0]).mean(axis=axes)
    return [from_float(ctx.outputs[0], np.reshape(real, _prepare(ctx)[0]))]


def _draft_axes(d, limit: int | None = None, redraw: bool = False) -> None:
    """Input 1: 1 to rank distinct dimensions, each in [-rank, rank) (half of them
    negative), mostly of size > 1 (reducing a size-1 dimension changes nothing). With
    ``limit``, dimensions whose product (the elements reduced into one) stays within it;
    when no dimension > 1 is that small, one of input 0's dimensions is redrawn in
    [2, limit] (which drops a link) if ``redraw`` or input 0 is unlinked, else the
    smallest dimension is reduced."""
    dims = list(d.dims0)
    r = len(dims)
    if limit is not None and not any(1 < x <= limit for x in dims):
        if redraw or d.primary is None:
            dims[d.integer(0, r - 1)] = d.dim(2, limit)
            d.tensor(0, dims)
        else:
            d.param(1, [int(np.argmin(dims))], [1])
            return
    wide = [a for a in range(r) if dims[a] > 1 and (limit is None or dims[a] <= limit)]
    pool = wide if wide and d.coin(0.85) else [a for a in range(r) if limit is None or dims[a] <= limit]
    axes = [int(a) for a in d.rng.permutation(pool)[:d.integer(1, len(pool))]]
    if limit is not None:
        keep, count = [], 1
        for a in axes:
            if count * dims[a] <= limit:
                keep.append(a)
                count *= dims[a]
        axes = keep
    d.param(1, [a - r if d.coin() else a for a in axes], [len(axes)])


def _generate_reduce(d) -> None:
    """Distinct axes in [-rank, rank), mostly of dimensions > 1 (NNAPI MEAN / REDUCE_*:
    axes in range; keep_dims from its domain)."""
    _draft_axes(d)


def _generate_reduce_bool(d) -> None:
    """REDUCE_ALL / REDUCE_ANY: axes reducing at most 6 elements into one (where the
    random booleans leave both outcomes likely; over many every ALL is false and every ANY
    true)."""
    _draft_axes(d, limit=6)


def _generate_reduce_prod(d) -> None:
    """REDUCE_PROD: no overflow or underflow, even in float16: values in [0.6, 1.6] with
    at most 32 elements per product, or in [-1.6, 1.6] (not near 0) with at most 6."""
    if d.coin():
        d[0].low, d[0].high = 0.6, 1.6
        _draft_axes(d, limit=32, redraw=True)
    else:
        d[0].low, d[0].high, d[0].nonzero = -1.6, 1.6, True
        _draft_axes(d, limit=6, redraw=True)


def _error_inputs(op: OperationType):
    """Invalid uses of MEAN / REDUCE_* (NNAPI types.spec): a quantized output off input 0's
    quantization (model validation); an axis value equal to the rank (prepare, AOSP
    ``reduce::prepare``)."""
    def axis_value(axis, inputs):
        return np.full(axis.dims, inputs[0].rank) if inputs[0].rank and np.prod(axis.dims) else None
    return chain(output_quant_of_input("must equal input scale", f"NNAPI types.spec {op.name}"),
                 tensor_values(1, axis_value, "out of range",
                               f"{op.name} axis values lie in [-rank, rank) (NNAPI types.spec)"))


register(OperationDef(
    OperationType.MEAN,
    tuple(sig(level, [tensor("input", t), tensor("axis", T.TENSOR_INT32, (1,)),
                      scalar("keep_dims", T.INT32)], [tensor("output", t)])
          for level, t in ((2, F32), (2, Q8), (3, F16), (4, T.TENSOR_QUANT8_ASYMM_SIGNED))),
    _prepare, _mean, validate=_validate, error_inputs=_error_inputs(OperationType.MEAN),
    error_budget=budgets.reduction(OperationType.MEAN),
    summary="mean over the given dimensions, optionally keeping them", aosp_source="CpuExecutor.cpp",
    generate=_generate_reduce))


# --- REDUCE_* (FL3) ----------------------------------------------------------------------

def _extreme(np_reduce, use_max: bool):
    """Raw max/min with AOSP's initial value (so an empty reduction gives it)."""
    def reduce(x: np.ndarray, axes) -> np.ndarray:
        info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
        return np_reduce(x, axis=axes, initial=info.min if use_max else info.max)
    return reduce


def _sum(x: np.ndarray, axes) -> np.ndarray:
    return x.astype(np.float64).sum(axis=axes)


def _prod(x: np.ndarray, axes) -> np.ndarray:
    x = x.astype(np.float64)
    return np.where((x == 0).any(axis=axes), 0.0, x.prod(axis=axes))


def _kernel(reduce):
    def execute(ctx: OpContext):
        """The reduction over the listed dimensions, in the output's type and shape."""
        shape = _prepare(ctx)[0]
        axes, _ = _axes(ctx)
        x = ctx.value(0)
        result = np.asarray(reduce(x, axes)).astype(x.dtype)
        return [result.reshape(shape)]
    return execute


def _reduce_sigs(types, fl4_types=()):
    """FL3 signatures for ``types``, FL4 ones for ``fl4_types``."""
    return tuple(sig(lv, [tensor("input", t), tensor("axes", T.TENSOR_INT32, (1,)),
                          scalar("keep_dims", T.BOOL)], [tensor("output", t)])
                 for lv, t in [(3, t) for t in types] + [(4, t) for t in fl4_types])


_Q8S = (T.TENSOR_QUANT8_ASYMM_SIGNED,)
for _op, _types, _fl4, _reduce, _summary, _generate in (
        (OperationType.REDUCE_ALL, (T.TENSOR_BOOL8,), (), np.all, "logical and over dimensions",
         _generate_reduce_bool),
        (OperationType.REDUCE_ANY, (T.TENSOR_BOOL8,), (), np.any, "logical or over dimensions",
         _generate_reduce_bool),
        (OperationType.REDUCE_MAX, (F16, F32, Q8), _Q8S, _extreme(np.max, True),
         "maximum over dimensions", _generate_reduce),
        (OperationType.REDUCE_MIN, (F16, F32, Q8), _Q8S, _extreme(np.min, False),
         "minimum over dimensions", _generate_reduce),
        (OperationType.REDUCE_PROD, (F16, F32), (), _prod, "product over dimensions",
         _generate_reduce_prod),
        (OperationType.REDUCE_SUM, (F16, F32), (), _sum, "sum over dimensions", _generate_reduce)):
    register(OperationDef(_op, _reduce_sigs(_types, _fl4), _prepare, _kernel(_reduce),
                          validate=_validate, summary=_summary, aosp_source="ReduceExecution.cpp",
                          error_budget=budgets.reduction(_op),
                          error_inputs=_error_inputs(_op),
                          generate=_generate))
