"""NNAPI HAL model -> ONNX graph, for the ``onnxruntime`` driver.

One entry per NNAPI operation in :data:`TABLE` (``OperationType -> Entry``): the operand
types it accepts for input 0 (the tensor that fixes the signature's type) and a function
that emits the ONNX nodes of one use of the operation into a :class:`Builder`. A function
raises :class:`Unsupported` (the reason) when this use needs something ONNX or the adapter
does not map faithfully (a parameter given as a model input, a padding scheme, mixed
quantization, ...); ``get_supported_operations`` answers False for exactly those uses, by
translating each operation alone.

This module: the builder, element-wise, activation, comparison/logical and shape
operations. :mod:`.translate_nn` adds convolution, pooling, resizing, normalization and
quantization (it registers into the same table).

Semantics follow the NNAPI documentation as the reference modules under ``runtime/ops``
state them (parameter order, rounding, broadcast); nothing here computes with them. ONNX
opset 18. onnx is imported by the caller (:mod:`.device`) before anything here runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...hal.validate import constant_value
from ...types import OperandLifeTime as L
from ...types import OperandType as T
from ...types import OperationType as O

OPSET = 18
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

F32, F16, I32, BOOL8 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8
QA8, QA8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
FLOATS = frozenset({F32, F16})
NUMERIC = frozenset({F32, F16, I32})
QUANT8 = frozenset({QA8, QA8S})
#: Types moved without arithmetic (shape operations): floats, int32, bool and 8-bit quantized
#: (the latter only when every output keeps input 0's scale and zero point).
DATA = frozenset({F32, F16, I32, BOOL8, QA8, QA8S})


class Unsupported(Exception):
    """This use of an operation is not mapped (the message says why)."""


def onnx_elem_type(t) -> int:
    """The ONNX TensorProto element type of an NNAPI operand type."""
    from onnx import TensorProto as P
    table = {T.TENSOR_FLOAT32: P.FLOAT, T.FLOAT32: P.FLOAT, T.TENSOR_FLOAT16: P.FLOAT16,
             T.FLOAT16: P.FLOAT16, T.TENSOR_INT32: P.INT32, T.INT32: P.INT32, T.UINT32: P.UINT32,
             T.TENSOR_BOOL8: P.BOOL, T.BOOL: P.BOOL, T.TENSOR_QUANT8_ASYMM: P.UINT8,
             T.TENSOR_QUANT8_ASYMM_SIGNED: P.INT8, T.TENSOR_QUANT8_SYMM: P.INT8,
             T.TENSOR_QUANT8_SYMM_PER_CHANNEL: P.INT8, T.TENSOR_QUANT16_SYMM: P.INT16,
             T.TENSOR_QUANT16_ASYMM: P.UINT16}
    if t not in table:
        raise Unsupported(f"operand type {getattr(t, 'name', t)} has no ONNX element type")
    return table[t]


@dataclass
class Entry:
    """How one NNAPI operation maps: ``types`` accepted for input 0, ``emit(b, op)``."""

    types: frozenset
    emit: Callable


TABLE: dict[O, Entry] = {}


def op(op_type: O, types):
    def register(fn):
        TABLE[op_type] = Entry(frozenset(types), fn)
        return fn
    return register


class Builder:
    """Collects the ONNX nodes and initializers of (part of) a subgraph; operand ``i`` of
    the subgraph is the ONNX value ``v{i}``."""

    def __init__(self, model, sg):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.model, self.sg = model, sg
        self.nodes, self.initializers = [], []
        self._constants: dict[int, str] = {}
        self._n = 0
        self.where = ""  # "operation k (TYPE)", for node names and messages

    # --- operands --------------------------------------------------------------------
    def operand(self, idx: int):
        return self.sg.operands[idx]

    def type_of(self, op, k: int):
        return self.operand(op.inputs[k]).type

    def dims(self, idx: int) -> list[int]:
        return list(self.operand(idx).dimensions)

    def rank(self, op, k: int = 0) -> int:
        """Rank of input ``k`` (Unsupported when unknown)."""
        d = self.operand(op.inputs[k]).dimensions
        if not d:
            raise Unsupported(f"input {k} has unknown rank")
        return len(d)

    def static_dims(self, op, k: int) -> list[int]:
        d = self.dims(op.inputs[k])
        if not d or 0 in d:
            raise Unsupported(f"input {k} needs known dimensions, has {d}")
        return d

    def omitted(self, op, k: int) -> bool:
        return k >= len(op.inputs) or self.operand(op.inputs[k]).lifetime == L.NO_VALUE

    def constant(self, op, k: int) -> np.ndarray:
        """The value of constant input ``k`` (Unsupported when it is not a constant)."""
        o = self.operand(op.inputs[k])
        if o.lifetime not in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
            raise Unsupported(f"input {k} must be a constant for this mapping")
        return np.array(constant_value(self.model, o))

    def scalar(self, op, k: int, default=None):
        """Python value of scalar parameter ``k``; ``default`` when omitted."""
        if self.omitted(op, k):
            if default is None:
                raise Unsupported(f"input {k} is omitted")
            return default
        v = self.constant(op, k).reshape(-1)
        if v.size != 1:
            raise Unsupported(f"input {k} is not a scalar")
        return v[0].item()

    def input(self, op, k: int) -> str:
        """ONNX name of tensor input ``k`` (a constant becomes an initializer, once)."""
        idx = op.inputs[k]
        o = self.operand(idx)
        if o.lifetime == L.NO_VALUE:
            raise Unsupported(f"input {k} has no value")
        if o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
            if idx not in self._constants:
                self._constants[idx] = self.const(np.array(constant_value(self.model, o)), f"c{idx}")
            return self._constants[idx]
        if o.lifetime == L.SUBGRAPH:
            raise Unsupported(f"input {k} is a subgraph reference")
        return f"v{idx}"

    def same_quant(self, op, ins=(0,), outs=(0,)):
        """Quantized operands must share input 0's scale and zero point (data moves only)."""
        first = self.operand(op.inputs[ins[0]])
        if first.type not in QUANT8:
            return
        for idx in [op.inputs[k] for k in ins] + [op.outputs[j] for j in outs]:
            o = self.operand(idx)
            if (o.scale, o.zero_point) != (first.scale, first.zero_point):
                raise Unsupported("quantized operands with different scale/zero point "
                                  "(the adapter maps data moves only)")

    # --- emitting --------------------------------------------------------------------
    def fresh(self, hint: str = "t") -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def const(self, value, hint: str = "k", dtype=None) -> str:
        name = self.fresh(hint)
        arr = np.asarray(value, dtype=dtype)
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def i64(self, values) -> str:
        return self.const(np.asarray(values, np.int64).reshape(-1), "i64")

    def scalar_like(self, value, t) -> str:
        """A 0-d constant of the numpy dtype of NNAPI tensor type ``t``."""
        from ...types import operand_dtype
        return self.const(np.asarray(value, operand_dtype(t)), "s")

    def node(self, op_type: str, inputs, n_out: int = 1, domain: str = "", **attrs):
        """Emit one node; returns its output name (or list of names for n_out > 1)."""
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs,
                                                name=f"{self.where} {op_type} {self._n}".strip(),
                                                domain=domain or None, **attrs))
        return outs[0] if n_out == 1 else outs

    def result(self, op, j: int, name: str) -> None:
        """Bind ``name`` to output ``j`` of ``op``."""
        self.nodes.append(self.helper.make_node("Identity", [name], [f"v{op.outputs[j]}"],
                                                name=f"{self.where} output {j}"))

    def cast(self, name: str, t) -> str:
        return self.node("Cast", [name], to=onnx_elem_type(t))

    def fuse(self, name: str, code: int, out_operand=None) -> str:
        """Apply NNAPI FuseCode ``code`` (NONE/RELU/RELU1/RELU6) to ``name``; for a
        quantized output the clamp is in its integer domain."""
        if code == 0:
            return name
        if code not in (1, 2, 3):
            raise Unsupported(f"fuse code {code}")
        lo, hi = {1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}[code]
        t = out_operand.type if out_operand is not None else F32
        if t in QUANT8:
            qmin, qmax = (0, 255) if t == QA8 else (-128, 127)
            s, z = out_operand.scale, out_operand.zero_point
            qlo = max(qmin, z + int(np.round(lo / s)))
            qhi = qmax if hi is None else min(qmax, z + int(np.round(hi / s)))
            return self.node("Clip", [name, self.scalar_like(qlo, t), self.scalar_like(qhi, t)])
        if code == 1:
            return self.node("Relu", [name])
        return self.node("Clip", [name, self.scalar_like(lo, t), self.scalar_like(hi, t)])

    def to_nchw(self, name: str) -> str:
        return self.node("Transpose", [name], perm=[0, 3, 1, 2])

    def to_nhwc(self, name: str) -> str:
        return self.node("Transpose", [name], perm=[0, 2, 3, 1])


def unary(onnx_op: str, types=FLOATS, **attrs):
    def emit(b: Builder, op):
        b.result(op, 0, b.node(onnx_op, [b.input(op, 0)], **attrs))
    return types, emit


for _t, _onnx, _types in [
        (O.ABS, "Abs", NUMERIC), (O.EXP, "Exp", FLOATS), (O.LOG, "Log", FLOATS),
        (O.SQRT, "Sqrt", FLOATS), (O.NEG, "Neg", NUMERIC), (O.SIN, "Sin", FLOATS),
        (O.FLOOR, "Floor", FLOATS), (O.LOGISTIC, "Sigmoid", FLOATS), (O.TANH, "Tanh", FLOATS),
        (O.RELU, "Relu", FLOATS), (O.HARD_SWISH, "HardSwish", FLOATS),
        (O.LOGICAL_NOT, "Not", {BOOL8})]:
    op(_t, _types)(unary(_onnx, _types)[1])


@op(O.RSQRT, FLOATS)
def _rsqrt(b, op):
    b.result(op, 0, b.node("Reciprocal", [b.node("Sqrt", [b.input(op, 0)])]))


@op(O.RELU1, FLOATS)
def _relu1(b, op):
    t = b.type_of(op, 0)
    b.result(op, 0, b.node("Clip", [b.input(op, 0), b.scalar_like(-1, t), b.scalar_like(1, t)]))


@op(O.RELU6, FLOATS)
def _relu6(b, op):
    t = b.type_of(op, 0)
    b.result(op, 0, b.node("Clip", [b.input(op, 0), b.scalar_like(0, t), b.scalar_like(6, t)]))


@op(O.ELU, FLOATS)
def _elu(b, op):
    b.result(op, 0, b.node("Elu", [b.input(op, 0)], alpha=float(b.scalar(op, 1))))


@op(O.PRELU, FLOATS)
def _prelu(b, op):
    # NNAPI broadcasts input and alpha both ways (ONNX PRelu only alpha to input): select.
    x, alpha = b.input(op, 0), b.input(op, 1)
    neg = b.node("Less", [x, b.scalar_like(0, b.type_of(op, 0))])
    b.result(op, 0, b.node("Where", [neg, b.node("Mul", [x, alpha]), x]))


def _binary_fused(onnx_op: str):
    def emit(b, op):
        t = b.type_of(op, 0)
        code = b.scalar(op, 2)
        a, c = b.input(op, 0), b.input(op, 1)
        if t == I32 and onnx_op == "Div":  # NNAPI: floor division; x / 0 = 0 (AOSP)
            zero = b.node("Equal", [c, b.scalar_like(0, I32)])
            safe = b.node("Where", [zero, b.scalar_like(1, I32), c])
            exact = b.node("Sub", [a, b.node("Mod", [a, safe], fmod=0)])
            y = b.node("Div", [exact, safe])
            y = b.node("Where", [zero, b.scalar_like(0, I32), y])
        else:
            y = b.node(onnx_op, [a, c])
        b.result(op, 0, b.fuse(y, code, b.operand(op.outputs[0])))
    return emit


for _t, _onnx in [(O.ADD, "Add"), (O.SUB, "Sub"), (O.MUL, "Mul"), (O.DIV, "Div")]:
    op(_t, NUMERIC)(_binary_fused(_onnx))


def _binary(onnx_op: str, negate: bool = False):
    def emit(b, op):
        y = b.node(onnx_op, [b.input(op, 0), b.input(op, 1)])
        b.result(op, 0, b.node("Not", [y]) if negate else y)
    return emit


for _t, _onnx, _types, _neg in [
        (O.MAXIMUM, "Max", NUMERIC, False), (O.MINIMUM, "Min", NUMERIC, False),
        (O.POW, "Pow", FLOATS, False),
        (O.EQUAL, "Equal", NUMERIC | {BOOL8}, False), (O.NOT_EQUAL, "Equal", NUMERIC | {BOOL8}, True),
        (O.GREATER, "Greater", NUMERIC, False), (O.GREATER_EQUAL, "GreaterOrEqual", NUMERIC, False),
        (O.LESS, "Less", NUMERIC, False), (O.LESS_EQUAL, "LessOrEqual", NUMERIC, False),
        (O.LOGICAL_AND, "And", {BOOL8}, False), (O.LOGICAL_OR, "Or", {BOOL8}, False)]:
    op(_t, _types)(_binary(_onnx, _neg))


@op(O.SELECT, {BOOL8})
def _select(b, op):
    if b.type_of(op, 1) not in DATA - QUANT8:
        raise Unsupported(f"SELECT of {b.type_of(op, 1).name}")
    b.result(op, 0, b.node("Where", [b.input(op, 0), b.input(op, 1), b.input(op, 2)]))


@op(O.CAST, NUMERIC | {QA8})
def _cast(b, op):
    src, dst = b.type_of(op, 0), b.operand(op.outputs[0]).type
    if dst not in NUMERIC | {QA8}:
        raise Unsupported(f"CAST to {dst.name}")
    x = b.input(op, 0)
    if dst == QA8 and src in FLOATS:  # NNAPI: clamp to [0, 255], then truncate
        t = src
        x = b.node("Clip", [x, b.scalar_like(0, t), b.scalar_like(255, t)])
    elif dst == QA8 and src == I32:
        x = b.node("Clip", [x, b.scalar_like(0, I32), b.scalar_like(255, I32)])
    b.result(op, 0, b.cast(x, dst))


@op(O.SOFTMAX, FLOATS)
def _softmax(b, op):
    beta = float(b.scalar(op, 1))
    axis = int(b.scalar(op, 2, -1))
    x = b.input(op, 0)
    if beta != 1.0:
        x = b.node("Mul", [x, b.scalar_like(beta, b.type_of(op, 0))])
    b.result(op, 0, b.node("Softmax", [x], axis=axis))


@op(O.LOG_SOFTMAX, FLOATS)
def _log_softmax(b, op):
    beta = float(b.scalar(op, 1))
    axis = int(b.scalar(op, 2))
    x = b.node("Mul", [b.input(op, 0), b.scalar_like(beta, b.type_of(op, 0))])
    b.result(op, 0, b.node("LogSoftmax", [x], axis=axis))


# --- shape and data-movement operations ------------------------------------------------

@op(O.RESHAPE, DATA)
def _reshape(b, op):
    b.same_quant(op)
    shape = b.node("Cast", [b.input(op, 1)], to=7)  # int64, as ONNX Reshape takes it
    b.result(op, 0, b.node("Reshape", [b.input(op, 0), shape], allowzero=1))


@op(O.SQUEEZE, DATA)
def _squeeze(b, op):
    b.same_quant(op)
    x = b.input(op, 0)
    if b.omitted(op, 1) or b.constant(op, 1).size == 0:
        b.result(op, 0, b.node("Squeeze", [x]))
    else:
        b.result(op, 0, b.node("Squeeze", [x, b.i64(b.constant(op, 1))]))


@op(O.EXPAND_DIMS, DATA)
def _expand_dims(b, op):
    b.same_quant(op)
    b.result(op, 0, b.node("Unsqueeze", [b.input(op, 0), b.i64([b.scalar(op, 1)])]))


@op(O.TRANSPOSE, DATA)
def _transpose(b, op):
    b.same_quant(op)
    x = b.input(op, 0)
    perm = None if b.omitted(op, 1) else [int(p) for p in b.constant(op, 1).reshape(-1)]
    if not perm:
        b.result(op, 0, b.node("Transpose", [x]))  # reversed dimensions, as NNAPI's default
    else:
        b.result(op, 0, b.node("Transpose", [x], perm=perm))


@op(O.CONCATENATION, DATA)
def _concat(b, op):
    n = len(op.inputs) - 1
    b.same_quant(op, ins=tuple(range(n)))
    axis = int(b.scalar(op, n))
    b.result(op, 0, b.node("Concat", [b.input(op, k) for k in range(n)], axis=axis))


@op(O.PACK, DATA)
def _pack(b, op):
    n = len(op.inputs) - 1
    b.same_quant(op, ins=tuple(range(1, n + 1)))
    axis = int(b.scalar(op, 0))
    parts = [b.node("Unsqueeze", [b.input(op, k), b.i64([axis])]) for k in range(1, n + 1)]
    b.result(op, 0, b.node("Concat", parts, axis=axis))


@op(O.SPLIT, DATA)
def _split(b, op):
    b.same_quant(op, outs=tuple(range(len(op.outputs))))
    axis, n = int(b.scalar(op, 1)), int(b.scalar(op, 2))
    if n != len(op.outputs):
        raise Unsupported("num_splits differs from the number of outputs")
    outs = b.node("Split", [b.input(op, 0)], n_out=n, axis=axis, num_outputs=n)
    for j, name in enumerate([outs] if n == 1 else outs):
        b.result(op, j, name)


@op(O.GATHER, DATA)
def _gather(b, op):
    b.same_quant(op)
    b.result(op, 0, b.node("Gather", [b.input(op, 0), b.input(op, 2)], axis=int(b.scalar(op, 1))))


@op(O.EMBEDDING_LOOKUP, DATA - {BOOL8})
def _embedding_lookup(b, op):
    # inputs: lookups (TENSOR_INT32), values; input 0 is the index tensor
    if b.type_of(op, 1) not in DATA - {BOOL8}:
        raise Unsupported(f"EMBEDDING_LOOKUP of {b.type_of(op, 1).name}")
    b.same_quant(op, ins=(1,))
    b.result(op, 0, b.node("Gather", [b.input(op, 1), b.input(op, 0)], axis=0))


@op(O.SLICE, DATA)
def _slice(b, op):
    b.same_quant(op)
    begin = b.constant(op, 1).astype(np.int64).reshape(-1)
    size = b.constant(op, 2).astype(np.int64).reshape(-1)
    end = np.where(size < 0, INT64_MAX, begin + size)
    b.result(op, 0, b.node("Slice", [b.input(op, 0), b.i64(begin), b.i64(end)]))


@op(O.STRIDED_SLICE, DATA)
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
    p = b.constant(op, k).astype(np.int64).reshape(-1, 2)
    return b.i64(np.concatenate([p[:, 0], p[:, 1]]))


@op(O.PAD, DATA - {BOOL8})
def _pad(b, op):
    b.same_quant(op)
    t = b.type_of(op, 0)
    value = b.operand(op.inputs[0]).zero_point if t in QUANT8 else 0
    b.result(op, 0, b.node("Pad", [b.input(op, 0), _pads(b, op, 1), b.scalar_like(value, t)]))


@op(O.PAD_V2, DATA - {BOOL8})
def _pad_v2(b, op):
    b.same_quant(op)
    t = b.type_of(op, 0)
    b.result(op, 0, b.node("Pad", [b.input(op, 0), _pads(b, op, 1), b.scalar_like(b.scalar(op, 2), t)]))


@op(O.MIRROR_PAD, DATA - {BOOL8})
def _mirror_pad(b, op):
    b.same_quant(op)
    if int(b.scalar(op, 2)) != 0:  # SYMMETRIC (edge repeated) has no ONNX Pad mode
        raise Unsupported("MIRROR_PAD mode SYMMETRIC")
    b.result(op, 0, b.node("Pad", [b.input(op, 0), _pads(b, op, 1)], mode="reflect"))


@op(O.REVERSE, DATA)
def _reverse(b, op):
    b.same_quant(op)
    axes = [int(a) for a in b.constant(op, 1).reshape(-1)]
    n = len(axes)
    b.result(op, 0, b.node("Slice", [b.input(op, 0), b.i64([-1] * n), b.i64([INT64_MIN] * n),
                                     b.i64(axes), b.i64([-1] * n)]))


@op(O.TILE, DATA)
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


@op(O.RANK, DATA)
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


op(O.MEAN, FLOATS)(_reduce("ReduceMean"))
for _t, _onnx in [(O.REDUCE_SUM, "ReduceSum"), (O.REDUCE_PROD, "ReduceProd"),
                  (O.REDUCE_MAX, "ReduceMax"), (O.REDUCE_MIN, "ReduceMin")]:
    op(_t, FLOATS)(_reduce(_onnx))
op(O.REDUCE_ALL, {BOOL8})(_reduce("ReduceMin", bool_via=True))
op(O.REDUCE_ANY, {BOOL8})(_reduce("ReduceMax", bool_via=True))


def _arg(onnx_op):
    def emit(b, op):
        y = b.node(onnx_op, [b.input(op, 0)], axis=int(b.scalar(op, 1)), keepdims=0)
        if b.rank(op) == 1:  # NNAPI: a rank-1 input gives shape [1]
            y = b.node("Reshape", [y, b.i64([1])])
        b.result(op, 0, b.node("Cast", [y], to=6))
    return emit


op(O.ARGMAX, NUMERIC)(_arg("ArgMax"))
op(O.ARGMIN, NUMERIC)(_arg("ArgMin"))


@op(O.TOPK_V2, NUMERIC)
def _topk(b, op):
    values, indices = b.node("TopK", [b.input(op, 0), b.i64([b.scalar(op, 1)])], n_out=2,
                             axis=-1, largest=1, sorted=1)
    b.result(op, 0, values)
    b.result(op, 1, b.node("Cast", [indices], to=6))


@op(O.BATCH_MATMUL, NUMERIC)
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


op(O.DEPTH_TO_SPACE, DATA - {BOOL8, I32})(_space_depth("DepthToSpace"))
op(O.SPACE_TO_DEPTH, DATA - {BOOL8, I32})(_space_depth("SpaceToDepth"))


from . import translate_nn  # noqa: E402,F401  (registers the rest of TABLE)
