"""Random graphs (issue 10): the criteria (hand-computed cases), generation (reproducible,
valid), reproducers (replayable through the CTS harness), and planted faults the suite must
catch, each minimized to at most two operations."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from harness.runner import run_test_model
from harness.graph_configs import all_configs, criteria_for, select
from harness.graphs import generate
from random_graph.minimize import keep_operations, intermediate_values, minimize
from random_graph.reproducer import write_reproducer
from random_graph.run import run_graph
from runtime.nnapi import Device, get_devices
from runtime.testing import criteria as C
from runtime.testing.corpus_writer import model_json
from runtime.testing.test_model import load_spec
from runtime.types import OperandType as T
from tests.broken_drivers import BroadcastSlipAdd, FusesRelu6AsRelu, QuantConvOneHigh

CONFIGS = all_configs()


def _graph(name: str, seed: int):
    config = CONFIGS[name]
    return generate(config, seed, criteria_for(config).name)


# --- criteria: hand-computed cases --------------------------------------------------------

def test_one_quantum_high_passes_aosp_medium_and_fails_the_mean_error_bound():
    expected = np.arange(100, 200, dtype=np.uint8)  # 100 elements, none saturated
    actual = expected + 1  # every element +1: mean error 1, MSE 1 (by hand)
    problems = C.aggregate_problems(T.TENSOR_QUANT8_ASYMM, expected, actual, C.MEDIUM)
    assert len(problems) == 1 and "mean error +1 quanta" in problems[0]
    # AOSP's own medium bounds (atol 2, bias 1.2, MSE 1.2) accept it
    aosp_only = C.AccuracyCriteria("aosp", C.MEDIUM.float32, C.MEDIUM.float16, C.MEDIUM.int32,
                                   C.Criterion(2, 0, 1.2, 1.2), C.MEDIUM.quant16)
    assert C.aggregate_problems(T.TENSOR_QUANT8_ASYMM, expected, actual, aosp_only) == []
    # the strict set's bias and MSE bounds (0.1) already reject it; no mean-error message then
    strict = C.aggregate_problems(T.TENSOR_QUANT8_ASYMM, expected, actual, C.STRICT)
    assert strict == ["bias 1 beyond 0.1 (strict criteria)", "MSE 1 beyond 0.1 (strict criteria)"]


def test_forty_operation_graphs_allow_a_wider_mean_error():
    expected = np.arange(100, 200, dtype=np.uint8)
    actual = expected.copy()
    actual[:55] += 1  # mean error 0.55 (by hand): inside the large-graph bound 0.6 only
    assert C.aggregate_problems(T.TENSOR_QUANT8_ASYMM, expected, actual, C.LARGE_GRAPH) == []
    assert "mean error +0.55 quanta" in C.aggregate_problems(T.TENSOR_QUANT8_ASYMM, expected, actual,
                                                             C.SMALL_GRAPH)[0]


def test_rounding_noise_stays_inside_every_bound():
    expected = np.arange(0, 100, dtype=np.uint8)
    actual = expected.copy()
    actual[::10] += 1  # 10 of 100 one quantum high: mean 0.1, MSE 0.1, inside medium
    actual[5::10] -= 1  # and 10 one low: mean 0
    assert C.aggregate_problems(T.TENSOR_QUANT8_ASYMM, expected, actual, C.MEDIUM) == []


def test_float_bias_is_relative_and_aggregates_need_ten_elements():
    expected = np.full(10, 100.0, np.float32)
    actual = expected + 0.01  # relative difference 1e-4 each: bias 1e-4 > medium's 1e-6
    problems = C.aggregate_problems(T.TENSOR_FLOAT32, expected, actual, C.SMALL_GRAPH)
    assert problems == []  # small-graph: atol 1e-2 + rtol 1e-2 * 100, bias 4e-4 (1e-4 inside)
    problems = C.aggregate_problems(T.TENSOR_FLOAT32, expected, actual, C.MEDIUM)
    assert any(p.startswith("bias 0.0001") for p in problems)
    assert C.aggregate_problems(T.TENSOR_FLOAT32, expected[:9], actual[:9], C.CONVOLUTION) == []


def test_float16_elements_are_judged_not_skipped():
    # AOSP's harness skips every float16 element ("float16 || |e| > 1e2"); nncts judges them
    expected = np.linspace(-1, 1, 20).astype(np.float16)
    actual = (expected + np.float16(0.5)).astype(np.float16)
    problems = C.aggregate_problems(T.TENSOR_FLOAT16, expected, actual, C.STRICT)
    assert problems and "elements off" in problems[0]
    big = np.full(20, 1000.0, np.float16)  # beyond 1e2: skipped, as in AOSP
    assert C.aggregate_problems(T.TENSOR_FLOAT16, big, big * 0, C.STRICT) == []


def test_booleans_are_exact_and_int32_has_one_unit():
    assert C.aggregate_problems(T.TENSOR_BOOL8, np.array([True, False]), np.array([True, True]), C.LARGE_GRAPH)
    assert C.aggregate_problems(T.TENSOR_INT32, np.arange(20), np.arange(20) + 1, C.STRICT) == []
    assert C.aggregate_problems(T.TENSOR_INT32, np.arange(20), np.arange(20) + 2, C.STRICT)


def test_criteria_sets_follow_aosp():
    assert criteria_for(CONFIGS["single-CONV_2D-0"]) is C.CONVOLUTION
    assert criteria_for(CONFIGS["single-RESHAPE-0"]) is C.STRICT
    assert criteria_for(CONFIGS["single-ADD-0"]) is C.MEDIUM
    assert criteria_for(CONFIGS["single-LOGISTIC-0"]) is C.RELAXED
    assert criteria_for(CONFIGS["small-TENSOR_FLOAT32-rank4"]) is C.SMALL_GRAPH
    assert criteria_for(CONFIGS["large-TENSOR_INT32-rank1"]) is C.LARGE_GRAPH


# --- generation ---------------------------------------------------------------------------

def test_graphs_are_named_by_config_and_seed():
    a, b = _graph("small-TENSOR_FLOAT32-rank4", 3), _graph("small-TENSOR_FLOAT32-rank4", 3)
    assert model_json(a) == model_json(b)
    assert model_json(a) != model_json(_graph("small-TENSOR_FLOAT32-rank4", 4))
    assert len(a.main.operations) == 5 and len(_graph("large-TENSOR_FLOAT32-rank2", 0).main.operations) == 40


def test_graph_configs_respect_type_and_rank():
    tm = _graph("large-TENSOR_QUANT8_ASYMM-rank3", 1)
    for op in tm.main.operations:
        first = next(tm.main.operands[i] for i in op.inputs if tm.main.operands[i].dimensions)
        assert first.type == T.TENSOR_QUANT8_ASYMM and len(first.dimensions) == 3


def test_configurations_cover_every_signature_and_aosp_graphs():
    from runtime import ops
    singles = [n for n in CONFIGS if n.startswith("single-")]
    expected = sum(len(d.signatures) for t, d in ops.REGISTRY.items()
                   if t.name not in ("IF", "WHILE", "RANDOM_MULTINOMIAL"))
    assert len(singles) == expected
    assert len([n for n in CONFIGS if n.startswith(("small-", "large-"))]) == 2 * 6 * 4
    assert all(c.feature_level <= 3 for c in all_configs(3).values())
    with pytest.raises(ValueError, match="no random-graph configuration matches"):
        select(CONFIGS, ["single-NOPE-*"])


def test_keep_operations_turns_dropped_producers_into_inputs():
    tm = _graph("large-TENSOR_FLOAT32-rank2", 2)
    values = intermediate_values(tm)
    part = keep_operations(tm, list(range(20, 40)), values)
    assert len(part.main.operations) == 20
    fed = [i for i in part.main.input_indexes if part.main.operands[i].data is not None]
    assert fed  # some kept operation read an output of a dropped one
    from harness.graphs import with_reference_outputs
    with_reference_outputs(part)  # a valid graph the reference runs


# --- reproducers ----------------------------------------------------------------------------

def test_reproducer_replays_through_the_cts_harness(tmp_path):
    tm = _graph("single-CONV_2D-6", 0)  # quantized CONV_2D, FL1
    path = write_reproducer(tm, tmp_path)
    [loaded] = load_spec(path)
    assert loaded.criteria == "convolution" and loaded.test_id.startswith("RANDOM_GRAPH/single-CONV_2D-6-0/")
    sample = get_devices(["sample"])[0]
    assert run_test_model(loaded, sample).status == "passed"
    outcome = run_test_model(loaded, Device(QuantConvOneHigh()))
    assert outcome.status == "failed" and "mean error" in outcome.message


# --- planted faults -------------------------------------------------------------------------

def _first_failure(device: Device, patterns: list[str], seeds: range, min_operations: int = 1):
    for config in select(CONFIGS, patterns):
        for seed in seeds:
            tm = generate(config, seed, criteria_for(config).name)
            if len(tm.main.operations) < min_operations:
                continue
            outcome = run_graph(tm, device)
            if outcome.status == "failed":
                return tm, outcome
    return None, None


@pytest.mark.parametrize("driver, single, graphs", [
    (QuantConvOneHigh, "single-CONV_2D-*", ["small-TENSOR_QUANT8_ASYMM-rank4", "small-TENSOR_QUANT8_ASYMM_SIGNED-rank4"]),
    (BroadcastSlipAdd, "single-ADD-*", ["small-TENSOR_FLOAT32-rank*", "small-TENSOR_QUANT8_ASYMM-rank*"]),
    (FusesRelu6AsRelu, "single-CONV_2D-*", ["small-TENSOR_FLOAT32-rank4", "small-TENSOR_FLOAT16-rank4"]),
], ids=["quant-conv-one-high", "broadcast-slip", "relu6-as-relu"])
def test_planted_fault_is_caught_and_minimized_to_two_operations(driver, single, graphs):
    device = Device(driver())
    tm, outcome = _first_failure(device, [single], range(4))
    assert tm is not None, f"{driver.__name__} passed every single-operation graph"
    if driver is QuantConvOneHigh:  # inside every per-element and AOSP bound
        assert all("mean error" in p for p in outcome.problems), outcome.problems
    tm, outcome = _first_failure(device, graphs, range(30), min_operations=3)
    assert tm is not None, f"{driver.__name__} passed every multi-operation graph tried"
    small = minimize(tm, lambda c: run_graph(c, device).kind == outcome.kind)
    assert len(small.main.operations) <= 2, [op.type.name for op in small.main.operations]
    assert run_graph(small, device).kind == outcome.kind
    assert run_graph(small, get_devices(["sample"])[0]).status == "passed"


def test_sample_driver_passes_graphs_of_every_family():
    sample = get_devices(["sample"])[0]
    for name in ("small-TENSOR_INT32-rank1", "small-TENSOR_BOOL8-rank2", "large-TENSOR_QUANT8_ASYMM_SIGNED-rank4"):
        outcome = run_graph(_graph(name, 0), sample)
        assert outcome.status == "passed", (name, outcome.message)


def test_cli_rejects_a_bad_configuration_in_one_line():
    r = subprocess.run([sys.executable, "-m", "nncts.cli", "random-graph", "--config", "nope-*"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "nncts random-graph: error: no random-graph configuration matches 'nope-*' "
        "(e.g. single-CONV_2D-0, small-TENSOR_FLOAT32-rank4, large-*)"]
