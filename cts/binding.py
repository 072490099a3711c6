"""How the CTS binds a test model's inputs and outputs to an execution, per memory mode:
user buffers, shared memory objects, or driver memory created from a memory descriptor."""
from __future__ import annotations

from typing import Callable

import numpy as np

from runtime.nnapi import Execution, Memory
from runtime.testing.hal_convert import expected_output_size
from runtime.testing.test_model import TestModel
from runtime.types import operand_dtype

ALIGN = 64
#: What every output buffer holds before each execution (user buffers and memory objects), so
#: a driver that reports success without writing an output fails: 0x7F bytes are 3.4e38 in
#: float32, NaN in float16, 127 in 8-bit types, never a plausible all-zero result.
POISON = 0x7F


def _input_bytes(tm: TestModel) -> list[bytes | None]:
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


def _dims(tm: TestModel, j: int, data) -> list[int] | None:
    return None if data is None else list(tm.main.operands[tm.main.input_indexes[j]].data.shape)


def bind(execution: Execution, tm: TestModel, memory_mode: str, insufficient: bool = False,
         shared: dict | None = None) -> Callable[[], list[bytes]]:
    """Bind every input and output of ``tm`` on ``execution``, output buffers and memories
    filled with :data:`POISON`; returns a function reading the output bytes after compute.
    ``shared`` (a dict) keeps memory objects between calls so several executions (a burst)
    reuse the same memories."""
    shared = {} if shared is None else shared
    inputs = _input_bytes(tm)
    sizes = output_sizes(tm, insufficient)
    if memory_mode == "buffer":
        for j, raw in enumerate(inputs):
            execution.set_input(j, raw, _dims(tm, j, raw))
        buffers = [bytearray(bytes([POISON]) * s) for s in sizes]
        for j, b in enumerate(buffers):
            execution.set_output(j, b)
        return lambda: [bytes(b) for b in buffers]
    if memory_mode == "memory":
        if "in" not in shared:
            offsets, blob = [], bytearray()
            for raw in inputs:
                blob.extend(b"\0" * (-len(blob) % ALIGN))
                offsets.append(len(blob))
                blob.extend(raw or b"")
            out_offsets, total = [], 0
            for s in sizes:
                total += -total % ALIGN
                out_offsets.append(total)
                total += s
            shared.update({"in": Memory.from_bytes(bytes(blob) or b"\0"), "in_off": offsets,
                           "out": Memory(max(total, 1)), "out_off": out_offsets})
        for j, raw in enumerate(inputs):
            if raw is None:
                execution.set_input(j, None)
            else:
                execution.set_input_from_memory(j, shared["in"], shared["in_off"][j], len(raw), _dims(tm, j, raw))
        for j, s in enumerate(sizes):
            offset = shared["out_off"][j]
            shared["out"].pool.buffer[offset:offset + s] = bytes([POISON]) * s
            execution.set_output_from_memory(j, shared["out"], offset, s)
        out, offs = shared["out"], shared["out_off"]
        return lambda: [bytes(out.pool.buffer[o:o + s]) for o, s in zip(offs, sizes)]
    if memory_mode == "device":
        from runtime.nnapi.memory import MemoryDesc
        compilation = execution.compilation
        if "dev_in" not in shared:
            dev_in, dev_out = [], []
            for j, raw in enumerate(inputs):
                if raw is None:
                    dev_in.append(None)
                    continue
                desc = MemoryDesc()
                desc.add_input_role(compilation, j, 1.0)
                desc.finish()
                mem = Memory.from_desc(desc)
                Memory.copy(Memory.from_bytes(raw), mem)
                dev_in.append(mem)
            for j in range(len(sizes)):
                desc = MemoryDesc()
                desc.add_output_role(compilation, j, 1.0)
                desc.finish()
                dev_out.append(Memory.from_desc(desc))
            shared.update({"dev_in": dev_in, "dev_out": dev_out})
        for j, mem in enumerate(shared["dev_in"]):
            if mem is None:
                execution.set_input(j, None)
            else:
                execution.set_input_from_memory(j, mem, 0, 0)
        for j, mem in enumerate(shared["dev_out"]):
            execution.set_output_from_memory(j, mem, 0, 0)

        def read() -> list[bytes]:
            result = []
            for mem, s in zip(shared["dev_out"], sizes):
                host = Memory(s)
                Memory.copy(mem, host)
                result.append(bytes(host.pool.buffer[:s]))
            return result
        return read
    raise ValueError(f"unknown memory mode {memory_mode!r}")
