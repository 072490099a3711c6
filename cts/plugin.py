"""pytest plugin of the CTS: ``--driver``, ``--corpus``, ``--nncts-report``; one test item per
corpus test model (id ``<version>/<spec>/<name>``, markers per operation and ``flN``);
outcome records and a per-operation summary."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from reports.records import RecordWriter, format_summary, read_records
from runtime.types import OperationType

DEFAULT_CORPUS = Path(__file__).resolve().parent / "corpus"


def pytest_addoption(parser):
    g = parser.getgroup("nncts", "nncts driver certification")
    g.addoption("--driver", default="sample",
                help="driver under test: bundled name, entry point in group nncts.drivers, or module:factory "
                     "(default: sample)")
    g.addoption("--corpus", action="append", default=[],
                help="corpus directory (root or any folder below it; repeatable); default: the vendored AOSP corpus")
    g.addoption("--mode", action="append", default=[],
                help="execution modes (repeatable, comma-separated): default (CI set), all (full cross "
                     "product), an axis value (sync async burst fenced / buffer memory device / specified "
                     "dynamic insufficient / cache / coupling) or a combination like fenced+memory+cache")
    g.addoption("--wait-limit", type=float, default=30.0, metavar="SECONDS",
                help="longest wait for an asynchronous or fenced completion before it counts as lost "
                     "(default 30)")
    g.addoption("--no-require-timing", action="store_true",
                help="do not fail drivers that report no timing when measurement is requested")
    g.addoption("--nncts-report", default=None, metavar="DIR",
                help="write outcomes.jsonl (one JSON record per test, as it finishes) into DIR")
    g.addoption("--nncts-resume", action="store_true",
                help="with --nncts-report: skip the tests DIR/outcomes.jsonl already records "
                     "(continue a run that was killed), appending the rest")


def pytest_configure(config):
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
    is_worker = hasattr(config, "workerinput")
    config._nncts_writer = RecordWriter(Path(report_dir) / "outcomes.jsonl") if report_dir and not is_worker else None


def pytest_unconfigure(config):
    if getattr(config, "_nncts_writer", None):
        config._nncts_writer.close()


def corpus_roots(config) -> list[Path]:
    roots = [Path(p) for p in config.getoption("corpus")] or [DEFAULT_CORPUS]
    missing = [str(r) for r in roots if not r.exists()]
    if missing:
        raise pytest.UsageError(f"--corpus: no such directory: {', '.join(missing)}")
    return roots


def pytest_generate_tests(metafunc):
    if "nncts_case" not in metafunc.fixturenames:
        return
    from cts.modes import BASE, applies, parse_modes
    from runtime.testing.hal_convert import to_hal_model
    from runtime.testing.support import not_implemented_reason
    from runtime.testing.test_model import CorpusError, iter_corpus
    try:
        models = list(iter_corpus(corpus_roots(metafunc.config)))
        modes = parse_modes(metafunc.config.getoption("mode"))
    except (CorpusError, ValueError) as e:
        raise pytest.UsageError(f"nncts: {e}") from None
    params = []
    for tm in models:
        marks = [getattr(pytest.mark, t.name) for t in tm.operation_types]
        marks.append(getattr(pytest.mark, f"fl{tm.feature_level}"))
        # a model the operation table cannot run yet is one (skipped) item, not one per mode
        runnable = not_implemented_reason(to_hal_model(tm), signatures_too=not tm.expect_failure) is None
        for mode in modes if runnable else [BASE]:
            if applies(tm, mode) or not runnable:
                name = tm.test_id if mode == BASE else f"{tm.test_id}@{mode.name}"
                params.append(pytest.param((tm, mode), id=name, marks=marks))
    metafunc.parametrize("nncts_case", params)


def pytest_collection_modifyitems(config, items):
    """With --nncts-resume, deselect the test models already recorded."""
    done = getattr(config, "_nncts_done", set())
    if not done:
        return
    keep, drop = [], []
    for item in items:
        case = getattr(item, "callspec", None) and item.callspec.params.get("nncts_case")
        (drop if case is not None and item.callspec.id in done else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def nncts_device(pytestconfig):
    """The front-end Device of the driver under test (``--driver``)."""
    from runtime.drivers import DriverNotFound
    from runtime.nnapi import get_devices
    try:
        return get_devices([pytestconfig.getoption("driver")])[0]
    except (DriverNotFound, TypeError) as e:
        pytest.exit(f"--driver: {e}", returncode=4)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Tag the item's reports with the model's operations and feature level."""
    case = getattr(item, "callspec", None) and item.callspec.params.get("nncts_case")
    if case is not None:
        tm, mode = case
        item.user_properties.append(("operations", [t.name for t in tm.operation_types]))
        item.user_properties.append(("feature_level", tm.feature_level))
        item.user_properties.append(("mode", mode.name))


def pytest_runtest_logreport(report):
    props = dict(report.user_properties)
    if "operations" not in props:
        return
    done = report.when == "call" or (report.when == "setup" and not report.passed)
    if not done:
        return
    outcome = "passed" if report.passed else "skipped" if report.skipped else "failed"
    message = ""
    if report.skipped and isinstance(report.longrepr, tuple):
        message = report.longrepr[2].removeprefix("Skipped: ")
    elif report.failed:
        message = getattr(report.longrepr, "reprcrash", None) and report.longrepr.reprcrash.message \
            or str(report.longrepr)[-2000:]
    record = {"id": report.nodeid.split("[", 1)[-1].rstrip("]"), "outcome": outcome,
              "duration_s": round(report.duration, 6), "message": message,
              "operations": props["operations"], "feature_level": props.get("feature_level"),
              "skip_kind": props.get("skip_kind", ""), "mode": props.get("mode", "sync"),
              "time": time.time()}
    config = _CONFIG.get("config")
    if config is None:
        return
    config._nncts_records.append(record)
    if config._nncts_writer:
        config._nncts_writer.write(record)


_CONFIG: dict = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    _CONFIG["config"] = session.config


def pytest_terminal_summary(terminalreporter, config):
    records = getattr(config, "_nncts_records", [])
    if not records:
        return
    terminalreporter.section("nncts CTS summary per operation")
    for line in format_summary(records):
        terminalreporter.write_line(line)
    if config._nncts_writer:
        terminalreporter.write_line(f"outcome records: {config._nncts_writer.path}")
