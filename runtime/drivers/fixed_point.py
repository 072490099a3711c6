"""The bundled driver ``sample-fixed-point``: the reference sample driver, except that the
8-bit asymmetric quantized (TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED) CONV_2D,
DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D and FULLY_CONNECTED are computed the
way TFLite's integer kernels (gemmlowp fixed point) compute them. It is a *correct*
implementation with a different rounding rule, used to calibrate how far a correct driver's
quantized outputs may sit from the reference (``random_graph/calibrate.py``, issue 10).

The rule (TFLite ``kernels/internal/common.h`` and ``quantization_util.cc``; gemmlowp
``fixedpoint.h``):

1. Exact int32 accumulators ``acc[o] = bias[o] + sum (x - x_zero_point) * (w - w_zero_point)``
   (per-channel filters: ``w_zero_point`` 0). They are obtained from the operation's own
   reference kernel run on views of the operands with scale 1 (so it sums the zero-point
   shifted integers), fused activation NONE and a TENSOR_INT32 output: every product is
   below 2^16 in magnitude and a kernel sums at most ``conv.MAX_MACS`` (2^28) of them, so
   every partial sum is an integer below 2^53, exact in float64 whatever the summation
   order (``tests/test_fixed_point_driver.py`` compares them with an integer numpy
   computation). An accumulator beyond int32 saturates (TFLite's would wrap).
2. Per output channel ``o``, the real multiplier ``M = s_in * s_w[o] / s_out`` (binary32
   scales, computed in double as TFLite ``PopulateConvolutionQuantizationParams``) becomes
   ``QuantizeMultiplier``: ``M = M0 * 2^(shift - 31)`` with ``M0`` an int32 in
   [2^30, 2^31) (``frexp``, ``round`` half away from zero; shift capped at 30 as TFLite).
3. ``MultiplyByQuantizedMultiplier(acc, M0, shift)``: ``acc * 2^max(shift, 0)`` (saturated
   to int32), then ``SaturatingRoundingDoublingHighMul`` with ``M0`` (the high 32 bits of
   the doubled 64-bit product, rounding to nearest with ties toward +infinity), then
   ``RoundingDivideByPOT`` by ``max(-shift, 0)`` (rounding to nearest, ties away from zero).
   This is TFLite's default double-rounding build (not ``TFLITE_SINGLE_ROUNDING``).
4. Plus the output zero point, clamped to the fused activation's quantized range
   (``CalculateActivationRangeQuantized``: ``zp + round(f / s_out)`` in binary32 for the
   bounds 0, 6, -1, 1, within the type's range).

How it differs from the reference (``runtime/ops/conv.py``, ``fully_connected.py``,
``transpose_conv.py``: real values in float64, fused activation on reals, one rounding half
away from zero): only in rounding at and near ties; the accumulators, zero points and clamps
are the same. (a) Ties: the reference rounds the float64 real value once, half away from zero
(an exact tie may fall either way after float64 round-off); here a tie rounds away from zero
when the multiplier has a right shift ``r = -shift > 0`` (``M < 0.5``) and toward +infinity
when ``0.5 <= M < 1`` (the doubling high multiply rounds last: -1.5 gives -1). (b) Double
rounding: the doubling high multiply rounds ``acc * M * 2^r`` to an integer before the
division by ``2^r``, so a value in ``[k + 1/2 - 2^-(r+1), k + 1/2)`` quanta lands on the tie
and rounds away from zero: with ``r = 1`` (``0.25 <= M < 0.5``) a quarter of all values are
one quantum further from zero than the reference's (a mean error up to 0.25 quanta on
outputs of one sign), ``r = 2`` an eighth, and so on. (c) ``M0`` keeps 31 bits (relative
error below 2^-31). Every output is within one quantum of the reference.
Float types and every other operation: the reference kernels, as the sample driver.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import ops
from ..errors import OperationError
from ..executor import execute
from ..ops.base import OpContext
from ..ops.common import QUANT_RANGES
from ..types import FuseCode, OperandType, OperationType
from .sample import SampleDevice

T = OperandType
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
#: Operations computed with integer requantization (the others run the reference kernel).
FIXED_POINT_OPERATIONS = (OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D,
                          OperationType.GROUPED_CONV_2D, OperationType.TRANSPOSE_CONV_2D,
                          OperationType.FULLY_CONNECTED)
#: Output types requantized here (8-bit asymmetric).
FIXED_POINT_TYPES = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

__all__ = ["SampleFixedPoint", "quantize_multiplier", "saturating_rounding_doubling_high_mul",
           "rounding_divide_by_pot", "multiply_by_quantized_multiplier", "activation_range_quantized",
           "accumulators", "fixed_point_table", "FIXED_POINT_OPERATIONS"]


# --- gemmlowp / TFLite fixed-point arithmetic (int32 emulated on int64 numpy arrays) -------

def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplier``: ``(M0, shift)`` with ``real_multiplier ~= M0 *
    2^(shift - 31)``, ``M0`` an int32 in [2^30, 2^31) (0 for a zero multiplier). The
    significand is rounded half away from zero (``std::round``); a shift below -31 gives
    (0, 0) and one above 30 is capped at 30 with ``M0 = 2^31 - 1``, as TFLite does."""
    if real_multiplier == 0.0:
        return 0, 0
    q, shift = math.frexp(real_multiplier)
    q_fixed = int(math.floor(abs(q) * (1 << 31) + 0.5)) * (1 if q >= 0 else -1)
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return INT32_MAX, 30
    return q_fixed, shift


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int32 values: ``(a * b + nudge) /
    2^31`` truncated toward zero, ``nudge`` 2^30 for a non-negative product and 1 - 2^30
    otherwise (so round to nearest, ties toward +infinity); INT32_MAX when both are
    INT32_MIN."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    s = ab + nudge
    high = np.where(s >= 0, s >> 31, -((-s) >> 31))
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high).astype(np.int64)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp ``RoundingDivideByPOT``: ``x / 2^exponent`` rounded to nearest, ties away
    from zero (``exponent`` in [0, 31])."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, m0, shift) -> np.ndarray:
    """TFLite ``MultiplyByQuantizedMultiplier(x, M0, shift)`` (double rounding):
    ``RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2^left, M0), right)``,
    ``left = max(shift, 0)``, ``right = max(-shift, 0)``; ``x * 2^left`` saturates to int32
    (C++ would overflow; a saturated value clamps to the output range either way).
    ``m0``/``shift`` may be arrays broadcasting against ``x`` (per channel)."""
    x = np.asarray(x, np.int64)
    shift = np.asarray(shift, np.int64)
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    shifted = np.clip(x << left, INT32_MIN, INT32_MAX)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, m0), right)


def activation_range_quantized(code: int, scale: float, zero_point: int, t: OperandType) -> tuple[int, int]:
    """TFLite ``CalculateActivationRangeQuantized``: the type's range narrowed to the fused
    activation's, each bound ``zero_point + round(f / scale)`` (binary32 division, round half
    away from zero)."""
    lo, hi = QUANT_RANGES[t]

    def quantize(f: float) -> int:
        v = float(np.float32(f) / np.float32(scale))
        return zero_point + int(math.copysign(math.floor(abs(v) + 0.5), v))
    code = FuseCode(code)
    if code == FuseCode.RELU:
        return max(lo, quantize(0.0)), hi
    if code == FuseCode.RELU6:
        return max(lo, quantize(0.0)), min(hi, quantize(6.0))
    if code == FuseCode.RELU1:
        return max(lo, quantize(-1.0)), min(hi, quantize(1.0))
    return lo, hi


# --- the kernels ---------------------------------------------------------------------------

def _slot_indexes(opdef, ctx: OpContext) -> dict[str, int]:
    sig = opdef.match(ctx.inputs, ctx.outputs)
    if sig is None:
        raise OperationError("no signature of the operation table matches these operands")
    return {a.name: j for j, a in enumerate(sig.inputs)}


def accumulators(opdef, ctx: OpContext, kernel) -> np.ndarray:
    """Exact int32 accumulators (int64 array in the output's shape and layout) of a
    quantized convolution / fully-connected use: ``kernel`` (the reference execute) run on
    copies of the inputs whose scales are 1 (data keep their zero point, so the kernel sums
    ``(x - zp_x) * (w - zp_w)``; the int32 bias is read as is), fused activation NONE and a
    TENSOR_INT32 output (exact: see the module docstring). Raises OperationError when no
    signature matches."""
    slots = _slot_indexes(opdef, ctx)
    inputs = list(ctx.inputs)
    inp, flt, bias = inputs[:3]
    inputs[0] = dataclasses.replace(inp, scale=1.0)
    if flt.channel_quant is not None:
        scales, dim = flt.channel_quant
        inputs[1] = dataclasses.replace(flt, channel_quant=(np.ones(len(scales), np.float32), dim))
    else:
        inputs[1] = dataclasses.replace(flt, scale=1.0)
    inputs[2] = dataclasses.replace(bias, scale=1.0)
    act = slots["activation"]
    inputs[act] = dataclasses.replace(inputs[act], value=np.asarray(FuseCode.NONE, np.int32))
    out = dataclasses.replace(ctx.outputs[0], type=T.TENSOR_INT32, scale=0.0, zero_point=0)
    probe = OpContext(ctx.operation, inputs, [out], ctx.relaxed)
    return np.asarray(kernel(probe)[0], np.int64)


def requantize(ctx: OpContext, acc: np.ndarray, channel_axis: int, activation: int) -> np.ndarray:
    """Accumulators ``acc`` (int64, output shape) -> output values of ``ctx.outputs[0]``'s
    type: per-channel ``MultiplyByQuantizedMultiplier`` (channel along ``channel_axis``),
    plus the zero point, clamped to the fused activation's quantized range."""
    inp, flt = ctx.inputs[:2]
    out = ctx.outputs[0]
    s_in, s_out = float(np.float32(inp.scale)), float(np.float32(out.scale))
    if flt.channel_quant is not None:
        s_w = [float(s) for s in np.asarray(flt.channel_quant[0], np.float32)]
    else:
        s_w = [float(np.float32(flt.scale))]
    pairs = [quantize_multiplier(s_in * s / s_out) for s in s_w]
    m0 = np.array([p[0] for p in pairs], np.int64)
    shift = np.array([p[1] for p in pairs], np.int64)
    if len(pairs) > 1 and acc.ndim:
        shape = [1] * acc.ndim
        shape[channel_axis] = -1
        m0, shift = m0.reshape(shape), shift.reshape(shape)
    else:
        m0, shift = m0[0], shift[0]
    q = multiply_by_quantized_multiplier(acc, m0, shift) + out.zero_point
    lo, hi = activation_range_quantized(activation, out.scale, out.zero_point, out.type)
    return np.clip(q, lo, hi).astype(QUANT_DTYPES[out.type])


QUANT_DTYPES = {T.TENSOR_QUANT8_ASYMM: np.uint8, T.TENSOR_QUANT8_ASYMM_SIGNED: np.int8}


def fixed_point_execute(opdef, kernel):
    """``execute`` of ``opdef``: integer requantization (module docstring) for an 8-bit
    asymmetric output, the reference ``kernel`` otherwise."""
    def run(ctx: OpContext):
        out = ctx.outputs[0]
        if out.type not in FIXED_POINT_TYPES:
            return kernel(ctx)
        slots = _slot_indexes(opdef, ctx)
        activation = int(ctx.scalar(slots["activation"]))
        acc = accumulators(opdef, ctx, kernel)
        if opdef.type == OperationType.FULLY_CONNECTED:
            axis = acc.ndim - 1
        else:
            j = slots.get("layout")
            nchw = j is not None and j < len(ctx.inputs) and not ctx.inputs[j].omitted \
                and ctx.inputs[j].value is not None and bool(ctx.scalar(j))
            axis = 1 if nchw else acc.ndim - 1
        return [requantize(ctx, acc, axis, activation)]
    return run


def fixed_point_table(table=None) -> dict:
    """The operation table (``table`` or :data:`runtime.ops.REGISTRY`) with the kernels of
    :data:`FIXED_POINT_OPERATIONS` replaced by :func:`fixed_point_execute`."""
    table = dict(ops.REGISTRY if table is None else table)
    for op in FIXED_POINT_OPERATIONS:
        if op in table:
            opdef = table[op]
            table[op] = dataclasses.replace(opdef, execute=fixed_point_execute(opdef, opdef.execute))
    return table


class SampleFixedPoint(SampleDevice):
    """``sample-fixed-point``: the sample driver with TFLite's integer requantization for
    quantized convolutions and FULLY_CONNECTED (module docstring): a correct driver that
    rounds differently from the reference near ties."""

    name = "nncts-sample-fixed-point"

    def run(self, model, request):
        return execute(model, request, fixed_point_table())
