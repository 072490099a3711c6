"""Element-wise operations: ADD, MUL, SUB, DIV (with broadcasting and fused activation),
FLOOR, DEQUANTIZE and the activations RELU, RELU1, RELU6, LOGISTIC, TANH.

Semantics: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` for each operation.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import apply_activation, check_fuse_code, from_float, to_float

T = OperandType
F32, Q8 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy-style broadcast of two shapes (NNAPI binary ops, FL1+); OperationError if
    incompatible."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        check(x == y or x == 1 or y == 1, f"dimensions {x} and {y} cannot be broadcast")
        out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(out)


def _binary_prepare(ctx: OpContext):
    check_fuse_code(ctx.scalar(2))
    return [_broadcast_shape(ctx.inputs[0].dims, ctx.inputs[1].dims)]


def _binary(fn):
    def execute(ctx: OpContext):
        a, b = to_float(ctx.inputs[0]), to_float(ctx.inputs[1])
        out = ctx.outputs[0]
        if out.type == F32:  # compute at the operand's precision
            a, b = a.astype(np.float32), b.astype(np.float32)
        real = fn(a, b)
        return [from_float(out, apply_activation(real, ctx.scalar(2)))]
    return execute


def _binary_signatures(types_by_level):
    return tuple(
        sig(level, [tensor("input0", t), tensor("input1", t), scalar("activation", T.INT32)],
            [tensor("output", t)])
        for level, types in types_by_level for t in types)


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b)


for _op, _fn, _levels in (
        (OperationType.ADD, np.add, [(1, (F32, Q8))]),
        (OperationType.MUL, np.multiply, [(1, (F32, Q8))]),
        (OperationType.SUB, np.subtract, [(2, (F32,))]),
        (OperationType.DIV, _div, [(2, (F32,))])):
    register(OperationDef(_op, _binary_signatures(_levels), _binary_prepare, _binary(_fn),
                          summary=f"{_op.name}(input0, input1) with broadcasting and fused activation"))


def _same_shape(ctx: OpContext):
    return [tuple(ctx.inputs[0].dims)]


def _unary(fn, signatures, summary, validate=None):
    def execute(ctx: OpContext):
        x = to_float(ctx.inputs[0])
        if ctx.inputs[0].type == F32:
            x = x.astype(np.float32)
        return [from_float(ctx.outputs[0], fn(x))]
    return signatures, _same_shape, execute, validate, summary


def _unary_sigs(level, types, ranks=(1, 2, 3, 4), out_type=None):
    return tuple(sig(level, [tensor("input", t, ranks)], [tensor("output", out_type or t, ranks)])
                 for t in types)


def _logistic_validate(ctx: OpContext):
    out = ctx.outputs[0]
    if out.type == Q8:
        check(np.float32(out.scale) == np.float32(1.0 / 256) and out.zero_point == 0,
              "LOGISTIC TENSOR_QUANT8_ASYMM output must have scale 1/256 and zeroPoint 0")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


for _op, _fn, _sigs, _summary, _validate in (
        (OperationType.RELU, lambda x: np.maximum(x, 0), _unary_sigs(1, (F32, Q8)), "max(0, x)", None),
        (OperationType.RELU1, lambda x: np.clip(x, -1, 1), _unary_sigs(1, (F32, Q8)), "clamp(x, -1, 1)", None),
        (OperationType.RELU6, lambda x: np.clip(x, 0, 6), _unary_sigs(1, (F32, Q8)), "clamp(x, 0, 6)", None),
        (OperationType.LOGISTIC, _sigmoid, _unary_sigs(1, (F32, Q8)), "1 / (1 + exp(-x))", _logistic_validate),
        (OperationType.TANH, np.tanh, _unary_sigs(1, (F32,)), "tanh(x)", None),
        (OperationType.FLOOR, np.floor, _unary_sigs(1, (F32,)), "floor(x)", None),
        (OperationType.DEQUANTIZE, lambda x: x, _unary_sigs(1, (Q8,), out_type=F32),
         "(q - zeroPoint) * scale", None)):
    _s, _p, _e, _v, _d = _unary(_fn, _sigs, _summary, _validate)
    register(OperationDef(_op, _s, _p, _e, validate=_v, summary=_d))
