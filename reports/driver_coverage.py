"""The driver code coverage section of the report page: each run directory's
``driver_coverage.json`` (:mod:`harness.driver_coverage`, written by ``--driver-coverage``),
one table per suite: per file, lines and branches reached (percent) and the line ranges no test
of that suite reached. A certification bundle's report so shows each suite's own figures."""
from __future__ import annotations

import json
from pathlib import Path

#: The file a run directory holds (:data:`harness.driver_coverage.REPORT_FILE`).
REPORT_FILE = "driver_coverage.json"
#: A file's numbers the page shows (each checked to be a non-negative integer or percent).
NUMBERS = ("statements", "covered_lines", "branches", "covered_branches", "partial_branches")
PERCENTS = ("line_percent", "branch_percent", "percent")


def _number(value, what: str):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{what}: not a non-negative number: {value!r}")
    return value


def _row(entry, where: str) -> dict:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: not an object")
    row = {"path": str(entry.get("path", "?")), "missing_ranges": str(entry.get("missing_ranges", ""))}
    for key in NUMBERS + PERCENTS:
        row[key] = _number(entry.get(key, 0), f"{where}: {key}")
    return row


def load(run_dir, suite: str = "") -> dict | None:
    """The section of run directory ``run_dir`` (``{"suite", "driver", "process", "files":
    [row], "totals": row}``, each row's path, numbers, percents and ``missing_ranges``), None
    when it holds no ``driver_coverage.json``. ValueError (one line, naming the file) for one
    that is not such a document (a bundle's files come from elsewhere: every value checked)."""
    path = Path(run_dir) / REPORT_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
            raise ValueError("not a driver coverage document (no files list)")
        files = [_row(f, f"files[{i}]") for i, f in enumerate(doc["files"])]
        totals = _row(dict(doc.get("totals") or {}, path="total"), "totals")
    except (OSError, ValueError, RecursionError) as e:
        raise ValueError(f"{path}: {e}") from None
    return {"suite": suite, "driver": str(doc.get("driver", "")), "process": str(doc.get("process", "")),
            "files": files, "totals": totals}


def sections(dirs) -> list[dict]:
    """:func:`load` of every run directory (``reports.run.SuiteDir``) holding the file, each
    labelled by its suite (the run description's, else its records', else the directory name)."""
    out = []
    for d in dirs:
        suite = d.meta.get("suite") or (d.records[0].get("suite") if d.records else "") or d.path.name
        section = load(d.path, str(suite))
        if section:
            out.append(section)
    return out
