"""Region-of-interest operations of feature level 3: ROI_ALIGN, ROI_POOLING and
HEATMAP_MAX_KEYPOINT.

ROI_ALIGN (81, FL3)
    Inputs: 0 input [batches, height, width, depth] (NCHW when input 9 is true), 1 roi
    [num_rois, 4] (x1, y1, x2, y2 in image coordinates), 2 batch_index TENSOR_INT32
    [num_rois], 3 output_height, 4 output_width (INT32 > 0), 5 height_stride, 6 width_stride
    (ratio of image to feature map, > 0; FLOAT32, FLOAT16 for TENSOR_FLOAT16), 7
    height_sampling_ratio, 8 width_sampling_ratio (INT32 >= 0; 0 = adaptive,
    ceil(roi size / output size)), 9 layout BOOL. Output [num_rois, output_height,
    output_width, depth] (NCHW: [num_rois, depth, output_height, output_width]); num_rois
    may be 0 (zero-sized output). Each output cell is the mean of its bin's
    sampling_ratio^2 bilinearly interpolated points; the roi is at least 1 x 1 feature
    cells; samples past the last row / column use it.
ROI_POOLING (82, FL3)
    Inputs as ROI_ALIGN without the sampling ratios (7 is the layout). Each output cell is
    the maximum over its bin of the roi, whose corners are rounded to feature cells
    (round half away from zero, inclusive end); an empty bin gives the zero point (0).
    Values move raw: a quantized output must keep input 0's scale and zeroPoint.
HEATMAP_MAX_KEYPOINT (56, FL3)
    Inputs: 0 heatmaps [num_boxes, size, size, num_keypoints] (NCHW when input 2 is true;
    size >= 2), 1 boxes [num_boxes, 4] (x1, y1, x2, y2), 2 layout BOOL. Outputs: 0 scores
    [num_boxes, num_keypoints], 1 keypoints [num_boxes, num_keypoints, 2] (x, y). Per
    heatmap: the first maximum, refined by the extremum of the quadratic fitted to its 3x3
    neighbourhood (mirrored at the borders; offset clipped to 1.5 cells, no refinement when
    the Hessian is singular: |det| < atol + rtol * A00 * A11 with 1e-5, 1e-3 for
    TENSOR_FLOAT16), mapped into its box.

Types (FL3): TENSOR_FLOAT32 or TENSOR_FLOAT16 for the data and boxes; TENSOR_QUANT8_ASYMM
data with TENSOR_QUANT16_ASYMM boxes (scale 0.125, zeroPoint 0; keypoints output too).
FL4 (all three operations): TENSOR_QUANT8_ASYMM_SIGNED data with TENSOR_QUANT16_ASYMM
boxes, otherwise as the TENSOR_QUANT8_ASYMM form (same kernels on dequantized values;
ROI_POOLING moves raw int8 values, an empty bin gives the zero point).
Errors (OperationError naming the input): wrong ranks; roi not [num_rois, 4]; batch_index
not [num_rois] or outside [0, batches); output size, strides <= 0; sampling ratio < 0;
a quant16 box scale != 0.125 or zeroPoint != 0; a roi with a negative corner, x2 < x1,
y2 < y1 or a corner past the feature map; heatmap not square or size < 2; boxes not
[num_boxes, 4]; more work than the reference's bound.

Semantics: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` and AOSP
``common/cpu_operations/RoiAlign.cpp``, ``RoiPooling.cpp``, ``HeatmapMaxKeypoint.cpp``
(prepare rules and kernels, read for facts). The reference computes real values in
float64: AOSP's TENSOR_FLOAT16 kernels compute roi geometry in half precision and its
quant8 ROI_ALIGN rounds the bilinear weights to multiples of 1/255; the reference does
neither (results agree within the fp16 and 1-quantum criteria on the whole corpus).
Bilinear sampling is separable, so ROI_ALIGN is computed as W_y @ X @ W_x^T per roi.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (check_same_quant, from_float, from_nhwc, is_quant, layout_dims,
                     layout_flag, nhwc_dims, round_half_away, to_float, to_nhwc)
from .decision_rules import any_error_decision
from .detection import (BOX_UNIT, box_quant, box_values, check_box_quant, check_boxes_ordered,
                        draft_boxes)

T = OperandType
F32, F16, Q8, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32
Q16A, Q8S = T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
FL3 = 3
#: (feature level, data type, box type, float scalar type) of every form.
FORMS = ((FL3, F32, F32, T.FLOAT32), (FL3, F16, F16, T.FLOAT16), (FL3, Q8, Q16A, T.FLOAT32),
         (4, Q8S, Q16A, T.FLOAT32))
#: Work bound per roi of the reference kernels (sample positions along one axis times the
#: feature map extent), so a hostile sampling ratio fails instead of allocating gigabytes.
MAX_SAMPLE_WORK = 1 << 24
#: Work bound of ROI_POOLING (bins along the longer output axis x roi cells x depth,
#: summed over the rois; each step holds one roi's share in memory).
MAX_POOL_WORK = 1 << 26


def _roi_sigs(align: bool):
    out = []
    for level, data, box, f in FORMS:
        ins = [tensor("input", data, (4,)), tensor("roi", box, (2,), fixed_quant=box_quant(box)),
               tensor("batch_index", I32, (1,)), scalar("output_height", T.INT32),
               scalar("output_width", T.INT32), scalar("height_stride", f),
               scalar("width_stride", f)]
        if align:
            ins += [scalar("height_sampling_ratio", T.INT32),
                    scalar("width_sampling_ratio", T.INT32)]
        ins.append(scalar("layout", T.BOOL))
        out.append(sig(level, ins, [tensor("output", data, (4,))]))
    return tuple(out)


def _roi_params(ctx: OpContext, align: bool):
    """Checks shapes and scalars; returns (nchw, (n, h, w, c), num_rois, out_h, out_w,
    h_stride, w_stride, h_ratio, w_ratio)."""
    layout = 9 if align else 7
    nchw = layout_flag(ctx, layout)
    inp, roi, idx = ctx.inputs[:3]
    check(inp.rank == 4, f"input 0 (input) must be 4-D, got {list(inp.dims)}")
    check(roi.rank == 2 and roi.dims[1] == 4,
          f"input 1 (roi) must be [num_rois, 4], got {list(roi.dims)}")
    check(idx.rank == 1 and idx.dims[0] == roi.dims[0],
          f"input 2 (batch_index) must be [{roi.dims[0]}], got {list(idx.dims)}")
    n, h, w, c = nhwc_dims(inp.dims, nchw)
    if align:
        check(n > 0 and h > 0 and w > 0 and c > 0,
              f"input 0 (input) {list(inp.dims)} must be non-empty")
    out_h, out_w = ctx.scalar(3), ctx.scalar(4)
    hs, ws = float(ctx.scalar(5)), float(ctx.scalar(6))
    check(out_h > 0, f"input 3 (output_height) value {out_h} must be > 0")
    check(out_w > 0, f"input 4 (output_width) value {out_w} must be > 0")
    check(hs > 0, f"input 5 (height_stride) value {hs} must be > 0")
    check(ws > 0, f"input 6 (width_stride) value {ws} must be > 0")
    hr = wr = 0
    if align:
        hr, wr = ctx.scalar(7), ctx.scalar(8)
        check(hr >= 0, f"input 7 (height_sampling_ratio) value {hr} must be >= 0")
        check(wr >= 0, f"input 8 (width_sampling_ratio) value {wr} must be >= 0")
    check_box_quant(roi, 1, "roi")
    return nchw, (n, h, w, c), roi.dims[0], out_h, out_w, hs, ws, hr, wr


def _rois(ctx: OpContext, shape, hs: float, ws: float) -> tuple[np.ndarray, np.ndarray]:
    """Rois in feature-map coordinates [num_rois, 4] (x1, y1, x2, y2 / stride) and their
    batch indexes, after AOSP's malformed-data checks."""
    n, h, w, _ = shape
    roi = to_float(ctx.inputs[1]).reshape(-1, 4)
    idx = ctx.value(2).astype(np.int64)
    bad = np.nonzero((idx < 0) | (idx >= n))[0]
    check(bad.size == 0, f"input 2 (batch_index) value {int(idx[bad[0]]) if bad.size else 0} "
                         f"is out of range [0, {n})")
    bad = np.nonzero(~(roi >= 0).all(axis=1))[0]
    check(bad.size == 0, f"input 1 (roi) {bad[0] if bad.size else 0} has a negative corner")
    check_boxes_ordered(roi, 1, "roi")
    scaled = roi * np.array([1 / ws, 1 / hs, 1 / ws, 1 / hs])
    bad = np.nonzero(~((scaled[:, [0, 2]] <= w).all(axis=1) & (scaled[:, [1, 3]] <= h).all(axis=1)))[0]
    check(bad.size == 0, f"input 1 (roi) {bad[0] if bad.size else 0} lies outside the "
                         f"{h} x {w} feature map (after dividing by the strides)")
    return scaled, idx


# --- random-graph drafting (runtime/ops/generation.py) --------------------------------
#: Strides drawn most of the time: powers of two, so roi / stride <= extent is exact.
DYADIC_STRIDES = (0.25, 0.5, 1.0, 2.0, 4.0)


def _draft_stride(d, k: int, extent: int) -> int:
    """Make scalar slot ``k`` a stride > 0 (a power of two, or now and then any value) that
    keeps extent * stride below 256 (rois exact in TENSOR_FLOAT16); returns the largest roi
    coordinate it allows, in 1/8 units (one unit of margin for a non-dyadic stride)."""
    fits = [s for s in DYADIC_STRIDES if extent * s <= 256] or [DYADIC_STRIDES[0]]
    dyadic = d.coin(0.75)
    d.param(k, d.choice(fits) if dyadic else d.uniform(min(0.3, 128 / extent), min(3.0, 256 / extent)))
    stride = float(d[k].value)
    return max(int(np.floor(extent * stride * BOX_UNIT)) - (0 if dyadic else 1), 0)


def _generate_roi(d, align: bool) -> None:
    """Feature map [n, h, w, c] (input 0's when linked; NCHW when layout), valid rois
    inside the map once divided by the strides (AOSP: corners >= 0, x1 <= x2, y1 <= y2, <=
    extent), batch indexes in [0, n), output size 1-4, sampling ratios 0 (adaptive) or 1-3;
    ROI_POOLING's quantized output keeps input 0's scale and zero point."""
    layout = d.index("layout")
    nchw = bool(d[layout].value)
    n, h, w, c = nhwc_dims(d.dims0, nchw)
    if d.primary is None or c > 32 or n > 16:
        n, h, w, c = d.dim(1, 3), d.dim(1, 16), d.dim(1, 16), d.dim(1, 8)
        while n * h * w * c > d.max_elements:
            h, w = max(1, h // 2), max(1, w // 2)
    d.tensor(0, layout_dims((n, h, w, c), nchw))
    oh, ow = d.dim(1, 4), d.dim(1, 4)
    k = d.dim(1, max(1, min(6, 2048 // (oh * ow * c))))
    y_hi = _draft_stride(d, 5, h)
    x_hi = _draft_stride(d, 6, w)
    d.param(1, box_values(d, d[1].type, draft_boxes(d, k, x_hi, y_hi)), [k, 4])
    d.param(2, d.rng.integers(0, n, k).astype(np.int32), [k])
    d.param(3, oh)
    d.param(4, ow)
    if align:
        d.param(7, 0 if d.coin(0.3) else d.integer(1, 3))
        d.param(8, 0 if d.coin(0.3) else d.integer(1, 3))
    elif is_quant(d[0]):
        d.out_quant[0] = (d[0].scale, d[0].zero_point)


# --- ROI_ALIGN -------------------------------------------------------------------------

def _align_prepare(ctx: OpContext):
    """Output [num_rois, out_h, out_w, depth] in the input's layout."""
    nchw, (_, _, _, c), k, oh, ow, *_ = _roi_params(ctx, True)
    return [layout_dims((k, oh, ow, c), nchw)]


def _interp_matrix(start: float, size: float, out: int, ratio: int, extent: int) -> np.ndarray:
    """[out, extent] weights: row i sums the bilinear weights of the ``ratio`` samples of
    bin i along one axis (samples at start + (i + (s + 0.5) / ratio) * size / out; a
    sample at or past the last cell uses it alone)."""
    step = size / out
    check(out * ratio * max(extent, 1) <= MAX_SAMPLE_WORK,
          f"{out} bins x sampling ratio {ratio} x extent {extent} exceeds the reference's bound")
    pos = start + step * np.arange(out)[:, None] + (step / ratio) * (np.arange(ratio) + 0.5)
    lo = np.floor(pos).astype(np.int64)
    frac = pos - lo
    last = lo >= extent - 1
    lo = np.where(last, extent - 1, lo)
    frac = np.where(last, 0.0, frac)
    hi = np.minimum(lo + 1, extent - 1)
    m = np.zeros((out, extent))
    rows = np.repeat(np.arange(out), ratio)
    np.add.at(m, (rows, lo.reshape(-1)), (1 - frac).reshape(-1))
    np.add.at(m, (rows, hi.reshape(-1)), frac.reshape(-1))
    return m


def _align_execute(ctx: OpContext):
    """Mean of bilinear samples per bin; float64 on real values, stored in the output type."""
    nchw, shape, k, oh, ow, hs, ws, hr, wr = _roi_params(ctx, True)
    _, h, w, c = shape
    out = np.zeros((k, oh, ow, c))
    if k:
        x = to_nhwc(to_float(ctx.inputs[0]), nchw)
        rois, idx = _rois(ctx, shape, hs, ws)
        for r in range(k):
            x1, y1, x2, y2 = rois[r]
            rw, rh = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
            sw = wr if wr > 0 else int(np.ceil(rw / ow))
            sh = hr if hr > 0 else int(np.ceil(rh / oh))
            my = _interp_matrix(y1, rh, oh, sh, h)
            mx = _interp_matrix(x1, rw, ow, sw, w)
            out[r] = np.einsum("ih,hwc,jw->ijc", my, x[idx[r]], mx, optimize=True) / (sh * sw)
    return [from_float(ctx.outputs[0], from_nhwc(out, nchw))]


def _generate_align(d) -> None:
    """ROI_ALIGN: :func:`_generate_roi` with sampling ratios 0 (adaptive) or 1-3."""
    _generate_roi(d, True)


register(OperationDef(OperationType.ROI_ALIGN, _roi_sigs(True), _align_prepare, _align_execute,
                      generate=_generate_align, error_budget=budgets.roi_align(), decision=any_error_decision(1),
                      summary="Bilinear region-of-interest align (average of samples per bin)",
                      allows_zero_sized_input=True, aosp_source="RoiAlignExecution.cpp"))


# --- ROI_POOLING -----------------------------------------------------------------------

def _pool_validate(ctx: OpContext) -> None:
    """Model-time rule: a quantized output keeps input 0's scale and zeroPoint (values move
    raw)."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], "output 0")


def _pool_prepare(ctx: OpContext):
    """Output [num_rois, out_h, out_w, depth] in the input's layout."""
    nchw, (_, _, _, c), k, oh, ow, *_ = _roi_params(ctx, False)
    check_same_quant(ctx.inputs[0], ctx.outputs[0], "output 0")
    return [layout_dims((k, oh, ow, c), nchw)]


def _bin_masks(start: float, end: float, out: int, extent: int) -> np.ndarray:
    """[out, extent] bool: bin i covers cells [floor(start' + i * step), ceil(start' +
    (i + 1) * step)) of the rounded roi [round(start), round(end)], clipped to the map."""
    s, e = int(round_half_away(np.float64(start))), int(round_half_away(np.float64(end)))
    step = max(e - s + 1, 1) / out
    i = np.arange(out)
    lo = np.minimum(np.floor(step * i + s), extent).astype(np.int64)
    hi = np.minimum(np.ceil(step * (i + 1) + s), extent).astype(np.int64)
    cells = np.arange(extent)
    return (cells >= lo[:, None]) & (cells < hi[:, None])


def _pool_execute(ctx: OpContext):
    """Maximum per bin of the raw values (an empty bin gives the zero point)."""
    nchw, shape, k, oh, ow, hs, ws, _, _ = _roi_params(ctx, False)
    _, h, w, c = shape
    inp = ctx.inputs[0]
    fill = float(inp.zero_point) if is_quant(inp) else 0.0
    out = np.full((k, oh, ow, c), fill)
    if k and h and w and c:
        x = to_nhwc(inp.value, nchw).astype(np.float32)  # exact for every input type
        rois, idx = _rois(ctx, shape, hs, ws)
        work = 0
        for r in range(k):
            x1, y1, x2, y2 = rois[r]
            mh, mw = _bin_masks(y1, y2, oh, h), _bin_masks(x1, x2, ow, w)
            rows, cols = np.nonzero(mh.any(axis=0))[0], np.nonzero(mw.any(axis=0))[0]
            if not rows.size or not cols.size:
                continue
            r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
            work += max(oh, ow) * (r1 - r0) * (c1 - c0) * c
            check(work <= MAX_POOL_WORK, f"roi pooling needs more than {MAX_POOL_WORK} "
                                         f"comparisons; past the reference's bound")
            crop = x[idx[r], r0:r1, c0:c1]  # the rounded roi, clipped to the map
            # max over each bin's columns, then over its rows
            part = np.where(mw[:, None, c0:c1, None], crop[None], -np.inf).max(axis=2)  # [ow, rows, c]
            cell = np.where(mh[:, None, r0:r1, None], part[None], -np.inf).max(axis=2)  # [oh, ow, c]
            out[r] = np.where(np.isneginf(cell), fill, cell)
    return [from_nhwc(out, nchw).astype(inp.value.dtype)]


def _generate_pool(d) -> None:
    """ROI_POOLING: :func:`_generate_roi`; a quantized output keeps input 0's scale and
    zero point (NNAPI: values move raw)."""
    _generate_roi(d, False)


register(OperationDef(OperationType.ROI_POOLING, _roi_sigs(False), _pool_prepare, _pool_execute,
                      validate=_pool_validate, generate=_generate_pool, error_budget=budgets.exact("max selection"),
                      decision=any_error_decision(1),
                      summary="Region-of-interest max pooling", aosp_source="RoiPoolingExecution.cpp"))


# --- HEATMAP_MAX_KEYPOINT --------------------------------------------------------------

def _heatmap_sigs():
    return tuple(sig(level, [tensor("heatmaps", data, (4,)),
                             tensor("boxes", box, (2,), fixed_quant=box_quant(box)),
                             scalar("layout", T.BOOL)],
                     [tensor("scores", data, (2,)),
                      tensor("keypoints", box, (3,), fixed_quant=box_quant(box))])
                 for level, data, box, _ in FORMS)


def _heatmap_params(ctx: OpContext):
    nchw = layout_flag(ctx, 2)
    hm, boxes = ctx.inputs[:2]
    check(hm.rank == 4, f"input 0 (heatmaps) must be 4-D, got {list(hm.dims)}")
    check(boxes.rank == 2, f"input 1 (boxes) must be 2-D, got {list(boxes.dims)}")
    n, size, size_w, k = nhwc_dims(hm.dims, nchw)
    check(size == size_w, f"input 0 (heatmaps) {list(hm.dims)} must be square")
    check(size >= 2, f"input 0 (heatmaps) size {size} must be >= 2")
    check(tuple(boxes.dims) == (n, 4), f"input 1 (boxes) must be [{n}, 4], got {list(boxes.dims)}")
    check_box_quant(boxes, 1, "boxes")
    return nchw, n, size, k


def _heatmap_prepare(ctx: OpContext):
    """Outputs [num_boxes, num_keypoints] and [num_boxes, num_keypoints, 2]."""
    _, n, _, k = _heatmap_params(ctx)
    return [(n, k), (n, k, 2)]


def _heatmap_execute(ctx: OpContext):
    """Refined maximum of each heatmap (score) and its position in the box (keypoint)."""
    nchw, n, size, k = _heatmap_params(ctx)
    if n * k == 0:
        return [from_float(ctx.outputs[0], np.zeros((n, k))),
                from_float(ctx.outputs[1], np.zeros((n, k, 2)))]
    hm = to_nhwc(to_float(ctx.inputs[0]), nchw).transpose(0, 3, 1, 2)  # [n, k, size, size]
    boxes = to_float(ctx.inputs[1])
    check_boxes_ordered(boxes, 1, "boxes")
    flat = hm.reshape(n, k, -1)
    arg = np.argmax(flat, axis=2)  # the first maximum
    score = np.take_along_axis(flat, arg[..., None], 2)[..., 0]
    my, mx = arg // size, arg % size
    d = np.arange(-1, 2)
    ys = my[..., None] + d  # [n, k, 3]
    xs = mx[..., None] + d
    ys = np.where(ys < 0, 1, np.where(ys >= size, size - 2, ys))
    xs = np.where(xs < 0, 1, np.where(xs >= size, size - 2, xs))
    bi, ki = np.arange(n)[:, None, None, None], np.arange(k)[None, :, None, None]
    g = hm[bi, ki, ys[..., :, None], xs[..., None, :]]  # [n, k, 3, 3] grid[dy][dx]
    b0 = -(g[..., 1, 2] - g[..., 1, 0]) / 2
    b1 = -(g[..., 2, 1] - g[..., 0, 1]) / 2
    a00 = g[..., 1, 0] - 2 * g[..., 1, 1] + g[..., 1, 2]
    a01 = (g[..., 2, 2] - g[..., 2, 0] - g[..., 0, 2] + g[..., 0, 0]) / 4
    a11 = g[..., 0, 1] - 2 * g[..., 1, 1] + g[..., 2, 1]
    tol = 1e-3 if ctx.inputs[0].type == F16 else 1e-5
    det = a00 * a11 - a01 * a01
    ok = ~(np.abs(det) < tol + tol * a00 * a11)
    safe = np.where(ok, det, 1.0)
    d0 = np.where(ok, (a11 * b0 - a01 * b1) / safe, 0.0)
    d1 = np.where(ok, (a00 * b1 - a01 * b0) / safe, 0.0)
    big = np.maximum(np.abs(d0), np.abs(d1))
    shrink = np.where(big > 1.5, 1.5 / np.where(big > 1.5, big, 1.0), 1.0)
    d0, d1 = d0 * shrink, d1 * shrink
    refined = g[..., 1, 1] - b0 * d0 - b1 * d1 + \
        ((a00 * d0 + a01 * d1) * d0 + (a01 * d0 + a11 * d1) * d1) / 2
    score = np.where(ok, refined, score)
    x1, y1, x2, y2 = (boxes[:, None, i] for i in range(4))
    kx = (mx + d0 + 0.5) / size * (x2 - x1) + x1
    ky = (my + d1 + 0.5) / size * (y2 - y1) + y1
    return [from_float(ctx.outputs[0], score),
            from_float(ctx.outputs[1], np.stack([kx, ky], -1))]


def _generate_heatmap(d) -> None:
    """Square heatmaps [n, size >= 2, size, k] (input 0's when linked; NCHW when layout) and
    n valid boxes (x1 <= x2, y1 <= y2) far enough from 0 that the refined keypoints stay
    positive (the quant16 keypoints output has zero point 0)."""
    nchw = bool(d[2].value)
    n, size, size_w, k = nhwc_dims(d.dims0, nchw)
    if d.primary is None or size != size_w or size < 2 or n > 16 or k > 16:
        n, size, k = d.dim(1, 4), d.dim(2, 8), d.dim(1, 4)
    d.tensor(0, layout_dims((n, size, size, k), nchw))
    wh = d.rng.integers(BOX_UNIT, 32 * BOX_UNIT + 1, (n, 2))  # box width, height in 1/8 units
    wh[d.rng.random((n, 2)) < 0.1] = 0  # now and then a degenerate box
    x1y1 = wh // 2 + d.rng.integers(0, 16 * BOX_UNIT + 1, (n, 2))
    d.param(1, box_values(d, d[1].type, np.concatenate([x1y1, x1y1 + wh], 1)), [n, 4])


register(OperationDef(OperationType.HEATMAP_MAX_KEYPOINT, _heatmap_sigs(), _heatmap_prepare,
                      _heatmap_execute, generate=_generate_heatmap,
                      error_budget=budgets.composed(budgets.Ulps(32.5, 32.5), "3x3 quadratic fit"),
                      decision=any_error_decision(0),
                      summary="Keypoint location and score from heatmaps (quadratic refinement)",
                      square_spatial=True, aosp_source="HeatmapMaxKeypointExecution.cpp"))
