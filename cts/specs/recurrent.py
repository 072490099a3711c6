"""RNN (NNAPI code 24, FL1; TENSOR_FLOAT16 FL3), UNIDIRECTIONAL_SEQUENCE_RNN (93, FL3; state
output FL4), BIDIRECTIONAL_SEQUENCE_RNN (43, FL3; state outputs FL4) and SVDF (27, FL1;
TENSOR_FLOAT16 FL3): the FuseCodes, the float16 RNN row, omitted auxiliary inputs and the
omitted SVDF bias that the AOSP corpus leaves empty (``nncts coverage``). Also the float
helpers the LSTM specs (:mod:`.lstm`) share.

Definitions (NNAPI ``types.spec``):

- RNN: ``h' = activation(x W^T + h R^T + b)``; outputs hidden_state_out and output, both h'.
- UNIDIRECTIONAL_SEQUENCE_RNN: the RNN step over the time axis (input [batch, time, in], or
  [time, batch, in] when time_major, an INT32 here); output every step's h', FL4 also the
  last h'.
- BIDIRECTIONAL_SEQUENCE_RNN: a forward cell over t = 0..T-1 and a backward cell over
  t = T-1..0 (outputs at the step they read); aux_input with aux weights adds
  ``aux_x A^T`` in each cell (cross-linking); aux_input without aux weights feeds the
  backward cell instead of input (parallel linking); merge_outputs concatenates fw and bw
  along the last axis; FL4 adds the final fw and bw states. The aux operands are optional
  (AOSP registers the operation with ``allowOmittedOperand``).
- SVDF: per filter (num_filters = num_units * rank) a FIFO of memory_size feature
  activations: the state holds the older ones, ``x . weights_feature[f]`` is pushed as the
  newest; output[u] = activation(bias[u] + sum over unit u's rank filters of
  memory . weights_time[f]); bias optional (NO_VALUE: none). State layout as in the AOSP CTS
  (the spec's size (memory_size - 1) * num_filters disagrees): memory_size slots per filter,
  oldest first; the last slot is scratch (ignored on input, 0 on output).

Goldens: the numpy formulas above (:func:`rnn`, :func:`svdf`), float64 on the values fed
(float16-rounded in float16 cases).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, omitted, one_operation

FAMILY = "recurrent"
F32, F16 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16
NONE, RELU, RELU1, RELU6 = 0, 1, 2, 3
FUSE = {NONE: lambda v: v, RELU: lambda v: np.maximum(v, 0), RELU1: lambda v: np.clip(v, -1, 1),
        RELU6: lambda v: np.clip(v, 0, 6)}
RNN_GOLDEN = "numpy formula: h' = activation(x W^T + h R^T + b) per step (cts/specs/recurrent.py)"
SVDF_GOLDEN = ("numpy formula: memory FIFO, output = activation(bias + sum of memory . weights_time "
               "over each unit's rank filters) (cts/specs/recurrent.py)")


def dtype(t: T):
    """numpy dtype of float tensor type ``t``."""
    return np.float16 if t == F16 else np.float32


def values(rng, shape, t: T, span: float = 1.0) -> np.ndarray:
    """Multiples of 1/8 in [-span, span] (exact in float16), as float64."""
    return np.round(rng.uniform(-span, span, shape) * 8) / 8


def out(t: T, value) -> tuple:
    """An expected output of float type ``t``."""
    return expect(t, np.asarray(value).astype(dtype(t)))


def rnn(x, h, w, r, b, act, aux_x=None, aux_w=None):
    """One RNN step, float64."""
    z = x @ w.T + h @ r.T + b
    if aux_w is not None:
        z = z + aux_x @ aux_w.T
    return FUSE[act](z)


def run_rnn(xs, h, w, r, b, act, aux_xs=None, aux_w=None):
    """The RNN over time-major steps xs [time, batch, in]: (outputs [time, batch, units], last h)."""
    outs = []
    for t in range(xs.shape[0]):
        h = rnn(xs[t], h, w, r, b, act, None if aux_xs is None else aux_xs[t], aux_w)
        outs.append(h)
    return np.stack(outs), h


def _rnn(name, t, batch, n_in, units, act, seed, span=1.0):
    rng = np.random.default_rng(seed)
    x, h = values(rng, (batch, n_in), t, span), values(rng, (batch, units), t)
    w, r, b = values(rng, (units, n_in), t), values(rng, (units, units), t), values(rng, units, t)
    want = rnn(x, h, w, r, b, act)
    d = dtype(t)
    return one_operation(name, FAMILY, Op.RNN, [inp(t, x.astype(d)), const(t, w.astype(d)), const(t, r.astype(d)),
                                                const(t, b.astype(d)), inp(t, h.astype(d)), const(T.INT32, act)],
                         [out(t, want), out(t, want)], 3 if t == F16 else 1, RNN_GOLDEN)


def _uni_rnn(name, t, batch, steps, n_in, units, act, time_major, level, seed, span=2.0):
    rng = np.random.default_rng(seed)
    xs = values(rng, (steps, batch, n_in), t, span)  # time-major
    h = values(rng, (batch, units), t)
    w, r, b = values(rng, (units, n_in), t), values(rng, (units, units), t), values(rng, units, t)
    seq, last = run_rnn(xs, h, w, r, b, act)
    layout = (lambda a: a) if time_major else (lambda a: a.transpose(1, 0, 2))
    d = dtype(t)
    outs = [out(t, layout(seq))] + ([out(t, last)] if level == 4 else [])
    return one_operation(name, FAMILY, Op.UNIDIRECTIONAL_SEQUENCE_RNN,
                         [inp(t, layout(xs).astype(d)), const(t, w.astype(d)), const(t, r.astype(d)),
                          const(t, b.astype(d)), inp(t, h.astype(d)), const(T.INT32, act),
                          const(T.INT32, int(time_major))], outs, level, RNN_GOLDEN)


def _bidi_rnn(name, t, batch, steps, n_in, units, act, time_major, merge, aux, level, seed, span=2.0):
    """``aux``: None (aux_input and weights omitted), "parallel" (aux_input, no weights) or
    "cross" (aux_input and both aux weights)."""
    rng = np.random.default_rng(seed)
    d = dtype(t)
    xs = values(rng, (steps, batch, n_in), t, span)
    aux_xs = values(rng, (steps, batch, n_in), t, span) if aux else None
    cells = [[values(rng, s, t) for s in ((units, n_in), (units, units), (units,), (batch, units))]
             for _ in range(2)]
    aux_ws = [values(rng, (units, n_in), t) for _ in range(2)] if aux == "cross" else [None, None]
    fw_seq, fw_h = run_rnn(xs, cells[0][3], *cells[0][:3], act, aux_xs, aux_ws[0])
    bw_in = aux_xs if aux == "parallel" else xs
    bw_aux = None if aux_xs is None else aux_xs[::-1]
    bw_seq, bw_h = run_rnn(bw_in[::-1], cells[1][3], *cells[1][:3], act, bw_aux, aux_ws[1])
    bw_seq = bw_seq[::-1]
    layout = (lambda a: a) if time_major else (lambda a: a.transpose(1, 0, 2))
    seqs = [np.concatenate([fw_seq, bw_seq], -1)] if merge else [fw_seq, bw_seq]
    outs = [out(t, layout(s)) for s in seqs] + ([out(t, fw_h), out(t, bw_h)] if level == 4 else [])
    ins = [inp(t, layout(xs).astype(d))]
    for w, r, b, h in cells:
        ins += [const(t, w.astype(d)), const(t, r.astype(d)), const(t, b.astype(d)), inp(t, h.astype(d))]
    ins.append(inp(t, layout(aux_xs).astype(d)) if aux else omitted(t))
    ins += [const(t, a.astype(d)) if a is not None else omitted(t) for a in aux_ws]
    ins += [const(T.INT32, act), const(T.BOOL, time_major), const(T.BOOL, merge)]
    return one_operation(name, FAMILY, Op.BIDIRECTIONAL_SEQUENCE_RNN, ins, outs, level, RNN_GOLDEN)


def svdf(x, wf, wt, bias, state, rank, act):
    """One SVDF step: (state_out, output), float64."""
    batch, (filters, memory) = x.shape[0], wt.shape
    mem = state.reshape(batch, filters, memory).copy()
    mem[:, :, -1] = x @ wf.T  # the newest activation takes the scratch slot
    output = (mem * wt).sum(axis=2).reshape(batch, filters // rank, rank).sum(axis=2)
    output = FUSE[act](output + (0 if bias is None else bias))
    state_out = np.concatenate([mem[:, :, 1:], np.zeros((batch, filters, 1))], axis=2)
    return state_out.reshape(batch, -1), output


def _svdf(name, t, batch, n_in, units, rank, memory, act, with_bias, seed, span=2.0):
    rng = np.random.default_rng(seed)
    d, filters = dtype(t), units * rank
    x, wf, wt = values(rng, (batch, n_in), t, span), values(rng, (filters, n_in), t), values(rng, (filters, memory), t)
    bias = values(rng, units, t) if with_bias else None
    state = values(rng, (batch, filters, memory), t)
    state[:, :, -1] = 0  # the scratch slot
    state = state.reshape(batch, -1)
    state_out, output = svdf(x, wf, wt, bias, state, rank, act)
    return one_operation(name, FAMILY, Op.SVDF,
                         [inp(t, x.astype(d)), const(t, wf.astype(d)), const(t, wt.astype(d)),
                          const(t, bias.astype(d)) if with_bias else omitted(t), inp(t, state.astype(d)),
                          const(T.INT32, rank), const(T.INT32, act)],
                         [out(t, state_out), out(t, output)], 3 if t == F16 else 1, SVDF_GOLDEN)


def models():
    return [
        _rnn("rnn_float32_none_batch2", F32, 2, 3, 4, NONE, 1),
        _rnn("rnn_float32_relu1", F32, 2, 3, 4, RELU1, 2),
        _rnn("rnn_float32_relu6", F32, 3, 2, 3, RELU6, 3, span=8),
        _rnn("rnn_float16_relu6", F16, 2, 3, 4, RELU6, 4, span=8),
        _uni_rnn("unidirectional_sequence_rnn_float32_none", F32, 2, 3, 2, 3, NONE, False, 3, 5),
        _uni_rnn("unidirectional_sequence_rnn_float32_relu1_time_major_state", F32, 2, 3, 2, 3, RELU1, True, 4, 6),
        _uni_rnn("unidirectional_sequence_rnn_float16_relu6", F16, 2, 2, 3, 2, RELU6, False, 3, 7, span=8),
        # batch == steps: the time_major flag's other reading is a valid model too (issue 24)
        _uni_rnn("unidirectional_sequence_rnn_float32_relu1_square", F32, 2, 2, 3, 2, RELU1, False, 3, 14),
        _uni_rnn("unidirectional_sequence_rnn_float32_relu1_square_time_major", F32, 2, 2, 3, 2, RELU1, True, 3, 15),
        _bidi_rnn("bidirectional_sequence_rnn_float32_relu1_square_time_major", F32, 2, 2, 3, 2, RELU1, True, False,
                  None, 3, 16),
        _bidi_rnn("bidirectional_sequence_rnn_float32_none_aux_omitted", F32, 2, 3, 2, 3, NONE, False, False,
                  None, 3, 8),
        _bidi_rnn("bidirectional_sequence_rnn_float16_relu1_parallel_merged", F16, 2, 3, 2, 2, RELU1, True, True,
                  "parallel", 3, 9),
        _bidi_rnn("bidirectional_sequence_rnn_float32_relu6_cross_state", F32, 2, 2, 3, 2, RELU6, False, False,
                  "cross", 4, 10, span=8),
        _svdf("svdf_float32_relu_rank1", F32, 2, 3, 2, 1, 3, RELU, True, 11),
        _svdf("svdf_float32_relu1_rank2_bias_omitted", F32, 2, 3, 2, 2, 3, RELU1, False, 12),
        _svdf("svdf_float16_relu6_rank2", F16, 2, 2, 3, 2, 4, RELU6, True, 13, span=8),
    ]
