"""A report is never lost or mixed (nncts.rundir, harness.run_state): usage errors and
--collect-only leave an existing report byte-identical; SIGTERM ends a run with its records
kept and the page and summary.json marked interrupted (exit 143); --resume refuses the
records of another run fingerprint; a run killed outright (SIGKILL) is resumed from its
run directory."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.records import read_records
from harness.run_state import check_resume
from nncts.rundir import StagedReport
from tests.cts_run import ROOT

CORPUS = ROOT / "cts" / "corpus"
#: Two V1_0 spec files: 2 RELU models and 4 CONV_2D models.
SMALL = ("relu_float_1.json.gz", "conv_float_channels.json.gz")


def _nncts(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nncts.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _hashes(directory: Path) -> dict[str, str]:
    """relative path -> SHA-256 of every file below ``directory``."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def small_report(tmp_path_factory):
    """A finished report of the SMALL corpus on the sample driver (sync mode, one process),
    plus a file of the user's; returns (corpus root, report directory)."""
    tmp = tmp_path_factory.mktemp("small")
    corpus = tmp / "corpus" / "V1_0"
    corpus.mkdir(parents=True)
    for name in SMALL:
        shutil.copy(CORPUS / "V1_0" / name, corpus / name)
    report = tmp / "report"
    proc = _nncts("cts", "--corpus", str(corpus.parent), "--mode", "sync", "--report-dir", str(report), "-n", "0")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (report / "notes.txt").write_text("the user's own file\n")
    return corpus.parent, report


@pytest.fixture
def report_copy(small_report, tmp_path):
    corpus, report = small_report
    copy = tmp_path / "report"
    shutil.copytree(report, copy)
    return corpus, copy


def test_a_complete_run_says_so_and_records_its_fingerprint(small_report):
    _, report = small_report
    summary = json.loads((report / "summary.json").read_text())
    assert summary["status"] == summary["meta"]["status"] == "complete"
    run = json.loads((report / "run.json").read_text())
    assert run["fingerprint"]["driver"] == "nncts-sample (feature level 7)"
    assert run["fingerprint"]["modes"] == "sync" and len(run["fingerprint"]["corpus"]) == 64
    env = summary["meta"]["environment"]
    assert env["driver"] == "nncts-sample" and env["feature level"] == "7" and env["device type"] == "CPU"
    assert env["command line"].startswith("nncts cts --corpus ")
    assert "INTERRUPTED" not in (report / "index.html").read_text()
    assert not list(report.parent.glob("report.partial-*"))


NOTHING_PUBLISHED = [
    ["--bogus-flag"],
    ["--retries", "-1"],
    ["--wait-limit", "-1"],
    ["--wait-limit", "soon"],
    ["--mode", "bogus"],
    ["--driver", "os:path"],
    ["--collect-only"],
    ["-k", "matches_no_test_at_all"],
    ["no/such/test_path.py"],  # pytest's own usage error, after the run directory was made
]


@pytest.mark.parametrize("extra", NOTHING_PUBLISHED, ids=[" ".join(e) for e in NOTHING_PUBLISHED])
def test_usage_errors_and_listing_leave_the_report_byte_identical(report_copy, extra):
    corpus, report = report_copy
    before = _hashes(report)
    proc = _nncts("cts", "--corpus", str(corpus), "--mode", "sync", "--report-dir", str(report), "-n", "0", *extra)
    assert proc.returncode in (0, 2, 5), proc.stdout[-2000:] + proc.stderr[-2000:]
    if proc.returncode == 2:
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("nncts cts: error: "), proc.stderr
    assert _hashes(report) == before
    assert not list(report.parent.glob("report.partial-*")), "the run directory was left behind"


def test_resume_with_another_driver_is_refused_in_one_line(report_copy):
    corpus, report = report_copy
    before = _hashes(report)
    proc = _nncts("cts", "--corpus", str(corpus), "--mode", "sync", "--report-dir", str(report), "-n", "0",
                  "--resume", "--driver", "sample-quant")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stderr.splitlines() == [
        "nncts cts: error: --resume: the report directory holds records of another run (driver nncts-sample "
        "(feature level 7) -> nncts-sample-quant (feature level 7)); run without --resume or use another "
        "--report-dir"]
    assert _hashes(report) == before


def test_resume_with_the_same_fingerprint_runs_the_rest(report_copy):
    corpus, report = report_copy
    lines = (report / "outcomes.jsonl").read_text().splitlines()
    (report / "outcomes.jsonl").write_text(lines[0] + "\n")
    proc = _nncts("cts", "--corpus", str(corpus), "--mode", "sync", "--report-dir", str(report), "-n", "0",
                  "--resume")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    records = read_records(report / "outcomes.jsonl")
    assert len(records) == 6 and len({r["id"] for r in records}) == 6
    assert (report / "notes.txt").read_text() == "the user's own file\n"


def test_check_resume_names_every_changed_part_and_refuses_records_without_fingerprint():
    old = {"fingerprint": {"driver": "a (feature level 7)", "corpus": "c1", "modes": "sync", "nncts": "0.1.0"}}
    check_resume(old, dict(old["fingerprint"]))  # the same run: accepted
    new = {"driver": "a (feature level 7)", "corpus": "c2", "modes": "sync,async", "nncts": "0.1.0"}
    with pytest.raises(pytest.UsageError, match=r"\(corpus c1 -> c2; modes sync -> sync,async\)"):
        check_resume(old, new)
    with pytest.raises(pytest.UsageError, match="without a run fingerprint"):
        check_resume(None, new)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_publish_replaces_run_files_keeps_the_users_and_drops_stale_ones(tmp_path):
    final = tmp_path / "report"
    final.mkdir()
    for name, text in {"index.html": "old page", "shard.json": "{}", "notes.txt": "mine", "junit.xml": "old"}.items():
        (final / name).write_text(text)
    staged = StagedReport(final)
    stage = staged.start(resume=False)
    assert stage.parent == tmp_path and stage.name == f"report.partial-{os.getpid()}"
    for name in ("outcomes.jsonl", "junit.xml", "summary.json", "index.html"):
        (stage / name).write_text(f"new {name}")
    staged.publish()
    assert {p.name: p.read_text() for p in final.iterdir()} == {
        "outcomes.jsonl": "new outcomes.jsonl", "junit.xml": "new junit.xml", "summary.json": "new summary.json",
        "index.html": "new index.html", "notes.txt": "mine"}  # shard.json of an earlier sharded run: gone
    assert not stage.exists()


def test_resume_takes_the_records_of_a_run_killed_outright(tmp_path):
    final = tmp_path / "report"
    final.mkdir()
    (final / "outcomes.jsonl").write_text('{"id": "a", "outcome": "passed"}\n')
    killed = tmp_path / f"report.partial-{_dead_pid()}"
    killed.mkdir()
    time.sleep(0.01)
    (killed / "outcomes.jsonl").write_text('{"id": "a", "outcome": "passed"}\n{"id": "b", "outcome": "failed"}\n')
    (killed / "run.json").write_text('{"fingerprint": {}}')
    stage = StagedReport(final).start(resume=True)
    assert [r["id"] for r in read_records(stage / "outcomes.jsonl")] == ["a", "b"]
    assert (stage / "run.json").read_text() == '{"fingerprint": {}}'
    assert not killed.exists()
    StagedReport(final).discard()


def test_sigterm_marks_the_report_interrupted_and_keeps_the_records(tmp_path):
    """A CTS run of a few hundred tests (V1_2, sync, on two workers) over an old report of
    another driver: SIGTERM once records arrive; exit 143, the old page replaced by one with
    the INTERRUPTED banner, summary.json says interrupted, every record kept."""
    report = tmp_path / "report"
    report.mkdir()
    (report / "index.html").write_text("<h1>old report of driver OTHER</h1>")
    (report / "summary.json").write_text('{"status": "complete"}')
    cmd = [sys.executable, "-m", "nncts.cli", "cts", "--corpus", str(CORPUS / "V1_2"), "--mode", "sync",
           "-k", "pool", "--nncts-progress-every", "1", "--report-dir", str(report), "-n", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records = tmp_path / f"report.partial-{proc.pid}" / "outcomes.jsonl"
    deadline = time.monotonic() + 300
    while not (records.exists() and records.stat().st_size) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, out[-2000:] + err[-2000:]
    summary = json.loads((report / "summary.json").read_text())
    assert summary["status"] == summary["meta"]["status"] == "interrupted"
    kept = read_records(report / "outcomes.jsonl")
    assert 0 < len(kept) == sum(summary["totals"].get(k, 0) for k in ("passed", "failed", "skipped"))
    done, selected = (int(n.replace(",", "")) for n in re.findall(r"^\[cts\] ([\d,]+)/([\d,]+) ", out, re.M)[-1])
    assert done == len(kept) < selected, (done, selected)
    page = (report / "index.html").read_text()
    assert f"INTERRUPTED: {len(kept)} test" in page and "driver OTHER" not in page
    assert "interrupted" in err and not records.parent.exists()
