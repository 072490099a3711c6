"""VTS loop timeouts and execution deadlines on an endless WHILE loop, and execution
deadlines on a long loop-free model, on every execution path (sync, async, fenced, burst,
reusable), straight on the driver's HAL.

HAL 1.3 / AIDL ``IPreparedModel`` (``loopTimeoutDuration``): "If a loop condition model
does not output false within this duration, the execution must be aborted"; AOSP
``TestControlFlow.InfiniteLoop`` expects ``MISSED_DEADLINE_TRANSIENT`` from such an
execution. An execution deadline (``deadline``) ends it with ``MISSED_DEADLINE_TRANSIENT``
or ``_PERSISTENT`` (HAL 1.3 ``ErrorStatus``), and a long model without any loop the same
way (HAL 1.3 ``IPreparedModel::executeSynchronously_1_3``: "If the deadline is missed during
execution, the driver may abort the execution and return MISSED_DEADLINE_*"; a driver that
aborts loops but not long models is inconsistent, and a deadline is only worth setting if
it is kept). Each test measures the time from the call to the error and allows the bound
plus :data:`SLACK_S`.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from harness.locations import CORPUS
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.testing.test_model import TestModel, TestOperation, load_spec
from runtime.types import ErrorStatus as E, MeasureTiming, OperationType
from vts.device_support import expect, records_fixture, skip, unsupported
from vts.hal_harness import L, MISSED_DEADLINE, PATHS, T, _model, execute, operand, prepare

_records = records_fixture("loop-timeout")

#: Loop timeouts tried (ns): 1 ms, 100 ms, 2 s (``LoopTimeoutDurationNs::DEFAULT``).
LOOP_TIMEOUTS_NS = (1_000_000, 100_000_000, 2_000_000_000)
#: Time allowed past the bound (seconds). The sample driver checks the clock once per loop
#: iteration (about 1 ms of Python); measured on 2 cores busy with a CTS run at -n 2, the
#: worst overshoot over every path and bound was 1.08 s (median 2-180 ms, 3 runs each).
SLACK_S = 2.0
#: ``LoopTimeoutDurationNs::MAXIMUM``: with it, only the deadline can end the loop.
MAX_LOOP_TIMEOUT_NS = 15_000_000_000
#: Deadlines tried (ns from the call).
DEADLINES_NS = (100_000_000, 500_000_000)
#: The vendored AOSP model ``while_infinite_loop`` (float32): ``i = 1; while i >= n: i += 1``
#: with n = 0, never ends.
ENDLESS_SPEC = CORPUS / "V1_3" / "while_infinite_loop.json.gz"
#: The long loop-free model: LONG_OPERATIONS chained ADDs on TENSOR_FLOAT32 [LONG_ELEMENTS]
#: (1 MiB each). The sample driver runs it in 0.1-0.5 s unloaded, 1-2 s on a loaded
#: machine; the deadline is LONG_DEADLINE_NS or a quarter of that time, the shorter.
LONG_OPERATIONS, LONG_ELEMENTS = 400, 1 << 18
LONG_DEADLINE_NS = 100_000_000
#: Below this time for the whole long model a deadline inside it cannot be measured (s).
MIN_LONG_S = 0.02


@pytest.fixture(scope="module")
def endless_model():
    tm = next(m for m in load_spec(ENDLESS_SPEC) if m.name == "while_infinite_loop")
    return tm, to_hal_model(tm)


@pytest.fixture
def endless(hal, endless_model):
    tm, model = endless_model
    reason = unsupported(hal, tm, model)
    if reason:
        skip(*reason)
    prepared = prepare(hal, model)
    expect(prepared, (E.NONE,), "prepare_model")
    return tm, prepared.value


def _timed(path, prepared, tm, wait_limit, deadline_ns=None, loop_timeout_ns=None):
    start = time.monotonic()
    run = execute(path, prepared, to_hal_request(tm), MeasureTiming.NO, deadline_ns, wait_limit,
                  loop_timeout_ns=loop_timeout_ns)
    return run, time.monotonic() - start


@pytest.mark.parametrize("timeout_ns", LOOP_TIMEOUTS_NS, ids=lambda t: f"loop{t // 1_000_000}ms")
@pytest.mark.parametrize("path", PATHS)
def test_loop_timeout_ends_an_endless_loop(endless, path, timeout_ns, wait_limit, request):
    """An endless WHILE with loop timeout ``timeout_ns`` ends with MISSED_DEADLINE_TRANSIENT
    no later than the timeout plus SLACK_S (AOSP ``TestControlFlow.InfiniteLoop``)."""
    tm, prepared = endless
    run, elapsed = _timed(path, prepared, tm, wait_limit, loop_timeout_ns=timeout_ns)
    request.node.user_properties.append(("elapsed_s", round(elapsed, 4)))
    expect(run, (E.MISSED_DEADLINE_TRANSIENT,), f"{path} execution of an endless loop, loop timeout "
                                                f"{timeout_ns / 1e6:g} ms")
    assert elapsed <= timeout_ns / 1e9 + SLACK_S, \
        f"{path}: MISSED_DEADLINE_TRANSIENT after {elapsed:.3f} s, loop timeout {timeout_ns / 1e9:g} s + {SLACK_S} s"


@pytest.mark.parametrize("budget_ns", DEADLINES_NS, ids=lambda t: f"deadline{t // 1_000_000}ms")
@pytest.mark.parametrize("path", PATHS)
def test_deadline_ends_a_long_loop(endless, path, budget_ns, wait_limit, request):
    """An endless WHILE under the maximum loop timeout (15 s) and an execution deadline
    ``budget_ns`` from now ends with MISSED_DEADLINE_* no later than the deadline plus
    SLACK_S (HAL 1.3 ``deadline``: the driver may abort once it is missed; with a loop that
    never ends it must, or the execution would never finish)."""
    tm, prepared = endless
    run, elapsed = _timed(path, prepared, tm, wait_limit, time.monotonic_ns() + budget_ns, MAX_LOOP_TIMEOUT_NS)
    request.node.user_properties.append(("elapsed_s", round(elapsed, 4)))
    expect(run, MISSED_DEADLINE, f"{path} execution of an endless loop, deadline in {budget_ns / 1e6:g} ms")
    assert elapsed <= budget_ns / 1e9 + SLACK_S, \
        f"{path}: {run.status.name} after {elapsed:.3f} s, deadline {budget_ns / 1e9:g} s + {SLACK_S} s"


def long_model(length: int = LONG_OPERATIONS, elements: int = LONG_ELEMENTS) -> TestModel:
    """``y_1 = x + x, y_(k+1) = y_k + x`` (ADD, FuseCode NONE) ``length`` times on
    TENSOR_FLOAT32 [``elements``], x all ones: no loop, ``length`` operations in a chain, so
    nothing can run before its predecessor. Expected output ``length + 1`` everywhere (by
    hand: each ADD adds one)."""
    operands = [operand(T.TENSOR_FLOAT32, (elements,), L.SUBGRAPH_INPUT, data=np.ones(elements), consumers=length + 1),
                operand(T.INT32, (), L.CONSTANT_COPY, data=0, consumers=length)]
    operations, current = [], 0
    for k in range(length):
        last = k == length - 1
        operands.append(operand(T.TENSOR_FLOAT32, (elements,), L.SUBGRAPH_OUTPUT if last else L.TEMPORARY_VARIABLE,
                                data=np.full(elements, length + 1.0) if last else None, consumers=0 if last else 1))
        operations.append(TestOperation(OperationType.ADD, [current, 0, 1], [len(operands) - 1]))
        current = len(operands) - 1
    return _model(f"add_chain_{length}x{elements}", operands, operations, [0], [current])


@pytest.fixture(scope="module")
def long_hal_model():
    tm = long_model()
    return tm, to_hal_model(tm), {}


@pytest.fixture
def long_prepared(hal, long_hal_model):
    """(test model, prepared model, seconds one execution without a deadline takes: measured
    once per driver object, the first time)."""
    tm, model, full_by_driver = long_hal_model
    reason = unsupported(hal, tm, model)
    if reason:
        skip(*reason)
    prepared = prepare(hal, model)
    expect(prepared, (E.NONE,), "prepare_model")
    if id(hal) not in full_by_driver:
        start = time.monotonic()
        run = execute("sync", prepared.value, to_hal_request(tm), MeasureTiming.NO, None)
        full_by_driver[id(hal)] = time.monotonic() - start
        expect(run, (E.NONE,), "sync execution of the long model without a deadline")
    return tm, prepared.value, full_by_driver[id(hal)]


@pytest.mark.parametrize("path", PATHS)
def test_deadline_ends_a_long_model(long_prepared, path, wait_limit, request):
    """A loop-free model of LONG_OPERATIONS chained ADDs under a deadline of LONG_DEADLINE_NS,
    or a quarter of what one execution without a deadline takes when that is shorter (so the
    deadline always falls inside the execution, on a fast machine too), ends with
    MISSED_DEADLINE_* no later than the deadline plus SLACK_S, as the endless loop does.
    Skipped (not applicable) only for a driver running the whole model in under
    MIN_LONG_S, where no deadline can fall inside it measurably."""
    tm, prepared, full = long_prepared
    if full < MIN_LONG_S:
        skip("not_applicable", f"the long model takes {full:.4f} s without a deadline on this driver: "
                               f"under {MIN_LONG_S} s, a deadline inside it cannot be measured")
    budget_ns = min(LONG_DEADLINE_NS, int(full * 1e9) // 4)
    run, elapsed = _timed(path, prepared, tm, wait_limit, time.monotonic_ns() + budget_ns)
    request.node.user_properties.append(("elapsed_s", round(elapsed, 4)))
    expect(run, MISSED_DEADLINE, f"{path} execution of a {LONG_OPERATIONS}-operation model, deadline in "
                                 f"{budget_ns / 1e6:g} ms (it takes {full:.3f} s without one)")
    assert elapsed <= budget_ns / 1e9 + SLACK_S, \
        f"{path}: {run.status.name} after {elapsed:.3f} s, deadline {budget_ns / 1e9:g} s + {SLACK_S} s"
