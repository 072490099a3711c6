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
reproduce), ``undecided`` without a reference verdict.

Clusters (:func:`clusters`) group by culprit, not by surface: a wrong side's test counts
under the operation that side gets wrong when each operation runs alone on the reference's
inputs (``side["culprit"]``, :mod:`nncts.localize`, also inside IF / WHILE bodies), with that
operation's difference masked (:func:`reports.clusters.mask_numbers`); the operand types
and models are listed inside the cluster. A test with no such operation (a fault of the
whole model, of a mode, of a memory layout) counts under the cell its run blames it on,
with its failure message masked. A disagreement is *borderline*
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
from harness.records import names_order

from .clusters import legacy_blame, mask_numbers, message_pattern
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


def _cluster_key(e: dict, side: str, cell: blame.Blame | None, record: dict) -> tuple[str, str, str, str]:
    """(operation, operand type, pattern, where) a wrong side's test is clustered under: its
    culprit's (the operation the side gets wrong alone, ``e[side]["culprit"]``:
    :mod:`nncts.localize`) with the culprit's message masked, else the cell its run blames
    it on with its failure message masked (:func:`_cluster_record`)."""
    found = e[side.lower()].get("culprit")
    if isinstance(found, dict) and found.get("operation"):
        return (str(found["operation"]), str(found.get("operand_type", "")), mask_numbers(str(found.get("message", ""))),
                str(found.get("where", "")))
    synth = _cluster_record(record, cell, e["reference"].get("problem", ""), e[side.lower()])
    op, t = (cell.operation, cell.operand_type) if cell is not None else legacy_blame(synth)
    return op, t, message_pattern(synth), ""


def clusters(entries: list[dict], a_records, b_records, drivers: dict[str, str]) -> list[dict]:
    """The wrong sides' tests in clusters, one per (wrong side, culprit operation, masked
    message) (:func:`_cluster_key`; operand types and tests listed inside, so one fault
    seen through several types, modes or models where the operation is a helper or inside
    an IF / WHILE is one cluster, and two faults in two operations are two):
    ``[{"wrong": "A"|"B", "driver", "operation", "operand_type" (the types joined),
    "operand_types", "pattern", "count", "tests", "localized" (tests whose culprit was
    found by running operations alone), "replay", "borderline"}]``, side B's first, then
    most tests first."""
    out = []
    for side, records in (("B", list(b_records)), ("A", list(a_records))):
        cells = {_key(r): c for r, c in zip(records, blame.blame(records))}
        by_key = {_key(r): r for r in records}
        groups: dict[tuple, list] = collections.defaultdict(list)
        for e in entries:
            if e["wrong"] not in (side, "both"):
                continue
            k = (e["suite"], e["id"])
            op, t, pattern, where = _cluster_key(e, side, cells.get(k), by_key[k])
            groups[(op, pattern)].append((e, t, where))
        found = []
        for (op, pattern), members in groups.items():
            types = sorted({t for _, t, _ in members if t}, key=names_order)
            found.append({"wrong": side, "driver": drivers.get(side, ""), "operation": op,
                          "operand_type": ", ".join(types), "operand_types": types, "pattern": pattern,
                          "count": len(members), "tests": [e["id"] for e, _, _ in members],
                          "localized": sum(bool(w) for _, _, w in members),
                          "replay": members[0][0][side.lower()].get("replay", ""),
                          "borderline": sum(bool(e["borderline"]) for e, _, _ in members)})
        out += sorted(found, key=lambda c: (-c["count"], c["operation"], c["pattern"]))
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
_CLUSTER_FIELDS = {"wrong": str, "driver": str, "operation": str, "operand_type": str, "operand_types": list,
                   "pattern": str, "count": int, "tests": list, "localized": int, "replay": str, "borderline": int}


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
