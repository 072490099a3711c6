"""Detection operations of feature level 3: box regression, non-maximum suppression and
region proposals, with their TENSOR_QUANT8_ASYMM_SIGNED forms of feature level 4.

AXIS_ALIGNED_BBOX_TRANSFORM (41, FL3)
    Inputs: 0 roi [num_rois, 4] (x1, y1, x2, y2), 1 deltas [num_rois, 4 * num_classes]
    (dx, dy, dw, dh per class), 2 batches TENSOR_INT32 [num_rois] (batch of each roi),
    3 image_info [num_batches, 2] (height, width). Output [num_rois, 4 * num_classes]:
    the roi of center (x + dx * w, y + dy * h) and size (w * exp(dw), h * exp(dh)),
    clipped to [0, width] x [0, height] of its batch's image.
    Types: TENSOR_FLOAT32 or TENSOR_FLOAT16 for 0, 1, 3 and the output; or
    TENSOR_QUANT16_ASYMM roi, image_info and output (scale 0.125, zeroPoint 0) with
    TENSOR_QUANT8_ASYMM deltas; FL4: the same with TENSOR_QUANT8_ASYMM_SIGNED deltas.
    Zero rois give a [0, 4 * num_classes] output.
    Errors: ranks other than 2/2/1/2; roi width != 4; deltas not [num_rois, 4 * k] with
    k > 0; batches not [num_rois]; image_info not [b > 0, 2]; a quant16 roi or image_info
    scale != 0.125 or zeroPoint != 0; a batch index outside [0, num_batches); a roi with
    x2 < x1 or y2 < y1.

BOX_WITH_NMS_LIMIT (44, FL3)
    Inputs: 0 scores [num_rois, num_classes], 1 roi [num_rois, 4 * num_classes],
    2 batches TENSOR_INT32 [num_rois] (rois of a batch are consecutive), 3 score_threshold,
    4 max_num_detections INT32 (< 0: unlimited), 5 nms_kernel INT32 (0 hard, 1 linear,
    2 Gaussian), 6 iou_threshold, 7 sigma, 8 nms_score_threshold (FLOAT32 scalars; FLOAT16
    for TENSOR_FLOAT16). Outputs: 0 scores [k], 1 roi [k, 4], 2 classes TENSOR_INT32 [k],
    3 batches TENSOR_INT32 [k]; k may be 0 (zero-sized outputs, dimensions [0], [0, 4]).
    Per batch and per class c >= 1 (class 0 is background): candidates have score >
    score_threshold; repeatedly the best remaining one is kept (at most
    max_num_detections per class) and each other candidate's score is multiplied by
    kernel(IoU with it) (hard: 1 if IoU < iou_threshold else 0; linear: 1 if IoU <
    iou_threshold else 1 - IoU; Gaussian: exp(-IoU^2 / sigma)), dropping it when the
    score falls below nms_score_threshold. The batch keeps its max_num_detections best,
    written sorted by class, then by decreasing score.
    Types: TENSOR_FLOAT32 / TENSOR_FLOAT16 scores and roi; TENSOR_QUANT8_ASYMM scores with
    TENSOR_QUANT16_ASYMM roi (scale 0.125, zeroPoint 0); FL4: TENSOR_QUANT8_ASYMM_SIGNED
    scores with TENSOR_QUANT16_ASYMM roi. Output roi values are the input's (moved raw);
    output scores are requantized in the output's quantization.
    Errors: ranks other than 2/2/1; roi not [num_rois, 4 * num_classes]; batches not
    [num_rois]; num_classes < 2; quant16 roi scale/zeroPoint; nms_kernel not 0-2; a roi
    with x2 < x1 or y2 < y1.

GENERATE_PROPOSALS (52, FL3)
    Inputs: 0 scores [b, h, w, a], 1 deltas [b, h, w, 4a] (NCHW when input 10 is true),
    2 anchors [a, 4], 3 image_info [b, 2], 4 height_stride, 5 width_stride (FLOAT32;
    FLOAT16 for TENSOR_FLOAT16), 6 pre_nms_top_n INT32 (<= 0: all), 7 post_nms_top_n INT32
    (< 0: all), 8 iou_threshold, 9 min_size, 10 layout BOOL. Outputs: 0 scores [k],
    1 roi [k, 4], 2 batches TENSOR_INT32 [k] (k may be 0).
    Anchor a at cell (i, j) is shifted by (j * width_stride, i * height_stride), moved by
    its deltas as AXIS_ALIGNED_BBOX_TRANSFORM does, the pre_nms_top_n best are kept, boxes
    whose width or height is <= min_size or whose center is outside the image dropped, then
    hard NMS (IoU >= iou_threshold suppresses) keeps at most post_nms_top_n per batch.
    Types: TENSOR_FLOAT32 / TENSOR_FLOAT16 throughout; or TENSOR_QUANT8_ASYMM scores and
    deltas, TENSOR_QUANT16_SYMM anchors (scale 0.125), TENSOR_QUANT16_ASYMM image_info and
    output roi (scale 0.125, zeroPoint 0); FL4: the same with TENSOR_QUANT8_ASYMM_SIGNED
    scores and deltas.
    Errors: ranks other than 4/4/2/2; deltas, anchors or image_info of the wrong shape;
    quant16 scales.

DETECTION_POSTPROCESSING (47, FL3)
    Inputs: 0 scores [b, num_anchors, num_classes], 1 deltas [b, num_anchors, >= 4]
    (dy, dx, dh, dw, ...), 2 anchors [num_anchors, 4] (center y, center x, h, w), 3-6
    scale_y, scale_x, scale_h, scale_w, 7 use_regular_nms BOOL, 8 max_num_detections,
    9 max_classes_per_detection, 10 max_num_detections_per_class (INT32), 11
    score_threshold, 12 iou_threshold, 13 is_bg_in_label BOOL. Outputs: 0 scores [b, n],
    1 boxes [b, n, 4] (y1, x1, y2, x2), 2 classes TENSOR_INT32 [b, n], 3 detections
    TENSOR_INT32 [b]; n = max_num_detections (regular NMS) or max_num_detections *
    max_classes_per_detection (fast NMS); unused slots are 0.
    Regular: hard NMS per class >= 1 (at most max_num_detections_per_class each), then the
    max_num_detections best. Fast: NMS over each anchor's best non-background score (at
    most max_num_detections anchors), each kept anchor reporting its
    min(num_classes - 1, max_classes_per_detection) best classes. Classes are reported
    minus 1 unless is_bg_in_label.
    Types: TENSOR_FLOAT32 (FLOAT32 scalars) or TENSOR_FLOAT16 (FLOAT16 scalars); no
    quantized form at any level (types.spec lists none).
    Errors: ranks other than 3/3/2; shapes; scales <= 0; score or IoU threshold < 0;
    num_classes < 2; box encoding length < 4; max_num_detections <= 0; the per-class
    (regular) or per-detection (fast) limit <= 0.

Semantics: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` (FL3 operand lists, FL4
TENSOR_QUANT8_ASYMM_SIGNED additions) and AOSP
``common/cpu_operations/GenerateProposals.cpp`` (prepare rules, kernels) read for facts.
The reference computes on real values in float64 (TENSOR_FLOAT16: float64, one rounding
cast at the end; quantized: dequantize, requantize with round half away from zero). Ties
follow AOSP's selection order: the first best candidate in the working order, which AOSP
permutes by swapping suppressed candidates to the end (emulated exactly by
:func:`_nms`); AOSP's final ``std::sort`` calls are not stable, the reference sorts
stably (equal scores keep their index order). AOSP checks only some rois of
BOX_WITH_NMS_LIMIT for x2 < x1 / y2 < y1 (a pointer-stride slip); the reference checks
every roi it reads, as the spec says boxes are (x1, y1, x2, y2) with x1 <= x2, y1 <= y2.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType, is_quantized_type
from . import budgets
from .base import OpContext, OperandView, OperationDef, check, register, scalar, sig, tensor
from .common import from_float, layout_dims, layout_flag, nhwc_dims, to_float, to_nhwc
from .decision_rules import any_error_decision
from .generation import in_range, quant_limits

T = OperandType
F32, F16, Q8, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32
Q16A, Q16S = T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM
Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED
FL3 = 3
#: (feature level, data type, box type, float scalar type) of the forms of the box
#: operations (AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT).
BOX_FORMS = ((FL3, F32, F32, T.FLOAT32), (FL3, F16, F16, T.FLOAT16), (FL3, Q8, Q16A, T.FLOAT32),
             (4, Q8S, Q16A, T.FLOAT32))
#: The quantization NNAPI types.spec fixes for a TENSOR_QUANT16_ASYMM / TENSOR_QUANT16_SYMM
#: box operand (scale 0.125, zero point 0): the rois, image_info and output rois of
#: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS (its QUANT16_SYMM
#: anchors too) and the boxes of ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT. Inputs:
#: :func:`check_box_quant` in ``prepare`` (AOSP's prepare checks it); outputs: AOSP's prepare
#: sets scale 0.125, zero point 0 and ``setInfoAndAllocateIfNeeded`` (CpuExecutor.cpp)
#: rejects a model output of other parameters. (types.spec's FL4 text for the boxes of
#: BOX_WITH_NMS_LIMIT and HEATMAP_MAX_KEYPOINT says zero point -128, outside
#: TENSOR_QUANT16_ASYMM's range; AOSP checks 0.)
BOX_QUANT = (0.125, 0)


def box_quant(t: OperandType) -> tuple[float, int] | None:
    """:data:`BOX_QUANT` for a TENSOR_QUANT16 box type ``t``, else None (float boxes)."""
    return BOX_QUANT if t in (T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM) else None


#: Bound of the NMS work (candidate pairs compared) per operation, so that a hostile model
#: fails with GENERAL_FAILURE instead of running for hours.
MAX_NMS_PAIRS = 1 << 26


# --- shared pieces ---------------------------------------------------------------------

def check_box_quant(view: OperandView, index: int, name: str, kind: str = "input") -> None:
    """A TENSOR_QUANT16_ASYMM / TENSOR_QUANT16_SYMM box operand must have scale 0.125 and
    zeroPoint 0 (AOSP prepare of the box operations, FL3). Raises OperationError naming
    ``kind`` ``index`` (``name``)."""
    if view.type in (Q16A, Q16S):
        check(np.float32(view.scale) == np.float32(0.125) and view.zero_point == 0,
              f"{kind} {index} ({name}) has scale {view.scale} and zeroPoint "
              f"{view.zero_point}; a {T(view.type).name} box tensor needs scale 0.125, zeroPoint 0")


def check_boxes_ordered(boxes: np.ndarray, index: int, name: str) -> None:
    """Every box (x1, y1, x2, y2) of ``boxes`` [..., 4] (real values) must have x1 <= x2 and
    y1 <= y2. Raises OperationError naming input ``index``."""
    b = boxes.reshape(-1, 4)
    bad = np.nonzero(~((b[:, 0] <= b[:, 2]) & (b[:, 1] <= b[:, 3])))[0]
    check(bad.size == 0, f"input {index} ({name}) box {int(bad[0]) if bad.size else 0} "
                         f"{b[bad[0]].tolist() if bad.size else ''} has x2 < x1 or y2 < y1")


def iou_with(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection over union of ``box`` [4] with each of ``boxes`` [n, 4] (corners
    x1, y1, x2, y2), float64 [n]; 0 / 0 (two empty boxes) gives NaN, as in AOSP."""
    area1 = (box[2] - box[0]) * (box[3] - box[1])
    area2 = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    w = np.maximum(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0.0)
    h = np.maximum(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0.0)
    inter = w * h
    with np.errstate(all="ignore"):
        return inter / (area1 + area2 - inter)


def _nms(scores: np.ndarray, boxes: np.ndarray, candidates: np.ndarray, max_keep: int,
         suppress) -> list[int]:
    """Greedy NMS over ``candidates`` (int array of ids into ``scores`` [m] and ``boxes``
    [m, 4], in working order). ``max_keep`` < 0: no limit. ``suppress(iou, rest)`` returns
    the mask of ``rest`` (ids) to drop given their IoU with the box just kept (it may update
    ``scores`` in place, as soft NMS does). Returns the kept ids in selection order.

    The working order evolves as in AOSP ``hardNmsSingleClass`` / ``softNmsSingleClass``:
    the first best candidate is swapped to the front; a dropped candidate is swapped with
    the last live one, which is examined in its place (so the holes left by dropped
    candidates fill with the later survivors in reverse order)."""
    order = np.asarray(candidates, dtype=np.int64)
    limit = len(order) if max_keep < 0 else max_keep
    check(min(limit, len(order)) * len(order) <= MAX_NMS_PAIRS,
          f"NMS over {len(order)} candidates exceeds the reference's work bound "
          f"({MAX_NMS_PAIRS} box comparisons)")
    kept: list[int] = []
    while len(order) and len(kept) < limit:
        j = int(np.argmax(scores[order]))  # the first best in working order
        order[0], order[j] = order[j], order[0]
        best, rest = int(order[0]), order[1:]
        kept.append(best)
        if not len(rest):
            break
        drop = suppress(iou_with(boxes[best], boxes[rest]), rest)
        live = ~drop
        n_live = int(live.sum())
        new = rest[:n_live].copy()
        holes = ~live[:n_live]
        new[holes] = rest[n_live:][live[n_live:]][::-1]
        order = new
    return kept


def _hard(iou_threshold: float):
    """Suppression rule of hard NMS: IoU >= iou_threshold drops a candidate."""
    return lambda iou, rest: iou >= iou_threshold


def box_transform(boxes: np.ndarray, deltas: np.ndarray, height, width) -> np.ndarray:
    """AXIS_ALIGNED_BBOX_TRANSFORM of corner boxes [..., 4] by deltas [..., 4] (dx, dy,
    dw, dh; broadcast against boxes), clipped to [0, width] x [0, height] (broadcastable
    arrays); float64."""
    w = boxes[..., 2] - boxes[..., 0]
    h = boxes[..., 3] - boxes[..., 1]
    cx = (boxes[..., 0] + boxes[..., 2]) / 2 + deltas[..., 0] * w
    cy = (boxes[..., 1] + boxes[..., 3]) / 2 + deltas[..., 1] * h
    nw = np.exp(deltas[..., 2]) * w
    nh = np.exp(deltas[..., 3]) * h
    out = np.stack([cx - nw / 2, cy - nh / 2, cx + nw / 2, cy + nh / 2], axis=-1)
    lo = np.zeros_like(out)
    hi = np.stack([width, height, width, height], axis=-1)
    return np.minimum(np.maximum(out, lo), hi)


def _memo(ctx: OpContext, compute):
    """``compute(ctx)`` once per context (``prepare`` and ``execute`` of a data-dependent
    output shape share one computation)."""
    cached = getattr(ctx, "_detection_result", None)
    if cached is None:
        cached = compute(ctx)
        ctx._detection_result = cached
    return cached


# --- random-graph drafting helpers (runtime/ops/generation.py; roi.py uses them too) -------
#: Grid of generated box coordinates: multiples of 1/8, the TENSOR_QUANT16 box scale, so a
#: box is exact in every box type (TENSOR_FLOAT16 too while coordinates stay below 256).
BOX_UNIT = 8


def box_values(d, t: OperandType, units: np.ndarray) -> np.ndarray:
    """Box coordinates given in 1/8 units as slot type ``t`` stores them (quant16: the units
    themselves, scale 0.125 zero point 0; floats: units / 8)."""
    units = np.asarray(units, np.int64)
    return units if box_quant(t) is not None else units / BOX_UNIT


def draft_boxes(d, n: int, width_units: int, height_units: int) -> np.ndarray:
    """``n`` valid boxes [n, 4] (x1 <= x2, y1 <= y2) in 1/8 units inside [0, width_units] x
    [0, height_units]; a box now and then is degenerate (x1 == x2 or y1 == y2)."""
    x = np.sort(d.rng.integers(0, max(width_units, 0) + 1, (n, 2)), axis=1)
    y = np.sort(d.rng.integers(0, max(height_units, 0) + 1, (n, 2)), axis=1)
    return np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], 1)


def _clustered_boxes(d, n: int, extent_units: int) -> np.ndarray:
    """``n`` valid boxes [n, 4] in 1/8 units inside [0, extent]^2, jittered around one to
    three cluster boxes, so that many pairs overlap (what NMS is about)."""
    centers = d.rng.uniform(0.2, 0.8, (d.integer(1, 3), 2)) * extent_units
    sizes = d.rng.uniform(0.1, 0.4, centers.shape) * extent_units
    pick = d.rng.integers(0, len(centers), n)
    c = centers[pick] + d.rng.normal(0, 0.15, (n, 2)) * sizes[pick]
    half = sizes[pick] * d.rng.uniform(0.35, 0.65, (n, 2))
    lo = np.clip(np.round(c - half), 0, extent_units)
    hi = np.clip(np.round(c + half), lo, extent_units)
    return np.stack([lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]], 1).astype(np.int64)


def _boxes_valid(value: np.ndarray, scale: float, zero_point: int, quant: bool) -> bool:
    """Whether ``value`` [n, 4] holds valid, finite, non-negative boxes."""
    b = np.asarray(value, np.float64).reshape(-1, 4)
    if quant:
        b = (b - zero_point) * scale
    return bool(b.size and np.all(np.isfinite(b)) and np.all(b >= 0)
                and np.all(b[:, 0] <= b[:, 2]) and np.all(b[:, 1] <= b[:, 3]))


def linked_boxes(d, limit: int = 64) -> bool:
    """Whether input 0 (a box tensor) links to an earlier [n <= limit, 4] output holding
    valid boxes (a GENERATE_PROPOSALS / BOX_WITH_NMS_LIMIT roi output, say)."""
    p, s = d.primary, d[0]
    return p is not None and p.type == s.type and len(p.dims) == 2 and p.dims[1] == 4 \
        and 1 <= p.dims[0] <= limit and (box_quant(s.type) is None or
                                         (p.scale, p.zero_point) == BOX_QUANT) \
        and _boxes_valid(p.value, p.scale, p.zero_point, box_quant(s.type) is not None)


def score_slot(d, k: int) -> None:
    """Slot ``k`` holds scores in [0, 1]; quantized: a scale of 1/255..1/128 from the type's
    minimum (kept when input 0 links to an earlier output whose values are in [0, 1])."""
    s = d[k]
    s.low, s.high = 0.0, 1.0
    if not is_quantized_type(s.type):
        return
    p = d.primary
    if k == 0 and p is not None and list(p.dims) == s.dims and \
            (p.scale, p.zero_point) == (s.scale, s.zero_point) and in_range(s, p.value):
        return
    s.scale = float(np.float32(1.0 / d.uniform(128, 255)))
    s.zero_point = quant_limits(s.type)[0]


def moderate_slot(d, k: int, bound: float) -> None:
    """Slot ``k`` holds values in [-bound, bound] (box deltas: exp(dw) stays moderate);
    quantized: a scale that spreads that range over most of the type's levels, zero point
    near the middle."""
    s = d[k]
    s.low, s.high = -bound, bound
    if is_quantized_type(s.type):
        lo, hi = quant_limits(s.type)
        s.scale = float(np.float32(2 * bound * d.uniform(1.05, 1.5) / (hi - lo)))
        s.zero_point = (lo + hi + 1) // 2 + d.integer(-8, 8)


# --- AXIS_ALIGNED_BBOX_TRANSFORM ---------------------------------------------------------

def _bbox_sigs():
    out = []
    for level, data, box, _ in BOX_FORMS:
        q = box_quant(box)
        out.append(sig(level, [tensor("roi", box, (2,), fixed_quant=q), tensor("deltas", data, (2,)),
                             tensor("batches", I32, (1,)),
                             tensor("image_info", box, (2,), fixed_quant=q)],
                       [tensor("output", box, (2,), fixed_quant=q)]))
    return tuple(out)


def _bbox_prepare(ctx: OpContext):
    """Output [num_rois, 4 * num_classes]; checks shapes and quant16 parameters."""
    roi, deltas, batches, info = ctx.inputs[:4]
    check(roi.rank == 2 and deltas.rank == 2 and batches.rank == 1 and info.rank == 2,
          f"inputs 0-3 must have ranks 2, 2, 1, 2, got {list(roi.dims)}, {list(deltas.dims)}, "
          f"{list(batches.dims)}, {list(info.dims)}")
    n = roi.dims[0]
    check(roi.dims[1] == 4, f"input 0 (roi) must be [num_rois, 4], got {list(roi.dims)}")
    check(deltas.dims[0] == n and deltas.dims[1] % 4 == 0 and deltas.dims[1] > 0,
          f"input 1 (deltas) must be [{n}, 4 * num_classes] with num_classes > 0, got "
          f"{list(deltas.dims)}")
    check(batches.dims[0] == n, f"input 2 (batches) must be [{n}], got {list(batches.dims)}")
    check(info.dims[0] > 0 and info.dims[1] == 2,
          f"input 3 (image_info) must be [num_batches > 0, 2], got {list(info.dims)}")
    check_box_quant(roi, 0, "roi")
    check_box_quant(info, 3, "image_info")
    check_box_quant(ctx.outputs[0], 0, "output", "output")
    return [(n, deltas.dims[1])]


def _bbox_execute(ctx: OpContext):
    """Each roi moved by each class's deltas and clipped to its batch's image."""
    roi, deltas, batches, info = ctx.inputs[:4]
    n, width = deltas.dims
    if n == 0:
        return [from_float(ctx.outputs[0], np.zeros((0, width)))]
    b = ctx.value(2).astype(np.int64)
    bad = np.nonzero((b < 0) | (b >= info.dims[0]))[0]
    check(bad.size == 0, f"input 2 (batches) value {int(b[bad[0]]) if bad.size else 0} is out "
                         f"of range [0, {info.dims[0]})")
    boxes = to_float(roi)
    check_boxes_ordered(boxes, 0, "roi")
    image = to_float(info)[b]  # [n, 2] (height, width)
    d = to_float(deltas).reshape(n, -1, 4)
    out = box_transform(boxes[:, None, :], d, image[:, 0:1], image[:, 1:2])
    return [from_float(ctx.outputs[0], out.reshape(n, width))]


def _generate_bbox(d) -> None:
    """Valid rois (x1 <= x2, y1 <= y2) inside the images, batch indexes in [0, num_batches),
    positive image sizes, deltas in [-1, 1] for 1-4 classes (NNAPI: roi/deltas/batches agree
    on num_rois, deltas are 4 * num_classes wide; quant16 boxes at scale 0.125)."""
    if linked_boxes(d):  # input 0 keeps an earlier op's boxes: images cover them
        n = d.dims0[0]
        d.tensor(0, d.dims0)
        p = d.primary
        top = float(np.max((np.asarray(p.value, np.float64) - p.zero_point) * (p.scale or 1.0)))
        extent = max(16.0, float(np.ceil(top)))
    else:
        n = d.dim(1, 8)
        extent = float(d.integer(16, 128))
        d.param(0, box_values(d, d[0].type, draft_boxes(d, n, int(extent * BOX_UNIT),
                                                        int(extent * BOX_UNIT))))
    d.tensor(1, [n, 4 * d.dim(1, 4)])
    moderate_slot(d, 1, 1.0)
    batches = d.dim(1, 3)
    d.param(2, d.rng.integers(0, batches, n).astype(np.int32), [n])
    d.tensor(3, [batches, 2], low=extent, high=extent * 1.5)  # (height, width) per image


register(OperationDef(OperationType.AXIS_ALIGNED_BBOX_TRANSFORM, _bbox_sigs(), _bbox_prepare,
                      _bbox_execute, generate=_generate_bbox,
                      error_budget=budgets.composed(budgets.Ulps(40.5, 10.5), "box decoding"),
                      summary="Bounding-box regression of rois by per-class deltas, clipped to the image",
                      allows_zero_sized_input=True, aosp_source="GenerateProposalsExecution.cpp"))


# --- BOX_WITH_NMS_LIMIT ---------------------------------------------------------------

def _nmslimit_sigs():
    out = []
    for level, data, box, f in BOX_FORMS:
        q = box_quant(box)
        out.append(sig(level, [tensor("scores", data, (2,)), tensor("roi", box, (2,), fixed_quant=q),
                             tensor("batches", I32, (1,)), scalar("score_threshold", f),
                             scalar("max_num_detections", T.INT32),
                             scalar("nms_kernel", T.INT32), scalar("iou_threshold", f),
                             scalar("sigma", f), scalar("nms_score_threshold", f)],
                       [tensor("scores_out", data, (1,)), tensor("roi_out", box, (2,), fixed_quant=q),
                        tensor("classes_out", I32, (1,)), tensor("batches_out", I32, (1,))]))
    return tuple(out)


def _nmslimit_check(ctx: OpContext) -> tuple[int, int]:
    scores, roi, batches = ctx.inputs[:3]
    check(scores.rank == 2 and roi.rank == 2 and batches.rank == 1,
          f"inputs 0-2 must have ranks 2, 2, 1, got {list(scores.dims)}, {list(roi.dims)}, "
          f"{list(batches.dims)}")
    n, classes = scores.dims
    check(classes > 1, f"input 0 (scores) must have num_classes > 1, got {list(scores.dims)}")
    check(tuple(roi.dims) == (n, 4 * classes),
          f"input 1 (roi) must be [{n}, {4 * classes}], got {list(roi.dims)}")
    check(batches.dims[0] == n, f"input 2 (batches) must be [{n}], got {list(batches.dims)}")
    check_box_quant(roi, 1, "roi")
    kernel = ctx.scalar(5)
    check(kernel in (0, 1, 2), f"input 5 (nms_kernel) value {kernel} is not 0 (hard), "
                               f"1 (linear) or 2 (Gaussian)")
    return n, classes


def _nmslimit_compute(ctx: OpContext):
    """(selected flat score indexes, their final scores, batch ids), in output order."""
    n, classes = _nmslimit_check(ctx)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
    scores = to_float(ctx.inputs[0]).reshape(-1).copy()
    boxes = to_float(ctx.inputs[1]).reshape(-1, 4)
    check_boxes_ordered(boxes, 1, "roi")
    batch = ctx.value(2).astype(np.int64)
    score_thr, max_det, kernel = float(ctx.scalar(3)), int(ctx.scalar(4)), int(ctx.scalar(5))
    iou_thr, sigma, nms_thr = float(ctx.scalar(6)), float(ctx.scalar(7)), float(ctx.scalar(8))
    if kernel == 0:
        factor = lambda iou: np.where(iou < iou_thr, 1.0, 0.0)  # noqa: E731
    elif kernel == 1:
        factor = lambda iou: np.where(iou < iou_thr, 1.0, 1.0 - iou)  # noqa: E731
    else:
        factor = lambda iou: np.exp(-1.0 * iou * iou / sigma)  # noqa: E731

    def suppress(iou, rest):
        scores[rest] *= factor(iou)
        return scores[rest] < nms_thr

    # runs of equal batch ids (AOSP: "boxes of the same batch are grouped together")
    starts = np.concatenate([[0], np.nonzero(np.diff(batch))[0] + 1])
    ends = np.concatenate([starts[1:], [n]])
    sel_all, batch_all = [], []
    for s, e in zip(starts, ends):
        result: list[int] = []
        for c in range(1, classes):
            idx = np.arange(s, e) * classes + c
            cand = idx[scores[idx] > score_thr]
            result += _nms(scores, boxes, cand, max_det, suppress)
        res = np.asarray(result, np.int64)
        res = res[np.argsort(-scores[res], kind="stable")]
        if max_det >= 0:
            res = res[:max_det]
        res = res[np.lexsort((-scores[res], res % classes))]
        sel_all.append(res)
        batch_all.append(np.full(len(res), batch[s], np.int64))
    sel = np.concatenate(sel_all)
    return sel, scores[sel], np.concatenate(batch_all)


def _nmslimit_prepare(ctx: OpContext):
    """Outputs [k], [k, 4], [k], [k] with k the number of boxes kept (data dependent)."""
    sel, _, _ = _memo(ctx, _nmslimit_compute)
    k = len(sel)
    return [(k,), (k, 4), (k,), (k,)]


def _nmslimit_execute(ctx: OpContext):
    """Kept scores (requantized), their class's box (raw), class and batch ids."""
    sel, sc, bt = _memo(ctx, _nmslimit_compute)
    _, classes = ctx.inputs[0].dims
    roi = ctx.inputs[1].value.reshape(-1, 4)
    out_roi = roi[sel] if len(sel) else np.zeros((0, 4), roi.dtype)
    if ctx.outputs[1].type != ctx.inputs[1].type or \
            (ctx.outputs[1].scale, ctx.outputs[1].zero_point) != (ctx.inputs[1].scale,
                                                                  ctx.inputs[1].zero_point):
        out_roi = from_float(ctx.outputs[1], to_float(ctx.inputs[1], out_roi))
    return [from_float(ctx.outputs[0], sc), out_roi,
            (sel % classes).astype(np.int32), bt.astype(np.int32)]


def _generate_nmslimit(d) -> None:
    """Scores in [0, 1] for 2-5 classes, overlapping valid boxes per class, batch ids sorted
    (NNAPI: a batch's boxes are consecutive), every kernel, thresholds so that some box
    usually survives (the outputs' size is data dependent)."""
    dims = d.dims0
    if d.primary is not None and len(dims) == 2 and dims[1] >= 2 and dims[0] * dims[1] <= 64:
        n, classes = dims
    else:
        n, classes = d.dim(1, 12) if d.coin(0.2) else d.integer(3, 12), d.dim(2, 5)
    d.tensor(0, [n, classes])
    score_slot(d, 0)
    extent = d.integer(16, 96) * BOX_UNIT
    d.param(1, box_values(d, d[1].type, _clustered_boxes(d, n * classes, extent)), [n, 4 * classes])
    d.param(2, np.sort(d.rng.integers(0, d.integer(1, 3), n)).astype(np.int32), [n])
    d.param(3, d.uniform(0.0, 0.4))  # score_threshold
    d.param(4, -1 if d.coin(0.25) else d.integer(1, n * (classes - 1)))  # < 0: unlimited
    d.param(6, d.uniform(0.2, 0.8))  # iou_threshold
    d.param(7, d.uniform(0.1, 1.0))  # sigma (Gaussian kernel)
    d.param(8, d.uniform(0.0, 0.3) if d.coin(0.8) else 0.0)  # nms_score_threshold


register(OperationDef(OperationType.BOX_WITH_NMS_LIMIT, _nmslimit_sigs(), _nmslimit_prepare,
                      _nmslimit_execute, generate=_generate_nmslimit, error_budget=budgets.box_with_nms_limit(),
                      decision=any_error_decision(0, 1),
                      summary="Per-class hard / linear / Gaussian NMS with score threshold and "
                              "detection limit",
                      allows_zero_sized_input=True, aosp_source="GenerateProposalsExecution.cpp"))


# --- GENERATE_PROPOSALS ----------------------------------------------------------------

def _proposal_sigs():
    out = []
    for level, data, anchor, info, f in ((FL3, F32, F32, F32, T.FLOAT32),
                                         (FL3, F16, F16, F16, T.FLOAT16),
                                         (FL3, Q8, Q16S, Q16A, T.FLOAT32),
                                         (4, Q8S, Q16S, Q16A, T.FLOAT32)):
        out.append(sig(level, [tensor("scores", data, (4,)), tensor("deltas", data, (4,)),
                             tensor("anchors", anchor, (2,), fixed_quant=box_quant(anchor)),
                             tensor("image_info", info, (2,), fixed_quant=box_quant(info)),
                             scalar("height_stride", f), scalar("width_stride", f),
                             scalar("pre_nms_top_n", T.INT32), scalar("post_nms_top_n", T.INT32),
                             scalar("iou_threshold", f), scalar("min_size", f),
                             scalar("layout", T.BOOL)],
                       [tensor("scores_out", data, (1,)),
                        tensor("roi_out", info, (2,), fixed_quant=box_quant(info)),
                        tensor("batches_out", I32, (1,))]))
    return tuple(out)


def _proposal_check(ctx: OpContext, nchw: bool) -> tuple[int, int, int, int]:
    scores, deltas, anchors, info = ctx.inputs[:4]
    check(scores.rank == 4 and deltas.rank == 4 and anchors.rank == 2 and info.rank == 2,
          f"inputs 0-3 must have ranks 4, 4, 2, 2, got {list(scores.dims)}, {list(deltas.dims)}, "
          f"{list(anchors.dims)}, {list(info.dims)}")
    b, h, w, a = (scores.dims[0], scores.dims[2], scores.dims[3], scores.dims[1]) if nchw \
        else scores.dims
    want = (b, 4 * a, h, w) if nchw else (b, h, w, 4 * a)
    check(tuple(deltas.dims) == want,
          f"input 1 (deltas) must be {list(want)}, got {list(deltas.dims)}")
    check(tuple(anchors.dims) == (a, 4), f"input 2 (anchors) must be [{a}, 4], got {list(anchors.dims)}")
    check(tuple(info.dims) == (b, 2), f"input 3 (image_info) must be [{b}, 2], got {list(info.dims)}")
    check_box_quant(anchors, 2, "anchors")
    check_box_quant(info, 3, "image_info")
    return b, h, w, a


def _proposal_compute(ctx: OpContext):
    """(scores, boxes [k, 4], batches) of the proposals, float64 / int."""
    nchw = layout_flag(ctx, 10)
    b, h, w, a = _proposal_check(ctx, nchw)
    if b * h * w * a == 0:
        return np.zeros(0), np.zeros((0, 4)), np.zeros(0, np.int64)
    scores = to_nhwc(to_float(ctx.inputs[0]), nchw).reshape(b, -1)
    deltas = to_nhwc(to_float(ctx.inputs[1]), nchw).reshape(b, -1, 4)
    anchors = to_float(ctx.inputs[2])
    info = to_float(ctx.inputs[3])
    hs, ws = float(ctx.scalar(4)), float(ctx.scalar(5))
    pre, post = int(ctx.scalar(6)), int(ctx.scalar(7))
    iou_thr, min_size = float(ctx.scalar(8)), float(ctx.scalar(9))
    shift = np.stack(np.meshgrid(np.arange(h) * hs, np.arange(w) * ws, indexing="ij"), -1)
    shift = np.concatenate([shift[..., ::-1], shift[..., ::-1]], -1)  # (ws, hs, ws, hs)
    base = (shift[:, :, None, :] + anchors[None, None]).reshape(-1, 4)
    out_s, out_b, out_i = [], [], []
    for k in range(b):
        boxes = box_transform(base, deltas[k], info[k, 0], info[k, 1])
        sc = scores[k]
        select = np.arange(len(sc))
        if 0 < pre < len(select):
            select = np.argsort(-sc, kind="stable")[:pre]
        bw = boxes[select, 2] - boxes[select, 0]
        bh = boxes[select, 3] - boxes[select, 1]
        keep = (bw > min_size) & (bh > min_size) & (boxes[select, 0] + bw / 2 < info[k, 1]) & \
            (boxes[select, 1] + bh / 2 < info[k, 0])
        kept = _nms(sc, boxes, select[keep], post, _hard(iou_thr))
        out_s.append(sc[kept])
        out_b.append(boxes[kept].reshape(-1, 4))
        out_i.append(np.full(len(kept), k, np.int64))
    return np.concatenate(out_s), np.concatenate(out_b), np.concatenate(out_i)


def _proposal_prepare(ctx: OpContext):
    """Outputs [k], [k, 4], [k] with k the number of proposals (data dependent)."""
    sc, _, _ = _memo(ctx, _proposal_compute)
    return [(len(sc),), (len(sc), 4), (len(sc),)]


def _proposal_execute(ctx: OpContext):
    sc, boxes, batches = _memo(ctx, _proposal_compute)
    return [from_float(ctx.outputs[0], sc), from_float(ctx.outputs[1], boxes),
            batches.astype(np.int32)]


def _generate_proposals(d) -> None:
    """Scores [b, h, w, a] in [0, 1] (NCHW when layout), deltas [b, h, w, 4a] in [-0.5, 0.5],
    valid anchors [a, 4] centred on the first cell, strides > 0 and image_info (height,
    width) covering the h x w cells (NNAPI GENERATE_PROPOSALS; quant16 at scale 0.125)."""
    nchw = bool(d.slot("layout").value)
    if d.primary is not None and len(d.dims0) == 4:
        b, h, w, a = nhwc_dims(d.dims0, nchw)
    else:
        b = h = w = a = 0
    if not (b and h and w and a and b <= 4 and a <= 8 and h * w <= 256 and 4 * b * h * w * a <= d.max_elements):
        b, h, w, a = d.dim(1, 2), d.dim(1, 8), d.dim(1, 8), d.dim(1, 4)
    d.tensor(0, layout_dims((b, h, w, a), nchw))
    score_slot(d, 0)
    d.tensor(1, layout_dims((b, h, w, 4 * a), nchw))
    moderate_slot(d, 1, 0.5)
    hs, ws = d.integer(2, 16) / 2, d.integer(2, 16) / 2  # multiples of 0.5: exact everywhere
    size = d.rng.uniform(0.5, 2.5, (a, 2)) * (ws, hs)  # anchor (width, height)
    cx, cy = ws / 2, hs / 2
    anchors = np.round(np.stack([cx - size[:, 0] / 2, cy - size[:, 1] / 2,
                                 cx + size[:, 0] / 2, cy + size[:, 1] / 2], 1) * BOX_UNIT)
    d.param(2, box_values(d, d[2].type, anchors), [a, 4])
    info = np.round(np.array([h * hs, w * ws]) * BOX_UNIT * d.rng.uniform(0.8, 1.1, (b, 2)))
    d.param(3, box_values(d, d[3].type, np.maximum(info, BOX_UNIT)), [b, 2])
    d.param(4, hs)
    d.param(5, ws)
    cells = h * w * a
    d.param(6, d.choice((0, -1)) if d.coin(0.3) else d.integer(1, cells))  # <= 0: all
    d.param(7, -1 if d.coin(0.3) else d.integer(1, cells))  # < 0: all
    d.param(8, d.uniform(0.3, 0.9))  # iou_threshold
    d.param(9, d.uniform(0.0, 0.3) * min(hs, ws))  # min_size


register(OperationDef(OperationType.GENERATE_PROPOSALS, _proposal_sigs(), _proposal_prepare,
                      _proposal_execute, generate=_generate_proposals,
                      error_budget=budgets.composed(budgets.Ulps(40.5, 10.5), "box decoding"),
                      decision=any_error_decision(0, 1, 2, 3),
                      summary="Region proposals from anchors, box deltas and objectness scores",
                      aosp_source="GenerateProposalsExecution.cpp"))


# --- DETECTION_POSTPROCESSING ----------------------------------------------------------

def _postprocess_sigs():
    out = []
    for data, f in ((F32, T.FLOAT32), (F16, T.FLOAT16)):
        out.append(sig(FL3, [tensor("scores", data, (3,)), tensor("deltas", data, (3,)),
                             tensor("anchors", data, (2,)), scalar("scale_y", f),
                             scalar("scale_x", f), scalar("scale_h", f), scalar("scale_w", f),
                             scalar("use_regular_nms", T.BOOL),
                             scalar("max_num_detections", T.INT32),
                             scalar("max_classes_per_detection", T.INT32),
                             scalar("max_num_detections_per_class", T.INT32),
                             scalar("score_threshold", f), scalar("iou_threshold", f),
                             scalar("is_bg_in_label", T.BOOL)],
                       [tensor("scores_out", data, (2,)), tensor("boxes_out", data, (3,)),
                        tensor("classes_out", I32, (2,)), tensor("detections_out", I32, (1,))]))
    return tuple(out)


def _postprocess_params(ctx: OpContext):
    scores, deltas, anchors = ctx.inputs[:3]
    check(scores.rank == 3 and deltas.rank == 3 and anchors.rank == 2,
          f"inputs 0-2 must have ranks 3, 3, 2, got {list(scores.dims)}, {list(deltas.dims)}, "
          f"{list(anchors.dims)}")
    b, n_anchors, classes = scores.dims
    check(deltas.dims[0] == b and deltas.dims[1] == n_anchors,
          f"input 1 (deltas) must be [{b}, {n_anchors}, >= 4], got {list(deltas.dims)}")
    check(deltas.dims[2] >= 4, f"input 1 (deltas) box encoding length {deltas.dims[2]} must be >= 4")
    check(tuple(anchors.dims) == (n_anchors, 4),
          f"input 2 (anchors) must be [{n_anchors}, 4], got {list(anchors.dims)}")
    check(classes > 1, f"input 0 (scores) must have num_classes > 1, got {list(scores.dims)}")
    for i, name in ((3, "scale_y"), (4, "scale_x"), (5, "scale_h"), (6, "scale_w")):
        v = ctx.scalar(i)
        check(v > 0, f"input {i} ({name}) value {v} must be > 0")
    for i, name in ((11, "score_threshold"), (12, "iou_threshold")):
        v = ctx.scalar(i)
        check(v >= 0, f"input {i} ({name}) value {v} must be >= 0")
    regular = bool(ctx.scalar(7))
    max_det, max_cls, max_per_cls = ctx.scalar(8), ctx.scalar(9), ctx.scalar(10)
    check(max_det > 0, f"input 8 (max_num_detections) value {max_det} must be > 0")
    if regular:
        check(max_per_cls > 0, f"input 10 (max_num_detections_per_class) value {max_per_cls} "
                               f"must be > 0 with regular NMS")
        n_out = max_det
    else:
        check(max_cls > 0, f"input 9 (max_classes_per_detection) value {max_cls} must be > 0 "
                           f"with fast NMS")
        n_out = max_det * max_cls
    check(b * n_out <= 1 << 24, f"output size {b} x {n_out} is past the reference's bound")
    return b, n_anchors, classes, regular, max_det, max_cls, max_per_cls, n_out


def _postprocess_prepare(ctx: OpContext):
    """Outputs [b, n], [b, n, 4], [b, n], [b]."""
    b, *_, n_out = _postprocess_params(ctx)
    return [(b, n_out), (b, n_out, 4), (b, n_out), (b,)]


def _postprocess_execute(ctx: OpContext):
    b, n_anchors, classes, regular, max_det, max_cls, max_per_cls, n_out = \
        _postprocess_params(ctx)
    scores = to_float(ctx.inputs[0])
    deltas = to_float(ctx.inputs[1])
    anchors = to_float(ctx.inputs[2])
    sy, sx, sh, sw = (float(ctx.scalar(i)) for i in range(3, 7))
    score_thr, iou_thr = float(ctx.scalar(11)), float(ctx.scalar(12))
    bg_offset = 0 if bool(ctx.scalar(13)) else 1
    out_s = np.zeros((b, n_out))
    out_b = np.zeros((b, n_out, 4))
    out_c = np.zeros((b, n_out), np.int32)
    out_n = np.zeros(b, np.int32)
    for k in range(b):
        d = deltas[k]
        yc = anchors[:, 0] + anchors[:, 2] * d[:, 0] / sy
        xc = anchors[:, 1] + anchors[:, 3] * d[:, 1] / sx
        hh = anchors[:, 2] * np.exp(d[:, 2] / sh) * 0.5
        wh = anchors[:, 3] * np.exp(d[:, 3] / sw) * 0.5
        boxes = np.stack([yc - hh, xc - wh, yc + hh, xc + wh], -1)  # (y1, x1, y2, x2)
        sc = scores[k]
        if regular:
            flat = sc.reshape(-1)
            class_boxes = np.repeat(boxes, classes, axis=0)  # box of flat index a * C + c
            select: list[int] = []
            for c in range(1, classes):
                idx = np.arange(n_anchors) * classes + c
                select += _nms(flat, class_boxes, idx[flat[idx] > score_thr], max_per_cls,
                               _hard(iou_thr))
            sel = np.asarray(select, np.int64)
            sel = sel[np.argsort(-flat[sel], kind="stable")][:max_det]
            m = len(sel)
            out_s[k, :m] = flat[sel]
            out_b[k, :m] = boxes[sel // classes]
            out_c[k, :m] = sel % classes - bg_offset
            out_n[k] = m
        else:
            n_cls = min(classes - 1, max_cls)
            best = sc[:, 1:].max(axis=1)
            cand = np.nonzero(best > score_thr)[0]
            kept = np.asarray(_nms(best, boxes, cand, max_det, _hard(iou_thr)), np.int64)
            order = np.argsort(-sc[kept, 1:], axis=1, kind="stable")[:, :n_cls] + 1  # [m, n_cls]
            m = len(kept) * n_cls
            out_s[k, :m] = np.take_along_axis(sc[kept], order, 1).reshape(-1)
            out_b[k, :m] = np.repeat(boxes[kept], n_cls, axis=0)
            out_c[k, :m] = (order - bg_offset).reshape(-1)
            out_n[k] = m
    return [from_float(ctx.outputs[0], out_s), from_float(ctx.outputs[1], out_b), out_c, out_n]


def _generate_postprocess(d) -> None:
    """Scores [b, anchors, 2-5 classes] in [0, 1], deltas [b, anchors, 4-8] in [-1, 1],
    valid anchors (centre in [0, 1], size > 0, overlapping), scales > 0, detection limits
    > 0, thresholds >= 0 (NNAPI DETECTION_POSTPROCESSING)."""
    dims = d.dims0
    if d.primary is not None and len(dims) == 3 and dims[0] <= 4 and 2 <= dims[2] <= 16 \
            and dims[1] <= 64 and dims[0] * dims[1] * 8 <= d.max_elements:
        b, n, classes = dims
    else:
        b, n, classes = d.dim(1, 2), d.dim(1, 12), d.dim(2, 5)
    d.tensor(0, [b, n, classes])
    score_slot(d, 0)
    d.tensor(1, [b, n, 4 if d.coin(0.7) else d.integer(5, 8)], low=-1.0, high=1.0)
    centers = d.rng.uniform(0.2, 0.8, (d.integer(1, 3), 2))
    c = centers[d.rng.integers(0, len(centers), n)] + d.rng.normal(0, 0.05, (n, 2))
    d.param(2, np.concatenate([c, d.rng.uniform(0.1, 0.5, (n, 2))], 1), [n, 4])  # cy, cx, h, w
    for k in range(3, 7):  # scale_y, scale_x, scale_h, scale_w (SSD: 10, 10, 5, 5)
        d.param(k, d.uniform(1.0, 10.0))
    d.param(8, d.integer(1, min(10, n * (classes - 1))))  # max_num_detections
    d.param(9, d.integer(1, classes))  # max_classes_per_detection (may pass num_classes - 1)
    d.param(10, d.integer(1, n))  # max_num_detections_per_class
    d.param(11, d.uniform(0.0, 0.5))  # score_threshold
    d.param(12, d.uniform(0.2, 0.8))  # iou_threshold


register(OperationDef(OperationType.DETECTION_POSTPROCESSING, _postprocess_sigs(),
                      _postprocess_prepare, _postprocess_execute, generate=_generate_postprocess,
                      error_budget=budgets.composed(budgets.Ulps(40.5, 10.5), "box decoding"),
                      decision=any_error_decision(0, 1, 2),
                      summary="SSD box decoding with regular or fast NMS (fixed-size outputs)",
                      aosp_source="GenerateProposalsExecution.cpp"))
