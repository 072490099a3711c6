"""Convolution and fully connected kernels of feature level 3 (GROUPED_CONV_2D,
TRANSPOSE_CONV_2D, and the FL3 forms of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED), their
FL4 TENSOR_QUANT8_ASYMM_SIGNED forms, and BATCH_MATMUL (FL6), on small cases. Every
expected value is worked out by hand in a comment, or comes from the naive loop formulas
``naive_conv`` / ``naive_transpose_conv`` written here from the NNAPI definitions
(independent of the kernel's gather/matmul code)."""
import numpy as np
import pytest

from runtime.errors import NnapiError, OperationError
from runtime.ops import REGISTRY
from runtime.ops.base import OperandView
from runtime.types import FuseCode, OperandType as T, OperationType as Op, PaddingCode
from tests.util import const, flag, i32, inp, level, out, run_direct, run_op, view

F16, F32, Q8, I32 = T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32
PC = T.TENSOR_QUANT8_SYMM_PER_CHANNEL
NONE, RELU = FuseCode.NONE, FuseCode.RELU
SAME, VALID = PaddingCode.SAME, PaddingCode.VALID


def iv(v):
    return view(T.INT32, np.int32(v))


def bv(v):
    return view(T.BOOL, np.bool_(v))


def naive_conv(x, f, bias, groups, stride, pad, dilation):
    """Reference by definition: NHWC x [n, h, w, c], f [o, fh, fw, c / groups];
    out[b, i, j, o] = bias[o] + sum_{a, c, k} x[b, i*sh - top + a*dh, j*sw - left + c*dw,
    g*cg + k] * f[o, a, c, k] (cells outside the input are 0), g = o // (o_total / groups).
    ``stride`` = (sh, sw), ``pad`` = (top, bottom, left, right), ``dilation`` = (dh, dw)."""
    n, h, w, c = x.shape
    o_total, fh, fw, cg = f.shape
    (sh, sw), (top, bottom, left, right), (dh, dw) = stride, pad, dilation
    oh = (h + top + bottom - ((fh - 1) * dh + 1)) // sh + 1
    ow = (w + left + right - ((fw - 1) * dw + 1)) // sw + 1
    res = np.zeros((n, oh, ow, o_total))
    og = o_total // groups
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for o in range(o_total):
                    g = o // og
                    s = bias[o]
                    for a in range(fh):
                        for cc in range(fw):
                            y, xx = i * sh - top + a * dh, j * sw - left + cc * dw
                            if 0 <= y < h and 0 <= xx < w:
                                s += np.dot(x[b, y, xx, g * cg:(g + 1) * cg], f[o, a, cc])
                    res[b, i, j, o] = s
    return res


def naive_transpose_conv(x, f, bias, stride, pad):
    """Reference by definition: each input cell (y, x) adds x[b, y, x, :] . f[o, a, c, :] to
    output cell (y*sh + a - top, x*sw + c - left); output size h*sh + fh - sh - top - bottom
    (widths likewise). ``pad`` = (top, bottom, left, right)."""
    n, h, w, _ = x.shape
    o_total, fh, fw, _ = f.shape
    (sh, sw), (top, bottom, left, right) = stride, pad
    oh, ow = h * sh + fh - sh - top - bottom, w * sw + fw - sw - left - right
    res = np.zeros((n, oh, ow, o_total)) + bias
    for b in range(n):
        for y in range(h):
            for xx in range(w):
                for a in range(fh):
                    for c in range(fw):
                        oy, ox = y * sh + a - top, xx * sw + c - left
                        if 0 <= oy < oh and 0 <= ox < ow:
                            res[b, oy, ox] += f[:, a, c, :] @ x[b, y, xx]
    return res


# --- CONV_2D ----------------------------------------------------------------------------------

def test_conv_2d_nchw_with_dilation_implicit_padding():
    # x[i, j] = 5i + j (5x5, NCHW [1, 1, 5, 5]); 2x2 filters dilated by 2 read x[i, j],
    # x[i, j+2], x[i+2, j], x[i+2, j+2]: sum = 4(5i + j) + 2 + 10 + 12 = 20i + 4j + 24.
    # VALID: effective filter 3 -> 3x3 output. Channel 0: ones, bias 1 -> 20i + 4j + 25;
    # channel 1: twos, bias -24 -> 40i + 8j + 24. Implicit form with layout + dilation: 10
    # inputs, input 7 is BOOL.
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    f = np.stack([np.ones((2, 2, 1)), 2 * np.ones((2, 2, 1))]).astype(np.float32)
    (o,) = run_op(Op.CONV_2D, [inp(F32, x), const(F32, f), const(F32, [1, -24]), i32(VALID), i32(1),
                               i32(1), i32(NONE), flag(True), i32(2), i32(2)],
                  [out(F32, [1, 2, 3, 3])])
    i, j = np.mgrid[0:3, 0:3]
    np.testing.assert_array_equal(o[0, 0], 20 * i + 4 * j + 25)
    np.testing.assert_array_equal(o[0, 1], 40 * i + 8 * j + 24)


def test_conv_2d_explicit_padding_with_different_dilations():
    # x = 1..9 as 3x3 NHWC; 2x2 ones filter, dilation width 1, height 2 (effective 3 high,
    # 2 wide), padding left 1, right 1: output 1 x 4. Rows read: 0 and 2 ([1, 2, 3], [7, 8, 9]);
    # columns j-1, j: j=0 -> 1+7 = 8; j=1 -> 1+2+7+8 = 18; j=2 -> 2+3+8+9 = 22; j=3 -> 3+9 = 12.
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
    (o,) = run_op(Op.CONV_2D, [inp(F32, x), const(F32, np.ones((1, 2, 2, 1))), const(F32, [0]),
                               i32(1), i32(1), i32(0), i32(0), i32(1), i32(1), i32(NONE), flag(False),
                               i32(1), i32(2)], [out(F32, [1, 1, 4, 1])])
    assert o.reshape(-1).tolist() == [8, 18, 22, 12]


def test_conv_2d_layout_flag_alone_and_float16():
    # 11-input explicit form with only the layout flag (false = NHWC), TENSOR_FLOAT16:
    # 1x2 input [0.5, 1.5], 1x1 filters [2] and [-1], bias [0.25, 0]:
    # channel 0: [1.25, 3.25]; channel 1: [-0.5, -1.5]; RELU -> [0, 0]. All exact in float16.
    x = np.array([0.5, 1.5], np.float16).reshape(1, 1, 2, 1)
    (o,) = run_op(Op.CONV_2D, [inp(F16, x), const(F16, np.array([2, -1]).reshape(2, 1, 1, 1)),
                               const(F16, [0.25, 0]), i32(0), i32(0), i32(0), i32(0), i32(1), i32(1),
                               i32(RELU), flag(False)], [out(F16, [1, 1, 2, 2])])
    assert o.dtype == np.float16
    assert o.reshape(2, 2).tolist() == [[1.25, 0], [3.25, 0]]


def test_conv_2d_per_channel_filter():
    # input q [12, 14], scale 0.5, zp 10 -> [1, 2]. Filter per channel (channelDim 0), scales
    # [0.5, 0.25]: channel 0 [2, 4] -> [1, 2]; channel 1 [4, -8] -> [1, -2]. Bias int32 [2, 4]
    # at scales 0.5*0.5 and 0.5*0.25 -> [0.5, 0.5]. Sums: 1 + 4 + 0.5 = 5.5; 1 - 4 + 0.5 = -2.5.
    # Output scale 0.5, zp 10: 5.5/0.5 + 10 = 21; -2.5/0.5 + 10 = 5.
    x = np.array([12, 14], np.uint8).reshape(1, 1, 1, 2)
    filt = const(PC, np.array([[2, 4], [4, -8]], np.int8).reshape(2, 1, 1, 2),
                 channel_quant=([0.5, 0.25], 0))
    (o,) = run_op(Op.CONV_2D, [inp(Q8, x, 0.5, 10), filt, const(I32, [2, 4]), i32(VALID), i32(1),
                               i32(1), i32(NONE)], [out(Q8, [1, 1, 1, 2], 0.5, 10)])
    assert o.reshape(-1).tolist() == [21, 5]


def test_conv_2d_per_channel_needs_channel_dim_0_and_feature_level_3():
    x = view(Q8, np.full((1, 1, 1, 2), 12), 0.5, 10)
    b = view(I32, [0, 0])
    args = [iv(VALID), iv(1), iv(1), iv(NONE)]
    good = view(PC, np.ones((2, 1, 1, 2)), channel_quant=([0.5, 0.25], 0))
    assert level(Op.CONV_2D, [x, good, b, *args], [OperandView(Q8, (1, 1, 1, 2), 0.5, 10)]) == 3
    bad = view(PC, np.ones((2, 1, 1, 2)), channel_quant=([0.5, 0.25], 3))
    with pytest.raises(OperationError, match=r"input 1 \(filter\): per-channel channelDim 3 must be 0"):
        run_direct(Op.CONV_2D, [x, bad, b, *args], [OperandView(Q8, (), 0.5, 10)])


def test_conv_2d_feature_levels_of_the_new_inputs():
    # FL1 form -> 1; the layout flag or dilation -> 3 (AOSP conv_2d::validate)
    x, f, b = view(F32, np.ones((1, 3, 3, 1))), view(F32, np.ones((1, 1, 1, 1))), view(F32, [0])
    o = OperandView(F32, (1, 3, 3, 1))
    base = [x, f, b, iv(SAME), iv(1), iv(1), iv(NONE)]
    assert level(Op.CONV_2D, base, [o]) == 1
    assert level(Op.CONV_2D, base + [bv(False)], [o]) == 3
    assert level(Op.CONV_2D, base + [bv(False), iv(1), iv(1)], [o]) == 3
    h = view(F16, np.ones((1, 3, 3, 1)))
    assert level(Op.CONV_2D, [h, view(F16, np.ones((1, 1, 1, 1))), view(F16, [0]), *base[3:]],
                 [OperandView(F16, (1, 3, 3, 1))]) == 3


def test_conv_2d_rejects_bad_dilation_and_omitted_optionals_mean_defaults():
    x, f, b = view(F32, np.ones((1, 3, 3, 1))), view(F32, np.ones((1, 2, 2, 1))), view(F32, [0])
    base = [x, f, b, iv(SAME), iv(1), iv(1), iv(NONE)]
    with pytest.raises(OperationError, match="dilation width 0 and height 1 must be > 0"):
        run_direct(Op.CONV_2D, base + [bv(False), iv(0), iv(1)], [OperandView(F32, ())])
    # omitted layout and dilation (no value): NHWC, dilation 1. SAME 2x2 ones on a 3x3 of ones:
    # padding (0, 1) per axis; corners of the 2x2 windows: 4 inside, last row/column 2, corner 1.
    omitted = [OperandView(T.BOOL, (), omitted=True), OperandView(T.INT32, (), omitted=True),
               OperandView(T.INT32, (), omitted=True)]
    (shape,), (o,) = run_direct(Op.CONV_2D, base + omitted, [OperandView(F32, ())])
    assert shape == (1, 3, 3, 1)
    assert o.reshape(3, 3).tolist() == [[4, 4, 2], [4, 4, 2], [2, 2, 1]]


def test_conv_2d_zero_batches_give_an_empty_output():
    (shape,), (o,) = run_direct(
        Op.CONV_2D, [view(F32, np.ones((0, 3, 3, 2))), view(F32, np.ones((4, 2, 2, 2))),
                     view(F32, np.zeros(4)), iv(VALID), iv(1), iv(1), iv(NONE)],
        [OperandView(F32, ())])
    assert shape == (0, 2, 2, 4) and o.shape == (0, 2, 2, 4)


def test_conv_2d_matches_the_naive_formula_with_stride_padding_and_dilation():
    # independent formula: naive_conv (loops over the NNAPI definition)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    f = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    expected = naive_conv(x.astype(np.float64), f.astype(np.float64), bias.astype(np.float64), 1,
                          (2, 1), (1, 2, 0, 1), (2, 3))
    (shape,), (o,) = run_direct(
        Op.CONV_2D, [view(F32, x.transpose(0, 3, 1, 2)), view(F32, f), view(F32, bias),
                     iv(0), iv(1), iv(1), iv(2), iv(1), iv(2), iv(NONE), bv(True),
                     iv(3), iv(2)],
        [OperandView(F32, ())])
    np.testing.assert_allclose(o.transpose(0, 2, 3, 1), expected, rtol=1e-5, atol=1e-5)


# --- DEPTHWISE_CONV_2D -----------------------------------------------------------------------

def test_depthwise_conv_2d_multiplier_dilation_float16():
    # x = 1..9 (3x3, one channel), depth_multiplier 2, dilation 2, VALID -> 1x1 output; taps
    # read x[0,0], x[0,2], x[2,0], x[2,2] = 1, 3, 7, 9. Channel 0 filter ones: 20 + bias 0.5
    # = 20.5; channel 1 filter [[0, 0], [0, 2]]: 2 * 9 = 18 + 0.25 = 18.25 (exact in float16).
    # 11 inputs with input 8 BOOL: implicit padding + layout + dilation.
    x = np.arange(1, 10, dtype=np.float16).reshape(1, 3, 3, 1)
    f = np.zeros((1, 2, 2, 2), np.float16)
    f[..., 0] = 1
    f[0, 1, 1, 1] = 2
    (o,) = run_op(Op.DEPTHWISE_CONV_2D, [inp(F16, x), const(F16, f), const(F16, [0.5, 0.25]),
                                         i32(VALID), i32(1), i32(1), i32(2), i32(NONE), flag(False),
                                         i32(2), i32(2)], [out(F16, [1, 1, 1, 2])])
    assert o.reshape(-1).tolist() == [20.5, 18.25]


def test_depthwise_conv_2d_per_channel_filter_channel_dim_3():
    # input q [12, 14] (scale 0.5, zp 10) -> [1, 2]; filter [1, 1, 1, 2] per channel on dim 3,
    # scales [0.5, 0.25], q [4, -8] -> [2, -2]; bias 0; products [2, -4];
    # output scale 0.5 zp 10 -> [2/0.5 + 10, -4/0.5 + 10] = [14, 2].
    x = np.array([12, 14], np.uint8).reshape(1, 1, 1, 2)
    filt = const(PC, np.array([4, -8], np.int8).reshape(1, 1, 1, 2), channel_quant=([0.5, 0.25], 3))
    (o,) = run_op(Op.DEPTHWISE_CONV_2D, [inp(Q8, x, 0.5, 10), filt, const(I32, [0, 0]), i32(VALID),
                                         i32(1), i32(1), i32(1), i32(NONE), flag(False)],
                  [out(Q8, [1, 1, 1, 2], 0.5, 10)])
    assert o.reshape(-1).tolist() == [14, 2]
    bad = view(PC, np.ones((1, 1, 1, 2)), channel_quant=([0.5, 0.25], 0))
    with pytest.raises(OperationError, match="channelDim 0 must be 3"):
        run_direct(Op.DEPTHWISE_CONV_2D, [view(Q8, x, 0.5, 10), bad, view(I32, [0, 0]), iv(VALID),
                                          iv(1), iv(1), iv(1), iv(NONE)],
                   [OperandView(Q8, (), 0.5, 10)])


def test_depthwise_conv_2d_rejects_a_filter_whose_first_dimension_is_not_1():
    # AOSP DepthwiseConv2D prepare: filter dimension 0 must be 1 (corpus
    # depthwise_conv2d_invalid_filter_dims)
    with pytest.raises(OperationError, match=r"input 1 \(filter\) \[2, 2, 2, 4\]: dimension 0 must be 1"):
        run_direct(Op.DEPTHWISE_CONV_2D, [view(F32, np.ones((1, 3, 3, 2))), view(F32, np.ones((2, 2, 2, 4))),
                                          view(F32, np.zeros(4)), iv(VALID), iv(1), iv(1), iv(2),
                                          iv(NONE)], [OperandView(F32, ())])


# --- GROUPED_CONV_2D -------------------------------------------------------------------------

def test_grouped_conv_2d_nchw_hand_computed():
    # 4 input channels, 2 groups of 2, 4 outputs (2 per group), 1x1 filters, NCHW, RELU.
    # Position 0: channels [1, 2, 3, 4]; position 1: [10, 20, 30, 40].
    # o0 = [1, 1].(c0, c1): 3, 30; o1 = [1, -1].(c0, c1): -1, -10 -> RELU 0, 0;
    # o2 = [1, 1].(c2, c3): 7, 70; o3 = [2, 0].(c2, c3): 6, 60.
    x = np.array([[1, 10], [2, 20], [3, 30], [4, 40]], np.float32).reshape(1, 4, 1, 2)
    f = np.array([[1, 1], [1, -1], [1, 1], [2, 0]], np.float32).reshape(4, 1, 1, 2)
    (o,) = run_op(Op.GROUPED_CONV_2D, [inp(F32, x), const(F32, f), const(F32, [0, 0, 0, 0]),
                                       i32(VALID), i32(1), i32(1), i32(2), i32(RELU), flag(True)],
                  [out(F32, [1, 4, 1, 2])])
    assert o.reshape(4, 2).tolist() == [[3, 30], [0, 0], [7, 70], [6, 60]]


def test_grouped_conv_2d_quant8_per_channel():
    # 2 groups of 1 channel: input q [12, 14] (0.5, zp 10) -> [1, 2]; filter [2, 1, 1, 1]
    # per channel (dim 0) scales [0.5, 0.25], q [4, 8] -> [2, 2]; bias q [4, 0] at
    # 0.5*0.5 -> [1, 0]. o0 = 1*2 + 1 = 3, o1 = 2*2 = 4; output scale 0.25 zp 0 -> [12, 16].
    x = np.array([12, 14], np.uint8).reshape(1, 1, 1, 2)
    filt = const(PC, np.array([4, 8], np.int8).reshape(2, 1, 1, 1), channel_quant=([0.5, 0.25], 0))
    (o,) = run_op(Op.GROUPED_CONV_2D, [inp(Q8, x, 0.5, 10), filt, const(I32, [4, 0]), i32(0), i32(0),
                                       i32(0), i32(0), i32(1), i32(1), i32(2), i32(NONE), flag(False)],
                  [out(Q8, [1, 1, 1, 2], 0.25, 0)])
    assert o.reshape(-1).tolist() == [12, 16]


def test_grouped_conv_2d_rejects_inconsistent_groups():
    x, b = view(F32, np.ones((1, 2, 2, 4))), view(F32, np.zeros(3))
    with pytest.raises(OperationError, match="depth_out 3 must be a multiple of num_groups 2"):
        run_direct(Op.GROUPED_CONV_2D, [x, view(F32, np.ones((3, 1, 1, 2))), b, iv(VALID), iv(1),
                                        iv(1), iv(2), iv(NONE), bv(False)], [OperandView(F32, ())])
    with pytest.raises(OperationError, match=r"input 6 \(num_groups\) 0 must be > 0"):
        run_direct(Op.GROUPED_CONV_2D, [x, view(F32, np.ones((3, 1, 1, 2))), b, iv(VALID), iv(1),
                                        iv(1), iv(0), iv(NONE), bv(False)], [OperandView(F32, ())])
    with pytest.raises(OperationError, match=r"depth 1 \* num_groups 2 must equal the input depth 4"):
        run_direct(Op.GROUPED_CONV_2D, [x, view(F32, np.ones((4, 1, 1, 1))), view(F32, np.zeros(4)),
                                        iv(VALID), iv(1), iv(1), iv(2), iv(NONE), bv(False)],
                   [OperandView(F32, ())])


# --- TRANSPOSE_CONV_2D -----------------------------------------------------------------------

#: Hand-computed float32 cases of x = [1, 2, 3, 4] (2x2, one channel) transposed-convolved
#: with the 2x2 filter [[1, 2], [3, 4]]: (input shape, bias, explicit padding left, right,
#: top, bottom and strides w, h, NCHW flag, output shape, expected output as 2-d rows).
TRANSPOSE_HAND_CASES = {
    # stride 2, no padding: output 2*2 + 2 - 2 = 4; each input v writes v * filter into its
    # own 2x2 block.
    "stride-2": ((1, 2, 2, 1), [0], (0, 0, 0, 0, 2, 2), False, [1, 4, 4, 1],
                 [[1, 2, 2, 4], [3, 4, 6, 8], [3, 6, 4, 8], [9, 12, 12, 16]]),
    # stride 1: out[y, x] = sum over iy + a = y, ix + b = x of x[iy, ix] * f[a, b] (3x3):
    # [[1, 4, 4], [6, 20, 16], [9, 24, 16]] (e.g. centre 1*4 + 2*3 + 3*2 + 4*1 = 20).
    # Padding left 1, right 0, top 0, bottom 1: 2x2 = rows 0-1, columns 1-2 -> [[4, 4], [20, 16]].
    # NCHW with 1 channel has the same memory order. Bias 0.5 is added everywhere.
    "stride-1-overlaps-explicit-padding-nchw": ((1, 1, 2, 2), [0.5], (1, 0, 0, 1, 1, 1), True, [1, 1, 2, 2],
                                                [[4.5, 4.5], [20.5, 16.5]]),
}


@pytest.mark.parametrize("case", list(TRANSPOSE_HAND_CASES))
def test_transpose_conv_2d_hand_computed(case):
    x_shape, bias, explicit, nchw, out_shape, expected = TRANSPOSE_HAND_CASES[case]
    x = np.array([1, 2, 3, 4], np.float32).reshape(x_shape)
    f = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    (o,) = run_op(Op.TRANSPOSE_CONV_2D, [inp(F32, x), const(F32, f), const(F32, bias), *map(i32, explicit),
                                         i32(NONE), flag(nchw)], [out(F32, out_shape)])
    assert o.reshape(len(expected), -1).tolist() == expected


def test_transpose_conv_2d_implicit_same_padding_from_the_output_shape():
    # width: x [1, 2, 3], filter [1, 10, 100], stride 1, output_shape width 3: SAME gives
    # tmp = (3 - 1) * 1 + 3 = 5, head (5 - 3) // 2 = 1, tail 1. Full output
    # [1, 2 + 10, 3 + 20 + 100, 30 + 200, 300] = [1, 12, 123, 230, 300], cropped by 1 on
    # each side -> [12, 123, 230]. Height 1 with a 1-high filter: no padding. float16.
    x = np.array([1, 2, 3], np.float16).reshape(1, 1, 3, 1)
    f = np.array([1, 10, 100], np.float16).reshape(1, 1, 3, 1)
    (o,) = run_op(Op.TRANSPOSE_CONV_2D, [inp(F16, x), const(F16, f), const(F16, [0]),
                                         const(I32, [1, 1, 3, 1]), i32(SAME), i32(1), i32(1),
                                         i32(NONE), flag(False)], [out(F16, [1, 1, 3, 1])])
    assert o.reshape(-1).tolist() == [12, 123, 230]


def test_transpose_conv_2d_per_channel_filter():
    # input q 12 (0.5, zp 10) -> 1; filter [2, 1, 1, 1] per channel (dim 0) scales
    # [0.5, 0.25], q [4, -8] -> [2, -2]; bias q [2, 4] at 0.5*0.5 and 0.5*0.25 -> [0.5, 0.5].
    # Outputs 2.5 and -1.5; scale 0.5 zp 10 -> [15, 7].
    x = np.array([12], np.uint8).reshape(1, 1, 1, 1)
    filt = const(PC, np.array([4, -8], np.int8).reshape(2, 1, 1, 1), channel_quant=([0.5, 0.25], 0))
    (o,) = run_op(Op.TRANSPOSE_CONV_2D, [inp(Q8, x, 0.5, 10), filt, const(I32, [2, 4]), i32(0), i32(0),
                                         i32(0), i32(0), i32(1), i32(1), i32(NONE), flag(False)],
                  [out(Q8, [1, 1, 1, 2], 0.5, 10)])
    assert o.reshape(-1).tolist() == [15, 7]


#: Random float32 cases checked against the independent loop formulas: (operation, seed,
#: input shape, filter shape, the formula's result from (x, filter, bias), the scalar
#: inputs after input/filter/bias, the output shape worked out by hand).
NAIVE_CASES = {
    # naive_conv with groups; SAME padding of a 3x2 filter, stride 2x1 on 5x4: out 3x4;
    # height total pad (3-1)*2 + 3 - 5 = 2 -> (1, 1); width (4-1) + 2 - 4 = 1 -> (0, 1).
    "grouped-same-padding": (Op.GROUPED_CONV_2D, 2, (1, 5, 4, 6), (9, 3, 2, 2),
                             lambda x, f, b: naive_conv(x, f, b, 3, (2, 1), (1, 1, 0, 1), (1, 1)),
                             [iv(SAME), iv(1), iv(2), iv(3), iv(NONE), bv(False)], (1, 3, 4, 9)),
    # naive_transpose_conv; padding bottom -1 / right -2 extend the output past the last
    # input's reach (those cells hold only the bias), as AOSP allows. Output height
    # (3 - 1) * 2 + 3 - 1 - (-1) = 7, width (4 - 1) * 3 + 2 - 0 - (-2) = 13.
    "transpose-negative-tail-padding": (Op.TRANSPOSE_CONV_2D, 3, (2, 3, 4, 2), (3, 3, 2, 2),
                                        lambda x, f, b: naive_transpose_conv(x, f, b, (2, 3), (1, -1, 0, -2)),
                                        [iv(0), iv(-2), iv(1), iv(-1), iv(3), iv(2), iv(NONE), bv(False)],
                                        (2, 7, 13, 3)),
}


@pytest.mark.parametrize("case", list(NAIVE_CASES))
def test_matches_the_naive_formula(case):
    op, seed, x_shape, f_shape, naive, scalars, out_shape = NAIVE_CASES[case]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    f = rng.standard_normal(f_shape)
    bias = rng.standard_normal(f_shape[0])
    expected = naive(x, f, bias)
    (shape,), (o,) = run_direct(op, [view(F32, x), view(F32, f), view(F32, bias), *scalars], [OperandView(F32, ())])
    assert shape == expected.shape == out_shape
    np.testing.assert_allclose(o, expected, rtol=1e-5, atol=1e-5)


def test_transpose_conv_2d_zero_batches_and_errors():
    f, b = view(F32, np.ones((3, 2, 2, 2))), view(F32, np.zeros(3))
    (shape,), (o,) = run_direct(
        Op.TRANSPOSE_CONV_2D, [view(F32, np.ones((0, 2, 2, 2))), f, b, iv(0), iv(0),
                               iv(0), iv(0), iv(1), iv(1), iv(NONE), bv(False)],
        [OperandView(F32, ())])
    assert shape == (0, 3, 3, 3) and o.shape == (0, 3, 3, 3)
    x = view(F32, np.ones((1, 2, 2, 2)))
    with pytest.raises(OperationError, match="padding left -1 and top 0 must be >= 0"):
        run_direct(Op.TRANSPOSE_CONV_2D, [x, f, b, iv(-1), iv(0), iv(0), iv(0), iv(1), iv(1),
                                          iv(NONE), bv(False)], [OperandView(F32, ())])
    with pytest.raises(OperationError, match=r"input 3 \(output_shape\) must hold 4 values"):
        run_direct(Op.TRANSPOSE_CONV_2D, [x, f, b, view(I32, [3, 3]), iv(SAME), iv(1), iv(1),
                                          iv(NONE), bv(False)], [OperandView(F32, ())])
    # 2x2 input, 2x2 filter, stride 1, padding top + bottom 3: 2 + 2 - 1 - 3 = 0 rows
    with pytest.raises(OperationError, match="output height 0 and width 3 must be > 0"):
        run_direct(Op.TRANSPOSE_CONV_2D, [x, f, b, iv(0), iv(0), iv(1), iv(2), iv(1), iv(1),
                                          iv(NONE), bv(False)], [OperandView(F32, ())])


# --- FULLY_CONNECTED -------------------------------------------------------------------------

def test_fully_connected_float16_and_feature_level():
    # [1, 2] . [[1, 1], [2, -1]]' + [0.5, 0] = [1 + 2 + 0.5, 2 - 2 + 0] = [3.5, 0]
    x = np.array([[1, 2]], np.float16)
    (o,) = run_op(Op.FULLY_CONNECTED, [inp(F16, x), const(F16, [[1, 1], [2, -1]]), const(F16, [0.5, 0]),
                                       i32(NONE)], [out(F16, [1, 2])])
    assert o.dtype == np.float16 and o.tolist() == [[3.5, 0]]
    views = [view(F16, x), view(F16, [[1, 1], [2, -1]]), view(F16, [0.5, 0]), iv(NONE)]
    assert level(Op.FULLY_CONNECTED, views, [OperandView(F16, (1, 2))]) == 3


def test_fully_connected_zero_batches():
    # a [0, 2, 2, 1] input (as ROI_ALIGN gives for no boxes) with input_size 4 -> [0, 3]
    (shape,), (o,) = run_direct(
        Op.FULLY_CONNECTED, [view(F32, np.ones((0, 2, 2, 1))), view(F32, np.ones((3, 4))),
                             view(F32, np.zeros(3)), iv(NONE)],
        [OperandView(F32, ())])
    assert shape == (0, 3) and o.shape == (0, 3)


def test_quantized_bias_scale_rule_still_applies_to_per_tensor_filters():
    # bias scale must be input_scale * filter_scale = 0.5 * 0.5 = 0.25 (NNAPI, FL1)
    x = np.full((1, 1, 1, 1), 12, np.uint8)
    with pytest.raises(NnapiError, match="bias scale 0.5 must equal input scale"):
        run_op(Op.TRANSPOSE_CONV_2D, [inp(Q8, x, 0.5, 10), const(Q8, np.full((1, 1, 1, 1), 4), 0.5, 0),
                                      const(I32, [0], 0.5, 0), i32(0), i32(0), i32(0), i32(0), i32(1),
                                      i32(1), i32(NONE), flag(False)], [out(Q8, [1, 1, 1, 1], 0.5, 10)])


# --- feature level 4+: TENSOR_QUANT8_ASYMM_SIGNED forms, BATCH_MATMUL ---------------------------

Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED


def test_conv_2d_quant8_signed_per_channel_nchw_with_dilation_is_feature_level_4():
    # real x[i, j] = 3i + j (3x3, NCHW), input scale 0.5, zp -1 -> raw 2x - 1. 2x2 filters
    # dilated by 2 read x[0, 0] = 0, x[0, 2] = 2, x[2, 0] = 6, x[2, 2] = 8 (VALID, 1x1 out).
    # Per-channel filter (channelDim 0): channel 0 raw ones at scale 0.5 -> 0.5 * 16 = 8,
    # bias raw 4 at 0.5 * 0.5 -> 1: total 9. Channel 1 raw [[2, 0], [0, -2]] at scale 0.25
    # -> 0.5 * 0 - 0.5 * 8 = -4, bias raw -8 at 0.5 * 0.25 -> -1: total -5.
    # Output scale 0.5, zp -1: 9 / 0.5 - 1 = 17; -5 / 0.5 - 1 = -11.
    x = (2 * np.arange(9).reshape(1, 1, 3, 3) - 1).astype(np.int8)
    f = np.array([[[1, 1], [1, 1]], [[2, 0], [0, -2]]], np.int8).reshape(2, 2, 2, 1)
    filt = const(PC, f, channel_quant=([0.5, 0.25], 0))
    args = [i32(0), i32(0), i32(0), i32(0), i32(1), i32(1), i32(NONE), flag(True), i32(2), i32(2)]
    (o,) = run_op(Op.CONV_2D, [inp(Q8S, x, 0.5, -1), filt, const(I32, [4, -8]), *args],
                  [out(Q8S, [1, 2, 1, 1], 0.5, -1)])
    assert o.dtype == np.int8 and o.reshape(-1).tolist() == [17, -11]
    views = [view(Q8S, x, 0.5, -1), view(PC, f, channel_quant=([0.5, 0.25], 0)), view(I32, [4, -8]),
             *[iv(v) for v in (0, 0, 0, 0, 1, 1, NONE)], bv(True), iv(2), iv(2)]
    assert level(Op.CONV_2D, views, [OperandView(Q8S, (1, 2, 1, 1), 0.5, -1)]) == 4
    # the FL1-shaped signed form (7 inputs) is FL4 too; a signed input with an unsigned filter
    # is no form of CONV_2D
    assert level(Op.CONV_2D, views[:3] + [iv(VALID), iv(1), iv(1), iv(NONE)],
                 [OperandView(Q8S, (1, 2, 1, 1), 0.5, -1)]) == 4
    assert REGISTRY[Op.CONV_2D].match([views[0], view(Q8, f.astype(np.uint8), 0.5), *views[2:]],
                                      [OperandView(Q8S, (1, 2, 1, 1), 0.5, -1)]) is None


def test_depthwise_conv_2d_quant8_signed_per_channel_channel_dim_3():
    # NHWC [1, 1, 2, 2] raw = real (scale 1, zp 0): pixel 0 (1, 2), pixel 1 (3, 4). Filter
    # [1, 1, 2, 2], per-channel scales [1, 0.5] on dimension 3: channel 0 taps raw [1, 2] ->
    # [1, 2]; channel 1 taps raw [2, -4] -> [1, -2]. VALID, multiplier 1: channel 0 1*1 + 3*2
    # = 7; channel 1 2*1 + 4*(-2) = -6, plus bias raw 4 at 1 * 0.5 = 2 -> -4.
    x = np.array([1, 2, 3, 4], np.int8).reshape(1, 1, 2, 2)
    filt = const(PC, np.array([[1, 2], [2, -4]], np.int8).reshape(1, 1, 2, 2),
                 channel_quant=([1.0, 0.5], 3))
    (o,) = run_op(Op.DEPTHWISE_CONV_2D, [inp(Q8S, x, 1.0, 0), filt, const(I32, [0, 4]), i32(VALID),
                                         i32(1), i32(1), i32(1), i32(NONE), flag(False)],
                  [out(Q8S, [1, 1, 1, 2], 1.0, 0)])
    assert o.reshape(-1).tolist() == [7, -4]


def test_grouped_conv_2d_quant8_signed():
    # input raw [2, 4, 6, 8] at scale 0.5 -> [1, 2, 3, 4]; 2 groups of 2 channels; filter
    # (scale 1) output 0 [1, 1] on channels 0-1 -> 3, output 1 [1, -1] on channels 2-3 -> -1;
    # bias raw [2, 0] at 0.5 * 1 -> [1, 0]: [4, -1]. Output scale 0.25, zp 10 -> [26, 6].
    x = np.array([2, 4, 6, 8], np.int8).reshape(1, 1, 1, 4)
    f = np.array([[1, 1], [1, -1]], np.int8).reshape(2, 1, 1, 2)
    (o,) = run_op(Op.GROUPED_CONV_2D, [inp(Q8S, x, 0.5, 0), const(Q8S, f, 1.0, 0),
                                       const(I32, [2, 0], 0.5, 0), i32(VALID), i32(1), i32(1), i32(2),
                                       i32(NONE), flag(False)], [out(Q8S, [1, 1, 1, 2], 0.25, 10)])
    assert o.reshape(-1).tolist() == [26, 6]
    views = [view(Q8S, x, 0.5, 0), view(Q8S, f, 1.0, 0), view(I32, [2, 0], 0.5, 0),
             *[iv(v) for v in (VALID, 1, 1, 2, NONE)], bv(False)]
    assert level(Op.GROUPED_CONV_2D, views, [OperandView(Q8S, (1, 1, 1, 2), 0.25, 10)]) == 4


def test_transpose_conv_2d_quant8_signed_per_channel():
    # input raw [1, 2] (scale 1, zp 0) [1, 1, 2, 1]; filter [1, 1, 2, 1] raw [2, 4] at
    # per-channel scale 0.5 -> [1, 2]; stride width 2: output width 2*2 + 2 - 2 = 4, input
    # cell 0 scatters [1, 2] to columns 0-1, cell 1 [2, 4] to columns 2-3 -> [1, 2, 2, 4];
    # bias raw 2 at 1 * 0.5 -> 1: [2, 3, 3, 5]. Output zp -3 (scale 1): [-1, 0, 0, 2].
    x = np.array([1, 2], np.int8).reshape(1, 1, 2, 1)
    filt = const(PC, np.array([2, 4], np.int8).reshape(1, 1, 2, 1), channel_quant=([0.5], 0))
    (o,) = run_op(Op.TRANSPOSE_CONV_2D, [inp(Q8S, x, 1.0, 0), filt, const(I32, [2]), i32(0), i32(0),
                                         i32(0), i32(0), i32(2), i32(1), i32(NONE), flag(False)],
                  [out(Q8S, [1, 1, 4, 1], 1.0, -3)])
    assert o.reshape(-1).tolist() == [-1, 0, 0, 2]


def test_fully_connected_quant8_signed():
    # input raw [0, 2] at scale 0.5, zp -2 -> [1, 2]; weights raw [[2, 2], [4, -2]] at 0.5 ->
    # [[1, 1], [2, -1]]; bias raw [2, 0] at 0.25 -> [0.5, 0]: [1 + 2 + 0.5, 2 - 2] = [3.5, 0];
    # output scale 0.5, zp 0 -> [7, 0].
    x = np.array([[0, 2]], np.int8)
    w = np.array([[2, 2], [4, -2]], np.int8)
    (o,) = run_op(Op.FULLY_CONNECTED, [inp(Q8S, x, 0.5, -2), const(Q8S, w, 0.5, 0),
                                       const(I32, [2, 0], 0.25, 0), i32(NONE)],
                  [out(Q8S, [1, 2], 0.5, 0)])
    assert o.tolist() == [[7, 0]]


def _bmm(t, lhs, rhs, adj_x, adj_y, dims, scale=0.0, zp=0, lq=(0.0, 0), rq=(0.0, 0)):
    (o,) = run_op(Op.BATCH_MATMUL, [inp(t, lhs, *lq), inp(t, rhs, *rq), flag(adj_x), flag(adj_y)],
                  [out(t, dims, scale, zp)])
    return o


def test_batch_matmul_float32_with_and_without_adjoints():
    # [[1, 2, 3], [4, 5, 6]] @ [[1, 0], [0, 1], [1, 1]] = [[1 + 3, 2 + 3], [4 + 6, 5 + 6]]
    # = [[4, 5], [10, 11]]; the same with the LHS given transposed (adj_x) and the RHS given
    # transposed (adj_y).
    a = np.array([[[1, 2, 3], [4, 5, 6]]], np.float32)
    b = np.array([[[1, 0], [0, 1], [1, 1]]], np.float32)
    expected = [[[4, 5], [10, 11]]]
    assert _bmm(F32, a, b, False, False, [1, 2, 2]).tolist() == expected
    at, bt = a.transpose(0, 2, 1).copy(), b.transpose(0, 2, 1).copy()
    assert _bmm(F32, at, b, True, False, [1, 2, 2]).tolist() == expected
    assert _bmm(F32, a, bt, False, True, [1, 2, 2]).tolist() == expected
    assert _bmm(F32, at, bt, True, True, [1, 2, 2]).tolist() == expected


def test_batch_matmul_int32_batches_and_wraparound():
    # two batches of 1x2 @ 2x1: [3, 1] . [4, 2] = 14; [-5, 0] . [6, 9] = -30.
    a = np.array([[[3, 1]], [[-5, 0]]], np.int32)
    b = np.array([[[4], [2]], [[6], [9]]], np.int32)
    assert _bmm(I32, a, b, False, False, [2, 1, 1]).reshape(-1).tolist() == [14, -30]
    # 65536 * 65536 + 1 * 5 = 2^32 + 5, wrapped modulo 2^32 (int32 accumulation) -> 5
    a = np.array([[65536, 1]], np.int32)
    b = np.array([[65536], [5]], np.int32)
    assert _bmm(I32, a, b, False, False, [1, 1]).tolist() == [[5]]


def test_batch_matmul_quant8_signed_and_float16():
    # LHS raw [3, 5] at scale 0.5, zp 1 -> [1, 2]; RHS raw [4, -8] at 0.25 -> [1, -2]:
    # 1 - 4 = -3; output scale 0.5, zp -1 -> -6 - 1 = -7.
    a = np.array([[3, 5]], np.int8)
    b = np.array([[4], [-8]], np.int8)
    o = _bmm(Q8S, a, b, False, False, [1, 1], 0.5, -1, lq=(0.5, 1), rq=(0.25, 0))
    assert o.dtype == np.int8 and o.tolist() == [[-7]]
    # float16: [0.5, 1.5] . [2, 2] = 4
    o = _bmm(F16, np.array([[0.5, 1.5]], np.float16), np.array([[2], [2]], np.float16), False,
             False, [1, 1])
    assert o.dtype == np.float16 and o.tolist() == [[4.0]]


def test_batch_matmul_shape_errors_and_feature_level():
    a = view(F32, np.ones((2, 2, 3)))
    o = [OperandView(F32, ())]
    with pytest.raises(OperationError, match=r"input 0 \(lhs\) \[2, 2, 3\] with adj_x False has 3 "
                                             r"columns but input 1 \(rhs\) \[2, 2, 3\]"):
        run_direct(Op.BATCH_MATMUL, [a, view(F32, np.ones((2, 2, 3))), bv(False), bv(False)], o)
    with pytest.raises(OperationError, match=r"input 1 \(rhs\) \[3, 4\] must have the rank"):
        run_direct(Op.BATCH_MATMUL, [a, view(F32, np.ones((3, 4))), bv(False), bv(False)], o)
    with pytest.raises(OperationError, match="must have the batch dimensions"):
        run_direct(Op.BATCH_MATMUL, [a, view(F32, np.ones((1, 3, 4))), bv(False), bv(False)], o)
    with pytest.raises(OperationError, match="rows and columns must be > 0"):
        run_direct(Op.BATCH_MATMUL, [view(F32, np.ones((2, 0))), view(F32, np.ones((0, 2))),
                                     bv(False), bv(False)], o)
    # adj_y: [2, 4, 3] read as [2, 3, 4] -> output [2, 2, 4]
    (shape,), _ = run_direct(Op.BATCH_MATMUL, [a, view(F32, np.ones((2, 4, 3))), bv(False),
                                               bv(True)], o)
    assert shape == (2, 2, 4)
    flags = [OperandView(T.BOOL, ()), OperandView(T.BOOL, ())]
    for t in (F32, F16, I32, Q8S):
        x = OperandView(t, (1, 2, 2), 0.5 if t == Q8S else 0.0)
        assert level(Op.BATCH_MATMUL, [x, x, *flags], [x]) == 6
