"""Shape, reduction and selection kernels of feature level 3 on small cases. Every expected
value is worked out by hand in a comment, or comes from an independent numpy formula that
the test names."""
import numpy as np
import pytest

from runtime.errors import NnapiError, OperationError
from runtime.ops import REGISTRY
from runtime.ops.base import OpContext, OperandView
from runtime.types import OperandType as T, OperationType as Op
from tests.util import const, i32, inp, out, run_op

F16, F32, I32, Q8, B8 = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32,
                        T.TENSOR_QUANT8_ASYMM, T.TENSOR_BOOL8)


# --- ARGMAX / ARGMIN / TOPK_V2 ---------------------------------------------------------

def test_argmax_negative_axis_and_first_index_on_ties():
    # rows [1, 5, 5] -> first maximum at 1; [7, 2, 7] -> 0 (tie: lowest index)
    x = np.array([[1, 5, 5], [7, 2, 7]], np.float32)
    (o,) = run_op(Op.ARGMAX, [inp(F32, x), i32(-1)], [out(I32, [2])])
    assert o.tolist() == [1, 0]


def test_argmin_quant8_axis_0_and_1d_gives_shape_1():
    # columns of [[3, 9], [1, 9]]: min of (3, 1) at 1, min of (9, 9) at 0 (tie)
    x = np.array([[3, 9], [1, 9]], np.uint8)
    (o,) = run_op(Op.ARGMIN, [inp(Q8, x, 0.5, 2), i32(0)], [out(I32, [2])])
    assert o.tolist() == [1, 0]
    # 1-D input: output shape [1]; min of [4, -2, 3] at index 1
    (o,) = run_op(Op.ARGMIN, [inp(I32, np.array([4, -2, 3], np.int32)), i32(0)], [out(I32, [1])])
    assert o.tolist() == [1]


def test_argmax_axis_out_of_range_fails():
    with pytest.raises(NnapiError):
        run_op(Op.ARGMAX, [inp(F32, np.zeros((2, 2), np.float32)), i32(2)], [out(I32, [2])])


def test_topk_v2_descending_and_larger_index_first_on_ties():
    # row [1, 3, 3, 2], k=3: values 3 (index 2, the larger index first), 3 (index 1), 2 (3)
    # row [5, 0, 5, 5], k=3: 5 at indexes 3, 2, 0
    x = np.array([[1, 3, 3, 2], [5, 0, 5, 5]], np.float32)
    v, i = run_op(Op.TOPK_V2, [inp(F32, x), i32(3)], [out(F32, [2, 3]), out(I32, [2, 3])])
    assert v.tolist() == [[3, 3, 2], [5, 5, 5]]
    assert i.tolist() == [[2, 1, 3], [3, 2, 0]]


def test_topk_v2_k_larger_than_last_dimension_fails():
    with pytest.raises(NnapiError):
        run_op(Op.TOPK_V2, [inp(F32, np.zeros((2,), np.float32)), i32(3)],
               [out(F32, [3]), out(I32, [3])])


# --- GATHER / SLICE / SPLIT / TILE / EXPAND_DIMS / CHANNEL_SHUFFLE -----------------------

def test_gather_higher_rank_indices():
    # input [[1, 2], [3, 4], [5, 6]] (3x2), axis 0, indices [[2, 0]] (1x2) -> shape
    # [] + [1, 2] + [2] = [1, 2, 2]: [[[5, 6], [1, 2]]]
    x = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    (o,) = run_op(Op.GATHER, [inp(F32, x), i32(0), const(I32, np.array([[2, 0]], np.int32))],
                  [out(F32, [1, 2, 2])])
    assert o.tolist() == [[[5, 6], [1, 2]]]


def test_gather_negative_axis_and_bad_index():
    # axis -1 of [[1, 2, 3]] with indices [2, 2] -> [[3, 3]]
    x = np.array([[1, 2, 3]], np.int32)
    (o,) = run_op(Op.GATHER, [inp(I32, x), i32(-1), const(I32, np.array([2, 2], np.int32))],
                  [out(I32, [1, 2])])
    assert o.tolist() == [[3, 3]]
    with pytest.raises(NnapiError):
        run_op(Op.GATHER, [inp(I32, x), i32(1), const(I32, np.array([3], np.int32))],
               [out(I32, [1, 1])])


def test_slice_with_size_minus_one():
    # x = [[0..3], [4..7], [8..11]], begin [1, 1], size [-1, 2] -> rows 1..2, cols 1..2
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (o,) = run_op(Op.SLICE, [inp(F32, x), const(I32, np.array([1, 1], np.int32)),
                             const(I32, np.array([-1, 2], np.int32))], [out(F32, [2, 2])])
    assert o.tolist() == [[5, 6], [9, 10]]


def test_slice_past_the_end_fails():
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(NnapiError):
        run_op(Op.SLICE, [inp(F32, x), const(I32, np.array([2], np.int32)),
                          const(I32, np.array([3], np.int32))], [out(F32, [3])])


def test_split_three_outputs_negative_axis():
    # [[1..6]] split in 3 along axis -1 -> [[1, 2]], [[3, 4]], [[5, 6]]
    x = np.arange(1, 7, dtype=np.uint8).reshape(1, 6)
    outs = run_op(Op.SPLIT, [inp(Q8, x, 0.5, 0), i32(-1), i32(3)],
                  [out(Q8, [1, 2], 0.5, 0)] * 3)
    assert [o.tolist() for o in outs] == [[[1, 2]], [[3, 4]], [[5, 6]]]


def test_split_count_must_match_outputs():
    x = np.arange(6, dtype=np.float32)
    with pytest.raises(NnapiError):
        run_op(Op.SPLIT, [inp(F32, x), i32(0), i32(3)], [out(F32, [3])] * 2)


def test_tile():
    # [[1, 2]] tiled [2, 3] -> [[1, 2, 1, 2, 1, 2]] twice
    x = np.array([[1, 2]], np.float16)
    (o,) = run_op(Op.TILE, [inp(F16, x), const(I32, np.array([2, 3], np.int32))],
                  [out(F16, [2, 6])])
    assert o.tolist() == [[1, 2, 1, 2, 1, 2]] * 2


def test_expand_dims_negative_axis():
    # axis -1 of a [2, 2] tensor is position 2 of the 3-D result: [2, 2, 1]
    x = np.array([[1, 2], [3, 4]], np.float32)
    (o,) = run_op(Op.EXPAND_DIMS, [inp(F32, x), i32(-1)], [out(F32, [2, 2, 1])])
    assert o.shape == (2, 2, 1) and o.reshape(-1).tolist() == [1, 2, 3, 4]


def test_channel_shuffle():
    # 6 channels, 2 groups of 3: output[i*2 + j] = input[j*3 + i] -> order 0, 3, 1, 4, 2, 5
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    (o,) = run_op(Op.CHANNEL_SHUFFLE, [inp(F32, x), i32(2), i32(-1)], [out(F32, [1, 6])])
    assert o.tolist() == [[0, 3, 1, 4, 2, 5]]


def test_channel_shuffle_groups_must_divide():
    with pytest.raises(NnapiError):
        run_op(Op.CHANNEL_SHUFFLE, [inp(F32, np.zeros((1, 5), np.float32)), i32(2), i32(1)],
               [out(F32, [1, 5])])


# --- PAD_V2 and the FL3 forms of FL1-2 operations -------------------------------------------

def test_pad_v2_float_and_quant8_value():
    # [1, 2] padded (1, 2) with 9.5 -> [9.5, 1, 2, 9.5, 9.5]
    (o,) = run_op(Op.PAD_V2, [inp(F32, np.array([1, 2], np.float32)),
                              const(I32, np.array([[1, 2]], np.int32)), (T.FLOAT32, [], 9.5, 0.0, 0)],
                  [out(F32, [5])])
    assert o.tolist() == [9.5, 1, 2, 9.5, 9.5]
    # quant8: the INT32 pad value is a raw quantized value (7 stays 7)
    (o,) = run_op(Op.PAD_V2, [inp(Q8, np.array([1], np.uint8), 0.5, 3),
                              const(I32, np.array([[0, 1]], np.int32)), i32(7)],
                  [out(Q8, [2], 0.5, 3)])
    assert o.tolist() == [1, 7]


def test_pad_v2_quant8_value_out_of_range_fails():
    with pytest.raises(NnapiError):
        run_op(Op.PAD_V2, [inp(Q8, np.array([1], np.uint8), 0.5, 3),
                           const(I32, np.array([[0, 1]], np.int32)), i32(256)],
               [out(Q8, [2], 0.5, 3)])


def test_depth_to_space_nchw_matches_nhwc():
    # NHWC [1, 1, 1, 4] with block 2 -> [[a, b], [c, d]]; in NCHW the input is [1, 4, 1, 1]
    # and the output [1, 1, 2, 2] holds the same 2x2 grid.
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 4, 1, 1)
    (o,) = run_op(Op.DEPTH_TO_SPACE, [inp(F32, x), i32(2), (T.BOOL, [], True, 0.0, 0)],
                  [out(F32, [1, 1, 2, 2])])
    assert o.reshape(2, 2).tolist() == [[1, 2], [3, 4]]


def test_space_to_batch_nchw_quant8_pads_with_zero_point():
    # NCHW [1, 1, 1, 2] (one channel, H=1, W=2), block [1, 2], paddings H (0, 0), W (1, 1):
    # padded row [zp=5, 10, 20, 5] -> batch j takes columns j, j+2:
    # batch 0: [5, 20], batch 1: [10, 5]; output NCHW [2, 1, 1, 2]
    x = np.array([10, 20], np.uint8).reshape(1, 1, 1, 2)
    (o,) = run_op(Op.SPACE_TO_BATCH_ND, [
        inp(Q8, x, 1.0, 5), const(I32, np.array([1, 2], np.int32)),
        const(I32, np.array([[0, 0], [1, 1]], np.int32)), (T.BOOL, [], True, 0.0, 0)],
        [out(Q8, [2, 1, 1, 2], 1.0, 5)])
    assert o.reshape(2, 2).tolist() == [[5, 20], [10, 5]]


def test_concatenation_float16_and_quant8_rescale():
    (o,) = run_op(Op.CONCATENATION, [inp(F16, np.array([1.5], np.float16)),
                                     inp(F16, np.array([-2], np.float16)), i32(0)],
                  [out(F16, [2])])
    assert o.tolist() == [1.5, -2]
    # quant8 input 2 at scale 1.0, zp 0 (value 4 -> 4.0) into an output at scale 0.5, zp 0: 8
    (o,) = run_op(Op.CONCATENATION, [inp(Q8, np.array([3], np.uint8), 0.5, 0),
                                     inp(Q8, np.array([4], np.uint8), 1.0, 0), i32(0)],
                  [out(Q8, [2], 0.5, 0)])
    assert o.tolist() == [3, 8]


def _ctx(op, inputs, outputs):
    return OpContext(op, inputs, outputs)


def test_concatenation_and_transpose_accept_zero_sized():
    # a [0, 2] tensor joined with another [0, 2] on axis 0 -> [0, 2]; transposed -> [2, 0]
    empty = np.zeros((0, 2), np.float32)
    views = [OperandView(F32, (0, 2), value=empty), OperandView(F32, (0, 2), value=empty),
             OperandView(T.INT32, (), value=np.array(0, np.int32))]
    d = REGISTRY[Op.CONCATENATION]
    ctx = _ctx(Op.CONCATENATION, views, [OperandView(F32, (0, 2))])
    assert d.prepare(ctx) == [(0, 2)] and d.execute(ctx)[0].shape == (0, 2)
    d = REGISTRY[Op.TRANSPOSE]
    ctx = _ctx(Op.TRANSPOSE, [views[0], OperandView(I32, (2,), value=np.array([1, 0], np.int32))],
               [OperandView(F32, (2, 0))])
    assert d.prepare(ctx) == [(2, 0)] and d.execute(ctx)[0].shape == (2, 0)


# --- REDUCE_* and MEAN -------------------------------------------------------------------

def test_reduce_sum_and_prod_match_numpy():
    # independent formulas: numpy sum / prod over axis 1 of a 2x3 matrix
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b = (T.BOOL, [], False, 0.0, 0)
    (o,) = run_op(Op.REDUCE_SUM, [inp(F32, x), const(I32, np.array([-1], np.int32)), b],
                  [out(F32, [2])])
    np.testing.assert_array_equal(o, x.sum(axis=1))
    (o,) = run_op(Op.REDUCE_PROD, [inp(F32, x), const(I32, np.array([1], np.int32)), b],
                  [out(F32, [2])])
    np.testing.assert_array_equal(o, x.prod(axis=1))  # [6, 120]


def test_reduce_prod_zero_times_inf_is_zero():
    # AOSP returns 0 when a factor is 0, so [inf, 0] -> 0 (not NaN)
    x = np.array([np.inf, 0], np.float32)
    (o,) = run_op(Op.REDUCE_PROD, [inp(F32, x), const(I32, np.array([0], np.int32)),
                                   (T.BOOL, [], False, 0.0, 0)], [out(F32, [1])])
    assert o.tolist() == [0.0]


def test_reduce_max_min_keep_dims_quant8():
    # [[3, 9], [7, 1]] reduced over axis 0 with keep_dims: max [[7, 9]], min [[3, 1]]
    x = np.array([[3, 9], [7, 1]], np.uint8)
    keep = (T.BOOL, [], True, 0.0, 0)
    axes = const(I32, np.array([0], np.int32))
    (o,) = run_op(Op.REDUCE_MAX, [inp(Q8, x, 0.5, 1), axes, keep], [out(Q8, [1, 2], 0.5, 1)])
    assert o.tolist() == [[7, 9]]
    (o,) = run_op(Op.REDUCE_MIN, [inp(Q8, x, 0.5, 1), axes, keep], [out(Q8, [1, 2], 0.5, 1)])
    assert o.tolist() == [[3, 1]]


def test_reduce_all_any_every_dimension_gives_shape_1():
    # all of [[1, 1], [1, 0]] is false; any is true; reducing both axes (with a repeat) -> [1]
    x = np.array([[1, 1], [1, 0]], np.bool_)
    axes = const(I32, np.array([0, 1, -1], np.int32))
    no = (T.BOOL, [], False, 0.0, 0)
    (o,) = run_op(Op.REDUCE_ALL, [inp(B8, x), axes, no], [out(B8, [1])])
    assert o.tolist() == [False]
    (o,) = run_op(Op.REDUCE_ANY, [inp(B8, x), axes, no], [out(B8, [1])])
    assert o.tolist() == [True]


def test_mean_float16():
    # mean of [1, 2, 4] = 7/3 = 2.333..., rounded once to float16 (numpy cast): 2.334
    x = np.array([1, 2, 4], np.float16)
    (o,) = run_op(Op.MEAN, [inp(F16, x), const(I32, np.array([0], np.int32)), i32(0)],
                  [out(F16, [1])])
    assert o.tolist() == [float(np.float16(7 / 3))]


def test_reduce_axis_out_of_range_raises_operation_error():
    x = np.zeros((2, 2), np.float32)
    views = [OperandView(F32, (2, 2), value=x), OperandView(I32, (1,), value=np.array([2], np.int32)),
             OperandView(T.BOOL, (), value=np.array(False))]
    with pytest.raises(OperationError, match=r"input 1 \(axis\) value 2 is out of range"):
        REGISTRY[Op.REDUCE_SUM].prepare(_ctx(Op.REDUCE_SUM, views, [OperandView(F32, (2,))]))
