"""Run one random graph on the driver under test and judge it (AOSP TestRandomGraph's
``computeAndVerifyResultsForDevice`` and "compute across synthetic devices").

The graph (a test model whose outputs hold the reference executor's values, judged with the
aggregate criteria its ``criteria`` names) runs through the front end on the driver alone
(:func:`harness.runner.run_test_model`: an operation the driver does not support is a skip),
then, for graphs of more than one operation, partitioned by the runtime across the driver
and the sample variants (``sample-float-fast``, ``sample-float-slow``, ``sample-quant``,
``sample-minimal``). Both runs are judged with AOSP's criteria over the output elements that
have one right answer (:mod:`random_graph.judge`); the driver alone's float outputs are also
compared three ways (driver, the reference's float32 path, the float64 truth).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.runner import Failure, Outcome, execute_compilation, skip_reason
from runtime.errors import NnapiError
from runtime.nnapi import Compilation, Device, get_devices, get_supported_operations_for_devices
from runtime.precision.decisions import Ambiguity
from runtime.testing.criteria import judge
from runtime.testing.frontend import build_model
from runtime.testing.test_model import TestModel

from .judge import ambiguity, precision

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
    where it happened (``"driver"`` or ``"partitioned"``); ``ambiguous``: output elements
    with more than one right answer, left out of the judgement (:func:`random_graph.judge.ambiguity`);
    ``decisions``: the operations that made some; ``three_way``: per float output the
    three-way figures of the driver alone (:func:`random_graph.judge.precision`)."""

    kind: str = ""
    where: str = ""
    problems: list[str] = field(default_factory=list)
    ambiguous: int = 0
    decisions: list[str] = field(default_factory=list)
    three_way: list[dict] = field(default_factory=list)


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


def _execute(tm: TestModel, devices: list[Device], declined: str):
    """``tm`` compiled over ``devices`` (the runtime partitions it) and run once:
    ``(outputs, dims)``, or a skipped Outcome (``declined``, and the operations none of them
    supports) or a failed one."""
    try:
        model = build_model(tm)
        supported = get_supported_operations_for_devices(model, devices)
        if not all(supported):
            ops_ = ", ".join(tm.main.operations[k].type.name for k, ok in enumerate(supported) if not ok)
            return Outcome("skipped", f"{declined} {ops_}", "unsupported_by_driver")
        compilation = Compilation.create_for_devices(model, devices)
        compilation.finish()
        return execute_compilation(compilation, tm, require_timing=False)[0]
    except (NnapiError, Failure) as e:
        return Outcome("failed", str(e))


def _judged(tm: TestModel, ran, found: Ambiguity) -> Outcome:
    """The outcome of a run (:func:`_execute`'s answer): AOSP's criteria with the ambiguous
    elements of ``found`` left out."""
    if isinstance(ran, Outcome):
        return ran
    problems = judge(tm, *ran, found.masks)
    if problems:
        return Outcome("failed", "; ".join(problems), details=problems)
    return Outcome("passed")


def run_partitioned(tm: TestModel, device: Device, found: Ambiguity | None = None) -> Outcome:
    """``tm`` compiled over ``device`` and the sample variants (the runtime partitions it)
    and judged (``found``: its ambiguous elements, :func:`random_graph.judge.ambiguity` when
    None); skipped when together they do not support every operation."""
    devices = [device] + [d for d in variant_devices() if d.name != device.name]
    ran = _execute(tm, devices, "the devices together do not support")
    return _judged(tm, ran, ambiguity(tm) if found is None else found)


def run_graph(tm: TestModel, device: Device, partitioned: bool = True, three_way: bool = True) -> GraphOutcome:
    """Judge ``tm`` on ``device`` alone, then (``partitioned`` and more than one operation)
    across ``device`` and the sample variants, with AOSP's criteria over the elements that
    have one right answer. The first failure decides the outcome. With ``three_way``, the
    driver alone's float outputs are compared three ways (:func:`random_graph.judge.precision`)."""
    skip = skip_reason(tm, device)
    if skip:
        return GraphOutcome("skipped", skip[1], skip[0])
    found = ambiguity(tm)
    counts = {"ambiguous": found.elements, "decisions": list(found.decisions)}
    ran = _execute(tm, [device], f"driver {device.name} does not support")
    alone = _judged(tm, ran, found)
    if three_way and not isinstance(ran, Outcome):
        counts["three_way"] = precision(tm, *ran, found)
    if alone.status == "failed":
        return GraphOutcome(alone.status, f"on {device.name}: {alone.message}", alone.skip_kind,
                            alone.details, kind=failure_kind(alone), where="driver", problems=alone.details,
                            **counts)
    if alone.status == "skipped" or not partitioned or len(tm.main.operations) < 2:
        return GraphOutcome(alone.status, alone.message, alone.skip_kind, **counts)
    split = run_partitioned(tm, device, found)
    if split.status == "failed":
        return GraphOutcome("failed", f"partitioned across {device.name} and the sample variants: "
                            f"{split.message}", "", split.details, kind=failure_kind(split),
                            where="partitioned", problems=split.details, **counts)
    return GraphOutcome("passed", **counts)
