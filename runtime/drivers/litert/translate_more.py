"""NNAPI -> TFLite for the remaining element-wise, comparison, logical, type-conversion,
normalization and resizing operations of the ``litert`` drivers (registered into
:data:`.builder.TABLE`). Each is one TFLite builtin of the same meaning:

* MAXIMUM, MINIMUM (float32, int32, 8-bit quantized when both inputs and the output share
  one scale and zero point: TFLite's kernel compares the stored integers), FLOOR, POW
  (float32), PRELU (float32, 8-bit quantized: TFLite requantizes both branches as NNAPI;
  only an ``alpha`` that broadcasts into the input's shape: TFLite's output has the input's),
  HARD_SWISH (float32, 8-bit quantized), ELU (float32, ``alpha`` 1 only: TFLite's ELU has
  no alpha).
* EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL (float32, int32, 8-bit
  quantized when both inputs share one scale and zero point and ``1/256 <= scale < 1``:
  NNAPI compares the real values, TFLite rescales each input to 1/256 units in fixed point,
  see :func:`_check_quantized_comparison`; EQUAL/NOT_EQUAL also TENSOR_BOOL8) -> TENSOR_BOOL8; LOGICAL_AND, LOGICAL_OR,
  LOGICAL_NOT; SELECT as SELECT_V2 (quantized: both inputs and the output share one scale
  and zero point).
* CAST (float32 <-> int32), QUANTIZE (float32 -> 8-bit), DEQUANTIZE (8-bit asymmetric,
  TENSOR_QUANT8_SYMM, per-channel -> float32).
* L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, LOG_SOFTMAX: TFLite normalizes over the
  last axis (LOCAL_RESPONSE_NORMALIZATION: of a rank-4 tensor), so another axis is moved
  last by TRANSPOSE (and a lower rank padded with leading 1s by RESHAPE) and back: exact
  data movement. LOG_SOFTMAX only with ``beta`` 1 (TFLite's has none).
* RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: the output size (given, or ``floor(size *
  scale)`` in float32 as NNAPI computes it) as TFLite's ``size`` tensor, ``align_corners``
  and ``half_pixel_centers`` as TFLite's options; NCHW through TRANSPOSE.
"""
from __future__ import annotations

import numpy as np

from ...types import OperandType as T
from ...types import OperationType as O
from ..translated import Unsupported
from .builder import BOOL8, F32, I32, QA8, QA8S, QPC, QS8, QUANT8, Builder, rule
from .translate_nn import NHWC

FLOAT = frozenset({F32})
NUMERIC = FLOAT | {I32} | QUANT8
INT32 = T.INT32


def _plain(name: str, n_in: int, same=(), kind: str | None = None, **fields):
    """Emit builtin ``name`` over the first ``n_in`` inputs; ``same``: the input indexes
    whose quantization must equal the output's."""
    def emit(b: Builder, op):
        if same:
            b.same_quant(op, ins=same)
        b.emit(name, [b.input(op, k) for k in range(n_in)], [b.output(op)], kind, **fields)
    return emit


rule(O.MAXIMUM, NUMERIC)(_plain("MAXIMUM", 2, same=(0, 1)))
rule(O.MINIMUM, NUMERIC)(_plain("MINIMUM", 2, same=(0, 1)))
rule(O.FLOOR, FLOAT)(_plain("FLOOR", 1))
rule(O.POW, FLOAT)(_plain("POW", 2))


@rule(O.PRELU, FLOAT | QUANT8)
def _prelu(b: Builder, op):
    d, a = b.static_dims(op, 0), b.static_dims(op, 1)
    try:
        out = list(np.broadcast_shapes(tuple(d), tuple(a)))
    except ValueError:
        out = None  # an invalid model: validation refuses it
    if out != d:  # TFLite: the output has the input's shape
        raise Unsupported(f"alpha {a} broadcasts the input {d} (TFLite requires the input's shape)")
    b.emit("PRELU", [b.input(op, 0), b.input(op, 1)], [b.output(op)])


rule(O.HARD_SWISH, FLOAT | QUANT8)(_plain("HARD_SWISH", 1))
rule(O.LOGICAL_AND, {BOOL8})(_plain("LOGICAL_AND", 2))
rule(O.LOGICAL_OR, {BOOL8})(_plain("LOGICAL_OR", 2))
rule(O.LOGICAL_NOT, {BOOL8})(_plain("LOGICAL_NOT", 1))


@rule(O.ELU, FLOAT)
def _elu(b: Builder, op):
    if float(b.scalar(op, 1)) != 1.0:
        raise Unsupported("alpha other than 1 (TFLite's ELU has alpha 1)")
    b.emit("ELU", [b.input(op, 0)], [b.output(op)])


def _check_quantized_comparison(first, second) -> None:
    """TFLite compares 8-bit inputs as ``round((q - zero_point) * 256 * scale)`` in fixed
    point (QuantizeMultiplierSmallerThanOneExp of each input's scale), NNAPI compares the
    real values: the same order only when both inputs share scale and zero point and
    ``1/256 <= scale < 1`` (consecutive values stay at least 1 apart; a scale of 1 or more
    breaks the multiplier's precondition: wrong results, and an abort at exactly 1)."""
    if (first.scale, first.zero_point) != (second.scale, second.zero_point):
        raise Unsupported("quantized inputs with different scale/zero point (TFLite rescales each to "
                          "1/256 units, NNAPI compares the real values)")
    if not 1 / 256 <= first.scale < 1:
        raise Unsupported(f"quantized input scale {first.scale} outside [1/256, 1) (TFLite's fixed-point "
                          "comparison is wrong there)")


def _compare(name: str):
    def emit(b: Builder, op):
        if b.operand(op.outputs[0]).type != BOOL8:
            raise Unsupported("output is not TENSOR_BOOL8")
        if b.type_of(op, 1) != b.type_of(op, 0):
            raise Unsupported("inputs of different types")
        if b.type_of(op, 0) in QUANT8:
            _check_quantized_comparison(b.operand(op.inputs[0]), b.operand(op.inputs[1]))
        b.emit(name, [b.input(op, 0), b.input(op, 1)], [b.output(op)])
    return emit


for _t, _name in [(O.LESS, "LESS"), (O.LESS_EQUAL, "LESS_EQUAL"), (O.GREATER, "GREATER"),
                  (O.GREATER_EQUAL, "GREATER_EQUAL")]:
    rule(_t, NUMERIC, same_type=False)(_compare(_name))
rule(O.EQUAL, NUMERIC | {BOOL8}, same_type=False)(_compare("EQUAL"))
rule(O.NOT_EQUAL, NUMERIC | {BOOL8}, same_type=False)(_compare("NOT_EQUAL"))


@rule(O.SELECT, NUMERIC, deciding=1)
def _select(b: Builder, op):
    if b.type_of(op, 0) != BOOL8:
        raise Unsupported("condition is not TENSOR_BOOL8")
    b.same_quant(op, ins=(1, 2))
    b.emit("SELECT_V2", [b.input(op, k) for k in range(3)], [b.output(op)])


@rule(O.CAST, FLOAT | {I32}, same_type=False)
def _cast(b: Builder, op):
    if b.operand(op.outputs[0]).type not in (F32, I32):
        raise Unsupported(f"cast to {b.operand(op.outputs[0]).type.name}")
    b.emit("CAST", [b.input(op, 0)], [b.output(op)])


@rule(O.QUANTIZE, FLOAT, same_type=False)
def _quantize(b: Builder, op):
    if b.operand(op.outputs[0]).type not in QUANT8:
        raise Unsupported(f"quantize to {b.operand(op.outputs[0]).type.name}")
    b.emit("QUANTIZE", [b.input(op, 0)], [b.output(op)])


@rule(O.DEQUANTIZE, QUANT8 | {QS8, QPC}, same_type=False)
def _dequantize(b: Builder, op):
    if b.operand(op.outputs[0]).type != F32:
        raise Unsupported(f"dequantize to {b.operand(op.outputs[0]).type.name}")
    b.emit("DEQUANTIZE", [b.input(op, 0)], [b.output(op)])


def _last_axis(b: Builder, op, axis: int, emit, min_rank: int = 1) -> None:
    """``emit(x, y)`` computes an operator over the last axis of TFLite tensor ``x`` into
    ``y``; input 0 of ``op`` is normalized along ``axis``: moved last by TRANSPOSE (and
    given leading 1s up to ``min_rank`` by RESHAPE), and the result moved back."""
    d = b.dims(op.inputs[0])
    rank = b.rank(op, 0)
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis} of a rank-{rank} input")
    axis %= rank
    if axis == rank - 1 and rank >= min_rank:
        emit(b.input(op, 0), b.output(op))
        return
    perm = [k for k in range(rank) if k != axis] + [axis]
    x = b.transpose(b.input(op, 0), perm, op.inputs[0]) if axis != rank - 1 else b.input(op, 0)
    if rank < min_rank:
        if 0 in d:
            raise Unsupported(f"rank {rank} below {min_rank} with unknown dimensions")
        shape = [1] * (min_rank - rank) + [d[k] for k in perm]
        r = b.temporary(op.inputs[0], shape, "r")
        b.emit("RESHAPE", [x, b.const(shape, np.int32, "shape")], [r])
        x = r
    y = b.temporary(op.outputs[0], [1] * max(rank, min_rank), "norm")
    emit(x, y)
    if rank < min_rank:
        moved = [d[k] for k in perm]
        target = b.output(op) if axis == rank - 1 else b.temporary(op.outputs[0], moved, "r")
        b.emit("RESHAPE", [y, b.const(moved, np.int32, "shape")], [target])
        y = target
    if axis != rank - 1:
        b.emit("TRANSPOSE", [y, b.const(np.argsort(perm), np.int32, "perm")], [b.output(op)])


#: Output (scale, zero point) TFLite's quantized L2_NORMALIZATION requires (NNAPI: the same).
_L2_OUTPUT = {QA8: (1 / 128, 128), QA8S: (1 / 128, 0)}


@rule(O.L2_NORMALIZATION, FLOAT | QUANT8)
def _l2_normalization(b: Builder, op):
    t = b.type_of(op, 0)
    if t in QUANT8:
        out = b.operand(op.outputs[0])
        if (out.scale, out.zero_point) != _L2_OUTPUT[t]:
            raise Unsupported(f"output scale/zero point {out.scale}/{out.zero_point}; TFLite needs {_L2_OUTPUT[t]}")
    _last_axis(b, op, int(b.scalar(op, 1, -1)),
               lambda x, y: b.emit("L2_NORMALIZATION", [x], [y], "L2Norm", FusedActivationFunction=0))


@rule(O.LOCAL_RESPONSE_NORMALIZATION, FLOAT)
def _lrn(b: Builder, op):
    fields = dict(Radius=int(b.scalar(op, 1)), Bias=float(b.scalar(op, 2)), Alpha=float(b.scalar(op, 3)),
                  Beta=float(b.scalar(op, 4)))
    _last_axis(b, op, int(b.scalar(op, 5, -1)),
               lambda x, y: b.emit("LOCAL_RESPONSE_NORMALIZATION", [x], [y], "LocalResponseNormalization",
                                   **fields), min_rank=4)


@rule(O.LOG_SOFTMAX, FLOAT)
def _log_softmax(b: Builder, op):
    if float(b.scalar(op, 1)) != 1.0:
        raise Unsupported("beta other than 1 (TFLite's LOG_SOFTMAX has none)")
    _last_axis(b, op, int(b.scalar(op, 2)), lambda x, y: b.emit("LOG_SOFTMAX", [x], [y]))


def _resize(name: str, kind: str):
    def emit(b: Builder, op):
        b.same_quant(op)
        io = NHWC(b, op, 3)
        size = []
        for k, dim in ((2, 1), (1, 2)):  # NNAPI: width then height; TFLite: [height, width]
            if b.type_of(op, k) == INT32:
                size.append(int(b.scalar(op, k)))
            else:
                if not io.dims[dim]:
                    raise Unsupported("a scale with an unknown input size")
                size.append(int(np.float32(io.dims[dim]) * np.float32(b.scalar(op, k))))
        align = bool(b.scalar(op, 4, False))
        half = bool(b.scalar(op, 5, False))
        b.emit(name, [io.x, b.const(size, np.int32, "size")], [io.y], kind, AlignCorners=align,
               HalfPixelCenters=half)
        io.finish()
    return emit


rule(O.RESIZE_BILINEAR, FLOAT | QUANT8)(_resize("RESIZE_BILINEAR", "ResizeBilinear"))
rule(O.RESIZE_NEAREST_NEIGHBOR, FLOAT | QUANT8)(_resize("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighbor"))
