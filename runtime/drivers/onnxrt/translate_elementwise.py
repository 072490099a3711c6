"""NNAPI -> ONNX for the element-wise, activation, comparison/logical, CAST, SELECT and
softmax operations of the ``onnxruntime`` driver (registered into :data:`.builder.TABLE`).

ABS ... HARD_SWISH and LOGICAL_NOT are one ONNX node each; ADD/SUB/MUL/DIV carry an NNAPI
FuseCode (input 2) applied after the node, and int32 DIV is NNAPI's floor division with
``x / 0 = 0`` (AOSP); NOT_EQUAL is ``Not(Equal)``; PRELU broadcasts both ways, so it is a
select rather than ONNX PRelu; CAST to TENSOR_QUANT8_ASYMM clamps to [0, 255] before
truncating. Semantics as the reference kernels under ``runtime/ops`` state them.
"""
from __future__ import annotations

from ...types import OperationType as O
from .builder import BOOL8, FLOATS, I32, NUMERIC, QA8, QUANT8, Builder, Unsupported, op


def unary(onnx_op: str, types=FLOATS, **attrs):
    """``(types, emit)`` for an NNAPI operation that is the one-input ONNX node ``onnx_op``
    (with ``attrs``) applied to input 0."""
    def emit(b: Builder, op):
        b.result(op, 0, b.node(onnx_op, [b.input(op, 0)], **attrs))
    return types, emit


for _t, _onnx, _types in [
        (O.ABS, "Abs", NUMERIC), (O.EXP, "Exp", FLOATS), (O.LOG, "Log", FLOATS),
        (O.SQRT, "Sqrt", FLOATS), (O.NEG, "Neg", NUMERIC), (O.SIN, "Sin", FLOATS),
        (O.FLOOR, "Floor", FLOATS), (O.LOGISTIC, "Sigmoid", FLOATS), (O.TANH, "Tanh", FLOATS),
        (O.RELU, "Relu", FLOATS), (O.HARD_SWISH, "HardSwish", FLOATS),
        (O.LOGICAL_NOT, "Not", {BOOL8})]:
    op(_t, _types, QUANT8)(unary(_onnx, _types)[1])


@op(O.RSQRT, FLOATS, QUANT8)
def _rsqrt(b, op):
    b.result(op, 0, b.node("Reciprocal", [b.node("Sqrt", [b.input(op, 0)])]))


@op(O.RELU1, FLOATS, QUANT8)
def _relu1(b, op):
    t = b.type_of(op, 0)
    b.result(op, 0, b.node("Clip", [b.input(op, 0), b.scalar_like(-1, t), b.scalar_like(1, t)]))


@op(O.RELU6, FLOATS, QUANT8)
def _relu6(b, op):
    t = b.type_of(op, 0)
    b.result(op, 0, b.node("Clip", [b.input(op, 0), b.scalar_like(0, t), b.scalar_like(6, t)]))


@op(O.ELU, FLOATS, QUANT8)
def _elu(b, op):
    b.result(op, 0, b.node("Elu", [b.input(op, 0)], alpha=float(b.scalar(op, 1))))


@op(O.PRELU, FLOATS, QUANT8)
def _prelu(b, op):
    # NNAPI broadcasts input and alpha both ways (ONNX PRelu only alpha to input): select.
    x, alpha = b.input(op, 0), b.input(op, 1)
    neg = b.node("Less", [x, b.scalar_like(0, b.type_of(op, 0))])
    b.result(op, 0, b.node("Where", [neg, b.node("Mul", [x, alpha]), x]))


def _binary_fused(onnx_op: str):
    def emit(b, op):
        t = b.type_of(op, 0)
        code = b.scalar(op, 2)
        a, c = b.input(op, 0), b.input(op, 1)
        if t == I32 and onnx_op == "Div":  # NNAPI: floor division; x / 0 = 0 (AOSP)
            zero = b.node("Equal", [c, b.scalar_like(0, I32)])
            safe = b.node("Where", [zero, b.scalar_like(1, I32), c])
            exact = b.node("Sub", [a, b.node("Mod", [a, safe], fmod=0)])
            y = b.node("Div", [exact, safe])
            y = b.node("Where", [zero, b.scalar_like(0, I32), y])
        else:
            y = b.node(onnx_op, [a, c])
        b.result(op, 0, b.fuse(y, code, b.operand(op.outputs[0])))
    return emit


for _t, _onnx in [(O.ADD, "Add"), (O.SUB, "Sub"), (O.MUL, "Mul"), (O.DIV, "Div")]:
    op(_t, NUMERIC, QUANT8)(_binary_fused(_onnx))


def _binary(onnx_op: str, negate: bool = False):
    def emit(b, op):
        y = b.node(onnx_op, [b.input(op, 0), b.input(op, 1)])
        b.result(op, 0, b.node("Not", [y]) if negate else y)
    return emit


for _t, _onnx, _types, _neg in [
        (O.MAXIMUM, "Max", NUMERIC, False), (O.MINIMUM, "Min", NUMERIC, False),
        (O.POW, "Pow", FLOATS, False),
        (O.EQUAL, "Equal", NUMERIC | {BOOL8}, False), (O.NOT_EQUAL, "Equal", NUMERIC | {BOOL8}, True),
        (O.GREATER, "Greater", NUMERIC, False), (O.GREATER_EQUAL, "GreaterOrEqual", NUMERIC, False),
        (O.LESS, "Less", NUMERIC, False), (O.LESS_EQUAL, "LessOrEqual", NUMERIC, False),
        (O.LOGICAL_AND, "And", {BOOL8}, False), (O.LOGICAL_OR, "Or", {BOOL8}, False)]:
    op(_t, _types, QUANT8)(_binary(_onnx, _neg))


@op(O.SELECT, NUMERIC | {BOOL8}, QUANT8)
def _select(b, op):
    b.result(op, 0, b.node("Where", [b.input(op, 0), b.input(op, 1), b.input(op, 2)]))


@op(O.CAST, NUMERIC | {QA8})
def _cast(b, op):
    src, dst = b.type_of(op, 0), b.operand(op.outputs[0]).type
    if dst not in NUMERIC | {QA8}:
        raise Unsupported(f"CAST to {dst.name}")
    x = b.input(op, 0)
    if dst == QA8 and src in FLOATS:  # NNAPI: clamp to [0, 255], then truncate
        t = src
        x = b.node("Clip", [x, b.scalar_like(0, t), b.scalar_like(255, t)])
    elif dst == QA8 and src == I32:
        x = b.node("Clip", [x, b.scalar_like(0, I32), b.scalar_like(255, I32)])
    b.result(op, 0, b.cast(x, dst))


@op(O.SOFTMAX, FLOATS, QUANT8)
def _softmax(b, op):
    beta = float(b.scalar(op, 1))
    axis = int(b.scalar(op, 2, -1))
    x = b.input(op, 0)
    if beta != 1.0:
        x = b.node("Mul", [x, b.scalar_like(beta, b.type_of(op, 0))])
    b.result(op, 0, b.node("Softmax", [x], axis=axis))


@op(O.LOG_SOFTMAX, FLOATS, QUANT8)
def _log_softmax(b, op):
    beta = float(b.scalar(op, 1))
    axis = int(b.scalar(op, 2))
    x = b.node("Mul", [b.input(op, 0), b.scalar_like(beta, b.type_of(op, 0))])
    b.result(op, 0, b.node("LogSoftmax", [x], axis=axis))
