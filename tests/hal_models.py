"""Hand-written HAL models for the driver tests: :class:`Net` builds a one-subgraph HAL
model, :func:`run` prepares and executes it on a HAL device through shared memory (used by
the onnxruntime and LiteRT driver tests)."""
from __future__ import annotations

import numpy as np

from runtime.hal.memory import SharedMemory
from runtime.hal.types import DataLocation, Model, Operand, Operation, Request, RequestArgument, Subgraph
from runtime.types import MeasureTiming, OperandLifeTime as L, operand_dtype


class Net:
    """A one-subgraph HAL model written by hand: ``tensor``/``scalar`` add operands
    (constants when given a value), ``op`` adds an operation."""

    def __init__(self):
        self.operands: list[Operand] = []
        self.values = bytearray()
        self.operations: list[Operation] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def _add(self, t, dims, value=None, lifetime=L.TEMPORARY_VARIABLE) -> int:
        loc = DataLocation()
        if value is not None:
            raw = np.asarray(value, operand_dtype(t)).tobytes()
            self.values.extend(b"\0" * (-len(self.values) % 8))
            loc = DataLocation(0, len(self.values), len(raw))
            self.values.extend(raw)
            lifetime = L.CONSTANT_COPY
        self.operands.append(Operand(t, list(dims), 0, lifetime=lifetime, location=loc))
        return len(self.operands) - 1

    def input(self, t, dims) -> int:
        i = self._add(t, dims, lifetime=L.SUBGRAPH_INPUT)
        self.inputs.append(i)
        return i

    def output(self, t, dims) -> int:
        i = self._add(t, dims, lifetime=L.SUBGRAPH_OUTPUT)
        self.outputs.append(i)
        return i

    def const(self, t, dims, value) -> int:
        return self._add(t, dims, value)

    def scalar(self, t, value) -> int:
        return self._add(t, [], value)

    def op(self, op_type, inputs, outputs) -> None:
        self.operations.append(Operation(op_type, list(inputs), list(outputs)))
        for i in inputs:
            self.operands[i].number_of_consumers += 1

    def model(self) -> Model:
        return Model(Subgraph(self.operands, self.operations, self.inputs, self.outputs), [],
                     bytes(self.values), [])


def run(device, model: Model, inputs: list[np.ndarray], out_bytes: list[int] | None = None,
        measure=MeasureTiming.NO):
    """Prepare and execute; returns (outputs as arrays of the output operands' dtypes,
    shapes, timing). ``out_bytes`` sizes the output regions (default: the data's size)."""
    prepared = device.prepare_model(model)
    sg = model.main
    data = b"".join(np.ascontiguousarray(x).tobytes() for x in inputs)
    in_pool = SharedMemory(data=data)
    args, off = [], 0
    for x in inputs:
        args.append(RequestArgument(location=DataLocation(0, off, x.nbytes)))
        off += x.nbytes
    if out_bytes is None:
        out_bytes = [int(np.prod(sg.operands[i].dimensions)) * operand_dtype(sg.operands[i].type).itemsize
                     for i in sg.output_indexes]
    out_pool = SharedMemory(size=sum(out_bytes))
    outs, off = [], 0
    for n in out_bytes:
        outs.append(RequestArgument(location=DataLocation(1, off, n)))
        off += n
    shapes, timing = prepared.execute_synchronously(Request(args, outs, [in_pool, out_pool]), measure)
    results, off = [], 0
    for i, n, s in zip(sg.output_indexes, out_bytes, shapes):
        dtype = operand_dtype(sg.operands[i].type)
        count = int(np.prod(s.dimensions)) if s.dimensions else 1
        results.append(np.frombuffer(bytes(out_pool.buffer[off:off + n]), dtype, count).reshape(s.dimensions))
        off += n
    return results, shapes, timing
