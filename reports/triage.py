"""Triage of two runs (``nncts triage RUN_A RUN_B``): for every test whose verdict differs
between run A and run B (two drivers, or one driver over time), which side is wrong, judged
against the reference runtime, which disagreements are borderline, and the wrong sides'
tests in clusters.

This module holds the document, not the re-runs: :mod:`nncts.triage` rebuilds each test
model, runs it on the reference (and, for float outputs, its float64 truth) and on each
side's driver when that driver loads, and hands one *entry* per disagreement here::

    {"suite", "id", "mode",
     "a": {"outcome", "verdict", "rerun", "error", "truth_error", "message"},   # the same for "b"
     "reference": {"verdict", "error", "golden_vs_truth", "problem"},
     "how": "re-run" | "recorded", "note": str}

``verdict`` / ``rerun`` / ``reference.verdict`` are ``pass`` or ``fail`` (``rerun`` None when
the driver was not re-run; ``reference.verdict`` None when the model could not be rebuilt or
the reference refused it). ``error`` is the largest element error as a multiple of the
NNAPI tolerance (``|actual - expected| / (atol + rtol * |expected|)``, AOSP TestHarness'
rule, :mod:`runtime.testing.criteria`): at most 1 passes; None when not measured, ``inf``
is written as null with ``truth_error`` likewise against the float64 truth.

Attribution (:func:`attribute`): a side is wrong when its verdict (its re-run's, else its
recorded one) differs from the reference's, except where the expected values are themselves
beyond the tolerance of the float64 truth (``golden_vs_truth`` > 1) and both sides' outputs
were measured: then a side is wrong when its outputs are beyond the tolerance of the truth; ``neither`` when both agree with the reference
(the recorded difference did not reproduce: flaky, or a fault of the mode the re-run did not
reproduce), ``undecided`` without a reference verdict. A disagreement is *borderline*
(:func:`is_borderline`) when a measured error of a side or of the reference lies within 2x of
the tolerance (0.5 < error <= 2): a small change of either would flip it.
"""
from __future__ import annotations

import collections
import json
import math
from pathlib import Path

from harness.records import read_json

from . import blame
from .clusters import cluster_failures
from .templating import ENV

#: Outcome -> verdict (``skip``: nothing of the driver judged, not comparable).
VERDICT_OF = {"passed": "pass", "flaky": "pass", "unexpected_pass": "pass",
              "failed": "fail", "known_failure": "fail", "skipped": "skip"}
#: Attributions, in the order the summary lists them.
WRONG = ("B", "A", "both", "neither", "undecided")
#: A measured error within this factor of the tolerance (either way) is borderline.
BORDERLINE = 2.0
#: Files written into a report directory.
PAGE, DOC = "triage.html", "triage.json"


def verdict(record: dict) -> str:
    """``pass``, ``fail`` or ``skip`` of an outcome record (:data:`VERDICT_OF`)."""
    return VERDICT_OF.get(record.get("outcome"), "skip")


def _key(r: dict) -> tuple[str, str]:
    return r.get("suite", "cts"), r["id"]


def disagreements(a_records, b_records) -> tuple[list[tuple[dict, dict]], int, int]:
    """(pairs, compared, not comparable): the (A record, B record) of every test both runs
    have (keyed by suite and id) whose verdicts are ``pass`` on one side and ``fail`` on the
    other, sorted by key; how many tests both runs have; how many of those were skipped on
    exactly one side (nothing of that driver was judged, so no verdict to compare)."""
    a = {_key(r): r for r in a_records}
    b = {_key(r): r for r in b_records}
    both = sorted(a.keys() & b.keys())
    pairs = [(a[k], b[k]) for k in both if {verdict(a[k]), verdict(b[k])} == {"pass", "fail"}]
    one_sided = sum(1 for k in both if (verdict(a[k]) == "skip") != (verdict(b[k]) == "skip"))
    return pairs, len(both), one_sided


def side_verdict(side: dict) -> str:
    """The verdict a side is judged by: its re-run's when it was re-run, else its recorded one."""
    return side.get("rerun") or side["verdict"]


def attribute(entry: dict) -> str:
    """Which side of ``entry`` is wrong (one of :data:`WRONG`), by the rules of this
    module's docstring."""
    reference = entry["reference"]
    ref = reference.get("verdict")
    if (reference.get("golden_vs_truth") or 0) > 1 and all(entry[s].get("truth_error") is not None for s in "ab"):
        # the expected values themselves are off the float64 truth: the truth judges
        wrong_a, wrong_b = entry["a"]["truth_error"] > 1, entry["b"]["truth_error"] > 1
    elif ref not in ("pass", "fail"):
        return "undecided"
    else:
        wrong_a, wrong_b = side_verdict(entry["a"]) != ref, side_verdict(entry["b"]) != ref
    return "both" if wrong_a and wrong_b else "A" if wrong_a else "B" if wrong_b else "neither"


def is_borderline(entry: dict) -> bool:
    """Whether a measured error of side A, side B or the reference (against the golden or
    the float64 truth) lies within :data:`BORDERLINE` times the tolerance, either way."""
    errors = [entry[s].get(k) for s in ("a", "b") for k in ("error", "truth_error")]
    errors += [entry["reference"].get("error"), entry["reference"].get("golden_vs_truth")]
    return any(e is not None and 1 / BORDERLINE < e <= BORDERLINE for e in errors)


def _finite(x):
    return None if x is None or not math.isfinite(x) else round(float(x), 4)


def _json_safe(entry: dict) -> dict:
    """``entry`` with infinite errors as null (JSON has no infinity) and rounded ones."""
    out = dict(entry)
    for part in ("a", "b", "reference"):
        out[part] = {k: (_finite(v) if k in ("error", "truth_error", "golden_vs_truth") and v is not None else v)
                     for k, v in entry[part].items()}
    return out


def _cluster_record(r: dict, cell: blame.Blame | None, ref_problem: str, side: dict) -> dict:
    """The record clustered for a wrong side: its cell (blamed over the side's whole run),
    the failure message's first problem (up to the first ``"; "``; for a side that passed where the reference fails: that it did, with
    the reference's problem), outcome ``failed`` and no mode (disagreements are clustered by
    operation, operand type and message)."""
    if side_verdict(side) == "fail":
        # the first problem only: "output 0 ... off; output 1 ... off" is the symptom of output 0's cause
        message = (side.get("message") or r.get("message") or "failed (no message recorded)").split("; ")[0]
    else:
        message = f"passed where the reference fails: {ref_problem}" if ref_problem else \
            "passed where the reference fails"
    out = {"id": r["id"], "suite": r.get("suite", "cts"), "outcome": "failed", "mode": "", "message": message,
           "replay": side.get("replay", "")}
    if cell is not None:
        out.update(operation_under_test=cell.operation, operand_type=cell.operand_type)
    else:
        out.update(operations=r.get("operations") or [], operand_types=r.get("operand_types") or [])
    return out


def clusters(entries: list[dict], a_records, b_records, drivers: dict[str, str]) -> list[dict]:
    """The wrong sides' tests in clusters (:func:`reports.clusters.cluster_failures` over one
    record per wrong side, mode left out): ``[{"wrong": "A"|"B", "driver", "operation",
    "operand_type", "pattern", "count", "tests", "replay", "borderline"}]``, side B's first,
    then most tests first. A test's cell is the one its side's run blames it on
    (:mod:`reports.blame`: a failure moved to a helper operation stays there)."""
    out = []
    for side, records in (("B", list(b_records)), ("A", list(a_records))):
        cells = {_key(r): c for r, c in zip(records, blame.blame(records))}
        by_key = {_key(r): r for r in records}
        synth, borderline = [], {}
        for e in entries:
            if e["wrong"] not in (side, "both"):
                continue
            k = (e["suite"], e["id"])
            synth.append(_cluster_record(by_key[k], cells.get(k), e["reference"].get("problem", ""),
                                         e[side.lower()]))
            borderline[e["id"]] = e["borderline"]
        for c in cluster_failures(synth, replay=lambda r: r.get("replay", "")):
            c.pop("mode", None)
            c.pop("helper_failures", None)
            out.append({"wrong": side, "driver": drivers.get(side, ""), **c,
                        "borderline": sum(borderline[t] for t in c["tests"])})
    return out


def build(entries: list[dict], a_records, b_records, runs: dict[str, dict], compared: int,
          not_comparable: int) -> dict:
    """The triage document (what ``triage.json`` and ``--json`` hold): ``runs`` (``{"A":
    {"path", "driver"}, "B": ...}``), ``compared`` (tests in both runs), ``not_comparable``
    (skipped on one side), ``disagreements`` (count), ``counts`` (attribution -> count, every
    one of :data:`WRONG`), ``borderline`` (count), ``clusters`` (:func:`clusters`) and
    ``tests`` (each entry with its ``wrong`` and ``borderline``, infinite errors null).
    ``entries`` get ``wrong`` and ``borderline`` set here."""
    for e in entries:
        e["wrong"] = attribute(e)
        e["borderline"] = is_borderline(e)
    counts = collections.Counter(e["wrong"] for e in entries)
    drivers = {side: run.get("driver", "") for side, run in runs.items()}
    return {"runs": runs, "compared": compared, "not_comparable": not_comparable,
            "disagreements": len(entries), "counts": {w: counts[w] for w in WRONG},
            "borderline": sum(e["borderline"] for e in entries),
            "clusters": clusters(entries, a_records, b_records, drivers),
            "tests": [_json_safe(e) for e in entries]}


def format_lines(doc: dict) -> list[str]:
    """Console lines: the two runs, the counts, then one line per cluster (``wrong side
    (driver)  count  operation x operand type  [borderline N]  pattern``)."""
    lines = [f"{side}: {run.get('path', '')}  (driver {run.get('driver') or 'not recorded'})"
             for side, run in doc["runs"].items()]
    c = doc["counts"]
    lines.append(f"{doc['compared']} test(s) in both runs, {doc['disagreements']} with different verdicts "
                 f"({doc['not_comparable']} more skipped on one side only): B wrong {c['B']}, A wrong {c['A']}, "
                 f"both {c['both']}, not reproduced {c['neither']}, undecided {c['undecided']}; "
                 f"{doc['borderline']} borderline")
    lines.append(f"{len(doc['clusters'])} cluster(s):")
    for k in doc["clusters"]:
        border = f"  [borderline {k['borderline']}]" if k["borderline"] else ""
        lines.append(f"  {k['wrong']} wrong ({k['driver'] or '?'})  {k['count']:5d}  "
                     f"{k['operation']} x {k['operand_type']}{border}  {k['pattern']}")
    for e in doc["tests"]:
        if e["wrong"] in ("neither", "undecided"):
            lines.append(f"  {e['wrong']}: {e['id']}  [{e['suite']}]  {e.get('note', '')}".rstrip())
    return lines


def write(doc: dict, out_dir: str | Path) -> list[Path]:
    """Write ``triage.json`` and ``triage.html`` (the section alone on a page) into
    ``out_dir`` (created); returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / DOC).write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")
    (out / PAGE).write_text(ENV.get_template("triage.html.j2").render(triage=doc, title="nncts triage"),
                            encoding="utf-8")
    return [out / PAGE, out / DOC]


#: The fields the page section reads from a cluster, with their types.
_CLUSTER_FIELDS = {"wrong": str, "driver": str, "operation": str, "operand_type": str, "pattern": str,
                   "count": int, "tests": list, "replay": str, "borderline": int}


def load(run_dir: str | Path) -> dict | None:
    """The triage document a report directory holds (``triage.json``, read under
    :func:`harness.records.read_json`'s bounds), for the run report's section; None when
    there is none. ValueError (one line, naming the file) for one whose counts or clusters
    are not of the shape :func:`build` writes (the file is hostile like every record)."""
    path = Path(run_dir) / DOC
    if not path.is_file():
        return None
    doc = read_json(path)
    counts, runs, found = doc.get("counts"), doc.get("runs"), doc.get("clusters")
    ok = (isinstance(counts, dict) and all(type(counts.get(w)) is int for w in WRONG)
          and isinstance(runs, dict) and all(isinstance(v, dict) for v in runs.values())
          and all(type(doc.get(k)) is int for k in ("compared", "not_comparable", "disagreements", "borderline"))
          and isinstance(found, list) and all(isinstance(c, dict) and all(type(c.get(f)) is t
                                                                          for f, t in _CLUSTER_FIELDS.items())
                                              for c in found))
    if not ok:
        raise ValueError(f"{path}: not a triage document (counts, runs or clusters of another shape)")
    return {k: doc[k] for k in ("runs", "compared", "not_comparable", "disagreements", "counts", "borderline",
                                "clusters")}
