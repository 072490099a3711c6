"""pytest plugin part of :mod:`harness.plugin`: expectations of a certification run.

``--baseline FILE`` lists known failures (TOML, read with :func:`runtime.files.load_toml`)::

    [[known_failure]]
    id = "V1_0/add_quant8/*"             # record id (the pytest parameter id) or node id;
                                         # exact, or an fnmatch pattern
    reason = "rounding in our ADD kernel" # required
    link = "https://bugs.example.com/123" # optional
    incident = false                      # optional: true also excuses a driver crash/hang

A listed test that fails is reported as an expected failure (pytest's ``xfailed``; record
outcome ``known_failure`` with ``reason``, ``link`` and ``baseline_id``) and does not fail
the run; one that passes is an ``unexpected_pass`` and fails the run (strict: the message
says to remove the entry). The first matching entry wins. A failure during which an
out-of-process driver crashed or hung (``driver_incident``) stays a failure unless the entry
says ``incident = true``.

``--retries N`` re-runs a failing test up to N times (pytest-rerunfailures' ``--reruns``);
one that fails and then passes is recorded once, outcome ``flaky`` with ``attempts``. With
retries, an unexpected pass must pass on every attempt: a listed test that fails on a retry
stays a known failure.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import pytest

from runtime.files import load_toml

ENTRY_KEYS = {"id": str, "reason": str, "link": str, "incident": bool}


@dataclass(frozen=True)
class KnownFailure:
    """One baseline entry: ``id`` (exact test id / node id or fnmatch pattern), ``reason``,
    ``link`` ("" when none), ``incident`` (True: a driver crash or hang is excused too)."""

    id: str
    reason: str
    link: str = ""
    incident: bool = False

    def matches(self, record_id: str, nodeid: str) -> bool:
        """True when the pattern equals or fnmatch-matches the record id or the node id."""
        return any(self.id == s or fnmatch.fnmatchcase(s, self.id) for s in (record_id, nodeid))


@dataclass(frozen=True)
class Baseline:
    """The known failures of a baseline file (``path``), in file order."""

    path: str
    entries: tuple[KnownFailure, ...]

    def match(self, record_id: str, nodeid: str) -> KnownFailure | None:
        """The first entry matching the test, or None."""
        return next((e for e in self.entries if e.matches(record_id, nodeid)), None)


def load_baseline(path: str | Path) -> Baseline:
    """Read and check a baseline file (under :func:`runtime.files.load_toml`'s bounds: 16 MiB,
    64 levels of nesting). Raises ValueError with a one-line message naming the file (and
    the entry) when the file is missing, too large, nested too deep, not TOML, has a key other
    than ``known_failure``, or an entry lacks ``id`` / ``reason``, has an unknown key or a
    value of the wrong type."""
    try:
        doc = load_toml(path)
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None
    unknown = sorted(set(doc) - {"known_failure"})
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {', '.join(unknown)} (expected [[known_failure]] entries)")
    raw = doc.get("known_failure", [])
    if not isinstance(raw, list):
        raise ValueError(f"{path}: known_failure must be an array of tables ([[known_failure]])")
    return Baseline(str(path), tuple(_entry(path, n, e) for n, e in enumerate(raw, 1)))


def _entry(path, n: int, raw) -> KnownFailure:
    where = f"{path}: known_failure entry {n}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: not a table")
    if isinstance(raw.get("id"), str):
        where += f" (id {raw['id']!r})"
    unknown = sorted(set(raw) - set(ENTRY_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(ENTRY_KEYS)})")
    for key in ("id", "reason"):
        if not raw.get(key):
            raise ValueError(f"{where}: missing {key!r}")
    for key, kind in ENTRY_KEYS.items():
        if key in raw and not isinstance(raw[key], kind):
            raise ValueError(f"{where}: {key!r} must be a {kind.__name__}")
    return KnownFailure(**raw)


def pytest_addoption(parser):
    g = parser.getgroup("nncts")
    g.addoption("--baseline", default=None, metavar="FILE",
                help="TOML file of known failures ([[known_failure]] id = test id or pattern, reason, "
                     "link): listed failures are known (xfailed), a listed test that passes fails the run")
    g.addoption("--retries", type=int, default=0, metavar="N",
                help="re-run a failing test up to N times (pytest-rerunfailures); one that then passes "
                     "is recorded as flaky")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    retries = config.getoption("retries")
    if retries < 0:
        raise pytest.UsageError("--retries: must be at least 0")
    if retries and not config.pluginmanager.hasplugin("rerunfailures"):
        raise pytest.UsageError("--retries: needs pytest-rerunfailures (pip install pytest-rerunfailures)")
    if retries:
        config.option.reruns = max(retries, config.getoption("reruns", None) or 0)
    path = config.getoption("baseline")
    try:
        config._nncts_baseline = load_baseline(path) if path else None
    except ValueError as e:
        raise pytest.UsageError(f"--baseline: {e}") from None


def apply_baseline(item, report, record_id: str) -> None:
    """Turn a finished phase report of a baselined test into a known failure (skipped with
    ``wasxfail``, as pytest's xfail does) or an unexpected pass (failed); tags
    the report's record fields (``report.nncts``) with ``expectation``, ``reason``, ``link``,
    ``baseline_id``.
    Only the reports that make a record count: a failed setup or call, a passed call."""
    baseline = getattr(item.config, "_nncts_baseline", None)
    if baseline is None or not (report.when == "call" or (report.when == "setup" and report.failed)):
        return
    entry = baseline.match(record_id, report.nodeid)
    if entry is None or report.skipped:
        return
    props = report.nncts
    if report.failed and props.get("driver_incident") and not entry.incident:
        return  # a crash or hang is never excused unless the entry says incident = true
    tags = {"reason": entry.reason, "link": entry.link, "baseline_id": entry.id}
    if report.failed:
        report.outcome = "skipped"
        report.wasxfail = f"known failure: {entry.reason}" + (f" ({entry.link})" if entry.link else "")
        props.update(expectation="known_failure", **tags)
    else:
        report.outcome = "failed"
        report.longrepr = (f"{record_id}: unexpected pass: baseline {baseline.path} lists it as a known "
                           f"failure (entry {entry.id!r}: {entry.reason}); remove the entry")
        props.update(expectation="unexpected_pass", **tags)


def pytest_terminal_summary(terminalreporter, config):
    """One line on the baseline: known failures, unexpected passes, entries matching no record."""
    baseline = getattr(config, "_nncts_baseline", None)
    records = getattr(config, "_nncts_records", [])
    if baseline is None or not records:
        return
    used = {r.get("baseline_id") for r in records}
    unused = [e.id for e in baseline.entries if e.id not in used]
    known = sum(r["outcome"] == "known_failure" for r in records)
    fixed = sum(r["outcome"] == "unexpected_pass" for r in records)
    terminalreporter.write_line(
        f"baseline {baseline.path}: {known} known failure(s), {fixed} unexpected pass(es)"
        + (f"; {len(unused)} entry(ies) matched no test of this run: {', '.join(unused[:10])}" if unused else ""))
