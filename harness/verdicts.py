"""The verdicts a suite test's report gets once its test has concluded, in one place for
one-test items (:func:`harness.plugin.pytest_runtest_makereport`) and each test of a group
(:mod:`harness.grouped`)."""
from __future__ import annotations

from harness.expectations import apply_baseline
from harness.requirements import apply_profile
from runtime.remote.incidents import INCIDENTS


def finish_report(item, report, rid: str, fields: dict, incidents_before: int) -> None:
    """Give a test's report (``report``, of record id ``rid``) its record fields
    (``report.nncts``), then its verdicts in this order: a driver incident since
    ``incidents_before`` (the length :data:`runtime.remote.incidents.INCIDENTS` had when the
    test started) fails it, tagged ``driver_incident``; a decline is judged by the profile
    (:func:`harness.requirements.apply_profile`); a baselined test becomes a known failure or
    an unexpected pass (:func:`harness.expectations.apply_baseline`). Used for one-test items
    (:func:`harness.plugin.pytest_runtest_makereport`) and each test of a group
    (:mod:`harness.grouped`)."""
    report.nncts = dict(fields)
    _tag_incidents(item, report, INCIDENTS, incidents_before)
    apply_profile(item, report, rid)
    apply_baseline(item, report, rid)


def _tag_incidents(item, report, incidents, seen: int) -> None:
    if report.when not in ("setup", "call") or len(incidents) <= seen:
        return
    new = incidents[seen:]
    kind = "hang" if any(i.kind == "hang" for i in new) else "crash"
    report.nncts["driver_incident"] = kind
    text = "; ".join(f"driver process {'hung' if i.kind == 'hang' else 'died'} during {i.call}: {i.detail}"
                     for i in new)
    if not report.failed:
        report.outcome = "failed"
        report.longrepr = f"{report.nodeid}: {text}"
    elif text not in str(report.longrepr):
        report.longrepr = f"{text}\n{report.longrepr}"
