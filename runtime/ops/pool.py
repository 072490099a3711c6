"""2-D pooling: AVERAGE_POOL_2D (1), L2_POOL_2D (12) and MAX_POOL_2D (17), feature levels
1-4 (FL4: the TENSOR_QUANT8_ASYMM_SIGNED forms; nothing new at FL5+).

Inputs: a 4-D input [batches, height, width, depth], the padding (explicit: left, right,
top, bottom; implicit: a PaddingCode), strides (width, height), filter width and height,
a FuseCode, and (FL3) an optional BOOL layout flag (input 10 of the explicit form, 7 of
the implicit one; true: input and output are NCHW [batches, depth, height, width]). The
output is [batches, out_height, out_width, depth] in the input's layout.

Types: FL1 TENSOR_FLOAT32 for all three, TENSOR_QUANT8_ASYMM for AVERAGE_POOL_2D and
MAX_POOL_2D (output scale and zeroPoint equal to the input's). FL3: TENSOR_FLOAT16 for all
three, and the layout flag for every FL1/FL3 type. FL4: TENSOR_QUANT8_ASYMM_SIGNED for
AVERAGE_POOL_2D and MAX_POOL_2D (output scale and zeroPoint equal to the input's), with
and without the layout flag (AOSP ``pooling::validate``: the signed type makes the use
FL4 whatever the input count). L2_POOL_2D has no quantized form.

Errors (OperationError, naming the rule): input not 4-D, height/width/depth 0 (only
batches may be 0: zero batches give an empty output), the window rules of
:func:`.common.read_window` (strides and filter > 0, paddings >= 0 and smaller than the
filter, output size > 0), a FuseCode out of 0-3; at model time a quantized output whose
scale or zeroPoint differs from the input's.

Semantics: NNAPI ``types.spec`` (FL1; FL3 for the layout flag and TENSOR_FLOAT16; FL4 for
TENSOR_QUANT8_ASYMM_SIGNED), the
level rules of AOSP ``pooling::validate`` (``common/types/operations/src/Pooling.cpp``)
and the AOSP CPU ``prepare`` of ``Pooling.cpp``. Padded cells are not part of a window:
the average and the L2 norm divide by the number of in-bounds cells. Kernels run in NHWC
(``common.to_nhwc`` / ``from_nhwc``) on real values in float64; TENSOR_FLOAT16 follows the
policy of ``common`` (AOSP computes float16 pooling in float32; the single final rounding
to float16 is within the fp16 criteria of it).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType, is_quantized_type
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (Window2D, apply_activation, check_fuse_code, check_same_quant, from_float,
                     from_nhwc, layout_dims, layout_flag, nhwc_dims, read_window, to_float,
                     to_nhwc, window_args)
from .window import (GEN_MIN_OUTPUT, MAX_PADDED_ELEMENTS, MAX_TAPS, draft_linked, draft_spatial,
                     draft_window_axis, padded_input, padded_size, param_window, tap_views)
from .error_inputs import output_quant_of_input
from .generation import quant_limits

T = OperandType
F32, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
F16 = T.TENSOR_FLOAT16
#: Feature level of the TENSOR_FLOAT16 forms and of the layout flag.
FL3 = 3


def _signatures(types_by_level):
    """Signatures per (feature level, types) entry and type: explicit padding (10 inputs)
    and implicit padding (7), each also (at FL3 at the earliest) with the optional BOOL
    layout flag last (11 and 8 inputs)."""
    out = []
    for level, types in types_by_level:
        for t in types:
            for explicit in (True, False):
                inputs = [tensor("input", t, (4,)), *window_args(explicit),
                          scalar("filter_width", T.INT32), scalar("filter_height", T.INT32),
                          scalar("activation", T.INT32)]
                outputs = [tensor("output", t, (4,))]
                out.append(sig(level, inputs, outputs))
                out.append(sig(max(level, FL3),
                               inputs + [scalar("layout", T.BOOL, optional=True)], outputs))
    return tuple(out)


def _validate(ctx: OpContext) -> None:
    """Model-time rule: a TENSOR_QUANT8_ASYMM (FL1) or TENSOR_QUANT8_ASYMM_SIGNED (FL4)
    output has the input's scale and zeroPoint. Raises OperationError."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], ctx.operation.name)


def _explicit(ctx: OpContext) -> bool:
    """Whether the padding is explicit (10 or 11 inputs) rather than implicit (7 or 8)."""
    return len(ctx.inputs) in (10, 11)


def _nchw(ctx: OpContext) -> bool:
    """The optional layout flag: input 10 (explicit padding) or 7 (implicit)."""
    return layout_flag(ctx, 10 if _explicit(ctx) else 7)


def _params(ctx: OpContext) -> tuple[Window2D, int]:
    """Check the input shape and the scalars; returns (window, fuse code).

    Rules (AOSP CPU prepare, FL1): input rank 4 with height, width and depth > 0 (only
    batches may be 0); window rules of :func:`.common.read_window`. Raises OperationError.
    """
    inp = ctx.inputs[0]
    check(inp.rank == 4, f"input 0 {list(inp.dims)} must be 4-D")
    _, h, w, depth = nhwc_dims(inp.dims, _nchw(ctx))
    check(h > 0 and w > 0 and depth > 0,
          f"input 0 {list(inp.dims)}: height {h}, width {w} and depth {depth} must be > 0 "
          f"(only batches may be 0)")
    explicit = _explicit(ctx)
    nxt = 7 if explicit else 4  # filter width, filter height, activation
    activation = ctx.scalar(nxt + 2)
    check_fuse_code(activation)
    win = read_window(ctx, 1, explicit, (h, w), (ctx.scalar(nxt + 1), ctx.scalar(nxt)))
    return win, activation


def _in_bounds_count(win: Window2D, h: int, w: int, dtype=np.float64) -> np.ndarray:
    """Number of non-padding cells of every window over an input of ``h`` x ``w``, shape
    [1, out_h, out_w, 1] of ``dtype`` (>= 1, since each padding is smaller than the filter)."""
    (fh, fw), (sh, sw), (oh, ow) = win.filter_hw, win.stride_hw, win.out_hw
    return (_axis_counts(oh, sh, win.pad_top, h, fh)[:, None] *
            _axis_counts(ow, sw, win.pad_left, w, fw)[None, :]).astype(dtype)[None, :, :, None]


def _separable(x: np.ndarray, win: Window2D, fill: float, reduce) -> np.ndarray:
    """``reduce`` (the ufunc np.add or np.maximum) over every window of NHWC ``x`` padded
    with ``fill``: along each window's columns, then along its rows (the sum or maximum of a
    rectangle is that of its row sums or row maxima), so a window costs filter_h + filter_w
    operations, not their product. Returns [n, out_h, out_w, depth] of ``x``'s dtype."""
    (fh, fw), (sh, sw), (oh, ow) = win.filter_hw, win.stride_hw, win.out_hw
    padded = padded_input(x, win, fill)
    view = np.lib.stride_tricks.sliding_window_view
    by_col = reduce.reduce(view(padded, fw, axis=2)[:, :, ::sw][:, :, :ow], axis=-1)  # [n, H, ow, c]
    return reduce.reduce(view(by_col, fh, axis=1)[:, ::sh][:, :oh], axis=-1)


def _average(ctx: OpContext, win: Window2D, x: np.ndarray) -> np.ndarray:
    return _separable(x, win, 0.0, np.add) / _in_bounds_count(win, x.shape[1], x.shape[2])


def _l2(ctx: OpContext, win: Window2D, x: np.ndarray) -> np.ndarray:
    return np.sqrt(_separable(x * x, win, 0.0, np.add) / _in_bounds_count(win, x.shape[1], x.shape[2]))


def _max(ctx: OpContext, win: Window2D, x: np.ndarray) -> np.ndarray:
    return _separable(x, win, -np.inf, np.maximum)


def _prepare(ctx: OpContext):
    """Output [batches, out_height, out_width, depth] (NCHW flag: [batches, depth,
    out_height, out_width])."""
    win, _ = _params(ctx)
    nchw = _nchw(ctx)
    batches, _, _, depth = nhwc_dims(ctx.inputs[0].dims, nchw)
    return [layout_dims((batches, *win.out_hw, depth), nchw)]


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


def _axis_counts(n_out: int, stride: int, pad: int, size: int, filt: int) -> np.ndarray:
    """Per output index along one axis, how many of the window's ``filt`` cells lie inside
    the input (>= 1: each padding is smaller than the filter)."""
    starts = np.arange(n_out, dtype=np.int64) * stride - pad
    return np.minimum(starts + filt, size) - np.maximum(starts, 0)


def _pool_taps(kind: str, x: np.ndarray, win: Window2D) -> np.ndarray:
    """The pooling ``kind`` (average, l2, max) of NHWC ``x`` (float32 for a max of
    TENSOR_FLOAT32 / TENSOR_FLOAT16 values, which it keeps exactly; else float64) by one
    pass over the output per window tap (:func:`.conv.tap_views` over the input padded with
    -inf for a maximum, 0 otherwise); averages divide by the in-bounds cells of each window.
    Returns [n, out_h, out_w, depth] of ``x``'s dtype."""
    n, h, w, c = x.shape
    oh, ow = win.out_hw
    v = x * x if kind == "l2" else x
    taps = sorted(tap_views(padded_input(v, win, -np.inf if kind == "max" else 0.0), win),
                  key=lambda t: (t[0], t[1]))
    op = np.maximum if kind == "max" else np.add
    out = taps[0][2].copy()
    for _, _, view in taps[1:]:
        op(out, view, out=out)
    out = out.reshape(n, oh, ow, c)
    if kind != "max":
        out /= _in_bounds_count(win, h, w, out.dtype)
        if kind == "l2":
            np.sqrt(out, out=out)
    return out


def _executor(reduce, kind: str):
    def execute(ctx: OpContext):
        """Reduce every window of the real (dequantized, float64) input in NHWC, apply the
        fused activation, store in the output type and layout. Zero batches give an empty
        output. A window of at most :data:`.conv.MAX_TAPS` taps over an input whose padded
        copy stays under :data:`.conv.MAX_PADDED_ELEMENTS` is reduced tap by tap
        (:func:`_pool_taps`; a maximum of float values in their own precision, which is
        exact); a bigger one by rows then columns (:func:`_separable`), or its in-bounds part
        (:func:`_pool_clipped`) past :data:`MAX_WINDOW_CELLS`."""
        win, activation = _params(ctx)
        nchw = _nchw(ctx)
        inp, out = ctx.inputs[0], ctx.outputs[0]
        native = kind == "max" and inp.type in (F32, F16) and out.type == inp.type
        x = to_nhwc(inp.value if native else to_float(inp), nchw)
        if x.shape[0] == 0:
            real = np.zeros((0, *win.out_hw, x.shape[3]), x.dtype)
        elif _needs_clipping(x, win):
            real = _pool_clipped(kind, x, win)
        elif win.filter_hw[0] * win.filter_hw[1] <= MAX_TAPS and \
                padded_size(x.shape, win) <= MAX_PADDED_ELEMENTS:
            real = _pool_taps(kind, x, win)
        else:
            real = reduce(ctx, win, x)
        if activation:
            real = apply_activation(real, activation)
        if native:
            return [from_nhwc(np.ascontiguousarray(real), nchw)]
        return [from_nhwc(from_float(out, real), nchw)]
    return execute


def _draft_extent(d, op: OperationType, activation: int, cells: int) -> float:
    """``e`` of input values uniform in [-e, e] whose pooled values (over windows of about
    ``cells`` in-bounds cells) straddle the FuseCode's clamp (RELU1 1, RELU6 6) instead of
    all passing it: an average has spread about e / sqrt(3 cells), an L2 norm sits near
    e / sqrt(3), a maximum near e (1 - 2 / (cells + 1)). Without a clamp: e in 1-16."""
    if activation not in (2, 3):
        lo, hi = 1.0, 16.0
    elif op == OperationType.AVERAGE_POOL_2D:
        lo, hi = ((0.4, 1.2) if activation == 2 else (1.5, 5.0))
        lo, hi = lo * np.sqrt(3 * cells), hi * np.sqrt(3 * cells)
    elif op == OperationType.L2_POOL_2D:
        lo, hi = ((1.2, 2.2) if activation == 2 else (5.0, 12.0))
    else:
        lo, hi = ((0.6, 1.5) if activation == 2 else (3.5, 9.0))
    return float(np.exp(d.uniform(np.log(lo), np.log(hi))))


def _generate(d) -> None:
    """Window: filter 1-5 or the whole input, paddings below the filter (AOSP prepare); a
    quantized output keeps input 0's scale and zeroPoint (NNAPI); an unlinked input's values
    straddle the activation's clamp (:func:`_draft_extent`), never at the type's limits."""
    nchw = bool(d.slot("layout").value) if any(s.arg.name == "layout" for s in d.slots) else False
    explicit = any(s.arg.name == "padding_left" for s in d.slots)
    scheme = None if explicit else int(d.slot("padding_scheme").value)
    activation = int(d.slot("activation").value)
    s0 = d.slots[0]
    quantized = is_quantized_type(s0.type)
    linked = draft_linked(d)
    if not linked:
        n, c = d.dim(1, 3), d.dim(1, 16)
        h, w = draft_spatial(d, d.max_elements // (n * c))
        d.tensor(0, layout_dims((n, h, w, c), nchw))
    elif quantized and activation in (2, 3):
        lo, hi = quant_limits(s0.type)
        clamp = 1.0 if activation == 2 else 6.0
        if clamp / s0.scale < 16 or not lo < s0.zero_point < hi:  # the clamp would leave few levels
            d.param("activation", d.choice([0, 1]))
    n, h, w, c = nhwc_dims(s0.dims, nchw)
    fh, sh, _, top, bottom, oh = draft_window_axis(d, h, scheme=scheme, whole_max=64, whole_p=0.2)
    fw, sw, _, left, right, ow = draft_window_axis(d, w, scheme=scheme, whole_max=64, whole_p=0.2)
    param_window(d, explicit, (left, right, top, bottom), (sw, sh))
    d.param("filter_width", fw)
    d.param("filter_height", fh)
    if not linked:
        c = max(c, min(64, -(-GEN_MIN_OUTPUT // (n * oh * ow))))
        d.tensor(0, layout_dims((n, h, w, c), nchw))
        e = _draft_extent(d, d.opdef.type, int(d.slot("activation").value),
                          min(fh, h) * min(fw, w))
        s0.low, s0.high = -e, e
        if quantized:
            lo, hi = quant_limits(s0.type)
            s0.zero_point = (lo + hi + 1) // 2 + d.integer(-24, 24)
            s0.scale = float(np.float32(e / 100))
    if quantized:
        d.out_quant[0] = (s0.scale, s0.zero_point)


for _op, _reduce, _kind, _types, _summary in (
        (OperationType.AVERAGE_POOL_2D, _average, "average",
         [(1, (F32, Q8)), (FL3, (F16,)), (4, (Q8S,))],
         "mean of the in-bounds cells of each 2-D window (NHWC or NCHW), fused activation"),
        (OperationType.L2_POOL_2D, _l2, "l2", [(1, (F32,)), (FL3, (F16,))],
         "sqrt(mean of squares) of the in-bounds cells of each 2-D window (NHWC or NCHW), fused "
         "activation"),
        (OperationType.MAX_POOL_2D, _max, "max", [(1, (F32, Q8)), (FL3, (F16,)), (4, (Q8S,))],
         "maximum of each 2-D window (NHWC or NCHW), fused activation")):
    register(OperationDef(_op, _signatures(_types), _prepare, _executor(_reduce, _kind),
                          validate=_validate, generate=_generate, summary=_summary,
                          error_budget=budgets.pooling(_op),
                          error_inputs=None if _op == OperationType.L2_POOL_2D else  # float only
                          output_quant_of_input("must equal input scale", f"NNAPI types.spec {_op.name}"),
                          allows_zero_sized_input=True,
                          aosp_source="PoolingExecution.cpp"))
