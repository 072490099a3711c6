"""Where each outcome record counts: the (operation, operand type) a report blames it on.

A record names its operation under test and that operation's operand type
(``operation_under_test``, ``operand_type``: :func:`harness.records.under_test_fields`), so a
test counts under that one cell, not under every operation of its model crossed with every
operand type in it.

One exception moves a failure to a helper: a failing test whose model has helper
operations (``helper_operations``, e.g. ``["ADD TENSOR_QUANT8_ASYMM"]`` for AOSP's
``_all_inputs_as_internal`` variations) is the helper's failure

- when its base model (a record of the same suite and mode, with the same ``core_digest``
  and no helpers) passed: the operation under test computes right on the same values, so
  what differs, the helper, is what is wrong; blamed on the helper that fails as an
  operation under test in the same suite and mode, else the first helper;
- or, when the run has no record of its base model, when one of its helpers fails as an
  operation under test in the same suite and mode (the helper is known broken, the
  operation under test is not): blamed on that helper.

A failing base model keeps the failure with the operation under test.

A record written before these fields existed has no blame (None): the reports count it as
they did, under each of its operations crossed with each of its operand types.
"""
from __future__ import annotations

import collections
from typing import NamedTuple

#: Outcomes of a test that failed (as the matrix counts them: a known failure is still the
#: driver's failure).
FAILED = frozenset({"failed", "known_failure", "unexpected_pass"})
PASSED = frozenset({"passed", "flaky"})
UNKNOWN_TYPE = "(type unknown)"


class Blame(NamedTuple):
    """The cell a record counts under: ``operation`` (NNAPI name, or ``"(graph)"``),
    ``operand_type`` (type name, or ``"(type unknown)"``), and ``helper`` (True when a
    failure moved from the operation under test to this helper operation)."""

    operation: str
    operand_type: str
    helper: bool = False


def _helper(entry: str) -> tuple[str, str]:
    op, _, t = entry.partition(" ")
    return op, t or UNKNOWN_TYPE


def blame(records) -> list[Blame | None]:
    """One :class:`Blame` per record of ``records`` (in order; None for a record without
    ``operation_under_test``), by the rules of this module's docstring."""
    records = list(records)
    base_passed, base_seen = set(), set()
    failing_cells = set()
    for r in records:
        op = r.get("operation_under_test")
        if not op:
            continue
        key = (r.get("suite", "cts"), r.get("mode", ""))
        if not r.get("helper_operations") and r.get("core_digest"):
            base_seen.add((*key, r["core_digest"]))
            if r["outcome"] in PASSED:
                base_passed.add((*key, r["core_digest"]))
        if r["outcome"] in FAILED:
            failing_cells.add((*key, op, r.get("operand_type") or UNKNOWN_TYPE))
    out: list[Blame | None] = []
    for r in records:
        op = r.get("operation_under_test")
        if not op:
            out.append(None)
            continue
        key = (r.get("suite", "cts"), r.get("mode", ""))
        helpers = [_helper(h) for h in r.get("helper_operations") or []]
        failing = [h for h in helpers if (*key, *h) in failing_cells]
        base = (*key, r.get("core_digest"))
        if r["outcome"] in FAILED and helpers and (base in base_passed or failing and base not in base_seen):
            out.append(Blame(*(failing or helpers)[0], helper=True))
        else:
            out.append(Blame(op, r.get("operand_type") or UNKNOWN_TYPE))
    return out


def cells(records) -> list[list[tuple[str, str]]]:
    """The matrix cells each record counts under: its :func:`blame` cell, or for a record
    without one (written before ``operation_under_test`` existed) each of its operations
    crossed with each of its operand types (``"(type unknown)"`` without any)."""
    records = list(records)
    out = []
    for r, b in zip(records, blame(records)):
        if b is not None:
            out.append([(b.operation, b.operand_type)])
        else:
            types = r.get("operand_types") or [UNKNOWN_TYPE]
            out.append([(op, t) for op in r.get("operations") or [] for t in types])
    return out


def helper_counts(records) -> collections.Counter:
    """(operation, operand type) -> number of failures moved onto it from tests where it is a
    helper operation."""
    return collections.Counter((b.operation, b.operand_type) for b in blame(records) if b is not None and b.helper)
