"""QUANTIZED_16BIT_LSTM (NNAPI code 73, FL3) and QUANTIZED_LSTM (95, FL4): the quantization
regimes and omitted (NO_VALUE) optional operands the AOSP corpus leaves empty
(``nncts coverage``). The CTS judges quantized outputs within one quantum, so the goldens
are the float equations on the dequantized inputs, rounded where the spec fixes a format,
on small values that keep the integer pipelines well inside that quantum.

QUANTIZED_16BIT_LSTM (``types.spec``): input and previous output TENSOR_QUANT8_ASYMM
(scale 1/128, zero point 128); the eight weights TENSOR_QUANT8_ASYMM sharing any one scale
and zero point; gate biases TENSOR_INT32 (scale weights_scale / 128); previous cell state
TENSOR_QUANT16_SYMM (scale 2^-11). z_g = x W_xg^T + h W_hg^T + b_g; i, f, o = sigma(z),
g = tanh(z_c); c' = f c + i g; output h' = o tanh(c'); outputs c' (scale 2^-11) and h'
(1/128, 128). The cells here take input_size == output_size and W_xg == W_hg for every gate,
which makes the result independent of how an implementation lays out the concatenated
[input, previous output] weights (AOSP's kernel crosses them). Only the weights may take
the zero point 0 / 255 and scale > 1 regimes (every other quantization is fixed, so
TENSOR_QUANT16_SYMM scale > 1 is impossible: the state's scale is 2^-11).

QUANTIZED_LSTM (``types.spec``): input and output state TENSOR_QUANT8_ASYMM_SIGNED, weights
TENSOR_QUANT8_SYMM, peephole weights and cell state TENSOR_QUANT16_SYMM, biases
TENSOR_INT32; optional: input_to_input, recurrent_to_input weights and input gate bias
(all omitted: CIFG, i = 1 - f), the peephole weights (cell_to_input also omitted with CIFG),
projection weights and bias, the four layer-norm weights, cell and projection clips. z_g =
x W_xg^T + h W_hg^T + p_g (.) c + b_g (output gate: p_o (.) c'), stored at the gate's
intermediate scale (2^-12 here, the Q3.12 the gate functions read); c' = f c + i tanh(z_c)
at the cell state's scale; hidden = o tanh(c') quantized at the hidden (scale, zero point)
(inputs 31, 30); output = hidden, or with projection W_proj hidden (+ bias) quantized at
the output state's (scale, zero point). Outputs output_state_out, cell_state_out, output.
The biases are 0 here (their scale differs between the spec's forms), no layer norm.

Goldens: the numpy formulas above (:func:`lstm16`, :func:`qlstm`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, omitted, one_operation
from .variations import f32, quantize

FAMILY = "quantized_lstm"
Q8, Q8S, Q8Y, Q16, I32 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                          T.TENSOR_QUANT16_SYMM, T.TENSOR_INT32)
GOLDEN16 = "numpy formula: QUANTIZED_16BIT_LSTM gate equations on dequantized inputs (cts/specs/quantized_lstm.py)"
GOLDEN = "numpy formula: QUANTIZED_LSTM gate equations on dequantized inputs (cts/specs/quantized_lstm.py)"


def quant(x, scale, zp, t):
    """round(x / scale) + zp, half away from zero, saturated to ``t``."""
    return quantize(x, f32(scale), zp, t)


def deq(q, scale, zp=0):
    return (np.asarray(q, np.float64) - zp) * f32(scale)


def sigma(z):
    return 1 / (1 + np.exp(-z))


def lstm16(x, h, c, w, b):
    """QUANTIZED_16BIT_LSTM on real values; ``w`` the weights per gate (i, f, c, o) applied to
    both x and h. Returns (c', h') real."""
    z = [x @ wg.T + h @ wg.T + bg for wg, bg in zip(w, b)]
    c2 = sigma(z[1]) * c + sigma(z[0]) * np.tanh(z[2])
    return c2, sigma(z[3]) * np.tanh(c2)


def _lstm16(name, batch, n, wq, seed):
    """``wq`` (scale, zero point) of the weights; stored weights within +-2 of the zero point."""
    rng = np.random.default_rng(seed)
    ws, wzp = wq
    qx, qh = rng.integers(64, 192, (batch, n)), rng.integers(64, 192, (batch, n))
    qc = rng.integers(-2048, 2048, (batch, n))
    qw = [np.clip(wzp + rng.integers(-2, 3, (n, n)), 0, 255) for _ in range(4)]
    qb = [rng.integers(-64, 65, n) for _ in range(4)]
    x, h, c = deq(qx, 1 / 128, 128), deq(qh, 1 / 128, 128), deq(qc, 2 ** -11)
    c2, h2 = lstm16(x, h, c, [deq(w, ws, wzp) for w in qw], [deq(b, ws / 128) for b in qb])
    ins = [inp(Q8, qx, 1 / 128, 128), *[const(Q8, w, ws, wzp) for w in qw + qw],
           *[const(I32, b, f32(ws / 128)) for b in qb], inp(Q16, qc, 2 ** -11), inp(Q8, qh, 1 / 128, 128)]
    outs = [expect(Q16, quant(c2, 2 ** -11, 0, Q16), 2 ** -11), expect(Q8, quant(h2, 1 / 128, 128, Q8), 1 / 128, 128)]
    return one_operation(name, FAMILY, Op.QUANTIZED_16BIT_LSTM, ins, outs, 3, GOLDEN16)


def qlstm(x, h, c, w, peep, proj, cell_scale, hidden_q, out_q, proj_bias=0.0, clips=(0.0, 0.0)):
    """QUANTIZED_LSTM on real values (biases 0): ``w`` weights by gate "i"/"f"/"c"/"o" as
    (W_x, W_h) (no "i": CIFG), ``peep`` by gate (or None), ``proj`` W_proj or None,
    ``proj_bias`` its bias (real), ``clips`` (cell_clip, projection_clip): c' and the
    projected output clamped to [-clip, clip] (types.spec; 0: no clipping). Returns (output
    state stored values, cell stored values)."""
    def z(g, state):
        acc = x @ w[g][0].T + h @ w[g][1].T + (peep[g] * state if peep and g in peep else 0)
        return deq(quant(acc, 2 ** -12, 0, Q16), 2 ** -12)  # the gate's int16 intermediate
    f = sigma(z("f", c))
    i = 1 - f if "i" not in w else sigma(z("i", c))
    c_new = f * c + i * np.tanh(z("c", None))
    qc2 = quant(np.clip(c_new, -clips[0], clips[0]) if clips[0] else c_new, cell_scale, 0, Q16)
    c2 = deq(qc2, cell_scale)
    qhid = quant(sigma(z("o", c2)) * np.tanh(c2), *hidden_q, Q8S)
    if proj is None:
        return qhid, qc2
    projected = deq(qhid, *hidden_q) @ proj.T + proj_bias
    return quant(np.clip(projected, -clips[1], clips[1]) if clips[1] else projected, *out_q, Q8S), qc2


def _qlstm(name, batch, n_in, n_cell, n_out, in_q, out_q, w_scale, seed, cifg=False, peephole=None,
           proj=False, proj_bias=False, clips=(0.0, 0.0)):
    """``peephole`` the TENSOR_QUANT16_SYMM scale of the peephole weights (None: omitted);
    hidden (scale, zero point) = ``out_q`` without projection, (1/128, 0) with it;
    ``proj_bias``: a projection bias (TENSOR_INT32 at projection weights scale * hidden
    scale, values in [-600, 600]); ``clips`` (cell_clip, projection_clip), multiples of the
    cell and output scales so that clamping real or stored values agrees."""
    rng = np.random.default_rng(seed)
    cell_scale, hidden_q = 2 ** -11, ((1 / 128, 0) if proj else out_q)
    qx = np.clip(in_q[1] + rng.integers(0, 5, (batch, n_in)) * (1 if in_q[1] < 0 else rng.choice([-1, 1])),
                 -128, 127)
    qh = quant(rng.uniform(-0.9, 0.9, (batch, n_out)), *out_q, Q8S)
    qc = rng.integers(-1500, 1500, (batch, n_cell))
    gates = "fco" if cifg else "ifco"
    qw = {g: (rng.integers(-2, 3, (n_cell, n_in)), rng.integers(-2, 3, (n_cell, n_out))) for g in gates}
    qp = {g: rng.integers(-1, 2, n_cell) for g in ("fo" if cifg else "ifo")} if peephole else None
    qproj = rng.integers(-40, 41, (n_out, n_cell)) if proj else None
    pb_scale = f32(1 / 64 * hidden_q[0])
    qpb = rng.integers(-600, 601, n_out) if proj_bias else None
    x, h, c = deq(qx, *in_q), deq(qh, *out_q), deq(qc, cell_scale)
    w = {g: (deq(a, w_scale), deq(b, w_scale)) for g, (a, b) in qw.items()}
    peep = {g: deq(v, peephole) for g, v in qp.items()} if peephole else None
    q_out, q_cell = qlstm(x, h, c, w, peep, None if proj is False else deq(qproj, 1 / 64), cell_scale, hidden_q,
                          out_q, 0.0 if qpb is None else deq(qpb, pb_scale), clips)
    wt = lambda g, k: const(Q8Y, qw[g][k], w_scale) if g in qw else omitted(Q8Y)  # noqa: E731
    pt = lambda g: const(Q16, qp[g], peephole) if qp and g in qp else omitted(Q16)  # noqa: E731
    bias_scale = f32(in_q[0] * w_scale)
    zeros = lambda g: const(I32, np.zeros(n_cell, np.int64), bias_scale) if g in qw else omitted(I32)  # noqa: E731
    ins = [inp(Q8S, qx, *in_q), *[wt(g, 0) for g in "ifco"], *[wt(g, 1) for g in "ifco"], *[pt(g) for g in "ifo"],
           *[zeros(g) for g in "ifco"], const(Q8Y, qproj, 1 / 64) if proj else omitted(Q8Y),
           const(I32, qpb, pb_scale) if proj_bias else omitted(I32),
           inp(Q8S, qh, *out_q), inp(Q16, qc, cell_scale), *[omitted(Q16)] * 4,
           *[const(T.FLOAT32, v) if v else omitted(T.FLOAT32) for v in clips], *[const(T.FLOAT32, 2 ** -12)] * 4, const(T.INT32, hidden_q[1]),
           const(T.FLOAT32, hidden_q[0])]
    outs = [expect(Q8S, q_out, *out_q), expect(Q16, q_cell, cell_scale), expect(Q8S, q_out, *out_q)]
    return one_operation(name, FAMILY, Op.QUANTIZED_LSTM, ins, outs, 4, GOLDEN)


def models():
    return [
        _lstm16("quantized_16bit_lstm_weights_zp0_scale_large", 2, 3, (1.25, 0), 1),
        _lstm16("quantized_16bit_lstm_weights_zp255", 2, 2, (1 / 64, 255), 2),
        # CIFG with peephole (TENSOR_QUANT16_SYMM scale 2), no projection, no layer norm, no
        # clips; input zero point mid-range; weights scale > 1
        _qlstm("quantized_lstm_cifg_peephole_zp_mid", 2, 3, 4, 4, (1 / 32, 10), (1 / 128, 0), 1.5, 3,
               cifg=True, peephole=2.0),
        # no CIFG, no peephole, projection without bias; input zero point -128, scale 2
        _qlstm("quantized_lstm_projection_zp_min_scale_large", 2, 3, 4, 2, (2.0, -128), (1 / 64, 5), 0.25, 4,
               proj=True),
        # no CIFG with all three peephole weights (scale 1/4)
        _qlstm("quantized_lstm_peephole", 2, 2, 3, 3, (1 / 32, 0), (1 / 128, 0), 0.5, 5, peephole=0.25),
        # projection with bias onto as many units as cells (leaving the projection out is a
        # valid model too, so its weights and bias decide the output), both clips active
        # (issue 24)
        _qlstm("quantized_lstm_projection_bias_clips_square", 2, 3, 4, 4, (2.0, -128), (1 / 64, 5), 0.25, 6,
               proj=True, proj_bias=True, clips=(0.25, 0.03125)),
    ]
