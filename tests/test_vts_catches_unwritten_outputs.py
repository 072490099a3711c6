"""The VTS's generated HAL tests fail a driver that never writes its outputs
(tests/broken_drivers.py ``NeverWritesOutputs``) on every execution path, boolean outputs
expected true included: the request's output pools are poisoned against the expected values
(vts.hal_harness.poison_outputs, harness.binding.poison_for), where 0x7F bytes would read as true."""
from __future__ import annotations

import subprocess
import sys

from harness.records import read_records
from tests.cts_run import ROOT


def test_vts_fails_a_driver_that_never_writes_a_true_boolean_output(tmp_path):
    """V1_2 comparison models with one TENSOR_BOOL8 output expected true (expected values from
    the AOSP corpus), on every HAL path: each item fails."""
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "pytest", "vts/test_generated_hal.py", "-q", "-p", "no:cacheprovider",
                           "--driver", "tests.broken_drivers:NeverWritesOutputs", "--corpus", "cts/corpus/V1_2",
                           "-k", "greater_equal_quantized_overflow", "--nncts-report", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    records = read_records(report / "outcomes.jsonl")
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-2000:]
    assert len(records) >= 10, [r["id"] for r in records]
    assert {r["mode"] for r in records} == {"sync", "async", "fenced", "burst", "reusable"}
    assert all(r["outcome"] == "failed" for r in records), [r["id"] for r in records if r["outcome"] != "failed"]
