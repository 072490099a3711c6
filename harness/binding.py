"""How the CTS binds a test model's inputs and outputs to executions, per memory mode: user
buffers, shared memory objects, or driver memory created from a memory descriptor. One
:class:`Binding` serves every execution of a mode, so modes that reuse objects (a burst, a
reusable execution, shared memories) run over the same buffers and memories each time."""
from __future__ import annotations

import numpy as np

from runtime.nnapi import Execution, Memory
from runtime.nnapi.memory import MemoryDesc
from runtime.testing.hal_convert import expected_output_size
from runtime.testing.test_model import TestModel
from runtime.types import OperandType, operand_dtype

ALIGN = 64
#: What every output holds before each execution (user buffers, memory objects and driver
#: memories), so a driver that reports success without writing an output fails: 0x7F bytes
#: are 3.4e38 in float32, NaN in float16, 127 in 8-bit types, never a plausible all-zero result.
POISON = 0x7F


def input_bytes(tm: TestModel) -> list[bytes | None]:
    """The raw bytes of each main input's example value (None: an omitted input)."""
    out = []
    for idx in tm.main.input_indexes:
        o = tm.main.operands[idx]
        out.append(None if o.data is None else np.ascontiguousarray(o.data, operand_dtype(o.type)).tobytes())
    return out


def output_sizes(tm: TestModel, insufficient: bool) -> list[int]:
    """Bytes per output buffer; with ``insufficient`` the first output of more than one byte
    is one byte short (AOSP ``makeOutputInsufficientSize``; a memory argument cannot be 0
    bytes long)."""
    sizes = [expected_output_size(tm, j) for j in range(len(tm.main.output_indexes))]
    if insufficient:
        for j in range(len(sizes)):
            if sizes[j] > 1:
                sizes[j] -= 1
                break
    return sizes


def _poisoned(size: int) -> bytes:
    return bytes([POISON]) * size


#: Output types whose values :func:`poison_for` sets element by element away from the
#: expected ones (the plain pattern could be a right answer there: 0x7F is "true" in a
#: TENSOR_BOOL8, 127 is within one quantum of a saturated or zero-point 8-bit output).
_INTEGRAL = {OperandType.TENSOR_BOOL8, OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
             OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT16_ASYMM, OperandType.TENSOR_QUANT16_SYMM,
             OperandType.TENSOR_INT32}


def poison_for(tm: TestModel, j: int, size: int) -> bytes:
    """The poison for output ``j`` of ``tm`` in a buffer of ``size`` bytes: for boolean,
    quantized and int32 outputs whose expected values fill the buffer exactly, each element
    set far from its expected value (false where true is expected, else true; integers
    moved by half their type's range), so that an output the driver never writes fails the
    comparison on every element; otherwise :data:`POISON` bytes (3.4e38 in float32, NaN in
    float16)."""
    operand = tm.main.operands[tm.main.output_indexes[j]]
    expected = operand.data
    if operand.type not in _INTEGRAL or expected is None or expected.nbytes != size or not size:
        return _poisoned(size)
    dtype = operand_dtype(operand.type)
    values = np.ascontiguousarray(expected, dtype)
    if operand.type == OperandType.TENSOR_BOOL8:
        return np.where(values == 0, 1, 0).astype(dtype).tobytes()
    half = np.int64(1) << (8 * values.itemsize - 1)
    info = np.iinfo(dtype)
    moved = values.astype(np.int64) + np.where(values.astype(np.int64) < info.min + half, half, -half)
    return moved.astype(dtype).tobytes()


class Binding:
    """Storage for the arguments of test model ``tm`` on ``compilation`` in ``memory_mode``
    (``buffer``: bytearrays; ``memory``: one shared Memory for the inputs and one for the
    outputs, 64-byte aligned; ``device``: one Memory from a descriptor per argument, filled
    with ``Memory.copy``). Use: :meth:`attach` to an Execution, :meth:`poison` before each
    compute, :meth:`load` to change the input values, :meth:`read` the outputs afterwards.
    Raises NnapiError when the runtime or driver refuses a memory."""

    def __init__(self, compilation, tm: TestModel, memory_mode: str, insufficient: bool = False):
        if memory_mode not in ("buffer", "memory", "device"):
            raise ValueError(f"unknown memory mode {memory_mode!r}")
        self.mode = memory_mode
        inputs = input_bytes(tm)
        self.sizes = output_sizes(tm, insufficient)
        self.in_dims = [None if raw is None else list(tm.main.operands[i].data.shape)
                        for raw, i in zip(inputs, tm.main.input_indexes)]
        self.in_sizes = [None if raw is None else len(raw) for raw in inputs]
        if memory_mode == "buffer":
            self.in_bufs = [None if raw is None else bytearray(raw) for raw in inputs]
            self.out_bufs = [bytearray(s) for s in self.sizes]
        elif memory_mode == "memory":
            self.in_off, blob = [], bytearray()
            for raw in inputs:
                blob.extend(b"\0" * (-len(blob) % ALIGN))
                self.in_off.append(len(blob))
                blob.extend(raw or b"")
            self.out_off, total = [], 0
            for s in self.sizes:
                total += -total % ALIGN
                self.out_off.append(total)
                total += s
            self.in_mem, self.out_mem = Memory.from_bytes(bytes(blob) or b"\0"), Memory(max(total, 1))
        else:
            self.dev_in = [None if raw is None else self._device_memory(compilation, "input", j)
                           for j, raw in enumerate(inputs)]
            self.dev_out = [self._device_memory(compilation, "output", j) for j in range(len(self.sizes))]
            self.load_bytes(inputs)

    @staticmethod
    def _device_memory(compilation, role: str, j: int) -> Memory:
        desc = MemoryDesc()
        (desc.add_input_role if role == "input" else desc.add_output_role)(compilation, j, 1.0)
        desc.finish()
        return Memory.from_desc(desc)

    def load(self, tm: TestModel) -> None:
        """Write ``tm``'s input values (same shapes as the bound model's) into the storage."""
        self.load_bytes(input_bytes(tm))

    def load_bytes(self, inputs: list[bytes | None]) -> None:
        """Write raw input values into the storage, in place (the same objects stay bound)."""
        for j, raw in enumerate(inputs):
            if raw is None:
                continue
            if len(raw) != self.in_sizes[j]:
                raise ValueError(f"input {j}: {len(raw)} bytes, the binding holds {self.in_sizes[j]}")
            if self.mode == "buffer":
                self.in_bufs[j][:] = raw
            elif self.mode == "memory":
                self.in_mem.pool.buffer[self.in_off[j]:self.in_off[j] + len(raw)] = raw
            else:
                Memory.copy(Memory.from_bytes(raw), self.dev_in[j])

    def poison(self, tm: TestModel | None = None) -> None:
        """Fill every output with poison (:func:`poison_for` ``tm``, the model whose
        expected outputs this run is judged against; :data:`POISON` bytes without it);
        driver memories through ``Memory.copy`` from a poisoned host memory (NNAPI lets any
        memory from a descriptor be a copy's destination, whatever its roles; zero-byte
        outputs are left alone)."""
        for j, s in enumerate(self.sizes):
            poison = _poisoned(s) if tm is None else poison_for(tm, j, s)
            if self.mode == "buffer":
                self.out_bufs[j][:] = poison
            elif self.mode == "memory":
                self.out_mem.pool.buffer[self.out_off[j]:self.out_off[j] + s] = poison
            elif self.dev_out[j].logical_size == s:
                Memory.copy(Memory.from_bytes(poison), self.dev_out[j])

    def attach(self, execution: Execution) -> None:
        """Set every input and output of ``execution`` to this storage."""
        for j, size in enumerate(self.in_sizes):
            if size is None:
                execution.set_input(j, None)
            elif self.mode == "buffer":
                execution.set_input(j, self.in_bufs[j], self.in_dims[j])
            elif self.mode == "memory":
                execution.set_input_from_memory(j, self.in_mem, self.in_off[j], size, self.in_dims[j])
            else:
                execution.set_input_from_memory(j, self.dev_in[j], 0, 0)
        for j, s in enumerate(self.sizes):
            if self.mode == "buffer":
                execution.set_output(j, self.out_bufs[j])
            elif self.mode == "memory":
                execution.set_output_from_memory(j, self.out_mem, self.out_off[j], s)
            else:
                execution.set_output_from_memory(j, self.dev_out[j], 0, 0)

    def read(self) -> list[bytes]:
        """Each output's bytes after a compute (driver memories copied out to host memory)."""
        if self.mode == "buffer":
            return [bytes(b) for b in self.out_bufs]
        if self.mode == "memory":
            return [bytes(self.out_mem.pool.buffer[o:o + s]) for o, s in zip(self.out_off, self.sizes)]
        result = []
        for mem, s in zip(self.dev_out, self.sizes):
            host = Memory(s)
            Memory.copy(mem, host)
            result.append(bytes(host.pool.buffer[:s]))
        return result
