"""``--driver-coverage``: which lines and branches of the driver under test's own Python
source a run reaches (coverage.py; pytest plugin part of :mod:`harness.plugin`).

The files measured are the driver's own (:func:`runtime.drivers.code_coverage.driver_sources`:
the module or package of its factory, found from ``--driver``), or with
``--driver-coverage MODULE[,MODULE...]`` those modules' (each as the driver's would be). Every
process that runs driver code measures itself and writes its own data file into the run's data
directory (``<report dir>/driver-coverage-data/``, a temporary directory without
``--nncts-report``): the test process, each pytest-xdist worker (``-n 2``) and, with
``--driver-process``, each driver host process the run starts (the harness names the file on
the host's command line, :func:`runtime.remote.client.set_host_coverage`; the host measures
itself from before the driver is imported and writes its data when it is stopped). At the end
of the session the controller combines them (into ``driver-coverage-data/combined``, which a
``pytest --nncts-resume`` run adds to; ``nncts --resume`` starts it afresh) and writes ``driver_coverage.json`` into the report directory::

    {"driver": "sample", "process": "in process", "sources": "auto", "totals": {...},
     "files": [{"path": "runtime/drivers/sample.py", "statements": 120, "covered_lines": 110,
                "missing_lines": [47, 48], "missing_ranges": "47-48", "branches": 40,
                "covered_branches": 33, "partial_branches": 5, "missing_branches": [[60, 62]],
                "line_percent": 91.7, "branch_percent": 82.5, "percent": 89.4}, ...]}

``percent`` is coverage.py's (lines and branches together); a file the run never entered is
listed with every line missing. The report page shows it (:mod:`reports.driver_coverage`).
Usage errors (one line): coverage.py not installed, a module that has no Python source,
``--driver-endpoint`` (a host someone else started cannot be measured). A driver host that
crashed or hung (killed) wrote no data: what it ran before is not counted.

In process, the CPU fallback device of the runtime (:class:`runtime.nnapi.device.CpuReferenceDevice`,
a subclass of the sample driver) runs the sample driver's code too when a compilation falls back
to it; ``--driver-process`` measures the driver under test alone.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from runtime.drivers import DriverNotFound
from runtime.drivers.code_coverage import Measurement, coverage_missing, driver_sources, source_files
from runtime.remote import client

#: The report directory's file, and its folder of raw coverage.py data files.
REPORT_FILE, DATA_DIR, COMBINED = "driver_coverage.json", "driver-coverage-data", "combined"
#: ``--driver-coverage``'s value for the driver's own files.
AUTO = "auto"
#: The numbers of a file and of the totals, in the order the page shows them.
NUMBERS = ("statements", "covered_lines", "branches", "covered_branches", "partial_branches")


def pytest_addoption(parser):
    g = parser.getgroup("nncts", "nncts driver certification")
    g.addoption("--driver-coverage", nargs="?", const=AUTO, default=None, metavar="MODULES",
                help="measure which lines and branches of the driver's own Python source the run reaches "
                     "(coverage.py; in the test processes and, with --driver-process, the driver processes): "
                     "driver_coverage.json and a section of the report page; MODULES (comma-separated) "
                     "measures those modules or packages instead of the driver's own (default: auto)")


def sources(config) -> dict[str, str]:
    """``{absolute path: display path}`` of the files ``--driver-coverage`` measures; {} when
    it is off. Raises pytest.UsageError (one line) as the module docstring says."""
    value = config.getoption("driver_coverage", None)
    if value is None:
        return {}
    if missing := coverage_missing():
        raise pytest.UsageError(f"--driver-coverage: {missing}")
    if config.getoption("driver_endpoint", None):
        raise pytest.UsageError("--driver-coverage: cannot measure a driver at --driver-endpoint (a host this run "
                                "did not start); use --driver-process")
    try:
        if value == AUTO:
            return driver_sources(config.getoption("driver"))
        names = [n.strip() for n in value.split(",")]
        if not all(names):
            raise DriverNotFound(f"{value!r} is not a comma-separated list of module names")
        out = {}
        for name in names:
            out.update(source_files(name))
        return out
    except DriverNotFound as e:
        raise pytest.UsageError(f"--driver-coverage {value}: {e}") from None


def _data_dir(config) -> Path:
    if hasattr(config, "workerinput"):
        return Path(config.workerinput["nncts_driver_coverage"])
    report = config.getoption("nncts_report", None)
    if report:
        path = Path(report) / DATA_DIR
        if path.exists() and not config.getoption("nncts_resume"):
            shutil.rmtree(path)
    else:
        path = Path(tempfile.mkdtemp(prefix="nncts-driver-coverage-"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Resolve the files, choose the data directory, and start measuring this process (in
    process) or have the driver hosts measure themselves (``--driver-process``)."""
    files = sources(config)
    config._nncts_driver_coverage = None
    if not files:
        return
    data = _data_dir(config)
    role = config.workerinput["workerid"] if hasattr(config, "workerinput") else "main"
    measurement = None
    if config.getoption("driver_process", False):
        client.set_host_coverage(str(data / f"host.{role}"), config.getoption("driver_coverage"))
    else:
        measurement = Measurement(files, str(data / f"piece.{role}.{os.getpid()}"))
        measurement.start()
    config._nncts_driver_coverage = {"files": files, "dir": data, "measurement": measurement}


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: each worker writes into the controller's data directory."""
    state = getattr(node.config, "_nncts_driver_coverage", None)
    if state:
        node.workerinput["nncts_driver_coverage"] = str(state["dir"])


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """Stop measuring (the driver hosts stopped, so they write theirs); the controller then
    combines every data file and writes ``driver_coverage.json``."""
    config = session.config
    state = getattr(config, "_nncts_driver_coverage", None)
    if not state:
        return
    if state["measurement"] is not None:
        state["measurement"].stop()
    else:
        client.close_devices()
        client.set_host_coverage(None)
    if hasattr(config, "workerinput"):
        return
    doc = combine(state["dir"], state["files"])
    doc.update(driver=config.getoption("driver"), sources=config.getoption("driver_coverage"),
               process="out of process" if config.getoption("driver_process", False) else "in process")
    state["doc"] = doc
    report = config.getoption("nncts_report", None)
    if report:
        Path(report, REPORT_FILE).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    else:
        shutil.rmtree(state["dir"], ignore_errors=True)


def pytest_terminal_summary(terminalreporter, config):
    doc = (getattr(config, "_nncts_driver_coverage", None) or {}).get("doc")
    if not doc:
        return
    terminalreporter.section("driver code coverage (lines, branches)")
    for f in [*doc["files"], dict(doc["totals"], path="total")]:
        terminalreporter.write_line(f"{f['path']:<50} lines {f['covered_lines']}/{f['statements']} "
                                    f"({f['line_percent']:.1f}%), branches {f['covered_branches']}/{f['branches']} "
                                    f"({f['branch_percent']:.1f}%)"
                                    + (f"; not reached: {f['missing_ranges']}" if f.get("missing_ranges") else ""))


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 100.0


def _figures(numbers: dict) -> dict:
    covered = numbers["covered_lines"] + numbers["covered_branches"]
    return dict(numbers, line_percent=_percent(numbers["covered_lines"], numbers["statements"]),
                branch_percent=_percent(numbers["covered_branches"], numbers["branches"]),
                percent=_percent(covered, numbers["statements"] + numbers["branches"]))


def combine(data_dir: Path, files: dict[str, str]) -> dict:
    """Combine the data files in ``data_dir`` (adding to its ``combined`` file, then removing
    them) and summarize ``files`` (``{absolute path: display path}``): ``{"files": [...],
    "totals": {...}}`` as the module docstring shows."""
    import coverage
    from coverage.results import format_lines
    data_dir = Path(data_dir)
    cov = coverage.Coverage(data_file=str(data_dir / COMBINED), branch=True, include=list(files),
                            config_file=False, auto_data=False)
    cov.load()
    pieces = sorted(str(p) for p in data_dir.iterdir() if p.name != COMBINED and not p.name.endswith("-journal"))
    if pieces:
        cov.combine(pieces, strict=False, keep=False)
    data = cov.get_data()
    data.add_arcs({})   # branch data even when no process measured anything
    data.touch_files([f for f in files if f not in set(data.measured_files())])
    cov.save()
    with tempfile.TemporaryDirectory() as tmp:
        cov.json_report(outfile=f"{tmp}/c.json", include=list(files), ignore_errors=True)
        measured = json.loads(Path(tmp, "c.json").read_text(encoding="utf-8"))["files"]
    by_path = {str(Path(k).resolve()): v for k, v in measured.items()}
    rows, totals = [], dict.fromkeys(NUMBERS, 0)
    for path, shown in sorted(files.items(), key=lambda kv: kv[1]):
        entry = by_path.get(path, {"summary": {}, "missing_lines": [], "executed_lines": [], "missing_branches": []})
        s = entry["summary"]
        numbers = {"statements": s.get("num_statements", 0), "covered_lines": s.get("covered_lines", 0),
                   "branches": s.get("num_branches", 0), "covered_branches": s.get("covered_branches", 0),
                   "partial_branches": s.get("num_partial_branches", 0)}
        for k in NUMBERS:
            totals[k] += numbers[k]
        statements = sorted(entry["missing_lines"] + entry["executed_lines"])
        rows.append({"path": shown, **_figures(numbers), "missing_lines": entry["missing_lines"],
                     "missing_ranges": format_lines(statements, entry["missing_lines"]),
                     "missing_branches": entry.get("missing_branches", [])})
    return {"files": rows, "totals": _figures(totals), "coverage_version": coverage.__version__}


def unreached_by_all(docs: list[dict]) -> dict[str, list[int]]:
    """``{display path: lines}``: the lines of each file that no run of ``docs`` (the
    ``driver_coverage.json`` documents of several suites' runs) reached."""
    out: dict[str, set[int]] = {}
    for doc in docs:
        for f in doc["files"]:
            missing = set(f["missing_lines"])
            out[f["path"]] = out[f["path"]] & missing if f["path"] in out else missing
    return {path: sorted(lines) for path, lines in sorted(out.items())}


def main(argv=None) -> int:
    """``python -m harness.driver_coverage REPORT_DIR...``: per file, the lines that no run of
    those report directories (each with ``driver_coverage.json``) reached, as ranges, with the
    file's SHA-256 (``runtime/drivers/coverage_explained.toml`` records them). A directory
    without the file is one line on stderr, exit 2."""
    import argparse
    import hashlib
    import sys
    parser = argparse.ArgumentParser(prog="python -m harness.driver_coverage",
                                     description="the driver lines no run of the given report directories reached")
    parser.add_argument("report_dirs", nargs="+", metavar="REPORT_DIR")
    args = parser.parse_args(argv)
    docs = []
    for d in args.report_dirs:
        path = Path(d) / REPORT_FILE
        if not path.is_file():
            print(f"python -m harness.driver_coverage: error: {path}: no such file", file=sys.stderr)
            return 2
        docs.append(json.loads(path.read_text(encoding="utf-8")))
    root = Path(__file__).resolve().parents[1]
    for shown, lines in unreached_by_all(docs).items():
        source = root / shown
        digest = hashlib.sha256(source.read_bytes()).hexdigest() if source.is_file() else "?"
        print(f"{shown} sha256={digest} unreached={lines}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
