"""The ``nncts`` command.

``nncts cts [--driver NAME] [--corpus DIR]... [--report-dir DIR] [PYTEST ARGS...]`` runs the
CTS through pytest (extra arguments such as ``-n 2`` or ``-k conv`` go to pytest), prints
the per-operation summary, and writes ``junit.xml``, ``outcomes.jsonl``, ``summary.json``
and ``index.html`` into the report directory. ``nncts vts`` takes the same options and runs
the VTS package (the driver's HAL directly) the same way. ``nncts drivers`` lists the
drivers found.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from reports.html import write_reports
from runtime.drivers import DEFAULT_DRIVER, available_drivers


@dataclass(frozen=True)
class Suite:
    """How ``nncts <command>`` runs one suite through pytest: what to collect, the suite's
    pytest plugins, the junit suite name and the report title."""

    command: str
    title: str
    paths: tuple[str, ...]
    plugins: tuple[str, ...]


def _package_dir(name: str) -> Path:
    return Path(importlib.import_module(name).__file__).resolve().parent


def _suites() -> dict[str, Suite]:
    cts_dir, vts_dir = _package_dir("cts"), _package_dir("vts")
    return {
        "cts": Suite("cts", "nncts CTS", (str(cts_dir / "test_generated.py"),), ("cts.plugin",)),
        # the VTS package: generated tests on every execution path, device tests, validation
        "vts": Suite("vts", "nncts VTS", (str(vts_dir),),
                     tuple(p for p in ("vts.plugin",) if importlib.util.find_spec(p) is not None)),
    }


def _run_suite(suite: Suite, args, extra) -> int:
    """Run ``suite`` with pytest: shared options (--driver, --corpus, --timeout, --resume),
    outcome records and junit.xml in the report directory, then summary.json and
    index.html. Returns pytest's exit code."""
    report_dir = Path(args.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    records = report_dir / "outcomes.jsonl"
    if records.exists() and not args.resume:
        records.unlink()
    pytest_args = [*suite.paths, "-p", "nncts.pytest_plugin"]
    for plugin in suite.plugins:
        pytest_args += ["-p", plugin]
    pytest_args += ["-p", "no:cacheprovider",
                    "--driver", args.driver, "--nncts-report", str(report_dir),
                    "--junitxml", str(report_dir / "junit.xml"), "-o", f"junit_suite_name=nncts-{suite.command}",
                    "-o", "console_output_style=count", "--timeout", str(args.timeout)]
    if args.resume:
        pytest_args.append("--nncts-resume")
    for c in args.corpus:
        pytest_args += ["--corpus", c]
    code = int(pytest.main(pytest_args + extra))
    if records.exists():
        paths = write_reports(records, report_dir, title=f"{suite.title}: driver {args.driver}",
                              meta={"driver": args.driver, "suite": suite.command,
                                    "corpus": args.corpus or ["vendored AOSP corpus", "cts/specs/built"],
                                    "pytest_exit_code": code})
        print("report:", ", ".join(str(p) for p in [report_dir / "junit.xml", records, *paths]))
    return code


def _cts(args, extra) -> int:
    return _run_suite(_suites()["cts"], args, extra)


def _vts(args, extra) -> int:
    return _run_suite(_suites()["vts"], args, extra)


def _add_suite_parser(sub, name: str, help_text: str, timeout_help: str):
    p = sub.add_parser(name, help=help_text)
    p.add_argument("--driver", default=DEFAULT_DRIVER,
                   help="bundled name, entry point in group nncts.drivers, or module:factory")
    p.add_argument("--corpus", action="append", default=[], help="corpus directory (repeatable)")
    p.add_argument("--report-dir", default="nncts-report", help="where reports go (default: nncts-report)")
    p.add_argument("--resume", action="store_true",
                   help="keep the report directory's outcomes and run only the tests not recorded yet")
    p.add_argument("--timeout", type=float, default=300, help=timeout_help)
    return p


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nncts", description="NNAPI driver conformance tests")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_suite_parser(sub, "cts", "run the CTS (golden test models) against a driver; unknown arguments go to "
                                  "pytest", "seconds one test model may take before it counts as a hang (default 300)")
    _add_suite_parser(sub, "vts", "run the VTS (the driver's HAL directly: every corpus model on every "
                                  "execution path, device, memory domain, caching, deadline and validation "
                                  "tests) against a driver; unknown arguments go to pytest",
                      "seconds one test may take before it counts as a hang (default 300)")
    sub.add_parser("drivers", help="list the drivers that --driver accepts by name")
    args, extra = parser.parse_known_args(argv)
    if args.command == "drivers":
        print("\n".join(available_drivers()))
        return 0
    if extra and args.command not in ("cts", "vts"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return _cts(args, extra) if args.command == "cts" else _vts(args, extra)


if __name__ == "__main__":
    sys.exit(main())
