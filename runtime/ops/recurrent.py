"""Recurrent cells: RNN (NNAPI code 24), SVDF (27) and LSTM (16), one time step each with
the state passed in and out explicitly, and the cell code the sequence operations of
:mod:`.sequence` (UNIDIRECTIONAL/BIDIRECTIONAL_SEQUENCE_RNN/LSTM) run once per time step.

Forms (operand types of every tensor; scalars INT32 unless said):

- RNN: FL1 TENSOR_FLOAT32, FL3 TENSOR_FLOAT16. input [batch, input_size], weights
  [num_units, input_size], recurrent_weights [num_units, num_units], bias [num_units],
  hidden_state_in [batch, num_units], activation (FuseCode) -> hidden_state_out, output:
  both [batch, num_units].
- SVDF: FL1 TENSOR_FLOAT32, FL3 TENSOR_FLOAT16. input [batch, input_size],
  weights_feature [num_filters, input_size], weights_time [num_filters, memory_size],
  bias [num_units] (optional), state_in [batch, memory_size * num_filters], rank,
  activation -> state_out, output [batch, num_units]; num_filters = num_units * rank.
- LSTM: FL1 TENSOR_FLOAT32 with 23 inputs (clips FLOAT32); FL3 TENSOR_FLOAT16 with 23
  inputs (clips FLOAT16) and the layer-normalization form of either type with 27 inputs
  (inputs 23-26: input/forget/cell/output layer-norm weights [num_units], optional).
  Shapes: see :func:`check_lstm_cell`. Outputs scratch_buffer [batch, 3 or 4 * num_units],
  output_state_out [batch, output_size], cell_state_out [batch, num_units], output
  [batch, output_size].

Errors (OperationError, each naming the input index and the rule): shape mismatches,
activation not a FuseCode (RNN, SVDF) or not one of LSTM's 0, 1, 3, 4, 6, SVDF rank <= 0
or not dividing num_filters, LSTM clips < 0, a required LSTM tensor omitted, and the LSTM
optional-input combinations (CIFG, peephole, projection, layer normalization, auxiliary
input weights) of :func:`check_lstm_cell`.

Sources: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` (RNN, SVDF, LSTM, FL1 and FL3
texts) and the AOSP CPU kernels ``RNN.cpp``, ``SVDF.cpp``, ``LSTM.cpp`` (``LSTMCell::
CheckInputTensorDimensions`` and ``LSTMStep``) for what the spec leaves open:

- SVDF's state size follows AOSP and the CTS (memory_size * num_filters); the spec text's
  ``(memory_size - 1) * num_units * rank`` matches neither.
- LSTM peephole: as in AOSP, cell_to_input_weights may be given with CIFG (then unused);
  without CIFG it is required with the other two peephole weights.
- LSTM layer normalization (AOSP ``LSTMStep``; "used" when the output layer-norm weights
  are present): each gate's pre-activation (input, recurrent, auxiliary and peephole
  terms, no bias) is normalized per batch row to zero mean and unit variance
  (``(z - mean) / sqrt(var + 1e-8)``, tflite ``MeanStddevNormalization``), multiplied by
  the gate's layer-norm weights, and then the gate bias is added. With CIFG the input
  layer-norm weights must be omitted and the other three given together; otherwise all
  four or none.
- Without projection weights output_size must equal num_units (the spec's "output_size
  corresponds to num_units or the projection's first dimension"); AOSP does not check it.

Precision: every kernel computes in float64 from the operand values and rounds once into
the output type (TENSOR_FLOAT16 policy of :mod:`.common`); the sequence operations keep
the state in float64 between time steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperandView, OperationDef, check, register, scalar, sig, tensor
from .common import apply_activation, check_fuse_code, from_float

T = OperandType
F32, F16 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16
#: (feature level, tensor type, float scalar type) of the float forms of recurrent ops.
FLOAT_FORMS = ((1, F32, T.FLOAT32), (3, F16, T.FLOAT16))


def label(i: int, name: str) -> str:
    """How error messages name operation input ``i``: ``input 3 (bias)``."""
    return f"input {i} ({name})"


def check_shape(op: OperandView, what: str, *dims: int) -> None:
    """OperationError unless ``op`` has exactly shape ``dims``; ``what`` names the input."""
    check(tuple(op.dims) == dims, f"{what} must have shape {list(dims)}, has {list(op.dims)}")


def check_rank(op: OperandView, what: str, rank: int) -> tuple[int, ...]:
    """The dims of ``op``; OperationError unless it has rank ``rank``."""
    check(op.rank == rank, f"{what} must have rank {rank}, has shape {list(op.dims)}")
    return tuple(op.dims)


def f64(ctx: OpContext, i: int) -> np.ndarray | None:
    """Input ``i`` as float64, or None when omitted."""
    return None if ctx.inputs[i].omitted else np.asarray(ctx.value(i), np.float64)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function 1 / (1 + exp(-x)), float64 (exp overflow gives 0, as it should;
    the executor runs kernels with floating-point warnings off)."""
    return 1.0 / (1.0 + np.exp(-x))


def check_const_scalar(ctx: OpContext, i: int, ok, rule: str) -> None:
    """Model-time rule on scalar input ``i`` when it is a constant: OperationError naming
    the input and ``rule`` unless ``ok(value)``."""
    if ctx.has_value(i):
        v = ctx.scalar(i)
        check(ok(v), f"input {i} value {v} {rule}")


# --- random-graph drafting helpers (:mod:`.generation`; shared with :mod:`.sequence`) ----

#: Size bounds of drafted recurrent operations (work stays small: a Python loop per step).
MAX_UNITS, MAX_BATCH, MAX_STEPS = 16, 4, 5


def draft_omit(d, k: int) -> None:
    """Pass draft slot ``k`` as NO_VALUE (an omitted optional operand)."""
    s = d.slots[k]
    s.omitted, s.value, s.linkable, s.dims = True, None, False, []


def draft_weights(d, k: int, dims, fan_in: int, gain: float = 1.5) -> None:
    """Data slot ``k`` of shape ``dims`` with values in +-gain / sqrt(fan_in), so a sum over
    fan_in inputs of magnitude ~1-2 has a standard deviation near 1 (no saturated gates)."""
    bound = gain / np.sqrt(max(int(fan_in), 1))
    d.tensor(k, dims, low=-bound, high=bound)


def draft_primary(d, ok) -> list[int] | None:
    """Input 0's dimensions when it is linked to an earlier output (``d.primary``) and
    ``ok(dims)``; else None (then the hook draws input 0 and the link is dropped)."""
    dims = list(d.slots[0].dims)
    return dims if d.primary is not None and ok(dims) else None


def draft_size(d, hi: int = MAX_UNITS) -> int:
    """A small size in [1, hi] (log-uniform, within the draft's max_dim)."""
    return d.dim(1, hi)


def draft_rnn_cell(d, w: int, r: int, b: int, h: int, batch: int, input_size: int,
                   units: int | None = None) -> int:
    """Shapes of one basic RNN cell (weights ``w`` [units, input_size], recurrent ``r``
    [units, units], bias ``b`` [units], hidden state ``h`` [batch, units]; spec RNN).
    Returns units."""
    units = units or draft_size(d)
    fan = input_size + units
    draft_weights(d, w, [units, input_size], fan)
    draft_weights(d, r, [units, units], fan)
    d.tensor(b, [units], low=-0.5, high=0.5)
    d.tensor(h, [batch, units], low=-1.0, high=1.0)
    return units


#: LSTM's activation values (spec: NONE, RELU, RELU6, TANH, SIGMOID); TANH the usual one.
LSTM_ACTIVATION_CHOICES = (0, 1, 3, 4, 4, 6)


def draft_lstm_params(d, act: int, cell_clip: int, proj_clip: int) -> None:
    """LSTM scalars: an activation among 0, 1, 3, 4, 6 and clips 0 (none) or positive."""
    d.param(act, d.choice(LSTM_ACTIVATION_CHOICES))
    d.param(cell_clip, 0.0 if d.coin(0.5) else d.uniform(0.3, 3.0))
    d.param(proj_clip, 0.0 if d.coin(0.5) else d.uniform(0.2, 2.0))


def draft_lstm_cell(d, slots: "LstmSlots", batch: int, n_input: int,
                    n_aux_input: int | None = None) -> tuple[int, int]:
    """One LSTM cell's tensors (rules of :func:`check_lstm_cell`): a random variant (CIFG,
    peephole, projection with or without bias, layer normalization where the operation has
    it, auxiliary weights exactly when ``n_aux_input`` is given, the input ones not with
    CIFG) with consistent shapes; unused optional slots omitted. Returns (n_cell, n_output)."""
    idx = {k: i for k, (i, _) in slots.indexes().items()}
    n_cell = draft_size(d)
    cifg, peephole, projection = d.coin(0.3), d.coin(0.4), d.coin(0.4)
    layer_norm = slots.layer_norm is not None and d.coin(0.4)
    n_output = draft_size(d) if projection else n_cell
    fan = n_input + n_output + (n_aux_input or 0)
    for g in "ifco":
        if g == "i" and cifg:
            for k in ("xi", "hi", "bi"):
                draft_omit(d, idx[k])
            continue
        draft_weights(d, idx["x" + g], [n_cell, n_input], fan)
        draft_weights(d, idx["h" + g], [n_cell, n_output], fan)
        # forget bias leaning positive (the usual initialization), the others around 0
        d.tensor(idx["b" + g], [n_cell], low=0.0 if g == "f" else -0.5, high=1.0 if g == "f" else 0.5)
    for k in ("ci", "cf", "co"):
        # peephole: cell_to_input with the other two unless CIFG (there optional, unused)
        if peephole and (k != "ci" or not cifg or d.coin(0.5)):
            d.tensor(idx[k], [n_cell], low=-0.5, high=0.5)
        else:
            draft_omit(d, idx[k])
    if projection:
        draft_weights(d, idx["proj"], [n_output, n_cell], n_cell)
        if d.coin(0.7):
            d.tensor(idx["proj_b"], [n_output], low=-0.3, high=0.3)
        else:
            draft_omit(d, idx["proj_b"])
    else:
        draft_omit(d, idx["proj"])
        draft_omit(d, idx["proj_b"])
    for k in LN_KEYS:
        if k not in idx:
            continue
        if layer_norm and not (k == "ln_i" and cifg):
            d.tensor(idx[k], [n_cell], low=0.3, high=1.5)
        else:
            draft_omit(d, idx[k])
    for k in AUX_KEYS:
        if k not in idx:
            continue
        if n_aux_input is not None and not (k == "ai" and cifg):
            draft_weights(d, idx[k], [n_cell, n_aux_input], fan)
        else:
            draft_omit(d, idx[k])
    d.tensor(idx["h_in"], [batch, n_output], low=-1.0, high=1.0)
    d.tensor(idx["c_in"], [batch, n_cell], low=-1.0, high=1.0)
    return n_cell, n_output


# --- RNN ---------------------------------------------------------------------------------

def rnn_step(x: np.ndarray, h: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray,
             activation: int, aux_x: np.ndarray | None = None,
             aux_w: np.ndarray | None = None) -> np.ndarray:
    """One basic RNN step on float64 arrays: ``activation(x W^T + h R^T + b [+ aux_x
    A^T])``; x [batch, input_size], h [batch, units], w [units, input_size], r [units,
    units], b [units], aux_x [batch, aux_size], aux_w [units, aux_size]. Returns the new
    hidden state [batch, units]."""
    z = x @ w.T + h @ r.T + b
    if aux_x is not None:
        z = z + aux_x @ aux_w.T
    return apply_activation(z, activation)


def check_rnn_cell(ctx: OpContext, w: int, r: int, b: int, h: int, batch: int,
                   input_size: int) -> int:
    """Shape rules of one RNN cell whose weights, recurrent weights, bias and hidden state
    are inputs ``w``, ``r``, ``b``, ``h``: weights [units, input_size], recurrent
    [units, units], bias [units], hidden state [batch, units]. Returns units."""
    ins = ctx.inputs
    units = check_rank(ins[w], label(w, "weights"), 2)[0]
    check_shape(ins[w], label(w, "weights"), units, input_size)
    check_shape(ins[r], label(r, "recurrent_weights"), units, units)
    check_shape(ins[b], label(b, "bias"), units)
    check_shape(ins[h], label(h, "hidden_state"), batch, units)
    return units


def _rnn_prepare(ctx: OpContext):
    """Output shapes [batch, units] twice. Errors: shape mismatch (spec RNN), activation
    not a FuseCode."""
    check_fuse_code(ctx.scalar(5))
    batch, input_size = check_rank(ctx.inputs[0], label(0, "input"), 2)
    units = check_rnn_cell(ctx, 1, 2, 3, 4, batch, input_size)
    return [(batch, units), (batch, units)]


def _rnn_execute(ctx: OpContext):
    """output = hidden_state_out = activation(input W^T + hidden_state_in R^T + bias)."""
    x, w, r, b, h = (f64(ctx, i) for i in range(5))
    out = rnn_step(x, h, w, r, b, ctx.scalar(5))
    return [from_float(ctx.outputs[0], out), from_float(ctx.outputs[1], out)]


def _rnn_validate(ctx: OpContext) -> None:
    """Model-time rule: a constant activation is a FuseCode."""
    check_const_scalar(ctx, 5, lambda v: 0 <= v <= 3, "is not a FuseCode (0-3)")


def _generate_rnn(d) -> None:
    """input [batch, input_size] (a linked input kept when small), weights [units,
    input_size], recurrent_weights [units, units], bias [units], hidden_state_in [batch,
    units] (spec RNN); activation from the FuseCode domain."""
    p = draft_primary(d, lambda s: len(s) == 2 and s[0] <= 2 * MAX_BATCH and s[1] <= 2 * MAX_UNITS)
    batch, input_size = p or (d.integer(1, min(MAX_BATCH, d.max_dim)), draft_size(d))
    d.tensor(0, [batch, input_size])
    draft_rnn_cell(d, 1, 2, 3, 4, batch, input_size)


register(OperationDef(
    OperationType.RNN,
    tuple(sig(level, [tensor("input", t, (2,)), tensor("weights", t, (2,)),
                      tensor("recurrent_weights", t, (2,)), tensor("bias", t, (1,)),
                      tensor("hidden_state_in", t, (2,)), scalar("activation", T.INT32)],
              [tensor("hidden_state_out", t, (2,)), tensor("output", t, (2,))])
          for level, t, _ in FLOAT_FORMS),
    _rnn_prepare, _rnn_execute, validate=_rnn_validate, generate=_generate_rnn, error_budget=budgets.rnn(),
    summary="h = activation(x W^T + h R^T + b), one basic RNN step", aosp_source="CpuExecutor.cpp"))


# --- SVDF --------------------------------------------------------------------------------

def _svdf_prepare(ctx: OpContext):
    """Output shapes state_out [batch, memory_size * num_filters], output
    [batch, num_units]. Errors: rank <= 0 or not dividing num_filters, memory_size < 1,
    any shape mismatch, activation not a FuseCode (spec SVDF)."""
    x, wf, wt, bias, state = ctx.inputs[:5]
    rank = ctx.scalar(5)
    check_fuse_code(ctx.scalar(6))
    batch, input_size = check_rank(x, label(0, "input"), 2)
    filters = check_rank(wf, label(1, "weights_feature"), 2)[0]
    check_shape(wf, label(1, "weights_feature"), filters, input_size)
    check(rank > 0 and filters % rank == 0,
          f"input 5 (rank) value {rank} must be > 0 and divide weights_feature.dims[0] = {filters}")
    memory = check_rank(wt, label(2, "weights_time"), 2)[1]
    check(memory >= 1, "input 2 (weights_time) dims[1] (memory_size) must be >= 1")
    check_shape(wt, label(2, "weights_time"), filters, memory)
    units = filters // rank
    if not bias.omitted:
        check_shape(bias, label(3, "bias"), units)
    check_shape(state, label(4, "state_in"), batch, memory * filters)
    return [(batch, memory * filters), (batch, units)]


def _svdf_execute(ctx: OpContext):
    """Per filter f: memory = state_in[f] with its newest (last) entry replaced by
    input . weights_feature[f]; output[u] = activation(bias[u] + sum over the rank filters
    f of unit u of memory . weights_time[f]); state_out[f] = memory shifted one step toward
    the oldest entry, newest entry 0 (AOSP ``SVDF::EvalFloat32``)."""
    x, wf, wt, bias, state = (f64(ctx, i) for i in range(5))
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


def _svdf_validate(ctx: OpContext) -> None:
    """Model-time rules: a constant rank is > 0, a constant activation a FuseCode."""
    check_const_scalar(ctx, 5, lambda v: v > 0, "(rank) must be > 0")
    check_const_scalar(ctx, 6, lambda v: 0 <= v <= 3, "is not a FuseCode (0-3)")


def _generate_svdf(d) -> None:
    """num_filters = num_units * rank (rank 1-3): input [batch, input_size],
    weights_feature [num_filters, input_size], weights_time [num_filters, memory_size],
    bias [num_units] (or omitted), state_in [batch, memory_size * num_filters] (spec SVDF,
    state size as AOSP); memory_size >= 2 (with 1, state_out is all zeros)."""
    p = draft_primary(d, lambda s: len(s) == 2 and s[0] <= 2 * MAX_BATCH and s[1] <= 2 * MAX_UNITS)
    batch, input_size = p or (d.integer(1, min(MAX_BATCH, d.max_dim)), draft_size(d))
    units, rank, memory = draft_size(d, 8), d.integer(1, 3), d.integer(2, 6)
    filters = units * rank
    d.tensor(0, [batch, input_size])
    draft_weights(d, 1, [filters, input_size], input_size)
    draft_weights(d, 2, [filters, memory], memory * rank)
    if d.coin(0.8):
        d.tensor(3, [units], low=-0.5, high=0.5)
    else:
        draft_omit(d, 3)
    d.tensor(4, [batch, memory * filters], low=-1.0, high=1.0)
    d.param(5, rank)


register(OperationDef(
    OperationType.SVDF,
    tuple(sig(level, [tensor("input", t, (2,)), tensor("weights_feature", t, (2,)),
                      tensor("weights_time", t, (2,)), tensor("bias", t, (1,), optional=True),
                      tensor("state_in", t, (2,)), scalar("rank", T.INT32),
                      scalar("activation", T.INT32)],
              [tensor("state_out", t, (2,)), tensor("output", t, (2,))])
          for level, t, _ in FLOAT_FORMS),
    _svdf_prepare, _svdf_execute, validate=_svdf_validate, generate=_generate_svdf, error_budget=budgets.svdf(),
    summary="singular value decomposition filter: feature filter, memory, time filter",
    allows_zero_sized_input=True, allows_omitted_operand=True, aosp_source="CpuExecutor.cpp"))


# --- the LSTM cell (shared with the sequence operations) -------------------------------

#: Keys of an LSTM cell's tensors, in the order of LSTM inputs 1-17.
CELL_KEYS = ("xi", "xf", "xc", "xo", "hi", "hf", "hc", "ho", "ci", "cf", "co",
             "bi", "bf", "bc", "bo", "proj", "proj_b")
CELL_NAMES = ("input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
              "input_to_output_weights", "recurrent_to_input_weights",
              "recurrent_to_forget_weights", "recurrent_to_cell_weights",
              "recurrent_to_output_weights", "cell_to_input_weights", "cell_to_forget_weights",
              "cell_to_output_weights", "input_gate_bias", "forget_gate_bias", "cell_bias",
              "output_gate_bias", "projection_weights", "projection_bias")
#: Optional tensors of a cell (spec: CIFG, peephole and projection tensors).
CELL_OPTIONAL = frozenset({"xi", "hi", "ci", "cf", "co", "bi", "proj", "proj_b"})
LN_KEYS = ("ln_i", "ln_f", "ln_c", "ln_o")
LN_NAMES = ("input_layer_norm_weights", "forget_layer_norm_weights",
            "cell_layer_norm_weights", "output_layer_norm_weights")
AUX_KEYS = ("ai", "af", "ac", "ao")
AUX_NAMES = ("aux_input_to_input_weights", "aux_input_to_forget_weights",
             "aux_input_to_cell_weights", "aux_input_to_output_weights")
#: LSTM's activation g (spec: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid).
LSTM_ACTIVATIONS = {
    0: lambda v: v,
    1: lambda v: np.maximum(v, 0.0),
    3: lambda v: np.clip(v, 0.0, 6.0),
    4: np.tanh,
    6: sigmoid,
}
LAYER_NORM_EPSILON = 1e-8


def cell_tensor_args(t: OperandType, prefix: str = "") -> list:
    """Signature slots of a cell's 17 tensors (LSTM inputs 1-17 order) of type ``t``."""
    return [tensor(prefix + n, t, (1,) if k[0] in "cb" or k == "proj_b" else (2,),
                   optional=k in CELL_OPTIONAL) for k, n in zip(CELL_KEYS, CELL_NAMES)]


@dataclass(frozen=True)
class LstmSlots:
    """Where one LSTM cell's operands are among an operation's inputs: ``weights`` the 17
    tensors in LSTM inputs 1-17 order, ``h_in`` / ``c_in`` the output and cell state,
    ``layer_norm`` the 4 layer-norm weights and ``aux`` the 4 auxiliary-input weights
    (input, forget, cell, output) when the operation has them; ``prefix`` ("fw_", "bw_")
    names the cell in messages."""

    weights: tuple[int, ...]
    h_in: int
    c_in: int
    layer_norm: tuple[int, ...] | None = None
    aux: tuple[int, ...] | None = None
    prefix: str = ""

    def indexes(self) -> dict[str, tuple[int, str]]:
        """key -> (input index, name) for every tensor slot of the cell."""
        out = {k: (i, n) for k, i, n in zip(CELL_KEYS, self.weights, CELL_NAMES)}
        if self.layer_norm:
            out.update({k: (i, n) for k, i, n in zip(LN_KEYS, self.layer_norm, LN_NAMES)})
        if self.aux:
            out.update({k: (i, n) for k, i, n in zip(AUX_KEYS, self.aux, AUX_NAMES)})
        out["h_in"] = (self.h_in, "output_state_in")
        out["c_in"] = (self.c_in, "cell_state_in")
        return {k: (i, self.prefix + n) for k, (i, n) in out.items()}


@dataclass(frozen=True)
class LstmDims:
    """Sizes and variants of one checked LSTM cell."""

    n_cell: int
    n_output: int
    cifg: bool
    peephole: bool
    layer_norm: bool
    projection: bool
    aux: bool


def check_lstm_cell(ctx: OpContext, slots: LstmSlots, batch: int, n_input: int,
                    n_aux_input: int | None = None) -> LstmDims:
    """Check one LSTM cell's tensors (spec LSTM / *_SEQUENCE_LSTM; AOSP
    ``LSTMCell::CheckInputTensorDimensions``) for inputs of ``batch`` rows of ``n_input``
    values (and an auxiliary input of ``n_aux_input`` values when given).

    Shapes: input_to_* [n_cell, n_input]; recurrent_to_* [n_cell, n_output]; cell_to_*,
    gate biases and layer-norm weights [n_cell]; projection_weights [n_output, n_cell];
    projection_bias [n_output]; aux_input_to_* [n_cell, n_aux_input]; output_state_in
    [batch, n_output]; cell_state_in [batch, n_cell]; n_cell from input_to_output_weights,
    n_output from recurrent_to_output_weights.

    Presence: the forget/cell/output input and recurrent weights, their biases and both
    states are required. CIFG (input_to_input weights omitted): recurrent_to_input weights
    and input_gate_bias omitted too (else all three given). Peephole: cell_to_forget and
    cell_to_output together; cell_to_input with them unless CIFG (where it may be given
    and is unused), never without them. projection_bias needs projection_weights; without
    projection n_output == n_cell. Layer norm: see the module docstring. Auxiliary
    weights: forget/cell/output together, input with them exactly when not CIFG.
    Raises OperationError naming the input."""
    ins, idx = ctx.inputs, slots.indexes()
    has = {k: not ins[i].omitted for k, (i, _) in idx.items()}
    for k in ("xf", "xc", "xo", "hf", "hc", "ho", "bf", "bc", "bo", "h_in", "c_in"):
        check(has[k], f"{label(*idx[k])} is required")
    n_cell = check_rank(ins[idx["xo"][0]], label(*idx["xo"]), 2)[0]
    n_output = check_rank(ins[idx["ho"][0]], label(*idx["ho"]), 2)[1]
    cifg = not has["xi"]
    check(has["hi"] != cifg and has["bi"] != cifg,
          f"{label(*idx['xi'])}, {label(*idx['hi'])} and {label(*idx['bi'])} must be all "
          f"given or all omitted (CIFG)")
    check(has["cf"] == has["co"], f"{label(*idx['cf'])} and {label(*idx['co'])} must be "
                                  f"both given or both omitted (peephole)")
    peephole = has["co"]
    check(has["ci"] == peephole or (cifg and peephole),
          f"{label(*idx['ci'])} must be given exactly when the peephole weights are given "
          f"(optional with CIFG)")
    projection = has["proj"]
    check(projection or not has["proj_b"], f"{label(*idx['proj_b'])} requires "
                                           f"{label(*idx['proj'])}")
    check(projection or n_output == n_cell,
          f"without {label(*idx['proj'])} the output size {n_output} (dims[1] of "
          f"{label(*idx['ho'])}) must equal the number of cells {n_cell}")
    layer_norm = bool(slots.layer_norm) and has["ln_o"]
    if slots.layer_norm:
        if cifg:
            check(not has["ln_i"], f"{label(*idx['ln_i'])} must be omitted with CIFG")
            group = ("ln_f", "ln_c", "ln_o")
        else:
            group = LN_KEYS
        check(len({has[k] for k in group}) == 1,
              ", ".join(label(*idx[k]) for k in group) + " must be all given or all omitted")
    aux = bool(slots.aux) and has["af"]
    if slots.aux:
        group = ("af", "ac", "ao")
        check(len({has[k] for k in group}) == 1,
              ", ".join(label(*idx[k]) for k in group) + " must be all given or all omitted")
        check(has["ai"] == (aux and not cifg),
              f"{label(*idx['ai'])} must be given exactly when the other auxiliary weights "
              f"are given without CIFG")
        check(not aux or n_aux_input is not None,
              "auxiliary input weights are given but the auxiliary input is omitted")
    expected = {"xi": (n_cell, n_input), "xf": (n_cell, n_input), "xc": (n_cell, n_input),
                "xo": (n_cell, n_input), "hi": (n_cell, n_output), "hf": (n_cell, n_output),
                "hc": (n_cell, n_output), "ho": (n_cell, n_output), "proj": (n_output, n_cell),
                "proj_b": (n_output,), "h_in": (batch, n_output), "c_in": (batch, n_cell)}
    for k in ("ci", "cf", "co", "bi", "bf", "bc", "bo") + LN_KEYS:
        expected[k] = (n_cell,)
    for k in AUX_KEYS:
        expected[k] = (n_cell, n_aux_input)
    for k, (i, name) in idx.items():
        if has[k] and not (k in AUX_KEYS and not aux):
            check_shape(ins[i], label(i, name), *expected[k])
    return LstmDims(n_cell, n_output, cifg, peephole, layer_norm, projection, aux)


def check_lstm_params(ctx: OpContext, act: int, cell_clip: int, proj_clip: int) -> None:
    """The activation (one of 0, 1, 3, 4, 6; spec) and clip thresholds (>= 0; AOSP
    ``LSTMCell``) at inputs ``act``, ``cell_clip``, ``proj_clip``. Raises OperationError."""
    a = ctx.scalar(act)
    check(a in LSTM_ACTIVATIONS, f"input {act} (activation) value {a} is not 0, 1, 3, 4 or 6")
    for i, name in ((cell_clip, "cell_clip"), (proj_clip, "proj_clip")):
        v = ctx.scalar(i)
        check(v >= 0, f"input {i} ({name}) value {v} must be >= 0")


def validate_lstm_params(ctx: OpContext, act: int, cell_clip: int, proj_clip: int) -> None:
    """Model-time form of :func:`check_lstm_params` for the scalars that are constants."""
    check_const_scalar(ctx, act, lambda v: v in LSTM_ACTIVATIONS, "(activation) is not 0, 1, 3, 4 or 6")
    check_const_scalar(ctx, cell_clip, lambda v: v >= 0, "(cell_clip) must be >= 0")
    check_const_scalar(ctx, proj_clip, lambda v: v >= 0, "(proj_clip) must be >= 0")


@dataclass
class LstmCell:
    """One checked LSTM cell ready to run: float64 tensors by key (None when omitted or
    unused), the activation g and the clip thresholds (0 = no clipping)."""

    p: dict
    dims: LstmDims
    g: object
    cell_clip: float
    proj_clip: float
    #: The recurrent weights of :func:`lstm_gates` side by side, transposed ([n_output,
    #: gates * n_cell]; made by the first :func:`lstm_step` given ``terms``).
    h_packed: np.ndarray | None = None


def read_lstm_cell(ctx: OpContext, slots: LstmSlots, dims: LstmDims, act: int,
                   cell_clip: int, proj_clip: int) -> LstmCell:
    """The :class:`LstmCell` of ``slots`` (checked by :func:`check_lstm_cell` into
    ``dims``) with the activation and clip scalars at inputs ``act``, ``cell_clip``,
    ``proj_clip``."""
    p = {k: f64(ctx, i) for k, (i, _) in slots.indexes().items()}
    if not dims.aux:
        p.update(dict.fromkeys(AUX_KEYS))
    return LstmCell(p, dims, LSTM_ACTIVATIONS[ctx.scalar(act)], float(ctx.scalar(cell_clip)),
                    float(ctx.scalar(proj_clip)))


def _layer_norm(z: np.ndarray) -> np.ndarray:
    """Each row of ``z`` [batch, n] to zero mean and unit variance (epsilon 1e-8)."""
    mean = z.mean(axis=1, keepdims=True)
    var = ((z - mean) ** 2).mean(axis=1, keepdims=True)
    return (z - mean) / np.sqrt(var + LAYER_NORM_EPSILON)


def lstm_gates(cell: LstmCell) -> tuple[str, ...]:
    """The gates whose weights a cell has, in weight order: f, c, o, and i first unless CIFG."""
    return ("f", "c", "o") if cell.dims.cifg else ("i", "f", "c", "o")


def lstm_input_terms(cell: LstmCell, x: np.ndarray, aux_x: np.ndarray | None = None):
    """The input (and auxiliary input) terms of every gate for many rows at once: ``x``
    [rows, n_input] (``aux_x`` [rows, n_aux_input]) -> [rows, gates * n_cell] float64, the
    gates of :func:`lstm_gates` side by side (``x W_x*^T [+ aux_x W_a*^T]``), for
    :func:`lstm_step`'s ``terms``; None when an auxiliary gate's weights are missing (then
    each step computes its own)."""
    p, gates = cell.p, lstm_gates(cell)
    out = x @ np.concatenate([p["x" + g] for g in gates]).T
    if aux_x is not None:
        aux = [p.get("a" + g) for g in gates]
        if any(a is None for a in aux):
            return None
        out += aux_x @ np.concatenate(aux).T
    return out


def lstm_step(cell: LstmCell, x: np.ndarray, h: np.ndarray, c: np.ndarray,
              aux_x: np.ndarray | None = None, terms: np.ndarray | None = None):
    """One LSTM step on float64 arrays x [batch, n_input], h [batch, n_output],
    c [batch, n_cell] (aux_x [batch, n_aux_input] when the cell has auxiliary weights).

    Spec equations (sigma = logistic, g = the activation, (.) element-wise):
    i = sigma(z_i), or 1 - f with CIFG; f = sigma(z_f); c' = clip(f (.) c + i (.) g(z_c));
    o = sigma(z_o); m = o (.) g(c'); h' = clip(W_proj m + b_proj) with a projection, else
    m; where z_* = W_x* x + W_h* h [+ W_a* aux_x] [+ w_c* (.) c (c' for o), peephole]
    + b_*, or with layer norm ln_* (.) normalize(that sum without b_*) + b_*.

    ``terms``: this step's rows of :func:`lstm_input_terms` (x and aux_x are then not
    read): the recurrent terms of all gates are one matrix product.

    Returns (h', c', scratch) with scratch the gate activations [i (not with CIFG), g(c'),
    f, m] each [batch, n_cell] (the AOSP scratch layout; its content is unspecified)."""
    p, d = cell.p, cell.dims
    if terms is not None:
        gates = lstm_gates(cell)
        if cell.h_packed is None:
            cell.h_packed = np.concatenate([p["h" + g] for g in gates]).T
        rec = h @ cell.h_packed
        np.add(rec, terms, out=rec)
        n = d.n_cell
        part = {g: rec[:, k * n:(k + 1) * n] for k, g in enumerate(gates)}

    def z(gate: str, peep_state: np.ndarray | None) -> np.ndarray:
        if terms is not None:
            acc = part[gate]
        else:
            acc = x @ p["x" + gate].T + h @ p["h" + gate].T
            if aux_x is not None and p.get("a" + gate) is not None:
                acc = acc + aux_x @ p["a" + gate].T
        if d.peephole and gate != "c":
            acc = acc + p["c" + gate] * peep_state
        if d.layer_norm:
            return _layer_norm(acc) * p["ln_" + gate] + p["b" + gate]
        return acc + p["b" + gate]

    f = sigmoid(z("f", c))
    i = 1.0 - f if d.cifg else sigmoid(z("i", c))
    c_new = f * c + i * cell.g(z("c", None))
    if cell.cell_clip > 0:
        c_new = np.clip(c_new, -cell.cell_clip, cell.cell_clip)
    o = sigmoid(z("o", c_new))
    g_c = cell.g(c_new)
    m = o * g_c
    out = m
    if d.projection:
        out = m @ p["proj"].T
        if p["proj_b"] is not None:
            out = out + p["proj_b"]
        if cell.proj_clip > 0:
            out = np.clip(out, -cell.proj_clip, cell.proj_clip)
    scratch = ([] if d.cifg else [i]) + [g_c, f, m]
    return out, c_new, scratch


# --- LSTM --------------------------------------------------------------------------------

_LSTM_SLOTS = LstmSlots(tuple(range(1, 18)), 18, 19)
_LSTM_LN_SLOTS = LstmSlots(tuple(range(1, 18)), 18, 19, layer_norm=(23, 24, 25, 26))


def _lstm_slots(ctx: OpContext) -> LstmSlots:
    return _LSTM_LN_SLOTS if len(ctx.inputs) == 27 else _LSTM_SLOTS


def _lstm_check(ctx: OpContext) -> LstmDims:
    check_lstm_params(ctx, 20, 21, 22)
    batch, n_input = check_rank(ctx.inputs[0], label(0, "input"), 2)
    return check_lstm_cell(ctx, _lstm_slots(ctx), batch, n_input)


def _lstm_prepare(ctx: OpContext):
    """Output shapes: scratch_buffer [batch, 3 * n_cell] with CIFG, else
    [batch, 4 * n_cell]; output_state_out and output [batch, n_output]; cell_state_out
    [batch, n_cell]. Errors: :func:`check_lstm_cell`, :func:`check_lstm_params`."""
    d = _lstm_check(ctx)
    batch = ctx.inputs[0].dims[0]
    return [(batch, (3 if d.cifg else 4) * d.n_cell), (batch, d.n_output), (batch, d.n_cell),
            (batch, d.n_output)]


def _lstm_execute(ctx: OpContext):
    """One :func:`lstm_step`: returns scratch_buffer (gate-major, AOSP layout),
    output_state_out (h'), cell_state_out (c'), output (h')."""
    d = _lstm_check(ctx)
    cell = read_lstm_cell(ctx, _lstm_slots(ctx), d, 20, 21, 22)
    x = f64(ctx, 0)
    out, c_new, blocks = lstm_step(cell, x, cell.p["h_in"], cell.p["c_in"])
    outs = ctx.outputs
    # the prepared [batch, gates * units] shape: a zero batch leaves no size to infer -1 from
    scratch = np.concatenate([b.reshape(-1) for b in blocks]).reshape(tuple(outs[0].dims))
    return [from_float(outs[0], scratch), from_float(outs[1], out),
            from_float(outs[2], c_new), from_float(outs[3], out)]


def _lstm_signatures():
    """FL1: TENSOR_FLOAT32, 23 inputs. FL3: TENSOR_FLOAT16 with 23 inputs, and both types
    with 27 (layer-norm weights, optional)."""
    sigs = []
    for level, t, st in FLOAT_FORMS:
        base = [tensor("input", t, (2,)), *cell_tensor_args(t), tensor("output_state_in", t, (2,)),
                tensor("cell_state_in", t, (2,)), scalar("activation", T.INT32),
                scalar("cell_clip", st), scalar("proj_clip", st)]
        outs = [tensor(n, t, (2,)) for n in ("scratch_buffer", "output_state_out",
                                              "cell_state_out", "output")]
        sigs.append(sig(level, base, outs))
        sigs.append(sig(3, base + [tensor(n, t, (1,), optional=True) for n in LN_NAMES], outs))
    return tuple(sorted(sigs, key=lambda s: s.feature_level))


def _generate_lstm(d) -> None:
    """input [batch, input_size] and one cell of a random variant (:func:`draft_lstm_cell`:
    CIFG, peephole, projection, layer normalization with 27 inputs); activation among
    0, 1, 3, 4, 6 and clips 0 or positive (spec LSTM)."""
    p = draft_primary(d, lambda s: len(s) == 2 and s[0] <= 2 * MAX_BATCH and s[1] <= 2 * MAX_UNITS)
    batch, n_input = p or (d.integer(1, min(MAX_BATCH, d.max_dim)), draft_size(d))
    d.tensor(0, [batch, n_input])
    draft_lstm_cell(d, _LSTM_LN_SLOTS if len(d.slots) == 27 else _LSTM_SLOTS, batch, n_input)
    draft_lstm_params(d, 20, 21, 22)
    d.ignored_outputs = {0}  # scratch_buffer: its content is unspecified


register(OperationDef(
    OperationType.LSTM, _lstm_signatures(), _lstm_prepare, _lstm_execute,
    validate=lambda ctx: validate_lstm_params(ctx, 20, 21, 22), generate=_generate_lstm,
    error_budget=budgets.lstm(),
    summary="one LSTM step with optional CIFG, peephole, projection and layer "
            "normalization (23 or 27 inputs)",
    allows_zero_sized_input=True, allows_omitted_operand=True, aosp_source="CpuExecutor.cpp"))
