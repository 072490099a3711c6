"""The CTS: every corpus test model, through the front end, on the driver under test."""
import pytest

from cts.harness import run_test_model


def test_generated(nncts_test_model, nncts_device, request):
    """Build, compile, execute and compare one corpus test model (see cts.harness)."""
    outcome = run_test_model(nncts_test_model, nncts_device)
    if outcome.skip_kind:
        request.node.user_properties.append(("skip_kind", outcome.skip_kind))
    if outcome.status == "skipped":
        pytest.skip(outcome.message)
    if outcome.status == "failed":
        pytest.fail(f"{nncts_test_model.test_id}: {outcome.message}", pytrace=False)
