"""VTS deadlines of ``prepare_model_from_cache`` (HAL 1.3 ``prepareModelFromCache_1_3``,
AIDL ``prepareModelFromCache``), which vts/test_device_quality_of_service.py (prepare and
execute) and vts/test_device_compilation_caching.py (no deadline) leave out: a deadline
already passed ("now") or 5 ms away ("short") either succeeds or gives
MISSED_DEADLINE_TRANSIENT / PERSISTENT (no prepared model then); an unlimited deadline or
none must succeed, and the prepared model computes correct results. A driver that does not
cache (``get_number_of_cache_files_needed`` is (0, 0)) skips them.

Also priorities with deadlines at prepare time, which the QoS file tries one at a time
(LOW and HIGH without a deadline, a deadline at the default MEDIUM): each of LOW, MEDIUM
and HIGH (``PriorityCode``, HAL 1.3 ``Priority``) with a deadline already passed either
succeeds or gives MISSED_DEADLINE_* (HAL 1.3 ``prepareModel_1_3``: "If the model cannot
be prepared by the deadline, the preparation may be aborted"), and with an unlimited one
succeeds; a priority outside those three is INVALID_ARGUMENT (checked by the model
validation's ``invalid_priority`` kind, AOSP ``mutateExecutionPriorityTest``).
"""
from __future__ import annotations

import contextlib

import pytest

from runtime.testing.hal_convert import to_hal_model
from runtime.types import BYTE_SIZE_OF_CACHE_TOKEN, ErrorStatus as E, OperationType, PriorityCode
from vts.device_support import assert_evaluates, expect, records_fixture, skip, unsupported
from vts.hal_harness import MISSED_DEADLINE, chain_model, deadline, prepare, prepare_from_cache

_records = records_fixture("qos")

DEADLINE_BOUNDS = ("now", "short", "unlimited", None)


@contextlib.contextmanager
def _files(paths):
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(open(p, "r+b")) for p in paths]


@pytest.mark.parametrize("bound", DEADLINE_BOUNDS, ids=lambda b: f"cache-{b or 'none'}")
def test_deadline_prepare_from_cache(hal, tmp_path, bound):
    counts = tuple(hal.get_number_of_cache_files_needed())
    if counts == (0, 0):
        skip("driver_feature", "the driver does not cache compilations (get_number_of_cache_files_needed is (0, 0))")
    tm = chain_model(OperationType.ADD, 3)
    model = to_hal_model(tm)
    reason = unsupported(hal, tm, model)
    if reason:
        skip(*reason)
    model_paths = [tmp_path / f"model{i}" for i in range(counts[0])]
    data_paths = [tmp_path / f"data{i}" for i in range(counts[1])]
    for p in [*model_paths, *data_paths]:
        p.touch()
    token = bytes(range(BYTE_SIZE_OF_CACHE_TOKEN))
    with _files(model_paths) as mc, _files(data_paths) as dc:
        saved = prepare(hal, model, model_cache=mc, data_cache=dc, token=token)
    expect(saved, (E.NONE,), "prepare_model with cache files")
    with _files(model_paths) as mc, _files(data_paths) as dc:
        call = prepare_from_cache(hal, mc, dc, token, deadline_ns=deadline(bound))
    allowed = (E.NONE, *MISSED_DEADLINE) if bound in ("now", "short") else (E.NONE,)
    expect(call, allowed, f"prepare_model_from_cache with deadline {bound or 'none'}")
    if call.ok:
        assert_evaluates(call.value, tm, f"prepared from cache with deadline {bound or 'none'}")


@pytest.mark.parametrize("bound", ("now", "unlimited"))
@pytest.mark.parametrize("priority", list(PriorityCode), ids=lambda p: p.name)
def test_priority_with_deadline_prepare(hal, priority, bound):
    """prepare_model with priority ``priority`` and a deadline already passed ("now": NONE
    or MISSED_DEADLINE_*, no prepared model then) or unlimited (NONE); a prepared model
    computes correct results."""
    tm = chain_model(OperationType.ADD, 3)
    model = to_hal_model(tm)
    reason = unsupported(hal, tm, model)
    if reason:
        skip(*reason)
    call = prepare(hal, model, priority=priority, deadline_ns=deadline(bound))
    allowed = (E.NONE, *MISSED_DEADLINE) if bound == "now" else (E.NONE,)
    expect(call, allowed, f"prepare_model with priority {priority.name} and deadline {bound}")
    if call.ok:
        assert_evaluates(call.value, tm, f"prepared with priority {priority.name} and deadline {bound}")
