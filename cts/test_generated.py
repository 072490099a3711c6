"""The CTS: every corpus test model, through the front end, on the driver under test, in
each selected execution mode (``--mode``)."""
import pytest

from cts.plugin import precision_mode
from harness.plugin import add_record_fields
from harness.runner import run_test_model


def test_generated(nncts_case, nncts_device, request):
    """Build, compile, execute and compare one corpus test model in one mode (harness.runner;
    cache-mode files go to its memory-backed scratch directory and are removed at once)."""
    tm, mode = nncts_case
    outcome = run_test_model(tm, nncts_device, mode, None,
                             require_timing=not request.config.getoption("no_require_timing"),
                             wait_limit_s=request.config.getoption("wait_limit"),
                             precision=precision_mode(request.config))
    if outcome.skip_kind:
        add_record_fields(request.node, skip_kind=outcome.skip_kind)
    if outcome.precision:
        add_record_fields(request.node, **outcome.precision)
    if outcome.status == "skipped":
        pytest.skip(outcome.message)
    if outcome.status == "failed":
        pytest.fail(f"{request.node.callspec.id}: {outcome.message}", pytrace=False)
