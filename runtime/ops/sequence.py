"""Sequence recurrent operations of feature level 3: UNIDIRECTIONAL_SEQUENCE_RNN (NNAPI
code 93), BIDIRECTIONAL_SEQUENCE_RNN (43), UNIDIRECTIONAL_SEQUENCE_LSTM (92) and
BIDIRECTIONAL_SEQUENCE_LSTM (42). Each unrolls the cell of :mod:`.recurrent`
(:func:`.recurrent.rnn_step`, :func:`.recurrent.lstm_step`) over the time steps of a 3-D
input; the state is internal (FL3 forms have no state outputs).

Types: all tensors TENSOR_FLOAT32 or all TENSOR_FLOAT16 (FL3 both); the LSTM clips are
FLOAT32 / FLOAT16 to match; activation INT32; time_major BOOL (INT32 for
UNIDIRECTIONAL_SEQUENCE_RNN), merge_outputs BOOL. No quantized forms exist at any level.

State outputs (FL4, both float types; NNAPI "Available since NNAPI feature level 4"):
after the sequence output(s) the operation may have the final states, all or none:
UNIDIRECTIONAL_SEQUENCE_RNN hidden_state_out [batch, units] (2 outputs);
UNIDIRECTIONAL_SEQUENCE_LSTM output_state_out [batch, output_size], cell_state_out
[batch, num_units] (3 outputs); BIDIRECTIONAL_SEQUENCE_RNN fw, bw hidden state
[batch, fw/bw units] (4 outputs, 3 with merge_outputs: the state outputs move up one
index, as AOSP's kernels index them); BIDIRECTIONAL_SEQUENCE_LSTM fw output state, fw
cell state, bw output state, bw cell state (6 outputs, 5 merged). A state is the cell's
state after its last step: the forward cell's after time step max_time - 1, the backward
cell's after time step 0.

Shapes: input [max_time, batch, input_size] when time_major, else [batch, max_time,
input_size]; outputs use the same major order, last dimension the cell's output size
(num_units for RNN, output_size for LSTM), or fw + bw output sizes for a bidirectional
operation with merge_outputs (then it has one output, else two: forward, backward).

- UNIDIRECTIONAL_SEQUENCE_RNN, 7 inputs: input, weights [units, input_size],
  recurrent_weights [units, units], bias [units], hidden_state [batch, units],
  activation (FuseCode), time_major (INT32 0 or 1 here, as the spec says, not BOOL).
- BIDIRECTIONAL_SEQUENCE_RNN, 15 inputs: input, fw weights / recurrent / bias / hidden
  state (1-4), bw the same (5-8), aux_input (9, optional, 3-D like input),
  fw_aux_weights (10, optional, [fw_units, aux_size]), bw_aux_weights (11, optional),
  activation, time_major, merge_outputs.
- UNIDIRECTIONAL_SEQUENCE_LSTM, 28 inputs: LSTM's 23 (input 3-D) then time_major (23)
  and the four layer-norm weights (24-27, optional).
- BIDIRECTIONAL_SEQUENCE_LSTM, 61 inputs: input; fw cell tensors 1-17 and bw 18-34 (LSTM
  inputs 1-17 order); fw output/cell state 35, 36; bw 37, 38; aux_input 39 (optional);
  fw aux_input_to_{input,forget,cell,output} weights 40-43, bw 44-47 (optional,
  [units, aux_size]); activation 48, cell_clip 49, proj_clip 50, merge_outputs 51,
  time_major 52; fw layer-norm weights 53-56, bw 57-60 (optional).

Bidirectional linking (spec): no auxiliary input and no auxiliary weights: both cells
read input, the backward one from the last time step to the first; cross-linking (aux
input and aux weights): each cell also adds its aux weights times aux_input at the same
time step; parallel linking (aux input without aux weights; the spec says "since FL4",
AOSP's validation accepts it with the FL3 signature, and so does this table): the
backward cell reads aux_input instead of input. Auxiliary weights without an auxiliary
input, or given for one direction only, are errors. The backward output at time t is the
backward cell's output after reading step t.

Errors (OperationError naming the input and rule): input or aux_input not 3-D, aux_input's
first two dimensions differing from input's, the cell rules of
:func:`.recurrent.check_rnn_cell` / :func:`.recurrent.check_lstm_cell` /
:func:`.recurrent.check_lstm_params`, activation not a FuseCode (RNN), and an output count
not matching merge_outputs (1 when merged, else 2; plus 2 or 4 state outputs for the FL4
forms).

Sources: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` for the four operations; AOSP
``UnidirectionalSequenceRNN.cpp``, ``BidirectionalSequenceRNN.cpp``,
``UnidirectionalSequenceLSTM.cpp``, ``BidirectionalSequenceLSTM.cpp`` for shape checks and
linking. Departure: AOSP's BIDIRECTIONAL_SEQUENCE_LSTM checks the auxiliary weights
against input_size (dims[2] of input); this table follows the spec (aux_input's dims[2]),
which agrees with AOSP whenever both sizes are equal, as in every corpus model.
Computation in float64, one rounding into the output type (TENSOR_FLOAT16 policy of
:mod:`.common`).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import check_fuse_code, from_float
from .recurrent import (AUX_NAMES, FLOAT_FORMS, LN_NAMES, MAX_BATCH, MAX_STEPS, MAX_UNITS,
                        LstmSlots, cell_tensor_args, check_const_scalar, check_lstm_cell,
                        check_lstm_params, check_rank, check_rnn_cell, check_shape,
                        draft_lstm_cell, draft_lstm_params, draft_omit, draft_primary,
                        draft_rnn_cell, draft_size, draft_weights, f64, label, lstm_input_terms,
                        lstm_step, read_lstm_cell, rnn_step, validate_lstm_params)

T = OperandType

#: Work bounds of the reference sequence kernels (a Python loop over time steps): at most
#: this many time steps, and this many multiply-adds per operation. A hostile but valid
#: model (a 16-million-step sequence) fails with GENERAL_FAILURE instead of running for
#: minutes; the CTS models use a few dozen steps.
MAX_TIME_STEPS = 1 << 16
MAX_MACS = 1 << 28


def _check_work(max_time: int, batch: int, macs_per_row: int, directions: int = 1) -> None:
    """OperationError past :data:`MAX_TIME_STEPS` or :data:`MAX_MACS`."""
    check(max_time <= MAX_TIME_STEPS, f"input 0 (input) has {max_time} time steps; the reference "
                                      f"kernel runs at most {MAX_TIME_STEPS}")
    macs = directions * max_time * batch * macs_per_row
    check(macs <= MAX_MACS, f"needs {macs} multiply-adds; the reference kernel computes at most "
                            f"{MAX_MACS} per operation")


def _input_dims(ctx: OpContext, time_major_index: int) -> tuple[bool, int, int, int]:
    """(time_major, max_time, batch, input_size) of the 3-D input 0; the time_major
    scalar is a BOOL, or for UNIDIRECTIONAL_SEQUENCE_RNN an INT32 that must be 0 or 1."""
    time_major = ctx.scalar(time_major_index)
    check(time_major in (0, 1),
          f"input {time_major_index} (time_major) value {time_major} must be 0 or 1")
    time_major = bool(time_major)
    d = check_rank(ctx.inputs[0], label(0, "input"), 3)
    max_time, batch = (d[0], d[1]) if time_major else (d[1], d[0])
    return time_major, max_time, batch, d[2]


def _out_dims(time_major: bool, max_time: int, batch: int, size: int) -> tuple[int, int, int]:
    return (max_time, batch, size) if time_major else (batch, max_time, size)


def _time_major(x: np.ndarray, time_major: bool) -> np.ndarray:
    """A 3-D array in time-major order (a view when it is batch-major)."""
    return x if time_major else x.transpose(1, 0, 2)


def _aux_input(ctx: OpContext, i: int) -> int | None:
    """aux_input's size (dims[2]) when input ``i`` is given, after checking it is 3-D with
    input's first two dimensions; None when omitted."""
    aux = ctx.inputs[i]
    if aux.omitted:
        return None
    d = check_rank(aux, label(i, "aux_input"), 3)
    check(d[:2] == tuple(ctx.inputs[0].dims[:2]),
          f"{label(i, 'aux_input')} shape {list(d)} must match input's first two dimensions "
          f"{list(ctx.inputs[0].dims[:2])}")
    return d[2]


def _linking(ctx: OpContext, aux_input: int, fw_aux: int, bw_aux: int) -> str:
    """"none", "cross" or "parallel": the bidirectional linking mode from which of the aux
    input and the fw/bw aux weights (presence tested at inputs ``fw_aux``, ``bw_aux``) are
    given. Raises OperationError for aux weights without aux input or for one direction."""
    has_in = not ctx.inputs[aux_input].omitted
    has_fw, has_bw = not ctx.inputs[fw_aux].omitted, not ctx.inputs[bw_aux].omitted
    check(has_fw == has_bw, f"input {fw_aux} and input {bw_aux} (forward and backward "
                            f"auxiliary weights) must be both given or both omitted")
    check(has_in or not has_fw, f"auxiliary weights (input {fw_aux}, input {bw_aux}) are given "
                                f"but input {aux_input} (aux_input) is omitted")
    return "cross" if has_fw else "parallel" if has_in else "none"


def _check_outputs(ctx: OpContext, merge: bool, merge_index: int, n_states: int) -> bool:
    """Whether the operation has its FL4 state outputs: with ``merge`` 1 sequence output,
    else 2, then optionally ``n_states`` state outputs (2 for BIDIRECTIONAL_SEQUENCE_RNN, 4
    for BIDIRECTIONAL_SEQUENCE_LSTM). Raises OperationError for any other output count."""
    want = 1 if merge else 2
    check(len(ctx.outputs) in (want, want + n_states),
          f"input {merge_index} (merge_outputs) is {merge}, so the operation has {want} "
          f"output{'s' if want > 1 else ''} ({want + n_states} with the state outputs), "
          f"not {len(ctx.outputs)}")
    return len(ctx.outputs) == want + n_states


def _bidirectional_outputs(ctx: OpContext, fw: np.ndarray, bw: np.ndarray, merge: bool,
                           time_major: bool, states=()) -> list[np.ndarray]:
    """Time-major fw/bw outputs [max_time, batch, size] as the operation's outputs, then
    the final ``states`` (2-D, float64) when the operation has its state outputs."""
    outs = [np.concatenate([fw, bw], axis=2)] if merge else [fw, bw]
    vals = [_time_major(v, time_major) for v in outs]
    if len(ctx.outputs) > len(outs):
        vals += list(states)
    return [from_float(o, v) for o, v in zip(ctx.outputs, vals)]


# --- random-graph drafting (:mod:`.generation`) ------------------------------------------

def _draft_sequence_input(d, time_major_slot: int) -> tuple[bool, int, int, int]:
    """Input 0 [max_time, batch, input_size] or [batch, max_time, input_size] with the
    time_major parameter (slot ``time_major_slot``) drawn to match; a linked input is kept
    when small. Returns (time_major, max_time, batch, input_size)."""
    time_major = d.coin()
    p = draft_primary(d, lambda s: len(s) == 3 and s[0] <= 2 * MAX_BATCH and s[1] <= 2 * MAX_BATCH
                      and s[2] <= 2 * MAX_UNITS)
    if p:
        max_time, batch = (p[0], p[1]) if time_major else (p[1], p[0])
        size = p[2]
    else:
        max_time = d.integer(1, min(MAX_STEPS, d.max_dim))
        batch, size = d.integer(1, min(MAX_BATCH, d.max_dim)), draft_size(d)
    d.tensor(0, _out_dims(time_major, max_time, batch, size))
    d.param(time_major_slot, int(time_major))
    return time_major, max_time, batch, size


def _merged(d) -> bool:
    """merge_outputs as the signature has it: one sequence output (no bw_output)."""
    return not any(a.name == "bw_output" for a in d.sig.outputs)


def _draft_linking(d, aux_slot: int, time_major: bool, max_time: int, batch: int) -> tuple[str, int | None]:
    """The bidirectional linking mode (none, cross or parallel; spec) and the aux_input
    (slot ``aux_slot``, [max_time, batch, aux_size] in input's major order, or omitted).
    Returns (mode, aux_size or None)."""
    mode = d.choice(("none", "none", "cross", "parallel"))
    if mode == "none":
        draft_omit(d, aux_slot)
        return mode, None
    aux_size = draft_size(d)
    d.tensor(aux_slot, _out_dims(time_major, max_time, batch, aux_size))
    return mode, aux_size


# --- UNIDIRECTIONAL_SEQUENCE_RNN ---------------------------------------------------------

def _run_rnn(x_tm, h, w, r, b, activation, reverse=False, aux_tm=None, aux_w=None):
    """Outputs [max_time, batch, units] of an RNN over time-major ``x_tm``."""
    _check_work(x_tm.shape[0], h.shape[0],
                w.size + r.size + (0 if aux_w is None or aux_tm is None else aux_w.size))
    out = np.empty((x_tm.shape[0], h.shape[0], w.shape[0]))
    steps = range(x_tm.shape[0] - 1, -1, -1) if reverse else range(x_tm.shape[0])
    for t in steps:
        h = rnn_step(x_tm[t], h, w, r, b, activation,
                     None if aux_tm is None else aux_tm[t], aux_w)
        out[t] = h
    return out


def _urnn_prepare(ctx: OpContext):
    """Output [max_time, batch, units] (time-major) or [batch, max_time, units]; FL4:
    then the final hidden state [batch, units]."""
    check_fuse_code(ctx.scalar(5))
    time_major, max_time, batch, input_size = _input_dims(ctx, 6)
    units = check_rnn_cell(ctx, 1, 2, 3, 4, batch, input_size)
    check(len(ctx.outputs) in (1, 2), f"has 1 output (2 with the state output), not "
                                      f"{len(ctx.outputs)}")
    return [_out_dims(time_major, max_time, batch, units), (batch, units)][:len(ctx.outputs)]


def _urnn_execute(ctx: OpContext):
    """h_t = activation(x_t W^T + h_{t-1} R^T + b), output_t = h_t; the state output is
    the last step's h (the hidden state input when max_time is 0)."""
    _urnn_prepare(ctx)
    time_major = bool(ctx.scalar(6))
    x, w, r, b, h = (f64(ctx, i) for i in range(5))
    out = _run_rnn(_time_major(x, time_major), h, w, r, b, ctx.scalar(5))
    vals = [_time_major(out, time_major), out[-1] if len(out) else h]
    return [from_float(o, v) for o, v in zip(ctx.outputs, vals)]


def _rnn_validate(activation: int, time_major: int | None = None):
    def validate(ctx: OpContext) -> None:
        """Model-time rules: a constant activation is a FuseCode; a constant INT32
        time_major is 0 or 1."""
        check_const_scalar(ctx, activation, lambda v: 0 <= v <= 3, "is not a FuseCode (0-3)")
        if time_major is not None:
            check_const_scalar(ctx, time_major, lambda v: v in (0, 1), "(time_major) must be 0 or 1")
    return validate


def _generate_urnn(d) -> None:
    """3-D input in the drawn time_major order (INT32 0/1 here), one RNN cell's shapes
    (:func:`.recurrent.draft_rnn_cell`; spec UNIDIRECTIONAL_SEQUENCE_RNN)."""
    _, _, batch, size = _draft_sequence_input(d, 6)
    draft_rnn_cell(d, 1, 2, 3, 4, batch, size)


register(OperationDef(
    OperationType.UNIDIRECTIONAL_SEQUENCE_RNN,
    tuple(sig(level, [tensor("input", t, (3,)), tensor("weights", t, (2,)),
                  tensor("recurrent_weights", t, (2,)), tensor("bias", t, (1,)),
                  tensor("hidden_state", t, (2,)), scalar("activation", T.INT32),
                  scalar("time_major", T.INT32)],
              outs) for _, t, _ in FLOAT_FORMS
    for level, outs in ((3, [tensor("output", t, (3,))]),
                        (4, [tensor("output", t, (3,)), tensor("hidden_state_out", t, (2,))]))),
    _urnn_prepare, _urnn_execute, validate=_rnn_validate(5, 6), generate=_generate_urnn,
    error_budget=budgets.rnn(sequence=True),
    summary="basic RNN unrolled over a sequence (time- or batch-major)",
    aosp_source="UnidirectionalSequenceRNNExecution.cpp"))


# --- BIDIRECTIONAL_SEQUENCE_RNN ----------------------------------------------------------

def _brnn_check(ctx: OpContext):
    """(time_major, merge, linking, max_time, batch, fw_units, bw_units)."""
    check_fuse_code(ctx.scalar(12))
    time_major, max_time, batch, input_size = _input_dims(ctx, 13)
    merge = bool(ctx.scalar(14))
    _check_outputs(ctx, merge, 14, 2)
    aux_size = _aux_input(ctx, 9)
    linking = _linking(ctx, 9, 10, 11)
    fw_units = check_rnn_cell(ctx, 1, 2, 3, 4, batch, input_size)
    bw_units = check_rnn_cell(ctx, 5, 6, 7, 8, batch,
                              aux_size if linking == "parallel" else input_size)
    if linking == "cross":
        check_shape(ctx.inputs[10], label(10, "fw_aux_weights"), fw_units, aux_size)
        check_shape(ctx.inputs[11], label(11, "bw_aux_weights"), bw_units, aux_size)
    return time_major, merge, linking, max_time, batch, fw_units, bw_units


def _brnn_prepare(ctx: OpContext):
    """fw output [.., fw_units] (fw_units + bw_units when merged), bw output [.., bw_units]."""
    time_major, merge, _, max_time, batch, fw_units, bw_units = _brnn_check(ctx)
    if merge:
        dims = [_out_dims(time_major, max_time, batch, fw_units + bw_units)]
    else:
        dims = [_out_dims(time_major, max_time, batch, fw_units),
                _out_dims(time_major, max_time, batch, bw_units)]
    return (dims + [(batch, fw_units), (batch, bw_units)])[:len(ctx.outputs)]


def _brnn_execute(ctx: OpContext):
    """Forward RNN over input (plus aux_input with cross-linking), backward RNN from the
    last step over input (aux_input with parallel linking)."""
    time_major, merge, linking, *_ = _brnn_check(ctx)
    v = [f64(ctx, i) for i in range(12)]
    act = ctx.scalar(12)
    x = _time_major(v[0], time_major)
    aux = None if v[9] is None else _time_major(v[9], time_major)
    cross = linking == "cross"
    fw = _run_rnn(x, v[4], v[1], v[2], v[3], act, False, aux if cross else None, v[10])
    bw = _run_rnn(aux if linking == "parallel" else x, v[8], v[5], v[6], v[7], act, True,
                  aux if cross else None, v[11])
    # final states: forward after the last step, backward after the first (its last)
    states = (fw[-1], bw[0]) if len(fw) else (v[4], v[8])
    return _bidirectional_outputs(ctx, fw, bw, merge, time_major, states)


def _brnn_signatures():
    sigs = []
    for _, t, _ in FLOAT_FORMS:
        cell = lambda d: [tensor(f"{d}_weights", t, (2,)), tensor(f"{d}_recurrent_weights", t, (2,)),
                          tensor(f"{d}_bias", t, (1,)), tensor(f"{d}_hidden_state", t, (2,))]
        inputs = [tensor("input", t, (3,)), *cell("fw"), *cell("bw"),
                  tensor("aux_input", t, (3,), optional=True),
                  tensor("fw_aux_weights", t, (2,), optional=True),
                  tensor("bw_aux_weights", t, (2,), optional=True),
                  scalar("activation", T.INT32), scalar("time_major", T.BOOL),
                  scalar("merge_outputs", T.BOOL)]
        seq = [tensor("fw_output", t, (3,)), tensor("bw_output", t, (3,))]
        states = [tensor("fw_hidden_state_out", t, (2,)), tensor("bw_hidden_state_out", t, (2,))]
        sigs.append(sig(3, inputs, seq))
        sigs.append(sig(3, inputs, seq[:1]))
        sigs.append(sig(4, inputs, seq + states))
        sigs.append(sig(4, inputs, seq[:1] + states))
    return tuple(sigs)


def _generate_brnn(d) -> None:
    """Forward and backward RNN cells of independent sizes; a linking mode (spec): none,
    cross (aux_input and aux weights [fw/bw units, aux_size]) or parallel (aux_input only,
    read by the backward cell, whose weights then take aux_size columns); merge_outputs
    as the signature's output count says."""
    time_major, max_time, batch, size = _draft_sequence_input(d, 13)
    mode, aux_size = _draft_linking(d, 9, time_major, max_time, batch)
    fw_units = draft_rnn_cell(d, 1, 2, 3, 4, batch, size)
    bw_units = draft_rnn_cell(d, 5, 6, 7, 8, batch, aux_size if mode == "parallel" else size)
    if mode == "cross":
        draft_weights(d, 10, [fw_units, aux_size], size + aux_size + fw_units)
        draft_weights(d, 11, [bw_units, aux_size], size + aux_size + bw_units)
    else:
        draft_omit(d, 10)
        draft_omit(d, 11)
    d.param(14, _merged(d))


register(OperationDef(
    OperationType.BIDIRECTIONAL_SEQUENCE_RNN, _brnn_signatures(), _brnn_prepare, _brnn_execute,
    validate=_rnn_validate(12), generate=_generate_brnn, error_budget=budgets.rnn(sequence=True),
    summary="forward and backward basic RNNs over a sequence, optional aux input, merged "
            "or separate outputs",
    allows_omitted_operand=True, aosp_source="BidirectionalSequenceRNNExecution.cpp"))


# --- UNIDIRECTIONAL_SEQUENCE_LSTM --------------------------------------------------------

_ULSTM = LstmSlots(tuple(range(1, 18)), 18, 19, layer_norm=(24, 25, 26, 27))


def _run_lstm(cell, x_tm: np.ndarray, reverse: bool = False,
              aux_tm: np.ndarray | None = None):
    """Outputs [max_time, batch, n_output] of :func:`.recurrent.lstm_step` over
    time-major ``x_tm`` from the cell's input states (last step first if ``reverse``),
    and the final (output state [batch, n_output], cell state [batch, n_cell])."""
    h, c = cell.p["h_in"], cell.p["c_in"]
    _check_work(x_tm.shape[0], x_tm.shape[1],
                sum(v.size for k, v in cell.p.items() if v is not None and v.ndim == 2
                    and k not in ("h_in", "c_in")))
    max_time, batch = x_tm.shape[:2]
    out = np.empty((max_time, batch, cell.dims.n_output))
    steps = range(max_time - 1, -1, -1) if reverse else range(max_time)
    # the input terms of every step in one matrix product (they do not depend on the state)
    terms = lstm_input_terms(cell, x_tm.reshape(max_time * batch, x_tm.shape[2]),
                             None if aux_tm is None else aux_tm.reshape(max_time * batch, aux_tm.shape[2]))
    if terms is not None:
        terms = terms.reshape(max_time, batch, terms.shape[1])
    for t in steps:
        h, c, _ = lstm_step(cell, x_tm[t], h, c, None if aux_tm is None else aux_tm[t],
                            None if terms is None else terms[t])
        out[t] = h
    return out, (h, c)


def _ulstm_check(ctx: OpContext):
    check_lstm_params(ctx, 20, 21, 22)
    time_major, max_time, batch, n_input = _input_dims(ctx, 23)
    return time_major, max_time, batch, check_lstm_cell(ctx, _ULSTM, batch, n_input)


def _ulstm_prepare(ctx: OpContext):
    """Output [max_time, batch, output_size] (time-major) or [batch, max_time,
    output_size]."""
    time_major, max_time, batch, d = _ulstm_check(ctx)
    check(len(ctx.outputs) in (1, 3), f"has 1 output (3 with the state outputs), not "
                                      f"{len(ctx.outputs)}")
    return [_out_dims(time_major, max_time, batch, d.n_output), (batch, d.n_output),
            (batch, d.n_cell)][:len(ctx.outputs)]


def _ulstm_execute(ctx: OpContext):
    """LSTM steps over the sequence; output_t = the step's output state."""
    time_major, _, _, d = _ulstm_check(ctx)
    cell = read_lstm_cell(ctx, _ULSTM, d, 20, 21, 22)
    out, (h, c) = _run_lstm(cell, _time_major(f64(ctx, 0), time_major))
    vals = [_time_major(out, time_major), h, c]
    return [from_float(o, v) for o, v in zip(ctx.outputs, vals)]


def _generate_ulstm(d) -> None:
    """3-D input in the drawn time_major order and one LSTM cell of a random variant
    (:func:`.recurrent.draft_lstm_cell`, layer normalization included); activation among
    0, 1, 3, 4, 6, clips 0 or positive (spec UNIDIRECTIONAL_SEQUENCE_LSTM)."""
    _, _, batch, size = _draft_sequence_input(d, 23)
    draft_lstm_cell(d, _ULSTM, batch, size)
    draft_lstm_params(d, 20, 21, 22)


register(OperationDef(
    OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM,
    tuple(sig(level, [tensor("input", t, (3,)), *cell_tensor_args(t),
                  tensor("output_state_in", t, (2,)), tensor("cell_state_in", t, (2,)),
                  scalar("activation", T.INT32), scalar("cell_clip", st),
                  scalar("proj_clip", st), scalar("time_major", T.BOOL),
                  *[tensor(n, t, (1,), optional=True) for n in LN_NAMES]],
              outs) for _, t, st in FLOAT_FORMS
    for level, outs in ((3, [tensor("output", t, (3,))]),
                        (4, [tensor("output", t, (3,)), tensor("output_state_out", t, (2,)),
                             tensor("cell_state_out", t, (2,))]))),
    _ulstm_prepare, _ulstm_execute,
    validate=lambda ctx: validate_lstm_params(ctx, 20, 21, 22), generate=_generate_ulstm,
    error_budget=budgets.lstm(sequence=True),
    summary="LSTM unrolled over a sequence, optional CIFG, peephole, projection and layer "
            "normalization",
    allows_omitted_operand=True, aosp_source="UnidirectionalSequenceLSTMExecution.cpp"))


# --- BIDIRECTIONAL_SEQUENCE_LSTM ---------------------------------------------------------

_BLSTM_FW = LstmSlots(tuple(range(1, 18)), 35, 36, layer_norm=(53, 54, 55, 56),
                      aux=(40, 41, 42, 43), prefix="fw_")
_BLSTM_BW = LstmSlots(tuple(range(18, 35)), 37, 38, layer_norm=(57, 58, 59, 60),
                      aux=(44, 45, 46, 47), prefix="bw_")


def _blstm_check(ctx: OpContext):
    """(time_major, merge, linking, max_time, batch, fw dims, bw dims)."""
    check_lstm_params(ctx, 48, 49, 50)
    time_major, max_time, batch, n_input = _input_dims(ctx, 52)
    merge = bool(ctx.scalar(51))
    _check_outputs(ctx, merge, 51, 4)
    aux_size = _aux_input(ctx, 39)
    linking = _linking(ctx, 39, 41, 45)
    cross_size = aux_size if linking == "cross" else None
    fw = check_lstm_cell(ctx, _BLSTM_FW, batch, n_input, cross_size)
    bw = check_lstm_cell(ctx, _BLSTM_BW, batch,
                         aux_size if linking == "parallel" else n_input, cross_size)
    return time_major, merge, linking, max_time, batch, fw, bw


def _blstm_prepare(ctx: OpContext):
    """fw output [.., fw_output_size] (+ bw_output_size when merged), bw output
    [.., bw_output_size]."""
    time_major, merge, _, max_time, batch, fw, bw = _blstm_check(ctx)
    if merge:
        dims = [_out_dims(time_major, max_time, batch, fw.n_output + bw.n_output)]
    else:
        dims = [_out_dims(time_major, max_time, batch, fw.n_output),
                _out_dims(time_major, max_time, batch, bw.n_output)]
    states = [(batch, fw.n_output), (batch, fw.n_cell), (batch, bw.n_output), (batch, bw.n_cell)]
    return (dims + states)[:len(ctx.outputs)]


def _blstm_execute(ctx: OpContext):
    """Forward LSTM over input (plus aux_input with cross-linking), backward LSTM from the
    last step over input (aux_input with parallel linking)."""
    time_major, merge, linking, _, _, fw_dims, bw_dims = _blstm_check(ctx)
    x = _time_major(f64(ctx, 0), time_major)
    aux = None if ctx.inputs[39].omitted else _time_major(f64(ctx, 39), time_major)
    cross = aux if linking == "cross" else None
    fw, fw_state = _run_lstm(read_lstm_cell(ctx, _BLSTM_FW, fw_dims, 48, 49, 50), x, False,
                             cross)
    bw, bw_state = _run_lstm(read_lstm_cell(ctx, _BLSTM_BW, bw_dims, 48, 49, 50),
                             aux if linking == "parallel" else x, True, cross)
    return _bidirectional_outputs(ctx, fw, bw, merge, time_major, fw_state + bw_state)


def _blstm_signatures():
    sigs = []
    for _, t, st in FLOAT_FORMS:
        inputs = [tensor("input", t, (3,)), *cell_tensor_args(t, "fw_"),
                  *cell_tensor_args(t, "bw_"),
                  *[tensor(n, t, (2,)) for n in ("fw_output_state_in", "fw_cell_state_in",
                                                 "bw_output_state_in", "bw_cell_state_in")],
                  tensor("aux_input", t, (3,), optional=True),
                  *[tensor(d + n, t, (2,), optional=True) for d in ("fw_", "bw_")
                    for n in AUX_NAMES],
                  scalar("activation", T.INT32), scalar("cell_clip", st),
                  scalar("proj_clip", st), scalar("merge_outputs", T.BOOL),
                  scalar("time_major", T.BOOL),
                  *[tensor(d + n, t, (1,), optional=True) for d in ("fw_", "bw_")
                    for n in LN_NAMES]]
        seq = [tensor("fw_output", t, (3,)), tensor("bw_output", t, (3,))]
        states = [tensor(n, t, (2,)) for n in ("fw_output_state_out", "fw_cell_state_out",
                                               "bw_output_state_out", "bw_cell_state_out")]
        sigs.append(sig(3, inputs, seq))
        sigs.append(sig(3, inputs, seq[:1]))
        sigs.append(sig(4, inputs, seq + states))
        sigs.append(sig(4, inputs, seq[:1] + states))
    return tuple(sigs)


def _generate_blstm(d) -> None:
    """Forward and backward LSTM cells, each of its own random variant and sizes; a
    linking mode (spec): none, cross (aux_input plus both cells' aux weights
    [n_cell, aux_size], the input ones not with CIFG) or parallel (aux_input read by the
    backward cell, whose input weights take aux_size columns); merge_outputs as the
    signature's output count says; activation among 0, 1, 3, 4, 6, clips 0 or positive."""
    time_major, max_time, batch, size = _draft_sequence_input(d, 52)
    mode, aux_size = _draft_linking(d, 39, time_major, max_time, batch)
    cross = aux_size if mode == "cross" else None
    draft_lstm_cell(d, _BLSTM_FW, batch, size, cross)
    draft_lstm_cell(d, _BLSTM_BW, batch, aux_size if mode == "parallel" else size, cross)
    draft_lstm_params(d, 48, 49, 50)
    d.param(51, _merged(d))


register(OperationDef(
    OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, _blstm_signatures(), _blstm_prepare,
    _blstm_execute, validate=lambda ctx: validate_lstm_params(ctx, 48, 49, 50),
    generate=_generate_blstm, error_budget=budgets.lstm(sequence=True),
    summary="forward and backward LSTMs over a sequence, optional aux input, merged or "
            "separate outputs",
    allows_zero_sized_input=True, allows_omitted_operand=True, aosp_source="CpuExecutor.cpp"))
