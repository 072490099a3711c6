"""Helpers of the VTS: drive a driver's HAL objects (``IDevice``, ``IPreparedModel``,
``IBurst``, ``IExecution``, ``IBuffer``) directly, without the front end, and judge what
they return.

* :func:`hal_call` turns a HAL call into a :class:`Call` (status, value, message); an
  exception other than :class:`runtime.errors.HalError` escaping the driver is a crash and
  raises :class:`DriverCrash` (the VTS never counts a crash as a rejection).
* :func:`execute` runs one request on one execution path (``sync``, ``async``, ``fenced``,
  ``burst``, ``reusable``) and returns a :class:`Run`; :func:`path_runs` is the sequence of
  executions the generated tests make per path (AOSP ``GeneratedTestHarness``
  ``EvaluatePreparedModel``), and :func:`check_run` judges one of them.
* Model builders mirror the synthetic models of AOSP's VTS: :func:`conv_model` and
  :func:`single_add_model` (``MemoryDomainTests``), :func:`chain_model`
  (``CompilationCachingTests`` ``createLargeTestModel``).

Deadlines are absolute ``time.monotonic_ns()`` values (None: no deadline), as in
:mod:`runtime.hal.interfaces`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from harness.binding import POISON, poison_for
from runtime.errors import HalError
from runtime.hal.memory import SharedMemory
from runtime.hal.sync import ExecutionCallback, SyncFence
from runtime.hal.types import OutputShape, Request, Timing
from runtime.testing.criteria import judge
from runtime.testing.hal_convert import to_hal_request
from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import (NO_TIMING, ErrorStatus, MeasureTiming, OperandLifeTime, OperandType,
                           OperationType, PreferenceCode, PriorityCode, is_float_type, operand_dtype)

L = OperandLifeTime
T = OperandType

#: Execution paths of the generated tests, in the order items are generated.
PATHS = ("sync", "async", "fenced", "burst", "reusable")
#: Longest wait for an asynchronous callback or a sync fence by default (seconds).
WAIT_LIMIT_S = 30.0
#: AOSP ``QualityOfServiceTests`` ``kShortDuration``.
SHORT_DEADLINE_NS = 5_000_000
#: A deadline no execution reaches (AOSP's ``steady_clock::time_point::max()``).
UNLIMITED_DEADLINE_NS = 2**63 - 1
MISSED_DEADLINE = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)


class VtsFailure(AssertionError):
    """The driver broke a HAL contract the harness itself checks (a lost callback, a fence
    never signaled, a malformed return value)."""


class DriverCrash(VtsFailure):
    """An exception other than HalError escaped the driver."""


@dataclass
class Call:
    """Outcome of one HAL call: ``status`` NONE with the call's ``value``, or the
    HalError's status and message."""

    status: ErrorStatus
    value: object = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == ErrorStatus.NONE

    def describe(self) -> str:
        return self.status.name + (f" ({self.message})" if self.message else "")


def hal_call(what: str, fn, *args, **kwargs) -> Call:
    """Call ``fn(*args, **kwargs)``; a HalError becomes its status, any other exception
    raises :class:`DriverCrash` naming ``what``."""
    try:
        return Call(ErrorStatus.NONE, fn(*args, **kwargs))
    except HalError as e:
        return Call(e.status, None, e.message)
    except Exception as e:  # noqa: BLE001 - driver code
        raise DriverCrash(f"{what}: the driver crashed ({type(e).__name__}: {e})") from e


def status_name(status) -> str:
    return getattr(status, "name", str(status))


# -- preparation -----------------------------------------------------------------------------
def supported_operations(device, model) -> Call:
    """``get_supported_operations`` with its result checked: one bool per main operation
    (VtsFailure otherwise)."""
    call = hal_call("get_supported_operations", device.get_supported_operations, model)
    if call.ok:
        value = call.value
        if not isinstance(value, (list, tuple)) or len(value) != len(model.main.operations):
            raise VtsFailure(f"get_supported_operations returned {value!r} for a model of "
                             f"{len(model.main.operations)} operations (one bool per operation expected)")
        if not all(isinstance(v, (bool, np.bool_)) for v in value):
            raise VtsFailure(f"get_supported_operations returned non-bool values {value!r}")
    return call


def prepare(device, model, preference=PreferenceCode.FAST_SINGLE_ANSWER, priority=PriorityCode.MEDIUM,
            deadline_ns=None, model_cache=None, data_cache=None, token=None) -> Call:
    """``prepare_model``; VtsFailure when it returns NONE without a prepared model."""
    call = hal_call("prepare_model", device.prepare_model, model, preference, priority, deadline_ns,
                    model_cache, data_cache, token)
    if call.ok and call.value is None:
        raise VtsFailure("prepare_model succeeded but returned no prepared model")
    return call


def prepare_from_cache(device, model_cache, data_cache, token, deadline_ns=None) -> Call:
    """``prepare_model_from_cache``; VtsFailure when it returns NONE without a prepared model."""
    call = hal_call("prepare_model_from_cache", device.prepare_model_from_cache, deadline_ns,
                    model_cache, data_cache, token)
    if call.ok and call.value is None:
        raise VtsFailure("prepare_model_from_cache succeeded but returned no prepared model")
    return call


# -- execution -------------------------------------------------------------------------------
@dataclass
class Run:
    """One execution: its status (NONE or an error), the output shapes the path reports
    (None for fenced executions, which report none), timing and message; ``fence`` and
    ``timing_fenced`` for fenced executions."""

    label: str
    status: ErrorStatus
    measure: MeasureTiming = MeasureTiming.NO
    shapes: list | None = None
    timing: Timing = field(default_factory=Timing)
    message: str = ""
    fence: SyncFence | None = None
    timing_fenced: Timing | None = None
    #: The test model whose inputs and expected values this run has (None: the original).
    model: TestModel | None = None

    def describe(self) -> str:
        return f"{self.label}: {status_name(self.status)}" + (f" ({self.message})" if self.message else "")


def _sync_result(label, measure, call: Call) -> Run:
    if not call.ok:
        return Run(label, call.status, measure, message=call.message)
    value = call.value
    if not isinstance(value, tuple) or len(value) != 2:
        raise VtsFailure(f"{label}: expected (output shapes, timing), the driver returned {value!r}")
    shapes, timing = value
    return Run(label, ErrorStatus.NONE, measure, list(shapes or []), timing or Timing())


def execute_sync(prepared, request, measure=MeasureTiming.NO, deadline_ns=None, label="sync",
                 loop_timeout_ns=None) -> Run:
    """``execute_synchronously`` (``loop_timeout_ns`` None: the driver's default)."""
    return _sync_result(label, measure, hal_call(label, prepared.execute_synchronously, request, measure,
                                                 deadline_ns, loop_timeout_ns))


def execute_async(prepared, request, measure=MeasureTiming.NO, deadline_ns=None,
                  wait_limit_s=WAIT_LIMIT_S, label="async", loop_timeout_ns=None) -> Run:
    """``execute_asynchronously`` with an ExecutionCallback waited on for ``wait_limit_s``;
    VtsFailure when it is never notified."""
    callback = ExecutionCallback()
    call = hal_call(label, prepared.execute_asynchronously, request, measure, deadline_ns, loop_timeout_ns,
                    callback)
    if not call.ok:
        return Run(label, call.status, measure, message=call.message)
    if not callback.wait(wait_limit_s):
        raise VtsFailure(f"{label}: the execution callback was never notified (waited {wait_limit_s} s)")
    if callback.status != ErrorStatus.NONE:
        return Run(label, callback.status, measure, message=callback.message)
    return Run(label, ErrorStatus.NONE, measure, list(callback.output_shapes), callback.timing)


def execute_fenced(prepared, request, wait_for=(), measure=MeasureTiming.NO, deadline_ns=None,
                   wait_limit_s=WAIT_LIMIT_S, duration_ns=None, label="fenced", loop_timeout_ns=None) -> Run:
    """``execute_fenced``; waits for the returned fence (VtsFailure when it is not signaled
    within ``wait_limit_s``), then reads the callback's execution info. An error is the
    call's HalError, the fence's status or the callback's status."""
    call = hal_call(label, prepared.execute_fenced, request, list(wait_for), measure, deadline_ns,
                    loop_timeout_ns, duration_ns)
    if not call.ok:
        return Run(label, call.status, measure, message=call.message)
    value = call.value
    if not isinstance(value, tuple) or len(value) != 2 or not isinstance(value[0], SyncFence):
        raise VtsFailure(f"{label}: expected (SyncFence, callback), the driver returned {value!r}")
    fence, callback = value
    if not fence.wait(wait_limit_s):
        raise VtsFailure(f"{label}: the returned sync fence was not signaled within {wait_limit_s} s")
    if callback is None:
        raise VtsFailure(f"{label}: no FencedExecutionCallback returned")
    info = hal_call(f"{label}: get_execution_info", callback.get_execution_info)
    if not info.ok:
        return Run(label, info.status, measure, message=info.message, fence=fence)
    launched, fenced, status = info.value
    if status == ErrorStatus.NONE and fence.status not in (None, ErrorStatus.NONE):
        status = fence.status
    return Run(label, ErrorStatus(status), measure, None, launched or Timing(), fence=fence,
               timing_fenced=fenced or Timing())


def execute_burst(burst, request, tokens, measure=MeasureTiming.NO, deadline_ns=None, label="burst",
                  loop_timeout_ns=None) -> Run:
    """``IBurst.execute_synchronously`` with one memory identifier token per pool."""
    return _sync_result(label, measure, hal_call(label, burst.execute_synchronously, request, list(tokens),
                                                 measure, deadline_ns, loop_timeout_ns))


def execute_reusable(execution, measure, deadline_ns=None, label="reusable") -> Run:
    return _sync_result(label, measure, hal_call(label, execution.execute_synchronously, deadline_ns))


def execute(path: str, prepared, request, measure=MeasureTiming.NO, deadline_ns=None,
            wait_limit_s=WAIT_LIMIT_S, loop_timeout_ns=None) -> Run:
    """One execution of ``request`` on ``path`` (a burst uses tokens -1, as AOSP's
    ``MemoryDomainTests`` and ``QualityOfServiceTests`` do; a reusable execution is created
    and computed once), each WHILE bounded by ``loop_timeout_ns`` (None: the driver's
    default)."""
    if path == "sync":
        return execute_sync(prepared, request, measure, deadline_ns, loop_timeout_ns=loop_timeout_ns)
    if path == "async":
        return execute_async(prepared, request, measure, deadline_ns, wait_limit_s, loop_timeout_ns=loop_timeout_ns)
    if path == "fenced":
        return execute_fenced(prepared, request, (), measure, deadline_ns, wait_limit_s,
                              loop_timeout_ns=loop_timeout_ns)
    if path == "burst":
        burst = hal_call("configure_execution_burst", prepared.configure_execution_burst)
        if not burst.ok:
            return Run("burst", burst.status, measure, message=burst.message)
        return execute_burst(burst.value, request, [-1] * len(request.pools), measure, deadline_ns,
                             loop_timeout_ns=loop_timeout_ns)
    if path == "reusable":
        created = hal_call("create_reusable_execution", prepared.create_reusable_execution, request,
                           measure, loop_timeout_ns)
        if not created.ok:
            return Run("reusable", created.status, measure, message=created.message)
        return execute_reusable(created.value, measure, deadline_ns)
    raise ValueError(f"unknown execution path {path!r}; paths: {', '.join(PATHS)}")


def poison_outputs(request: Request, tm: TestModel | None = None) -> None:
    """Fill every output argument's bytes in its shared-memory pool with poison (so a driver
    that does not write an output, or replays an earlier execution's, fails): given ``tm``,
    the model the run is judged against, :func:`harness.binding.poison_for` (boolean, quantized
    and int32 outputs element by element away from the expected values), else
    :data:`harness.binding.POISON` bytes."""
    for j, arg in enumerate(request.outputs):
        if arg.has_no_value:
            continue
        pool = request.pools[arg.location.pool_index]
        if isinstance(pool, SharedMemory):
            loc = arg.location
            pool.buffer[loc.offset:loc.offset + loc.length] = \
                bytes([POISON]) * loc.length if tm is None else poison_for(tm, j, loc.length)


def _inputs_of(request: Request, tm: TestModel | None, original: bytes) -> None:
    """Write ``tm``'s input values (None: the ``original`` bytes) into input pool 0."""
    request.pools[0].buffer[:] = original if tm is None else to_hal_request(tm).pools[0].buffer


def path_runs(path: str, prepared, request: Request, wait_limit_s: float = WAIT_LIMIT_S,
              changed: TestModel | None = None, model: TestModel | None = None):
    """Yield each :class:`Run` the generated tests make on ``path`` (outputs poisoned before
    each; read them before resuming the generator):

    * ``sync``: ``execute_synchronously`` without, then with timing measured;
    * ``async``: ``execute_asynchronously`` (ExecutionCallback) without, then with timing;
    * ``fenced``: ``execute_fenced`` with no dependencies, then waiting for the first
      execution's (already signaled) fence, with timing (AOSP ``GeneratedTestHarness``);
    * ``burst``: one IBurst, executions giving each pool a token (0, 1, ...) over the same
      memories, then every token released;
    * ``reusable``: one IExecution (timing measured) computed several times.

    A burst and a reusable execution run twice; given ``changed`` (the model with other
    input values, same shapes: :func:`harness.changed_inputs.changed_inputs`) three times:
    example inputs, ``changed``'s written into the same input pool (``Run.model`` is then
    ``changed``), example inputs again. Outputs are poisoned against ``model`` (the model
    of ``request``'s example inputs) or ``changed`` (:func:`poison_outputs`). Stops after the
    first run that fails."""
    no, yes = MeasureTiming.NO, MeasureTiming.YES
    original = bytes(request.pools[0].buffer) if request.pools else b""
    inputs = [None, None] if changed is None else [None, changed, None]
    if path in ("sync", "async"):
        for k, measure in enumerate((no, yes)):
            poison_outputs(request, model)
            run = execute(path, prepared, request, measure, None, wait_limit_s)
            run.label = f"{path} run {k + 1} (measure {measure.name})"
            yield run
            if run.status != ErrorStatus.NONE:
                return
    elif path == "fenced":
        poison_outputs(request, model)
        first = execute_fenced(prepared, request, (), no, None, wait_limit_s,
                               label="fenced run 1 (no dependencies)")
        yield first
        if first.status != ErrorStatus.NONE:
            return
        poison_outputs(request, model)
        yield execute_fenced(prepared, request, [first.fence], yes, None, wait_limit_s,
                             label="fenced run 2 (waiting for run 1's signaled fence, measure YES)")
    elif path == "burst":
        created = hal_call("configure_execution_burst", prepared.configure_execution_burst)
        if not created.ok:
            yield Run("configure_execution_burst", created.status, message=created.message)
            return
        burst = created.value
        tokens = list(range(len(request.pools)))
        for k, tm in enumerate(inputs):
            measure = yes if k else no
            _inputs_of(request, tm, original)
            poison_outputs(request, tm or model)
            run = execute_burst(burst, request, tokens, measure, None,
                                label=f"burst run {k + 1}{' (changed inputs)' * bool(tm)} (memory tokens "
                                      f"{tokens}, measure {measure.name})")
            run.model = tm
            yield run
            if run.status != ErrorStatus.NONE:
                return
        for token in tokens:
            released = hal_call("IBurst.release_memory_resource", burst.release_memory_resource, token)
            if not released.ok:
                yield Run(f"release_memory_resource({token})", released.status, message=released.message)
                return
    elif path == "reusable":
        created = hal_call("create_reusable_execution", prepared.create_reusable_execution, request, yes, None)
        if not created.ok:
            yield Run("create_reusable_execution", created.status, yes, message=created.message)
            return
        for k, tm in enumerate(inputs):
            _inputs_of(request, tm, original)
            poison_outputs(request, tm or model)
            run = execute_reusable(created.value, yes, None, label=f"reusable compute {k + 1}"
                                                                   f"{' (changed inputs)' * bool(tm)} (measure YES)")
            run.model = tm
            yield run
            if run.status != ErrorStatus.NONE:
                return
    else:
        raise ValueError(f"unknown execution path {path!r}; paths: {', '.join(PATHS)}")


# -- judging ---------------------------------------------------------------------------------
def timing_problems(run: Run) -> list[str]:
    """AOSP's timing rules: without measurement the timing must be unmeasured (UINT64_MAX);
    with it, time on device must not exceed time in driver when both are reported."""
    problems = []
    for what, timing in (("timing", run.timing), ("fenced timing", run.timing_fenced)):
        if timing is None:
            continue
        if run.measure == MeasureTiming.NO:
            if (timing.time_on_device, timing.time_in_driver) != (NO_TIMING, NO_TIMING):
                problems.append(f"{run.label}: {what} was not requested but reported "
                                f"({timing.time_on_device}, {timing.time_in_driver})")
        elif NO_TIMING not in (timing.time_on_device, timing.time_in_driver) and \
                timing.time_on_device > timing.time_in_driver:
            problems.append(f"{run.label}: {what} on device {timing.time_on_device} ns exceeds time in "
                            f"driver {timing.time_in_driver} ns")
    return problems


def output_bytes(request: Request) -> list[bytes]:
    """The bytes of each output argument of ``request`` (shared-memory pools)."""
    out = []
    for arg in request.outputs:
        pool = request.pools[arg.location.pool_index]
        loc = arg.location
        out.append(bytes(pool.buffer[loc.offset:loc.offset + loc.length]) if hasattr(pool, "buffer") else b"")
    return out


def check_run(tm: TestModel, request: Request, run: Run) -> list[str]:
    """Problems with a run of ``tm`` that had to succeed: its status, its timing, its output
    shapes (none, or one per output, each sufficient: AOSP) and its results against the
    NNAPI criteria (:func:`runtime.testing.criteria.judge`; ``run.model``'s expected values
    when the run had changed inputs). A fenced run reports no shapes: the request's output
    dimensions are used, else the model's."""
    tm = run.model or tm
    if run.status != ErrorStatus.NONE:
        return [run.describe()]
    problems = timing_problems(run)
    n = len(tm.main.output_indexes)
    declared = [list(arg.dimensions) or list(tm.main.operands[i].dimensions)
                for arg, i in zip(request.outputs, tm.main.output_indexes)]
    dims = declared
    if run.shapes is not None:
        if len(run.shapes) not in (0, n):
            return problems + [f"{run.label}: {len(run.shapes)} output shapes for {n} outputs"]
        for j, shape in enumerate(run.shapes):
            if not isinstance(shape, OutputShape):
                return problems + [f"{run.label}: output shape {j} is {shape!r}, not an OutputShape"]
            if not shape.is_sufficient:
                problems.append(f"{run.label}: output {j} reported insufficient with a large enough buffer")
        if run.shapes:
            dims = [list(s.dimensions) for s in run.shapes]
    problems += [f"{run.label}: {p}" for p in judge(tm, output_bytes(request), dims)]
    return problems


def evaluate_prepared(prepared, tm: TestModel, paths=("sync", "burst"), wait_limit_s=WAIT_LIMIT_S) -> list[str]:
    """Problems running ``tm`` on ``prepared`` through ``paths`` (AOSP
    ``EvaluatePreparedModel`` with TestKind GENERAL: sync and burst)."""
    problems = []
    for path in paths:
        request = to_hal_request(tm)
        for run in path_runs(path, prepared, request, wait_limit_s, model=tm):
            problems += check_run(tm, request, run)
    return problems


def deadline(bound: str | None) -> int | None:
    """An absolute deadline: ``now``, ``short`` (now + 5 ms), ``unlimited`` (INT64_MAX) or
    None (no deadline)."""
    now = time.monotonic_ns()
    return {"now": now, "short": now + SHORT_DEADLINE_NS, "unlimited": UNLIMITED_DEADLINE_NS,
            None: None}[bound]


# -- synthetic models --------------------------------------------------------------------------
def operand(type_, dims=(), lifetime=L.TEMPORARY_VARIABLE, scale=0.0, zero_point=0, data=None,
            consumers=0) -> TestOperand:
    """A corpus-style operand (data converted to the operand type's dtype and shaped)."""
    if data is not None:
        data = np.asarray(data, dtype=operand_dtype(type_)).reshape(tuple(dims))
    return TestOperand(T(type_), list(dims), float(scale), int(zero_point), lifetime, consumers, False,
                       None, data)


def scalar_i32(value: int) -> TestOperand:
    return operand(T.INT32, (), L.CONSTANT_COPY, data=value, consumers=1)


def _model(name, operands, operations, inputs, outputs) -> TestModel:
    return TestModel(name, "vts", "synthetic", "UNKNOWN", False, False, 0.0,
                     TestSubgraph(operands, operations, inputs, outputs))


def _zeros(type_, dims) -> np.ndarray:
    return np.zeros(tuple(dims), operand_dtype(type_))


#: AOSP MemoryDomainTests operand for each tested type: (scale, zero point); float types 0/0.
MEMORY_DOMAIN_QUANT = {T.TENSOR_QUANT8_ASYMM: (0.5, 0), T.TENSOR_QUANT8_ASYMM_SIGNED: (0.5, 0)}


def io_operand(type_, dims, scale=None, zero_point=None) -> TestOperand:
    """The SUBGRAPH_INPUT operand of the memory-domain models (quantized: scale 0.5)."""
    s, z = MEMORY_DOMAIN_QUANT.get(T(type_), (0.0, 0))
    return operand(type_, dims, L.SUBGRAPH_INPUT, s if scale is None else scale,
                   z if zero_point is None else zero_point, consumers=1)


def conv_model(io: TestOperand, num_operations: int = 1) -> TestModel:
    """AOSP ``createConvModel``: ``num_operations`` independent CONV_2D (3x3 filter, SAME
    padding, stride 1, no activation) whose input and output operands both look like
    ``io`` (NHWC, output dims = input dims); model inputs and outputs are one per
    operation. Constant filter and bias are zeros (values do not matter here)."""
    channels = io.dimensions[3]
    is_float = is_float_type(io.type)
    operands, operations, inputs, outputs = [], [], [], []
    for _ in range(num_operations):
        base = len(operands)
        w = operand(io.type, (channels, 3, 3, channels), L.CONSTANT_COPY, 0.0 if is_float else 1.0, 0,
                    _zeros(io.type, (channels, 3, 3, channels)), 1)
        bias_type = io.type if is_float else T.TENSOR_INT32
        b = operand(bias_type, (channels,), L.CONSTANT_COPY, 0.0 if is_float else io.scale * w.scale, 0,
                    _zeros(bias_type, (channels,)), 1)
        x = TestOperand(io.type, list(io.dimensions), io.scale, io.zero_point, L.SUBGRAPH_INPUT, 1, False,
                        None, None)
        y = TestOperand(io.type, list(io.dimensions), io.scale, io.zero_point, L.SUBGRAPH_OUTPUT, 0, False,
                        None, None)
        operands += [x, w, b, scalar_i32(1), scalar_i32(1), scalar_i32(1), scalar_i32(0), y]
        operations.append(TestOperation(OperationType.CONV_2D, list(range(base, base + 7)), [base + 7]))
        inputs.append(base)
        outputs.append(base + 7)
    return _model(f"conv_{T(io.type).name.lower()}_x{num_operations}", operands, operations, inputs, outputs)


def single_add_model(io: TestOperand) -> TestModel:
    """AOSP ``createSingleAddModel``: ADD(in0, in1, activation) with both tensor inputs and
    the output like ``io`` and the activation a third (INT32 scalar) model input."""
    x0 = TestOperand(io.type, list(io.dimensions), io.scale, io.zero_point, L.SUBGRAPH_INPUT, 1, False, None, None)
    x1 = TestOperand(io.type, list(io.dimensions), io.scale, io.zero_point, L.SUBGRAPH_INPUT, 1, False, None, None)
    act = operand(T.INT32, (), L.SUBGRAPH_INPUT, consumers=1)
    y = TestOperand(io.type, list(io.dimensions), io.scale, io.zero_point, L.SUBGRAPH_OUTPUT, 0, False, None, None)
    return _model(f"add_{T(io.type).name.lower()}", [x0, x1, act, y],
                  [TestOperation(OperationType.ADD, [0, 1, 2], [3])], [0, 1, 2], [3])


def chain_model(op: OperationType, length: int, type_: OperandType = T.TENSOR_FLOAT32) -> TestModel:
    """AOSP ``createLargeTestModel``: ``length`` chained ADD (or MUL) operations on [1]
    tensors, each with a constant second operand of logical value 1 and one shared
    activation scalar (0). Input 1; output ``length + 1`` for ADD, 1 for MUL. Types:
    TENSOR_FLOAT32 or TENSOR_QUANT8_ASYMM (scale 1; MUL's constant has scale 0.5, value 2)."""
    is_float = type_ == T.TENSOR_FLOAT32
    if is_float:
        value, scale1, scale2 = 1.0, 0.0, 0.0
    elif op == OperationType.ADD:
        value, scale1, scale2 = 1, 1.0, 1.0
    else:
        value, scale1, scale2 = 2, 1.0, 0.5
    operands = [operand(T.INT32, (), L.CONSTANT_COPY, data=0, consumers=length)]
    operations = []
    for i in range(length):
        first = len(operands)
        operands.append(operand(type_, (1,), L.SUBGRAPH_INPUT if i == 0 else L.TEMPORARY_VARIABLE, scale1, 0,
                                [1] if i == 0 else None, 1))
        operands.append(operand(type_, (1,), L.CONSTANT_COPY, scale2, 0, [value], 1))
        operations.append(TestOperation(op, [first, first + 1, 0], [first + 2]))
    result = length + 1 if op == OperationType.ADD else 1
    operands.append(operand(type_, (1,), L.SUBGRAPH_OUTPUT, scale1, 0, [result], 0))
    return _model(f"{op.name.lower()}_chain_{length}_{'float32' if is_float else 'quant8'}", operands,
                  operations, [1], [len(operands) - 1])
