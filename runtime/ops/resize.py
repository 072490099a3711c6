"""Image resizing: RESIZE_BILINEAR (23; FL1, FL3, FL4 forms) and RESIZE_NEAREST_NEIGHBOR
(94; FL3, FL4 forms).

Input 0 is a 4-D image [batches, height, width, depth] (NHWC) or, with the layout flag
true, [batches, depth, height, width] (NCHW); zero batches are accepted and give an empty
output. The output size is given either as INT32 ``width`` (input 1) and ``height``
(input 2), or (FL3) as scales: ``new_width = floor(width * width_scale)`` and
``new_height = floor(height * height_scale)``, the product taken in binary32 as AOSP does,
with FLOAT32 scales for TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED
input and FLOAT16 scales for TENSOR_FLOAT16 input. Input 3 is the BOOL layout flag (false:
NHWC, true: NCHW); input 4 ``align_corners`` and input 5 ``half_pixel_centers`` (FL4,
optional BOOLs, default false; both true is an error). The output is [batches,
new_height, new_width, depth] in the input's layout, of input 0's type; a quantized output
has input 0's scale and zeroPoint.

Forms and feature levels:
- RESIZE_BILINEAR: FL1 TENSOR_FLOAT32 with INT32 sizes (3 inputs). FL3: TENSOR_FLOAT32,
  TENSOR_FLOAT16 and TENSOR_QUANT8_ASYMM with INT32 sizes or scales, each with 3 inputs or
  with the optional layout flag (4 inputs; the spec's "optional" input may be left out; the
  reference also accepts it as an omitted operand, meaning false).
- RESIZE_NEAREST_NEIGHBOR: FL3, the same three types and two size kinds, 4 inputs (the
  layout flag is required, as in AOSP ``resize_image::validate``).
- FL4 (both operations): TENSOR_QUANT8_ASYMM_SIGNED in every form above (3 or 4 inputs for
  RESIZE_BILINEAR, 4 for RESIZE_NEAREST_NEIGHBOR), and every type with 5 inputs (layout,
  align_corners) or 6 inputs (layout, align_corners, half_pixel_centers). AOSP
  ``resize_image::validate``: a signed input or more than 4 inputs make the use FL4. The
  FL4 BOOL inputs may also be omitted operands (meaning false). Nothing is new at FL5+.

Errors (OperationError, naming the input): input 0 not 4-D; height, width or depth 0;
an output width/height (given or computed from a scale) <= 0 or a scale that is not
finite; align_corners and half_pixel_centers both true (spec text; AOSP ``prepare``); at
model time (``validate``) a quantized output whose scale or zeroPoint differs from
input 0's, and constant align_corners and half_pixel_centers both true.

Semantics: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` (RESIZE_BILINEAR,
RESIZE_NEAREST_NEIGHBOR); level rules of AOSP ``resize_image::validate``
(``common/types/operations/src/ResizeImageOps.cpp``); shape rules and sampling of AOSP
``cpu_operations/ResizeImageOps.cpp`` (its own nearest-neighbour loop, TFLite's reference
``ResizeBilinear`` for bilinear). Along each axis, in binary32: ``scale = (in - 1) /
(out - 1)`` with align_corners and ``out > 1``, else ``in / out``; output pixel ``i``
samples ``p = (i + 0.5) * scale - 0.5`` (bilinear, half_pixel_centers), ``p = (i + 0.5) *
scale`` (nearest neighbour, half_pixel_centers) or ``p = i * scale`` (otherwise).
Bilinear interpolates the rows/columns ``lo = max(floor(p), 0)`` and ``hi = min(ceil(p),
in - 1)`` with weights ``1 - (p - lo)`` and ``p - lo``; nearest neighbour copies the raw
value at ``min(round(p), in - 1)`` (align_corners, rounding half away from zero) or
``min(floor(p), in - 1)``, then ``max(., 0)``. Without the FL4 flags this is the legacy
sampling of FL1-3 (``ceil(p)`` and ``floor(p) + 1`` only differ where the weight of
``hi`` is 0). Bilinear TENSOR_FLOAT32 runs in binary32 in TFLite's operation order (the
corpus expects its exact values); TENSOR_FLOAT16 and the quantized types interpolate real
values in float64 and store once (``common.from_float``: float16 rounding, or round half
away from zero for quant8; TFLite converts the float interpolation of quantized values to
the integer type by truncation, within the criteria's 1 quantum of the reference).
"""
from __future__ import annotations

import math

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (check_same_quant, from_float, from_nhwc, layout_dims, layout_flag,
                     nhwc_dims, round_half_away, to_float, to_nhwc)

T = OperandType
F32, F16, Q8 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM
Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED
#: Scalar type of the scale form's inputs 1 and 2 for each input type.
_SCALE_TYPE = {F32: T.FLOAT32, Q8: T.FLOAT32, Q8S: T.FLOAT32, F16: T.FLOAT16}
#: Input indexes of the layout flag and of the FL4 align_corners / half_pixel_centers flags.
LAYOUT, ALIGN_CORNERS, HALF_PIXEL_CENTERS = 3, 4, 5


def _signatures(bilinear: bool) -> tuple:
    """RESIZE_BILINEAR: FL1 (TENSOR_FLOAT32, INT32, INT32); FL3 every FL3 type and size
    kind with 3 inputs and with the optional layout flag. RESIZE_NEAREST_NEIGHBOR: FL3
    every FL3 type and size kind with the (required) layout flag. FL4 (both): the
    TENSOR_QUANT8_ASYMM_SIGNED forms of these, and every type and size kind with the
    optional align_corners (5 inputs) and half_pixel_centers (6 inputs) flags."""
    out = []
    for t in (F32, F16, Q8, Q8S):
        base = 4 if t == Q8S else 3
        for size_t in (T.INT32, _SCALE_TYPE[t]):
            inputs = [tensor("input", t, (4,)), scalar("width", size_t),
                      scalar("height", size_t)]
            outputs = [tensor("output", t, (4,))]
            layout = scalar("layout", T.BOOL, optional=bilinear)
            if bilinear:
                out.append(sig(1 if (t, size_t) == (F32, T.INT32) else base, inputs, outputs))
            out.append(sig(base, inputs + [layout], outputs))
            align = scalar("align_corners", T.BOOL, optional=True)
            half = scalar("half_pixel_centers", T.BOOL, optional=True)
            out.append(sig(4, inputs + [layout, align], outputs))
            out.append(sig(4, inputs + [layout, align, half], outputs))
    return tuple(out)


def _flags(ctx: OpContext, validating: bool = False) -> tuple[bool, bool]:
    """(align_corners, half_pixel_centers): inputs 4 and 5, false when absent or omitted.
    Raises OperationError when both are true (spec; AOSP ``prepare``). ``validating``:
    model time, where a flag that is not constant counts as false."""
    if validating:
        align = ctx.has_value(ALIGN_CORNERS) and bool(ctx.scalar(ALIGN_CORNERS))
        half = ctx.has_value(HALF_PIXEL_CENTERS) and bool(ctx.scalar(HALF_PIXEL_CENTERS))
    else:
        align = layout_flag(ctx, ALIGN_CORNERS)
        half = layout_flag(ctx, HALF_PIXEL_CENTERS)
    check(not (align and half),
          "input 5 (half_pixel_centers) is true, so input 4 (align_corners) must be false")
    return align, half


def _validate(ctx: OpContext) -> None:
    """Model-time rules: a quantized output has input 0's scale and zeroPoint (spec);
    constant align_corners and half_pixel_centers are not both true. Raises
    OperationError."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], ctx.operation.name)
    _flags(ctx, validating=True)


def _out_size(ctx: OpContext, index: int, name: str, in_size: int) -> int:
    """Output extent from input ``index``: the INT32 itself, or ``floor(in_size * scale)``
    with the product in binary32 (AOSP ``prepare``). Must be > 0."""
    value = ctx.scalar(index)
    if ctx.inputs[index].type == T.INT32:
        size = int(value)
    else:
        real = np.float32(in_size) * np.float32(value)
        check(math.isfinite(real),
              f"input {index} ({name} scale) value {value} gives a non-finite output {name}")
        size = math.floor(real)
    check(size > 0, f"input {index} ({name}): output {name} must be > 0, got {size}")
    return size


def _prepare(ctx: OpContext):
    """Output dims: [N, new_height, new_width, C] (NCHW flag: [N, C, new_height,
    new_width]). Checks input 0 is 4-D with height, width and depth > 0 (zero batches
    allowed) and the output size. Raises OperationError."""
    check(ctx.inputs[0].rank == 4, f"input 0 must have rank 4, got {ctx.inputs[0].rank}")
    nchw = layout_flag(ctx, LAYOUT)
    n, h, w, c = nhwc_dims(ctx.inputs[0].dims, nchw)
    check(h > 0 and w > 0 and c > 0, f"input 0 height {h}, width {w} and depth {c} must be > 0")
    _flags(ctx)
    width = _out_size(ctx, 1, "width", w)
    height = _out_size(ctx, 2, "height", h)
    return [layout_dims((n, height, width, c), nchw)]


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """Binary32 step between output pixels in input coordinates: ``(in - 1) / (out - 1)``
    with align_corners and ``out > 1``, else ``in / out`` (AOSP / TFLite)."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _positions(in_size: int, out_size: int, align_corners: bool = False,
               half_pixel: bool = False, offset: float = 0.0) -> np.ndarray:
    """Binary32 source positions of the output pixels along one axis: ``(i + 0.5) * scale
    - offset`` with half_pixel (bilinear: offset 0.5, nearest neighbour: 0), else ``i *
    scale``; float32 [out_size]."""
    scale = _scale(in_size, out_size, align_corners)
    i = np.arange(out_size, dtype=np.float32)
    if half_pixel:
        return ((i + np.float32(0.5)) * scale - np.float32(offset)).astype(np.float32)
    return i * scale


def _axis_samples(in_size: int, out_size: int, align_corners: bool = False,
                  half_pixel: bool = False):
    """(lower index ``max(floor(p), 0)``, upper index ``min(ceil(p), in_size - 1)``,
    fraction ``p - lower`` in binary32) of the bilinear source positions ``p`` along one
    axis (TFLite ``ComputeInterpolationValues``); int64 [out], int64 [out], float32 [out].
    With half_pixel the fraction may be negative near the first pixel, where lower and
    upper are the same pixel, so the weights still sum to 1."""
    pos = _positions(in_size, out_size, align_corners, half_pixel, offset=0.5)
    lo = np.maximum(np.floor(pos), 0).astype(np.int64)
    hi = np.minimum(np.ceil(pos).astype(np.int64), in_size - 1)
    hi = np.maximum(hi, 0)
    return lo, hi, (pos - lo.astype(np.float32)).astype(np.float32)


def bilinear(x: np.ndarray, height: int, width: int, align_corners: bool = False,
             half_pixel: bool = False) -> np.ndarray:
    """Bilinear resize of NHWC ``x`` [N, H, W, C] to [N, height, width, C], in ``x``'s
    float dtype (float32 or float64)::

        a*(1-dy)*(1-dx) + b*dy*(1-dx) + c*(1-dy)*dx + d*dy*dx

    with a = (y0, x0), b = (y1, x0), c = (y0, x1), d = (y1, x1) and the binary32 sample
    positions of :func:`_axis_samples` (the operation order of TFLite's float kernel).
    ``align_corners`` / ``half_pixel`` (FL4): the sampling of the module docstring."""
    dt = x.dtype.type
    y0, y1, dy = _axis_samples(x.shape[1], height, align_corners, half_pixel)
    x0, x1, dx = _axis_samples(x.shape[2], width, align_corners, half_pixel)
    dy, dx = dy.astype(dt)[:, None, None], dx.astype(dt)[None, :, None]
    one = dt(1)
    y0, y1 = y0[:, None], y1[:, None]  # one gather per corner, each of the output's size
    return (x[:, y0, x0] * (one - dy) * (one - dx) + x[:, y1, x0] * dy * (one - dx)
            + x[:, y0, x1] * (one - dy) * dx + x[:, y1, x1] * dy * dx)


def _nearest_index(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """Source index of each output pixel along one axis (AOSP ``resizeNearestNeighbor``):
    ``min(round(p), in - 1)`` with align_corners (half away from zero), else ``min(floor(p),
    in - 1)``, then at least 0; int64 [out_size]."""
    pos = _positions(in_size, out_size, align_corners, half_pixel).astype(np.float64)
    idx = round_half_away(pos) if align_corners else np.floor(pos)
    return np.clip(idx, 0, in_size - 1).astype(np.int64)


def nearest_neighbor(x: np.ndarray, height: int, width: int, align_corners: bool = False,
                     half_pixel: bool = False) -> np.ndarray:
    """Nearest-neighbour resize of NHWC ``x`` [N, H, W, C] to [N, height, width, C]:
    output pixel (i, j) copies the input pixel of :func:`_nearest_index` along each axis
    (legacy: (min(floor(i * H / height), H - 1), min(floor(j * W / width), W - 1)),
    positions in binary32); any dtype (raw copy)."""
    rows = _nearest_index(x.shape[1], height, align_corners, half_pixel)
    cols = _nearest_index(x.shape[2], width, align_corners, half_pixel)
    return x[:, rows[:, None], cols]  # one gather of the output's size


def _bilinear_execute(ctx: OpContext):
    """Bilinear interpolation in NHWC: TENSOR_FLOAT32 in binary32, the other types on real
    values in float64, stored in the output type and layout."""
    nchw = layout_flag(ctx, LAYOUT)
    _, height, width, _ = nhwc_dims(_prepare(ctx)[0], nchw)
    inp = ctx.inputs[0]
    x = to_float(inp).astype(np.float32) if inp.type == F32 else to_float(inp)
    real = bilinear(to_nhwc(x, nchw), height, width, *_flags(ctx))
    return [from_nhwc(from_float(ctx.outputs[0], real), nchw)]


def _nearest_execute(ctx: OpContext):
    """Nearest-neighbour copy of raw values in NHWC, given back in the operand's layout."""
    nchw = layout_flag(ctx, LAYOUT)
    _, height, width, _ = nhwc_dims(_prepare(ctx)[0], nchw)
    x = to_nhwc(ctx.value(0), nchw)
    return [from_nhwc(nearest_neighbor(x, height, width, *_flags(ctx)), nchw)]


def _draft_extent(d, in_size: int, most: int, scale_type) -> tuple[int, object]:
    """(output extent, input value) along one axis of ``in_size``: an extent in [1, most]
    (mostly a half, double, same or 1.5x the input, else any), given as the INT32 itself
    or (``scale_type`` FLOAT32 / FLOAT16) as a scale whose binary32 product with
    ``in_size`` floors to it."""
    pick = d.choice(("half", "double", "same", "x1.5", "any", "any"))
    want = {"half": in_size // 2, "double": in_size * 2, "same": in_size,
            "x1.5": in_size * 3 // 2}.get(pick) or d.integer(1, max(1, 3 * in_size))
    out = int(min(max(want, 1), most))
    if scale_type == T.INT32:
        return out, out
    cast = np.float16 if scale_type == T.FLOAT16 else np.float32
    scale = out / in_size if pick not in ("half", "double") or out != want else (0.5 if pick == "half" else 2.0)
    for _ in range(64):  # nudge the scale until it lands on an extent in [1, most]
        value = cast(scale)
        got = math.floor(np.float32(in_size) * np.float32(value))
        if 1 <= got <= most:
            return got, float(value)
        scale *= 1.02 if got < 1 else 0.98
    return 1, float(cast(1.0))


def _generate_resize(d) -> None:
    """Output width and height (INT32 sizes, or scales whose binary32 product with the
    input extent floors to >= 1) keeping the output at most 2 * max_elements elements;
    align_corners and half_pixel_centers never both true (NNAPI RESIZE_*)."""
    nchw = len(d.slots) > LAYOUT and not d[LAYOUT].omitted and bool(d[LAYOUT].value)
    n, h, w, c = nhwc_dims(d.dims0, nchw)
    pixels = max(1, 2 * d.max_elements // max(1, n * c))
    side = max(1, int(math.isqrt(pixels)))
    size_type = d[1].type
    out_h, height = _draft_extent(d, h, min(d.max_dim, side if d.coin() else pixels), size_type)
    _, width = _draft_extent(d, w, min(d.max_dim, max(1, pixels // out_h)), size_type)
    d.param(1, width)
    d.param(2, height)
    if len(d.slots) > HALF_PIXEL_CENTERS:
        flags = [d[ALIGN_CORNERS], d[HALF_PIXEL_CENTERS]]
        if all(not s.omitted and bool(s.value) for s in flags):
            d.param(d.choice((ALIGN_CORNERS, HALF_PIXEL_CENTERS)), False)


register(OperationDef(
    OperationType.RESIZE_BILINEAR, _signatures(bilinear=True), _prepare, _bilinear_execute,
    error_budget=budgets.resize(bilinear=True),
    validate=_validate,
    summary="bilinear resize of NHWC/NCHW images to a size or by scales",
    allows_zero_sized_input=True, aosp_source="ResizeImageOpsExecution.cpp", generate=_generate_resize))

register(OperationDef(
    OperationType.RESIZE_NEAREST_NEIGHBOR, _signatures(bilinear=False), _prepare,
    _nearest_execute, validate=_validate, error_budget=budgets.resize(bilinear=False),
    summary="nearest-neighbour resize of NHWC/NCHW images to a size or by scales",
    allows_zero_sized_input=True, aosp_source="ResizeImageOpsExecution.cpp", generate=_generate_resize))
