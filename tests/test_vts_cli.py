"""``nncts vts``: runs the VTS package through pytest with the shared plugin and writes the
same reports as ``nncts cts`` (junit.xml, outcomes.jsonl, summary.json, index.html)."""
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from harness.records import read_records
from runtime.testing.test_model import iter_corpus
from tests.cts_run import ROOT
from vts.hal_harness import PATHS

CORPUS = ROOT / "cts" / "corpus"


@pytest.fixture
def relu_corpus(tmp_path):
    """A corpus directory of one V1_0 spec (relu_float_1) and its models."""
    d = tmp_path / "mycorpus" / "V1_0"
    d.mkdir(parents=True)
    shutil.copy(CORPUS / "V1_0" / "relu_float_1.json.gz", d / "relu_float_1.json.gz")
    root = tmp_path / "mycorpus"
    return root, list(iter_corpus([root]))


def _vts(tmp_path, *args):
    report = tmp_path / "rep"
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "vts", "--report-dir", str(report), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return proc, report


def test_vts_cli_writes_reports(tmp_path, relu_corpus):
    root, models = relu_corpus
    proc, report = _vts(tmp_path, "--corpus", str(root), "-k", "test_generated_hal and relu")
    out = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, out
    assert "nncts summary per operation" in proc.stdout and "RELU" in proc.stdout
    n = len(models) * len(PATHS)
    suite = ET.parse(report / "junit.xml").getroot().find("testsuite")
    assert suite.get("name") == "nncts-vts"
    assert int(suite.get("tests")) == n and int(suite.get("failures")) == 0
    records = read_records(report / "outcomes.jsonl")
    assert len(records) == n
    assert {r["suite"] for r in records} == {"vts"}
    assert {r["mode"] for r in records} == set(PATHS)
    assert {r["id"] for r in records} == {f"{tm.test_id}@{p}" for tm in models for p in PATHS}
    summary = json.loads((report / "summary.json").read_text())
    assert summary["totals"]["passed"] == n
    assert summary["meta"]["suite"] == "vts"
    assert set(summary["per_mode"]) == set(PATHS)
    assert "RELU" in (report / "index.html").read_text()


def test_vts_cli_fails_a_broken_driver(tmp_path, relu_corpus):
    root, models = relu_corpus
    proc, report = _vts(tmp_path, "--corpus", str(root), "--driver", "tests.broken_drivers:WrongOutputShape",
                        "-k", "test_generated_hal and relu")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = read_records(report / "outcomes.jsonl")
    failed = {r["id"] for r in records if r["outcome"] == "failed"}
    # fenced executions report no shapes, so only the four other paths see the wrong shape
    assert failed == {f"{tm.test_id}@{p}" for tm in models for p in PATHS if p != "fenced"}
    assert all("dimensions" in r["message"] for r in records if r["outcome"] == "failed")
    summary = json.loads((report / "summary.json").read_text())
    assert summary["totals"]["failed"] == len(failed)


def test_vts_cli_runs_device_tests(tmp_path, relu_corpus):
    root, _ = relu_corpus
    proc, report = _vts(tmp_path, "--corpus", str(root), "-k", "test_device and (test_burst or test_capabilities)")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = read_records(report / "outcomes.jsonl")
    assert records and all(r["outcome"] == "passed" and r["suite"] == "vts" for r in records)
    assert {r["mode"] for r in records} == {"burst-validation", "device"}


def test_vts_cli_unknown_driver_is_a_clear_error(tmp_path, relu_corpus):
    proc, _ = _vts(tmp_path, "--driver", "nope", "--corpus", str(relu_corpus[0]), "-k", "test_generated_hal")
    assert proc.returncode != 0
    assert "no driver named 'nope'" in proc.stdout + proc.stderr
