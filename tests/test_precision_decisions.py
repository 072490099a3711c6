"""Decisions downstream of float error and the three-way comparison (issue 23, items 5 and 6):
each decision rule's mask by hand, ambiguity carried through a hand-built graph, the
minimized SOFTMAX -> EQUAL graph that failed a one-ULP-high driver, drivers with real faults
still caught, and the "times worse than the reference" ratio on a hand example."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.graph_configs import all_configs, criteria_for, select
from harness.graphs import generate, with_reference_outputs
from random_graph.judge import ambiguity
from random_graph.run import run_graph
from runtime import ops
from runtime.nnapi import Device, get_devices
from runtime.ops.base import OpContext, OperandView
from runtime.ops.decision_rules import (any_error_decision, arg_decision, cast_decision, comparison_decision,
                                        floor_decision, overlapping, quantize_decision, topk_decision)
from runtime.precision.three_way import compare
from runtime.testing.criteria import LARGE_GRAPH
from runtime.testing import test_model as tmod
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as Op
from tests.broken_drivers import LessAsLessEqual, OffByTwoQuantaAdd, OneUlpHighFloat

F32, I32, BOOL8, Q8 = T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_BOOL8, T.TENSOR_QUANT8_ASYMM
E = 1e-5  # an allowed error, about AOSP's float32 atol


def _view(t, value, scale=0.0, zero_point=0):
    value = np.asarray(value)
    return OperandView(t, value.shape, scale, zero_point, value)


def _rule(rule, inputs, outputs, errors):
    """Run a decision ``rule`` on input views after the row's own kernel: its masks."""
    op = rule_ops[rule]
    ctx = OpContext(op, inputs, [OperandView(t, (), s, z) for t, s, z in outputs])
    opdef = ops.REGISTRY[op]
    for view, shape in zip(ctx.outputs, opdef.prepare(ctx)):
        view.dims = tuple(shape)
    results = opdef.execute(ctx)
    return rule(ctx, errors, results), results


rule_ops = {comparison_decision: Op.LESS, arg_decision: Op.ARGMAX, topk_decision: Op.TOPK_V2,
            floor_decision: Op.FLOOR, cast_decision: Op.CAST, quantize_decision: Op.QUANTIZE}


# --- each rule's mask, by hand ----------------------------------------------------------------

def test_comparison_marks_elements_within_the_summed_errors_of_equality():
    a = _view(F32, np.float32([1.0, 2.0, 3.0, 4.0]))
    b = _view(F32, np.float32([1.0, 2.00001, 2.5, 4.00002]))
    (mask,), _ = _rule(comparison_decision, [a, b], [(BOOL8, 0, 0)], [np.full(4, E), None])
    # |a - b| = 0, 1.0014e-5, 0.5, 2.0027e-5 (float32 values) against e_a + e_b = 1e-5
    assert mask.tolist() == [True, False, False, False]
    (mask,), _ = _rule(comparison_decision, [a, b], [(BOOL8, 0, 0)], [np.full(4, E), np.full(4, 2 * E)])
    assert mask.tolist() == [True, True, False, True]  # within 3e-5 now, 0.5 never
    # both inputs exact (model inputs, constants): a tie has one answer
    (mask,), _ = _rule(comparison_decision, [a, b], [(BOOL8, 0, 0)], [None, None])
    assert mask is None


def test_comparison_broadcasts_and_reads_quantized_inputs_as_real_values():
    a = _view(Q8, np.uint8([[10], [20]]), 0.5, 10)       # real 0, 5
    b = _view(Q8, np.uint8([11, 20, 30]), 0.25, 0)       # real 2.75, 5, 7.5
    # a computed quant value may be one quantum off: 0.5 real
    (mask,), results = _rule(comparison_decision, [a, b], [(BOOL8, 0, 0)], [np.float64(0.5), None])
    assert results[0].shape == (2, 3)
    assert mask.tolist() == [[False, False, False], [False, True, False]]  # only 5 vs 5


def test_arg_decision_marks_rows_whose_extreme_has_a_rival_within_the_errors():
    x = _view(F32, np.float32([[1.0, 5.0, 4.99999], [3.0, 1.0, 2.0], [7.0, 7.0, 0.0]]))
    axis = _view(T.INT32, np.int32(1))
    (mask,), results = _rule(arg_decision, [x, axis], [(I32, 0, 0)], [np.full((3, 3), E), None])
    assert results[0].tolist() == [1, 0, 0]
    assert mask.tolist() == [True, False, True]  # 5 vs 4.99999; 3 alone; an exact tie of 7s


def test_topk_marks_the_indices_whose_rank_can_change_and_never_the_values():
    x = _view(F32, np.float32([[1.0, 3.0, 2.99999, 0.0], [4.0, 3.0, 2.0, 1.0]]))
    k = _view(T.INT32, np.int32(3))
    (values, indices), results = _rule(topk_decision, [x, k], [(F32, 0, 0), (I32, 0, 0)],
                                       [np.full((2, 4), E), None])
    assert results[1].tolist() == [[1, 2, 0], [0, 1, 2]]
    assert values is None
    assert indices.tolist() == [[True, True, False], [False, False, False]]


def test_overlapping_is_exact_for_chains_of_intervals():
    # intervals [0, 10], [4, 4.5], [3.9, 4.1], [20, 21]: the first three meet, the last none
    x = np.array([[5.0, 4.25, 4.0, 20.5]])
    e = np.array([[5.0, 0.25, 0.1, 0.5]])
    assert overlapping(x, e).tolist() == [[True, True, True, False]]


def test_floor_marks_values_within_their_error_of_an_integer():
    x = _view(F32, np.float32([1.999999, 2.5, -0.000001, 3.0, 7.2]))
    (mask,), _ = _rule(floor_decision, [x], [(F32, 0, 0)], [np.full(5, E)])
    assert mask.tolist() == [True, False, True, True, False]


def test_cast_to_integers_marks_truncation_boundaries_and_other_casts_none():
    x = _view(F32, np.float32([2.999995, 2.5, -0.5, 0.000001, 1e10, -3.000001]))
    (mask,), results = _rule(cast_decision, [x], [(I32, 0, 0)], [np.full(6, E)])
    assert results[0].tolist() == [2, 2, 0, 0, 2147483647, -3]
    # truncation jumps at non-zero integers only (0.000001 and -0.000009 both give 0)
    assert mask.tolist() == [True, False, False, False, False, True]
    (mask,), _ = _rule(cast_decision, [x], [(T.TENSOR_FLOAT16, 0, 0)], [np.full(6, E)])
    assert mask is None


def test_quantize_marks_values_within_their_error_of_a_half_quantum():
    x = _view(F32, np.float32([0.25, 0.3, 1.7499999, -0.25]))  # x / 0.5 = 0.5, 0.6, 3.5-, -0.5
    (mask,), results = _rule(quantize_decision, [x], [(Q8, 0.5, 10)], [np.full(4, E)])
    assert results[0].tolist() == [11, 11, 13, 9]
    assert mask.tolist() == [True, False, True, True]


def test_any_error_decision_marks_every_output_only_when_a_named_input_carries_error():
    rule = any_error_decision(1)
    results = [np.zeros((2, 3)), np.zeros(4, np.int32)]
    assert rule(None, [np.ones(3), None], results) == [None, None]
    masks = rule(None, [None, np.ones(3)], results)
    assert [m.tolist() for m in masks] == [[[True] * 3] * 2, [True] * 4]


def test_every_discontinuous_row_declares_a_rule():
    declared = {op.name for op, d in ops.REGISTRY.items() if d.decision is not None}
    assert {"EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "ARGMAX", "ARGMIN",
            "TOPK_V2", "FLOOR", "CAST", "QUANTIZE"} <= declared
    # continuous rows need none
    assert not declared & {"MAXIMUM", "MINIMUM", "RELU", "SELECT", "MAX_POOL_2D", "REDUCE_MAX"}


# --- hand-built graphs ------------------------------------------------------------------------

def _operand(t, dims, lifetime, data=None, scale=0.0, zero_point=0):
    if data is not None:
        data = np.asarray(data).reshape(dims)
    return tmod.TestOperand(t, list(dims), scale, zero_point, lifetime, 0, False, None, data)


def _graph(operands, operations, inputs, outputs, name="hand") -> tmod.TestModel:
    """A random-graph-like test model (large-graph criteria) with the reference's outputs."""
    for op in operations:
        for i in op.inputs:
            operands[i].number_of_consumers += 1
    tm = tmod.TestModel(name, "decisions", "RANDOM_GRAPH", "UNKNOWN", False, False, 0.0,
                        tmod.TestSubgraph(operands, operations, inputs, outputs))
    tm.criteria = LARGE_GRAPH.name
    return with_reference_outputs(tm)


def softmax_equal() -> tmod.TestModel:
    """SOFTMAX -> EQUAL, the minimized graph (issue 23) that a driver one ULP above the
    reference failed: softmax of five zeros is 1/5 in every element (float32(0.2): exp(0) =
    1 exactly, 1/5 rounded once), compared with constants three of which are float32(0.2)."""
    c = np.float32([0.2, 0.2, 0.3, 0.2, 0.1])
    operands = [_operand(F32, [1, 5], L.SUBGRAPH_INPUT, np.zeros(5, np.float32)),
                _operand(T.FLOAT32, [], L.CONSTANT_COPY, np.float32(1.0)),
                _operand(F32, [1, 5], L.TEMPORARY_VARIABLE),
                _operand(F32, [1, 5], L.CONSTANT_COPY, c),
                _operand(BOOL8, [1, 5], L.SUBGRAPH_OUTPUT)]
    return _graph(operands, [tmod.TestOperation(Op.SOFTMAX, [0, 1], [2]), tmod.TestOperation(Op.EQUAL, [2, 3], [4])],
                  [0], [4], "softmax_equal")


class FlipsEqual(OneUlpHighFloat):
    """The one-ULP-high driver whose EQUAL answers every element wrong: the ambiguous ties
    are still accepted, the elements with one right answer are not."""

    def table(self) -> dict:
        table = super().table()
        kernel = table[Op.EQUAL].execute
        table[Op.EQUAL] = dataclasses.replace(table[Op.EQUAL],
                                              execute=lambda ctx: [np.logical_not(kernel(ctx)[0])])
        return table


def test_softmax_equal_passes_the_one_ulp_high_driver_and_counts_its_ties():
    tm = softmax_equal()
    assert tm.main.operands[4].data.reshape(-1).tolist() == [True, True, False, True, False]  # by hand
    outcome = run_graph(tm, Device(OneUlpHighFloat()))
    assert outcome.status == "passed", outcome.message
    assert outcome.ambiguous == 3 and outcome.decisions == ["EQUAL"]
    assert run_graph(tm, get_devices(["sample"])[0]).status == "passed"


def test_softmax_equal_still_fails_a_driver_flipping_a_boolean_with_one_right_answer():
    outcome = run_graph(softmax_equal(), Device(FlipsEqual()))
    assert outcome.status == "failed"
    # elements 2 and 4 (0.2 against 0.3 and 0.1) have one right answer
    assert "2 of 2 elements off" in outcome.message, outcome.message


def test_ambiguity_follows_data_movement_and_spreads_over_reductions():
    """FLOOR(LOGISTIC(x) + c) -> TRANSPOSE -> output 0; REDUCE_MAX over axis 1 -> output 1;
    FLOOR of the model input -> output 2. logistic(0) = 0.5 exactly, so in the first row
    0.5 + 0.5 and 0.5 + 1.5 are integers, the only floors with two right answers; the
    second row (logistic(2) = 0.8808 + c) and the exact input's floor have one."""
    x = np.float32([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]])
    c = np.float32([[0.5, 0.25, 1.5], [0.5, 0.5, 0.5]])
    operands = [_operand(F32, [2, 3], L.SUBGRAPH_INPUT, x),                      # 0
                _operand(F32, [2, 3], L.TEMPORARY_VARIABLE),                     # 1 logistic
                _operand(F32, [2, 3], L.CONSTANT_COPY, c),                       # 2
                _operand(T.INT32, [], L.CONSTANT_COPY, np.int32(0)),             # 3 no activation
                _operand(F32, [2, 3], L.TEMPORARY_VARIABLE),                     # 4 sum
                _operand(F32, [2, 3], L.TEMPORARY_VARIABLE),                     # 5 floor
                _operand(I32, [2], L.CONSTANT_COPY, np.int32([1, 0])),           # 6 perm
                _operand(F32, [3, 2], L.SUBGRAPH_OUTPUT),                        # 7 transposed
                _operand(I32, [1], L.CONSTANT_COPY, np.int32([1])),              # 8 axes
                _operand(T.BOOL, [], L.CONSTANT_COPY, np.bool_(False)),          # 9 keep dims
                _operand(F32, [2], L.SUBGRAPH_OUTPUT),                           # 10 max
                _operand(F32, [2, 3], L.SUBGRAPH_OUTPUT)]                        # 11 exact floor
    operations = [tmod.TestOperation(Op.LOGISTIC, [0], [1]), tmod.TestOperation(Op.ADD, [1, 2, 3], [4]),
                  tmod.TestOperation(Op.FLOOR, [4], [5]), tmod.TestOperation(Op.TRANSPOSE, [5, 6], [7]),
                  tmod.TestOperation(Op.REDUCE_MAX, [5, 8, 9], [10]), tmod.TestOperation(Op.FLOOR, [0], [11])]
    tm = _graph(operands, operations, [0], [7, 10, 11])
    assert tm.main.operands[7].data.tolist() == [[1.0, 1.0], [0.0, 1.0], [2.0, 1.0]]  # by hand
    found = ambiguity(tm)
    transposed, reduced, exact = found.masks
    assert transposed.tolist() == [[True, False], [False, False], [True, False]]
    assert reduced.tolist() == [True, True]  # REDUCE_MAX reads an ambiguous element: whole output
    assert exact is None
    assert found.elements == 4 and found.decided == 2 and found.decisions == ["FLOOR"]


# --- real faults are still caught ---------------------------------------------------------------

def _fails_somewhere(device, patterns, seeds) -> bool:
    for config in select(all_configs(), patterns):
        for seed in seeds:
            if run_graph(generate(config, seed, criteria_for(config).name), device, three_way=False).status == "failed":
                return True
    return False


@pytest.mark.parametrize("driver, patterns", [
    (OffByTwoQuantaAdd, ["single-ADD-*"]),
    (LessAsLessEqual, ["single-LESS-*"]),
], ids=["off-by-two-quanta-add", "less-as-less-equal"])
def test_real_faults_still_fail(driver, patterns):
    assert _fails_somewhere(Device(driver()), patterns, range(3))


# --- three-way ratio, by hand ---------------------------------------------------------------------

def test_times_worse_is_the_worst_error_against_the_reference_floored_at_one_ulp():
    u1 = 2.0 ** -23  # ULP of float32 in [1, 2)
    truth = np.array([1.0, 1.5, 1.25])
    reference = np.float32([1.0, 1.5 + u1, 1.25])          # 0, 1, 0 ULP
    driver = np.float32([1.0 + 3 * u1, 1.5 + u1, 1.25])   # 3, 1, 0 ULP
    row = compare(driver, reference, truth, np.float32)
    assert row["driver_ulp"] == 3.0 and row["reference_ulp"] == 1.0
    assert row["driver_ulp_at_scale"] == 3.0 and row["times_worse"] == 3.0
    # a reference exact everywhere is floored at one ULP
    row = compare(driver, truth.astype(np.float32), truth, np.float32)
    assert row["times_worse"] == 3.0
    # an ambiguous element is left out; a NaN answer has no finite ratio
    row = compare(driver, reference, truth, np.float32, ambiguous=np.array([True, False, False]))
    assert row["elements"] == 2 and row["times_worse"] == 1.0
    row = compare(np.float32([np.nan, 1.5, 1.25]), reference, truth, np.float32)
    assert row["nonfinite"] == 1 and row["times_worse"] is None


def test_times_worse_takes_the_ulp_at_the_outputs_scale_where_a_composition_cancels():
    # truth 0 where the driver leaves one ULP of 1.0 (a cancellation downstream of a value one
    # ULP high): 2^-23 / 2^-149 = 2^126 element-wise "ULP", one ULP of the output's scale (1.0)
    truth = np.array([0.0, 1.0])
    row = compare(np.float32([2.0 ** -23, 1.0]), np.float32([0.0, 1.0]), truth, np.float32)
    assert row["driver_ulp"] == 2.0 ** 126
    assert row["driver_ulp_at_scale"] == 1.0 and row["times_worse"] == 1.0
    # a one-element output of truth 0 has no magnitude of its own: its operands' (1.0) gives it
    row = compare(np.float32([2.0 ** -23]), np.float32([0.0]), np.array([0.0]), np.float32)
    assert row["times_worse"] == 2.0 ** 126
    row = compare(np.float32([2.0 ** -23]), np.float32([0.0]), np.array([0.0]), np.float32, scale=1.0)
    assert row["times_worse"] == 1.0


# --- the report page ----------------------------------------------------------------------------

def test_report_page_counts_ambiguous_elements_and_lists_the_worst_graphs(tmp_path):
    from reports.run import SuiteDir, build, render_html

    def record(seed, ambiguous, ratio, decisions=()):
        r = {"id": f"RANDOM_GRAPH/large-TENSOR_FLOAT32-rank2/{seed}", "suite": "random_graph", "outcome": "passed",
             "mode": "graph", "operation_under_test": "(graph)", "operand_type": "TENSOR_FLOAT32",
             "operations": ["SOFTMAX", "EQUAL"], "duration_s": 0.1, "ambiguous_elements": ambiguous}
        if decisions:
            r["decisions"] = list(decisions)
        if ratio is not False:
            r["three_way"] = [{"output": 0, "type": "TENSOR_FLOAT32", "driver_ulp_at_scale": 3.0,
                               "reference_ulp_at_scale": 0.5, "times_worse": ratio}]
            r["times_worse"] = ratio
        return r

    records = [record(0, 25, 1.5, ["EQUAL"]), record(1, 3, 3.0, ["EQUAL", "ARGMAX"]), record(2, 0, None),
               record(3, 0, False)]
    doc = build([SuiteDir(tmp_path, records, {})], "t")
    g = doc["random_graph"]
    assert (g["graphs"], g["with_ambiguous"], g["ambiguous_elements"]) == (4, 2, 28)
    assert g["decisions"] == {"EQUAL": 2, "ARGMAX": 1}
    assert g["histogram"] == {"<= 2": 1, "<= 4": 1, "not finite": 1}
    assert [w["id"][-1] for w in g["worst"]] == ["2", "1", "0"]  # not finite first
    html = render_html(doc, records)
    assert 'id="random-graph-ambiguous"' in html and "28 element(s)" in html and "EQUAL 2, ARGMAX 1" in html
