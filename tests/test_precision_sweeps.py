"""The precision sweeps (``nncts precision``, ``precision/``): the cases come from the operation
table, the inputs cover what they claim, the judge follows AOSP's tolerance and leaves
undefined results alone, the sample driver passes every sweep, each planted fault of
tests/broken_drivers.py is caught and located (the record names the input range of its
error), the quick mode (CI) runs through the CLI in seconds, the page shows it in Chromium,
and a certify profile can require the suite.

Golden values come from hand calculation and float64 formulas (math / numpy), never from the
code under test."""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from markupsafe import escape

from harness.records import read_records
from harness.requirements import load_profile
from nncts.certify import verdict
from nncts.certify_suites import SuiteResult
from precision.cases import cases, float16_inputs, float32_sample, is_unary_elementwise, sweep_inputs
from precision.measure import judge, run_on_device, summarize, sweep_model, truth_of
from precision.ranges import float_bins, quant_bins
from reports import precision as page
from reports.run import SuiteDir
from reports.verdict import _label
from runtime import ops
from runtime.loader import load_driver
from runtime.nnapi import Device
from runtime.ops.base import registered
from runtime.precision.budgets import Budget
from runtime.types import OperationType, operand_dtype
from tests.browser import needs_chromium, rendered_dom

ROOT = Path(__file__).resolve().parents[1]
UNARY = {"ABS", "CAST", "DEQUANTIZE", "ELU", "EXP", "FLOOR", "HARD_SWISH", "LOG", "LOGISTIC", "NEG", "QUANTIZE",
         "RELU", "RELU1", "RELU6", "RSQRT", "SIN", "SQRT", "TANH"}
C = 5 * 2.0 ** -10   # AOSP's float16 atol = rtol


def _sweep(device: Device, case, mode: str = "full") -> dict:
    x = sweep_inputs(case, mode)
    tm = sweep_model(case, x)
    truth, budget = truth_of(case, tm)
    actual = run_on_device(tm, device)
    return summarize(case, mode, x, actual, truth, judge(case, tm, x, actual, truth, budget))


def _all(driver: str) -> dict[str, dict]:
    device = Device(load_driver(driver))
    return {c.id: _sweep(device, c) for c in cases()}


@pytest.fixture(scope="module")
def sample() -> dict[str, dict]:
    return _all("sample")


# --- the cases and their inputs ------------------------------------------------------------

def test_the_unary_elementwise_operations_are_read_off_the_table():
    found = {c.operation.name for c in cases()}
    assert found == UNARY
    ids = {c.id: c for c in cases()}
    # every TENSOR_FLOAT16 signature of them is swept exhaustively, every TENSOR_FLOAT32 one stratified
    for op in UNARY:
        for sig in ops.REGISTRY[OperationType[op]].signatures:
            t = sig.inputs[0].type.name
            if t == "TENSOR_FLOAT16" and not sig.outputs[0].type.name.startswith("TENSOR_QUANT"):
                types = t if sig.outputs[0].type == sig.inputs[0].type else f"{t}->{sig.outputs[0].type.name}"
                assert f"PRECISION/{op}/{types}/exhaustive" in ids
    assert dict(ids["PRECISION/ELU/TENSOR_FLOAT16/exhaustive"].params) == {1: 1.0}
    # a quantized operand under three quantizations; TANH's output the one NNAPI fixes
    relu = [c for c in cases() if c.id.startswith("PRECISION/RELU/TENSOR_QUANT8_ASYMM/")]
    assert [(c.pair, c.in_quant, c.out_quant) for c in relu] == [
        ("centred", (1 / 16, 128), (1 / 16, 128)), ("low", (1 / 64, 0), (1 / 64, 0)), ("wide", (1 / 2, 64), (1 / 2, 64))]
    assert ids["PRECISION/TANH/TENSOR_QUANT8_ASYMM/exhaustive-low"].out_quant == (1 / 128, 128)
    assert len(cases("quick")) < len(cases())


def test_an_operation_mixing_elements_is_not_unary_elementwise():
    row = ops.REGISTRY[OperationType.ABS]
    sig = row.signatures[0]
    assert is_unary_elementwise(row, sig)
    mixing = dataclasses.replace(row, execute=lambda ctx: [np.cumsum(ctx.value(0)).astype(ctx.value(0).dtype)])
    assert not is_unary_elementwise(mixing, sig)
    shuffling = dataclasses.replace(row, execute=lambda ctx: [ctx.value(0)[::-1].copy()])
    assert not is_unary_elementwise(shuffling, sig)


def test_the_inputs_cover_every_float16_pattern_and_every_float32_binade():
    x = float16_inputs()
    assert len(np.unique(x.view(np.uint16))) == 65536
    f32 = float32_sample()
    counts = np.bincount(float_bins(f32).index, minlength=len(float_bins(f32).labels))
    labels = float_bins(f32).labels
    # 2 x (254 binades + subnormals + zero + infinity) + NaN
    assert len(labels) == 2 * (254 + 3) + 1 and (counts > 0).all()
    binades = [i for i, lab in enumerate(labels) if "[" in lab or "subnormal" in lab]
    assert min(counts[binades]) >= 4 + 12 - 1   # edges and 12 draws (a draw may equal an edge)
    assert counts[labels.index("-0")] == counts[labels.index("+0")] == counts[labels.index("NaN")] == 1
    quick = float32_sample("quick")
    assert (np.bincount(float_bins(quick).index, minlength=len(labels)) > 0).all()
    q16 = float16_inputs("quick")
    assert np.isinf(q16).sum() == 2 and (np.bincount(float_bins(q16).index, minlength=67) > 0).all()


def test_bins_follow_the_real_line():
    x = np.array([-np.inf, -100.0, -1.5, -2.0 ** -140, -0.0, 0.0, 2.0 ** -149, 1.0, 1.99, 64.0, 3e38, np.inf, np.nan],
                 np.float32)
    b = float_bins(x)
    assert [b.labels[i] for i in b.index] == [
        "-inf", "-[64, 128)", "-[1, 2)", "-subnormal", "-0", "+0", "subnormal", "[1, 2)", "[1, 2)", "[64, 128)",
        "[2^127, 2^128)", "+inf", "NaN"]
    assert list(b.index[:-1]) == sorted(b.index[:-1])
    q = quant_bins(np.array([0, 15, 16, 255], np.uint8), 1 / 16, 128)
    assert [q.labels[i] for i in q.index] == ["[-8, -7)", "[-8, -7)", "[-7, -6)", "[7, 8)"]


# --- the judge ------------------------------------------------------------------------------

def _judged(case_id: str, inputs, actual):
    case = next(c for c in cases() if c.id == case_id)
    x = np.asarray(inputs, operand_dtype(case.in_type))
    tm = sweep_model(case, x)
    truth, _ = truth_of(case, tm)
    return judge(case, tm, x, np.asarray(actual, tm.main.operands[-1].data.dtype), truth)


def test_the_judge_by_hand():
    # float32 -> float16: 70000 rounds to inf (correct), 65519 to 65504; a driver saturating 70000 to
    # 65504 is off by 4496 > 5/1024 * (1 + 70000); NaN is not judged
    right = _judged("PRECISION/CAST/TENSOR_FLOAT32->TENSOR_FLOAT16/stratified", [1.0, 70000.0, 65519.0, np.nan],
                    [1.0, np.inf, 65504.0, np.nan])
    assert list(right.failing) == [False] * 4 and list(right.undefined) == [False, False, False, True]
    assert right.error[2] == pytest.approx(15 / 32)    # |65504 - 65519| / ulp 32 in float16
    wrong = _judged("PRECISION/CAST/TENSOR_FLOAT32->TENSOR_FLOAT16/stratified", [70000.0], [65504.0])
    assert list(wrong.failing) == [True]
    # float16 EXP(10): e^10 = 22026.4658; float16 spacing in [2^14, 2^15) is 16, the nearest is 22032
    e = _judged("PRECISION/EXP/TENSOR_FLOAT16/exhaustive", [10.0], [22032.0])
    assert e.error[0] == pytest.approx((22032 - math.exp(10)) / 16)
    # float -> TENSOR_INT32 beyond 2^31 and NaN are undefined in C++: not judged
    cast = _judged("PRECISION/CAST/TENSOR_FLOAT32->TENSOR_INT32/stratified", [2.0 ** 31, -2.0 ** 31, 2.5, np.nan],
                   [0, -2 ** 31, 2, 0])
    assert list(cast.undefined) == [True, False, False, True] and not cast.failing.any()
    # quantized outputs: one quantum off passes, two fail (AOSP)
    q = _judged("PRECISION/RELU/TENSOR_QUANT8_ASYMM/exhaustive-centred", [0, 200, 200], [128, 201, 202])
    assert list(q.error) == [0, 1, 2] and list(q.failing) == [False, False, True]


# --- the sample driver and the faults -----------------------------------------------------

def test_the_sample_driver_passes_every_sweep(sample):
    assert len(sample) == len(cases())
    assert {k: r["failing"] for k, r in sample.items() if r["failing"]} == {}
    log16 = sample["PRECISION/LOG/TENSOR_FLOAT16/exhaustive"]
    # not judged: the 2,046 NaNs and the 31,744 negative non-zero numbers (LOG(-0) = -inf is judged)
    assert log16["undefined"] == 2046 + (32768 - 1 - 1023) and log16["judged"] + log16["undefined"] == 65536
    # float16 results computed in float64 and rounded once: correctly rounded
    assert all(r["max"] <= 0.5 for k, r in sample.items() if k.endswith("TENSOR_FLOAT16/exhaustive"))
    # the reference's own float32 path is within every budget the table declares (issue 23: where
    # it is not, the budget or the kernel is wrong; ELU, LOGISTIC and HARD_SWISH were)
    assert {k: r["over_ranges"] for k, r in sample.items() if r["grade"] == "over budget"} == {}


def _only_failing(records: dict[str, dict]) -> list[str]:
    return sorted(k for k, r in records.items() if r["failing"])


def test_sin_losing_accuracy_past_64_is_caught_and_located(sample):
    found = _all("tests.broken_drivers:SinLosesAccuracyPast64")
    case = "PRECISION/SIN/TENSOR_FLOAT32/stratified"
    assert _only_failing(found) == [case]
    r = found[case]
    assert abs(r["failing_nearest_zero"]) > 64 and r["failing"] > 1000
    assert all("[2^127, 2^128)" in run for run in r["fail_ranges"]) and len(r["fail_ranges"]) == 2
    # below |x| = 64 the error is the sample's, bin by bin
    h, s = r["hist"], sample[case]["hist"]
    near = [i for i, lab in enumerate(h["labels"]) if not re.search(r"\[(64|128|256|512|1024|2048|4096|8192|16384|"
                                                                  r"32768|65536|2\^\d+), ", lab) and lab != "NaN"
            and "inf" not in lab]
    assert [h["max"][i] for i in near] == [s["max"][i] for i in near]


def test_float16_exp_overflowing_from_10_is_caught_and_located():
    found = _all("tests.broken_drivers:Float16ExpOverflowsFrom10")
    case = "PRECISION/EXP/TENSOR_FLOAT16/exhaustive"
    assert _only_failing(found) == [case]
    r = found[case]
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float64)
    # overflowing wrongly: x >= 10 whose e^x still rounds to a finite float16 (below 65520)
    with np.errstate(over="ignore", invalid="ignore"):
        wrong = x[(x >= 10) & (np.exp(x) < 65520)]
    assert r["failing"] == len(wrong) == 140
    assert r["failing_span"] == [10.0, float(wrong.max())] == [10.0, 11.0859375]
    assert r["fail_ranges"] == ["[8, 16)"]


def test_held_out_float16_tanh_saturating_early_is_caught_and_located():
    found = _all("tests.broken_drivers:Float16TanhSaturatesEarly")
    case = "PRECISION/TANH/TENSOR_FLOAT16/exhaustive"
    assert _only_failing(found) == [case]
    r = found[case]
    # 1 - tanh(x) > C (1 + tanh(x)) while tanh(x) < (1 - C) / (1 + C): x < atanh((1 - C) / (1 + C)) = 2.6608
    edge = math.atanh((1 - C) / (1 + C))
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float64)
    wrong = x[(np.abs(x) >= 2) & (np.abs(x) < edge)]
    assert r["failing"] == len(wrong) == 678
    assert r["failing_span"] == [-2.66015625, 2.66015625] and abs(r["failing_nearest_zero"]) == 2.0
    assert r["fail_ranges"] == ["-[2, 4)", "[2, 4)"]


def test_held_out_float16_rsqrt_flushing_subnormals_is_caught_and_located():
    found = _all("tests.broken_drivers:Float16RsqrtFlushesSubnormals")
    case = "PRECISION/RSQRT/TENSOR_FLOAT16/exhaustive"
    assert _only_failing(found) == [case]
    r = found[case]
    # the 1023 positive subnormals (the negative ones have no real square root: not judged)
    assert r["failing"] == 1023 and r["fail_ranges"] == ["subnormal"]
    assert r["failing_span"] == [2.0 ** -24, 2.0 ** -14 - 2.0 ** -24]
    assert r["worst"][0]["bits"] == "0x0001" and r["worst"][0]["truth"] == 4096.0


def test_held_out_log_inaccurate_near_one_is_within_tolerance_and_over_its_budget():
    case = next(c for c in cases() if c.id == "PRECISION/LOG/TENSOR_FLOAT32/stratified")
    row = dataclasses.replace(ops.REGISTRY[OperationType.LOG], error_budget=lambda ctx: Budget(4.0, source="test"))
    with registered(row):
        good = _sweep(Device(load_driver("sample")), case)
        bad = _sweep(Device(load_driver("tests.broken_drivers:LogInaccurateNearOne")), case)
    assert good["failing"] == bad["failing"] == 0
    assert good["grade"] == "within budget" and bad["grade"] == "over budget"
    assert bad["over_ranges"] == ["[0.5, 1) .. [1, 2)"] and bad["budget"] == 4.0
    # worst at the float after 1: log(1 + 2^-23) is just below 2^-23 (ULP 2^-47); the fault gives 0: 2^24 ULP off
    w = bad["worst"][0]
    assert w["bits"] == "0x3f800001" and w["actual"] == 0.0
    assert w["error"] == pytest.approx(math.log1p(2.0 ** -23) / 2.0 ** -47, rel=1e-5)


# --- the CLI (the CI's quick sweep), the records, the page ----------------------------------

_PROBE = """<script>
const out = [];
for (const e of document.querySelectorAll('.failed, .passed, .over')) {
  out.push([e.textContent.replace(/\\s+/g, ' ').trim(), getComputedStyle(e).color]);
}
const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("precision") / "report"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "precision", "--driver",
                           "tests.broken_drivers:Float16ExpOverflowsFrom10", "--sweep", "quick", "-n", "0",
                           "--report-dir", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    return proc, out, time.monotonic() - start


def test_the_quick_sweep_runs_through_the_cli_in_seconds(quick_run):
    proc, out, seconds = quick_run
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert seconds < 60   # ~6 s on 2 cores: the CI's sweep
    records = {r["id"]: r for r in read_records(out / "outcomes.jsonl", strict=True)}
    assert len(records) == len(cases("quick"))
    failed = [i for i, r in records.items() if r["outcome"] == "failed"]
    assert failed == ["PRECISION/EXP/TENSOR_FLOAT16/exhaustive"]
    r = records[failed[0]]
    assert r["suite"] == "precision" and r["mode"] == "quick" and r["operation_under_test"] == "EXP"
    assert r["sweep"]["fail_ranges"] == ["[8, 16)"] and r["sweep"]["failing_span"][0] >= 10.0
    assert "at inputs in [8, 16)" in r["message"]
    # the worst inputs replay: one FAIL line per failing element, exit 1
    argv = r["sweep"]["replay"]
    assert argv[:3] == ["python", "-m", "precision"]
    rep = subprocess.run([sys.executable, *argv[1:3], "--driver", "tests.broken_drivers:Float16ExpOverflowsFrom10",
                          *argv[3:]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 1 and rep.stdout.count("FAIL") == sum(w["failing"] for w in r["sweep"]["worst"])
    bad = subprocess.run([sys.executable, "-m", "nncts.cli", "precision", "--sweep", "all"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--sweep" in bad.stderr


@needs_chromium
def test_the_page_locates_the_fault_in_chromium(quick_run, tmp_path):
    _, out, _ = quick_run
    dom = rendered_dom(tmp_path, out / "precision.html")
    assert "nncts precision sweeps: driver tests.broken_drivers:Float16ExpOverflowsFrom10" in dom
    section = dom[dom.index('id="sweep-PRECISION-EXP-TENSOR-FLOAT16-exhaustive"'):]
    section = section[:section.index("</section>")]
    assert "Beyond the tolerance at inputs in [8, 16)" in section
    assert "python -m precision --driver tests.broken_drivers:Float16ExpOverflowsFrom10 --case " \
           "PRECISION/EXP/TENSOR_FLOAT16/exhaustive --mode quick --input" in section
    assert "<svg" in section and "worst: [8, 16)" in section
    probe = tmp_path / "probe.html"
    probe.write_text((out / "precision.html").read_text().replace("</body>", _PROBE + "</body>"))
    colours = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', rendered_dom(tmp_path, probe), re.S).group(1)
                         .replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    seen = {text: colour for text, colour in colours}
    failing = next(r for r in read_records(out / "outcomes.jsonl") if r["outcome"] == "failed")["sweep"]["failing"]
    assert seen[f"\u2717 {failing} beyond tolerance"] == "rgb(187, 0, 0)"
    assert seen["\u2713 within tolerance"] == "rgb(0, 119, 0)"
    index = rendered_dom(tmp_path, out / "index.html")
    assert 'id="precision"' in index and 'href="precision.html"' in index and "1 beyond AOSP's tolerance" in index


def test_the_page_shows_hostile_records_as_text(tmp_path):
    records = [{"id": "PRECISION/<script>x</script>", "outcome": "failed", "suite": "precision",
                "sweep": {"operation": "<b>EXP</b>", "max": "lots", "hist": {"labels": ["<i>", 3], "max": ["x", 1.0],
                                                                           "n": [1]}, "worst": [{"input": {"a": 1}}],
                          "replay": ["python", "-m", "precision", "--case", "a'b"], "fail_ranges": "[1, 2)"}},
               {"id": "PRECISION/X/Y/z", "outcome": "skipped", "suite": "precision", "sweep": 7}]
    path = page.write_page([SuiteDir(tmp_path, records, {"driver": "d<river"})], tmp_path)
    text = path.read_text()
    assert "<script>x" not in text and "<b>EXP" not in text and "&lt;b&gt;EXP&lt;/b&gt;" in text
    assert "d&lt;river" in text and str(escape("--case 'a'\"'\"'b'")) in text


# --- certification ----------------------------------------------------------------------------

def test_a_certify_profile_can_require_the_precision_suite(tmp_path):
    profile = tmp_path / "strict.toml"
    profile.write_text('feature_level = 4\nsuites = ["precision"]\n')
    assert load_profile(str(profile)).suites == {"precision"}
    bad = tmp_path / "bad.toml"
    bad.write_text('feature_level = 4\nsuites = ["nope"]\n')
    with pytest.raises(ValueError, match="suites: unknown suite 'nope'"):
        load_profile(str(bad))

    def doc(profile_spec: str) -> dict:
        args = argparse.Namespace(quick=False, skip=[], fuzz_seconds=60, driver="d", driver_process=False,
                                  profile=profile_spec, baseline=None, modes="default")
        return verdict([SuiteResult("cts", "passed"), SuiteResult("precision", "failed", failures_total=2)], args)

    loose, strict = doc("feature-level"), doc(str(profile))
    assert loose["certified"] and not strict["certified"]
    assert loose["reasons"] == ["precision: failed: 2 failing (not required: profile feature-level does not name it)"]
    entry = next(s for s in loose["suites"] if s["suite"] == "precision")
    assert entry["required"] is False and _label(entry) == "failed (not required)"
    assert next(s for s in strict["suites"] if s["suite"] == "precision")["required"] is True
