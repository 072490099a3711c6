"""The difference between two runs (two builds of a driver, or two drivers): tests keyed by
(suite, record id), compared outcome by outcome, and the operation x operand-type matrices
compared cell by cell.

Headings (each a list of tests, or of matrix cells; ``verdict`` of verdict changes):

- ``verdict``: between two certification bundles (or a bundle and a run that is not one), the
  verdict when it changed (``certified -> not certified (quick run)``) with B's reasons A has
  not, then each suite whose verdict changed with why (:func:`reports.verdict.compare`).
- ``new failures``: not failing in A (passed, flaky, skipped), failing in B (``failed`` or
  ``unexpected_pass``); a known failure (the baseline lists it) is not new.
- ``fixed``: failing or a known failure in A, passed in B (an unexpected pass too).
- ``still failing``: failing in both.
- ``flaky``: flaky in either run.
- ``newly unsupported`` / ``newly supported``: the driver declines the test in B but not
  in A (skip kinds of :data:`reports.matrix.UNSUPPORTED_KINDS`) / the reverse.
- ``coverage gained`` / ``coverage lost``: matrix cells whose state changed, towards
  ``pass`` (not run < unsupported < fail < pass) / away from it.
- ``only in A`` / ``only in B``: tests one run has and the other has not.
"""
from __future__ import annotations

from . import matrix, verdict
from .run import FAILING, all_records, load_run

#: The heading of verdict changes, first in the output (not a heading of tests or cells).
VERDICT = "verdict"
HEADINGS = ("new failures", "fixed", "still failing", "flaky", "newly unsupported", "newly supported",
            "coverage gained", "coverage lost", "only in A", "only in B")
_RANK = {"not run": 0, "unsupported": 1, "fail": 2, "pass": 3}


def _key(r: dict) -> tuple[str, str]:
    return r.get("suite", "cts"), r["id"]


def _tests(pairs) -> list[dict]:
    return [{"suite": s, "id": i} for s, i in sorted(pairs)]


def compare(a_records, b_records, verdicts: list[dict] | None = None) -> dict:
    """``{heading: [entries]}`` for :data:`VERDICT` and every heading of :data:`HEADINGS`: tests are
    ``{"suite", "id"}`` (plus ``"from"``/``"to"`` outcomes where they changed), cells are
    ``{"operation", "operand_type", "from", "to"}``; ``verdict`` is ``verdicts`` (entries of
    :func:`reports.verdict.compare`; none by default: records carry no verdict)."""
    a = {_key(r): r for r in a_records}
    b = {_key(r): r for r in b_records}
    both = a.keys() & b.keys()

    def changed(pred) -> list[dict]:
        return [{"suite": k[0], "id": k[1], "from": a[k]["outcome"], "to": b[k]["outcome"]}
                for k in sorted(both) if pred(a[k], b[k])]

    out = {
        "new failures": changed(lambda x, y: x["outcome"] not in FAILING + ("known_failure",)
                                and y["outcome"] in FAILING),
        "fixed": changed(lambda x, y: x["outcome"] in FAILING + ("known_failure",)
                         and y["outcome"] in ("passed", "unexpected_pass")),
        "still failing": changed(lambda x, y: x["outcome"] in FAILING and y["outcome"] in FAILING),
        "flaky": _tests({k for k in a.keys() | b.keys()
                         if "flaky" in (a.get(k, {}).get("outcome"), b.get(k, {}).get("outcome"))}),
        "newly unsupported": changed(lambda x, y: matrix.record_state(x) != "unsupported"
                                     and matrix.record_state(y) == "unsupported"),
        "newly supported": changed(lambda x, y: matrix.record_state(x) == "unsupported"
                                   and matrix.record_state(y) != "unsupported"),
        "only in A": _tests(a.keys() - b.keys()),
        "only in B": _tests(b.keys() - a.keys()),
    }
    cells_a = matrix.cell_states(matrix.build(a_records))
    cells_b = matrix.cell_states(matrix.build(b_records))
    cells = [{"operation": op, "operand_type": t, "from": cells_a.get((op, t), "not run"),
              "to": cells_b.get((op, t), "not run")} for op, t in sorted(cells_a.keys() | cells_b.keys())]
    out["coverage gained"] = [c for c in cells if _RANK[c["to"]] > _RANK[c["from"]]]
    out["coverage lost"] = [c for c in cells if _RANK[c["to"]] < _RANK[c["from"]]]
    return {VERDICT: list(verdicts or []), **{h: out[h] for h in HEADINGS}}


def diff_runs(a_paths, b_paths) -> dict:
    """:func:`compare` of two runs, each a list of report directories or bundles
    (:func:`reports.run.suite_dirs`), with their verdicts compared when either is a bundle;
    ValueError (one line) for a path that is neither, or an unreadable ``verdict.json``."""
    a, b = load_run(a_paths), load_run(b_paths)
    return compare(all_records(a), all_records(b), verdict.compare(verdict.for_run(a), verdict.for_run(b)))


def _line(entry: dict) -> str:
    if "what" in entry:   # a verdict change
        head = f"  {entry['from']} -> {entry['to']}" if entry["what"] == "verdict" else \
            f"  {entry['what']}: {entry['from']} -> {entry['to']}"
        return "\n".join([head, *("      " + " ".join(str(why).split()) for why in entry["why"])])
    if "operation" in entry:
        return f"  {entry['operation']} x {entry['operand_type']}: {entry['from']} -> {entry['to']}"
    change = f"  ({entry['from']} -> {entry['to']})" if "from" in entry else ""
    return f"  {entry['id']}  [{entry['suite']}]{change}"


def format_diff(diff: dict) -> list[str]:
    """Text lines: per heading ``<heading> (N):`` then one line per test (``  <id>
    [<suite>]``, with the outcome change) or matrix cell; a verdict change is ``  <from> ->
    <to>`` (a suite's: ``  <suite>: <from> -> <to>``) with each reason indented below it."""
    lines = []
    for heading in (VERDICT, *HEADINGS):
        lines.append(f"{heading} ({len(diff[heading])}):")
        lines += [line for e in diff[heading] for line in _line(e).split("\n")]
    return lines
