"""Helpers shared by the reference kernels: (de)quantization, fused activations,
implicit padding, and float32/float16 handling."""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

import numpy as np

from ..identity import IdentityTable
from ..types import FuseCode, OperandType, PaddingCode, operand_dtype
from .base import Arg, OperandView, check, scalar

QUANT_RANGES = {
    OperandType.TENSOR_QUANT8_ASYMM: (0, 255),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    OperandType.TENSOR_QUANT8_SYMM: (-127, 127),
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
    OperandType.TENSOR_QUANT16_SYMM: (-32768, 32767),
    OperandType.TENSOR_QUANT16_ASYMM: (0, 65535),
    OperandType.TENSOR_INT32: (-(2**31), 2**31 - 1),
}


# --- float64 truth: the same kernels at float64 precision ----------------------------------

_FLOAT_TYPES = frozenset((OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16,
                          OperandType.FLOAT32, OperandType.FLOAT16))
_FLOAT64 = np.dtype(np.float64)
#: True while the executor computes float64 truth (:func:`float64_truth`).
_WIDE: contextvars.ContextVar = contextvars.ContextVar("nncts_float64_truth", default=False)


@contextlib.contextmanager
def float64_truth():
    """Within this block the reference kernels compute the float64 truth of a model: every
    FLOAT32 / FLOAT16 / TENSOR_FLOAT32 / TENSOR_FLOAT16 value is held as float64
    (:func:`value_dtype`), float kernels compute at float64 and store without rounding to
    the operand's type; quantized and integer operands keep their types, so a quantized
    operation computes in real arithmetic and rounds only when it stores its output. The
    executor reads the flag when it compiles a subgraph (``runtime.executor``); no second
    kernel set exists. Not for writing into request pools: run subgraphs on arrays
    (``runtime.precision.truth``)."""
    token = _WIDE.set(True)
    try:
        yield
    finally:
        _WIDE.reset(token)


def computing_truth() -> bool:
    """Whether the kernels compute float64 truth now (inside :func:`float64_truth`)."""
    return _WIDE.get()


def value_dtype(operand_type) -> np.dtype:
    """The numpy dtype the kernels hold values of ``operand_type`` in: float64 for the
    float types while computing truth (:func:`float64_truth`), else the operand's own dtype
    (:func:`runtime.types.operand_dtype`; ValueError for a code that is no OperandType)."""
    if operand_type in _FLOAT_TYPES and _WIDE.get():
        return _FLOAT64
    return operand_dtype(operand_type)


# --- constants prepared once: forms derived from a held model's constant values ------------

#: {key: derived value} per constant value the executor declared immutable (:func:`freeze`).
_FROZEN = IdentityTable()


def freeze(value) -> None:
    """Declare ``value`` (a numpy array: a constant operand's value in a prepared model the
    executor holds, ``runtime.executor.hold``) immutable for as long as it lives, so kernels
    may keep forms derived from it (:func:`derived`: packed filters, integer weights)
    instead of recomputing them on every execution. Anything else is ignored."""
    if isinstance(value, np.ndarray):
        _FROZEN.add(value)


def derived(value: np.ndarray, key, make):
    """``make(value)``, computed once and kept with ``value`` under ``key`` when ``value`` is
    frozen (:func:`freeze`), else computed afresh (a value that may change: a request's
    input, a model nobody holds). ``make`` must depend on ``value`` and ``key`` only; the
    result is shared, callers must not write into it."""
    store = _FROZEN.store(value)
    if store is None:
        return make(value)
    out = store.get(key)
    if out is None:
        out = store[key] = make(value)
    return out


def is_quant(op: OperandView) -> bool:
    return op.type in QUANT_RANGES and op.type != OperandType.TENSOR_INT32


def to_float(op: OperandView, value: np.ndarray | None = None) -> np.ndarray:
    """Real values of ``op`` as float64: dequantized for quantized types
    (``(q - zero_point) * scale``, per channel for TENSOR_QUANT8_SYMM_PER_CHANNEL), cast for
    float and int types."""
    v = op.value if value is None else value
    if op.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL and op.channel_quant is not None:
        scales, dim = op.channel_quant
        shape = [1] * v.ndim
        shape[dim] = -1
        return v.astype(np.float64) * np.asarray(scales, np.float64).reshape(shape)
    if is_quant(op):
        return (v.astype(np.float64) - op.zero_point) * np.float64(np.float32(op.scale))
    return v.astype(np.float64)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, ties away from zero (C ``std::round``), as
    ``sign(x) * floor(|x| + 0.5)``: the same value (round-to-nearest of ``x +- 0.5`` is
    symmetric, so ``trunc(x + copysign(0.5, x))`` is), in two passes over ``x``."""
    out = np.copysign(0.5, x)
    if isinstance(out, np.ndarray):
        np.add(out, x, out=out)
        return np.trunc(out, out=out)
    return np.trunc(out + x)


def from_float(out: OperandView, real: np.ndarray) -> np.ndarray:
    """Store real values ``real`` into ``out``'s type: quantize (round half away from zero,
    saturate) for quantized types, cast for float types (to float64 while computing truth:
    :func:`value_dtype`), round+saturate for TENSOR_INT32."""
    dtype = value_dtype(out.type)
    real = np.asarray(real)
    if real.dtype.kind == "f" and out.type in (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16):
        return real.astype(dtype)  # one rounding, as through float64; never the input's array
    real = np.asarray(real, dtype=np.float64)
    if is_quant(out):
        lo, hi = QUANT_RANGES[out.type]
        return quantize_real(real, np.float64(np.float32(out.scale)), out.zero_point, lo, hi, dtype)
    if out.type in (OperandType.TENSOR_INT32, OperandType.INT32):
        lo, hi = QUANT_RANGES[OperandType.TENSOR_INT32]
        return np.clip(round_half_away(real), lo, hi).astype(dtype)
    return real.astype(dtype)


def quantize_real(real: np.ndarray, scale, zero_point: int, lo: int, hi: int, dtype) -> np.ndarray:
    """``real`` (float64) stored as ``dtype`` integers: ``round_half_away(real / scale) +
    zero_point`` saturated to [lo, hi], NaN stored as 0 saturated, +-inf as hi / lo (the
    same values as ``clip(nan_to_num(q), lo, hi)``, in a few in-place passes)."""
    q = np.divide(real, scale)
    if not isinstance(q, np.ndarray):
        q = np.asarray(q)
    round_saturate(q, np.empty_like(q), zero_point, lo, hi)
    return q.astype(dtype) if q.ndim else q.astype(dtype)[()]


def round_saturate(q: np.ndarray, half: np.ndarray, zero_point: int, lo: int, hi: int) -> None:
    """In place on float64 ``q``: round half away from zero (:func:`round_half_away`), add
    ``zero_point``, saturate to [lo, hi], NaN to 0 saturated (``half``: scratch of ``q``'s
    shape)."""
    np.copysign(0.5, q, out=half)
    np.add(q, half, out=q)
    np.trunc(q, out=q)
    if zero_point:
        np.add(q, zero_point, out=q)
    np.maximum(q, lo, out=q)  # NaN stays NaN
    np.minimum(q, hi, out=q)
    if q.size and np.isnan(np.add.reduce(q, axis=None)):
        q[np.isnan(q)] = min(max(0, lo), hi)


def activation_range(code: int) -> tuple[float, float]:
    """Real clamp range of a FuseCode (NONE: unbounded, RELU: [0, inf), RELU1: [-1, 1],
    RELU6: [0, 6])."""
    return {
        FuseCode.NONE: (-np.inf, np.inf),
        FuseCode.RELU: (0.0, np.inf),
        FuseCode.RELU1: (-1.0, 1.0),
        FuseCode.RELU6: (0.0, 6.0),
    }[FuseCode(code)]


def check_fuse_code(code: int) -> None:
    check(code in FuseCode._value2member_map_, f"fused activation {code} is not a FuseCode (0-3)")


def apply_activation(real: np.ndarray, code: int) -> np.ndarray:
    """Clamp real values to the range of FuseCode ``code``."""
    if code == FuseCode.NONE:
        return real
    lo, hi = activation_range(code)
    return np.clip(real, lo, hi)


def same_padding(in_size: int, stride: int, filter_size: int, dilation: int = 1) -> tuple[int, int]:
    """NNAPI implicit SAME padding: (head, tail) so that out = ceil(in / stride)."""
    eff = (filter_size - 1) * dilation + 1
    out = (in_size + stride - 1) // stride
    total = max((out - 1) * stride + eff - in_size, 0)
    return total // 2, total - total // 2


def implicit_padding(code: int, in_size: int, stride: int, filter_size: int,
                     dilation: int = 1) -> tuple[int, int]:
    """(head, tail) padding for PaddingCode ``code`` (SAME or VALID)."""
    check(code in (PaddingCode.SAME, PaddingCode.VALID), f"padding scheme {code} is not SAME (1) or VALID (2)")
    if code == PaddingCode.VALID:
        return 0, 0
    return same_padding(in_size, stride, filter_size, dilation)


def conv_out_size(in_size: int, filter_size: int, stride: int, pad_head: int, pad_tail: int,
                  dilation: int = 1) -> int:
    """Output extent of a convolution/pooling window along one axis."""
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + pad_head + pad_tail) // stride + 1


# --- 2-D sliding windows: CONV_2D, DEPTHWISE_CONV_2D, AVERAGE/L2/MAX_POOL_2D (NHWC) ----------

def window_args(explicit: bool) -> list[Arg]:
    """Signature slots of the padding and stride scalars (all INT32) of a 2-D window
    operation: explicit ``[padding_left, padding_right, padding_top, padding_bottom,
    stride_width, stride_height]`` or implicit ``[padding_scheme, stride_width,
    stride_height]`` (NNAPI CONV_2D / DEPTHWISE_CONV_2D / *_POOL_2D, FL1)."""
    names = (["padding_left", "padding_right", "padding_top", "padding_bottom"] if explicit
             else ["padding_scheme"]) + ["stride_width", "stride_height"]
    return [scalar(n, OperandType.INT32) for n in names]


@dataclass(frozen=True)
class Window2D:
    """Window geometry of a 2-D NHWC convolution or pooling: filter size, strides and
    explicit padding (after resolving an implicit PaddingCode), and the output size."""

    filter_hw: tuple[int, int]
    stride_hw: tuple[int, int]
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    out_hw: tuple[int, int]
    #: Dilation factors (height, width) of a convolution (FL3); 1 for pooling.
    dilation_hw: tuple[int, int] = (1, 1)


def read_window(ctx, first: int, explicit: bool, in_hw: tuple[int, int],
                filter_hw: tuple[int, int], dilation_hw: tuple[int, int] = (1, 1)) -> Window2D:
    """Read the padding/stride scalars starting at input ``first`` (layout of
    :func:`window_args`) and resolve them against the input height/width ``in_hw``, the
    filter height/width ``filter_hw`` and the dilation factors (height, width)
    ``dilation_hw`` (FL3 convolutions; default 1, 1).

    Raises OperationError (rules of the AOSP CPU ``prepare`` of CONV_2D, DEPTHWISE_CONV_2D
    and the poolings, FL1; dilation FL3): strides, dilation factors and filter sizes must be
    > 0, paddings >= 0, every padding smaller than the effective filter extent
    ``(filter - 1) * dilation + 1`` on its axis, a padding scheme SAME or VALID (SAME padding
    computed with the effective extent), and the output height and width
    ``(in - effective + head + tail) // stride + 1`` > 0.
    """
    (fh, fw), (h, w), (dh, dw) = filter_hw, in_hw, dilation_hw
    if explicit:
        left, right, top, bottom = (ctx.scalar(first + i) for i in range(4))
        sw, sh = ctx.scalar(first + 4), ctx.scalar(first + 5)
    else:
        scheme, sw, sh = ctx.scalar(first), ctx.scalar(first + 1), ctx.scalar(first + 2)
    check(sw > 0 and sh > 0, f"stride width {sw} and height {sh} must be > 0")
    check(fw > 0 and fh > 0, f"filter width {fw} and height {fh} must be > 0")
    check(dw > 0 and dh > 0, f"dilation width {dw} and height {dh} must be > 0")
    eff_h, eff_w = (fh - 1) * dh + 1, (fw - 1) * dw + 1
    if not explicit:
        top, bottom = implicit_padding(scheme, h, sh, fh, dh)
        left, right = implicit_padding(scheme, w, sw, fw, dw)
    check(min(left, right, top, bottom) >= 0,
          f"paddings (left {left}, right {right}, top {top}, bottom {bottom}) must be >= 0")
    check(max(left, right) < eff_w and max(top, bottom) < eff_h,
          f"paddings (left {left}, right {right}, top {top}, bottom {bottom}) must be smaller "
          f"than the filter ({eff_w} wide, {eff_h} high)")
    out_h = conv_out_size(h, fh, sh, top, bottom, dh)
    out_w = conv_out_size(w, fw, sw, left, right, dw)
    check(out_h > 0 and out_w > 0,
          f"output height {out_h} and width {out_w} must be > 0 (input {h}x{w}, filter {fh}x{fw})")
    return Window2D((fh, fw), (sh, sw), top, bottom, left, right, (out_h, out_w), (dh, dw))


# --- quantized bias / output scale rules: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED -------

def check_quant_bias(inp: OperandView, weights: OperandView, bias: OperandView) -> None:
    """For a TENSOR_QUANT8_ASYMM (FL1) or TENSOR_QUANT8_ASYMM_SIGNED (FL4) ``inp``: the
    TENSOR_INT32 ``bias`` must have zeroPoint 0 and scale ``inp.scale * weights.scale``
    (binary32 product; equal within a relative 1e-6, the tolerance of AOSP
    ``GetQuantizedConvolutionMultiplier``). NNAPI CONV_2D, DEPTHWISE_CONV_2D,
    FULLY_CONNECTED. Raises OperationError."""
    if inp.type not in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED):
        return
    product = float(np.float32(inp.scale) * np.float32(weights.scale))
    check(abs(product - bias.scale) <= 1e-6 * min(product, bias.scale),
          f"bias scale {bias.scale} must equal input scale * filter scale ({product})")
    check(bias.zero_point == 0, f"bias zeroPoint {bias.zero_point} must be 0")


def meets_fl1_output_scale(inp: OperandView, weights: OperandView, out: OperandView) -> bool:
    """The feature level 1-2 rule of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: a
    TENSOR_QUANT8_ASYMM output needs ``output_scale > input_scale * filter_scale`` (binary32).
    AOSP treats a model breaking it as feature level 3, not as invalid; always True for
    other types (TENSOR_QUANT8_ASYMM_SIGNED is feature level 4 anyway, the rule never
    applied to it)."""
    if inp.type != OperandType.TENSOR_QUANT8_ASYMM:
        return True
    return bool(np.float32(out.scale) > np.float32(inp.scale) * np.float32(weights.scale))


def bias_to_float(bias: OperandView) -> np.ndarray:
    """Real values (float64) of a bias: a float tensor as is, a TENSOR_INT32 bias of a
    quantized operation as ``value * scale`` (zeroPoint 0)."""
    if bias.type == OperandType.TENSOR_INT32:
        return bias.value.astype(np.float64) * np.float64(np.float32(bias.scale))
    return to_float(bias)


# --- shape operands and raw data movement: shape_ops, reduce --------------------------------

def check_same_quant(inp: OperandView, out: OperandView, what: str) -> None:
    """For a quantized ``out``: its scale (compared as binary32) and zeroPoint must equal
    ``inp``'s, the rule of operations that move quantized values unchanged (NNAPI RESHAPE,
    SQUEEZE, TRANSPOSE, PAD, ... "the scale and zeroPoint must be the same as input0"; for
    TENSOR_QUANT8_ASYMM and, since FL4, TENSOR_QUANT8_ASYMM_SIGNED).
    No-op for other types. Raises OperationError naming ``what``."""
    if not is_quant(out):
        return
    check(np.float32(inp.scale) == np.float32(out.scale) and inp.zero_point == out.zero_point,
          f"{what}: output scale {out.scale} and zeroPoint {out.zero_point} must equal input "
          f"scale {inp.scale} and zeroPoint {inp.zero_point}")


def int_vector(ctx, index: int, name: str, length: int | None = None) -> list[int]:
    """The values of the 1-D TENSOR_INT32 input ``index`` of ``ctx`` as Python ints.

    Raises OperationError if it has no value, is not 1-D, or (``length`` given) does not
    hold exactly ``length`` values; ``name`` names the input in the message."""
    v = ctx.value(index)
    check(v.ndim == 1, f"input {index} ({name}) must be a 1-D tensor, got shape {list(v.shape)}")
    check(length is None or v.shape[0] == length,
          f"input {index} ({name}) must hold {length} values, got {v.shape[0]}")
    return [int(x) for x in v]


# --- feature level 3 shared pieces: layouts, axes, float16 --------------------------------
#
# TENSOR_FLOAT16 policy (every kernel): read with :func:`to_float` (float64, exact for
# float16 values), compute, store with :func:`from_float`, whose cast to float16 rounds to
# nearest even and overflows to +-inf as float16 arithmetic would. A kernel whose result
# depends on the working precision (long accumulations, exp/log chains) keeps float64 until
# the single final cast, so its float16 result is the correctly rounded one and meets the
# fp16 criteria (atol = rtol = 5 * 2^-10); it never rounds intermediates to float16.

def layout_flag(ctx, index: int) -> bool:
    """Value of the optional BOOL ``layout`` input ``index`` (NNAPI FL3: false = NHWC,
    true = NCHW); False when the operation has no such input or it is omitted."""
    if index >= len(ctx.inputs) or ctx.inputs[index].omitted or ctx.inputs[index].value is None:
        return False
    return bool(ctx.scalar(index))


def nhwc_dims(dims, nchw: bool) -> tuple[int, ...]:
    """4-D ``dims`` given in the operand's layout, as (batches, height, width, channels)."""
    dims = tuple(dims)
    return (dims[0], dims[2], dims[3], dims[1]) if nchw else dims


def layout_dims(nhwc: tuple[int, ...], nchw: bool) -> tuple[int, ...]:
    """(batches, height, width, channels) ``nhwc`` in the operand's layout."""
    n, h, w, c = nhwc
    return (n, c, h, w) if nchw else (n, h, w, c)


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    """A 4-D array in the operand's layout as NHWC (a view for NCHW)."""
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    """A 4-D NHWC array in the operand's layout (NCHW: transposed, contiguous)."""
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x


def read_axis(ctx, index: int, rank: int, name: str = "axis") -> int:
    """The INT32 scalar input ``index`` as an axis of a rank-``rank`` tensor, negative
    values counting from the end (NNAPI FL3 axis parameters: range [-rank, rank)).
    Returns the axis in [0, rank); raises OperationError naming the input otherwise."""
    axis = ctx.scalar(index)
    check(-rank <= axis < rank,
          f"input {index} ({name}) value {axis} is out of range [{-rank}, {rank})")
    return axis % rank
