"""Shape, reduction and selection kernels of feature levels 3-7 on small cases. Every expected
value is worked out by hand in a comment, or comes from an independent numpy formula that
the test names."""
import numpy as np
import pytest

from runtime.errors import NnapiError, OperationError
from runtime.ops import REGISTRY
from runtime.ops.base import OpContext, OperandView
from runtime.types import OperandType as T, OperationType as Op
from tests.util import const, f16, f32, i32, inp, level, out, run_direct, run_op, view

F16, F32, I32, Q8, B8 = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32,
                        T.TENSOR_QUANT8_ASYMM, T.TENSOR_BOOL8)
Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED


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


# --- feature level 4+ forms (issue 8) ----------------------------------------------------


def test_signed_quant8_forms_are_feature_level_4():
    x = view(Q8S, np.zeros((2, 4), np.int8), 0.5, -3)
    o = OperandView(Q8S, (2, 4), 0.5, -3)
    assert level(Op.CHANNEL_SHUFFLE, [x, view(T.INT32, 2), view(T.INT32, 1)], [o]) == 4
    assert level(Op.TILE, [x, view(I32, [1, 1])], [o]) == 4
    assert level(Op.ARGMAX, [x, view(T.INT32, 1)], [OperandView(I32, (2,))]) == 4
    assert level(Op.REDUCE_MAX, [x, view(I32, [1]), view(T.BOOL, True)], [o]) == 4
    assert level(Op.PAD_V2, [x, view(I32, [[0, 0], [0, 0]]), view(T.INT32, -3)], [o]) == 4
    # the uint8 twin stays feature level 3
    xu = view(Q8, np.zeros((2, 4), np.uint8), 0.5, 3)
    assert level(Op.TILE, [xu, view(I32, [1, 1])], [OperandView(Q8, (2, 4), 0.5, 3)]) == 3


def test_signed_quant8_argmax_topk_gather_move_raw_int8_values():
    x = np.array([[-5, 7, -128], [127, 0, 7]], np.int8)
    # ARGMAX along axis 1: row 0 max 7 at 1; row 1 max 127 at 0
    (o,) = run_op(Op.ARGMAX, [inp(Q8S, x, 0.25, -1), i32(1)], [out(I32, [2])])
    assert o.tolist() == [1, 0]
    # TOPK_V2 k=2: row 0 [7 (1), -5 (0)]; row 1 [127 (0), 7 (2)]
    v, i = run_op(Op.TOPK_V2, [inp(Q8S, x, 0.25, -1), i32(2)],
                  [out(Q8S, [2, 2], 0.25, -1), out(I32, [2, 2])])
    assert v.tolist() == [[7, -5], [127, 7]] and i.tolist() == [[1, 0], [0, 2]]
    # GATHER axis 1, indices [2, 2, 0]: columns 2, 2, 0 of each row
    (g,) = run_op(Op.GATHER, [inp(Q8S, x, 0.25, -1), i32(1), const(I32, np.array([2, 2, 0]))],
                  [out(Q8S, [2, 3], 0.25, -1)])
    assert g.tolist() == [[-128, -128, -5], [7, 7, 127]]


def test_signed_quant8_reduce_min_and_pad_v2():
    x = np.array([[-5, 7], [-128, 3]], np.int8)
    # REDUCE_MIN over axis 0, keep_dims false: min(-5, -128) = -128, min(7, 3) = 3
    (o,) = run_op(Op.REDUCE_MIN, [inp(Q8S, x, 0.5, 1), const(I32, np.array([0])),
                                  (T.BOOL, [], False)], [out(Q8S, [2], 0.5, 1)])
    assert o.tolist() == [-128, 3]
    # PAD_V2 one column after with raw value -100: [[-5, 7, -100], [-128, 3, -100]]
    (p,) = run_op(Op.PAD_V2, [inp(Q8S, x, 0.5, 1), const(I32, np.array([[0, 0], [0, 1]])),
                              i32(-100)], [out(Q8S, [2, 3], 0.5, 1)])
    assert p.tolist() == [[-5, 7, -100], [-128, 3, -100]]
    # a pad value outside int8 is rejected
    with pytest.raises(NnapiError):
        run_op(Op.PAD_V2, [inp(Q8S, x, 0.5, 1), const(I32, np.array([[0, 0], [0, 1]])),
                           i32(200)], [out(Q8S, [2, 3], 0.5, 1)])


def test_reshape_int32_is_feature_level_6():
    x = np.arange(6, dtype=np.int32)
    # row-major [0..5] in shape [3, 2]: [[0, 1], [2, 3], [4, 5]]
    (o,) = run_op(Op.RESHAPE, [inp(I32, x), const(I32, np.array([3, -1]))], [out(I32, [3, 2])])
    assert o.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert level(Op.RESHAPE, [view(I32, x), view(I32, [3, 2])], [OperandView(I32, (3, 2))]) == 6


def test_fill_float_float16_and_int32():
    # shape [2, 3] filled with 1.5
    (o,) = run_op(Op.FILL, [inp(I32, np.array([2, 3], np.int32)), f32(1.5)], [out(F32, [2, 3])])
    assert o.tolist() == [[1.5] * 3] * 2
    (o,) = run_op(Op.FILL, [inp(I32, np.array([3], np.int32)), f16(-0.25)], [out(F16, [3])])
    assert o.dtype == np.float16 and o.tolist() == [-0.25] * 3
    (o,) = run_op(Op.FILL, [inp(I32, np.array([1, 2], np.int32)), i32(7)], [out(I32, [1, 2])])
    assert o.tolist() == [[7, 7]]
    assert level(Op.FILL, [view(I32, [2]), view(T.INT32, 7)], [OperandView(I32, (2,))]) == 4


def test_fill_negative_or_empty_shape_fails():
    with pytest.raises(OperationError, match=r"input 0 \(dims\) values must be >= 0"):
        run_direct(Op.FILL, [view(I32, [2, -1]), view(T.FLOAT32, 0.0)], [OperandView(F32, (0, 0))])
    with pytest.raises(OperationError, match="at least 1 value"):
        run_direct(Op.FILL, [view(I32, np.zeros((0,), np.int32)), view(T.FLOAT32, 0.0)],
                   [OperandView(F32, ())])


def test_fill_to_a_rank_above_16_fails_cleanly():
    """A shape input of 20 values gives an output of rank 20 (the output's rank is unknown
    until execution): past MAX_RANK (16) the execution fails with a message naming the rank,
    not with numpy's limit of 64 (a fuzz finding: rank 122)."""
    with pytest.raises(NnapiError, match="would have rank 20; a tensor may have rank at most 16"):
        run_op(Op.FILL, [inp(I32, np.ones(20, np.int32)), f32(1.0)], [out(F32, [])])


def test_rank_of_any_tensor_type_is_an_int32_scalar():
    # a [2, 3, 1] TENSOR_BOOL8 has 3 dimensions; a [4] TENSOR_QUANT16_ASYMM has 1
    (o,) = run_op(Op.RANK, [inp(B8, np.zeros((2, 3, 1), np.bool_))], [out(T.INT32, [])])
    assert o.shape == () and int(o) == 3
    shapes, (r,) = run_direct(Op.RANK, [view(T.TENSOR_QUANT16_ASYMM, [1, 2, 3, 4], 0.5, 7)],
                              [OperandView(T.INT32, ())])
    assert shapes == [()] and r.shape == () and int(r) == 1
    assert level(Op.RANK, [view(Q8S, [1], 0.5, 0)], [OperandView(T.INT32, ())]) == 4


def test_pack_along_each_axis():
    a, b = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    # axis 0: rows are the inputs [[1, 2], [3, 4]]; axis 1: columns are [[1, 3], [2, 4]]
    (o,) = run_op(Op.PACK, [i32(0), inp(F32, a), inp(F32, b)], [out(F32, [2, 2])])
    assert o.tolist() == [[1, 2], [3, 4]]
    (o,) = run_op(Op.PACK, [i32(1), inp(F32, a), inp(F32, b)], [out(F32, [2, 2])])
    assert o.tolist() == [[1, 3], [2, 4]]
    # one int8 input, axis 1: [2] -> [2, 1]
    (o,) = run_op(Op.PACK, [i32(1), inp(Q8S, np.array([-1, 5], np.int8), 0.5, 2)],
                  [out(Q8S, [2, 1], 0.5, 2)])
    assert o.tolist() == [[-1], [5]]
    three = [view(T.INT32, 0)] + [view(I32, [1, 2])] * 3
    assert level(Op.PACK, three, [OperandView(I32, (3, 2))]) == 6


def test_pack_rejects_mismatched_inputs_and_axis():
    a = view(F32, np.zeros((2, 3), np.float32))
    with pytest.raises(OperationError, match="input 2 dimensions"):
        run_direct(Op.PACK, [view(T.INT32, 0), a, view(F32, np.zeros((3, 2), np.float32))],
                   [OperandView(F32, (2, 2, 3))])
    with pytest.raises(OperationError, match=r"input 0 \(axis\) value 3 is out of range \[0, 3\)"):
        run_direct(Op.PACK, [view(T.INT32, 3), a], [OperandView(F32, (2, 3, 1))])
    with pytest.raises(OperationError, match="input 1 scale"):
        run_direct(Op.PACK, [view(T.INT32, 0), view(Q8, [1, 2], 0.5, 0)],
                   [OperandView(Q8, (1, 2), 0.25, 0)])


def test_mirror_pad_reflect_and_symmetric():
    x = np.array([1, 2, 3], np.float32)
    # NNAPI's example: [1, 2, 3] padded [0, 2]
    (o,) = run_op(Op.MIRROR_PAD, [inp(F32, x), const(I32, np.array([[0, 2]])), i32(0)],
                  [out(F32, [5])])
    assert o.tolist() == [1, 2, 3, 2, 1]
    (o,) = run_op(Op.MIRROR_PAD, [inp(F32, x), const(I32, np.array([[0, 2]])), i32(1)],
                  [out(F32, [5])])
    assert o.tolist() == [1, 2, 3, 3, 2]
    # 2-D int32 [[1, 2], [3, 4]], paddings [[1, 0], [0, 1]], REFLECT: the row before is row 1
    # ([3, 4]); the column after column 1 is column 0 -> [[3, 4, 3], [1, 2, 1], [3, 4, 3]]
    y = np.array([[1, 2], [3, 4]], np.int32)
    (o,) = run_op(Op.MIRROR_PAD, [inp(I32, y), const(I32, np.array([[1, 0], [0, 1]])), i32(0)],
                  [out(I32, [3, 3])])
    assert o.tolist() == [[3, 4, 3], [1, 2, 1], [3, 4, 3]]
    # SYMMETRIC, paddings [[2, 0], [0, 0]]: rows before are row 1 then row 0 (mirror incl.
    # the border): [[3, 4], [1, 2], [1, 2], [3, 4]]
    (o,) = run_op(Op.MIRROR_PAD, [inp(I32, y), const(I32, np.array([[2, 0], [0, 0]])), i32(1)],
                  [out(I32, [4, 2])])
    assert o.tolist() == [[3, 4], [1, 2], [1, 2], [3, 4]]
    pads = view(I32, [[0, 2]])
    assert level(Op.MIRROR_PAD, [view(F32, x), pads, view(T.INT32, 0)],
                 [OperandView(F32, (5,))]) == 7


def test_mirror_pad_limits_and_mode():
    x = view(F32, np.array([1, 2, 3], np.float32))
    # REFLECT allows at most dim - 1 = 2, SYMMETRIC at most dim = 3
    with pytest.raises(OperationError, match=r"row 0 \(3, 0\) is out of range \[0, 2\]"):
        run_direct(Op.MIRROR_PAD, [x, view(I32, [[3, 0]]), view(T.INT32, 0)],
                   [OperandView(F32, (6,))])
    _, (o,) = run_direct(Op.MIRROR_PAD, [x, view(I32, [[3, 0]]), view(T.INT32, 1)],
                         [OperandView(F32, (6,))])
    assert o.tolist() == [3, 2, 1, 1, 2, 3]  # SYMMETRIC: the whole input mirrored before it
    with pytest.raises(OperationError, match=r"input 2 \(mode\) value 2"):
        run_direct(Op.MIRROR_PAD, [x, view(I32, [[0, 0]]), view(T.INT32, 2)],
                   [OperandView(F32, (3,))])
    # paddings rows must equal the input rank
    with pytest.raises(OperationError,
                       match=r"input 1 \(paddings\) has shape \[2, 2\], expected \[1, 2\]"):
        run_direct(Op.MIRROR_PAD, [x, view(I32, [[0, 0], [0, 0]]), view(T.INT32, 0)],
                   [OperandView(F32, (3,))])


def test_reverse_along_each_axis():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    # axis 1: each row reversed; axis 0: the rows swapped
    (o,) = run_op(Op.REVERSE, [inp(F32, x), const(I32, np.array([1]))], [out(F32, [2, 3])])
    assert o.tolist() == [[3, 2, 1], [6, 5, 4]]
    (o,) = run_op(Op.REVERSE, [inp(Q8S, x.astype(np.int8), 0.5, -2), const(I32, np.array([0]))],
                  [out(Q8S, [2, 3], 0.5, -2)])
    assert o.tolist() == [[4, 5, 6], [1, 2, 3]]
    assert level(Op.REVERSE, [view(F32, x), view(I32, [0])], [OperandView(F32, (2, 3))]) == 7


def test_reverse_rejects_negative_axis_and_bad_axis_tensor():
    x = view(F32, np.zeros((2, 3), np.float32))
    with pytest.raises(OperationError, match=r"input 1 \(axis\) value -1 is out of range \[0, 2\)"):
        run_direct(Op.REVERSE, [x, view(I32, [-1])], [OperandView(F32, (2, 3))])
    with pytest.raises(OperationError, match=r"input 1 \(axis\) must hold 1 values"):
        run_direct(Op.REVERSE, [x, view(I32, [0, 1])], [OperandView(F32, (2, 3))])
    with pytest.raises(NnapiError):  # a model-time quantization mismatch
        run_op(Op.REVERSE, [inp(Q8, np.zeros((2,), np.uint8), 0.5, 1), const(I32, np.array([0]))],
               [out(Q8, [2], 0.5, 2)])
