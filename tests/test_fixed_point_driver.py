"""The bundled driver ``sample-fixed-point`` (runtime/drivers/fixed_point.py): TFLite's
integer requantization of quantized convolutions and FULLY_CONNECTED, checked against
hand-computed cases (accumulator, QuantizeMultiplier, rounding at ties, activation clamp,
per-channel NCHW), exact accumulators against an integer computation, and the vendored CTS
corpus's quantized convolution models, which a correct driver must pass."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.runner import run_test_model
from runtime.loader import load_driver
from runtime.drivers.fixed_point import (FIXED_POINT_OPERATIONS, SampleFixedPoint, accumulators,
                                         fixed_point_table, multiply_by_quantized_multiplier,
                                         quantize_multiplier, rounding_divide_by_pot,
                                         saturating_rounding_doubling_high_mul)
from runtime.nnapi import Device
from runtime.ops import REGISTRY
from runtime.ops.base import OpContext
from runtime.testing.test_model import corpus_files, iter_corpus
from runtime.types import FuseCode, OperandType as T, OperationType as O
from tests.util import act, const, flag, i32, inp, out, run_op, view

Q8, Q8S, PC, I32 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                    T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.TENSOR_INT32)
CORPUS = Path(__file__).resolve().parents[1] / "cts" / "corpus"


def both(op, inputs, outputs):
    """(fixed-point result, reference result) of output 0, as int lists."""
    return tuple(run_op(op, inputs, outputs, d)[0].reshape(-1).astype(int).tolist()
                 for d in ("sample-fixed-point", "sample"))


def explicit_1x1(fuse=FuseCode.NONE):
    """Explicit padding 0, strides 1 and the FuseCode of a CONV_2D (inputs 3-9)."""
    return [i32(0), i32(0), i32(0), i32(0), i32(1), i32(1), act(fuse)]


# --- the fixed-point primitives, by hand ----------------------------------------------------

def test_quantize_multiplier_by_hand():
    # 0.125 / float32(0.3) = 0.125 / 0.300000011920928955 = 0.41666665011 = 0.83333330022 * 2^-1;
    # 0.83333330022 * 2^31 = 1789569635.56 -> 1789569636, shift -1
    assert quantize_multiplier(0.125 / float(np.float32(0.3))) == (1789569636, -1)
    assert quantize_multiplier(0.25) == (1 << 30, -1)  # 0.5 * 2^-1
    assert quantize_multiplier(0.75) == (3 << 29, 0)  # 0.75 * 2^0
    assert quantize_multiplier(1.5) == (3 << 29, 1)  # 0.75 * 2^1: a left shift
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(2.0 ** -40) == (0, 0)  # shift below -31: TFLite's zero


def test_rounding_primitives_by_hand():
    # RoundingDivideByPOT: ties away from zero
    assert rounding_divide_by_pot([1, -1, 5, -5, 6, -6, 4, 7], [1, 1, 1, 1, 2, 2, 2, 2]).tolist() == \
        [1, -1, 3, -3, 2, -2, 1, 2]  # 0.5, -0.5, 2.5, -2.5, 1.5, -1.5, 1, 1.75
    # SaturatingRoundingDoublingHighMul: a * b / 2^31, ties toward +infinity
    m = 3 << 29  # 0.75 * 2^31
    assert saturating_rounding_doubling_high_mul([2, -2, 6, -6, 4], m).tolist() == [2, -1, 5, -4, 3]
    assert saturating_rounding_doubling_high_mul(-(1 << 31), -(1 << 31)).item() == (1 << 31) - 1
    # left shift saturates at int32 before the multiply
    assert multiply_by_quantized_multiplier(1 << 30, 3 << 29, 1).item() == round(((1 << 31) - 1) * 0.75)


# --- hand-computed operations ---------------------------------------------------------------

def conv_1x1_case(fuse=FuseCode.NONE):
    """input (x - zp) = [4, -4] at scale 0.5, filter (w - zp) = [8, -4] at scale 0.25, bias 20
    at scale 0.125, output scale 0.3, zeroPoint 3."""
    return ([inp(Q8, np.array([[[[14, 6]]]], np.uint8), 0.5, 10),
             const(Q8, np.array([[[[136, 124]]]], np.uint8), 0.25, 128),
             const(I32, np.array([20], np.int32), 0.125, 0), *explicit_1x1(fuse)],
            [out(Q8, [1, 1, 1, 1], 0.3, 3)])


def test_1x1_conv_by_hand():
    # acc = 4 * 8 + (-4) * (-4) + 20 = 68; real multiplier 0.41666665 (M0 1789569636, shift -1,
    # test above): exactly 68 * M = 28.33 -> 28 (the reference). Fixed point rounds twice:
    # SRDHM(68, M0) = round(68 * 1789569636 / 2^31) = round(56.67) = 57, then
    # RoundingDivideByPOT(57, 1) = round(28.5) = 29 (the double rounding of TFLite's default
    # build: values within a quarter quantum below a half round up when the shift is 1)
    m0, shift = quantize_multiplier(0.125 / float(np.float32(0.3)))
    high = saturating_rounding_doubling_high_mul(68, m0).item()
    assert high == 57
    assert rounding_divide_by_pot(high, -shift).item() == 29
    assert both(O.CONV_2D, *conv_1x1_case()) == ([3 + 29], [3 + 28])


def test_activation_clamps_in_the_quantized_domain():
    # RELU1: [zp + round(-1 / 0.3), zp + round(1 / 0.3)] = [3 - 3, 3 + 3] = [0, 6]
    assert both(O.CONV_2D, *conv_1x1_case(FuseCode.RELU1)) == ([6], [6])
    # RELU6: upper bound 3 + round(6 / 0.3) = 23
    assert both(O.CONV_2D, *conv_1x1_case(FuseCode.RELU6)) == ([23], [23])


def tie_case(filter_scale):
    """A 1x1 CONV_2D over 4 pixels whose accumulators are 2, -2, 6, -6 (input scale 0.5,
    zeroPoint 100; filter value 1 above its zeroPoint; bias 0), output scale 1.0, zeroPoint
    100: the products are 0.5 * filter_scale * acc."""
    return ([inp(Q8, np.array([[[[102], [98], [106], [94]]]], np.uint8), 0.5, 100),
             const(Q8, np.array([[[[128]]]], np.uint8), filter_scale, 127),
             const(I32, np.array([0], np.int32), 0.5 * filter_scale, 0), *explicit_1x1()],
            [out(Q8, [1, 1, 4, 1], 1.0, 100)])


def test_ties_round_half_away_from_zero_with_a_right_shift():
    # M = 0.25 = 2^30 * 2^(-1-31): 0.5, -0.5, 1.5, -1.5 -> 1, -1, 2, -2 (RoundingDivideByPOT);
    # the reference (exact dyadic values, round half away) agrees
    assert both(O.CONV_2D, *tie_case(0.5)) == ([101, 99, 102, 98], [101, 99, 102, 98])


def test_ties_round_toward_plus_infinity_when_the_multiplier_needs_no_shift():
    # M = 0.75 (shift 0): 1.5, -1.5, 4.5, -4.5 rounded by the doubling high multiply alone,
    # ties toward +infinity: 2, -1, 5, -4; the reference rounds half away: 2, -2, 5, -5
    fixed, reference = both(O.CONV_2D, *tie_case(1.5))
    assert fixed == [102, 99, 105, 96]
    assert reference == [102, 98, 105, 95]


def test_per_channel_nchw_by_hand():
    # NCHW input [1, 1, 1, 2]: x - zp = [2, -4] at scale 0.5; per-channel filter [2, 1, 1, 1]
    # values [3, -5], scales [0.25, 1.0]; bias [1, -2] (scales 0.125, 0.5).
    # channel 0: acc [2*3+1, -4*3+1] = [7, -11], M 0.125 -> [0.875, -1.375] -> [1, -1]
    # channel 1: acc [2*-5-2, -4*-5-2] = [-12, 18], M 0.5 -> [-6, 9]; output zeroPoint 128
    inputs = [inp(Q8, np.array([[[[130, 124]]]], np.uint8), 0.5, 128),
              const(PC, np.array([[[[3]]], [[[-5]]]], np.int8), 0.0, 0, ([0.25, 1.0], 0)),
              const(I32, np.array([1, -2], np.int32), 0.0, 0), *explicit_1x1(), flag(True)]
    fixed, reference = both(O.CONV_2D, inputs, [out(Q8, [1, 2, 1, 2], 1.0, 128)])
    assert fixed == reference == [129, 127, 122, 137]


def test_depthwise_and_fully_connected_signed_by_hand():
    # DEPTHWISE_CONV_2D, multiplier 2, signed: x - zp = 3 (scale 1, zp -5); filter (scale 0.5,
    # zp 0) [2, -3]; bias [1, 0] at 0.5; output scale 2, zp 0: acc [7, -9], M 0.25 ->
    # [1.75, -2.25] -> [2, -2]
    inputs = [inp(Q8S, np.array([[[[-2]]]], np.int8), 1.0, -5),
              const(Q8S, np.array([[[[2, -3]]]], np.int8), 0.5, 0),
              const(I32, np.array([1, 0], np.int32), 0.5, 0),
              *explicit_1x1()[:6], i32(2), act()]
    assert both(O.DEPTHWISE_CONV_2D, inputs, [out(Q8S, [1, 1, 1, 2], 2.0, 0)]) == ([2, -2], [2, -2])
    # FULLY_CONNECTED: [x - zp] = [1, 2, 3] (scale 0.5), weights [[1, 1, 1], [2, 0, -1]]
    # (scale 0.5), bias [2, 0] at 0.25; output scale 1, zp 10: acc [8, -1], M 0.25 ->
    # [2, -0.25] -> [2, 0]
    inputs = [inp(Q8S, np.array([[11, 12, 13]], np.int8), 0.5, 10),
              const(Q8S, np.array([[1, 1, 1], [2, 0, -1]], np.int8), 0.5, 0),
              const(I32, np.array([2, 0], np.int32), 0.25, 0), act()]
    assert both(O.FULLY_CONNECTED, inputs, [out(Q8S, [1, 2], 1.0, 10)]) == ([12, 10], [12, 10])


# --- exact accumulators ---------------------------------------------------------------------

def test_accumulators_are_exact_beyond_float32():
    # input_size 2048 of 255 * 255 products: sums near 1.3e8 > 2^24 (float32 would round)
    rng = np.random.default_rng(0)
    x = rng.integers(200, 256, (3, 2048)).astype(np.uint8)
    w = rng.integers(0, 256, (4, 2048)).astype(np.uint8)
    b = rng.integers(-1000, 1000, 4).astype(np.int32)
    ctx = OpContext(O.FULLY_CONNECTED, [view(Q8, x, 0.01, 3), view(Q8, w, 0.02, 250),
                                        view(I32, b, float(np.float32(0.01) * np.float32(0.02))),
                                        view(T.INT32, FuseCode.RELU)],
                    [view(Q8, np.zeros((3, 4)), 1.0, 0)])
    acc = accumulators(REGISTRY[O.FULLY_CONNECTED], ctx, REGISTRY[O.FULLY_CONNECTED].execute)
    exact = (x.astype(np.int64) - 3) @ (w.astype(np.int64) - 250).T + b
    assert np.abs(exact).max() > 1 << 24
    assert acc.tolist() == exact.tolist()


@pytest.mark.parametrize("nchw", [False, True])
def test_conv_accumulators_match_an_integer_convolution(nchw):
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (2, 5, 6, 7)).astype(np.int8)  # NHWC
    f = rng.integers(-127, 128, (3, 3, 2, 7)).astype(np.int8)
    b = rng.integers(-5000, 5000, 3).astype(np.int32)
    scales = [0.01, 0.02, 0.03]
    xv = x.transpose(0, 3, 1, 2) if nchw else x
    ins = [view(Q8S, xv, 0.05, -7), view(PC, f, 0.0, 0, (scales, 0)), view(I32, b),
           view(T.INT32, 1), view(T.INT32, 0), view(T.INT32, 1), view(T.INT32, 1),  # padding l r t b
           view(T.INT32, 1), view(T.INT32, 1), view(T.INT32, FuseCode.RELU6), view(T.BOOL, nchw)]
    outs = [view(Q8S, np.zeros((2, 3, 5, 6) if nchw else (2, 5, 6, 3)), 0.5, 0)]
    ctx = OpContext(O.CONV_2D, ins, outs)
    acc = accumulators(REGISTRY[O.CONV_2D], ctx, REGISTRY[O.CONV_2D].execute)
    xp = np.pad(x.astype(np.int64) + 7, ((0, 0), (1, 1), (1, 0), (0, 0)))  # top/bottom 1, left 1
    exact = np.zeros((2, 5, 6, 3), np.int64)
    for i in range(5):
        for j in range(6):
            patch = xp[:, i:i + 3, j:j + 2, :]  # [n, 3, 2, 7]
            exact[:, i, j, :] = np.einsum("nhwc,ohwc->no", patch, f.astype(np.int64)) + b
    assert acc.tolist() == (exact.transpose(0, 3, 1, 2) if nchw else exact).tolist()


# --- the driver -----------------------------------------------------------------------------

def test_bundled_and_replaces_only_the_quantized_kernels():
    assert isinstance(load_driver("sample-fixed-point"), SampleFixedPoint)
    table = fixed_point_table()
    changed = {op for op in REGISTRY if table[op].execute is not REGISTRY[op].execute}
    assert changed == set(FIXED_POINT_OPERATIONS)
    # float outputs run the reference kernel
    inputs = [inp(T.TENSOR_FLOAT32, np.array([[1.0, 2.0, 3.0]], np.float32)),
              const(T.TENSOR_FLOAT32, np.array([[0.5, 0.25, 0.125]], np.float32)),
              const(T.TENSOR_FLOAT32, np.array([0.1], np.float32)), act()]
    fixed, reference = (run_op(O.FULLY_CONNECTED, inputs, [out(T.TENSOR_FLOAT32, [1, 1])], d)[0]
                        for d in ("sample-fixed-point", "sample"))
    assert fixed.tolist() == reference.tolist()


def quantized_conv_models():
    """Vendored CTS models (not expect_failure) with a quantized convolution or
    FULLY_CONNECTED output."""
    files = [f for f in corpus_files([CORPUS]) if "conv" in f.name or "fully_connected" in f.name]
    return [tm for tm in iter_corpus(files) if not tm.expect_failure and any(
        op.type in FIXED_POINT_OPERATIONS and tm.main.operands[op.outputs[0]].type in (Q8, Q8S)
        for op in tm.main.operations)]


def test_cts_corpus_quantized_convolutions_pass():
    models = quantized_conv_models()
    assert len({op.type for tm in models for op in tm.main.operations} & set(FIXED_POINT_OPERATIONS)) == 5
    sample = models[::8]  # about a hundred of the ~830 (all pass; the whole set takes 2 s)
    device = Device(SampleFixedPoint())
    failed = [(tm.test_id, o.message) for tm in sample
              if (o := run_test_model(tm, device, require_timing=False)).status != "passed"]
    assert not failed, failed[:3]


def test_double_rounding_bias_reaches_a_quarter_quantum_with_shift_one():
    # Worst case of a correct fixed-point driver: multiplier 0.3 (right shift 1), outputs of
    # one sign (RELU): values with a fractional part in [0.25, 0.5) round up instead of down
    # (the module docstring, (b)): a quarter of them when fractional parts are uniform, a mean
    # error of +0.25 quanta. Here acc = 0..255 and acc * 0.3 has fractional parts .0 .3 .6 .9
    # .2 .5 .8 .1 .4 .7: two in ten (.3, .4) are one high, 51 of 256 outputs, mean +0.199.
    # The quantized mean-error bound must stay above such correct drivers.
    x = np.arange(256, dtype=np.uint8).reshape(256, 1)
    out_scale = float(np.float32(0.5 * 0.6 / 0.3))  # M = 0.5 * 0.6 / 1.0 = 0.3
    ins = [view(Q8, x, 0.5, 0), view(Q8, np.array([[129]], np.uint8), 0.6, 128),
           view(I32, np.array([0], np.int32), float(np.float32(0.5) * np.float32(0.6))),
           view(T.INT32, FuseCode.RELU)]
    results = []
    for table in (fixed_point_table(), REGISTRY):
        ctx = OpContext(O.FULLY_CONNECTED, list(ins), [view(Q8, np.zeros((256, 1)), out_scale, 0)])
        results.append(table[O.FULLY_CONNECTED].execute(ctx)[0].astype(int))
    diff = results[0] - results[1]
    assert set(diff.reshape(-1).tolist()) == {0, 1}
    assert int(diff.sum()) == 51


def test_passes_single_operation_random_graphs_of_its_operations():
    from random_graph.calibrate import default_patterns
    from harness.graph_configs import all_configs, criteria_for
    from harness.graphs import GenerationError, generate
    from random_graph.run import run_graph
    configs = all_configs()
    device = Device(SampleFixedPoint())
    names = [n for n in default_patterns(configs)
             if any(n.startswith(f"single-{op.name}-") for op in FIXED_POINT_OPERATIONS)]
    ran, failed = 0, []
    for name in names:
        for seed in range(2):
            try:
                tm = generate(configs[name], seed, criteria_for(configs[name]).name)
            except GenerationError:
                continue
            outcome = run_graph(tm, device)
            ran += 1
            if outcome.status != "passed":
                failed.append((name, seed, outcome.message[:200]))
    assert ran >= 60 and not failed, failed[:3]
