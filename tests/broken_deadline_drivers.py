"""A driver with a planted deadline fault, proving vts/test_device_loop_timeout.py's
long-model test can fail (tests/test_hal_contracts.py)."""
from __future__ import annotations

from runtime.drivers.sample import SampleDevice
from runtime.executor import execute, execution_limits


class IgnoresExecutionDeadline(SampleDevice):
    """The sample driver, but its executions never look at the execution deadline once they
    started (WHILE loops keep the default 2 s loop timeout): a long model runs to its end past
    the deadline and returns NONE."""

    def run(self, model, request):
        with execution_limits(None, None):
            return execute(model, request)
