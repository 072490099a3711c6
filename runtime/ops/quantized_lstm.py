"""Quantized LSTM cells: QUANTIZED_16BIT_LSTM (NNAPI code 73, FL3) and QUANTIZED_LSTM
(code 95, FL4), each one time step with explicit state in and out.

QUANTIZED_16BIT_LSTM (NNAPI code 73, feature level 3): one LSTM step with 8-bit
activations and weights and a 16-bit cell state; no CIFG, peephole or projection, so the
cell count equals the output size.

Inputs (15): 0 input [batches, input_size] TENSOR_QUANT8_ASYMM (scale 1/128, zeroPoint
128); 1-4 input_to_{input,forget,cell,output} weights [output_size, input_size] and 5-8
recurrent_to_{input,forget,cell,output} weights [output_size, output_size],
TENSOR_QUANT8_ASYMM, all with one scale and zeroPoint; 9-12 {input,forget,cell,output}
gate biases [output_size] TENSOR_INT32 (scale weights_scale / 128, zeroPoint 0); 13
previous cell state [batches, output_size] TENSOR_QUANT16_SYMM (scale 2^-11, zeroPoint 0);
14 previous output [batches, output_size] TENSOR_QUANT8_ASYMM (scale 1/128, zeroPoint
128). Outputs: 0 cell state [batches, output_size] TENSOR_QUANT16_SYMM (scale 2^-11,
zeroPoint 0), 1 output [batches, output_size] TENSOR_QUANT8_ASYMM (scale 1/128,
zeroPoint 128).

Errors (OperationError naming the input or output and the rule): any rank or shape
mismatch, and any quantization parameter differing from the fixed ones above (input,
previous output and the outputs; weights sharing one scale (non-zero) and zeroPoint;
biases of scale weights_scale / 128 and zeroPoint 0; cell state scale 2^-11, accepted as
AOSP does when |log2(scale) + 11| < 1e-3, zeroPoint 0).

Computation (NNAPI ``NeuralNetworksTypes.h`` QUANTIZED_16BIT_LSTM; AOSP
``QuantizedLSTM.cpp`` for the intermediate formats): on dequantized real values,
requantized wherever AOSP's fixed-point pipeline stores a value, so the reference stays
within one quantum of AOSP:

1. z = [input, previous output] . [W_recurrent, W_input]^T + bias (real, exact in
   float64), stored like AOSP's fully-connected output as 16-bit with 12 fractional
   bits: round(z * 4096) saturated to int16, / 4096.
2. i = sigma(z_i), g = tanh(z_g), f = sigma(z_f), o = sigma(z_o) (float64; AOSP uses
   gemmlowp's fixed-point logistic/tanh, within 2^-15 of these).
3. new cell state = i * g and f * previous state, each rounded to the state's 2^-11 grid
   (AOSP rounds the two products separately), summed and saturated to int16.
4. output = o * tanh(new state saturated to [-8, 8 - 2^-12]) (AOSP rescales the state to
   3 integer bits before its tanh), quantized at scale 1/128 around 128 (round half away
   from zero, saturate).

Spec versus AOSP: the spec implies z = input . W_input^T + previous_output .
W_recurrent^T. AOSP concatenates [input, previous output] but lays each gate's weight row
out as [recurrent weights, input weights] (``concatenateWeights``), so the two products
are crossed column by column whenever input_size != output_size (and swapped when they
are equal). The CTS expectations were produced by that kernel (checked: the spec's
formula misses the corpus values by up to ~300 quanta of the cell state, AOSP's layout
matches them exactly), so this reference follows AOSP.

QUANTIZED_LSTM (NNAPI code 95, feature level 4 only; one signature)
    Inputs (32): 0 input [batch, input_size] TENSOR_QUANT8_ASYMM_SIGNED; 1-4
    input_to_{input,forget,cell,output} weights [num_units, input_size] and 5-8
    recurrent_to_{input,forget,cell,output} weights [num_units, output_size],
    TENSOR_QUANT8_SYMM; 9-11 cell_to_{input,forget,output} (peephole) weights [num_units]
    TENSOR_QUANT16_SYMM; 12-15 {input,forget,cell,output} gate biases [num_units]
    TENSOR_INT32; 16 projection weights [output_size, num_units] TENSOR_QUANT8_SYMM; 17
    projection bias [output_size] TENSOR_INT32; 18 output_state_in [batch, output_size]
    TENSOR_QUANT8_ASYMM_SIGNED; 19 cell_state_in [batch, num_units] TENSOR_QUANT16_SYMM;
    20-23 {input,forget,cell,output} layer-norm weights [num_units] TENSOR_QUANT16_SYMM;
    24 cell_clip, 25 projection_clip (FLOAT32, optional, 0 or omitted: no clipping);
    26-29 intermediate scales of the {input,forget,cell,output} gates (FLOAT32); 30
    hidden state zeroPoint (INT32); 31 hidden state scale (FLOAT32). Optional (may be
    omitted): 1, 5, 12 (all three omitted = CIFG: input gate = 1 - forget gate), 9-11
    (peephole), 16, 17 (projection), 20-23 (layer normalization), 24, 25.
    Outputs: 0 output_state_out [batch, output_size] and 2 output (the same values)
    TENSOR_QUANT8_ASYMM_SIGNED, 1 cell_state_out [batch, num_units] TENSOR_QUANT16_SYMM;
    the kernel writes raw values in the quantization of inputs 18 / 19.
    Errors (OperationError naming the input): a required input omitted (0, 2-4, 6-8,
    13-15, 18, 19, 26-31); any shape of the list above; input/recurrent input weights
    not both given or both omitted; peephole weights not all given or all omitted (input 9
    may be omitted with CIFG); with CIFG, input 12 or input 20 given; layer-norm weights
    not all given / all omitted (21-23 with CIFG); without projection output_size !=
    num_units; the cell-state scale not a power of two in [2^-15, 2^-9] (AOSP
    ``CheckedLog2``, ``cellShift <= -9``; -15 bounds the tanh's integer bits at 0);
    hidden zeroPoint outside [-128, 127]; intermediate (of a used gate) and hidden scales
    <= 0; clips < 0; an effective scale past 2^30; more than :data:`QLSTM_MAX_MACS`
    multiply-adds.

    Arithmetic: AOSP ``common/cpu_operations/QLSTM.cpp`` with ``common/QuantUtils.{h,cpp}``
    and gemmlowp ``fixedpoint.h`` (read for facts), reproduced in integers, because the
    int16 cell state (2^-15 scale in the CTS) amplifies any float shortcut past the 1
    quantum the criteria allow. Per gate: int8 products accumulated in int32 (input minus
    its zeroPoint), scaled by the fixed-point multiplier of ``weights_scale *
    input_scale / intermediate_scale`` (binary32 product, AOSP ``QuantizeMultiplier``)
    into int16, the recurrent term likewise, the peephole term ``cell_to_gate *
    cell_state`` (multiplier ``2^cell_shift * scale / intermediate_scale``), then with
    layer normalization AOSP ``ApplyLayerNorm`` (integer mean and variance, inverse square
    root by Newton-Raphson, times the weights, plus the bias, rescaled by the layer-norm
    scale into Q3.12); then gemmlowp's int16 logistic (Q3.12 in, Q0.15 out) for the input,
    forget and output gates and tanh (Q3.12) for the cell gate. Cell: ``f * c >> 15`` plus
    ``i * g >> (30 + cell_shift)`` (rounding shifts), saturated, then clipped to
    ``trunc(cell_clip / cell_scale)``. Hidden: ``o * tanh(c)`` (tanh of the cell in
    Q(15 + cell_shift)) scaled by ``2^-30 / hidden_scale``, plus the hidden zeroPoint,
    saturated to int8; the projection (if any) multiplies it like a gate (multiplier
    ``projection_scale * hidden_scale / output_state_scale``, plus the projection bias)
    into int8 around the output state's zeroPoint. Every corpus model matches AOSP's
    expected values exactly.

    Spec versus AOSP (none of these cases is in the corpus; the reference follows the spec
    or the TFLite kernel AOSP ports): AOSP adds the gate biases only inside its layer
    normalization, so without layer-norm weights it drops them; here they are added to
    the input product (spec: "the forget gate bias", scale input * weights). AOSP's
    peephole terms of the input and forget gates read its not-yet-written cell-state
    output buffer (and only output_size entries); here they read cell_state_in, the
    output gate's reads the new cell state. AOSP subtracts the hidden zeroPoint (and adds
    it back in the projection's bias); here it is added (NNAPI's ``real = (q - zeroPoint)
    * scale``), identical for zeroPoint 0. AOSP quantizes the projection clip with the
    projection weights' scale and clips around 0; here the projected real value is
    clipped: ``trunc(projection_clip / output_scale)`` around the output zeroPoint. AOSP
    crashes on projection weights without a projection bias; here the bias is 0.
"""
from __future__ import annotations

import math

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperandView, OperationDef, check, register, scalar, sig, tensor
from .common import bias_to_float, round_half_away, to_float

T = OperandType
Q8, I32, Q16 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32, T.TENSOR_QUANT16_SYMM
_NAMES = ("input", "input_to_input_weights", "input_to_forget_weights",
          "input_to_cell_weights", "input_to_output_weights", "recurrent_to_input_weights",
          "recurrent_to_forget_weights", "recurrent_to_cell_weights",
          "recurrent_to_output_weights", "input_gate_bias", "forget_gate_bias", "cell_bias",
          "output_gate_bias", "prev_cell_state", "prev_output")
ACTIVATION_SCALE = 1.0 / 128.0
STATE_SCALE = 2.0 ** -11
GATE_FRACTION_BITS = 12


def _in(i: int) -> str:
    return f"input {i} ({_NAMES[i]})"


def _check_quant(op: OperandView, what: str, scale: float, zero_point: int) -> None:
    check(np.float32(op.scale) == np.float32(scale) and op.zero_point == zero_point,
          f"{what} must have scale {scale} and zeroPoint {zero_point}, has scale {op.scale} "
          f"and zeroPoint {op.zero_point}")


def _check_state_quant(op: OperandView, what: str) -> None:
    """Cell state quantization: zeroPoint 0 and scale 2^-11 (AOSP ``CheckedLog2``: the
    scale's log2 within 1e-3 of -11)."""
    ok = op.scale > 0 and abs(math.log2(op.scale) + 11) < 1e-3 and op.zero_point == 0
    check(ok, f"{what} must have scale 2^-11 ({STATE_SCALE}) and zeroPoint 0, has scale "
              f"{op.scale} and zeroPoint {op.zero_point}")


def _prepare(ctx: OpContext):
    """Output shapes: cell state and output, both [batches, output_size]. Checks every
    shape and quantization rule of the module docstring."""
    ins = ctx.inputs
    for i, op in enumerate(ins):
        check(op.rank == (1 if 9 <= i <= 12 else 2),
              f"{_in(i)} must have rank {1 if 9 <= i <= 12 else 2}, has shape {list(op.dims)}")
    batches, input_size = ins[0].dims
    out_size = ins[14].dims[1]
    check(ins[14].dims[0] == batches,
          f"{_in(14)} has {ins[14].dims[0]} batches, {_in(0)} has {batches}")
    _check_quant(ins[0], _in(0), ACTIVATION_SCALE, 128)
    _check_quant(ins[14], _in(14), ACTIVATION_SCALE, 128)
    w_scale, w_zp = ins[1].scale, ins[1].zero_point
    check(w_scale != 0, f"{_in(1)} scale must not be 0")
    for i in range(1, 9):
        cols = input_size if i <= 4 else out_size
        check(tuple(ins[i].dims) == (out_size, cols),
              f"{_in(i)} must have shape {[out_size, cols]}, has {list(ins[i].dims)}")
        _check_quant(ins[i], f"{_in(i)} (as {_in(1)})", w_scale, w_zp)
    bias_scale = float(np.float32(w_scale)) / 128.0
    for i in range(9, 13):
        check(tuple(ins[i].dims) == (out_size,),
              f"{_in(i)} must have shape {[out_size]}, has {list(ins[i].dims)}")
        _check_quant(ins[i], f"{_in(i)} (weights scale / 128)", bias_scale, 0)
    check(tuple(ins[13].dims) == (batches, out_size),
          f"{_in(13)} must have shape {[batches, out_size]}, has {list(ins[13].dims)}")
    _check_state_quant(ins[13], _in(13))
    _check_state_quant(ctx.outputs[0], "output 0 (cell_state_out)")
    _check_quant(ctx.outputs[1], "output 1 (output)", ACTIVATION_SCALE, 128)
    return [(batches, out_size), (batches, out_size)]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _execute(ctx: OpContext):
    """The four steps of the module docstring; returns (int16 cell state, uint8 output)."""
    _prepare(ctx)
    ins = ctx.inputs
    xh = np.concatenate([to_float(ins[0]), to_float(ins[14])], axis=1)
    gates = []
    for k in range(4):  # input, forget, cell, output
        # AOSP's layout (see the module docstring): recurrent columns first.
        w = np.concatenate([to_float(ins[5 + k]), to_float(ins[1 + k])], axis=1)
        z = xh @ w.T + bias_to_float(ins[9 + k])
        raw = np.clip(round_half_away(z * (1 << GATE_FRACTION_BITS)), -32768, 32767)
        gates.append(raw / (1 << GATE_FRACTION_BITS))
    z_i, z_f, z_c, z_o = gates
    i, f, g, o = _sigmoid(z_i), _sigmoid(z_f), np.tanh(z_c), _sigmoid(z_o)
    prev = ins[13].value.astype(np.float64) * STATE_SCALE
    state_raw = np.clip(round_half_away(i * g / STATE_SCALE) + round_half_away(f * prev / STATE_SCALE),
                        -32768, 32767)
    state = state_raw * STATE_SCALE
    out = o * np.tanh(np.clip(state, -8.0, 8.0 - 2.0 ** -GATE_FRACTION_BITS))
    out_q = np.clip(round_half_away(out / ACTIVATION_SCALE), -128, 127) + 128
    return [state_raw.astype(np.int16), out_q.astype(np.uint8)]


def _generate_q16_lstm(d) -> None:
    """Shapes [batches, input_size] / [output_size, ...] of the module docstring with the
    quantizations NNAPI fixes: input and previous output (1/128, 128), one (scale,
    zeroPoint) for the eight weights (scale ~ 1/sqrt(fan-in) / 128, so gates do not
    saturate), biases weights_scale / 128 (values +-0.5, forget gate 0..1), cell state
    2^-11 (values +-2); output 1 at (1/128, 128)."""
    p = d.primary is not None and list(d.slots[0].dims)
    batches, n_in = p if p and len(p) == 2 and p[0] <= 8 and p[1] <= 32 else \
        (d.integer(1, min(4, d.max_dim)), d.dim(1, 16))
    n_out = d.dim(1, 16)
    d.tensor(0, [batches, n_in], quant=(ACTIVATION_SCALE, 128))
    bound = 1.5 / math.sqrt(n_in + n_out)
    w_scale = float(np.float32(bound / 128 * d.uniform(0.7, 1.4)))
    w_zp = d.integer(64, 192)
    for i in range(1, 9):
        d.tensor(i, [n_out, n_in if i <= 4 else n_out], quant=(w_scale, w_zp), low=-bound, high=bound)
    bias_scale = float(np.float32(w_scale)) / 128.0
    for i in range(9, 13):
        lo, hi = (0.0, 1.0) if i == 10 else (-0.5, 0.5)
        d.tensor(i, [n_out], quant=(bias_scale, 0), low=int(lo / bias_scale), high=int(hi / bias_scale))
    d.tensor(13, [batches, n_out], quant=(STATE_SCALE, 0), low=-2.0, high=2.0)
    d.tensor(14, [batches, n_out], quant=(ACTIVATION_SCALE, 128))
    d.out_quant[1] = (ACTIVATION_SCALE, 128)


register(OperationDef(
    OperationType.QUANTIZED_16BIT_LSTM,
    (sig(3, [tensor(n, Q8, (2,)) for n in _NAMES[:9]] +
         [tensor(n, I32, (1,)) for n in _NAMES[9:13]] +
         [tensor(_NAMES[13], Q16, (2,), fixed_quant=(STATE_SCALE, 0)), tensor(_NAMES[14], Q8, (2,))],
         [tensor("cell_state_out", Q16, (2,), fixed_quant=(STATE_SCALE, 0)),
          tensor("output", Q8, (2,))]),),
    _prepare, _execute, generate=_generate_q16_lstm,
    summary="one LSTM step, 8-bit activations and weights, 16-bit cell state",
    aosp_source="CpuExecutor.cpp",
    # coupling: no TENSOR_QUANT8_ASYMM_SIGNED form (types.spec fixes its quant8 operands'
    # quantization, 1/128 and zeroPoint 128)
    coupling_excluded=True))


# === QUANTIZED_LSTM (NNAPI code 95, feature level 4) ==========================================
#
# See the module docstring's second part. The kernel reproduces the integer pipeline of
# AOSP ``QLSTM.cpp`` (fixed-point multipliers, integer layer normalization, gemmlowp's
# int16 logistic and tanh) on int64 numpy arrays holding int16/int32 values.

Q8S, Q8SYMM = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM
QLSTM_NAMES = (
    "input", "input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
    "input_to_output_weights", "recurrent_to_input_weights", "recurrent_to_forget_weights",
    "recurrent_to_cell_weights", "recurrent_to_output_weights", "cell_to_input_weights",
    "cell_to_forget_weights", "cell_to_output_weights", "input_gate_bias", "forget_gate_bias",
    "cell_gate_bias", "output_gate_bias", "projection_weights", "projection_bias",
    "output_state_in", "cell_state_in", "input_layer_norm_weights",
    "forget_layer_norm_weights", "cell_layer_norm_weights", "output_layer_norm_weights",
    "cell_clip", "projection_clip", "input_intermediate_scale", "forget_intermediate_scale",
    "cell_intermediate_scale", "output_intermediate_scale", "hidden_state_zero_point",
    "hidden_state_scale")
#: Optional inputs: CIFG (1, 5, 12), peephole (9-11), projection (16, 17), layer
#: normalization (20-23) and the two clips (24, 25; omitted means no clipping).
QLSTM_OPTIONAL = frozenset({1, 5, 9, 10, 11, 12, 16, 17, 20, 21, 22, 23, 24, 25})
#: Gates in AOSP's order of computation: (name, input-to weights, recurrent-to weights,
#: cell-to (peephole) weights, bias, layer-norm weights, intermediate scale).
QLSTM_GATES = {"forget": (2, 6, 10, 13, 21, 27), "cell": (3, 7, None, 14, 22, 28),
               "input": (1, 5, 9, 12, 20, 26), "output": (4, 8, 11, 15, 23, 29)}
#: Work bound (multiply-adds of the four gates and the projection per operation).
QLSTM_MAX_MACS = 1 << 28


def _qin(i: int) -> str:
    return f"input {i} ({QLSTM_NAMES[i]})"


def _qlstm_sigs():
    ins = []
    for i, n in enumerate(QLSTM_NAMES):
        opt = i in QLSTM_OPTIONAL
        if i in (0, 18):
            ins.append(tensor(n, Q8S, (2,)))
        elif 1 <= i <= 8 or i == 16:
            ins.append(tensor(n, Q8SYMM, (2,), optional=opt))
        elif 9 <= i <= 11 or 20 <= i <= 23:
            ins.append(tensor(n, Q16, (1,), optional=opt))
        elif 12 <= i <= 15 or i == 17:
            ins.append(tensor(n, I32, (1,), optional=opt))
        elif i == 19:
            ins.append(tensor(n, Q16, (2,)))
        elif i == 30:
            ins.append(scalar(n, T.INT32))
        else:
            ins.append(scalar(n, T.FLOAT32, optional=opt))
    outs = [tensor("output_state_out", Q8S, (2,)), tensor("cell_state_out", Q16, (2,)),
            tensor("output", Q8S, (2,))]
    return (sig(4, ins, outs),)


# --- integer primitives (gemmlowp / AOSP QuantUtils semantics) ---------------------------

def _wrap(x, bits: int):
    """Two's-complement wrap of int64 values into a ``bits``-bit signed range."""
    half = 1 << (bits - 1)
    return ((np.asarray(x, np.int64) + half) & ((1 << bits) - 1)) - half


def _tdiv(x, d: int):
    """C integer division (truncation toward zero) of int64 ``x`` by positive ``d``."""
    x = np.asarray(x, np.int64)
    return np.where(x >= 0, x // d, -((-x) // d))


def _rdbp(x, exponent):
    """gemmlowp RoundingDivideByPOT: round-to-nearest arithmetic right shift (ties away
    from zero)."""
    x = np.asarray(x, np.int64)
    e = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << e) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + ((x & mask) > threshold)


def _srdhm(a, b, bits: int):
    """gemmlowp SaturatingRoundingDoublingHighMul on ``bits``-bit (16 or 32) values."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    lo = -(1 << (bits - 1))
    ab = a * b
    nudge = np.where(ab >= 0, 1 << (bits - 2), 1 - (1 << (bits - 2)))
    r = _tdiv(ab + nudge, 1 << (bits - 1))
    return np.where((a == b) & (a == lo), (1 << (bits - 1)) - 1, r)


def _sat_pot(x, exponent: int, bits: int):
    """gemmlowp SaturatingRoundingMultiplyByPOT<exponent> on ``bits``-bit values."""
    x = np.asarray(x, np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return _rdbp(x, -exponent)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    threshold = (1 << (bits - 1 - exponent)) - 1
    r = np.clip(x << exponent, lo, hi)
    return np.where(x > threshold, hi, np.where(x < -threshold, lo, r))


def _mbqm(x, multiplier, shift):
    """AOSP MultiplyByQuantizedMultiplier: x * 2^max(shift, 0) (int32 wrap), doubling
    high multiply by ``multiplier``, rounding right shift by max(-shift, 0)."""
    shift = np.asarray(shift, np.int64)
    v = _wrap(np.asarray(x, np.int64) << np.maximum(shift, 0), 32)
    return _rdbp(_srdhm(v, multiplier, 32), np.maximum(-shift, 0))


def _c16(v32: int) -> int:
    """A gemmlowp 32-bit constant initializer as an int16 raw value (rounding shift 16)."""
    return int(_rdbp(np.int64(v32), 16))


def _exp_quarter16(a):
    """gemmlowp exp_on_interval_between_negative_one_quarter_and_0_excl, int16 Q0.15."""
    const_term, one_third = _c16(1895147668), _c16(715827883)
    x = _wrap(a + (1 << 12), 16)
    x2 = _srdhm(x, x, 16)
    x3 = _srdhm(x2, x, 16)
    x4 = _srdhm(x2, x2, 16)
    x4_4 = _sat_pot(x4, -2, 16)
    poly = _sat_pot(_wrap(_srdhm(_wrap(x4_4 + x3, 16), one_third, 16) + x2, 16), -1, 16)
    return np.clip(const_term + _srdhm(const_term, _wrap(x + poly, 16), 16), -32768, 32767)


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def _exp_neg16(a, int_bits: int):
    """gemmlowp exp_on_negative_values for int16 fixed point with ``int_bits`` integer
    bits; returns Q0.15."""
    frac = 15 - int_bits
    quarter = 1 << (frac - 2)
    amq = _wrap((a & (quarter - 1)) - quarter, 16)
    result = _exp_quarter16(_sat_pot(amq, int_bits, 16))
    remainder = _wrap(amq - a, 16)
    for exponent, mult in _EXP_BARREL:
        if int_bits > exponent:
            bit = (remainder & (1 << (frac + exponent))) != 0
            result = np.where(bit, _srdhm(result, _c16(mult), 16), result)
    if int_bits > 5:
        result = np.where(a < _c16(-(1 << (36 - int_bits))), 0, result)
    return np.where(a == 0, 32767, result)


def _newton_recip16(a):
    """The Newton-Raphson loop shared by gemmlowp's one_over_one_plus_x and
    one_minus_x_over_one_plus_x (int16): x ~ 1 / ((1 + a) / 2) in Q2.13."""
    s = a + 32767
    half_den = _wrap(_tdiv(s + np.where(s >= 0, 1, -1), 2), 16)
    x = _wrap(_c16(1515870810) + _srdhm(half_den, _c16(-1010580540), 16), 16)
    for _ in range(3):
        one_minus = _wrap((1 << 13) - _srdhm(half_den, x, 16), 16)
        x = _wrap(x + _sat_pot(_srdhm(x, one_minus, 16), 2, 16), 16)
    return x


def logistic16(raw: np.ndarray, int_bits: int = 3) -> np.ndarray:
    """gemmlowp ``logistic`` of int16 fixed-point values with ``int_bits`` integer bits
    (``raw`` int64 array of int16 values); returns Q0.15 raw values (int64).
    AOSP ``ApplySigmoid`` uses Q3.12 inputs."""
    a = np.asarray(raw, np.int64)
    pos = a > 0
    abs_in = np.where(pos, a, _wrap(-a, 16))
    r_pos = _sat_pot(_newton_recip16(_exp_neg16(_wrap(-abs_in, 16), int_bits)), 1, 16)
    r_neg = _wrap(32767 - r_pos, 16)
    return np.where(a == 0, _c16(1 << 30), np.where(pos, r_pos, r_neg))


def tanh16(raw: np.ndarray, int_bits: int) -> np.ndarray:
    """gemmlowp ``tanh`` of int16 fixed-point values with ``int_bits`` integer bits;
    returns Q0.15 raw values (int64)."""
    a = np.asarray(raw, np.int64)
    neg = a < 0
    n = np.where(neg, a, _wrap(-a, 16))
    t = _sat_pot(_wrap(_newton_recip16(_exp_neg16(n, int_bits + 1)) - (1 << 13), 16), 2, 16)
    return np.where(a == 0, 0, np.where(neg, _wrap(-t, 16), t))


def quantize_multiplier(m: float, what: str) -> tuple[int, int]:
    """AOSP ``QuantizeMultiplier``: (multiplier Q0.31, shift) with m = multiplier * 2^(shift
    - 31); m < 2^-31 flushes to (0, 0). OperationError when m is not finite or needs a
    left shift past 30 (``what`` names the scale)."""
    check(math.isfinite(m) and m >= 0, f"{what} {m} must be a finite, non-negative scale")
    if m == 0:
        return 0, 0
    q, shift = math.frexp(m)
    q_fixed = int(math.floor(q * (1 << 31) + 0.5))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    check(shift <= 30, f"{what} {m} is too large (2^{shift}) for a fixed-point multiplier")
    return q_fixed, shift


def _inv_sqrt_multiplier(value: int) -> tuple[int, int]:
    """AOSP ``GetInvSqrtQuantizedMultiplierExp(value, reverse_shift=-1)``: (multiplier,
    shift) with 1 / sqrt(value) ~ multiplier * 2^(shift - 31) (Newton-Raphson in gemmlowp
    Q3.28 fixed point, 5 iterations)."""
    if value <= 1:
        return (1 << 31) - 1, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = ((32 - value.bit_length()) - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    half_input = int(_rdbp(np.int64(value >> 1), 1))
    x = 1 << 28
    for _ in range(5):
        x3 = int(_sat_pot(_srdhm(_srdhm(x, x, 32), x, 32), 6, 32))
        diff = int(_wrap(int(_srdhm((1 << 28) + (1 << 27), x, 32)) -
                         int(_srdhm(half_input, x3, 32)), 32))
        x = int(_sat_pot(diff, 3, 32))
    x = int(_srdhm(x, 1518500250, 32))
    if shift < 0:
        x = int(_wrap(x << -shift, 32))
        shift = 0
    return x, -shift


def _layer_norm16(gate, weights, bias, scale_a: int, scale_b: int, variance_limit: int):
    """AOSP ``ApplyLayerNorm`` on int16 gate values [batch, n] (int64 arrays): integer
    mean / variance per row, 1/sqrt by :func:`_inv_sqrt_multiplier`, times the layer-norm
    weights plus the bias, rescaled by the layer-norm scale into Q3.12 (saturated)."""
    n = gate.shape[1]
    total = gate.sum(axis=1)
    sum_sq = (gate * gate).sum(axis=1)
    mean = _tdiv(total * 1024, n)
    variance = sum_sq * ((1 << 20) // n) - mean * mean
    var2 = _tdiv(variance, 1 << 20)
    var2 = np.where(var2 < 1, variance_limit, var2)
    inv = np.array([_inv_sqrt_multiplier(int(v)) for v in var2], np.int64).reshape(-1, 2)
    shifted = _wrap(1024 * gate - mean[:, None], 32)
    rescaled = _mbqm(shifted, inv[:, 0:1], inv[:, 1:2])
    val3 = _wrap(rescaled * weights[None, :] + bias[None, :], 32)
    val4 = _tdiv(np.where(val3 > 0, val3 + 512, val3 - 512), 1024)
    return np.clip(_mbqm(val4, scale_a, scale_b + 12), -32768, 32767)


def _matmul_acc(x, zp: int, w, bias, mult: int, shift: int, out_zp: int, acc, lo: int, hi: int):
    """AOSP ``MatrixBatchVectorMultiplyAccumulate`` with the effective bias of
    ``PrecomputeZeroPointTimesWeightWithBias``: acc + MBQM(sum((x - zp) * w) + bias) +
    out_zp, saturated to [lo, hi] (int32 accumulation wraps as in C)."""
    dot = x @ w.T - zp * w.sum(axis=1)[None, :]
    if bias is not None:
        dot = dot + bias[None, :]
    return np.clip(_mbqm(_wrap(dot, 32), mult, shift) + out_zp + acc, lo, hi)


def _f32(*vals) -> np.float32:
    """Product / quotient chain in binary32, as AOSP computes its effective scales:
    ``_f32(a, b, c)`` = a * b / c."""
    a, b, c = (np.float32(v) for v in vals)
    with np.errstate(all="ignore"):  # inf / nan are rejected by quantize_multiplier
        return np.float32(np.float32(a * b) / c)


def _cell_shift(scale: float, what: str) -> int:
    """log2 of a cell-state scale (AOSP ``CheckedLog2``: a power of two within 1e-3),
    which must lie in [-15, -9] (AOSP: <= -9; >= -15 so the tanh input has 0-6 integer
    bits)."""
    ok = scale > 0 and math.isfinite(scale)
    lg = math.log2(scale) if ok else 0.0
    r = int(math.floor(abs(lg) + 0.5)) * (1 if lg >= 0 else -1)
    check(ok and abs(lg - r) < 1e-3, f"{what} scale {scale} must be a power of two")
    check(-15 <= r <= -9, f"{what} scale 2^{r} must be between 2^-15 and 2^-9")
    return r


def _qlstm_check(ctx: OpContext):
    """Shapes and optional-input rules; returns (batch, input_size, num_units,
    output_size, cifg, peephole, layer_norm, projection)."""
    ins = ctx.inputs
    has = [not op.omitted for op in ins]
    for i in range(len(QLSTM_NAMES)):
        check(i in QLSTM_OPTIONAL or has[i], f"{_qin(i)} is required and must not be omitted")

    def shape(i, *dims):
        check(tuple(ins[i].dims) == dims,
              f"{_qin(i)} must have shape {list(dims)}, has {list(ins[i].dims)}")

    check(ins[0].rank == 2, f"{_qin(0)} must have rank 2, has shape {list(ins[0].dims)}")
    batch, n_input = ins[0].dims
    check(ins[4].rank == 2, f"{_qin(4)} must have rank 2, has shape {list(ins[4].dims)}")
    n_cell = ins[4].dims[0]
    check(ins[8].rank == 2, f"{_qin(8)} must have rank 2, has shape {list(ins[8].dims)}")
    n_output = ins[8].dims[1]
    cifg = not has[1]
    check(has[1] == has[5], f"{_qin(1)} and {_qin(5)} must be both given (no CIFG) or both "
                            f"omitted (CIFG)")
    for i in (1, 2, 3, 4):
        if has[i]:
            shape(i, n_cell, n_input)
    for i in (5, 6, 7, 8):
        if has[i]:
            shape(i, n_cell, n_output)
    for i in (9, 10, 11, 20, 21, 22, 23, 13, 14, 15):
        if has[i]:
            shape(i, n_cell)
    peephole = has[10] or has[11] or (has[9] and not cifg)
    check(not peephole or ((has[9] or cifg) and has[10] and has[11]),
          f"peephole weights ({_qin(9)}, {_qin(10)}, {_qin(11)}) must be all given (input 9 "
          f"may be omitted with CIFG) or all omitted")
    if cifg:
        check(not has[12], f"{_qin(12)} must be omitted with CIFG")
        check(not has[20], f"{_qin(20)} must be omitted with CIFG")
        check(has[21] == has[22] == has[23],
              "layer-norm weights (inputs 21-23) must be all given or all omitted")
    else:
        check(has[12], f"{_qin(12)} is required without CIFG")
        shape(12, n_cell)
        check(has[20] == has[21] == has[22] == has[23],
              "layer-norm weights (inputs 20-23) must be all given or all omitted")
    projection = has[16]
    if projection:
        shape(16, n_output, n_cell)
        if has[17]:
            shape(17, n_output)
    else:
        check(n_output == n_cell, f"without {_qin(16)}, output_size {n_output} must equal "
                                  f"num_units {n_cell}")
    shape(18, batch, n_output)
    shape(19, batch, n_cell)
    layer_norm = has[21]
    macs = batch * n_cell * 4 * (n_input + n_output) + batch * n_output * n_cell
    check(macs <= QLSTM_MAX_MACS, f"needs {macs} multiply-adds; the reference computes at "
                                  f"most {QLSTM_MAX_MACS}")
    return batch, n_input, n_cell, n_output, cifg, peephole, layer_norm, projection


def _qlstm_prepare(ctx: OpContext):
    """Outputs: output_state_out [batch, output_size], cell_state_out [batch, num_units],
    output [batch, output_size]; also checks the scalars (see the module docstring)."""
    batch, _, n_cell, n_output, cifg, *_ = _qlstm_check(ctx)
    _cell_shift(ctx.inputs[19].scale, _qin(19))
    zp = ctx.scalar(30)
    check(-128 <= zp <= 127, f"{_qin(30)} value {zp} is out of range [-128, 127]")
    for i in [27, 28, 29, 31] + ([] if cifg else [26]):
        v = float(ctx.scalar(i))
        check(v > 0 and math.isfinite(v), f"{_qin(i)} value {v} must be > 0")
    for i in (24, 25):
        if not ctx.inputs[i].omitted:
            v = float(ctx.scalar(i))
            check(v >= 0, f"{_qin(i)} value {v} must be >= 0")
    return [(batch, n_output), (batch, n_cell), (batch, n_output)]


def _qlstm_execute(ctx: OpContext):
    """One QUANTIZED_LSTM step in AOSP's integer arithmetic (module docstring)."""
    _qlstm_prepare(ctx)
    batch, n_input, n_cell, n_output, cifg, peephole, layer_norm, projection = _qlstm_check(ctx)
    ins = ctx.inputs

    def raw(i):
        return None if ins[i].omitted else np.asarray(ins[i].value, np.int64)

    def fscalar(i, default=0.0):
        return default if ins[i].omitted else float(np.float32(ctx.scalar(i)))

    x, h_prev, c_prev = raw(0), raw(18), raw(19)
    x_zp, h_zp = ins[0].zero_point, ins[18].zero_point
    x_scale, h_scale = np.float32(ins[0].scale), np.float32(ins[18].scale)
    cell_shift = _cell_shift(ins[19].scale, _qin(19))
    hidden_zp, hidden_scale = int(ctx.scalar(30)), np.float32(ctx.scalar(31))

    def gate(name: str, cell_state):
        xi, hi, ci, bi, lni, si = QLSTM_GATES[name]
        inter = np.float32(ctx.scalar(si))
        w_x, w_h = raw(xi), raw(hi)
        bias = raw(bi)
        # without layer normalization the bias joins the input product (spec; see docstring)
        m, s = quantize_multiplier(float(_f32(ins[xi].scale, x_scale, inter)), f"{_qin(xi)} "
                                   f"scale * input scale / {_qin(si)}")
        g = _matmul_acc(x, x_zp, w_x, None if layer_norm else bias, m, s, 0, 0, -32768, 32767)
        m, s = quantize_multiplier(float(_f32(ins[hi].scale, h_scale, inter)), f"{_qin(hi)} "
                                   f"scale * output state scale / {_qin(si)}")
        g = _matmul_acc(h_prev, h_zp, w_h, None, m, s, 0, g, -32768, 32767)
        if peephole and ci is not None and not ins[ci].omitted:
            m, s = quantize_multiplier(2.0 ** cell_shift * float(np.float32(ins[ci].scale)) /
                                       float(inter), f"{_qin(ci)} effective scale")
            g = np.clip(_mbqm(raw(ci)[None, :] * cell_state, m, s) + g, -32768, 32767)
        if layer_norm:
            ln_scale = float(np.float32(ins[lni].scale))
            m, s = quantize_multiplier(ln_scale, f"{_qin(lni)} scale")
            with np.errstate(all="ignore"):
                big = float(np.float32(10000) * np.float32(ln_scale))
            limit = 1 if big >= 1 else int(big)  # AOSP: min(1, int(10000 * scale))
            g = _layer_norm16(g, raw(lni), bias, m, s, limit)
        return g

    f = logistic16(gate("forget", c_prev))
    g = tanh16(gate("cell", None), 3)
    i = _wrap(32767 - f, 16) if cifg else logistic16(gate("input", c_prev))
    c = np.clip(_wrap(_rdbp(f * c_prev, 15), 16) + _wrap(_rdbp(i * g, 30 + cell_shift), 16),
                -32768, 32767)
    cell_clip = fscalar(24)
    if cell_clip > 0:
        with np.errstate(all="ignore"):
            q = float(np.float32(cell_clip) / np.float32(ins[19].scale))
        q = int(min(max(q, -32768.0), 32767.0))
        if q > 0:
            c = np.clip(c, -q, q)
    o = logistic16(gate("output", c))
    t = tanh16(c, cell_shift + 15)
    m, s = quantize_multiplier(2.0 ** -15 / float(hidden_scale) * 2.0 ** -15,
                               f"2^-30 / {_qin(31)}")
    hidden = np.clip(_mbqm(o * t, m, s) + hidden_zp, -128, 127)
    out_zp = ctx.outputs[2].zero_point
    if projection:
        m, s = quantize_multiplier(float(_f32(ins[16].scale, hidden_scale, h_scale)),
                                   f"{_qin(16)} scale * {_qin(31)} / {_qin(18)} scale")
        out = _matmul_acc(hidden, hidden_zp, raw(16), raw(17), m, s, h_zp, 0, -128, 127)
        proj_clip = fscalar(25)
        if proj_clip > 0:
            with np.errstate(all="ignore"):
                q = float(np.float32(proj_clip) / np.float32(ctx.outputs[2].scale))
            q = int(min(q, 255.0))
            if q > 0:
                out = np.clip(out, out_zp - q, out_zp + q)
    else:
        out = hidden
    out8 = out.astype(np.int8)
    return [out8, c.astype(np.int16), out8.copy()]


#: Whether QUANTIZED_LSTM drafts may omit quantized optional inputs (CIFG, no peephole, no
#: projection, no layer normalization); an omitted operand keeps the slot's scale.
OMIT_QUANTIZED_OPTIONAL = True


def _generate_qlstm(d) -> None:
    """A random variant (CIFG, peephole, projection, layer normalization, clips given,
    0 or omitted) with the shapes and optional-input rules of ``_qlstm_check`` and
    quantizations that keep the integer pipeline meaningful: weight scales ~ 1/sqrt(fan-in)
    of the input's range, intermediate scales 2^-12 without layer normalization (the gate
    sums enter the Q3.12 sigmoid directly), biases at input * weights scale (layer-norm
    weights scale / 1024 with layer normalization), a cell-state scale 2^-15..2^-9, the
    hidden state at the output state's quantization without projection. Outputs take the
    quantization of inputs 18 / 19 (the kernel writes raw values in it)."""
    p = d.primary is not None and list(d.slots[0].dims)
    batch, n_in = p if p and len(p) == 2 and p[0] <= 8 and p[1] <= 32 else \
        (d.integer(1, min(4, d.max_dim)), d.dim(1, 16))
    n_cell = d.dim(1, 16)
    cifg, peephole, projection, layer_norm = d.coin(0.3), d.coin(0.4), d.coin(0.4), d.coin(0.5)
    if not OMIT_QUANTIZED_OPTIONAL:  # the one variant that omits no quantized tensor
        cifg, peephole, projection, layer_norm = False, True, True, True
    n_out = d.dim(1, 16) if projection else n_cell
    if not p:
        d.tensor(0, [batch, n_in], quant=(float(np.float32(d.uniform(0.5, 2.0) / 128)), d.integer(-64, 64)))
    x_scale, x_zp = d.slots[0].scale, d.slots[0].zero_point
    h_scale = float(np.float32(d.uniform(0.6, 1.2) / 128))
    h_zp = d.integer(-32, 32)
    x_range = max(abs(-128 - x_zp), abs(127 - x_zp)) * x_scale
    h_range = max(abs(-128 - h_zp), abs(127 - h_zp)) * h_scale
    fan = n_in + n_out
    inter = [float(np.float32(2.0 ** -12 * (d.uniform(1.0, 8.0) if layer_norm else 1.0))) for _ in range(4)]
    ln_scale = [float(np.float32(d.uniform(5e-5, 2e-4))) for _ in range(4)]

    def omit(i):
        s = d.slots[i]
        s.omitted, s.value, s.linkable, s.dims = True, None, False, []
        if s.type in (Q8SYMM, Q16):  # NNAPI validates an omitted operand's scale too
            s.scale, s.zero_point = 1.0, 0

    for g, name in enumerate(("input", "forget", "cell", "output")):
        xi, hi, ci, bi, lni, si = QLSTM_GATES[name]
        if name == "input" and cifg:
            for i in (xi, hi, bi, lni):
                omit(i)
            if peephole and d.coin(0.5):  # allowed with CIFG (unused)
                d.tensor(ci, [n_cell], quant=(float(np.float32(1.0 / 32768)), 0), low=-0.5, high=0.5)
            else:
                omit(ci)
            d.param(si, inter[g])
            continue
        wx = float(np.float32(2.5 / (x_range * math.sqrt(fan)) / 127))
        wh = float(np.float32(2.5 / (h_range * math.sqrt(fan)) / 127))
        d.tensor(xi, [n_cell, n_in], quant=(wx, 0))
        d.tensor(hi, [n_cell, n_out], quant=(wh, 0))
        if ci is not None:
            if peephole:
                d.tensor(ci, [n_cell], quant=(float(np.float32(d.uniform(0.5, 1.0) / 32768)), 0),
                         low=-0.5, high=0.5)
            else:
                omit(ci)
        bias_scale = ln_scale[g] / 1024 if layer_norm else float(np.float32(wx)) * float(np.float32(x_scale))
        lo, hi_ = (0.0, 1.0) if name == "forget" else (-0.5, 0.5)
        d.tensor(bi, [n_cell], quant=(bias_scale, 0), low=int(lo / bias_scale), high=int(hi_ / bias_scale))
        if layer_norm:
            d.tensor(lni, [n_cell], quant=(ln_scale[g], 0), low=0.3, high=1.5)
        else:
            omit(lni)
        d.param(si, inter[g])
    cell_shift = d.integer(-15, -9)
    cell_range = 2.0 ** (15 + cell_shift)
    d.tensor(18, [batch, n_out], quant=(h_scale, h_zp))
    d.tensor(19, [batch, n_cell], quant=(2.0 ** cell_shift, 0), low=-min(2.0, 0.9 * cell_range),
             high=min(2.0, 0.9 * cell_range))
    if projection:
        hidden_scale = float(np.float32(d.uniform(0.7, 1.2) / 128))
        hidden_zp = 0 if d.coin(0.8) else d.integer(-16, 16)
        p_scale = float(np.float32(2.5 / math.sqrt(n_cell) / 127))
        d.tensor(16, [n_out, n_cell], quant=(p_scale, 0))
        if d.coin(0.8):
            b_scale = float(np.float32(p_scale)) * float(np.float32(hidden_scale))
            d.tensor(17, [n_out], quant=(b_scale, 0), low=int(-0.3 / b_scale), high=int(0.3 / b_scale))
        else:
            omit(17)
    else:
        hidden_scale, hidden_zp = h_scale, h_zp
        omit(16)
        omit(17)
    for i, hi_ in ((24, 0.9 * cell_range), (25, 1.0)):
        r = d.integer(0, 2)
        if r == 0:
            omit(i)
        else:
            d.param(i, 0.0 if r == 1 else d.uniform(0.3, 1.0) * hi_)
    d.param(30, hidden_zp)
    d.param(31, hidden_scale)
    d.out_quant.update({0: (h_scale, h_zp), 1: (2.0 ** cell_shift, 0), 2: (h_scale, h_zp)})


register(OperationDef(
    OperationType.QUANTIZED_LSTM, _qlstm_sigs(), _qlstm_prepare, _qlstm_execute,
    generate=_generate_qlstm,
    summary="one LSTM step in integer arithmetic: int8 activations and weights, int16 cell "
            "state, optional CIFG, peephole, projection and layer normalization",
    allows_omitted_operand=True, aosp_source="QLSTMExecution.cpp"))
