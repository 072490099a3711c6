"""Front-end model builder (``ANeuralNetworksModel``) in Pythonic form.

Every call validates its arguments and raises :class:`NnapiError` with the NNAPI result code
(``BAD_DATA`` for a bad argument, ``BAD_STATE`` after ``finish``) and a message naming the
operand or operation. ``finish`` orders the operations (a cycle is ``BAD_DATA``) and runs
the HAL model validation plus every operation's own rules.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import ops
from ..errors import HalError, NnapiError
from ..hal.memory import SharedMemory
from ..hal.types import DataLocation, Model as HalModel, Operand, Operation, Subgraph, \
    SymmPerChannelQuantParams
from ..hal.validate import operand_byte_size, validate_model
from ..types import (MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES, OperandLifeTime, OperandType,
                     OperationType, ResultCode, is_tensor_type, operand_dtype)
from .memory import Memory

L = OperandLifeTime


@dataclass(frozen=True)
class OperandDesc:
    """``ANeuralNetworksOperandType``: type, dimensions (0 = unknown, () = scalar or unknown
    rank), scale and zero point."""

    type: OperandType
    dimensions: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0


def _bad(message: str) -> NnapiError:
    return NnapiError(ResultCode.BAD_DATA, message)


class Model:
    """Build a model operand by operand and operation by operation, then :meth:`finish`."""

    def __init__(self):
        self._operands: list[Operand] = []
        self._values: dict[int, bytes] = {}  # CONSTANT_COPY and large copied values
        self._memory_values: dict[int, tuple[Memory, int, int]] = {}
        self._operations: list[Operation] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._relaxed = False
        self._finished = False
        self._hal: HalModel | None = None

    # -- construction --------------------------------------------------------------------
    def _check_open(self, call: str) -> None:
        if self._finished:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: the model is already finished")

    def _operand(self, index: int, call: str) -> Operand:
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(self._operands):
            raise _bad(f"{call}: operand {index} does not exist ({len(self._operands)} operands)")
        return self._operands[index]

    def add_operand(self, operand_type: OperandType | OperandDesc, dimensions=(), scale: float = 0.0,
                    zero_point: int = 0) -> int:
        """Add an operand; returns its index. Raises BAD_DATA for an unknown type, negative
        dimensions or dimensions on a scalar type (quantization ranges are checked at
        :meth:`finish`)."""
        self._check_open("add_operand")
        if isinstance(operand_type, OperandDesc):
            operand_type, dimensions, scale, zero_point = (operand_type.type, operand_type.dimensions,
                                                           operand_type.scale, operand_type.zero_point)
        try:
            t = OperandType(operand_type)
        except ValueError:
            raise _bad(f"add_operand: {operand_type} is not an OperandType") from None
        dims = [int(d) for d in dimensions]
        if any(d < 0 or d > 0xFFFFFFFF for d in dims):
            raise _bad(f"add_operand: dimensions {dims} must be uint32")
        if dims and not is_tensor_type(t):
            raise _bad(f"add_operand: scalar type {t.name} cannot have dimensions {dims}")
        self._operands.append(Operand(t, dims, 0, float(scale), int(zero_point)))
        return len(self._operands) - 1

    def set_operand_value(self, index: int, value) -> None:
        """Give operand ``index`` a constant value (bytes, numpy array or Python scalar, stored
        in the operand's dtype), or ``None`` to mark an omitted optional operand (NO_VALUE).

        Raises BAD_DATA when the byte length does not match the operand's size.
        """
        self._check_open("set_operand_value")
        operand = self._operand(index, "set_operand_value")
        if value is None:
            operand.lifetime = L.NO_VALUE
            self._values.pop(index, None)
            return
        if isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
        else:
            raw = np.ascontiguousarray(value, dtype=operand_dtype(operand.type)).tobytes()
        if 0 in operand.dimensions or (is_tensor_type(operand.type) and not operand.dimensions):
            raise _bad(f"set_operand_value: operand {index} needs fully specified dimensions to "
                       f"take a value, has {operand.dimensions}")
        need = operand_byte_size(operand.type, operand.dimensions)
        if len(raw) != need:
            raise _bad(f"set_operand_value: operand {index} ({OperandType(operand.type).name}"
                       f"{operand.dimensions}) needs {need} bytes, got {len(raw)}")
        self._values[index] = raw
        self._memory_values.pop(index, None)
        operand.lifetime = L.CONSTANT_COPY if need <= MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES \
            else L.CONSTANT_REFERENCE

    def set_operand_value_from_memory(self, index: int, memory: Memory, offset: int, length: int) -> None:
        """Give operand ``index`` a constant value held in ``memory`` at ``offset`` (bytes).
        Raises BAD_DATA when the range is outside the memory or the length is wrong."""
        self._check_open("set_operand_value_from_memory")
        operand = self._operand(index, "set_operand_value_from_memory")
        if not isinstance(memory, Memory):
            raise NnapiError(ResultCode.UNEXPECTED_NULL, "set_operand_value_from_memory: no memory")
        if offset < 0 or length < 0 or offset + length > memory.size:
            raise _bad(f"set_operand_value_from_memory: operand {index}: range [{offset}, "
                       f"{offset + length}) is outside the memory ({memory.size} bytes)")
        need = operand_byte_size(operand.type, operand.dimensions)
        if length != need:
            raise _bad(f"set_operand_value_from_memory: operand {index} needs {need} bytes, got {length}")
        self._memory_values[index] = (memory, offset, length)
        self._values.pop(index, None)
        operand.lifetime = L.CONSTANT_REFERENCE

    def set_operand_symm_per_channel_quant_params(self, index: int, scales, channel_dim: int) -> None:
        """Per-channel scales of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand (FL3)."""
        self._check_open("set_operand_symm_per_channel_quant_params")
        operand = self._operand(index, "set_operand_symm_per_channel_quant_params")
        if operand.type != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            raise _bad(f"operand {index} is {OperandType(operand.type).name}, not TENSOR_QUANT8_SYMM_PER_CHANNEL")
        operand.extra_params = SymmPerChannelQuantParams(tuple(float(s) for s in scales), int(channel_dim))

    def add_operation(self, operation_type: OperationType, inputs, outputs) -> None:
        """Add an operation reading ``inputs`` and writing ``outputs`` (operand indexes).

        Raises BAD_DATA for an unknown operation type or an operand index out of range (the
        operand types are checked against the operation table at :meth:`finish`).
        """
        self._check_open("add_operation")
        try:
            t = OperationType(operation_type)
        except ValueError:
            raise _bad(f"add_operation: {operation_type} is not an OperationType") from None
        where = f"add_operation {t.name} (operation {len(self._operations)})"
        for kind, idxs in (("input", inputs), ("output", outputs)):
            for j, i in enumerate(idxs):
                if not isinstance(i, (int, np.integer)) or not 0 <= i < len(self._operands):
                    raise _bad(f"{where}: {kind} {j} refers to operand {i}, which does not exist "
                               f"({len(self._operands)} operands)")
        self._operations.append(Operation(t, [int(i) for i in inputs], [int(i) for i in outputs]))

    def identify_inputs_and_outputs(self, inputs, outputs) -> None:
        """Declare the model's inputs and outputs (operand indexes, in execution order).
        Raises BAD_DATA for an index out of range or an operand that has a value."""
        self._check_open("identify_inputs_and_outputs")
        for kind, idxs, lt in (("input", inputs, L.SUBGRAPH_INPUT), ("output", outputs, L.SUBGRAPH_OUTPUT)):
            for j, i in enumerate(idxs):
                operand = self._operand(i, f"identify_inputs_and_outputs {kind} {j}")
                if operand.lifetime not in (L.TEMPORARY_VARIABLE, lt):
                    raise _bad(f"identify_inputs_and_outputs: {kind} {j} (operand {i}) has lifetime "
                               f"{L(operand.lifetime).name}; it cannot also be a model {kind}")
        for i in inputs:
            self._operands[i].lifetime = L.SUBGRAPH_INPUT
        for i in outputs:
            self._operands[i].lifetime = L.SUBGRAPH_OUTPUT
        self._inputs, self._outputs = [int(i) for i in inputs], [int(i) for i in outputs]

    def relax_computation_float32_to_float16(self, allow: bool) -> None:
        """Allow TENSOR_FLOAT32 to be computed with float16 range and precision (FL2)."""
        self._check_open("relax_computation_float32_to_float16")
        self._relaxed = bool(allow)

    # -- finish --------------------------------------------------------------------------
    def _run_order(self) -> list[Operation]:
        """Operations sorted so every operand is written before it is read (Kahn's algorithm).
        Raises BAD_DATA naming the operations on a cycle."""
        writer = {}
        for k, op in enumerate(self._operations):
            for o in op.outputs:
                writer.setdefault(o, k)
        deps = [{writer[i] for i in op.inputs if i in writer} for op in self._operations]
        order, done = [], set()
        ready = [k for k, d in enumerate(deps) if not d]
        users = {}
        for k, d in enumerate(deps):
            for w in d:
                users.setdefault(w, []).append(k)
        while ready:
            k = ready.pop(0)
            order.append(k)
            done.add(k)
            for u in users.get(k, []):
                if u not in done and deps[u] <= done and u not in ready:
                    ready.append(u)
        if len(order) != len(self._operations):
            stuck = [f"{k} ({self._operations[k].type.name})" for k in range(len(self._operations))
                     if k not in done]
            raise _bad(f"finish: the model contains a cycle through operations {', '.join(stuck)}")
        return [self._operations[k] for k in order]

    def _build_hal(self) -> HalModel:
        operands = [Operand(o.type, list(o.dimensions), 0, o.scale, o.zero_point, o.lifetime,
                            DataLocation(), o.extra_params) for o in self._operands]
        values, pool_bytes, pools, mem_pools = bytearray(), bytearray(), [], {}
        for i, raw in self._values.items():
            if operands[i].lifetime == L.CONSTANT_COPY:
                values.extend(b"\0" * (-len(values) % 8))
                operands[i].location = DataLocation(0, len(values), len(raw))
                values.extend(raw)
            else:
                pool_bytes.extend(b"\0" * (-len(pool_bytes) % 8))
                operands[i].location = DataLocation(0, len(pool_bytes), len(raw))
                pool_bytes.extend(raw)
        if pool_bytes:
            pools.append(SharedMemory(data=bytes(pool_bytes)))
        for i, (memory, offset, length) in self._memory_values.items():
            if id(memory) not in mem_pools:
                mem_pools[id(memory)] = len(pools)
                pools.append(memory.pool)
            operands[i].location = DataLocation(mem_pools[id(memory)], offset, length)
        operations = self._run_order()
        for op in operations:
            for i in op.inputs:
                operands[i].number_of_consumers += 1
        main = Subgraph(operands, [Operation(o.type, list(o.inputs), list(o.outputs)) for o in operations],
                        list(self._inputs), list(self._outputs))
        return HalModel(main, [], bytes(values), pools, self._relaxed)

    def finish(self) -> None:
        """Validate and freeze the model. Raises BAD_DATA with the culprit named (structure,
        operand ranges, cycle, operation signature or rule), BAD_STATE if already finished."""
        self._check_open("finish")
        if not self._outputs:
            raise _bad("finish: the model has no outputs (call identify_inputs_and_outputs)")
        hal = self._build_hal()
        try:
            validate_model(hal)
        except HalError as e:
            raise _bad(f"finish: {e.message}") from None
        self._hal = hal
        self._finished = True

    @property
    def finished(self) -> bool:
        return self._finished

    def to_hal(self) -> HalModel:
        """The HAL model (after :meth:`finish`); raises BAD_STATE before."""
        if self._hal is None:
            raise NnapiError(ResultCode.BAD_STATE, "the model is not finished")
        return self._hal

    @property
    def input_operands(self) -> list[Operand]:
        return [self._operands[i] for i in self._inputs]

    @property
    def output_operands(self) -> list[Operand]:
        return [self._operands[i] for i in self._outputs]
