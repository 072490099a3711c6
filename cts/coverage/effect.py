"""Effect coverage (issue 24): a cell counts as covered only when some test's expected
outputs *depend* on it. For every cell with a defined swap, each model using the cell (corpus
first, then our specs, in scan order) has the cell's value swapped for another value of its
domain; the swapped model runs on the reference (``runtime.executor.execute`` on the HAL model
of :func:`runtime.testing.hal_convert.to_hal_model`, with the test's own inputs; the main
subgraph's temporaries and outputs declared with unknown rank, so a swap that changes a shape
runs) and its outputs are judged against the test's *original* expected outputs with the
CTS's criteria (:func:`runtime.testing.criteria.judge`: NNAPI's tolerance per output type,
and the expected dimensions). The cell is *decided* by the first model whose swap fails that
judgement (a driver computing with the other value would fail the test), *use-only* when it
is used but no swap in any using model changes an output beyond tolerance. A swapped model
that validation or execution rejects is no swap (only OUTPUT_INSUFFICIENT_SIZE counts as a
changed output): the other value must give a valid model whose outputs differ.

Swaps, per axis:

- ``enum``: the constant scalar of the slot (a copy for this operation only) is replaced by
  every other value of its domain (:func:`cts.coverage.axes.domain` and ``EXTRA_VALUES``),
  BOOL flags flipped; an axis value (``axis``/``axes``, sign cells) by every axis in
  [-(rank+1), rank+1) of the first tensor input that names another dimension.
  :data:`ENUM_NO_SWAP` lists the slots whose other values never give a valid model with the
  same operands (merge_outputs changes the output count).
- ``quant``: each model input, constant or output of the operation in the cell (type and
  zero-point class, or scale side of 1) gets another zero point (0 -> a mid value of the
  type; mid or extreme -> 0) or the reciprocal scale (every channel of a per-channel
  operand), alone and then together with every operand of the operation that shares its
  quantization (operations requiring equal quantization); biases follow (:func:`_bias_fix`).
  The stored data stays, so the real values change. A temporary is never swapped: its
  quantization is its producer's too, which would decide instead. :data:`QUANT_INVARIANT`
  lists the operations whose stored outputs cannot depend on some quantization parameters by
  their NNAPI definition (data movement, order, shift or scale invariance), and quant cells
  of types whose every operand's quantization NNAPI fixes have no swap either.
- ``optional`` "<slot> given": the given constant (or main-subgraph input) is omitted
  (NO_VALUE, its default), alone, then with each group of :data:`OPTIONAL_GROUPS` that holds
  it (LSTM's CIFG, peephole, projection, layer norm), then with every other optional input.

No swap is defined for ``signature`` cells (a row's types are the test), ``shape`` cells
(batch, spatial, broadcast and weight forms change every operand's shape), "<slot> omitted"
(there is no single "other" value to give) and the zero-sized cell: those keep use coverage,
and :func:`no_swap_reason` says why for every such cell.

A model whose reference run does not pass its own expected outputs unswapped, or that expects
a failure, decides nothing. Results are memoised per (test id, subgraph, operation, cell) and
baseline runs per model, within one :class:`Analysis` (one ``nncts coverage`` run; the whole
corpus and specs take about 7,000 reference runs, 10-15 s of CPU).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from runtime import ops
from runtime.errors import ErrorStatus, HalError
from runtime.executor import execute
from runtime.hal.validate import validate_model, validate_request
from runtime.testing.criteria import judge
from runtime.testing.hal_convert import read_outputs, to_hal_model, to_hal_request
from runtime.testing.test_model import TestModel, TestOperand, TestSubgraph
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType, operand_dtype
from runtime.types import OperationType as Op

from . import axes
from .scan import Use, views

#: A cell's effect: decided by a model, used but never decisive, or no swap defined.
EFFECTS = ("decisive", "use-only", "no swap")
_CONSTANT = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)


@dataclass(frozen=True)
class Effect:
    """What the effect analysis found for one cell: ``effect`` (one of :data:`EFFECTS`),
    ``source`` / ``test_id`` of the first decisive model, ``swap`` (what was swapped there,
    or why the cell has no swap) and ``tried`` (models run before deciding)."""

    effect: str
    source: str = ""
    test_id: str = ""
    swap: str = ""
    tried: int = 0


_MOVES = ("NNAPI defines it as moving or selecting stored values (output quantization equal to "
          "the input's), so the stored outputs do not depend on the quantization")
_ORDER = ("NNAPI defines it by the order of the values (monotone in the stored value), so no "
          "quantization changes its stored outputs")
#: Operations whose stored outputs cannot depend on some quantization parameters of their
#: operands, by their NNAPI definition: operation -> (parameters: "zp" and/or "scale", why).
#: Their quant cells of those parameters have no swap (use coverage is all a test can show).
QUANT_INVARIANT: dict[OperationType, tuple[tuple[str, ...], str]] = {
    **{op: (("zp", "scale"), _MOVES) for op in (
        Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS, Op.TRANSPOSE, Op.GATHER, Op.PACK, Op.REVERSE, Op.TILE,
        Op.SLICE, Op.STRIDED_SLICE, Op.SPLIT, Op.SPACE_TO_DEPTH, Op.DEPTH_TO_SPACE, Op.BATCH_TO_SPACE_ND,
        Op.CHANNEL_SHUFFLE, Op.MIRROR_PAD, Op.EMBEDDING_LOOKUP, Op.HASHTABLE_LOOKUP,
        Op.RESIZE_NEAREST_NEIGHBOR)},
    **{op: (("zp", "scale"), _ORDER) for op in (
        Op.ARGMAX, Op.ARGMIN, Op.TOPK_V2, Op.REDUCE_MAX, Op.REDUCE_MIN)},
    Op.ROI_POOLING: (("scale",), "NNAPI ROI_POOLING takes maxima (monotone in the stored value) with equal "
                     "input/output quantization; an empty bin is 0, the zero point: the scale never enters"),
    Op.RANK: (("zp", "scale"), "NNAPI RANK outputs the input's rank only"),
    Op.CAST: (("zp", "scale"), "NNAPI CAST converts the stored values and ignores quantization"),
    Op.LSH_PROJECTION: (("zp", "scale"), "NNAPI LSH_PROJECTION hashes the stored bytes of its input"),
    Op.PAD_V2: (("zp", "scale"), "NNAPI PAD_V2 copies stored values and pads with its stored pad_value"),
    Op.RESIZE_BILINEAR: (("zp", "scale"), "NNAPI RESIZE_BILINEAR interpolates with weights summing to 1 "
                         "and equal input/output quantization: the stored outputs are the interpolated "
                         "stored inputs"),
    Op.MEAN: (("zp", "scale"), "NNAPI MEAN averages (weights summing to 1) with equal input/output "
              "quantization: the stored outputs are the averaged stored inputs"),
    Op.RELU: (("scale",), "NNAPI RELU with equal input/output quantization stores max(q, zero point): "
              "the scale never enters"),
    Op.PAD: (("scale",), "NNAPI PAD copies stored values and pads with the zero point"),
    Op.SPACE_TO_BATCH_ND: (("scale",), "NNAPI SPACE_TO_BATCH_ND copies stored values and pads with the "
                           "zero point"),
    Op.SOFTMAX: (("zp",), "NNAPI SOFTMAX is shift-invariant (softmax(x - c) = softmax(x)) and fixes "
                 "its output quantization"),
    Op.L2_NORMALIZATION: (("scale",), "NNAPI L2_NORMALIZATION is scale-invariant (x / |x|) and fixes "
                          "its output quantization"),
}


#: Enumerated slots whose other values never give a valid model with the same operands, by
#: (operation or None for every operation, slot name): why.
ENUM_NO_SWAP: dict[tuple[OperationType | None, str], str] = {
    (None, "merge_outputs"): ("NNAPI: merge_outputs decides how many outputs the operation has (one merged "
                              "sequence or two), so the other value needs other output operands"),
    (Op.GENERATE_PROPOSALS, "layout"): (
        "NNAPI: scores [N, H, W, A] and deltas [N, H, W, 4A] read validly in one layout only (the other "
        "reading needs A' = H and 4A' = H)"),
}


def no_swap_reason(op: OperationType, cell: axes.Cell) -> str:
    """Why ``cell`` of ``op`` has no swap (see the module doc), or "" when it has one."""
    if cell.axis == "optional" and cell.key.endswith(" given"):
        return ""
    if cell.axis == "enum":
        name = cell.key.split("=", 1)[0]
        return ENUM_NO_SWAP.get((op, name)) or ENUM_NO_SWAP.get((None, name), "")
    if cell.axis != "quant":
        return f"no swap is defined for {cell.axis} cells"
    t = T[cell.key.split(" ")[0]]
    slots = [a for s in ops.REGISTRY[op].signatures for a in (*s.inputs, *s.outputs) if a.type == t]
    if slots and all(a.fixed_quant is not None for a in slots):
        return f"NNAPI fixes the quantization of every {t.name} operand of {op.name}"
    params, why = QUANT_INVARIANT.get(op, ((), ""))
    return why if ("zp" if " zp=" in cell.key else "scale") in params else ""


def swappable(op: OperationType, cell: axes.Cell) -> bool:
    """Whether ``cell`` of operation ``op`` has a defined swap (see the module doc and
    :func:`no_swap_reason`)."""
    return not no_swap_reason(op, cell)


# --- the reference run ------------------------------------------------------------------

def _run(run: TestModel):
    """Run ``run`` on the reference: ("ok", output bytes, dimensions), ("fail", None, None)
    when an output does not fit its expected buffer, ("invalid", None, None) when validation
    or execution rejects the model."""
    model, request = to_hal_model(run), to_hal_request(run)
    try:
        validate_model(model)
        validate_request(request, model)
        shapes = execute(model, request)
    except HalError as e:
        return ("fail" if e.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE else "invalid"), None, None
    except (ValueError, TypeError, IndexError, ArithmeticError):
        return "invalid", None, None
    outputs = read_outputs(run, request, shapes)
    return "ok", [np.ascontiguousarray(o).tobytes() for o in outputs], [s.dimensions for s in shapes]


def outcome(run: TestModel, expected: TestModel) -> str:
    """Run ``run`` on the reference and judge its outputs against ``expected``'s: "pass",
    "fail" (an output differs beyond tolerance or in shape, or does not fit the expected
    output's buffer) or "invalid" (validation or execution rejects the model)."""
    status, outputs, dims = _run(run)
    if status != "ok":
        return status
    return "fail" if judge(expected, outputs, dims) else "pass"


def differs(swapped: TestModel, control: TestModel, expected: TestModel) -> bool:
    """Whether ``swapped`` fails ``expected``'s outputs and its outputs differ from those of
    ``control`` (beyond tolerance or in shape; a control the reference rejects differs)."""
    status, outputs, dims = _run(swapped)
    if status == "invalid" or (status == "ok" and not judge(expected, outputs, dims)):
        return False
    c_status, c_outputs, c_dims = _run(control)
    if c_status != "ok" or status != "ok":
        return c_status != status
    main = expected.main
    ops_ = list(main.operands)
    for j, idx in enumerate(main.output_indexes):
        o = ops_[idx]
        data = np.frombuffer(c_outputs[j], operand_dtype(o.type))[:int(np.prod(c_dims[j]))]
        ops_[idx] = dataclasses.replace(o, data=data.reshape(c_dims[j]))
    as_control = dataclasses.replace(expected, main=dataclasses.replace(main, operands=ops_))
    return bool(judge(as_control, outputs, dims))


# --- model surgery (shallow copies: the corpus model is never changed) --------------------

_INFERRED = (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)


def loosened(tm: TestModel) -> TestModel:
    """``tm`` with the main subgraph's temporaries and outputs declared with unknown rank,
    so that a swap changing a shape (padding scheme, layout, keep_dims, an adjoint) runs and
    the judgement sees the shape (NNAPI infers such dimensions at execution, feature level 3
    and up)."""
    operands = [dataclasses.replace(o, dimensions=[])
                if o.lifetime in _INFERRED and o.dimensions else o for o in tm.main.operands]
    return dataclasses.replace(tm, main=dataclasses.replace(tm.main, operands=operands))


def _subgraph(tm: TestModel, i: int) -> TestSubgraph:
    return tm.main if i == 0 else tm.referenced[i - 1]


def _with_subgraph(tm: TestModel, i: int, sg: TestSubgraph) -> TestModel:
    if i == 0:
        return dataclasses.replace(tm, main=sg)
    refs = list(tm.referenced)
    refs[i - 1] = sg
    return dataclasses.replace(tm, referenced=refs)


def _replace_operands(tm: TestModel, sg_i: int, new: dict[int, TestOperand]) -> TestModel:
    """``tm`` with operands ``new`` (index -> operand) of subgraph ``sg_i`` replaced (every
    consumer sees the new operand: quantization is the tensor's)."""
    sg = _subgraph(tm, sg_i)
    operands = [new.get(k, o) for k, o in enumerate(sg.operands)]
    return _with_subgraph(tm, sg_i, dataclasses.replace(sg, operands=operands))


def _replace_input(tm: TestModel, sg_i: int, op_i: int, slot: int, new: TestOperand) -> TestModel:
    """``tm`` with input ``slot`` of operation ``op_i`` replaced by ``new`` for that operation
    only (a shared operand is left to its other consumers)."""
    sg = _subgraph(tm, sg_i)
    old_i = sg.operations[op_i].inputs[slot]
    old = sg.operands[old_i]
    if old.number_of_consumers <= 1 or old.lifetime == L.SUBGRAPH_INPUT:
        return _replace_operands(tm, sg_i, {old_i: new})
    operands = list(sg.operands)
    operands[old_i] = dataclasses.replace(old, number_of_consumers=old.number_of_consumers - 1)
    operands.append(dataclasses.replace(new, number_of_consumers=1))
    operations = list(sg.operations)
    op = operations[op_i]
    ins = list(op.inputs)
    ins[slot] = len(operands) - 1
    operations[op_i] = dataclasses.replace(op, inputs=ins)
    return _with_subgraph(tm, sg_i, dataclasses.replace(sg, operands=operands, operations=operations))


# --- swaps per axis ---------------------------------------------------------------------

def _matched(use: Use):
    """(operation, signature row, input views) of ``use``, or None when no row matches."""
    sg = _subgraph(use.model, use.subgraph)
    op = sg.operations[use.operation]
    ins = views(sg, op.inputs, use.subgraph == 0)
    s = ops.REGISTRY[op.type].match(ins, views(sg, op.outputs))
    return (op, s, ins) if s is not None else None


def _enum_values(arg, value: np.ndarray, label: str, rank: int):
    """(description, new value) for each other value of ``arg``'s domain."""
    dom = axes.domain(arg)
    if dom is axes._AXIS_DOMAIN:
        flat = np.asarray(value).reshape(-1)
        n = rank + 1
        for k, v in enumerate(flat):
            if ("negative" if v < 0 else "positive") != label:
                continue
            for other in range(-n, n):
                if other % n != int(v) % n and other % max(rank, 1) != int(v) % max(rank, 1):
                    new = flat.copy()
                    new[k] = other
                    yield f"{arg.name} {int(v)} -> {other}", new.reshape(np.shape(value))
        return
    values = [*dom, *axes.EXTRA_VALUES.get(arg.name, ())]
    for other_label, other in values:
        if other_label != label and other != np.asarray(value).item():
            yield f"{arg.name} {label} -> {other_label}", np.asarray(other).reshape(np.shape(value))


def _enum_swaps(use: Use, key: str):
    found = _matched(use)
    if found is None:
        return
    op, s, ins = found
    name, label = key.split("=", 1)
    sg = _subgraph(use.model, use.subgraph)
    rank = next((len(v.dims) for v in ins if v.dims), 0)  # the first tensor's (PACK: axis first)
    for slot, (arg, view) in enumerate(zip(s.inputs, ins)):
        operand = sg.operands[op.inputs[slot]]
        if arg.name != name or view.value is None or operand.lifetime not in _CONSTANT \
                or label not in axes.classify(arg, view.value):
            continue
        for desc, value in _enum_values(arg, view.value, label, rank):
            data = np.asarray(value, operand_dtype(operand.type)).reshape(np.shape(operand.data))
            new = dataclasses.replace(operand, data=data, lifetime=L.CONSTANT_COPY)
            yield desc, _replace_input(use.model, use.subgraph, use.operation, slot, new), None


_MID = {T.TENSOR_QUANT8_ASYMM: 128, T.TENSOR_QUANT8_ASYMM_SIGNED: 64, T.TENSOR_QUANT16_ASYMM: 32768}


def _requant(o: TestOperand, key: str) -> tuple[str, TestOperand] | None:
    """The operand with the quantization of cell ``key`` swapped (see the module doc)."""
    if key.endswith("1"):  # scale<1 / scale>1
        if o.channel_quant is not None:
            scales, dim = o.channel_quant
            return "channel scales -> 1/s", dataclasses.replace(
                o, channel_quant=(tuple(1.0 / s if s else s for s in scales), dim))
        if o.scale in (0.0, 1.0):
            return None
        return f"scale {o.scale:g} -> {1 / o.scale:g}", dataclasses.replace(o, scale=1.0 / o.scale)
    zp = _MID[T(o.type)] if o.zero_point == 0 else 0
    return f"zero point {o.zero_point} -> {zp}", dataclasses.replace(o, zero_point=zp)


def _bias_fix(sg: TestSubgraph, op, new: dict[int, TestOperand]) -> None:
    """Keep the biases of ``op`` valid after its inputs' quantization changed as ``new``
    says: a CONV_2D-style bias (input 2, TENSOR_INT32 with a scale) becomes input scale *
    filter scale (per channel too), as NNAPI requires; any other quantized TENSOR_INT32 input
    (QUANTIZED_16BIT_LSTM's gate biases, at weights scale * input scale) is rescaled by the
    swapped inputs' scale ratio."""
    if len(op.inputs) >= 3:
        b_i = op.inputs[2]
        bias = new.get(b_i, sg.operands[b_i])
        if bias.type == T.TENSOR_INT32 and (bias.scale or bias.channel_quant):
            x, w = (new.get(i, sg.operands[i]) for i in op.inputs[:2])
            if w.channel_quant is not None:
                scales = tuple(float(np.float32(x.scale) * np.float32(s)) for s in w.channel_quant[0])
                new[b_i] = dataclasses.replace(bias, scale=0.0, channel_quant=(scales, 0)) \
                    if bias.channel_quant is not None else bias
            else:
                new[b_i] = dataclasses.replace(bias, scale=x.scale * w.scale)
            return
    ratios = {new[i].scale / sg.operands[i].scale for i in op.inputs
              if i in new and sg.operands[i].scale and new[i].scale}
    if len(ratios) == 1:
        r = ratios.pop()
        for i in op.inputs:
            o = sg.operands[i]
            if i not in new and o.type == T.TENSOR_INT32 and o.scale:
                new[i] = dataclasses.replace(o, scale=o.scale * r)


def _quant_swaps(use: Use, key: str):
    """Each operand of the cell's type and class swapped alone, then together with every
    operand of the operation sharing its quantization (operations that require equal input
    and output quantization: RELU, pooling, ...)."""
    sg = _subgraph(use.model, use.subgraph)
    op = sg.operations[use.operation]
    idxs = [*op.inputs, *op.outputs]
    for i, v in zip(idxs, views(sg, idxs, use.subgraph == 0)):
        o = sg.operands[i]
        if v.omitted or o.lifetime in (L.NO_VALUE, L.TEMPORARY_VARIABLE) or key not in axes._quant_keys(v):
            continue
        swapped = _requant(o, key)
        if swapped is None:
            continue
        desc, new_o = swapped
        alone = {i: new_o}
        _bias_fix(sg, op, alone)
        yield f"operand {i}: {desc}", _replace_operands(use.model, use.subgraph, alone), None
        twins = {j: dataclasses.replace(sg.operands[j], scale=new_o.scale, zero_point=new_o.zero_point,
                                        channel_quant=new_o.channel_quant)
                 for j in idxs if j != i and _same_quant(sg.operands[j], o)
                 and sg.operands[j].lifetime != L.TEMPORARY_VARIABLE}
        if twins:
            twins[i] = new_o
            _bias_fix(sg, op, twins)
            yield f"operands {sorted(twins)}: {desc}", _replace_operands(use.model, use.subgraph, twins), None


def _same_quant(a: TestOperand, b: TestOperand) -> bool:
    return a.type == b.type and a.lifetime != L.NO_VALUE and (a.scale, a.zero_point, a.channel_quant) \
        == (b.scale, b.zero_point, b.channel_quant)


def _omit(tm: TestModel, use: Use, slot: int) -> TestModel | None:
    """``tm`` with input ``slot`` of ``use``'s operation omitted (a constant becomes
    NO_VALUE, a main-subgraph input gets no value), or None for any other operand."""
    o = _subgraph(tm, use.subgraph).operands[_subgraph(tm, use.subgraph).operations[use.operation].inputs[slot]]
    if o.lifetime in _CONSTANT:
        new = dataclasses.replace(o, lifetime=L.NO_VALUE, data=None, dimensions=[], number_of_consumers=1)
    elif o.lifetime == L.SUBGRAPH_INPUT and use.subgraph == 0:
        new = dataclasses.replace(o, data=None)
    else:
        return None
    return _replace_input(tm, use.subgraph, use.operation, slot, new)


#: Optional inputs NNAPI's LSTM operations give or omit together (types.spec LSTM: CIFG
#: omits the input gate; peephole, projection and layer normalization come whole), by slot
#: name without a ``fw_`` / ``bw_`` prefix.
OPTIONAL_GROUPS = (
    ("input_to_input_weights", "recurrent_to_input_weights", "cell_to_input_weights", "input_gate_bias",
     "input_layer_norm_weights"),
    ("cell_to_input_weights", "cell_to_forget_weights", "cell_to_output_weights"),
    ("projection_weights", "projection_bias"),
    ("input_layer_norm_weights", "forget_layer_norm_weights", "cell_layer_norm_weights",
     "output_layer_norm_weights"),
)


def _split(name: str) -> tuple[str, str]:
    for prefix in ("fw_", "bw_"):
        if name.startswith(prefix):
            return prefix, name[len(prefix):]
    return "", name


def _omitting(use: Use, slots: list[int]) -> TestModel | None:
    model = use.model
    for k in slots:
        model = model and _omit(model, use, k)
    return model


def _optional_swaps(use: Use, key: str):
    """The given slot omitted alone, then with each :data:`OPTIONAL_GROUPS` group holding it,
    then with every other given optional input of the operation; a joint omission comes with
    its control, the others omitted without the slot (the change must not be theirs alone)."""
    found = _matched(use)
    if found is None:
        return
    op, s, ins = found
    name = key[:-len(" given")]
    prefix, base = _split(name)
    given = {a.name: k for k, (a, v) in enumerate(zip(s.inputs, ins)) if a.optional and not v.omitted}
    if name not in given:
        return
    sets = [(f"{name} omitted", [given[name]])]
    sets += [(f"{name} omitted with {'/'.join(g)}", [given[prefix + n] for n in g if prefix + n in given])
             for g in OPTIONAL_GROUPS if base in g]
    sets.append((f"{name} omitted with every other optional input", list(given.values())))
    for desc, slots in sets:
        model = _omitting(use, slots)
        if model is not None:
            rest = [k for k in slots if k != given[name]]
            yield desc, model, (_omitting(use, rest) if rest else None)


_SWAPS = {"enum": _enum_swaps, "quant": _quant_swaps, "optional": _optional_swaps}


def swaps(cell: axes.Cell, use: Use, force: bool = False):
    """(description, swapped model, control) for every swap of ``cell`` in ``use`` (none if
    the cell has no swap, see :func:`swappable`, unless ``force``: the declared invariances
    are then tried too, which is how tests check them); ``control`` is None, or the same
    change without the cell's own: the swap counts only if its outputs differ from the
    control's too (:func:`differs`)."""
    op = _subgraph(use.model, use.subgraph).operations[use.operation].type
    if swappable(op, cell) or (force and cell.axis in _SWAPS):
        yield from _SWAPS[cell.axis](use, cell.key)


# --- the analysis -----------------------------------------------------------------------

class Analysis:
    """Effect of cells over recorded uses (``scan.Hits.uses``), memoising baseline runs per
    model and results per (test id, subgraph, operation, cell key)."""

    def __init__(self) -> None:
        self._baseline: dict[int, bool] = {}
        self._decides: dict[tuple, str] = {}
        self.runs = 0

    def _passes(self, tm: TestModel) -> bool:
        ok = self._baseline.get(id(tm))
        if ok is None:
            self.runs += 1
            ok = self._baseline[id(tm)] = not tm.expect_failure and outcome(tm, tm) == "pass"
        return ok

    def decisive_swap(self, cell: axes.Cell, use: Use, force: bool = False) -> str:
        """The first swap of ``cell`` in ``use`` that changes an expected output, or ""
        (``force``: as :func:`swaps`)."""
        memo_key = (use.model.test_id, use.subgraph, use.operation, cell.key, force)
        found = self._decides.get(memo_key)
        if found is None:
            found = ""
            if self._passes(use.model):
                for desc, swapped, control in swaps(cell, use, force):
                    self.runs += 1
                    if outcome(loosened(swapped), use.model) == "fail" if control is None \
                            else differs(loosened(swapped), loosened(control), use.model):
                        found = desc
                        break
            self._decides[memo_key] = found
        return found

    def effect(self, op: OperationType, cell: axes.Cell, uses: list[Use]) -> Effect:
        """The :class:`Effect` of ``cell`` of ``op`` over its ``uses`` (corpus uses tried
        first)."""
        reason = no_swap_reason(op, cell)
        if reason or cell.impossible:
            return Effect("no swap", swap=reason)
        ordered = sorted(uses, key=lambda u: u.source != "corpus")
        tried = set()
        for use in ordered:
            tried.add(use.model.test_id)
            desc = self.decisive_swap(cell, use)
            if desc:
                return Effect("decisive", use.source, use.model.test_id, desc, len(tried))
        return Effect("use-only", tried=len(tried))
