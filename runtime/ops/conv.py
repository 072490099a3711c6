"""Convolutions: CONV_2D and DEPTHWISE_CONV_2D (NHWC; FL1 signatures and their FL4
quant8-signed twins).

Both take an input [batches, height, width, depth_in], a 4-D filter, a 1-D bias, the
padding (explicit: left, right, top, bottom; implicit: a PaddingCode) and strides (width,
height), DEPTHWISE_CONV_2D a depth multiplier, and a FuseCode; the output is
[batches, out_height, out_width, depth_out]. Types: TENSOR_FLOAT32 (float32 bias) or
TENSOR_QUANT8_ASYMM (FL1) / TENSOR_QUANT8_ASYMM_SIGNED (FL4) for input, filter and output
(TENSOR_INT32 bias of scale input_scale * filter_scale, zeroPoint 0). Not declared: the
NCHW flag, dilation, TENSOR_FLOAT16 and per-channel filters (FL3; per-channel with a
signed input, FL4).

Semantics: NNAPI ``types.spec`` (CONV_2D = 3, DEPTHWISE_CONV_2D = 4; FL1) and the AOSP CPU
``prepare`` of ``Conv2D.cpp`` / ``DepthwiseConv2D.cpp`` for the shape rules. Quantized
results are computed from dequantized values in float64 and requantized (round half away
from zero, saturate). A TENSOR_QUANT8_ASYMM model breaking the FL1-2 rule
``output_scale > input_scale * filter_scale`` is not invalid: as in AOSP, it needs feature
level 3 (``validate`` records that; see :func:`.common.meets_fl1_output_scale`). The rule
never applies to TENSOR_QUANT8_ASYMM_SIGNED, which is feature level 4.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (Window2D, apply_activation, bias_to_float, check_fuse_code,
                     check_quant_bias, from_float, meets_fl1_output_scale, read_window,
                     sliding_windows, to_float,
                     window_args)

T = OperandType
F32, Q8, I32 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32
Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED


#: Work bound of the reference kernels (multiply-adds per operation): a hostile but valid
#: model (huge filter and padding) fails with GENERAL_FAILURE instead of running for hours.
MAX_MACS = 1 << 28
#: Largest window copy (elements) one step of the kernel makes; bigger convolutions are
#: computed in chunks of output positions.
MAX_PATCH_ELEMENTS = 1 << 22


def _in_chunks(compute, patches: np.ndarray, depth_out: int) -> np.ndarray:
    """``compute(patches)`` [n, oh, ow, depth_out], in chunks of rows (then of single
    positions) whenever the window copy would exceed :data:`MAX_PATCH_ELEMENTS`."""
    n, oh, ow = patches.shape[:3]
    cell = int(np.prod(patches.shape[3:]))
    if n * oh * ow * cell <= MAX_PATCH_ELEMENTS:
        return compute(patches)
    out = np.empty((n, oh, ow, depth_out))
    rows = MAX_PATCH_ELEMENTS // max(n * ow * cell, 1)
    if rows >= 1:
        for i in range(0, oh, rows):
            out[:, i:i + rows] = compute(patches[:, i:i + rows])
        return out
    cols = max(MAX_PATCH_ELEMENTS // cell, 1)
    for b in range(n):
        for i in range(oh):
            for j in range(0, ow, cols):
                out[b:b + 1, i:i + 1, j:j + cols] = compute(patches[b:b + 1, i:i + 1, j:j + cols])
    return out


def _signatures(depthwise: bool):
    """FL1 signatures: float32 and quant8 (int32 bias), and the FL4 quant8-signed twin
    (int32 bias), each with explicit padding (10 inputs; DEPTHWISE_CONV_2D 11) and implicit
    padding (7; DEPTHWISE_CONV_2D 8)."""
    sigs = []
    for level, t, bias_t in ((1, F32, F32), (1, Q8, I32), (4, Q8S, I32)):
        for explicit in (True, False):
            inputs = [tensor("input", t, (4,)), tensor("filter", t, (4,)),
                      tensor("bias", bias_t, (1,)), *window_args(explicit)]
            if depthwise:
                inputs.append(scalar("depth_multiplier", T.INT32))
            inputs.append(scalar("activation", T.INT32))
            sigs.append(sig(level, inputs, [tensor("output", t, (4,))]))
    return tuple(sigs)


def _validate(ctx: OpContext) -> None:
    """Model-time rule: a quant8 (FL1) or quant8-signed (FL4) convolution's int32 bias has
    scale input_scale * filter_scale and zeroPoint 0. Raises OperationError. A quant8 output
    scale <= input_scale * filter_scale makes the use feature level 3."""
    check_quant_bias(*ctx.inputs[:3])
    if not meets_fl1_output_scale(ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]):
        ctx.require_feature_level(3, "quant8 output scale <= input scale * filter scale")


def _params(ctx: OpContext, depthwise: bool) -> tuple[Window2D, int, int, int]:
    """Check shapes and scalars; returns (window, depth_multiplier, fuse code, depth_out).

    Rules (AOSP CPU prepare, FL1): input and filter rank 4, bias rank 1; height, width,
    depth_in and depth_out > 0. CONV_2D: filter [depth_out, fh, fw, depth_in].
    DEPTHWISE_CONV_2D: filter [1, fh, fw, depth_out], depth_multiplier > 0 and
    depth_in * depth_multiplier == depth_out. bias [depth_out]. Window rules:
    :func:`.common.read_window`. Raises OperationError.
    """
    inp, flt, bias = ctx.inputs[:3]
    check(inp.rank == 4 and flt.rank == 4 and bias.rank == 1,
          f"input {inp.dims} and filter {flt.dims} must be 4-D, bias {bias.dims} 1-D")
    _, h, w, depth_in = inp.dims
    explicit = len(ctx.inputs) == (11 if depthwise else 10)
    nxt = 9 if explicit else 6  # first input after the padding and strides
    multiplier = 1
    if depthwise:
        multiplier, depth_out = ctx.scalar(nxt), flt.dims[3]
        check(flt.dims[0] == 1, f"filter {flt.dims} must have 1 as its first dimension")
        check(multiplier > 0, f"depth_multiplier {multiplier} must be > 0")
        check(depth_in * multiplier == depth_out,
              f"depth_in {depth_in} * depth_multiplier {multiplier} must equal the filter's "
              f"depth_out {depth_out}")
    else:
        depth_out = flt.dims[0]
        check(flt.dims[3] == depth_in,
              f"filter depth_in {flt.dims[3]} must equal the input depth {depth_in}")
    check(bias.dims[0] == depth_out, f"bias size {bias.dims[0]} must equal depth_out {depth_out}")
    check(h > 0 and w > 0 and depth_in > 0 and depth_out > 0,
          f"input {inp.dims} and depth_out {depth_out} must be non-empty (only batches may be 0)")
    activation = ctx.scalar(nxt + depthwise)
    check_fuse_code(activation)
    win = read_window(ctx, 3, explicit, (h, w), (flt.dims[1], flt.dims[2]))
    return win, multiplier, activation, depth_out


def _kernel(depthwise: bool):
    def prepare(ctx: OpContext):
        """Output [batches, out_height, out_width, depth_out]."""
        win, _, _, depth_out = _params(ctx, depthwise)
        return [(ctx.inputs[0].dims[0], *win.out_hw, depth_out)]

    def execute(ctx: OpContext):
        """Sum over the window (and, for CONV_2D, depth_in) of input * filter, plus bias,
        then the fused activation; float64 from real values, stored in the output type.
        Raises OperationError past the reference's work bound (:data:`MAX_MACS`)."""
        win, multiplier, activation, depth_out = _params(ctx, depthwise)
        inp, flt, bias = ctx.inputs[:3]
        (fh, fw), (oh, ow) = win.filter_hw, win.out_hw
        macs = inp.dims[0] * oh * ow * depth_out * fh * fw * (1 if depthwise else inp.dims[3])
        check(macs <= MAX_MACS, f"needs {macs} multiply-adds; the reference kernel computes at most "
                                f"{MAX_MACS} per operation")
        patches = sliding_windows(to_float(inp), win)  # [n, oh, ow, fh, fw, depth_in]
        f = to_float(flt)
        if depthwise:  # output channel c * multiplier + m reads input channel c
            f = f.reshape(fh, fw, inp.dims[3], multiplier)

        def compute(p: np.ndarray) -> np.ndarray:
            if depthwise:
                r = np.einsum("nijhwc,hwcm->nijcm", p, f)
                return r.reshape(*r.shape[:3], depth_out)
            return np.tensordot(p, f, axes=([3, 4, 5], [1, 2, 3]))

        real = _in_chunks(compute, patches, depth_out)
        real = apply_activation(real + bias_to_float(bias), activation)
        return [from_float(ctx.outputs[0], real)]

    return prepare, execute


for _op, _depthwise, _summary in (
        (OperationType.CONV_2D, False,
         "2-D convolution (NHWC) with bias and fused activation"),
        (OperationType.DEPTHWISE_CONV_2D, True,
         "2-D depthwise convolution (NHWC) with depth multiplier, bias and fused activation")):
    _prepare, _execute = _kernel(_depthwise)
    register(OperationDef(_op, _signatures(_depthwise), _prepare, _execute,
                          validate=_validate, summary=_summary))
