"""The operation x operand-type matrix of a run: one row per NNAPI operation (all 106), one
column per operand type the run's records carry, each cell the state of the tests that use
that operation with that operand type: ``fail`` / ``pass`` / ``unsupported`` / ``not run``.

A record's operand types (key ``operand_types``) are the types of each operation's input 0,
the operand that picks the operation's signature (as AOSP's partial sample drivers and the
random-graph configurations choose by it), so a float ADD with an INT32 activation scalar is
an ADD x TENSOR_FLOAT32 test only. Records without operand types count under the column
``(type unknown)``.
"""
from __future__ import annotations

import collections

from harness.records import names_order

#: Record outcomes by matrix state (a known failure is still a failure of the driver; a
#: flaky test and an unexpected pass did pass).
PASS_OUTCOMES = frozenset({"passed", "flaky", "unexpected_pass"})
FAIL_OUTCOMES = frozenset({"failed", "known_failure"})
#: Skip kinds meaning the driver declines the test (harness.requirements.DECLINE_KINDS and the
#: profile's not_applicable); any other skip (a gap of the reference table) is "not run".
UNSUPPORTED_KINDS = frozenset({"unsupported_by_driver", "not_applicable", "feature_level", "driver_rejects_model",
                               "driver_cannot_prepare", "driver_feature"})
#: Cell states, most telling first: a cell shows the first of its records' states.
STATES = ("fail", "pass", "unsupported", "not run")
UNKNOWN_TYPE = "(type unknown)"


def record_state(record: dict) -> str:
    """The matrix state of one record: ``pass``, ``fail``, ``unsupported`` (skipped by a
    kind in :data:`UNSUPPORTED_KINDS`) or ``not run``."""
    if record["outcome"] in FAIL_OUTCOMES:
        return "fail"
    if record["outcome"] in PASS_OUTCOMES:
        return "pass"
    return "unsupported" if record.get("skip_kind") in UNSUPPORTED_KINDS else "not run"


def cell_state(counts: collections.Counter) -> str:
    """The state a cell shows for its per-state counts (the first of :data:`STATES` with a
    count; ``not run`` for none)."""
    return next((s for s in STATES if counts[s]), "not run")


def build(records) -> dict:
    """``{"columns": [type names], "rows": [{"operation", "cells": [{"state", "counts",
    "title"}]}]}`` over every NNAPI operation; ``counts`` maps state -> number of tests."""
    from runtime.types import OperationType
    table: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    columns: set[str] = set()
    for r in records:
        types = r.get("operand_types") or [UNKNOWN_TYPE]
        columns.update(types)
        state = record_state(r)
        for op in r.get("operations") or []:
            for t in types:
                table[op, t][state] += 1
    ordered = sorted(columns, key=names_order)
    rows = []
    for op in OperationType:
        cells = []
        for t in ordered:
            counts = table.get((op.name, t), collections.Counter())
            detail = ", ".join(f"{counts[s]} {s}" for s in STATES if counts[s]) or "no test"
            cells.append({"state": cell_state(counts), "counts": dict(counts),
                          "title": f"{op.name} x {t}: {detail}"})
        rows.append({"operation": op.name, "cells": cells})
    return {"columns": ordered, "rows": rows}


def cell_states(matrix: dict) -> dict[tuple[str, str], str]:
    """(operation, operand type) -> state of every cell of a :func:`build` matrix."""
    return {(row["operation"], t): cell["state"]
            for row in matrix["rows"] for t, cell in zip(matrix["columns"], row["cells"])}


def state_totals(matrix: dict) -> dict[str, int]:
    """Number of cells in each state (the legend)."""
    c = collections.Counter(cell["state"] for row in matrix["rows"] for cell in row["cells"])
    return {s: c[s] for s in STATES}
