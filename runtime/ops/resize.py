"""Image resizing: RESIZE_BILINEAR (23; FL1, FL3 forms) and RESIZE_NEAREST_NEIGHBOR (94; FL3).

Input 0 is a 4-D image [batches, height, width, depth] (NHWC) or, with the layout flag
true, [batches, depth, height, width] (NCHW); zero batches are accepted and give an empty
output. The output size is given either as INT32 ``width`` (input 1) and ``height``
(input 2), or (FL3) as scales: ``new_width = floor(width * width_scale)`` and
``new_height = floor(height * height_scale)``, the product taken in binary32 as AOSP does,
with FLOAT32 scales for TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM input and FLOAT16 scales for
TENSOR_FLOAT16 input. Input 3 is the BOOL layout flag (false: NHWC, true: NCHW). The output
is [batches, new_height, new_width, depth] in the input's layout, of input 0's type; a
TENSOR_QUANT8_ASYMM output has input 0's scale and zeroPoint.

Forms and feature levels:
- RESIZE_BILINEAR: FL1 TENSOR_FLOAT32 with INT32 sizes (3 inputs). FL3: TENSOR_FLOAT32,
  TENSOR_FLOAT16 and TENSOR_QUANT8_ASYMM with INT32 sizes or scales, each with 3 inputs or
  with the optional layout flag (4 inputs; the spec's "optional" input may be left out; the
  reference also accepts it as an omitted operand, meaning false).
- RESIZE_NEAREST_NEIGHBOR: FL3, the same three types and two size kinds, always 4 inputs
  (the layout flag is required, as in AOSP ``resize_image::validate``).
Not declared: TENSOR_QUANT8_ASYMM_SIGNED and the align_corners / half_pixel_centers inputs
4 and 5 (FL4, issue 8).

Errors (OperationError, naming the input): input 0 not 4-D; height, width or depth 0;
an output width/height (given or computed from a scale) <= 0 or a scale that is not
finite; at model time (``validate``) a quantized output whose scale or zeroPoint differs
from input 0's.

Semantics: NNAPI ``NeuralNetworksTypes.h`` (RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR);
level rules of AOSP ``resize_image::validate`` (``common/types/operations/src/
ResizeImageOps.cpp``); shape rules and sampling of AOSP ``cpu_operations/ResizeImageOps.cpp``
``prepare`` and its legacy (no align_corners, no half-pixel) kernels: along each axis
``scale = in_size / out_size`` in binary32 and output pixel ``i`` samples source position
``p = i * scale``. Bilinear interpolates the 4 neighbours ``floor(p)`` and
``min(floor(p) + 1, in_size - 1)`` with weights from ``p - floor(p)``; nearest neighbour
copies pixel ``min(floor(p), in_size - 1)`` (raw values). Bilinear TENSOR_FLOAT32 runs in
binary32 like AOSP (the corpus expects its exact values); TENSOR_FLOAT16 and
TENSOR_QUANT8_ASYMM interpolate real values in float64 and store once (``common.from_float``:
float16 rounding, or round half away from zero for quant8, within 1 quantum of AOSP's
integer result).
"""
from __future__ import annotations

import math

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (check_same_quant, from_float, from_nhwc, layout_dims, layout_flag,
                     nhwc_dims, to_float, to_nhwc)

T = OperandType
F32, F16, Q8 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM
#: Scalar type of the scale form's inputs 1 and 2 for each input type.
_SCALE_TYPE = {F32: T.FLOAT32, Q8: T.FLOAT32, F16: T.FLOAT16}
#: Input index of the layout flag.
LAYOUT = 3


def _signatures(bilinear: bool) -> tuple:
    """RESIZE_BILINEAR: FL1 (TENSOR_FLOAT32, INT32, INT32); FL3 every type and size kind
    with 3 inputs and with the optional layout flag. RESIZE_NEAREST_NEIGHBOR: FL3 every
    type and size kind with the (required) layout flag."""
    out = []
    for t in (F32, F16, Q8):
        for size_t in (T.INT32, _SCALE_TYPE[t]):
            inputs = [tensor("input", t, (4,)), scalar("width", size_t),
                      scalar("height", size_t)]
            outputs = [tensor("output", t, (4,))]
            if bilinear:
                out.append(sig(1 if (t, size_t) == (F32, T.INT32) else 3, inputs, outputs))
                out.append(sig(3, inputs + [scalar("layout", T.BOOL, optional=True)], outputs))
            else:
                out.append(sig(3, inputs + [scalar("layout", T.BOOL)], outputs))
    return tuple(out)


def _validate(ctx: OpContext) -> None:
    """Model-time rule: a TENSOR_QUANT8_ASYMM output has input 0's scale and zeroPoint
    (spec). Raises OperationError."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], ctx.operation.name)


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
    width = _out_size(ctx, 1, "width", w)
    height = _out_size(ctx, 2, "height", h)
    return [layout_dims((n, height, width, c), nchw)]


def _positions(in_size: int, out_size: int) -> np.ndarray:
    """Source positions ``i * (in_size / out_size)`` of the output pixels along one axis,
    in binary32 (AOSP legacy sampling)."""
    scale = np.float32(in_size) / np.float32(out_size)
    return np.arange(out_size, dtype=np.float32) * scale


def _axis_samples(in_size: int, out_size: int):
    """(lower index, upper index clamped to the edge, fraction ``p - floor(p)`` in
    binary32) of the bilinear source positions along one axis."""
    pos = _positions(in_size, out_size)
    lo = np.floor(pos).astype(np.int64)
    return lo, np.minimum(lo + 1, in_size - 1), (pos - lo.astype(np.float32)).astype(np.float32)


def bilinear(x: np.ndarray, height: int, width: int) -> np.ndarray:
    """Legacy bilinear resize of NHWC ``x`` [N, H, W, C] to [N, height, width, C], in
    ``x``'s float dtype (float32 or float64)::

        a*(1-dy)*(1-dx) + b*dy*(1-dx) + c*(1-dy)*dx + d*dy*dx

    with a = (y0, x0), b = (y1, x0), c = (y0, x1), d = (y1, x1) and the binary32 sample
    positions of :func:`_axis_samples` (the operation order of AOSP's float kernel)."""
    dt = x.dtype.type
    y0, y1, dy = _axis_samples(x.shape[1], height)
    x0, x1, dx = _axis_samples(x.shape[2], width)
    dy, dx = dy.astype(dt)[:, None, None], dx.astype(dt)[None, :, None]
    one = dt(1)
    y0, y1 = y0[:, None], y1[:, None]  # one gather per corner, each of the output's size
    return (x[:, y0, x0] * (one - dy) * (one - dx) + x[:, y1, x0] * dy * (one - dx)
            + x[:, y0, x1] * (one - dy) * dx + x[:, y1, x1] * dy * dx)


def nearest_neighbor(x: np.ndarray, height: int, width: int) -> np.ndarray:
    """Legacy nearest-neighbour resize of NHWC ``x`` [N, H, W, C] to [N, height, width,
    C]: output pixel (i, j) copies input pixel (min(floor(i * H / height), H - 1),
    min(floor(j * W / width), W - 1)), positions in binary32; any dtype (raw copy)."""
    rows = np.minimum(np.floor(_positions(x.shape[1], height)).astype(np.int64), x.shape[1] - 1)
    cols = np.minimum(np.floor(_positions(x.shape[2], width)).astype(np.int64), x.shape[2] - 1)
    return x[:, rows[:, None], cols]  # one gather of the output's size


def _bilinear_execute(ctx: OpContext):
    """Bilinear interpolation in NHWC: TENSOR_FLOAT32 in binary32, the other types on real
    values in float64, stored in the output type and layout."""
    nchw = layout_flag(ctx, LAYOUT)
    _, height, width, _ = nhwc_dims(_prepare(ctx)[0], nchw)
    inp = ctx.inputs[0]
    x = to_float(inp).astype(np.float32) if inp.type == F32 else to_float(inp)
    real = bilinear(to_nhwc(x, nchw), height, width)
    return [from_nhwc(from_float(ctx.outputs[0], real), nchw)]


def _nearest_execute(ctx: OpContext):
    """Nearest-neighbour copy of raw values in NHWC, given back in the operand's layout."""
    nchw = layout_flag(ctx, LAYOUT)
    _, height, width, _ = nhwc_dims(_prepare(ctx)[0], nchw)
    x = to_nhwc(ctx.value(0), nchw)
    return [from_nhwc(nearest_neighbor(x, height, width), nchw)]


register(OperationDef(
    OperationType.RESIZE_BILINEAR, _signatures(bilinear=True), _prepare, _bilinear_execute,
    validate=_validate,
    summary="bilinear resize of NHWC/NCHW images to a size or by scales"))

register(OperationDef(
    OperationType.RESIZE_NEAREST_NEIGHBOR, _signatures(bilinear=False), _prepare,
    _nearest_execute, validate=_validate,
    summary="nearest-neighbour resize of NHWC/NCHW images to a size or by scales"))
