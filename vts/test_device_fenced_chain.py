"""VTS fenced executions chained through memory, straight on the driver's HAL.

HAL 1.3 / AIDL ``IPreparedModel.executeFenced``: "The execution is performed asynchronously
with respect to the caller ... after all sync fences in waitFor are signaled"; a dependency
that signals an error fails the execution. Execution 1 waits on a fence the test signals
:data:`LATE_S` seconds later, after it has written execution 1's input (as an earlier
GPU stage would); execution 2 reads execution 1's output memory and waits on execution 1's
fence. A driver that starts an execution before its dependencies signal reads the poison
left in the input and fails (``tests.broken_drivers:IgnoresFenceDependencies``).
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

from runtime.hal.memory import SharedMemory, shared_memory
from runtime.hal.sync import SyncFence
from runtime.hal.types import DataLocation, Request, RequestArgument
from runtime.testing.hal_convert import to_hal_model
from runtime.types import ErrorStatus as E, MeasureTiming, OperationType
from vts.device_support import expect, records_fixture, skip, unsupported
from vts.hal_harness import chain_model, execute_fenced, hal_call, prepare

_records = records_fixture("fenced-chain")

#: Seconds before the test writes execution 1's input and signals its dependency.
LATE_S = 0.3
#: Execution 1's input before the dependency signals (its real input is 1.0).
POISON_INPUT = -100.0
#: ADD operations in the chain: output = input + 3 (AOSP ``createLargeTestModel``).
CHAIN = 3


def _pool(value: float) -> SharedMemory:
    return shared_memory(data=np.array([value], np.float32).tobytes())  # mappable by a driver process


def _request(pool_in: SharedMemory, pool_out: SharedMemory) -> Request:
    return Request([RequestArgument(False, DataLocation(0, 0, 4))],
                   [RequestArgument(False, DataLocation(1, 0, 4))], [pool_in, pool_out])


def _value(pool: SharedMemory) -> float:
    return float(np.frombuffer(bytes(pool.buffer[:4]), np.float32)[0])


@pytest.fixture
def chain_prepared(hal):
    tm = chain_model(OperationType.ADD, CHAIN)
    model = to_hal_model(tm)
    reason = unsupported(hal, tm, model)
    if reason:
        skip(*reason)
    prepared = prepare(hal, model)
    expect(prepared, (E.NONE,), "prepare_model")
    return prepared.value


def _late(pool: SharedMemory, fence: SyncFence, status: E = E.NONE) -> threading.Timer:
    """After LATE_S: write 1.0 into ``pool`` (execution 1's input), then signal ``fence``."""
    def produce():
        pool.buffer[:4] = np.array([1.0], np.float32).tobytes()
        fence.signal(status)
    timer = threading.Timer(LATE_S, produce)
    timer.start()
    return timer


def test_chained_fenced_executions_wait_for_their_dependencies(chain_prepared, wait_limit):
    """Execution 1 (input 1.0 written late, behind its dependency) gives 1 + 3 = 4 into
    memory B; execution 2 reads B behind execution 1's fence and gives 4 + 3 = 7. A driver
    that ignores the dependency computes from the poison: -100 + 3 = -97, then -94."""
    pool_a, pool_b, pool_c = _pool(POISON_INPUT), _pool(np.nan), _pool(np.nan)
    dependency = SyncFence()
    timer = _late(pool_a, dependency)
    try:
        first = hal_call("fenced 1", chain_prepared.execute_fenced, _request(pool_a, pool_b), [dependency],
                         MeasureTiming.NO, None, None, None)
        expect(first, (E.NONE,), "execute_fenced 1 (waiting on a dependency signaled late)")
        fence1, _callback = first.value
        second = execute_fenced(chain_prepared, _request(pool_b, pool_c), [fence1], wait_limit_s=wait_limit,
                                label="fenced 2")
        expect(second, (E.NONE,), "execute_fenced 2 (reading execution 1's output behind its fence)")
    finally:
        timer.join()
    assert (_value(pool_b), _value(pool_c)) == (1.0 + CHAIN, 1.0 + 2 * CHAIN), \
        (f"execution 1 wrote {_value(pool_b)} (expected {1.0 + CHAIN}), execution 2 wrote {_value(pool_c)} "
         f"(expected {1.0 + 2 * CHAIN}): an execution started before its dependency signaled "
         f"(input poison {POISON_INPUT})")


def test_a_failed_dependency_fails_the_execution(chain_prepared, wait_limit):
    """A dependency signaled with GENERAL_FAILURE: the fenced execution fails (the call, its
    fence or its callback reports an error) and does not write its output."""
    pool_a, pool_b = _pool(POISON_INPUT), _pool(np.nan)
    dependency = SyncFence()
    timer = _late(pool_a, dependency, E.GENERAL_FAILURE)
    try:
        run = execute_fenced(chain_prepared, _request(pool_a, pool_b), [dependency], wait_limit_s=wait_limit)
    finally:
        timer.join()
    assert run.status != E.NONE, "execute_fenced succeeded although its dependency signaled GENERAL_FAILURE"
    assert np.isnan(_value(pool_b)), f"the failed execution wrote {_value(pool_b)}"
