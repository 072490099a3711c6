"""The MLTS run document (``mlts.json``, what :mod:`mlts.run` builds and :mod:`mlts.report`
renders): its schema, the status of a model and the run's totals, the driver/TFLite latency
ratios and their better/worse markers. Read by the run report (:mod:`reports.run`, one row
per MLTS directory) and by the MLTS page itself.

The run document (plain JSON-serializable dicts; :mod:`mlts.run` builds it, the
``nncts stress`` command builds one with stress outcomes only)::

    {"title": str, "generated": ISO time, "complete": bool (False while the run is going),
     "driver": {"spec": "sample", "name": ..., "version": ..., "feature_level": int, "type": ...},
     "environment": {"python": ..., "numpy": ..., "ai_edge_litert": ..., "tflite": ...,
                     "platform": ..., "cpu": ..., "cpu_count": int, ...}   (shown as given),
     "settings": {...}   (benchmark parameters, shown as given),
     "models": [MODEL, ...],
     "stress": [STRESS, ...] or None}

    MODEL = {"name": str, "kind": "classifier" | "face_detection" | "landmarks" | "sequence" | ...,
             "source": str, "path": str,
             "errors": [{"stage": "import" | "benchmark" | "tflite" | "accuracy" | ..., "message": str,
                         "traceback": str (optional)}],
             "mapping": {"operators": int, "mapped": int,
                         "nnapi_operations": {NNAPI operation: count},
                         "fallback": [{"index": int, "builtin": str, "reason": str}],
                         "folded": [{"index": int, "builtin": str}], "partitions": int} or None,
             "compile": {"no_cache_s": float, "save_s": float (first compilation into a fresh cache),
                         "with_cache_s": float or None (from the cache), "cache_files": int} or None,
             "latency": {"driver": {"sync" | "async" | "burst": STATS},
                         "tflite": {"xnnpack" | "builtin": STATS}} or None,
             "accuracy": ACCURACY or None}

    STATS = {"iterations": int, "warmup": int, "duration_s": float, "mean_ms": float, "std_ms": float,
             "min_ms": float, "p50_ms": float, "p90_ms": float, "p99_ms": float, "max_ms": float,
             "histogram": {"edges_ms": [n + 1 floats], "counts": [n ints]}}

    ACCURACY = {"within_tolerance": bool, "tolerance": {name: value},
                "outputs": [{"index": int, "name": str, "mse": float, "max_error": float,
                             "within_tolerance": bool}],
                "top_k": {"k": int, "agreement": float in [0, 1], "top1": bool, "within_tolerance": bool}
                         or None (classifiers only),
                "detection": {"iou": float, "driver": int, "tflite": int, "matched": int,
                              "agreement": float, "within_tolerance": bool} or None (face detectors only),
                "divergence": {"found": bool, "operator": int, "builtin": str, "nnapi": str,
                               "tensor": str, "max_error": float, "tolerance": float, "message": str}
                              or None,
                "layers": [{"operator": int, "builtin": str, "tensor": str, "max_error": float,
                            "tolerance": float, "ratio": float}]
                          (optional: the divergence locator's per-layer errors, drawn as a chart),
                "reference": str (what TFLite ran, e.g. "ai-edge-litert 2.3.0 builtin kernels"),
                "detection_note": str (why detections were not decoded)}

    STRESS = a record of mlts.stress (``run_tests``): {"test": str, "driver": str,
              "outcome": "SUCCESS" | "FAILURE" | "HANG" | "CRASH", "duration": seconds,
              "message": str, "params": {...}, "details": {...}, "log": str (tail, when not SUCCESS),
              "expected": outcome (optional)}   ("duration_s" and "detail" are accepted too)

Latency comparison (the better/worse markers): ratio = the driver's mean latency in a mode /
the TFLite kernel's mean latency (ai-edge-litert, 1 thread); below :data:`PAR_BAND` of 1 the
driver is *better* (faster), above it *worse*, within it *on par*. A model's status is
``failed`` when any stage raised (the page shows what was measured and the error),
``inaccurate`` when it ran but accuracy is outside tolerance, ``passed`` otherwise.
"""
from __future__ import annotations

import math

#: Modes of the driver's executions (NNAPI front end), in table order.
DRIVER_MODES = ("sync", "async", "burst")
#: TFLite baselines (ai-edge-litert kernels, 1 thread), in table order.
BASELINES = ("xnnpack", "builtin")
#: Ratios within 1 +- PAR_BAND are "on par" (timing noise on a shared machine is ~5%).
PAR_BAND = 0.05


def ratio_marker(ratio: float | None) -> dict:
    """The better/worse marker for a driver/TFLite latency ratio: ``{"ratio", "verdict",
    "symbol", "text"}``; verdict ``better`` (ratio < 1 - PAR_BAND: the driver is faster),
    ``worse`` (> 1 + PAR_BAND), ``par`` in between, ``none`` when either side is missing."""
    if ratio is None or not math.isfinite(ratio):
        return {"ratio": None, "verdict": "none", "symbol": "", "text": "n/a"}
    if ratio < 1 - PAR_BAND:
        verdict, symbol, word = "better", "\u25bc", "faster"
    elif ratio > 1 + PAR_BAND:
        verdict, symbol, word = "worse", "\u25b2", "slower"
    else:
        verdict, symbol, word = "par", "\u2248", "on par"
    return {"ratio": ratio, "verdict": verdict, "symbol": symbol, "text": f"{ratio:.2f}\u00d7 {word}"}


def latency_ratio(model: dict, mode: str, baseline: str) -> float | None:
    """Driver mean latency in ``mode`` / TFLite ``baseline`` mean latency, or None when either
    is missing or the baseline is zero."""
    lat = model.get("latency") or {}
    d = (lat.get("driver") or {}).get(mode)
    b = (lat.get("tflite") or {}).get(baseline)
    if not d or not b or not b.get("mean_ms"):
        return None
    return d["mean_ms"] / b["mean_ms"]


def model_status(model: dict) -> str:
    """``failed`` (a stage raised), ``inaccurate`` (accuracy outside tolerance) or ``passed``."""
    if model.get("errors"):
        return "failed"
    acc = model.get("accuracy")
    if acc is None or not acc.get("within_tolerance", False):
        return "inaccurate" if acc is not None else "failed"
    return "passed"


def totals(doc: dict) -> dict:
    """Counts of model statuses and stress outcomes."""
    t = {"models": len(doc.get("models") or []), "passed": 0, "inaccurate": 0, "failed": 0}
    for m in doc.get("models") or []:
        t[model_status(m)] += 1
    stress: dict[str, int] = {}
    for s in doc.get("stress") or []:
        stress[s["outcome"]] = stress.get(s["outcome"], 0) + 1
    t["stress"] = stress
    return t
