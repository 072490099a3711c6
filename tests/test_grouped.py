"""The CTS's modes of a test model run in one pytest item (harness.grouped), each still a test
of its own: its own record and node id, selected by ``-k`` and ``--resume`` one by one, failing
alone. The expected mode lists are by hand from AOSP's rules (harness.modes.applies): a float
model of one RELU with a 16-byte output runs in every default mode but ``coupling`` (only
single-operation TENSOR_QUANT8_ASYMM models)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from harness.records import read_records
from tests.cts_run import ROOT, run_cts

CORPUS = ROOT / "cts" / "corpus" / "V1_0"
MODEL = "V1_0/relu_float_1/relu_float_1"
#: relu_float_1's default modes (base first), by hand.
DEFAULT = ["", "async", "burst", "fenced", "reusable", "memory", "device", "dynamic", "insufficient", "cache"]


def _id(mode: str) -> str:
    return MODEL if not mode else f"{MODEL}@{mode}"


@pytest.fixture
def relu_corpus(tmp_path):
    d = tmp_path / "corpus" / "V1_0"
    d.mkdir(parents=True)
    shutil.copy(CORPUS / "relu_float_1.json.gz", d)
    return str(tmp_path / "corpus")


def test_every_mode_is_a_test_with_its_own_record_and_node_id(tmp_path, relu_corpus):
    code, records, out = run_cts(tmp_path, "--corpus", relu_corpus, "--mode", "default", "-k", "not internal")
    assert code == 0, out[-2000:]
    assert sorted(records) == sorted(_id(m) for m in DEFAULT)
    assert all(r["outcome"] == "passed" for r in records.values())
    assert {r["nodeid"] for r in records.values()} == {f"cts/test_generated.py::test_generated[{_id(m)}]" for m in DEFAULT}
    assert "10 passed" in out  # pytest counts the tests, not the item
    assert re.search(r"^\.{10}\s+\[100%\]$", out, re.M), out[:3000]  # a letter per test, the percentage of tests


def test_k_selects_modes_within_a_model(tmp_path, relu_corpus):
    code, records, out = run_cts(tmp_path, "--corpus", relu_corpus, "--mode", "default",
                                 "-k", "not internal and not cache and not burst")
    assert code == 0, out[-2000:]
    assert sorted(records) == sorted(_id(m) for m in DEFAULT if m not in ("cache", "burst"))
    code, records, out = run_cts(tmp_path / "b", "--corpus", relu_corpus, "--mode", "default",
                                 "-k", "relu_float_1 and fenced and not internal")
    assert code == 0, out[-2000:]
    assert sorted(records) == [_id("fenced")]


def test_a_node_id_with_its_mode_replays_exactly_that_test(tmp_path, relu_corpus):
    """The replay command of a record (reports.replay): its node id and its --mode."""
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "pytest", f"cts/test_generated.py::test_generated[{_id('async')}]",
                           "-q", "-p", "no:cacheprovider", "--corpus", relu_corpus, "--mode", "async",
                           "--nncts-report", str(report)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert [r["id"] for r in read_records(report / "outcomes.jsonl")] == [_id("async")]


def test_a_failing_mode_fails_alone_and_the_later_modes_still_run(tmp_path, relu_corpus):
    """A driver that loses asynchronous callbacks: the async mode (second) fails, every
    mode after it still runs and passes."""
    code, records, out = run_cts(tmp_path, "--corpus", relu_corpus, "--mode", "default", "-k", "not internal",
                                 "--driver", "tests.broken_drivers:LostAsyncCallback", "--wait-limit", "0.5")
    assert code == 1, out[-2000:]
    assert sorted(records) == sorted(_id(m) for m in DEFAULT)
    failed = sorted(k for k, r in records.items() if r["outcome"] == "failed")
    assert failed == [_id("async")], failed
    assert "never notified the execution callback" in records[_id("async")]["message"]


def test_resume_runs_only_the_modes_not_recorded(tmp_path, relu_corpus):
    report = tmp_path / "report"
    base = [sys.executable, "-m", "nncts.cli", "cts", "--corpus", relu_corpus, "--report-dir", str(report), "-n", "0"]
    first = subprocess.run([*base, "-k", "not internal and not cache and not burst"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    again = subprocess.run([*base, "-k", "not internal", "--resume"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    ids = [r["id"] for r in read_records(report / "outcomes.jsonl")]
    assert sorted(ids) == sorted(_id(m) for m in DEFAULT)  # each once
    assert sorted(ids[8:]) == [_id("burst"), _id("cache")]
    assert "2 passed" in again.stdout


@pytest.mark.parametrize("retries", [0, 1])
def test_retries_are_per_mode(tmp_path, relu_corpus, retries):
    """A driver whose first execution fails: the base mode (first) fails, or with
    --retries 1 passes on its second attempt (flaky, 2 attempts); the async mode after it
    passes at once either way."""
    code, records, out = run_cts(tmp_path, "--corpus", relu_corpus, "--mode", "sync,async", "-k", "not internal",
                                 "--driver", "tests.broken_drivers:FailsFirstExecution", "--retries", str(retries))
    assert sorted(records) == [_id(""), _id("async")]
    assert (records[_id("async")]["outcome"], records[_id("async")].get("attempts")) == ("passed", None)
    if retries:
        assert code == 0, out[-2000:]
        assert (records[_id("")]["outcome"], records[_id("")]["attempts"]) == ("flaky", 2)
    else:
        assert code == 1, out[-2000:]
        assert records[_id("")]["outcome"] == "failed" and "the first execution fails" in records[_id("")]["message"]


def test_a_timeout_fails_the_mode_in_flight_and_names_it_for_the_modes_after(tmp_path, relu_corpus):
    """pytest-timeout (3 s) ends the item while the async mode waits on a lost callback (wait
    limit 60 s): the base mode before it passed, async fails with the timeout, burst after
    it is reported failed, naming async; each test once."""
    code, records, out = run_cts(tmp_path, "--corpus", relu_corpus, "--mode", "sync,async,burst", "-k", "not internal",
                                 "--driver", "tests.broken_drivers:LostAsyncCallback", "--wait-limit", "60",
                                 "--timeout", "3")
    assert code == 1, out[-2000:]
    assert sorted(records) == sorted(_id(m) for m in ("", "async", "burst"))
    assert records[_id("")]["outcome"] == "passed"
    assert records[_id("async")]["outcome"] == "failed" and "Timeout" in records[_id("async")]["message"]
    assert records[_id("burst")]["outcome"] == "failed"
    assert f"not run: {_id('async')} ended its item" in records[_id("burst")]["message"]
