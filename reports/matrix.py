"""The operation x operand-type matrix of a run: one row per NNAPI operation (all 106), one
column per operand type the run's records carry, each cell the state of the tests that use
that operation with that operand type: ``fail`` / ``pass`` / ``unsupported`` / ``not run``.

A test counts under one cell: its operation under test and that operation's input 0 type
(the operand that picks the operation's signature, as AOSP's partial sample drivers and the
random-graph configurations choose by it), so a float ADD with an INT32 activation scalar is
an ADD x TENSOR_FLOAT32 test only, and the ADDs AOSP's ``_all_inputs_as_internal``
variations add count nowhere, unless they are what failed (:mod:`reports.blame`: such a
failure counts under the helper). Records written before records named their operation under
test count as they used to: under each of their operations crossed with each of their
operand types (key ``operand_types``; ``(type unknown)`` without any). Rows: every NNAPI
operation, then any other name records use (``(graph)``: random graphs of several
operations).
"""
from __future__ import annotations

import collections

from harness.records import names_order

from . import blame

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
UNKNOWN_TYPE = blame.UNKNOWN_TYPE


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
    "title", "helper_failures"}]}]}`` over every NNAPI operation (then any other operation
    name the records use); ``counts`` maps state -> number of tests, ``helper_failures`` is
    how many of the cell's failures are of tests where the operation is a helper
    (:mod:`reports.blame`)."""
    from runtime.types import OperationType
    records = list(records)
    table: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    columns: set[str] = set()
    for r, cells in zip(records, blame.cells(records)):
        state = record_state(r)
        for op, t in cells:
            columns.add(t)
            table[op, t][state] += 1
    helpers = blame.helper_counts(records)
    ordered = sorted(columns, key=names_order)
    names = [op.name for op in OperationType]
    names += sorted({op for op, _ in table} - set(names))
    rows = []
    for name in names:
        cells = []
        for t in ordered:
            counts = table.get((name, t), collections.Counter())
            detail = ", ".join(f"{counts[s]} {s}" for s in STATES if counts[s]) or "no test"
            if helpers[name, t]:
                detail += f" ({helpers[name, t]} of the failures in tests where {name} is a helper operation)"
            cells.append({"state": cell_state(counts), "counts": dict(counts), "title": f"{name} x {t}: {detail}",
                          "helper_failures": helpers[name, t]})
        rows.append({"operation": name, "cells": cells})
    return {"columns": ordered, "rows": rows}


def touched(row: dict) -> bool:
    """Whether a :func:`build` row has any test (in any state)."""
    return any(cell["counts"] for cell in row["cells"])


def cell_states(matrix: dict) -> dict[tuple[str, str], str]:
    """(operation, operand type) -> state of every cell of a :func:`build` matrix."""
    return {(row["operation"], t): cell["state"]
            for row in matrix["rows"] for t, cell in zip(matrix["columns"], row["cells"])}


def state_totals(matrix: dict) -> dict[str, int]:
    """Number of cells in each state (the legend)."""
    c = collections.Counter(cell["state"] for row in matrix["rows"] for cell in row["cells"])
    return {s: c[s] for s in STATES}
