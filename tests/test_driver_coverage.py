"""``--driver-coverage``: the driver's own files found from its spec, the figures of a known
path in and out of process (pytest-xdist workers and driver hosts combined), the report page
section as Chromium shows it, the certificate's per-suite summary, and bad values as one line,
exit 2. The expected lines are found by their text in the driver's source and judged by
reading it: a sync CTS run of ADD validates and runs each request, never with a deadline, and
never allocates a driver buffer (memory domains are the VTS's)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nncts.certify_suites import _pytest_suite, driver_coverage_summary
from reports.driver_coverage import load
from runtime.drivers.code_coverage import driver_sources
from tests.browser import needs_chromium, rendered_dom
from tests.cts_run import ROOT

SAMPLE = ROOT / "runtime" / "drivers" / "sample.py"


def _line(path: Path, text: str) -> int:
    """The number of the one line of ``path`` containing ``text``."""
    found = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


def _nncts(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nncts.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def add_corpus(tmp_path_factory) -> Path:
    """A corpus of V1_0 add.json.gz alone: two float32 ADD models."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "V1_0").mkdir()
    shutil.copy(ROOT / "cts" / "corpus" / "V1_0" / "add.json.gz", root / "V1_0")
    return root


def test_the_driver_own_files_come_from_its_spec():
    """sample.py imports sample_cache (at the top) and buffers (in two methods); variants.py
    imports sample; a factory in a package's __init__ measures the package."""
    drivers = ROOT / "runtime" / "drivers"
    assert set(driver_sources("sample")) == {str(drivers / n) for n in ("sample.py", "sample_cache.py", "buffers.py")}
    assert set(driver_sources("sample-quant").values()) == {
        "runtime/drivers/sample.py", "runtime/drivers/sample_cache.py", "runtime/drivers/buffers.py",
        "runtime/drivers/variants.py"}
    onnx = driver_sources("onnxruntime")
    assert set(onnx) == {str(p) for p in (drivers / "onnxrt").glob("*.py")}
    assert list(driver_sources("tests.broken_drivers:OffByTwoQuantaAdd").values()) == ["tests/broken_drivers.py"]


def _check_known_path(doc: dict, process: str) -> None:
    assert doc["driver"] == "sample" and doc["process"] == process
    files = {f["path"]: f for f in doc["files"]}
    assert set(files) == {"runtime/drivers/sample.py", "runtime/drivers/sample_cache.py", "runtime/drivers/buffers.py"}
    sample = files["runtime/drivers/sample.py"]
    reached = _line(SAMPLE, "validate_request(request, self.model)")
    deadline = _line(SAMPLE, '"deadline passed before execution"')
    allocate = _line(SAMPLE, "return allocate_buffer(self, desc")
    assert reached not in sample["missing_lines"]
    assert deadline in sample["missing_lines"] and allocate in sample["missing_lines"]
    assert _line(SAMPLE, "def get_name(self)") not in sample["missing_lines"]   # run at import
    # the deadline test only ever went one way: the way into the raise is a missing branch
    assert [deadline - 1, deadline] in sample["missing_branches"]
    for f in files.values():
        assert f["covered_lines"] == f["statements"] - len(f["missing_lines"])
        assert 0 <= f["partial_branches"] <= f["branches"]
    totals = doc["totals"]
    assert totals["statements"] == sum(f["statements"] for f in files.values())
    assert totals["line_percent"] == round(100 * totals["covered_lines"] / totals["statements"], 1)


@pytest.fixture(scope="module")
def in_process(add_corpus, tmp_path_factory) -> Path:
    report = tmp_path_factory.mktemp("in-process")
    r = _nncts("cts", "--driver", "sample", "--corpus", str(add_corpus), "--report-dir", str(report),
               "--driver-coverage", "--mode", "sync", "-n", "0")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return report


def test_in_process_the_known_path_is_reached(in_process):
    doc = json.loads((in_process / "driver_coverage.json").read_text())
    _check_known_path(doc, "in process")
    assert not any(p.name.startswith("piece.") for p in (in_process / "driver-coverage-data").iterdir())


def test_out_of_process_with_two_workers_combines_the_driver_hosts(add_corpus, tmp_path):
    r = _nncts("cts", "--driver", "sample", "--driver-process", "--corpus", str(add_corpus), "--report-dir",
               str(tmp_path), "--driver-coverage", "--mode", "sync", "-n", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads((tmp_path / "driver_coverage.json").read_text())
    _check_known_path(doc, "out of process")


@needs_chromium
def test_the_page_shows_each_file_and_its_unreached_lines(in_process, tmp_path):
    doc = json.loads((in_process / "driver_coverage.json").read_text())
    sample = next(f for f in doc["files"] if f["path"] == "runtime/drivers/sample.py")
    dom = rendered_dom(tmp_path, in_process / "index.html")
    assert '<h2 id="driver-coverage">Driver code coverage</h2>' in dom
    assert "cts: driver sample (in process)" in dom
    assert "<code>runtime/drivers/sample.py</code>" in dom and sample["missing_ranges"] in dom
    assert f"{sample['covered_lines']}/{sample['statements']} ({sample['line_percent']:.1f}%)" in dom
    assert 'scope="col"' in dom and 'scope="row"' in dom   # header cells for screen readers


def test_the_certificate_summarizes_each_suite(in_process, tmp_path):
    summary = driver_coverage_summary(in_process)
    doc = json.loads((in_process / "driver_coverage.json").read_text())
    assert summary["lines"] == f"{doc['totals']['covered_lines']}/{doc['totals']['statements']}"
    assert summary["files"]["runtime/drivers/sample.py"]["not_reached"] == doc["files"][1]["missing_ranges"]
    assert driver_coverage_summary(tmp_path) == {}
    (tmp_path / "driver_coverage.json").write_text(json.dumps({"files": [{"path": "x", "statements": -1}]}))
    with pytest.raises(ValueError, match="driver_coverage.json: files\\[0\\]: statements"):
        load(tmp_path)

    class Args:
        driver, driver_process, driver_coverage, baseline, retries, jobs, quick = "sample", False, True, None, 0, 1, True
        profile, modes = "feature-level", "default"
    from harness.suites import suite
    assert "--driver-coverage" in _pytest_suite(Args, suite("cts"), tmp_path)


@pytest.mark.parametrize("args, message", [
    (["--driver-coverage", "no_such_module_xyz"], "--driver-coverage no_such_module_xyz: no module named 'no_such_module_xyz'"),
    (["--driver-coverage", "a,,b"], "is not a comma-separated list"),
    (["--driver-endpoint", "unix:/nonexistent.sock", "--driver-coverage"], "cannot measure a driver at --driver-endpoint"),
])
def test_a_bad_value_is_one_line_and_exit_2(add_corpus, tmp_path, args, message):
    r = _nncts("cts", "--corpus", str(add_corpus), "--report-dir", str(tmp_path / "r"), "-n", "0", *args)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
