"""VTS generated tests: every corpus test model, straight on the driver's HAL (no front end),
through every execution path (AOSP VtsHalNeuralnetworks ``GeneratedTest`` /
``GeneratedTestHarness``: ``createModel`` -> ``getSupportedOperations`` -> ``prepareModel``
-> ``EvaluatePreparedModel``; models that must fail are judged by stage and status,
:mod:`runtime.testing.expected_failure`: an invalid model INVALID_ARGUMENT from
``get_supported_operations`` or ``prepare_model``, an endless loop MISSED_DEADLINE_* from the
execution on the item's path with a 1 ms loop timeout, AOSP ``InfiniteLoopTimeoutTest``).

One item per (model, path), id ``<version>/<spec>/<name>@<path>``, paths
:data:`vts.hal_harness.PATHS`: ``sync``, ``async``, ``fenced``, ``burst``, ``reusable`` (what
each runs: :func:`vts.hal_harness.path_runs`); no ``fenced`` item for a model whose outputs
are not fully specified (unknown or zero-sized dimensions), since a fenced execution reports
no output shapes. A model the operation table cannot run yet is
one skipped item (id ``<version>/<spec>/<name>``); a model above the driver's feature level,
or one whose operations the driver does not all support, is skipped per path.
"""
from __future__ import annotations

import pytest

from harness.changed_inputs import changed_inputs
from harness.plugin import add_record_fields, corpus_models, model_marks
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.testing.support import not_implemented_reason
from runtime.testing.expected_failure import EXECUTION, PREPARE, SUPPORT, expected_failure
from runtime.types import ErrorStatus, MeasureTiming
from vts.hal_harness import (PATHS, VtsFailure, check_run, execute, path_runs, prepare, supported_operations)

#: Paths that reuse one object across executions: they also run changed inputs in between.
REUSING_PATHS = ("burst", "reusable")


def pytest_generate_tests(metafunc):
    """Parametrize ``vts_generated_case`` with (test model, path or None) per corpus model."""
    if "vts_generated_case" not in metafunc.fixturenames:
        return
    params = []
    for tm in corpus_models(metafunc.config):
        marks = model_marks(tm)
        reason = not_implemented_reason(to_hal_model(tm), signatures_too=not tm.expect_failure)
        if reason:
            params.append(pytest.param((tm, None, reason), id=tm.test_id, marks=marks))
            continue
        for path in PATHS:
            if path == "fenced" and not tm.expect_failure and not tm.outputs_fully_specified:
                continue  # a fenced execution reports no output shapes (AOSP GeneratedTestHarness)
            params.append(pytest.param((tm, path, None), id=f"{tm.test_id}@{path}", marks=marks))
    metafunc.parametrize("vts_generated_case", params)


def _skip(request, kind: str, message: str):
    add_record_fields(request.node, skip_kind=kind)
    pytest.skip(message)


def _judge_expected_failure(request, device, tm, model, path: str, wait_limit: float) -> None:
    """A model that must fail (``expect_failure``) sees the failure due
    (:func:`runtime.testing.expected_failure.expected_failure`): an invalid model
    INVALID_ARGUMENT from get_supported_operations or prepare_model; an endless loop
    MISSED_DEADLINE_TRANSIENT or MISSED_DEADLINE_PERSISTENT from its execution on ``path``
    (loop timeout 1 ms). An unsupported operation makes the item not applicable
    (``unsupported_by_driver``); any other status, a driver crash, an execution failure where
    rejection was due, or every step succeeding fails it, naming the stage and status seen and
    those due. Returns when the failure due came."""
    due = expected_failure(tm)

    def judged(stage, call) -> bool:  # True: the failure due came (stop); fails otherwise
        if call.ok:
            return False
        problem = due.judge(stage, call.status)
        if problem:
            pytest.fail(f"{tm.test_id}@{path}: {problem} ({call.message})", pytrace=False)
        return True

    try:
        supported = supported_operations(device.hal, model)
        if judged(SUPPORT, supported):
            return
        if not all(supported.value):
            ops = sorted({model.main.operations[k].type.name for k, ok in enumerate(supported.value) if not ok})
            _skip(request, "unsupported_by_driver", f"unsupported by driver {device.name}: {', '.join(ops)}")
        prepared = prepare(device.hal, model)
        if judged(PREPARE, prepared):
            return
        run = execute(path, prepared.value, to_hal_request(tm), MeasureTiming.NO, None, wait_limit,
                      loop_timeout_ns=due.loop_timeout_ns)
    except VtsFailure as e:
        pytest.fail(f"{tm.test_id}@{path}: expected {due.describe()}; {e}", pytrace=False)
    if run.status == ErrorStatus.NONE:
        pytest.fail(f"{tm.test_id}@{path}: {due.every_step_succeeded()}", pytrace=False)
    problem = due.judge(EXECUTION, run.status)
    if problem:
        pytest.fail(f"{tm.test_id}@{path}: {problem} ({run.describe()})", pytrace=False)


def test_generated_hal(vts_generated_case, nncts_device, request):
    """Prepare one corpus model on the HAL and run it on one execution path; every run must
    succeed with correct output shapes, timing and values (NNAPI accuracy criteria), and must
    not modify the request's inputs. Burst and reusable executions run the example inputs,
    changed inputs (:mod:`harness.changed_inputs`) in the same pool, then the example inputs."""
    tm, path, not_implemented = vts_generated_case
    if not_implemented:
        _skip(request, "not_implemented", not_implemented)
    hal = nncts_device.hal
    level = nncts_device.feature_level
    if tm.feature_level > level:
        _skip(request, "feature_level", f"not implemented by the driver: the model needs feature level "
                                        f"{tm.feature_level}, driver {nncts_device.name} implements up to {level}")
    wait_limit = request.config.getoption("wait_limit")
    model = to_hal_model(tm)
    if tm.expect_failure:
        _judge_expected_failure(request, nncts_device, tm, model, path, wait_limit)
        return
    try:
        supported = supported_operations(hal, model)
        if not supported.ok:
            pytest.fail(f"get_supported_operations on a valid model: {supported.describe()}", pytrace=False)
        if not all(supported.value):
            ops = sorted({model.main.operations[k].type.name for k, ok in enumerate(supported.value) if not ok})
            _skip(request, "unsupported_by_driver", f"unsupported by driver {nncts_device.name}: {', '.join(ops)}")
        prepared = prepare(hal, model)
        if not prepared.ok:
            pytest.fail(f"prepare_model of a fully supported model: {prepared.describe()}", pytrace=False)
        hal_request = to_hal_request(tm)
        inputs_before = bytes(hal_request.pools[0].buffer)
        changed = changed_inputs(tm) if path in REUSING_PATHS else None
        problems = []
        for run in path_runs(path, prepared.value, hal_request, wait_limit, changed, model=tm):
            problems += check_run(tm, hal_request, run)
            given = inputs_before if run.model is None else bytes(to_hal_request(run.model).pools[0].buffer)
            if bytes(hal_request.pools[0].buffer) != given:
                problems.append(f"{run.label}: the driver modified the request's input memory")
            if problems:
                break
    except VtsFailure as e:
        pytest.fail(f"{tm.test_id}@{path}: {e}", pytrace=False)
    if problems:
        pytest.fail(f"{tm.test_id}@{path}: " + "; ".join(problems), pytrace=False)
