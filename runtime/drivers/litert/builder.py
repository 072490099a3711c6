"""The NNAPI -> TFLite translation registry and builder of the ``litert`` drivers, shared
by the rule modules (:mod:`.translate_elementwise`, :mod:`.translate_nn`,
:mod:`.translate_shape`, :mod:`.translate_more`) and the entry
point :mod:`.translate`.

:data:`TABLE` maps an NNAPI OperationType to a :class:`Rule` (the operand types of the
deciding input it accepts and ``emit(b, op)``); :class:`Builder` reads the NNAPI operands
(through :class:`~runtime.drivers.translated.OperandAccess`) and writes TFLite tensors and
operators into a :class:`.flatbuffer.TFLiteGraph`: NNAPI operand ``i`` becomes one TFLite
tensor (created on first use; constants carry their bytes). Operand types map one-to-one:
TENSOR_FLOAT32 -> FLOAT32, TENSOR_INT32 -> INT32 (a bias's scale kept), TENSOR_QUANT8_ASYMM
-> UINT8 and TENSOR_QUANT8_ASYMM_SIGNED -> INT8 (scale, zero point),
TENSOR_QUANT8_SYMM_PER_CHANNEL -> INT8 with per-channel scales along ``channelDim``,
TENSOR_QUANT8_SYMM -> INT8 (zero point 0), TENSOR_BOOL8 -> BOOL; any other type is :class:`~runtime.drivers.translated.Unsupported`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...hal.validate import constant_value
from ...types import OperandLifeTime as L
from ...types import OperandType as T
from ...types import OperationType as O
from ..translated import OperandAccess, Unsupported
from .flatbuffer import TFLiteGraph, options

F32, I32, BOOL, BOOL8 = T.TENSOR_FLOAT32, T.TENSOR_INT32, T.BOOL, T.TENSOR_BOOL8
QA8, QA8S, QPC = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM_PER_CHANNEL
QS8 = T.TENSOR_QUANT8_SYMM
QUANT8 = frozenset({QA8, QA8S})
FLOAT = frozenset({F32})

#: NNAPI operand type -> numpy dtype of the TFLite tensor.
DTYPES = {F32: np.float32, I32: np.int32, QA8: np.uint8, QA8S: np.int8, QPC: np.int8, QS8: np.int8,
          BOOL8: np.bool_}

#: NNAPI FuseCode -> TFLite ActivationFunctionType (NONE, RELU, RELU_N1_TO_1, RELU6: the
#: same numbers; NNAPI's fused activations are TFLite's).
FUSED = {0: 0, 1: 1, 2: 2, 3: 3}


@dataclass
class Rule:
    """How one NNAPI operation maps: ``types`` of the deciding input (input ``deciding``)
    it accepts and ``emit(b, op)``, which raises Unsupported for a use it cannot write
    faithfully. ``same_type``: every output has the deciding input's type (else ``emit``
    checks the output types)."""

    types: frozenset
    emit: Callable
    deciding: int = 0
    same_type: bool = True


TABLE: dict[O, Rule] = {}


def rule(op_type: O, types, deciding: int = 0, same_type: bool = True):
    """Decorator registering ``fn(b, op)`` as the :data:`TABLE` rule of ``op_type``."""
    def register(fn):
        TABLE[op_type] = Rule(frozenset(types), fn, deciding, same_type)
        return fn
    return register


class Builder(OperandAccess):
    """Writes the TFLite tensors and operators of (part of) subgraph ``sg`` of ``model``
    into ``graph`` (a fresh :class:`TFLiteGraph` by default)."""

    def __init__(self, model, sg, graph: TFLiteGraph | None = None):
        super().__init__(model, sg)
        self.graph = graph if graph is not None else TFLiteGraph()
        self.tensors: dict[int, int] = {}  # NNAPI operand index -> TFLite tensor index
        self.where = ""

    def snapshot(self):
        return len(self.graph.tensors), len(self.graph.operators), dict(self.tensors)

    def restore(self, state) -> None:
        n_t, n_o, tensors = state
        del self.graph.tensors[n_t:], self.graph.operators[n_o:]
        self.tensors = tensors

    # --- operands -> tensors ---------------------------------------------------------
    def type_of(self, op, k: int):
        return self.operand(op.inputs[k]).type

    def tensor(self, idx: int) -> int:
        """The TFLite tensor of NNAPI operand ``idx`` (created once; a constant carries its
        value). Unsupported for a type without a TFLite equivalent, a missing value or a
        subgraph reference."""
        if idx in self.tensors:
            return self.tensors[idx]
        o = self.operand(idx)
        if o.type not in DTYPES:
            raise Unsupported(f"operand type {getattr(o.type, 'name', o.type)} has no TFLite tensor type here")
        if o.lifetime == L.NO_VALUE:
            raise Unsupported(f"operand {idx} has no value")
        if o.lifetime == L.SUBGRAPH:
            raise Unsupported(f"operand {idx} is a subgraph reference")
        data = None
        if o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
            data = np.array(constant_value(self.model, o))
        scales, zps, qdim = (), (), 0
        if o.type == QS8:
            scales, zps = (o.scale,), (0,)
        elif o.type in QUANT8:
            scales, zps = (o.scale,), (o.zero_point,)
        elif o.type == QPC:
            if o.extra_params is None:
                raise Unsupported(f"operand {idx}: per-channel quantization without scales")
            scales, qdim = o.extra_params.scales, o.extra_params.channel_dim
            zps = (0,) * len(scales)
        elif o.type == I32 and o.scale:
            scales, zps = (o.scale,), (0,)
        self.tensors[idx] = self.graph.add_tensor(DTYPES[o.type], o.dimensions, f"v{idx}", data,
                                                  scales, zps, qdim)
        return self.tensors[idx]

    def input(self, op, k: int) -> int:
        """TFLite tensor of input ``k`` of ``op``."""
        if self.omitted(op, k):
            raise Unsupported(f"input {k} has no value")
        return self.tensor(op.inputs[k])

    def output(self, op, j: int = 0) -> int:
        """TFLite tensor of output ``j`` of ``op``."""
        return self.tensor(op.outputs[j])

    def const(self, value, dtype, hint: str = "k") -> int:
        """A new constant tensor of ``value`` (not quantized)."""
        arr = np.asarray(value, dtype)
        return self.graph.add_tensor(dtype, arr.shape, f"{hint}{len(self.graph.tensors)}", arr)

    def temporary(self, like: int, shape, hint: str = "t") -> int:
        """A new variable tensor with the NNAPI operand ``like``'s type and quantization."""
        o = self.operand(like)
        scales, zps = ((o.scale,), (o.zero_point,)) if o.type in QUANT8 else ((), ())
        return self.graph.add_tensor(DTYPES[o.type], shape, f"{hint}{len(self.graph.tensors)}",
                                     None, scales, zps)

    def shifted_uint8(self, src: int, operand: int) -> int:
        """TFLite tensor ``src`` of TENSOR_QUANT8_ASYMM_SIGNED operand ``operand`` as UINT8
        with zero point + 128 (the same real values): a constant is rewritten, a variable
        goes through QUANTIZE (TFLite's int8 -> uint8 requantization at scale ratio 1 adds
        128 exactly)."""
        o = self.operand(operand)
        t = self.graph.tensors[src]
        if t.data is not None:
            q = np.frombuffer(t.data, np.int8).astype(np.int16) + 128
            return self.graph.add_tensor(np.uint8, t.shape, f"u8_{t.name}", q.reshape(t.shape),
                                         (o.scale,), (o.zero_point + 128,))
        out = self.graph.add_tensor(np.uint8, t.shape, f"u8_{t.name}", None, (o.scale,), (o.zero_point + 128,))
        self.emit("QUANTIZE", [src], [out])
        return out

    def shifted_output(self, operand: int, rank: int) -> int:
        """A UINT8 tensor for the values of TENSOR_QUANT8_ASYMM_SIGNED operand ``operand``
        (zero point + 128); :meth:`unshift` writes it back as INT8."""
        o = self.operand(operand)
        return self.graph.add_tensor(np.uint8, [1] * rank, f"u8out{len(self.graph.tensors)}", None,
                                     (o.scale,), (o.zero_point + 128,))

    def unshift(self, src: int, dst: int) -> None:
        """QUANTIZE UINT8 tensor ``src`` into INT8 tensor ``dst`` (same scale, zero point
        - 128: exact)."""
        self.emit("QUANTIZE", [src], [dst])

    # --- parameters ------------------------------------------------------------------
    def fused(self, op, k: int) -> int:
        """TFLite ActivationFunctionType of FuseCode input ``k``."""
        code = int(self.scalar(op, k))
        if code not in FUSED:
            raise Unsupported(f"fuse code {code}")
        return FUSED[code]

    def is_nchw(self, op, k: int) -> bool:
        """Optional layout input ``k`` is present and true (NCHW)."""
        return not self.omitted(op, k) and bool(self.scalar(op, k))

    def transpose(self, src: int, perm, like: int, shape=None) -> int:
        """A new tensor (NNAPI operand ``like``'s type and quantization) = TRANSPOSE of
        TFLite tensor ``src`` by ``perm``; ``shape`` is written (TFLite computes it)."""
        out = self.temporary(like, shape if shape is not None else [1] * len(perm), "tr")
        self.emit("TRANSPOSE", [src, self.const(np.asarray(perm), np.int32, "perm")], [out])
        return out

    def same_quant(self, op, ins=(0,), outs=(0,)) -> None:
        """Quantized operands must share input ``ins[0]``'s scale and zero point."""
        first = self.operand(op.inputs[ins[0]])
        if first.type not in QUANT8:
            return
        for idx in [op.inputs[k] for k in ins] + [op.outputs[j] for j in outs]:
            o = self.operand(idx)
            if (o.scale, o.zero_point) != (first.scale, first.zero_point):
                raise Unsupported("quantized operands with different scale/zero point")

    # --- operators -------------------------------------------------------------------
    def emit(self, name: str, inputs, outputs, kind: str | None = None, **fields) -> None:
        """Append TFLite builtin ``name`` with ``{kind}Options`` ``fields`` (if ``kind``)."""
        opts = options(kind, **fields) if kind else None
        self.graph.add_operator(name, inputs, outputs, opts)
