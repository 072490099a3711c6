"""Run one random graph on the driver under test and judge it (AOSP TestRandomGraph's
``computeAndVerifyResultsForDevice`` and "compute across synthetic devices").

The graph (a test model whose outputs hold the reference executor's values, judged with the
aggregate criteria its ``criteria`` names) runs through the front end on the driver alone
(:func:`harness.runner.run_test_model`: an operation the driver does not support is a skip),
then, for graphs of more than one operation, partitioned by the runtime across the driver
and the sample variants (``sample-float-fast``, ``sample-float-slow``, ``sample-quant``,
``sample-minimal``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.runner import Failure, Outcome, execute_compilation, run_test_model
from runtime.errors import NnapiError
from runtime.nnapi import Compilation, Device, get_devices, get_supported_operations_for_devices
from runtime.testing.criteria import judge
from runtime.testing.frontend import build_model
from runtime.testing.test_model import TestModel

#: The sample variants a graph is also partitioned across.
VARIANTS = ("sample-float-fast", "sample-float-slow", "sample-quant", "sample-minimal")
_VARIANT_DEVICES: list[Device] = []


def variant_devices() -> list[Device]:
    """Front-end devices of the sample variants (loaded once)."""
    if not _VARIANT_DEVICES:
        _VARIANT_DEVICES.extend(get_devices(VARIANTS))
    return _VARIANT_DEVICES


@dataclass
class GraphOutcome(Outcome):
    """An :class:`~harness.runner.Outcome` with the failure's kind (:func:`failure_kind`) and
    where it happened (``"driver"`` or ``"partitioned"``)."""

    kind: str = ""
    where: str = ""
    problems: list[str] = field(default_factory=list)


def failure_kind(outcome: Outcome) -> str:
    """How a failed outcome failed, for "still fails the same way" during minimization:
    ``accuracy`` (values beyond the criteria), ``dimensions`` (wrong output shapes), or
    the NNAPI result code of a refused step (``OP_FAILED`` ...); "" when it did not fail."""
    if outcome.status != "failed":
        return ""
    if outcome.details:
        return "dimensions" if all("dimensions" in p for p in outcome.details) else "accuracy"
    head = outcome.message.split(":", 1)[0].strip()
    return head if head.isupper() and " " not in head else "harness"


def run_partitioned(tm: TestModel, device: Device) -> Outcome:
    """``tm`` compiled over ``device`` and the sample variants (the runtime partitions it)
    and judged; skipped when together they do not support every operation."""
    devices = [device] + [d for d in variant_devices() if d.name != device.name]
    try:
        model = build_model(tm)
        if not all(get_supported_operations_for_devices(model, devices)):
            return Outcome("skipped", "the devices together do not support every operation",
                           "unsupported_by_driver")
        compilation = Compilation.create_for_devices(model, devices)
        compilation.finish()
        outputs, dims = execute_compilation(compilation, tm, require_timing=False)[0]
    except NnapiError as e:
        return Outcome("failed", str(e))
    except Failure as e:
        return Outcome("failed", str(e))
    problems = judge(tm, outputs, dims)
    if problems:
        return Outcome("failed", "; ".join(problems), details=problems)
    return Outcome("passed")


def run_graph(tm: TestModel, device: Device, partitioned: bool = True) -> GraphOutcome:
    """Judge ``tm`` on ``device`` alone, then (``partitioned`` and more than one operation)
    across ``device`` and the sample variants. The first failure decides the outcome."""
    alone = run_test_model(tm, device, require_timing=False)
    if alone.status == "failed":
        return GraphOutcome(alone.status, f"on {device.name}: {alone.message}", alone.skip_kind,
                            alone.details, failure_kind(alone), "driver", alone.details)
    if alone.status == "skipped" or not partitioned or len(tm.main.operations) < 2:
        return GraphOutcome(alone.status, alone.message, alone.skip_kind)
    split = run_partitioned(tm, device)
    if split.status == "failed":
        return GraphOutcome("failed", f"partitioned across {device.name} and the sample variants: "
                            f"{split.message}", "", split.details, failure_kind(split), "partitioned",
                            split.details)
    return GraphOutcome("passed")
