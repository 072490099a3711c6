"""The CTS: every corpus test model, through the front end, on the driver under test, in
each selected execution mode (``--mode``): one pytest item per test model, each mode a test
of its own (:mod:`harness.grouped`)."""
from cts.plugin import precision_mode
from harness.grouped import Result, run_group
from harness.runner import run_test_model


def test_generated(nncts_case, nncts_device, request):
    """Build, compile, execute and compare one corpus test model in each of its modes
    (harness.runner; cache-mode files go to its memory-backed scratch directory and are
    removed at once)."""
    config = request.config
    options = dict(require_timing=not config.getoption("no_require_timing"), wait_limit_s=config.getoption("wait_limit"),
                   precision=precision_mode(config))

    def run(case) -> Result:
        tm, mode = case
        outcome = run_test_model(tm, nncts_device, mode, None, **options)
        fields = {**outcome.precision, **({"skip_kind": outcome.skip_kind} if outcome.skip_kind else {})}
        return Result(outcome.status, outcome.message, fields)

    run_group(request.node, nncts_case, run, retries=config.getoption("retries"))
