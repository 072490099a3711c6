"""Random valid graphs drawn from the operation table (AOSP ``RandomGraphGenerator``'s role).

:func:`generate` builds a graph of ``config.operations`` operations, one at a time: it picks
an operation and a signature the configuration allows (:mod:`harness.graph_configs`), links
input 0 to an earlier output whose type, rank and values fit with probability
:data:`LINK_PROBABILITY` per pair (as AOSP), drafts the rest of the inputs
(:mod:`runtime.ops.generation`: defaults, then the operation's own ``generate``), checks the
draft with the operation's ``validate`` and ``prepare``, picks output quantizations that fit
the computed values, and runs the kernel so later operations see real values. Other data
inputs link to earlier outputs of the same type, dimensions and quantization with the same
probability; unlinked ones become constants with probability 1/2, else model inputs.
Outputs no operation reads become model outputs; expected values come from the reference
executor (:func:`reference_outputs`).

Everything is drawn from ``numpy.random.default_rng(seed)`` mixed with the configuration's
name, so (configuration, seed) names one graph.
"""
from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass

import numpy as np

from runtime import ops
from runtime.errors import HalError, OperationError
from runtime.ops.base import OpContext, OperandView, OperationDef
from runtime.ops.generation import (Draft, Primary, draft, fill, first_tensor, in_range, quant_limits,
                                    variadic_signature)
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import (HAL_VERSION_FEATURE_LEVEL, TestModel, TestOperand, TestOperation,
                                        TestSubgraph)
from runtime.types import (OperandLifeTime as L, OperandType as T, OperationType, is_float_type,
                           is_quantized_type, operand_dtype)

#: Probability that an earlier output and a later input that fit are linked (AOSP: 0.1).
LINK_PROBABILITY = 0.1
#: Probability that an unlinked data input becomes a constant (else a model input).
CONSTANT_PROBABILITY = 0.5
#: Drafts tried for one (operation, signature) before another is picked.
ATTEMPTS = 24
#: Largest element count of any operand (generated or computed), bounding run time.
MAX_OUTPUT_ELEMENTS = 1 << 15


class GenerationError(RuntimeError):
    """The generator could not draft a valid use of an operation (a generator bug or a
    configuration no operation fits)."""


@dataclass(frozen=True)
class Config:
    """What graphs to draw: ``operations`` operations per graph, dimensions up to
    ``max_dim`` (shapes of at most ``max_elements`` elements), uses whose input 0 has a type
    in ``types`` and a rank in ``ranks`` (None: any), of the operations in ``only`` (None:
    every one that has a signature at or below ``feature_level``); ``signature``: with one
    operation in ``only``, just that signature (its index in the operation's table row)."""

    name: str
    operations: int
    max_dim: int
    types: tuple[T, ...] | None = None
    ranks: tuple[int, ...] | None = None
    only: tuple[OperationType, ...] | None = None
    signature: int | None = None
    feature_level: int = 8
    max_elements: int = 2048


def generatable(opdef: OperationDef) -> bool:
    """Whether random graphs draw this operation: every operation but those with random
    outputs (the row's ``nondeterministic``) and those with referenced subgraphs (IF,
    WHILE) unless they declare a ``generate`` of their own."""
    if opdef.nondeterministic:
        return False
    subgraph_slot = any(a.type == T.SUBGRAPH for s in opdef.signatures for a in s.inputs)
    return not subgraph_slot or opdef.generate is not None


def candidates(config: Config) -> list[tuple[OperationDef, int]]:
    """(operation, signature index) pairs ``config`` allows."""
    out = []
    for op_type in config.only or sorted(ops.REGISTRY):
        opdef = ops.REGISTRY[op_type]
        if not generatable(opdef):
            continue
        for i, sig in enumerate(opdef.signatures):
            if config.signature is not None and i != config.signature:
                continue
            if sig.feature_level > config.feature_level:
                continue
            k = first_tensor(sig)
            if config.types is not None and (k is None or sig.inputs[k].type not in config.types):
                continue
            if config.ranks is not None and k is not None and sig.inputs[k].ranks is not None \
                    and not set(sig.inputs[k].ranks) & set(config.ranks):
                continue
            out.append((opdef, i))
    return out


def seed_rng(config_name: str, seed: int) -> np.random.Generator:
    """The random source of graph (``config_name``, ``seed``)."""
    digest = hashlib.sha256(f"{config_name}/{seed}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


@dataclass
class _Operand:
    type: T
    dims: list[int]
    scale: float
    zero_point: int
    lifetime: L
    value: np.ndarray | None
    channel_quant: tuple | None = None
    ignored: bool = False


class _Graph:
    def __init__(self, config: Config, rng: np.random.Generator):
        self.config, self.rng = config, rng
        self.operands: list[_Operand] = []
        self.operations: list[TestOperation] = []
        self.consumed: set[int] = set()

    def add(self, o: _Operand) -> int:
        self.operands.append(o)
        return len(self.operands) - 1

    def outputs_of(self, t: T) -> list[int]:
        return [i for i, o in enumerate(self.operands)
                if o.lifetime == L.TEMPORARY_VARIABLE and o.type == t and not o.ignored]

    def link_for(self, slot, ranks) -> int | None:
        """An earlier output input 0 may take: each fitting pair with LINK_PROBABILITY."""
        for i in self.rng.permutation(self.outputs_of(slot.type)):
            o = self.operands[int(i)]
            if (ranks is None or len(o.dims) in ranks) and (slot.ranks is None or len(o.dims) in slot.ranks) \
                    and self.rng.random() < LINK_PROBABILITY:
                return int(i)
        return None


def _view(slot, value) -> OperandView:
    cq = None
    if slot.channel_quant is not None:
        cq = (np.asarray(slot.channel_quant[0], np.float32), slot.channel_quant[1])
    return OperandView(slot.type, tuple(slot.dims), slot.scale, slot.zero_point,
                       None if slot.omitted else value, slot.omitted, cq)


def _fit_quant(t: T, q: np.ndarray, scale: float, zp: int, rng) -> tuple[float, int, bool]:
    """(scale, zero point, settled) for an output of type ``t`` whose values were ``q``
    under (``scale``, ``zp``): settled when they neither saturate nor collapse."""
    lo, hi = quant_limits(t)
    q = np.asarray(q, np.int64)
    if q.size == 0:
        return scale, zp, True
    saturated = np.mean((q == lo) | (q == hi))
    spread = int(q.max() - q.min())
    real = (q - zp) * scale
    symmetric = t in (T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM)

    def recentred(new_scale: float) -> tuple[float, int, bool]:
        # the zero point moves with the scale, so the values' centre stays mid-range
        centre = 0 if symmetric else int(np.clip(round((lo + hi) / 2 - float(real.mean()) / new_scale), lo, hi))
        return new_scale, centre, False

    if saturated > 0.02:
        return recentred(scale * 16)
    if spread < 4 and q.size > 1 and scale > 1e-4:
        return recentred(scale / 16)
    rmin, rmax = min(float(real.min()), 0.0), max(float(real.max()), 0.0)
    if rmax - rmin <= 0:
        return scale, zp, True
    widen = float(rng.uniform(1.05, 1.4))
    if symmetric:
        new_scale = max(abs(rmin), abs(rmax)) * widen / hi
        return float(np.float32(new_scale)), 0, True
    new_scale = (rmax - rmin) * widen / (hi - lo)
    # the values' range centred in the type's, the widening shared by both ends (so the
    # smallest value is not taken for a saturated one at the next round)
    new_zp = int(np.clip(round((lo + hi) / 2 - (rmin + rmax) / 2 / new_scale), lo, hi))
    return float(np.float32(new_scale)), new_zp, True


class _Rejected(Exception):
    pass


def _start_candidates(out_args, free, q0):
    """(start quantizations of the ``free`` outputs, whether they are NNAPI-fixed ones) to
    try in turn: input 0's; coarser scales centred (an operation may require the output
    scale to exceed a product of input scales, as quantized MUL does before FL3); then
    the quantizations NNAPI fixes for some operations: 1/256 at the type's minimum
    (LOGISTIC, SOFTMAX) and 1/128 centred (TANH, L2_NORMALIZATION)."""
    def each(scale, centred):
        out = {}
        for j in free:
            lo, hi = quant_limits(out_args[j].type)
            symmetric = out_args[j].type in (T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM)
            out[j] = (float(np.float32(scale)), 0 if symmetric else ((lo + hi + 1) // 2 if centred else lo))
        return out

    yield {j: q0 for j in free}, False
    for factor in (16, 256, 4096):
        yield each(q0[0] * factor, True), False
    yield each(1 / 256, False), True
    yield each(1 / 128, True), True


def _run_draft(d: Draft, out_args, values) -> tuple[list, list, list]:
    """Check and run a filled draft: (output shapes, output quantizations, output values);
    raises _Rejected when the operation refuses it or its values are unusable."""
    opdef = d.opdef
    if opdef.variadic_outputs and d.n_outputs:
        out_args = [out_args[0]] * d.n_outputs
    views_in = [_view(s, v) for s, v in zip(d.slots, values)]
    first = first_tensor(d.sig)
    q0 = (d.slots[first].scale, d.slots[first].zero_point) if first is not None else (0.0, 0)
    if not q0[0]:  # input 0 is not quantized: start quantized outputs from scale 1
        q0 = (1.0, 0)
    prov = [OperandView(a.type, (), *(a.fixed_quant or d.out_quant.get(j) or
                                      (q0 if is_quantized_type(a.type) else (0.0, 0))))
            for j, a in enumerate(out_args)]
    ctx = OpContext(opdef.type, views_in, prov)
    try:
        with np.errstate(all="ignore"):
            shapes = [tuple(int(x) for x in s) for s in opdef.prepare(ctx)]
    except (OperationError, ValueError, IndexError, TypeError, ZeroDivisionError) as e:
        raise _Rejected(f"prepare: {e}") from None
    if opdef.variadic_outputs:
        out_args = [out_args[0]] * len(shapes)
    if len(shapes) != len(out_args):
        raise _Rejected("output count")
    for s in shapes:
        if any(x < 1 for x in s) or int(np.prod(s, dtype=np.int64)) > MAX_OUTPUT_ELEMENTS:
            raise _Rejected(f"output shape {s}")
    outs = [OperandView(a.type, s, *(a.fixed_quant or d.out_quant.get(j) or
                                     (q0 if is_quantized_type(a.type) else (0.0, 0))))
            for j, (a, s) in enumerate(zip(out_args, shapes))]

    def run():
        c = OpContext(opdef.type, views_in, outs)
        try:
            if opdef.validate is not None:
                opdef.validate(OpContext(opdef.type, views_in, outs))
            opdef.prepare(c)
            with np.errstate(all="ignore"):
                return [np.asarray(r) for r in opdef.execute(c)]
        except (OperationError, ValueError, IndexError, TypeError, ZeroDivisionError) as e:
            raise _Rejected(f"execute: {e}") from None

    free = [j for j, a in enumerate(out_args)
            if is_quantized_type(a.type) and not a.fixed_quant and j not in d.out_quant]
    results = None
    for start, fixed in _start_candidates(out_args, free, q0):
        for j, q in start.items():
            outs[j].scale, outs[j].zero_point = q
        try:
            results = run()
        except _Rejected:
            continue
        if fixed:  # the operation fixes these quantizations (LOGISTIC, TANH ...): keep them
            free = []
        break
    if results is None:
        raise _Rejected("no output quantization is accepted")
    for j in free:
        good = (outs[j].scale, outs[j].zero_point, results)
        settled_runs = 0
        for _ in range(10):
            scale, zp, settled = _fit_quant(out_args[j].type, results[j], outs[j].scale, outs[j].zero_point, d.rng)
            outs[j].scale, outs[j].zero_point = scale, zp
            try:
                results = run()
            except _Rejected:  # refused (e.g. a scale the operation forbids): keep the last good one
                break
            good = (scale, zp, results)
            settled_runs = settled_runs + 1 if settled else 0
            if settled_runs == 2:  # fitted twice: the second from precise values
                break
        outs[j].scale, outs[j].zero_point, results = good
    for r, a in zip(results, out_args):
        if is_float_type(a.type) and not np.all(np.isfinite(np.asarray(r, np.float64))):
            raise _Rejected("non-finite output")
    return shapes, [(o.scale, o.zero_point) for o in outs], results, out_args


def _draw_operation(g: _Graph, opdef: OperationDef, sig_index: int) -> str | None:
    """Add one use of ``opdef`` (signature ``sig_index``) to ``g``; returns None, or why
    every attempt was refused."""
    c, rng = g.config, g.rng
    base = opdef.signatures[sig_index]
    why = ""
    for _ in range(ATTEMPTS):
        sig = variadic_signature(opdef, sig_index, 1 + int(rng.integers(3))) if opdef.variadic else base
        first = first_tensor(sig)
        link = g.link_for(sig.inputs[first], c.ranks) if first is not None else None
        primary = None
        if link is not None:
            o = g.operands[link]
            primary = Primary(o.type, list(o.dims), o.scale, o.zero_point, o.value)
        d = draft(opdef, sig, rng, c.max_dim, c.max_elements, c.ranks, primary)
        links: dict[int, int] = {}
        values = []
        for k, s in enumerate(d.slots):
            if s.omitted:
                values.append(None)
            elif s.value is not None:
                values.append(s.value)
            elif k == first and link is not None and s.dims == primary.dims and s.type == primary.type \
                    and (s.scale, s.zero_point) == (primary.scale, primary.zero_point) \
                    and in_range(s, primary.value):
                links[k] = link
                values.append(primary.value)
            else:
                values.append(fill(d, s))
        # other data slots: link to an earlier output that fits exactly
        for k, s in enumerate(d.slots):
            if k in links or s.omitted or s.value is not None or not s.linkable or not s.is_tensor:
                continue
            for i in g.outputs_of(s.type):
                o = g.operands[i]
                if o.dims == s.dims and (o.scale, o.zero_point) == (s.scale, s.zero_point) \
                        and o.channel_quant is None and s.channel_quant is None \
                        and in_range(s, o.value) and rng.random() < LINK_PROBABILITY:
                    links[k], values[k] = i, o.value
                    break
        try:
            shapes, quants, results, out_args = _run_draft(d, list(sig.outputs), values)
        except _Rejected as e:
            why = str(e)
            continue
        ins = []
        for k, (s, v) in enumerate(zip(d.slots, values)):
            if k in links:
                ins.append(links[k])
                g.consumed.add(links[k])
            elif s.omitted:  # a quantized type keeps a valid scale even when omitted
                quant = (s.scale or 1.0, s.zero_point) if is_quantized_type(s.type) else (0.0, 0)
                ins.append(g.add(_Operand(s.type, [], *quant, L.NO_VALUE, None)))
            else:
                constant = s.value is not None or not s.is_tensor or rng.random() < CONSTANT_PROBABILITY
                ins.append(g.add(_Operand(s.type, list(s.dims), s.scale, s.zero_point,
                                          L.CONSTANT_COPY if constant else L.SUBGRAPH_INPUT, v, s.channel_quant)))
        outs = [g.add(_Operand(a.type, list(shape), q[0], q[1], L.TEMPORARY_VARIABLE, np.asarray(r),
                               ignored=j in d.ignored_outputs))
                for j, (a, shape, q, r) in enumerate(zip(out_args, shapes, quants, results))]
        g.operations.append(TestOperation(opdef.type, ins, outs))
        return None
    return why or "no attempt"


def _test_model(g: _Graph, name: str, spec: str) -> TestModel:
    operands, inputs, outputs = [], [], []
    consumers = [0] * len(g.operands)
    for op in g.operations:
        for i in op.inputs:
            consumers[i] += 1
    for i, o in enumerate(g.operands):
        lifetime = o.lifetime
        if lifetime == L.TEMPORARY_VARIABLE and consumers[i] == 0:
            lifetime = L.SUBGRAPH_OUTPUT
            outputs.append(i)
        elif lifetime == L.SUBGRAPH_INPUT:
            inputs.append(i)
        data = None if lifetime in (L.TEMPORARY_VARIABLE, L.NO_VALUE) else o.value
        if data is not None:
            data = np.asarray(data, operand_dtype(o.type)).reshape(o.dims) if o.dims else \
                np.asarray(data, operand_dtype(o.type)).reshape(())
        operands.append(TestOperand(o.type, list(o.dims), float(np.float32(o.scale)), int(o.zero_point),
                                    lifetime, consumers[i], o.ignored, o.channel_quant, data))
    main = TestSubgraph(operands, list(g.operations), inputs, outputs)
    return TestModel(name, spec, "RANDOM_GRAPH", "UNKNOWN", False, False, 0.0, main)


def generate(config: Config, seed: int, criteria: str = "") -> TestModel:
    """Graph (``config``, ``seed``) as a test model (corpus schema; test id
    ``RANDOM_GRAPH/<config>/<seed>``) whose model outputs hold the reference executor's
    values, judged with the aggregate criteria set named ``criteria``
    (:data:`runtime.testing.criteria.CRITERIA`). Raises GenerationError when no operation
    could be drafted."""
    rng = seed_rng(config.name, seed)
    pairs = candidates(config)
    if not pairs:
        raise GenerationError(f"configuration {config.name}: no operation signature fits")
    g = _Graph(config, rng)
    failures = []
    while len(g.operations) < config.operations:
        opdef, sig_index = pairs[int(rng.integers(len(pairs)))]
        why = _draw_operation(g, opdef, sig_index)
        if why is not None:
            failures.append(f"{opdef.type.name} {opdef.signatures[sig_index].describe()}: {why}")
            if len(failures) >= (3 if len(pairs) == 1 else 4 * config.operations):
                raise GenerationError(f"configuration {config.name} seed {seed}: could not draft "
                                      f"{failures[-1]}")
    tm = _test_model(g, str(seed), config.name)
    tm.criteria = criteria
    return with_reference_outputs(tm)


def _resolve_shapes(tm: TestModel) -> None:
    """Declare the actual dimensions of every temporary and output of ``tm`` that has an
    unknown one (0), as the reference executor infers them."""
    from runtime.executor import execute
    from runtime.testing.hal_convert import to_hal_request
    sg = tm.main
    if not any(0 in o.dimensions for o in sg.operands
               if o.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)):
        return
    probe = copy.deepcopy(tm)
    temps = [i for i, o in enumerate(probe.main.operands) if o.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)]
    for i in temps:
        o = probe.main.operands[i]
        o.lifetime, o.data = L.SUBGRAPH_OUTPUT, np.zeros(MAX_OUTPUT_ELEMENTS, operand_dtype(o.type))
    probe.main.output_indexes = temps
    try:
        shapes = execute(to_hal_model(probe), to_hal_request(probe))
    except HalError as e:
        raise GenerationError(f"{tm.spec}/{tm.name}: the reference refuses the graph: {e}") from None
    for i, shape in zip(temps, shapes):
        sg.operands[i].dimensions = list(shape.dimensions)


#: Feature level -> the corpus schema's ``min_supported_version`` name.
FEATURE_LEVEL_HAL_VERSION = {level: name for name, level in HAL_VERSION_FEATURE_LEVEL.items() if level}


def with_reference_outputs(tm: TestModel) -> TestModel:
    """``tm`` with every main output's data set to the reference executor's values (its
    dimensions too) and ``min_supported_version`` the feature level its operations need.
    Raises GenerationError when the reference refuses the model."""
    from runtime.executor import execute
    from runtime.hal.validate import validate_model
    from runtime.testing.hal_convert import read_outputs, to_hal_request
    _resolve_shapes(tm)
    for idx in tm.main.output_indexes:
        o = tm.main.operands[idx]
        o.data = np.zeros(o.dimensions or (), operand_dtype(o.type))
    model = to_hal_model(tm)
    try:
        level = validate_model(model).model_level
        tm.min_supported_version = FEATURE_LEVEL_HAL_VERSION.get(level, "UNKNOWN")
        request = to_hal_request(tm)
        shapes = execute(model, request)
    except HalError as e:
        raise GenerationError(f"{tm.spec}/{tm.name}: the reference refuses the graph: {e}") from None
    for idx, value in zip(tm.main.output_indexes, read_outputs(tm, request, shapes)):
        tm.main.operands[idx].data = np.array(value)
    return tm
