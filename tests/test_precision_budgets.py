"""Error budgets (issue 23): the formulas checked by hand, their composition over a model, and
the reference's own float32 path within its budget on every valid corpus and spec model.

Golden values are hand calculations from the formulas' sources (WebNN tolerance n counts n +
0.5 against the truth, OpenCL bound n counts n; ``runtime.ops.budgets``), and sums of
absolute terms worked out on paper; nothing here is read back from the code under test.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.locations import CORPUS, SPECS
from runtime.executor import run_subgraph
from runtime.nnapi import Model
from runtime.ops import REGISTRY
from runtime.ops.base import OpContext
from runtime.precision import budgets
from runtime.precision.budgets import NO_BUDGET, OVER, WITHIN, measure, test_budget
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.support import not_implemented_reason
from runtime.testing.test_model import iter_corpus, load_spec
from runtime.types import FuseCode, OperandType as T, OperationType as OP
from tests.util import view

F32_ULP_AT_1 = 2.0 ** -23


def _budget(op, inputs, outputs, relaxed=False):
    """The row's budget of one use (inputs: views with values; outputs: views)."""
    ctx = OpContext(op, inputs, outputs, relaxed)
    for v, shape in zip(outputs, REGISTRY[op].prepare(ctx)):
        v.dims = tuple(shape)
    return REGISTRY[op].error_budget(ctx)


def _i32(v):
    return view(T.INT32, v)


def _out(t, dims=(0,)):
    return view(t, np.zeros(dims))


# --- formulas, by hand -------------------------------------------------------------------

def test_conv_budget_and_scale_of_a_cancelling_window():
    """CONV_2D 3x3 input, 2x2 filter of ones, one channel, VALID: K = 2*2*1, budget 2K + 1
    (bias) + 0.5 = 9.5 ULP; every window sums to 0 (1-2-4+5, -2+3+5-6, -4+5+7-8, 5-6-8+9),
    so the truth is the bias 0.5 and the scale sum|x| + |b|: 12.5, 16.5, 24.5, 28.5."""
    x = np.array([[1, -2, 3], [-4, 5, -6], [7, -8, 9]], np.float32).reshape(1, 3, 3, 1)
    w = np.ones((1, 2, 2, 1), np.float32)
    b = np.array([0.5], np.float32)
    inputs = [view(T.TENSOR_FLOAT32, x), view(T.TENSOR_FLOAT32, w), view(T.TENSOR_FLOAT32, b),
              *(_i32(v) for v in (0, 0, 0, 0, 1, 1)), _i32(FuseCode.RELU1)]
    bgt = _budget(OP.CONV_2D, inputs, [_out(T.TENSOR_FLOAT32, (1, 2, 2, 1))])
    assert bgt.ulps == 9.5
    np.testing.assert_array_equal(np.asarray(bgt.scale).reshape(2, 2), [[12.5, 16.5], [24.5, 28.5]])


def test_depthwise_and_fully_connected_and_batch_matmul_budgets():
    """DEPTHWISE_CONV_2D 2x2 filter: K = 4 (Cin / groups = 1): 9.5. FULLY_CONNECTED x [1, 3]
    = [1, -2, 3], W = [[1, 1, 1], [2, -1, 0]], b = [0, 1]: K = 3, 2K + 1 + 0.5 = 7.5, scale
    [1+2+3+0, 2+2+0+1] = [6, 5]. BATCH_MATMUL lhs [4, 3] with adj_x: K = 4: 2K + 0.5 = 8.5."""
    x = np.arange(18, dtype=np.float32).reshape(1, 3, 3, 2)
    w = np.ones((1, 2, 2, 2), np.float32)
    dw = _budget(OP.DEPTHWISE_CONV_2D,
                 [view(T.TENSOR_FLOAT32, x), view(T.TENSOR_FLOAT32, w), view(T.TENSOR_FLOAT32, np.zeros(2)),
                  *(_i32(v) for v in (0, 0, 0, 0, 1, 1, 1)), _i32(0)], [_out(T.TENSOR_FLOAT32, (1, 2, 2, 2))])
    assert dw.ulps == 9.5
    fc = _budget(OP.FULLY_CONNECTED,
                 [view(T.TENSOR_FLOAT32, [[1, -2, 3]]), view(T.TENSOR_FLOAT32, [[1, 1, 1], [2, -1, 0]]),
                  view(T.TENSOR_FLOAT32, [0, 1]), _i32(0)], [_out(T.TENSOR_FLOAT32, (1, 2))])
    assert fc.ulps == 7.5
    np.testing.assert_array_equal(fc.scale, [[6, 5]])
    bm = _budget(OP.BATCH_MATMUL, [view(T.TENSOR_FLOAT32, np.ones((4, 3))), view(T.TENSOR_FLOAT32, np.ones((4, 2))),
                                   view(T.BOOL, True), view(T.BOOL, False)], [_out(T.TENSOR_FLOAT32, (3, 2))])
    assert bm.ulps == 8.5


def test_elementwise_budgets_per_format():
    """EXP: WebNN float32 32 (+0.5), OpenCL half 2, and a relaxed float32 output takes the
    float16 column; SIN OpenCL 4 / 2; DIV 2.5; ADD 1.5 at |a| + |b|, exact (0) with an
    all-zero operand; ABS and data movement 0.5."""
    x32, x16 = view(T.TENSOR_FLOAT32, [0.5, -1.0]), view(T.TENSOR_FLOAT16, [0.5, -1.0])
    assert _budget(OP.EXP, [x32], [_out(T.TENSOR_FLOAT32, (2,))]).ulps == 32.5
    assert _budget(OP.EXP, [x16], [_out(T.TENSOR_FLOAT16, (2,))]).ulps == 2.0
    assert _budget(OP.EXP, [x32], [_out(T.TENSOR_FLOAT32, (2,))], relaxed=True).ulps == 2.0
    assert _budget(OP.SIN, [x32], [_out(T.TENSOR_FLOAT32, (2,))]).ulps == 4.0
    assert _budget(OP.SIN, [x16], [_out(T.TENSOR_FLOAT16, (2,))]).ulps == 2.0
    a, b = view(T.TENSOR_FLOAT32, [1.0, -3.0]), view(T.TENSOR_FLOAT32, [-1.0, 2.0])
    assert _budget(OP.DIV, [a, b, _i32(0)], [_out(T.TENSOR_FLOAT32, (2,))]).ulps == 2.5
    add = _budget(OP.ADD, [a, b, _i32(0)], [_out(T.TENSOR_FLOAT32, (2,))])
    assert add.ulps == 1.5
    np.testing.assert_array_equal(add.scale, [2.0, 5.0])
    assert _budget(OP.ADD, [a, view(T.TENSOR_FLOAT32, [0.0]), _i32(0)], [_out(T.TENSOR_FLOAT32, (2,))]).ulps == 0
    assert _budget(OP.ABS, [a], [_out(T.TENSOR_FLOAT32, (2,))]).ulps == 0.5
    assert _budget(OP.TRANSPOSE, [a, view(T.TENSOR_INT32, [0])], [_out(T.TENSOR_FLOAT32, (2,))]).ulps == 0.5


def test_reduction_pool_and_softmax_budgets():
    """REDUCE_SUM of [2, 3] over axis 1: N = 3, 3.5 ULP at sum|x| = [6, 15]; MEAN: N + 2 +
    0.5 = 5.5 at mean|x| = [2, 5]; AVERAGE_POOL_2D 2x2 window: 4 + 2 + 0.5 = 6.5; SOFTMAX
    over 4 values: 3 * 4 + 3 + 0.5 = 15.5."""
    x = view(T.TENSOR_FLOAT32, [[1, -2, 3], [-4, 5, -6]])
    axis = view(T.TENSOR_INT32, [1])
    s = _budget(OP.REDUCE_SUM, [x, axis, view(T.BOOL, False)], [_out(T.TENSOR_FLOAT32, (2,))])
    assert s.ulps == 3.5
    np.testing.assert_array_equal(s.scale, [6, 15])
    m = _budget(OP.MEAN, [x, axis, _i32(0)], [_out(T.TENSOR_FLOAT32, (2,))])
    assert m.ulps == 5.5
    np.testing.assert_array_equal(m.scale, [2, 5])
    img = view(T.TENSOR_FLOAT32, np.ones((1, 2, 2, 1)))
    pool = _budget(OP.AVERAGE_POOL_2D, [img, *(_i32(v) for v in (0, 0, 0, 0, 1, 1, 2, 2, 0))],
                   [_out(T.TENSOR_FLOAT32, (1, 1, 1, 1))])
    assert pool.ulps == 6.5
    sm = _budget(OP.SOFTMAX, [view(T.TENSOR_FLOAT32, [[1, 2, 3, 4]]), view(T.FLOAT32, 1.0)],
                 [_out(T.TENSOR_FLOAT32, (1, 4))])
    assert sm.ulps == 15.5


# --- composition, by hand ----------------------------------------------------------------

def _hal(build, relaxed=False):
    """A HAL model from ``build(model)`` -> (inputs, outputs) on a front-end Model."""
    m = Model()
    ins, outs = build(m)
    m.identify_inputs_and_outputs(ins, outs)
    if relaxed:
        m.relax_computation_float32_to_float16(True)
    m.finish()
    return m.to_hal()


def _add(m, a, b, t=T.TENSOR_FLOAT32, dims=(1,)):
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, np.int32(0))
    o = m.add_operand(t, list(dims))
    m.add_operation(OP.ADD, [a, b, act], [o])
    return o


def test_a_chain_sums_budgets_at_the_magnitude_of_the_cancelled_sum():
    """out = (a + b) + c with a = 1, b = -(1 - 2^-20), c = 2^-21: each ADD 1.5 ULP, the sum
    3.0; a + b cancels to 2^-20, so the second ADD's scale is the magnitudes |a| + |b| + |c|
    = 2 - 2^-20 + 2^-21 = 2 - 2^-21, the truth 1.5 * 2^-20."""
    def build(m):
        a, b, c = (m.add_operand(T.TENSOR_FLOAT32, [1]) for _ in range(3))
        return [a, b, c], [_add(m, _add(m, a, b), c)]
    tb = test_budget(_hal(build), [np.float32([1.0]), np.float32([-(1 - 2.0 ** -20)]), np.float32([2.0 ** -21])])
    assert tb.truth[0][0] == 1.5 * 2.0 ** -20
    bound = tb.outputs[0]
    assert bound.ulps == pytest.approx(3.0)
    assert bound.scale[0] == 2 - 2.0 ** -21
    assert bound.dtype == np.float32 and bound.operations == ("ADD",)


def test_an_error_crossing_formats_is_converted():
    """ADD in float16 (1.5 float16 ULP), then CAST to float32 (0.5): 1.5 float16 ULP are
    1.5 * 2^13 float32 ULP, the bound 12288 + 0.5."""
    def build(m):
        a, b = (m.add_operand(T.TENSOR_FLOAT16, [2]) for _ in range(2))
        o = m.add_operand(T.TENSOR_FLOAT32, [2])
        m.add_operation(OP.CAST, [_add(m, a, b, T.TENSOR_FLOAT16, (2,))], [o])
        return [a, b], [o]
    tb = test_budget(_hal(build), [np.float16([1.5, 3.0]), np.float16([0.25, -1.0])])
    np.testing.assert_array_equal(tb.truth[0], [1.75, 2.0])
    assert tb.outputs[0].ulps == 1.5 * 2 ** 13 + 0.5


def test_a_relaxed_model_is_graded_in_float16_from_its_inputs_rounding():
    """Relaxed ADD: float16 ULP; an input float16 holds adds nothing, 1 + 2^-12 (a quarter
    of a float16 ULP at 1 from 1) adds 0.25: 1.5 + 0.25."""
    def build(m):
        a, b = (m.add_operand(T.TENSOR_FLOAT32, [1]) for _ in range(2))
        return [a, b], [_add(m, a, b)]
    model = _hal(build, relaxed=True)
    exact = test_budget(model, [np.float32([1.0]), np.float32([2.0])]).outputs[0]
    assert exact.dtype == np.float16 and exact.ulps == 1.5
    rounded = test_budget(model, [np.float32([1 + 2.0 ** -12]), np.float32([2.0])]).outputs[0]
    assert rounded.ulps == pytest.approx(1.75)


def test_a_while_loop_sums_its_iterations():
    """while_fib: each iteration a FULLY_CONNECTED of K = 2 (2K + 1 + 0.5 = 5.5 ULP), n - 1
    iterations for input n (fib(n) from (1, 1)); relaxed models too (every value is a small
    integer float16 holds)."""
    seen = 0
    for tm in load_spec(CORPUS / "V1_3" / "while_fib.json.gz"):
        if tm.main.operands[tm.main.output_indexes[0]].type == T.TENSOR_FLOAT32 or "float16" in tm.name:
            n = int(next(d for d in (tm.main.operands[i].data for i in tm.main.input_indexes)
                         if d.dtype == np.int32)[0])
            tb = test_budget(to_hal_model(tm), [tm.main.operands[i].data for i in tm.main.input_indexes])
            assert tb.outputs[0].ulps == pytest.approx(5.5 * (n - 1)), tm.name
            seen += 1
    assert seen >= 20


def test_measure_grades_an_error_of_three_ulps():
    """A result 3 ULP above 1.0 in float32 against a 1.5 ULP budget: 3 ULP, over; under a
    budget of 4, within; with no budget, graded "no budget"."""
    truth = np.array([1.0, 2.0])
    actual = np.array([1 + 3 * F32_ULP_AT_1, 2.0])
    bound = budgets.OutputBound(1.5, None, np.dtype(np.float32))
    e = measure(bound, truth, actual)
    assert (e.ulp_max, e.ulp_mean, e.worst, e.grade) == (3.0, 1.5, (0,), OVER)
    assert measure(budgets.OutputBound(4.0, None, np.dtype(np.float32)), truth, actual).grade == WITHIN
    assert measure(budgets.OutputBound(math.inf, None, np.dtype(np.float32)), truth, actual).grade == NO_BUDGET


def test_a_float32_accumulation_stays_within_the_fully_connected_budget():
    """An independent float32 implementation (a sequential float32 dot product, the naive
    order) of cancelling sums of 64 terms: within FULLY_CONNECTED's 2K + 1.5 ULP at the sum
    of absolute terms, though not at the results' own magnitudes (why the scale exists)."""
    rng = np.random.default_rng(23)
    x = rng.uniform(-1, 1, (8, 64)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 64)).astype(np.float32)
    actual = np.zeros((8, 16), np.float32)
    for k in range(64):
        actual = (actual + x[:, k:k + 1] * w[:, k]).astype(np.float32)
    truth = x.astype(np.float64) @ w.astype(np.float64).T
    scale = np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64).T
    bound = budgets.OutputBound(2 * 64 + 1.5, scale, np.dtype(np.float32))
    assert measure(bound, truth, actual).grade == WITHIN
    unscaled = budgets.OutputBound(2 * 64 + 1.5, None, np.dtype(np.float32))
    assert measure(unscaled, truth, actual).ulp_max > measure(bound, truth, actual).ulp_max


# --- the reference's own float32 path, on every valid corpus and spec model -----------------

ROOTS = sorted(p for p in CORPUS.iterdir() if p.is_dir()) + [SPECS]


@pytest.mark.parametrize("root", ROOTS, ids=lambda p: p.name)
def test_the_reference_float32_path_is_within_budget(root):
    """Every float output of every valid model the reference runs: the reference's normal
    (float32 / float16) execution is within the composed budget against the float64 truth,
    and every float output has a budget."""
    over, unbounded, graded = [], [], 0
    for tm in iter_corpus([root]):
        hm = to_hal_model(tm)
        if tm.expect_failure or not_implemented_reason(hm, signatures_too=True):
            continue
        if not any(tm.main.operands[i].type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
                   for i in tm.main.output_indexes):
            continue
        inputs = [tm.main.operands[i].data for i in tm.main.input_indexes]
        tb = test_budget(hm, inputs)
        values = [(None if a is None else np.asarray(a), list(np.shape(a)) if a is not None
                   else list(tm.main.operands[i].dimensions)) for a, i in zip(inputs, tm.main.input_indexes)]
        actual = run_subgraph(hm, hm.main, values, hm.relax_computation_float32_to_float16)
        for j, (bound, truth, a) in enumerate(zip(tb.outputs, tb.truth, actual)):
            if bound is None or tm.main.operands[tm.main.output_indexes[j]].is_ignored:
                continue
            e = measure(bound, truth, a, j)
            if e is None:
                continue
            graded += 1
            if e.grade == OVER:
                over.append(f"{tm.test_id}: {e.describe()}")
            elif e.grade == NO_BUDGET:
                unbounded.append(f"{tm.test_id} output {j}: {bound.note}")
    assert not over, f"{len(over)} over budget: " + "; ".join(over[:5])
    assert not unbounded, f"{len(unbounded)} without a budget: " + "; ".join(unbounded[:5])
    assert graded > 0
