"""Which operation of a test model a driver gets wrong first (``nncts triage``'s culprit).

:func:`localize` runs the model on the reference runtime, keeping each operation's input and
output values (the executor's ``intercept`` hook, :func:`runtime.executor.run_subgraph`), then
runs every operation *alone* on the driver, in model order: a one-operation model whose
inputs are the values the reference fed that operation and whose expected outputs are the
values the reference computed (:func:`isolate`). The first operation whose outputs differ
from the reference's beyond NNAPI's tolerance for their type
(:func:`runtime.testing.criteria.tolerance_for`, as :func:`nncts.triage.error_ratio`
measures), have another shape, or that the driver fails alone, is the culprit: its own
fault, not one accumulated from earlier operations (the same idea as mlts' isolated runs).

An IF or WHILE that is the culprit is localized further into the subgraph it ran: IF's
branch taken on the reference's condition, WHILE's body (then its condition) on its first
iteration, with the values the reference gave the control-flow operation; the culprit is
then the operation inside (``where`` names the path, e.g. ``WHILE (main op 2) > body
(subgraph 1) op 0``), or the control-flow operation itself when no operation inside
differs (a fault of the loop, not of its body).

A localization is ``{"operation", "operand_type", "where", "message"}``: ``operand_type`` is
the culprit's first input's type (what the coverage matrix counts it under), ``message`` the
difference (``output 0 off the reference by 2 times the tolerance``), whose numbers the clusters
mask. None when the reference refuses the model or no operation differs (a fault of the
whole model, a mode or a memory layout: the run's message then stands).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from runtime.errors import HalError
from runtime.executor import run_subgraph
from runtime.testing.criteria import is_relaxed, tolerance_for
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L
from runtime.types import OperationType

#: Lifetimes an isolated operation keeps (constants and subgraph references carry their data).
_KEPT = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH, L.NO_VALUE)
#: Control flow nested deeper than this is not entered (the control-flow operation is named).
MAX_DEPTH = 4


def reference_steps(tm: TestModel, inputs: list) -> list[tuple[list, list]]:
    """Run ``tm``'s main subgraph on the reference with ``inputs`` (one array per subgraph
    input, None where omitted): per operation, (its input values: array or None per input,
    its output arrays). Raises HalError when the reference refuses the model."""
    hal = to_hal_model(tm)
    steps: list[tuple[list, list]] = []

    def keep(k, ctx, results):
        steps.append(([None if v.value is None else np.array(v.value) for v in ctx.inputs],
                      [np.array(r) for r in results]))
        return results
    given = [(None if v is None else np.asarray(v), list(np.shape(v)) if v is not None else
              list(tm.main.operands[i].dimensions)) for i, v in zip(tm.main.input_indexes, inputs)]
    run_subgraph(hal, hal.main, given, is_relaxed(tm), intercept=keep)
    return steps


def isolate(tm: TestModel, k: int, ins: list, outs: list) -> TestModel:
    """Operation ``k`` of ``tm``'s main subgraph alone, as a test model: its constants kept,
    its other inputs model inputs holding ``ins`` (omitted ones NO_VALUE), its outputs model
    outputs whose expected values are ``outs``; every operand fully specified by the
    reference's shapes; ``tm``'s referenced subgraphs kept (for IF / WHILE)."""
    sg = tm.main
    op = sg.operations[k]
    remap: dict[int, int] = {}
    operands, feeds = [], []
    for pos, i in [(p, i) for p, i in enumerate(op.inputs)] + [(None, i) for i in op.outputs]:
        if i in remap:
            continue
        o = sg.operands[i]
        remap[i] = len(operands)
        if pos is None:
            j = op.outputs.index(i)
            operands.append(dataclasses.replace(o, dimensions=list(outs[j].shape), lifetime=L.SUBGRAPH_OUTPUT,
                                                data=outs[j], is_ignored=o.is_ignored and i in sg.output_indexes))
        elif o.lifetime in _KEPT:
            operands.append(o)
        elif ins[pos] is None:
            operands.append(dataclasses.replace(o, lifetime=L.NO_VALUE, data=None))
        else:
            feeds.append(remap[i])
            operands.append(dataclasses.replace(o, dimensions=list(np.shape(ins[pos])), lifetime=L.SUBGRAPH_INPUT,
                                                data=ins[pos], is_ignored=False))
    uses = [op.inputs.count(i) for i in remap]
    operands = [dataclasses.replace(o, number_of_consumers=n if o.lifetime != L.SUBGRAPH_OUTPUT else 0)
                for o, n in zip(operands, uses)]
    main = TestSubgraph(operands, [TestOperation(op.type, [remap[i] for i in op.inputs],
                                                 [remap[i] for i in op.outputs])], feeds,
                        [remap[i] for i in op.outputs])
    return dataclasses.replace(tm, main=main, expect_failure=False, expected_failure="")


def difference(tm: TestModel, outputs: list | None, why: str) -> str:
    """How ``outputs`` (one array per main output, None where unread; None when the run
    failed with ``why``) differ from ``tm``'s expected values: "" when within NNAPI's
    tolerance for their types; else the first output's difference."""
    if outputs is None:
        return f"fails alone: {why}"
    for j, idx in enumerate(tm.main.output_indexes):
        o = tm.main.operands[idx]
        if o.is_ignored or o.data is None:
            continue
        a = outputs[j] if j < len(outputs) else None
        if a is None:
            return f"output {j}: no value of the reference's shape {list(o.data.shape)}"
        if tuple(np.shape(a)) != tuple(o.data.shape):
            return f"output {j}: shape {list(np.shape(a))} where the reference gives {list(o.data.shape)}"
        ratio = element_ratio(tm, o, o.data, a)
        if ratio > 1:
            return f"output {j} off the reference by {ratio:.3g} times the tolerance"
    return ""


def element_ratio(tm: TestModel, operand: TestOperand, expected, actual) -> float:
    """The largest ``|actual - expected| / (atol + rtol * |expected|)`` of one output of
    ``tm`` (NNAPI's tolerance for ``operand``'s type; an exact type: 0 or inf; NaN: inf; 0
    for no element). ``expected`` and ``actual`` have the same element count."""
    e = np.asarray(expected, np.float64).reshape(-1)
    a = np.asarray(actual, np.float64).reshape(-1)
    if not e.size:
        return 0.0
    tol = tolerance_for(operand.type, is_relaxed(tm), tm.name)
    if tol.exact or tol.atol + tol.rtol == 0:
        return 0.0 if np.array_equal(a, e) else math.inf
    with np.errstate(invalid="ignore"):
        r = np.abs(a - e) / (tol.atol + tol.rtol * np.abs(e))
    return math.inf if np.isnan(r).any() else float(r.max())


def _subgraph_index(tm: TestModel, operand: int) -> int:
    return int(tm.main.operands[operand].data.reshape(-1)[0])


def _inside(tm: TestModel, op: TestOperation, ins: list) -> list[tuple[str, int, list]]:
    """The (label, referenced subgraph, inputs) a control-flow operation ran first: IF's
    branch taken, WHILE's body then its condition (first iteration)."""
    if op.type == OperationType.IF and ins[0] is not None:
        taken = 1 if bool(np.asarray(ins[0]).reshape(-1)[0]) else 2
        return [("then" if taken == 1 else "else", _subgraph_index(tm, op.inputs[taken]), ins[3:])]
    if op.type == OperationType.WHILE:
        return [(name, _subgraph_index(tm, op.inputs[j]), ins[2:]) for name, j in (("body", 1), ("condition", 0))]
    return []


def localize(tm: TestModel, inputs: list, run, depth: int = 0) -> dict | None:
    """The culprit of ``tm`` (see the module docstring) run on ``inputs`` (one per main
    input); ``run(test_model) -> (outputs or None, why)`` runs a model on the driver
    (:func:`nncts.triage._outputs`). None when the reference refuses the model or no
    operation differs."""
    try:
        steps = reference_steps(tm, inputs)
    except (HalError, ArithmeticError, ValueError, IndexError, TypeError, KeyError):
        return None
    for k, (ins, outs) in enumerate(steps):
        op = tm.main.operations[k]
        alone = isolate(tm, k, ins, outs)
        got, why = run(alone)
        message = difference(alone, got, why)
        if not message:
            continue
        where = f"op {k} ({op.type.name})"
        if depth < MAX_DEPTH:
            for label, index, sub_inputs in _inside(tm, op, ins):
                if not 0 <= index < len(tm.referenced):
                    continue
                inner = localize(dataclasses.replace(tm, main=tm.referenced[index]), sub_inputs, run, depth + 1)
                if inner is not None:
                    return {**inner, "where": f"{where} > {label} (subgraph {index}) {inner['where']}"}
        first = tm.main.operands[op.inputs[0]].type.name if op.inputs else ""
        return {"operation": op.type.name, "operand_type": first, "where": where, "message": message}
    return None
