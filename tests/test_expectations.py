"""Baselines (known failures, unexpected passes), flake retries and required vs optional
tests (harness.expectations, harness.requirements): small CTS selections in a subprocess against
planted-fault and partial drivers, a tiny flaky test file, and the file checks. Expected
outcomes come from the planted faults (tests/broken_drivers.py), the drivers' declared
operations and NNAPI's feature levels, never from the code under test."""
from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from _pytest.reports import TestReport

from harness.expectations import Baseline, KnownFailure, apply_baseline, load_baseline
from harness.requirements import load_profile
from harness.records import format_summary, read_records, totals
from runtime.drivers.sample import SampleDevice
from tests.cts_run import ROOT, run_cts

V1_0 = ("--corpus", "cts/corpus/V1_0")
#: OffByTwoQuantaAdd fails exactly the quantized ADD models of this selection (its float ADD
#: model passes): add_quant8 and add_broadcast_quant8, each also with its inputs as internal
#: operands (the corpus's ``_all_inputs_as_internal`` variants).
ADD_SELECTION = (*V1_0, "-k", "add_")
QUANT_ADD = {"V1_0/add_quant8/add_quant8", "V1_0/add_quant8/add_quant8_all_inputs_as_internal",
             "V1_0/add_broadcast_quant8/add_broadcast_quant8",
             "V1_0/add_broadcast_quant8/add_broadcast_quant8_all_inputs_as_internal"}
FLOAT_ADD = "V1_0/add/add_all_inputs_as_internal"
OFF_BY_TWO = "tests.broken_drivers:OffByTwoQuantaAdd"


def sample_at_level_1():
    """The sample driver claiming feature level 1 (NNAPI 1.0): models of level 2 and up are
    declined with skip kind ``feature_level`` (a driver spec for the runs below)."""
    return SampleDevice(feature_level=1)


def write(path, text: str):
    path.write_text(text)
    return path


BASELINE = """
[[known_failure]]
id = "V1_0/add*quant8*"
reason = "rounding in our ADD kernel"
link = "https://bugs.example.com/123"
"""


# --- the baseline file ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('[[known_failure]]\nid = "V1_0/add/add"\n', "known_failure entry 1 (id 'V1_0/add/add'): missing 'reason'"),
    ('[[known_failure]]\nid = "a"\nreason = "r"\nbug = "x"\n', "entry 1 (id 'a'): unknown key(s) bug"),
    ('[[known_failure]]\nreason = "r"\n', "known_failure entry 1: missing 'id'"),
    ('[[known_failure]]\nid = "a"\nreason = "r"\n[[known_failure]]\nid = "b"\nreason = "r"\nincident = "yes"\n',
     "entry 2 (id 'b'): 'incident' must be a bool"),
    ('[[known_failures]]\nid = "a"\n', "unknown key(s) known_failures"),
    ('[[known_failure]\n', "not valid TOML"),
])
def test_a_malformed_baseline_is_one_line_naming_file_and_entry(tmp_path, text, expected):
    path = write(tmp_path / "base.toml", text)
    with pytest.raises(ValueError) as e:
        load_baseline(path)
    assert str(e.value).startswith(f"{path}: ") and expected in str(e.value) and "\n" not in str(e.value)


def test_a_missing_baseline_file_is_named(tmp_path):
    with pytest.raises(ValueError, match=f"^{tmp_path / 'nope.toml'}: cannot read"):
        load_baseline(tmp_path / "nope.toml")


def test_baseline_entries_match_ids_patterns_and_node_ids_first_entry_first(tmp_path):
    base = load_baseline(write(tmp_path / "b.toml", BASELINE + '[[known_failure]]\nid = "V1_0/add_quant8/add_quant8"'
                                                             '\nreason = "second"\nincident = true\n'))
    nodeid = "cts/test_generated.py::test_generated[V1_0/add_quant8/add_quant8]"
    assert base.match("V1_0/add_quant8/add_quant8", nodeid).reason == "rounding in our ADD kernel"
    assert base.match("V1_0/add_quant8/add_quant8@async", nodeid + "@async") is not None
    assert base.match("V1_0/add/add", "cts/test_generated.py::test_generated[V1_0/add/add]") is None
    by_node = Baseline("b", (KnownFailure("cts/test_generated.py::test_generated?V1_0/add/add?", "why"),))
    assert by_node.match("V1_0/add/add", "cts/test_generated.py::test_generated[V1_0/add/add]") is not None
    assert base.entries[1].incident is True and base.entries[0].link == "https://bugs.example.com/123"


def test_a_driver_crash_is_no_known_failure_unless_the_entry_says_incident():
    def judged(incident: bool) -> str:
        baseline = Baseline("b", (KnownFailure("V1_0/*", "r", "", incident),))
        item = SimpleNamespace(nodeid="cts/test_generated.py::test_generated[V1_0/add/add]",
                               config=SimpleNamespace(_nncts_baseline=baseline))
        report = TestReport(item.nodeid, ("x", 0, "x"), {}, "failed", "DEAD_OBJECT", "call",
                            nncts={"operations": ["ADD"], "driver_incident": "crash"})
        apply_baseline(item, report, "V1_0/add/add")
        return report.outcome
    assert judged(False) == "failed"
    assert judged(True) == "skipped"  # xfailed: a known failure


# --- acceptance: a baseline turns a planted-fault run from failing to passing --------------------

def run_cli(tmp_path, *args: str) -> tuple[int, dict, dict, str]:
    """``nncts cts ARGS`` (sync mode) with its report in tmp_path: (exit code, {id: record},
    summary.json totals, output)."""
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--mode", "sync", "--report-dir", str(report),
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    records = {r["id"]: r for r in read_records(report / "outcomes.jsonl")}
    return proc.returncode, records, json.loads((report / "summary.json").read_text())["totals"], \
        proc.stdout + proc.stderr


def test_baseline_turns_a_planted_fault_run_from_failing_to_passing_then_reports_the_fix(tmp_path):
    baseline = write(tmp_path / "base.toml", BASELINE)
    code, records, _, out = run_cli(tmp_path / "plain", "--driver", OFF_BY_TWO, *ADD_SELECTION)
    assert code == 1, out[-2000:]
    assert {i for i, r in records.items() if r["outcome"] == "failed"} == QUANT_ADD

    code, records, t, out = run_cli(tmp_path / "known", "--driver", OFF_BY_TWO, *ADD_SELECTION,
                                    "--baseline", str(baseline))
    assert code == 0, out[-2000:]
    known = {i for i, r in records.items() if r["outcome"] == "known_failure"}
    assert known == QUANT_ADD and records[FLOAT_ADD]["outcome"] == "passed"
    r = records["V1_0/add_quant8/add_quant8"]
    assert (r["reason"], r["link"], r["baseline_id"]) == ("rounding in our ADD kernel",
                                                          "https://bugs.example.com/123", "V1_0/add*quant8*")
    assert "elements off" in r["message"]
    assert (t["known_failure"], t["unexpected_pass"], t.get("failed", 0), t["passed"]) == (4, 0, 0, 1)
    assert "expectations: 4 known failure(s), 0 unexpected pass(es), 0 flaky" in out

    code, records, t, out = run_cli(tmp_path / "fixed", "--driver", "sample", *ADD_SELECTION,
                                    "--baseline", str(baseline))
    assert code == 1, out[-2000:]
    assert {i for i, r in records.items() if r["outcome"] == "unexpected_pass"} == QUANT_ADD
    assert "unexpected pass" in records["V1_0/add_quant8/add_quant8"]["message"]
    assert "remove the entry" in records["V1_0/add_quant8/add_quant8"]["message"]
    assert (t["unexpected_pass"], t["known_failure"]) == (4, 0)


def test_a_malformed_baseline_stops_the_run_before_any_test(tmp_path):
    bad = write(tmp_path / "bad.toml", '[[known_failure]]\nid = "V1_0/add/add"\n')
    code, records, out = run_cts(tmp_path, "--driver", "sample", *ADD_SELECTION, "--baseline", str(bad))
    assert code == 4 and not records
    assert f"--baseline: {bad}: known_failure entry 1 (id 'V1_0/add/add'): missing 'reason'" in out


# --- flake retries ---------------------------------------------------------------------------------

FLAKY_TEST = """
import pathlib

from harness.plugin import add_record_fields

COUNTER = pathlib.Path(__file__).with_name("attempts.txt")


def test_flaky(request):
    add_record_fields(request.node, operations=["ADD"])
    n = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(n))
    assert n > 1, "fails on the first attempt only"


def test_always_fails(request):
    add_record_fields(request.node, operations=["ADD"])
    assert False, "broken"
"""


def run_flaky(tmp_path, *args: str) -> tuple[int, list[dict], str]:
    write(tmp_path / "test_flaky.py", FLAKY_TEST)
    proc = subprocess.run([sys.executable, "-m", "pytest", "test_flaky.py", "-q", "-p", "no:cacheprovider",
                           "-p", "harness.plugin", "--nncts-report", "report", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return proc.returncode, read_records(tmp_path / "report" / "outcomes.jsonl"), proc.stdout + proc.stderr


def test_a_test_passing_on_a_retry_is_recorded_once_as_flaky(tmp_path):
    code, records, out = run_flaky(tmp_path, "--retries", "2")
    assert code == 1, out  # test_always_fails still fails
    by_name = {r["id"].rsplit("::", 1)[-1]: r for r in records}
    assert len(records) == 2, records  # no record for the intermediate attempts
    assert (by_name["test_flaky"]["outcome"], by_name["test_flaky"]["attempts"]) == ("flaky", 2)
    assert (by_name["test_always_fails"]["outcome"], by_name["test_always_fails"]["attempts"]) == ("failed", 3)
    assert totals(records)["flaky"] == 1
    assert "expectations: 0 known failure(s), 0 unexpected pass(es), 1 flaky" in out


def test_without_retries_the_flaky_test_fails(tmp_path):
    code, records, out = run_flaky(tmp_path, "-k", "not always")
    assert code == 1, out
    assert [(r["outcome"], r.get("attempts")) for r in records] == [("failed", None)]


# --- required vs optional -----------------------------------------------------------------------

def outcomes(records) -> dict[str, set]:
    table: dict[str, set] = {}
    for i, r in records.items():
        table.setdefault(r["outcome"], set()).add(i)
    return table


def test_without_a_profile_a_declined_test_is_not_applicable(tmp_path):
    # sample-minimal supports ADD on TENSOR_FLOAT32 only: it declines the quantized ADD models
    code, records, out = run_cts(tmp_path, "--driver", "sample-minimal", *ADD_SELECTION)
    assert code == 0, out[-2000:]
    assert outcomes(records) == {"passed": {FLOAT_ADD}, "skipped": QUANT_ADD}
    r = records["V1_0/add_quant8/add_quant8"]
    assert (r["skip_kind"], r["declined"], r["required"]) == ("not_applicable", "unsupported_by_driver", False)


def test_the_feature_level_profile_fails_a_declined_test_the_driver_level_covers(tmp_path):
    code, records, out = run_cts(tmp_path, "--driver", "sample-minimal", *ADD_SELECTION, "--profile", "feature-level")
    assert code == 1, out[-2000:]
    assert outcomes(records) == {"passed": {FLOAT_ADD}, "failed": QUANT_ADD}
    r = records["V1_0/add_quant8/add_quant8"]
    assert (r["required"], r["declined"]) == (True, "unsupported_by_driver")
    assert r["message"].startswith("V1_0/add_quant8/add_quant8: required by profile feature-level: driver "
                                   "nncts-sample-minimal declines it (unsupported_by_driver: ")


def test_a_profile_file_requires_its_operations_and_level_only(tmp_path):
    # BATCH_TO_SPACE_ND came with NNAPI 1.1 (feature level 2); a level-1 driver declines it
    selection = ("--corpus", "cts/corpus/V1_1", "-k", "batch_to_space", "--driver",
                 "tests.test_expectations:sample_at_level_1")
    code, records, out = run_cts(tmp_path / "own", *selection, "--profile", "feature-level")
    assert code == 0 and records, out[-2000:]
    assert {(r["outcome"], r["skip_kind"], r["declined"]) for r in records.values()} == \
        {("skipped", "not_applicable", "feature_level")}
    level2 = write(tmp_path / "fl2.toml", 'name = "phone-2"\nfeature_level = 2\noperations = ["BATCH_TO_SPACE_ND"]\n')
    code, records, out = run_cts(tmp_path / "fl2", *selection, "--profile", str(level2))
    assert code == 1, out[-2000:]
    # the corpus's "_all_inputs_as_internal" variants feed the inputs through an ADD, which
    # this profile does not list: those stay optional
    internal = {i for i in records if i.endswith("_all_inputs_as_internal")}
    assert len(internal) == 6 and len(records) == 12
    assert {i: (r["outcome"], r["required"]) for i, r in records.items()} == \
        {i: ("skipped", False) if i in internal else ("failed", True) for i in records}
    assert all("required by profile phone-2: driver nncts-sample declines it (feature_level: " in r["message"]
               for i, r in records.items() if i not in internal)
    other = write(tmp_path / "conv.toml", 'feature_level = 2\noperations = ["CONV_2D"]\n')
    code, records, out = run_cts(tmp_path / "conv", *selection, "--profile", str(other))
    assert code == 0 and {r["skip_kind"] for r in records.values()} == {"not_applicable"}, out[-2000:]


def test_profile_rules_by_hand():
    """NNAPI levels: ADD since 1.0 (level 1), BATCH_TO_SPACE_ND since 1.1 (2), HARD_SWISH
    since 1.3 (4)."""
    fl = load_profile("feature-level")
    assert fl.requires(["ADD"], 1, None, driver_level=1)
    assert not fl.requires(["BATCH_TO_SPACE_ND"], 2, None, driver_level=1)
    assert not fl.requires(["BATCH_TO_SPACE_ND"], 1, None, driver_level=1)  # not in NNAPI at level 1
    assert fl.requires(["HARD_SWISH", "ADD"], 4, None, driver_level=7)
    assert not fl.requires([], None, None, driver_level=7)  # no feature level: never required
    assert not load_profile("none").requires(["ADD"], 1, None, driver_level=8)


def test_a_profile_file_restricts_operand_types_when_the_record_has_them(tmp_path):
    p = load_profile(str(write(tmp_path / "f.toml", 'feature_level = 3\noperand_types = ["TENSOR_FLOAT32"]\n')))
    assert p.name == "f"
    assert p.requires(["ADD"], 1, ["TENSOR_FLOAT32"], driver_level=1)
    assert not p.requires(["ADD"], 1, ["TENSOR_QUANT8_ASYMM"], driver_level=1)
    assert p.requires(["ADD"], 1, None, driver_level=1)


@pytest.mark.parametrize("text, expected", [
    ("feature_level = 9\n", "feature_level must be an integer from 1 to 8"),
    ("operations = []\n", "feature_level must be an integer from 1 to 8"),
    ('feature_level = 2\noperations = ["CONV2D"]\n', "operations: unknown name(s) CONV2D"),
    ('feature_level = 2\noperand_types = ["FLOAT64"]\n', "operand_types: unknown name(s) FLOAT64"),
    ("feature_level = 2\nlevel = 3\n", "unknown key(s) level"),
])
def test_a_malformed_profile_is_one_line_naming_the_file(tmp_path, text, expected):
    path = write(tmp_path / "p.toml", text)
    with pytest.raises(ValueError) as e:
        load_profile(str(path))
    assert str(e.value).startswith(f"{path}: ") and expected in str(e.value)
    with pytest.raises(ValueError, match="not a built-in profile"):
        load_profile("feature_level")


# --- the text summary -----------------------------------------------------------------------------

def test_summary_lists_expectations_and_declined_tests_apart():
    records = [{"id": "a", "outcome": "known_failure", "operations": ["ADD"]},
               {"id": "b", "outcome": "unexpected_pass", "operations": ["ADD"]},
               {"id": "c", "outcome": "flaky", "operations": ["CONV_2D"], "attempts": 2},
               {"id": "d", "outcome": "passed", "operations": ["CONV_2D"]},
               {"id": "e", "outcome": "skipped", "operations": ["ADD"], "skip_kind": "not_applicable",
                "declined": "unsupported_by_driver", "required": False},
               {"id": "f", "outcome": "failed", "operations": ["ADD"], "declined": "feature_level", "required": True}]
    lines = format_summary(records)
    assert any(x.split() == ["ADD", "0", "1", "1", "known_failure", "1,", "unexpected_pass", "1"] for x in lines)
    assert any(x.split() == ["CONV_2D", "1", "0", "0", "flaky", "1"] for x in lines)
    assert "total: 1 passed, 1 failed, 1 skipped (not_applicable 1)" in lines
    assert "expectations: 1 known failure(s), 1 unexpected pass(es), 1 flaky (passed on a retry)" in lines
    assert ("declined by the driver: 2 (feature_level 1, unsupported_by_driver 1), 1 of them required by the "
            "profile (failed), the rest not applicable") in lines
