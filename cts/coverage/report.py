"""The coverage matrix: every cell of every operation with its status, as a text table,
``coverage.json`` and ``coverage.html`` (jinja2, ``reports/templates/coverage.html.j2``).

Cell status: ``corpus`` (some vendored-corpus model covers it; specs may too), ``specs``
(only our specs cover it), ``use-only`` (used, but no using model's expected outputs change
when the cell's value is swapped: :mod:`.effect`), ``empty`` (nothing uses it) or
``impossible`` (the specification rules it out; ``rule`` cites why). With the effect analysis
(default), a cell with a defined swap counts as ``corpus`` / ``specs`` only when a model of
that source *decides* it (its ``effect.test`` names the first); a cell with no swap keeps use
coverage (``effect.effect`` "no swap", ``effect.swap`` says why). JSON schema (``schema`` 2)::

    {"schema": 2, "generated": ISO time, "roots": [dirs], "models": {"corpus": n, "specs": n},
     "effect": {"analysed": bool, "runs": reference runs, "seconds": s},
     "totals": {STATUS: n, "cells": n}, "per_axis": {AXIS: {STATUS: n, "cells": n}},
     "operations": {NAME: {"totals": {...}, "cells": [{"axis", "key", "label", "status",
                    "rule", "corpus": uses, "specs": uses, "example": {source: test id},
                    "effect": null | {"effect": "decisive" | "use-only" | "no swap",
                                      "source", "test", "swap", "tried"}}]}}}
"""
from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

import jinja2

from runtime import ops
from runtime.types import OperationType

from .axes import AXES, cells_for
from .effect import Analysis
from .scan import Hits

STATUSES = ("corpus", "specs", "use-only", "empty", "impossible")
_ENV = jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]))


def _count(cells: list[dict]) -> dict:
    t = {s: 0 for s in STATUSES}
    for c in cells:
        t[c["status"]] += 1
    t["cells"] = len(cells)
    return t


def matrix(hits: Hits, roots, operations=None, effect: bool = True) -> dict:
    """The coverage document (schema above) for ``operations`` (default: every operation of
    the table, in NNAPI code order); ``effect``: run the effect analysis (:mod:`.effect`,
    which needs ``hits.uses``), else every used cell counts by use."""
    doc_ops, analysis, start = {}, Analysis(), time.monotonic()
    for op in operations or sorted(ops.REGISTRY):
        cells = []
        for c in cells_for(op):
            n = hits.count.get((op, c.key), {})
            status = ("impossible" if c.impossible else "corpus" if n.get("corpus")
                      else "specs" if n.get("specs") else "empty")
            found = None
            if effect and status in ("corpus", "specs"):
                e = analysis.effect(op, c, hits.uses.get((op, c.key), []))
                found = {"effect": e.effect, "source": e.source or None, "test": e.test_id or None,
                         "swap": e.swap or None, "tried": e.tried}
                if e.effect != "no swap":
                    status = e.source if e.effect == "decisive" else "use-only"
            cells.append({"axis": c.axis, "key": c.key, "label": c.label, "status": status,
                          "rule": c.impossible or None, "corpus": n.get("corpus", 0),
                          "specs": n.get("specs", 0), "example": dict(hits.example.get((op, c.key), {})),
                          "effect": found})
        doc_ops[op.name] = {"totals": _count(cells), "cells": cells}
    every = [c for o in doc_ops.values() for c in o["cells"]]
    return {"schema": 2, "generated": datetime.datetime.now().isoformat(timespec="seconds"),
            "roots": [str(r) for r in roots], "models": dict(hits.models),
            "effect": {"analysed": effect, "runs": analysis.runs,
                       "seconds": round(time.monotonic() - start, 1)},
            "totals": _count(every),
            "per_axis": {a: _count([c for c in every if c["axis"] == a]) for a in AXES},
            "operations": doc_ops}


def format_table(doc: dict, detail: bool = False) -> str:
    """Per-operation table (cells, by corpus, by specs only, use-only, empty, impossible),
    the totals and per-axis totals; with ``detail`` every cell of each operation too (the
    deciding swap, or why a cell has none)."""
    head = (f"{'operation':32} {'cells':>6} {'corpus':>7} {'specs':>6} {'use-only':>9} {'empty':>6} "
            f"{'imposs.':>8}")
    rows = [head, "-" * len(head)]

    def row(name, t):
        return (f"{name:32} {t['cells']:6d} {t['corpus']:7d} {t['specs']:6d} {t['use-only']:9d} "
                f"{t['empty']:6d} {t['impossible']:8d}")

    def why(c):
        e = c.get("effect")
        if c["rule"]:
            return f"  [{c['rule']}]"
        if e and e["effect"] == "decisive":
            return f"  ({e['swap']} in {e['test']})"
        if e and e["effect"] == "use-only":
            return f"  (no swap changes an output in {e['tried']} models)"
        return f"  (use only: {e['swap']})" if e and e["swap"] else ""
    for name, o in doc["operations"].items():
        rows.append(row(name, o["totals"]))
        if detail:
            rows += [f"    {c['status']:10} {c['axis']:9} {c['label']}{why(c)}" for c in o["cells"]]
    rows += ["-" * len(head), row("total", doc["totals"])]
    rows += [row(f"  axis {a}", t) for a, t in doc["per_axis"].items()]
    models = ", ".join(f"{n} {s} models" for s, n in sorted(doc["models"].items()))
    eff = doc.get("effect") or {}
    rows.append(f"({len(doc['operations'])} operations; {models or 'no models'}; "
                + (f"effect analysis: {eff['runs']} reference runs, {eff['seconds']} s)" if eff.get("analysed")
                   else "use coverage only: --no-effect)"))
    return "\n".join(rows)


def write(doc: dict, out_dir: str | Path) -> list[Path]:
    """Write ``coverage.json`` and ``coverage.html`` into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "coverage.json").write_text(json.dumps(doc, indent=1, sort_keys=False), encoding="utf-8")
    html = _ENV.get_template("coverage.html.j2").render(doc=doc, axes=AXES, statuses=STATUSES)
    (out / "coverage.html").write_text(html, encoding="utf-8")
    return [out / "coverage.json", out / "coverage.html"]


def operation_named(name: str) -> OperationType:
    """The OperationType called ``name`` (case-insensitive); ValueError naming the choices'
    source otherwise."""
    try:
        op = OperationType[name.upper()]
    except KeyError:
        raise ValueError(f"--op: unknown operation {name!r} (NNAPI names, e.g. CONV_2D)") from None
    if op not in ops.REGISTRY:
        raise ValueError(f"--op: {op.name} is not in the operation table")
    return op
