"""The CTS's precision grade (issue 23): each float output's error in ULP against the float64
truth, graded by the composed error budgets beside the AOSP verdict; ``--precision strict``
(or a profile's ``precision = "strict"``) makes an over-budget output a failure.

The fault: ``tests.broken_drivers.ThreeUlpsHighAdd`` (float32 ADD three ULP high: inside
AOSP's tolerance of 1e-5 + 5 ULP, over ADD's 1.5 ULP budget).
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from harness.locations import CORPUS
from harness.modes import BASE
from harness.records import precision_summary
from harness.requirements import load_profile
from harness.runner import run_test_model
from reports.run import write_run_report
from runtime.loader import load_driver
from runtime.nnapi import Device
from runtime.testing.test_model import iter_corpus, load_spec
from tests.broken_drivers import ThreeUlpsHighAdd
from tests.cts_run import ROOT, run_cts

V1_0 = CORPUS / "V1_0"


@pytest.fixture(scope="module")
def three_ulps_high():
    return Device(ThreeUlpsHighAdd())


@pytest.fixture(scope="module")
def sample():
    return Device(load_driver("sample"))


def _float32_adds():
    return load_spec(V1_0 / "add.json.gz")


def test_a_driver_three_ulps_high_passes_but_is_graded_over_budget(three_ulps_high):
    """Default (aosp): the float32 ADD models pass, graded over budget against ADD's 1.5
    ULP (the variations' helper ADDs of zero are exact: budget 0), the error 3 ULP within
    0.5 (the truth's own rounding)."""
    for tm in _float32_adds():
        outcome = run_test_model(tm, three_ulps_high, BASE, require_timing=False)
        assert outcome.status == "passed", outcome.message
        p = outcome.precision
        assert p["precision"] == "over budget" and p["ulp_budget"] == 1.5, (tm.name, p)
        assert 2.5 <= p["ulp_max"] <= 3.5, (tm.name, p)
        assert p["ulp_worst"].startswith("output 0 (TENSOR_FLOAT32) element [")


def test_strict_precision_fails_it_naming_output_element_ulp_and_budget(three_ulps_high):
    for tm in _float32_adds():
        outcome = run_test_model(tm, three_ulps_high, BASE, require_timing=False, precision="strict")
        assert outcome.status == "failed"
        assert "precision (strict): output 0 (TENSOR_FLOAT32) element [" in outcome.message
        assert "ULP, budget 1.5 ULP" in outcome.message and "over budget" in outcome.message


def test_the_sample_driver_is_within_budget_on_a_slice_of_the_cts(sample):
    """Every float test of the V1_0 corpus directory (base mode): passed and within budget,
    strict or not; the quantized ones carry no grade."""
    graded = 0
    for tm in iter_corpus([V1_0]):
        outcome = run_test_model(tm, sample, BASE, require_timing=False, precision="strict")
        assert outcome.status in ("passed", "skipped"), (tm.test_id, outcome.message)
        if outcome.precision:
            assert outcome.precision["precision"] == "within budget", (tm.test_id, outcome.precision)
            graded += 1
    assert graded >= 40


def test_precision_summary_counts_grades_and_keeps_the_worst_per_operation():
    records = [{"id": "a", "precision": "within budget", "ulp_max": 0.5, "ulp_budget": 9.5,
                "operation_under_test": "CONV_2D", "mode": "sync", "ulp_worst": "output 0 ..."},
               {"id": "b", "precision": "over budget", "ulp_max": 3.0, "ulp_budget": 1.5,
                "operation_under_test": "ADD", "mode": "sync"},
               {"id": "c", "precision": "over budget", "ulp_max": None, "operation_under_test": "ADD",
                "mode": "burst"},
               {"id": "d", "operations": ["ADD"]}]
    s = precision_summary(records)
    assert s["grades"] == {"within budget": 1, "over budget": 2, "no budget": 0}
    assert s["per_operation"]["ADD"]["over budget"] == 2
    assert (s["per_operation"]["ADD"]["worst"], s["per_operation"]["ADD"]["id"]) == (None, "c")
    assert s["per_operation"]["CONV_2D"]["worst"] == 0.5
    assert precision_summary([{"id": "d", "operations": ["ADD"]}]) == {}


def test_a_profile_may_require_strict_precision(tmp_path):
    good, bad = tmp_path / "strict.toml", tmp_path / "bad.toml"
    good.write_text('feature_level = 4\nprecision = "strict"\n')
    bad.write_text('feature_level = 4\nprecision = "exact"\n')
    assert load_profile(str(good)).precision == "strict"
    assert load_profile("feature-level").precision == "aosp"
    with pytest.raises(ValueError, match="precision must be one of aosp, strict, got 'exact'"):
        load_profile(str(bad))


def test_the_cts_records_the_grade_and_a_strict_profile_fails_the_run(tmp_path):
    """Through pytest: records carry the grade and the ULP figures; the run passes by
    default and fails under a profile requiring strict precision."""
    args = ("--driver", "tests.broken_drivers:ThreeUlpsHighAdd", "--corpus", str(V1_0), "-k", "add and not quant8")
    code, records, out = run_cts(tmp_path / "aosp", *args)
    assert code == 0, out[-2000:]
    write_run_report([tmp_path / "aosp" / "report"], tmp_path / "page", "precision")
    page = (tmp_path / "page" / "index.html").read_text()
    assert 'id="cts-precision-table"' in page and "<td>ADD</td>" in page
    graded = [r for r in records.values() if "precision" in r and r["operation_under_test"] == "ADD"]
    assert graded and all(r["precision"] == "over budget" and r["ulp_budget"] == 1.5 for r in graded)
    assert all(r["precision"] == "within budget" for r in records.values()
               if "precision" in r and r["operation_under_test"] != "ADD")
    profile = tmp_path / "strict.toml"
    profile.write_text('feature_level = 4\nprecision = "strict"\n')
    code, records, out = run_cts(tmp_path / "strict", *args, "--profile", str(profile))
    assert code == 1
    assert all(r["outcome"] == "failed" and "precision (strict)" in r["message"]
               for r in records.values() if r.get("precision") == "over budget")
    assert all(r["outcome"] == "passed" for r in records.values() if r.get("precision") == "within budget")
    assert np.isfinite([r["ulp_max"] for r in records.values() if "precision" in r]).all()


def test_the_option_is_in_the_help_and_a_bad_value_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "--precision {aosp,strict}" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--precision", "exact"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "invalid choice: 'exact'" in proc.stderr and len(proc.stderr.strip().splitlines()[-1]) < 300
