"""One report for a run of any suites: ``index.html`` (offline: jinja2, charts inline as SVG,
no script, no network reference), ``report.json`` and ``junit.xml`` over one or more suite
report directories.

A run directory is a suite's report directory (``outcomes.jsonl`` as ``nncts cts|vts|
random-graph --report-dir D`` or ``nncts merge`` write it, its run description in
``summary.json``'s ``meta``), an MLTS directory (``mlts.json``), or a certification bundle
(its ``results/<suite>/`` directories). Records are keyed by (suite, id): a CTS and a VTS test
may share an id.
"""
from __future__ import annotations

import collections
import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from harness.records import (EXPECTATION_OUTCOMES, per_mode, per_operation, per_source, precision_summary, read_json,
                             read_records, totals)

from . import charts, driver_coverage, junit, matrix, precision, random_graph, triage, verdict
from .clusters import cluster_failures
from .mlts import model_status
from .replay import replay_command
from .templating import ENV

RECORDS, SUMMARY, MLTS, RESULTS = "outcomes.jsonl", "summary.json", "mlts.json", "results"
#: Outcomes that fail a run (listed with their replay command).
FAILING = ("failed", "unexpected_pass")



@dataclass
class SuiteDir:
    """One loaded report directory: its records (each carries ``suite``), the run
    description (``summary.json``'s ``meta``: driver, corpus, ...) and an MLTS document."""

    path: Path
    records: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    mlts: dict | None = None


def _is_suite_dir(path: Path) -> bool:
    return (path / RECORDS).is_file() or (path / MLTS).is_file()


def suite_dirs(paths) -> list[Path]:
    """The suite directories of ``paths``: each path itself when it holds outcomes.jsonl or
    mlts.json, else its ``results/<suite>/`` directories (a bundle). ValueError (one line,
    naming the path) for a path that is neither."""
    out = []
    for p in map(Path, paths):
        if not p.is_dir():
            raise ValueError(f"{p}: no such directory")
        if _is_suite_dir(p):
            out.append(p)
            continue
        found = sorted(d for d in (p / RESULTS).glob("*") if d.is_dir() and _is_suite_dir(d)) \
            if (p / RESULTS).is_dir() else []
        if not found:
            raise ValueError(f"{p}: not a report directory (no {RECORDS} or {MLTS}) nor a bundle "
                             f"(no {RESULTS}/<suite>/{RECORDS})")
        out += found
    return out


def load_dir(path: Path, meta: dict | None = None) -> SuiteDir:
    """Load one suite directory; ``meta`` overrides its summary.json's. ValueError (one
    line, naming the file) for an outcomes.jsonl line that is not an outcome record (strict
    :func:`harness.records.read_records`: a directory may come from elsewhere, in a bundle),
    an unreadable summary.json or mlts.json, or a summary ``meta`` that is not an object."""
    sd = SuiteDir(Path(path))
    if (sd.path / RECORDS).is_file():
        sd.records = [dict(r, suite=r.get("suite", "cts")) for r in read_records(sd.path / RECORDS, strict=True)]
    if meta is None and (sd.path / SUMMARY).is_file():
        meta = read_json(sd.path / SUMMARY).get("meta") or {}
        if not isinstance(meta, dict):
            raise ValueError(f"{sd.path / SUMMARY}: field 'meta' must be an object")
    sd.meta = dict(meta or {})
    if (sd.path / MLTS).is_file():
        sd.mlts = read_json(sd.path / MLTS)
    return sd


def load_run(paths) -> list[SuiteDir]:
    """:func:`load_dir` of every :func:`suite_dirs` of ``paths``."""
    return [load_dir(p) for p in suite_dirs(paths)]


def all_records(dirs: list[SuiteDir]) -> list[dict]:
    """Every record of the run, in directory order."""
    return [r for d in dirs for r in d.records]


def per_suite(records) -> list[dict]:
    """One row per suite: tests, outcome counts (expectation outcomes included), skips by
    kind, not applicable, required-but-declined, driver crashes and hangs, seconds."""
    by_suite: dict[str, list[dict]] = collections.defaultdict(list)
    for r in records:
        by_suite[r.get("suite", "cts")].append(r)
    rows = []
    for suite, recs in by_suite.items():
        t = totals(recs)
        skips = {k.split(":", 1)[1]: v for k, v in sorted(t.items()) if k.startswith("skipped:")}
        rows.append({"suite": suite, "tests": len(recs), "passed": t["passed"], "failed": t["failed"],
                     **{o: t[o] for o in EXPECTATION_OUTCOMES}, "skipped": t["skipped"], "skips": skips,
                     "not_applicable": skips.get("not_applicable", 0), "required_declined": t["declined:required"],
                     "crash": t["driver:crash"], "hang": t["driver:hang"],
                     "seconds": round(sum(r.get("duration_s", 0.0) for r in recs), 3)})
    return rows


def _listed(dirs: list[SuiteDir], outcomes) -> list[dict]:
    """Records with one of ``outcomes``, each with its directory and replay command."""
    return [dict(r, run_dir=str(d.path), replay=replay_command(r, d.meta))
            for d in dirs for r in d.records if r["outcome"] in outcomes]


def _mlts_rows(dirs: list[SuiteDir]) -> list[dict]:
    rows = []
    for d in dirs:
        if d.mlts is None:
            continue
        models = d.mlts.get("models") or []
        c = collections.Counter(model_status(m) for m in models)
        rows.append({"run_dir": str(d.path), "title": d.mlts.get("title", ""), "models": len(models),
                     "passed": c["passed"], "inaccurate": c["inaccurate"], "failed": c["failed"],
                     "failing": [m.get("name", "?") for m in models if model_status(m) != "passed"]})
    return rows


def _with_replay(dirs: list[SuiteDir]) -> list[dict]:
    """Every record of the run, the failing ones (:data:`FAILING`) with their replay command
    (``replay``, under their directory's meta)."""
    return [dict(r, replay=replay_command(r, d.meta)) if r["outcome"] in FAILING else r
            for d in dirs for r in d.records]


def build(dirs: list[SuiteDir], title: str, meta: dict | None = None) -> dict:
    """The report document (what ``report.json`` holds; the page adds the charts): besides
    the totals and tables, ``clusters`` (:func:`reports.clusters.cluster_failures`: failures
    grouped by operation under test, operand type, mode and masked message, most first) and
    ``matrix_untouched`` (the matrix rows without any test, which the page folds), ``triage``
    (the ``triage.json`` of each directory holding one: :func:`reports.triage.load`) and
    ``driver_coverage`` (each directory's ``driver_coverage.json``: :func:`reports.driver_coverage.sections`)."""
    records = all_records(dirs)
    m = matrix.build(records)
    return {"title": title, "generated": datetime.datetime.now().isoformat(timespec="seconds"),
            "meta": meta or {}, "runs": [{"path": str(d.path), "meta": d.meta, "tests": len(d.records),
                                          "mlts": d.mlts is not None} for d in dirs],
            "totals": dict(totals(records)), "per_suite": per_suite(records), "per_mode": per_mode(records),
            "per_source": {s: dict(c) for s, c in per_source(records).items()},
            "per_operation": {op: dict(c) for op, c in per_operation(records).items()},
            "matrix": m, "matrix_totals": matrix.state_totals(m),
            "matrix_untouched": [row["operation"] for row in m["rows"] if not matrix.touched(row)],
            "clusters": cluster_failures(_with_replay(dirs)),
            "verdict": verdict.for_run(dirs),
            "failures": _listed(dirs, FAILING), "known_failures": _listed(dirs, ("known_failure",)),
            "flaky": _listed(dirs, ("flaky",)), "mlts": _mlts_rows(dirs),
            "random_graph": random_graph.section(records),
            "precision": precision.overview(precision.rows_of(dirs)),
            "cts_precision": precision_summary(records),
            "triage": [t for t in (triage.load(d.path) for d in dirs) if t],
            "driver_coverage": driver_coverage.sections(dirs),
            "skips": [{"suite": r["suite"], "id": r["id"], "skip_kind": r.get("skip_kind", ""),
                       "message": r.get("message", "")} for r in records if r["outcome"] == "skipped"]}


def template() -> jinja2.Template:
    """The report page's template (``templates/report.html.j2``)."""
    return ENV.get_template("report.html.j2")


def render_html(doc: dict, records) -> str:
    """The page of report document ``doc`` (template ``report.html.j2``), with ``records``'
    timing charts inline."""
    return template().render(doc=doc, totals=collections.Counter(doc["totals"]),
                             charts=charts.timing_charts(records))


def write_run_report(run_dirs: list[Path], out_dir: Path, title: str, meta: dict | None = None) -> list[Path]:
    """Write ``index.html``, ``report.json`` and ``junit.xml`` (one testsuite per suite,
    from the records) for the run made of ``run_dirs`` (suite directories or bundles, see
    :func:`suite_dirs`) into ``out_dir`` (created); returns their paths. ValueError (one
    line) for a path that is not a run directory or an unreadable file in one."""
    dirs = load_run(run_dirs)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = build(dirs, title, meta)
    records = all_records(dirs)
    (out_dir / "report.json").write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")
    (out_dir / "index.html").write_text(render_html(doc, records), encoding="utf-8")
    junit.write(records, out_dir / "junit.xml")
    page = precision.write_page(dirs, out_dir)
    return [out_dir / "index.html", out_dir / "report.json", out_dir / "junit.xml"] + ([page] if page else [])
