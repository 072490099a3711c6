"""Building one NNAPI partition: :class:`Builder` collects the operands and operations the
mapped TFLite operators become (a :class:`~runtime.testing.test_model.TestModel` once
finished), :func:`nn_type` gives a TFLite tensor's NNAPI operand type
(``NNAPIOpBuilder::AddTensor``), and the helpers at the end are the vocabulary the operator
mappings (:mod:`~mlts.tflite_import.operators`) share: padding and fused-activation codes,
:func:`emit`, :func:`require` (raises :class:`Unmappable`), :func:`const_value`."""
from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

from runtime.testing.test_model import TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L
from runtime.types import OperandType as T
from runtime.types import OperationType as OP
from runtime.types import operand_dtype

from .model import ACTIVATIONS, Partition, TensorInfo, make_test_model
from .reader import Op


class Unmappable(Exception):
    """The operator has no NNAPI mapping (the message says why)."""


def nn_type(info: TensorInfo) -> tuple[T, float, int, tuple | None]:
    """(NNAPI operand type, scale, zeroPoint, channel_quant) of a TFLite tensor."""
    tn = info.type_name
    if tn == "FLOAT32":
        return T.TENSOR_FLOAT32, 0.0, 0, None
    if tn == "FLOAT16":
        return T.TENSOR_FLOAT16, 0.0, 0, None
    if tn == "INT32":
        return T.TENSOR_INT32, info.scale, info.zero_point, None
    if tn == "BOOL":
        return T.TENSOR_BOOL8, 0.0, 0, None
    if tn == "UINT8":
        if info.per_channel:
            raise Unmappable(f"uint8 tensor {info.index} has per-channel quantization")
        return T.TENSOR_QUANT8_ASYMM, info.scale or 1.0, info.zero_point, None
    if tn == "INT8":
        if info.per_channel:
            return (T.TENSOR_QUANT8_SYMM_PER_CHANNEL, 0.0, 0,
                    (tuple(float(s) for s in info.scales), info.quantized_dimension))
        return T.TENSOR_QUANT8_ASYMM_SIGNED, info.scale or 1.0, info.zero_point, None
    if tn == "INT16":
        return T.TENSOR_QUANT16_SYMM, info.scale or 1.0, info.zero_point, None
    if tn == "INT64" and info.is_constant:
        return T.TENSOR_INT32, 0.0, 0, None
    raise Unmappable(f"tensor {info.index} ({info.name}) has type {tn}, which NNAPI has not")


def nn_dims(shape) -> list[int]:
    """NNAPI dimensions of a TFLite shape: a rank-0 tensor becomes [1] (NNAPI reads rank 0 as
    "unknown rank"; the delegate's scalar-as-tensor rule)."""
    return [int(d) for d in shape] if len(shape) else [1]


class TensorSource(Protocol):
    """What a :class:`Builder` reads of the import under way: the TFLite ``tensors`` and
    the ``constant(t)`` value of tensor ``t`` (folded or stored; None when computed)."""

    tensors: list[TensorInfo]

    def constant(self, t: int) -> np.ndarray | None: ...


class Builder:
    """Operands and operations of the NNAPI partition being built."""

    def __init__(self, imp: TensorSource):
        self.imp = imp
        self.operands: list[TestOperand] = []
        self.operations: list[TestOperation] = []
        self.origin: list[int] = []  # TFLite operator of each NNAPI operation
        self.of_tensor: dict[int, int] = {}
        self.input_tensors: list[int] = []
        self.produced: set[int] = set()
        self.operators: list[int] = []
        self.current = -1
        self.note = ""  # a remark on the operator being mapped (shown in the mapping)

    # -- transactions (an operator that turns out unmappable leaves no trace) --
    def checkpoint(self):
        """The builder's state, for :meth:`rollback`."""
        return (len(self.operands), len(self.operations), dict(self.of_tensor),
                len(self.input_tensors), set(self.produced))

    def rollback(self, cp) -> None:
        """Drop everything added since :meth:`checkpoint` returned ``cp``."""
        n_opd, n_ops, of_tensor, n_in, produced = cp
        del self.operands[n_opd:]
        del self.operations[n_ops:]
        del self.origin[n_ops:]
        self.of_tensor, self.produced = of_tensor, produced
        del self.input_tensors[n_in:]

    @property
    def empty(self) -> bool:
        """Whether no NNAPI operation was added yet."""
        return not self.operations

    # -- operands --
    def add(self, type_: T, dims, scale=0.0, zp=0, lifetime=L.TEMPORARY_VARIABLE, data=None,
            channel_quant=None) -> int:
        """Append an operand; returns its index."""
        self.operands.append(TestOperand(type_, list(dims), float(scale), int(zp), lifetime, 0, False,
                                         channel_quant, data))
        return len(self.operands) - 1

    def const(self, value, type_: T, scale=0.0, zp=0, channel_quant=None, dims=None) -> int:
        """A constant operand of ``value`` converted to ``type_``'s dtype (``dims`` default to
        its shape): CONSTANT_REFERENCE above 128 bytes, else CONSTANT_COPY."""
        arr = np.array(value, dtype=operand_dtype(type_), order="C")
        if dims is None:
            dims = list(arr.shape)
        lifetime = L.CONSTANT_REFERENCE if arr.nbytes > 128 else L.CONSTANT_COPY
        return self.add(type_, dims, scale, zp, lifetime, arr.reshape(dims) if dims else arr.reshape(()),
                        channel_quant)

    def i32(self, v) -> int:
        """A constant INT32 scalar."""
        return self.const(np.int32(v), T.INT32)

    def f32(self, v) -> int:
        """A constant FLOAT32 scalar."""
        return self.const(np.float32(v), T.FLOAT32)

    def boolean(self, v) -> int:
        """A constant BOOL scalar."""
        return self.const(np.bool_(v), T.BOOL)

    def i32_vector(self, values) -> int:
        """A constant TENSOR_INT32 vector; raises Unmappable when a value does not fit int32."""
        arr = np.asarray(values, np.int64).reshape(-1)
        if arr.size and (arr.max() > 2**31 - 1 or arr.min() < -2**31):
            raise Unmappable("an int64 parameter does not fit int32")
        return self.const(arr.astype(np.int32), T.TENSOR_INT32)

    def omitted(self, type_: T = T.TENSOR_FLOAT32) -> int:
        """A NO_VALUE operand (an omitted optional input)."""
        return self.add(type_, [], lifetime=L.NO_VALUE)

    def temp(self, type_: T, dims, scale=0.0, zp=0) -> int:
        """A TEMPORARY_VARIABLE operand of shape ``dims`` (rank 0 -> [1])."""
        return self.add(type_, nn_dims(dims), scale, zp)

    def temp_like(self, t: int, dims=None, float_=False) -> int:
        """A temporary of tensor ``t``'s type (float32 when ``float_``) and ``dims``."""
        info = self.imp.tensors[t]
        if float_:
            return self.temp(T.TENSOR_FLOAT32, info.shape if dims is None else dims)
        ty, s, z, _ = nn_type(info)
        return self.temp(ty, info.shape if dims is None else dims, s, z)

    def info(self, t: int) -> TensorInfo:
        """The TensorInfo of TFLite tensor ``t``."""
        return self.imp.tensors[t]

    def tensor(self, t: int) -> int:
        """The operand of TFLite tensor ``t`` as an operation input: a constant (its value
        converted to the operand type), the operand written earlier in this partition, or
        a new partition input."""
        if t < 0:
            raise Unmappable("a required input is omitted")
        if t in self.of_tensor:
            return self.of_tensor[t]
        info = self.imp.tensors[t]
        value = self.imp.constant(t)
        ty, scale, zp, cq = nn_type(info)
        if value is None and info.is_variable:
            value = np.zeros(info.shape, info.dtype)  # TFLite variables start at zero
        if value is None and info.sparsity is not None and info.is_constant:
            raise Unmappable(f"tensor {t} is sparse (DENSIFY it first)")
        if value is not None:
            if info.type_name == "INT64":
                if value.size and (value.max() > 2**31 - 1 or value.min() < -2**31):
                    raise Unmappable(f"int64 constant {t} does not fit int32")
                value = value.astype(np.int32)
            k = self.const(value.reshape(nn_dims(info.shape)), ty, scale, zp, cq)
        else:
            k = self.add(ty, nn_dims(info.shape), scale, zp, L.SUBGRAPH_INPUT, channel_quant=cq)
            self.input_tensors.append(t)
        self.of_tensor[t] = k
        return k

    def output(self, t: int, type_override: T | None = None) -> int:
        """A new operand written by the current operation for TFLite tensor ``t``."""
        if t in self.of_tensor:
            raise Unmappable(f"tensor {t} is written twice")
        info = self.imp.tensors[t]
        ty, scale, zp, cq = nn_type(info)
        if cq is not None:
            raise Unmappable(f"output tensor {t} has per-channel quantization")
        k = self.add(type_override or ty, nn_dims(info.shape), scale, zp)
        self.of_tensor[t] = k
        self.produced.add(t)
        return k

    def op(self, type_: OP, inputs, outputs) -> None:
        """Append an NNAPI operation of the TFLite operator being mapped."""
        self.operations.append(TestOperation(type_, [int(i) for i in inputs], [int(o) for o in outputs]))
        self.origin.append(self.current)

    def dequantized(self, t: int) -> int:
        """Operand of tensor ``t`` dequantized to float32 by a DEQUANTIZE operation (the
        delegate's ``AddDequantize``, shared between users)."""
        key = ("dq", t)
        if key in self.of_tensor:
            return self.of_tensor[key]
        src = self.tensor(t)
        k = self.temp(T.TENSOR_FLOAT32, self.info(t).shape)
        self.op(OP.DEQUANTIZE, [src], [k])
        self.of_tensor[key] = k
        return k

    # -- finishing --
    def finish(self, index: int, name: str, needed: Callable[[int], bool]) -> Partition:
        """The Partition: outputs are the produced tensors ``needed`` says are read after it
        (or are graph outputs)."""
        outs = sorted((t for t in self.produced if needed(t)), key=self.of_tensor.__getitem__)
        consumers = [0] * len(self.operands)
        for o in self.operations:
            for i in o.inputs:
                consumers[i] += 1
        operands = self.operands
        for k, o in enumerate(operands):
            o.number_of_consumers = consumers[k]
        for t in outs:
            operands[self.of_tensor[t]].lifetime = L.SUBGRAPH_OUTPUT
        sg = TestSubgraph(operands, self.operations, [self.of_tensor[t] for t in self.input_tensors],
                          [self.of_tensor[t] for t in outs])
        tm = make_test_model(f"{name}-partition{index}", sg)
        operand_of = {t: k for t, k in self.of_tensor.items() if isinstance(t, int)}
        return Partition(index, list(self.operators), tm, list(self.input_tensors), outs, operand_of,
                         list(self.origin))


# --- what the operator mappings share ---------------------------------------------------------

_PADDING = {0: 1, 1: 2}  # TFLite Padding SAME/VALID -> NNAPI PaddingCode SAME/VALID
_POST_ACTIVATION = {1: OP.RELU, 2: OP.RELU1, 3: OP.RELU6}


def padding_code(op: Op) -> int:
    """NNAPI implicit PaddingCode (SAME 1, VALID 2) of the operator's TFLite ``Padding``."""
    p = op.options.get("Padding", 0)
    if p not in _PADDING:
        raise Unmappable(f"padding {p}")
    return _PADDING[p]


def act_code(b: Builder, op: Op, key="FusedActivationFunction") -> int:
    """The NNAPI FuseCode of the operator's fused activation. TFLite's kernels clamp only
    for RELU, RELU_N1_TO_1 and RELU6 (``CalculateActivationRange`` leaves TANH and SIGN_BIT
    unclamped), so those two become NONE, noted in the mapping."""
    act = int(op.options.get(key, 0))
    if act in (0, 1, 2, 3):
        return act
    b.note = (f"fused {ACTIVATIONS.get(act, act)} dropped: TFLite's kernels ignore it")
    return 0


def emit(b: Builder, op: Op, nn: OP, before: list[int], after=(), *, key="FusedActivationFunction",
         fused=True) -> list[str]:
    """Emit ``nn`` with inputs ``before`` + [FuseCode] + ``after`` (``fused``; else the
    activation, if any, follows as a RELU / RELU1 / RELU6 operation) writing output 0."""
    out_t = op.outputs[0]
    code = act_code(b, op, key)
    if fused:
        b.op(nn, list(before) + [b.i32(code)] + list(after), [b.output(out_t)])
        return [nn.name]
    ins = list(before) + list(after)
    if not code:
        b.op(nn, ins, [b.output(out_t)])
        return [nn.name]
    post = _POST_ACTIVATION[code]
    tmp = b.temp_like(out_t)
    b.op(nn, ins, [tmp])
    b.op(post, [tmp], [b.output(out_t)])
    return [nn.name, post.name]


def is_float(info: TensorInfo) -> bool:
    """Whether the tensor is float32 or float16."""
    return info.type_name in ("FLOAT32", "FLOAT16")


def is_quant8(info: TensorInfo) -> bool:
    """Whether the tensor is uint8 or int8 (quantized 8-bit)."""
    return info.type_name in ("UINT8", "INT8")


def same_quant(a: TensorInfo, o: TensorInfo) -> bool:
    """Whether two tensors have the same (first) scale, compared as float32, and zero point."""
    return np.float32(a.scale) == np.float32(o.scale) and a.zero_point == o.zero_point


def require(cond: bool, why: str) -> None:
    """Raise :class:`Unmappable` (``why``) unless ``cond``."""
    if not cond:
        raise Unmappable(why)


def const_value(b: Builder, t: int, what: str) -> np.ndarray:
    """The constant value of input tensor ``t`` (``what`` names it); raises Unmappable when
    the input is computed or omitted."""
    v = b.imp.constant(t) if t >= 0 else None
    require(v is not None, f"{what} (input tensor {t}) is not constant")
    return v
