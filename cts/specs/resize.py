"""RESIZE_BILINEAR (NNAPI code 23) and RESIZE_NEAREST_NEIGHBOR (94, FL3): the signature rows
(size or scale inputs, with the layout, align_corners and half_pixel_centers flags) and the
quantization regimes the AOSP corpus leaves empty (``nncts coverage``).

Definition (NNAPI ``types.spec``, the TensorFlow Lite kernels AOSP runs). Input 0
[batches, height, width, depth] (NHWC; NCHW when input 3, the layout flag, is true); inputs
1 and 2 the output width and height (INT32), or width and height scales (FLOAT32; FLOAT16
for a TENSOR_FLOAT16 input, FL3), the output size being floor(input size * scale);
input 4 align_corners and input 5 half_pixel_centers (FL4, not both true). Per axis, the
ratio is (in - 1) / (out - 1) with align_corners (out > 1), else in / out. Bilinear: the
source coordinate is (o + 0.5) * ratio - 0.5 with half_pixel_centers, else o * ratio;
its floor (at least 0) and ceiling (at most in - 1) are blended with weight coordinate -
lower. Nearest: floor((o + offset) * ratio), or round (half away from zero) with
align_corners, offset 0.5 with half_pixel_centers, clamped to [0, in - 1]. Types
TENSOR_FLOAT32, TENSOR_FLOAT16 (FL3), TENSOR_QUANT8_ASYMM (FL3), TENSOR_QUANT8_ASYMM_SIGNED
(FL4); the output keeps the input's scale and zero point.

Golden: :func:`resize_formula`, numpy per output coordinate from the definition above.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import case, fs, values_for, x
from .variations import QUANT_REGIMES

FAMILY = "resize"
GOLDEN = "numpy formula: {} resize per output coordinate (cts/specs/resize.py resize_formula)"
F32, F16, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED


def _ratio(n_in, n_out, align):
    return (n_in - 1) / (n_out - 1) if align and n_out > 1 else n_in / n_out


def _coords(n_in, n_out, align, half, bilinear):
    """Per output index: (lower, upper, weight of upper) for bilinear, (index, index, 0) for nearest."""
    r, out = np.float32(_ratio(n_in, n_out, align)), []
    for o in range(n_out):
        if bilinear:
            c = float((o + 0.5) * r - 0.5) if half else float(o * r)
            lo, hi = max(math.floor(c), 0), min(math.ceil(c), n_in - 1)
            out.append((lo, hi, c - lo))
        else:
            c = float((o + (0.5 if half else 0.0)) * r)
            i = int(np.sign(c) * math.floor(abs(c) + 0.5)) if align else math.floor(c)
            i = max(min(i, n_in - 1), 0)
            out.append((i, i, 0.0))
    return out


def resize_formula(v, out_h, out_w, align, half, bilinear) -> np.ndarray:
    """NHWC resize in float64."""
    n, h, w, c = v.shape
    res = np.zeros((n, out_h, out_w, c))
    for i, (y0, y1, wy) in enumerate(_coords(h, out_h, align, half, bilinear)):
        for j, (x0, x1, wx) in enumerate(_coords(w, out_w, align, half, bilinear)):
            res[:, i, j] = (v[:, y0, x0] * (1 - wy) * (1 - wx) + v[:, y1, x0] * wy * (1 - wx)
                            + v[:, y0, x1] * (1 - wy) * wx + v[:, y1, x1] * wy * wx)
    return res


#: (type, size kind "size" / "scale", flags (layout, align_corners, half_pixel_centers)
#: given, quant regime index), one per empty row of each operation.
BILINEAR = [(F32, "size", (False, True), 0), (F32, "scale", (), 0), (F32, "scale", (True, False), 0),
            (F16, "size", (False, True), 0), (F16, "scale", (True, True), 0),
            (Q8, "size", (False, True), 2), (Q8, "scale", (True, False), 1),
            (Q8S, "size", (), 0), (Q8S, "size", (True,), 1), (Q8S, "size", (False, True), 2),
            (Q8S, "scale", (), 0), (Q8S, "scale", (False,), 1), (Q8S, "scale", (True, True), 2),
            (Q8S, "scale", (False, False, True), 0)]
NEAREST = [(F32, "size", (False, True), 0), (F32, "scale", (True, False), 0),
           (F16, "size", (True, True), 0), (F16, "scale", (False, False), 0),
           (Q8, "size", (False, True), 2), (Q8, "scale", (True, False), 1),
           (Q8S, "size", (False,), 0), (Q8S, "size", (True, True), 1), (Q8S, "size", (False, False, True), 2),
           (Q8S, "scale", (True,), 0), (Q8S, "scale", (False, True), 1), (Q8S, "scale", (True, False, True), 2)]
_TNAME = {F32: "float32", F16: "float16", Q8: "quant8", Q8S: "quant8_signed"}


def _case(op, k, t, kind, flags, regime):
    bilinear = op == Op.RESIZE_BILINEAR
    rng = np.random.default_rng(k)
    shape = (2, 3, 4, 2) if k % 2 else (1, 4, 3, 1)
    rname, scale, zp = QUANT_REGIMES[t][regime] if t in QUANT_REGIMES else (None, None, None)
    q = None if rname is None else (scale, zp)
    if kind == "size":
        out_w, out_h = (6, 5) if k % 3 else (2, 7)
        sizes = [const(T.INT32, out_w), const(T.INT32, out_h)]
    else:
        sw, sh = (1.5, 1.4) if k % 3 else (0.5, 2.0)
        sizes = [fs(sw), fs(sh)]
        dt = np.float16 if t == F16 else np.float32
        out_w, out_h = math.floor(shape[2] * float(dt(sw))), math.floor(shape[1] * float(dt(sh)))
    align, half = (list(flags[1:]) + [False, False])[:2]
    nchw = bool(flags and flags[0])
    level = 4 if len(flags) > 1 else 1 if not flags and bilinear and (t, kind) == (F32, "size") else 3
    name = (f"{'resize_bilinear' if bilinear else 'resize_nearest'}_{_TNAME[t]}_{kind}"
            f"{'_nchw' if nchw else '_nhwc' if flags else ''}{'_align' if align else ''}{'_half' if half else ''}"
            f"{'_flags' + str(len(flags)) if len(flags) > 1 else ''}" + (f"_{rname}" if rname else ""))
    return case(name, FAMILY, op, t, [x(values_for(rng, shape, t, q)), *sizes, *(const(T.BOOL, f) for f in flags)],
                lambda v, *_: resize_formula(v, out_h, out_w, align, half, bilinear),
                GOLDEN.format("bilinear" if bilinear else "nearest-neighbor"), level, q=q, nchw=nchw)


def models():
    return ([_case(Op.RESIZE_BILINEAR, k, *c) for k, c in enumerate(BILINEAR)]
            + [_case(Op.RESIZE_NEAREST_NEIGHBOR, k, *c) for k, c in enumerate(NEAREST)])
