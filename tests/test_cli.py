"""The ``nncts`` command line: every bad argument is one line on stderr and exit code 2
before any test starts; the suites print progress lines with an ETA (harness.progress)."""
from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import time

import pytest

from nncts.preflight import OneLineUsageErrors, PytestUsageError
from harness.progress import Progress, outcome_of
from harness.records import read_records
from tests.cts_run import ROOT, run_cts

CORPUS = ROOT / "cts" / "corpus"
#: Two V1_0 spec files: 2 RELU models and 4 CONV_2D models (counted from the files below).
SMALL = ("relu_float_1.json.gz", "conv_float_channels.json.gz")


def _nncts(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m nncts.cli ARGS`` in the project root (tests.broken_drivers importable)."""
    return subprocess.run([sys.executable, "-m", "nncts.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def small_corpus(tmp_path):
    """A corpus directory of the two SMALL spec files; returns (root, number of models)."""
    d = tmp_path / "corpus" / "V1_0"
    d.mkdir(parents=True)
    for name in SMALL:
        shutil.copy(CORPUS / "V1_0" / name, d / name)
    n = sum(len(json.load(gzip.open(f))["models"]) for f in d.glob("*.json.gz"))
    return tmp_path / "corpus", n


def _bad_corpus(tmp_path, kind: str) -> str:
    d = tmp_path / f"bad-{kind}" / "V1_0"
    d.mkdir(parents=True)
    if kind == "field":
        (d / "broken.json.gz").write_bytes(gzip.compress(b'{"models": [{"name": "x"}]}'))
    else:
        (d / "broken.json.gz").write_bytes(b"not gzip at all")
    return str(d.parent)


def _setup(tmp_path) -> dict:
    (tmp_path / "a-file").write_text("")
    (tmp_path / "baseline.toml").write_text('[[known_failure]]\nid = "x"\nreason = "r"\nlink = "l"\nbogus = 1\n')
    return {"BADFIELD": _bad_corpus(tmp_path, "field"), "NOTGZIP": _bad_corpus(tmp_path, "gzip"),
            "UNDERFILE": str(tmp_path / "a-file" / "report"), "BASELINE": str(tmp_path / "baseline.toml"),
            "MISSING": str(tmp_path / "missing"), "EMPTY": _empty_corpus(tmp_path)}


def _empty_corpus(tmp_path) -> str:
    d = tmp_path / "empty-corpus" / "V1_0"
    d.mkdir(parents=True)
    return str(d.parent)


#: (command line, text the one stderr line must contain). Placeholders are filled by _setup.
USAGE_ERRORS = [
    ("cts --driver nope", "--driver: no driver named 'nope'"),
    ("cts --driver nosuchmodule_xyz:make", "--driver: cannot load driver 'nosuchmodule_xyz:make'"),
    ("vts --driver runtime.drivers.sample:Nope", "has no attribute 'Nope'"),
    ("random-graph --driver nope", "nncts random-graph: error: no driver named 'nope'"),
    ("mlts --driver nope", "nncts mlts: error: no driver named 'nope'"),
    ("cts --driver nope --driver-process", "no driver named 'nope'"),
    ("cts --corpus MISSING", "--corpus: no such directory"),
    ("cts --corpus BADFIELD -n 2", "broken.json.gz: model x: missing field 'main'"),
    ("vts --corpus BADFIELD", "missing field 'main'"),
    ("cts --corpus NOTGZIP", "broken.json.gz: cannot read"),
    ("cts --shard 3/2", "--shard"),
    ("cts --shard x", "--shard"),
    ("cts --mode bogus", "--mode: unknown mode 'bogus'"),
    ("cts --mode", "argument --mode: expected one argument"),
    ("cts --baseline MISSING", "--baseline: "),
    ("cts --baseline BASELINE", "unknown key(s) bogus"),
    ("cts --profile MISSING", "--profile: "),
    ("cts --timeout 0", "--timeout: must be a positive number of seconds, got 0"),
    ("vts --timeout -5", "--timeout: must be a positive number of seconds, got -5"),
    ("cts --driver-timeout 0", "--driver-timeout: must be a positive"),
    ("cts --timeout abc", "argument --timeout: invalid float value: 'abc'"),
    ("cts --report-dir UNDERFILE", "--report-dir"),
    ("cts --no-such-option", "unrecognized arguments: --no-such-option"),
    ("cts --retries x", "argument --retries: invalid int value: 'x'"),
    ("cts --retries -1", "--retries: must be at least 0"),
    ("vts --vts-kind bogus", "--vts-kind: unknown kind(s) bogus"),
    ("cts MISSING", "file or directory not found"),
    ("random-graph --seeds 0", "--seeds: must be at least 1"),
    ("cts --wait-limit -1", "--wait-limit: must be a positive number of seconds, got -1"),
    ("vts --wait-limit 0", "--wait-limit: must be a positive number of seconds, got 0"),
    ("cts --wait-limit x", "argument --wait-limit: invalid float value: 'x'"),
    ("cts --driver os:path", "--driver os:path: "),
    ("cts --corpus EMPTY", "--corpus: no test model in"),
    ("bogus", "invalid choice: 'bogus'"),
    ("drivers --x", "nncts drivers: error: unrecognized arguments: --x"),
]


@pytest.mark.parametrize("line,expected", USAGE_ERRORS, ids=[c for c, _ in USAGE_ERRORS])
def test_bad_argument_is_one_line_and_exit_2_before_any_test(tmp_path, line, expected):
    paths = _setup(tmp_path)
    args = [paths.get(a, a) for a in line.split()]
    report = tmp_path / "report"
    if "--report-dir" not in args and args[0] in ("cts", "vts", "random-graph", "mlts"):
        args[1:1] = ["--report-dir", str(report)]
    start = time.monotonic()
    proc = _nncts(*args, timeout=120)
    took = time.monotonic() - start
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert lines[0].startswith("nncts"), lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (report / "outcomes.jsonl").exists(), "a test ran"
    assert not report.exists() and not list(tmp_path.glob("report.partial-*")), "the report directory was touched"
    assert took < 60


def test_usage_error_while_collecting_leaves_pytest_as_one_line(tmp_path):
    """The plugin object turns a UsageError raised by pytest_generate_tests (a collection
    error in pytest) into PytestUsageError, its lines joined into one; a clean run is
    untouched."""
    bad = tmp_path / "test_bad.py"
    bad.write_text("import pytest\n\ndef pytest_generate_tests(metafunc):\n"
                   "    raise pytest.UsageError('--thing: bad\\nvalue')\n\ndef test_x():\n    pass\n")
    with pytest.raises(PytestUsageError, match=r"^--thing: bad; value$"):
        pytest.main([str(bad), "-q", "-p", "no:cacheprovider"], plugins=[OneLineUsageErrors()])
    good = tmp_path / "test_good.py"
    good.write_text("def test_x():\n    pass\n")
    assert pytest.main([str(good), "-q", "-p", "no:cacheprovider"], plugins=[OneLineUsageErrors()]) == 0


class _Report:
    def __init__(self, when, outcome, **extra):
        self.when, self.outcome = when, outcome
        self.passed, self.failed, self.skipped = outcome == "passed", outcome == "failed", outcome == "skipped"
        self.nncts = None
        self.__dict__.update(extra)


def test_outcome_of_counts_each_test_once():
    assert outcome_of(_Report("setup", "passed")) is None
    assert outcome_of(_Report("call", "passed")) == "passed"
    assert outcome_of(_Report("teardown", "failed")) is None
    assert outcome_of(_Report("setup", "skipped")) == "skipped"
    assert outcome_of(_Report("setup", "failed")) == "failed"
    assert outcome_of(_Report("call", "rerun")) is None
    assert outcome_of(_Report("call", "passed", rerun=1)) == "flaky"
    assert outcome_of(_Report("call", "skipped", wasxfail="")) == "known failures"
    unexpected = _Report("call", "failed", nncts={"expectation": "unexpected_pass"})
    assert outcome_of(unexpected) == "unexpected passes"


def test_progress_line_rate_and_eta():
    p = Progress(None, "cts", 5.0)
    p.total = 70321
    p.counts.update({"passed": 12300, "failed": 3, "skipped": 42})
    # 12,345 done in 102.4 s: 120.6 tests/s; 57,976 left: 480.9 s -> 08:00
    assert p.line(p.start + 102.4) == ("[cts] 12,345/70,321 (17.6%)  passed 12,300  failed 3  skipped 42  "
                                       "120.6 tests/s  elapsed 01:42  ETA 08:00")
    p.counts["flaky"] = 2
    assert "skipped 42  flaky 2  " in p.line(p.start + 1)
    assert Progress(None, "vts", 5.0).line(0.0).endswith("? tests/s  elapsed 00:00  ETA ?")


PROGRESS_LINE = re.compile(r"^\[cts\] (\d+)/(\d+) \(([\d.]+)%\)  passed (\d+)  failed (\d+)  skipped (\d+)  "
                           r"[\d.]+ tests/s  elapsed \d\d:\d\d  ETA (\S+)$", re.M)


def test_cli_progress_lines_with_totals_and_eta(tmp_path, small_corpus):
    """A run through the command line on a driver that fails (it never writes its outputs):
    one progress line per test (--nncts-progress-every 0) counting up to the total, the
    last at 100% with ETA 00:00 and the same counts as the records; no per-test dots."""
    root, n = small_corpus
    report = tmp_path / "report"
    proc = _nncts("cts", "--corpus", str(root), "--mode", "sync", "--report-dir", str(report),
                  "--driver", "tests.broken_drivers:NeverWritesOutputs", "--nncts-progress-every", "0")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    lines = PROGRESS_LINE.findall(proc.stdout)
    assert [int(done) for done, *_ in lines] == [*range(1, n + 1), n]  # one per test, then the final one
    assert {int(total) for _, total, *_ in lines} == {n}
    done, total, pct, passed, failed, skipped, eta = lines[-1]
    assert (pct, eta) == ("100.0", "00:00")
    records = read_records(report / "outcomes.jsonl")
    assert len(records) == n
    assert int(failed) == sum(r["outcome"] == "failed" for r in records) > 0
    assert int(passed) == sum(r["outcome"] == "passed" for r in records)
    assert not re.search(r"^[.FEsx]+$", proc.stdout, re.M), "per-test letters were written"
    assert "short test summary info" in proc.stdout and "FAILED" in proc.stdout
    assert all((report / f).exists() for f in ("junit.xml", "summary.json", "index.html"))


def test_progress_total_under_xdist_is_the_selected_count(tmp_path, small_corpus):
    root, n = small_corpus
    proc = _nncts("cts", "--corpus", str(root), "--mode", "sync", "--report-dir", str(tmp_path / "r"),
                  "-k", "relu", "-n", "2")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    lines = PROGRESS_LINE.findall(proc.stdout)
    assert lines and lines[-1][:4] == ("2", "2", "100.0", "2")  # the 2 RELU models of the 6


def test_plain_pytest_shows_no_progress(tmp_path, small_corpus):
    code, records, out = run_cts(tmp_path, "--corpus", str(small_corpus[0]), "-k", "relu")
    assert code == 0 and len(records) == 2
    assert not PROGRESS_LINE.search(out) and "tests/s" not in out
