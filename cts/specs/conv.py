"""CONV_2D (NNAPI code 3) and DEPTHWISE_CONV_2D (4), feature levels 1-4: what the AOSP corpus
leaves out. No corpus CONV_2D or DEPTHWISE_CONV_2D model uses a fused RELU1 or RELU6, so a
driver clamping RELU6 as RELU passes it; here every FuseCode (NONE, RELU, RELU1, RELU6) runs
on outputs whose pre-activation values lie below -1, in (-1, 1), in (1, 6) and above 6.

Definition (NNAPI ``types.spec`` / ``NeuralNetworksTypes.h``). Input [batches, height,
width, depth_in] (NHWC; NCHW with the layout flag); CONV_2D filter [depth_out, fh, fw,
depth_in]; DEPTHWISE_CONV_2D filter [1, fh, fw, depth_in * multiplier], output channel
``c * multiplier + m`` reading input channel ``c``; bias [depth_out]. Inputs: explicit
padding 0 input, 1 filter, 2 bias, 3-6 padding left, right, top, bottom, 7-8 stride width,
height, (depthwise: multiplier), FuseCode, then the optional layout BOOL (default false) and
dilation width, height (default 1; FL3). Implicit padding: 3 PaddingCode (1 SAME, 2 VALID),
4-5 strides, (multiplier), FuseCode, layout, dilations. ``PaddingCode`` SAME: out =
ceil(in / stride), total padding max((out - 1) * stride + (f - 1) * dilation + 1 - in, 0),
``total // 2`` before and the rest after; VALID: no padding. FuseCode: RELU max(x, 0), RELU1
clamp to [-1, 1], RELU6 clamp to [0, 6].

Cases: every FuseCode on one non-square input and non-square filter with asymmetric explicit
padding; implicit SAME and VALID; strides > 1 and unequal; dilation with implicit and
explicit padding (FL3); depth multipliers 1, 2 and 3; batches 2 and 3; a 1x1 filter. Each
expands to the variations of :mod:`.variations` (float32, relaxed, float16, quant8 and
quant8 signed with non-zero zero points, per-channel filters, NHWC/NCHW, inputs as internal
operands, left-out optional inputs); then the signature rows those leave out (:data:`ROWS`:
the layout flag without dilations, float16 and per-channel forms without the layout) and a
TENSOR_QUANT8_ASYMM case at the extreme zero point with an output scale above 1
(:func:`_quant_regime_cases`, :mod:`.typed`), and DEPTHWISE_CONV_2D on zero batches
(AOSP's zero-sized form, :func:`.typed.zero_sized`; golden by hand: empty). Not omitted
(NO_VALUE) optional inputs: AOSP registers
CONV_2D and DEPTHWISE_CONV_2D without ``allowOmittedOperand``, so its CPU executor rejects
them (``OperationExecutionContext::checkNoOmittedOperand``); the way to leave the layout
and dilation out is the shorter input list.

Golden: :func:`conv_formula`, a numpy loop over filter taps of the zero-padded input (one
einsum per tap), the bias and the activation clamp, written from the definition above, never
the kernels under test.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import bias, case, values_for, x, zero_sized
from .variations import (ACT, BIAS, FILTER, FLOAT16, FLOAT32, INT, LAYOUT, PER_CHANNEL, QUANT8,
                         SIGNED_PER_CHANNEL, FloatSpec, Slot, expand, variant)

FAMILY = "conv"
T_Q8, T_INT32 = T.TENSOR_QUANT8_ASYMM, T.INT32
NONE, RELU, RELU1, RELU6 = 0, 1, 2, 3
SAME, VALID = 1, 2
_CLAMP = {NONE: (-np.inf, np.inf), RELU: (0.0, np.inf), RELU1: (-1.0, 1.0), RELU6: (0.0, 6.0)}
GOLDEN = ("numpy formula: sum over filter taps of the zero-padded input, plus bias, "
          "fused activation clamp (cts/specs/conv.py conv_formula)")


def implicit_padding(size: int, stride: int, f: int, dilation: int, code: int) -> tuple[int, int]:
    """(before, after) padding of one spatial axis for PaddingCode ``code``."""
    if code == VALID:
        return 0, 0
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + (f - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def conv_formula(x, w, b, pads, strides, dilation, act, multiplier=None) -> np.ndarray:
    """NHWC convolution in float64: ``pads`` (left, right, top, bottom), ``strides`` and
    ``dilation`` (width, height); ``multiplier`` None for CONV_2D, the depth multiplier for
    DEPTHWISE_CONV_2D."""
    left, right, top, bottom = pads
    xp = np.pad(np.asarray(x, np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    w = np.asarray(w, np.float64)
    fh, fw = w.shape[1:3]
    (sw, sh), (dw, dh) = strides, dilation
    oh = (xp.shape[1] - (fh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (fw - 1) * dw - 1) // sw + 1
    out = np.zeros((xp.shape[0], oh, ow, w.shape[0] if multiplier is None else w.shape[3]))
    for i in range(fh):
        for j in range(fw):
            taps = xp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw, :]
            if multiplier is None:
                out += np.einsum("nhwc,oc->nhwo", taps, w[:, i, j, :])
            else:
                out += np.repeat(taps, multiplier, axis=-1) * w[0, i, j, :]
    return np.clip(out + np.asarray(b, np.float64), *_CLAMP[act])


def conv_spec(name, x, w, b, padding, strides, act, dilation=(1, 1), multiplier=None) -> FloatSpec:
    """One float spec: ``padding`` SAME, VALID or (left, right, top, bottom); ``strides`` and
    ``dilation`` (width, height)."""
    if isinstance(padding, int):
        pt, pb = implicit_padding(x.shape[1], strides[1], w.shape[1], dilation[1], padding)
        pl, pr = implicit_padding(x.shape[2], strides[0], w.shape[2], dilation[0], padding)
        pads, window = (pl, pr, pt, pb), [padding]
    else:
        pads, window = padding, list(padding)
    depthwise = multiplier is not None
    slots = (Slot(ACT, x, "input"), Slot(FILTER, w, channel_dim=3 if depthwise else 0), Slot(BIAS, b),
             *(Slot(INT, v) for v in [*window, *strides, *([multiplier] if depthwise else []), act]),
             Slot(LAYOUT, False, default=False), Slot(INT, dilation[0], default=1), Slot(INT, dilation[1], default=1))
    return FloatSpec(name, FAMILY, Op.DEPTHWISE_CONV_2D if depthwise else Op.CONV_2D, slots,
                     lambda x, w, b, *_: conv_formula(x, w, b, pads, strides, dilation, act, multiplier),
                     GOLDEN, 3, 1)


def spans_every_clamp(x, w, b, pads, multiplier=None) -> bool:
    """Whether the pre-activation output (stride and dilation 1) has values below -1, in
    (-1, 1), in (1, 6) and above 6, so each FuseCode's clamp changes some element."""
    pre = conv_formula(x, w, b, pads, (1, 1), (1, 1), NONE, multiplier)
    return bool((pre < -1).any() and (abs(pre) < 1).any() and ((pre > 1) & (pre < 6)).any() and (pre > 6).any())


def _activation_cases(prefix, x, w, b, pads, multiplier=None) -> list[FloatSpec]:
    if not spans_every_clamp(x, w, b, pads, multiplier):
        raise ValueError(f"{prefix}: the pre-activation output does not span every FuseCode's clamp")
    return [conv_spec(f"{prefix}_{name}", x, w, b, pads, (1, 1), act, multiplier=multiplier)
            for name, act in (("none", NONE), ("relu", RELU), ("relu1", RELU1), ("relu6", RELU6))]


def _float_specs() -> list[FloatSpec]:
    rng = np.random.default_rng(3)

    def u(*shape, lo=-2.0, hi=2.0):
        """Uniform multiples of 1/4: products are multiples of 1/16 and every sum here stays
        below 2048 / 16, so float16 and relaxed arithmetic hold the golden exactly."""
        return np.round(rng.uniform(lo, hi, shape) * 4) / 4

    conv = [
        # activations: 3x4 input, 2x3 filter, padding left 1 right 1 top 0 bottom 1; the bias
        # moves channel 0 below -1, keeps channel 1 around 0 and channel 2 above 6
        *_activation_cases("conv2d_act", u(1, 3, 4, 2), u(3, 2, 3, 2, lo=-1, hi=1), np.array([-6.0, 0.5, 7.0]),
                           (1, 1, 0, 1)),
        conv_spec("conv2d_same_stride2_batch2", u(2, 5, 7, 3, lo=-3, hi=3), u(2, 3, 3, 3, lo=-1, hi=1),
                  np.array([1.0, -0.5]), SAME, (2, 2), RELU6),
        conv_spec("conv2d_valid_stride_w1_h2", u(1, 6, 5, 2), u(4, 2, 2, 2), u(4), VALID, (1, 2), RELU1),
        conv_spec("conv2d_explicit_stride_w3_h2", u(1, 7, 8, 1), u(1, 3, 2, 1), u(1), (1, 0, 2, 1), (3, 2), RELU),
        conv_spec("conv2d_dilation_same", u(1, 6, 7, 2), u(2, 2, 3, 2), u(2), SAME, (1, 1), RELU6, (2, 2)),
        conv_spec("conv2d_dilation_explicit", u(2, 7, 6, 1), u(2, 3, 2, 1), u(2), (1, 2, 0, 1), (1, 2), NONE, (3, 2)),
        conv_spec("conv2d_1x1_batch3", u(3, 2, 3, 4), u(5, 1, 1, 4), u(5), VALID, (1, 1), RELU1),
    ]
    depthwise = [
        *_activation_cases("depthwise_conv2d_act", u(1, 3, 4, 2), u(1, 2, 3, 4, lo=-1.5, hi=1.5),
                           np.array([-7.0, 0.5, 7.0, 3.0]), (1, 1, 0, 1), multiplier=2),
        conv_spec("depthwise_conv2d_same_stride2_batch2_m3", u(2, 5, 7, 2, lo=-3, hi=3), u(1, 3, 3, 6),
                  u(6), SAME, (2, 2), RELU6, multiplier=3),
        conv_spec("depthwise_conv2d_valid_stride_w1_h2_m1", u(1, 6, 5, 3), u(1, 2, 2, 3), u(3), VALID, (1, 2),
                  RELU1, multiplier=1),
        conv_spec("depthwise_conv2d_explicit_stride_w3_h2", u(1, 7, 8, 2), u(1, 3, 2, 4), u(4), (1, 0, 2, 1),
                  (3, 2), RELU, multiplier=2),
        conv_spec("depthwise_conv2d_dilation_same", u(1, 6, 7, 2), u(1, 2, 3, 4), u(4), SAME, (1, 1), RELU6, (2, 2),
                  multiplier=2),
        conv_spec("depthwise_conv2d_dilation_explicit_m3", u(2, 7, 6, 1), u(1, 3, 2, 3), u(3), (1, 2, 0, 1), (1, 2),
                  NONE, (3, 2), multiplier=3),
        conv_spec("depthwise_conv2d_1x1_batch3", u(3, 2, 3, 4), u(1, 1, 1, 8), u(8), VALID, (1, 1), RELU1,
                  multiplier=2),
    ]
    return conv + depthwise


#: Signature rows the variations above leave out, as (spec name, [(flavor, nchw)]), each
#: model with the trailing optional inputs at their default left out: NCHW keeps the layout
#: flag and drops the dilations (the FL3 rows "..., BOOL?"), NHWC drops all three.
ROWS = {
    "conv2d_act_relu1": [(FLOAT32, True), (QUANT8, True), (FLOAT16, True), (PER_CHANNEL, True),
                         (FLOAT16, False), (PER_CHANNEL, False)],
    "conv2d_same_stride2_batch2": [(FLOAT32, True), (QUANT8, True), (FLOAT16, True), (PER_CHANNEL, True),
                                   (FLOAT16, False), (PER_CHANNEL, False), (SIGNED_PER_CHANNEL, False)],
    "depthwise_conv2d_act_relu6": [(FLOAT16, False)],
    "depthwise_conv2d_valid_stride_w1_h2_m1": [(FLOAT16, False), (PER_CHANNEL, False), (SIGNED_PER_CHANNEL, False),
                                                (SIGNED_PER_CHANNEL, True)],
}


def _quant_regime_cases() -> list:
    """TENSOR_QUANT8_ASYMM input at the extreme zero point 255 (scale 1/4, so every real
    value is <= 0) and an output scale above 1 (2 > 1/4 * 1/2, the FL1 rule)."""
    rng = np.random.default_rng(30)
    out = []
    for name, op, w_shape, mult in (("conv2d", Op.CONV_2D, (3, 2, 3, 2), None),
                                    ("depthwise_conv2d", Op.DEPTHWISE_CONV_2D, (1, 2, 3, 4), 2)):
        v = values_for(rng, (2, 3, 4, 2), T_Q8, (0.25, 255))
        w = values_for(rng, w_shape, T_Q8, (0.5, 100))
        b = np.round(rng.uniform(-8, 8, w_shape[0] if mult is None else w_shape[3])) * 0.125
        ints = [const(T_INT32, i) for i in (1, 0, 1, 0, 1, 2, *([mult] if mult else []), NONE)]
        out.append(case(f"{name}_quant8_zp_max_out_scale_large", FAMILY, op, T_Q8,
                        [x(v), x(w, (0.5, 100), "const"), bias(b), *ints],
                        lambda v, w, b, *_, m=mult: conv_formula(v, w, b, (1, 0, 1, 0), (1, 2), (1, 1), NONE, m),
                        GOLDEN + " on the dequantized inputs", 1, q=(0.25, 255), out_q=(2.0, 128)))
    return out


def models():
    specs = _float_specs()
    by_name = {s.name: s for s in specs}
    rows = [variant(by_name[n], flavor, nchw, "without_optional") for n, fl in ROWS.items() for flavor, nchw in fl]
    # zero batches (AOSP registers DEPTHWISE_CONV_2D with allowZeroSizedInput): a [1, 2, 2, 2]
    # filter, multiplier 2, explicit padding 0, strides 1 over [0, 2, 2, 1] -> [0, 1, 1, 2]
    zero = zero_sized("depthwise_conv2d_zero_sized", FAMILY, Op.DEPTHWISE_CONV_2D,
                      [const(T.TENSOR_FLOAT32, np.array([1, 2, 3, 4, 5, 6, 7, 8], np.float32).reshape(1, 2, 2, 2)),
                       const(T.TENSOR_FLOAT32, np.array([0.5, -0.5], np.float32)),
                       *(const(T_INT32, v) for v in (0, 0, 0, 0, 1, 1, 2, NONE))], [1, 1, 2], 3)
    return [m for spec in specs for m in expand(spec)] + rows + _quant_regime_cases() + [zero]
