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
(:mod:`mlts.stress`; its own options); both in :mod:`nncts.cli_mlts`.

Misuse of any command is one line on stderr (``nncts cts: error: ...``) and exit code 2,
before any test starts (:mod:`nncts.preflight`: unknown or unloadable driver, missing or
malformed corpus, bad ``--shard``/``--mode``/``--baseline``/``--profile``, non-positive
timeouts, a report directory that cannot be created, options pytest does not know). The
suites print a progress line with an ETA every 5 s and at the end (:mod:`harness.progress`).
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from nncts.cli_mlts import add_mlts_parser, run_stress
from nncts.preflight import (FactoryDriverCheck, OneLineParser, OneLineUsageErrors, PytestUsageError,
                             check_driver, check_suite_arguments, is_factory_spec, usage_exit)
from harness.driver import add_corpus_options, add_driver_options
from harness.graph_configs import all_configs, select
from harness.locations import DEFAULT_CORPUS_LABEL, DEFAULT_ROOTS, SPECS_LABEL
from harness.suites import PYTEST_SUITES, SuiteSpec, suite
from reports.html import write_reports
from runtime.drivers import available_drivers
from runtime.remote.access import ENDPOINT_TLS_HELP


def _run_suite(spec: SuiteSpec, args, extra, suite_args: list[str] | None = None,
               suite_meta: dict | None = None) -> int:
    """Run ``suite`` with pytest: shared options (--driver, --corpus, --timeout, --resume),
    the suite's own (``suite_args``), outcome records and junit.xml in the report directory,
    progress lines with an ETA (:mod:`harness.progress`; pytest's per-test dots off unless
    ``-v``), then summary.json and index.html (``suite_meta`` added to its run description).
    Bad arguments (:func:`nncts.preflight.check_suite_arguments`, and what pytest itself
    rejects) exit 2 with one line on stderr before any test starts. Returns pytest's exit
    code."""
    prog = f"nncts {spec.command}"
    try:
        report_dir = check_suite_arguments(args, extra)
    except ValueError as e:
        usage_exit(prog, e)
    records = report_dir / "outcomes.jsonl"
    if records.exists() and not args.resume:
        records.unlink()
    pytest_args = [*spec.pytest_paths(), "-p", "harness.plugin"]
    for plugin in spec.plugins:
        pytest_args += ["-p", plugin]
    verbose = any(a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}) for a in extra)
    # one line per failure unless --tb is given: the outcomes and the report hold the rest, and
    # pytest's long form scans every report per failure (quadratic: minutes for 20,000 failures)
    tb = [] if any(a == "--tb" or a.startswith("--tb=") for a in extra) else ["--tb=line"]
    pytest_args += ["-p", "no:cacheprovider", *_driver_args(args), "--nncts-report", str(report_dir),
                    "--junitxml", str(report_dir / "junit.xml"), "-o", f"junit_suite_name=nncts-{spec.command}",
                    "-o", "console_output_style=classic", f"--nncts-progress={spec.command}",
                    *([] if verbose else ["-q"]), *tb, "--timeout", str(args.timeout), "-W", _IMPORTED_PLUGINS]
    if args.resume:
        pytest_args.append("--nncts-resume")
    corpus, specs = getattr(args, "corpus", None), getattr(args, "specs", False)
    for c in corpus or []:
        pytest_args += ["--corpus", c]
    if specs:
        pytest_args.append("--specs")
    pytest_args += suite_args or []
    plugins = [OneLineUsageErrors()]
    if not getattr(args, "driver_endpoint", None) and is_factory_spec(args.driver):
        plugins.append(FactoryDriverCheck(args.driver))
    try:
        code = int(pytest.main(pytest_args + extra, plugins=plugins))
    except PytestUsageError as e:
        if records.exists() and records.stat().st_size == 0:
            records.unlink()
        usage_exit(prog, e)
    if records.exists():
        meta = {"driver": _driver_label(args), "suite": spec.command, "pytest_exit_code": code}
        if endpoint_tls_options(args):
            meta["driver_tls"] = endpoint_tls_options(args)
        if corpus is not None:
            meta["corpus"] = corpus + ([SPECS_LABEL] if specs else []) or [DEFAULT_CORPUS_LABEL, SPECS_LABEL]
        meta.update(suite_meta or {})
        paths = write_reports(records, report_dir, title=f"{spec.title}: driver {_driver_label(args)}", meta=meta)
        print("report:", ", ".join(str(p) for p in [report_dir / "junit.xml", records, *paths]))
    return code


#: Warning filter: the checks before pytest starts import plugin parts (harness.sharding,
#: harness.expectations, ...), which pytest then cannot assertion-rewrite; they need not be.
_IMPORTED_PLUGINS = "ignore:Module already imported so cannot be rewritten; harness.:pytest.PytestAssertRewriteWarning"


def _driver_args(args) -> list[str]:
    """pytest options naming the driver: --driver, and --driver-process / --driver-endpoint /
    --driver-timeout when given."""
    out = ["--driver", args.driver]
    if getattr(args, "driver_process", False):
        out.append("--driver-process")
    if getattr(args, "driver_endpoint", None):
        out += ["--driver-endpoint", args.driver_endpoint]
        for option, path in endpoint_tls_options(args).items():
            out += [option, path]
    if getattr(args, "driver_timeout", None):
        out += ["--driver-timeout", str(args.driver_timeout)]
    return out


def endpoint_tls_options(args) -> dict[str, str]:
    """``{"--driver-endpoint-key": path, ...}``: the client's mutual-TLS files as given (made
    absolute), for pytest and the run's metadata (``meta["driver_tls"]``, which replays
    pass on); empty without them."""
    parts = {f"--driver-endpoint-{p}": getattr(args, f"driver_endpoint_{p}", None) for p in ENDPOINT_TLS_HELP}
    return {option: str(Path(path).absolute()) for option, path in parts.items() if path}


def _driver_label(args) -> str:
    if getattr(args, "driver_endpoint", None):
        return f"{args.driver_endpoint} (driver endpoint)"
    return args.driver + (" (out of process)" if getattr(args, "driver_process", False) else "")


def _suite(args, parser) -> int:
    """``nncts cts`` / ``nncts vts``: the suite of the table named by the command."""
    return _run_suite(suite(args.command), args, args.extra)


def _random_graph(args, parser) -> int:
    """``nncts random-graph``: the random-graph suite, failing graphs and their minimized
    reproducers under the report directory's ``graphs/``. An unknown driver, a
    configuration pattern that matches no configuration at any feature level or fewer than
    one seed is a usage error (one line, exit 2) before any graph is drawn; the driver is
    loaded once, by the suite (which checks the patterns against the driver's own feature
    level)."""
    try:
        if args.seeds < 1:
            raise ValueError("--seeds must be at least 1")
        check_driver(args.driver)
        select(all_configs(), args.config)
    except ValueError as e:
        usage_exit("nncts random-graph", e)
    dump = str(Path(args.report_dir) / "graphs")
    suite_args = ["--seeds", str(args.seeds), "--first-seed", str(args.first_seed), "--graph-dump", dump]
    for c in args.config:
        suite_args += ["--config", c]
    if args.no_minimize:
        suite_args.append("--no-minimize")
    return _run_suite(suite(args.command), args, args.extra, suite_args,
                      {"seeds": args.seeds, "configurations": args.config or ["all"], "reproducers": dump})


def _coverage(args, parser) -> int:
    """``nncts coverage``: scan the roots, print the per-operation table, write the files.
    A missing or malformed corpus root, or an unknown --op, is a usage error (exit 2)."""
    from cts.coverage import report, scan
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


def _add_suite_parser(sub, name: str, help_text: str, timeout_help: str, corpus: bool = True):
    p = sub.add_parser(name, help=help_text)
    add_driver_options(p.add_argument)
    if corpus:
        add_corpus_options(p.add_argument)
    p.add_argument("--report-dir", default="nncts-report", help="where reports go (default: nncts-report)")
    p.add_argument("--resume", action="store_true",
                   help="keep the report directory's outcomes and run only the tests not recorded yet")
    p.add_argument("--timeout", type=float, default=300, help=timeout_help)
    return p


#: Modules adding subcommands (``add_parsers(sub)``, each parser with a ``handler``):
#: shard merging, run reports and diffs, certification bundles.
_COMMAND_MODULES = ("nncts.merge", "nncts.reporting", "nncts.certify")


def _drivers(args, parser) -> int:
    print("\n".join(available_drivers()))
    return 0


def _specs(args, parser) -> int:
    from cts.specs.__main__ import main as specs_main
    return specs_main([args.action] + (["--out", args.out] if args.out else []))


def _stress(args, parser) -> int:
    return run_stress(args.extra, parser)


def build_parser() -> OneLineParser:
    """The ``nncts`` parser: one subparser per command, each with its ``handler(args,
    parser)``."""
    parser = OneLineParser(prog="nncts", description="NNAPI driver conformance tests")
    sub = parser.add_subparsers(dest="command", required=True)
    cts = _add_suite_parser(sub, "cts", "run the CTS (golden test models) against a driver; unknown arguments go to "
                                  "pytest", "seconds one test model may take before it counts as a hang (default 300)")
    vts = _add_suite_parser(sub, "vts", "run the VTS (the driver's HAL directly: every corpus model on every "
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
    for p in (cts, vts):
        p.set_defaults(handler=_suite)
    rg.set_defaults(handler=_random_graph)
    sub.add_parser("drivers", help="list the drivers that --driver accepts by name").set_defaults(handler=_drivers)
    cov = sub.add_parser("coverage", help="coverage matrix: which cells of each operation's coverage axes the "
                                          "corpus and our specs cover (table, coverage.json, coverage.html)")
    cov.add_argument("--corpus", action="append", default=[],
                     help="corpus directory (repeatable); models under SPECS/ count as our specs "
                          "(default: the vendored AOSP corpus and cts/specs/built)")
    cov.add_argument("--out", default="nncts-report", help="where coverage.json/.html go (default: nncts-report)")
    cov.add_argument("--op", action="append", default=[], metavar="NAME",
                     help="only this operation (NNAPI name, repeatable); lists every cell")
    cov.set_defaults(handler=_coverage)
    specs = sub.add_parser("specs", help="build our own golden specs into corpus-schema files "
                                         "(cts/specs/built), or check the built files are up to date")
    specs.add_argument("action", choices=("build", "check"))
    specs.add_argument("--out", default=None, help="where to build (default: cts/specs/built)")
    specs.set_defaults(handler=_specs)
    add_mlts_parser(sub)
    for module in _COMMAND_MODULES:
        importlib.import_module(module).add_parsers(sub)
    sub.add_parser("stress", help="MLTS-style crash and hang stress tests, each in its own process with a "
                                  "watchdog (SUCCESS / FAILURE / HANG / CRASH), written to stress.jsonl/.html/"
                                  ".json/.csv under --report-dir DIR (default nncts-report); "
                                  "'nncts stress --help' for its other options",
                   add_help=False).set_defaults(handler=_stress, passes_arguments=True)
    return parser


def main(argv=None) -> int:
    """``nncts COMMAND ...``: every command through one dispatch (its parser's ``handler``).
    Only the pytest suites and ``stress`` take arguments of their own (to pytest, to the
    stress runner); anything else unrecognized is a usage error (one line, exit 2)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    if extra and not (args.command in PYTEST_SUITES or getattr(args, "passes_arguments", False)):
        usage_exit(f"nncts {args.command}", f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    return args.handler(args, parser)


if __name__ == "__main__":
    sys.exit(main())
