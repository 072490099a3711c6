"""JUnit XML of a run built from its outcome records (junitparser), so a run merged from
shards or from several suites has one too: one ``<testsuite>`` per suite (``nncts-cts``,
``nncts-vts``, ...), one ``<testcase>`` per record (classname the suite and mode, name the
record id). A failure or an unexpected pass is ``<failure>``; a skipped test, a known
failure (the baseline excuses it) is ``<skipped>`` with its kind or reason; a flaky test
passes, its attempts in ``<system-out>``."""
from __future__ import annotations

import collections
from pathlib import Path

from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite


def _case(r: dict) -> TestCase:
    suite = r.get("suite", "cts")
    case = TestCase(r["id"], classname=f"nncts.{suite}.{r.get('mode', 'sync')}", time=r.get("duration_s", 0.0))
    outcome, message = r["outcome"], r.get("message") or ""
    if outcome in ("failed", "unexpected_pass"):
        case.result = [Failure(message.splitlines()[0][:500] if message else outcome, outcome)]
        case.result[0].text = message
    elif outcome == "skipped":
        case.result = [Skipped(message[:500], r.get("skip_kind") or "skipped")]
    elif outcome == "known_failure":
        case.result = [Skipped(f"known failure: {r.get('reason', '')} {r.get('link', '')}".strip(), "known_failure")]
    elif outcome == "flaky":
        case.system_out = f"flaky: passed after {r.get('attempts', 2)} attempts; {message}"
    return case


def build(records) -> JUnitXml:
    """The JUnitXml document of ``records`` (suites in first-seen order, statistics set)."""
    by_suite: dict[str, list[dict]] = collections.defaultdict(list)
    for r in records:
        by_suite[r.get("suite", "cts")].append(r)
    xml = JUnitXml("nncts")
    for suite, recs in by_suite.items():
        ts = TestSuite(f"nncts-{suite}")
        ts.add_testcases([_case(r) for r in recs])
        ts.update_statistics()
        xml.add_testsuite(ts)
    xml.update_statistics()
    return xml


def write(records, path: str | Path) -> Path:
    """Write :func:`build` of ``records`` to ``path``; returns it."""
    build(records).write(str(path), pretty=True)
    return Path(path)
