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
``<report dir>/graphs``. ``nncts precision [--driver NAME] [--sweep full|quick] [PYTEST ARGS...]`` runs the precision
sweeps (:mod:`precision`) the same way, and the report directory also gets ``precision.html``.
``nncts relations [--driver NAME] [--relation NAME]... [--relations-budget quick|full] [PYTEST ARGS...]``
checks the metamorphic relations (:mod:`relations`) the same way (full budget by default).
``nncts specs build|check`` builds our own golden specs (:mod:`cts.specs`) or checks the
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

import argparse
import importlib
import sys
from pathlib import Path

import pytest

from nncts.cli_mlts import add_mlts_parser, run_stress
from nncts.preflight import (FactoryDriverCheck, OneLineParser, OneLineUsageErrors, PytestUsageError,
                             check_driver, check_suite_arguments, is_factory_spec, usage_exit)
from nncts.rundir import Interrupts, StagedReport
from harness.driver import add_corpus_options, add_driver_options
from harness.environment import git_commit, nncts_version
from harness.graph_configs import all_configs, select
from harness.locations import DEFAULT_CORPUS_LABEL, DEFAULT_ROOTS, SPECS_LABEL
from harness.plugin import declared_options
from harness.run_state import read_run_file
from harness.suites import PYTEST_SUITES, SuiteSpec, suite
from reports.html import write_reports
from runtime.drivers import available_drivers
from runtime.remote.access import ENDPOINT_TLS_HELP


def _run_suite(spec: SuiteSpec, args, extra, suite_args: list[str] | None = None,
               suite_meta: dict | None = None) -> int:
    """Run ``suite`` with pytest: shared options (--driver, --corpus, --timeout, --resume),
    the plugins' options as given (``args.pytest_options``), the suite's own
    (``suite_args``), on every core unless ``-n`` says otherwise (:func:`worker_args`),
    outcome records and junit.xml in a fresh run directory published over the report
    directory at the end (:mod:`nncts.rundir`), progress lines with an ETA
    (:mod:`harness.progress`; pytest's per-test dots off unless ``-v``), then summary.json
    and index.html (``suite_meta`` and the environment, :mod:`harness.environment`, added
    to the run description; ``status`` complete or interrupted). Bad arguments
    (:func:`nncts.preflight.check_suite_arguments`, and what pytest itself rejects) exit 2
    with one line on stderr before any test starts, the report directory untouched. Returns
    pytest's exit code, or 128 + the signal number when SIGINT / SIGTERM ended the run."""
    prog = f"nncts {spec.command}"
    try:
        report_dir = check_suite_arguments(args)
    except ValueError as e:
        usage_exit(prog, e)
    staged = StagedReport(report_dir)
    stage = staged.start(args.resume)
    records = stage / "outcomes.jsonl"
    pytest_args = [*spec.pytest_paths(), "-p", "harness.plugin"]
    for plugin in spec.plugins:
        pytest_args += ["-p", plugin]
    verbose = any(a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}) for a in extra)
    # one line per failure unless --tb is given: the outcomes and the report hold the rest, and
    # pytest's long form scans every report per failure (quadratic: minutes for 20,000 failures)
    tb = [] if any(a == "--tb" or a.startswith("--tb=") for a in extra) else ["--tb=line"]
    # hypothesis's pytest plugin imports hypothesis at the end of every run (seconds); no
    # suite uses it (the project's own tests do, and run without this command line)
    pytest_args += ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", *_driver_args(args), "--nncts-report", str(stage),
                    "--junitxml", str(stage / "junit.xml"), "-o", f"junit_suite_name=nncts-{spec.command}",
                    "-o", "console_output_style=classic", f"--nncts-progress={spec.command}",
                    *([] if verbose else ["-q"]), *tb, "--timeout", str(args.timeout), "-W", _IMPORTED_PLUGINS,
                    *worker_args(extra)]
    if args.resume:
        pytest_args.append("--nncts-resume")
    corpus, specs = getattr(args, "corpus", None), getattr(args, "specs", False)
    for c in corpus or []:
        pytest_args += ["--corpus", c]
    if specs:
        pytest_args.append("--specs")
    pytest_args += plugin_option_args(args) + (suite_args or [])
    watch = RunWatch()
    plugins = [OneLineUsageErrors(), watch]
    if not getattr(args, "driver_endpoint", None) and is_factory_spec(args.driver):
        plugins.append(FactoryDriverCheck(args.driver))
    with Interrupts() as interrupts:
        try:
            code = int(pytest.main(pytest_args + extra, plugins=plugins))
        except PytestUsageError as e:
            staged.discard()
            usage_exit(prog, e)
        except KeyboardInterrupt:  # before pytest's session could handle it
            code = int(pytest.ExitCode.INTERRUPTED)
    interrupted = interrupts.signal is not None or code == pytest.ExitCode.INTERRUPTED
    with Interrupts.held():
        if watch.listing or not records.exists() or (code == pytest.ExitCode.NO_TESTS_COLLECTED and not interrupted):
            staged.discard()
            print(f"{prog}: no test ran: report directory {report_dir} unchanged", file=sys.stderr)
            return interrupts.exit_code or code
        meta = {"driver": _driver_label(args), "suite": spec.command, "pytest_exit_code": code,
                "status": "interrupted" if interrupted else "complete"}
        if endpoint_tls_options(args):
            meta["driver_tls"] = endpoint_tls_options(args)
        if corpus is not None:
            meta["corpus"] = corpus + ([SPECS_LABEL] if specs else []) or [DEFAULT_CORPUS_LABEL, SPECS_LABEL]
        meta.update(suite_meta or {})
        meta["environment"] = (read_run_file(stage) or {}).get("environment", {})
        write_reports(records, stage, title=f"{spec.title}: driver {_driver_label(args)}", meta=meta)
        staged.publish()
    names = ["junit.xml", "outcomes.jsonl", "summary.json", "index.html", "precision.html"]
    print("report:", ", ".join(str(report_dir / n) for n in names if (report_dir / n).exists()))
    if interrupted:
        print(f"{prog}: interrupted: the report in {report_dir} is marked interrupted", file=sys.stderr)
    return interrupts.exit_code or code


def worker_args(extra: list[str]) -> list[str]:
    """``["-n", "auto"]`` (pytest-xdist: one worker per core) unless the pytest arguments
    ``extra`` choose the workers themselves (``-n N``, ``-nN``, ``--numprocesses``, ``--tx``
    gateways; ``-n 0`` runs in this process, ``-n 1`` in one worker), turn pytest-xdist off
    (``-p no:xdist``)
    or debug (``--pdb``, ``--trace``: pytest-xdist refuses them)."""
    for i, a in enumerate(extra):
        if a.startswith(("--numprocesses", "--tx")) or (a.startswith("-n") and not a.startswith("--")) \
                or a in ("--pdb", "--trace") or a == "-pno:xdist" or (a == "-p" and extra[i + 1:i + 2] == ["no:xdist"]):
            return []
    return ["-n", "auto"]


def plugin_option_args(args) -> list[str]:
    """The plugins' options given on the command line (``args.pytest_options``: the
    argparse actions :func:`add_plugin_options` declared, present in ``args`` only when
    given) as pytest arguments again."""
    out = []
    for action in getattr(args, "pytest_options", []):
        if not hasattr(args, action.dest):
            continue
        value, flag = getattr(args, action.dest), max(action.option_strings, key=len)
        if action.nargs == 0:
            out.append(flag)
        else:
            out += [x for v in (value if isinstance(value, list) else [value]) for x in (flag, str(v))]
    return out


def add_plugin_options(p: argparse.ArgumentParser, plugins, exclude=()) -> None:
    """Declare on ``p`` the options of the shared plugin and of the suite's ``plugins``
    (:func:`harness.plugin.declared_options`: their own ``pytest_addoption``) but those the
    command declares itself, the ``--nncts-*`` ones it sets and ``exclude`` (option names
    the suite does not read); each is present in the
    parsed arguments only when given, and goes on to pytest (:func:`plugin_option_args`)."""
    group = p.add_argument_group("suite options (the suite's pytest plugins read them)")
    actions = []
    for names, attrs in declared_options(plugins):
        if names[0].startswith("--nncts-") or set(names) & set(exclude):
            continue
        try:
            actions.append(group.add_argument(*names, **{**attrs, "default": argparse.SUPPRESS}))
        except argparse.ArgumentError:  # declared by the command itself (--driver, --corpus, ...)
            continue
    p.set_defaults(pytest_options=actions)


class RunWatch:
    """pytest plugin object: ``listing`` is whether pytest only lists or shows something
    (``--collect-only``, ``--setup-only``, ``--setup-plan``, ``--fixtures``, ``--markers``,
    ``--help``; or it never configured: ``--version``) instead of running tests."""

    #: pytest's options (dests) that list or show instead of running the tests.
    LISTING = ("collectonly", "setuponly", "setupplan", "showfixtures", "show_fixtures_per_test", "markers", "help")

    def __init__(self):
        self.listing = True

    def pytest_configure(self, config):
        self.listing = any(getattr(config.option, o, False) for o in self.LISTING)


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
    """``nncts cts`` / ``vts`` / ``precision``: the suite of the table named by the command."""
    return _run_suite(suite(args.command), args, args.extra)


def _random_graph(args, parser) -> int:
    """``nncts random-graph``: the random-graph suite, failing graphs and their minimized
    reproducers under the report directory's ``graphs/`` (unless ``--graph-dump`` says
    elsewhere). An unknown driver, a configuration pattern that matches no configuration at
    any feature level or fewer than one seed is a usage error (one line, exit 2) before any
    graph is drawn; the driver is loaded once, by the suite (which checks the patterns
    against the driver's own feature level)."""
    from random_graph.plugin import DEFAULT_SEEDS
    seeds, configs = getattr(args, "seeds", DEFAULT_SEEDS), getattr(args, "config", [])
    try:
        if seeds < 1:
            raise ValueError("--seeds: must be at least 1")
        check_driver(args.driver)
        select(all_configs(), configs)
    except ValueError as e:
        usage_exit("nncts random-graph", e)
    dump = getattr(args, "graph_dump", None) or str(Path(args.report_dir).absolute() / "graphs")
    dump_args = [] if hasattr(args, "graph_dump") else ["--graph-dump", dump]
    return _run_suite(suite(args.command), args, args.extra, dump_args,
                      {"seeds": seeds, "configurations": configs or ["all"], "reproducers": dump})


def _relations(args, parser) -> int:
    """``nncts relations``: the relations suite on the full budget unless
    ``--relations-budget`` says otherwise, failing models and their minimized reproducers
    under the report directory's ``relations/`` (unless ``--relations-dump`` says elsewhere).
    An unknown driver or fewer than one seed is a usage error (one line, exit 2) before any
    model is loaded."""
    try:
        if getattr(args, "relations_seeds", 1) < 1:
            raise ValueError("--relations-seeds: must be at least 1")
        check_driver(args.driver)
    except ValueError as e:
        usage_exit("nncts relations", e)
    extra = [] if hasattr(args, "relations_budget") else ["--relations-budget", "full"]
    if not hasattr(args, "relations_dump"):
        extra += ["--relations-dump", str(Path(args.report_dir).absolute() / "relations")]
    return _run_suite(suite(args.command), args, args.extra, extra)


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
    doc = report.matrix(hits, roots, operations, effect=not args.no_effect)
    print(report.format_table(doc, detail=bool(operations)))
    print("coverage:", ", ".join(str(p) for p in report.write(doc, args.out)))
    return 0


#: The end of a suite command's help.
SUITE_EPILOG = ("Any other argument goes to pytest: -k EXPR, -m MARKS, -x, -v, --collect-only, ... "
                "The tests run on every core (pytest-xdist -n auto) unless -n N is given: -n 1 for one "
                "worker process, -n 0 for none. The report directory is replaced when the run ends "
                "(SIGINT/SIGTERM: marked interrupted); a usage error or --collect-only leaves it as it was.")


def _add_suite_parser(sub, name: str, help_text: str, timeout_help: str, corpus: bool = True,
                      plugin_options: bool = True):
    # no abbreviations: pytest's own options (--co, --sw, --lf, ...) must reach pytest whole
    p = sub.add_parser(name, help=help_text, description=help_text, epilog=SUITE_EPILOG, allow_abbrev=False)
    add_driver_options(p.add_argument)
    if corpus:
        add_corpus_options(p.add_argument)
    p.add_argument("--report-dir", default="nncts-report", help="where reports go (default: nncts-report)")
    p.add_argument("--resume", action="store_true",
                   help="keep the report directory's outcomes and run only the tests not recorded yet")
    p.add_argument("--timeout", type=float, default=300, help=timeout_help)
    if plugin_options:
        add_plugin_options(p, suite(name).plugins, exclude=() if corpus else ("--corpus", "--specs"))
    return p


#: Modules adding subcommands (``add_parsers(sub)``, each parser with a ``handler``):
#: shard merging, run reports and diffs, certification bundles, triage of two runs.
_COMMAND_MODULES = ("nncts.merge", "nncts.reporting", "nncts.certify", "nncts.triage")


def _drivers(args, parser) -> int:
    print("\n".join(available_drivers()))
    return 0


def _specs(args, parser) -> int:
    from cts.specs.__main__ import main as specs_main
    return specs_main([args.action] + (["--out", args.out] if args.out else []))


def _stress(args, parser) -> int:
    return run_stress(args.extra, parser)


class _Version(argparse.Action):
    """``nncts --version``: the nncts version and, in a git checkout, the commit."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print the nncts version (and git commit) and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        commit = git_commit()
        print(f"nncts {nncts_version()}" + (f", commit {commit}" if commit else ""))
        parser.exit(0)


def build_parser(commands=None) -> OneLineParser:
    """The ``nncts`` parser: one subparser per command, each with its ``handler(args,
    parser)``. The suite commands' plugin options (:func:`add_plugin_options`) are declared
    for the ``commands`` named (None: every suite; importing a suite's plugin takes a few
    tenths of a second)."""
    parser = OneLineParser(prog="nncts", description="NNAPI driver conformance tests")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)

    def wanted(name: str) -> bool:
        return commands is None or name in commands
    cts = _add_suite_parser(sub, "cts", "run the CTS (golden test models) against a driver; unknown arguments go to "
                                  "pytest", "seconds one test model may take before it counts as a hang (default 300)",
                            plugin_options=wanted("cts"))
    vts = _add_suite_parser(sub, "vts", "run the VTS (the driver's HAL directly: every corpus model on every "
                                  "execution path, device, memory domain, caching, deadline and validation "
                                  "tests) against a driver; unknown arguments go to pytest",
                            "seconds one test may take before it counts as a hang (default 300)",
                            plugin_options=wanted("vts"))
    rg = _add_suite_parser(sub, "random-graph", "random graphs drawn from the operation table, run on a driver "
                                                "and on the reference and compared with AOSP's criteria; failing "
                                                "graphs are minimized and written as replayable test models; "
                                                "unknown arguments go to pytest",
                           "seconds one graph may take before it counts as a hang (default 300)", corpus=False,
                           plugin_options=wanted("random-graph"))
    sweeps = _add_suite_parser(sub, "precision", "precision sweeps: each unary element-wise operation of the table "
                                                 "over every float16 input, every quant8 input and a stratified "
                                                 "float32 sample, judged against the float64 truth (AOSP's tolerance "
                                                 "the verdict, the error budget a grade; precision.html shows the "
                                                 "ULP per operation and where in the range it lives); unknown "
                                                 "arguments go to pytest",
                               "seconds one sweep may take before it counts as a hang (default 300)", corpus=False,
                               plugin_options=wanted("precision"))
    rel = _add_suite_parser(sub, "relations", "metamorphic relations that need no golden value (batch split and "
                                              "concatenation, NHWC/NCHW twins, partitioning, permuted element-wise "
                                              "inputs, repeated executions, relaxed float32 against float16) over the "
                                              "corpus and random graphs; a relation applies where the reference "
                                              "satisfies it; failures are minimized; unknown arguments go to pytest",
                            "seconds one relation on one model may take before it counts as a hang (default 300)",
                            plugin_options=wanted("relations"))
    rel.set_defaults(handler=_relations)
    for p in (cts, vts, sweeps):
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
    cov.add_argument("--no-effect", action="store_true",
                     help="count use only: skip the effect analysis (swap each cell's value, re-run the reference)")
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
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(set(argv[:1]))
    args, extra = parser.parse_known_args(argv)
    if extra and not (args.command in PYTEST_SUITES or getattr(args, "passes_arguments", False)):
        usage_exit(f"nncts {args.command}", f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    return args.handler(args, parser)


if __name__ == "__main__":
    sys.exit(main())
