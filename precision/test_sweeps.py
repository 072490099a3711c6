"""The precision suite: each item runs one sweep (a unary element-wise operation over every
float16 input, every quant8 input under one quantization, or a stratified float32 sample)
on the driver under test in one execution, and judges each element against the float64
truth (:mod:`precision.measure`). An element beyond AOSP's tolerance fails the test (a
conformance failure); the budget grade is recorded beside it, and with ``--precision
strict`` (where the harness declares it) an over-budget sweep fails too. Elements whose
result NNAPI leaves undefined (NaN inputs, results outside the function's domain, float
to int32 out of range) are not judged; the test's record says how many and why."""
import pytest

from harness.plugin import add_record_fields
from harness.runner import Failure
from precision.measure import SweepSkip, describe_failure, describe_over_budget, describe_undefined, measure_sweep
from runtime.errors import NnapiError


def test_sweep(sweep_case, nncts_device, request):
    case, mode = sweep_case, request.config.getoption("sweep")
    try:
        record = measure_sweep(case, mode, nncts_device)
    except SweepSkip as e:
        add_record_fields(request.node, skip_kind=e.kind)
        pytest.skip(str(e))
    except (NnapiError, Failure) as e:
        pytest.fail(f"{case.id}: {e}", pytrace=False)
    add_record_fields(request.node, sweep=record)
    undefined = describe_undefined(record)
    if record["failing"]:
        pytest.fail(describe_failure(record) + (f"\n{undefined}" if undefined else ""), pytrace=False)
    if record["grade"] == "over budget" and request.config.getoption("precision", "aosp") == "strict":
        pytest.fail(describe_over_budget(record), pytrace=False)
