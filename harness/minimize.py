"""Shrink a failing graph (a random graph, a corpus model, a relation's source) to a small
graph that still fails the same way (delta debugging, Zeller's ddmin over the operations,
then dimensions and values). Shared by the random-graph suite and the metamorphic relations.

Every candidate is a valid graph: operations are dropped together with what only they
used, and an intermediate operand whose producer is dropped becomes a model input carrying
the value the reference computed for it; expected outputs are recomputed by the reference
executor. A candidate the reference refuses is not a reproducer and is discarded. "The
same way" is the caller's ``still_fails`` (random graphs: the failure kind, accuracy,
dimensions or the NNAPI result code; relations: the relation still violated).
"""
from __future__ import annotations

import copy
from typing import Callable

import numpy as np

from runtime.testing.test_model import TestModel, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L, OperandType as T, is_float_type, is_tensor_type

from .graphs import GenerationError, with_reference_outputs

#: Candidates tried at most (each runs the driver once).
MAX_TRIES = 400


def intermediate_values(tm: TestModel) -> dict[int, np.ndarray]:
    """The reference executor's value of every temporary and output operand of ``tm``."""
    probe = copy.deepcopy(tm)
    sg = probe.main
    temps = [i for i, o in enumerate(sg.operands) if o.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)]
    for i in temps:
        sg.operands[i].lifetime = L.SUBGRAPH_OUTPUT
    sg.output_indexes = temps
    with_reference_outputs(probe)
    return {i: sg.operands[i].data for i in temps}


def keep_operations(tm: TestModel, keep: list[int], values: dict[int, np.ndarray]) -> TestModel:
    """``tm`` with only operations ``keep`` (indexes into ``tm.main.operations``): inputs
    produced by a dropped operation become model inputs holding ``values``; outputs of kept
    operations that nothing reads become model outputs; unused operands go. Expected
    outputs are left empty (see :func:`with_reference_outputs`)."""
    sg = tm.main
    ops_ = [sg.operations[k] for k in sorted(keep)]
    produced = {i for op in ops_ for i in op.outputs}
    read = [i for op in ops_ for i in op.inputs]
    used = sorted(set(read) | produced)
    remap = {old: new for new, old in enumerate(used)}
    consumers = {i: read.count(i) for i in used}
    operands, inputs, outputs = [], [], []
    for old in used:
        o = copy.copy(sg.operands[old])
        o.number_of_consumers = consumers.get(old, 0)
        if old in produced:
            if consumers[old] == 0:
                o.lifetime, o.data = L.SUBGRAPH_OUTPUT, None
                outputs.append(remap[old])
            else:
                o.lifetime, o.data = L.TEMPORARY_VARIABLE, None
        elif o.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT):  # its producer was dropped
            o.lifetime, o.data = L.SUBGRAPH_INPUT, np.array(values[old])
            inputs.append(remap[old])
        elif o.lifetime == L.SUBGRAPH_INPUT:
            inputs.append(remap[old])
        operands.append(o)
    new_ops = [TestOperation(op.type, [remap[i] for i in op.inputs], [remap[i] for i in op.outputs])
               for op in ops_]
    out = copy.copy(tm)
    out.main = TestSubgraph(operands, new_ops, inputs, outputs)
    return out


def _ddmin(items: list[int], fails: Callable[[list[int]], bool], budget: list[int]) -> list[int]:
    """Zeller's ddmin: a 1-minimal subset of ``items`` on which ``fails`` holds."""
    n = 2
    while len(items) >= 2 and budget[0] > 0:
        chunk = max(1, len(items) // n)
        subsets = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        reduced = False
        for s in subsets:
            complement = [x for x in items if x not in s]
            for candidate in (s, complement):
                if candidate and len(candidate) < len(items) and fails(candidate):
                    items, n, reduced = candidate, max(2, n - 1 if candidate is complement else 2), True
                    break
            if reduced:
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items


def _data_operands(tm: TestModel) -> list[int]:
    """Model inputs and non-parameter constants (float or quantized tensors) whose shape a
    shrink may cut."""
    return [i for i, o in enumerate(tm.main.operands)
            if o.lifetime in (L.SUBGRAPH_INPUT, L.CONSTANT_COPY, L.CONSTANT_REFERENCE)
            and is_tensor_type(o.type) and o.type not in (T.TENSOR_INT32,) and o.data is not None]


def shrink_dimension(tm: TestModel, size: int, to: int) -> TestModel:
    """``tm`` with every data operand's dimension equal to ``size`` cut to ``to`` (values
    sliced), temporaries and outputs declared with unknown dimensions (re-inferred)."""
    out = copy.deepcopy(tm)
    for i in _data_operands(out):
        o = out.main.operands[i]
        if size not in o.dimensions:
            continue
        index = tuple(slice(0, to) if d == size else slice(None) for d in o.dimensions)
        o.data = np.ascontiguousarray(o.data[index])
        o.dimensions = [to if d == size else d for d in o.dimensions]
        if o.channel_quant is not None:
            scales, ch = o.channel_quant
            if o.dimensions[ch] != len(scales):
                o.channel_quant = (tuple(scales[:o.dimensions[ch]]), ch)
    for o in out.main.operands:
        if o.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT):
            o.dimensions = [0] * len(o.dimensions)
    return out


def simplify_values(tm: TestModel, i: int) -> TestModel:
    """``tm`` with float data operand ``i`` rounded to one decimal (a reproducer people can
    read)."""
    out = copy.deepcopy(tm)
    o = out.main.operands[i]
    o.data = np.round(o.data.astype(np.float64), 1).astype(o.data.dtype)
    return out


def minimize(tm: TestModel, still_fails: Callable[[TestModel], bool]) -> TestModel:
    """The smallest graph found that ``still_fails`` (which runs the driver and compares the
    failure kind): ddmin over operations, then each distinct dimension size cut to 1 or
    halved, then float values rounded. ``tm`` must fail."""
    budget = [MAX_TRIES]
    values = intermediate_values(tm)

    def attempt(candidate: TestModel) -> TestModel | None:
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        try:
            candidate = with_reference_outputs(candidate)
        except GenerationError:
            return None
        return candidate if still_fails(candidate) else None

    best = tm
    if len(tm.main.operations) > 1:
        found: dict[tuple, TestModel] = {}

        def fails(keep: list[int]) -> bool:
            got = attempt(keep_operations(tm, keep, values))
            if got is not None:
                found[tuple(keep)] = got
            return got is not None

        keep = _ddmin(list(range(len(tm.main.operations))), fails, budget)
        best = found.get(tuple(keep), best)
    changed = True
    while changed and budget[0] > 0:
        changed = False
        sizes = sorted({d for i in _data_operands(best) for d in best.main.operands[i].dimensions if d > 1},
                       reverse=True)
        for size in sizes:
            for to in (1, size // 2):
                if to < 1 or to >= size:
                    continue
                got = attempt(shrink_dimension(best, size, to))
                if got is not None:
                    best, changed = got, True
                    break
            if changed:
                break
    for i in _data_operands(best):
        if is_float_type(best.main.operands[i].type):
            got = attempt(simplify_values(best, i))
            if got is not None:
                best = got
    return best


def size_of(tm: TestModel) -> str:
    """"N operations, M elements" of a graph (M: elements of its model inputs and constants)."""
    elements = sum(int(np.size(o.data)) for o in tm.main.operands
                   if o.data is not None and o.lifetime != L.SUBGRAPH_OUTPUT)
    n = len(tm.main.operations)
    return f"{n} operation{'s' * (n != 1)}, {elements} input and constant elements"
