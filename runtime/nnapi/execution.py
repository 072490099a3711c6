"""Execution (``ANeuralNetworksExecution``): bind inputs and outputs, compute, read output
dimensions."""
from __future__ import annotations

import numpy as np

from ..errors import NnapiError
from ..hal.memory import SharedMemory
from ..hal.types import DataLocation, Request, RequestArgument
from ..hal.validate import operand_byte_size
from ..types import MeasureTiming, OperandType, ResultCode, is_tensor_type, operand_dtype
from .compilation import Compilation
from .device import driver_call


class Execution:
    """One execution of a finished :class:`Compilation`.

    ``set_input(i, value, dimensions=None)``: a numpy array / bytes, or None (omitted).
    ``set_output(i, buffer, dimensions=None)``: a writable numpy array or bytearray that
    receives the output bytes. ``compute()`` runs synchronously. Errors: BAD_DATA (bad index,
    size or dimensions), BAD_STATE (call order), OUTPUT_INSUFFICIENT_SIZE, OP_FAILED.
    """

    def __init__(self, compilation: Compilation):
        if not isinstance(compilation, Compilation) or not compilation.finished:
            raise NnapiError(ResultCode.BAD_STATE, "execution: the compilation is not finished")
        self.compilation = compilation
        model = compilation.model
        self._in_operands = model.input_operands
        self._out_operands = model.output_operands
        self._inputs: list[tuple[bytes | None, list[int]] | None] = [None] * len(self._in_operands)
        self._outputs: list[tuple[object, list[int]] | None] = [None] * len(self._out_operands)
        self._output_shapes = None
        self._computed = False

    def _dims(self, kind: str, index: int, operand, dimensions) -> list[int]:
        where = f"set_{kind}({index})"
        dims = list(operand.dimensions)
        if dimensions is None:
            return dims
        dimensions = [int(d) for d in dimensions]
        if not is_tensor_type(operand.type) and dimensions:
            raise NnapiError(ResultCode.BAD_DATA, f"{where}: a scalar operand takes no dimensions")
        if dims and len(dims) != len(dimensions):
            raise NnapiError(ResultCode.BAD_DATA, f"{where}: dimensions {dimensions} have rank "
                             f"{len(dimensions)}, the operand has rank {len(dims)}")
        if dims and any(d != 0 and d != n for d, n in zip(dims, dimensions)):
            raise NnapiError(ResultCode.BAD_DATA, f"{where}: dimensions {dimensions} contradict the "
                             f"operand's {dims}")
        return dimensions

    def _index(self, kind: str, index: int, count: int) -> None:
        if self._computed:
            raise NnapiError(ResultCode.BAD_STATE, f"set_{kind}: the execution has already run")
        if not isinstance(index, (int, np.integer)) or not 0 <= index < count:
            raise NnapiError(ResultCode.BAD_DATA, f"set_{kind}: {kind} {index} does not exist ({count} {kind}s)")

    def set_input(self, index: int, value, dimensions=None) -> None:
        """Bind model input ``index`` to ``value`` (None: omitted optional input)."""
        self._index("input", index, len(self._in_operands))
        operand = self._in_operands[index]
        if value is None:
            self._inputs[index] = (None, [])
            return
        dims = self._dims("input", index, operand, dimensions)
        if isinstance(value, np.ndarray) and dimensions is None and (not dims or 0 in dims):
            dims = list(value.shape)
        raw = bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else \
            np.ascontiguousarray(value, dtype=operand_dtype(operand.type)).tobytes()
        if is_tensor_type(operand.type) and (not dims or 0 in dims):
            raise NnapiError(ResultCode.BAD_DATA, f"set_input({index}): dimensions {dims} are not fully specified")
        need = operand_byte_size(operand.type, dims)
        if len(raw) != need:
            raise NnapiError(ResultCode.BAD_DATA, f"set_input({index}): {OperandType(operand.type).name}"
                             f"{dims} needs {need} bytes, got {len(raw)}")
        self._inputs[index] = (raw, dims)

    def set_output(self, index: int, buffer, dimensions=None) -> None:
        """Bind model output ``index`` to the writable ``buffer`` (numpy array or bytearray)."""
        self._index("output", index, len(self._out_operands))
        operand = self._out_operands[index]
        dims = self._dims("output", index, operand, dimensions)
        size = buffer.nbytes if isinstance(buffer, np.ndarray) else len(buffer)
        if dims and 0 not in dims or not is_tensor_type(operand.type):
            need = operand_byte_size(operand.type, dims)
            if size != need:
                raise NnapiError(ResultCode.BAD_DATA, f"set_output({index}): {OperandType(operand.type).name}"
                                 f"{dims} needs {need} bytes, buffer has {size}")
        self._outputs[index] = (buffer, dims if dimensions is not None else [])

    def _request(self) -> Request:
        for kind, args in (("input", self._inputs), ("output", self._outputs)):
            for j, a in enumerate(args):
                if a is None:
                    raise NnapiError(ResultCode.BAD_DATA, f"compute: {kind} {j} is not set")
        pools, inputs, outputs = [], [], []
        for raw, dims in self._inputs:
            if raw is None:
                inputs.append(RequestArgument(has_no_value=True))
                continue
            pools.append(SharedMemory(data=raw))
            inputs.append(RequestArgument(False, DataLocation(len(pools) - 1, 0, len(raw)), dims))
        for buffer, dims in self._outputs:
            size = buffer.nbytes if isinstance(buffer, np.ndarray) else len(buffer)
            pools.append(SharedMemory(size))
            outputs.append(RequestArgument(False, DataLocation(len(pools) - 1, 0, size), dims))
        return Request(inputs, outputs, pools)

    def compute(self, measure: bool = False) -> None:
        """Run synchronously; outputs land in the bound buffers. Raises NnapiError."""
        if self._computed:
            raise NnapiError(ResultCode.BAD_STATE, "compute: the execution has already run")
        request = self._request()
        prepared = self.compilation.prepared
        name = self.compilation.device.name
        self._computed = True
        try:
            with driver_call(f"{name}: execute"):
                shapes, _timing = prepared.execute_synchronously(
                    request, MeasureTiming.YES if measure else MeasureTiming.NO)
        except NnapiError as e:
            if e.code == ResultCode.OUTPUT_INSUFFICIENT_SIZE:
                cause = e.__cause__ or e.__context__
                self._output_shapes = getattr(cause, "output_shapes", None)
            raise
        if len(shapes) != len(self._outputs):
            raise NnapiError(ResultCode.OP_FAILED, f"{name}: execute returned {len(shapes)} output "
                             f"shapes for {len(self._outputs)} outputs")
        self._output_shapes = shapes
        for (buffer, _), arg in zip(self._outputs, request.outputs):
            pool = request.pools[arg.location.pool_index]
            view = buffer.reshape(-1).view(np.uint8) if isinstance(buffer, np.ndarray) else memoryview(buffer)
            view[:] = np.frombuffer(pool.buffer, np.uint8) if isinstance(buffer, np.ndarray) else pool.buffer

    def get_output_operand_dimensions(self, index: int) -> list[int]:
        """Actual dimensions of output ``index`` after compute (BAD_STATE before)."""
        if self._output_shapes is None:
            raise NnapiError(ResultCode.BAD_STATE, "get_output_operand_dimensions: not computed")
        if not 0 <= index < len(self._output_shapes):
            raise NnapiError(ResultCode.BAD_DATA, f"output {index} does not exist")
        return list(self._output_shapes[index].dimensions)

    def get_output_operand_rank(self, index: int) -> int:
        return len(self.get_output_operand_dimensions(index))
