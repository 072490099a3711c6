"""AXIS_ALIGNED_BBOX_TRANSFORM (NNAPI code 41), BOX_WITH_NMS_LIMIT (44), GENERATE_PROPOSALS
(52) and DETECTION_POSTPROCESSING (47), all FL3, with TENSOR_QUANT8_ASYMM_SIGNED forms at
FL4: the cells the AOSP corpus leaves empty (``nncts coverage``): quantized scores / deltas
with zero point 0, 255 (TENSOR_QUANT8_ASYMM) or mid / -128 / 127 (signed) and scale > 1;
GENERATE_PROPOSALS on a non-square feature map; DETECTION_POSTPROCESSING with batch 2.

Definitions (NNAPI ``types.spec``). Boxes are (x1, y1, x2, y2); TENSOR_QUANT16_ASYMM boxes and
image info have scale 0.125 and zero point 0, TENSOR_QUANT16_SYMM anchors scale 0.125 (so
the quant16 cells other than zero point 0 / scale < 1 cannot be filled).
AXIS_ALIGNED_BBOX_TRANSFORM: w = x2 - x1, h = y2 - y1, centre (x1 + w/2, y1 + h/2); per class
the box of centre (cx + dx*w, cy + dy*h) and size (w*exp(dw), h*exp(dh)), clipped to
[0, width] x [0, height] of its batch's image_info (height, width).
BOX_WITH_NMS_LIMIT (hard kernel): per batch and class c >= 1 the boxes scoring above
score_threshold; repeatedly the best is kept and the others with IoU >= iou_threshold
dropped; output sorted by class, then by decreasing score.
GENERATE_PROPOSALS: anchor a at cell (i, j) shifted by (j * width_stride, i * height_stride),
transformed by its deltas as above and clipped; the pre_nms_top_n best kept; boxes with
width or height <= min_size or centre outside the image dropped; hard NMS keeps at most
post_nms_top_n per batch, in decreasing score.
DETECTION_POSTPROCESSING: anchors (cy, cx, h, w); deltas (dy, dx, dh, dw) divided by the
scales move the anchor as above; boxes out as (y1, x1, y2, x2); class 0 is background and
labels are class - 1 unless is_bg_in_label.

Goldens: the numpy formulas above (:func:`bbox_transform`, :func:`box_nms`,
:func:`proposals`) on the dequantized inputs; DETECTION_POSTPROCESSING by hand (zero
deltas, disjoint anchors: each batch's two best anchors with their best class).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, one_operation
from .roi import boxes
from .variations import f32, quantize

FAMILY = "detection"
F32, Q8, Q8S, Q16A, I32 = (T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                           T.TENSOR_QUANT16_ASYMM, T.TENSOR_INT32)
LEVEL = {Q8: 3, Q8S: 4, F32: 3}
NAME = {Q8: "quant8", Q8S: "quant8_signed"}
GOLDEN = {
    Op.AXIS_ALIGNED_BBOX_TRANSFORM: "numpy formula: centre/size box transform, clipped to the image "
                                    "(cts/specs/detection.py bbox_transform) on the dequantized deltas",
    Op.BOX_WITH_NMS_LIMIT: "numpy formula: per-class hard NMS (cts/specs/detection.py box_nms) on the "
                           "dequantized scores",
    Op.GENERATE_PROPOSALS: "numpy formula: shifted anchors, box transform, size / centre filter, hard NMS "
                           "(cts/specs/detection.py proposals) on the dequantized inputs",
    Op.DETECTION_POSTPROCESSING: "hand calculation: zero deltas keep the disjoint anchors; each batch reports "
                                 "its two best anchors with their best non-background class",
}


def q8(t, values, q):
    """Stored values of real ``values`` in type ``t`` at (scale, zero point) ``q``, and the
    real values they stand for."""
    stored = quantize(values, f32(q[0]), q[1], t)
    return stored, (stored - q[1]) * f32(q[0])


def bbox_transform(roi, deltas, batch, info):
    roi, deltas = np.asarray(roi, np.float64), np.asarray(deltas, np.float64).reshape(len(roi), -1, 4)
    w, h = roi[:, 2] - roi[:, 0], roi[:, 3] - roi[:, 1]
    cx, cy = roi[:, 0] + w / 2, roi[:, 1] + h / 2
    pcx, pcy = cx[:, None] + deltas[..., 0] * w[:, None], cy[:, None] + deltas[..., 1] * h[:, None]
    pw, ph = w[:, None] * np.exp(deltas[..., 2]), h[:, None] * np.exp(deltas[..., 3])
    out = np.stack([pcx - pw / 2, pcy - ph / 2, pcx + pw / 2, pcy + ph / 2], axis=-1)
    hi = np.asarray(info, np.float64)[batch][:, None, :]  # (height, width)
    out[..., 0::2] = np.clip(out[..., 0::2], 0, hi[..., 1:2])
    out[..., 1::2] = np.clip(out[..., 1::2], 0, hi[..., 0:1])
    return out.reshape(len(roi), -1)


def _bbox(t, q):
    rng = np.random.default_rng(abs(q[1]) + 7)
    roi = np.array([[8, 8, 16, 24], [0, 4, 40, 12], [20, 10, 28, 30]], np.float64)
    lo, hi = (0, 255) if t == Q8 else (-128, 127)
    stored = np.clip(q[1] + rng.integers(-3, 4, (3, 8)), lo, hi)
    deltas = (stored - q[1]) * f32(q[0])
    batch, info = [0, 1, 1], [[32, 32], [40, 48]]
    want = bbox_transform(roi, deltas, batch, info)
    name = f"axis_aligned_bbox_transform_{NAME[t]}_zp{q[1]}_scale{q[0]}"
    return one_operation(name, FAMILY, Op.AXIS_ALIGNED_BBOX_TRANSFORM,
                         [boxes(roi), inp(t, stored, f32(q[0]), q[1]), const(I32, batch), boxes(info)],
                         [expect(Q16A, quantize(want, 0.125, 0, T.TENSOR_INT32), 0.125, 0)], LEVEL[t],
                         GOLDEN[Op.AXIS_ALIGNED_BBOX_TRANSFORM])


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def hard_nms(order, box, thr):
    """Indexes kept by hard NMS over ``order`` (by decreasing score)."""
    kept = []
    for i in order:
        if all(iou(box[i], box[k]) < thr for k in kept):
            kept.append(i)
    return kept


def box_nms(scores, roi, batch, score_thr, iou_thr):
    """(score, box, class, batch) rows kept, per batch sorted by class then decreasing score."""
    roi = np.asarray(roi).reshape(len(scores), -1, 4)
    rows = []
    for b in dict.fromkeys(batch):
        for c in range(1, scores.shape[1]):
            cand = [i for i in range(len(scores)) if batch[i] == b and scores[i, c] > score_thr]
            cand.sort(key=lambda i: -scores[i, c])
            rows += [(scores[i, c], roi[i, c], c, b) for i in hard_nms(cand, roi[:, c], iou_thr)]
    return rows


def _nms(t, q, out_q):
    """Four rois of two batches, three classes. Scores above the zero point, where, in each
    class, two rois overlap (IoU 0.6); scores at or below a zero point of 255 (all <= 0),
    where no roi overlaps another (the spec says nothing of how suppression treats a
    negative score)."""
    spread = 1 if q[1] == 255 else 0  # disjoint rois
    base = np.array([[0, 0, 10, 10], [0, 2.5 + 20 * spread, 10, 12.5 + 20 * spread], [20, 20, 30, 30],
                     [0, 0, 8, 8]], np.float64)
    roi = np.concatenate([base, base + [1, 0, 1, 0], base + [0, 1, 0, 1]], axis=1)
    offsets = np.array([[2, 5, 1], [1, 2, 3], [1, 4, 6], [0, 1, 7]])
    stored = q[1] - offsets if spread else q[1] + offsets
    scores = (stored - q[1]) * f32(q[0])
    batch = [0, 0, 0, 1]
    thr = float(scores.min()) + f32(q[0]) / 2
    rows = box_nms(scores, roi, batch, thr, 0.5)
    out_s, _ = q8(t, [r[0] for r in rows], out_q)
    f = T.FLOAT32
    name = f"box_with_nms_limit_{NAME[t]}_zp{q[1]}_scale{q[0]}"
    return one_operation(name, FAMILY, Op.BOX_WITH_NMS_LIMIT,
                         [inp(t, stored, f32(q[0]), q[1]), boxes(roi), const(I32, batch), const(f, thr),
                          const(T.INT32, -1), const(T.INT32, 0), const(f, 0.5), const(f, 0.5),
                          const(f, thr)],
                         [expect(t, out_s, f32(out_q[0]), out_q[1]), boxes([r[1] for r in rows], expect),
                          expect(I32, [r[2] for r in rows]), expect(I32, [r[3] for r in rows])],
                         LEVEL[t], GOLDEN[Op.BOX_WITH_NMS_LIMIT])


def proposals(scores, deltas, anchors, info, hs, ws, iou_thr, min_size):
    """NHWC scores [b, h, w, a], deltas [b, h, w, 4a]; pre/post_nms_top_n: all."""
    nb, h, w, a = scores.shape
    jj, ii = np.meshgrid(np.arange(w), np.arange(h))
    shift = np.stack([jj * ws, ii * hs, jj * ws, ii * hs], axis=-1)[:, :, None, :]
    cells = (shift + np.asarray(anchors)[None, None]).reshape(-1, 4)
    out = []
    for b in range(nb):
        box = bbox_transform(cells, deltas[b].reshape(-1, 4), [0] * len(cells), [info[b]])
        sc = scores[b].reshape(-1)
        order = sorted(range(len(sc)), key=lambda i: -sc[i])
        bw, bh = box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]
        ok = (bw > min_size) & (bh > min_size) & (box[:, 0] + bw / 2 < info[b][1]) & \
             (box[:, 1] + bh / 2 < info[b][0])
        out += [(sc[i], box[i], b) for i in hard_nms([i for i in order if ok[i]], box, iou_thr)]
    return out


def _proposals(name, t, q, out_q, shape, nchw):
    """Feature map ``shape`` (b, h, w) with two anchors per cell; strides 4."""
    nb, h, w = shape
    rng = np.random.default_rng(h * 10 + w)
    anchors = np.array([[0, 0, 4, 4], [-2, -1, 6, 5]], np.float64)
    info = [[4 * h, 4 * w]] * nb
    if t == F32:
        scores = rng.permutation(nb * h * w * 2).reshape(nb, h, w, 2) / 10.0
        deltas = rng.integers(-2, 3, (nb, h, w, 8)) / 8.0
        sq, dq = (scores, scores), (deltas, deltas)
    else:
        lo, hi = (0, 255) if t == Q8 else (-128, 127)
        s_st = np.clip(q[1] - rng.permutation(nb * h * w * 2).reshape(nb, h, w, 2), lo, hi)
        d_st = np.clip(q[1] + rng.integers(-1, 2, (nb, h, w, 8)) * (rng.random((nb, h, w, 8)) < 0.3), lo, hi)
        sq, dq = (s_st, (s_st - q[1]) * f32(q[0])), (d_st, (d_st - q[1]) * f32(q[0]))
    rows = proposals(sq[1], dq[1], anchors, info, 4.0, 4.0, 0.3, 1.0)
    lay = (lambda v: v.transpose(0, 3, 1, 2)) if nchw else (lambda v: v)
    if t == F32:
        ins = [inp(t, lay(sq[0])), inp(t, lay(dq[0])), const(t, anchors), const(t, info)]
        out_s = expect(t, np.array([r[0] for r in rows], np.float32))
        out_b = expect(t, np.array([r[1] for r in rows], np.float32))
    else:
        ins = [inp(t, lay(sq[0]), f32(q[0]), q[1]), inp(t, lay(dq[0]), f32(q[0]), q[1]),
               const(T.TENSOR_QUANT16_SYMM, np.round(anchors * 8).astype(np.int64), 0.125), boxes(info)]
        out_s = expect(t, q8(t, [r[0] for r in rows], out_q)[0], f32(out_q[0]), out_q[1])
        out_b = expect(Q16A, quantize(np.array([r[1] for r in rows]), 0.125, 0, T.TENSOR_INT32), 0.125, 0)
    f = T.FLOAT32
    return one_operation(f"generate_proposals_{name}", FAMILY, Op.GENERATE_PROPOSALS,
                         [*ins, const(f, 4.0), const(f, 4.0), const(T.INT32, -1), const(T.INT32, -1),
                          const(f, 0.3), const(f, 1.0), const(T.BOOL, nchw)],
                         [out_s, out_b, expect(I32, [r[2] for r in rows])], LEVEL[t], GOLDEN[Op.GENERATE_PROPOSALS])


def _postprocessing(regular):
    """Batch 2, three disjoint anchors, three classes (0 background), two detections."""
    scores = np.array([[[0, 0.9, 0.1], [0, 0.2, 0.7], [0, 0.4, 0.25]],
                       [[0, 0.1, 0.2], [0.5, 0.6, 0.2], [0, 0.05, 0.95]]], np.float32)
    anchors = np.array([[1, 1, 2, 2], [5, 5, 2, 4], [1, 8, 2, 2]], np.float32)  # (cy, cx, h, w)
    box = np.concatenate([anchors[:, :2] - anchors[:, 2:] / 2, anchors[:, :2] + anchors[:, 2:] / 2], axis=1)
    picks = [[(0, 1), (1, 2)], [(2, 2), (1, 1)]]  # (anchor, class) by decreasing score
    f = T.FLOAT32
    return one_operation(f"detection_postprocessing_batch2_{'regular' if regular else 'fast'}", FAMILY,
                         Op.DETECTION_POSTPROCESSING,
                         [inp(F32, scores), inp(F32, np.zeros((2, 3, 4), np.float32)), const(F32, anchors),
                          const(f, 10.0), const(f, 10.0), const(f, 5.0), const(f, 5.0), const(T.BOOL, regular),
                          const(T.INT32, 2), const(T.INT32, 1), const(T.INT32, 1), const(f, 0.3),
                          const(f, 0.5), const(T.BOOL, False)],
                         [expect(F32, [[scores[b, a, c] for a, c in p] for b, p in enumerate(picks)]),
                          expect(F32, [[box[a] for a, _ in p] for p in picks]),
                          expect(I32, [[c - 1 for _, c in p] for p in picks]), expect(I32, [2, 2])],
                         3, GOLDEN[Op.DETECTION_POSTPROCESSING])


def models():
    return [
        _bbox(Q8, (0.125, 0)),
        _bbox(Q8, (2.0, 255)),
        _bbox(Q8S, (2.0, -20)),
        _bbox(Q8S, (0.25, 127)),
        _nms(Q8, (2.0, 255), (2.0, 255)),
        _nms(Q8S, (2.0, -20), (4.0, 10)),
        _proposals("float32_non_square", F32, None, None, (1, 2, 3), False),
        _proposals("quant8_zp255_scale2", Q8, (2.0, 255), (3.0, 250), (1, 2, 2), False),
        _proposals("quant8_signed_scale2_nchw", Q8S, (2.0, 20), (0.5, -10), (2, 2, 2), True),
        _postprocessing(False),
        _postprocessing(True),
    ]
