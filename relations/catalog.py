"""The metamorphic relations: properties of a driver's outputs that need no golden value.

Each relation builds *runs* of a source model (the model itself, twins of it:
:mod:`relations.twins`) and a *verdict* over their outputs. It applies to a model when the
reference executor, running the same runs, satisfies the verdict itself; otherwise the
model is "not applicable" (the reference decides, not a hand-written list of operations).
Then the driver under test runs them and must satisfy the same verdict within the
relation's stated tolerance. "CTS tolerance" is NNAPI's per-type criterion
(:func:`runtime.testing.criteria.tolerance_for`: TENSOR_FLOAT32 atol 1e-5 and rtol 5 *
2^-23, relaxed or float16 5 * 2^-10 both, 8-bit quantized 1 quantum, integers and booleans
exact), with one run's output as the expected value and the other's as the actual one.

=============  ===========================================================  ===================
relation       what must hold                                               tolerance
=============  ===========================================================  ===================
batch          the whole batch's output rows equal each part's outputs       CTS tolerance
               (a batch of N cut into rows [0,1) and [1,N); a batch of 1
               stacked with its reversed inputs)
layout         the NHWC and NCHW twins' outputs agree (transposed back;      CTS tolerance
               TRANSPOSE operations around a layout tensor that is internal)
partition      the model split by the partitioner across the driver (even    CTS tolerance
               operations) and the sample device (odd ones) equals the
               model on the driver alone
permutation    permuting the elements of the inputs of the outputs' shape    CTS tolerance
               permutes the outputs the same way (element-wise operations)
commutation    exchanging inputs 0 and 1 of the operations where the         CTS tolerance
               reference allows it (ADD, MUL, MAXIMUM, EQUAL ...; each
               operation checked alone) changes no output
determinism    three executions of one prepared model are bit-identical      bit-identical, or the
                                                                             CTS tolerance when the
                                                                             driver declares
                                                                             non-determinism
relaxed        a float32 model's error with relaxComputationFloat32toFloat16 error(float16) + 5 *
               (max abs error against the float64 truth over max(1, max      2^-10
               |truth|)) is no larger than the same model converted to
               float16's
=============  ===========================================================  ===================

A driver declares non-determinism with the HAL device attribute ``nondeterministic = True``
(:func:`declares_nondeterminism`); the default is bit-identical executions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from harness.runner import Failure
from runtime import ops
from runtime.drivers.sample import SampleDevice
from runtime.nnapi import Device
from runtime.errors import HalError
from runtime.precision.truth import float64_outputs
from runtime.testing.criteria import FP16_TOL, Tolerance, compare, is_relaxed, tolerance_for
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import TestModel
from runtime.types import OperandType as T

from . import twins
from .running import ALONE, SPLIT, NotApplicable, Runner, Skip, reference, resolved

#: Seed of the permutation relation's permutation.
PERMUTATION_SEED = 5
#: Operations the commutation relation tries at most per model (each costs a reference run).
MAX_SWAPPED = 12
#: Executions of one prepared model the determinism relation compares.
REPEATS = 3
#: The relaxed relation's tolerance on the relative error (NNAPI's relaxed rtol).
RELAXED_SLACK = FP16_TOL
_EXACT = Tolerance(0, 0, exact=True)
_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


@dataclass
class Plan:
    """A relation on one model: ``runs`` ((resolved model, placement) each) and
    ``verdict(outputs)`` (outputs[r][j]: run r's output j) giving the problems."""

    runs: list[tuple[TestModel, str]]
    verdict: Callable[[list[list[np.ndarray]]], list[str]]


@dataclass(frozen=True)
class Relation:
    """One relation: ``name``, what must hold (``statement``), its ``tolerance`` in words,
    and ``plan(tm, nondeterministic)`` building its :class:`Plan` (raises NotApplicable)."""

    name: str
    statement: str
    tolerance: str
    plan: Callable[[TestModel, bool], Plan]


def declares_nondeterminism(device) -> bool:
    """Whether the driver (a front-end Device) declares non-deterministic executions: its
    HAL device has a true ``nondeterministic`` attribute. A driver out of process
    (``--driver-process``) cannot declare it."""
    return bool(getattr(device.hal, "nondeterministic", False))


def _tolerance(tm: TestModel, j: int) -> Tolerance:
    o = tm.main.operands[tm.main.output_indexes[j]]
    return tolerance_for(o.type, is_relaxed(tm), tm.name)


def _agree(expected: np.ndarray, actual: np.ndarray, tol: Tolerance, what: str) -> list[str]:
    """Problems of ``actual`` against ``expected``: shape, then :func:`compare` (bytes for an
    exact comparison, so NaN payloads and signed zeros count)."""
    if expected.shape != actual.shape:
        return [f"{what}: shape {list(actual.shape)}, expected {list(expected.shape)}"]
    if tol.exact and expected.dtype.kind == "f":
        same = expected.tobytes() == actual.tobytes()
        bits = f"u{expected.itemsize}"
        return [] if same else [f"{what}: {compare(expected.view(bits), actual.view(bits), tol)} (bit patterns)"]
    msg = compare(expected, actual, tol)
    return [f"{what}: {msg}"] if msg else []


def _batch(tm: TestModel, _nd: bool) -> Plan:
    """Every model input of the first one's batch cut or stacked together; when the
    reference refuses that or does not satisfy it, model input 0 alone."""
    try:
        first = _batch_plan(tm, False)
        if not reference_problems(first) or len(twins.batch_inputs(tm, False)) < 2:
            return first
    except NotApplicable:
        if len(twins.batch_inputs(tm, False)) < 2:
            raise
    return _batch_plan(tm, True)


def _batch_plan(tm: TestModel, only_first: bool) -> Plan:
    inputs = twins.batch_inputs(tm, only_first)
    if not inputs:
        raise NotApplicable("no model input with a batch (axis 0) of at least 1")
    whole, parts = twins.batch_parts(tm, inputs)
    runs = [(resolved(t), ALONE) for t in (whole, *parts)]

    def verdict(out):
        problems = []
        for j in range(len(out[0])):
            if any(o[j].ndim == 0 for o in out):
                return [f"output {j} has no batch axis"]
            if any(o[j].shape[1:] != out[0][j].shape[1:] for o in out[1:]):
                return [f"output {j}: the parts' rows are not of the whole's shape"]
            problems += _agree(np.concatenate([o[j] for o in out[1:]]), out[0][j], _tolerance(tm, j),
                               f"output {j}, the whole batch against its parts")
        return problems
    return Plan(runs, verdict)


def _layout(tm: TestModel, _nd: bool) -> Plan:
    twin, back = twins.layout_twin(tm)
    runs = [(resolved(tm), ALONE), (resolved(twin), ALONE)]

    def verdict(out):
        problems = []
        for j, (a, b) in enumerate(zip(*out)):
            b = np.transpose(b, back[j]) if j in back and b.ndim == 4 else b
            problems += _agree(a, b, _tolerance(tm, j), f"output {j}, the other layout's twin")
        return problems
    return Plan(runs, verdict)


def _partition(tm: TestModel, _nd: bool) -> Plan:
    if len(tm.main.operations) < 2:
        raise NotApplicable("one operation: nothing to partition")
    model = resolved(tm)
    try:  # the reference partitioned: what the runtime cannot split is no driver's fault
        Runner(Device(SampleDevice())).run(model, SPLIT)
    except (Failure, Skip) as e:
        raise NotApplicable(f"the runtime cannot run it partitioned on the reference: {e}") from None
    runs = [(model, ALONE), (model, SPLIT)]

    def verdict(out):
        return [p for j, (a, b) in enumerate(zip(*out))
                for p in _agree(a, b, _tolerance(tm, j), f"output {j}, partitioned against alone")]
    return Plan(runs, verdict)


def _permutation(tm: TestModel, _nd: bool) -> Plan:
    twin, perm = twins.permuted(tm, PERMUTATION_SEED)
    runs = [(resolved(tm), ALONE), (resolved(twin), ALONE)]

    def verdict(out):
        problems = []
        for j, (a, b) in enumerate(zip(*out)):
            if a.size != perm.size:
                return [f"output {j}: {a.size} elements, the permutation has {perm.size}"]
            problems += _agree(a.reshape(-1)[perm].reshape(a.shape), b, _tolerance(tm, j),
                               f"output {j}, permuted inputs against the permuted outputs")
        return problems
    return Plan(runs, verdict)


def _commutation(tm: TestModel, _nd: bool) -> Plan:
    """Operations whose two operands the reference may exchange, each checked alone on the
    reference (a SUB is not commutative; an ADD is), then exchanged together."""
    source = resolved(tm)

    def same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
        return not any(_agree(x, y, _tolerance(tm, j), "") for j, (x, y) in enumerate(zip(a, b)))
    expected = [np.asarray(source.main.operands[i].data) for i in source.main.output_indexes]
    chosen = []
    for k in twins.swappable(tm)[:MAX_SWAPPED]:
        try:
            if same(expected, reference(twins.swapped(tm, [k]))):
                chosen.append(k)
        except NotApplicable:
            continue
    if not chosen:
        raise NotApplicable("no operation whose two operands the reference may exchange")
    runs = [(source, ALONE), (resolved(twins.swapped(tm, chosen)), ALONE)]
    names = ", ".join(sorted({tm.main.operations[k].type.name for k in chosen}))

    def verdict(out):
        return [p for j, (a, b) in enumerate(zip(*out))
                for p in _agree(a, b, _tolerance(tm, j), f"output {j}, operands of {names} exchanged")]
    return Plan(runs, verdict)


def _determinism(tm: TestModel, nondeterministic: bool) -> Plan:
    if any(ops.REGISTRY[op.type].nondeterministic for op in tm.main.operations):
        raise NotApplicable("an operation is random by definition (RANDOM_MULTINOMIAL)")
    model = resolved(tm)

    def verdict(out):
        return [p for r in range(1, len(out)) for j, (a, b) in enumerate(zip(out[0], out[r]))
                for p in _agree(a, b, _tolerance(tm, j) if nondeterministic else _EXACT,
                                f"output {j}, execution {r + 1} against execution 1")]
    return Plan([(model, ALONE)] * REPEATS, verdict)


def relative_error(actual: np.ndarray, truth: np.ndarray) -> float:
    """max |actual - truth| / max(1, max |truth|) over the elements (inf when ``actual`` is
    not finite where the truth is)."""
    t, a = np.asarray(truth, np.float64).reshape(-1), np.asarray(actual, np.float64).reshape(-1)
    keep = np.isfinite(t)
    if not keep.any():
        return 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a[keep] - t[keep])
    err = np.where(np.isnan(err), np.inf, err)
    return float(err.max() / max(1.0, float(np.abs(t[keep]).max())))


def _relaxed(tm: TestModel, _nd: bool) -> Plan:
    if not twins.float32_only(tm):
        raise NotApplicable("not a float32 model (float16 operands, relaxed already, or referenced subgraphs)")
    model = resolved(tm)
    relaxed, half = resolved(twins.relaxed_twin(tm)), resolved(twins.float16_twin(tm))
    try:
        truth = float64_outputs(to_hal_model(model), [model.main.operands[i].data for i in model.main.input_indexes])
    except HalError as e:
        raise NotApplicable(f"no float64 truth: {e}") from None
    floats = [j for j, i in enumerate(model.main.output_indexes) if model.main.operands[i].type in _FLOATS]
    if not floats:
        raise NotApplicable("no float output")
    reference_half = [relative_error(half.main.operands[half.main.output_indexes[j]].data, truth[j]) for j in floats]
    if not all(np.isfinite(reference_half)):
        raise NotApplicable("the float16 model overflows on the reference")

    def verdict(out):
        problems = []
        for j in floats:
            e_relaxed, e_half = relative_error(out[0][j], truth[j]), relative_error(out[1][j], truth[j])
            if not e_relaxed <= e_half + RELAXED_SLACK:
                problems.append(f"output {j}: relaxed float32 error {e_relaxed:.4g} > float16 error {e_half:.4g} "
                                f"+ {RELAXED_SLACK:.4g} (relative to max(1, |truth|), against the float64 truth)")
        return problems
    return Plan([(relaxed, ALONE), (half, ALONE)], verdict)


#: Every relation, by name.
RELATIONS: dict[str, Relation] = {r.name: r for r in (
    Relation("batch", "the whole batch's rows equal each part's outputs", "CTS tolerance", _batch),
    Relation("layout", "the NHWC and NCHW twins agree", "CTS tolerance", _layout),
    Relation("partition", "split across the driver and the sample device equals the driver alone",
             "CTS tolerance", _partition),
    Relation("permutation", "permuted inputs give the same permutation of the outputs", "CTS tolerance",
             _permutation),
    Relation("commutation", "exchanging the two operands of a commutative operation changes no output",
             "CTS tolerance", _commutation),
    Relation("determinism", f"{REPEATS} executions of one prepared model agree",
             "bit-identical (CTS tolerance when the driver declares non-determinism)", _determinism),
    Relation("relaxed", "relaxed float32 error is no larger than float16's", f"+ {RELAXED_SLACK:.4g} relative",
             _relaxed),
)}


@dataclass
class Verdict:
    """``status``: passed, failed, not_applicable or skipped (with the harness's
    ``skip_kind``); ``message`` says why."""

    status: str
    message: str = ""
    skip_kind: str = ""


def reference_problems(plan: Plan) -> list[str]:
    """The problems of the reference's own outputs of ``plan``'s runs (the resolved models'
    expected values): empty when the relation applies."""
    return plan.verdict([[np.asarray(t.main.operands[i].data) for i in t.main.output_indexes] for t, _ in plan.runs])


def evaluate(relation: Relation, tm: TestModel, runner: Runner) -> Verdict:
    """Whether ``relation`` holds for ``tm`` on ``runner``'s driver: not applicable unless
    the reference satisfies it (module docstring), then passed or failed (the problems,
    or the driver's error)."""
    nondeterministic = declares_nondeterminism(runner.device)
    try:
        plan = relation.plan(tm, nondeterministic)
        problems = reference_problems(plan)
    except NotApplicable as e:
        return Verdict("not_applicable", str(e))
    if problems:
        return Verdict("not_applicable", "the reference itself does not satisfy it: " + "; ".join(problems[:2]))
    try:
        outputs = [runner.run(t, placement) for t, placement in plan.runs]
    except Skip as e:
        return Verdict("skipped", str(e), e.kind)
    except Failure as e:
        return Verdict("failed", f"the driver failed: {e}")
    problems = plan.verdict(outputs)
    return Verdict("failed", "; ".join(problems)) if problems else Verdict("passed")
