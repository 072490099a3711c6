"""FULLY_CONNECTED (9; FL1, FL3 float16, and the FL4 quant8-signed twin):
``output = activation(input * weights' + bias)``.

Inputs: 0 input of rank 2-4, flattened to [batch_size, input_size]; 1 weights
[num_units, input_size]; 2 bias [num_units]; 3 a FuseCode. Output [batch_size, num_units],
batch_size = elements(input) / input_size; only batch_size may be 0 (a zero-sized input,
e.g. from BOX_WITH_NMS_LIMIT / ROI_ALIGN, gives an empty [0, num_units] output).
Types: TENSOR_FLOAT32 (float32 bias; FL1), TENSOR_FLOAT16 (float16 bias; FL3),
TENSOR_QUANT8_ASYMM (FL1) or TENSOR_QUANT8_ASYMM_SIGNED (FL4) for input, weights and output
(TENSOR_INT32 bias of scale input_scale * weights_scale, zeroPoint 0). FL3 added only
TENSOR_FLOAT16 and the lifted output-scale rule below (AOSP ``fully_connected::validate``).

Errors (OperationError): input rank outside 2-4, weights not 2-D, bias not 1-D; num_units
or input_size 0; input_size not dividing the input's element count; bias size !=
num_units; a FuseCode outside 0-3; past the work bound (``conv.MAX_MACS``
multiply-adds); at model time a quantized bias whose scale is not
input_scale * weights_scale or whose zeroPoint is not 0.

Semantics: NNAPI ``types.spec`` (FULLY_CONNECTED = 9, FL1; FL3 float16) and AOSP
``fully_connected::validateShapes`` / ``validate``
(``common/types/operations/src/FullyConnected.cpp``). Results are computed in float64 from
real (dequantized) values and stored once (``common.from_float``: requantized with round
half away from zero and saturation; TENSOR_FLOAT16 rounded once, the policy of ``common``).
A TENSOR_QUANT8_ASYMM model breaking the FL1-2 rule
``output_scale > input_scale * weights_scale`` needs feature level 3, as in AOSP
(``validate`` records that; see :func:`.common.meets_fl1_output_scale`); the rule never
applies to TENSOR_QUANT8_ASYMM_SIGNED (FL4).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .error_inputs import PREPARE, chain, changed, grown, quant_bias
from .window import (GEN_MACS, GEN_MIN_OUTPUT, GEN_OUTPUT_ELEMENTS, check_work, draft_bias,
                     draft_count, draft_quantization, draft_rms, draft_target, draft_weights)
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
    check(2 <= inp.rank <= 4, f"input 0 (input) {list(inp.dims)} must have rank 2 to 4")
    check(weights.rank == 2, f"input 1 (weights) {list(weights.dims)} must be 2-D")
    check(bias.rank == 1, f"input 2 (bias) {list(bias.dims)} must be 1-D")
    num_units, input_size = weights.dims
    check(num_units > 0 and input_size > 0,
          f"input 1 (weights) {list(weights.dims)}: num_units and input_size must be > 0")
    elements = 1
    for d in inp.dims:
        elements *= d
    check(elements % input_size == 0,
          f"input 0 (input) {list(inp.dims)} has {elements} elements, not a multiple of "
          f"input_size {input_size}")
    check(bias.dims[0] == num_units,
          f"input 2 (bias) size {bias.dims[0]} must equal num_units {num_units}")
    check_fuse_code(ctx.scalar(3))
    return [(elements // input_size, num_units)]


def execute(ctx: OpContext):
    """Real-valued (float64) matrix product plus bias, fused activation, stored in the
    output type. Raises OperationError past the work bound (``conv.MAX_MACS``)."""
    (shape,) = prepare(ctx)
    inp, weights, bias = ctx.inputs[:3]
    check_work(shape[0] * shape[1] * weights.dims[1])
    x = to_float(inp).reshape(shape[0], weights.dims[1])
    real = x @ to_float(weights).T + bias_to_float(bias)
    return [from_float(ctx.outputs[0], apply_activation(real, ctx.scalar(3)))]


def _generate(d) -> None:
    """Weights [num_units, input_size], input_size dividing input 0's element count (AOSP
    ``validateShapes``); bias [num_units] of scale input * weights scale, zeroPoint 0
    (NNAPI); weights scaled to the activation's clamp (``conv.draft_weights``)."""
    dims = d.slots[0].dims
    elements = int(np.prod(dims))
    r = d.rng.random()
    if r < 0.4:
        input_size = dims[-1]
    elif r < 0.7:
        input_size = elements // dims[0]
    else:
        input_size = d.choice([k for k in range(1, elements + 1) if elements % k == 0])
    batch = elements // input_size
    cap = max(1, min(GEN_OUTPUT_ELEMENTS // batch, GEN_MACS // (batch * input_size)))
    want = -(-GEN_MIN_OUTPUT // batch)
    units = draft_count(d, cap, max(64, want), want)
    d.tensor(1, [units, input_size])
    d.tensor(2, [units])
    activation = int(d.slot("activation").value)
    spread, centre = draft_target(d, activation)
    draft_quantization(d, activation, spread, centre, batch * units)
    scale = draft_weights(d, 1, input_size, draft_rms(d, 0), spread)
    draft_bias(d, 2, spread, centre, d.slots[0].scale, scale)


def _input_size_not_dividing(inputs, outputs):
    """Weights [num_units, elements + 1]: input_size cannot divide the input's elements."""
    elements = int(np.prod(inputs[0].dims))
    if elements:
        yield changed(inputs, outputs, "input 1", "not a multiple of input_size",
                      "input_size must divide the input's element count (AOSP FullyConnected "
                      "validateShapes)", PREPARE, dims=(inputs[1].dims[0], elements + 1))


#: Invalid uses (NNAPI types.spec FULLY_CONNECTED): at model validation a quantized bias off
#: input_scale * weights_scale or with zeroPoint 1; at prepare (AOSP ``validateShapes``) a
#: bias longer than num_units and a weights input_size not dividing the input's elements.
_ERROR_INPUTS = chain(
    quant_bias("NNAPI types.spec FULLY_CONNECTED"),
    grown(2, 0, "must equal num_units", "bias length must be num_units (NNAPI types.spec FULLY_CONNECTED)"),
    _input_size_not_dividing)


register(OperationDef(OperationType.FULLY_CONNECTED, SIGNATURES, prepare, execute,
                      validate=validate, generate=_generate, error_inputs=_ERROR_INPUTS,
                      summary="activation(input * weights' + bias), input flattened to 2-D",
                      allows_zero_sized_input=True, aosp_source="FullyConnectedExecution.cpp",
                      weight_slots=("weights",), error_budget=budgets.fully_connected()))
