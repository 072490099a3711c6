"""Generated IF and WHILE operations with their referenced subgraphs (generated mode).

A table row whose signatures take SUBGRAPH operands and that declares no ``generate`` hook
of its own (:func:`has_references`) is built here instead of drafted: a data value x (an
earlier operand or a new model input of a type some table operation maps to itself,
:func:`control_flow_types`);

* IF: a TENSOR_BOOL8 [1] condition, then and else branches each ``y = op(x)`` with ``op`` a
  shape-preserving table operation (:func:`body_operations`);
* WHILE over (x, i): condition ``LESS(i, limit)`` and body ``(op(x), ADD(i, 1))`` with i in
  [-2, 2] and limit in [1, 4] (at most 6 rounds).

Branch and body operands declare x's dimensions, unknown ones or an unknown rank; an escape
names an arbitrary subgraph index or gives a body output other dimensions.

The builder works on the generated-mode :class:`~fuzz.decoder.generator.Generator` it is
given (``g``: reader ``r``, draws ``rng``, ``hostile()``, ``add``, ``output``, ``earlier``,
``pick``, ``draft``, ``fresh_quant``, ``plain_values``, ``hostile_dims``, and its operand
lists). A body operation's other inputs (its fused activation) come from the row's draft.
"""
from __future__ import annotations

import numpy as np

from runtime.ops.base import OperationDef
from runtime.ops.generation import Primary
from runtime.testing.test_model import TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandType, OperationType, is_quantized_type, is_tensor_type

from .common import MAX_ELEMENTS, L, T, count_consumers, fill_values, prod

_BODY_CACHE: dict = {}
_TYPES_CACHE: dict = {}


def has_references(opdef: OperationDef) -> bool:
    """Whether ``opdef`` takes referenced subgraphs (SUBGRAPH inputs) and has no
    ``generate`` hook to draft it: it is built by :func:`build_control_flow`."""
    return opdef.generate is None and any(a.type == T.SUBGRAPH for s in opdef.signatures for a in s.inputs)


def body_operations(t: OperandType, table) -> list:
    """(OperationDef, Signature) of the ``table`` operations that map one tensor of type
    ``t`` (given once or twice, in slots of the same ranks) and at most an INT32 fused
    activation to one output of type ``t`` and the same quantization (no ``fixed_quant``):
    the bodies of generated IF branches and WHILE loops."""
    key = (t, len(table))
    if key not in _BODY_CACHE:
        found = []
        for opdef in table:
            if has_references(opdef) or opdef.variadic or opdef.variadic_outputs:
                continue
            for sig in opdef.signatures:
                if len(sig.outputs) == 1 and sig.outputs[0].type == t and sig.outputs[0].fixed_quant is None \
                        and sig.inputs and sig.inputs[0].type == t and len(sig.inputs) <= 3 \
                        and all((a.type == t and not a.optional and a.ranks == sig.inputs[0].ranks)
                                or (a.type == T.INT32 and a.name == "activation") for a in sig.inputs):
                    found.append((opdef, sig))
                    break
        _BODY_CACHE[key] = found
    return _BODY_CACHE[key]


def control_flow_types(table) -> tuple:
    """Tensor types (but per-channel ones) some ``table`` operation maps to themselves
    (:func:`body_operations`): the types of generated IF / WHILE values."""
    key = len(table)
    if key not in _TYPES_CACHE:
        _TYPES_CACHE[key] = tuple(t for t in OperandType if is_tensor_type(t) and t != T.SUBGRAPH
                                  and t != T.TENSOR_QUANT8_SYMM_PER_CHANNEL and body_operations(t, table))
    return _TYPES_CACHE[key]


def _operand(t, dims, lifetime, scale=0.0, zp=0, data=None) -> TestOperand:
    return TestOperand(T(t), [int(d) for d in dims], float(np.float32(scale)), int(zp), lifetime, 0, False,
                       None, data)


def _subgraph(operands, operations, inputs, outputs) -> TestSubgraph:
    for o, c in zip(operands, count_consumers(operands, operations)):
        o.number_of_consumers = c
    return TestSubgraph(operands, operations, inputs, outputs)


def _reference(g, sg: TestSubgraph) -> int:
    """A SUBGRAPH operand (main graph) naming ``sg``, appended to the referenced subgraphs;
    an escape names an arbitrary index instead."""
    g.referenced.append(sg)
    index = len(g.referenced) - 1
    if g.hostile():
        index = g.r.u8() % 8
    return g.add(T.SUBGRAPH, [], L.SUBGRAPH, data=np.asarray(index, np.uint32).reshape(()))


def _loop_value(g, t: OperandType, max_dim: int) -> int:
    """An operand of type ``t`` with known dimensions for a control-flow data input: an
    earlier one, or a new model input of rank 1..4."""
    x = g.pick(g.earlier(t))
    if x is not None:
        return x
    dims = [g.rng.integers(1, max_dim + 1) for _ in range(1 + g.r.u8() % 4)]
    if g.hostile():
        dims = g.hostile_dims(dims)
    scale, zp = g.fresh_quant(t) if is_quantized_type(t) else (0.0, 0)
    return g.add(t, dims, L.SUBGRAPH_INPUT, scale, zp, g.plain_values(t, dims))


def _inner_dims(g, dims) -> list[int]:
    """Declared dimensions of a referenced subgraph operand: the actual ones, all unknown,
    or (an unknown rank) none."""
    b = g.r.u8() % 8
    return list(dims) if b < 5 else [0] * len(dims) if b < 7 else []


def _body(g, operands: list, operations: list, x: int, t: OperandType) -> int:
    """Append to a referenced subgraph one shape-preserving table operation on operand
    ``x`` (of type ``t``); returns its output (same type, quantization and declared
    dimensions as ``x``, lifetime SUBGRAPH_OUTPUT)."""
    choices = body_operations(t, g.table)
    opdef, sig = choices[g.r.u8() % len(choices)]
    xo = operands[x]
    dims = [int(d) for d in xo.dimensions]
    primary = None
    if dims and min(dims) >= 1 and prod(dims) <= MAX_ELEMENTS:
        primary = Primary(t, dims, xo.scale, xo.zero_point, fill_values(t, prod(dims), 0).reshape(dims))
    d = g.draft(opdef, sig, 2 + g.r.u8() % 3, primary)  # the row's draft says the activation
    ins = []
    for a, s in zip(sig.inputs, d.slots):
        if a.type == t:
            ins.append(x)
        else:  # the fused activation: a constant
            activation = s.value if s.value is not None else np.asarray(0, np.int32)
            operands.append(_operand(T.INT32, [], L.CONSTANT_COPY, data=np.asarray(activation, np.int32).reshape(())))
            ins.append(len(operands) - 1)
    declared = xo.dimensions if not g.hostile() else [n + 1 for n in xo.dimensions]
    operands.append(_operand(t, declared, L.SUBGRAPH_OUTPUT, xo.scale, xo.zero_point))
    operations.append(TestOperation(opdef.type, ins, [len(operands) - 1]))
    return len(operands) - 1


def build_control_flow(g, op_type: OperationType) -> None:
    """Append to generator ``g`` an IF (``op_type`` IF) or a WHILE (any other) with its
    referenced subgraphs (see the module docstring)."""
    r = g.r
    types = control_flow_types(g.table)
    t = types[r.u8() % len(types)]
    x = _loop_value(g, t, 2 + r.u8() % 3)
    xo = g.operands[x]
    dims = g.dims_of.get(x, tuple(xo.dimensions))
    if op_type == OperationType.IF:
        refs = []
        for _ in range(2):  # the then and else branches
            operands = [_operand(t, _inner_dims(g, dims), L.SUBGRAPH_INPUT, xo.scale, xo.zero_point)]
            operations: list[TestOperation] = []
            out = _body(g, operands, operations, 0, t)
            refs.append(_reference(g, _subgraph(operands, operations, [0], [out])))
        lifetime = L.SUBGRAPH_INPUT if r.u8() % 4 else L.CONSTANT_COPY
        cond = g.add(T.TENSOR_BOOL8, [1], lifetime, data=np.asarray([bool(r.u8() & 1)]))
        ins = [cond, *refs, x]
    else:  # WHILE over (x, i): x = body(x), i += 1 while i < limit (at most 6 rounds)
        i = g.add(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT, data=np.asarray([float(r.u8() % 5) - 2.0], np.float32))
        limit = np.asarray([float(1 + r.u8() % 4)], np.float32)
        # condition(x, i) = LESS(i, limit)
        operands = [_operand(t, _inner_dims(g, dims), L.SUBGRAPH_INPUT, xo.scale, xo.zero_point),
                    _operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),
                    _operand(T.TENSOR_FLOAT32, [1], L.CONSTANT_COPY, data=limit),
                    _operand(T.TENSOR_BOOL8, [1], L.SUBGRAPH_OUTPUT)]
        cond = _reference(g, _subgraph(operands, [TestOperation(OperationType.LESS, [1, 2], [3])], [0, 1], [3]))
        # body(x, i) = (op(x), ADD(i, 1))
        operands = [_operand(t, _inner_dims(g, dims), L.SUBGRAPH_INPUT, xo.scale, xo.zero_point),
                    _operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),
                    _operand(T.TENSOR_FLOAT32, [1], L.CONSTANT_COPY, data=np.ones(1, np.float32)),
                    _operand(T.INT32, [], L.CONSTANT_COPY, data=np.asarray(0, np.int32).reshape(())),
                    _operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_OUTPUT)]
        operations = [TestOperation(OperationType.ADD, [1, 2, 3], [4])]
        out = _body(g, operands, operations, 0, t)
        body = _reference(g, _subgraph(operands, operations, [0, 1], [out, 4]))
        ins = [cond, body, x, i]
    y = g.output(t, list(dims) if r.u8() % 4 else [0] * len(dims), dims, xo.scale, xo.zero_point, False)
    g.operations.append(TestOperation(op_type, ins, [y]))
