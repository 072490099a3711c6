"""The corpus loader, ``--corpus DIR``, driver discovery and the ``nncts`` CLI reports."""
import gzip
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from runtime.loader import DriverNotFound, load_driver
from runtime.testing.test_model import iter_corpus
from tests.cts_run import ROOT, run_cts

CORPUS = ROOT / "cts" / "corpus"


def test_loader_counts_match_corpus_index():
    index = json.loads((CORPUS / "INDEX.json").read_text())
    for version in ("V1_0", "V1_1", "V1_3_cts_only"):
        models = list(iter_corpus([CORPUS / version]))
        assert len(models) == index["per_version"][version]["models"]
        assert len({m.test_id for m in models}) == len(models)


@pytest.fixture
def small_corpus(tmp_path):
    """A corpus directory in the same schema: two V1_0 spec files copied elsewhere."""
    d = tmp_path / "mycorpus" / "V1_0"
    d.mkdir(parents=True)
    for name in ("relu_float_1.json.gz", "conv_float_channels.json.gz"):
        shutil.copy(CORPUS / "V1_0" / name, d / name)
    n = sum(len(json.load(gzip.open(f))["models"]) for f in d.glob("*.json.gz"))
    return tmp_path / "mycorpus", n


def test_corpus_option_runs_exactly_that_directory(tmp_path, small_corpus):
    root, n = small_corpus
    code, records, out = run_cts(tmp_path, "--corpus", str(root))
    assert code == 0, out[-2000:]
    assert len(records) == n and all(r["outcome"] == "passed" for r in records.values())
    assert all(i.split("/")[1] in ("relu_float_1", "conv_float_channels") for i in records)


def test_specs_option_runs_our_specs_alone_or_next_to_a_corpus(tmp_path, small_corpus):
    root, n = small_corpus
    built = [m.test_id for m in iter_corpus([ROOT / "cts" / "specs" / "built"])]
    for extra, want in (((), len(built)), (("--corpus", str(root)), len(built) + n)):
        proc = subprocess.run([sys.executable, "-m", "pytest", "cts/test_generated.py", "--specs", *extra,
                               "--mode", "sync", "--collect-only", "-q", "-p", "no:cacheprovider"],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        ids = [line for line in proc.stdout.splitlines() if "::" in line]
        assert proc.returncode == 0 and len(ids) == want, proc.stdout[-2000:]
        assert sum("[SPECS/" in i for i in ids) == len(built)


def test_nncts_specs_check_and_bad_action():
    ok = subprocess.run([sys.executable, "-m", "nncts.cli", "specs", "check"], cwd=ROOT,
                        capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run([sys.executable, "-m", "nncts.cli", "specs", "bake"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice: 'bake'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_corpus_option_rejects_missing_directory(tmp_path):
    code, records, out = run_cts(tmp_path, "--corpus", str(tmp_path / "nope"))
    assert code != 0 and "no such directory" in out


def test_driver_discovery():
    assert load_driver("sample").get_name() == "nncts-sample"
    assert load_driver("tests.broken_drivers:DropsFusedActivation").get_feature_level() >= 2
    with pytest.raises(DriverNotFound, match="available: .*sample"):
        load_driver("no-such-driver")


def test_cli_writes_reports(tmp_path, small_corpus):
    root, n = small_corpus
    report = tmp_path / "rep"
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--corpus", str(root),
                           "--report-dir", str(report), "-k", "relu", "--mode", "sync"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "nncts summary per operation" in proc.stdout and "RELU" in proc.stdout
    suite = ET.parse(report / "junit.xml").getroot().find("testsuite")
    relu_models = [m for m in iter_corpus([root]) if "relu" in m.test_id]
    assert int(suite.get("tests")) == len(relu_models) and int(suite.get("failures")) == 0
    summary = json.loads((report / "summary.json").read_text())
    assert summary["totals"]["passed"] == len(relu_models)
    assert summary["per_operation"]["RELU"]["passed"] == len(relu_models)
    # every NNAPI operation has a row; those this run did not test say so
    assert len([op for op in summary["per_operation"] if op != "(none)"]) >= 106
    assert summary["per_operation"]["CONV_2D"] == {}
    assert re.search(r"^CONV_2D +0 +0 +0  no test$", proc.stdout, re.M)
    assert "operation(s) with no test in this run:" in proc.stdout
    assert "RELU" in (report / "index.html").read_text()
    lines = (report / "outcomes.jsonl").read_text().splitlines()
    assert len(lines) == len(relu_models)


def test_cli_unknown_driver_is_a_clear_error(tmp_path, small_corpus):
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--driver", "nope",
                           "--corpus", str(small_corpus[0]), "--report-dir", str(tmp_path / "r")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "no driver named 'nope'" in proc.stdout + proc.stderr


def test_cli_resume_runs_only_unrecorded_models(tmp_path, small_corpus):
    root, n = small_corpus
    report = tmp_path / "rep"
    cmd = [sys.executable, "-m", "nncts.cli", "cts", "--corpus", str(root), "--report-dir", str(report),
           "--mode", "sync", "-n", "0"]  # one process: pytest's summary line counts the deselected
    first = subprocess.run(cmd + ["-k", "relu"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout[-2000:]
    n_relu = len((report / "outcomes.jsonl").read_text().splitlines())
    second = subprocess.run(cmd + ["--resume"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-2000:]
    assert f"{n - n_relu} passed, {n_relu} deselected" in second.stdout
    ids = [json.loads(line)["id"] for line in (report / "outcomes.jsonl").read_text().splitlines()]
    assert len(ids) == n == len(set(ids))
