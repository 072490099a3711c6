"""The CTS: every corpus test model, through the front end, on the driver under test, in
each selected execution mode (``--mode``)."""
import pytest

from cts.harness import run_test_model


def test_generated(nncts_case, nncts_device, request, tmp_path_factory):
    """Build, compile, execute and compare one corpus test model in one mode (cts.harness)."""
    tm, mode = nncts_case
    workdir = tmp_path_factory.getbasetemp() if mode.cache else None
    outcome = run_test_model(tm, nncts_device, mode, workdir,
                             require_timing=not request.config.getoption("no_require_timing"),
                             wait_limit_s=request.config.getoption("wait_limit"))
    if outcome.skip_kind:
        request.node.user_properties.append(("skip_kind", outcome.skip_kind))
    if outcome.status == "skipped":
        pytest.skip(outcome.message)
    if outcome.status == "failed":
        pytest.fail(f"{request.node.callspec.id}: {outcome.message}", pytrace=False)
