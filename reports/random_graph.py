"""The random-graph section of the run report: decisions with more than one right answer and
the three-way comparison (issue 23, items 5 and 6), from the fields the random-graph judge
records (``ambiguous_elements``, ``decisions``, ``three_way``, ``times_worse``;
``random_graph.judge.record_fields``)."""
from __future__ import annotations

import collections

from harness.suites import suite
from runtime.precision.three_way import DEFINITION

#: Upper bounds of the ``times_worse`` histogram's buckets (the last bucket is open).
BUCKETS = (1.0, 2.0, 4.0, 16.0)
#: Graphs listed as the worst.
WORST = 10


def _bucket(value: float | None) -> str:
    if value is None:
        return "not finite"
    for bound in BUCKETS:
        if value <= bound:
            return f"<= {bound:g}"
    return f"> {BUCKETS[-1]:g}"


def section(records) -> dict | None:
    """The section's figures, None when no random-graph record carries them: ``graphs``
    (judged), ``with_ambiguous`` / ``ambiguous_elements`` (graphs with ambiguous output
    elements, and their sum), ``decisions`` (operation -> graphs where it made some, most
    first), ``measured`` (graphs with a three-way figure), ``histogram`` (``times_worse``
    bucket -> graphs), ``worst`` (the :data:`WORST` graphs of largest ``times_worse``, not
    finite first: id, outcome, ratio, the output and its driver / reference ULP at the
    output's scale) and
    ``definition``."""
    name = suite("random-graph").record_name
    recs = [r for r in records if r.get("suite") == name and "ambiguous_elements" in r]
    if not recs:
        return None
    decisions = collections.Counter(op for r in recs for op in r.get("decisions") or ())
    measured = [r for r in recs if r.get("three_way")]
    histogram = collections.Counter(_bucket(r.get("times_worse")) for r in measured)
    order = [f"<= {b:g}" for b in BUCKETS] + [f"> {BUCKETS[-1]:g}", "not finite"]

    def key(r):
        t = r.get("times_worse")
        return float("inf") if t is None else t

    worst = []
    for r in sorted(measured, key=key, reverse=True)[:WORST]:
        row = max(r["three_way"], key=lambda o: float("inf") if o.get("times_worse") is None else o["times_worse"])
        worst.append({"id": r["id"], "outcome": r["outcome"], "times_worse": r.get("times_worse"),
                      "output": row.get("output"), "type": row.get("type"),
                      "driver_ulp": row.get("driver_ulp_at_scale"),
                      "reference_ulp": row.get("reference_ulp_at_scale")})
    return {"graphs": len(recs), "with_ambiguous": sum(1 for r in recs if r["ambiguous_elements"]),
            "ambiguous_elements": sum(r["ambiguous_elements"] for r in recs),
            "decisions": dict(decisions.most_common()), "measured": len(measured),
            "histogram": {b: histogram[b] for b in order if histogram[b]}, "worst": worst,
            "definition": DEFINITION}
