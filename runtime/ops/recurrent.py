"""Recurrent cells of feature level 1: RNN, SVDF and LSTM (one time step each, with the
state passed in and out explicitly). TENSOR_FLOAT32 only at FL1-2 (TENSOR_FLOAT16 and the
LSTM layer-normalization inputs 23-26 are FL3).

Semantics: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` of each operation, and the
AOSP reference CPU implementation (``RNN.cpp``, ``SVDF.cpp``, ``LSTM.cpp``) where the spec
leaves a detail open (noted per rule). Math runs in float64 and is stored as float32.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperandView, OperationDef, check, register, scalar, sig, tensor
from .common import apply_activation, check_fuse_code, from_float

T = OperandType
F32 = T.TENSOR_FLOAT32


def _shape(op: OperandView, name: str, *dims: int) -> None:
    """OperationError unless ``op`` has exactly shape ``dims``."""
    check(tuple(op.dims) == dims, f"{name} must have shape {list(dims)}, has {list(op.dims)}")


def _rank(op: OperandView, name: str, rank: int) -> tuple[int, ...]:
    check(op.rank == rank, f"{name} must have rank {rank}, has shape {list(op.dims)}")
    return tuple(op.dims)


def _f64(ctx: OpContext, i: int) -> np.ndarray | None:
    """Input ``i`` as float64, or None when omitted."""
    return None if ctx.inputs[i].omitted else np.asarray(ctx.value(i), np.float64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# --- RNN ---------------------------------------------------------------------------------

def _rnn_prepare(ctx: OpContext):
    """input [batch, input_size], weights [num_units, input_size], recurrent_weights
    [num_units, num_units], bias [num_units], hidden_state_in [batch, num_units],
    activation (FuseCode) -> hidden_state_out, output: both [batch, num_units].
    Errors: any shape mismatch, activation not a FuseCode (spec RNN, FL1)."""
    x, w, r, b, h = ctx.inputs[:5]
    check_fuse_code(ctx.scalar(5))
    batch, input_size = _rank(x, "input", 2)
    units = _rank(w, "weights", 2)[0]
    _shape(w, "weights", units, input_size)
    _shape(r, "recurrent_weights", units, units)
    _shape(b, "bias", units)
    _shape(h, "hidden_state_in", batch, units)
    return [(batch, units), (batch, units)]


def _rnn_execute(ctx: OpContext):
    """output = hidden_state_out = activation(input @ weights^T + hidden_state_in @
    recurrent_weights^T + bias) (RELU1 clamps to [-1, 1])."""
    x, w, r, b, h = (_f64(ctx, i) for i in range(5))
    out = apply_activation(x @ w.T + h @ r.T + b, ctx.scalar(5))
    return [from_float(ctx.outputs[0], out), from_float(ctx.outputs[1], out)]


register(OperationDef(
    OperationType.RNN,
    (sig(1, [tensor("input", F32, (2,)), tensor("weights", F32, (2,)),
             tensor("recurrent_weights", F32, (2,)), tensor("bias", F32, (1,)),
             tensor("hidden_state_in", F32, (2,)), scalar("activation", T.INT32)],
         [tensor("hidden_state_out", F32, (2,)), tensor("output", F32, (2,))]),),
    _rnn_prepare, _rnn_execute,
    summary="h = activation(x W^T + h R^T + b), one basic RNN step"))


# --- SVDF --------------------------------------------------------------------------------

def _svdf_prepare(ctx: OpContext):
    """input [batch, input_size], weights_feature [num_filters, input_size], weights_time
    [num_filters, memory_size], bias [num_units] (optional), state_in
    [batch, memory_size * num_filters], rank, activation (FuseCode) -> state_out
    [batch, memory_size * num_filters], output [batch, num_units], where num_filters =
    num_units * rank.

    The state size follows AOSP ``SVDF.cpp`` and the CTS (memory_size * num_filters); the
    spec text's ``(memory_size - 1) * num_units * rank`` does not match them.
    Errors: rank <= 0 or not dividing num_filters, memory_size < 1, any shape mismatch,
    activation not a FuseCode (spec SVDF, FL1)."""
    x, wf, wt, bias, state = ctx.inputs[:5]
    rank = ctx.scalar(5)
    check_fuse_code(ctx.scalar(6))
    batch, input_size = _rank(x, "input", 2)
    filters = _rank(wf, "weights_feature", 2)[0]
    _shape(wf, "weights_feature", filters, input_size)
    check(rank > 0 and filters % rank == 0,
          f"rank {rank} must be > 0 and divide weights_feature.dims[0] = {filters}")
    memory = _rank(wt, "weights_time", 2)[1]
    check(memory >= 1, "weights_time.dims[1] (memory_size) must be >= 1")
    _shape(wt, "weights_time", filters, memory)
    units = filters // rank
    if not bias.omitted:
        _shape(bias, "bias", units)
    _shape(state, "state_in", batch, memory * filters)
    return [(batch, memory * filters), (batch, units)]


def _svdf_execute(ctx: OpContext):
    """Per filter f: memory = state_in[f] with its newest (last) entry replaced by
    input . weights_feature[f]; output[u] = activation(bias[u] + sum over the rank filters
    f of unit u of memory . weights_time[f]); state_out[f] = memory shifted one step toward
    the oldest entry, newest entry 0 (AOSP ``SVDF::EvalFloat32``)."""
    x, wf, wt, bias, state = (_f64(ctx, i) for i in range(5))
    rank = ctx.scalar(5)
    batch, (filters, memory) = x.shape[0], wt.shape
    mem = state.reshape(batch, filters, memory).copy()
    mem[:, :, -1] = x @ wf.T
    out = (mem * wt).sum(axis=2).reshape(batch, filters // rank, rank).sum(axis=2)
    if bias is not None:
        out = out + bias
    out = apply_activation(out, ctx.scalar(6))
    new_state = np.concatenate([mem[:, :, 1:], np.zeros((batch, filters, 1))], axis=2)
    return [from_float(ctx.outputs[0], new_state.reshape(batch, memory * filters)),
            from_float(ctx.outputs[1], out)]


register(OperationDef(
    OperationType.SVDF,
    (sig(1, [tensor("input", F32, (2,)), tensor("weights_feature", F32, (2,)),
             tensor("weights_time", F32, (2,)), tensor("bias", F32, (1,), optional=True),
             tensor("state_in", F32, (2,)), scalar("rank", T.INT32),
             scalar("activation", T.INT32)],
         [tensor("state_out", F32, (2,)), tensor("output", F32, (2,))]),),
    _svdf_prepare, _svdf_execute,
    summary="singular value decomposition filter: feature filter, memory, time filter"))


# --- LSTM --------------------------------------------------------------------------------

(INPUT, W_XI, W_XF, W_XC, W_XO, W_HI, W_HF, W_HC, W_HO, W_CI, W_CF, W_CO, B_I, B_F, B_C, B_O,
 W_PROJ, B_PROJ, H_IN, C_IN, ACTIVATION, CELL_CLIP, PROJ_CLIP) = range(23)

_LSTM_NAMES = ("input", "input_to_input_weights", "input_to_forget_weights",
               "input_to_cell_weights", "input_to_output_weights", "recurrent_to_input_weights",
               "recurrent_to_forget_weights", "recurrent_to_cell_weights",
               "recurrent_to_output_weights", "cell_to_input_weights", "cell_to_forget_weights",
               "cell_to_output_weights", "input_gate_bias", "forget_gate_bias", "cell_bias",
               "output_gate_bias", "projection_weights", "projection_bias", "output_state_in",
               "cell_state_in")
_LSTM_OPTIONAL = {W_XI, W_HI, W_CI, W_CF, W_CO, B_I, W_PROJ, B_PROJ}

#: LSTM's activation g: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid (spec LSTM input 20).
_LSTM_ACTIVATIONS = {
    0: lambda v: v,
    1: lambda v: np.maximum(v, 0.0),
    3: lambda v: np.clip(v, 0.0, 6.0),
    4: np.tanh,
    6: _sigmoid,
}


def _lstm_prepare(ctx: OpContext):
    """Shapes (spec LSTM, FL1): input [batch, n_input]; input_to_* [n_cell, n_input];
    recurrent_to_* [n_cell, n_output]; cell_to_* and the gate biases [n_cell];
    projection_weights [n_output, n_cell]; projection_bias [n_output]; output_state_in
    [batch, n_output]; cell_state_in [batch, n_cell]. Outputs: scratch_buffer
    [batch, 3 * n_cell] with CIFG, else [batch, 4 * n_cell]; output_state_out and output
    [batch, n_output]; cell_state_out [batch, n_cell].

    Optional-input rules (spec): input_to_input weights, recurrent_to_input weights and
    the input gate bias all present or all omitted (omitted = CIFG); cell_to_forget and
    cell_to_output present together (peephole), with cell_to_input present exactly when
    peephole is used without CIFG; projection_bias only with projection_weights; without
    a projection n_output must equal n_cell. Errors also: activation not in {0, 1, 3, 4, 6}
    (spec), cell_clip or proj_clip < 0 (AOSP ``LSTMCell``)."""
    ins = ctx.inputs
    has = [not op.omitted for op in ins[:20]]
    for i in set(range(20)) - _LSTM_OPTIONAL:
        check(has[i], f"{_LSTM_NAMES[i]} (input {i}) is required")
    act = ctx.scalar(ACTIVATION)
    check(act in _LSTM_ACTIVATIONS, f"activation {act} is not 0, 1, 3, 4 or 6")
    cell_clip, proj_clip = ctx.scalar(CELL_CLIP), ctx.scalar(PROJ_CLIP)
    check(cell_clip >= 0 and proj_clip >= 0,
          f"cell_clip ({cell_clip}) and proj_clip ({proj_clip}) must be >= 0")
    batch, n_input = _rank(ins[INPUT], "input", 2)
    n_cell = _rank(ins[W_XO], "input_to_output_weights", 2)[0]
    n_output = _rank(ins[W_HO], "recurrent_to_output_weights", 2)[1]
    cifg = not has[W_XI]
    check(has[W_XI] == has[W_HI] == has[B_I],
          "input_to_input_weights, recurrent_to_input_weights and input_gate_bias must be "
          "all present or all omitted (CIFG)")
    check(has[W_CF] == has[W_CO], "cell_to_forget_weights and cell_to_output_weights must "
                                  "be both present or both omitted (peephole)")
    check(has[W_CI] == (has[W_CO] and not cifg),
          "cell_to_input_weights must be present exactly when peephole is used without CIFG")
    check(has[W_PROJ] or not has[B_PROJ], "projection_bias requires projection_weights")
    check(has[W_PROJ] or n_output == n_cell,
          f"without projection_weights the output size ({n_output}) must equal the number "
          f"of cells ({n_cell})")
    expected = {W_XI: (n_cell, n_input), W_XF: (n_cell, n_input), W_XC: (n_cell, n_input),
                W_XO: (n_cell, n_input), W_HI: (n_cell, n_output), W_HF: (n_cell, n_output),
                W_HC: (n_cell, n_output), W_HO: (n_cell, n_output), W_CI: (n_cell,),
                W_CF: (n_cell,), W_CO: (n_cell,), B_I: (n_cell,), B_F: (n_cell,),
                B_C: (n_cell,), B_O: (n_cell,), W_PROJ: (n_output, n_cell),
                B_PROJ: (n_output,), H_IN: (batch, n_output), C_IN: (batch, n_cell)}
    for i, dims in expected.items():
        if has[i]:
            _shape(ins[i], _LSTM_NAMES[i], *dims)
    scratch = (batch, (3 if cifg else 4) * n_cell)
    return [scratch, (batch, n_output), (batch, n_cell), (batch, n_output)]


def _lstm_execute(ctx: OpContext):
    """One LSTM step (spec equations; sigma = logistic, g = the activation):
    i = sigma(W_xi x + W_hi h + w_ci . c + b_i), or 1 - f with CIFG;
    f = sigma(W_xf x + W_hf h + w_cf . c + b_f); c' = clip(f c + i g(W_xc x + W_hc h + b_c));
    o = sigma(W_xo x + W_ho h + w_co . c' + b_o); m = o g(c');
    h' = clip(W_proj m + b_proj) with a projection, else m. Clipping is off when its
    threshold is 0. Returns scratch_buffer, output_state_out (h'), cell_state_out (c'),
    output (h'). The scratch contents are unspecified by NNAPI; this reference stores the
    gate activations [input (not with CIFG), g(c'), forget, m] gate-major (AOSP layout)."""
    v = [_f64(ctx, i) for i in range(20)]
    x, h, c = v[INPUT], v[H_IN], v[C_IN]
    g = _LSTM_ACTIVATIONS[ctx.scalar(ACTIVATION)]
    cell_clip, proj_clip = float(ctx.scalar(CELL_CLIP)), float(ctx.scalar(PROJ_CLIP))
    peephole = v[W_CO] is not None

    def gate(wx, wh, b, peep=None, cell=None):
        z = x @ v[wx].T + h @ v[wh].T + v[b]
        return z if peep is None or not peephole else z + v[peep] * cell

    f = _sigmoid(gate(W_XF, W_HF, B_F, W_CF, c))
    i = 1.0 - f if v[W_XI] is None else _sigmoid(gate(W_XI, W_HI, B_I, W_CI, c))
    c_new = f * c + i * g(gate(W_XC, W_HC, B_C))
    if cell_clip > 0:
        c_new = np.clip(c_new, -cell_clip, cell_clip)
    o = _sigmoid(gate(W_XO, W_HO, B_O, W_CO, c_new))
    g_c = g(c_new)
    m = o * g_c
    out = m
    if v[W_PROJ] is not None:
        out = m @ v[W_PROJ].T + (0.0 if v[B_PROJ] is None else v[B_PROJ])
        if proj_clip > 0:
            out = np.clip(out, -proj_clip, proj_clip)
    blocks = ([] if v[W_XI] is None else [i]) + [g_c, f, m]
    scratch = np.concatenate([b.reshape(-1) for b in blocks]).reshape(x.shape[0], -1)
    outs = ctx.outputs
    return [from_float(outs[0], scratch), from_float(outs[1], out),
            from_float(outs[2], c_new), from_float(outs[3], out)]


def _lstm_inputs():
    args = []
    for i, name in enumerate(_LSTM_NAMES):
        rank = (1,) if i in (W_CI, W_CF, W_CO, B_I, B_F, B_C, B_O, B_PROJ) else (2,)
        args.append(tensor(name, F32, rank, optional=i in _LSTM_OPTIONAL))
    return args + [scalar("activation", T.INT32), scalar("cell_clip", T.FLOAT32),
                   scalar("proj_clip", T.FLOAT32)]


register(OperationDef(
    OperationType.LSTM,
    (sig(1, _lstm_inputs(),
         [tensor(n, F32, (2,)) for n in ("scratch_buffer", "output_state_out",
                                          "cell_state_out", "output")]),),
    _lstm_prepare, _lstm_execute,
    summary="one LSTM step with optional CIFG, peephole and projection (23 inputs)"))
