"""GROUPED_CONV_2D (NNAPI code 55, FL3) and TRANSPOSE_CONV_2D (49, FL3): the
TENSOR_QUANT8_ASYMM_SIGNED rows (filters of the input's type and per-channel), the
quant8 per-channel explicit TRANSPOSE_CONV_2D row, quantization regimes (zero point 0 /
mid / extreme, scale < 1 / > 1, per-channel scales > 1), VALID padding and batch > 1 the
AOSP corpus leaves empty (``nncts coverage``).

Definitions (NNAPI ``types.spec``), NHWC (NCHW with the layout flag, the last input).
GROUPED_CONV_2D: input [n, h, w, depth_in], filter [depth_out, fh, fw, depth_in / groups],
bias [depth_out]; explicit inputs 3-6 padding left, right, top, bottom, 7-8 strides, 9
num_groups, 10 FuseCode; implicit 3 PaddingCode, 4-5 strides, 6 num_groups, 7 FuseCode.
Output channels [g * depth_out / groups, (g + 1) * depth_out / groups) are CONV_2D of
input channels [g * depth_in / groups, ...) with their filters. TRANSPOSE_CONV_2D: filter
[depth_out, fh, fw, depth_in]; each input element (y, x) adds input * filter to the output
window starting at (y * stride_h, x * stride_w) of the full [(h - 1) * stride_h + fh,
(w - 1) * stride_w + fw] output, which is cropped by the paddings (explicit: inputs 3-6,
strides 7-8, FuseCode 9; implicit: input 3 the output shape, 4 PaddingCode (SAME: output
in * stride, total padding max((in - 1) * stride + f - out, 0), half before; VALID: none),
5-6 strides, 7 FuseCode). Then the bias (TENSOR_INT32, scale input_scale * filter_scale)
and the FuseCode clamp.

Golden: :func:`grouped_formula` (per group, :func:`.conv.conv_formula`) and
:func:`transpose_formula` (numpy scatter of every filter tap), written from the
definitions above, on the dequantized inputs.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .conv import _CLAMP, NONE, SAME, VALID, conv_formula, implicit_padding
from .typed import bias, case, pc, values_for, x

FAMILY = "grouped_transpose_conv"
Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
GROUPED_GOLDEN = "numpy formula: per-group convolution (cts/specs/grouped_transpose_conv.py grouped_formula)"
TRANSPOSE_GOLDEN = ("numpy formula: scatter of filter taps, cropped "
                    "(cts/specs/grouped_transpose_conv.py transpose_formula)")


def grouped_formula(v, w, b, pads, strides, groups, act):
    dg, og = w.shape[3], w.shape[0] // groups
    return np.concatenate([conv_formula(v[..., g * dg:(g + 1) * dg], w[g * og:(g + 1) * og], b[g * og:(g + 1) * og],
                                        pads, strides, (1, 1), act) for g in range(groups)], axis=-1)


def transpose_formula(v, w, b, pads, strides, act):
    left, right, top, bottom = pads
    (sw, sh), (n, h, wd, _), (o, fh, fw, _) = strides, v.shape, w.shape
    full = np.zeros((n, (h - 1) * sh + fh, (wd - 1) * sw + fw, o))
    for i in range(fh):
        for j in range(fw):
            taps = np.einsum("nhwc,oc->nhwo", v, w[:, i, j, :])
            full[:, i:i + (h - 1) * sh + 1:sh, j:j + (wd - 1) * sw + 1:sw, :] += taps
    out = full[:, top:full.shape[1] - bottom, left:full.shape[2] - right, :]
    return np.clip(out + b, *_CLAMP[act])


def _filter(w, per_channel, wq):
    return pc(w, 0) if per_channel else x(w, wq, "const")


def _grouped(name, t, shape, groups, depth_out, padding, strides, act, q, wq, out_q, per_channel, nchw, seed):
    rng = np.random.default_rng(seed)
    v = values_for(rng, shape, t, q)
    w = values_for(rng, (depth_out, 2, 3, shape[3] // groups), t, wq)
    b = np.round(rng.uniform(-8, 8, depth_out)) * 0.25
    if isinstance(padding, int):
        pt, pb = implicit_padding(shape[1], strides[1], 2, 1, padding)
        pl, pr = implicit_padding(shape[2], strides[0], 3, 1, padding)
        pads, head = (pl, pr, pt, pb), [padding]
    else:
        pads, head = padding, list(padding)
    ints = [const(T.INT32, i) for i in (*head, *strides, groups, act)]
    return case(name, FAMILY, Op.GROUPED_CONV_2D, t, [x(v), _filter(w, per_channel, wq), bias(b), *ints,
                                                      const(T.BOOL, nchw)],
                lambda v, w, b, *_: grouped_formula(v, w, b, pads, strides, groups, act), GROUPED_GOLDEN, 3,
                q=q, out_q=out_q, nchw=nchw)


def _transpose(name, t, shape, depth_out, padding, strides, act, q, wq, out_q, per_channel, nchw, seed, w_mul=1.0):
    rng = np.random.default_rng(seed)
    fh, fw = 3, 2
    v = values_for(rng, shape, t, q)
    w = values_for(rng, (depth_out, fh, fw, shape[3]), t, wq) * w_mul
    b = np.round(rng.uniform(-8, 8, depth_out)) * 0.25
    if isinstance(padding, int):
        out_h = shape[1] * strides[1] if padding == SAME else (shape[1] - 1) * strides[1] + fh
        out_w = shape[2] * strides[0] if padding == SAME else (shape[2] - 1) * strides[0] + fw
        th, tw = max((shape[1] - 1) * strides[1] + fh - out_h, 0), max((shape[2] - 1) * strides[0] + fw - out_w, 0)
        pads = (tw // 2, tw - tw // 2, th // 2, th - th // 2)
        head = [const(T.TENSOR_INT32, np.array([shape[0], out_h, out_w, depth_out], np.int32)), const(T.INT32, padding)]
    else:
        pads, head = padding, [const(T.INT32, p) for p in padding]
    ints = [const(T.INT32, i) for i in (*strides, act)]
    return case(name, FAMILY, Op.TRANSPOSE_CONV_2D, t, [x(v), _filter(w, per_channel, wq), bias(b), *head, *ints,
                                                        const(T.BOOL, nchw)],
                lambda v, w, b, *_: transpose_formula(v, w, b, pads, strides, act), TRANSPOSE_GOLDEN, 3,
                q=q, out_q=out_q, nchw=nchw)


def models():
    # FuseCode NONE: the corpus covers the others, and a clamp of these wide quantized ranges
    # would flatten the outputs to the clamp bounds
    return [
        _grouped("grouped_conv2d_quant8_signed_explicit_zp0_batch2", Q8S, (2, 3, 4, 4), 2, 4, (1, 1, 0, 1), (1, 1),
                 NONE, (0.5, 0), (0.25, 3), "auto", False, False, 1),
        _grouped("grouped_conv2d_quant8_signed_implicit_valid_nchw_zp_mid", Q8S, (1, 4, 5, 6), 3, 6, VALID, (1, 2),
                 NONE, (2.0, -20), (0.5, -7), "auto", False, True, 2),
        _grouped("grouped_conv2d_quant8_signed_per_channel_explicit_zp_min", Q8S, (2, 4, 3, 4), 2, 2, (0, 1, 1, 0),
                 (2, 1), NONE, (0.25, -128), None, "auto", True, False, 3),
        _grouped("grouped_conv2d_quant8_signed_per_channel_implicit_same", Q8S, (1, 3, 5, 6), 2, 4, SAME, (2, 2),
                 NONE, (0.5, 0), None, "auto", True, False, 4),
        _grouped("grouped_conv2d_quant8_implicit_valid_zp_max", Q8, (2, 4, 4, 4), 2, 4, VALID, (1, 1),
                 NONE, (0.25, 255), (0.5, 100), "auto", False, False, 5),
        # per-channel filter scales above 1: |weights| up to 200
        _transpose("transpose_conv2d_quant8_per_channel_explicit_zp_max_batch2", Q8, (2, 2, 3, 2), 3, (1, 0, 0, 1),
                   (2, 1), NONE, (0.25, 255), None, "auto", True, False, 6, w_mul=50.0),
        _transpose("transpose_conv2d_quant8_signed_explicit_zp0_nchw", Q8S, (1, 3, 2, 2), 2, (0, 1, 1, 1), (1, 2),
                   NONE, (0.5, 0), (0.25, 3), "auto", False, True, 7),
        _transpose("transpose_conv2d_quant8_signed_implicit_same_zp_mid", Q8S, (2, 2, 3, 1), 2, SAME, (2, 2),
                   NONE, (2.0, -20), (0.5, -7), "auto", False, False, 8),
        _transpose("transpose_conv2d_quant8_signed_per_channel_explicit_zp_min", Q8S, (1, 2, 2, 3), 2, (1, 1, 0, 0),
                   (1, 1), NONE, (0.25, -128), None, "auto", True, False, 9),
        _transpose("transpose_conv2d_quant8_signed_per_channel_implicit_valid_batch2", Q8S, (2, 3, 2, 2), 3, VALID,
                   (1, 2), NONE, (0.5, 0), None, "auto", True, False, 10),
    ]
