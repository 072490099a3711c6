"""Render outcome records into ``summary.json`` and a self-contained ``index.html``
(jinja2 template ``templates/report.html.j2``)."""
from __future__ import annotations

import datetime
import json
from pathlib import Path

import jinja2

from .records import per_mode, per_operation, per_source, read_records, totals

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]))


def write_reports(records_path: str | Path, out_dir: str | Path, title: str,
                  meta: dict | None = None) -> list[Path]:
    """Write ``summary.json`` and ``index.html`` for the records in ``records_path``;
    returns their paths."""
    records = read_records(records_path)
    out_dir = Path(out_dir)
    t = totals(records)
    summary = {"title": title, "generated": datetime.datetime.now().isoformat(timespec="seconds"),
               "meta": meta or {}, "totals": dict(t),
               "per_operation": {op: dict(c) for op, c in per_operation(records).items()},
               "per_mode": per_mode(records),
               "per_source": {source: dict(c) for source, c in per_source(records).items()}}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    failures = [r for r in records if r["outcome"] == "failed"]
    html = _ENV.get_template("report.html.j2").render(
        summary=summary, per_operation=per_operation(records), failures=failures,
        skips=[r for r in records if r["outcome"] == "skipped"], totals=t)
    (out_dir / "index.html").write_text(html, encoding="utf-8")
    return [out_dir / "summary.json", out_dir / "index.html"]
