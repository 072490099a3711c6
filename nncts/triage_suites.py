"""``nncts triage`` for the suites whose oracle is no reference run of a corpus model.

* **VTS** (suite ``vts``): each call's expected HAL status (or, for the generated tests, the
  golden outputs) is fixed by HAL 1.3 / AIDL (e.g. INVALID_ARGUMENT for every mutant of
  AOSP ``ValidateModel.cpp``, MISSED_DEADLINE_* for an endless loop), so the expected
  verdict of a conforming driver is ``pass`` and the side whose test fails is the one that
  deviates from the HAL (:data:`VTS_REFERENCE`). The items are not re-run (a VTS item drives
  the HAL objects through pytest fixtures): the sides' recorded verdicts are judged.
* **Precision sweeps** (suite ``precision``): the oracle is the float64 truth
  (:mod:`precision.measure`), so the expected verdict is ``pass`` and a side is wrong when
  elements of its sweep are beyond AOSP's tolerance of the truth. A side whose driver loads
  is re-run (:func:`rerun_sweep`: the sweep of the record's id and mode, judged again; with
  the run's ``--precision strict`` an over-budget sweep fails too), else its recorded
  verdict stands.
"""
from __future__ import annotations

from harness.runner import Failure
from precision.cases import MODES, cases
from precision.measure import SweepSkip, describe_failure, measure_sweep
from runtime.errors import NnapiError

#: The reference part of a VTS entry: a conforming driver passes (the HAL's expected status).
VTS_REFERENCE = {"verdict": "pass", "error": None, "golden_vs_truth": None,
                 "problem": "the HAL's expected status: a conforming driver passes"}
#: The reference part of a sweep entry: the float64 truth, which a conforming driver meets.
SWEEP_REFERENCE = {"verdict": "pass", "error": None, "golden_vs_truth": None,
                   "problem": "the float64 truth: a conforming driver is within AOSP's tolerance of it"}
#: Notes said on the page for each kind of entry.
VTS_NOTE = "VTS: judged by the HAL's expected status (the failing side deviates from it); not re-run"
SWEEP_NOTE = "precision sweep: judged against the float64 truth"

_CASES: dict[str, dict] = {}


def sweep_case(record: dict):
    """The sweep case (:class:`precision.cases.SweepCase`) of a precision record (its id in
    the record's ``mode``, ``full`` or ``quick``), or why there is none."""
    mode = record.get("mode") if record.get("mode") in MODES else "full"
    if mode not in _CASES:
        _CASES[mode] = {c.id: c for c in cases(mode)}
    found = _CASES[mode].get(record.get("id", ""))
    return (found, mode) if found is not None else f"no precision sweep {record.get('id', '')[:200]!r} in mode {mode}"


def rerun_sweep(case, mode: str, device, options: dict) -> dict:
    """A side's re-run of sweep ``case`` in ``mode`` on ``device``: ``rerun`` (pass / fail
    / None when the driver declines it), ``message``, and ``culprit`` (the sweep's operation,
    for the clusters) when it fails. ``options["precision"] == "strict"`` fails an
    over-budget sweep as the suite does."""
    try:
        record = measure_sweep(case, mode, device)
    except SweepSkip as e:
        return {"rerun": None, "message": f"declined on re-run: {e}"}
    except (NnapiError, Failure) as e:
        return {"rerun": "fail", "message": f"{case.id}: {e}",
                "culprit": culprit(case, f"the sweep fails: {type(e).__name__}")}
    if record["failing"]:
        return {"rerun": "fail", "message": describe_failure(record),
                "culprit": culprit(case, f"{record['failing']} element(s) beyond AOSP's tolerance of the float64 "
                                         f"truth")}
    if record["grade"] == "over budget" and options.get("precision") == "strict":
        return {"rerun": "fail", "message": f"{record['over_budget']} element(s) over the budget (--precision strict)",
                "culprit": culprit(case, f"{record['over_budget']} element(s) over the error budget")}
    return {"rerun": "pass", "message": ""}


def culprit(case, message: str) -> dict:
    """The culprit of a failing sweep: its operation alone (a sweep is one operation)."""
    return {"operation": case.operation.name, "operand_type": case.in_type.name, "where": "sweep",
            "message": message}
