"""LSTM (NNAPI code 16, FL1; TENSOR_FLOAT16 and the 27-input layer-norm form FL3),
UNIDIRECTIONAL_SEQUENCE_LSTM (92, FL3; state outputs FL4) and BIDIRECTIONAL_SEQUENCE_LSTM
(42, FL3; state outputs FL4): the activations (NONE, RELU, RELU6, SIGMOID), the omitted
(NO_VALUE) CIFG, peephole, projection, layer-norm and auxiliary operands, the float16
27-input LSTM row and the FL4 bidirectional rows the AOSP corpus leaves empty
(``nncts coverage``). AOSP runs LSTM and BIDIRECTIONAL_SEQUENCE_LSTM in its legacy executor
(NO_VALUE = ``IsNullInput``) and registers UNIDIRECTIONAL_SEQUENCE_LSTM with
``allowOmittedOperand``.

Definition (NNAPI ``types.spec`` LSTM; sigma the logistic function, g the activation, (.)
element-wise): i = sigma(W_xi x + W_hi h + w_ci (.) c + b_i), or 1 - f with CIFG
(input_to_input, recurrent_to_input weights and input gate bias omitted); f = sigma(W_xf x
+ W_hf h + w_cf (.) c + b_f); c' = clip(f (.) c + i (.) g(W_xc x + W_hc h + b_c),
cell_clip); o = sigma(W_xo x + W_ho h + w_co (.) c' + b_o); m = o (.) g(c'); h' =
clip(W_proj m + b_proj, proj_clip) with projection, else m (clip 0: none). Peephole terms
only when the cell_to_* weights are given (cell_to_input unused with CIFG). Layer
normalization (FL3, weights given): each gate's sum without its bias is normalized per batch
row to zero mean and unit variance (epsilon 1e-8, AOSP), times the layer-norm weights, plus
the bias. Outputs: scratch_buffer (content unspecified: ignored), output_state_out h',
cell_state_out c', output h'. The sequence operations run the step over the time axis
(bidirectional: a backward cell reads t = T-1..0; aux_input without aux weights feeds the
backward cell, parallel linking) and output every step's h' (merge_outputs: fw and bw
concatenated on the last axis); their FL4 forms also output the final states.

Goldens: :func:`step` (numpy, float64, the equations above) on the values fed.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, inp, omitted, one_operation
from .recurrent import F16, F32, dtype, out, values

FAMILY = "lstm"
NONE, RELU, RELU6, TANH, SIGMOID = 0, 1, 3, 4, 6
G = {NONE: lambda v: v, RELU: lambda v: np.maximum(v, 0), RELU6: lambda v: np.clip(v, 0, 6), TANH: np.tanh,
     SIGMOID: lambda v: 1 / (1 + np.exp(-v))}
GOLDEN = "numpy formula: LSTM gate equations per step (cts/specs/lstm.py)"
#: LSTM inputs 1-17, in order.
KEYS = ("xi", "xf", "xc", "xo", "hi", "hf", "hc", "ho", "ci", "cf", "co", "bi", "bf", "bc", "bo", "proj", "proj_b")
LN = ("ln_i", "ln_f", "ln_c", "ln_o")
AUX = ("ai", "af", "ac", "ao")


def cell(rng, t, n_in, n_cell, n_out, cifg=False, peephole=False, proj=False, proj_bias=False, ln=False,
         n_aux=0):
    """One cell's tensors by key (None: omitted); CIFG drops cell_to_input too."""
    shapes = {k: (n_cell, n_in) for k in KEYS[:4]} | {k: (n_cell, n_out) for k in KEYS[4:8]}
    shapes |= {k: (n_cell,) for k in KEYS[8:15] + LN} | {"proj": (n_out, n_cell), "proj_b": (n_out,)}
    shapes |= {k: (n_cell, n_aux) for k in AUX}
    drop = {"xi", "hi", "bi", "ci", "ln_i"} if cifg else set()
    drop |= set() if peephole else {"ci", "cf", "co"}
    drop |= set() if proj else {"proj", "proj_b"}
    drop |= set() if proj_bias else {"proj_b"}
    drop |= set() if ln else set(LN)
    drop |= ({"ai"} if cifg else set()) if n_aux else set(AUX)

    def make(k, shape):  # layer-norm weights around 1, others in [-1, 1]
        v = values(rng, shape, t)
        return None if k in drop else 1.0 + v / 2 if k.startswith("ln") else v
    return {k: make(k, s) for k, s in shapes.items()}


def step(p, x, h, c, act, cell_clip=0.0, proj_clip=0.0, aux_x=None):
    """One LSTM step on float64 arrays: (h', c', scratch width factor 3 or 4)."""
    g, sigma = G[act], G[SIGMOID]

    def gate(k, state):
        z = x @ p["x" + k].T + h @ p["h" + k].T
        if aux_x is not None and p["a" + k] is not None:
            z = z + aux_x @ p["a" + k].T
        if state is not None and p["c" + k] is not None:
            z = z + p["c" + k] * state
        if p["ln_" + k] is not None:
            mean = z.mean(axis=1, keepdims=True)
            z = (z - mean) / np.sqrt(((z - mean) ** 2).mean(axis=1, keepdims=True) + 1e-8) * p["ln_" + k]
        return z + p["b" + k]

    f = sigma(gate("f", c))
    i = 1 - f if p["xi"] is None else sigma(gate("i", c))
    c2 = f * c + i * g(gate("c", None))
    c2 = np.clip(c2, -cell_clip, cell_clip) if cell_clip > 0 else c2
    m = sigma(gate("o", c2)) * g(c2)
    if p["proj"] is None:
        return m, c2
    h2 = m @ p["proj"].T + (0 if p["proj_b"] is None else p["proj_b"])
    return (np.clip(h2, -proj_clip, proj_clip) if proj_clip > 0 else h2), c2


def run(p, xs, h, c, act, clips, aux_xs=None):
    """The step over time-major xs [time, batch, in]: (outputs [time, batch, out], h, c)."""
    outs = []
    for t in range(xs.shape[0]):
        h, c = step(p, xs[t], h, c, act, *clips, None if aux_xs is None else aux_xs[t])
        outs.append(h)
    return np.stack(outs), h, c


def _tensors(p, t, keys):
    d = dtype(t)
    return [omitted(t) if p[k] is None else const(t, p[k].astype(d)) for k in keys]


def _scalars(t, act, clips):
    st = T.FLOAT16 if t == F16 else T.FLOAT32
    return [const(T.INT32, act), const(st, clips[0]), const(st, clips[1])]


def _state(rng, t, batch, n):
    return values(rng, (batch, n), t)


def lstm(name, t, act, batch, n_in, n_cell, n_out, clips=(0.0, 0.0), span=1.0, level=1, seed=0, **kind):
    """An LSTM model; ``kind`` as :func:`cell`; ln: the 27-input form."""
    rng = np.random.default_rng(seed)
    p, d = cell(rng, t, n_in, n_cell, n_out, **kind), dtype(t)
    x, h, c = values(rng, (batch, n_in), t, span), _state(rng, t, batch, n_out), _state(rng, t, batch, n_cell)
    h2, c2 = step(p, x, h, c, act, *clips)
    ins = [inp(t, x.astype(d)), *_tensors(p, t, KEYS), inp(t, h.astype(d)), inp(t, c.astype(d)),
           *_scalars(t, act, clips)] + (_tensors(p, t, LN) if kind.get("ln") else [])
    scratch = np.zeros((batch, (3 if kind.get("cifg") else 4) * n_cell))
    tm, golden = one_operation(name, FAMILY, Op.LSTM, ins, [out(t, scratch), out(t, h2), out(t, c2), out(t, h2)],
                               max(level, 3 if t == F16 else 1), GOLDEN)
    tm.main.operands[len(ins)].is_ignored = True  # scratch_buffer: content unspecified
    return tm, golden


def _layout(time_major):
    return (lambda a: a) if time_major else (lambda a: a.transpose(1, 0, 2))


def uni(name, t, act, batch, steps, n_in, n_cell, n_out, time_major=False, states=False, clips=(0.0, 0.0),
        span=1.0, seed=0, **kind):
    """A UNIDIRECTIONAL_SEQUENCE_LSTM model (FL4 with ``states``)."""
    rng = np.random.default_rng(seed)
    p, d, lay = cell(rng, t, n_in, n_cell, n_out, **kind), dtype(t), _layout(time_major)
    xs = values(rng, (steps, batch, n_in), t, span)
    h, c = _state(rng, t, batch, n_out), _state(rng, t, batch, n_cell)
    seq, h2, c2 = run(p, xs, h, c, act, clips)
    ins = [inp(t, lay(xs).astype(d)), *_tensors(p, t, KEYS), inp(t, h.astype(d)), inp(t, c.astype(d)),
           *_scalars(t, act, clips), const(T.BOOL, time_major), *_tensors(p, t, LN)]
    outs = [out(t, lay(seq))] + ([out(t, h2), out(t, c2)] if states else [])
    return one_operation(name, FAMILY, Op.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, outs, 4 if states else 3, GOLDEN)


def bidi(name, t, act, batch, steps, n_in, n_cell, n_out, time_major=False, merge=False, states=False,
         aux=None, clips=(0.0, 0.0), span=1.0, seed=0, **kind):
    """A BIDIRECTIONAL_SEQUENCE_LSTM model; ``aux`` None (aux_input and weights omitted) or
    "parallel" (aux_input feeds the backward cell, aux weights omitted)."""
    rng = np.random.default_rng(seed)
    d, lay = dtype(t), _layout(time_major)
    fw, bw = (cell(rng, t, n_in, n_cell, n_out, **kind) for _ in range(2))
    xs = values(rng, (steps, batch, n_in), t, span)
    aux_xs = values(rng, (steps, batch, n_in), t, span) if aux else None
    st = [_state(rng, t, batch, n) for n in (n_out, n_cell, n_out, n_cell)]
    fw_seq, fw_h, fw_c = run(fw, xs, st[0], st[1], act, clips)
    bw_seq, bw_h, bw_c = run(bw, (aux_xs if aux == "parallel" else xs)[::-1], st[2], st[3], act, clips)
    seqs = [fw_seq, bw_seq[::-1]]
    seqs = [np.concatenate(seqs, -1)] if merge else seqs
    outs = [out(t, lay(s)) for s in seqs] + ([out(t, v) for v in (fw_h, fw_c, bw_h, bw_c)] if states else [])
    ins = [inp(t, lay(xs).astype(d)), *_tensors(fw, t, KEYS), *_tensors(bw, t, KEYS),
           *[inp(t, s.astype(d)) for s in st], inp(t, lay(aux_xs).astype(d)) if aux else omitted(t),
           *_tensors(fw, t, AUX), *_tensors(bw, t, AUX), *_scalars(t, act, clips), const(T.BOOL, merge),
           const(T.BOOL, time_major), *_tensors(fw, t, LN), *_tensors(bw, t, LN)]
    return one_operation(name, FAMILY, Op.BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs, 4 if states else 3, GOLDEN)


#: Cell forms: A = CIFG with peephole (cell_to_input omitted) and projection without bias;
#: B = no CIFG, no peephole, no projection; C = everything given, with layer norm.
A = dict(cifg=True, peephole=True, proj=True)
B = dict()
C = dict(peephole=True, proj=True, proj_bias=True, ln=True)


def models():
    return [
        lstm("lstm_float32_none_cifg_peephole_projection", F32, NONE, 2, 3, 4, 2, (2.0, 0.75), seed=1, **A),
        lstm("lstm_float32_relu_batch2", F32, RELU, 2, 3, 3, 3, seed=2, **B),
        lstm("lstm_float32_relu6", F32, RELU6, 2, 3, 3, 3, span=8, seed=44, **B),
        lstm("lstm_float16_sigmoid_layer_norm", F16, SIGMOID, 2, 3, 4, 2, (3.0, 1.0), seed=4, **C),
        # projection onto as many units as cells (leaving it out is valid too, so it decides the
        # output); time_major with batch == steps (the other reading is valid too): issue 24
        lstm("lstm_float32_none_projection_square", F32, NONE, 2, 3, 3, 3, seed=45, proj=True, proj_bias=True),
        uni("unidirectional_sequence_lstm_float32_none_projection_square_time_major", F32, NONE, 2, 2, 3, 3, 3,
            True, seed=46, proj=True, proj_bias=True),
        uni("unidirectional_sequence_lstm_float32_none_cifg", F32, NONE, 2, 3, 2, 3, 2, clips=(1.5, 0.5),
            seed=5, **A),
        uni("unidirectional_sequence_lstm_float32_relu_time_major_state", F32, RELU, 2, 3, 3, 2, 2, True, True,
            seed=6, **B),
        uni("unidirectional_sequence_lstm_float16_relu6", F16, RELU6, 2, 2, 3, 3, 3, span=8, seed=7, **B),
        uni("unidirectional_sequence_lstm_float32_sigmoid_cifg_layer_norm", F32, SIGMOID, 2, 3, 2, 4, 2,
            seed=8, cifg=True, proj=True, ln=True),
        bidi("bidirectional_sequence_lstm_float32_none_cifg_merged_state", F32, NONE, 2, 3, 2, 3, 2, merge=True,
             states=True, clips=(2.0, 1.0), seed=9, **A),
        bidi("bidirectional_sequence_lstm_float16_relu_state", F16, RELU, 2, 2, 3, 2, 2, states=True, seed=10,
             **B),
        bidi("bidirectional_sequence_lstm_float16_relu6_merged_state", F16, RELU6, 1, 3, 2, 3, 3, True, True,
             True, span=8, seed=11, **B),
        bidi("bidirectional_sequence_lstm_float32_sigmoid_parallel", F32, SIGMOID, 2, 2, 3, 2, 2, True,
             aux="parallel", seed=12, **C),
    ]
