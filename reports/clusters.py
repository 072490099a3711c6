"""Failure clusters of a run: the failing records grouped by root cause, as a driver engineer
reads them. A cluster's key is (operation under test, its operand type, execution mode, the
failure message with its numbers masked), so 60 quantized-ADD failures that differ only in
the values they print are one cluster of 60, not 60 rows.

The operation and operand type are those the record counts under (:mod:`reports.blame`: its
operation under test and that operation's input type, or the helper operation when the
failure is the helper's); a record written before records named their operation under test
falls back to its operations and operand types joined. The pattern is the message without
the test's own id, with numbers, shapes and operand type names masked and a repeated
masked item (``[0, 1] expected 3 got 5, [0, 2] expected ...``) said once.
"""
from __future__ import annotations

import collections
import re
from typing import Callable

from harness.records import names_order
from runtime.types import OperandType

from . import blame
from .replay import replay_command

#: Outcomes that fail a run (a known failure is the baseline's, listed apart; an unexpected
#: pass fails the run).
FAILING_OUTCOMES = ("failed", "unexpected_pass")
#: Masks applied in order to a failure message (hex before numbers: ``0x1f`` is one token;
#: shapes before numbers: ``[1, 2, 3]`` and ``(2, 2)`` are one token whatever their rank).
MASKS = ((re.compile(r"(?<![\w.])0[xX][0-9a-fA-F]+\b"), "<hex>"),
         (re.compile(r"[\[(]\s*(?:[-+]?\d+\s*,\s*)*[-+]?\d+\s*,?\s*[\])]"), "<shape>"),
         (re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])"
                     r"|(?<![\w.])[-+]?(?:nan|inf)(?!\w)"), "<n>"),
         (re.compile(r"\b(?:" + "|".join(sorted((t.name for t in OperandType), key=len, reverse=True)) + r")\b"),
          "<type>"))
#: A masked item repeated in a comma-separated list (``, <shape> expected <n> got <n>``).
_REPEATED = re.compile(r"([^,:;]*<\w+>[^,:;]*)(?:,\1)+")
#: A message pattern keeps its first this many characters (a traceback's tail is no cause).
PATTERN_CHARS = 400


def mask_numbers(message: str) -> str:
    """``message`` with hexadecimal numbers as ``<hex>``, shapes (``[1, 2, 3]``, ``(2, 2)``,
    ``[]`` is kept) as ``<shape>``, other numbers (ints, floats, exponents, nan, inf) as
    ``<n>`` and operand type names as ``<type>``; digits inside other names (``V1_0``,
    ``conv2d``) are kept. A masked item repeated in a comma-separated list is kept once;
    whitespace runs become one space; at most :data:`PATTERN_CHARS` characters."""
    out = " ".join(message.split())
    for pattern, token in MASKS:
        out = pattern.sub(token, out)
    return _REPEATED.sub(r"\1", out)[:PATTERN_CHARS]


def message_pattern(record: dict) -> str:
    """The cluster pattern of a failing record: its message (an unexpected pass without one:
    "unexpected pass (the baseline lists it as failing)") without the record's id (nor the
    id without its ``@mode``), through :func:`mask_numbers`."""
    message = record.get("message") or ("unexpected pass (the baseline lists it as failing)"
                                         if record.get("outcome") == "unexpected_pass" else "")
    rid = record.get("id", "")
    for name in sorted({rid, rid.split("@", 1)[0]} - {""}, key=len, reverse=True):
        message = re.sub(rf"(?<![\w/.@-]){re.escape(name)}(?![\w/.@-])", "<test>", message)
    return mask_numbers(message)


def legacy_blame(record: dict) -> tuple[str, str]:
    """(operations, operand types) of a record without ``operation_under_test`` (written
    before records had one): its ``operations`` and ``operand_types`` each joined with ``+``
    (``"(none)"`` / ``"(type unknown)"`` when absent)."""
    return ("+".join(record.get("operations") or []) or "(none)",
            "+".join(record.get("operand_types") or []) or blame.UNKNOWN_TYPE)


def _replayer(replay) -> Callable[[dict], str]:
    if callable(replay):
        return replay
    return lambda r: r.get("replay") or replay_command(r, replay)


def cluster_failures(records, replay: Callable[[dict], str] | dict | None = None) -> list[dict]:
    """The failing records (outcome in :data:`FAILING_OUTCOMES`) of ``records`` in clusters,
    most tests first (then by operation, operand type in NNAPI code order, mode, pattern):
    ``[{"operation", "operand_type", "mode", "pattern", "count", "tests": [record ids, in
    record order], "replay": one replay command, "helper_failures": how many of the tests
    failed in the operation as a helper (:mod:`reports.blame`)}]``.

    ``replay`` gives a record's replay command (:mod:`reports.replay`): a callable taking the
    record; or a run's ``meta`` dict (driver, corpus) for
    :func:`reports.replay.replay_command`; None uses the record's own ``replay`` field when it
    has one, else ``replay_command(record, None)``. The cluster's command replays its first
    test in which the operation is under test, not a helper (else its first test; "" when
    that test has no node id). The pattern: :func:`message_pattern`."""
    command = _replayer(replay)
    records = list(records)
    groups: dict[tuple, list[tuple[dict, bool]]] = collections.defaultdict(list)
    for r, b in zip(records, blame.blame(records)):
        if r.get("outcome") not in FAILING_OUTCOMES:
            continue
        cell = (b.operation, b.operand_type) if b is not None else legacy_blame(r)
        groups[(*cell, r.get("mode", ""), message_pattern(r))].append((r, b is not None and b.helper))
    clusters = [{"operation": op, "operand_type": t, "mode": mode, "pattern": pattern, "count": len(rs),
                 "tests": [r["id"] for r, _ in rs], "replay": command(next((r for r, helper in rs if not helper), rs[0][0])),
                 "helper_failures": sum(helper for _, helper in rs)}
                for (op, t, mode, pattern), rs in groups.items()]
    return sorted(clusters, key=lambda c: (-c["count"], c["operation"], names_order(c["operand_type"]),
                                           c["mode"], c["pattern"]))
