"""pytest plugin shared by every nncts suite: ``--driver``, ``--corpus``, ``--wait-limit``,
``--nncts-report``/``--nncts-resume``; the ``nncts_device`` fixture and the corpus loader;
outcome records (JSON lines, written as each test finishes) and the per-operation / per-mode
summary.

A suite's items take part in the records through the hook
:func:`harness.hookspecs.pytest_nncts_record_fields` (its plugin answers for its own items);
a test adds what it learns while running with :func:`add_record_fields`. The fields travel
on each report as ``report.nncts`` (a dict; pytest-xdist carries it to the controller); the
record id is the item's parameter id. An item holding several tests (:mod:`harness.grouped`)
makes one report and record per test, with the fields its group gives.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness import driver_coverage, expectations, grouped, hookspecs, progress, requirements, run_state, sharding
from harness.driver import (ENDPOINT_OPTIONS, add_corpus_options, add_driver_options, corpus_roots,  # noqa: F401
                            driver_hal, driver_spec)
from harness.locations import SPECS
from harness.records import RecordWriter, format_summary, read_records, record_outcome
from harness.verdicts import finish_report
from runtime.nnapi import Device
from runtime.remote.client import is_remote_spec, set_call_timeout, set_endpoint_tls
from runtime.remote.access import endpoint_tls
from runtime.remote.incidents import INCIDENTS
from runtime.testing.test_model import CorpusError, iter_corpus
from runtime.types import OperationType

#: The shared plugin's parts, one module per concern, registered with it
#: (:func:`pytest_addhooks`): baselines and retries (expectations), required vs optional tests
#: (requirements), ``--shard I/N`` (sharding), progress with an ETA (progress), the run's
#: fingerprint and environment (run_state), ``--driver-coverage`` (driver_coverage), several tests
#: in one item (grouped: the CTS's modes of a test model).
PARTS = (expectations, requirements, sharding, progress, run_state, driver_coverage, grouped)

#: Where the test models come from (:mod:`harness.locations`).
DEFAULT_SPECS = SPECS
#: The key of an item's record fields (:func:`record_fields`).
RECORD_FIELDS = pytest.StashKey[dict]()


def pytest_addhooks(pluginmanager):
    """The record hook (:mod:`harness.hookspecs`), and the plugin's parts registered."""
    pluginmanager.add_hookspecs(hookspecs)
    for part in PARTS:
        if pluginmanager.get_plugin(part.__name__) is None:
            pluginmanager.register(part, part.__name__)


class _Declarations:
    """Stands in for pytest's ``Parser`` and its ``OptionGroup``: records each
    ``addoption(*names, **attrs)`` call of a plugin's ``pytest_addoption``."""

    def __init__(self):
        self.options: list[tuple[tuple[str, ...], dict]] = []

    def getgroup(self, name, description="", after=None):
        return self

    def addoption(self, *names, **attrs):
        self.options.append((names, dict(attrs)))

    def addini(self, *args, **kwargs):
        pass


def declared_options(plugins=()) -> list[tuple[tuple[str, ...], dict]]:
    """``[(names, attrs), ...]``: the options the shared plugin, its :data:`PARTS` and the
    plugin modules ``plugins`` (dotted names, e.g. ``cts.plugin``) declare to pytest, read
    from their own ``pytest_addoption``: the one declaration that the ``nncts`` command's
    parsers use too (``attrs`` are argparse's: action, default, type, metavar, help)."""
    import importlib
    found = _Declarations()
    modules = [importlib.import_module(__name__), *PARTS, *(importlib.import_module(p) for p in plugins)]
    for module in modules:
        hook = getattr(module, "pytest_addoption", None)
        if hook is not None:
            hook(found)
    return found.options


def pytest_addoption(parser):
    g = parser.getgroup("nncts", "nncts driver certification")
    add_driver_options(g.addoption)
    add_corpus_options(g.addoption)
    g.addoption("--wait-limit", type=float, default=30.0, metavar="SECONDS",
                help="longest wait for an asynchronous or fenced completion before it counts as lost "
                     "(default 30)")
    g.addoption("--nncts-report", default=None, metavar="DIR",
                help="write outcomes.jsonl (one JSON record per test, as it finishes) into DIR")
    g.addoption("--nncts-resume", action="store_true",
                help="with --nncts-report: skip the tests DIR/outcomes.jsonl already records "
                     "(continue a run that was killed), appending the rest")


def _configure_remote(config) -> None:
    """A driver endpoint's mutual-TLS files go to :func:`runtime.remote.client.set_endpoint_tls`
    (checked first: UsageError for a missing file or an insecure TCP endpoint). Out of
    process: every driver call is bounded by the driver timeout, so pytest-timeout (the
    backstop) and the wait for asynchronous completions must be longer: a hang is then the
    driver call's, reported for the test that made it."""
    try:
        set_endpoint_tls(endpoint_tls(*(config.getoption(o, None) for o in ENDPOINT_OPTIONS)))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    if not is_remote_spec(driver_spec(config)):
        return
    test_timeout = getattr(config.option, "timeout", None)
    if test_timeout is None:
        try:
            test_timeout = float(config.getini("timeout") or 0) or None
        except (ValueError, TypeError):  # no pytest-timeout, or no ini value
            test_timeout = None
    call_timeout = config.getoption("driver_timeout") or test_timeout or 300.0
    set_call_timeout(call_timeout)
    if test_timeout:
        backstop = max(float(test_timeout), 2 * call_timeout + 30)
        config.option.timeout = backstop
        if hasattr(config, "_env_timeout"):  # pytest-timeout read its settings already
            config._env_timeout = backstop
    config.option.wait_limit = max(config.getoption("wait_limit"), call_timeout + 10)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    wait_limit = config.getoption("wait_limit")
    if not wait_limit > 0:
        raise pytest.UsageError(f"--wait-limit: must be a positive number of seconds, got {wait_limit:g}")
    _configure_remote(config)
    for op in OperationType:
        config.addinivalue_line("markers", f"{op.name}: test model uses operation {op.name}")
    for level in range(1, 9):
        config.addinivalue_line("markers", f"fl{level}: test model needs feature level {level}")
    config._nncts_records = []
    report_dir = config.getoption("nncts_report", None)
    config._nncts_done = set()
    if report_dir and config.getoption("nncts_resume") and (Path(report_dir) / "outcomes.jsonl").exists():
        config._nncts_records = read_records(Path(report_dir) / "outcomes.jsonl")
        config._nncts_done = {r["id"] for r in config._nncts_records}
    config._nncts_resumed = len(config._nncts_records)
    is_worker = hasattr(config, "workerinput")
    config._nncts_writer = RecordWriter(Path(report_dir) / "outcomes.jsonl") if report_dir and not is_worker else None
    _CONFIG["config"] = config


def pytest_unconfigure(config):
    if getattr(config, "_nncts_writer", None):
        config._nncts_writer.close()


def corpus_models(config) -> list:
    """Every test model under the ``--corpus`` roots; UsageError naming a malformed file."""
    try:
        return list(iter_corpus(corpus_roots(config)))
    except CorpusError as e:
        raise pytest.UsageError(f"corpus: {e}") from None


def model_marks(tm) -> list:
    """Markers of a test model: one per operation name, and ``flN``."""
    marks = [getattr(pytest.mark, t.name) for t in tm.operation_types]
    marks.append(getattr(pytest.mark, f"fl{tm.feature_level}"))
    return marks


def pytest_collection_modifyitems(config, items):
    """With --nncts-resume, deselect the tests already recorded (in a group: its tests;
    :func:`harness.grouped.narrow`)."""
    done = getattr(config, "_nncts_done", set())
    if not done:
        return
    grouped.narrow(items, config, lambda group, k: group.ids[k] not in done)
    keep, drop = [], []
    for item in items:
        spec = getattr(item, "callspec", None)
        (drop if spec is not None and grouped.group_of(item) is None and spec.id in done else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def nncts_device(pytestconfig):
    """The front-end Device of the driver under test (``--driver``), over the one HAL device
    of the run (:func:`harness.driver.driver_hal`)."""
    try:
        return Device(driver_hal(pytestconfig))
    except pytest.UsageError as e:
        pytest.exit(str(e), returncode=4)


def record_fields(item) -> dict | None:
    """The outcome-record fields of ``item`` (asked once of the suites through
    :func:`harness.hookspecs.pytest_nncts_record_fields`, then kept on the item), None when
    it is no suite's test."""
    if RECORD_FIELDS not in item.stash:
        fields = item.config.hook.pytest_nncts_record_fields(item=item)
        item.stash[RECORD_FIELDS] = None if fields is None else dict(fields)
    return item.stash[RECORD_FIELDS]


def add_record_fields(node, **fields) -> None:
    """Add fields a test learns while it runs to its record (``skip_kind``, ``reproducers``,
    the ``operations`` of a generated graph, ...); a test no suite answered for becomes a
    record of its own (it must then give ``suite`` and ``operations``)."""
    current = record_fields(node)
    if current is None:
        current = node.stash[RECORD_FIELDS] = {}
    current.update(fields)


def record_id(nodeid: str) -> str:
    """The record id of a test: its parameter id (the whole node id when it has none)."""
    return nodeid.split("[", 1)[-1].rstrip("]")


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_makereport(item, call):
    """For a suite's test (one with outcome records), in this order: a test during which an
    out-of-process driver died or hung fails, whatever it concluded (an expected failure is
    no excuse for a crash), tagged ``driver_incident``; a declined test is judged by the
    ``--profile`` (:func:`harness.requirements.apply_profile`); a test the ``--baseline``
    lists becomes a known failure or an unexpected pass
    (:func:`harness.expectations.apply_baseline`). Innermost (trylast), so pytest's xfail and
    pytest-rerunfailures see the final outcome (a known failure is not re-run)."""
    if call.when == "setup":
        item._nncts_incidents = len(INCIDENTS)
    outcome = yield
    report = outcome.get_result()
    # only the reports that can make a record carry the fields (pytest-xdist sends every
    # report to the controller): the call, a setup that did not pass or saw a driver incident
    if call.when == "teardown" or (call.when == "setup" and report.passed
                                   and len(INCIDENTS) <= getattr(item, "_nncts_incidents", 0)):
        return
    fields = record_fields(item)
    if fields is None or "operations" not in fields:
        return
    finish_report(item, report, record_id(item.nodeid), fields, getattr(item, "_nncts_incidents", len(INCIDENTS)))
    item._nncts_incidents = len(INCIDENTS)


#: Record keys copied from a report's fields (``report.nncts``) when present.
OPTIONAL_KEYS = ("operand_types", "operation_under_test", "operand_type", "helper_operations", "core_digest",
                 "driver_incident", "reproducers", "declined", "reason", "link", "baseline_id",
                 "sweep",  # sweep: a precision sweep's figures (precision.measure.summarize)
                 # a random graph's judgement (random_graph.judge.record_fields)
                 "ambiguous_elements", "decisions", "three_way", "times_worse",
                 # a CTS test's precision grade (harness.runner.precision_fields)
                 "precision", "ulp_mean", "ulp_budget", "ulp_worst")


def _message(report) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return report.longrepr[2].removeprefix("Skipped: ")
    if report.failed or hasattr(report, "wasxfail"):
        return getattr(report.longrepr, "reprcrash", None) and report.longrepr.reprcrash.message \
            or str(report.longrepr)[-2000:]
    return ""


def pytest_runtest_logreport(report):
    """Write the outcome record of a suite's test: at its call report, or its setup report
    when setup did not pass; an intermediate attempt of a re-run test (outcome ``rerun``)
    writes none (the final one carries ``attempts``)."""
    props = getattr(report, "nncts", None)
    outcome = record_outcome(report)
    if not props or "operations" not in props or outcome is None:
        return
    record = {"id": record_id(report.nodeid), "outcome": outcome,
              "duration_s": round(report.duration, 6), "message": _message(report),
              "operations": props["operations"], "feature_level": props.get("feature_level"),
              "skip_kind": props.get("skip_kind", ""), "mode": props.get("mode", "sync"),
              "suite": props.get("suite", "cts"), "time": time.time(), "nodeid": report.nodeid}
    for key in OPTIONAL_KEYS:
        if props.get(key) not in (None, "", []):
            record[key] = props[key]
    if "required" in props:
        record["required"] = props["required"]
    if "ulp_max" in props:  # null when infinite
        record["ulp_max"] = props["ulp_max"]
    if getattr(report, "rerun", 0):
        record["attempts"] = report.rerun + 1
    config = _CONFIG.get("config")
    if config is None:
        return
    config._nncts_records.append(record)
    if config._nncts_writer:
        config._nncts_writer.write(record)


_CONFIG: dict = {}


def pytest_terminal_summary(terminalreporter, config):
    records = getattr(config, "_nncts_records", [])
    if not records:
        return
    terminalreporter.section("nncts summary per operation")
    for line in format_summary(records):
        terminalreporter.write_line(line)
    if config._nncts_writer and config.getoption("nncts_progress", None) is None:
        # the nncts command (which asks for progress lines) names its published report itself
        terminalreporter.write_line(f"outcome records: {config._nncts_writer.path}")
