"""Render one suite's outcome records into ``summary.json`` and a self-contained
``index.html``: the same page as a run's report (:mod:`reports.run`, template
``templates/report.html.j2``) for a run of this one directory."""
from __future__ import annotations

import json
from pathlib import Path

from harness.records import read_records

from . import precision
from .run import SuiteDir, build, render_html

#: summary.json's keys (the report document's subset people rely on), besides ``status``.
SUMMARY_KEYS = ("title", "generated", "meta", "totals", "per_operation", "per_mode", "per_source", "per_suite")


def write_reports(records_path: str | Path, out_dir: str | Path, title: str,
                  meta: dict | None = None) -> list[Path]:
    """Write ``summary.json`` (title, generated, meta, totals, per operation / mode / source /
    suite, and ``status``: ``meta["status"]``, ``"complete"`` when not given; ``"interrupted"``
    for a run that SIGINT/SIGTERM ended, :mod:`nncts.rundir`) and ``index.html`` (the run report of this directory: summary per suite, matrix,
    failures with replay commands, timing charts) for the records in ``records_path``;
    returns their paths. The replay commands use ``meta``'s driver and corpus."""
    records = [dict(r, suite=r.get("suite", "cts")) for r in read_records(records_path)]
    out_dir = Path(out_dir)
    dirs = [SuiteDir(Path(records_path).parent, records, dict(meta or {}))]
    doc = build(dirs, title, meta)
    summary = {k: doc[k] for k in SUMMARY_KEYS}
    summary["status"] = (meta or {}).get("status", "complete")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    (out_dir / "index.html").write_text(render_html(doc, records), encoding="utf-8")
    page = precision.write_page(dirs, out_dir)
    return [out_dir / "summary.json", out_dir / "index.html"] + ([page] if page else [])
