"""Pooling, resizing and normalization kernels of feature level 3 (FL3 forms of the FL1
operations, RESIZE_NEAREST_NEIGHBOR, INSTANCE_NORMALIZATION, LOG_SOFTMAX) and their FL4 forms
(TENSOR_QUANT8_ASYMM_SIGNED, resize align_corners / half_pixel_centers) on small cases.
Every expected value is worked out by hand in a comment, or comes from an independent numpy
formula that the test states."""
import numpy as np
import pytest

from runtime.errors import NnapiError, OperationError
from runtime.ops import REGISTRY
from runtime.ops.base import OperandView
from runtime.types import FuseCode, OperandType as T, OperationType as Op, PaddingCode
from tests.util import f16, f32, flag, i32, inp, level, out, run_direct, run_op, view

F16, F32, Q8 = T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM


# --- AVERAGE_POOL_2D, L2_POOL_2D, MAX_POOL_2D ----------------------------------------------

def test_average_pool_float16_nchw_explicit_padding():
    # NCHW [1, 2, 2, 2]: channel 0 [[1, 2], [3, 4]], channel 1 [[10, 20], [30, 40]]; 2x2
    # filter, no padding, stride 1 -> one window per channel: 10/4 = 2.5 and 100/4 = 25.
    x = np.array([[[[1, 2], [3, 4]], [[10, 20], [30, 40]]]], np.float16)
    (o,) = run_op(Op.AVERAGE_POOL_2D, [inp(F16, x), i32(0), i32(0), i32(0), i32(0), i32(1), i32(1),
                                       i32(2), i32(2), i32(FuseCode.NONE), flag(True)],
                  [out(F16, [1, 2, 1, 1])])
    assert o.dtype == np.float16 and o.reshape(-1).tolist() == [2.5, 25.0]


def test_max_pool_nchw_implicit_padding_float32_and_quant8():
    # NCHW [1, 1, 2, 3] = [[1, 5, 2], [3, 4, 6]], 2x2 filter, VALID, stride 1:
    # windows columns 0-1 -> max(1, 5, 3, 4) = 5; columns 1-2 -> max(5, 2, 4, 6) = 6.
    x = np.array([[[[1, 5, 2], [3, 4, 6]]]], np.float32)
    args = [i32(PaddingCode.VALID), i32(1), i32(1), i32(2), i32(2), i32(FuseCode.NONE), flag(True)]
    (o,) = run_op(Op.MAX_POOL_2D, [inp(F32, x), *args], [out(F32, [1, 1, 1, 2])])
    assert o.reshape(-1).tolist() == [5.0, 6.0]
    # quant8 moves through real values: q = x + 10 (scale 1, zp 10) -> 15 and 16
    q = (x + 10).astype(np.uint8)
    (o,) = run_op(Op.MAX_POOL_2D, [inp(Q8, q, 1.0, 10), *args], [out(Q8, [1, 1, 1, 2], 1.0, 10)])
    assert o.reshape(-1).tolist() == [15, 16]


def test_l2_pool_float16_with_relu6():
    # [1, 2, 2, 1] = [3, 4, 0, 0], 2x2 window: sqrt((9 + 16 + 0 + 0) / 4) = sqrt(6.25) = 2.5;
    # doubled input gives 5.0; RELU6 leaves both (<= 6); x10 gives 25 -> clamped to 6.
    for k, expected in ((1, 2.5), (2, 5.0), (10, 6.0)):
        x = (np.array([3, 4, 0, 0], np.float16) * k).reshape(1, 2, 2, 1)
        (o,) = run_op(Op.L2_POOL_2D, [inp(F16, x), i32(PaddingCode.VALID), i32(1), i32(1), i32(2),
                                      i32(2), i32(FuseCode.RELU6)], [out(F16, [1, 1, 1, 1])])
        assert o.reshape(-1).tolist() == [expected]


def test_pools_accept_zero_batches():
    # [0, 3, 3, 2] NHWC, 2x2 VALID stride 1 -> [0, 2, 2, 2], empty
    x = np.zeros((0, 3, 3, 2), np.float32)
    for op in (Op.AVERAGE_POOL_2D, Op.L2_POOL_2D, Op.MAX_POOL_2D):
        scalars = [view(T.INT32, np.int32(v)) for v in (PaddingCode.VALID, 1, 1, 2, 2, 0)]
        shapes, (o,) = run_direct(op, [view(F32, x), *scalars], [OperandView(F32, (0, 0, 0, 0))])
        assert shapes == [(0, 2, 2, 2)] and o.shape == (0, 2, 2, 2)


def test_pool_feature_levels():
    # float32 without the flag: FL1; with it, or TENSOR_FLOAT16: FL3; L2 pool has no quant8.
    scalars = [OperandView(T.INT32, ()) for _ in range(6)]
    lay = OperandView(T.BOOL, ())
    x32, x16 = OperandView(F32, (1, 2, 2, 1)), OperandView(F16, (1, 2, 2, 1))
    assert level(Op.MAX_POOL_2D, [x32, *scalars], [OperandView(F32, (1, 1, 1, 1))]) == 1
    assert level(Op.MAX_POOL_2D, [x32, *scalars, lay], [OperandView(F32, (1, 1, 1, 1))]) == 3
    assert level(Op.L2_POOL_2D, [x16, *scalars], [OperandView(F16, (1, 1, 1, 1))]) == 3
    assert REGISTRY[Op.L2_POOL_2D].match([OperandView(Q8, (1, 2, 2, 1), 1.0), *scalars],
                                         [OperandView(Q8, (1, 1, 1, 1), 1.0)]) is None


# --- RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR ------------------------------------------------

def test_resize_bilinear_quant8_by_scale_nchw():
    # NCHW [1, 1, 2, 2] raw [[10, 20], [30, 40]] (scale 0.5, zp 0; same output quantization).
    # Scale 1.5 -> floor(2 * 1.5) = 3 per axis. Source positions i * 2/3 = 0, 0.667, 1.333;
    # the upper neighbour clamps to 1, so the effective coordinates are r, c = 0, 2/3, 1
    # and the value is 10 + 20 r + 10 c (in raw units, the scale cancels):
    #   r = 0:   10, 16.67, 20       -> 10, 17, 20
    #   r = 2/3: 23.33, 30, 33.33    -> 23, 30, 33
    #   r = 1:   30, 36.67, 40       -> 30, 37, 40
    q = np.array([[[[10, 20], [30, 40]]]], np.uint8)
    (o,) = run_op(Op.RESIZE_BILINEAR, [inp(Q8, q, 0.5, 0), f32(1.5), f32(1.5), flag(True)],
                  [out(Q8, [1, 1, 3, 3], 0.5, 0)])
    assert o.reshape(3, 3).tolist() == [[10, 17, 20], [23, 30, 33], [30, 37, 40]]


def test_resize_bilinear_float16_int_size_nhwc():
    # [1, 1, 2, 1] = [0, 4] to width 4, height 1: positions j * 2/4 = 0, 0.5, 1, 1.5;
    # x0 = 0, 0, 1, 1, x1 = 1, 1, 1, 1 (clamped), dx = 0, .5, 0, .5 -> 0, 2, 4, 4.
    x = np.array([0, 4], np.float16).reshape(1, 1, 2, 1)
    (o,) = run_op(Op.RESIZE_BILINEAR, [inp(F16, x), i32(4), i32(1)], [out(F16, [1, 1, 4, 1])])
    assert o.reshape(-1).tolist() == [0.0, 2.0, 4.0, 4.0]


def test_resize_nearest_neighbor_int_size_and_float16_scale_nchw():
    # 4x4 NHWC image 0..15 to 2x2: source rows/columns floor(i * 2) = 0, 2 -> pixels
    # (0, 0) = 0, (0, 2) = 2, (2, 0) = 8, (2, 2) = 10.
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    (o,) = run_op(Op.RESIZE_NEAREST_NEIGHBOR, [inp(F32, x), i32(2), i32(2), flag(False)],
                  [out(F32, [1, 2, 2, 1])])
    assert o.reshape(-1).tolist() == [0, 2, 8, 10]
    # NCHW [1, 1, 1, 2] = [7, 9], scales 1.5: width floor(2 * 1.5) = 3, height floor(1.5) = 1;
    # columns floor(j * 2/3) = 0, 0, 1 -> [7, 7, 9].
    x = np.array([7, 9], np.float16).reshape(1, 1, 1, 2)
    (o,) = run_op(Op.RESIZE_NEAREST_NEIGHBOR, [inp(F16, x), f16(1.5), f16(1.5), flag(True)],
                  [out(F16, [1, 1, 1, 3])])
    assert o.reshape(-1).tolist() == [7, 7, 9]


def test_resize_nearest_neighbor_quant8_moves_raw_values():
    # [1, 1, 3, 1] raw [1, 200, 255] to width 2: columns floor(j * 3/2) = 0, 1 -> [1, 200]
    q = np.array([1, 200, 255], np.uint8).reshape(1, 1, 3, 1)
    (o,) = run_op(Op.RESIZE_NEAREST_NEIGHBOR, [inp(Q8, q, 0.25, 3), i32(2), i32(1), flag(False)],
                  [out(Q8, [1, 1, 2, 1], 0.25, 3)])
    assert o.reshape(-1).tolist() == [1, 200]


def test_resize_rejects_empty_output_and_other_quantization():
    x = np.zeros((1, 2, 2, 1), np.float32)
    # scale 0.4: floor(2 * 0.4) = 0 -> output width 0 is rejected
    with pytest.raises(NnapiError, match=r"input 1 \(width\): output width must be > 0, got 0"):
        run_op(Op.RESIZE_NEAREST_NEIGHBOR, [inp(F32, x), f32(0.4), f32(1.0), flag(False)],
               [out(F32, [1, 2, 0, 1])])
    with pytest.raises(NnapiError, match="output scale 0.25 and zeroPoint 0 must equal input"):
        run_op(Op.RESIZE_BILINEAR, [inp(Q8, x.astype(np.uint8), 0.5, 0), i32(2), i32(2)],
               [out(Q8, [1, 2, 2, 1], 0.25, 0)])
    with pytest.raises(OperationError, match=r"input 2 \(height\): output height must be > 0"):
        run_direct(Op.RESIZE_BILINEAR, [view(F32, x), view(T.INT32, np.int32(3)),
                                        view(T.INT32, np.int32(0))], [OperandView(F32, (0, 0, 0, 0))])


def test_resize_accepts_zero_batches():
    # [0, 2, 2, 3] resized to 3x4 -> [0, 3, 4, 3] (NHWC); NCHW [0, 3, 2, 2] -> [0, 3, 3, 4]
    for op in (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR):
        for nchw, shape, expected in ((False, (0, 2, 2, 3), (0, 3, 4, 3)),
                                      (True, (0, 3, 2, 2), (0, 3, 3, 4))):
            ins = [view(F32, np.zeros(shape, np.float32)), view(T.INT32, np.int32(4)),
                   view(T.INT32, np.int32(3)), view(T.BOOL, np.bool_(nchw))]
            shapes, (o,) = run_direct(op, ins, [OperandView(F32, (0, 0, 0, 0))])
            assert shapes == [expected] and o.shape == expected


def test_resize_feature_levels():
    x32, x16 = OperandView(F32, (1, 2, 2, 1)), OperandView(F16, (1, 2, 2, 1))
    o32, o16 = OperandView(F32, (1, 4, 4, 1)), OperandView(F16, (1, 4, 4, 1))
    i, s32, s16 = OperandView(T.INT32, ()), OperandView(T.FLOAT32, ()), OperandView(T.FLOAT16, ())
    assert level(Op.RESIZE_BILINEAR, [x32, i, i], [o32]) == 1
    assert level(Op.RESIZE_BILINEAR, [x32, s32, s32], [o32]) == 3
    assert level(Op.RESIZE_BILINEAR, [x16, s16, s16, OperandView(T.BOOL, ())], [o16]) == 3
    # a float16 image takes FLOAT16 scales, not FLOAT32; nearest neighbour needs the flag
    assert REGISTRY[Op.RESIZE_BILINEAR].match([x16, s32, s32], [o16]) is None
    assert REGISTRY[Op.RESIZE_NEAREST_NEIGHBOR].match([x32, i, i], [o32]) is None


# --- SOFTMAX -----------------------------------------------------------------------------

def test_softmax_float16_rank3_negative_axis():
    # shape [2, 1, 2], axis -3 (= 0), beta 1: column 0 holds (0, ln 3) -> (1/4, 3/4);
    # column 1 holds (0, -ln 3) -> (3/4, 1/4).  (ln 3 in float16 is 1.0986; e^that = 3.0000
    # to 4 digits, within the fp16 tolerance.)
    ln3 = np.log(3.0)
    x = np.array([[[0.0, 0.0]], [[ln3, -ln3]]], np.float16)
    (o,) = run_op(Op.SOFTMAX, [inp(F16, x), f16(1.0), i32(-3)], [out(F16, [2, 1, 2])])
    np.testing.assert_allclose(o.astype(np.float64).reshape(2, 2), [[0.25, 0.75], [0.75, 0.25]],
                               atol=5 * 2**-10)


def test_softmax_quant8_rank1_and_float32_rank3_against_numpy():
    # rank 1 quant8 [q, q]: equal logits -> 0.5 each -> 0.5 * 256 = 128 (scale 1/256, zp 0)
    (o,) = run_op(Op.SOFTMAX, [inp(Q8, np.array([7, 7], np.uint8), 0.1, 0), f32(1.0)],
                  [out(Q8, [2], 1 / 256, 0)])
    assert o.tolist() == [128, 128]
    # rank 3 float32, axis 1, beta 0.5; independent formula: exp(b x) / sum over axis 1
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    e = np.exp(0.5 * x.astype(np.float64))
    (o,) = run_op(Op.SOFTMAX, [inp(F32, x), f32(0.5), i32(1)], [out(F32, [2, 3, 4])])
    np.testing.assert_allclose(o, e / e.sum(axis=1, keepdims=True), rtol=1e-6)


def test_softmax_axis_out_of_range_and_zero_batches():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(NnapiError, match=r"input 2 \(axis\) value 2 is out of range"):
        run_op(Op.SOFTMAX, [inp(F32, x), f32(1.0), i32(2)], [out(F32, [2, 3])])
    shapes, (o,) = run_direct(Op.SOFTMAX, [view(F32, np.zeros((0, 4), np.float32)),
                                           view(T.FLOAT32, np.float32(1.0))], [OperandView(F32, (0, 4))])
    assert shapes == [(0, 4)] and o.shape == (0, 4)


def test_softmax_feature_levels():
    beta = OperandView(T.FLOAT32, ())
    assert level(Op.SOFTMAX, [OperandView(F32, (2, 3)), beta], [OperandView(F32, (2, 3))]) == 1
    assert level(Op.SOFTMAX, [OperandView(F32, (2, 3, 4)), beta], [OperandView(F32, (2, 3, 4))]) == 3
    assert level(Op.SOFTMAX, [OperandView(F32, (2, 3)), beta, OperandView(T.INT32, ())],
                 [OperandView(F32, (2, 3))]) == 3


# --- L2_NORMALIZATION --------------------------------------------------------------------

def test_l2_normalization_quant8_axis0():
    # shape [2, 1], axis 0, input scale 1 zp 128: q [131, 132] -> real [3, 4] -> /5 ->
    # [0.6, 0.8]; output scale 1/128, zp 128: 0.6 * 128 + 128 = 204.8 -> 205,
    # 0.8 * 128 + 128 = 230.4 -> 230.
    q = np.array([[131], [132]], np.uint8)
    (o,) = run_op(Op.L2_NORMALIZATION, [inp(Q8, q, 1.0, 128), i32(0)], [out(Q8, [2, 1], 1 / 128, 128)])
    assert o.reshape(-1).tolist() == [205, 230]


def test_l2_normalization_float16_rank1_and_zeros():
    # [3, 4] / 5 = [0.6, 0.8] (float16: nearest to 0.6 is 0.5996, to 0.8 is 0.7998);
    # an all-zero vector gives zeros.
    (o,) = run_op(Op.L2_NORMALIZATION, [inp(F16, np.array([3, 4], np.float16))], [out(F16, [2])])
    assert o.tolist() == [np.float16(0.6), np.float16(0.8)]
    (o,) = run_op(Op.L2_NORMALIZATION, [inp(F32, np.zeros((2, 2), np.float32)), i32(-2)],
                  [out(F32, [2, 2])])
    assert o.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_l2_normalization_quant8_output_quantization_is_checked():
    with pytest.raises(NnapiError, match="must have scale 1/128 and zeroPoint 128"):
        run_op(Op.L2_NORMALIZATION, [inp(Q8, np.array([1, 2], np.uint8), 1.0, 0)],
               [out(Q8, [2], 1 / 256, 0)])


# --- LOCAL_RESPONSE_NORMALIZATION ----------------------------------------------------------

def test_lrn_float16_rank2_axis0():
    # shape [3, 1], axis 0, radius 1, bias 1, alpha 1, beta 1; x = [1, 2, 3]:
    #   d0: window 1^2 + 2^2 = 5        -> 1 / (1 + 5)  = 1/6
    #   d1: 1 + 4 + 9 = 14              -> 2 / 15
    #   d2: 4 + 9 = 13                  -> 3 / 14
    x = np.array([[1], [2], [3]], np.float16)
    (o,) = run_op(Op.LOCAL_RESPONSE_NORMALIZATION,
                  [inp(F16, x), i32(1), f16(1.0), f16(1.0), f16(1.0), i32(0)], [out(F16, [3, 1])])
    np.testing.assert_allclose(o.astype(np.float64).reshape(-1), [1 / 6, 2 / 15, 3 / 14], rtol=1e-3)


def test_lrn_float32_rank1_default_axis():
    # x = [1, 2], radius 0, bias 1, alpha 0.5, beta 0.5: x / sqrt(1 + 0.5 x^2)
    #   = 1 / sqrt(1.5) = 0.81649658, 2 / sqrt(3) = 1.15470054
    (o,) = run_op(Op.LOCAL_RESPONSE_NORMALIZATION,
                  [inp(F32, np.array([1, 2], np.float32)), i32(0), f32(1.0), f32(0.5), f32(0.5)],
                  [out(F32, [2])])
    np.testing.assert_allclose(o, [0.81649658, 1.15470054], rtol=1e-6)


def test_lrn_rejects_bad_axis_and_zero_bias():
    x = np.ones((2, 2), np.float32)
    with pytest.raises(NnapiError, match=r"input 5 \(axis\) value -3 is out of range"):
        run_op(Op.LOCAL_RESPONSE_NORMALIZATION,
               [inp(F32, x), i32(1), f32(1.0), f32(1.0), f32(1.0), i32(-3)], [out(F32, [2, 2])])
    with pytest.raises(NnapiError, match=r"input 2 \(bias\) must not be zero"):
        run_op(Op.LOCAL_RESPONSE_NORMALIZATION,
               [inp(F32, x), i32(1), f32(0.0), f32(1.0), f32(1.0)], [out(F32, [2, 2])])


# --- INSTANCE_NORMALIZATION (no corpus model) ----------------------------------------------

def test_instance_normalization_float32_nhwc():
    # [1, 2, 2, 1] = [1, 2, 3, 4]: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25;
    # epsilon 2.75 -> sqrt(1.25 + 2.75) = 2; gamma 2, beta 1: (x - 2.5) * 2 / 2 + 1
    #   = [-0.5, 0.5, 1.5, 2.5]
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    (o,) = run_op(Op.INSTANCE_NORMALIZATION, [inp(F32, x), f32(2.0), f32(1.0), f32(2.75), flag(False)],
                  [out(F32, [1, 2, 2, 1])])
    assert o.reshape(-1).tolist() == [-0.5, 0.5, 1.5, 2.5]


def test_instance_normalization_float16_nchw_per_channel_and_batch():
    # NCHW [2, 2, 1, 2], gamma 3, beta 0.5, epsilon 3:
    #   batch 0 channel 0 [0, 2]: mean 1, var 1 -> (x - 1) * 3 / sqrt(4) + 0.5 = [-1, 2]
    #   batch 0 channel 1 [5, 5]: mean 5, var 0 -> 0 * 3 / sqrt(3) + 0.5 = [0.5, 0.5]
    #   batch 1 channel 0 [4, 0]: mean 2, var 4 -> (x - 2) * 3 / sqrt(7) + 0.5
    #                              = [0.5 + 6/sqrt 7, 0.5 - 6/sqrt 7] = [2.767767, -1.767767]
    #   batch 1 channel 1 [-1, 1]: mean 0, var 1 -> x * 3 / 2 + 0.5 = [-1, 2]
    x = np.array([[[[0, 2]], [[5, 5]]], [[[4, 0]], [[-1, 1]]]], np.float16)
    (o,) = run_op(Op.INSTANCE_NORMALIZATION, [inp(F16, x), f16(3.0), f16(0.5), f16(3.0), flag(True)],
                  [out(F16, [2, 2, 1, 2])])
    expected = [[-1, 2], [0.5, 0.5], [0.5 + 6 / 7**0.5, 0.5 - 6 / 7**0.5], [-1, 2]]
    np.testing.assert_allclose(o.astype(np.float64).reshape(4, 2), expected, atol=5 * 2**-10,
                               rtol=5 * 2**-10)


def test_instance_normalization_matches_numpy_formula_and_needs_rank4():
    # independent formula on NHWC: (x - x.mean((1, 2))) * g / sqrt(x.var((1, 2)) + eps) + b
    x = (np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5) % 7) / 3
    x64 = x.astype(np.float64)
    ref = ((x64 - x64.mean(axis=(1, 2), keepdims=True)) * 1.5
           / np.sqrt(x64.var(axis=(1, 2), keepdims=True) + 0.01) - 0.25)
    (o,) = run_op(Op.INSTANCE_NORMALIZATION, [inp(F32, x), f32(1.5), f32(-0.25), f32(0.01), flag(False)],
                  [out(F32, [2, 3, 4, 5])])
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(NnapiError, match="allowed ranks"):
        run_op(Op.INSTANCE_NORMALIZATION,
               [inp(F32, np.zeros((2, 3), np.float32)), f32(1.0), f32(0.0), f32(1.0), flag(False)],
               [out(F32, [2, 3])])


# --- LOG_SOFTMAX ---------------------------------------------------------------------------

def test_log_softmax_float32_rank5_last_axis():
    # [0, ln 3] with beta 1: x - log(e^0 + e^ln3) = x - ln 4 -> [-ln 4, ln 3 - ln 4]
    #   = [-1.38629436, -0.28768207]
    x = np.array([0, np.log(3.0)], np.float32).reshape(1, 1, 1, 1, 2)
    (o,) = run_op(Op.LOG_SOFTMAX, [inp(F32, x), f32(1.0), i32(-1)], [out(F32, [1, 1, 1, 1, 2])])
    np.testing.assert_allclose(o.reshape(-1), [-1.38629436, -0.28768207], rtol=1e-6)


def test_log_softmax_float16_axis0_against_numpy():
    # independent formula (the spec's, without the max shift): x b - log(sum(exp(x b)), axis 0)
    x = np.array([[1, -2, 0.5], [3, 0, -1]], np.float16)
    xb = x.astype(np.float64) * 2.0
    ref = xb - np.log(np.exp(xb).sum(axis=0, keepdims=True))
    (o,) = run_op(Op.LOG_SOFTMAX, [inp(F16, x), f16(2.0), i32(0)], [out(F16, [2, 3])])
    np.testing.assert_allclose(o.astype(np.float64), ref, atol=5 * 2**-10, rtol=5 * 2**-10)


def test_log_softmax_rejects_bad_axis_and_beta():
    x = np.zeros((2, 2), np.float32)
    with pytest.raises(NnapiError, match=r"input 2 \(axis\) value 2 is out of range"):
        run_op(Op.LOG_SOFTMAX, [inp(F32, x), f32(1.0), i32(2)], [out(F32, [2, 2])])
    with pytest.raises(NnapiError, match=r"input 1 \(beta\) must be a positive"):
        run_op(Op.LOG_SOFTMAX, [inp(F32, x), f32(0.0), i32(0)], [out(F32, [2, 2])])
    with pytest.raises(OperationError, match=r"input 2 \(axis\) value -3 is out of range"):
        run_direct(Op.LOG_SOFTMAX, [view(F32, x), view(T.FLOAT32, np.float32(1)),
                                    view(T.INT32, np.int32(-3))], [OperandView(F32, (2, 2))],
                   validate=False)


# --- feature level 4: TENSOR_QUANT8_ASYMM_SIGNED forms, resize align_corners / half pixel ----

Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED


def test_max_and_average_pool_quant8_signed_nchw_are_feature_level_4():
    # MAX: NCHW [1, 1, 2, 3] raw [[-100, 5, -2], [3, -4, 6]] (scale 1, zp -10: the output has
    # the same quantization, so raw maxima come out): 2x2 VALID windows -> max(-100, 5, 3, -4)
    # = 5 and max(5, -2, -4, 6) = 6.
    x = np.array([[[[-100, 5, -2], [3, -4, 6]]]], np.int8)
    args = [i32(PaddingCode.VALID), i32(1), i32(1), i32(2), i32(2), i32(FuseCode.NONE), flag(True)]
    (o,) = run_op(Op.MAX_POOL_2D, [inp(Q8S, x, 1.0, -10), *args], [out(Q8S, [1, 1, 1, 2], 1.0, -10)])
    assert o.dtype == np.int8 and o.reshape(-1).tolist() == [5, 6]
    # AVERAGE, explicit padding + flag: raw [-3, 1, 5, 9] at scale 0.5, zp 1 -> real
    # [-2, 0, 2, 4]; mean 1 -> 1 / 0.5 + 1 = 3.
    x = np.array([-3, 1, 5, 9], np.int8).reshape(1, 1, 2, 2)
    (o,) = run_op(Op.AVERAGE_POOL_2D, [inp(Q8S, x, 0.5, 1), i32(0), i32(0), i32(0), i32(0), i32(1),
                                       i32(1), i32(2), i32(2), i32(FuseCode.NONE), flag(True)],
                  [out(Q8S, [1, 1, 1, 1], 0.5, 1)])
    assert o.reshape(-1).tolist() == [3]
    scalars = [OperandView(T.INT32, ()) for _ in range(6)]
    xs, os_ = OperandView(Q8S, (1, 2, 2, 1), 1.0), OperandView(Q8S, (1, 1, 1, 1), 1.0)
    for op in (Op.MAX_POOL_2D, Op.AVERAGE_POOL_2D):
        assert level(op, [xs, *scalars], [os_]) == 4
        assert level(op, [xs, *scalars, OperandView(T.BOOL, ())], [os_]) == 4
    assert REGISTRY[Op.L2_POOL_2D].match([xs, *scalars], [os_]) is None


def test_resize_bilinear_align_corners_and_half_pixel_centers():
    # [1, 1, 2, 1] = [0, 4] (float32). Height 1 -> 1 samples row 0 in every mode.
    # align_corners, width 3: scale (2 - 1) / (3 - 1) = 0.5, positions 0, 0.5, 1 -> [0, 2, 4]
    # (legacy would use scale 2/3: [0, 2.667, 4]).
    x = np.array([0, 4], np.float32).reshape(1, 1, 2, 1)
    (o,) = run_op(Op.RESIZE_BILINEAR, [inp(F32, x), i32(3), i32(1), flag(False), flag(True),
                                       flag(False)], [out(F32, [1, 1, 3, 1])])
    assert o.reshape(-1).tolist() == [0, 2, 4]
    # half_pixel_centers, width 4: scale 0.5, positions (j + 0.5) * 0.5 - 0.5 = -0.25, 0.25,
    # 0.75, 1.25. j = 0: lower max(floor, 0) = 0 = upper ceil(-0.25) -> 0; j = 1: 0.75*0 +
    # 0.25*4 = 1; j = 2: 3; j = 3: lower 1, upper min(2, 1) = 1 -> 4.
    (o,) = run_op(Op.RESIZE_BILINEAR, [inp(F32, x), i32(4), i32(1), flag(False), flag(False),
                                       flag(True)], [out(F32, [1, 1, 4, 1])])
    assert o.reshape(-1).tolist() == [0, 1, 3, 4]
    # the 5-input form (align_corners without half_pixel_centers), quant8 signed, NCHW:
    # raw [-8, 8] (scale 0.5, zp 0 both sides) to width 3 -> [-8, 0, 8].
    q = np.array([-8, 8], np.int8).reshape(1, 1, 1, 2)
    (o,) = run_op(Op.RESIZE_BILINEAR, [inp(Q8S, q, 0.5, 0), i32(3), i32(1), flag(True), flag(True)],
                  [out(Q8S, [1, 1, 1, 3], 0.5, 0)])
    assert o.reshape(-1).tolist() == [-8, 0, 8]


def test_resize_nearest_neighbor_align_corners_and_half_pixel_centers_quant8_signed():
    # raw [-5, 0, 7] (width 3) to width 5, values copied raw:
    #   align_corners: scale (3 - 1) / (5 - 1) = 0.5, positions 0, .5, 1, 1.5, 2, rounded half
    #     away from zero -> 0, 1, 1, 2, 2 -> [-5, 0, 0, 7, 7]
    #   half_pixel_centers: scale 0.6, positions (j + 0.5) * 0.6 = .3, .9, 1.5, 2.1, 2.7,
    #     floor -> 0, 0, 1, 2, 2 -> [-5, -5, 0, 7, 7]
    #   legacy: positions j * 0.6 = 0, .6, 1.2, 1.8, 2.4 -> 0, 0, 1, 1, 2 -> [-5, -5, 0, 0, 7]
    q = np.array([-5, 0, 7], np.int8).reshape(1, 1, 3, 1)
    for align, half, expected in ((True, False, [-5, 0, 0, 7, 7]), (False, True, [-5, -5, 0, 7, 7]),
                                  (False, False, [-5, -5, 0, 0, 7])):
        (o,) = run_op(Op.RESIZE_NEAREST_NEIGHBOR,
                      [inp(Q8S, q, 0.25, 3), i32(5), i32(1), flag(False), flag(align), flag(half)],
                      [out(Q8S, [1, 1, 5, 1], 0.25, 3)])
        assert o.reshape(-1).tolist() == expected


def test_resize_rejects_align_corners_with_half_pixel_centers():
    x = np.zeros((1, 2, 2, 1), np.float32)
    both = [flag(False), flag(True), flag(True)]
    for op in (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR):
        with pytest.raises(NnapiError, match=r"input 5 \(half_pixel_centers\) is true, so input 4"):
            run_op(op, [inp(F32, x), i32(3), i32(3), *both], [out(F32, [1, 3, 3, 1])])
        ins = [view(F32, x), view(T.INT32, np.int32(3)), view(T.INT32, np.int32(3)),
               *[view(T.BOOL, np.bool_(v)) for v in (False, True, True)]]
        with pytest.raises(OperationError, match="align_corners"):
            run_direct(op, ins, [OperandView(F32, (0, 0, 0, 0))], validate=False)


def test_resize_feature_levels_of_the_fl4_forms():
    x32, xs = OperandView(F32, (1, 2, 2, 1)), OperandView(Q8S, (1, 2, 2, 1), 0.5)
    o32, os_ = OperandView(F32, (1, 4, 4, 1)), OperandView(Q8S, (1, 4, 4, 1), 0.5)
    i, s32, b = OperandView(T.INT32, ()), OperandView(T.FLOAT32, ()), OperandView(T.BOOL, ())
    assert level(Op.RESIZE_BILINEAR, [xs, i, i], [os_]) == 4
    assert level(Op.RESIZE_BILINEAR, [xs, s32, s32, b], [os_]) == 4
    assert level(Op.RESIZE_NEAREST_NEIGHBOR, [xs, i, i, b], [os_]) == 4
    for op in (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR):
        assert level(op, [x32, i, i, b, b], [o32]) == 4
        assert level(op, [x32, s32, s32, b, b, b], [o32]) == 4


def test_softmax_quant8_signed_rank1_and_rank3_with_axis():
    # input scale ln 3 (binary32), zp 0: raw [0, 1] -> real [0, ln 3] -> softmax [1/4, 3/4];
    # output scale 1/256, zp -128: 64 - 128 = -64, 192 - 128 = 64.
    s = float(np.log(3.0))
    (o,) = run_op(Op.SOFTMAX, [inp(Q8S, np.array([0, 1], np.int8), s, 0), f32(1.0)],
                  [out(Q8S, [2], 1 / 256, -128)])
    assert o.tolist() == [-64, 64]
    # shape [2, 1, 1], axis 0: raw [1, 0] -> [3/4, 1/4] -> [64, -64]
    (o,) = run_op(Op.SOFTMAX, [inp(Q8S, np.array([1, 0], np.int8).reshape(2, 1, 1), s, 0), f32(1.0),
                               i32(0)], [out(Q8S, [2, 1, 1], 1 / 256, -128)])
    assert o.reshape(-1).tolist() == [64, -64]
    beta = OperandView(T.FLOAT32, ())
    for dims in ((2,), (2, 3), (1, 2, 3)):
        x, y = OperandView(Q8S, dims, 0.5), OperandView(Q8S, dims, 1 / 256, -128)
        assert level(Op.SOFTMAX, [x, beta], [y]) == 4
        assert level(Op.SOFTMAX, [x, beta, OperandView(T.INT32, ())], [y]) == 4
    with pytest.raises(NnapiError, match="must have scale 1/256 and zeroPoint -128"):
        run_op(Op.SOFTMAX, [inp(Q8S, np.array([0, 1], np.int8), s, 0), f32(1.0)],
               [out(Q8S, [2], 1 / 256, 0)])


def test_l2_normalization_quant8_signed():
    # shape [2, 1], axis 0: raw [6, 8] at scale 0.5 -> [3, 4] -> [0.6, 0.8]; output scale
    # 1/128, zp 0: 76.8 -> 77, 102.4 -> 102. An all-zero slice gives 0 (FL4 spec).
    q = np.array([[6], [8]], np.int8)
    (o,) = run_op(Op.L2_NORMALIZATION, [inp(Q8S, q, 0.5, 0), i32(0)], [out(Q8S, [2, 1], 1 / 128, 0)])
    assert o.reshape(-1).tolist() == [77, 102]
    (o,) = run_op(Op.L2_NORMALIZATION, [inp(Q8S, np.array([3, 3], np.int8), 0.5, 3)],
                  [out(Q8S, [2], 1 / 128, 0)])
    assert o.tolist() == [0, 0]
    with pytest.raises(NnapiError, match=r"must have scale 1/128 and zeroPoint 0, got .* zeroPoint -1"):
        run_op(Op.L2_NORMALIZATION, [inp(Q8S, q, 0.5, 0)], [out(Q8S, [2, 1], 1 / 128, -1)])
    x, y = OperandView(Q8S, (2, 3), 0.5), OperandView(Q8S, (2, 3), 1 / 128)
    assert level(Op.L2_NORMALIZATION, [x], [y]) == 4
    assert level(Op.L2_NORMALIZATION, [x, OperandView(T.INT32, ())], [y]) == 4
