"""Progress with an ETA for long runs (pytest plugin part of :mod:`harness.plugin`).

Active with ``--nncts-progress[=LABEL]`` (the ``nncts`` command passes it with the suite's
name; plain pytest runs without it). On the controller (pytest-xdist's too: test reports
of every worker arrive there), it prints at most every ``--nncts-progress-every`` seconds
(default 5), and once at the end (not under ``--collect-only``), one line::

    [cts] 12,345/70,321 (17.6%)  passed 12,300  failed 3  skipped 42  120.4 tests/s  elapsed 01:42  ETA 07:50

formatted by :meth:`tqdm.tqdm.format_meter` (rate, elapsed time and ETA). The total is the
number of tests selected to run: :func:`pytest_collection_finish` in a plain run (a group
of tests in one item counts its tests: :func:`harness.grouped.selected_tests`); under
pytest-xdist, a worker's collection (``pytest_xdist_node_collection_finished``: its items;
every worker collects the same), then the count of tests the first worker's report carries
(``nncts_selected``). While active, and unless pytest is verbose (``-v``), the
per-test progress letters (dots) are not written; failures' sections and the short test
summary are unchanged.
"""
from __future__ import annotations

import time

import pytest
from tqdm import tqdm

from harness.grouped import selected_tests
from harness.records import OUTCOMES, record_outcome

#: Outcome counters in the order the line shows them (that of :data:`harness.records.OUTCOMES`);
#: the last three only when non-zero.
COUNTERS = ("passed", "failed", "skipped", "known failures", "unexpected passes", "flaky")
LINE_FORMAT = ("[{desc}] {n:,}/{total:,} ({percentage:.1f}%)  {counts}  {speed} tests/s  "
               "elapsed {elapsed}  ETA {remaining}")


def pytest_addoption(parser):
    g = parser.getgroup("nncts")
    g.addoption("--nncts-progress", nargs="?", const="tests", default=None, metavar="LABEL",
                help="print a progress line with an ETA every few seconds and at the end, labelled LABEL "
                     "(the nncts command passes the suite name); per-test dots off unless -v")
    g.addoption("--nncts-progress-every", type=float, default=5.0, metavar="SECONDS",
                help="with --nncts-progress: seconds between progress lines (default 5)")


def pytest_configure(config):
    label = config.getoption("nncts_progress")
    if label is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Progress(config, label, config.getoption("nncts_progress_every")),
                                      "nncts-progress")


#: The counter of each record outcome (:func:`harness.records.record_outcome`).
LABELS = dict(zip(OUTCOMES, COUNTERS))


def outcome_of(report) -> str | None:
    """The counter a test's finished phase report adds to (a name of :data:`COUNTERS`), or
    None while the test is not finished or will be re-run: the record outcome
    (:func:`harness.records.record_outcome`, so the line counts what the records hold)."""
    return LABELS.get(record_outcome(report))


class Progress:
    """The controller-side counters and clock of one run (registered by
    :func:`pytest_configure`)."""

    def __init__(self, config, label: str, every_s: float):
        self.config, self.label, self.every_s = config, label, every_s
        self.total = 0
        self.exact_total = False
        self.seen: int | None = None
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.start = self.last = time.monotonic()

    def _set_total(self, total: int) -> None:
        self.total = total
        self.start = self.last = time.monotonic()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        self._set_total(selected_tests(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.total:
            self._set_total(len(ids))

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report, config):
        status = yield
        if status and config.get_verbosity() <= 0:
            return status[0], "", status[2]  # no letter: nothing written; the word stays for the summary
        return status

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report):
        selected = getattr(report, "nncts_selected", None)
        if selected and not self.exact_total:  # a worker's count of the tests in its items
            self.exact_total = True
            self.total = selected
        if outcome_of(report) is None:
            return
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self._write(now)

    def pytest_terminal_summary(self, terminalreporter):
        if not self.config.option.collectonly:
            self._write(time.monotonic(), terminalreporter)

    def _count(self) -> None:
        """Add the outcome records written since the last count (this run's: not those a
        ``--resume`` read), so that the counts are the records' even when a signal ends the
        run between two hooks of one report."""
        records = getattr(self.config, "_nncts_records", None)
        if records is None:
            return
        if self.seen is None:
            self.seen = getattr(self.config, "_nncts_resumed", 0)
        for record in records[self.seen:]:
            counter = LABELS.get(record.get("outcome"))
            if counter:
                self.counts[counter] += 1
        self.seen = len(records)

    def line(self, now: float) -> str:
        """The progress line at monotonic time ``now``."""
        done = sum(self.counts.values())
        elapsed = max(now - self.start, 1e-9)
        counts = "  ".join(f"{name} {n:,}" for name, n in self.counts.items()
                           if n or name in COUNTERS[:3])
        return tqdm.format_meter(done, max(self.total, done), elapsed, prefix=self.label, bar_format=LINE_FORMAT,
                                 counts=counts, speed=f"{done / elapsed:.1f}" if done else "?")

    def _write(self, now: float, reporter=None) -> None:
        self._count()
        reporter = reporter or self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(self.line(now))
