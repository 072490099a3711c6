"""NNAPI -> TFLite for the element-wise, activation, softmax, RESHAPE and CONCATENATION
operations of the ``litert`` drivers (registered into :data:`.builder.TABLE`).

Each is one TFLite builtin of the same meaning (NNAPI took these operations from TFLite):

* ADD, SUB, MUL, DIV: the builtin with ``fused_activation_function`` = the NNAPI FuseCode
  (NONE/RELU/RELU1/RELU6 are TFLite's NONE/RELU/RELU_N1_TO_1/RELU6). float32; ADD, SUB, MUL
  also int32 (FuseCode NONE, as NNAPI requires) and 8-bit quantized (TFLite requantizes to
  the output's scale and zero point, as NNAPI does). int32 DIV is not mapped: NNAPI's is a
  floor division with ``x / 0 = 0``, TFLite's DIV truncates.
* RELU, RELU1 (RELU_N1_TO_1), RELU6, LOGISTIC, TANH: float32 and 8-bit quantized (NNAPI
  fixes LOGISTIC's output at scale 1/256, zero point 0 / -128 and TANH's at 1/128, 128 / 0,
  exactly the parameters TFLite's quantized kernels require; others are declined).
* ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT: float32 (ABS and NEG also int32).
* SOFTMAX: float32 and 8-bit quantized, with ``beta``; TFLite's is over the last axis, so
  another axis is moved last by TRANSPOSE and back (exact data movement).
* RESHAPE: the shape tensor as it is (a constant or a model input; -1 as NNAPI allows);
  quantized operands share the input's scale and zero point.
* CONCATENATION: any axis; 8-bit asymmetric inputs may differ in scale and zero point
  (TFLite requantizes as NNAPI does), signed 8-bit ones must all equal the output's
  (TFLite's int8 kernel copies bytes).
"""
from __future__ import annotations

import numpy as np

from ...types import OperationType as O
from ..translated import Unsupported
from .builder import F32, I32, QA8, QA8S, QUANT8, Builder, rule

FLOAT = frozenset({F32})


def _binary(name: str, kind: str):
    def emit(b: Builder, op):
        act = b.fused(op, 2)
        if b.type_of(op, 0) == I32 and act != 0:
            raise Unsupported("int32 with a fused activation")
        b.emit(name, [b.input(op, 0), b.input(op, 1)], [b.output(op)], kind, FusedActivationFunction=act)
    return emit


for _t, _name, _kind, _types in [
        (O.ADD, "ADD", "Add", FLOAT | {I32} | QUANT8), (O.SUB, "SUB", "Sub", FLOAT | {I32} | QUANT8),
        (O.MUL, "MUL", "Mul", FLOAT | {I32} | QUANT8), (O.DIV, "DIV", "Div", FLOAT)]:
    rule(_t, _types)(_binary(_name, _kind))


def _unary(name: str):
    def emit(b: Builder, op):
        b.emit(name, [b.input(op, 0)], [b.output(op)])
    return emit


for _t, _name, _types in [
        (O.ABS, "ABS", FLOAT | {I32}), (O.EXP, "EXP", FLOAT), (O.LOG, "LOG", FLOAT),
        (O.NEG, "NEG", FLOAT | {I32}), (O.RSQRT, "RSQRT", FLOAT), (O.SIN, "SIN", FLOAT),
        (O.SQRT, "SQRT", FLOAT), (O.RELU, "RELU", FLOAT | QUANT8),
        (O.RELU1, "RELU_N1_TO_1", FLOAT | QUANT8), (O.RELU6, "RELU6", FLOAT | QUANT8)]:
    rule(_t, _types)(_unary(_name))

#: Output (scale, zero point) TFLite's quantized kernels require (NNAPI requires the same).
_FIXED_OUTPUT = {(O.LOGISTIC, QA8): (1 / 256, 0), (O.LOGISTIC, QA8S): (1 / 256, -128),
                 (O.TANH, QA8): (1 / 128, 128), (O.TANH, QA8S): (1 / 128, 0)}


def _fixed_output(name: str):
    def emit(b: Builder, op):
        t = b.type_of(op, 0)
        if t in QUANT8:
            out = b.operand(op.outputs[0])
            if (out.scale, out.zero_point) != _FIXED_OUTPUT[(op.type, t)]:
                raise Unsupported(f"output scale/zero point {out.scale}/{out.zero_point}; TFLite's "
                                  f"kernel needs {_FIXED_OUTPUT[(op.type, t)]}")
        b.emit(name, [b.input(op, 0)], [b.output(op)])
    return emit


rule(O.LOGISTIC, FLOAT | QUANT8)(_fixed_output("LOGISTIC"))
rule(O.TANH, FLOAT | QUANT8)(_fixed_output("TANH"))


@rule(O.SOFTMAX, FLOAT | QUANT8)
def _softmax(b: Builder, op):
    rank = b.rank(op, 0)
    axis = int(b.scalar(op, 2, -1))
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis} of a rank-{rank} input")
    if b.type_of(op, 0) in QUANT8 and rank > 4:
        raise Unsupported(f"quantized rank {rank} (TFLite: at most 4)")
    beta = float(b.scalar(op, 1))
    axis %= rank
    if axis == rank - 1:
        b.emit("SOFTMAX", [b.input(op, 0)], [b.output(op)], "Softmax", Beta=beta)
        return
    # TFLite's SOFTMAX is over the last axis: move ``axis`` last, and back (exact moves)
    perm = [d for d in range(rank) if d != axis] + [axis]
    x = b.transpose(b.input(op, 0), perm, op.inputs[0])
    y = b.temporary(op.outputs[0], [1] * rank, "softmax")
    b.emit("SOFTMAX", [x], [y], "Softmax", Beta=beta)
    b.emit("TRANSPOSE", [y, b.const(np.argsort(perm), np.int32, "perm")], [b.output(op)])


@rule(O.RESHAPE, FLOAT | {I32} | QUANT8)
def _reshape(b: Builder, op):
    b.same_quant(op)
    b.emit("RESHAPE", [b.input(op, 0), b.input(op, 1)], [b.output(op)])


@rule(O.CONCATENATION, FLOAT | {I32} | QUANT8)
def _concatenation(b: Builder, op):
    n = len(op.inputs) - 1
    axis = int(b.scalar(op, n))
    if b.type_of(op, 0) == QA8S:
        b.same_quant(op, ins=tuple(range(n)))
    b.emit("CONCATENATION", [b.input(op, k) for k in range(n)], [b.output(op)], "Concatenation",
           Axis=axis, FusedActivationFunction=0)
