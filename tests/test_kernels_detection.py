"""Detection and region-of-interest kernels of feature level 3 (and their FL4 quant8-signed
forms) on small cases, and zero-sized tensors. Every expected value is worked out by hand
in a comment, or comes from an independent formula that the test states."""
import math

import numpy as np
import pytest

from runtime.errors import NnapiError, OperationError
from runtime.ops.base import OperandView
from runtime.types import OperandType as T, OperationType as Op
from tests.util import const, f32, flag, i32, inp, level, out, run_direct, run_op, view

F16, F32, I32, Q8, Q16A, Q16S = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32,
                                 T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT16_ASYMM,
                                 T.TENSOR_QUANT16_SYMM)


# --- AXIS_ALIGNED_BBOX_TRANSFORM ----------------------------------------------------------

def test_bbox_transform_float32_moves_scales_and_clips():
    # roi (0, 0, 10, 10): w = h = 10, center (5, 5).
    # class 0 deltas (0.1, 0.2, 0, ln 2): center (5 + 1, 5 + 2) = (6, 7), size (10, 20)
    #   -> (1, -3, 11, 17), clipped to width 20 / height 15 -> (1, 0, 11, 15)
    # class 1 deltas 0: unchanged (0, 0, 10, 10)
    roi = np.array([[0, 0, 10, 10]], np.float32)
    deltas = np.array([[0.1, 0.2, 0, math.log(2), 0, 0, 0, 0]], np.float32)
    (o,) = run_op(Op.AXIS_ALIGNED_BBOX_TRANSFORM,
                  [inp(F32, roi), inp(F32, deltas), inp(I32, np.array([0], np.int32)),
                   inp(F32, np.array([[15, 20]], np.float32))], [out(F32, [1, 8])])
    np.testing.assert_allclose(o, [[1, 0, 11, 15, 0, 0, 10, 10]], rtol=1e-6, atol=1e-5)


def test_bbox_transform_quant16_roi_quant8_deltas():
    # roi raw 8 * (0, 0, 10, 10); deltas scale 0.05, zp 128: raw 130 -> 0.1, 132 -> 0.2,
    # 128 -> 0. Box -> center (6, 7), size 10 x 10 -> (1, 2, 11, 12) -> raw x8 = (8, 16, 88, 96)
    roi = np.array([[0, 0, 80, 80]], np.uint16)
    deltas = np.array([[130, 132, 128, 128]], np.uint8)
    (o,) = run_op(Op.AXIS_ALIGNED_BBOX_TRANSFORM,
                  [inp(Q16A, roi, 0.125), inp(Q8, deltas, 0.05, 128),
                   inp(I32, np.array([0], np.int32)),
                   inp(Q16A, np.array([[120, 160]], np.uint16), 0.125)],
                  [out(Q16A, [1, 4], 0.125)])
    assert o.tolist() == [[8, 16, 88, 96]]


def test_bbox_transform_bad_batch_index_fails():
    with pytest.raises(NnapiError):
        run_op(Op.AXIS_ALIGNED_BBOX_TRANSFORM,
               [inp(F32, np.array([[0, 0, 1, 1]], np.float32)),
                inp(F32, np.zeros((1, 4), np.float32)), inp(I32, np.array([1], np.int32)),
                inp(F32, np.array([[5, 5]], np.float32))], [out(F32, [1, 4])])


# --- BOX_WITH_NMS_LIMIT --------------------------------------------------------------------

# Three rois, two classes (0 = background). Class 1 boxes: roi 0 (0, 0, 10, 10) score 0.9,
# roi 1 (1, 1, 11, 11) score 0.8, roi 2 (20, 20, 30, 30) score 0.7.
# IoU(roi 0, roi 1) = 81 / (100 + 100 - 81) = 81 / 119 = 0.6807; IoU with roi 2 = 0.
NMS_SCORES = np.array([[0.5, 0.9], [0.5, 0.8], [0.5, 0.7]], np.float32)
NMS_BOXES = np.array([[0, 0, 1, 1, 0, 0, 10, 10],
                      [0, 0, 1, 1, 1, 1, 11, 11],
                      [0, 0, 1, 1, 20, 20, 30, 30]], np.float32)


def _nms(kernel, sigma=1.0, max_det=-1, k=None):
    k = k if k is not None else 3
    return run_op(Op.BOX_WITH_NMS_LIMIT,
                  [inp(F32, NMS_SCORES), inp(F32, NMS_BOXES), inp(I32, np.zeros(3, np.int32)),
                   f32(0.3), i32(max_det), i32(kernel), f32(0.5), f32(sigma), f32(0.1)],
                  [out(F32, [k]), out(F32, [k, 4]), out(I32, [k]), out(I32, [k])])


def test_box_with_nms_limit_hard():
    # roi 1 overlaps roi 0 with IoU 0.68 >= 0.5: its score becomes 0 < 0.1, dropped.
    scores, boxes, classes, batches = _nms(0, k=2)
    np.testing.assert_allclose(scores, [0.9, 0.7], rtol=1e-6)
    assert boxes.tolist() == [[0, 0, 10, 10], [20, 20, 30, 30]]
    assert classes.tolist() == [1, 1] and batches.tolist() == [0, 0]


def test_box_with_nms_limit_linear():
    # roi 1: 0.8 * (1 - 81/119) = 0.8 * 38/119 = 0.255462 >= 0.1, kept; sorted by score.
    scores, boxes, _, _ = _nms(1)
    np.testing.assert_allclose(scores, [0.9, 0.7, 0.8 * 38 / 119], rtol=1e-6)
    assert boxes[2].tolist() == [1, 1, 11, 11]


def test_box_with_nms_limit_gaussian_and_limit():
    # roi 1: 0.8 * exp(-(81/119)^2 / 0.5) = 0.316698 (the Gaussian formula of the spec)
    scores, _, _, _ = _nms(2, sigma=0.5)
    np.testing.assert_allclose(scores, [0.9, 0.7, 0.8 * math.exp(-(81 / 119) ** 2 / 0.5)],
                               rtol=1e-6)
    # max_num_detections 1: only the best box of the batch
    scores, boxes, _, _ = _nms(2, sigma=0.5, max_det=1, k=1)
    np.testing.assert_allclose(scores, [0.9], rtol=1e-6)


def test_box_with_nms_limit_keeps_nothing_gives_zero_sized_outputs():
    # every class-1 score (0.9, 0.8, 0.7) is <= the score threshold 0.95
    shapes, (s, b, c, n) = run_direct(
        Op.BOX_WITH_NMS_LIMIT,
        [view(F32, NMS_SCORES), view(F32, NMS_BOXES), view(I32, np.zeros(3, np.int32)),
         view(T.FLOAT32, np.float32(0.95)), view(T.INT32, np.int32(-1)),
         view(T.INT32, np.int32(0)), view(T.FLOAT32, np.float32(0.5)),
         view(T.FLOAT32, np.float32(1)), view(T.FLOAT32, np.float32(0.1))],
        [OperandView(F32, (0,)), OperandView(F32, (0, 4)), OperandView(I32, (0,)),
         OperandView(I32, (0,))])
    assert shapes == [(0,), (0, 4), (0,), (0,)]
    assert s.shape == (0,) and b.shape == (0, 4) and c.shape == (0,) and n.shape == (0,)


def test_box_with_nms_limit_bad_kernel_fails():
    with pytest.raises(NnapiError):
        _nms(3)


# --- GENERATE_PROPOSALS --------------------------------------------------------------------

def _proposals(scores, deltas, anchors, info, w_stride, iou, k):
    return run_op(Op.GENERATE_PROPOSALS,
                  [inp(F32, scores), inp(F32, deltas), const(F32, anchors), inp(F32, info),
                   f32(1.0), f32(w_stride), i32(0), i32(-1), f32(iou), f32(1.0), flag(False)],
                  [out(F32, [k]), out(F32, [k, 4]), out(I32, [k])])


def test_generate_proposals_nms_suppresses_overlapping_anchor():
    # one cell, anchors (0, 0, 4, 4) score 0.9 and (1, 1, 5, 5) score 0.8, zero deltas;
    # IoU = 9 / (16 + 16 - 9) = 0.391 >= 0.3: the second is suppressed.
    s, r, b = _proposals(np.array([[[[0.9, 0.8]]]], np.float32), np.zeros((1, 1, 1, 8), np.float32),
                         np.array([[0, 0, 4, 4], [1, 1, 5, 5]], np.float32),
                         np.array([[10, 10]], np.float32), 1.0, 0.3, 1)
    np.testing.assert_allclose(s, [0.9], rtol=1e-6)
    assert r.tolist() == [[0, 0, 4, 4]] and b.tolist() == [0]


def test_generate_proposals_shifts_anchors_by_stride():
    # width 2, one anchor (0, 0, 4, 4), width stride 10: cell (0, 1) gives (10, 0, 14, 4);
    # scores 0.5, 0.6 -> output by decreasing score.
    s, r, b = _proposals(np.array([[[[0.5], [0.6]]]], np.float32), np.zeros((1, 1, 2, 4), np.float32),
                         np.array([[0, 0, 4, 4]], np.float32), np.array([[10, 20]], np.float32),
                         10.0, 0.3, 2)
    np.testing.assert_allclose(s, [0.6, 0.5], rtol=1e-6)
    assert r.tolist() == [[10, 0, 14, 4], [0, 0, 4, 4]] and b.tolist() == [0, 0]


# --- DETECTION_POSTPROCESSING ------------------------------------------------------------

# Two anchors (center y, center x, h, w) = (0.5, 0.5, 1, 1) and (2.5, 2.5, 1, 1), zero
# deltas: boxes (y1, x1, y2, x2) = (0, 0, 1, 1) and (2, 2, 3, 3) (IoU 0).
# Scores (background, class 1, class 2): anchor 0 (0, 0.9, 0.2), anchor 1 (0, 0.1, 0.7).
DP_SCORES = np.array([[[0, 0.9, 0.2], [0, 0.1, 0.7]]], np.float32)
DP_ANCHORS = np.array([[0.5, 0.5, 1, 1], [2.5, 2.5, 1, 1]], np.float32)


def _postprocess(regular, max_cls, n):
    return run_op(Op.DETECTION_POSTPROCESSING,
                  [inp(F32, DP_SCORES), inp(F32, np.zeros((1, 2, 4), np.float32)),
                   const(F32, DP_ANCHORS), f32(10), f32(10), f32(5), f32(5), flag(regular),
                   i32(3), i32(max_cls), i32(1), f32(0.15), f32(0.5), flag(False)],
                  [out(F32, [1, n]), out(F32, [1, n, 4]), out(I32, [1, n]), out(I32, [1])])


def test_detection_postprocessing_regular_nms():
    # class 1: anchor 0 (0.9; anchor 1's 0.1 <= 0.15); class 2: anchor 1 (0.7, one per
    # class). Best first: 0.9 (class 1 -> label 0), 0.7 (class 2 -> label 1); slot 3 empty.
    s, b, c, n = _postprocess(True, 1, 3)
    np.testing.assert_allclose(s, [[0.9, 0.7, 0]], rtol=1e-6)
    np.testing.assert_allclose(b, [[[0, 0, 1, 1], [2, 2, 3, 3], [0, 0, 0, 0]]], atol=1e-6)
    assert c.tolist() == [[0, 1, 0]] and n.tolist() == [2]


def test_detection_postprocessing_fast_nms_two_classes_per_detection():
    # best scores 0.9 (anchor 0), 0.7 (anchor 1), both kept; 2 classes each by score:
    # anchor 0: 0.9 (label 0), 0.2 (label 1); anchor 1: 0.7 (label 1), 0.1 (label 0)
    s, _, c, n = _postprocess(False, 2, 6)
    np.testing.assert_allclose(s, [[0.9, 0.2, 0.7, 0.1, 0, 0]], rtol=1e-6)
    assert c.tolist() == [[0, 1, 1, 0, 0, 0]] and n.tolist() == [4]


# --- ROI_ALIGN / ROI_POOLING -----------------------------------------------------------------

FEATURE = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)  # x[h, w] = 4h + w


def _align(x, roi, t=F32, roi_t=F32, scale=0.0, zp=0, roi_scale=0.0, ratio=1, nchw=False):
    dims = [1, 1, 2, 2] if nchw else [1, 2, 2, 1]
    return run_op(Op.ROI_ALIGN,
                  [inp(t, x, scale, zp), inp(roi_t, roi, roi_scale), inp(I32, np.array([0], np.int32)),
                   i32(2), i32(2), f32(1.0), f32(1.0), i32(ratio), i32(ratio), flag(nchw)],
                  [out(t, dims, scale, zp)])[0]


def test_roi_align_one_sample_per_bin():
    # roi (0, 0, 4, 4), 2 x 2 bins of 2 cells, one sample at each bin's center:
    # (y, x) = (1, 1) -> 5, (1, 3) -> 7 (x = 3 is the last column), (3, 1) -> 13, (3, 3) -> 15
    o = _align(FEATURE, np.array([[0, 0, 4, 4]], np.float32))
    assert o.reshape(2, 2).tolist() == [[5, 7], [13, 15]]


def test_roi_align_bilinear_samples_nchw():
    # roi (0, 0, 2, 2): bins of 1 cell; 2 x 2 samples at 0.25, 0.75 (+ bin start). x is
    # linear (4y + x), so the mean of the samples is its value at the bin center:
    # (0.5, 0.5) -> 2.5, (0.5, 1.5) -> 3.5, (1.5, 0.5) -> 6.5, (1.5, 1.5) -> 7.5
    o = _align(FEATURE.transpose(0, 3, 1, 2).copy(), np.array([[0, 0, 2, 2]], np.float32),
               ratio=2, nchw=True)
    np.testing.assert_allclose(o.reshape(2, 2), [[2.5, 3.5], [6.5, 7.5]], rtol=1e-6)


def test_roi_align_quant8_with_quant16_roi():
    # input scale 0.5, zp 10: raw = 2 v + 10; values 5, 7, 13, 15 -> raw 20, 24, 36, 40
    o = _align((2 * FEATURE + 10).astype(np.uint8), np.array([[0, 0, 32, 32]], np.uint16),
               Q8, Q16A, 0.5, 10, 0.125)
    assert o.reshape(2, 2).tolist() == [[20, 24], [36, 40]]


def test_roi_align_roi_outside_the_map_fails():
    with pytest.raises(NnapiError):
        _align(FEATURE, np.array([[0, 0, 5, 5]], np.float32))


def test_roi_align_zero_rois_gives_zero_batch_output():
    shapes, (o,) = run_direct(
        Op.ROI_ALIGN,
        [view(F32, FEATURE), view(F32, np.zeros((0, 4), np.float32)),
         view(I32, np.zeros(0, np.int32)), view(T.INT32, np.int32(2)),
         view(T.INT32, np.int32(2)), view(T.FLOAT32, np.float32(1)),
         view(T.FLOAT32, np.float32(1)), view(T.INT32, np.int32(0)),
         view(T.INT32, np.int32(0)), view(T.BOOL, np.bool_(False))],
        [OperandView(F32, (0, 2, 2, 1))])
    assert shapes == [(0, 2, 2, 1)] and o.shape == (0, 2, 2, 1)


def test_roi_pooling_max_per_bin():
    # roi (0, 0, 3, 3), stride 1: rounded corners 0..3, 4 cells, bins [0, 2) and [2, 4):
    # maxima 4*1+1 = 5, 4*1+3 = 7, 4*3+1 = 13, 15
    (o,) = run_op(Op.ROI_POOLING,
                  [inp(F32, FEATURE), inp(F32, np.array([[0, 0, 3, 3]], np.float32)),
                   inp(I32, np.array([0], np.int32)), i32(2), i32(2), f32(1.0), f32(1.0),
                   flag(False)], [out(F32, [1, 2, 2, 1])])
    assert o.reshape(2, 2).tolist() == [[5, 7], [13, 15]]


def test_roi_pooling_quant8_moves_raw_values_with_stride():
    # stride 2: roi (0, 0, 2, 2) -> feature cells 0..1 (2 cells), one 1 x 1 bin over rows
    # and columns [0, 2): max raw of 2 v + 10 over v in {0, 1, 4, 5} = 20
    (o,) = run_op(Op.ROI_POOLING,
                  [inp(Q8, (2 * FEATURE + 10).astype(np.uint8), 0.5, 10),
                   inp(Q16A, np.array([[0, 0, 16, 16]], np.uint16), 0.125),
                   inp(I32, np.array([0], np.int32)), i32(1), i32(1), f32(2.0), f32(2.0),
                   flag(False)], [out(Q8, [1, 1, 1, 1], 0.5, 10)])
    assert o.reshape(-1).tolist() == [20]


# --- HEATMAP_MAX_KEYPOINT -------------------------------------------------------------------

def _heatmap(grid):
    return run_op(Op.HEATMAP_MAX_KEYPOINT,
                  [inp(F32, np.asarray(grid, np.float32).reshape(1, 3, 3, 1)),
                   inp(F32, np.array([[0, 0, 6, 6]], np.float32)), flag(False)],
                  [out(F32, [1, 1]), out(F32, [1, 1, 2])])


def test_heatmap_max_keypoint_symmetric_peak():
    # maximum 2 at the center, gradient 0 -> no offset: keypoint (1.5 / 3 * 6) = (3, 3)
    score, kp = _heatmap([[0, 1, 0], [1, 2, 1], [0, 1, 0]])
    np.testing.assert_allclose(score, [[2]], rtol=1e-6)
    np.testing.assert_allclose(kp, [[[3, 3]]], rtol=1e-6)


def test_heatmap_max_keypoint_quadratic_refinement():
    # row 1 = (1, 2, 1.5): b = (-(1.5 - 1) / 2, 0) = (-0.25, 0); A = [[1 - 4 + 1.5, 0],
    # [0, 1 - 4 + 1]] = [[-1.5, 0], [0, -2]]; delta = A^-1 b = (1/6, 0);
    # score = 2 - b.delta + delta.A.delta / 2 = 2 + 0.25/6 - 1.5/36/2 = 2.0208333;
    # keypoint x = (1 + 1/6 + 0.5) / 3 * 6 = 3.3333333, y = 3
    score, kp = _heatmap([[0, 1, 0], [1, 2, 1.5], [0, 1, 0]])
    np.testing.assert_allclose(score, [[2 + 0.25 / 6 - 1.5 / 72]], rtol=1e-6)
    np.testing.assert_allclose(kp, [[[10 / 3, 3]]], rtol=1e-6)


def test_heatmap_max_keypoint_size_1_fails():
    with pytest.raises(OperationError):
        run_direct(Op.HEATMAP_MAX_KEYPOINT,
                   [view(F32, np.zeros((1, 1, 1, 1), np.float32)),
                    view(F32, np.array([[0, 0, 1, 1]], np.float32)), view(T.BOOL, np.bool_(False))],
                   [OperandView(F32, (1, 1)), OperandView(F32, (1, 1, 2))])


# --- feature level 4: TENSOR_QUANT8_ASYMM_SIGNED forms ------------------------------------

Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED


def test_bbox_transform_quant8_signed_deltas():
    # deltas scale 0.05, zp 0: raw 2 -> 0.1, 4 -> 0.2, 0 -> 0. As the quant8 case: center
    # (5 + 1, 5 + 2) = (6, 7), size 10 x 10 -> (1, 2, 11, 12) -> raw x8 = (8, 16, 88, 96)
    ins = [inp(Q16A, np.array([[0, 0, 80, 80]], np.uint16), 0.125),
           inp(Q8S, np.array([[2, 4, 0, 0]], np.int8), 0.05, 0),
           inp(I32, np.array([0], np.int32)),
           inp(Q16A, np.array([[120, 160]], np.uint16), 0.125)]
    (o,) = run_op(Op.AXIS_ALIGNED_BBOX_TRANSFORM, ins, [out(Q16A, [1, 4], 0.125)])
    assert o.tolist() == [[8, 16, 88, 96]]


def test_box_with_nms_limit_quant8_signed_scores_need_feature_level_4():
    # scores 0.9, 0.8, 0.7 as raw 90, 80, 70 (scale 0.01, zp 0); boxes x8 in quant16.
    # Hard NMS as in test_box_with_nms_limit_hard: roi 1 dropped, output scores 90, 70 raw
    scores = np.round(NMS_SCORES * 100).astype(np.int8)
    boxes = (NMS_BOXES * 8).astype(np.uint16)
    ins = [view(Q8S, scores, 0.01, 0), view(Q16A, boxes, 0.125, 0),
           view(I32, np.zeros(3, np.int32)), view(T.FLOAT32, np.float32(0.3)),
           view(T.INT32, np.int32(-1)), view(T.INT32, np.int32(0)),
           view(T.FLOAT32, np.float32(0.5)), view(T.FLOAT32, np.float32(1)),
           view(T.FLOAT32, np.float32(0.1))]
    outs = [OperandView(Q8S, (0,), 0.01, 0), OperandView(Q16A, (0, 4), 0.125, 0),
            OperandView(I32, (0,)), OperandView(I32, (0,))]
    assert level(Op.BOX_WITH_NMS_LIMIT, ins, outs) == 4
    shapes, (s, b, c, n) = run_direct(Op.BOX_WITH_NMS_LIMIT, ins, outs)
    assert shapes[0] == (2,) and s.dtype == np.int8 and s.tolist() == [90, 70]
    assert (b // 8).tolist() == [[0, 0, 10, 10], [20, 20, 30, 30]]


def test_roi_pooling_quant8_signed_moves_raw_values():
    # one 1 x 1 bin over the whole 2 x 2 map: max raw of (-5, 7, 3, -100) = 7
    x = np.array([-5, 7, 3, -100], np.int8).reshape(1, 2, 2, 1)
    (o,) = run_op(Op.ROI_POOLING,
                  [inp(Q8S, x, 0.5, -3), inp(Q16A, np.array([[0, 0, 8, 8]], np.uint16), 0.125),
                   inp(I32, np.array([0], np.int32)), i32(1), i32(1), f32(1.0), f32(1.0),
                   flag(False)], [out(Q8S, [1, 1, 1, 1], 0.5, -3)])
    assert o.dtype == np.int8 and o.reshape(-1).tolist() == [7]


def test_roi_align_quant8_signed_one_sample_per_bin():
    # 2 x 2 map of real values (raw - 1) * 0.5 = [[0, 1], [2, 3]]; roi (0, 0, 2, 2) at
    # stride 1, one 2 x 2 bin, 1 sample at its center (y, x) = (1, 1): an integer position
    # on the last row and column, so the bilinear sample is cell (1, 1) = 3
    # -> raw 3 / 0.5 + 1 = 7
    x = (np.array([[0, 1], [2, 3]]) * 2 + 1).astype(np.int8).reshape(1, 2, 2, 1)
    (o,) = run_op(Op.ROI_ALIGN,
                  [inp(Q8S, x, 0.5, 1), inp(Q16A, np.array([[0, 0, 16, 16]], np.uint16), 0.125),
                   inp(I32, np.array([0], np.int32)), i32(1), i32(1), f32(1.0), f32(1.0),
                   i32(1), i32(1), flag(False)], [out(Q8S, [1, 1, 1, 1], 0.5, 1)])
    assert o.dtype == np.int8 and o.reshape(-1).tolist() == [7]
