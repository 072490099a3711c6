"""Mappings of TFLite's recurrent operators (float32 forms only): UNIDIRECTIONAL_SEQUENCE_LSTM,
LSTM (full kernel, one step), RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF -> the NNAPI operation
of the same name. An omitted optional input becomes a NO_VALUE operand. TFLite's variable
state tensors become zero constants (:meth:`~mlts.tflite_import.builder.Builder.tensor`):
each run starts from zero state, like a fresh interpreter or one after
``reset_all_variables``; NNAPI's state outputs are temporaries. The cell activation of RNN
and SVDF must be a FuseCode: a TANH cell activation, real in TFLite, has no NNAPI form."""
from __future__ import annotations

from runtime.types import OperandType as T
from runtime.types import OperationType as OP

from .builder import Builder, require
from .model import ACTIVATIONS
from .reader import Op


def _float_only(b: Builder, op: Op, upto: int | None = None) -> None:
    """Raise Unmappable unless every present input (up to ``upto``) is float32."""
    for k, t in enumerate(op.inputs[:upto]):
        require(t < 0 or b.info(t).type_name == "FLOAT32",
                f"input {k} of type {b.info(t).type_name} (only float32 forms map)")


def _opt_inputs(b: Builder, op: Op, positions) -> list[int]:
    """Operands of the inputs at ``positions``: NO_VALUE for an omitted (-1) or absent one."""
    return [b.omitted() if k >= len(op.inputs) or op.inputs[k] < 0 else b.tensor(op.inputs[k])
            for k in positions]


def _lstm_activation(op: Op) -> int:
    """The LSTM activation (TFLite's default TANH, 4): NNAPI takes 0, 1, 3, 4 or 6."""
    act = int(op.options.get("FusedActivationFunction", 4))
    require(act in (0, 1, 3, 4, 6), f"activation {ACTIVATIONS.get(act, act)}")
    return act


def map_sequence_lstm(b: Builder, op: Op) -> list[str]:
    """UNIDIRECTIONAL_SEQUENCE_LSTM -> same: inputs 0-19, activation, cell_clip, proj_clip,
    time_major, then the four layer-normalization weights (NO_VALUE when absent)."""
    x = b.info(op.inputs[0])
    require(x.type_name == "FLOAT32", f"{x.type_name} input (only float LSTMs map)")
    for k in range(1, min(len(op.inputs), 24)):
        t = op.inputs[k]
        require(t < 0 or b.info(t).type_name == "FLOAT32",
                f"input {k} of type {b.info(t).type_name} (hybrid / quantized LSTM)")
    require(len(op.outputs) == 1, f"{len(op.outputs)} outputs")
    o = op.options
    ins = _opt_inputs(b, op, range(20))
    ins += [b.i32(_lstm_activation(op)), b.f32(o.get("CellClip", 0.0)), b.f32(o.get("ProjClip", 0.0)),
            b.boolean(bool(o.get("TimeMajor", False)))]
    ins += _opt_inputs(b, op, range(20, 24))
    b.op(OP.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [b.output(op.outputs[0])])
    return ["UNIDIRECTIONAL_SEQUENCE_LSTM"]


def map_lstm_cell(b: Builder, op: Op) -> list[str]:
    """TFLite LSTM (full kernel, one step) -> NNAPI LSTM: inputs 0-19, activation, clips,
    layer-norm weights; outputs scratch buffer, output state, cell state (temporaries; the
    TFLite state variables start at zero), output."""
    require(len(op.inputs) in (20, 24), f"{len(op.inputs)} inputs (the basic kernel does not map)")
    require(int(op.options.get("KernelType", 0)) == 0, "basic LSTM kernel")
    _float_only(b, op)
    require(len(op.outputs) == 1, f"{len(op.outputs)} outputs")
    o = op.options
    act = _lstm_activation(op)
    ins = _opt_inputs(b, op, range(20))
    ins += [b.i32(act), b.f32(o.get("CellClip", 0.0)), b.f32(o.get("ProjClip", 0.0))]
    if len(op.inputs) == 24:
        ins += _opt_inputs(b, op, range(20, 24))
    out = b.info(op.outputs[0])
    batch, n_out = out.shape[0], out.shape[-1]
    n_cell = b.info(op.inputs[4]).shape[0]  # input_to_output_weights [num_units, input_size]
    cifg = op.inputs[1] < 0
    scratch = b.temp(T.TENSOR_FLOAT32, (batch, (3 if cifg else 4) * n_cell))
    h = b.temp(T.TENSOR_FLOAT32, (batch, n_out))
    c = b.temp(T.TENSOR_FLOAT32, (batch, n_cell))
    b.op(OP.LSTM, ins, [scratch, h, c, b.output(op.outputs[0])])
    return ["LSTM"]


def _cell_act(op: Op) -> int:
    """The activation of RNN / SVDF cells: a real activation in TFLite (TANH included),
    a FuseCode (0-3) in NNAPI."""
    act = int(op.options.get("FusedActivationFunction", 0))
    require(act in (0, 1, 2, 3), f"cell activation {ACTIVATIONS.get(act, act)} (NNAPI takes a FuseCode)")
    return act


def map_rnn(b: Builder, op: Op) -> list[str]:
    """RNN (one step) -> RNN [input, weights, recurrent weights, bias, hidden state,
    FuseCode]; outputs the new hidden state (a temporary) and the output."""
    _float_only(b, op)
    out = b.info(op.outputs[0])
    h = b.temp(T.TENSOR_FLOAT32, out.shape)
    code = _cell_act(op)
    b.op(OP.RNN, [b.tensor(t) for t in op.inputs[:5]] + [b.i32(code)], [h, b.output(op.outputs[0])])
    return ["RNN"]


def map_sequence_rnn(b: Builder, op: Op) -> list[str]:
    """UNIDIRECTIONAL_SEQUENCE_RNN -> same [input, weights, recurrent weights, bias, hidden
    state, FuseCode, time_major]."""
    _float_only(b, op)
    code = _cell_act(op)
    b.op(OP.UNIDIRECTIONAL_SEQUENCE_RNN, [b.tensor(t) for t in op.inputs[:5]]
         + [b.i32(code), b.i32(int(bool(op.options.get("TimeMajor", False))))], [b.output(op.outputs[0])])
    return ["UNIDIRECTIONAL_SEQUENCE_RNN"]


def map_svdf(b: Builder, op: Op) -> list[str]:
    """SVDF -> SVDF [input, feature weights, time weights, bias, state, rank, FuseCode];
    outputs the new state (a temporary) and the output."""
    _float_only(b, op)
    state = b.info(op.inputs[4])
    code = _cell_act(op)
    ins = _opt_inputs(b, op, range(5)) + [b.i32(int(op.options.get("Rank", 1))), b.i32(code)]
    b.op(OP.SVDF, ins, [b.temp(T.TENSOR_FLOAT32, state.shape), b.output(op.outputs[0])])
    return ["SVDF"]
