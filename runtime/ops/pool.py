"""2-D pooling: AVERAGE_POOL_2D, L2_POOL_2D and MAX_POOL_2D (NHWC; FL1 signatures and
their FL4 quant8-signed twins).

Inputs: a 4-D input [batches, height, width, depth], the padding (explicit: left, right,
top, bottom; implicit: a PaddingCode), strides (width, height), filter width and height,
and a FuseCode; the output is [batches, out_height, out_width, depth]. Types:
TENSOR_FLOAT32 for all three; TENSOR_QUANT8_ASYMM (FL1) and TENSOR_QUANT8_ASYMM_SIGNED (FL4)
for AVERAGE_POOL_2D and MAX_POOL_2D (output scale and zeroPoint equal to the input's). Not
declared: TENSOR_FLOAT16 and the NCHW flag (FL3).

Semantics: NNAPI ``types.spec`` (AVERAGE_POOL_2D = 1, L2_POOL_2D = 12, MAX_POOL_2D = 17; FL1)
and the AOSP CPU ``prepare`` of ``Pooling.cpp``. Padded cells are not part of a window:
the average and the L2 norm divide by the number of in-bounds cells.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (Window2D, apply_activation, check_fuse_code, check_same_quant, from_float,
                     read_window, sliding_windows, to_float, window_args)

T = OperandType
F32, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED


def _signatures(types_by_level):
    """Signatures per (feature level, types) entry and type: explicit padding (10 inputs)
    and implicit padding (7)."""
    return tuple(
        sig(level, [tensor("input", t, (4,)), *window_args(explicit),
                    scalar("filter_width", T.INT32), scalar("filter_height", T.INT32),
                    scalar("activation", T.INT32)],
            [tensor("output", t, (4,))])
        for level, types in types_by_level for t in types for explicit in (True, False))


def _validate(ctx: OpContext) -> None:
    """Model-time rule: a TENSOR_QUANT8_ASYMM (FL1) or TENSOR_QUANT8_ASYMM_SIGNED (FL4)
    output has the input's scale and zeroPoint. Raises OperationError."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], ctx.operation.name)


def _params(ctx: OpContext) -> tuple[Window2D, int]:
    """Check the input shape and the scalars; returns (window, fuse code).

    Rules (AOSP CPU prepare, FL1): input rank 4 with height, width and depth > 0 (only
    batches may be 0); window rules of :func:`.common.read_window`. Raises OperationError.
    """
    inp = ctx.inputs[0]
    check(inp.rank == 4, f"input {inp.dims} must be 4-D")
    _, h, w, depth = inp.dims
    check(h > 0 and w > 0 and depth > 0, f"input {inp.dims}: only batches may be 0")
    explicit = len(ctx.inputs) == 10
    nxt = 7 if explicit else 4  # filter width, filter height, activation
    activation = ctx.scalar(nxt + 2)
    check_fuse_code(activation)
    win = read_window(ctx, 1, explicit, (h, w), (ctx.scalar(nxt + 1), ctx.scalar(nxt)))
    return win, activation


def _in_bounds_count(ctx: OpContext, win: Window2D) -> np.ndarray:
    """Number of non-padding cells of every window, shape [1, out_h, out_w, 1] (>= 1, since
    each padding is smaller than the filter)."""
    _, h, w, _ = ctx.inputs[0].dims
    return sliding_windows(np.ones((1, h, w, 1)), win).sum(axis=(3, 4))


def _average(ctx: OpContext, win: Window2D, x: np.ndarray) -> np.ndarray:
    return sliding_windows(x, win).sum(axis=(3, 4)) / _in_bounds_count(ctx, win)


def _l2(ctx: OpContext, win: Window2D, x: np.ndarray) -> np.ndarray:
    return np.sqrt(sliding_windows(x * x, win).sum(axis=(3, 4)) / _in_bounds_count(ctx, win))


def _max(ctx: OpContext, win: Window2D, x: np.ndarray) -> np.ndarray:
    return sliding_windows(x, win, fill=-np.inf).max(axis=(3, 4))


def _prepare(ctx: OpContext):
    """Output [batches, out_height, out_width, depth]."""
    win, _ = _params(ctx)
    batches, _, _, depth = ctx.inputs[0].dims
    return [(batches, *win.out_hw, depth)]


#: Above this many window cells (batches * out_h * out_w * depth * filter_h * filter_w) or
#: padded input cells, a pooling reduces the in-bounds part of each window instead of
#: materializing padded windows, so hostile filter sizes and paddings (scalars, up to
#: 2^31 - 1) cost memory and time in proportion to the input and output only.
MAX_WINDOW_CELLS = 1 << 26


def _needs_clipping(x: np.ndarray, win: Window2D) -> bool:
    n, h, w, c = x.shape
    (fh, fw), (oh, ow) = win.filter_hw, win.out_hw
    padded = n * (h + win.pad_top + win.pad_bottom) * (w + win.pad_left + win.pad_right) * c
    return n * oh * ow * c * fh * fw > MAX_WINDOW_CELLS or padded > MAX_WINDOW_CELLS


def _clipped_ranges(n_out: int, stride: int, pad: int, size: int, filt: int):
    """Distinct in-bounds [start, end) ranges of the windows along one axis, and for each
    output index the number of its range (windows always overlap the input, since each
    padding is smaller than the filter)."""
    starts = np.arange(n_out, dtype=np.int64) * stride - pad
    bounds = np.stack([np.clip(starts, 0, size), np.clip(starts + filt, 0, size)], axis=1)
    ranges, which = np.unique(bounds, axis=0, return_inverse=True)
    return ranges, which.reshape(-1)


def _pool_clipped(kind: str, x: np.ndarray, win: Window2D) -> np.ndarray:
    """The pooling ``kind`` (average, l2, max) of NHWC ``x`` over the in-bounds cells of each
    window, reducing columns then rows (both separable) once per distinct clipped range."""
    (fh, fw), (sh, sw), (oh, ow) = win.filter_hw, win.stride_hw, win.out_hw
    _, h, w, _ = x.shape
    rows, row_of = _clipped_ranges(oh, sh, win.pad_top, h, fh)
    cols, col_of = _clipped_ranges(ow, sw, win.pad_left, w, fw)
    v = x * x if kind == "l2" else x
    red = np.max if kind == "max" else np.sum
    by_col = np.stack([red(v[:, :, a:b], axis=2) for a, b in cols], axis=2)  # [n, h, C, c]
    cells = np.stack([red(by_col[:, a:b], axis=1) for a, b in rows], axis=1)  # [n, R, C, c]
    if kind != "max":
        count = (rows[:, 1] - rows[:, 0])[:, None] * (cols[:, 1] - cols[:, 0])[None, :]
        cells = cells / count[None, :, :, None]
        if kind == "l2":
            cells = np.sqrt(cells)
    return cells[:, row_of][:, :, col_of]


def _executor(reduce, kind: str):
    def execute(ctx: OpContext):
        """Reduce every window of the real (dequantized, float64) input, apply the fused
        activation, store in the output type."""
        win, activation = _params(ctx)
        x = to_float(ctx.inputs[0])
        real = _pool_clipped(kind, x, win) if _needs_clipping(x, win) else reduce(ctx, win, x)
        return [from_float(ctx.outputs[0], apply_activation(real, activation))]
    return execute


for _op, _reduce, _kind, _types, _summary in (
        (OperationType.AVERAGE_POOL_2D, _average, "average", [(1, (F32, Q8)), (4, (Q8S,))],
         "mean of the in-bounds cells of each 2-D window (NHWC), fused activation"),
        (OperationType.L2_POOL_2D, _l2, "l2", [(1, (F32,))],
         "sqrt(mean of squares) of the in-bounds cells of each 2-D window (NHWC), fused "
         "activation"),
        (OperationType.MAX_POOL_2D, _max, "max", [(1, (F32, Q8)), (4, (Q8S,))],
         "maximum of each 2-D window (NHWC), fused activation")):
    register(OperationDef(_op, _signatures(_types), _prepare, _executor(_reduce, _kind),
                          validate=_validate, summary=_summary))
