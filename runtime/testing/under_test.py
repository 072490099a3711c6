"""The operation under test of a test model, and the helper operations around it.

A golden test model tests one operation; AOSP's test generator (and our own specs,
``cts/specs/variations.py``) add helper operations to it in its variations:

- ``_all_inputs_as_internal``: each model input fed through ``ADD(input, zero constant,
  FuseCode NONE)`` whose output is the operation's original (now internal) input;
- ``_all_outputs_as_internal``: each output of the operation fed through ``ADD(output, zero
  constant, NONE)`` into a model output;
- ``_zero_sized``: BOX_WITH_NMS_LIMIT -> ROI_ALIGN (and ours, FULLY_CONNECTED) making the
  zero-sized operand the operation reads.

A failure of such a model is the operation under test's, not every operation of the model's.
The derivation is structural, for any corpus (no test name is listed here):

1. *Helper ADDs* are ADDs of the main subgraph adding a constant whose every value is
   the real zero (the zero point, for quantized types) with activation NONE (a constant 0)
   either to a model input into an internal operand, or to an internal operand into a model
   output.
2. The remaining operation types of the main subgraph (a control-flow operation's
   referenced subgraphs are its body, not candidates): one type is the operation under test.
3. Several: the one the spec is named after (spec name equal to the lower-case operation name
   or starting with it and ``_``: ``rank``, ``add_v1_2``, ``roi_align``), the longest such name.
4. Else the type of the sinks (operations none of whose outputs another operation reads)
   when they have one type (the zero-sized chains end in the operation under test).
5. Else the type of the last remaining operation (it computes the model's result).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..types import OperandLifeTime, OperandType, OperationType

_CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
_INTERNAL = OperandLifeTime.TEMPORARY_VARIABLE


@dataclass(frozen=True)
class UnderTest:
    """``operation``: the operation under test (None for a model without operations);
    ``operand_type``: the type of its input 0 (first instance in the main subgraph; None
    without inputs), the operand that picks the operation's signature; ``helpers``: indexes
    of the main subgraph's operations that are helpers (every operation not of the operation
    under test's type, and the helper ADDs); ``core``: :func:`core_digest`."""

    operation: OperationType | None
    operand_type: OperandType | None
    helpers: tuple[int, ...]
    #: :func:`core_digest` of the model.
    core: str = ""


def _is_zero(operand) -> bool:
    """A constant whose every value is the real zero (its zero point; 0 / False otherwise)."""
    if operand.lifetime not in _CONSTANT or operand.data is None or operand.data.size == 0:
        return False
    return bool(np.all(np.asarray(operand.data, np.float64) == operand.zero_point))


def is_helper_add(subgraph, op) -> bool:
    """Whether ``op`` of ``subgraph`` (:class:`runtime.testing.test_model.TestSubgraph` /
    ``TestOperation``) is an ADD a variation added: ADD(x, zero constant, 0) where x is a model
    input and the output internal (``_all_inputs_as_internal``), or x internal and the output a
    model output (``_all_outputs_as_internal``). Either operand order of x and the zero."""
    if op.type != OperationType.ADD or len(op.inputs) != 3 or len(op.outputs) != 1:
        return False
    a, b, act = (subgraph.operands[i] for i in op.inputs)
    if _is_zero(a) and not _is_zero(b):
        a, b = b, a
    if not _is_zero(b) or act.lifetime not in _CONSTANT or act.data is None or act.data.size != 1 \
            or int(np.asarray(act.data).ravel()[0]) != 0:
        return False
    out = subgraph.operands[op.outputs[0]].lifetime
    return (a.lifetime == OperandLifeTime.SUBGRAPH_INPUT and out == _INTERNAL
            or a.lifetime == _INTERNAL and out == OperandLifeTime.SUBGRAPH_OUTPUT)


def _named_after(spec: str, candidates) -> OperationType | None:
    """The candidate the spec name is named after (:func:`under_test` rule 3), or None."""
    spec = spec.lower()
    named = [t for t in candidates if spec == t.name.lower() or spec.startswith(t.name.lower() + "_")]
    return max(named, key=lambda t: len(t.name)) if named else None


def _sink_type(subgraph, indexes: list[int]) -> OperationType | None:
    """The one type of the operations (of ``indexes``) none of whose outputs another of them
    reads; None when they have several types or none."""
    read = {i for k in indexes for i in subgraph.operations[k].inputs}
    types = {subgraph.operations[k].type for k in indexes if not read.intersection(subgraph.operations[k].outputs)}
    return types.pop() if len(types) == 1 else None


def under_test(tm) -> UnderTest:
    """The operation under test of test model ``tm`` (a
    :class:`runtime.testing.test_model.TestModel`), its operand type, helpers and core
    digest, by the rules of this module's docstring (read it as ``tm.under_test``, which
    computes it once)."""
    sg = tm.main
    if not sg.operations:
        return UnderTest(None, None, (), core_digest(tm))
    rest = [k for k, op in enumerate(sg.operations) if not is_helper_add(sg, op)] or list(range(len(sg.operations)))
    types = {sg.operations[k].type for k in rest}
    op = types.pop() if len(types) == 1 else _named_after(tm.spec, types)
    for fallback in (lambda: _sink_type(sg, rest), lambda: sg.operations[rest[-1]].type):
        op = fallback() if op is None else op  # OperationType.ADD is 0: no `or` chain
    first = next(sg.operations[k] for k in rest if sg.operations[k].type == op)
    operand_type = sg.operands[first.inputs[0]].type if first.inputs else None
    helpers = tuple(k for k in range(len(sg.operations)) if k not in rest or sg.operations[k].type != op)
    return UnderTest(op, operand_type, helpers, core_digest(tm))


def _operand_key(operand) -> tuple:
    """What a core digest reads of an operand: type, dimensions, quantization, whether it is
    a model input / output, a constant or internal, and its bytes when it has a value."""
    life = operand.lifetime
    kind = "constant" if life in _CONSTANT else life.name
    data = b"" if operand.data is None else np.ascontiguousarray(operand.data).tobytes()
    return (int(operand.type), tuple(operand.dimensions), float(operand.scale), int(operand.zero_point),
            operand.channel_quant, kind, hashlib.sha1(data).hexdigest())


def core_digest(tm) -> str:
    """A digest (16 hex digits) of test model ``tm`` with its helper ADDs
    (:func:`is_helper_add`) bypassed: an input helper's output stands for its model input, an
    output helper's internal input for its model output. A variation that only adds helper
    ADDs (``conv_quant8_all_inputs_as_internal``) has its base model's (``conv_quant8``)
    digest, so a report can tell a failure of the helpers (the base passed) from one of the
    operation under test. Reads every main operation's type and operands (type, dimensions,
    quantization, role, values), the referenced subgraphs' operations and the relaxed flag."""
    sg = tm.main
    alias: dict[int, int] = {}
    kept = []
    for op in sg.operations:
        if not is_helper_add(sg, op):
            kept.append(op)
            continue
        x = next(i for i in op.inputs[:2] if not _is_zero(sg.operands[i]))
        if sg.operands[x].lifetime == OperandLifeTime.SUBGRAPH_INPUT:
            alias[op.outputs[0]] = x
        else:
            alias[x] = op.outputs[0]
    h = hashlib.sha1(repr(bool(tm.is_relaxed)).encode())
    for op in kept:
        h.update(repr((int(op.type), [_operand_key(sg.operands[alias.get(i, i)]) for i in op.inputs],
                       [_operand_key(sg.operands[alias.get(i, i)]) for i in op.outputs])).encode())
    for ref in tm.referenced:
        h.update(repr([(int(op.type), [_operand_key(ref.operands[i]) for i in op.inputs + op.outputs])
                       for op in ref.operations]).encode())
    return h.hexdigest()[:16]
