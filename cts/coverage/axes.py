"""Coverage cells of one operation, derived from the operation table (``runtime.ops``), and
which cells one use of the operation (its operand views) covers.

Axes (issue 9), every cell named ``<axis>`` / ``key`` (unique within the operation):

- ``signature``: one cell per :class:`~runtime.ops.base.Signature` row (key ``sig<i>``,
  label ``Signature.describe()``); a use covers the lowest-level row that accepts it
  (``OperationDef.match``, as ``runtime/hal/validate.py`` matches).
- ``enum``: each value of each enumerated scalar slot, named by the slot's Arg name
  (:data:`DOMAINS`; any other BOOL scalar: false/true). Key ``<arg>=<label>``. A constant
  operand's value covers its cell; an omitted or non-constant one covers none. A value the
  operation's own ``validate`` rejects in every signature that has the slot is
  "impossible", the rule cited is the table's error message. A negative axis is impossible
  for an operation that declares ``nonnegative_axis`` (AOSP checks ``axis >= 0``:
  CONCATENATION, PACK, REVERSE).
- ``quant``: per quantized tensor type in the operation's signatures: zero point 0 / mid
  (strictly between the type's min and max, not 0) / extreme (the type's min or max, other
  than 0) for asymmetric types; scale < 1 / scale > 1 for every quantized type (per-channel:
  any channel's scale). An operation with no quantized signature has no quant cell. A cell
  is "impossible" when every operand of its type in every signature has a quantization the
  NNAPI spec fixes (:class:`~runtime.ops.base.Arg` ``fixed_quant``: the TENSOR_QUANT16 boxes
  of the detection and ROI operations at scale 0.125, zero point 0; QUANTIZED_16BIT_LSTM's
  cell state at scale 2^-11) and none of those quantizations falls in the cell.
- ``shape``: batch > 1 (input 0 may have rank >= 2; covered by declared dims[0] > 1);
  non-square spatial (input 0 is rank 4 only; H != W, NCHW when a constant ``layout`` is
  true; "impossible" for an operation that declares ``square_spatial``: NNAPI's
  HEATMAP_MAX_KEYPOINT heatmaps are [num_boxes, heatmap_size, heatmap_size, num_keypoints]);
  broadcasting forms of element-wise binary operations (:data:`BROADCAST_PAIRS`);
  square / non-square weight matrices (the row's ``weight_slots``).
- ``optional``: each optional slot omitted / given (a slot absent from the matched row of
  an operation that has it elsewhere counts as omitted); one ``zero-sized input`` cell for
  every operation: covered when an input's declared dimensions hold a 0 next to a known
  (non-zero) dimension, the way AOSP declares zero-sized temporaries. The table's AOSP facts
  (:class:`~runtime.ops.base.OperationDef` ``allows_zero_sized_input``,
  ``allows_omitted_operand``, ``aosp_source``) rule cells out: the zero-sized cell of an
  operation AOSP's CPU executor rejects zero-sized inputs for, and "omitted" of a slot that
  every row has when the executor rejects omitted (NO_VALUE) operands; the rule cites the
  AOSP check and file. An operation with no ``aosp_source`` has no such rule: its cells stay
  cells.

Shapes are the declared dimensions (0 = unknown, never counted as a size).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime import ops
from runtime.errors import OperationError
from runtime.ops.domains import AXIS_NAMES, DOMAINS, EXTRA_VALUES
from runtime.ops.base import Arg, OpContext, OperandView, OperationDef, Signature
from runtime.types import (OperandType as T, OperationType, is_quantized_type, is_tensor_type,
                           operand_dtype)

AXES = ("signature", "enum", "quant", "shape", "optional")

_ABSURD = 12345
_BOOL_DOMAIN = (("false", False), ("true", True))
#: Sign of the given axes (scalar or 1-D tensor of axes).
_AXIS_DOMAIN = (("positive", 0), ("negative", -1))
#: Input name pairs of element-wise binary operations that broadcast (NNAPI: ADD, MUL, SUB,
#: DIV, comparisons, logical AND/OR, MAXIMUM, MINIMUM: input0/input1; POW; PRELU).
BROADCAST_PAIRS = (("input0", "input1"), ("base", "exponent"), ("input", "alpha"))
BROADCAST_FORMS = ("same shape", "one side rank-lower", "one side size-1 dims", "both sides broadcast")

_ASYMM = {t: (int(np.iinfo(operand_dtype(t)).min), int(np.iinfo(operand_dtype(t)).max))
          for t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM)}


@dataclass(frozen=True)
class Cell:
    """One coverage cell: ``axis`` (one of :data:`AXES`), ``key`` (unique per operation),
    ``label`` (for people) and ``impossible`` (the rule that rules it out, or "")."""

    axis: str
    key: str
    label: str
    impossible: str = ""


def domain(arg: Arg) -> tuple[tuple[str, object], ...] | None:
    """The enumerated values of a scalar (or axis-tensor) slot, or None if not enumerated."""
    if arg.name in AXIS_NAMES and arg.type in (T.INT32, T.TENSOR_INT32):
        return _AXIS_DOMAIN
    if is_tensor_type(arg.type) or arg.type not in (T.INT32, T.BOOL):
        return None
    if arg.name in DOMAINS:
        return DOMAINS[arg.name]
    return _BOOL_DOMAIN if arg.type == T.BOOL else None


def classify(arg: Arg, value: np.ndarray) -> set[str]:
    """Labels of ``domain(arg)`` that a constant ``value`` covers (unknown values: none)."""
    dom = domain(arg)
    if dom is None or value is None or np.size(value) == 0:
        return set()
    if dom is _AXIS_DOMAIN:
        v = np.asarray(value).ravel()
        return {label for label, hit in (("positive", (v >= 0).any()), ("negative", (v < 0).any())) if hit}
    v = np.asarray(value).item()
    if dom is _BOOL_DOMAIN or arg.name in ("keep_dims", "time_major"):
        return {"true" if v else "false"}
    return {label for label, code in (*dom, *EXTRA_VALUES.get(arg.name, ())) if code == v}


def _probe_views(s: Signature, slot: int, value) -> list[OperandView]:
    views = []
    for i, a in enumerate(s.inputs):
        rank = (a.ranks or (4,))[-1] if is_tensor_type(a.type) else 0
        dims = (2,) * rank
        cq = (np.ones(2, np.float32), 0) if a.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL else None
        v = None
        if i == slot:
            v = np.asarray(value, operand_dtype(a.type))
            if is_tensor_type(a.type):
                dims, v = (1,), v.reshape(1)
        views.append(OperandView(a.type, dims, 1.0 if is_quantized_type(a.type) else 0.0, 0, v,
                                 channel_quant=cq))
    return views


def _rejects(opdef: OperationDef, s: Signature, slot: int, value, baseline) -> str:
    """The message of ``opdef.validate`` rejecting ``value`` in ``slot`` of ``s`` when the
    domain's first value passes there; "" otherwise (accepted, or nothing to judge)."""
    if opdef.validate is None:
        return ""
    outs = [OperandView(a.type, (), 1.0 if is_quantized_type(a.type) else 0.0) for a in s.outputs]

    def run(v) -> str:
        try:
            opdef.validate(OpContext(opdef.type, _probe_views(s, slot, v), outs))
        except (OperationError, ValueError, TypeError, IndexError) as e:
            return str(e) or type(e).__name__
        return ""
    return run(value) if not run(baseline) else ""


_AOSP_CHECKS = {
    "zero-sized": ("allowZeroSizedInput", "checkNoZeroSizedInput", "a zero-sized input"),
    "omitted": ("allowOmittedOperand", "checkNoOmittedOperand", "an omitted (NO_VALUE) operand"),
}


def aosp_rule(opdef: OperationDef, kind: str) -> str:
    """Why AOSP's CPU executor rejects ``kind`` ("zero-sized" or "omitted") for ``opdef``, or
    "" when the table says it allows it (or names no AOSP source to cite)."""
    allowed = opdef.allows_zero_sized_input if kind == "zero-sized" else opdef.allows_omitted_operand
    if allowed or not opdef.aosp_source:
        return ""
    flag, check, what = _AOSP_CHECKS[kind]
    name = opdef.type.name
    if opdef.aosp_source == "CpuExecutor.cpp":
        return (f"AOSP's CPU executor runs {name} itself (common/CpuExecutor.cpp) through "
                f"allParametersPresent, which rejects {what}")
    return (f"AOSP registers {name} without {flag} (common/operations/{opdef.aosp_source}); "
            f"CpuExecutor's {check} rejects {what}")


def _axis_rule(opdef: OperationDef) -> str:
    if not opdef.nonnegative_axis:
        return ""
    src = f"common/operations/{opdef.aosp_source}" if opdef.aosp_source else "AOSP"
    return f"AOSP {opdef.type.name} requires axis >= 0 ({src}: prepare checks axis >= 0)"


def _quant_rule(opdef: OperationDef, t: T, key: str) -> str:
    """Why quant cell ``key`` of type ``t`` is impossible: every ``t`` operand slot of every
    signature has a ``fixed_quant`` and none of them covers ``key``; "" otherwise."""
    slots = [a for s in opdef.signatures for a in (*s.inputs, *s.outputs) if a.type == t]
    if not slots or any(a.fixed_quant is None for a in slots):
        return ""
    if any(key in _quant_keys(OperandView(t, (), *a.fixed_quant)) for a in slots):
        return ""
    fixed = dict.fromkeys(f"{a.name}: scale {a.fixed_quant[0]!r}, zero point {a.fixed_quant[1]}"
                          for a in slots)
    return (f"NNAPI types.spec fixes the quantization of every {t.name} operand of "
            f"{opdef.type.name} ({'; '.join(fixed)})")


def _square_rule(opdef: OperationDef) -> str:
    if not opdef.square_spatial:
        return ""
    first = opdef.signatures[0].inputs[0].name
    src = f"common/operations/{opdef.aosp_source}" if opdef.aosp_source else "AOSP"
    return (f"NNAPI types.spec: {opdef.type.name} input 0 ({first}) has equal height and width "
            f"({src}: prepare checks it)")


def _enum_cells(opdef: OperationDef) -> list[Cell]:
    found: dict[str, list[tuple[Signature, int, Arg]]] = {}
    for s in opdef.signatures:
        for i, a in enumerate(s.inputs):
            if domain(a) is not None:
                found.setdefault(a.name, []).append((s, i, a))
    cells = []
    for name, uses in found.items():
        dom = domain(uses[0][2])
        for label, value in dom:
            rules = [_rejects(opdef, s, i, value, dom[0][1]) for s, i, _ in uses]
            rule = f"{opdef.type.name} validation: {rules[0]}" if all(rules) else ""
            if not rule and dom is _AXIS_DOMAIN and label == "negative":
                rule = _axis_rule(opdef)
            cells.append(Cell("enum", f"{name}={label}", f"{name} = {label}", rule))
        checked = [(s, i) for s, i, _ in uses if _rejects(opdef, s, i, _ABSURD, dom[0][1])]
        cells += [Cell("enum", f"{name}={label}", f"{name} = {label}")
                  for label, value in EXTRA_VALUES.get(name, ())
                  if any(not _rejects(opdef, s, i, value, dom[0][1]) for s, i in checked)]
    return cells


def _quant_types(opdef: OperationDef) -> list[T]:
    seen = []
    for s in opdef.signatures:
        for a in (*s.inputs, *s.outputs):
            if is_quantized_type(a.type) and a.type not in seen:
                seen.append(a.type)
    return seen


def _args(opdef: OperationDef) -> list[Arg]:
    return [a for s in opdef.signatures for a in s.inputs]


#: cells_for's memo: op_type -> (the row the cells were built from, the cells).
_CELLS: dict[OperationType, tuple[OperationDef, tuple[Cell, ...]]] = {}


def cells_for(op_type: OperationType) -> tuple[Cell, ...]:
    """Every coverage cell of ``op_type``, in axis order (built from its current table row;
    memoised while that row stays in the table)."""
    opdef = ops.REGISTRY[op_type]
    memo = _CELLS.get(op_type)
    if memo is None or memo[0] is not opdef:
        memo = _CELLS[op_type] = (opdef, _cells_of(op_type, opdef))
    return memo[1]


def _cells_of(op_type: OperationType, opdef: OperationDef) -> tuple[Cell, ...]:
    """The cells of the row ``opdef`` of ``op_type`` (see :func:`cells_for`)."""
    cells = [Cell("signature", f"sig{i}", s.describe()) for i, s in enumerate(opdef.signatures)]
    cells += _enum_cells(opdef)
    for t in _quant_types(opdef):
        if t in _ASYMM:
            cells += [Cell("quant", f"{t.name} zp={k}", f"{t.name} zero point {k}",
                           _quant_rule(opdef, t, f"{t.name} zp={k}"))
                      for k in ("0", "mid", "extreme")]
        cells += [Cell("quant", f"{t.name} scale{k}1", f"{t.name} scale {k} 1",
                       _quant_rule(opdef, t, f"{t.name} scale{k}1")) for k in "<>"]
    firsts = [s.inputs[0] for s in opdef.signatures if s.inputs]
    if any(is_tensor_type(a.type) and (a.ranks is None or max(a.ranks) >= 2) for a in firsts):
        cells.append(Cell("shape", "batch>1", "batch > 1 (input 0 dims[0] > 1)"))
    if any(a.ranks == (4,) for a in firsts):
        cells.append(Cell("shape", "non-square", "non-square spatial (H != W)", _square_rule(opdef)))
    if _broadcast_pair(opdef.signatures[0]) is not None:
        cells += [Cell("shape", f"broadcast:{f}", f"broadcast: {f}") for f in BROADCAST_FORMS]
    if opdef.weight_slots:
        cells += [Cell("shape", f"weights:{k}", f"{k} weights ({', '.join(opdef.weight_slots)})")
                  for k in ("square", "non-square")]
    optional = list(dict.fromkeys(a.name for a in _args(opdef) if a.optional))
    omit_rule = aosp_rule(opdef, "omitted")
    for n in optional:
        # a row without the slot omits it by operand count, which AOSP's check allows
        everywhere = all(any(a.name == n for a in s.inputs) for s in opdef.signatures)
        rule = f"{omit_rule}; every signature has {n}" if omit_rule and everywhere else ""
        cells += [Cell("optional", f"{n} omitted", f"{n} omitted", rule),
                  Cell("optional", f"{n} given", f"{n} given")]
    cells.append(Cell("optional", "zero-sized", "zero-sized input", aosp_rule(opdef, "zero-sized")))
    return tuple(cells)


def _broadcast_pair(s: Signature) -> tuple[int, int] | None:
    names = [a.name for a in s.inputs]
    for x, y in BROADCAST_PAIRS:
        if names[:2] == [x, y] and all(is_tensor_type(a.type) for a in s.inputs[:2]):
            return 0, 1
    return None


def _broadcast_form(a: tuple[int, ...], b: tuple[int, ...]) -> str | None:
    if not a or not b or 0 in a or 0 in b:
        return None
    if a == b:
        return BROADCAST_FORMS[0]
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    a_bc = any(x == 1 and y > 1 for x, y in zip(pa, pb))
    b_bc = any(y == 1 and x > 1 for x, y in zip(pa, pb))
    if a_bc and b_bc:
        return BROADCAST_FORMS[3]
    return BROADCAST_FORMS[1] if len(a) != len(b) else BROADCAST_FORMS[2]


def signature_index(opdef: OperationDef, s: Signature) -> int:
    """Index in ``opdef.signatures`` of a matched row (for a variadic operation the row
    that ``match`` expanded into ``s``)."""
    for i, row in enumerate(opdef.signatures):
        if row is s:
            return i
    for i, row in enumerate(opdef.signatures):
        if row.feature_level == s.feature_level and set(row.inputs) == set(s.inputs) \
                and set(row.outputs) == set(s.outputs):
            return i
    return -1


def covered(op_type: OperationType, ins: list[OperandView], outs: list[OperandView]) -> set[str]:
    """Keys of the cells of ``op_type`` that one use with these operand views covers (inputs'
    ``value`` set for constants only); empty when no signature accepts the use."""
    opdef = ops.REGISTRY[op_type]
    s = opdef.match(ins, outs)
    if s is None:
        return set()
    keys = {f"sig{signature_index(opdef, s)}"}
    names = {}
    for a, v in zip(s.inputs, ins):
        names.setdefault(a.name, v)
        if not v.omitted:
            keys |= {f"{a.name}={label}" for label in classify(a, v.value)}
    for t in _quant_types(opdef):
        for v in (*ins, *outs):
            if v.type == t and not v.omitted:
                keys |= _quant_keys(v)
    x = ins[0] if ins else None
    if x is not None and is_tensor_type(x.type) and len(x.dims) >= 2 and x.dims[0] > 1:
        keys.add("batch>1")
    if x is not None and len(x.dims) == 4:
        layout = names.get("layout")
        nchw = layout is not None and layout.value is not None and bool(layout.value)
        h, w = x.dims[2:4] if nchw else x.dims[1:3]
        if h and w and h != w:
            keys.add("non-square")
    if _broadcast_pair(s) is not None:
        form = _broadcast_form(tuple(ins[0].dims), tuple(ins[1].dims))
        if form:
            keys.add(f"broadcast:{form}")
    for slot in opdef.weight_slots:
        weights = names.get(slot)
        if weights is not None and len(weights.dims) >= 2 and all(weights.dims[-2:]):
            keys.add("weights:square" if weights.dims[-1] == weights.dims[-2] else "weights:non-square")
    for a, v in zip(s.inputs, ins):
        if a.optional:
            keys.add(f"{a.name} {'omitted' if v.omitted else 'given'}")
    keys |= {f"{a.name} omitted" for a in _args(opdef) if a.optional and a.name not in names}
    if any(is_tensor_type(v.type) and 0 in v.dims and any(v.dims) and not v.omitted for v in ins):
        keys.add("zero-sized")
    return keys


def _quant_keys(v: OperandView) -> set[str]:
    t, keys = v.type, set()
    if t in _ASYMM:
        lo, hi = _ASYMM[t]
        zp = v.zero_point
        keys.add(f"{t.name} zp=" + ("0" if zp == 0 else "extreme" if zp in (lo, hi) else "mid"))
    scales = v.channel_quant[0] if v.channel_quant is not None else [v.scale]
    if any(0 < sc < 1 for sc in scales):
        keys.add(f"{t.name} scale<1")
    if any(sc > 1 for sc in scales):
        keys.add(f"{t.name} scale>1")
    return keys
