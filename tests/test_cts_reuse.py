"""The modes of one test model share its built model and compilation in a worker
(:mod:`harness.memo`, :func:`harness.runner.run_test_model`): the sample driver prepares a
model once for every mode but the cache mode, a failure drops what was kept (the next mode
prepares afresh), and the outcomes are those of a fresh build per mode."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness import runner
from harness.memo import IdentityMemo
from harness.modes import DEFAULT_MODES, applies
from runtime.drivers.sample import SampleDevice
from runtime.nnapi import Device
from runtime.testing.test_model import load_spec

CORPUS = Path(__file__).resolve().parents[1] / "cts" / "corpus"


class CountingDevice(SampleDevice):
    """The sample driver counting ``prepare_model`` calls; fails the execution of the
    ``fail_at``-th prepared model's first run when set."""

    def __init__(self):
        super().__init__()
        self.prepared = 0

    def prepare_model(self, *args, **kwargs):
        self.prepared += 1
        return super().prepare_model(*args, **kwargs)


class FailsOnce(CountingDevice):
    """Prepares like the sample driver, except that the first preparation returns a model
    whose executions compute nothing (outputs left as the harness poisoned them)."""

    def prepare_model(self, *args, **kwargs):
        prepared = super().prepare_model(*args, **kwargs)
        if self.prepared == 1:
            prepared.execute_synchronously = lambda request, *a, **k: (_ for _ in ()).throw(
                RuntimeError("planted: the first preparation is broken"))
        return prepared


def _add_model():
    return next(tm for tm in load_spec(CORPUS / "V1_0" / "add.json.gz") if not tm.expect_failure)


def test_identity_memo_keeps_by_identity_and_forgets_the_oldest():
    memo, calls = IdentityMemo(2), []
    a, b, c = [1], [1], [2]  # a == b but not the same object

    def compute(x):
        calls.append(x)
        return len(calls)

    assert memo.get((a,), (), lambda: compute("a")) == 1
    assert memo.get((a,), (), lambda: compute("a")) == 1  # kept
    assert memo.get((b,), (), lambda: compute("b")) == 2  # equal, not identical: computed
    assert memo.get((a,), ("x",), lambda: compute("ax")) == 3  # other options
    assert memo.get((b,), (), lambda: compute("b")) == 2  # still kept
    assert memo.get((a,), (), lambda: compute("a")) == 4  # the oldest, pushed out by the third value
    with pytest.raises(ValueError):
        memo.get((c,), (), lambda: (_ for _ in ()).throw(ValueError("no")))
    assert memo.get((c,), (), lambda: compute("c")) == 5  # an exception is not kept
    memo.clear()
    assert len(memo) == 0


def test_the_modes_of_a_model_prepare_it_once_but_the_cache_mode():
    runner.forget_prepared()
    hal = CountingDevice()
    device = Device(hal)
    tm = _add_model()  # float32 ADD: no coupling mode
    counts = {}
    for mode in (m for m in DEFAULT_MODES if applies(tm, m)):
        before = hal.prepared
        outcome = runner.run_test_model(tm, device, mode, require_timing=False)
        assert outcome.status == "passed", (mode.name, outcome.message)
        counts[mode.name] = hal.prepared - before
    # the first mode of each variant prepares (sync; dynamic outputs, reused by insufficient);
    # the cache mode prepares through files: write the cache, prepare from it, then over a
    # foreign and a corrupted cache
    assert counts == {"sync": 1, "async": 0, "burst": 0, "fenced": 0, "reusable": 0, "memory": 0, "device": 0,
                      "dynamic": 1, "insufficient": 0, "cache": 4}


def test_a_failure_drops_the_kept_compilation():
    runner.forget_prepared()
    hal = FailsOnce()
    device = Device(hal)
    tm = _add_model()
    sync, asynchronous = DEFAULT_MODES[0], next(m for m in DEFAULT_MODES if m.compute == "async")
    first = runner.run_test_model(tm, device, sync, require_timing=False)
    assert first.status == "failed" and "planted" in first.message
    second = runner.run_test_model(tm, device, asynchronous, require_timing=False)
    assert second.status == "passed", second.message
    assert hal.prepared == 2  # prepared again after the failure
