"""Indexing and data-movement operations of feature level 3: CHANNEL_SHUFFLE,
EXPAND_DIMS, GATHER, SLICE, SPLIT and TILE, with their FL4 forms.

Every one moves raw values: a quantized output (TENSOR_QUANT8_ASYMM,
TENSOR_QUANT8_ASYMM_SIGNED) must have input 0's scale and zeroPoint (NNAPI, checked at
model time). Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 and TENSOR_QUANT8_ASYMM
at FL3, except CHANNEL_SHUFFLE (no TENSOR_INT32); TENSOR_QUANT8_ASYMM_SIGNED at FL4 for
all six (types.spec "since NNAPI feature level 4"; AOSP ``validate`` of each returns
kVersionFeatureLevel4 for it). The int8 forms use the same kernels (raw values moved).
Axis parameters may be negative (counting from the end).

CHANNEL_SHUFFLE (46): input 0 tensor of rank 1-4; input 1 INT32 num_groups > 0 dividing
    the size of the axis; input 2 INT32 axis in [-n, n). Output: same shape, the axis of
    size G * S (G groups of S) reordered so that output[i * G + j] = input[j * S + i].
EXPAND_DIMS (50): input 0 n-D tensor (n >= 1); input 1 INT32 axis in [-(n+1), n+1).
    Output: (n+1)-D, a dimension of 1 inserted at the axis.
GATHER (51): input 0 n-D tensor (n >= 1); input 1 INT32 axis in [-n, n); input 2 k-D
    TENSOR_INT32 indices, every value in [0, input.dims[axis]). Output:
    input.dims[:axis] + indices.dims + input.dims[axis+1:].
SLICE (86): input 0 n-D tensor (n >= 1, may be zero-sized); inputs 1 begin, 2 size: 1-D
    TENSOR_INT32 of n values; 0 <= begin[i] <= dims[i], size[i] = -1 (to the end) or
    >= 0 with begin[i] + size[i] <= dims[i]. Output: shape size.
SPLIT (87): input 0 n-D tensor (n >= 1); input 1 INT32 axis in [-n, n); input 2 INT32
    num_splits > 0, equal to the number of outputs and dividing the axis size. Outputs:
    num_splits tensors, the axis divided equally (an operation with variadic outputs).
TILE (89): input 0 n-D tensor (n >= 1); input 1 multiples, 1-D TENSOR_INT32 of n values
    >= 0 (NNAPI does not say; AOSP's kernel yields an empty output for 0 and undefined
    results for negative values, which the reference rejects). Output dims[i] *
    multiples[i], the input repeated along every dimension.

Errors: any rule above broken gives OperationError (GENERAL_FAILURE), naming the input.

Sources: NNAPI ``types.spec`` (NeuralNetworksTypes.h) for each operation; type and level
rules of AOSP ``common/types/operations/src/*.cpp``; shape rules of the AOSP CPU kernels'
``prepare`` (``common/cpu_operations/{ChannelShuffle,ExpandDims,Gather,Slice,Tile}.cpp``,
``splitPrepare`` in OperationsExecutionUtils.cpp, SPLIT in CpuExecutor.cpp).
"""
from __future__ import annotations

import math

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import check_same_quant, int_vector, read_axis
from .error_inputs import PREPARE, axis_out_of_range, chain, grown, output_quant_of_input

T = OperandType
I32 = T.TENSOR_INT32
#: Data types of the operations here at feature level 3.
FL3_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)
#: Data type every operation here gains at feature level 4.
FL4_TYPES = (T.TENSOR_QUANT8_ASYMM_SIGNED,)


def _same_quant(ctx: OpContext) -> None:
    """validate: every quantized output keeps input 0's scale and zeroPoint."""
    for j, out in enumerate(ctx.outputs):
        check_same_quant(ctx.inputs[0], out, f"{ctx.operation.name} output {j}")


def _rank(ctx: OpContext, max_rank: int | None = None) -> int:
    """Rank of input 0: >= 1 (and <= ``max_rank`` if given). Raises OperationError."""
    r = ctx.inputs[0].rank
    check(r >= 1 and (max_rank is None or r <= max_rank),
          f"input 0 has rank {r}, {ctx.operation.name} needs rank 1"
          + (f" to {max_rank}" if max_rank else " or more"))
    return r


def _sigs(extra_inputs, types=FL3_TYPES, ranks=None, n_outputs: int = 1):
    """One signature per data type: FL3 for ``types``, FL4 for TENSOR_QUANT8_ASYMM_SIGNED;
    input 0 of that type (``ranks``; None = any), the ``extra_inputs`` Args, then
    output(s) of the same type."""
    return tuple(sig(level, [tensor("input", t, ranks), *extra_inputs],
                     [tensor("output", t, ranks)] * n_outputs)
                 for level, t in [(3, t) for t in types] + [(4, t) for t in FL4_TYPES])


def _reg(op, sigs, prepare, execute, summary, error_inputs=None, **kw):
    """Register a row of this family: validated with :func:`_same_quant`, whose error inputs
    (a quantized output 0 off input 0's scale / zeroPoint) come before ``error_inputs``."""
    same = output_quant_of_input("must equal input scale", f"NNAPI types.spec {op.name}")
    register(OperationDef(op, sigs, prepare, execute, validate=_same_quant, summary=summary,
                          error_budget=budgets.exact(),
                          error_inputs=same if error_inputs is None else chain(same, error_inputs),
                          **kw))


def _draft_axis(d, axis: int, rank: int) -> int:
    """``axis`` (in [0, rank)) as given to the operation: sometimes counted from the end."""
    return axis - rank if d.coin(0.3) else axis


# --- CHANNEL_SHUFFLE ----------------------------------------------------------------------

def _shuffle_params(ctx: OpContext) -> tuple[int, int]:
    """(num_groups, axis) after the checks of AOSP ``channel_shuffle::prepare``."""
    _same_quant(ctx)
    rank = _rank(ctx, 4)
    axis = read_axis(ctx, 2, rank)
    groups, size = ctx.scalar(1), ctx.inputs[0].dims[axis]
    check(groups > 0, f"input 1 (num_groups) value {groups} must be > 0")
    check(size % groups == 0,
          f"input 1 (num_groups) value {groups} must divide dimension {axis} of input 0 ({size})")
    return groups, axis


def _shuffle_prepare(ctx: OpContext):
    _shuffle_params(ctx)
    return [ctx.inputs[0].dims]


def _shuffle_execute(ctx: OpContext):
    """Axis viewed as [G, S], transposed to [S, G]."""
    groups, axis = _shuffle_params(ctx)
    x = ctx.value(0)
    dims = x.shape
    outer, inner = math.prod(dims[:axis]), math.prod(dims[axis + 1:])
    y = x.reshape(outer, groups, dims[axis] // groups, inner).transpose(0, 2, 1, 3)
    return [np.ascontiguousarray(y).reshape(dims)]


def _generate_channel_shuffle(d) -> None:
    """An axis and num_groups dividing its size, neither 1 nor the size (which would leave
    the input unchanged): taken from input 0's dims when some axis allows it, else input 0
    redrawn with such an axis (NNAPI: num_groups divides dims[axis])."""
    dims = list(d.dims0)
    r = len(dims)
    fits = [(a, g) for a in range(r) for g in range(2, dims[a]) if dims[a] % g == 0]
    if fits and (d.primary is not None or d.coin(0.5)):
        axis, groups = d.choice(fits)
    else:
        axis, groups = d.integer(0, r - 1), d.choice((2, 2, 3, 4))
        dims = d.shape(r, budget=max(1, d.max_elements // 16))
        dims[axis] = groups * d.choice((2, 2, 3, 4))
        d.tensor(0, dims)
    d.param("num_groups", groups)
    d.param("axis", _draft_axis(d, axis, r))


_reg(OperationType.CHANNEL_SHUFFLE,
     _sigs([scalar("num_groups", T.INT32), scalar("axis", T.INT32)],
           types=(T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM), ranks=(1, 2, 3, 4)),
     _shuffle_prepare, _shuffle_execute, "interleave the groups of channels along an axis",
     aosp_source="ChannelShuffleExecution.cpp", generate=_generate_channel_shuffle)


# --- EXPAND_DIMS --------------------------------------------------------------------------

def _expand_prepare(ctx: OpContext):
    """Input dims with a 1 inserted at the axis (input 1, in [-(n+1), n+1))."""
    _same_quant(ctx)
    dims = list(ctx.inputs[0].dims)
    axis = read_axis(ctx, 1, _rank(ctx) + 1)
    dims.insert(axis, 1)
    return [tuple(dims)]


def _expand_execute(ctx: OpContext):
    return [ctx.value(0).reshape(_expand_prepare(ctx)[0])]


def _generate_expand_dims(d) -> None:
    """Axis in [-(n+1), n+1) (NNAPI EXPAND_DIMS: the new dimension may go last)."""
    d.param("axis", d.integer(-d.rank0 - 1, d.rank0))


_reg(OperationType.EXPAND_DIMS, _sigs([scalar("axis", T.INT32)]), _expand_prepare,
     _expand_execute, "insert a dimension of size 1", aosp_source="CpuExecutor.cpp",
     generate=_generate_expand_dims)


# --- GATHER -------------------------------------------------------------------------------

def _gather_params(ctx: OpContext) -> int:
    """The axis, after checking it and that every index lies in [0, dims[axis])."""
    _same_quant(ctx)
    axis = read_axis(ctx, 1, _rank(ctx))
    size = ctx.inputs[0].dims[axis]
    idx = ctx.value(2)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        check(lo >= 0 and hi < size,
              f"input 2 (indices) values must be in [0, {size}) (dimension {axis} of input 0), "
              f"got {lo if lo < 0 else hi}")
    return axis


def _gather_prepare(ctx: OpContext):
    """input.dims[:axis] + indices.dims + input.dims[axis+1:]."""
    axis = _gather_params(ctx)
    dims = ctx.inputs[0].dims
    return [(*dims[:axis], *ctx.inputs[2].dims, *dims[axis + 1:])]


def _gather_execute(ctx: OpContext):
    axis = _gather_params(ctx)
    return [np.take(ctx.value(0), ctx.value(2).astype(np.int64), axis=axis)]


def _generate_gather(d) -> None:
    """Axis in [-n, n); indices of rank k (output rank n - 1 + k kept <= 4) with values
    in [0, dims[axis]) (NNAPI GATHER), few enough to keep the output small."""
    dims, r = d.dims0, d.rank0
    axis = d.integer(0, r - 1)
    d.param("axis", _draft_axis(d, axis, r))
    rest = max(1, math.prod(dims) // dims[axis])
    k = d.integer(1, max(1, 5 - r))
    shape = d.shape(k, budget=max(1, min(256, 2 * d.max_elements // rest)))
    d.tensor("indices", shape, low=0, high=dims[axis] - 1)


_reg(OperationType.GATHER,
     _sigs([scalar("axis", T.INT32), tensor("indices", I32, None)]),
     _gather_prepare, _gather_execute, "gather slices along an axis at the given indices",
     aosp_source="GatherExecution.cpp", generate=_generate_gather,
     error_inputs=axis_out_of_range(1, at=PREPARE, source="AOSP gather::prepare"))


# --- SLICE --------------------------------------------------------------------------------

def _slice_bounds(ctx: OpContext) -> list[tuple[int, int]]:
    """(begin, size) per dimension, checked as AOSP ``slice::prepare`` does."""
    _same_quant(ctx)
    dims = ctx.inputs[0].dims
    rank = _rank(ctx)
    begin, size = int_vector(ctx, 1, "begin", rank), int_vector(ctx, 2, "size", rank)
    out = []
    for i, (d, b, s) in enumerate(zip(dims, begin, size)):
        check(0 <= b <= d, f"input 1 (begin) value {b} for dimension {i} is out of range [0, {d}]")
        if s == -1:
            s = d - b
        check(s >= 0, f"input 2 (size) value {s} for dimension {i} must be >= 0 or -1")
        check(b + s <= d, f"input 1 (begin) {b} + input 2 (size) {s} exceed dimension {i} ({d})")
        out.append((b, s))
    return out


def _slice_prepare(ctx: OpContext):
    return [tuple(s for _, s in _slice_bounds(ctx))]


def _slice_execute(ctx: OpContext):
    region = tuple(slice(b, b + s) for b, s in _slice_bounds(ctx))
    return [np.ascontiguousarray(ctx.value(0)[region])]


def _generate_slice(d) -> None:
    """begin in [0, dims[i]) and size in [1, dims[i] - begin] or -1 (to the end) per
    dimension (NNAPI SLICE), so the slice is never empty."""
    begin, size = [], []
    for n in d.dims0:
        b = 0 if d.coin(0.3) else d.integer(0, n - 1)
        begin.append(b)
        size.append(-1 if d.coin(0.25) else d.integer(1, n - b))
    d.param("begin", begin, [d.rank0])
    d.param("size", size, [d.rank0])


_reg(OperationType.SLICE,
     _sigs([tensor("begin", I32, (1,)), tensor("size", I32, (1,))]),
     _slice_prepare, _slice_execute, "slice of a given size from a given position",
     allows_zero_sized_input=True, aosp_source="SliceExecution.cpp", generate=_generate_slice)


# --- SPLIT --------------------------------------------------------------------------------

def _split_params(ctx: OpContext) -> tuple[int, int]:
    """(axis, num_splits): num_splits > 0, equal to the output count, dividing the axis."""
    _same_quant(ctx)
    axis = read_axis(ctx, 1, _rank(ctx))
    n, size = ctx.scalar(2), ctx.inputs[0].dims[axis]
    check(n > 0, f"input 2 (num_splits) value {n} must be > 0")
    check(n == len(ctx.outputs),
          f"input 2 (num_splits) value {n} must equal the number of outputs ({len(ctx.outputs)})")
    check(size % n == 0,
          f"input 2 (num_splits) value {n} must divide dimension {axis} of input 0 ({size})")
    return axis, n


def _split_prepare(ctx: OpContext):
    axis, n = _split_params(ctx)
    dims = list(ctx.inputs[0].dims)
    dims[axis] //= n
    return [tuple(dims)] * n


def _split_execute(ctx: OpContext):
    axis, n = _split_params(ctx)
    return [np.ascontiguousarray(p) for p in np.split(ctx.value(0), n, axis=axis)]


def _generate_split(d) -> None:
    """Axis in [-n, n); num_splits a divisor of dims[axis] (1..4, NNAPI requires it to
    divide the axis and to equal the output count, ``d.n_outputs``)."""
    axis = d.integer(0, d.rank0 - 1)
    d.param("axis", _draft_axis(d, axis, d.rank0))
    size = d.dims0[axis]
    n = d.choice([k for k in range(1, 5) if size % k == 0])
    d.param("num_splits", n)
    d.n_outputs = n


def _split_error_inputs(inputs, outputs):
    """Input 0 one longer on the split axis (num_splits > 1 no longer divides it; AOSP
    ``splitPrepare``)."""
    axis, n, rank = inputs[1].value, inputs[2].value, inputs[0].rank
    if axis is not None and n is not None and int(n) > 1 and rank and -rank <= int(axis) < rank:
        yield from grown(0, int(axis) % rank, "must divide dimension",
                         f"SPLIT num_splits {int(n)} divides the axis dimension (NNAPI types.spec)")(
                             inputs, outputs)


_reg(OperationType.SPLIT, _sigs([scalar("axis", T.INT32), scalar("num_splits", T.INT32)]),
     _split_prepare, _split_execute, "split into equal parts along an axis",
     variadic_outputs=True, aosp_source="CpuExecutor.cpp", generate=_generate_split,
     error_inputs=_split_error_inputs)


# --- TILE ---------------------------------------------------------------------------------

def _multiples(ctx: OpContext) -> list[int]:
    """Input 1: one value >= 0 per input dimension."""
    _same_quant(ctx)
    m = int_vector(ctx, 1, "multiples", _rank(ctx))
    check(min(m) >= 0, f"input 1 (multiples) values must be >= 0, got {m}")
    return m


def _tile_prepare(ctx: OpContext):
    """output.dims[i] = input.dims[i] * multiples[i]."""
    return [tuple(d * m for d, m in zip(ctx.inputs[0].dims, _multiples(ctx)))]


def _tile_execute(ctx: OpContext):
    return [np.tile(ctx.value(0), _multiples(ctx))]


def _generate_tile(d) -> None:
    """multiples in [1, 3] per dimension (0 would give an empty output), lowered until the
    output holds at most 2 * max_elements elements."""
    dims = d.dims0
    m = [d.integer(1, 3) for _ in dims]
    while math.prod(x * k for x, k in zip(dims, m)) > 2 * d.max_elements and max(m) > 1:
        m[m.index(max(m))] -= 1
    d.param("multiples", m, [d.rank0])


_reg(OperationType.TILE, _sigs([tensor("multiples", I32, (1,))]), _tile_prepare, _tile_execute,
     "repeat the input along every dimension", aosp_source="CpuExecutor.cpp", generate=_generate_tile)
