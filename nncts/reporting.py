"""``nncts report`` and ``nncts diff``.

``nncts report RUN_DIR... --out DIR [--title T]`` writes one report (``index.html``,
``report.json``, ``junit.xml``: :func:`reports.run.write_run_report`) over any suites' report
directories, MLTS directories and certification bundles. ``nncts diff A B [--json FILE]
[--fail-on-new]`` prints what changed between two runs (:mod:`reports.diff`): new failures,
fixed, flaky, newly (un)supported, coverage gained or lost, tests only in one of them; exit 0,
or 1 with ``--fail-on-new`` when B has new failures. A path that is not a report directory or
bundle, or an output that cannot be written, is one line on stderr and exit 2.
"""
from __future__ import annotations

import json
from pathlib import Path


def _report(args, parser) -> int:
    from reports.run import write_run_report
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        parser.exit(2, f"nncts report: error: --out {out}: not a directory\n")
    if (out / "outcomes.jsonl").exists():
        parser.exit(2, f"nncts report: error: --out {out}: a suite's report directory (its junit.xml and "
                       f"index.html would be replaced); choose another\n")
    meta = {"run directories": [str(p) for p in args.run_dirs]}
    try:
        paths = write_run_report(args.run_dirs, out, args.title, meta)
    except (ValueError, OSError) as e:
        parser.exit(2, f"nncts report: error: {' '.join(str(e).split())}\n")
    print("report:", ", ".join(str(p) for p in paths))
    return 0


def _diff(args, parser) -> int:
    from reports.diff import diff_runs, format_diff
    try:
        diff = diff_runs([args.a], [args.b])
        if args.json:
            Path(args.json).write_text(json.dumps(diff, indent=1), encoding="utf-8")
    except (ValueError, OSError) as e:
        parser.exit(2, f"nncts diff: error: {' '.join(str(e).split())}\n")
    print(f"A: {args.a}\nB: {args.b}")
    print("\n".join(format_diff(diff)))
    return 1 if args.fail_on_new and diff["new failures"] else 0


def add_parsers(sub) -> None:
    """Add ``report`` and ``diff`` to the nncts parser's subparsers ``sub`` (each with
    ``set_defaults(handler=...)``; a handler takes (args, parser) and returns the exit code)."""
    rep = sub.add_parser("report", help="one report (index.html, report.json, junit.xml) over several suites' "
                                        "report directories, MLTS directories or certification bundles")
    rep.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                     help="a suite's --report-dir (outcomes.jsonl), an MLTS report dir (mlts.json) or a bundle "
                          "(results/<suite>/)")
    rep.add_argument("--out", required=True, metavar="DIR", help="where the report goes (created)")
    rep.add_argument("--title", default="nncts run", help="page title (default: nncts run)")
    rep.set_defaults(handler=_report)
    diff = sub.add_parser("diff", help="what changed between two runs: new failures, fixed, flaky, newly "
                                       "(un)supported, coverage gained or lost, tests only in one run")
    diff.add_argument("a", metavar="A", help="the first run: a report directory or a bundle")
    diff.add_argument("b", metavar="B", help="the second run: a report directory or a bundle")
    diff.add_argument("--json", metavar="FILE", default=None, help="also write the differences as JSON")
    diff.add_argument("--fail-on-new", action="store_true", help="exit 1 when B has new failures")
    diff.set_defaults(handler=_diff)
