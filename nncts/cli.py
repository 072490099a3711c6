"""The ``nncts`` command.

``nncts cts [--driver NAME] [--corpus DIR]... [--report-dir DIR] [PYTEST ARGS...]`` runs the
CTS through pytest (extra arguments such as ``-n 2`` or ``-k conv`` go to pytest), prints
the per-operation summary, and writes ``junit.xml``, ``outcomes.jsonl``, ``summary.json``
and ``index.html`` into the report directory. ``nncts drivers`` lists the drivers found.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

import cts
from reports.html import write_reports
from runtime.drivers import DEFAULT_DRIVER, available_drivers


def _cts(args, extra) -> int:
    report_dir = Path(args.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    records = report_dir / "outcomes.jsonl"
    if records.exists() and not args.resume:
        records.unlink()
    test_file = Path(cts.__file__).resolve().parent / "test_generated.py"
    pytest_args = [str(test_file), "-p", "nncts.pytest_plugin", "-p", "cts.plugin", "-p", "no:cacheprovider",
                   "--driver", args.driver, "--nncts-report", str(report_dir),
                   "--junitxml", str(report_dir / "junit.xml"), "-o", "junit_suite_name=nncts-cts",
                   "-o", "console_output_style=count", "--timeout", str(args.timeout)]
    if args.resume:
        pytest_args.append("--nncts-resume")
    for c in args.corpus:
        pytest_args += ["--corpus", c]
    code = int(pytest.main(pytest_args + extra))
    if records.exists():
        paths = write_reports(records, report_dir, title=f"nncts CTS: driver {args.driver}",
                              meta={"driver": args.driver, "corpus": args.corpus or ["vendored AOSP corpus"],
                                    "pytest_exit_code": code})
        print("report:", ", ".join(str(p) for p in [report_dir / "junit.xml", records, *paths]))
    return code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nncts", description="NNAPI driver conformance tests")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("cts", help="run the CTS (golden test models) against a driver; "
                                   "unknown arguments go to pytest")
    p.add_argument("--driver", default=DEFAULT_DRIVER,
                   help="bundled name, entry point in group nncts.drivers, or module:factory")
    p.add_argument("--corpus", action="append", default=[], help="corpus directory (repeatable)")
    p.add_argument("--report-dir", default="nncts-report", help="where reports go (default: nncts-report)")
    p.add_argument("--resume", action="store_true",
                   help="keep the report directory's outcomes and run only the tests not recorded yet")
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds one test model may take before it counts as a hang (default 300)")
    sub.add_parser("drivers", help="list the drivers that --driver accepts by name")
    args, extra = parser.parse_known_args(argv)
    if args.command == "drivers":
        print("\n".join(available_drivers()))
        return 0
    if extra and args.command != "cts":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return _cts(args, extra)


if __name__ == "__main__":
    sys.exit(main())
