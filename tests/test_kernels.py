"""Reference kernels on small cases whose expected values are worked out by hand (each test
shows the arithmetic) or by an independent numpy formula (said where used)."""
import numpy as np
import pytest

from runtime.types import FuseCode, OperandType as T, OperationType as Op, PaddingCode
from tests.util import run_op

F32, I32, Q8 = T.TENSOR_FLOAT32, T.INT32, T.TENSOR_QUANT8_ASYMM


def act(code):
    return (I32, [], code, 0.0, 0)


def test_add_broadcasts_and_applies_relu():
    # [[1], [-5]] + [[1, -2, 3]] = [[2, -1, 4], [-4, -7, -2]], RELU -> [[2, 0, 4], [0, 0, 0]]
    a = np.array([[1], [-5]], np.float32)
    b = np.array([[1, -2, 3]], np.float32)
    (out,) = run_op(Op.ADD, [(F32, [2, 1], ("input", a), 0.0, 0), (F32, [1, 3], ("input", b), 0.0, 0),
                             act(FuseCode.RELU)], [(F32, [2, 3], 0.0, 0)])
    np.testing.assert_array_equal(out, [[2, 0, 4], [0, 0, 0]])


def test_add_quant8_requantizes():
    # a: (12-10)*0.5 = 1.0, b: (14-10)*0.5 = 2.0; sum 3.0 at scale 1, zp 0 -> 3.
    a = np.array([12], np.uint8)
    b = np.array([14], np.uint8)
    (out,) = run_op(Op.ADD, [(Q8, [1], ("input", a), 0.5, 10), (Q8, [1], ("input", b), 0.5, 10),
                             act(FuseCode.NONE)], [(Q8, [1], 1.0, 0)])
    assert out.tolist() == [3]


def test_conv_2d_valid_padding_hand_computed():
    # input 1..9 as 3x3, 2x2 filter of ones, bias 0.5, VALID, stride 1:
    # [[1+2+4+5, 2+3+5+6], [4+5+7+8, 5+6+8+9]] + 0.5 = [[12.5, 16.5], [24.5, 28.5]]
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
    (out,) = run_op(Op.CONV_2D, [
        (F32, [1, 3, 3, 1], ("input", x), 0.0, 0), (F32, [1, 2, 2, 1], np.ones((1, 2, 2, 1)), 0.0, 0),
        (F32, [1], [0.5], 0.0, 0), (I32, [], PaddingCode.VALID, 0.0, 0), (I32, [], 1, 0.0, 0),
        (I32, [], 1, 0.0, 0), act(FuseCode.NONE)], [(F32, [1, 2, 2, 1], 0.0, 0)])
    np.testing.assert_array_equal(out.reshape(2, 2), [[12.5, 16.5], [24.5, 28.5]])


def test_average_pool_same_padding_counts_only_inside_cells():
    # 2x2 input [[1, 2], [3, 4]], 3x3 filter, SAME, stride 1: every window covers the 4 cells
    # (padding excluded from the count), so every output is (1+2+3+4)/4 = 2.5.
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    (out,) = run_op(Op.AVERAGE_POOL_2D, [
        (F32, [1, 2, 2, 1], ("input", x), 0.0, 0), (I32, [], PaddingCode.SAME, 0.0, 0),
        (I32, [], 1, 0.0, 0), (I32, [], 1, 0.0, 0), (I32, [], 3, 0.0, 0), (I32, [], 3, 0.0, 0),
        act(FuseCode.NONE)], [(F32, [1, 2, 2, 1], 0.0, 0)])
    np.testing.assert_array_equal(out.reshape(-1), [2.5] * 4)


def test_softmax_matches_numpy_formula():
    # independent formula: exp(beta * (x - max)) / sum
    x = np.array([[1.0, 2.0, 3.0, -1.0]], np.float32)
    expected = np.exp(0.5 * (x - x.max())) / np.exp(0.5 * (x - x.max())).sum()
    (out,) = run_op(Op.SOFTMAX, [(F32, [1, 4], ("input", x), 0.0, 0), (T.FLOAT32, [], 0.5, 0.0, 0)],
                    [(F32, [1, 4], 0.0, 0)])
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_logistic_quant8_output_scale_1_over_256():
    # input (138 - 128) * 0.1 = 1.0; sigmoid(1) = 0.7310586 -> 0.7310586 * 256 = 187.15 -> 187
    x = np.array([138], np.uint8)
    (out,) = run_op(Op.LOGISTIC, [(Q8, [1], ("input", x), 0.1, 128)], [(Q8, [1], 1 / 256, 0)])
    assert out.tolist() == [187]


def test_reshape_infers_minus_one():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = run_op(Op.RESHAPE, [(F32, [2, 3], ("input", x), 0.0, 0), (T.TENSOR_INT32, [2], [3, -1], 0.0, 0)],
                    [(F32, [3, 2], 0.0, 0)])
    np.testing.assert_array_equal(out, [[0, 1], [2, 3], [4, 5]])


@pytest.mark.parametrize("code,expected", [(FuseCode.RELU1, [-1, -0.5, 1]), (FuseCode.RELU6, [0, 0, 6])])
def test_mul_fused_activation_clamps(code, expected):
    # [-2, -0.25, 4] * 2 = [-4, -0.5, 8]; RELU1 -> [-1, -0.5, 1]; RELU6 -> [0, 0, 6]
    x = np.array([-2, -0.25, 4], np.float32)
    (out,) = run_op(Op.MUL, [(F32, [3], ("input", x), 0.0, 0), (F32, [1], [2.0], 0.0, 0), act(code)],
                    [(F32, [3], 0.0, 0)])
    np.testing.assert_array_equal(out, expected)
