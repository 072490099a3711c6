"""NNAPI -> TFLite for the shape and data-movement family of the ``litert`` drivers
(TRANSPOSE, SQUEEZE, EXPAND_DIMS, SLICE, STRIDED_SLICE, GATHER, PAD, PAD_V2, MIRROR_PAD,
REVERSE, TILE, SPLIT, PACK, SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND), the reductions (MEAN, REDUCE_*), ARGMAX/ARGMIN and BATCH_MATMUL
(registered into :data:`.builder.TABLE`).

Each is the TFLite builtin of the same name and meaning (NNAPI took these operations from
TFLite); the parameters NNAPI passes as scalars become TFLite's constant tensors or
options. 8-bit quantized tensors are only moved by the data-movement operations here, so a
use whose quantized operands do not all share input 0's scale and zero point is declined
(``Builder.same_quant``). Where NNAPI's output shape is ``[1]`` and TFLite's a scalar (every
dimension reduced or shrunk, ARGMAX of a rank-1 input) a RESHAPE to ``[1]`` follows.
"""
from __future__ import annotations

import numpy as np

from ...types import OperationType as O
from ..translated import Unsupported
from .builder import BOOL8, F32, I32, QA8, QUANT8, Builder, rule
from .translate_nn import NHWC

FLOAT = frozenset({F32})
DATA = FLOAT | {I32} | QUANT8


def _to_shape1(b: Builder, op, emit_into) -> None:
    """``emit_into(tensor)`` writes a scalar-shaped result into a temporary, RESHAPEd to
    output 0's ``[1]``."""
    t = b.temporary(op.outputs[0], [], "scalar")
    emit_into(t)
    b.emit("RESHAPE", [t, b.const([1], np.int32, "shape")], [b.output(op)])


def _i32(b: Builder, op, k: int, hint: str) -> int:
    """Input ``k`` (TENSOR_INT32) as a TFLite tensor: the constant, or a model input."""
    return b.input(op, k) if not b.is_constant(op, k) else b.const(b.constant(op, k), np.int32, hint)


@rule(O.TRANSPOSE, DATA)
def _transpose(b: Builder, op):
    b.same_quant(op)
    rank = b.rank(op, 0)
    # an optional input given as a model input may be omitted at execution: constants only
    perm = [] if b.omitted(op, 1) else [int(p) for p in b.constant(op, 1).reshape(-1)]
    perm = perm or list(range(rank))[::-1]  # NNAPI: omitted or empty is reversed dimensions
    b.emit("TRANSPOSE", [b.input(op, 0), b.const(perm, np.int32, "perm")], [b.output(op)])


@rule(O.SQUEEZE, DATA)
def _squeeze(b: Builder, op):
    b.same_quant(op)
    dims = [] if b.omitted(op, 1) else [int(d) for d in b.constant(op, 1).reshape(-1)]
    b.emit("SQUEEZE", [b.input(op, 0)], [b.output(op)], "Squeeze", SqueezeDims=_vector(dims))


def _vector(values):
    """A list field for :func:`.flatbuffer.options` (an int vector)."""
    return ("vector", [int(v) for v in values])


@rule(O.EXPAND_DIMS, DATA)
def _expand_dims(b: Builder, op):
    b.same_quant(op)
    axis = b.const([int(b.scalar(op, 1))], np.int32, "axis")
    b.emit("EXPAND_DIMS", [b.input(op, 0), axis], [b.output(op)])


@rule(O.SLICE, DATA)
def _slice(b: Builder, op):
    b.same_quant(op)
    out = b.dims(op.outputs[0])
    if not out or 0 in out:
        raise Unsupported("output of unknown shape (TFLite's SLICE checks the output shape "
                          "instead of setting it)")
    b.emit("SLICE", [b.input(op, 0), _i32(b, op, 1, "begin"), _i32(b, op, 2, "size")], [b.output(op)])


@rule(O.STRIDED_SLICE, DATA)
def _strided_slice(b: Builder, op):
    b.same_quant(op)
    strides = b.constant(op, 3).reshape(-1)
    shrink = int(b.scalar(op, 6))
    if any(s == 0 for s in strides):
        raise Unsupported("stride 0")
    if any(strides[i] < 0 for i in range(len(strides)) if shrink >> i & 1):
        raise Unsupported("shrink_axis_mask on a dimension with a negative stride (NNAPI: an error)")
    ins = [b.input(op, 0), _i32(b, op, 1, "begin"), _i32(b, op, 2, "end"), b.const(strides, np.int32, "strides")]
    fields = dict(BeginMask=int(b.scalar(op, 4)), EndMask=int(b.scalar(op, 5)), ShrinkAxisMask=shrink)
    if shrink == (1 << len(strides)) - 1:  # NNAPI: every dimension shrunk gives shape [1]
        _to_shape1(b, op, lambda t: b.emit("STRIDED_SLICE", ins, [t], "StridedSlice", **fields))
    else:
        b.emit("STRIDED_SLICE", ins, [b.output(op)], "StridedSlice", **fields)


@rule(O.GATHER, DATA)
def _gather(b: Builder, op):
    b.same_quant(op)
    b.emit("GATHER", [b.input(op, 0), b.input(op, 2)], [b.output(op)], "Gather", Axis=int(b.scalar(op, 1)))


@rule(O.PAD, DATA)
def _pad(b: Builder, op):
    b.same_quant(op)  # TFLite pads a quantized tensor with its zero point: real 0, as NNAPI
    b.emit("PAD", [b.input(op, 0), _i32(b, op, 1, "paddings")], [b.output(op)])


@rule(O.PAD_V2, DATA)
def _pad_v2(b: Builder, op):
    b.same_quant(op)
    o = b.operand(op.inputs[0])
    value = b.scalar(op, 2)
    if o.type in QUANT8:  # the pad value is in the quantized domain; TFLite needs it with
        lo, hi = (0, 255) if o.type == QA8 else (-128, 127)  # the input's scale and zero point
        if not lo <= int(value) <= hi:
            raise Unsupported(f"pad value {value} out of the 8-bit range")
        t = b.graph.tensors[b.input(op, 0)]
        pad = b.graph.add_tensor(t.dtype, [], f"padv{len(b.graph.tensors)}", np.array(int(value)),
                                 (o.scale,), (o.zero_point,))
    else:
        pad = b.const(value, np.float32 if o.type == F32 else np.int32, "padv")
    b.emit("PADV2", [b.input(op, 0), _i32(b, op, 1, "paddings"), pad], [b.output(op)])


@rule(O.MIRROR_PAD, DATA)
def _mirror_pad(b: Builder, op):
    b.same_quant(op)
    mode = int(b.scalar(op, 2))  # NNAPI 0 REFLECT, 1 SYMMETRIC: TFLite's MirrorPadMode
    if mode not in (0, 1):
        raise Unsupported(f"mode {mode}")
    b.emit("MIRROR_PAD", [b.input(op, 0), _i32(b, op, 1, "paddings")], [b.output(op)], "MirrorPad", Mode=mode)


@rule(O.REVERSE, DATA)
def _reverse(b: Builder, op):
    b.same_quant(op)
    b.emit("REVERSE_V2", [b.input(op, 0), _i32(b, op, 1, "axis")], [b.output(op)])


@rule(O.TILE, DATA)
def _tile(b: Builder, op):
    b.same_quant(op)
    b.emit("TILE", [b.input(op, 0), _i32(b, op, 1, "multiples")], [b.output(op)])


@rule(O.SPLIT, DATA)
def _split(b: Builder, op):
    n = len(op.outputs)
    b.same_quant(op, outs=tuple(range(n)))
    if int(b.scalar(op, 2)) != n:
        raise Unsupported("num_splits differs from the number of outputs")
    axis = b.const(int(b.scalar(op, 1)), np.int32, "axis")
    b.emit("SPLIT", [axis, b.input(op, 0)], [b.output(op, j) for j in range(n)], "Split", NumSplits=n)


@rule(O.PACK, DATA, deciding=1)
def _pack(b: Builder, op):
    n = len(op.inputs) - 1
    b.same_quant(op, ins=tuple(range(1, n + 1)))
    b.emit("PACK", [b.input(op, k) for k in range(1, n + 1)], [b.output(op)], "Pack", ValuesCount=n,
           Axis=int(b.scalar(op, 0)))


def _space_depth(name: str, kind: str):
    def emit(b: Builder, op):
        b.same_quant(op)
        block = int(b.scalar(op, 1))
        io = NHWC(b, op, 2)
        b.emit(name, [io.x], [io.y], kind, BlockSize=block)
        io.finish()
    return emit


rule(O.SPACE_TO_DEPTH, FLOAT | QUANT8)(_space_depth("SPACE_TO_DEPTH", "SpaceToDepth"))
rule(O.DEPTH_TO_SPACE, FLOAT | QUANT8)(_space_depth("DEPTH_TO_SPACE", "DepthToSpace"))


@rule(O.SPACE_TO_BATCH_ND, FLOAT | QUANT8)
def _space_to_batch(b: Builder, op):
    b.same_quant(op)  # TFLite pads a quantized tensor with its zero point: real 0, as NNAPI
    block, pads = _i32(b, op, 1, "block"), _i32(b, op, 2, "paddings")
    io = NHWC(b, op, 3)
    b.emit("SPACE_TO_BATCH_ND", [io.x, block, pads], [io.y])
    io.finish()


@rule(O.BATCH_TO_SPACE_ND, FLOAT | QUANT8)
def _batch_to_space(b: Builder, op):
    b.same_quant(op)
    block = _i32(b, op, 1, "block")
    io = NHWC(b, op, 2)
    b.emit("BATCH_TO_SPACE_ND", [io.x, block, b.const(np.zeros((2, 2)), np.int32, "crops")], [io.y])
    io.finish()


def _reduce(name: str):
    def emit(b: Builder, op):
        rank = b.rank(op, 0)
        axes = sorted({int(a) % rank for a in b.constant(op, 1).reshape(-1)})
        keep = bool(b.scalar(op, 2))
        if b.type_of(op, 0) in QUANT8 and name != "MEAN":
            b.same_quant(op)
        ins = [b.input(op, 0), b.const(axes, np.int32, "axes")]
        if not keep and len(axes) == rank:  # NNAPI: all dimensions reduced gives shape [1]
            _to_shape1(b, op, lambda t: b.emit(name, ins, [t], "Reducer", KeepDims=False))
        else:
            b.emit(name, ins, [b.output(op)], "Reducer", KeepDims=keep)
    return emit


rule(O.MEAN, FLOAT | QUANT8)(_reduce("MEAN"))
for _t, _name in [(O.REDUCE_SUM, "SUM"), (O.REDUCE_PROD, "REDUCE_PROD"), (O.REDUCE_MAX, "REDUCE_MAX"),
                  (O.REDUCE_MIN, "REDUCE_MIN")]:
    rule(_t, FLOAT | QUANT8)(_reduce(_name))
rule(O.REDUCE_ALL, {BOOL8})(_reduce("REDUCE_ALL"))
rule(O.REDUCE_ANY, {BOOL8})(_reduce("REDUCE_ANY"))


def _arg(name: str, kind: str):
    def emit(b: Builder, op):
        if b.operand(op.outputs[0]).type != I32:
            raise Unsupported("output is not TENSOR_INT32")
        ins = [b.input(op, 0), b.const([int(b.scalar(op, 1))], np.int32, "axis")]
        if b.rank(op, 0) == 1:  # NNAPI: a rank-1 input gives shape [1]
            _to_shape1(b, op, lambda t: b.emit(name, ins, [t], kind, OutputType=2))
        else:
            b.emit(name, ins, [b.output(op)], kind, OutputType=2)  # TensorType INT32
    return emit


rule(O.ARGMAX, DATA, same_type=False)(_arg("ARG_MAX", "ArgMax"))
rule(O.ARGMIN, DATA, same_type=False)(_arg("ARG_MIN", "ArgMin"))


@rule(O.BATCH_MATMUL, FLOAT)
def _batch_matmul(b: Builder, op):
    # TFLite's BATCH_MATMUL has no int32 kernel; its 8-bit kernels are int8 with zero point 0
    adj_x, adj_y = bool(b.scalar(op, 2, False)), bool(b.scalar(op, 3, False))
    b.emit("BATCH_MATMUL", [b.input(op, 0), b.input(op, 1)], [b.output(op)], "BatchMatMul", AdjX=adj_x,
           AdjY=adj_y)
