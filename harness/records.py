"""Outcome records: one JSON object per finished test, appended and flushed as it happens,
so a run killed half-way keeps every finished outcome on disk."""
from __future__ import annotations

import collections
import json
from pathlib import Path

from runtime.files import iter_json_lines, load_json
from runtime.types import OperandType


class RecordWriter:
    """Append-only JSON-lines writer (one line per outcome, flushed immediately)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(record, sort_keys=True) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


#: Record outcomes besides passed / failed / skipped (harness.expectations): a failure the
#: baseline lists, a pass the baseline lists as failing, a pass after a failed attempt.
EXPECTATION_OUTCOMES = ("known_failure", "unexpected_pass", "flaky")
#: Every record outcome.
OUTCOMES = ("passed", "failed", "skipped") + EXPECTATION_OUTCOMES


#: Fields of an outcome record the reports read -> (the exact types their value may have,
#: what that is); checked by :func:`read_records` with ``strict`` when the field is present.
#: A ``list`` is a list of strings.
RECORD_FIELDS = {"duration_s": ((int, float), "a number"), "message": ((str,), "a string"),
                 "skip_kind": ((str,), "a string"), "suite": ((str,), "a string"), "mode": ((str,), "a string"),
                 "nodeid": ((str,), "a string"), "declined": ((str,), "a string"),
                 "driver_incident": ((str,), "a string"), "required": ((bool,), "a boolean"),
                 "feature_level": ((int, type(None)), "an integer or null"),
                 "operations": ((list,), "a list of strings"),
                 "operand_types": ((list, type(None)), "a list of strings or null"),
                 "operation_under_test": ((str,), "a string"), "operand_type": ((str,), "a string"),
                 "helper_operations": ((list,), "a list of strings"), "core_digest": ((str,), "a string"),
                 # the precision grade of a CTS test (harness.runner.precision_fields)
                 "precision": ((str,), "a string"), "ulp_max": ((int, float, type(None)), "a number or null"),
                 "ulp_mean": ((int, float, type(None)), "a number or null"),
                 "ulp_budget": ((int, float), "a number"), "ulp_worst": ((str,), "a string")}


def _bad_field(record: dict) -> str | None:
    """The first field of :data:`RECORD_FIELDS` whose value in ``record`` is of another type,
    or None."""
    for key, (types, _) in RECORD_FIELDS.items():
        if key in record:
            value = record[key]
            if type(value) not in types or type(value) is list and not all(type(v) is str for v in value):
                return key
    return None


def read_records(path: str | Path, strict: bool = False, outcomes: bool = True) -> list[dict]:
    """Every record of a JSON-lines file, read under :func:`runtime.files.iter_json_lines`'
    bounds (1 GiB in all, 1 MiB a line, 64 levels of nesting); a truncated last line (killed
    run) is dropped. Other unreadable lines (not JSON, too long, too deep, not an object)
    and, with ``outcomes`` (outcome records, the default; False for other JSON-lines records
    such as MLTS stress results), objects without a string ``id`` and an ``outcome`` of
    :data:`OUTCOMES` are skipped, or with ``strict`` raise ValueError naming the file and
    line, as does a line whose field of :data:`RECORD_FIELDS` is of another type. Raises ValueError
    (:class:`runtime.files.FileFormatError`) for a file past the 1 GiB bound and OSError when
    it cannot be read."""
    records = []
    for line in iter_json_lines(path):
        if line.error is not None:
            if strict and not line.last:
                raise ValueError(f"{path}:{line.number}: not a JSON record ({line.error.reason})")
            continue
        record = line.value
        if not isinstance(record, dict) or (outcomes and not (
                isinstance(record.get("id"), str) and record.get("outcome") in OUTCOMES)):
            if strict:
                raise ValueError(f"{path}:{line.number}: not an outcome record (needs a string id and an outcome "
                                 f"of {', '.join(OUTCOMES)})")
            continue
        key = _bad_field(record) if strict else None
        if key:
            raise ValueError(f"{path}:{line.number}: record {record['id'][:200]}: field {key!r} must be "
                             f"{RECORD_FIELDS[key][1]}")
        records.append(record)
    return records


def read_json(path: Path) -> dict:
    """A JSON object file (summary.json, mlts.json, shard.json), read under
    :func:`runtime.files.load_json`'s bounds (64 MiB, 64 levels of nesting); ValueError (one
    line, naming the file) when it is unreadable, breaks a bound, is not JSON or not an
    object."""
    try:
        doc = load_json(path)
    except OSError as e:
        raise ValueError(f"{path}: not readable JSON ({e.strerror or e})") from None
    except ValueError as e:
        raise ValueError(f"{path}: not readable JSON ({getattr(e, 'reason', e)})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a JSON object")
    return doc


def per_operation(records, every_operation: bool = True) -> dict[str, collections.Counter]:
    """operation name -> Counter of outcomes (a model counts once for each operation it uses).
    With ``every_operation``, each of NNAPI's operation types has a row, an empty Counter
    when no record uses it (the summary then says "no test")."""
    from runtime.types import OperationType
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    if every_operation:
        for op in OperationType:
            table[op.name] = collections.Counter()
    for r in records:
        for op in r.get("operations", []) or ["(none)"]:
            table[op][r["outcome"]] += 1
    return dict(sorted(table.items()))


#: Test ids of our own golden specs (cts/specs, built under ``SPECS/``) start with this;
#: every other model is the corpus's (the vendored AOSP corpus or a ``--corpus`` directory).
SPECS_PREFIX = "SPECS/"


def per_source(records) -> dict[str, collections.Counter]:
    """"corpus" / "own specs" -> Counter of outcomes (only the sources that ran), so our
    specs are counted apart from the AOSP corpus."""
    table = {"corpus": collections.Counter(), "own specs": collections.Counter()}
    for r in records:
        table["own specs" if r["id"].startswith(SPECS_PREFIX) else "corpus"][r["outcome"]] += 1
    return {source: c for source, c in table.items() if c}


def per_mode(records) -> dict[str, dict]:
    """execution mode -> {passed, failed, skipped, seconds} (seconds: summed test durations)."""
    table: dict[str, dict] = {}
    for r in records:
        row = table.setdefault(r.get("mode", "sync"), {"passed": 0, "failed": 0, "skipped": 0, "seconds": 0.0})
        row[r["outcome"]] = row.get(r["outcome"], 0) + 1
        row["seconds"] += r.get("duration_s", 0.0)
    return dict(sorted(table.items(), key=lambda kv: (kv[0] != "sync", kv[0])))


def totals(records) -> collections.Counter:
    """Counter of outcomes (:data:`EXPECTATION_OUTCOMES` always present, 0 when none), plus
    ``skipped:<kind>`` for each skip kind, ``declined:<kind>`` for each test the driver
    declined (by its original skip kind; ``declined:required`` for those the profile
    required, which failed) and ``driver:crash`` / ``driver:hang`` for tests during which an
    out-of-process driver died or hung."""
    c = collections.Counter(r["outcome"] for r in records)
    for outcome in EXPECTATION_OUTCOMES:
        c[outcome] += 0
    for r in records:
        if r["outcome"] == "skipped":
            c[f"skipped:{r.get('skip_kind') or 'other'}"] += 1
        if r.get("declined"):
            c[f"declined:{r['declined']}"] += 1
            c["declined:required"] += bool(r.get("required"))
        if r.get("driver_incident"):
            c[f"driver:{r['driver_incident']}"] += 1
    return c


def expectation_lines(t: collections.Counter) -> list[str]:
    """From :func:`totals`: one line on known failures, unexpected passes and flakes, one on
    declined tests; none when there are none."""
    lines = []
    if any(t[o] for o in EXPECTATION_OUTCOMES):
        lines.append(f"expectations: {t['known_failure']} known failure(s), {t['unexpected_pass']} "
                     f"unexpected pass(es), {t['flaky']} flaky (passed on a retry)")
    kinds = {k.split(":", 1)[1]: v for k, v in sorted(t.items())
             if k.startswith("declined:") and k != "declined:required"}
    if kinds:
        lines.append(f"declined by the driver: {sum(kinds.values())} ("
                     + ", ".join(f"{k} {v}" for k, v in kinds.items())
                     + f"), {t['declined:required']} of them required by the profile (failed), the rest not applicable")
    return lines


def incident_line(t: collections.Counter) -> str:
    """"driver process: N crash(es), M hang(s)" from :func:`totals`; "" without any."""
    if not (t["driver:crash"] or t["driver:hang"]):
        return ""
    return (f"driver process: {t['driver:crash']} test(s) with a crash (DEAD_OBJECT), "
            f"{t['driver:hang']} with a hang (killed after the call timeout)")


#: The precision grades of a record's ``precision`` field (runtime.precision.budgets.GRADES).
PRECISION_GRADES = ("within budget", "over budget", "no budget")


def precision_summary(records) -> dict:
    """The precision grades of the records that carry one (CTS tests with a measured float
    output): ``grades`` (grade -> count, every grade present) and ``per_operation``
    (operation under test, else the model's first operation -> {grade counts, ``worst``:
    the largest ``ulp_max`` (None: infinite), its ``budget``, test ``id``, ``mode`` and
    ``where`` (``ulp_worst``)}, sorted by operation); empty when no record has a grade."""
    graded = [r for r in records if r.get("precision") in PRECISION_GRADES]
    if not graded:
        return {}
    grades = {g: 0 for g in PRECISION_GRADES}
    rows: dict[str, dict] = {}
    for r in graded:
        grades[r["precision"]] += 1
        op = r.get("operation_under_test") or (r.get("operations") or ["(none)"])[0]
        row = rows.setdefault(op, {**{g: 0 for g in PRECISION_GRADES}, "worst": 0.0, "budget": None,
                                   "id": "", "mode": "", "where": ""})
        row[r["precision"]] += 1
        ulp = r.get("ulp_max")
        if not row["id"] or _ulp_order(ulp) > _ulp_order(row["worst"]):
            row.update(worst=ulp, budget=r.get("ulp_budget"), id=r["id"], mode=r.get("mode", ""),
                       where=r.get("ulp_worst", ""))
    return {"grades": grades, "per_operation": dict(sorted(rows.items()))}


def _ulp_order(ulp) -> float:
    """Sort key of an ``ulp_max``: null (infinite) above every number."""
    return float("inf") if ulp is None else float(ulp)


def precision_line(records) -> str:
    """"precision (ULP against the float64 truth): N within budget, M over budget, K no
    budget" from :func:`precision_summary`; "" without graded records."""
    summary = precision_summary(records)
    if not summary:
        return ""
    return "precision (ULP against the float64 truth): " + ", ".join(
        f"{n} {g}" for g, n in summary["grades"].items())


def format_summary(records) -> list[str]:
    """Per-operation summary lines (operation, passed, failed, skipped, then any known
    failures, unexpected passes and flakes), per-mode lines when several execution modes ran,
    per-source lines (corpus, own specs) when both ran, and totals (with the expectations
    and declined tests apart, and the precision grades: :func:`precision_line`)."""
    lines = [f"{'operation':34s} {'passed':>7s} {'failed':>7s} {'skipped':>8s}"]
    untested = []
    for op, c in per_operation(records).items():
        extra = ", ".join(f"{o} {c[o]}" for o in EXPECTATION_OUTCOMES if c[o])
        lines.append(f"{op:34s} {c['passed']:7d} {c['failed']:7d} {c['skipped']:8d}"
                     + ("  no test" if not c else f"  {extra}" if extra else ""))
        untested += [op] if not c else []
    if untested:
        lines.append(f"{len(untested)} operation(s) with no test in this run: {', '.join(untested)}")
    modes = per_mode(records)
    if len(modes) > 1:
        lines.append("")
        lines.append(f"{'mode':34s} {'passed':>7s} {'failed':>7s} {'skipped':>8s} {'seconds':>8s}")
        for mode, row in modes.items():
            lines.append(f"{mode:34s} {row['passed']:7d} {row['failed']:7d} {row['skipped']:8d} "
                         f"{row['seconds']:8.1f}")
        lines.append("")
    sources = per_source(records)
    if len(sources) > 1:
        lines.append(f"{'source':34s} {'passed':>7s} {'failed':>7s} {'skipped':>8s}")
        for source, c in sources.items():
            lines.append(f"{source:34s} {c['passed']:7d} {c['failed']:7d} {c['skipped']:8d}")
    t = totals(records)
    kinds = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in sorted(t.items()) if k.startswith("skipped:"))
    lines.append(f"total: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped"
                 + (f" ({kinds})" if kinds else ""))
    lines += expectation_lines(t)
    if incident_line(t):
        lines.append(incident_line(t))
    if precision_line(records):
        lines.append(precision_line(records))
    return lines


#: The coupling mode's renaming of operand types (TENSOR_QUANT8_ASYMM becomes signed).
_SIGNED = {"TENSOR_QUANT8_ASYMM": "TENSOR_QUANT8_ASYMM_SIGNED"}


def model_operand_types(tm, coupling: bool = False) -> list[str]:
    """Names of the distinct types of each operation's input 0 in test model ``tm`` (main
    and referenced subgraphs), in NNAPI code order; with ``coupling`` (the CTS mode that
    turns TENSOR_QUANT8_ASYMM into TENSOR_QUANT8_ASYMM_SIGNED) as the driver sees them."""
    types = {sg.operands[op.inputs[0]].type for sg in [tm.main, *tm.referenced]
             for op in sg.operations if op.inputs}
    names = [t.name for t in sorted(types)]
    if coupling:
        names = sorted({_SIGNED.get(n, n) for n in names}, key=names_order)
    return names


#: ``operation_under_test`` of a test without one operation under test (a random graph of
#: several operation types).
GRAPH = "(graph)"


def under_test_fields(tm, coupling: bool = False) -> dict:
    """The record fields naming what test model ``tm`` tests
    (:attr:`runtime.testing.test_model.TestModel.under_test`): ``operation_under_test`` (NNAPI
    operation name), ``operand_type`` (its input 0's type name, renamed as the coupling mode
    does, see :func:`model_operand_types`), ``helper_operations`` (``"OPERATION OPERAND_TYPE"``
    of each distinct helper operation, sorted) and ``core_digest``
    (:func:`runtime.testing.under_test.core_digest`). Empty for a model without operations."""
    u = tm.under_test
    if u.operation is None:
        return {}
    sg = tm.main

    def type_name(t) -> str:
        name = t.name if t is not None else "(none)"
        return _SIGNED.get(name, name) if coupling else name

    helpers = sorted({f"{sg.operations[k].type.name} {type_name(_input0_type(sg, sg.operations[k]))}"
                      for k in u.helpers})
    return {"operation_under_test": u.operation.name, "operand_type": type_name(u.operand_type),
            "helper_operations": helpers, "core_digest": u.core}


def _input0_type(sg, op):
    return sg.operands[op.inputs[0]].type if op.inputs else None


def names_order(name: str) -> tuple[int, str]:
    """Sort key of an operand type name: NNAPI code order, unknown names last."""
    try:
        return int(OperandType[name]), name
    except KeyError:
        return 1 << 30, name


def record_outcome(report) -> str | None:
    """The record outcome (see :data:`harness.records.OUTCOMES`) of a test's finished phase
    report: its call report, or its setup report when setup did not pass; None for any other
    report and for an attempt pytest-rerunfailures will repeat (outcome ``rerun``). The
    baseline's verdict (``expectation``; a skip with ``wasxfail`` is a known failure), flaky
    for a pass after a failed attempt, else pytest's outcome."""
    if report.outcome == "rerun" or not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return None
    expectation = (getattr(report, "nncts", None) or {}).get("expectation")
    if expectation:
        return expectation
    if report.skipped and hasattr(report, "wasxfail"):
        return "known_failure"
    if report.passed:
        return "flaky" if getattr(report, "rerun", 0) else "passed"
    return "skipped" if report.skipped else "failed"
