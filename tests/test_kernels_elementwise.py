"""Element-wise kernels of feature levels 3+ (elementwise.py, math_ops.py, comparison.py,
cast.py) on small cases. Each expected value is worked out by hand in a comment or comes
from an independent numpy formula named where used."""
import numpy as np
import pytest

from runtime.errors import HalError, NnapiError, OperationError
from runtime.ops import OperandView
from runtime.types import FuseCode, OperandType as T, OperationType as Op
from tests.util import act, const, f16, f32, inp, level, out, run_direct, run_op, view

F16, F32, I32, Q8, B8 = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32,
                         T.TENSOR_QUANT8_ASYMM, T.TENSOR_BOOL8)
Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED


# --- FL3 forms of ADD, MUL, SUB, DIV --------------------------------------------------------

def test_add_float16_broadcasts():
    # [[0.5], [1.25]] + [1, 2, 4] = [[1.5, 2.5, 4.5], [2.25, 3.25, 5.25]] (all exact in fp16)
    a = np.array([[0.5], [1.25]], np.float16)
    b = np.array([1, 2, 4], np.float16)
    (o,) = run_op(Op.ADD, [inp(F16, a), inp(F16, b), act()], [out(F16, [2, 3])])
    assert o.dtype == np.float16
    np.testing.assert_array_equal(o, [[1.5, 2.5, 4.5], [2.25, 3.25, 5.25]])


def test_mul_float16_relu6_and_div_float16():
    # MUL: [3, -2] * [4, 4] = [12, -8], RELU6 -> [6, 0]. DIV: [1, -3] / [4, 2] = [0.25, -1.5]
    (o,) = run_op(Op.MUL, [inp(F16, np.float16([3, -2])), inp(F16, np.float16([4, 4])),
                           act(FuseCode.RELU6)], [out(F16, [2])])
    np.testing.assert_array_equal(o, [6, 0])
    (o,) = run_op(Op.DIV, [inp(F16, np.float16([1, -3])), inp(F16, np.float16([4, 2])), act()],
                  [out(F16, [2])])
    np.testing.assert_array_equal(o, [0.25, -1.5])


def test_sub_quant8_different_scales_is_feature_level_3():
    # a: (20 - 10) * 0.5 = 5.0; b: (3 - 1) * 1.0 = 2.0; 5 - 2 = 3.0 -> 3 / 0.25 + 8 = 20
    (o,) = run_op(Op.SUB, [inp(Q8, np.uint8([20]), 0.5, 10), inp(Q8, np.uint8([3]), 1.0, 1), act()],
                  [out(Q8, [1], 0.25, 8)])
    assert o.tolist() == [20]
    views = [view(Q8, np.uint8([20]), 0.5, 10), view(Q8, np.uint8([3]), 1.0, 1),
             view(T.INT32, np.int32(0))]
    assert level(Op.SUB, views, [OperandView(Q8, (1,), 0.25, 8)]) == 3


def test_add_zero_sized_batch_broadcasts_to_empty():
    # [0, 2] + [1, 2] -> [0, 2] (0 against 1 gives 0), an empty float16 array
    a = OperandView(F16, (0, 2), value=np.zeros((0, 2), np.float16))
    b = OperandView(F16, (1, 2), value=np.float16([[1, 2]]))
    shapes, (o,) = run_direct(Op.ADD, [a, b, view(T.INT32, np.int32(0))], [OperandView(F16, (0, 2))])
    assert shapes == [(0, 2)] and o.shape == (0, 2) and o.dtype == np.float16


def test_broadcast_mismatch_names_both_inputs():
    a, b = view(F32, np.zeros((2, 3), np.float32)), view(F32, np.zeros((4,), np.float32))
    with pytest.raises(OperationError, match=r"input 0 shape \(2, 3\) and input 1 shape \(4,\)"):
        run_direct(Op.ADD, [a, b, view(T.INT32, np.int32(0))], [OperandView(F32, (0, 0))])


# --- FL3 forms of the activations, FLOOR, DEQUANTIZE -----------------------------------------

def test_float16_activations_and_floor():
    x = np.float16([-2.5, -0.5, 0.5, 7.0])
    for op, expected in ((Op.RELU, [0, 0, 0.5, 7]),        # max(0, x)
                         (Op.RELU1, [-1, -0.5, 0.5, 1]),    # clamp(x, -1, 1)
                         (Op.RELU6, [0, 0, 0.5, 6]),        # clamp(x, 0, 6)
                         (Op.FLOOR, [-3, -1, 0, 7])):       # floor
        (o,) = run_op(op, [inp(F16, x)], [out(F16, [4])])
        np.testing.assert_array_equal(o, expected, err_msg=op.name)
    # independent formula: float16 of 1 / (1 + exp(-x)) and of tanh(x), computed in float64
    (o,) = run_op(Op.LOGISTIC, [inp(F16, x)], [out(F16, [4])])
    np.testing.assert_array_equal(o, (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float16))
    (o,) = run_op(Op.TANH, [inp(F16, x)], [out(F16, [4])])
    np.testing.assert_array_equal(o, np.tanh(x.astype(np.float64)).astype(np.float16))


def test_tanh_quant8():
    # input scale 0.5, zp 128: q 130 -> 1.0, q 128 -> 0, q 0 -> -64.
    # tanh(1.0) = 0.761594 -> 0.761594 * 128 = 97.48 -> 97, + 128 = 225;
    # tanh(0) = 0 -> 128; tanh(-64) = -1 -> -128 + 128 = 0.
    (o,) = run_op(Op.TANH, [inp(Q8, np.uint8([130, 128, 0]), 0.5, 128)],
                  [out(Q8, [3], 1 / 128, 128)])
    assert o.tolist() == [225, 128, 0]


def test_tanh_quant8_output_must_be_scale_1_128_zero_point_128():
    with pytest.raises(NnapiError, match="scale 1/128 and zeroPoint 128"):
        run_op(Op.TANH, [inp(Q8, np.uint8([130]), 0.5, 128)], [out(Q8, [1], 1 / 256, 0)])


def test_dequantize_symm_to_float16():
    # TENSOR_QUANT8_SYMM scale 0.25 (zeroPoint 0): [-4, 0, 6] -> [-1, 0, 1.5]
    (o,) = run_op(Op.DEQUANTIZE, [inp(T.TENSOR_QUANT8_SYMM, np.int8([-4, 0, 6]), 0.25)],
                  [out(F16, [3])])
    assert o.dtype == np.float16
    np.testing.assert_array_equal(o, [-1, 0, 1.5])


def test_dequantize_per_channel():
    # channelDim 1, scales [0.5, 2]: [[2, 3], [-4, 5]] -> [[1, 6], [-2, 10]]
    (o,) = run_op(Op.DEQUANTIZE, [const(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, np.int8([[2, 3], [-4, 5]]),
                                        channel_quant=([0.5, 2.0], 1))], [out(F32, [2, 2])])
    np.testing.assert_array_equal(o, [[1, 6], [-2, 10]])


def test_dequantize_zero_sized():
    x = OperandView(Q8, (0, 3), 0.5, 1, value=np.zeros((0, 3), np.uint8))
    shapes, (o,) = run_direct(Op.DEQUANTIZE, [x], [OperandView(F32, (0, 3))])
    assert shapes == [(0, 3)] and o.shape == (0, 3) and o.dtype == np.float32


# --- math_ops ------------------------------------------------------------------------------

def test_unary_math_float32():
    x = np.float32([0.25, 1.0, 4.0])
    cases = {Op.ABS: [0.25, 1, 4], Op.NEG: [-0.25, -1, -4], Op.SQRT: [0.5, 1, 2],
             Op.RSQRT: [2, 1, 0.5]}  # sqrt(0.25) = 0.5, 1/sqrt(4) = 0.5: exact
    for op, expected in cases.items():
        (o,) = run_op(op, [inp(F32, x)], [out(F32, [3])])
        np.testing.assert_array_equal(o, expected, err_msg=op.name)
    # independent formulas (numpy float64, rounded to float32; criteria tolerance)
    for op, fn in ((Op.EXP, np.exp), (Op.LOG, np.log), (Op.SIN, np.sin)):
        (o,) = run_op(op, [inp(F32, x)], [out(F32, [3])])
        np.testing.assert_allclose(o, fn(x.astype(np.float64)), rtol=1e-6, err_msg=op.name)


def test_abs_float16_and_log_of_zero():
    (o,) = run_op(Op.ABS, [inp(F16, np.float16([-1.5, 2]))], [out(F16, [2])])
    np.testing.assert_array_equal(o, [1.5, 2])
    # ln(0) = -inf, ln(-1) = NaN (C library results, as AOSP)
    (o,) = run_op(Op.LOG, [inp(F32, np.float32([0, -1]))], [out(F32, [2])])
    assert o[0] == -np.inf and np.isnan(o[1])


def test_neg_int32_wraps_like_two_complement():
    # -(5) = -5, -(-7) = 7, -(-2^31) wraps to -2^31 in int32
    (o,) = run_op(Op.NEG, [inp(I32, np.int32([5, -7, -2**31]))], [out(I32, [3])])
    assert o.tolist() == [-5, 7, -2**31]


def test_pow_broadcasts_exponent():
    # [[2, 3], [4, 9]] ^ [2, 0.5] = [[4, sqrt 3], [16, 3]]
    base = np.float32([[2, 3], [4, 9]])
    (o,) = run_op(Op.POW, [inp(F32, base), inp(F32, np.float32([2, 0.5]))], [out(F32, [2, 2])])
    np.testing.assert_allclose(o, [[4, np.sqrt(3)], [16, 3]], rtol=1e-6)


def test_maximum_minimum():
    # MAXIMUM int32 with broadcasting: max([[1, 5], [7, -2]], [3, 3]) = [[3, 5], [7, 3]]
    (o,) = run_op(Op.MAXIMUM, [inp(I32, np.int32([[1, 5], [7, -2]])), inp(I32, np.int32([3, 3]))],
                  [out(I32, [2, 2])])
    assert o.tolist() == [[3, 5], [7, 3]]
    # MINIMUM quant8, own scales: a (q - 0) * 1.0 = [2, 10]; b (q - 100) * 0.5 = [5, 4]
    # min = [2, 4] -> at scale 0.5, zp 10: 2/0.5 + 10 = 14, 4/0.5 + 10 = 18
    (o,) = run_op(Op.MINIMUM, [inp(Q8, np.uint8([2, 10]), 1.0, 0), inp(Q8, np.uint8([110, 108]), 0.5, 100)],
                  [out(Q8, [2], 0.5, 10)])
    assert o.tolist() == [14, 18]


def test_prelu_float_and_quant8():
    # x [-2, 3] with alpha [[0.5], [0.25]] broadcast -> [[-1, 3], [-0.5, 3]]
    (o,) = run_op(Op.PRELU, [inp(F32, np.float32([-2, 3])), inp(F32, np.float32([[0.5], [0.25]]))],
                  [out(F32, [2, 2])])
    np.testing.assert_array_equal(o, [[-1, 3], [-0.5, 3]])
    # quant8: x (q - 128) * 0.5 = [-4, 2]; alpha (q - 0) * 0.25 = 0.5 (q 2)
    # -> [-2, 2] at scale 0.25 zp 100: -8 + 100 = 92, 8 + 100 = 108
    (o,) = run_op(Op.PRELU, [inp(Q8, np.uint8([120, 132]), 0.5, 128), inp(Q8, np.uint8([2]), 0.25, 0)],
                  [out(Q8, [2], 0.25, 100)])
    assert o.tolist() == [92, 108]


# --- comparison ----------------------------------------------------------------------------

def test_comparisons_float_broadcast():
    a = np.float32([[1], [3]])
    b = np.float32([1, 2, 3])
    # rows: a = 1 and a = 3 against [1, 2, 3]
    expected = {Op.EQUAL: [[1, 0, 0], [0, 0, 1]], Op.NOT_EQUAL: [[0, 1, 1], [1, 1, 0]],
                Op.LESS: [[0, 1, 1], [0, 0, 0]], Op.LESS_EQUAL: [[1, 1, 1], [0, 0, 1]],
                Op.GREATER: [[0, 0, 0], [1, 1, 0]], Op.GREATER_EQUAL: [[1, 0, 0], [1, 1, 1]]}
    for op, e in expected.items():
        (o,) = run_op(op, [inp(F32, a), inp(F32, b)], [out(B8, [2, 3])])
        assert o.dtype == np.bool_ and o.astype(int).tolist() == e, op.name


def test_compare_quant8_as_real_values():
    # a: (q - 0) * 1.0 = [2, 3]; b: (q - 10) * 0.5 = [(14-10)*0.5 = 2, (18-10)*0.5 = 4]
    # EQUAL [True, False]; GREATER [False, False]
    args = [inp(Q8, np.uint8([2, 3]), 1.0, 0), inp(Q8, np.uint8([14, 18]), 0.5, 10)]
    (o,) = run_op(Op.EQUAL, args, [out(B8, [2])])
    assert o.tolist() == [True, False]
    (o,) = run_op(Op.GREATER, args, [out(B8, [2])])
    assert o.tolist() == [False, False]


def test_compare_bool8_and_logical():
    t, f = True, False
    a, b = np.array([f, f, t, t]), np.array([f, t, f, t])
    (o,) = run_op(Op.LESS, [inp(B8, a), inp(B8, b)], [out(B8, [4])])
    assert o.tolist() == [f, t, f, f]  # false < true only
    (o,) = run_op(Op.LOGICAL_AND, [inp(B8, a), inp(B8, b)], [out(B8, [4])])
    assert o.tolist() == [f, f, f, t]
    (o,) = run_op(Op.LOGICAL_OR, [inp(B8, a.reshape(4, 1)), inp(B8, np.array([t, f]))], [out(B8, [4, 2])])
    assert o.tolist() == [[t, f], [t, f], [t, t], [t, t]]  # row i: a[i] or [t, f]
    (o,) = run_op(Op.LOGICAL_NOT, [inp(B8, a)], [out(B8, [4])])
    assert o.tolist() == [t, t, f, f]


def test_select_float_and_quant8_requantizes():
    cond = np.array([True, False, True])
    (o,) = run_op(Op.SELECT, [inp(B8, cond), inp(F32, np.float32([1, 2, 3])), inp(F32, np.float32([-1, -2, -3]))],
                  [out(F32, [3])])
    np.testing.assert_array_equal(o, [1, -2, 3])
    # input1 (q - 0) * 1.0 = [4, 5, 6]; input2 (q - 0) * 2.0 = [2, 4, 6];
    # chosen [4, 4, 6] at scale 0.5 zp 1 -> [9, 9, 13]
    (o,) = run_op(Op.SELECT, [inp(B8, cond), inp(Q8, np.uint8([4, 5, 6]), 1.0, 0),
                              inp(Q8, np.uint8([1, 2, 3]), 2.0, 0)], [out(Q8, [3], 0.5, 1)])
    assert o.tolist() == [9, 9, 13]


def test_select_shapes_must_match():
    c = view(B8, np.array([True, False]))
    a, b = view(I32, np.int32([1, 2])), view(I32, np.int32([[1, 2]]))
    with pytest.raises(OperationError, match=r"input 2 shape \(1, 2\) must equal input 0"):
        run_direct(Op.SELECT, [c, a, b], [OperandView(I32, (2,))])


# --- cast ----------------------------------------------------------------------------------

def test_cast_truncates_and_clamps_raw_values():
    x = np.float32([2.7, -2.7, 300.0, -5.0])
    # to int32: truncation toward zero -> [2, -2, 300, -5]
    (o,) = run_op(Op.CAST, [inp(F32, x)], [out(I32, [4])])
    assert o.tolist() == [2, -2, 300, -5]
    # to quant8 (scale/zeroPoint ignored): clamp to [0, 255], then truncate -> [2, 0, 255, 0]
    (o,) = run_op(Op.CAST, [inp(F32, x)], [out(Q8, [4], 4.0, 100)])
    assert o.tolist() == [2, 0, 255, 0]
    # quant8 -> float32 moves the stored numbers: [0, 200] -> [0.0, 200.0] (not dequantized)
    (o,) = run_op(Op.CAST, [inp(Q8, np.uint8([0, 200]), 4.0, 100)], [out(F32, [2])])
    np.testing.assert_array_equal(o, [0, 200])
    # int32 -> float16: 2049 is not representable, nearest even is 2048; 70000 > 65504 -> inf
    (o,) = run_op(Op.CAST, [inp(I32, np.int32([2049, 70000]))], [out(F16, [2])])
    assert o.tolist() == [2048, np.inf]


def test_quantize_rounds_half_away_and_saturates():
    # scale 0.5, zp 10: 0.25/0.5 = 0.5 -> 1 -> 11; -0.25 -> -0.5 -> -1 -> 9;
    # 1000 -> 2000 + 10 -> 255; -100 -> -200 + 10 -> 0
    (o,) = run_op(Op.QUANTIZE, [inp(F32, np.float32([0.25, -0.25, 1000, -100]))],
                  [out(Q8, [4], 0.5, 10)])
    assert o.tolist() == [11, 9, 255, 0]
    (o,) = run_op(Op.QUANTIZE, [inp(F16, np.float16([1.5]))], [out(Q8, [1], 1.0, 0)])
    assert o.tolist() == [2]  # 1.5 -> 2 (half away from zero)


# --- FL4 forms: TENSOR_INT32 ADD/MUL/SUB/DIV, quant8-signed SUB -----------------------------

def test_int32_add_mul_sub_are_feature_level_4_and_wrap():
    # ADD: [1, -2] + [2^31 - 1, 5] = [2^31 (wraps to -2^31), 3]
    a, b = np.int32([1, -2]), np.int32([2**31 - 1, 5])
    (o,) = run_op(Op.ADD, [inp(I32, a), inp(I32, b), act()], [out(I32, [2])])
    assert o.tolist() == [-2**31, 3]
    # MUL: [3, -4] * [5] = [15, -20]; SUB: [3, -4] - [5] = [-2, -9]
    (o,) = run_op(Op.MUL, [inp(I32, np.int32([3, -4])), inp(I32, np.int32([5])), act()],
                  [out(I32, [2])])
    assert o.tolist() == [15, -20]
    (o,) = run_op(Op.SUB, [inp(I32, np.int32([3, -4])), inp(I32, np.int32([5])), act()],
                  [out(I32, [2])])
    assert o.tolist() == [-2, -9]
    views = [view(I32, np.int32([1])), view(I32, np.int32([1])), view(T.INT32, np.int32(0))]
    assert level(Op.ADD, views, [OperandView(I32, (1,))]) == 4


def test_int32_div_floors_and_zero_divisor_gives_zero():
    # 7/2 = 3.5 -> 3; -7/2 = -3.5 -> -4; 7/-2 -> -4; -7/-2 = 3.5 -> 3; 6/3 = 2; 5/0 -> 0
    a = np.int32([7, -7, 7, -7, 6, 5])
    b = np.int32([2, 2, -2, -2, 3, 0])
    (o,) = run_op(Op.DIV, [inp(I32, a), inp(I32, b), act()], [out(I32, [6])])
    assert o.tolist() == [3, -4, -4, 3, 2, 0]


def test_int32_binary_activation_must_be_none():
    views = [view(I32, np.int32([1])), view(I32, np.int32([1])), view(T.INT32, np.int32(1))]
    with pytest.raises(OperationError, match=r"input 2 \(activation\) value 1 must be NONE"):
        run_direct(Op.ADD, views, [OperandView(I32, (1,))])


def test_sub_quant8_signed():
    # a: (-100 - (-110)) * 0.5 = 5.0; b: (3 - 1) * 1.0 = 2.0; 5 - 2 = 3 -> 3 / 0.25 + (-8) = 4
    (o,) = run_op(Op.SUB, [inp(Q8S, np.int8([-100]), 0.5, -110), inp(Q8S, np.int8([3]), 1.0, 1),
                           act()], [out(Q8S, [1], 0.25, -8)])
    assert o.tolist() == [4]


# --- FL4 activations: ELU, HARD_SWISH, quant8-signed TANH -----------------------------------

def test_elu_float32_and_float16():
    # ELU(x) = max(0, x) + min(0, alpha * (exp(x) - 1)); golden values from math.expm1:
    # alpha 1: x = -1 -> expm1(-1) = -0.6321205588; 0 -> 0; 2 -> 2
    import math
    x = np.float32([-1, 0, 2])
    (o,) = run_op(Op.ELU, [inp(F32, x), f32(1.0)], [out(F32, [3])])
    np.testing.assert_allclose(o, [math.expm1(-1), 0, 2], rtol=1e-6)
    # alpha 0.5 in float16: x = -2 -> 0.5 * expm1(-2) = -0.4323323584 -> nearest fp16
    (o,) = run_op(Op.ELU, [inp(F16, np.float16([-2, 3])), f16(0.5)], [out(F16, [2])])
    assert o.dtype == np.float16
    assert o.tolist() == [float(np.float16(0.5 * math.expm1(-2))), 3.0]
    views = [view(F16, np.float16([1])), view(T.FLOAT16, np.float16(1))]
    assert level(Op.ELU, views, [OperandView(F16, (1,))]) == 4


def test_elu_alpha_type_must_match_tensor_type():
    # a TENSOR_FLOAT16 input takes a FLOAT16 alpha (spec): FLOAT32 alpha matches no signature
    with pytest.raises(NnapiError):
        run_op(Op.ELU, [inp(F16, np.float16([1])), f32(1.0)], [out(F16, [1])])


def test_hard_swish_float32():
    # x * clamp(x + 3, 0, 6) / 6: -4 -> -4*0/6 = 0; -3 -> 0; -1 -> -1*2/6 = -1/3;
    # 0 -> 0; 1 -> 1*4/6 = 2/3; 3 -> 3*6/6 = 3; 4 -> 4*6/6 = 4
    x = np.float32([-4, -3, -1, 0, 1, 3, 4])
    (o,) = run_op(Op.HARD_SWISH, [inp(F32, x)], [out(F32, [7])])
    np.testing.assert_allclose(o, [0, 0, -1 / 3, 0, 2 / 3, 3, 4], rtol=1e-6, atol=1e-7)


def test_hard_swish_quant8_requantizes_to_output_scale():
    # input scale 0.5, zp 128: q [120, 126, 134, 136] -> real [-4, -1, 3, 4]
    # h-swish -> [0, -1/3, 3, 4]; output scale 0.25, zp 10: round(x / 0.25) + 10
    # -> [0 + 10, round(-1.333) + 10 = 9, 12 + 10 = 22, 16 + 10 = 26]
    (o,) = run_op(Op.HARD_SWISH, [inp(Q8, np.uint8([120, 126, 134, 136]), 0.5, 128)],
                  [out(Q8, [4], 0.25, 10)])
    assert o.tolist() == [10, 9, 22, 26]
    # signed: scale 0.5, zp 0: q [-2, 2] -> [-1, 1] -> [-1/3, 2/3]; output scale 1/3, zp -5
    # -> round(-1) - 5 = -6, round(2) - 5 = -3
    (o,) = run_op(Op.HARD_SWISH, [inp(Q8S, np.int8([-2, 2]), 0.5, 0)],
                  [out(Q8S, [2], 1 / 3, -5)])
    assert o.tolist() == [-6, -3]


def test_hard_swish_zero_sized_and_rank_5():
    shapes, (o,) = run_direct(Op.HARD_SWISH, [OperandView(F32, (0, 3), value=np.zeros((0, 3), np.float32))],
                              [OperandView(F32, (0, 0))])
    assert shapes == [(0, 3)] and o.shape == (0, 3)
    # rank 5 is allowed (no upper bound); -1 -> -1/3, 1 -> 2/3
    x = np.float32([-1, 1]).reshape(1, 1, 1, 1, 2)
    _, (o,) = run_direct(Op.HARD_SWISH, [view(F32, x)], [OperandView(F32, (0,) * 5)])
    np.testing.assert_allclose(o.ravel(), [-1 / 3, 2 / 3], rtol=1e-6)


def test_tanh_quant8_signed():
    # input scale 0.5, zp 0: q [0, 2, -20] -> [0, 1, -10]; tanh -> [0, 0.761594156, -1.0]
    # (numpy tanh as independent formula); output scale 1/128, zp 0:
    # round(0.761594156 * 128 = 97.48) = 97; -1.0 * 128 = -128
    (o,) = run_op(Op.TANH, [inp(Q8S, np.int8([0, 2, -20]), 0.5, 0)], [out(Q8S, [3], 1 / 128, 0)])
    assert o.tolist() == [0, 97, -128]


def test_tanh_quant8_signed_output_zero_point_must_be_0():
    # NNAPI types.spec TANH: a TENSOR_QUANT8_ASYMM_SIGNED output has scale 1/128, zeroPoint 0
    # (the row's Arg.fixed_quant, checked by model validation)
    with pytest.raises(HalError, match="scale 1/128 and zeroPoint 0"):
        level(Op.TANH, [OperandView(Q8S, (1,), 0.5, 0)], [OperandView(Q8S, (1,), 1 / 128, 128)])


# --- FL4 quant8-signed comparisons, SELECT, MAXIMUM, PRELU; QUANTIZE, CAST, ABS ---------------

def test_comparisons_quant8_signed_compare_real_values():
    # a: scale 0.5, zp -1: q [1, 3] -> [1.0, 2.0]; b: scale 1, zp 0: q [1, 1] -> [1.0, 1.0]
    a, b = inp(Q8S, np.int8([1, 3]), 0.5, -1), inp(Q8S, np.int8([1, 1]), 1.0, 0)
    (o,) = run_op(Op.GREATER, [a, b], [out(B8, [2])])
    assert o.tolist() == [False, True]
    (o,) = run_op(Op.EQUAL, [a, b], [out(B8, [2])])
    assert o.tolist() == [True, False]
    views = [view(Q8S, np.int8([1]), 0.5, -1), view(Q8S, np.int8([1]), 1.0, 0)]
    assert level(Op.LESS, views, [OperandView(B8, (1,))]) == 4


def test_select_quant8_signed_requantizes_chosen_value():
    # input1 scale 0.5, zp 0: q 4 -> 2.0; input2 scale 1, zp -10: q -7 -> 3.0
    # output scale 0.25, zp 0: [2.0 / 0.25, 3.0 / 0.25] = [8, 12]
    (o,) = run_op(Op.SELECT, [inp(B8, np.bool_([True, False])), inp(Q8S, np.int8([4, 4]), 0.5, 0),
                              inp(Q8S, np.int8([-7, -7]), 1.0, -10)], [out(Q8S, [2], 0.25, 0)])
    assert o.tolist() == [8, 12]
    views = [view(B8, np.bool_([True])), view(Q8S, np.int8([1]), 1.0, 0),
             view(Q8S, np.int8([1]), 1.0, 0)]
    assert level(Op.SELECT, views, [OperandView(Q8S, (1,), 1.0, 0)]) == 4  # spec, not AOSP's 3


def test_maximum_minimum_prelu_quant8_signed():
    # MAXIMUM: a scale 1: [-3, 5]; b scale 0.5: q [2, 2] -> [1, 1]; max -> [1, 5];
    # output scale 0.5 -> [2, 10]; MINIMUM -> [-3, 1] -> [-6, 2]
    a, b = inp(Q8S, np.int8([-3, 5]), 1.0, 0), inp(Q8S, np.int8([2, 2]), 0.5, 0)
    (o,) = run_op(Op.MAXIMUM, [a, b], [out(Q8S, [2], 0.5, 0)])
    assert o.tolist() == [2, 10]
    (o,) = run_op(Op.MINIMUM, [a, b], [out(Q8S, [2], 0.5, 0)])
    assert o.tolist() == [-6, 2]
    # PRELU: x scale 0.5: q [-4, 6] -> [-2, 3]; alpha scale 0.25: q [1] -> 0.25
    # -> [-2 * 0.25, 3] = [-0.5, 3]; output scale 0.5, zp 1 -> [-1 + 1, 6 + 1] = [0, 7]
    (o,) = run_op(Op.PRELU, [inp(Q8S, np.int8([-4, 6]), 0.5, 0), inp(Q8S, np.int8([1]), 0.25, 0)],
                  [out(Q8S, [2], 0.5, 1)])
    assert o.tolist() == [0, 7]


def test_quantize_to_quant8_signed_rounds_half_away_and_saturates():
    # scale 0.5, zp -1: -1.0 / 0.5 = -2 -> -3; 0.25 / 0.5 = 0.5 -> 1 -> 0;
    # -0.25 / 0.5 = -0.5 -> -1 -> -2; 100 / 0.5 = 200 -> 199 -> 127; -100 -> -201 -> -128
    x = np.float32([-1.0, 0.25, -0.25, 100, -100])
    (o,) = run_op(Op.QUANTIZE, [inp(F32, x)], [out(Q8S, [5], 0.5, -1)])
    assert o.dtype == np.int8 and o.tolist() == [-3, 0, -2, 127, -128]


def test_fl4_identity_casts_copy_stored_values():
    # identity CAST copies the stored numbers, whatever the scale and zeroPoint
    (o,) = run_op(Op.CAST, [inp(Q8S, np.int8([-128, 5, 127]), 0.5, 3)], [out(Q8S, [3], 0.5, 3)])
    assert o.tolist() == [-128, 5, 127]
    (o,) = run_op(Op.CAST, [inp(B8, np.bool_([True, False]))], [out(B8, [2])])
    assert o.tolist() == [True, False]
    q16 = T.TENSOR_QUANT16_SYMM
    (o,) = run_op(Op.CAST, [inp(q16, np.int16([-32768, 7]), 0.1, 0)], [out(q16, [2], 0.1, 0)])
    assert o.tolist() == [-32768, 7]
    views = [view(B8, np.bool_([True]))]
    assert level(Op.CAST, views, [OperandView(B8, (1,))]) == 4
    with pytest.raises(NnapiError):  # only the identity cast exists for TENSOR_BOOL8
        run_op(Op.CAST, [inp(B8, np.bool_([True]))], [out(F32, [1])])


def test_abs_int32_is_feature_level_4():
    # |[-3, 0, 7]| = [3, 0, 7]; |-2^31| wraps to -2^31 in int32 (two's complement)
    (o,) = run_op(Op.ABS, [inp(I32, np.int32([-3, 0, 7, -2**31]))], [out(I32, [4])])
    assert o.tolist() == [3, 0, 7, -2**31]
    assert level(Op.ABS, [view(I32, np.int32([1]))], [OperandView(I32, (1,))]) == 4


def test_rsqrt_quant8_is_feature_level_7():
    # input scale 0.25, zp 0: q [16, 4, 1] -> [4, 1, 0.25]; 1/sqrt -> [0.5, 1, 2]
    # output scale 0.125, zp 10 -> [4 + 10, 8 + 10, 16 + 10] = [14, 18, 26]
    _, (o,) = run_direct(Op.RSQRT, [view(Q8, np.uint8([16, 4, 1]), 0.25, 0)],
                         [OperandView(Q8, (3,), 0.125, 10)])
    assert o.tolist() == [14, 18, 26]
    # signed, scale 1, zp 0: q 0 -> 1/sqrt(0) = inf -> 127; q -4 -> NaN -> 127 (AOSP's
    # std::min(127, NaN) is 127); q 4 -> 0.5 -> output scale 0.25, zp 0 -> 2
    _, (o,) = run_direct(Op.RSQRT, [view(Q8S, np.int8([0, -4, 4]), 1.0, 0)],
                         [OperandView(Q8S, (3,), 0.25, 0)])
    assert o.tolist() == [127, 127, 2]
    assert level(Op.RSQRT, [view(Q8S, np.int8([1]), 1.0, 0)], [OperandView(Q8S, (1,), 1.0, 0)]) == 7
