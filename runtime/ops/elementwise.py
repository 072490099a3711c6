"""Element-wise operations: ADD, MUL, SUB, DIV (with broadcasting and fused activation),
FLOOR, DEQUANTIZE and the activations RELU, RELU1, RELU6, LOGISTIC, TANH.

Declared signatures:

* FL1: ADD, MUL (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM); FLOOR, TANH (TENSOR_FLOAT32);
  RELU, RELU1, RELU6, LOGISTIC (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM);
  DEQUANTIZE (TENSOR_QUANT8_ASYMM -> TENSOR_FLOAT32).
* FL2: SUB, DIV (TENSOR_FLOAT32).
* FL4: the TENSOR_QUANT8_ASYMM_SIGNED twin of every FL1 quant8 signature above (ADD, MUL,
  RELU, RELU1, RELU6, LOGISTIC; DEQUANTIZE TENSOR_QUANT8_ASYMM_SIGNED -> TENSOR_FLOAT32).

Not declared: TENSOR_FLOAT16, quant8 SUB and TANH, DEQUANTIZE of the symmetric types (FL3),
TENSOR_INT32 ADD/MUL/SUB/DIV and quant8-signed SUB/TANH (FL4).

All tensors have rank 1 to 4. Quantization rules of the spec, for TENSOR_QUANT8_ASYMM and
TENSOR_QUANT8_ASYMM_SIGNED alike: MUL's output scale must be greater than the product of
the input scales; RELU/RELU1/RELU6 output scale and zeroPoint equal the input's;
LOGISTIC's output has scale 1/256 and zeroPoint 0 (TENSOR_QUANT8_ASYMM) or -128
(TENSOR_QUANT8_ASYMM_SIGNED). ADD's quantized inputs and output may all have different
scales and zero points.

Semantics: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` (HAL 1.0/1.1 ``types.hal``) for
each operation, and the checks of the AOSP runtime
(``common/types/operations/src/{Broadcast,Activation,Dequantize}.cpp``).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import apply_activation, check_fuse_code, from_float, to_float

T = OperandType
F32, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
F16 = T.TENSOR_FLOAT16
QUANT8 = (Q8, Q8S)
MAX_RANK = 4

#: LOGISTIC's required output zeroPoint per quantized type (scale 1/256 for both).
LOGISTIC_OUTPUT_ZERO_POINT = {Q8: 0, Q8S: -128}


def _check_rank(ctx: OpContext, index: int) -> None:
    """Input ``index`` has rank <= 4 (all these operations, FL1+; the rank may have been
    unknown when the model was validated)."""
    rank = len(ctx.inputs[index].dims)
    check(rank <= MAX_RANK, f"{ctx.operation.name}: input {index} must have rank <= 4, got {rank}")


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy-style broadcast of two shapes (NNAPI binary ops, FL1+): trailing dimensions
    are aligned; two dimensions are compatible when equal or when one of them is 1, and the
    output takes the other one. OperationError if incompatible."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        check(x == y or x == 1 or y == 1,
              f"input 0 shape {tuple(a)} and input 1 shape {tuple(b)} cannot be broadcast "
              f"(dimensions {x} and {y}: compatible only when equal or one of them is 1)")
        out.append(y if x == 1 else x)
    return tuple(out)


def _binary_validate(ctx: OpContext):
    """Model-time rules of ADD/MUL/SUB/DIV: a constant activation is a FuseCode; for MUL
    with TENSOR_QUANT8_ASYMM (FL1) or TENSOR_QUANT8_ASYMM_SIGNED (FL4),
    output_scale > input1_scale * input2_scale (spec; the product is taken in binary32 as
    the AOSP runtime does)."""
    if ctx.has_value(2):
        check_fuse_code(ctx.scalar(2))
    out = ctx.outputs[0]
    if ctx.operation == OperationType.MUL and out.type in QUANT8:
        s1, s2 = np.float32(ctx.inputs[0].scale), np.float32(ctx.inputs[1].scale)
        check(np.float32(out.scale) > np.float32(s1 * s2),
              f"MUL: output 0 ({out.type.name}) scale must be greater than "
              f"input0 scale * input1 scale ({out.scale} <= {s1} * {s2})")


def _binary_prepare(ctx: OpContext):
    """Output shape of ADD/MUL/SUB/DIV: the broadcast of the two input shapes. Checks the
    ranks (<= 4) and that the activation is a FuseCode."""
    _check_rank(ctx, 0)
    _check_rank(ctx, 1)
    check_fuse_code(ctx.scalar(2))
    return [_broadcast_shape(ctx.inputs[0].dims, ctx.inputs[1].dims)]


def _binary(fn):
    """``execute`` of a binary operation computing ``fn(a, b)`` on real values (float32 for
    TENSOR_FLOAT32, float64 from the dequantized inputs for the quant8 types), then the
    fused activation, then the store into the output type (quantized with the output's own
    scale and zeroPoint)."""
    def execute(ctx: OpContext):
        a, b = to_float(ctx.inputs[0]), to_float(ctx.inputs[1])
        out = ctx.outputs[0]
        if out.type == F32:  # compute at the operand's precision
            a, b = a.astype(np.float32), b.astype(np.float32)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
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
        (OperationType.ADD, np.add, [(1, (F32, Q8)), (3, (F16,)), (4, (Q8S,))]),
        (OperationType.MUL, np.multiply, [(1, (F32, Q8)), (3, (F16,)), (4, (Q8S,))]),
        (OperationType.SUB, np.subtract, [(2, (F32,)), (3, (F16,))]),
        (OperationType.DIV, _div, [(2, (F32,)), (3, (F16,))])):
    register(OperationDef(_op, _binary_signatures(_levels), _binary_prepare, _binary(_fn),
                          validate=_binary_validate,
                          summary=f"{_op.name}(input0, input1) with broadcasting and fused activation"))


def _same_shape(ctx: OpContext):
    """Output shape of a unary operation: the input shape (rank <= 4)."""
    _check_rank(ctx, 0)
    return [tuple(ctx.inputs[0].dims)]


def _unary(fn, signatures, summary, validate=None):
    """Table-row parts of a unary operation computing ``fn(x)`` on real values (float32 for
    a TENSOR_FLOAT32 input, float64 from the dequantized input otherwise)."""
    def execute(ctx: OpContext):
        x = to_float(ctx.inputs[0])
        if ctx.inputs[0].type == F32:
            x = x.astype(np.float32)
        with np.errstate(over="ignore"):
            return [from_float(ctx.outputs[0], fn(x))]
    return signatures, _same_shape, execute, validate, summary


def _unary_sigs(level, types, ranks=(1, 2, 3, 4), out_type=None):
    return tuple(sig(level, [tensor("input", t, ranks)], [tensor("output", out_type or t, ranks)])
                 for t in types)


#: FL1 float32/quant8 signatures plus the FL4 quant8-signed twin (RELU*, LOGISTIC).
_Q_ACTIVATION_SIGS = _unary_sigs(1, (F32, Q8)) + _unary_sigs(4, (Q8S,))


def _same_quant_validate(ctx: OpContext):
    """RELU/RELU1/RELU6: a TENSOR_QUANT8_ASYMM (FL1) or TENSOR_QUANT8_ASYMM_SIGNED (FL4)
    output has the input's scale and zeroPoint."""
    inp, out = ctx.inputs[0], ctx.outputs[0]
    if out.type in QUANT8:
        check(np.float32(out.scale) == np.float32(inp.scale) and out.zero_point == inp.zero_point,
              f"{ctx.operation.name}: output 0 ({out.type.name}) must have the scale and "
              f"zeroPoint of input 0 ({inp.scale}, {inp.zero_point}), got "
              f"({out.scale}, {out.zero_point})")


def _logistic_validate(ctx: OpContext):
    """LOGISTIC: a TENSOR_QUANT8_ASYMM output (FL1) has scale 1/256 and zeroPoint 0, a
    TENSOR_QUANT8_ASYMM_SIGNED output (FL4) scale 1/256 and zeroPoint -128."""
    out = ctx.outputs[0]
    if out.type in QUANT8:
        zp = LOGISTIC_OUTPUT_ZERO_POINT[out.type]
        check(np.float32(out.scale) == np.float32(1.0 / 256) and out.zero_point == zp,
              f"LOGISTIC: output 0 ({out.type.name}) must have scale 1/256 and zeroPoint {zp}, "
              f"got scale {out.scale} and zeroPoint {out.zero_point}")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


for _op, _fn, _sigs, _summary, _validate in (
        (OperationType.RELU, lambda x: np.maximum(x, 0), _Q_ACTIVATION_SIGS, "max(0, x)",
         _same_quant_validate),
        (OperationType.RELU1, lambda x: np.clip(x, -1, 1), _Q_ACTIVATION_SIGS,
         "clamp(x, -1, 1)", _same_quant_validate),
        (OperationType.RELU6, lambda x: np.clip(x, 0, 6), _Q_ACTIVATION_SIGS,
         "clamp(x, 0, 6)", _same_quant_validate),
        (OperationType.LOGISTIC, _sigmoid, _Q_ACTIVATION_SIGS, "1 / (1 + exp(-x))",
         _logistic_validate),
        (OperationType.TANH, np.tanh, _unary_sigs(1, (F32,)), "tanh(x)", None),
        (OperationType.FLOOR, np.floor, _unary_sigs(1, (F32,)), "floor(x)", None),
        (OperationType.DEQUANTIZE, lambda x: x,
         _unary_sigs(1, (Q8,), out_type=F32) + _unary_sigs(4, (Q8S,), out_type=F32),
         "(q - zeroPoint) * scale", None)):
    _s, _p, _e, _v, _d = _unary(_fn, _sigs, _summary, _validate)
    register(OperationDef(_op, _s, _p, _e, validate=_v, summary=_d))
