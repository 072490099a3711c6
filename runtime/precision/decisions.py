"""Decisions downstream of float error: which output elements of a model have more than one
right answer (issue 23, item 5).

A discontinuous operation (comparison, ARGMAX / ARGMIN, TOPK_V2, FLOOR, CAST of a float to
an integer type, QUANTIZE, detection ...: the rows with a ``decision`` rule,
:mod:`runtime.ops.decision_rules`) turns an allowed error upstream into a total mismatch
downstream: a driver whose SOFTMAX is one ULP above the reference's, well inside NNAPI's
tolerance, flips an EQUAL that compares it with the reference's own value. The judge must
accept each answer such a driver may give.

Design: taint propagation over one extra run of the reference (the intercept hook of
:func:`runtime.executor.run_subgraph`), not enumeration of alternatives. Enumerating (re-run
with the ambiguous decisions flipped, accept element by element any answer seen) is sound
only with every combination of flips (2^n runs); a partial enumeration rejects right
answers. Taint over-approximates instead: an ambiguous element may take any value, so the
judge leaves it out (of the element-wise bound and of the bias / MSE aggregates) and counts
it. Never a false failure; the cost is the elements not judged, which the record reports.

1. **Allowed errors.** Every value computed by an operation carries the error NNAPI allows
   a driver for its type, from the caller's ``tolerance(operand_type) -> (atol, rtol)``
   (AOSP's per-element rule ``atol + rtol * |x|``; quantized: ``atol`` quanta times the
   scale; exact types: none). Model inputs and constants are exact. Errors are not
   accumulated along a chain (NNAPI states none; the AOSP tolerance of the type is the
   bound the issue names).
2. **Decisions.** An operation with a rule (``OperationDef.decision``) whose inputs carry an
   error marks the output elements within that error of a boundary. A control-flow
   operation (IF, WHILE) whose inputs carry an error marks all its outputs (the decisions
   inside its referenced subgraphs are not analysed).
3. **Propagation.** An element computed from an ambiguous element is ambiguous:
   element-wise operations (:data:`ELEMENTWISE`, NNAPI broadcasting) mark the elements the
   ambiguous ones broadcast to; data movement (:data:`DATA_MOVEMENT`) marks where ambiguous
   elements of its data inputs land, found by re-running the kernel with them set to the
   type's minimum and then maximum (a copied element changes in one of the two; a requantized
   one too unless the map is constant); an ambiguous parameter of data movement, and any
   ambiguous input of every other operation (reductions, convolutions, normalization,
   recurrent, detection ...), marks all the outputs.

:func:`analyse` does all three and returns, per main output, the mask of ambiguous elements.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..executor import run_subgraph
from ..hal.types import Model
from ..ops import REGISTRY
from ..ops.base import OpContext
from ..types import OperandType, OperationType as Op, is_quantized_type

__all__ = ["Ambiguity", "analyse", "allowed_error", "propagate", "ELEMENTWISE", "DATA_MOVEMENT", "Tolerance"]

#: ``tolerance(operand_type) -> (atol, rtol)`` (float: real units; quantized: quanta), or
#: None for a type computed exactly.
Tolerance = Callable[[OperandType], "tuple[float, float] | None"]

#: Element-wise operations: output element i reads input elements i under NNAPI
#: broadcasting (trailing dimensions aligned) and nothing else.
ELEMENTWISE = frozenset((
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAXIMUM, Op.MINIMUM, Op.POW, Op.PRELU, Op.ABS, Op.NEG,
    Op.EXP, Op.LOG, Op.SQRT, Op.RSQRT, Op.SIN, Op.FLOOR, Op.RELU, Op.RELU1, Op.RELU6, Op.ELU,
    Op.HARD_SWISH, Op.LOGISTIC, Op.TANH, Op.CAST, Op.QUANTIZE, Op.DEQUANTIZE, Op.EQUAL,
    Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LOGICAL_AND,
    Op.LOGICAL_OR, Op.LOGICAL_NOT, Op.SELECT))

#: Data movement: every output element is a copy (perhaps requantized) of one element of
#: the data inputs listed (input indexes; ``None``: every tensor input), or a fill value.
DATA_MOVEMENT = {
    **dict.fromkeys((Op.RESHAPE, Op.TRANSPOSE, Op.SQUEEZE, Op.EXPAND_DIMS, Op.GATHER, Op.TILE,
                     Op.PAD, Op.PAD_V2, Op.MIRROR_PAD, Op.SPLIT, Op.SLICE, Op.STRIDED_SLICE,
                     Op.REVERSE, Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH, Op.BATCH_TO_SPACE_ND,
                     Op.SPACE_TO_BATCH_ND, Op.CHANNEL_SHUFFLE, Op.RESIZE_NEAREST_NEIGHBOR), (0,)),
    Op.EMBEDDING_LOOKUP: (1,),
    Op.HASHTABLE_LOOKUP: (2,),
    Op.CONCATENATION: None,
    Op.PACK: None,
}


@dataclass
class Ambiguity:
    """What :func:`analyse` found: ``masks``, per main output, a bool array of its shape
    (true: more than one right answer) or None (none); ``decided``: elements marked by
    decisions anywhere in the graph (intermediates included); ``decisions``: operation
    types whose rule marked some element."""

    masks: list[np.ndarray | None]
    decided: int = 0
    decisions: list[str] = field(default_factory=list)

    @property
    def elements(self) -> int:
        """Ambiguous elements over the main outputs."""
        return int(sum(int(np.count_nonzero(m)) for m in self.masks if m is not None))


def _whole(results) -> list[np.ndarray]:
    return [np.ones(np.shape(r), bool) for r in results]


def _any(mask) -> bool:
    return mask is not None and bool(np.any(mask))


def allowed_error(view, value: np.ndarray, tolerance: Tolerance) -> np.ndarray | None:
    """The absolute error (real units, float64 of ``value``'s shape) a driver may give an
    operand of ``view``'s type whose reference value is ``value``: ``atol + rtol * |x|``
    for floats, ``atol`` quanta times the scale for quantized types; None when exact."""
    tol = tolerance(view.type)
    if tol is None or (tol[0] == 0 and tol[1] == 0):
        return None
    atol, rtol = tol
    if is_quantized_type(view.type):
        return np.full(np.shape(value), atol * float(np.float32(view.scale)))
    if np.asarray(value).dtype.kind != "f":
        return None
    return atol + rtol * np.abs(np.asarray(value, np.float64))


def _alternative(value: np.ndarray, mask: np.ndarray, high: bool) -> np.ndarray:
    """``value`` with the elements of ``mask`` set to its dtype's largest (``high``) or
    smallest value."""
    dt = value.dtype
    if dt == np.bool_:
        fill = high
    elif dt.kind == "f":
        fill = np.finfo(dt).max if high else np.finfo(dt).min
    else:
        info = np.iinfo(dt)
        fill = info.max if high else info.min
    return np.where(mask, np.asarray(fill, dt), value)


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    same = a == b
    if a.dtype.kind == "f":
        same |= np.isnan(a) & np.isnan(b)
    return ~same


def _moved(opdef, ctx: OpContext, taints, results, data) -> list[np.ndarray]:
    """Data movement: where the ambiguous elements of the ``data`` inputs land (module
    docstring, step 3)."""
    out = [np.zeros(np.shape(r), bool) for r in results]
    for high in (False, True):
        inputs = [dataclasses.replace(v, value=_alternative(np.asarray(v.value), t, high))
                  if k in data and t is not None else v for k, (v, t) in enumerate(zip(ctx.inputs, taints))]
        alt = OpContext(ctx.operation, inputs, [dataclasses.replace(o) for o in ctx.outputs], ctx.relaxed)
        try:
            with np.errstate(all="ignore"):
                opdef.prepare(alt)
                moved = opdef.execute(alt)
        except Exception:  # noqa: BLE001 - a kernel refusing the probe: be conservative
            return _whole(results)
        for j, (r, m) in enumerate(zip(results, moved)):
            if np.shape(m) != np.shape(r):
                return _whole(results)
            out[j] |= _differs(r, m)
    return out


def propagate(opdef, ctx: OpContext, taints: list, results) -> list[np.ndarray | None]:
    """Per output, the elements computed from an ambiguous input element (``taints``: per
    input a mask of its value's shape, or None); see the module docstring, step 3."""
    if not any(_any(t) for t in taints):
        return [None] * len(results)
    if opdef.type in ELEMENTWISE and len(results) == 1:
        shape = np.shape(results[0])
        out = np.zeros(shape, bool)
        for v, t in zip(ctx.inputs, taints):
            if not _any(t):
                continue
            try:
                if np.broadcast_shapes(np.shape(t), shape) != shape or np.ndim(t) == 0:
                    return _whole(results)
            except ValueError:
                return _whole(results)
            out |= np.broadcast_to(t, shape)
        return [out]
    if opdef.type in DATA_MOVEMENT:
        data = DATA_MOVEMENT[opdef.type]
        data = {k for k, v in enumerate(ctx.inputs) if np.ndim(v.value) > 0} if data is None else set(data)
        if any(_any(t) and k not in data for k, t in enumerate(taints)):
            return _whole(results)
        return _moved(opdef, ctx, taints, results, data)
    return _whole(results)


def analyse(model: Model, inputs: list[np.ndarray | None], tolerance: Tolerance, *,
            relaxed: bool = False, table=None, dtypes=None) -> Ambiguity:
    """The ambiguous elements of ``model``'s main outputs (module docstring) when run on
    ``inputs`` (one array per main input in the operand's dtype, or None when omitted):
    one run of the reference (``table`` / ``dtypes`` / ``relaxed`` as for
    :func:`runtime.executor.run_subgraph`), skipped when no operation of the main subgraph
    has a decision rule or referenced subgraphs. ``tolerance``: see :data:`Tolerance`.
    Raises HalError as an execution of the model would."""
    table = REGISTRY if table is None else table
    sg = model.main
    deciders = [table.get(op.type) for op in sg.operations]
    if not any(d is not None and (d.decision is not None or getattr(d, "run", None) is not None)
               for d in deciders):
        return Ambiguity([None] * len(sg.output_indexes))
    errors: dict[int, np.ndarray | None] = {}
    taints: dict[int, np.ndarray | None] = {}
    found = Ambiguity([])

    def intercept(k: int, ctx: OpContext, results):
        op, opdef = sg.operations[k], deciders[k]
        in_errors = [errors.get(i) for i in op.inputs]
        masks: list = [None] * len(results)
        if opdef is None:  # the executor refuses an operation without a kernel before this
            return results
        if any(e is not None for e in in_errors):
            if opdef.decision is not None:
                masks = list(opdef.decision(ctx, in_errors, results))
            elif getattr(opdef, "run", None) is not None:
                masks = _whole(results)
            marked = sum(int(np.count_nonzero(m)) for m in masks if m is not None)
            if marked:
                found.decided += marked
                if op.type.name not in found.decisions:
                    found.decisions.append(op.type.name)
        spread = propagate(opdef, ctx, [taints.get(i) for i in op.inputs], results)
        for j, (idx, view, r) in enumerate(zip(op.outputs, ctx.outputs, results)):
            m = masks[j] if masks[j] is not None else spread[j]
            if masks[j] is not None and spread[j] is not None:
                m = masks[j] | spread[j]
            taints[idx] = m if _any(m) else None
            errors[idx] = allowed_error(view, r, tolerance)
        return results

    values = [(None if v is None else np.asarray(v), list(sg.operands[idx].dimensions) if v is None
               else list(np.shape(v))) for idx, v in zip(sg.input_indexes, inputs)]
    run_subgraph(model, sg, values, relaxed, table, dtypes, intercept=intercept)
    found.masks = [taints.get(idx) for idx in sg.output_indexes]
    return found
