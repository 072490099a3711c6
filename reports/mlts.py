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
                "detection_note": str (why detections were not decoded),
                "three_way": THREE_WAY (optional: precision against the float64 truth)}

    THREE_WAY = (mlts.three_way) {"outputs": [PRECISION], "ratio": float or None (worst output),
                 "tflite_ratio": float or None, "driver_vs_tflite": float or None,
                 "truth_s": float, "reference_s": float (seconds), "truth": str, "reference": str,
                 "tflite": str (what TFLite ran, "" without it), "definition": str,
                 "error": str (only when the truth could not be computed; no outputs then)}
    PRECISION = {"index": int, "name": str, "dtype": str, "unit": "ULP" | "quanta" | "mismatches",
                 "driver" | "reference" | "tflite" (None without TFLite):
                     {"max": float, "mean": float (float outputs: in ULP of the output's largest
                      magnitude), "max_elementwise": float or None (float outputs: in ULP at each
                      element's magnitude), "nonfinite": int},
                 "ratio": driver max / max(reference max, 1) (float outputs: ``times_worse`` of
                          runtime.precision.three_way.compare, the random graphs' definition),
                 "tflite_ratio": TFLite max / max(reference max, 1) (the same),
                 "driver_vs_tflite": driver max / max(TFLite max, 1)}   (non-finite figures: null)

    STRESS = a record of mlts.stress (``run_tests``): {"test": str, "driver": str,
              "outcome": "SUCCESS" | "FAILURE" | "HANG" | "CRASH", "duration": seconds,
              "message": str, "params": {...}, "details": {...}, "log": str (tail, when not SUCCESS),
              "expected": outcome (optional)}   ("duration_s" and "detail" are accepted too)

Latency comparison (the better/worse markers): ratio = the driver's mean latency in a mode /
the TFLite kernel's mean latency (ai-edge-litert, 1 thread); below :data:`PAR_BAND` of 1 the
driver is *better* (faster), above it *worse*, within it *on par*. A model's status is
``failed`` when any stage raised (the page shows what was measured and the error),
``inaccurate`` when it ran but accuracy is outside tolerance, ``passed`` otherwise.

Judgements (what the page says and in which colour; ``mlts.json`` carries the same, as each
model's ``"judgement"``: :func:`judge_model`). Each claim has one function that returns its
words and its *level*, and the page, its charts and the JSON only ever show those, so a
colour cannot disagree with the words or the numbers beside it. Levels and their colours
(:data:`LEVEL_COLOURS`): ``good`` green, ``warn`` amber, ``bad`` red, ``none`` grey.

* latency (:func:`ratio_marker`): faster or on par: good; slower up to :data:`SLOW_RATIO`
  times the TFLite mean: warn; beyond it: bad; never green when slower;
* accuracy (:func:`accuracy_judgement`): outputs beyond tolerance or not measured: bad;
  outputs within tolerance but intermediate layers beyond the per-layer tolerance
  (accumulated drift), an operator beyond it in isolation, or an output beyond its
  element-wise tolerance where only the task-level check (top-k, detections) counts: warn,
  said as such; everything within: good;
* the divergence locator (:func:`divergence_judgement`): an operator beyond tolerance in
  isolation: bad; none in isolation but layers beyond (accumulated drift): warn, with the
  count; every compared layer within: good; no per-layer figures: none;
* precision against the float64 truth (:func:`precision_judgement`, a second grade beside
  the accuracy verdict, which it never changes): the worst output's ratio (the driver's
  error / the reference float32 path's own error, both against the truth) up to
  :data:`PRECISION_RATIO`: good; beyond it: warn; a NaN or infinity where the truth is
  finite: bad; not graded: none;
* a model's status (:func:`status_level`): passed good, inaccurate and failed bad (either
  makes ``nncts mlts`` exit 1); a
  stress outcome (:func:`outcome_level`): SUCCESS good, anything else bad.
"""
from __future__ import annotations

import math

#: Modes of the driver's executions (NNAPI front end), in table order.
DRIVER_MODES = ("sync", "async", "burst")
#: TFLite baselines (ai-edge-litert kernels, 1 thread), in table order.
BASELINES = ("xnnpack", "builtin")
#: Ratios within 1 +- PAR_BAND are "on par" (timing noise on a shared machine is ~5%).
PAR_BAND = 0.05
#: A driver slower than TFLite is amber up to SLOW_RATIO times its mean latency, red beyond.
SLOW_RATIO = 2.0
#: The colour of each judgement level (page CSS and chart marks alike).
LEVEL_COLOURS = {"good": "#007700", "warn": "#b36200", "bad": "#bb0000", "none": "#777777"}
#: A model status's level: inaccurate is red like failed (either makes ``nncts mlts`` exit 1).
#: A driver's worst output error up to this many times the reference float32 path's own
#: error (both against the float64 truth) is graded good: float32 implementations summing in
#: other orders land there (TFLite's builtin and XNNPACK kernels on the bundled models: at
#: most 5.1x, docs/suites/mlts.md); beyond it is amber.
PRECISION_RATIO = 10.0
STATUS_LEVELS = {"passed": "good", "inaccurate": "bad", "failed": "bad"}


def ratio_marker(ratio: float | None) -> dict:
    """The better/worse marker for a driver/TFLite latency ratio: ``{"ratio", "verdict",
    "symbol", "text", "level"}``; verdict ``better`` (ratio < 1 - PAR_BAND: the driver is
    faster), ``worse`` (> 1 + PAR_BAND), ``par`` in between, ``none`` when either side is
    missing; level ``good`` (better, par), ``warn`` (worse up to :data:`SLOW_RATIO`), ``bad``
    (worse beyond it), ``none``."""
    if ratio is None or not math.isfinite(ratio):
        return {"ratio": None, "verdict": "none", "symbol": "", "text": "n/a", "level": "none"}
    if ratio < 1 - PAR_BAND:
        verdict, symbol, word, level = "better", "\u25bc", "faster", "good"
    elif ratio > 1 + PAR_BAND:
        verdict, symbol, word = "worse", "\u25b2", "slower"
        level = "bad" if ratio > SLOW_RATIO else "warn"
    else:
        verdict, symbol, word, level = "par", "\u2248", "on par", "good"
    return {"ratio": ratio, "verdict": verdict, "symbol": symbol, "text": f"{ratio:.2f}\u00d7 {word}",
            "level": level}


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


# ---------------------------------------------------------------- judgements (words + level)

def _g(v) -> str:
    return "" if v is None else format(v, ".3g")


def status_level(status: str) -> str:
    """The level of a model status (:func:`model_status`): passed good, inaccurate and failed
    bad (:data:`STATUS_LEVELS`)."""
    return STATUS_LEVELS.get(status, "none")


def outcome_level(outcome: str | None) -> str:
    """The level of a stress outcome: SUCCESS good, FAILURE / HANG / CRASH bad, none without one."""
    return "none" if not outcome else ("good" if outcome == "SUCCESS" else "bad")


def layer_ratio(layer: dict) -> float | None:
    """A per-layer figure's worst error as a multiple of its tolerance: ``ratio``, else
    ``max_error / tolerance`` (inf when the tolerance is 0 and the error is not), None when
    neither is recorded. > 1 (inf and NaN included) is beyond tolerance."""
    r = layer.get("ratio")
    if r is None and layer.get("max_error") is not None and layer.get("tolerance") is not None:
        e, t = layer["max_error"], layer["tolerance"]
        r = e / t if t else (0.0 if e == 0 else math.inf)
    return None if r is None else float(r)


def layer_counts(acc: dict | None) -> tuple[int, int, dict | None]:
    """``(compared, beyond, first beyond)`` of the divergence locator's per-layer figures
    (``acc["layers"]``): how many compared operator outputs have a ratio
    (:func:`layer_ratio`), how many of them are beyond the per-layer tolerance (ratio > 1
    or not finite), and the first such layer dict in execution order (None if none)."""
    compared, beyond, first = 0, 0, None
    for la in (acc or {}).get("layers") or []:
        r = layer_ratio(la)
        if r is None:
            continue
        compared += 1
        if not r <= 1.0:    # NaN and inf are beyond
            beyond += 1
            first = first or la
    return compared, beyond, first


def accuracy_judgement(acc: dict | None) -> dict:
    """The accuracy claim of a model (``ACCURACY`` or None): ``{"level", "short", "text",
    "within_tolerance", "layers_compared", "layers_beyond"}``. ``bad`` when not measured or
    beyond tolerance (``text`` names the failing checks); ``warn`` when the outputs are
    within tolerance but the numbers beside them are not: layers beyond the per-layer
    tolerance ("final outputs within tolerance; 25 of 31 compared layers beyond the per-layer
    tolerance (accumulated drift)"), an operator beyond it in isolation, or an output beyond
    its element-wise tolerance where only the task-level check counts; ``good`` otherwise."""
    compared, beyond, _ = layer_counts(acc)
    out = {"within_tolerance": acc.get("within_tolerance") if acc else None,
           "layers_compared": compared, "layers_beyond": beyond}
    if not acc:
        return {**out, "level": "bad", "short": "not measured", "text": "accuracy not measured"}
    failing = [f"output {o.get('index')} {o.get('name') or ''}".strip()
               for o in acc.get("outputs") or [] if o.get("within_tolerance") is False]
    tasks = [label for key, label in (("top_k", "top-k agreement"), ("detection", "detections"))
             if (acc.get(key) or {}).get("within_tolerance") is not None]
    if not acc.get("within_tolerance"):
        failing += [label for key, label in (("top_k", "top-k agreement"), ("detection", "detections"))
                    if (acc.get(key) or {}).get("within_tolerance") is False]
        return {**out, "level": "bad", "short": "\u2717 beyond",
                "text": "beyond tolerance" + (": " + ", ".join(failing) if failing else "")}
    caveats, shorts = [], []
    div = acc.get("divergence") or {}
    if div.get("found"):
        op = f"operator {div.get('operator')} {div.get('builtin') or ''}".strip()
        caveats.append(f"TFLite {op} beyond the per-layer tolerance in isolation")
        shorts.append(f"op {div.get('operator')} beyond in isolation")
    elif beyond:
        caveats.append(f"{beyond} of {compared} compared layers beyond the per-layer tolerance (accumulated drift)")
        shorts.append(f"{beyond} of {compared} layers beyond")
    if failing:
        caveats.append(f"{', '.join(failing)} beyond the element-wise tolerance"
                       + (f" (judged by {' and '.join(tasks)})" if tasks else ""))
        shorts.append("outputs beyond element-wise")
    if caveats:
        head = "task-level checks within tolerance" if failing else "final outputs within tolerance"
        return {**out, "level": "warn", "short": "\u2713 within; " + ", ".join(shorts),
                "text": head + "; " + "; ".join(caveats)}
    return {**out, "level": "good", "short": "\u2713 within",
            "text": "within tolerance" + (f"; all {compared} compared layers within the per-layer tolerance"
                                          if compared else "")}


def divergence_judgement(acc: dict | None) -> dict | None:
    """The divergence locator's claim (None when it did not run): ``{"level", "short",
    "text"}``. ``bad``: an operator beyond tolerance in isolation ("first departure beyond
    tolerance at TFLite operator 7 CONV_2D ..."); ``warn``: none in isolation, but layers
    beyond the per-layer tolerance (accumulated drift, with the count and the first such
    operator); ``good``: every compared layer within tolerance; ``none``: no per-layer
    figures recorded."""
    div = (acc or {}).get("divergence")
    if not div:
        return None
    compared, beyond, first = layer_counts(acc)
    if div.get("found"):
        text = (f"first departure beyond tolerance at TFLite operator {div.get('operator')} {div.get('builtin') or ''}"
                .rstrip() + (f" (NNAPI {div['nnapi']})" if div.get("nnapi") else "")
                + (f", tensor {div['tensor']}" if div.get("tensor") else "")
                + f": max error {_g(div.get('max_error'))}"
                + (f" > {_g(div['tolerance'])}" if div.get("tolerance") is not None else ""))
        return {"level": "bad", "short": f"op {div.get('operator')} {div.get('builtin') or ''}".strip(), "text": text}
    if beyond:
        isolated = div.get("isolated")
        none_isolated = (f"none of the {len(isolated)} operators re-run in isolation is beyond tolerance"
                         if isolated is not None else "no operator found beyond tolerance in isolation")
        return {"level": "warn", "short": f"none in isolation; drift in {beyond} of {compared} layers",
                "text": f"{none_isolated}; accumulated drift: {beyond} of {compared} compared layers beyond the "
                        f"per-layer tolerance, the first at TFLite operator {first.get('operator')} "
                        f"{first.get('builtin') or ''}".rstrip()}
    if compared:
        return {"level": "good", "short": "none", "text": f"every compared layer within tolerance ({compared} compared)"}
    return {"level": "none", "short": "none",
            "text": "no operator found beyond tolerance (per-layer figures not recorded)"}


def _times(r) -> str:
    return "n/a" if r is None else f"{r:.3g}\u00d7"


def precision_level(ratio: float | None, nonfinite: int = 0) -> str:
    """The level of one precision ratio (driver error / the reference's own, against the
    float64 truth): ``bad`` with non-finite driver elements, ``none`` without a ratio,
    ``good`` up to :data:`PRECISION_RATIO`, ``warn`` beyond."""
    if nonfinite:
        return "bad"
    if ratio is None:
        return "none"
    return "good" if ratio <= PRECISION_RATIO else "warn"


def precision_judgement(three_way: dict | None) -> dict | None:
    """The precision claim of a model (ACCURACY's ``three_way`` or None: not graded, None is
    returned): ``{"level", "short", "text", "ratio", "output"}``. ``bad`` when the driver
    gives a NaN or infinity where the truth is finite; ``good`` when the worst output's
    ``ratio`` (driver error / the reference's own, against the float64 truth) is at most
    :data:`PRECISION_RATIO`; ``warn`` beyond; ``none`` when the truth could not be computed
    or no output has a ratio. The text names the worst output and TFLite's ratio; ``short`` is "exact" when every
    output equals the truth."""
    if three_way is None:
        return None
    out = {"ratio": three_way.get("ratio"), "output": None}
    if three_way.get("error"):
        return {**out, "level": "none", "short": "not graded", "text": f"precision not graded: {three_way['error']}"}
    rows = [o for o in three_way.get("outputs") or [] if o.get("ratio") is not None
            or (o.get("driver") or {}).get("nonfinite")]
    if not rows:
        return {**out, "level": "none", "short": "not graded", "text": "no output to grade against the float64 truth"}
    nonfinite = [o for o in rows if (o.get("driver") or {}).get("nonfinite")]
    if nonfinite:
        o = nonfinite[0]
        return {**out, "output": o.get("name"), "level": "bad", "short": "NaN/inf",
                "text": f"output {o.get('index')} {o.get('name') or ''}: {o['driver']['nonfinite']} elements NaN or "
                        "infinite where the float64 truth is finite"}
    worst = max((o for o in rows if o.get("ratio") is not None), key=lambda o: o["ratio"])
    r = worst["ratio"]
    level = precision_level(r)
    tfl = three_way.get("tflite_ratio")
    label = f" ({three_way['tflite']})" if three_way.get("tflite") else ""
    beside = f"; TFLite{label}: {_times(tfl)}" if tfl is not None else ""
    where = f"output {worst.get('index')} {worst.get('name') or ''}".strip()
    unit = worst.get("unit") or "ULP"
    unit = "ULP of the output's largest magnitude" if unit == "ULP" else unit
    text = (f"{_times(r)} the reference float32 path's own error against the float64 truth at worst ({where}: "
            f"{_g(worst['driver']['max'])} {unit} max, the reference {_g(worst['reference']['max'])}){beside}")
    if level == "warn":
        text += f"; more than {PRECISION_RATIO:g}\u00d7"
    if all((o.get("driver") or {}).get("max") == 0 for o in rows):
        return {**out, "output": None, "level": level, "short": "exact",
                "text": "every output equal to the float64 truth (the truth of a quantized model rounds once per "
                        f"quantized operation){beside}"}
    return {**out, "output": worst.get("name"), "level": level, "short": f"{_times(r)} reference", "text": text}


def judge_model(model: dict) -> dict:
    """Every judgement of one model, as the page shows it and ``mlts.json`` records it:
    ``{"status", "status_level", "accuracy": accuracy_judgement, "divergence":
    divergence_judgement or None, "precision": precision_judgement or None, "latency":
    {mode: {baseline: ratio_marker}}}`` (``latency`` has the driver modes measured, in
    :data:`DRIVER_MODES` order)."""
    status = model_status(model)
    acc = model.get("accuracy")
    modes = (model.get("latency") or {}).get("driver") or {}
    return {"status": status, "status_level": status_level(status), "accuracy": accuracy_judgement(acc),
            "divergence": divergence_judgement(acc), "precision": precision_judgement((acc or {}).get("three_way")),
            "latency": {mode: {b: ratio_marker(latency_ratio(model, mode, b)) for b in BASELINES}
                        for mode in DRIVER_MODES if modes.get(mode)}}
