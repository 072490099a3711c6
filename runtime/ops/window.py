"""The window and matrix library of the convolution-like operations: the gathered-window
convolution kernel (CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D), padded
inputs and tap views (the pools), work bounds, bias / activation / filter quantization
helpers, and the random-graph drafting helpers shared by conv, transpose_conv, pool,
fully_connected and batch_matmul (window geometry per axis, weights scaled to the data they
multiply). The operation rows live in their own modules (:mod:`.conv` ...).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..types import OperandType, is_quantized_type
from .base import OpContext, OperandView, check
from .common import (QUANT_RANGES, Window2D, activation_range, bias_to_float, check_quant_bias,
                     computing_truth, derived, round_saturate, value_dtype)
from .generation import FLOAT_RANGE, INT_RANGE, quant_limits

T = OperandType
F32, F16, Q8, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32
Q8S, PER_CHANNEL = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM_PER_CHANNEL

#: Work bound of the reference kernels (multiply-adds per operation): a hostile but valid
#: model (huge filter and padding) fails with GENERAL_FAILURE instead of running for hours.
MAX_MACS = 1 << 28
#: Largest gathered window block (elements) one step of the kernel makes; bigger
#: convolutions are computed in chunks of output positions (and of batches).
MAX_PATCH_ELEMENTS = 1 << 22


# --- the kernel --------------------------------------------------------------------------

def window_conv(x: np.ndarray, f: np.ndarray, groups: int,
                rows_of: Callable[[np.ndarray], np.ndarray],
                cols_of: Callable[[np.ndarray], np.ndarray],
                out_hw: tuple[int, int]) -> np.ndarray:
    """Grouped 2-D correlation of NHWC ``x`` [n, h, w, depth_in] (float64) with ``f``
    [depth_out, fh, fw, depth_in / groups] (float64): returns float64 [n, out_h, out_w,
    depth_out] with ``out[b, i, j, o] = sum over a, c, k of x[b, R[i, a], C[j, c],
    g * depth_group + k] * f[o, a, c, k]``, ``g = o // (depth_out / groups)``, where
    ``R = rows_of(i)`` ([len(i), fh] int64 input rows for the output rows ``i``, int64 1-D)
    and ``C = cols_of(j)`` likewise for columns; a row or column outside the input reads 0.

    Memory: at most about :data:`MAX_PATCH_ELEMENTS` gathered cells at a time (plus the
    output and one copy of the input); the caller bounds the work (:data:`MAX_MACS`).
    """
    n, h, w, depth_in = x.shape
    depth_out, fh, fw, depth_group = f.shape
    oh, ow = out_hw
    out = np.zeros((n, oh * ow, depth_out))
    if n == 0 or oh * ow == 0:
        return out.reshape(n, oh, ow, depth_out)
    xz = np.zeros((n, h + 1, w + 1, depth_in))  # row h / column w: the zero cell
    xz[:, :h, :w] = x
    out_group = depth_out // groups
    k = fh * fw * depth_group
    # [groups, k, out_group]: filter of group g as a matrix over (tap row, tap col, channel)
    fm = f.reshape(groups, out_group, k).transpose(0, 2, 1)
    cell = fh * fw * depth_in
    nb = max(1, min(n, MAX_PATCH_ELEMENTS // max(cell, 1)))
    per = max(1, MAX_PATCH_ELEMENTS // max(nb * cell, 1))
    for b in range(0, n, nb):
        xb = xz[b:b + nb]
        m = xb.shape[0]
        for p in range(0, oh * ow, per):
            pos = np.arange(p, min(p + per, oh * ow), dtype=np.int64)
            r, c = rows_of(pos // ow), cols_of(pos % ow)
            r = np.where((r >= 0) & (r < h), r, h)
            c = np.where((c >= 0) & (c < w), c, w)
            patches = xb[:, r[:, :, None], c[:, None, :]]  # [m, P, fh, fw, depth_in]
            q = len(pos)
            pm = patches.reshape(m * q, fh * fw, groups, depth_group).transpose(2, 0, 1, 3)
            res = np.matmul(pm.reshape(groups, m * q, k), fm)  # [groups, m * q, out_group]
            out[b:b + m, p:p + q] = res.transpose(1, 0, 2).reshape(m, q, depth_out)
    return out.reshape(n, oh, ow, depth_out)


#: Largest zero-padded input copy (elements) the direct kernels (:func:`direct_conv`,
#: :func:`depthwise_taps`, and the pooling's tap kernel) make (also the bound of the
#: depthwise column copy); a convolution needing more
#: (huge paddings or dilations) runs on :func:`window_conv`, whose memory follows the output.
MAX_PADDED_ELEMENTS = 1 << 24
#: Most filter taps the pooling's per-tap kernel loops over in Python; a bigger window runs
#: on the gathering kernels.
MAX_TAPS = 256


_F32_DTYPE, _F64_DTYPE = np.dtype(np.float32), np.dtype(np.float64)


def compute_dtype(*views: OperandView) -> np.dtype:
    """The working precision of a convolution or pooling: float32 when every operand given
    is TENSOR_FLOAT32 (the kernels then compute in float32 with BLAS, as TFLite does: the
    CTS float32 criteria hold for it), else float64 on real values (float16 and quantized
    operands: exact dequantized values, products and sums of 8-bit values exact; every
    operand while computing float64 truth, :func:`.common.float64_truth`)."""
    if computing_truth():
        return _F64_DTYPE
    for v in views:
        if v.type != F32:
            return _F64_DTYPE
    return _F32_DTYPE


def padded_input(x: np.ndarray, win: Window2D, fill: float = 0.0) -> np.ndarray:
    """NHWC ``x`` with ``win``'s paddings filled with ``fill``, C-contiguous (``x`` itself
    when it is contiguous and not padded); only the padding cells are written besides the
    copy."""
    t, b, left, r = win.pad_top, win.pad_bottom, win.pad_left, win.pad_right
    if not (t or b or left or r):
        return np.ascontiguousarray(x)
    n, h, w, c = x.shape
    xp = np.empty((n, h + t + b, w + left + r, c), dtype=x.dtype)
    xp[:, :t] = fill
    xp[:, t + h:] = fill
    xp[:, t:t + h, :left] = fill
    xp[:, t:t + h, left + w:] = fill
    xp[:, t:t + h, left:left + w] = x
    return xp


def c_strides(a: np.ndarray) -> tuple[int, ...]:
    """The strides of C-contiguous ``a`` computed from its shape: numpy may give a dimension
    of size 1 any stride in an array it calls contiguous (a transposed NCHW input of one
    channel), and views built with ``as_strided`` that merge such a dimension with its
    neighbour need the canonical one."""
    assert a.flags.c_contiguous
    strides, step = [], a.itemsize
    for d in reversed(a.shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def padded_size(shape, win: Window2D) -> int:
    """Elements of :func:`padded_input` for an NHWC input of ``shape``."""
    n, h, w, c = shape
    return n * (h + win.pad_top + win.pad_bottom) * (w + win.pad_left + win.pad_right) * c


def tap_views(xp: np.ndarray, win: Window2D):
    """For each filter tap (a, b) of ``win`` over the padded NHWC ``xp`` (C-contiguous, from
    :func:`padded_input`), yield ``(a, b, v)`` where ``v`` [n, out_h, out_w * C] is the
    input cell every output position reads through that tap (a view: row ``i * stride_h +
    a * dilation_h``, column ``j * stride_w + b * dilation_w`` of ``xp``). Columns are
    taken from a contiguous copy of each needed column phase (``column % stride_w``), so
    every view's rows are contiguous: elementwise passes over them run in long inner loops."""
    n, _, _, c = xp.shape
    (fh, fw), (sh, sw), (oh, ow) = win.filter_hw, win.stride_hw, win.out_hw
    dh, dw = win.dilation_hw
    phases: dict[int, np.ndarray] = {}
    for b in range(fw):
        off = b * dw
        q, j = off % sw, off // sw
        src = xp
        if sw > 1:
            src = phases.get(q)
            if src is None:
                src = phases[q] = np.ascontiguousarray(xp[:, :, q::sw])
        cols = src[:, :, j:j + ow]
        for a in range(fh):
            rows = cols[:, a * dh:a * dh + (oh - 1) * sh + 1:sh]
            yield a, b, rows.reshape(n, oh, ow * c)


def direct_conv(x: np.ndarray, f: np.ndarray, win: Window2D) -> np.ndarray:
    """2-D correlation (one group) of NHWC ``x`` [n, h, w, depth_in] with ``f``
    [depth_out, fh, fw, depth_in], both of one float dtype: a 1x1 filter without padding is
    one matrix product of the (strided) input; otherwise the padded input's patches
    (im2col, [positions, fh * fw * depth_in], in chunks of output rows of at most
    :data:`MAX_PATCH_ELEMENTS`) times the filter matrix. Returns [n, out_h, out_w,
    depth_out] of ``x``'s dtype, C-contiguous. The caller checks
    :data:`MAX_PADDED_ELEMENTS`."""
    n, h, w, cin = x.shape
    cout, fh, fw, _ = f.shape
    (sh, sw), (oh, ow), (dh, dw) = win.stride_hw, win.out_hw, win.dilation_hw
    fm = f.reshape(cout, fh * fw * cin).T
    if n == 0:
        return np.zeros((0, oh, ow, cout), x.dtype)
    if fh == fw == 1 and not (win.pad_top or win.pad_bottom or win.pad_left or win.pad_right):
        xs = x[:, :(oh - 1) * sh + 1:sh, :(ow - 1) * sw + 1:sw]
        return np.matmul(xs.reshape(n * oh * ow, cin), fm).reshape(n, oh, ow, cout)
    xp = padded_input(x, win)
    s0, s1, s2, s3 = c_strides(xp)
    if dw == 1:  # a filter row's cells are fw * depth_in contiguous input values: copied as runs
        patches = np.lib.stride_tricks.as_strided(
            xp, (n, oh, ow, fh, fw * cin), (s0, s1 * sh, s2 * sw, s1 * dh, s3), writeable=False)
    else:
        patches = np.lib.stride_tricks.as_strided(
            xp, (n, oh, ow, fh, fw, cin), (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3), writeable=False)
    k = fh * fw * cin
    out = np.empty((n, oh, ow, cout), x.dtype)
    rows = max(1, MAX_PATCH_ELEMENTS // max(1, ow * k))
    for b in range(n):
        for i in range(0, oh, rows):
            block = patches[b, i:i + rows]
            m = block.shape[0] * ow
            np.matmul(block.reshape(m, k), fm, out=out[b, i:i + rows].reshape(m, cout))
    return out


def depthwise_columns(shape, win: Window2D) -> int:
    """Elements of the column copy :func:`depthwise_taps` makes for an NHWC input of
    ``shape`` with a horizontal stride above 1 (0 for stride 1: no copy)."""
    n, h, _, c = shape
    if win.stride_hw[1] == 1:
        return 0
    return win.filter_hw[1] * n * (h + win.pad_top + win.pad_bottom) * win.out_hw[1] * c


def depthwise_taps(x: np.ndarray, k: np.ndarray, bias: np.ndarray, activation: int,
                   win: Window2D, multiplier: int) -> np.ndarray:
    """DEPTHWISE_CONV_2D of NHWC ``x`` [n, h, w, depth_in] with ``k`` [fh, fw, depth_out]
    (depth_out = depth_in * ``multiplier``; output channel ``c * multiplier + m`` reads
    input channel ``c``), plus ``bias`` [depth_out], clamped to FuseCode ``activation``;
    all of one float dtype. One ``np.einsum`` over a view of the padded input
    [fh, fw, n, out_h, out_w * depth_out] whose last axis runs along an output row (the
    columns a tap reads in a row are contiguous: directly for stride 1, else in a copy of
    each tap column's strided columns, :func:`depthwise_columns` elements), so the sum over
    the taps runs in long inner loops without temporaries. Returns [n, out_h, out_w,
    depth_out] of ``x``'s dtype, C-contiguous. The caller checks
    :data:`MAX_PADDED_ELEMENTS` for the padded input and the column copy."""
    n = x.shape[0]
    (fh, fw), (sh, sw), (dh, dw), (oh, ow) = win.filter_hw, win.stride_hw, win.dilation_hw, win.out_hw
    cout = k.shape[2]
    if n == 0:
        return np.zeros((0, oh, ow, cout), x.dtype)
    if multiplier > 1:
        x = np.repeat(x, multiplier, axis=3)
    xp = padded_input(x, win)
    s0, s1, s2, s3 = c_strides(xp)
    if sw == 1:  # row i, tap (a, b): xp[:, i * sh + a * dh, b * dw:b * dw + ow] as one run
        windows = np.lib.stride_tricks.as_strided(
            xp, (fh, fw, n, oh, ow * cout), (s1 * dh, s2 * dw, s0, s1 * sh, s3), writeable=False)
    else:  # column tap b: xp[:, :, b * dw::sw][:, :, :ow], copied contiguous
        cols = np.empty((fw, n, xp.shape[1], ow, cout), x.dtype)
        for b in range(fw):
            cols[b] = xp[:, :, b * dw:b * dw + (ow - 1) * sw + 1:sw]
        c0, c1, c2, _, c4 = c_strides(cols)
        windows = np.lib.stride_tricks.as_strided(
            cols, (fh, fw, n, oh, ow * cout), (c2 * dh, c0, c1, c2 * sh, c4), writeable=False)
    kt = np.broadcast_to(k[:, :, None, :], (fh, fw, ow, cout)).reshape(fh, fw, ow * cout)
    out = np.einsum("abnhp,abp->nhp", windows, kt).reshape(n, oh, ow, cout)
    return out if bias is None else bias_activation(out, bias, activation)


def integer_operands(inp: OperandView, flt: OperandView, bias: OperandView, channel_axis: int,
                     pad: Window2D | None = None):
    """The exact integer form of a quantized convolution / FULLY_CONNECTED: None unless the
    input is TENSOR_QUANT8_ASYMM(_SIGNED), the filter TENSOR_QUANT8_ASYMM(_SIGNED) or
    TENSOR_QUANT8_SYMM_PER_CHANNEL (with its scales) and the bias TENSOR_INT32; else
    ``(x, f, scale)``: ``x`` = input - zeroPoint and ``f`` = filter - zeroPoint as float
    integers (``f`` kept with a frozen constant filter, ``common.derived``; read-only),
    ``scale`` the float64 scale of a product (input scale * filter scale, a [depth_out]
    vector per channel), each factor as ``common.to_float`` dequantizes it.

    Every sum of products is exact whatever the order: float32 when the largest possible
    |sum| (largest |input - zeroPoint| of the input type times the largest sum of |filter -
    zeroPoint| over one output channel, the filter's axis ``channel_axis``) is below 2^24,
    else float64 (|product| <= 2^16, at most :data:`MAX_MACS` terms: below 2^53). So
    ``sum * scale`` is the real sum to within one rounding.

    ``pad`` (an NHWC input's window): ``x`` is the input padded with ``pad``'s paddings
    (:func:`padded_input`, the padding cells 0 = the zeroPoint centred), padded while still
    8-bit so the wide values are written once."""
    if inp.type not in (Q8, Q8S) or flt.type not in (Q8, Q8S, PER_CHANNEL) or bias.type != I32:
        return None
    if flt.type == PER_CHANNEL:
        if flt.channel_quant is None:
            return None
        fscale, fzp = np.asarray(flt.channel_quant[0], np.float64), 0
    else:
        fscale, fzp = np.float64(np.float32(flt.scale)), flt.zero_point
    lo, hi = (0, 255) if inp.type == Q8 else (-128, 127)
    reach = max(inp.zero_point - lo, hi - inp.zero_point, 0)
    dtype = np.float32 if reach * derived(flt.value, ("abs_sum", fzp, channel_axis), lambda v: _abs_sum(
        v, fzp, channel_axis)) < (1 << 24) else np.float64
    raw = inp.value if pad is None else padded_input(inp.value, pad, inp.zero_point)
    x = np.subtract(raw, inp.zero_point, dtype=dtype)
    f = derived(flt.value, ("centred", fzp, dtype),
                lambda v: _read_only(np.subtract(v, fzp, dtype=dtype)))
    return x, f, np.float64(np.float32(inp.scale)) * fscale


#: Elements per chunk of :func:`requantize` (its temporaries stay in cache).
REQUANTIZE_CHUNK = 1 << 14


def requantize(acc: np.ndarray, scale, inp: OperandView, flt: OperandView, bias: OperandView,
               activation: int, out: OperandView) -> np.ndarray:
    """The quantized output of integer sums ``acc`` [..., depth_out] (float32 or float64,
    from :func:`integer_operands` of ``inp``, ``flt``, ``bias``): real = acc * ``scale``
    (float64, per channel or not) + the real bias (:func:`bias_real`), clamped to FuseCode
    ``activation``'s range, stored in ``out``'s type as ``common.from_float`` stores it
    (round half away from zero, saturate; NaN to 0). Returns an array of ``acc``'s shape
    in ``out``'s dtype.

    The same float64 values as ``bias_activation`` then ``from_float``, in fewer passes
    (:func:`_requantize_plan`): the clamp to the activation's range becomes a clamp of the
    stored integers (rounding and saturating are monotone, so clamping before them equals
    clamping after them to the images of the range's ends); with finite scales and biases
    no sum is NaN; when that clamp's low end is at or above the zeroPoint, a negative
    quotient can only store the low end, so rounding is ``floor(q + 0.5)``. Runs over
    chunks of :data:`REQUANTIZE_CHUNK` elements so that the temporaries stay in cache; the
    scales and real biases repeated along a chunk are kept with a frozen constant bias
    (``common.derived``)."""
    c = acc.shape[-1] if acc.ndim else 1
    flat = acc.reshape(-1)
    dtype = value_dtype(out.type)
    result = np.empty(flat.size, dtype)
    if not flat.size:
        return result.reshape(acc.shape)
    rows = max(1, REQUANTIZE_CHUNK // c)
    step = min(rows * c, flat.size)
    reps = -(-step // c)
    scale = np.asarray(scale, np.float64)
    scales, biases, fold = derived(
        bias.value, ("requantize", reps, scale.shape, scale.tobytes(), inp.scale, bias.scale, out.type,
                     out.scale, out.zero_point, activation),
        lambda _v: _requantize_plan(scale, bias_real(inp, flt, bias), c, reps, out, activation))
    if fold is None:
        out_scale, zp, (lo, hi) = np.float64(np.float32(out.scale)), out.zero_point, QUANT_RANGES[out.type]
        return _requantize_slow(flat, scales, biases, activation, out_scale, zp, lo, hi, result, step).reshape(
            acc.shape)
    out_scale, zp, low, high = fold
    buf, ints = np.empty(step), (np.empty(step, np.int16) if zp else None)
    half = None if low >= 0 else np.empty(step)
    for i in range(0, flat.size, step):
        m = min(step, flat.size - i)
        r = buf[:m]
        np.multiply(flat[i:i + m], scales if scales.ndim == 0 else scales[:m], out=r)
        np.add(r, biases[:m], out=r)
        np.divide(r, out_scale, out=r)
        if half is None:  # low >= 0: q < 0 stores low whichever way it rounds: floor(q + 0.5)
            np.add(r, 0.5, out=r)
        else:  # round half away from zero, as common.round_half_away: trunc(q + copysign(0.5, q))
            np.copysign(0.5, r, out=half[:m])
            np.add(r, half[:m], out=r)
        # clamped to integer bounds first, so the cast's truncation is the rounding's
        np.clip(r, low, high, out=r)
        if zp:
            np.copyto(ints[:m], r, casting="unsafe")
            np.add(ints[:m], zp, out=result[i:i + m], casting="unsafe")
        else:
            np.copyto(result[i:i + m], r, casting="unsafe")
    return result.reshape(acc.shape)


def _requantize_plan(scale: np.ndarray, bias: np.ndarray, c: int, reps: int, out: OperandView, activation: int):
    """``(scales, biases, fold)`` of :func:`requantize`: the product scale (a float64
    scalar, or per channel repeated ``reps`` times along a chunk), the real bias [c]
    repeated ``reps`` times, and, when every scale and bias is finite and the output scale
    positive, ``(out_scale, zeroPoint, low, high)``: the stored range (of ``out``'s type,
    narrowed to FuseCode ``activation``'s: the stored values of its ends) minus the
    zeroPoint, float64 bounds (np.clip's fast loop); else None (the slow path)."""
    scales = scale if scale.ndim == 0 else np.tile(np.broadcast_to(scale, (c,)), reps)
    biases = np.tile(np.broadcast_to(bias, (c,)), reps)
    out_scale, zp = np.float64(np.float32(out.scale)), out.zero_point
    if not (np.isfinite(scale).all() and np.isfinite(bias).all() and np.isfinite(out_scale) and out_scale > 0):
        return scales, biases, None
    lo, hi = QUANT_RANGES[out.type]
    if activation:  # the stored values of the activation's range ends
        ends = np.array(activation_range(activation)) / out_scale
        round_saturate(ends, np.empty(2), zp, lo, hi)
        lo, hi = int(ends[0]), int(ends[1])
    return scales, biases, (out_scale, zp, np.float64(lo - zp), np.float64(hi - zp))


def _requantize_slow(flat, scales, biases, activation, out_scale, zp, lo, hi, result, step):
    """:func:`requantize` for non-finite parameters, every step as ``bias_activation`` then
    ``from_float`` take it (NaN stored as 0 saturated)."""
    act = activation_range(activation) if activation else None
    buf, half = np.empty(step), np.empty(step)
    for i in range(0, flat.size, step):
        m = min(step, flat.size - i)
        r, h = buf[:m], half[:m]
        np.multiply(flat[i:i + m], scales if scales.ndim == 0 else scales[:m], out=r)
        np.add(r, biases[:m], out=r)
        if act is not None:
            np.clip(r, act[0], act[1], out=r)
        np.divide(r, out_scale, out=r)
        round_saturate(r, h, zp, lo, hi)
        result[i:i + m] = r
    return result


def _abs_sum(v: np.ndarray, zero_point: int, axis: int) -> int:
    """Largest sum of |v - zero_point| over one index of ``axis`` (0 when ``v`` is empty)."""
    if not v.size:
        return 0
    a = np.abs(v.astype(np.int64) - zero_point)
    return int(np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1).sum(axis=1).max())


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def bias_activation(out: np.ndarray, bias: np.ndarray, activation: int) -> np.ndarray:
    """``out`` [..., depth_out] plus ``bias`` [depth_out], clamped to FuseCode
    ``activation``'s range, in place (``out``, C-contiguous, is returned)."""
    c = out.shape[-1]
    bias = bias.astype(out.dtype, copy=False)
    if out.size and c >= 64:  # long enough inner loops along the channels
        np.add(out, bias, out=out)
    elif out.size:  # few channels: the bias repeated along whole rows
        rows = out.reshape(-1, out.shape[-2] * c) if out.ndim >= 2 else out.reshape(1, c)
        tiled = np.empty((rows.shape[1] // c, c), out.dtype)
        tiled[...] = bias
        np.add(rows, tiled.reshape(-1), out=rows)
    if activation:
        lo, hi = activation_range(activation)
        np.clip(out, lo, hi, out=out)
    return out


def check_work(macs: int) -> None:
    """OperationError when ``macs`` multiply-adds exceed :data:`MAX_MACS` (the executor
    prefixes the operation)."""
    check(macs <= MAX_MACS, f"needs {macs} multiply-adds; the reference kernel computes at "
                            f"most {MAX_MACS} per operation")


def window_axes(win: Window2D):
    """``(rows_of, cols_of)`` of :func:`window_conv` for a forward convolution window:
    output row ``i``, tap ``a`` reads input row ``i * stride_h - pad_top + a * dilation_h``
    (columns likewise)."""
    (fh, fw), (sh, sw), (dh, dw) = win.filter_hw, win.stride_hw, win.dilation_hw
    taps_h = np.arange(fh, dtype=np.int64) * dh
    taps_w = np.arange(fw, dtype=np.int64) * dw
    return (lambda i: (i * sh - win.pad_top)[:, None] + taps_h[None, :],
            lambda j: (j * sw - win.pad_left)[:, None] + taps_w[None, :])


def bias_real(inp: OperandView, flt: OperandView, bias: OperandView) -> np.ndarray:
    """Real bias values (float64 [depth_out]): float bias as is; TENSOR_INT32 bias times its
    scale (per-tensor filter) or times input_scale * filter_scale[i] (binary32 product) for a
    TENSOR_QUANT8_SYMM_PER_CHANNEL filter (NNAPI FL3)."""
    if flt.type == PER_CHANNEL and bias.type == I32 and flt.channel_quant is not None:
        scales = np.float32(inp.scale) * np.asarray(flt.channel_quant[0], np.float32)
        return bias.value.astype(np.float64) * scales.astype(np.float64)
    return bias_to_float(bias)


def check_filter_quant(ctx: OpContext, channel_dim: int) -> None:
    """Quantization rules between input 0, filter (input 1) and bias (input 2) of a
    quantized convolution. Per-tensor filter: :func:`.common.check_quant_bias`. Per-channel
    filter (FL3): channelDim must be ``channel_dim`` (AOSP ``validate``), one scale per
    channel, the bias zeroPoint 0 (NNAPI spec; the bias scale is not used). Raises
    OperationError."""
    inp, flt, bias = ctx.inputs[:3]
    if flt.type != PER_CHANNEL:
        check_quant_bias(inp, flt, bias)
        return
    check(flt.channel_quant is not None,
          "input 1 (filter): TENSOR_QUANT8_SYMM_PER_CHANNEL needs per-channel scales")
    check(flt.channel_quant[1] == channel_dim,
          f"input 1 (filter): per-channel channelDim {flt.channel_quant[1]} must be {channel_dim}")
    n_scales = len(flt.channel_quant[0])
    check(flt.rank != 4 or flt.dims[channel_dim] in (0, n_scales),
          f"input 1 (filter): {n_scales} per-channel scales for {flt.dims[channel_dim]} channels")
    check(bias.zero_point == 0, f"input 2 (bias): zeroPoint {bias.zero_point} must be 0")


def optional_int(ctx: OpContext, index: int, default: int) -> int:
    """INT32 scalar input ``index``, or ``default`` when absent or omitted."""
    if index >= len(ctx.inputs) or ctx.inputs[index].omitted or ctx.inputs[index].value is None:
        return default
    return ctx.scalar(index)


def optional_flag(ctx: OpContext, index: int) -> bool:
    """BOOL scalar input ``index`` (the layout flag: true = NCHW), False when absent or
    omitted."""
    if index >= len(ctx.inputs) or ctx.inputs[index].omitted or ctx.inputs[index].value is None:
        return False
    return bool(ctx.scalar(index))


# --- random-graph drafts (runtime/ops/generation.py) ---------------------------------------
# Shared by the window and matrix operations (conv, transpose_conv, pool, fully_connected,
# batch_matmul): window geometry per axis, and weights scaled to the data they multiply so
# a sum of products lands around the fused activation's range instead of far beyond it.

#: Output elements a drafted convolution / matrix product aims at most, and at least (the
#: aggregate criteria judge outputs of 10 elements or more).
GEN_OUTPUT_ELEMENTS, GEN_MIN_OUTPUT = 4096, 32
#: Multiply-adds a drafted operation aims at most (well under :data:`MAX_MACS`).
GEN_MACS = 1 << 22


def draft_linked(d) -> bool:
    """Whether input 0 of draft ``d`` keeps the earlier operand it links to (same type and
    dims), so the hook builds the other shapes around it."""
    p, s = d.primary, d.slots[0]
    return p is not None and p.type == s.type and list(p.dims) == list(s.dims) \
        and all(x >= 1 for x in s.dims)


def draft_rms(d, k: int = 0) -> float:
    """Root mean square of the real values slot ``k`` will hold: the linked operand's
    (input 0), else that of a uniform fill of the slot's range (generation.fill)."""
    s = d.slots[k]
    if k == 0 and draft_linked(d) and \
            (s.scale, s.zero_point) == (d.primary.scale, d.primary.zero_point):
        v = np.asarray(d.primary.value, np.float64)
        if is_quantized_type(s.type):
            v = (v - s.zero_point) * s.scale
        rms = float(np.sqrt(np.mean(v * v))) if v.size else 0.0
        return rms if np.isfinite(rms) and rms > 0 else 1.0
    if is_quantized_type(s.type):
        lo, hi = quant_limits(s.type)
        n, mean = hi - lo + 1, (lo + hi) / 2
        return max(1e-6, s.scale * float(np.sqrt((n * n - 1) / 12 + (mean - s.zero_point) ** 2)))
    lo, hi = FLOAT_RANGE if s.type in (F32, F16) else INT_RANGE
    lo = s.low if s.low is not None else lo
    hi = s.high if s.high is not None else hi
    return max(1e-6, float(np.sqrt((lo * lo + lo * hi + hi * hi) / 3)))


def draft_target(d, activation: int | None) -> tuple[float, float]:
    """(spread, centre) of the pre-activation sums of a draft: around the clamp range of
    the FuseCode (RELU1 [-1, 1], RELU6 [0, 6]) so the activation clips some values, not all."""
    if activation == 2:
        return d.uniform(0.3, 1.5), 0.0
    if activation == 3:
        spread = d.uniform(1.0, 5.0)
        return spread, d.uniform(0.0, 0.5) * spread
    spread = float(np.exp(d.uniform(np.log(0.5), np.log(4.0))))
    return spread, (d.uniform(0.0, 0.5) if activation == 1 else d.uniform(-0.5, 0.5)) * spread


def draft_quantization(d, activation: int | None, spread: float, centre: float,
                       n_out: int) -> None:
    """Quantizations of input 0 and output 0 of a quantized operation whose ``n_out``
    outputs are sums with ``spread`` / ``centre`` (:func:`draft_target`), then FuseCode
    ``activation``. Expected range: ``centre`` +- ``spread`` * (sqrt(2 ln n_out) - 0.5), the
    typical extreme of that many sums, clamped. An unlinked input 0: zero point near the
    type's middle (values about symmetric: no output channel all clamped by a RELU).
    The output's quantization is left to the generator, which fits it to the computed
    values."""
    s0 = d.slots[0]
    if not is_quantized_type(s0.type):
        return
    clamp_lo, clamp_hi = {1: (0.0, np.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}.get(
        activation, (-np.inf, np.inf))
    if clamp_lo == 0:
        n_out //= 2  # about half of them are clamped to 0
    tail = spread * max(1.0, float(np.sqrt(2 * np.log(max(n_out, 2)))) - 0.5)
    r_lo = min(max(centre - tail, clamp_lo), 0.0)
    r_hi = max(min(centre + tail, clamp_hi), 0.0)
    if r_hi - r_lo <= 0:
        r_lo, r_hi = max(clamp_lo, -1.0), min(clamp_hi, 1.0)
    lo, hi = quant_limits(s0.type)
    if not draft_linked(d):
        s0.scale = float(np.float32(max(-r_lo, r_hi) / d.uniform(60.0, 110.0)))
        s0.zero_point = (lo + hi + 1) // 2 + d.integer(-16, 16)


def draft_spatial(d, budget: int) -> tuple[int, int]:
    """(height, width) of at most ``budget`` cells: any shape half of the time, else both
    up to sqrt(budget) (square-ish, as images are)."""
    if d.coin(0.5):
        h, w = d.shape(2, budget=max(1, budget))
        return h, w
    side = max(1, int(np.sqrt(max(1, budget))))
    return d.dim(1, side), d.dim(1, side)


def draft_weights(d, k: int, fan_in: float, rms_in: float, spread: float,
                  channel_dim: int = 0):
    """Make slot ``k`` (filter / weights, dims already set) symmetric about a real 0 and
    scaled so a sum of ``fan_in`` products with data of RMS ``rms_in`` has standard
    deviation ``spread``: float range [-a, a]; per-tensor quantized: a zero point in the
    middle half of the type, the scale spanning at least half the stored range; per-channel
    (TENSOR_QUANT8_SYMM_PER_CHANNEL on ``channel_dim``): one scale per channel around the
    same magnitude. Returns the filter scale (per tensor) or the tuple of channel scales."""
    s = d.slots[k]
    a = spread * np.sqrt(3.0) / (np.sqrt(max(fan_in, 1.0)) * max(rms_in, 1e-6))
    if s.type == PER_CHANNEL:
        base = a / 128.0
        scales = tuple(float(np.float32(base * np.exp(d.uniform(np.log(0.5), np.log(2.0)))))
                       for _ in range(s.dims[channel_dim]))
        s.scale, s.zero_point, s.channel_quant = 0.0, 0, (scales, channel_dim)
        s.low = s.high = None
        return scales
    if is_quantized_type(s.type):
        lo, hi = quant_limits(s.type)
        quarter = (hi - lo) // 4
        zp = d.integer(lo + quarter, hi - quarter)
        scale = float(np.float32(a / min(zp - lo, hi - zp)))
        s.scale, s.zero_point, s.low, s.high = scale, zp, -a, a
        return scale
    s.low, s.high = -a, a
    return None


def draft_bias(d, k: int, spread: float, centre: float, input_scale: float, filter_scales) -> None:
    """Bias slot ``k`` (dims set): real values uniform around ``centre`` within a fraction
    of ``spread`` (half as far below a positive ``centre``: fewer outputs all clamped by a
    RELU). TENSOR_INT32 bias of a quantized operation: scale input_scale *
    filter_scale (binary32) and zeroPoint 0 (NNAPI CONV_2D / FULLY_CONNECTED); with
    per-channel filter scales, scale 0 (each value i has input_scale * filter_scale[i])."""
    s = d.slots[k]
    half = spread * d.uniform(0.1, 1.0)
    lo, hi = centre - (half / 2 if centre > 0 else half), centre + half
    if s.type != I32:
        s.low, s.high = lo, hi
        return
    if isinstance(filter_scales, tuple):
        unit = float(np.float32(input_scale)) * float(np.exp(np.mean(np.log(filter_scales))))
        s.scale, s.zero_point = 0.0, 0
    else:
        unit = float(np.float32(input_scale) * np.float32(filter_scales))
        s.scale, s.zero_point = unit, 0
    bound = float(1 << 30)
    s.low = float(np.clip(np.floor(lo / unit), -bound, bound))
    s.high = float(np.clip(np.ceil(hi / unit), -bound, bound))


def param_window(d, explicit: bool, pads: tuple[int, int, int, int], strides: tuple[int, int]) -> None:
    """Set the window parameters of a convolution or pooling draft: explicit paddings
    (left, right, top, bottom) when the signature has them, and strides (width, height)."""
    if explicit:
        for name, v in zip(("padding_left", "padding_right", "padding_top", "padding_bottom"), pads):
            d.param(name, v)
    d.param("stride_width", strides[0])
    d.param("stride_height", strides[1])


def draft_window_axis(d, size: int, filter_size: int | None = None, *, dilation: bool = False,
                      scheme: int | None = None, max_filter: int = 5, whole_max: int = 12,
                      whole_p: float = 0.15) -> tuple[int, int, int, int, int, int]:
    """One axis of a 2-D window over an input extent ``size``: (filter, stride, dilation,
    pad head, pad tail, output extent). Filter 1..``max_filter`` or, sometimes, the whole
    extent (up to ``whole_max``); stride and dilation 1, sometimes 2..3 (dilation only if
    the dilated window fits in the input, else it may read padding alone). Explicit
    padding (``scheme`` None): each pad in [0, dilated filter extent), the padded input at
    least one extent long (AOSP ``prepare``); VALID: the extent fits in the input."""
    f = filter_size
    if f is None:
        f = size if size <= whole_max and d.coin(whole_p) else d.integer(1, max_filter)
    dil = d.integer(2, 3) if dilation and d.coin(0.4) else 1
    if (f - 1) * dil + 1 > size:  # a dilated window wider than the input may read padding only
        dil = 1
    stride = 1 if d.coin(0.5) else d.integer(2, 3)
    if scheme == 2 and (f - 1) * dil + 1 > size:  # VALID: the window must fit
        f, dil = min(f, size), 1
    eff = (f - 1) * dil + 1
    if scheme is None:
        head, tail = (0 if d.coin(0.3) else d.integer(0, eff - 1) for _ in range(2))
        while size + head + tail < eff:
            if head <= tail:
                head += 1
            else:
                tail += 1
        out = (size - eff + head + tail) // stride + 1
    elif scheme == 1:
        head = tail = 0
        out = -(-size // stride)
    else:
        head = tail = 0
        out = (size - eff) // stride + 1
    return f, stride, dil, head, tail, out


def draft_count(d, cap: int, hi: int, lo_elements: int = 1) -> int:
    """A channel count in [``lo_elements``, min(hi, cap)] (log-uniform; at least 1)."""
    top = max(1, min(hi, cap))
    return d.dim(min(max(1, lo_elements), top), top)
