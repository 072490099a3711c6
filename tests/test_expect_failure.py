"""Models that must fail (``expect_failure``, the corpus's 61, all AOSP's) are judged by the
stage and code of the failure (runtime/testing/expected_failure.py): a driver that declines,
crashes, fails at execution or succeeds passes none of them, in the CTS and in the VTS; the
sample driver passes every one the runtime lets reach it, and the 11 the front end rejects
while the model is built are recorded ``runtime_rejected`` (not run), never as passes."""
from __future__ import annotations

import collections
import shutil
import subprocess
import sys

import pytest

from harness.records import read_records
from harness.runner import run_test_model
from reports.matrix import record_state
from runtime.drivers.sample import SampleDevice
from runtime.nnapi import Device
from runtime.testing.expected_failure import (ENDLESS_LOOP, ENDLESS_LOOP_TIMEOUT_NS, EXECUTION, INVALID_MODEL, PREPARE,
                                              SUPPORT, expected_failure)
from runtime.testing.test_model import iter_corpus
from runtime.types import ErrorStatus, ResultCode
from tests import broken_drivers
from tests.cts_run import ROOT, run_cts
from vts.hal_harness import PATHS

#: The corpus's spec files holding models that must fail: (directory, spec) -> models.
SPECS = {("V1_2", "depthwise_conv2d_invalid_filter_dims"): 40, ("V1_2", "strided_slice_invalid"): 4,
         ("V1_3", "if_no_value"): 6, ("V1_3", "while_infinite_loop"): 5,
         ("V1_3_cts_only", "cast_mismatching_shapes"): 1, ("V1_3_cts_only", "concat_invalid_rank"): 1,
         ("V1_3_cts_only", "conv2d_v1_3_invalid_rank"): 4}
#: Specs whose models the front end rejects while building them (Model.finish: an IF input
#: with no value; CONCATENATION of rank 5; CONV_2D of rank 3): 6 + 1 + 4 = 11.
RUNTIME_REJECTED = {"if_no_value": 6, "concat_invalid_rank": 1, "conv2d_v1_3_invalid_rank": 4}
BROKEN = ("DeclinesEverything", "RaisesInPrepare", "FailsEveryExecution", "SucceedsWithoutComputing")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A corpus of the seven spec files (61 models), as (root, models)."""
    root = tmp_path_factory.mktemp("expect_failure")
    for (version, spec) in SPECS:
        (root / version).mkdir(exist_ok=True)
        shutil.copy(ROOT / "cts" / "corpus" / version / f"{spec}.json.gz", root / version)
    models = list(iter_corpus([root]))
    assert collections.Counter(tm.spec for tm in models) == {s: n for (_, s), n in SPECS.items()}
    assert all(tm.expect_failure for tm in models) and len(models) == 61
    return root, models


def test_each_model_says_what_must_happen(corpus):
    _, models = corpus
    due = collections.Counter((tm.spec, expected_failure(tm)) for tm in models)
    assert {spec for (spec, d) in due if d is ENDLESS_LOOP} == {"while_infinite_loop"}
    assert sum(n for (spec, d), n in due.items() if d is INVALID_MODEL) == 56
    assert ENDLESS_LOOP.loop_timeout_ns == ENDLESS_LOOP_TIMEOUT_NS == 1_000_000  # AOSP: 1 ms
    assert INVALID_MODEL.loop_timeout_ns is None
    # the judge: stage and code both count; HAL statuses and front-end codes alike
    assert INVALID_MODEL.judge(SUPPORT, ErrorStatus.INVALID_ARGUMENT) is None
    assert INVALID_MODEL.judge(PREPARE, ResultCode.BAD_DATA) is None
    assert INVALID_MODEL.judge(PREPARE, ResultCode.OP_FAILED) == (
        "expected BAD_DATA (the driver's INVALID_ARGUMENT) from getSupportedOperationsForDevices or "
        "Compilation.finish (an invalid model); got OP_FAILED from Compilation.finish")
    assert INVALID_MODEL.judge(EXECUTION, ErrorStatus.INVALID_ARGUMENT) == (
        "expected INVALID_ARGUMENT from get_supported_operations or prepare_model (an invalid model); "
        "got INVALID_ARGUMENT from execution")
    assert ENDLESS_LOOP.judge(EXECUTION, ErrorStatus.MISSED_DEADLINE_PERSISTENT) is None  # AOSP accepts both
    assert ENDLESS_LOOP.judge(EXECUTION, ResultCode.MISSED_DEADLINE_TRANSIENT) is None
    assert ENDLESS_LOOP.judge(EXECUTION, ResultCode.OP_FAILED).endswith("got OP_FAILED from the execution")
    assert ENDLESS_LOOP.judge(PREPARE, ErrorStatus.MISSED_DEADLINE_TRANSIENT) is not None


def _outcomes(models, hal) -> dict[str, collections.Counter]:
    device = Device(hal)
    by_spec = collections.defaultdict(collections.Counter)
    for tm in models:
        o = run_test_model(tm, device)
        by_spec[tm.spec][(o.status, o.skip_kind)] += 1
    return by_spec


def test_sample_driver_passes_every_model_the_runtime_lets_through(corpus):
    _, models = corpus
    by_spec = _outcomes(models, SampleDevice())
    for (_, spec), n in SPECS.items():
        want = ("skipped", "runtime_rejected") if spec in RUNTIME_REJECTED else ("passed", "")
        assert by_spec[spec] == {want: n}, (spec, by_spec[spec])


@pytest.mark.parametrize("driver,verdict", [
    ("DeclinesEverything", ("skipped", "unsupported_by_driver")),
    ("RaisesInPrepare", ("failed", "")),
    ("FailsEveryExecution", ("failed", "")),
    ("SucceedsWithoutComputing", ("failed", "")),
])
def test_no_broken_driver_passes_any(corpus, driver, verdict):
    _, models = corpus
    by_spec = _outcomes(models, getattr(broken_drivers, driver)())
    for (_, spec), n in SPECS.items():
        want = ("skipped", "runtime_rejected") if spec in RUNTIME_REJECTED else verdict
        assert by_spec[spec] == {want: n}, (spec, by_spec[spec])


def test_cts_messages_name_the_stage_and_code_seen_and_due(corpus):
    _, models = corpus
    pick = {tm.spec: tm for tm in models}
    loop, cast = pick["while_infinite_loop"], pick["cast_mismatching_shapes"]
    o = run_test_model(cast, Device(broken_drivers.FailsEveryExecution()))
    assert o.message.startswith("expected BAD_DATA (the driver's INVALID_ARGUMENT) from "
                                "getSupportedOperationsForDevices or Compilation.finish (an invalid model); got "
                                "OP_FAILED from the execution: ")
    o = run_test_model(cast, Device(broken_drivers.RaisesInPrepare()))
    assert "got OP_FAILED from Compilation.finish" in o.message and "ZeroDivisionError" in o.message
    o = run_test_model(loop, Device(broken_drivers.SucceedsWithoutComputing()))
    assert o.message == ("expected MISSED_DEADLINE_TRANSIENT or MISSED_DEADLINE_PERSISTENT from the execution "
                         "(an endless loop); but every step succeeded (getSupportedOperationsForDevices, "
                         "Compilation.finish and the execution)")
    o = run_test_model(loop, Device(SampleDevice()))
    assert o.status == "passed" and "loop timeout 1 ms" in o.message  # the 1 ms loop timeout reached the driver
    o = run_test_model(pick["if_no_value"], Device(SampleDevice()))
    assert o.skip_kind == "runtime_rejected" and "input 0 has no value but is not optional" in o.message


def test_cts_records_runtime_rejected_as_not_run_under_any_profile(tmp_path, corpus):
    root, models = corpus
    code, records, out = run_cts(tmp_path, "--corpus", str(root), "--profile", "feature-level")
    assert code == 0, out[-3000:]
    assert len(records) == 61
    kinds = collections.Counter((r["outcome"], r["skip_kind"]) for r in records.values())
    assert kinds == {("passed", ""): 50, ("skipped", "runtime_rejected"): 11}, kinds
    rejected = sorted(r["id"].split("/")[1] for r in records.values() if r["skip_kind"] == "runtime_rejected")
    assert collections.Counter(rejected) == RUNTIME_REJECTED
    assert "total: 50 passed, 0 failed, 11 skipped (runtime_rejected 11)" in out
    # no pass and no decline: the matrix counts them as not run
    assert {record_state(r) for r in records.values() if r["skip_kind"] == "runtime_rejected"} == {"not run"}


def _vts(tmp_path, root, driver: str):
    report = tmp_path / "vts"
    proc = subprocess.run([sys.executable, "-m", "pytest", "vts/test_generated_hal.py", "-q", "-p", "no:cacheprovider",
                           "--corpus", str(root), "--driver", driver, "--nncts-report", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    return proc, read_records(report / "outcomes.jsonl")


@pytest.mark.parametrize("driver", ["sample", *(f"tests.broken_drivers:{d}" for d in BROKEN)])
def test_vts_judges_by_stage_and_status(tmp_path, corpus, driver):
    root, models = corpus
    proc, records = _vts(tmp_path, root, driver)
    out = (proc.stdout + proc.stderr)[-3000:]
    assert len(records) == 61 * len(PATHS), out
    outcomes = collections.Counter((r["outcome"], r.get("declined", "")) for r in records)
    if driver == "sample":
        assert proc.returncode == 0 and outcomes == {("passed", ""): 305}, out
    elif driver.endswith("DeclinesEverything"):
        assert outcomes == {("skipped", "unsupported_by_driver"): 305}, out
    else:
        assert proc.returncode == 1 and outcomes == {("failed", ""): 305}, out
        due = {"RaisesInPrepare": "prepare_model: the driver crashed (ZeroDivisionError",
               "FailsEveryExecution": "got GENERAL_FAILURE from execution",
               "SucceedsWithoutComputing": "but every step succeeded"}[driver.split(":")[1]]
        wrong = [r["message"] for r in records if due not in r["message"]]
        assert not wrong, wrong[:2]


@pytest.fixture(scope="module")
def relu_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("relu")
    (root / "V1_0").mkdir()
    shutil.copy(ROOT / "cts" / "corpus" / "V1_0" / "relu_float_1.json.gz", root / "V1_0")
    return root


@pytest.mark.parametrize("driver,fragment", [
    ("OffersNoBursts", "burst: configure_execution_burst: GENERAL_FAILURE: this driver offers no bursts"),
    ("ReleaseFails", "release_memory_resource(1): GENERAL_FAILURE: cannot release token 1"),
])
def test_vts_request_validation_fails_a_driver_without_working_bursts(tmp_path, relu_corpus, driver, fragment):
    report = tmp_path / "rv"
    proc = subprocess.run([sys.executable, "-m", "pytest", "vts/test_request_validation.py", "-q",
                           "-p", "no:cacheprovider", "--corpus", str(relu_corpus), "--driver",
                           f"tests.broken_drivers:{driver}", "--vts-max-mutants", "1", "-k", "not internal",
                           "--nncts-report", str(report)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    records = read_records(report / "outcomes.jsonl")
    assert proc.returncode == 1 and len(records) == 1, (proc.stdout + proc.stderr)[-3000:]
    assert records[0]["outcome"] == "failed" and fragment in records[0]["message"], records[0]["message"]
