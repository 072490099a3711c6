"""Shared helpers of the VTS driver-level test modules (``vts/test_device_*.py``, one per
AOSP VTS group of ``hardware/interfaces/neuralnetworks/aidl/vts/functional``): the
outcome-record fixture, recorded skips, the "skip unless the driver supports the model"
rule of AOSP's tests, and the status and result checks they all make.

The fixtures every group needs (``hal``, ``wait_limit``) are in ``vts/conftest.py``.
"""
from __future__ import annotations

import pytest

from harness.plugin import add_record_fields
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.support import not_implemented_reason
from runtime.types import ErrorStatus
from vts.hal_harness import evaluate_prepared, prepare, supported_operations
from vts.plugin import SUITE

#: The item running now (set by the records fixture), so that :func:`skip` can record the
#: kind of skip even when it is called from inside another fixture.
_CURRENT: dict = {}


def records_fixture(mode: str):
    """An autouse fixture for one test module (assign it to a module-level name): each item
    takes part in the outcome records (:func:`harness.plugin.add_record_fields`) as suite
    ``vts`` with the given ``mode`` (the test group: ``device``, ``burst-validation``,
    ``memory-domain``, ``compilation-cache``, ``qos``) and no operations."""

    @pytest.fixture(autouse=True, name="vts_device_records")
    def records(request):
        add_record_fields(request.node, suite=SUITE, operations=[], mode=mode)
        _CURRENT["node"] = request.node
        yield
        _CURRENT.pop("node", None)

    return records


def skip(kind: str, message: str):
    """Skip the running test, recording the kind of skip (``not_implemented``: the reference
    operation table's gap; ``unsupported_by_driver``; ``driver_feature``: an optional feature
    the driver does not offer; ``not_applicable``). Raises pytest's skip exception."""
    node = _CURRENT.get("node")
    if node is not None:
        add_record_fields(node, skip_kind=kind)
    pytest.skip(message)


def unsupported(hal, tm, model) -> tuple[str, str] | None:
    """(skip kind, reason) when test model ``tm`` (HAL form ``model``) cannot be run here:
    the reference operation table lacks something it uses (the project's own gap, never
    counted as the driver's), or the driver does not support every operation (AOSP
    ``isModelFullySupported``); None when it can. A valid model the driver fails to query
    fails the test."""
    reason = not_implemented_reason(model)
    if reason:
        return "not_implemented", f"not implemented: {tm.name}: {reason}"
    supported = supported_operations(hal, model)
    if not supported.ok:
        pytest.fail(f"get_supported_operations({tm.name}) of a valid model: {supported.describe()}")
    if not all(supported.value):
        return "unsupported_by_driver", f"unsupported by driver: {tm.name}"
    return None


def prepared_or_skip(hal, tm):
    """Prepare test model ``tm`` (AOSP ``createPreparedModel``) and return the prepared
    model: skips when the driver does not support every operation, fails when a fully
    supported model does not prepare."""
    model = to_hal_model(tm)
    reason = unsupported(hal, tm, model)
    if reason:
        skip(*reason)
    prepared = prepare(hal, model)
    if not prepared.ok:
        pytest.fail(f"prepare_model({tm.name}) of a fully supported model: {prepared.describe()}")
    return prepared.value


def expect(call_or_status, allowed, what: str):
    """Fail (without a traceback) unless the status of ``call_or_status`` (a
    :class:`vts.hal_harness.Call` or ``Run``, or an :class:`ErrorStatus`) is one of
    ``allowed``; ``what`` names the call in the message."""
    status: ErrorStatus = getattr(call_or_status, "status", call_or_status)
    message = getattr(call_or_status, "message", "")
    if status not in allowed:
        names = " or ".join(s.name for s in allowed)
        pytest.fail(f"{what}: expected {names}, got {status.name}" + (f" ({message})" if message else ""),
                    pytrace=False)


def assert_evaluates(prepared, tm, what: str):
    """Assert that ``prepared`` computes test model ``tm``'s expected outputs on the sync and
    burst paths (AOSP ``EvaluatePreparedModel``)."""
    problems = evaluate_prepared(prepared, tm)
    assert not problems, f"{what}: " + "; ".join(problems)
