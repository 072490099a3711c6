"""The NNAPI -> ONNX translation registry and builder, shared by the rule modules of the
``onnxruntime`` driver (:mod:`.translate_elementwise`, :mod:`.translate_shape`,
:mod:`.translate_nn`) and by the entry point :mod:`.translate`.

Holds the operand-type groups the rules are written against, :class:`Unsupported` (a use
that is not mapped, with the reason; from :mod:`..translated`, shared with the LiteRT
driver), :data:`TABLE` (``OperationType -> Entry``, filled by the :func:`op` decorator
of each rule module) and :class:`Builder`, which collects the ONNX nodes and initializers
of one subgraph (operand ``i`` is the ONNX value ``v{i}``). ONNX opset 18. onnx itself
is imported on first use only (in :class:`Builder` and :func:`onnx_elem_type`), so
importing this module does not load the engine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...hal.validate import constant_value
from ...types import OperandLifeTime as L
from ...types import OperandType as T
from ...types import OperationType as O
from ...types import operand_dtype
from ..translated import OperandAccess, Unsupported

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


def onnx_elem_type(t) -> int:
    """The ONNX TensorProto element type of an NNAPI operand type (Unsupported when it has
    none). onnx is imported here, on first use (an optional heavy dependency)."""
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
    """How one NNAPI operation maps: ``types`` accepted for input 0 as they are, ``qdq``
    8-bit quantized types computed on dequantized values (ONNX's QDQ form:
    DequantizeLinear -> float operation -> QuantizeLinear with the output's scale and zero
    point, which onnxruntime fuses into its quantized kernels where it has them), and
    ``emit(b, op)``."""

    types: frozenset
    emit: Callable
    qdq: frozenset = frozenset()


TABLE: dict[O, Entry] = {}


def op(op_type: O, types, qdq=()):
    """Decorator registering ``fn(b, op)`` as the :data:`TABLE` entry of ``op_type``:
    ``types`` the operand types of the deciding input emitted as they are, ``qdq`` those
    emitted in QDQ form (see :class:`Entry`)."""
    def register(fn):
        TABLE[op_type] = Entry(frozenset(types), fn, frozenset(qdq))
        return fn
    return register


class Builder(OperandAccess):
    """Collects the ONNX nodes and initializers of (part of) a subgraph; operand ``i`` of
    the subgraph is the ONNX value ``v{i}``."""

    def __init__(self, model, sg):
        from onnx import helper, numpy_helper
        super().__init__(model, sg)
        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes, self.initializers = [], []
        self._constants: dict[int, str] = {}
        self._n = 0
        self.where = ""  # "operation k (TYPE)", for node names and messages
        self.qdq = False  # quantized operands read dequantized, outputs quantized

    def snapshot(self):
        return len(self.nodes), len(self.initializers), dict(self._constants)

    def restore(self, state) -> None:
        n_nodes, n_init, constants = state
        del self.nodes[n_nodes:], self.initializers[n_init:]
        self._constants = constants

    # --- operands (read through OperandAccess) ----------------------------------------
    def type_of(self, op, k: int):
        """Input ``k``'s type as the emitted nodes see it (float32 for a quantized operand
        in QDQ mode)."""
        t = self.operand(op.inputs[k]).type
        return F32 if self.qdq and t in QUANT8 else t

    def raw_input(self, op, k: int) -> str:
        """ONNX name of tensor input ``k`` as stored (a constant becomes an initializer, once)."""
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

    def input(self, op, k: int) -> str:
        """ONNX name of tensor input ``k`` (a constant becomes an initializer, once); in
        QDQ mode a quantized input is dequantized to float32."""
        name = self.raw_input(op, k)
        o = self.operand(op.inputs[k])
        if self.qdq and o.type in QUANT8:
            return self.node("DequantizeLinear", [name, self.scalar_like(o.scale, F32),
                                                  self.scalar_like(o.zero_point, o.type)])
        return name

    def same_quant(self, op, ins=(0,), outs=(0,)):
        """Quantized operands must share input 0's scale and zero point (data moves only)."""
        first = self.operand(op.inputs[ins[0]])
        if first.type not in QUANT8 or self.qdq:
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
        self.initializers.append(self.numpy_helper.from_array(arr.copy(order="C"), name))  # 0-d stays 0-d
        return name

    def i64(self, values) -> str:
        return self.const(np.asarray(values, np.int64).reshape(-1), "i64")

    def scalar_like(self, value, t) -> str:
        """A 0-d constant of the numpy dtype of NNAPI tensor type ``t``."""
        return self.const(np.asarray(value, operand_dtype(t)), "s")

    def node(self, op_type: str, inputs, n_out: int = 1, domain: str = "", **attrs):
        """Emit one node; returns its output name (or list of names for n_out > 1)."""
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs,
                                                name=f"{self.where} {op_type} {self._n}".strip(),
                                                domain=domain or None, **attrs))
        return outs[0] if n_out == 1 else outs

    def result(self, op, j: int, name: str) -> None:
        """Bind ``name`` to output ``j`` of ``op`` (quantized first in QDQ mode)."""
        o = self.operand(op.outputs[j])
        if self.qdq and o.type in QUANT8:
            name = self.node("QuantizeLinear", [name, self.scalar_like(o.scale, F32),
                                                self.scalar_like(o.zero_point, o.type)])
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
        if t in QUANT8 and self.qdq:
            t = F32
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
