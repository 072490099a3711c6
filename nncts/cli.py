"""The ``nncts`` command.

``nncts cts [--driver NAME] [--corpus DIR]... [--specs] [--report-dir DIR] [PYTEST ARGS...]``
runs the CTS through pytest (extra arguments such as ``-n 2`` or ``-k conv`` go to pytest), prints
the per-operation summary, and writes ``junit.xml``, ``outcomes.jsonl``, ``summary.json``
and ``index.html`` into the report directory. ``nncts vts`` takes the same options and runs
the VTS package (the driver's HAL directly) the same way. ``nncts drivers`` lists the
drivers found. ``nncts coverage [--corpus DIR]... [--out DIR] [--op NAME]...`` prints the
coverage matrix (:mod:`cts.coverage`) and writes ``coverage.json`` and ``coverage.html``.
``nncts random-graph [--driver NAME] [--seeds N] [--config PATTERN]... [PYTEST ARGS...]`` runs
the random-graph suite (:mod:`random_graph`) the same way, reproducers under
``<report dir>/graphs``. ``nncts specs build|check`` builds our own golden specs (:mod:`cts.specs`) or checks the
built files are current (exit 1 naming the stale ones).
``nncts mlts [--driver NAME] [--models NAMES] [--report-dir DIR] [--quick]`` imports the bundled
TFLite models (:mod:`mlts.run`), benchmarks them against ai-edge-litert, checks their accuracy
and writes ``mlts.html``, ``mlts.json``, ``mlts.csv`` and ``mlts.jsonl`` (exit 1 when a model
failed or is outside tolerance). ``nncts mlts import MODEL.tflite`` prints the per-operator
mapping of any TFLite file. ``nncts stress ...`` runs the MLTS-style crash/hang stress tests
(:mod:`mlts.stress`; its own options). Misuse of these is one line on stderr, exit 2.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from nncts.preflight import OneLineUsageErrors, PytestUsageError, check_driver, check_suite_arguments, one_line
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
    cts_dir, vts_dir, rg_dir = _package_dir("cts"), _package_dir("vts"), _package_dir("random_graph")
    return {
        "random-graph": Suite("random-graph", "nncts random graphs", (str(rg_dir / "test_random_graph.py"),),
                              ("random_graph.plugin",)),
        "cts": Suite("cts", "nncts CTS", (str(cts_dir / "test_generated.py"),), ("cts.plugin",)),
        # the VTS package: generated tests on every execution path, device tests, validation
        "vts": Suite("vts", "nncts VTS", (str(vts_dir),),
                     tuple(p for p in ("vts.plugin",) if importlib.util.find_spec(p) is not None)),
    }


def _run_suite(suite: Suite, args, extra, suite_args: list[str] | None = None,
               suite_meta: dict | None = None) -> int:
    """Run ``suite`` with pytest: shared options (--driver, --corpus, --timeout, --resume),
    the suite's own (``suite_args``), outcome records and junit.xml in the report directory,
    progress lines with an ETA (:mod:`nncts.progress`; pytest's per-test dots off unless
    ``-v``), then summary.json and index.html (``suite_meta`` added to its run description).
    Bad arguments (:func:`nncts.preflight.check_suite_arguments`, and what pytest itself
    rejects) exit 2 with one line on stderr before any test starts. Returns pytest's exit
    code."""
    prog = f"nncts {suite.command}"
    try:
        report_dir = check_suite_arguments(args, extra)
    except ValueError as e:
        _usage_exit(prog, e)
    records = report_dir / "outcomes.jsonl"
    if records.exists() and not args.resume:
        records.unlink()
    pytest_args = [*suite.paths, "-p", "nncts.pytest_plugin"]
    for plugin in suite.plugins:
        pytest_args += ["-p", plugin]
    verbose = any(a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}) for a in extra)
    pytest_args += ["-p", "no:cacheprovider", *_driver_args(args), "--nncts-report", str(report_dir),
                    "--junitxml", str(report_dir / "junit.xml"), "-o", f"junit_suite_name=nncts-{suite.command}",
                    "-o", "console_output_style=classic", f"--nncts-progress={suite.command}",
                    *([] if verbose else ["-q"]), "--timeout", str(args.timeout), "-W", _IMPORTED_PLUGINS]
    if args.resume:
        pytest_args.append("--nncts-resume")
    corpus, specs = getattr(args, "corpus", None), getattr(args, "specs", False)
    for c in corpus or []:
        pytest_args += ["--corpus", c]
    if specs:
        pytest_args.append("--specs")
    pytest_args += suite_args or []
    try:
        code = int(pytest.main(pytest_args + extra, plugins=[OneLineUsageErrors()]))
    except PytestUsageError as e:
        if records.exists() and records.stat().st_size == 0:
            records.unlink()
        _usage_exit(prog, e)
    if records.exists():
        meta = {"driver": _driver_label(args), "suite": suite.command, "pytest_exit_code": code}
        if corpus is not None:
            meta["corpus"] = corpus + (["cts/specs/built"] if specs else []) or \
                ["vendored AOSP corpus", "cts/specs/built"]
        meta.update(suite_meta or {})
        paths = write_reports(records, report_dir, title=f"{suite.title}: driver {_driver_label(args)}", meta=meta)
        print("report:", ", ".join(str(p) for p in [report_dir / "junit.xml", records, *paths]))
    return code


#: Warning filter: the checks before pytest starts import plugin parts (nncts.sharding,
#: nncts.expectations, ...), which pytest then cannot assertion-rewrite; they need not be.
_IMPORTED_PLUGINS = "ignore:Module already imported so cannot be rewritten; nncts.:pytest.PytestAssertRewriteWarning"


def _usage_exit(prog: str, error) -> None:
    """Exit 2 with ``<prog>: error: <message>`` on one line of stderr."""
    sys.stderr.write(f"{prog}: error: {one_line(error)}\n")
    sys.exit(2)


def _driver_args(args) -> list[str]:
    """pytest options naming the driver: --driver, and --driver-process / --driver-endpoint /
    --driver-timeout when given."""
    out = ["--driver", args.driver]
    if getattr(args, "driver_process", False):
        out.append("--driver-process")
    if getattr(args, "driver_endpoint", None):
        out += ["--driver-endpoint", args.driver_endpoint]
    if getattr(args, "driver_timeout", None):
        out += ["--driver-timeout", str(args.driver_timeout)]
    return out


def _driver_label(args) -> str:
    if getattr(args, "driver_endpoint", None):
        return f"{args.driver_endpoint} (driver endpoint)"
    return args.driver + (" (out of process)" if getattr(args, "driver_process", False) else "")


def _cts(args, extra) -> int:
    return _run_suite(_suites()["cts"], args, extra)


def _vts(args, extra) -> int:
    return _run_suite(_suites()["vts"], args, extra)


def _random_graph(args, extra, parser) -> int:
    """``nncts random-graph``: the random-graph suite, failing graphs and their minimized
    reproducers under the report directory's ``graphs/``. An unknown driver, a
    configuration pattern that matches nothing or fewer than one seed is a usage error
    (one line, exit 2) before any graph is drawn."""
    from random_graph.configs import all_configs, select
    from runtime.drivers import DriverNotFound, load_driver
    try:
        if args.seeds < 1:
            raise ValueError("--seeds must be at least 1")
        check_driver(args.driver)
        level = int(load_driver(args.driver).get_feature_level())
        select(all_configs(level), args.config)
    except (DriverNotFound, TypeError, ValueError) as e:
        _usage_exit("nncts random-graph", e)
    dump = str(Path(args.report_dir) / "graphs")
    suite_args = ["--seeds", str(args.seeds), "--first-seed", str(args.first_seed), "--graph-dump", dump]
    for c in args.config:
        suite_args += ["--config", c]
    if args.no_minimize:
        suite_args.append("--no-minimize")
    return _run_suite(_suites()["random-graph"], args, extra, suite_args,
                      {"seeds": args.seeds, "configurations": args.config or ["all"], "reproducers": dump})


def _coverage(args, parser) -> int:
    """``nncts coverage``: scan the roots, print the per-operation table, write the files.
    A missing or malformed corpus root, or an unknown --op, is a usage error (exit 2)."""
    from cts.coverage import report, scan
    from nncts.pytest_plugin import DEFAULT_ROOTS
    roots = args.corpus or [str(r) for r in DEFAULT_ROOTS]
    try:
        operations = [report.operation_named(n) for n in args.op] or None
        hits = scan.scan(roots)
    except ValueError as e:
        parser.exit(2, f"nncts coverage: error: {e}\n")
    doc = report.matrix(hits, roots, operations)
    print(report.format_table(doc, detail=bool(operations)))
    print("coverage:", ", ".join(str(p) for p in report.write(doc, args.out)))
    return 0


class _OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line (``nncts mlts: error: ...``), exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _mlts(args, parser) -> int:
    """``nncts mlts``: the run (mlts.run) or, with ``import``, one file's operator mapping.
    Unknown driver or model, a report directory whose parent is missing, a missing or
    unreadable .tflite file: one line, exit 2."""
    prog = "nncts mlts"
    if args.mlts_command == "import":
        path = Path(args.model)
        if not path.is_file():
            parser.exit(2, f"{prog} import: error: {path}: no such file\n")
        try:
            from mlts.tflite_import import describe, import_tflite
        except ImportError as e:
            parser.exit(2, f"{prog} import: error: {e} (pip install 'nncts[mlts]')\n")
        try:
            imported = import_tflite(path)
        except (OSError, ValueError) as e:
            parser.exit(2, f"{prog} import: error: {' '.join(str(e).split())}\n")
        print(describe(imported))
        return 0
    try:
        from mlts import report, run
    except ImportError as e:
        parser.exit(2, f"{prog}: error: {e} (pip install 'nncts[mlts]')\n")
    names = [n for group in args.models for n in group.split(",") if n.strip()]
    try:
        check_driver(args.driver)
    except ValueError as e:
        _usage_exit(prog, e)
    if args.driver_process:
        from runtime.remote import PROCESS_PREFIX
        args.driver = PROCESS_PREFIX + args.driver
    settings = run.QUICK if args.quick else run.STANDARD
    if args.model_timeout is not None:
        if args.model_timeout <= 0:
            parser.exit(2, f"{prog}: error: --model-timeout must be positive\n")
        settings = run.with_settings(settings, model_timeout_s=args.model_timeout)
    if args.no_isolate:
        settings = run.with_settings(settings, isolate=False)
    try:
        if args.stress_duration is not None and args.stress_duration <= 0:
            raise run.UsageError("--stress-duration must be positive")
        stress = None
        if args.stress:
            stress = run.stress_plan(args.driver, args.stress_duration if args.stress_duration is not None
                                     else (3.0 if args.quick else None))
        doc = run.run(args.driver, names or None, args.report_dir, settings=settings, progress=not args.no_progress,
                      stress=stress)
    except run.UsageError as e:
        parser.exit(2, f"{prog}: error: {' '.join(str(e).split())}\n")
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; the models finished so far are in {Path(args.report_dir) / 'mlts.html'}",
              file=sys.stderr)
        return 130
    t = report.totals(doc)
    print(f"{t['models']} models: {t['passed']} passed, {t['inaccurate']} inaccurate, {t['failed']} failed"
          + (f"; stress: {', '.join(f'{n} {o}' for o, n in t['stress'].items())}" if t["stress"] else ""))
    out = Path(args.report_dir)
    files = ["mlts.html", "mlts.json", "mlts.csv", "mlts.jsonl"] + (["mlts-stress.csv", "stress.jsonl"] if stress else [])
    print("report:", ", ".join(str(out / f) for f in files))
    ok = t["passed"] == t["models"] and all(o == "SUCCESS" for o in t["stress"])
    return 0 if ok else 1


def _stress(argv: list[str], parser) -> int:
    """``nncts stress [--report-dir DIR] ...``: :func:`mlts.stress.main` with the records in
    ``DIR/stress.jsonl`` (unless ``--report`` names a file), then ``stress.html`` /
    ``stress.json`` / ``stress.csv`` rendered from them (:mod:`mlts.report`). Its exit
    code: 0 when every test is SUCCESS, 1 otherwise, 2 for misuse (one line)."""
    prog = "nncts stress"
    report_dir, rest, i = "nncts-report", [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--report-dir" or a.startswith("--report-dir="):
            if "=" in a:
                report_dir = a.split("=", 1)[1]
            elif i + 1 < len(argv):
                report_dir, i = argv[i + 1], i + 1
            else:
                parser.exit(2, f"{prog}: error: argument --report-dir: expected one argument\n")
        else:
            rest.append(a)
        i += 1
    try:
        from mlts.stress import main as stress_main
    except ImportError as e:
        parser.exit(2, f"{prog}: error: {e} (pip install 'nncts[mlts]')\n")
    listing = any(a in ("--list", "-h", "--help") for a in rest)
    records = None
    if not listing and not any(a == "--report" or a.startswith("--report=") for a in rest):
        out = Path(report_dir)
        if not out.resolve().parent.is_dir():
            parser.exit(2, f"{prog}: error: --report-dir {out}: parent directory {out.resolve().parent} "
                           f"does not exist\n")
        records = out / "stress.jsonl"
        rest += ["--report", str(records)]
    code = int(stress_main(rest, prog=prog) or 0)
    if records is not None and records.exists():
        from mlts import report, run
        from reports.records import read_records
        recs = read_records(records)
        drivers = sorted({r.get("driver", "?") for r in recs})
        doc = {"title": f"nncts stress: driver {', '.join(drivers)}", "complete": True,
               "driver": None, "environment": run.environment(), "settings": {}, "models": [], "stress": recs}
        paths = report.write_report(doc, records.parent, stem="stress")
        print("report:", ", ".join(str(p) for p in [records, *paths]))
    return code


def _add_mlts_parser(sub):
    p = sub.add_parser("mlts", help="real TFLite models imported into NNAPI models: latency and accuracy "
                                    "against ai-edge-litert (XNNPACK and builtin kernels, 1 thread), "
                                    "HTML/CSV/JSON report; 'nncts mlts import MODEL.tflite' shows a "
                                    "model's operator mapping")
    p.__class__ = _OneLineParser
    p.add_argument("--driver", default=DEFAULT_DRIVER,
                   help="bundled name, entry point in group nncts.drivers, or module:factory")
    p.add_argument("--driver-process", action="store_true",
                   help="run the driver in its own process over the HAL protocol of runtime/remote/hal.proto")
    p.add_argument("--models", action="append", default=[], metavar="NAMES",
                   help="bundled model names, comma-separated or repeated (default: every bundled model)")
    p.add_argument("--report-dir", default="nncts-report",
                   help="where mlts.html/.json/.csv/.jsonl go (default: nncts-report)")
    p.add_argument("--quick", action="store_true",
                   help="a few queries per measurement, sync mode only (CI; default: LoadGen-style, "
                        "at least 2 s and 50 queries, sync/async/burst)")
    p.add_argument("--model-timeout", type=float, default=None, metavar="SECONDS",
                   help="seconds one model may take before it counts as a hang (default 1800; 900 with --quick)")
    p.add_argument("--no-isolate", action="store_true",
                   help="run the models in this process (debugging; a crashing driver then ends the run)")
    p.add_argument("--stress", action="store_true",
                   help="then run the stress tests (nncts stress) on the driver, outcomes in the same report")
    p.add_argument("--stress-duration", type=float, default=None, metavar="SECONDS",
                   help="seconds each stress test runs (default: the stress suite's; 3 with --quick)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    msub = p.add_subparsers(dest="mlts_command", required=False)
    imp = msub.add_parser("import", help="print how each operator of a .tflite file maps to NNAPI")
    imp.__class__ = _OneLineParser
    imp.add_argument("model", metavar="MODEL.tflite")
    return p


def _add_suite_parser(sub, name: str, help_text: str, timeout_help: str, corpus: bool = True):
    p = sub.add_parser(name, help=help_text)
    p.add_argument("--driver", default=DEFAULT_DRIVER,
                   help="bundled name, entry point in group nncts.drivers, or module:factory")
    if corpus:
        p.add_argument("--corpus", action="append", default=[], help="corpus directory (repeatable)")
        p.add_argument("--specs", action="store_true",
                       help="our own golden specs: alone, or next to the --corpus directories given")
    p.add_argument("--driver-process", action="store_true",
                   help="run the driver in its own process (the HAL protocol of runtime/remote/hal.proto): a "
                        "crash or hang is reported for the test in flight, the process restarted and the run "
                        "goes on")
    p.add_argument("--driver-endpoint", default=None, metavar="ADDRESS",
                   help="use a driver host already serving at this gRPC address (unix:/path.sock or host:port)")
    p.add_argument("--driver-timeout", type=float, default=None, metavar="SECONDS",
                   help="out of process: longest one driver call may take before it counts as a hang "
                        "(default: --timeout)")
    p.add_argument("--report-dir", default="nncts-report", help="where reports go (default: nncts-report)")
    p.add_argument("--resume", action="store_true",
                   help="keep the report directory's outcomes and run only the tests not recorded yet")
    p.add_argument("--timeout", type=float, default=300, help=timeout_help)
    return p


#: Modules adding subcommands (``add_parsers(sub)``, each parser with a ``handler``):
#: shard merging, run reports and diffs, certification bundles.
_COMMAND_MODULES = ("nncts.merge", "nncts.reporting", "nncts.certify")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nncts", description="NNAPI driver conformance tests")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_suite_parser(sub, "cts", "run the CTS (golden test models) against a driver; unknown arguments go to "
                                  "pytest", "seconds one test model may take before it counts as a hang (default 300)")
    _add_suite_parser(sub, "vts", "run the VTS (the driver's HAL directly: every corpus model on every "
                                  "execution path, device, memory domain, caching, deadline and validation "
                                  "tests) against a driver; unknown arguments go to pytest",
                      "seconds one test may take before it counts as a hang (default 300)")
    rg = _add_suite_parser(sub, "random-graph", "random graphs drawn from the operation table, run on a driver "
                                                "and on the reference and compared with AOSP's criteria; failing "
                                                "graphs are minimized and written as replayable test models; "
                                                "unknown arguments go to pytest",
                           "seconds one graph may take before it counts as a hang (default 300)", corpus=False)
    rg.add_argument("--seeds", type=int, default=2, help="graphs per configuration (default 2; AOSP runs 50)")
    rg.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    rg.add_argument("--config", action="append", default=[], metavar="PATTERN",
                    help="configurations (shell patterns, repeatable): single-CONV_2D-*, small-*, "
                         "large-TENSOR_FLOAT32-rank4 (default: all)")
    rg.add_argument("--no-minimize", action="store_true", help="do not minimize failing graphs")
    sub.add_parser("drivers", help="list the drivers that --driver accepts by name")
    cov = sub.add_parser("coverage", help="coverage matrix: which cells of each operation's coverage axes the "
                                          "corpus and our specs cover (table, coverage.json, coverage.html)")
    cov.add_argument("--corpus", action="append", default=[],
                     help="corpus directory (repeatable); models under SPECS/ count as our specs "
                          "(default: the vendored AOSP corpus and cts/specs/built)")
    cov.add_argument("--out", default="nncts-report", help="where coverage.json/.html go (default: nncts-report)")
    cov.add_argument("--op", action="append", default=[], metavar="NAME",
                     help="only this operation (NNAPI name, repeatable); lists every cell")
    specs = sub.add_parser("specs", help="build our own golden specs into corpus-schema files "
                                         "(cts/specs/built), or check the built files are up to date")
    specs.add_argument("action", choices=("build", "check"))
    specs.add_argument("--out", default=None, help="where to build (default: cts/specs/built)")
    _add_mlts_parser(sub)
    for module in _COMMAND_MODULES:
        importlib.import_module(module).add_parsers(sub)
    sub.add_parser("stress", help="MLTS-style crash and hang stress tests, each in its own process with a "
                                  "watchdog (SUCCESS / FAILURE / HANG / CRASH), written to stress.jsonl/.html/"
                                  ".json/.csv under --report-dir DIR (default nncts-report); "
                                  "'nncts stress --help' for its other options", add_help=False)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["stress"]:
        return _stress(argv[1:], parser)
    args, extra = parser.parse_known_args(argv)
    if args.command == "specs" and not extra:
        from cts.specs.__main__ import main as specs_main
        return specs_main([args.action] + (["--out", args.out] if args.out else []))
    if args.command == "drivers":
        print("\n".join(available_drivers()))
        return 0
    if getattr(args, "handler", None) is not None:
        if extra:
            parser.exit(2, f"nncts {args.command}: error: unrecognized arguments: {' '.join(extra)}\n")
        return args.handler(args, parser)
    if extra and args.command == "mlts":
        parser.exit(2, f"nncts mlts: error: unrecognized arguments: {' '.join(extra)}\n")
    if extra and args.command not in ("cts", "vts", "random-graph"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "mlts":
        return _mlts(args, parser)
    if args.command == "coverage":
        return _coverage(args, parser)
    if args.command == "random-graph":
        return _random_graph(args, extra, parser)
    return _cts(args, extra) if args.command == "cts" else _vts(args, extra)


if __name__ == "__main__":
    sys.exit(main())
