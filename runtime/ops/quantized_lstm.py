"""QUANTIZED_16BIT_LSTM (NNAPI code 73, feature level 3): one LSTM step with 8-bit
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
"""
from __future__ import annotations

import math

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperandView, OperationDef, check, register, sig, tensor
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


register(OperationDef(
    OperationType.QUANTIZED_16BIT_LSTM,
    (sig(3, [tensor(n, Q8, (2,)) for n in _NAMES[:9]] +
         [tensor(n, I32, (1,)) for n in _NAMES[9:13]] +
         [tensor(_NAMES[13], Q16, (2,)), tensor(_NAMES[14], Q8, (2,))],
         [tensor("cell_state_out", Q16, (2,)), tensor("output", Q8, (2,))]),),
    _prepare, _execute,
    summary="one LSTM step, 8-bit activations and weights, 16-bit cell state"))
