"""Float64 truth (runtime.precision.truth) and ULP errors (runtime.precision.ulp).

Golden values: hand calculation (exact binary sums, IEEE 754 format constants), Python's
``math`` library in float64, and the AOSP corpus' own expected outputs.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.locations import CORPUS
from runtime.ops.common import computing_truth, float64_truth
from runtime.precision.truth import float64_outputs
from runtime.precision.ulp import ulp, ulp_error
from runtime.testing.criteria import compare, tolerance_for
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import iter_corpus
from runtime.types import OperandType as T, OperationType as Op
from runtime.nnapi import Model
from tests.util import run_direct, view


# --- ULP: IEEE 754 binary32 / binary16 constants, by hand ------------------------------------

@pytest.mark.parametrize("value, dtype, expected", [
    (1.0, np.float32, 2.0 ** -23), (1.5, np.float32, 2.0 ** -23), (2.0, np.float32, 2.0 ** -22),
    (0.0, np.float32, 2.0 ** -149), (2.0 ** -130, np.float32, 2.0 ** -149),  # subnormal gap
    (-3.0, np.float32, 2.0 ** -22), (1.0, np.float16, 2.0 ** -10), (65504.0, np.float16, 32.0),
    (0.0, np.float16, 2.0 ** -24), (2.0 ** -20, np.float16, 2.0 ** -24),
    (1.0, T.TENSOR_FLOAT16, 2.0 ** -10), (np.inf, np.float32, np.inf)])
def test_ulp_of_format_constants(value, dtype, expected):
    assert ulp(np.array([value]), dtype)[0] == expected


def test_ulp_error_counts_gaps_and_special_values():
    one_up = np.nextafter(np.float32(1), np.float32(2))
    assert ulp_error(np.array([one_up]), np.array([1.0]), np.float32)[0] == 1.0
    assert ulp_error(np.array([1.0]), np.array([1.0 + 2.0 ** -25]), np.float32)[0] == 0.25
    # NaN where the truth is NaN, and an overflow to the infinity the truth rounds to: exact
    assert ulp_error(np.array([np.nan, np.inf]), np.array([np.nan, 70000.0]), np.float16).tolist() == [0, 0]
    # e^10 = 22026.47 fits float16: an infinity is an infinitely wrong answer, so is a NaN
    assert ulp_error(np.array([np.inf, np.nan]), np.array([22026.47, 1.0]), np.float16).tolist() == [np.inf] * 2
    # a magnitude scale: the error of a cancelling sum counted at the sum of |terms|
    assert ulp_error(np.array([2.0 ** -20]), np.array([0.0]), np.float32, scale=np.array([4.0]))[0] == 2.0 ** -20 / 2.0 ** -21


# --- truth: the kernels at float64 ------------------------------------------------------------

def test_truth_keeps_bits_float32_rounds_away():
    """FULLY_CONNECTED of [1, 2^-24, 2^-24] with unit weights: the exact sum 1 + 2^-23 (hand)
    is a float32 number, the float64 truth holds it; float32 accumulation from the left
    rounds each 1 + 2^-24 back to 1."""
    x = np.array([[1.0, 2.0 ** -24, 2.0 ** -24]], np.float32)
    ins = [view(T.TENSOR_FLOAT32, x), view(T.TENSOR_FLOAT32, np.ones((1, 3))),
           view(T.TENSOR_FLOAT32, np.zeros(1)), view(T.INT32, 0)]
    with float64_truth():
        assert computing_truth()
        _, (y,) = run_direct(Op.FULLY_CONNECTED, ins, [view(T.TENSOR_FLOAT32, np.zeros((1, 1)))])
    assert not computing_truth()
    assert y.dtype == np.float64 and y[0, 0] == 1.0 + 2.0 ** -23


def test_truth_of_a_model_is_float64_math():
    """EXP then MUL by 3 as a model: the truth is math.exp(x) * 3 in float64 (one rounding
    each, as Python's math computes it); the float16 model's truth is not rounded to float16."""
    for t, dtype in ((T.TENSOR_FLOAT32, np.float32), (T.TENSOR_FLOAT16, np.float16)):
        m = Model()
        a = m.add_operand(t, [4])
        b = m.add_operand(t, [4])
        three = m.add_operand(t, [1])
        m.set_operand_value(three, np.array([3.0], dtype))
        fuse = m.add_operand(T.INT32, [])
        m.set_operand_value(fuse, np.array(0, np.int32))
        c = m.add_operand(t, [4])
        m.add_operation(Op.EXP, [a], [b])
        m.add_operation(Op.MUL, [b, three, fuse], [c])
        m.identify_inputs_and_outputs([a], [c])
        m.finish()
        x = np.array([-1.5, 0.1, 2.0, 9.0], dtype)
        (y,) = float64_outputs(m.to_hal(), [x])
        assert y.dtype == np.float64
        np.testing.assert_allclose(y, [math.exp(float(v)) * 3.0 for v in x], rtol=1e-15, atol=0)


def test_truth_of_quantized_operation_rounds_once():
    """DEQUANTIZE (scale 0.1, zeroPoint 3) in truth mode: (q - 3) * float32(0.1) in float64,
    not rounded to float32 (hand: float32(0.1) = 0.100000001490116...)."""
    q = np.array([0, 3, 4, 255], np.uint8)
    with float64_truth():
        _, (y,) = run_direct(Op.DEQUANTIZE, [view(T.TENSOR_QUANT8_ASYMM, q, 0.1, 3)],
                             [view(T.TENSOR_FLOAT32, np.zeros(4))])
    s = float(np.float32(0.1))
    assert y.dtype == np.float64 and y.tolist() == [-3 * s, 0.0, s, 252 * s]


_TRUTH_EXEMPT = {Op.RANDOM_MULTINOMIAL}  # random draws: judged by distribution


def _corpus_models():
    return [tm for tm in iter_corpus([CORPUS]) if not tm.expect_failure
            and not _TRUTH_EXEMPT & set(tm.operation_types)]


def test_truth_meets_every_corpus_golden():
    """On every valid AOSP corpus model, the float64 truth meets the corpus' expected outputs
    under AOSP's criteria (float: atol + rtol * |expected|; quantized: one quantum; the rest
    exact): the truth path breaks no kernel (computed by AOSP, the goldens are independent)."""
    checked, problems = 0, []
    for tm in _corpus_models():
        sg = tm.main
        try:
            truth = float64_outputs(to_hal_model(tm), [sg.operands[i].data for i in sg.input_indexes])
        except Exception as e:  # noqa: BLE001 - reported, not raised: one line per model
            problems.append(f"{tm.test_id}: {e}")
            continue
        for j, (idx, y) in enumerate(zip(sg.output_indexes, truth)):
            o = sg.operands[idx]
            if o.data is None or o.is_ignored:
                continue
            message = compare(o.data, y, tolerance_for(o.type, tm.is_relaxed, tm.name))
            if message:
                problems.append(f"{tm.test_id} output {j}: {message}")
        checked += 1
    assert checked > 5000 and not problems, "\n".join(problems[:20])
