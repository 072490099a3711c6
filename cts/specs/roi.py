"""ROI_ALIGN (NNAPI code 81, FL3), ROI_POOLING (82, FL3) and HEATMAP_MAX_KEYPOINT (56, FL3),
with their TENSOR_QUANT8_ASYMM_SIGNED forms (FL4): the quantization regimes of the data
tensor the AOSP corpus leaves empty (``nncts coverage``): TENSOR_QUANT8_ASYMM zero point 255
with scale 2, TENSOR_QUANT8_ASYMM_SIGNED zero point 0 / mid / -128, scale < 1 / > 1, and
ROI_POOLING's FL4 row.

Definitions (NNAPI ``types.spec``). Boxes are (x1, y1, x2, y2) in image coordinates; a
TENSOR_QUANT16_ASYMM box tensor has scale 0.125 and zero point 0 (so the TENSOR_QUANT16_ASYMM
cells other than zero point 0 / scale < 1 cannot be filled). ROI_POOLING: the roi's corners
divided by the strides and rounded give feature cells [x1, x2] x [y1, y2] (inclusive); bin
(i, j) of an output_height x output_width grid spans rows [floor(i * rh / oh),
ceil((i + 1) * rh / oh)) from y1 (rh = y2 - y1 + 1; columns alike); the output is the
bin's maximum; a quantized output keeps input 0's scale and zero point. ROI_ALIGN: each
output cell is the mean of sampling_ratio^2 bilinearly interpolated points, evenly spread
over its bin of the scaled roi. HEATMAP_MAX_KEYPOINT: per box and keypoint, the heatmap's
maximum refined by the quadratic fitted to its 3 x 3 neighbourhood; the keypoint is the
refined position (column + 0.5, row + 0.5) scaled by box size / heatmap size plus the box
corner.

Goldens. ROI_POOLING: the numpy formula above (:func:`roi_pool`). ROI_ALIGN, by hand: the
inputs are linear fields a + b*y + c*x per channel and every sample lies inside the map, so
bilinear interpolation is exact and the mean of the samples, symmetric about the bin's
centre, is the field at the centre (:func:`align_linear`). HEATMAP_MAX_KEYPOINT, by hand:
each heatmap has one interior peak whose eight neighbours are equal, so the fitted
quadratic's gradient is 0, the refinement offset 0 and the score the peak value.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, one_operation
from .typed import case, fs, x
from .variations import f32, quantize

FAMILY = "roi"
F32, Q8, Q8S, Q16A, I32 = (T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                           T.TENSOR_QUANT16_ASYMM, T.TENSOR_INT32)
LEVEL = {Q8: 3, Q8S: 4}
GOLDEN_POOL = "numpy formula: ROI_POOLING bin maxima over rounded roi cells (cts/specs/roi.py roi_pool)"
GOLDEN_ALIGN = ("hand calculation: ROI_ALIGN of a linear field with interior samples is the field at each "
                "bin centre (cts/specs/roi.py align_linear)")
GOLDEN_HEATMAP = ("hand calculation: one interior peak with equal neighbours per heatmap, so no refinement: "
                  "score = peak, keypoint = (cell + 0.5) * box size / heatmap size + box corner")


def boxes(values, make=const) -> tuple:
    """A TENSOR_QUANT16_ASYMM box constant (or ``make``: :func:`.expect`, an expected output)
    of scale 0.125 and zero point 0, from multiples of 1/8."""
    return make(Q16A, np.round(np.asarray(values, np.float64) * 8).astype(np.int64), 0.125, 0)


def _round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def roi_pool(v, rois, batch, oh, ow, hs, ws):
    """ROI_POOLING of NHWC ``v`` (types.spec: rounded corners, inclusive end, floor/ceil bins;
    a bin outside the map is 0, as AOSP's corpus roi_pooling_nhwc_quant8 expects)."""
    out = np.zeros((len(rois), oh, ow, v.shape[3]))
    for r, (roi, b) in enumerate(zip(rois, batch)):
        x1, y1, x2, y2 = _round_away(np.asarray(roi) / [ws, hs, ws, hs]).astype(int)
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(oh):
            h0, h1 = y1 + int(np.floor(i * rh / oh)), y1 + int(np.ceil((i + 1) * rh / oh))
            for j in range(ow):
                w0, w1 = x1 + int(np.floor(j * rw / ow)), x1 + int(np.ceil((j + 1) * rw / ow))
                cell = v[b, max(h0, 0):min(h1, v.shape[1]), max(w0, 0):min(w1, v.shape[2])]
                out[r, i, j] = cell.max(axis=(0, 1)) if cell.size else 0.0  # an empty bin is 0
    return out


def _pool(name, t, q, nchw, level=3, shape=(2, 4, 5, 2), edge=False):
    """A ``shape`` map (stored values over the whole range), three rois (``edge``: and a
    fourth on the map's far corner, whose bins are empty: 0, stored as the zero point), 2 x 2
    bins."""
    lo, hi = (0, 255) if t == Q8 else (-128, 127)
    data = (np.random.default_rng(len(name)).integers(lo, hi + 1, shape) - q[1]) * f32(q[0])
    rois = np.array([[0, 0, 8, 6], [2, 2, 9, 6], [4, 0, 8, 4]], np.float64)  # image = 2 x feature map
    rois[:, 2] = np.minimum(rois[:, 2], 2 * shape[2] - 2)  # inside a narrower map
    batch = [0, 1, 1]
    if edge:
        rois = np.vstack([rois, [2 * shape[2], 2 * shape[1]] * 2])
        batch.append(0)
    return case(f"roi_pooling_{name}", FAMILY, Op.ROI_POOLING, t,
                [x(data), boxes(rois), const(I32, batch), const(T.INT32, 2), const(T.INT32, 2), fs(2.0),
                 fs(2.0), const(T.BOOL, nchw)],
                lambda v, *_: roi_pool(v, rois, batch, 2, 2, 2.0, 2.0), GOLDEN_POOL, level, q=q, nchw=nchw)


def align_linear(coef, rois, oh, ow, hs, ws):
    """The field base_c + a*y + b*x (coef = (base per channel, a, b)) at every bin centre of
    each (image-coordinate) roi scaled by the strides."""
    base, a, b = coef
    out = np.zeros((len(rois), oh, ow, len(base)))
    for r, (x1, y1, x2, y2) in enumerate(np.asarray(rois) / [ws, hs, ws, hs]):
        ys = y1 + (np.arange(oh) + 0.5) * max(y2 - y1, 1) / oh
        xs = x1 + (np.arange(ow) + 0.5) * max(x2 - x1, 1) / ow
        out[r] = np.asarray(base)[None, None, :] + a * ys[:, None, None] + b * xs[None, :, None]
    return out


def _align(name, t, q, coef, ratio, nchw):
    """A 5 x 4 (H x W) field of stored values base_c + a*y + b*x; two rois whose samples
    stay inside the map; every bin centre gives an integer stored value."""
    base, a, b = coef
    yy, xx = np.meshgrid(np.arange(5), np.arange(4), indexing="ij")
    stored = np.stack([c + a * yy + b * xx for c in base], axis=-1)[None]
    data = (stored - q[1]) * f32(q[0])
    rois = [[1.0, 1.0, 5.0, 5.0], [1.0, 2.0, 5.0, 6.0]]  # stride 2: [0.5, 0.5, 2.5, 2.5], [0.5, 1, 2.5, 3]
    want = (align_linear(coef, rois, 2, 2, 2.0, 2.0) - q[1]) * f32(q[0])
    return case(f"roi_align_{name}", FAMILY, Op.ROI_ALIGN, t,
                [x(data), boxes(rois), const(I32, [0, 0]), const(T.INT32, 2), const(T.INT32, 2), fs(2.0),
                 fs(2.0), const(T.INT32, ratio), const(T.INT32, ratio), const(T.BOOL, nchw)],
                lambda *_: want, GOLDEN_ALIGN, 3, q=q, nchw=nchw)


def _heatmap(name, t, q, peak, near, base, nchw):
    """Two boxes x two keypoints of 4 x 4 heatmaps (stored values: ``base`` everywhere,
    ``near`` around an interior peak of ``peak``)."""
    cells = [[(1, 2), (2, 1)], [(2, 2), (1, 1)]]  # (row, column) of the peak per box, keypoint
    heat = np.full((2, 4, 4, 2), base, np.int64)
    for b in range(2):
        for k, (i, j) in enumerate(cells[b]):
            heat[b, i - 1:i + 2, j - 1:j + 2, k] = near
            heat[b, i, j, k] = peak
    box = np.array([[0, 0, 8, 8], [2, 4, 6, 12]], np.float64)
    keys = np.array([[[(j + 0.5) * (bx[2] - bx[0]) / 4 + bx[0], (i + 0.5) * (bx[3] - bx[1]) / 4 + bx[1]]
                      for i, j in row] for row, bx in zip(cells, box)])
    stored = heat.transpose(0, 3, 1, 2) if nchw else heat
    model = one_operation(f"heatmap_max_keypoint_{name}", FAMILY, Op.HEATMAP_MAX_KEYPOINT,
                          [inp(t, stored, f32(q[0]), q[1]), boxes(box), const(T.BOOL, nchw)],
                          [expect(t, np.full((2, 2), peak), f32(q[0]), q[1]),
                           expect(Q16A, quantize(keys, 0.125, 0, T.TENSOR_INT32), 0.125, 0)],
                          LEVEL[t], GOLDEN_HEATMAP)
    return model


def models():
    return [
        _pool("quant8_zp255_scale2", Q8, (2.0, 255), False),
        _pool("quant8_signed_zp0_scale0.5", Q8S, (0.5, 0), False, 4),
        _pool("quant8_signed_zp_mid_scale2_nchw", Q8S, (2.0, -20), True, 4),
        _pool("quant8_signed_zp_min_scale0.25", Q8S, (0.25, -128), False, 4),
        # a [2, 4, 4, 4] map reads validly in both layouts, so the layout flag decides (issue 24)
        _pool("quant8_signed_cube_nhwc", Q8S, (0.5, 0), False, 4, shape=(2, 4, 4, 4)),
        _pool("quant8_signed_cube_nchw", Q8S, (0.5, 0), True, 4, shape=(2, 4, 4, 4)),
        # empty bins store the zero point, so it decides them (issue 24)
        *(_pool(f"{n}_empty_bins", t, q, False, 3 if t == Q8 else 4, edge=True)
          for n, t, q in (("quant8_zp0_scale0.5", Q8, (0.5, 0)), ("quant8_zp255_scale2", Q8, (2.0, 255)),
                          ("quant8_signed_zp0_scale0.5", Q8S, (0.5, 0)),
                          ("quant8_signed_zp_mid_scale2", Q8S, (2.0, -20)),
                          ("quant8_signed_zp_min_scale0.25", Q8S, (0.25, -128)))),
        _align("quant8_zp255_scale2", Q8, (2.0, 255), ((250, 230), -4, -1), 2, False),
        _align("quant8_signed_zp_mid_scale2_nchw", Q8S, (3.0, -20), ((-60, 10), 6, 2), 0, True),
        _heatmap("quant8_zp255_scale2", Q8, (2.0, 255), 250, 246, 230, False),
        _heatmap("quant8_signed_zp_mid_scale2_nchw", Q8S, (2.0, -20), 100, 60, -100, True),
    ]
