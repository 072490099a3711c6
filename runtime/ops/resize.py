"""RESIZE_BILINEAR, feature levels 1-2 only: TENSOR_FLOAT32, NHWC, output size given as
INT32 width and height.

Not declared here: TENSOR_QUANT8_ASYMM, TENSOR_FLOAT16, the NCHW flag and resizing by
FLOAT32 scale (FL3); TENSOR_QUANT8_ASYMM_SIGNED, align_corners and half_pixel_centers (FL4).

Sources: NNAPI ``NeuralNetworksTypes.h`` RESIZE_BILINEAR; level rules of AOSP
``resize_image::validate``; sampling of the legacy (no align_corners, no half-pixel)
bilinear resize that the AOSP CPU kernel runs.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor

F32 = OperandType.TENSOR_FLOAT32


def _prepare(ctx: OpContext):
    """[N, H, W, C] -> [N, height, width, C] with width = input 1 and height = input 2
    (INT32, both > 0); H, W and C must be > 0. Raises OperationError."""
    check(ctx.inputs[0].rank == 4, f"input 0 must have rank 4, got {ctx.inputs[0].rank}")
    n, h, w, c = ctx.inputs[0].dims
    check(h > 0 and w > 0 and c > 0, f"input 0 height {h}, width {w} and depth {c} must be > 0")
    width, height = ctx.scalar(1), ctx.scalar(2)
    check(width > 0, f"input 1 (output width) must be > 0, got {width}")
    check(height > 0, f"input 2 (output height) must be > 0, got {height}")
    return [(n, height, width, c)]


def _axis_samples(in_size: int, out_size: int):
    """Source positions of the output pixels along one axis, in float32:
    ``p = i * (in_size / out_size)``; returns (lower index, upper index clamped to the
    edge, fraction ``p - floor(p)``)."""
    scale = np.float32(in_size) / np.float32(out_size)
    pos = np.arange(out_size, dtype=np.float32) * scale
    lo = np.floor(pos).astype(np.int64)
    return lo, np.minimum(lo + 1, in_size - 1), (pos - lo.astype(np.float32)).astype(np.float32)


def _execute(ctx: OpContext):
    """Bilinear interpolation between the 4 neighbours of each source position, computed in
    float32 like the reference kernel: ``a*(1-dy)*(1-dx) + b*dy*(1-dx) + c*(1-dy)*dx +
    d*dy*dx`` with a = (y0, x0), b = (y1, x0), c = (y0, x1), d = (y1, x1)."""
    x = ctx.value(0).astype(np.float32)
    _, height, width, _ = _prepare(ctx)[0]
    y0, y1, dy = _axis_samples(x.shape[1], height)
    x0, x1, dx = _axis_samples(x.shape[2], width)
    dy, dx = dy[:, None, None], dx[None, :, None]
    one = np.float32(1)
    rows0, rows1 = x[:, y0], x[:, y1]
    out = (rows0[:, :, x0] * (one - dy) * (one - dx) + rows1[:, :, x0] * dy * (one - dx)
           + rows0[:, :, x1] * (one - dy) * dx + rows1[:, :, x1] * dy * dx)
    return [out.astype(np.float32)]


register(OperationDef(
    OperationType.RESIZE_BILINEAR,
    (sig(1, [tensor("input", F32, (4,)), scalar("width", OperandType.INT32),
             scalar("height", OperandType.INT32)], [tensor("output", F32, (4,))]),),
    _prepare, _execute,
    summary="bilinear resize of NHWC images to (height, width)"))
