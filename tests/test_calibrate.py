"""random_graph/calibrate.py: the measurement behind the quantized mean-error bound (default
configurations, per-output mean errors, the report's tables and flag counts, generation
failures counted instead of fatal, the one-quantum-high comparison driver)."""
from __future__ import annotations

import io
import sys

import numpy as np

from random_graph import calibrate
from harness.graph_configs import all_configs
from runtime.nnapi import Device


def test_default_configurations_are_the_quantized_ones():
    names = set(calibrate.default_patterns(all_configs()))
    assert {"single-CONV_2D-6", "small-TENSOR_QUANT8_ASYMM-rank4",
            "large-TENSOR_QUANT8_ASYMM_SIGNED-rank1"} <= names
    assert "single-CONV_2D-0" not in names  # float32 input
    assert not any("FLOAT" in n or "INT32-" in n or "BOOL8" in n for n in names if not n.startswith("single-"))
    assert calibrate.family("single-CONV_2D-6") == "single-CONV_2D"
    assert calibrate.family("large-TENSOR_QUANT8_ASYMM-rank3") == "large-TENSOR_QUANT8_ASYMM"


def _record(config, runs, **extra):
    return {"config": config, "family": calibrate.family(config), "seed": 0, "runs": runs, **extra}


def test_report_tables_flags_and_generation_failures():
    out = [{"output": 0, "type": "TENSOR_QUANT8_ASYMM", "elements": 16, "mean_error": m, "max_abs_error": 1}
           for m in (0.0, 0.3, -0.6)]
    records = [
        _record("single-CONV_2D-6", [{"driver": "d", "where": "alone", "status": "ok", "outputs": out}]),
        _record("single-CONV_2D-7", [], generation_error="configuration single-CONV_2D-7 seed 0: could not draft"),
        _record("small-TENSOR_QUANT8_ASYMM-rank4",
                [{"driver": "d", "where": "partitioned", "status": "failed", "message": "OP_FAILED: x"}]),
    ]
    buf = io.StringIO()
    summary = calibrate.report(records, buf)
    text = buf.getvalue()
    assert "2 generated, 1 generation failures in 1 configurations" in text
    assert "single-CONV_2D-7: 1; configuration single-CONV_2D-7 seed 0" in text
    assert summary["d/alone"]["max_abs_mean_error"] == 0.6
    assert summary["d/alone"]["flagged"] == {"0.25": 2, "0.5": 1, "1.0": 0}
    assert "failed runs (1" in text


def test_one_quantum_high_measures_one_and_correct_drivers_stay_inside(monkeypatch):
    calibrate._init_worker(["sample", "sample-fixed-point"])
    record = calibrate.measure(("single-CONV_2D-6", 0, True))
    means = {(r["driver"], r["where"]): [o["mean_error"] for o in r["outputs"]] for r in record["runs"]}
    assert means[("sample", "alone")] and all(m == 0 for m in means[("sample", "alone")])
    assert all(abs(m) < 0.25 for m in means[("sample-fixed-point", "alone")])
    assert all(0.9 < m <= 1 for m in means[(calibrate.ONE_HIGH, "alone")])
    # the inline fallback plants the same fault when tests.broken_drivers is not importable
    monkeypatch.setitem(sys.modules, "tests.broken_drivers", None)
    calibrate._STATE["one_high"] = Device(calibrate.one_high_device())
    again = calibrate.measure(("single-CONV_2D-6", 0, True))
    assert again["runs"][-1] == record["runs"][-1]


def test_command_line_runs_and_prints_the_tables(capsys):
    assert calibrate.main(["--seeds", "1", "--config", "single-CONV_2D-6", "--config",
                           "small-TENSOR_QUANT8_ASYMM-rank2", "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    assert "overall" in text and "quant-conv-one-high: the fault reached an output in 1 of 1 graphs" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("sample-fixed-point ")]
    assert {r[1] for r in rows} == {"alone", "partitioned"}
    assert all(float(r[3]) < 0.25 for r in rows)
    assert np.isfinite([float(r[4]) for r in rows]).all()
