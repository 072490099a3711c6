"""VTS burst validation (the AIDL ``IBurst`` contract; AOSP ``GeneratedTestHarness``
``Executor::BURST``), straight on the driver's HAL: memory identifier tokens, releasing
memory resources, and bursts next to synchronous executions of one prepared model. Each
test names the AOSP rule it mirrors (errors are HalError statuses; any other exception
escaping the driver is a crash and fails the test).
"""
from __future__ import annotations

import numpy as np
import pytest

from runtime.hal.memory import SharedMemory
from runtime.testing.hal_convert import to_hal_request
from runtime.types import ErrorStatus as E, OperationType
from vts.device_support import expect, prepared_or_skip, records_fixture
from vts.hal_harness import chain_model, check_run, execute_burst, execute_sync, hal_call

_records = records_fixture("burst-validation")


@pytest.fixture
def chain(hal):
    """(test model, prepared model) of a 3-ADD float32 chain."""
    tm = chain_model(OperationType.ADD, 3)
    return tm, prepared_or_skip(hal, tm)


def _burst(prepared):
    call = hal_call("configure_execution_burst", prepared.configure_execution_burst)
    assert call.ok and call.value is not None, f"configure_execution_burst: {call.describe()}"
    return call.value


def test_burst_token_count_mismatch(chain):
    """IBurst ``executeSynchronously``: memoryIdentifierTokens has one token per request
    pool; fewer or more give INVALID_ARGUMENT (AOSP burst adapter validation)."""
    tm, prepared = chain
    burst = _burst(prepared)
    request = to_hal_request(tm)
    n = len(request.pools)
    for tokens in ([], list(range(n - 1)), list(range(n + 1))):
        expect(execute_burst(burst, request, tokens), (E.INVALID_ARGUMENT,),
                f"burst execution with {len(tokens)} tokens for {n} pools")
    run = execute_burst(burst, request, list(range(n)))
    assert not check_run(tm, request, run), "the burst no longer works after rejected executions"


def test_burst_invalid_token_value(chain):
    """IBurst ``executeSynchronously``: each token is non-negative or -1 (no identity);
    -2 gives INVALID_ARGUMENT."""
    tm, prepared = chain
    request = to_hal_request(tm)
    tokens = [-1] * len(request.pools)
    tokens[0] = -2
    expect(execute_burst(_burst(prepared), request, tokens), (E.INVALID_ARGUMENT,),
            "burst execution with memory identifier token -2")


def test_burst_release_unknown_token_is_harmless(chain):
    """IBurst ``releaseMemoryResource``: releasing a token the burst never saw (or -1) is not
    an error and leaves the burst usable; a negative token other than -1 is
    INVALID_ARGUMENT."""
    tm, prepared = chain
    burst = _burst(prepared)
    for token in (12345, -1):
        call = hal_call("release_memory_resource", burst.release_memory_resource, token)
        assert call.ok, f"release_memory_resource({token}) of an unknown token: {call.describe()}"
    expect(hal_call("release_memory_resource", burst.release_memory_resource, -2), (E.INVALID_ARGUMENT,),
            "release_memory_resource(-2)")
    request = to_hal_request(tm)
    run = execute_burst(burst, request, list(range(len(request.pools))))
    assert not check_run(tm, request, run), check_run(tm, request, run)


def test_burst_after_prepared_model_use(chain):
    """GeneratedTestHarness (SYNC then BURST on one prepared model): a burst configured
    after the prepared model ran synchronously runs correctly twice over the same memories,
    and the prepared model still runs synchronously afterwards (and between)."""
    tm, prepared = chain
    request = to_hal_request(tm)
    problems = check_run(tm, request, execute_sync(prepared, request))
    burst = _burst(prepared)
    tokens = list(range(len(request.pools)))
    for k in range(2):
        request.pools[1].buffer[:] = bytes(request.pools[1].size)
        problems += check_run(tm, request, execute_burst(burst, request, tokens, label=f"burst run {k + 1}"))
        problems += check_run(tm, request, execute_sync(prepared, request, label=f"sync after burst run {k + 1}"))
    for token in tokens:
        assert hal_call("release_memory_resource", burst.release_memory_resource, token).ok
    assert not problems, "; ".join(problems)


def test_burst_token_reused_for_new_memory_after_release(chain):
    """IBurst ``releaseMemoryResource``: once a token is released the client may use it for
    another memory; the driver must then read the new memory (not a stale cached one)."""
    tm, prepared = chain
    burst = _burst(prepared)
    request = to_hal_request(tm)
    tokens = list(range(len(request.pools)))
    assert not check_run(tm, request, execute_burst(burst, request, tokens))
    for token in tokens:
        assert hal_call("release_memory_resource", burst.release_memory_resource, token).ok
    fresh = to_hal_request(tm)
    fresh.pools[0] = SharedMemory(data=np.asarray([10.0], np.float32).tobytes())
    run = execute_burst(burst, fresh, tokens, label="burst run with new memories under released tokens")
    assert run.status == E.NONE, run.describe()
    got = np.frombuffer(bytes(fresh.pools[1].buffer[:4]), np.float32)[0]
    assert got == 13.0, f"the burst computed {got} from input 10 (expected 13): it used a released memory"
