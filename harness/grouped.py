"""Several tests in one pytest item (pytest plugin part of :mod:`harness.plugin`): the CTS
collects one item per test model, its execution modes inside, since pytest's own cost per
item (collection, the setup / call / teardown protocol, three reports through pytest-xdist)
was larger than the work of a mode, and the modes of a model share their build and
compilation (:mod:`harness.runner`).

Each test of a group is still a test of its own: it gets its own report (node id
``<function>[<record id>]``, the id a one-test item had), so its own outcome record, JUnit
case, terminal count and progress count, its own ``--baseline`` and ``--profile`` verdict
(:func:`harness.verdicts.finish_report`), its own ``--retries``, driver-incident tag, and its own
``-k`` and ``--resume`` selection (:func:`narrow`). The item's own id is its first test's id,
so when a group holds one test (one ``--mode``) the item's node id is that test's: the
replay command of a record names its mode, so the node id it gives selects exactly it.

The item's own reports are not logged while they pass: a test of the group reports when it
finishes (:func:`run_group`). One that does not pass (a failed fixture, the item's timeout,
an error of the harness) becomes the report of the test in flight, and the tests after it
are reported failed, naming it (:func:`pytest_runtest_protocol`).

pytest-timeout's signal timer (``--timeout``) is set again as each test of a group starts, so
it bounds each test, not the item.
"""
from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
from _pytest.mark import KeywordMatcher
from _pytest.mark.expression import Expression
from _pytest.runner import runtestprotocol

from harness.verdicts import finish_report
from runtime.remote.incidents import INCIDENTS


@dataclass(eq=False)
class Group:
    """The tests of one item, in run order: ``ids`` their record ids, ``cases`` what the
    suite's test function runs for each (the CTS: ``(TestModel, Mode)``), ``fields`` the
    record fields of a case (:func:`harness.plugin.record_fields` of a one-test item).
    ``selected`` are the indexes still to run after ``-k`` and ``--resume``."""

    ids: list[str]
    cases: list
    fields: Callable[[Any], dict]
    selected: list[int] = field(default_factory=list)
    current: int | None = None
    reported: set = field(default_factory=set)
    incidents: int = 0

    def __post_init__(self):
        if not self.selected:
            self.selected = list(range(len(self.ids)))


@dataclass
class Result:
    """What the suite's test function concludes for one case: ``status`` passed, failed or
    skipped, ``message`` (why), and ``fields`` added to the record (``skip_kind``, the
    precision grade, ...)."""

    status: str
    message: str = ""
    fields: dict = field(default_factory=dict)


def group_of(item) -> Group | None:
    """The :class:`Group` of a grouped item (a parameter value of its callspec), else None."""
    spec = getattr(item, "callspec", None)
    if spec is None:
        return None
    return next((v for v in spec.params.values() if isinstance(v, Group)), None)


def nodeid_of(item, record_id: str) -> str:
    """The node id of a group's test: the item's node id with ``record_id`` as its
    parameter id."""
    return item.nodeid.rsplit("[", 1)[0] + f"[{record_id}]"


def narrow(items: list, config, keep: Callable[[Group, int], bool]) -> None:
    """Keep in each grouped item only the tests ``keep(group, k)`` accepts; deselect
    (``pytest_deselected``) the items left without any."""
    kept, dropped = [], []
    for item in items:
        group = group_of(item)
        if group is not None:
            group.selected = [k for k in group.selected if keep(group, k)]
            if not group.selected:
                dropped.append(item)
                continue
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def selected_tests(items) -> int:
    """How many tests ``items`` run: a grouped item's selected tests, one for any other."""
    return sum(len(g.selected) if (g := group_of(i)) is not None else 1 for i in items)


def _mode_matchers(item, group: Group) -> list:
    """``-k``'s matcher for each test of a group: the item's names (pytest's
    :class:`KeywordMatcher`) with the item's own name and the other tests' ids replaced by
    the test's own id."""
    base = KeywordMatcher.from_item(item)
    names = getattr(base, "_names", None)
    if names is None:  # another pytest: match on the item's names and the test's id
        return [lambda sub, _id=i, **kw: base(sub, **kw) or sub.lower() in _id.lower() for i in group.ids]
    function = item.name.rsplit("[", 1)[0]
    common = frozenset(names) - {item.name, *group.ids}
    return [KeywordMatcher(common | {f"{function}[{i}]", i}) for i in group.ids]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """``-k`` per test of a group (a group's item is kept when any of its tests is
    selected); pytest's own ``-k`` pass then sees no expression (it is restored after)."""
    expr_text = (config.option.keyword or "").strip()
    if not expr_text or not any(group_of(i) is not None for i in items):
        return (yield)
    try:
        expr = Expression.compile(expr_text)
    except SyntaxError as e:
        raise pytest.UsageError(f"Wrong expression passed to '-k': {e.text}: at column {e.offset}: {e.msg}") \
            from None
    plain = [i for i in items if group_of(i) is None and not expr.evaluate(KeywordMatcher.from_item(i))]
    if plain:
        config.hook.pytest_deselected(items=plain)
        dropped = set(map(id, plain))
        items[:] = [i for i in items if id(i) not in dropped]
    matchers = {id(g): _mode_matchers(i, g) for i in items if (g := group_of(i)) is not None}
    narrow(items, config, lambda g, k: expr.evaluate(matchers[id(g)][k]))
    config.option.keyword = ""
    try:
        return (yield)
    finally:
        config.option.keyword = expr_text


def pytest_collection_finish(session):
    """Keep the number of tests selected (a group counts its tests): the progress total,
    sent on a worker's first group report (``nncts_selected``)."""
    session.config._nncts_selected = selected_tests(session.items)


#: The run's session (the controller's, under pytest-xdist), for :func:`pytest_runtest_logreport`.
_SESSION: dict = {}


def pytest_sessionstart(session):
    """Keep the session (:data:`_SESSION`)."""
    _SESSION["session"] = session


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """pytest's count of the tests collected (its progress percentage) counts a group's tests."""
    if session.items:
        session.testscollected = selected_tests(session.items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    """On pytest-xdist's controller: the count of tests a worker's first report carries
    (``nncts_selected``) becomes pytest's count of tests collected (it had the workers' items)."""
    selected = getattr(report, "nncts_selected", None)
    session = _SESSION.get("session")
    if selected and session is not None and not hasattr(session.config, "workerinput"):
        session.testscollected = selected


def _report(item, record_id: str, status: str, message: str, start: float, stop: float,
            when: str = "call", longrepr=None):
    """A TestReport of one test of a group (its node id and location, ``when``)."""
    nodeid = nodeid_of(item, record_id)
    path, line, _ = item.location
    if longrepr is None and status == "skipped":
        longrepr = (str(item.path), (line or 0) + 1, f"Skipped: {message}")
    elif longrepr is None and status == "failed":
        longrepr = f"{record_id}: {message}"
    return pytest.TestReport(nodeid, (path, line, f"{item.name.rsplit('[', 1)[0]}[{record_id}]"), {}, status,
                             longrepr, when, [], stop - start, start, stop, [])


def _finish(item, group: Group, k: int, rep, fields: dict | None = None) -> None:
    """Finish test ``k``'s report: its record fields, the driver incidents since it started,
    the profile's and the baseline's verdicts (:func:`harness.verdicts.finish_report`)."""
    finish_report(item, rep, group.ids[k], group.fields(group.cases[k]) | (fields or {}), group.incidents)


def _log(item, group: Group, k: int, rep) -> None:
    """Log test ``k``'s finished report; the first a pytest-xdist worker logs carries the
    number of tests it selected (``nncts_selected``: the progress total). A report of
    outcome ``rerun`` (an attempt to be repeated) does not count as the test's. In a plain
    run the report is logged with pytest's output capture suspended (the test is still in its
    call phase), so the terminal shows it."""
    config = item.config
    if rep.outcome != "rerun":
        group.reported.add(k)
    if hasattr(config, "workerinput"):
        # pytest-xdist's worker sends only reports of its item's node id: the test's own
        # travels beside it, and is put back on the controller (pytest_report_from_serializable)
        rep.nncts_nodeid, rep.nodeid = rep.nodeid, item.nodeid
        if not getattr(config, "_nncts_selected_sent", False):
            rep.nncts_selected = getattr(config, "_nncts_selected", None)
            config._nncts_selected_sent = True
        item.ihook.pytest_runtest_logreport(report=rep)
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        item.ihook.pytest_runtest_logreport(report=rep)
        return
    with capture.global_and_fixture_disabled():  # the test's output capture would swallow the letters
        item.ihook.pytest_runtest_logreport(report=rep)


@pytest.hookimpl(tryfirst=True)
def pytest_report_from_serializable(config, data):
    """On pytest-xdist's controller: a grouped test's report gets its own node id back
    (:func:`_log`)."""
    if data.get("$report_type") == "TestReport" and data.get("nncts_nodeid"):
        rep = pytest.TestReport._from_json(data)
        rep.nodeid = data["nncts_nodeid"]
        return rep
    return None


def _rearm_timeout(remaining: float) -> None:
    """Set pytest-timeout's signal timer (when one runs) to ``remaining`` seconds again."""
    if remaining > 0 and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, remaining)


def run_group(item, group: Group, run: Callable[[Any], Result], retries: int = 0) -> None:
    """Run each selected test of ``group`` with ``run(case)`` and log its report as it
    finishes (:func:`_log`); a test that fails (after the baseline's verdict) is run again
    up to ``retries`` times, the attempts before the last logged with outcome ``rerun``
    (a pass after a failure is flaky: ``rerun`` on the report). An exception of ``run``
    fails that test with the exception's text; pytest's outcomes (skip, fail, exit, a
    timeout) and KeyboardInterrupt end the item (:func:`pytest_runtest_protocol` reports
    them)."""
    timer = signal.getitimer(signal.ITIMER_REAL)[0] if threading.current_thread() is threading.main_thread() else 0
    for k in group.selected:
        group.current = k
        for attempt in range(retries + 1):
            _rearm_timeout(timer)
            group.incidents, start = len(INCIDENTS), time.time()
            try:
                result = run(group.cases[k])
            except Exception as e:  # noqa: BLE001 - a harness or driver error fails this test only
                result = Result("failed", f"{type(e).__name__}: {e}")
            rep = _report(item, group.ids[k], result.status, result.message, start, time.time())
            if attempt:
                rep.rerun = attempt
            _finish(item, group, k, rep, result.fields)
            again = rep.failed and attempt < retries
            if again:
                rep.outcome = "rerun"
            _log(item, group, k, rep)
            if not again:
                break
    group.current = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """The protocol of a grouped item: pytest's setup / call / teardown unlogged; each test
    logged as it finishes (:func:`run_group`); a phase that did not pass becomes the report of
    the test in flight (or of every selected test, for a setup that failed), and the tests
    not reached are reported failed, naming it. A teardown that fails, or a failure after
    every test reported, is shown under the last test without a second record."""
    group = group_of(item)
    if group is None:
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for rep in runtestprotocol(item, nextitem=nextitem, log=False):
        if rep.passed:
            continue
        pending = [k for k in group.selected if k not in group.reported]
        if rep.when == "teardown" or not pending:  # shown under the last test, whose record stands
            k = group.current if group.current is not None else group.selected[-1]
            rep.nodeid = nodeid_of(item, group.ids[k])
            _log(item, group, k, rep)
            continue
        first = group.current if group.current in pending else pending[0]
        for k in pending:
            if k == first:
                rep.nodeid = nodeid_of(item, group.ids[k])
                out = rep
            elif rep.when == "setup":  # each test's own setup would have ended the same way
                out = _report(item, group.ids[k], rep.outcome, "", rep.start, rep.stop, "setup", rep.longrepr)
            else:
                out = _report(item, group.ids[k], "failed", f"not run: {group.ids[first]} ended its item "
                                                            f"({rep.outcome} in {rep.when})", rep.stop, rep.stop)
            _finish(item, group, k, out)
            _log(item, group, k, out)
    group.current = None
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
