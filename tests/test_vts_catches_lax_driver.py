"""The VTS validation tests catch a driver that accepts invalid models: the sample driver
with numberOfConsumers recomputed before validation (tests/broken_drivers.py
``LaxConsumersDriver``) must fail every model validation item, each naming only
``number_of_consumers`` mutants, while every other mutation kind (model and request) still
passes on it. The sample driver validating the main subgraph only
(``TrustsReferencedSubgraphs``) must fail every control-flow model, each naming only
mutants of referenced subgraphs, and pass models without referenced subgraphs."""
from __future__ import annotations

import re
import subprocess
import sys

from harness.records import read_records
from tests.cts_run import ROOT
from vts.mutations import KINDS
from vts.plugin import MODEL_MODE, REQUEST_MODE

#: A few small models: with and without internal operands (execution_order and
#: removed_write need an operand written by one operation and read by another).
MODELS = ("V1_0/add/add or V1_0/fully_connected_float/fully_connected_float_all_inputs_as_internal "
          "or V1_1/mean_quant8_1/mean_quant8_1_all_inputs_as_internal")

#: Two control-flow models (IF with two branches; a WHILE whose body runs a WHILE) and,
#: for contrast, models without referenced subgraphs.
CONTROL_FLOW_MODELS = ("V1_3/if_simple/if_simple_true_int32 or "
                       "V1_3/while_sum_of_powers_quant8/while_sum_of_powers_quant8_n_0_all_outputs_as_internal")


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
        mishandled = _mishandled(r)
        assert mishandled, r["message"]
        assert all(m.startswith("number_of_consumers:") and "accepted" in m for m in mishandled), r["message"]
    assert all(r["outcome"] == "passed" for r in requests), requests
    # the per-kind summary shows the culprit kind and no other
    assert "number_of_consumers" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("number_of_consumers "))
    assert int(line.split()[-1]) == len(models), line
    assert all(int(ln.split()[-1]) == 0 for ln in out.splitlines()
               if ln.split() and ln.split()[0] in KINDS and ln.split()[0] != "number_of_consumers")


def _mishandled(record) -> list[str]:
    """The mutants a failed model validation item names (its message's lines but the first
    and the "... and N more")."""
    return [line.strip() for line in record["message"].splitlines()[1:]
            if line.strip() and not line.strip().startswith("...")]


def test_vts_catches_driver_validating_main_subgraph_only(tmp_path):
    """The driver trusting referenced subgraphs fails both control-flow models, each naming
    only mutants of referenced subgraphs, and passes the models without any (and every
    request validation item)."""
    code, records, out = run_vts(tmp_path, "--driver", "tests.broken_drivers:TrustsReferencedSubgraphs",
                                 "-k", f"{CONTROL_FLOW_MODELS} or {MODELS}")
    assert code == 1, out[-3000:]
    models = [r for r in records if r["suite"] == "vts" and r["mode"] == MODEL_MODE]
    control_flow = [r for r in models if {"IF", "WHILE"} & set(r["operations"])]
    assert len(control_flow) == 2 and len(models) >= 5, [r["id"] for r in models]
    for r in models:
        if r not in control_flow:
            assert r["outcome"] == "passed", r
            continue
        assert r["outcome"] == "failed", r
        mishandled = _mishandled(r)
        assert mishandled and all(re.match(r"[a-z_]+: (a copy of )?referenced subgraph \d+ ", m)
                                  for m in mishandled), r["message"]
    requests = [r for r in records if r["suite"] == "vts" and r["mode"] == REQUEST_MODE]
    assert len(requests) == len(models) and all(r["outcome"] == "passed" for r in requests), requests


def test_vts_passes_sample_driver_on_same_models(tmp_path):
    """Control: the unmodified sample driver passes every item of the same selections."""
    code, records, out = run_vts(tmp_path, "-k", f"{MODELS} or {CONTROL_FLOW_MODELS}")
    assert code == 0, out[-3000:]
    vts = [r for r in records if r["suite"] == "vts" and r["mode"] in (MODEL_MODE, REQUEST_MODE)]
    assert len(vts) >= 10 and all(r["outcome"] == "passed" for r in vts)
    assert sum({"IF", "WHILE"} & set(r["operations"]) != set() for r in vts) == 4
    exercised = {ln.split()[0] for ln in out.splitlines() if ln.split() and ln.split()[0] in KINDS}
    assert exercised == set(KINDS), f"kinds not exercised: {sorted(set(KINDS) - exercised)}"


# --- how the VTS judges a driver's answer to a mutant (in process) -----------------------

def _fc_model_and_request():
    from harness.locations import CORPUS as DEFAULT_CORPUS
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


def test_main_subgraph_only_driver_rejects_main_mutants_and_misses_referenced_ones():
    """In process, every mutant (up to the VTS's default cap) of a nested-WHILE model: the
    driver validating main only rejects each mutant of main and mishandles mutants of
    referenced subgraphs of every model kind (each kind's referenced sites matter); the
    sample driver rejects them all."""
    from runtime.drivers.sample import SampleDevice
    from tests.broken_drivers import TrustsReferencedSubgraphs
    from vts.mutations import MODEL_KINDS
    from vts.plugin import DEFAULT_MAX_MUTANTS
    from vts.test_model_validation import _control_flow_models, check_model_mutant

    model = _control_flow_models()[1]
    lax, sample = TrustsReferencedSubgraphs(), SampleDevice()
    assert all(lax.get_supported_operations(model)) and lax.prepare_model(model) is not None
    missed = set()
    for name, kind in MODEL_KINDS.items():
        for mutant in kind(model, DEFAULT_MAX_MUTANTS):
            problems = check_model_mutant(lax, mutant, kind.checks_supported_operations)
            if "referenced subgraph" in mutant.description:
                missed |= {name} if problems else set()
            else:
                assert problems == [], problems
            assert check_model_mutant(sample, mutant, kind.checks_supported_operations) == []
    assert missed == {name for name, kind in MODEL_KINDS.items() if kind.target == "model"}
