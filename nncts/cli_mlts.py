"""The MLTS subcommands of ``nncts`` (:mod:`nncts.cli` dispatches to them).

``nncts mlts [--driver NAME] [--models NAMES] [--report-dir DIR] [--quick]`` imports the
bundled TFLite models (:mod:`mlts.run`), benchmarks and checks them and writes the MLTS
report; ``nncts mlts import MODEL.tflite`` prints one file's operator mapping; ``nncts
stress ...`` runs the crash/hang stress tests (:mod:`mlts.stress`). Misuse of these is one
line on stderr, exit 2.
"""
from __future__ import annotations

import sys
from pathlib import Path

from nncts.preflight import check_driver, usage_exit
from runtime.drivers import DEFAULT_DRIVER


def run_mlts(args, parser) -> int:
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
        check_driver(args.driver)
    except ValueError as e:
        usage_exit(prog, e)
    try:
        from mlts import report, run
    except ImportError as e:
        parser.exit(2, f"{prog}: error: {e} (pip install 'nncts[mlts]')\n")
    names = [n for group in args.models for n in group.split(",") if n.strip()]
    if args.driver_process:
        from runtime.remote.client import PROCESS_PREFIX
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
    files = ["mlts.html", "mlts.json", "mlts.csv", "mlts.jsonl"]
    files += ["mlts-stress.csv", "stress.jsonl"] if stress else []
    print("report:", ", ".join(str(out / f) for f in files))
    ok = t["passed"] == t["models"] and all(o == "SUCCESS" for o in t["stress"])
    return 0 if ok else 1


def run_stress(argv: list[str], parser) -> int:
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
        from harness.records import read_records
        recs = read_records(records, outcomes=False)
        drivers = sorted({r.get("driver", "?") for r in recs})
        doc = {"title": f"nncts stress: driver {', '.join(drivers)}", "complete": True,
               "driver": None, "environment": run.environment(), "settings": {}, "models": [], "stress": recs}
        paths = report.write_report(doc, records.parent, stem="stress")
        print("report:", ", ".join(str(p) for p in [records, *paths]))
    return code


def add_mlts_parser(sub):
    p = sub.add_parser("mlts", help="real TFLite models imported into NNAPI models: latency and accuracy "
                                    "against ai-edge-litert (XNNPACK and builtin kernels, 1 thread), "
                                    "HTML/CSV/JSON report; 'nncts mlts import MODEL.tflite' shows a "
                                    "model's operator mapping")
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
    imp.add_argument("model", metavar="MODEL.tflite")
    p.set_defaults(handler=run_mlts)
    return p
