"""FULLY_CONNECTED (FL1, and the FL4 quant8-signed twin):
``output = activation(input * weights' + bias)``.

Inputs: input of rank 2-4, flattened to [batch_size, input_size]; weights
[num_units, input_size]; bias [num_units]; a FuseCode. Output [batch_size, num_units].
Types: TENSOR_FLOAT32 (float32 bias), TENSOR_QUANT8_ASYMM (FL1) or
TENSOR_QUANT8_ASYMM_SIGNED (FL4) for input, weights and output (TENSOR_INT32 bias of scale
input_scale * weights_scale, zeroPoint 0). Not declared: TENSOR_FLOAT16 (FL3).

Semantics: NNAPI ``types.spec`` (FULLY_CONNECTED = 9, FL1) and AOSP
``fully_connected::validateShapes``. Quantized results are computed from dequantized values
in float64 and requantized. A TENSOR_QUANT8_ASYMM model breaking the FL1-2 rule
``output_scale > input_scale * weights_scale`` needs feature level 3, as in AOSP
(``validate`` records that; see :func:`.common.meets_fl1_output_scale`); the rule never
applies to TENSOR_QUANT8_ASYMM_SIGNED (FL4).
"""
from __future__ import annotations

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (apply_activation, bias_to_float, check_fuse_code, check_quant_bias,
                     meets_fl1_output_scale,
                     from_float, to_float)

T = OperandType
F32, Q8, I32 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32
Q8S, F16 = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_FLOAT16

SIGNATURES = tuple(
    sig(level, [tensor("input", t, (2, 3, 4)), tensor("weights", t, (2,)),
                tensor("bias", bias_t, (1,)), scalar("activation", T.INT32)],
        [tensor("output", t, (2,))])
    for level, t, bias_t in ((1, F32, F32), (1, Q8, I32), (3, F16, F16), (4, Q8S, I32)))


def validate(ctx: OpContext) -> None:
    """Model-time rule: a quant8 (FL1) or quant8-signed (FL4) FULLY_CONNECTED's int32 bias
    has scale input_scale * weights_scale and zeroPoint 0. Raises OperationError. A quant8
    output scale <= input_scale * weights_scale makes the use feature level 3."""
    check_quant_bias(*ctx.inputs[:3])
    if not meets_fl1_output_scale(ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]):
        ctx.require_feature_level(3, "quant8 output scale <= input scale * weights scale")


def prepare(ctx: OpContext):
    """Output [batch_size, num_units], batch_size = elements(input) / input_size.

    Raises OperationError (AOSP ``validateShapes``, FL1): input rank 2-4, weights rank 2,
    bias rank 1; num_units and input_size > 0; input_size divides the input's element
    count; bias size == num_units; the fuse code is a FuseCode.
    """
    inp, weights, bias = ctx.inputs[:3]
    check(2 <= inp.rank <= 4, f"input {inp.dims} must have rank 2 to 4")
    check(weights.rank == 2 and bias.rank == 1,
          f"weights {weights.dims} must be 2-D and bias {bias.dims} 1-D")
    num_units, input_size = weights.dims
    check(num_units > 0 and input_size > 0,
          f"weights {weights.dims}: num_units and input_size must be > 0")
    elements = 1
    for d in inp.dims:
        elements *= d
    check(elements % input_size == 0,
          f"input {inp.dims} has {elements} elements, not a multiple of input_size {input_size}")
    check(bias.dims[0] == num_units, f"bias size {bias.dims[0]} must equal num_units {num_units}")
    check_fuse_code(ctx.scalar(3))
    return [(elements // input_size, num_units)]


def execute(ctx: OpContext):
    """Real-valued (float64) matrix product plus bias, fused activation, stored in the
    output type."""
    (shape,) = prepare(ctx)
    inp, weights, bias = ctx.inputs[:3]
    x = to_float(inp).reshape(shape[0], weights.dims[1])
    real = x @ to_float(weights).T + bias_to_float(bias)
    return [from_float(ctx.outputs[0], apply_activation(real, ctx.scalar(3)))]


register(OperationDef(OperationType.FULLY_CONNECTED, SIGNATURES, prepare, execute,
                      validate=validate,
                      summary="activation(input * weights' + bias), input flattened to 2-D"))
