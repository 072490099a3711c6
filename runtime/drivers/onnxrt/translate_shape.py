"""NNAPI -> ONNX for the shape and data-movement family (RESHAPE, SQUEEZE, EXPAND_DIMS,
TRANSPOSE, CONCATENATION, PACK, SPLIT, GATHER, EMBEDDING_LOOKUP, SLICE, STRIDED_SLICE, PAD,
PAD_V2, MIRROR_PAD, REVERSE, TILE, FILL, RANK, DEPTH_TO_SPACE, SPACE_TO_DEPTH), reductions
(MEAN, REDUCE_*), ARGMAX/ARGMIN, TOPK_V2 and BATCH_MATMUL (registered into
:data:`.builder.TABLE`).

8-bit quantized tensors are only moved here, never computed on: a use whose outputs do not
keep input 0's scale and zero point is not mapped (``Builder.same_quant``).
"""
from __future__ import annotations

import numpy as np

from ...types import OperationType as O
from .builder import (BOOL8, DATA, FLOATS, I32, INT64_MAX, INT64_MIN, NUMERIC, QUANT8,
                      Unsupported, op)

@op(O.RESHAPE, DATA, QUANT8)
def _reshape(b, op):
    b.same_quant(op)
    shape = b.node("Cast", [b.input(op, 1)], to=7)  # int64, as ONNX Reshape takes it
    b.result(op, 0, b.node("Reshape", [b.input(op, 0), shape], allowzero=1))


@op(O.SQUEEZE, DATA, QUANT8)
def _squeeze(b, op):
    b.same_quant(op)
    x = b.input(op, 0)
    if not b.omitted(op, 1) and not b.is_constant(op, 1):
        b.result(op, 0, b.node("Squeeze", [x, b.node("Cast", [b.input(op, 1)], to=7)]))
    elif b.omitted(op, 1) or b.constant(op, 1).size == 0:
        b.result(op, 0, b.node("Squeeze", [x]))
    else:
        b.result(op, 0, b.node("Squeeze", [x, b.i64(b.constant(op, 1))]))


@op(O.EXPAND_DIMS, DATA, QUANT8)
def _expand_dims(b, op):
    b.same_quant(op)
    b.result(op, 0, b.node("Unsqueeze", [b.input(op, 0), b.i64([b.scalar(op, 1)])]))


@op(O.TRANSPOSE, DATA, QUANT8)
def _transpose(b, op):
    b.same_quant(op)
    x = b.input(op, 0)
    perm = None if b.omitted(op, 1) else [int(p) for p in b.constant(op, 1).reshape(-1)]
    if not perm:
        b.result(op, 0, b.node("Transpose", [x]))  # reversed dimensions, as NNAPI's default
    else:
        b.result(op, 0, b.node("Transpose", [x], perm=perm))


@op(O.CONCATENATION, DATA, QUANT8)
def _concat(b, op):
    n = len(op.inputs) - 1
    b.same_quant(op, ins=tuple(range(n)))
    axis = int(b.scalar(op, n))
    b.result(op, 0, b.node("Concat", [b.input(op, k) for k in range(n)], axis=axis))


@op(O.PACK, DATA, QUANT8)
def _pack(b, op):
    n = len(op.inputs) - 1
    b.same_quant(op, ins=tuple(range(1, n + 1)))
    axis = int(b.scalar(op, 0))
    parts = [b.node("Unsqueeze", [b.input(op, k), b.i64([axis])]) for k in range(1, n + 1)]
    b.result(op, 0, b.node("Concat", parts, axis=axis))


@op(O.SPLIT, DATA, QUANT8)
def _split(b, op):
    b.same_quant(op, outs=tuple(range(len(op.outputs))))
    axis, n = int(b.scalar(op, 1)), int(b.scalar(op, 2))
    if n != len(op.outputs):
        raise Unsupported("num_splits differs from the number of outputs")
    outs = b.node("Split", [b.input(op, 0)], n_out=n, axis=axis, num_outputs=n)
    for j, name in enumerate([outs] if n == 1 else outs):
        b.result(op, j, name)


@op(O.GATHER, DATA, QUANT8)
def _gather(b, op):
    b.same_quant(op)
    b.result(op, 0, b.node("Gather", [b.input(op, 0), b.input(op, 2)], axis=int(b.scalar(op, 1))))


@op(O.EMBEDDING_LOOKUP, DATA - {BOOL8}, QUANT8)
def _embedding_lookup(b, op):
    # inputs: lookups (TENSOR_INT32), values; input 0 is the index tensor
    if b.type_of(op, 1) not in DATA - {BOOL8}:
        raise Unsupported(f"EMBEDDING_LOOKUP of {b.type_of(op, 1).name}")
    b.same_quant(op, ins=(1,))
    b.result(op, 0, b.node("Gather", [b.input(op, 1), b.input(op, 0)], axis=0))


@op(O.SLICE, DATA, QUANT8)
def _slice(b, op):
    b.same_quant(op)
    begin = b.constant(op, 1).astype(np.int64).reshape(-1)
    size = b.constant(op, 2).astype(np.int64).reshape(-1)
    end = np.where(size < 0, INT64_MAX, begin + size)
    b.result(op, 0, b.node("Slice", [b.input(op, 0), b.i64(begin), b.i64(end)]))


@op(O.STRIDED_SLICE, DATA, QUANT8)
def _strided_slice(b, op):
    b.same_quant(op)
    begin, end, strides = (b.constant(op, k).astype(np.int64).reshape(-1) for k in (1, 2, 3))
    begin_mask, end_mask, shrink = (int(b.scalar(op, k)) for k in (4, 5, 6))
    starts, ends = [], []
    for i, s in enumerate(strides):
        if s == 0:
            raise Unsupported("stride 0")
        starts.append((0 if s > 0 else INT64_MAX) if begin_mask >> i & 1 else begin[i])
        ends.append((INT64_MAX if s > 0 else INT64_MIN) if end_mask >> i & 1 else end[i])
    y = b.node("Slice", [b.input(op, 0), b.i64(starts), b.i64(ends),
                         b.i64(list(range(len(strides)))), b.i64(strides)])
    axes = [i for i in range(len(strides)) if shrink >> i & 1]
    if any(strides[i] < 0 for i in axes):  # NNAPI: an error at execution; ONNX would slice
        raise Unsupported("shrink_axis_mask on a dimension with a negative stride")
    if axes:
        if len(axes) == len(strides):  # NNAPI: every dimension shrunk gives shape [1]
            y = b.node("Reshape", [y, b.i64([1])])
        else:
            y = b.node("Squeeze", [y, b.i64(axes)])
    b.result(op, 0, y)


def _pads(b, op, k: int) -> str:
    """NNAPI paddings [rank, 2] (before, after) -> ONNX pads [befores..., afters...]."""
    try:
        p = b.constant(op, k).astype(np.int64).reshape(-1, 2)
    except Unsupported:  # a model input: reordered in the graph
        p64 = b.node("Cast", [b.input(op, k)], to=7)
        return b.node("Reshape", [b.node("Transpose", [p64], perm=[1, 0]), b.i64([-1])])
    return b.i64(np.concatenate([p[:, 0], p[:, 1]]))


@op(O.PAD, DATA - {BOOL8}, QUANT8)
def _pad(b, op):
    b.same_quant(op)
    t = b.type_of(op, 0)
    value = b.operand(op.inputs[0]).zero_point if t in QUANT8 else 0
    b.result(op, 0, b.node("Pad", [b.input(op, 0), _pads(b, op, 1), b.scalar_like(value, t)]))


@op(O.PAD_V2, DATA - {BOOL8}, QUANT8)
def _pad_v2(b, op):
    b.same_quant(op)
    t = b.type_of(op, 0)
    b.result(op, 0, b.node("Pad", [b.input(op, 0), _pads(b, op, 1), b.scalar_like(b.scalar(op, 2), t)]))


@op(O.MIRROR_PAD, DATA - {BOOL8}, QUANT8)
def _mirror_pad(b, op):
    b.same_quant(op)
    if int(b.scalar(op, 2)) != 0:  # SYMMETRIC (edge repeated) has no ONNX Pad mode
        raise Unsupported("MIRROR_PAD mode SYMMETRIC")
    b.result(op, 0, b.node("Pad", [b.input(op, 0), _pads(b, op, 1)], mode="reflect"))


@op(O.REVERSE, DATA, QUANT8)
def _reverse(b, op):
    b.same_quant(op)
    axes = [int(a) for a in b.constant(op, 1).reshape(-1)]
    n = len(axes)
    b.result(op, 0, b.node("Slice", [b.input(op, 0), b.i64([-1] * n), b.i64([INT64_MIN] * n),
                                     b.i64(axes), b.i64([-1] * n)]))


@op(O.TILE, DATA, QUANT8)
def _tile(b, op):
    b.same_quant(op)
    b.result(op, 0, b.node("Tile", [b.input(op, 0), b.node("Cast", [b.input(op, 1)], to=7)]))


@op(O.FILL, {I32})
def _fill(b, op):
    t = b.operand(op.outputs[0]).type
    if t not in NUMERIC:
        raise Unsupported(f"FILL of {t.name}")
    value = b.scalar_like(b.scalar(op, 1), t)
    b.result(op, 0, b.node("Expand", [value, b.node("Cast", [b.input(op, 0)], to=7)]))


@op(O.RANK, DATA, QUANT8)
def _rank(b, op):
    r = b.node("Size", [b.node("Shape", [b.input(op, 0)])])
    b.result(op, 0, b.node("Cast", [r], to=6))


def _axes(b, op, k: int, rank: int) -> list[int]:
    axes = sorted({int(a) % rank for a in b.constant(op, k).reshape(-1)})
    return axes


def _reduce(onnx_op: str, keep_k: int = 2, bool_via=None):
    def emit(b, op):
        rank = b.rank(op)
        axes = _axes(b, op, 1, rank)
        keep = int(bool(b.scalar(op, keep_k)))
        x = b.input(op, 0)
        if bool_via:  # REDUCE_ALL / ANY: min / max over 0/1 integers
            x = b.node("Cast", [x], to=6)
        y = b.node(onnx_op, [x, b.i64(axes)], keepdims=keep)
        if bool_via:
            y = b.node("Cast", [y], to=9)
        if not keep and len(axes) == rank:  # NNAPI: all dimensions reduced gives shape [1]
            y = b.node("Reshape", [y, b.i64([1])])
        b.result(op, 0, y)
    return emit


op(O.MEAN, FLOATS, QUANT8)(_reduce("ReduceMean"))
for _t, _onnx in [(O.REDUCE_SUM, "ReduceSum"), (O.REDUCE_PROD, "ReduceProd"),
                  (O.REDUCE_MAX, "ReduceMax"), (O.REDUCE_MIN, "ReduceMin")]:
    op(_t, FLOATS, QUANT8)(_reduce(_onnx))
op(O.REDUCE_ALL, {BOOL8})(_reduce("ReduceMin", bool_via=True))
op(O.REDUCE_ANY, {BOOL8})(_reduce("ReduceMax", bool_via=True))


def _arg(onnx_op):
    def emit(b, op):
        y = b.node(onnx_op, [b.input(op, 0)], axis=int(b.scalar(op, 1)), keepdims=0)
        if b.rank(op) == 1:  # NNAPI: a rank-1 input gives shape [1]
            y = b.node("Reshape", [y, b.i64([1])])
        b.result(op, 0, b.node("Cast", [y], to=6))
    return emit


op(O.ARGMAX, NUMERIC, QUANT8)(_arg("ArgMax"))
op(O.ARGMIN, NUMERIC, QUANT8)(_arg("ArgMin"))


@op(O.TOPK_V2, NUMERIC, QUANT8)
def _topk(b, op):
    values, indices = b.node("TopK", [b.input(op, 0), b.i64([b.scalar(op, 1)])], n_out=2,
                             axis=-1, largest=1, sorted=1)
    b.result(op, 0, values)
    b.result(op, 1, b.node("Cast", [indices], to=6))


@op(O.BATCH_MATMUL, NUMERIC, QUANT8)
def _batch_matmul(b, op):
    rank = b.rank(op)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    x, y = b.input(op, 0), b.input(op, 1)
    if b.scalar(op, 2, False):
        x = b.node("Transpose", [x], perm=perm)
    if b.scalar(op, 3, False):
        y = b.node("Transpose", [y], perm=perm)
    b.result(op, 0, b.node("MatMul", [x, y]))


def _space_depth(onnx_op):
    def emit(b, op):
        b.same_quant(op)
        block = int(b.scalar(op, 1))
        nchw = bool(b.scalar(op, 2, False))
        x = b.input(op, 0)
        if nchw:
            b.result(op, 0, b.node(onnx_op, [x], blocksize=block, **({"mode": "DCR"} if onnx_op == "DepthToSpace" else {})))
            return
        y = b.node(onnx_op, [b.to_nchw(x)], blocksize=block, **({"mode": "DCR"} if onnx_op == "DepthToSpace" else {}))
        b.result(op, 0, b.to_nhwc(y))
    return emit


op(O.DEPTH_TO_SPACE, DATA - {BOOL8, I32}, QUANT8)(_space_depth("DepthToSpace"))
op(O.SPACE_TO_DEPTH, DATA - {BOOL8, I32}, QUANT8)(_space_depth("SpaceToDepth"))


