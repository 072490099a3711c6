"""The VTS validation tests catch a driver that accepts invalid models: the sample driver
with numberOfConsumers recomputed before validation (tests/broken_drivers.py
``LaxConsumersDriver``) must fail every model validation item, each naming only
``number_of_consumers`` mutants, while every other mutation kind (model and request) still
passes on it."""
from __future__ import annotations

import subprocess
import sys

from reports.records import read_records
from tests.cts_run import ROOT
from vts.mutations import KINDS
from vts.plugin import MODEL_MODE, REQUEST_MODE

#: A few small models: with and without internal operands (execution_order and
#: removed_write need an operand written by one operation and read by another).
MODELS = ("V1_0/add/add or V1_0/fully_connected_float/fully_connected_float_all_inputs_as_internal "
          "or V1_1/mean_quant8_1/mean_quant8_1_all_inputs_as_internal")


def run_vts(tmp_path, *args: str) -> tuple[int, list[dict], str]:
    """``pytest`` on the VTS validation tests in a subprocess with outcome records in
    ``tmp_path``; returns (exit code, records, output)."""
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "pytest", "vts/test_model_validation.py",
                           "vts/test_request_validation.py", "-q", "-p", "no:cacheprovider",
                           "--nncts-report", str(report), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    path = report / "outcomes.jsonl"
    return proc.returncode, read_records(path) if path.exists() else [], proc.stdout + proc.stderr


def test_vts_catches_lax_consumers_driver(tmp_path):
    code, records, out = run_vts(tmp_path, "--driver", "tests.broken_drivers:LaxConsumersDriver",
                                 "-k", MODELS)
    assert code == 1, out[-3000:]
    models = [r for r in records if r["suite"] == "vts" and r["mode"] == MODEL_MODE]
    requests = [r for r in records if r["suite"] == "vts" and r["mode"] == REQUEST_MODE]
    assert len(models) >= 3 and len(requests) == len(models), [(r["id"], r["mode"]) for r in records]
    for r in models:
        assert r["outcome"] == "failed", r
        mishandled = [line.strip() for line in r["message"].splitlines()[1:]
                      if line.strip() and not line.strip().startswith("...")]
        assert mishandled, r["message"]
        assert all(m.startswith("number_of_consumers:") and "accepted" in m for m in mishandled), r["message"]
    assert all(r["outcome"] == "passed" for r in requests), requests
    # the per-kind summary shows the culprit kind and no other
    assert "number_of_consumers" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("number_of_consumers "))
    assert int(line.split()[-1]) == len(models), line
    assert all(int(ln.split()[-1]) == 0 for ln in out.splitlines()
               if ln.split() and ln.split()[0] in KINDS and ln.split()[0] != "number_of_consumers")


def test_vts_passes_sample_driver_on_same_models(tmp_path):
    """Control: the unmodified sample driver passes every item of the same selection."""
    code, records, out = run_vts(tmp_path, "-k", MODELS)
    assert code == 0, out[-3000:]
    vts = [r for r in records if r["suite"] == "vts" and r["mode"] in (MODEL_MODE, REQUEST_MODE)]
    assert len(vts) >= 6 and all(r["outcome"] == "passed" for r in vts)
    exercised = {ln.split()[0] for ln in out.splitlines() if ln.split() and ln.split()[0] in KINDS}
    assert exercised == set(KINDS), f"kinds not exercised: {sorted(set(KINDS) - exercised)}"


# --- how the VTS judges a driver's answer to a mutant (in process) -----------------------

def _fc_model_and_request():
    from nncts.pytest_plugin import DEFAULT_CORPUS
    from runtime.testing.hal_convert import to_hal_model, to_hal_request
    from runtime.testing.test_model import load_spec
    tm = load_spec(DEFAULT_CORPUS / "V1_0" / "fully_connected_float.json.gz")[0]
    return to_hal_model(tm), to_hal_request(tm)


def test_model_mutant_judgement_names_crashes_and_wrong_statuses():
    from runtime.drivers.sample import SampleDevice
    from runtime.errors import HalError
    from runtime.types import ErrorStatus
    from vts.mutations import MODEL_KINDS
    from vts.test_model_validation import check_model_mutant

    class Crashes(SampleDevice):
        def get_supported_operations(self, model):
            raise ValueError("boom")

        def prepare_model(self, model, *args, **kwargs):
            raise HalError(ErrorStatus.GENERAL_FAILURE, "cannot")

    model, _ = _fc_model_and_request()
    mutant = next(MODEL_KINDS["operand_type"](model))
    problems = check_model_mutant(Crashes(), mutant, True)
    assert len(problems) == 2
    assert mutant.description in problems[0] and "driver crashed: ValueError: boom" in problems[0]
    assert "expected INVALID_ARGUMENT, got GENERAL_FAILURE" in problems[1]
    assert check_model_mutant(SampleDevice(), mutant, True) == []
    # an invalid priority goes to prepare_model only
    prio = next(MODEL_KINDS["invalid_priority"](model))
    problems = check_model_mutant(Crashes(), prio, False)
    assert len(problems) == 1 and "prepare_model" in problems[0]


def test_request_mutant_judgement_covers_every_path_with_a_bounded_wait():
    from runtime.drivers.sample import SampleDevice
    from tests.broken_drivers import LostAsyncCallback
    from vts.mutations import REQUEST_KINDS
    from vts.test_request_validation import PATHS, check_request_mutant

    model, request = _fc_model_and_request()
    description, mutated = next(REQUEST_KINDS["removed_input"](request))
    assert check_request_mutant(SampleDevice().prepare_model(model), description, mutated, 5.0) == []
    problems = check_request_mutant(LostAsyncCallback().prepare_model(model), description, mutated, 0.2)
    assert problems == [f"{description} [async: execute_asynchronously: callback not notified within 0.2 s]"]

    class Accepts(type(SampleDevice().prepare_model(model))):
        def execute_synchronously(self, request, measure=None, deadline_ns=None, loop_timeout_duration_ns=None):
            return [], None
    lax = Accepts(model, SampleDevice())
    problems = check_request_mutant(lax, description, mutated, 5.0)
    assert [p.split(" [")[1].split(":")[0] for p in problems] == list(PATHS)
