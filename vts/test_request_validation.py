"""VTS request validation (AOSP ``ValidateRequest.cpp``): the driver prepares a valid corpus
model, then every mutant of its valid request must be rejected with ``INVALID_ARGUMENT``
on every execution path the driver offers, through its HAL only:

* ``execute_synchronously``;
* ``execute_asynchronously`` (the launch raises INVALID_ARGUMENT, or the
  :class:`runtime.hal.sync.ExecutionCallback` is notified with it within ``--wait-limit``);
* ``execute_fenced`` (the call raises INVALID_ARGUMENT);
* a burst: ``configure_execution_burst()`` then its ``execute_synchronously`` with one
  memory identifier token per pool, then ``release_memory_resource`` of each token. Bursts
  are not optional (AIDL ``IPreparedModel::configureExecutionBurst``; AOSP VTS
  ``GeneratedTestHarness.cpp`` asserts that it and ``releaseMemoryResource`` succeed, as
  :mod:`vts.test_device_burst` does): a
  ``configure_execution_burst`` that raises fails the path, and so does a
  ``release_memory_resource`` that raises (it must succeed for any token >= 0, known or not);
* a reusable execution: ``create_reusable_execution`` raises INVALID_ARGUMENT, or the
  execution it returns does when run.

Timing is requested for some mutants and not others, chosen by a hash of the mutant's
description as AOSP does. Anything else fails the item, naming the mutant and the path: the
call succeeding, another status, a lost callback, or an exception other than HalError (a
driver crash).
"""
from __future__ import annotations

import pytest

from harness.plugin import add_record_fields
from runtime.errors import HalError
from runtime.hal.sync import ExecutionCallback
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.types import ErrorStatus, MeasureTiming
from vts.mutations import REQUEST_KINDS, clone_request
from vts.plugin import max_mutants, run_mutation_kinds

INVALID = ErrorStatus.INVALID_ARGUMENT


def measure_for(description: str) -> MeasureTiming:
    """AOSP: request timing or not from a stable hash (XOR of the characters) of the
    mutant's description."""
    h = 0
    for c in description:
        h ^= ord(c)
    return MeasureTiming.YES if h & 1 else MeasureTiming.NO


def _raised(call, what: str) -> tuple[bool, str | None]:
    """(whether ``call()`` raised HalError(INVALID_ARGUMENT), problem or None). A call that
    returns is (False, None): the caller decides."""
    try:
        call()
    except HalError as e:
        if e.status == INVALID:
            return True, None
        return False, f"{what}: expected INVALID_ARGUMENT, got {e.status.name}: {e.message}"
    except Exception as e:  # noqa: BLE001 - driver code
        return False, f"{what}: driver crashed: {type(e).__name__}: {e}"
    return False, None


def _sync(prepared, request, measure, wait_limit):
    ok, problem = _raised(lambda: prepared.execute_synchronously(request, measure, None, None),
                          "execute_synchronously")
    return problem or (None if ok else "execute_synchronously: accepted the request")


def _async(prepared, request, measure, wait_limit):
    callback = ExecutionCallback()
    ok, problem = _raised(lambda: prepared.execute_asynchronously(request, measure, None, None, callback),
                          "execute_asynchronously (launch)")
    if ok or problem:
        return problem
    if not callback.wait(wait_limit):
        return f"execute_asynchronously: callback not notified within {wait_limit:g} s"
    if callback.status != INVALID:
        return (f"execute_asynchronously: callback status {callback.status.name}, expected INVALID_ARGUMENT"
                + (f" ({callback.message})" if callback.message else ""))
    return None


def _fenced(prepared, request, measure, wait_limit):
    ok, problem = _raised(lambda: prepared.execute_fenced(request, [], measure, None, None, None),
                          "execute_fenced")
    return problem or (None if ok else "execute_fenced: accepted the request")


def _burst(prepared, request, measure, wait_limit):
    try:
        burst = prepared.configure_execution_burst()
    except HalError as e:  # bursts are mandatory (module docstring)
        return f"configure_execution_burst: {e.status.name}: {e.message} (every prepared model must offer bursts)"
    except Exception as e:  # noqa: BLE001 - driver code
        return f"configure_execution_burst: driver crashed: {type(e).__name__}: {e}"
    tokens = list(range(1, len(request.pools) + 1))
    ok, problem = _raised(lambda: burst.execute_synchronously(request, tokens, measure),
                          "burst execute_synchronously")
    problem = problem or (None if ok else "burst execute_synchronously: accepted the request")
    released = [_released(burst, token) for token in tokens]
    return "; ".join(p for p in (problem, *released) if p) or None


def _released(burst, token: int) -> str | None:
    """The problem releasing a burst's memory ``token`` (>= 0), or None: the call must
    succeed for any token, known or not (HAL ``IBurst::releaseMemoryResource``)."""
    try:
        burst.release_memory_resource(token)
    except HalError as e:
        return f"release_memory_resource({token}): {e.status.name}: {e.message}"
    except Exception as e:  # noqa: BLE001 - driver code
        return f"release_memory_resource({token}): driver crashed: {type(e).__name__}: {e}"
    return None


def _reusable(prepared, request, measure, wait_limit):
    created = []
    ok, problem = _raised(lambda: created.append(prepared.create_reusable_execution(request, measure, None)),
                          "create_reusable_execution")
    if ok or problem:
        return problem
    ok, problem = _raised(lambda: created[0].execute_synchronously(None), "reusable execute_synchronously")
    return problem or (None if ok else "reusable execution: accepted the request (at creation and execution)")


#: The execution paths, in the order they are tried.
PATHS = {"sync": _sync, "async": _async, "fenced": _fenced, "burst": _burst, "reusable": _reusable}


def check_request_mutant(prepared, description: str, request, wait_limit: float) -> list[str]:
    """Problems of the prepared model with one request mutant on every path."""
    measure = measure_for(description)
    problems = []
    for name, path in PATHS.items():  # each path gets its own copy (the HAL passes requests by value)
        problem = path(prepared, clone_request(request), measure, wait_limit)
        if problem:
            problems.append(f"{description} [{name}: {problem}]")
    return problems


def test_request_validation(vts_request_case, nncts_device, request):
    """Prepare one corpus model, then run every mutant of its request (every applicable
    request kind) on every execution path; each must be rejected with INVALID_ARGUMENT."""
    case = vts_request_case
    hal = nncts_device.hal
    try:
        prepared = hal.prepare_model(to_hal_model(case.tm))
    except HalError as e:
        add_record_fields(request.node, skip_kind="driver_cannot_prepare")
        pytest.skip(f"the driver cannot prepare the unmutated model: {e.status.name}: {e.message}")
    except Exception as e:  # noqa: BLE001 - driver code
        pytest.fail(f"{case.id}: driver crashed preparing the unmutated model: {type(e).__name__}: {e}",
                    pytrace=False)
    wait_limit = request.config.getoption("wait_limit")
    run_mutation_kinds(request.node, case.id, case.kinds,
                       lambda name: REQUEST_KINDS[name](to_hal_request(case.tm), max_mutants(request.config)),
                       lambda name, dm: check_request_mutant(prepared, dm[0], dm[1], wait_limit),
                       "request mutant(s)")
