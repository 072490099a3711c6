"""Decision rules of the operation table's discontinuous rows (``OperationDef.decision``).

A decision is an operation whose output jumps while its inputs move continuously: a
comparison flips at equality, ARGMAX / ARGMIN and TOPK_V2's indices change at ties, FLOOR and
a CAST of a float to an integer type at integers, QUANTIZE at half quanta. When an input was
computed upstream it carries an allowed error (NNAPI lets every float result be off by its
tolerance), so an element whose inputs lie within that error of the boundary has more than
one right answer. A rule says which:

    rule(ctx, errors, results) -> list[np.ndarray | None]

``ctx``: the use's :class:`~runtime.ops.base.OpContext` (input views with the reference's
values, output views with their dimensions); ``errors``: per input None (exact: a model
input, a constant, an integer or boolean value) or a float64 array of absolute errors
broadcastable to the input's value, in real units (a quantized input's error is its allowed
error in quanta times its scale); ``results``: the reference's outputs. Returns per output a
bool mask of the output's shape (true: ambiguous) or None (no element is). The masks are read
by :mod:`runtime.precision.decisions`, which supplies the errors, propagates ambiguity
downstream and lets the random-graph judge accept every right answer.

Each rule is sound: it never leaves out an element whose answer can change (over-marking
costs judged elements, never a false failure); the ones that cannot be exact cheaply
(detection, LSH_PROJECTION, ROI bins) mark every output element once an input they decide
on carries any error. Intervals are closed: an input exactly on a boundary with a positive
error is ambiguous.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType
from .base import OpContext
from .common import QUANT_RANGES, read_axis, round_half_away, to_float

T = OperandType
_INTEGER_CAST_TYPES = (T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)


def has_error(errors, index: int) -> bool:
    """Whether input ``index`` carries a positive allowed error."""
    e = errors[index] if index < len(errors) else None
    return e is not None and bool(np.any(np.asarray(e) > 0))


def _error(errors, index: int, shape) -> np.ndarray:
    """Input ``index``'s errors broadcast to ``shape`` (zeros when exact)."""
    e = errors[index] if index < len(errors) else None
    return np.zeros(shape) if e is None else np.broadcast_to(np.asarray(e, np.float64), shape)


def changes_within(f, x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Mask where the monotone (non-decreasing) ``f`` differs between ``x - e`` and
    ``x + e`` (so some value within the error gives another answer); never where ``e`` is
    0 or ``x`` is NaN."""
    with np.errstate(all="ignore"):
        return (e > 0) & (f(x - e) != f(x + e)) & ~np.isnan(x)


def _unary(ctx: OpContext, errors, f) -> list[np.ndarray | None]:
    """Rule of an element-wise decision ``f`` of input 0's real value."""
    if not has_error(errors, 0):
        return [None]
    x = to_float(ctx.inputs[0])
    return [changes_within(f, x, _error(errors, 0, x.shape))]


def floor_decision(ctx: OpContext, errors, results) -> list[np.ndarray | None]:
    """FLOOR (NNAPI: ``floor(x)``): ambiguous where an integer lies within ``x +- e``."""
    return _unary(ctx, errors, np.floor)


def cast_decision(ctx: OpContext, errors, results) -> list[np.ndarray | None]:
    """CAST of a float to TENSOR_INT32 / TENSOR_QUANT8_ASYMM (truncation toward zero after
    saturation, ``runtime.ops.cast``): ambiguous where ``trunc(clamp(x +- e))`` differ. Other
    casts are continuous (float to float rounds within the tolerance; integers are exact; a
    quantized input's stored value moves by its allowed quanta)."""
    src, out_type = ctx.inputs[0], ctx.outputs[0].type
    if src.type not in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16) or out_type not in _INTEGER_CAST_TYPES:
        return [None]
    lo, hi = QUANT_RANGES[out_type]
    return _unary(ctx, errors, lambda v: np.trunc(np.clip(v, lo, hi)))


def quantize_decision(ctx: OpContext, errors, results) -> list[np.ndarray | None]:
    """QUANTIZE (NNAPI: ``clamp(round(x / scale) + zeroPoint)``, half away from zero):
    ambiguous where ``x +- e`` round to different quanta."""
    out = ctx.outputs[0]
    lo, hi = QUANT_RANGES[out.type]
    scale = np.float64(np.float32(out.scale))
    return _unary(ctx, errors, lambda v: np.clip(round_half_away(v / scale) + out.zero_point, lo, hi))


def comparison_decision(ctx: OpContext, errors, results) -> list[np.ndarray | None]:
    """EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL (broadcasting; quantized
    inputs compared as real values): every one flips at ``input0 == input1``, so an element
    is ambiguous where ``|a - b| <= e_a + e_b`` with ``e_a + e_b > 0``."""
    if not (has_error(errors, 0) or has_error(errors, 1)):
        return [None]
    a, b = to_float(ctx.inputs[0]), to_float(ctx.inputs[1])
    shape = np.broadcast_shapes(a.shape, b.shape)
    e = _error(errors, 0, a.shape) + _error(errors, 1, b.shape) if a.shape == b.shape else \
        np.broadcast_to(_error(errors, 0, a.shape), shape) + np.broadcast_to(_error(errors, 1, b.shape), shape)
    with np.errstate(all="ignore"):
        return [np.asarray((e > 0) & (np.abs(a - b) <= e)).reshape(results[0].shape)]


#: Rows longer than this along the decided axis are marked whole when they carry an error
#: (bounds the sort's work; random graphs stay far below it).
MAX_ROW = 1 << 16


def overlapping(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per element of ``x`` (rows along the last axis), whether its interval
    ``[x - e, x + e]`` meets another element's of the same row: exactly the elements whose
    rank in the row can change within the errors (an element no other interval meets has
    the same elements above it whatever the values). Closed intervals; two exact (``e ==
    0``) equal values count as meeting (sound, since tie rules are fixed: over-marking only).
    NaN meets nothing."""
    if x.shape[-1] > MAX_ROW:
        return np.broadcast_to(np.any(e > 0, axis=-1, keepdims=True), x.shape).copy()
    lo, hi = x - e, x + e
    order = np.argsort(lo, axis=-1, kind="stable")
    slo, shi = np.take_along_axis(lo, order, -1), np.take_along_axis(hi, order, -1)
    before = np.maximum.accumulate(shi, axis=-1)  # largest upper end among the first p+1
    meets = np.zeros(x.shape, bool)
    with np.errstate(invalid="ignore"):
        meets[..., 1:] |= before[..., :-1] >= slo[..., 1:]   # an earlier interval reaches p
        meets[..., :-1] |= slo[..., 1:] <= shi[..., :-1]     # the next lower end is inside p
    out = np.zeros(x.shape, bool)
    np.put_along_axis(out, order, meets, -1)
    return out


def arg_decision(ctx: OpContext, errors, results) -> list[np.ndarray | None]:
    """ARGMAX / ARGMIN (index of the extreme element along ``axis``, lowest on ties):
    ambiguous where the chosen element's interval meets another's along the axis."""
    if not has_error(errors, 0):
        return [None]
    x = to_float(ctx.inputs[0])
    axis = read_axis(ctx, 1, x.ndim)
    e = np.moveaxis(_error(errors, 0, x.shape), axis, -1)
    meets = overlapping(np.moveaxis(x, axis, -1), e)
    best = np.asarray(results[0]).reshape(meets.shape[:-1] + (1,)).astype(np.int64)
    return [np.take_along_axis(meets, best, -1).reshape(results[0].shape)]


def topk_decision(ctx: OpContext, errors, results) -> list[np.ndarray | None]:
    """TOPK_V2: the values output is continuous (order statistics); an index is ambiguous
    where its element's interval meets another element's of the row (its rank can change)."""
    if not has_error(errors, 0):
        return [None, None]
    x = to_float(ctx.inputs[0])
    meets = overlapping(x, _error(errors, 0, x.shape))
    return [None, np.take_along_axis(meets, np.asarray(results[1]).astype(np.int64), -1)]


def any_error_decision(*inputs: int):
    """A rule marking every element of every output once any of ``inputs`` (input indexes)
    carries an error: for operations whose decisions are too entangled to bound element by
    element (non-maximum suppression, thresholds, hashing, rounded ROI bins)."""
    def rule(ctx: OpContext, errors, results) -> list[np.ndarray | None]:
        if not any(has_error(errors, i) for i in inputs):
            return [None] * len(results)
        return [np.ones(np.shape(r), bool) for r in results]
    rule.__doc__ = f"Every output element ambiguous once input(s) {', '.join(map(str, inputs))} carry an error."
    return rule
