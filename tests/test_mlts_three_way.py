"""Three-way precision of MLTS models (mlts.three_way): the driver and the reference's own
float32 path against the float64 truth of the imported NNAPI model, TFLite beside them, the
"times worse than the reference" ratio (for float outputs the random graphs' definition,
runtime.precision.three_way), its grade (reports.mlts.precision_judgement), the page, the CSV
and the record fields.

Golden values: the hand-built two-operation model's truth and ULP errors are computed here
with numpy float64 and ``math.frexp`` (not with runtime.precision); the quantized figures
are hand-counted; the bound on the sample driver's ratio follows from the definition (the
sample driver computes the reference's float32 path bit for bit, so its error equals the
reference's at every element and ratio = max / max(max, 1) <= 1)."""
from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import math

import numpy as np
import pytest

from mlts import report
from mlts import three_way as tw
from mlts.accuracy import precision
from mlts.execute import run_imported
from mlts.tflite_import import FallbackStep, ImportedModel, Partition, TensorInfo, make_test_model
from reports.mlts import PRECISION_RATIO, judge_model, precision_judgement
from runtime import ops
from runtime.precision.three_way import DEFINITION as FLOAT_DEFINITION
from runtime.drivers.sample import SampleDevice
from runtime.executor import execute
from runtime.nnapi.device import Device, get_devices
from runtime.testing import test_model as tmodel
from runtime.types import OperandLifeTime as L
from runtime.types import OperandType as T
from runtime.types import OperationType

HAVE_MLTS = all(importlib.util.find_spec(m) is not None for m in ("tflite", "ai_edge_litert"))
needs_mlts = pytest.mark.skipif(not HAVE_MLTS, reason="needs the mlts extra (tflite, ai-edge-litert)")
#: A small bundled float model with CONV_2D (MobileNet v1 0.25, 128x128: the truth in ~0.03 s).
SMALL = "mobilenet_v1_0.25_128"


class PlantedConvError(SampleDevice):
    """The sample driver with every float32 CONV_2D result 1000 ULP too high
    (``r + 1000 * spacing(r)``): an error far beyond the reference's own float32 rounding."""

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        conv = table[OperationType.CONV_2D]

        def planted(ctx):
            return [r + np.float32(1000) * np.spacing(r) if r.dtype == np.float32 else r for r in conv.execute(ctx)]
        table[OperationType.CONV_2D] = dataclasses.replace(conv, execute=planted)
        return execute(model, request, table)


@pytest.fixture(scope="module")
def small():
    """(spec, imported model, inputs) of :data:`SMALL`."""
    from mlts.models import find_models
    from mlts.tflite_import import import_tflite
    spec = find_models([SMALL])[0]
    return spec, import_tflite(spec.path), spec.make_inputs()


# ------------------------------------------------------------------ the hand-built two-op model

def _ulp32(t: float) -> float:
    """ULP of the real ``t`` in float32: 2^(max(floor(log2 |t|), -126) - 23) (math.frexp:
    |t| = m 2^e with m in [0.5, 1), so floor(log2 |t|) = e - 1)."""
    if t == 0:
        return 2.0 ** -149
    _, e = math.frexp(abs(t))
    return 2.0 ** (max(e - 1, -126) - 23)


def _ulps(actual, truth) -> np.ndarray:
    return np.array([abs(float(a) - float(t)) / _ulp32(float(t)) for a, t in zip(np.ravel(actual), np.ravel(truth))])


def _two_op_model(w: np.ndarray, b: np.ndarray, digest: str) -> ImportedModel:
    """x [2, 3] -> FULLY_CONNECTED(w [4, 3], b [4], NONE) -> h [2, 4] -> LOGISTIC -> y [2, 4],
    as an imported model of one NNAPI partition (TFLite tensors 0 x, 1 h, 2 y)."""
    def operand(t, dims, lifetime, data=None):
        return tmodel.TestOperand(t, list(dims), 0.0, 0, lifetime, 0, False, None, data)
    operands = [operand(T.TENSOR_FLOAT32, [2, 3], L.SUBGRAPH_INPUT),
                operand(T.TENSOR_FLOAT32, [4, 3], L.CONSTANT_COPY, w),
                operand(T.TENSOR_FLOAT32, [4], L.CONSTANT_COPY, b),
                operand(T.INT32, [], L.CONSTANT_COPY, np.array(0, np.int32)),
                operand(T.TENSOR_FLOAT32, [2, 4], L.TEMPORARY_VARIABLE),
                operand(T.TENSOR_FLOAT32, [2, 4], L.SUBGRAPH_OUTPUT)]
    sg = tmodel.TestSubgraph(operands, [tmodel.TestOperation(OperationType.FULLY_CONNECTED, [0, 1, 2, 3], [4]),
                                        tmodel.TestOperation(OperationType.LOGISTIC, [4], [5])], [0], [5])
    part = Partition(0, [0, 1], make_test_model("two-ops", sg), [0], [2], {0: 0, 1: 4, 2: 5}, [0, 1])
    f32 = np.dtype(np.float32)
    tensors = [TensorInfo(0, "x", (2, 3), "FLOAT32", f32), TensorInfo(1, "h", (2, 4), "FLOAT32", f32),
               TensorInfo(2, "y", (2, 4), "FLOAT32", f32)]
    return ImportedModel("two-ops", None, digest, tensors, [tensors[0]], [tensors[2]], [part], [], {}, {})


def test_two_op_model_ulps_match_numpy_float64():
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (2, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, 4).astype(np.float32)
    imported = _two_op_model(w, b, "hand-two-op")
    # the truth, computed here in float64 from the float32 values
    truth = 1.0 / (1.0 + np.exp(-(x.astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64))))
    # a "driver": the same chain in numpy float32 (rounded after the product, the sum and the logistic)
    h32 = (x @ w.T + b).astype(np.float32)
    driver = (np.float32(1) / (np.float32(1) + np.exp(-h32))).astype(np.float32)

    answers = tw.imported_answers(imported, [x])
    assert answers.truth[0].dtype == np.float64
    np.testing.assert_allclose(answers.truth[0], truth, rtol=1e-13, atol=0)
    assert answers.reference[0].dtype == np.float32
    result = tw.three_way(imported, [x], [driver])
    (row,) = result["outputs"]
    d_ulps, r_ulps = _ulps(driver, truth), _ulps(answers.reference[0], truth)
    assert row["unit"] == "ULP" and row["dtype"] == "float32" and row["tflite"] is None
    # max / mean at the output's scale: |error| / ULP of max |truth|
    unit = _ulp32(float(np.abs(truth).max()))
    d_scaled = np.abs(driver.astype(np.float64) - truth) / unit
    r_scaled = np.abs(answers.reference[0].astype(np.float64) - truth) / unit
    assert row["driver"]["max"] == pytest.approx(d_scaled.max(), rel=1e-6)
    assert row["driver"]["mean"] == pytest.approx(d_scaled.mean(), rel=1e-6)
    assert row["reference"]["max"] == pytest.approx(r_scaled.max(), rel=1e-6)
    assert row["reference"]["mean"] == pytest.approx(r_scaled.mean(), rel=1e-6)
    # at each element's own magnitude
    assert row["driver"]["max_elementwise"] == pytest.approx(d_ulps.max(), rel=1e-6)
    assert row["reference"]["max_elementwise"] == pytest.approx(r_ulps.max(), rel=1e-6)
    # correctly rounded float32 results of a short chain: within a few ULP, some not exact
    assert 0 < r_ulps.max() < 4 and d_ulps.max() < 4
    assert row["ratio"] == pytest.approx(d_scaled.max() / max(r_scaled.max(), 1.0), rel=1e-6)
    assert result["ratio"] == row["ratio"]
    assert result["definition"].startswith(FLOAT_DEFINITION) and "quanta" in result["definition"]

    # the sample driver runs the reference's path: the same errors, ratio <= 1
    ran = run_imported(imported, get_devices(["sample"])[0], [x]).outputs
    same = tw.three_way(imported, [x], ran)["outputs"][0]
    assert same["driver"] == same["reference"] and same["ratio"] <= 1.0


def test_a_cpu_fallback_step_keeps_the_truth_in_float64():
    # the two-op partition, then a CPU fallback step multiplying by 3 (TFLite tensor 3)
    rng = np.random.default_rng(11)
    x = rng.uniform(-2, 2, (2, 3)).astype(np.float32)
    w, b = rng.uniform(-1, 1, (4, 3)).astype(np.float32), np.zeros(4, np.float32)
    imported = _two_op_model(w, b, "hand-fallback")
    y = imported.tensors[2]
    z = TensorInfo(3, "z", (2, 4), "FLOAT32", np.dtype(np.float32))
    step = FallbackStep(1, 2, "TIMES3", [2], [3], [y], [z], {}, lambda vals, _step: [vals[0] * 3], "test kernel")
    imported = dataclasses.replace(imported, tensors=imported.tensors + [z], outputs=[z],
                                   steps=imported.steps + [step])
    truth = 3.0 / (1.0 + np.exp(-(x.astype(np.float64) @ w.astype(np.float64).T)))
    answers = tw.imported_answers(imported, [x])
    assert answers.truth[0].dtype == np.float64 and answers.reference[0].dtype == np.float32
    np.testing.assert_allclose(answers.truth[0], truth, rtol=1e-13, atol=0)
    assert np.abs(answers.reference[0] - truth).max() > 0     # the reference rounded to float32 twice


def test_quantized_and_integer_outputs_hand_counted():
    # uint8: truth [10, 20, 30, 40]; driver off by 2, 0, 1, 0 quanta; reference by 0, 1, 0, 0
    truth = np.array([10, 20, 30, 40], np.uint8)
    row = tw.output_precision(0, "q", np.uint8, truth, np.array([10, 19, 30, 40], np.uint8),
                              np.array([12, 20, 31, 40], np.uint8), np.array([10, 20, 30, 43], np.uint8))
    assert row["unit"] == "quanta"
    assert (row["driver"]["max"], row["driver"]["mean"]) == (2.0, 0.75)
    assert (row["reference"]["max"], row["reference"]["mean"]) == (1.0, 0.25)
    assert row["ratio"] == 2.0 and row["tflite_ratio"] == 3.0 and row["driver_vs_tflite"] == pytest.approx(2 / 3)
    assert row["driver"]["max_elementwise"] is None
    # int8 below zero: |-128 - (-125)| = 3 quanta, no wrap-around
    i8 = tw.output_precision(0, "s", np.int8, np.array([-125], np.int8), np.array([-125], np.int8),
                             np.array([-128], np.int8))
    assert i8["driver"]["max"] == 3.0 and i8["ratio"] == 3.0
    # int32: mismatching elements
    ints = tw.output_precision(1, "i", np.int32, np.array([1, 2, 3]), np.array([1, 2, 3]), np.array([1, 5, 3]))
    assert ints["unit"] == "mismatches" and ints["driver"]["max"] == 1.0 and ints["ratio"] == 1.0
    # a NaN where the truth is finite: infinite error, counted, graded bad
    nan = tw.output_precision(0, "f", np.float32, np.array([1.0, 2.0]), np.float32([1, 2]), np.float32([1, np.nan]))
    assert nan["driver"]["nonfinite"] == 1 and nan["driver"]["max"] is None and nan["ratio"] is None
    judged = precision_judgement({"outputs": [nan], "ratio": nan["ratio"]})
    assert judged["level"] == "bad" and "1 elements NaN or infinite" in judged["text"]


def test_float_outputs_take_the_worst_error_at_the_outputs_scale_for_driver_and_tflite():
    # truth [1, 2^-10]: one ULP of the output's scale (1.0) in float32 is 2^-23
    u = 2.0 ** -23
    truth = np.array([1.0, 2.0 ** -10])
    reference = np.float32([1.0, 2.0 ** -10 + u])        # 0 and 1 ULP at scale
    driver = np.float32([1.0 + 3 * u, 2.0 ** -10])       # 3 and 0
    tflite = np.float32([1.0, 2.0 ** -10 - 4 * u])       # 0 and 4
    row = tw.output_precision(0, "f", np.float32, truth, reference, driver, tflite)
    assert (row["driver"]["max"], row["driver"]["mean"]) == (3.0, 1.5)
    assert (row["reference"]["max"], row["reference"]["mean"]) == (1.0, 0.5)
    assert (row["tflite"]["max"], row["tflite"]["mean"]) == (4.0, 2.0)
    assert row["ratio"] == 3.0 and row["tflite_ratio"] == 4.0 and row["driver_vs_tflite"] == 0.75
    # at 2^-10's own magnitude one float32 ULP is 2^-33: the same errors weigh 2^10 times more
    assert row["reference"]["max_elementwise"] == 1024.0 and row["tflite"]["max_elementwise"] == 4096.0
    assert row["driver"]["max_elementwise"] == 3.0
    with pytest.raises(ValueError, match="float type"):
        tw.errors(driver, truth, np.float32)


def test_times_worse_floors_the_reference_at_one_unit():
    assert tw.times_worse(0.5, 0.1) == 0.5          # within 1 ULP is never worse than 1x
    assert tw.times_worse(30.0, 3.0) == 10.0
    assert tw.times_worse(None, 3.0) is None and tw.times_worse(3.0, None) is None


def test_a_truth_that_cannot_be_computed_is_recorded_not_raised():
    imported = _two_op_model(np.zeros((4, 3), np.float32), np.zeros(4, np.float32), "hand-bad-input")
    out = precision(imported, [np.zeros((5, 5), np.float32)], [np.zeros((2, 4), np.float32)])
    assert out["outputs"] == [] and out["ratio"] is None and out["error"].startswith("ValueError: two-ops: input 0")
    assert precision_judgement(out)["level"] == "none"


# ------------------------------------------------------------------ a bundled model, end to end

@needs_mlts
def test_sample_driver_is_as_precise_as_the_reference_and_tflite_is_graded(small, tmp_path):
    from mlts.accuracy import check_accuracy
    spec, imported, inputs = small
    acc = check_accuracy(spec, imported, get_devices(["sample"])[0], inputs, isolate_layers=False)
    three = acc["three_way"]
    assert three["truth_s"] < 5.0           # the float64 truth of a small MobileNet: well under a second
    for row in three["outputs"]:
        assert row["unit"] == "ULP" and row["driver"] == row["reference"]
        # the bound asserted: ratio <= 1 (identical errors; = 1 once the reference is >= 1 ULP off)
        assert row["ratio"] <= 1.0
        assert row["reference"]["max"] > 1.0 and row["ratio"] == 1.0  # a deep float32 network is > 1 ULP off
        assert row["tflite"]["max"] > 0 and row["tflite_ratio"] > 0
    assert three["tflite"].startswith("ai-edge-litert") and "builtin" in three["tflite"]
    judged = precision_judgement(three)
    assert judged["level"] == "good" and judged["short"] == "1\u00d7 reference"

    # the record fields reach mlts.json (the judgement), the CSV and the page
    doc = {"title": "t", "complete": True, "driver": {"spec": "sample"}, "models": [
        {"name": SMALL, "kind": "classifier", "source": "s", "path": str(spec.path), "errors": [], "mapping": None,
         "compile": None, "latency": None, "accuracy": acc}]}
    doc = json.loads(json.dumps(doc, default=report._json_default))
    report.write_report(doc, tmp_path)
    saved = json.loads((tmp_path / "mlts.json").read_text())
    assert saved["models"][0]["judgement"]["precision"]["ratio"] == 1.0
    assert saved["models"][0]["accuracy"]["three_way"]["outputs"][0]["ratio"] == 1.0
    (row,) = list(csv.DictReader(open(tmp_path / "mlts.csv", encoding="utf-8")))
    assert float(row["precision_ratio"]) == 1.0 and row["precision_level"] == "good"
    assert float(row["tflite_precision_ratio"]) == pytest.approx(three["tflite_ratio"])
    page = (tmp_path / "mlts.html").read_text()
    assert f'id="precision-{SMALL}"' in page and 'class="precision"' in page and "1\u00d7 reference" in page


@needs_mlts
def test_planted_conv_error_is_far_worse_than_the_reference(small):
    spec, imported, inputs = small
    planted = run_imported(imported, Device(PlantedConvError()), inputs).outputs
    three = tw.three_way(imported, inputs, planted)
    (row,) = three["outputs"]
    # measured 1336x (max) and 1055x (mean), at the output's scale: 1000 ULP per CONV_2D, propagated
    assert row["ratio"] > 100 and row["driver"]["mean"] > 100 * row["reference"]["mean"]
    assert row["driver"]["max"] > 100 * row["reference"]["max"]
    judged = precision_judgement(three)
    assert judged["level"] == "warn" and f"more than {PRECISION_RATIO:g}" in judged["text"]
    model = {"name": SMALL, "errors": [], "accuracy": {"within_tolerance": True, "outputs": [], "three_way": three}}
    assert judge_model(model)["precision"]["level"] == "warn"
    page = report.render_html({"title": "t", "complete": True, "models": [{**model, "kind": "classifier"}]})
    assert '<td class="num warn">' in page
