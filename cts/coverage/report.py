"""The coverage matrix: every cell of every operation with its status, as a text table,
``coverage.json`` and ``coverage.html`` (jinja2, ``reports/templates/coverage.html.j2``).

Cell status: ``corpus`` (some vendored-corpus model covers it; specs may too), ``specs``
(only our specs cover it), ``empty`` (nothing does) or ``impossible`` (the specification
rules it out; ``rule`` cites why). JSON schema (``schema`` 1)::

    {"schema": 1, "generated": ISO time, "roots": [dirs], "models": {"corpus": n, "specs": n},
     "totals": {STATUS: n, "cells": n}, "per_axis": {AXIS: {STATUS: n, "cells": n}},
     "operations": {NAME: {"totals": {...}, "cells": [{"axis", "key", "label", "status",
                    "rule", "corpus": uses, "specs": uses, "example": {source: test id}}]}}}
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

import jinja2

from runtime import ops
from runtime.types import OperationType

from .axes import AXES, cells_for
from .scan import Hits

STATUSES = ("corpus", "specs", "empty", "impossible")
_ENV = jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]))


def _count(cells: list[dict]) -> dict:
    t = {s: 0 for s in STATUSES}
    for c in cells:
        t[c["status"]] += 1
    t["cells"] = len(cells)
    return t


def matrix(hits: Hits, roots, operations=None) -> dict:
    """The coverage document (schema above) for ``operations`` (default: every operation of
    the table, in NNAPI code order)."""
    doc_ops = {}
    for op in operations or sorted(ops.REGISTRY):
        cells = []
        for c in cells_for(op):
            n = hits.count.get((op, c.key), {})
            status = ("impossible" if c.impossible else "corpus" if n.get("corpus")
                      else "specs" if n.get("specs") else "empty")
            cells.append({"axis": c.axis, "key": c.key, "label": c.label, "status": status,
                          "rule": c.impossible or None, "corpus": n.get("corpus", 0),
                          "specs": n.get("specs", 0), "example": dict(hits.example.get((op, c.key), {}))})
        doc_ops[op.name] = {"totals": _count(cells), "cells": cells}
    every = [c for o in doc_ops.values() for c in o["cells"]]
    return {"schema": 1, "generated": datetime.datetime.now().isoformat(timespec="seconds"),
            "roots": [str(r) for r in roots], "models": dict(hits.models),
            "totals": _count(every),
            "per_axis": {a: _count([c for c in every if c["axis"] == a]) for a in AXES},
            "operations": doc_ops}


def format_table(doc: dict, detail: bool = False) -> str:
    """Per-operation table (cells, by corpus, by specs only, empty, impossible), the totals
    and per-axis totals; with ``detail`` every cell of each operation too."""
    head = f"{'operation':32} {'cells':>6} {'corpus':>7} {'specs':>6} {'empty':>6} {'imposs.':>8}"
    rows = [head, "-" * len(head)]

    def row(name, t):
        return (f"{name:32} {t['cells']:6d} {t['corpus']:7d} {t['specs']:6d} {t['empty']:6d} "
                f"{t['impossible']:8d}")
    for name, o in doc["operations"].items():
        rows.append(row(name, o["totals"]))
        if detail:
            rows += [f"    {c['status']:10} {c['axis']:9} {c['label']}"
                     + (f"  [{c['rule']}]" if c["rule"] else "") for c in o["cells"]]
    rows += ["-" * len(head), row("total", doc["totals"])]
    rows += [row(f"  axis {a}", t) for a, t in doc["per_axis"].items()]
    models = ", ".join(f"{n} {s} models" for s, n in sorted(doc["models"].items()))
    rows.append(f"({len(doc['operations'])} operations; {models or 'no models'})")
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
