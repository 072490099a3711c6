"""VTS deadlines and priorities (AOSP VTS ``QualityOfServiceTests``, ``DeadlineTest``),
straight on the driver's HAL: prepare_model with a priority or a deadline, and executions
with a deadline on every path. Each test names the AOSP test it mirrors (errors are HalError
statuses; any other exception escaping the driver is a crash and fails the test).
"""
from __future__ import annotations

import pytest

from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.types import ErrorStatus as E, MeasureTiming, OperandType as T, OperationType, PriorityCode
from vts.device_support import assert_evaluates, expect, records_fixture, skip, unsupported
from vts.hal_harness import MISSED_DEADLINE, PATHS, chain_model, check_run, deadline, execute, prepare

_records = records_fixture("qos")


QOS_MODELS = {"float32": T.TENSOR_FLOAT32, "quant8": T.TENSOR_QUANT8_ASYMM}
DEADLINE_BOUNDS = ("now", "short", "unlimited", None)


@pytest.fixture(params=list(QOS_MODELS), ids=list(QOS_MODELS))
def qos_model(request, hal):
    tm = chain_model(OperationType.ADD, 3, QOS_MODELS[request.param])
    model = to_hal_model(tm)
    reason = unsupported(hal, tm, model)
    if reason:
        skip(*reason)
    return tm, model


@pytest.mark.parametrize("priority", [PriorityCode.LOW, PriorityCode.HIGH], ids=lambda p: p.name)
def test_priority_prepare(hal, qos_model, priority):
    """AIDL ``DeadlineTest`` (``runPrepareModelTests``, priorities other than the default):
    prepare_model with priority LOW or HIGH and no deadline succeeds."""
    tm, model = qos_model
    call = prepare(hal, model, priority=priority)
    expect(call, (E.NONE,), f"prepare_model with priority {priority.name}")
    assert_evaluates(call.value, tm, f"prepared with priority {priority.name}")


@pytest.mark.parametrize("bound", DEADLINE_BOUNDS, ids=lambda b: b or "none")
def test_deadline_prepare(hal, qos_model, bound):
    """AIDL ``DeadlineTest`` (``runPrepareModelTest``): prepare_model with a deadline already
    passed ("now") or 5 ms away ("short") either succeeds or gives MISSED_DEADLINE_TRANSIENT /
    PERSISTENT (no prepared model then); an unlimited deadline or none must succeed."""
    tm, model = qos_model
    call = prepare(hal, model, deadline_ns=deadline(bound))
    allowed = (E.NONE, *MISSED_DEADLINE) if bound in ("now", "short") else (E.NONE,)
    expect(call, allowed, f"prepare_model with deadline {bound or 'none'}")
    if call.ok:
        assert_evaluates(call.value, tm, f"prepared with deadline {bound or 'none'}")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bound", DEADLINE_BOUNDS, ids=lambda b: b or "none")
def test_deadline_execute(hal, qos_model, path, bound, wait_limit):
    """AIDL ``DeadlineTest`` (``runExecutionTest``; AOSP runs sync and burst, here every
    path): an execution with a deadline already passed ("now") or 5 ms away ("short")
    either succeeds or gives MISSED_DEADLINE_*; an unlimited deadline or none must succeed.
    Timing was not requested, so none may be reported; a success reports the model's output
    shapes and correct results."""
    tm, model = qos_model
    prepared = prepare(hal, model)
    expect(prepared, (E.NONE,), "prepare_model")
    request = to_hal_request(tm)
    run = execute(path, prepared.value, request, MeasureTiming.NO, deadline(bound), wait_limit)
    allowed = (E.NONE, *MISSED_DEADLINE) if bound in ("now", "short") else (E.NONE,)
    expect(run, allowed, f"{path} execution with deadline {bound or 'none'}")
    if run.status == E.NONE:
        problems = check_run(tm, request, run)
        assert not problems, "; ".join(problems)
