"""Execution (``ANeuralNetworksExecution``): bind inputs and outputs (user buffers or memory
objects), compute synchronously, asynchronously (:class:`Event`), with dependencies
(fenced) or in a :class:`Burst`, and read output dimensions and durations.

Errors are NnapiError: BAD_DATA (bad index, size, dimensions, or a call the compilation
does not allow), BAD_STATE (call order), OUTPUT_INSUFFICIENT_SIZE, OP_FAILED,
MISSED_DEADLINE_*, UNAVAILABLE_DEVICE.
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass

import numpy as np

from ..errors import HalError, NnapiError
from ..hal.memory import SharedMemory
from ..hal.sync import ExecutionCallback
from ..hal.types import DataLocation, OutputShape, Request, RequestArgument, Timing
from ..hal.validate import operand_byte_size
from ..extension_types import is_extension_type, is_tensor_operand_type, type_name
from ..ops.control_flow import LOOP_TIMEOUT_DEFAULT_NS, LOOP_TIMEOUT_MAXIMUM_NS
from ..types import (NO_TIMING, RESULT_CODE_OF_ERROR_STATUS, DurationCode, ErrorStatus, MeasureTiming,
                     ResultCode, operand_dtype)
from .burst import Burst
from .compilation import Compilation
from .device import driver_call
from .event import Event



def get_default_loop_timeout() -> int:
    """The loop timeout of an execution that sets none, in ns (2 s;
    ``ANeuralNetworks_getDefaultLoopTimeout``, FL4)."""
    return LOOP_TIMEOUT_DEFAULT_NS


def get_maximum_loop_timeout() -> int:
    """The largest loop timeout :meth:`Execution.set_loop_timeout` keeps, in ns (15 s;
    ``ANeuralNetworks_getMaximumLoopTimeout``, FL4)."""
    return LOOP_TIMEOUT_MAXIMUM_NS


class _State(enum.Enum):
    PREPARATION = 0
    COMPUTING = 1
    COMPLETED = 2


@dataclass
class _Arg:
    """A bound argument: user ``buffer`` (numpy array / bytes-like) or ``memory`` + offset
    + length; ``dims`` refine the operand's dimensions ([] = as declared); ``omitted`` for
    an input with no value."""

    buffer: object = None
    memory: object = None
    offset: int = 0
    length: int = 0
    dims: list | None = None
    omitted: bool = False


def _nbytes(buffer) -> int:
    return buffer.nbytes if isinstance(buffer, np.ndarray) else len(buffer)


class Execution:
    """One execution of a finished :class:`Compilation` (see module docstring)."""

    def __init__(self, compilation: Compilation):
        if not isinstance(compilation, Compilation) or not compilation.finished:
            raise NnapiError(ResultCode.BAD_STATE, "execution: the compilation is not finished")
        self.compilation = compilation
        model = compilation.model
        self._in_operands = model.input_operands
        self._out_operands = model.output_operands
        self._inputs: list[_Arg | None] = [None] * len(self._in_operands)
        self._outputs: list[_Arg | None] = [None] * len(self._out_operands)
        self._state = _State.PREPARATION
        self._reusable = False
        self._padding = False
        self._measure = False
        self._timeout_ns: int | None = None
        self._loop_timeout_ns = LOOP_TIMEOUT_DEFAULT_NS
        self._output_shapes: list[OutputShape] | None = None
        self._timing = Timing()
        self._fenced_timing = Timing()
        self._was_fenced = False
        self._computed_once = False

    # -- settings ------------------------------------------------------------------------
    def _check_preparation(self, call: str) -> None:
        if self._state == _State.COMPUTING:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: the execution is running")
        if self._computed_once and not self._reusable:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: the execution has already run")
        if self._computed_once:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: a reusable execution cannot be changed after compute")

    def _single_device(self, call: str) -> None:
        c = self.compilation
        if not (c.explicit and len(c.devices) == 1 and c.device is not None):
            raise NnapiError(ResultCode.BAD_DATA,
                             f"{call}: only for a compilation created for exactly one device")

    def set_reusable(self, reusable: bool) -> None:
        """Allow computing this execution more than once (FL5)."""
        self._check_preparation("set_reusable")
        self._reusable = bool(reusable)

    def set_measure_timing(self, measure: bool) -> None:
        """Measure durations (FL3); single-device compilations only (BAD_DATA otherwise)."""
        self._check_preparation("set_measure_timing")
        self._single_device("set_measure_timing")
        self._measure = bool(measure)

    def set_timeout(self, duration_ns: int) -> None:
        """Abort when not done within ``duration_ns`` (0 = no timeout), giving
        MISSED_DEADLINE_*; single-device compilations only (FL4)."""
        self._check_preparation("set_timeout")
        self._single_device("set_timeout")
        if duration_ns < 0:
            raise NnapiError(ResultCode.BAD_DATA, f"set_timeout: {duration_ns} is negative")
        self._timeout_ns = duration_ns or None

    def set_loop_timeout(self, duration_ns: int) -> None:
        """Bound each WHILE loop to ``duration_ns`` (clamped to :func:`get_maximum_loop_timeout`,
        15 s; default :func:`get_default_loop_timeout`, 2 s), FL4
        (``ANeuralNetworksExecution_setLoopTimeout``). It reaches the driver as
        ``loop_timeout_duration_ns`` on every path (sync, async, burst, fenced); a loop running
        past it ends the computation with MISSED_DEADLINE_TRANSIENT. BAD_DATA if negative."""
        self._check_preparation("set_loop_timeout")
        if duration_ns < 0:
            raise NnapiError(ResultCode.BAD_DATA, f"set_loop_timeout: {duration_ns} is negative")
        self._loop_timeout_ns = min(duration_ns, LOOP_TIMEOUT_MAXIMUM_NS)

    def enable_input_and_output_padding(self, enable: bool) -> None:
        """Let buffers be longer than the operand's size (FL5); before any set_input/set_output."""
        self._check_preparation("enable_input_and_output_padding")
        if any(a is not None for a in self._inputs + self._outputs):
            raise NnapiError(ResultCode.BAD_STATE, "enable_input_and_output_padding: arguments already set")
        self._padding = bool(enable)

    # -- arguments -------------------------------------------------------------------------
    def _operand(self, kind: str, index: int):
        operands = self._in_operands if kind == "input" else self._out_operands
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(operands):
            raise NnapiError(ResultCode.BAD_DATA, f"set_{kind}: {kind} {index} does not exist "
                             f"({len(operands)} {kind}s)")
        return operands[index]

    def _dims(self, kind: str, index: int, operand, dimensions) -> list[int]:
        where = f"set_{kind}({index})"
        declared = list(operand.dimensions)
        if dimensions is None:
            return declared
        dims = [int(d) for d in dimensions]
        if is_tensor_operand_type(operand.type) is False and dims:
            raise NnapiError(ResultCode.BAD_DATA, f"{where}: a scalar operand takes no dimensions")
        if declared and len(declared) != len(dims):
            raise NnapiError(ResultCode.BAD_DATA, f"{where}: dimensions {dims} have rank {len(dims)}, "
                             f"the operand has rank {len(declared)}")
        if declared and any(d != 0 and d != n for d, n in zip(declared, dims)):
            raise NnapiError(ResultCode.BAD_DATA, f"{where}: dimensions {dims} contradict the operand's {declared}")
        if kind == "input" and any(d == 0 for d in dims):
            raise NnapiError(ResultCode.BAD_DATA, f"{where}: input dimensions {dims} must be fully specified")
        return dims

    def _check_length(self, kind: str, index: int, operand, dims, length: int) -> None:
        tensor = is_tensor_operand_type(operand.type)
        if tensor is None:  # an extension type the runtime cannot size
            return
        known = not tensor or (dims and 0 not in dims)
        if kind == "input" and not known:
            raise NnapiError(ResultCode.BAD_DATA, f"set_input({index}): dimensions {dims} are not fully specified")
        if not known:
            return
        need = operand_byte_size(operand.type, dims)
        ok = length >= need if self._padding else length == need
        if not ok:
            raise NnapiError(ResultCode.BAD_DATA, f"set_{kind}({index}): {type_name(operand.type)}"
                             f"{dims} needs {need} bytes, got {length}")

    def set_input(self, index: int, value, dimensions=None) -> None:
        """Bind input ``index`` to ``value`` (numpy array or bytes; None: omitted optional
        input). A numpy array gives the dimensions of an operand declared with unknown ones.
        A bytearray is read when the execution computes (NNAPI reads the buffer then, so a
        reusable execution sees the contents of each compute); other values are copied now."""
        self._check_preparation("set_input")
        operand = self._operand("input", index)
        if value is None:
            self._inputs[index] = _Arg(omitted=True)
            return
        dims = self._dims("input", index, operand, dimensions)
        if isinstance(value, np.ndarray) and dimensions is None and is_tensor_operand_type(operand.type) \
                and (not dims or 0 in dims):
            dims = list(value.shape)
        if isinstance(value, np.ndarray):
            dtype = None if is_extension_type(operand.type) else operand_dtype(operand.type)
            value = np.ascontiguousarray(value, dtype=dtype)
        raw = value if isinstance(value, bytearray) else bytes(value) if not isinstance(value, np.ndarray) \
            else value.tobytes()
        self._check_length("input", index, operand, dims, len(raw))
        self._inputs[index] = _Arg(buffer=raw, dims=dims if dimensions is not None or dims != list(operand.dimensions) else None)

    def set_output(self, index: int, buffer, dimensions=None) -> None:
        """Bind output ``index`` to the writable ``buffer`` (numpy array or bytearray)."""
        self._check_preparation("set_output")
        operand = self._operand("output", index)
        dims = self._dims("output", index, operand, dimensions)
        self._check_length("output", index, operand, dims, _nbytes(buffer))
        self._outputs[index] = _Arg(buffer=buffer, dims=None if dimensions is None else dims)

    def _set_from_memory(self, kind: str, index, memory, offset, length, dimensions) -> _Arg:
        self._check_preparation(f"set_{kind}_from_memory")
        operand = self._operand(kind, index)
        dims = self._dims(kind, index, operand, dimensions)
        memory.check_argument(self.compilation, kind, index, offset, length)
        if not getattr(memory, "is_from_desc", False):
            self._check_length(kind, index, operand, dims, length)
        return _Arg(memory=memory, offset=offset, length=length,
                    dims=None if dimensions is None else dims)

    def set_input_from_memory(self, index: int, memory, offset: int, length: int, dimensions=None) -> None:
        """Bind input ``index`` to ``length`` bytes of ``memory`` at ``offset`` (0, 0 for a
        memory created from a descriptor)."""
        self._inputs[index] = self._set_from_memory("input", index, memory, offset, length, dimensions)

    def set_output_from_memory(self, index: int, memory, offset: int, length: int, dimensions=None) -> None:
        """Bind output ``index`` to ``length`` bytes of ``memory`` at ``offset``."""
        self._outputs[index] = self._set_from_memory("output", index, memory, offset, length, dimensions)

    # -- request -------------------------------------------------------------------------
    def _request(self, burst: Burst | None = None) -> tuple[Request, list[int]]:
        """The HAL request and, per pool, its burst memory token (-1 for runtime pools)."""
        for kind, args in (("input", self._inputs), ("output", self._outputs)):
            for j, a in enumerate(args):
                if a is None:
                    raise NnapiError(ResultCode.BAD_DATA, f"compute: {kind} {j} is not set")
        pools, tokens, pool_of = [], [], {}
        device = self.compilation.device

        def location(a: _Arg) -> DataLocation:
            pool, offset, length = a.memory.request_location(device, a.offset, a.length)
            if id(a.memory) not in pool_of:
                pool_of[id(a.memory)] = len(pools)
                pools.append(pool)
                tokens.append(burst.token_for(a.memory) if burst else -1)
            return DataLocation(pool_of[id(a.memory)], offset, length)

        def runtime_pool(data: bytes | None, size: int) -> int:
            pools.append(SharedMemory(data=data) if data is not None else SharedMemory(size))
            tokens.append(-1)
            return len(pools) - 1

        inputs, outputs = [], []
        for j, a in enumerate(self._inputs):
            if a.omitted:
                inputs.append(RequestArgument(has_no_value=True))
            elif a.memory is not None:
                if getattr(a.memory, "is_from_desc", False) and not a.memory.initialized:
                    raise NnapiError(ResultCode.BAD_DATA, f"compute: input {j} reads a memory that was never written")
                inputs.append(RequestArgument(False, location(a), a.dims or []))
            else:
                inputs.append(RequestArgument(False, DataLocation(runtime_pool(a.buffer, 0), 0, len(a.buffer)),
                                              a.dims or []))
        for a in self._outputs:
            if a.memory is not None:
                outputs.append(RequestArgument(False, location(a), a.dims or []))
            else:
                size = _nbytes(a.buffer)  # the pool starts as the user's buffer: bytes a driver leaves stay
                current = np.ascontiguousarray(a.buffer).tobytes() if isinstance(a.buffer, np.ndarray) \
                    else bytes(a.buffer)
                outputs.append(RequestArgument(False, DataLocation(runtime_pool(current, size), 0, size),
                                               a.dims or []))
        return Request(inputs, outputs, pools), tokens

    def _deadline(self) -> int | None:
        return None if self._timeout_ns is None else time.monotonic_ns() + self._timeout_ns

    def _begin(self, call: str, burst: Burst | None = None) -> tuple[Request, list[int]]:
        """Build the request (and the burst's driver object), then enter the COMPUTING
        state; returns (request, burst memory tokens). Raises NnapiError (BAD_STATE,
        BAD_DATA) leaving the state unchanged."""
        if self._state == _State.COMPUTING:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: the execution is already running")
        if self._computed_once and not self._reusable:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: the execution has already run")
        request = self._request(burst)
        if burst is not None:
            burst.hal_burst()
        self._state = _State.COMPUTING
        self._output_shapes = None
        self._timing, self._fenced_timing, self._was_fenced = Timing(), Timing(), False
        return request

    def _abandon(self) -> None:
        """The driver refused to start: the execution is over (not reusable until rebound)."""
        self._state = _State.COMPLETED
        self._computed_once = True

    def _device_name(self) -> str:
        return self.compilation.device.name if self.compilation.device else "partitioned plan"

    def _launch(self, call: str, start):
        """``start()`` (the driver's asynchronous launch, HAL method ``call``) under
        :func:`driver_call`; its result. When the driver refuses, the execution is abandoned
        and the NnapiError raised."""
        try:
            with driver_call(f"{self._device_name()}: {call}"):
                return start()
        except NnapiError:
            self._abandon()
            raise

    def _await(self, wait, limit: float, never: str) -> None:
        """``wait(limit)`` (a callback's or a sync fence's); when it gives False the driver never
        completed: the execution is abandoned and OP_FAILED raised, saying ``never``."""
        if not wait(limit):
            self._abandon()
            raise NnapiError(ResultCode.OP_FAILED, f"{self._device_name()}: {never} (waited {limit} s)")

    def _finish(self, request: Request, status: ErrorStatus, shapes, timing: Timing, message: str) -> None:
        """Judge the driver's result: check shapes, copy outputs back, set state. Raises."""
        self._state = _State.COMPLETED
        self._computed_once = True
        name = self._device_name()
        if status != ErrorStatus.NONE:  # a failed execution leaves descriptor outputs unwritten
            for arg in self._outputs:
                if arg.memory is not None and getattr(arg.memory, "is_from_desc", False):
                    arg.memory.mark_initialized(False)
        if status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
            self._output_shapes = list(shapes) if shapes and len(shapes) == len(self._outputs) else None
            raise NnapiError(ResultCode.OUTPUT_INSUFFICIENT_SIZE, f"{name}: execute: {message}")
        if status != ErrorStatus.NONE:
            code = RESULT_CODE_OF_ERROR_STATUS.get(status, ResultCode.OP_FAILED)
            raise NnapiError(code, f"{name}: execute: {status.name}: {message}")
        if shapes is None or len(shapes) != len(self._outputs):
            raise NnapiError(ResultCode.OP_FAILED, f"{name}: execute returned "
                             f"{0 if shapes is None else len(shapes)} output shapes for {len(self._outputs)} outputs")
        for j, (shape, operand, arg) in enumerate(zip(shapes, self._out_operands, self._outputs)):
            declared = arg.dims or list(operand.dimensions)
            dims = list(shape.dimensions)
            if declared and (len(dims) != len(declared) or any(d not in (0, s) for d, s in zip(declared, dims))):
                raise NnapiError(ResultCode.OP_FAILED, f"{name}: driver reported output {j} shape {dims}, "
                                 f"contradicting the declared {declared}")
            if not shape.is_sufficient:
                raise NnapiError(ResultCode.OP_FAILED, f"{name}: driver returned success with output {j} "
                                 f"marked insufficient")
        if self._measure and timing.time_on_device != NO_TIMING and timing.time_in_driver != NO_TIMING \
                and timing.time_on_device > timing.time_in_driver:
            timing = Timing()  # inconsistent figures are not reported (AOSP runtime)
        self._timing = timing if self._measure else Timing()
        self._output_shapes = list(shapes)
        for arg, hal_arg in zip(self._outputs, request.outputs):
            if arg.memory is not None:
                if getattr(arg.memory, "is_from_desc", False):
                    arg.memory.mark_initialized(True)
                continue
            pool = request.pools[hal_arg.location.pool_index]
            dst = arg.buffer.reshape(-1).view(np.uint8) if isinstance(arg.buffer, np.ndarray) else memoryview(arg.buffer)
            src = np.frombuffer(pool.buffer, np.uint8)
            if isinstance(arg.buffer, np.ndarray):
                dst[:] = src[:dst.size]
            else:
                dst[:] = pool.buffer[:len(dst)]

    def _measure_flag(self) -> MeasureTiming:
        return MeasureTiming.YES if self._measure else MeasureTiming.NO

    def _run_sync(self, call, request: Request) -> None:
        try:
            shapes, timing = call()
            status, message = ErrorStatus.NONE, ""
        except HalError as e:
            status, shapes, timing, message = e.status, e.output_shapes, Timing(), e.message
        except Exception as e:  # noqa: BLE001 - driver code
            status, shapes, timing, message = (ErrorStatus.GENERAL_FAILURE, None, Timing(),
                                               f"driver raised {type(e).__name__}: {e}")
        if status == ErrorStatus.GENERAL_FAILURE and self.compilation.can_fall_back():
            try:
                prepared = self.compilation.cpu_fallback()
                shapes, timing = prepared.execute_synchronously(request, self._measure_flag(), self._deadline(),
                                                                self._loop_timeout_ns)
                status, message = ErrorStatus.NONE, ""
            except HalError as e:
                status, shapes, message = e.status, e.output_shapes, f"CPU fallback: {e.message}"
        self._finish(request, status, shapes, timing, message)

    # -- computing -------------------------------------------------------------------------
    def compute(self) -> None:
        """Run synchronously; outputs land in the bound buffers/memories. Raises NnapiError."""
        request, _ = self._begin("compute")
        prepared = self.compilation.prepared
        self._run_sync(lambda: prepared.execute_synchronously(
            request, self._measure_flag(), self._deadline(), self._loop_timeout_ns), request)

    def burst_compute(self, burst: Burst) -> None:
        """Run synchronously in ``burst`` (same compilation, FL3). Raises NnapiError."""
        if not isinstance(burst, Burst) or burst.compilation is not self.compilation:
            raise NnapiError(ResultCode.BAD_DATA, "burst_compute: the burst belongs to another compilation")
        request, tokens = self._begin("burst_compute", burst)
        hal_burst = burst.hal_burst()
        self._run_sync(lambda: hal_burst.execute_synchronously(
            request, tokens, self._measure_flag(), self._deadline(), self._loop_timeout_ns), request)

    def start_compute(self) -> Event:
        """Start asynchronously; returns an :class:`Event` whose ``wait`` gives the result.
        A driver that never completes makes ``wait`` fail (OP_FAILED) after its limit."""
        request, _ = self._begin("start_compute")
        callback = ExecutionCallback()
        prepared = self.compilation.prepared
        self._launch("execute_asynchronously", lambda: prepared.execute_asynchronously(
            request, self._measure_flag(), self._deadline(), self._loop_timeout_ns, callback))

        def wait(limit: float) -> None:
            self._await(callback.wait, limit, "the driver never notified the execution callback")
            self._finish(request, callback.status, callback.output_shapes, callback.timing, callback.message)
        return Event(wait)

    def start_compute_with_dependencies(self, dependencies: list[Event], duration_ns: int = 0) -> Event:
        """Start once every event in ``dependencies`` completed (fenced execution, FL4);
        ``duration_ns`` (0 = none) bounds the run after that. Single-device compilations
        only, fully specified outputs only (BAD_DATA otherwise)."""
        self._single_device("start_compute_with_dependencies")
        if duration_ns < 0:
            raise NnapiError(ResultCode.BAD_DATA, "start_compute_with_dependencies: negative duration")
        for j, (arg, operand) in enumerate(zip(self._outputs, self._out_operands)):
            dims = (arg.dims if arg and arg.dims else list(operand.dimensions))
            if is_tensor_operand_type(operand.type) and (not dims or 0 in dims):
                raise NnapiError(ResultCode.BAD_DATA, f"start_compute_with_dependencies: output {j} "
                                 f"dimensions {dims} are not fully specified")
        fences = []
        for e in dependencies:
            if not isinstance(e, Event):
                raise NnapiError(ResultCode.BAD_DATA, "start_compute_with_dependencies: not an Event")
            fences.append(e.sync_fence)
        request, _ = self._begin("start_compute_with_dependencies")
        prepared = self.compilation.prepared
        fence, callback = self._launch("execute_fenced", lambda: prepared.execute_fenced(
            request, fences, self._measure_flag(), self._deadline(), self._loop_timeout_ns, duration_ns or None))

        def wait(limit: float) -> None:
            self._await(fence.wait, limit, "the execution's sync fence was not signaled")
            launched, fenced, status = callback.get_execution_info()
            if fence.status not in (None, ErrorStatus.NONE) and status == ErrorStatus.NONE:
                status = fence.status
            shapes = [OutputShape(list(a.dims or o.dimensions)) for a, o in zip(self._outputs, self._out_operands)]
            self._finish(request, status, shapes, launched, "fenced execution failed")
            self._was_fenced = True
            if self._measure:
                self._fenced_timing = fenced
        return Event(wait)

    # -- results ---------------------------------------------------------------------------
    def get_output_operand_dimensions(self, index: int) -> list[int]:
        """Actual dimensions of output ``index`` after compute (also after
        OUTPUT_INSUFFICIENT_SIZE); BAD_STATE before."""
        if self._output_shapes is None:
            raise NnapiError(ResultCode.BAD_STATE, "get_output_operand_dimensions: no completed execution")
        if not 0 <= index < len(self._output_shapes):
            raise NnapiError(ResultCode.BAD_DATA, f"output {index} does not exist")
        return list(self._output_shapes[index].dimensions)

    def get_output_operand_rank(self, index: int) -> int:
        return len(self.get_output_operand_dimensions(index))

    def get_duration(self, code: DurationCode) -> int:
        """Duration in nanoseconds of the last completed execution for ``code``; UINT64_MAX
        when not measured or not reported (FL3). BAD_STATE before completion."""
        if self._state != _State.COMPLETED or not self._computed_once:
            raise NnapiError(ResultCode.BAD_STATE, "get_duration: the execution has not completed")
        try:
            code = DurationCode(code)
        except ValueError:
            raise NnapiError(ResultCode.BAD_DATA, f"get_duration: {code} is not a DurationCode") from None
        if not self._measure:
            return NO_TIMING
        if code == DurationCode.ON_HARDWARE:
            return self._timing.time_on_device
        if code == DurationCode.IN_DRIVER:
            return self._timing.time_in_driver
        if not self._was_fenced:
            return NO_TIMING
        return self._fenced_timing.time_on_device if code == DurationCode.FENCED_ON_HARDWARE \
            else self._fenced_timing.time_in_driver
