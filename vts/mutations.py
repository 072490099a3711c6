"""Mutations of valid HAL models and requests into invalid ones: the VTS validation tests
(AOSP ``neuralnetworks/1.3/vts/functional/ValidateModel.cpp`` / ``ValidateRequest.cpp`` and
their AIDL successors in ``neuralnetworks/aidl/vts/functional``), re-stated for nncts.

Every mutation kind is a :class:`MutationKind`: call it on a valid HAL model (or request)
to get its mutants, each applied to a fresh copy of the original. The kinds apply "where
it makes sense", with AOSP's rules of where (which operands, which operations, which
values), and every mutant they make breaks one rule of the HAL, so a driver must reject it
with ``INVALID_ARGUMENT``:

* model kinds (20) yield :class:`ModelMutant` ``(description, model, preference,
  priority)`` with the default preference and priority; the VTS passes each mutant to
  ``IDevice.get_supported_operations`` and ``IDevice.prepare_model``;
* prepare-argument kinds (2: ``invalid_execution_preference``, ``invalid_priority``)
  yield the unchanged model with an invalid preference or priority; only
  ``prepare_model`` takes those;
* request kinds (2) yield ``(description, request)`` for a prepared model's execution
  paths.

Beyond AOSP, mutants keep ``numberOfConsumers`` consistent with the operations (as the
HAL 1.3 VTS does where it edits operation inputs), so each mutant is invalid for the
reason its kind names, and no mutant breaks a rule of another kind by accident.

The model kinds apply to every subgraph: the main subgraph and each referenced subgraph
(HAL 1.3 ``Model.referenced``, the subgraphs IF and WHILE run), since the HAL rules hold in
every subgraph (AOSP ``common/types/src/Validation.cpp`` ``validateModel`` runs
``validateModelSubgraph`` on main, then on each referenced subgraph). AOSP's VTS mutates
``model.main`` only, so a driver validating only main passes it; nncts does not. A site
names its subgraph (``(None, place)`` for main, ``(r, place)`` for referenced subgraph
``r``); a mutant of a referenced subgraph says so (``referenced subgraph 1 operand 2 ...``),
one of main keeps AOSP's wording (``operand 2 ...``). Every mutant of a referenced subgraph
is invalid for the same reason as its main-subgraph twin (the kinds' skips read the
subgraph the site is in); changing a referenced subgraph's inputs or outputs may also break
the IF/WHILE rules of the operation that runs it, which only adds a reason.

``kind(model, limit=N)`` caps the mutants at ``N``, chosen deterministically and spread
evenly over the places the kind applies to (in every subgraph, main first);
:meth:`MutationKind.sites` lists those places cheaply (without copying the model).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable, Iterator, NamedTuple

from runtime import ops
from runtime.extensions import is_extension_type
from runtime.hal.types import (DataLocation, ExtensionNameAndPrefix, Model, Operand, Operation,
                               Request, RequestArgument, Subgraph, SymmPerChannelQuantParams)
from runtime.hal.validate import operand_byte_size
from runtime.types import (OperandLifeTime, OperandType, OperationType, PreferenceCode,
                           PriorityCode, is_tensor_type)

__all__ = ["MutationKind", "ModelMutant", "MODEL_KINDS", "REQUEST_KINDS", "KINDS",
           "clone_model", "clone_request", "spread", "count_consumers"]

L = OperandLifeTime
T = OperandType
OT = OperationType

#: An extension type code whose prefix (0x7FFE) no test model declares in
#: extensionNameToPrefix, so it names no known extension.
UNDECLARED_EXTENSION_CODE = (0x7FFE << 16) | 0x0001
#: Invalid operand type codes: below the first code, past the last code, and an
#: extension code with an undeclared prefix (AOSP ``invalidOperandTypes``: -1 and
#: last + 1; HAL 1.3 also tried codes outside every range).
INVALID_OPERAND_TYPES = (-1, max(OperandType) + 1, UNDECLARED_EXTENSION_CODE)
#: Invalid operation type codes (AOSP ``invalidOperationTypes``, same idea).
INVALID_OPERATION_TYPES = (-1, max(OperationType) + 1, UNDECLARED_EXTENSION_CODE)
#: AOSP ``invalidExecutionPreferences``: one below LOW_POWER, one above SUSTAINED_SPEED.
INVALID_PREFERENCES = (PreferenceCode.LOW_POWER - 1, PreferenceCode.SUSTAINED_SPEED + 1)
#: AOSP ``invalidPriorities``: one below LOW, one above HIGH.
INVALID_PRIORITIES = (PriorityCode.LOW - 1, PriorityCode.HIGH + 1)
#: Largest operand AOSP turns into a CONSTANT_COPY (half the binder transaction buffer).
MAX_CONSTANT_COPY_BYTES = 512 * 1024

_SCALAR_TYPES = (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL)
_BASE_TYPES = tuple(OperandType)  # every code once (SUBGRAPH is an alias of MODEL)


class ModelMutant(NamedTuple):
    """A mutated model with the preference and priority to prepare it with."""

    description: str
    model: Model
    preference: int = PreferenceCode.FAST_SINGLE_ANSWER
    priority: int = PriorityCode.MEDIUM


# --- copies -------------------------------------------------------------------------


def _clone_operand(o: Operand) -> Operand:
    ep = o.extra_params
    if isinstance(ep, SymmPerChannelQuantParams):
        ep = SymmPerChannelQuantParams(tuple(ep.scales), ep.channel_dim)
    elif isinstance(ep, bytearray):
        ep = bytes(ep)
    loc = o.location
    return Operand(o.type, list(o.dimensions), o.number_of_consumers, o.scale, o.zero_point,
                   o.lifetime, DataLocation(loc.pool_index, loc.offset, loc.length, loc.padding), ep)


def _clone_subgraph(sg: Subgraph) -> Subgraph:
    return Subgraph([_clone_operand(o) for o in sg.operands],
                    [Operation(op.type, list(op.inputs), list(op.outputs)) for op in sg.operations],
                    list(sg.input_indexes), list(sg.output_indexes))


def clone_model(model: Model) -> Model:
    """A deep copy of ``model`` (pools too: a driver may not touch the original)."""
    return Model(_clone_subgraph(model.main), [_clone_subgraph(s) for s in model.referenced],
                 bytes(model.operand_values), [copy.deepcopy(p) for p in model.pools],
                 model.relax_computation_float32_to_float16,
                 [ExtensionNameAndPrefix(e.name, e.prefix) for e in model.extension_name_to_prefix])


def clone_request(request: Request) -> Request:
    """A deep copy of ``request`` (pools too)."""
    def arg(a: RequestArgument) -> RequestArgument:
        loc = a.location
        return RequestArgument(a.has_no_value, DataLocation(loc.pool_index, loc.offset, loc.length,
                                                            loc.padding), list(a.dimensions))
    return Request([arg(a) for a in request.inputs], [arg(a) for a in request.outputs],
                   [copy.deepcopy(p) for p in request.pools])


def spread(items: list, limit: int | None) -> list:
    """``items``, or ``limit`` of them evenly spread (first and last included) when there
    are more: a deterministic cap."""
    if limit is None or limit <= 0 or len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[0]]
    picks = sorted({round(i * (len(items) - 1) / (limit - 1)) for i in range(limit)})
    return [items[i] for i in picks]


def count_consumers(sg: Subgraph) -> list[int]:
    """How many operation inputs read each operand (out-of-range indexes ignored)."""
    n = len(sg.operands)
    counts = [0] * n
    for op in sg.operations:
        for i in op.inputs:
            if 0 <= i < n:
                counts[i] += 1
    return counts


def _used_operands(sg: Subgraph) -> set[int]:
    return {i for op in sg.operations for i in (*op.inputs, *op.outputs)}


def _size_of(o: Operand) -> int:
    """Bytes of operand ``o`` (0: unknown, an extension or not a sized type)."""
    if is_extension_type(o.type) or o.type == T.SUBGRAPH:
        return 0
    try:
        t = OperandType(o.type)
    except ValueError:
        return 0
    if is_tensor_type(t) and (not o.dimensions or 0 in o.dimensions):
        return 0
    return operand_byte_size(t, o.dimensions)


def _become_constant_copy(model: Model, operand: Operand, size: int) -> None:
    """AOSP ``becomeConstantCopy``: the operand's value is the first ``size`` bytes of
    operandValues (grown with zeros when shorter)."""
    operand.lifetime = L.CONSTANT_COPY
    operand.location = DataLocation(0, 0, size)
    if len(model.operand_values) < size:
        model.operand_values = bytes(model.operand_values) + bytes(size - len(model.operand_values))


# --- the kinds ----------------------------------------------------------------------


@dataclass(frozen=True)
class MutationKind:
    """One kind of mutation: ``sites(subject)`` lists where it applies, ``apply(subject,
    site)`` makes the mutant of one site from a copy. Calling the kind yields the mutants
    (all, or ``limit`` spread over the sites)."""

    name: str
    target: str  # "model", "prepare" (prepare_model arguments) or "request"
    aosp: str  # the AOSP VTS function the kind follows
    sites: Callable = field(repr=False)
    apply: Callable = field(repr=False)
    doc: str = field(default="", repr=False)

    def __call__(self, subject, limit: int | None = None) -> Iterator:
        for site in spread(self.sites(subject), limit):
            yield self.apply(subject, site)

    @property
    def checks_supported_operations(self) -> bool:
        """Whether the VTS also expects get_supported_operations to reject the mutant
        (not for invalid prepare arguments, which that call does not take)."""
        return self.target == "model"

    def __repr__(self) -> str:
        return f"<MutationKind {self.name}>"


MODEL_KINDS: dict[str, MutationKind] = {}
REQUEST_KINDS: dict[str, MutationKind] = {}
KINDS: dict[str, MutationKind] = {}


def _subgraphs(model: Model) -> list[tuple[int | None, Subgraph]]:
    """``(None, main)``, then ``(r, referenced subgraph r)`` for each referenced subgraph."""
    return [(None, model.main), *enumerate(model.referenced)]


def _in_every_subgraph(sites_of: Callable[[Subgraph], list]) -> Callable[[Model], list]:
    """A model kind's sites from ``sites_of(subgraph)``, its places in one subgraph: each
    place as ``(g, place)``, ``g`` None for main or the referenced subgraph's index."""
    def sites(model: Model) -> list:
        return [(g, place) for g, sg in _subgraphs(model) for place in sites_of(sg)]
    return sites


def _copy_at(model: Model, site) -> tuple[Model, Subgraph, object, str]:
    """For a model kind's mutant of ``site``: a copy of ``model``, the subgraph the site
    names (in the copy), the place within it, and the subgraph's name for the description
    (``""`` for main, AOSP's wording; ``"referenced subgraph R "`` otherwise)."""
    g, place = site
    m = clone_model(model)
    if g is None:
        return m, m.main, place, ""
    return m, m.referenced[g], place, f"referenced subgraph {g} "


def _kind(name: str, target: str, aosp: str, sites: Callable):
    """Register a kind. A model kind's ``sites`` takes one subgraph (every subgraph of the
    model is searched, see :func:`_in_every_subgraph`) and its ``apply`` gets the subgraph
    from the site with :func:`_copy_at`; other kinds' ``sites`` take the whole subject."""
    if target == "model":
        sites = _in_every_subgraph(sites)

    def register(apply: Callable) -> MutationKind:
        kind = MutationKind(name, target, aosp, sites, apply, apply.__doc__ or "")
        (REQUEST_KINDS if target == "request" else MODEL_KINDS)[name] = kind
        KINDS[name] = kind
        globals()[name] = kind  # vts.mutations.<name>(model) yields the mutants
        return kind
    return register


# 1. execution order ------------------------------------------------------------------

def _execution_order_sites(sg: Subgraph) -> list:
    consumers = count_consumers(sg)
    sites = []
    for k, op in enumerate(sg.operations):
        if any(sg.operands[i].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT) for i in op.inputs):
            sites.append(("reader", k))
        if any(consumers[i] > 0 for i in op.outputs):
            sites.append(("writer", k))
    return sites


@_kind("execution_order", "model", "mutateExecutionOrderTest", _execution_order_sites)
def _execution_order(model: Model, site) -> ModelMutant:
    """AOSP ``mutateExecutionOrderTest``. An operation reading an operand that another
    operation writes moves to the front of the operation list (it now reads the operand
    before it is written); an operation writing an operand others read moves to the end
    (it now writes the operand after it is read).

    HAL rule broken: operations are listed in execution order, every operation input is
    known (a constant, a model input or written by an earlier operation) when it runs."""
    m, sg, (role, k), at = _copy_at(model, site)
    ops_ = sg.operations
    moved = ops_.pop(k)
    if role == "reader":
        ops_.insert(0, moved)
    else:
        ops_.append(moved)
    where = "first" if role == "reader" else "last"
    return ModelMutant(f"execution_order: {at}operation {k} (a {role}) moved {where}", m)


# 2. operand type ---------------------------------------------------------------------

def _operand_type_sites(sg: Subgraph) -> list:
    return [(i, code) for i in range(len(sg.operands)) for code in INVALID_OPERAND_TYPES]


@_kind("operand_type", "model", "mutateOperandTypeTest", _operand_type_sites)
def _operand_type(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandTypeTest``. Each operand's type becomes an invalid code: -1,
    one past the last OperandType, and an extension type whose prefix the model's
    extensionNameToPrefix does not declare.

    HAL rule broken: an operand type is an OperandType value or an extension type of a
    declared extension."""
    m, sg, (i, code), at = _copy_at(model, site)
    sg.operands[i].type = code
    return ModelMutant(f"operand_type: {at}operand {i} set to type {code:#x}" if code >= 0
                       else f"operand_type: {at}operand {i} set to type {code}", m)


# 3. operand rank ---------------------------------------------------------------------

def _slot_ranks(op: Operation, operand_index: int, operand_type) -> tuple[set[int] | None, bool]:
    """(ranks the operation's signatures allow for ``operand_index`` in ``op``, found):
    None for any rank; ``found`` is False when no signature has a slot of that type."""
    opdef = ops.get(op.type) if not is_extension_type(op.type) else None
    if opdef is None:
        return None, False
    allowed: set[int] = set()
    found = False
    for sig in opdef.signatures_for(len(op.inputs), len(op.outputs)):
        if len(sig.inputs) != len(op.inputs) or len(sig.outputs) != len(op.outputs):
            continue
        slots = [a for a, i in zip(sig.inputs, op.inputs) if i == operand_index] + \
                [a for a, i in zip(sig.outputs, op.outputs) if i == operand_index]
        for arg in slots:
            if arg.type != operand_type:
                continue
            found = True
            if arg.ranks is None or arg.optional:
                return None, True
            allowed.update(arg.ranks)
    return allowed, found


def _wrong_rank(rank: int, allowed: set[int]) -> int | None:
    for r in (rank + 1, rank - 1, rank + 2, rank - 2, rank + 3, rank - 3):
        if 1 <= r <= 8 and r not in allowed:
            return r
    return None


def _reshaped(dims: list[int], rank: int) -> list[int]:
    """``dims`` at ``rank`` with the same element count: leading 1s added, or leading
    dimensions merged."""
    if rank >= len(dims):
        return [1] * (rank - len(dims)) + list(dims)
    k = len(dims) - rank + 1
    return [math.prod(dims[:k])] + list(dims[k:])


def _operand_rank_sites(sg: Subgraph) -> list:
    sites = []
    for i, o in enumerate(sg.operands):
        if is_extension_type(o.type):
            continue
        if o.type in _SCALAR_TYPES:
            sites.append((i, [0]))  # AOSP getInvalidRank: a scalar given rank 1
            continue
        if not is_tensor_type(o.type) or not o.dimensions or o.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            continue
        for op in sg.operations:
            if i not in op.inputs and i not in op.outputs:
                continue
            allowed, found = _slot_ranks(op, i, o.type)
            if not found or allowed is None:
                continue
            rank = _wrong_rank(len(o.dimensions), allowed)
            if rank is not None:
                sites.append((i, _reshaped(o.dimensions, rank)))
                break
    return sites


@_kind("operand_rank", "model", "mutateOperandRankTest", _operand_rank_sites)
def _operand_rank(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandRankTest``: a scalar operand (FLOAT16, FLOAT32, INT32, UINT32,
    BOOL) is given dimensions ``[0]`` (rank 1). nncts adds: a tensor operand that an
    operation constrains in rank (every signature of the operation table for that slot
    lists its ranks) is reshaped to a rank none of them allows, keeping its element count
    (so a constant keeps its size and only the rank is wrong).

    HAL rules broken: a scalar has no dimensions; an operation's operands have the ranks
    the operation accepts."""
    m, sg, (i, dims), at = _copy_at(model, site)
    old = sg.operands[i].dimensions
    sg.operands[i].dimensions = list(dims)
    return ModelMutant(f"operand_rank: {at}operand {i} dimensions {old} -> {list(dims)} "
                       f"(rank {len(dims)})", m)


# 4. operand scale --------------------------------------------------------------------

def _invalid_scale(t) -> float:
    """AOSP ``getInvalidScale``: 1 where the scale must be 0, -1 where it must be >= 0,
    0 where it must be > 0."""
    if t in (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.TENSOR_BOOL8, T.TENSOR_FLOAT16,
             T.TENSOR_FLOAT32, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.SUBGRAPH):
        return 1.0
    if t == T.TENSOR_INT32:
        return -1.0
    return 0.0  # quantized types


def _operand_scale_sites(sg: Subgraph) -> list:
    return [(i, _invalid_scale(o.type)) for i, o in enumerate(sg.operands)
            if not is_extension_type(o.type)]


@_kind("operand_scale", "model", "mutateOperandScaleTest", _operand_scale_sites)
def _operand_scale(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandScaleTest`` / ``getInvalidScale``: each operand's scale becomes
    invalid for its type: 1.0 for the float, bool, integer scalar, SUBGRAPH and
    per-channel types (scale must be 0), -1.0 for TENSOR_INT32 (must be >= 0), 0.0 for
    the quantized types (must be > 0).

    HAL rule broken: ``Operand.scale`` per type (AOSP ``validateOperandScale``)."""
    m, sg, (i, scale), at = _copy_at(model, site)
    sg.operands[i].scale = scale
    return ModelMutant(f"operand_scale: {at}operand {i} has scale {scale}", m)


# 5. operand zero point ---------------------------------------------------------------

def _invalid_zero_points(t) -> tuple[int, ...]:
    """AOSP ``getInvalidZeroPoints``, plus out-of-range values for
    TENSOR_QUANT8_ASYMM_SIGNED (AOSP lists none for it)."""
    if t in (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.TENSOR_BOOL8, T.TENSOR_FLOAT16,
             T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.SUBGRAPH):
        return (1,)
    return {T.TENSOR_QUANT8_ASYMM: (-1, 256),
            T.TENSOR_QUANT8_SYMM: (-129, -1, 1, 128),
            T.TENSOR_QUANT16_ASYMM: (-1, 65536),
            T.TENSOR_QUANT16_SYMM: (-32769, -1, 1, 32768),
            T.TENSOR_QUANT8_ASYMM_SIGNED: (-129, 128)}.get(t, ())


def _operand_zero_point_sites(sg: Subgraph) -> list:
    return [(i, zp) for i, o in enumerate(sg.operands) if not is_extension_type(o.type)
            for zp in _invalid_zero_points(o.type)]


@_kind("operand_zero_point", "model", "mutateOperandZeroPointTest", _operand_zero_point_sites)
def _operand_zero_point(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandZeroPointTest`` / ``getInvalidZeroPoints``: each operand's
    zeroPoint becomes invalid for its type: 1 where it must be 0 (non-quantized types,
    TENSOR_INT32, per-channel), -1 and 256 for TENSOR_QUANT8_ASYMM, -1 and 65536 for
    TENSOR_QUANT16_ASYMM, -129/-1/1/128 and -32769/-1/1/32768 for the symmetric 8/16-bit
    types (must be 0), -129 and 128 for TENSOR_QUANT8_ASYMM_SIGNED (nncts addition).

    HAL rule broken: ``Operand.zeroPoint`` per type (AOSP ``validateOperandZeroPoint``)."""
    m, sg, (i, zp), at = _copy_at(model, site)
    sg.operands[i].zero_point = zp
    return ModelMutant(f"operand_zero_point: {at}operand {i} has zeroPoint {zp}", m)


# 6. operand lifetime -----------------------------------------------------------------

def _invalid_lifetimes(o: Operand) -> list:
    """AOSP ``getInvalidLifeTimes``: flip whether the operand should have a writer."""
    if o.lifetime in (L.SUBGRAPH_OUTPUT, L.TEMPORARY_VARIABLE):
        out = [L.SUBGRAPH_INPUT, L.CONSTANT_COPY]
    elif o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_INPUT):
        out = [L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT]
    else:  # NO_VALUE, SUBGRAPH: not enough information to pick an invalid one
        return []
    size = _size_of(o)
    if not size or size > MAX_CONSTANT_COPY_BYTES:
        out = [lt for lt in out if lt != L.CONSTANT_COPY]
    return out


def _operand_lifetime_sites(sg: Subgraph) -> list:
    return [(i, lt) for i, o in enumerate(sg.operands) if not is_extension_type(o.type)
            for lt in _invalid_lifetimes(o)]


@_kind("operand_lifetime", "model", "mutateOperandLifeTimeTest", _operand_lifetime_sites)
def _operand_lifetime(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandLifeTimeTest``: an operand written by an operation
    (TEMPORARY_VARIABLE, SUBGRAPH_OUTPUT) becomes SUBGRAPH_INPUT or CONSTANT_COPY (when
    its size is known); an operand with a value before execution (CONSTANT_COPY,
    CONSTANT_REFERENCE, SUBGRAPH_INPUT) becomes TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT.
    The subgraph's input/output index lists follow the new lifetime.

    HAL rule broken: an operand has exactly one source of value: written by one operation
    iff its lifetime is TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT."""
    m, sg, (i, lifetime), at = _copy_at(model, site)
    o = sg.operands[i]
    old = L(o.lifetime)
    if o.lifetime == L.SUBGRAPH_INPUT:
        sg.input_indexes = [x for x in sg.input_indexes if x != i]
    elif o.lifetime == L.SUBGRAPH_OUTPUT:
        sg.output_indexes = [x for x in sg.output_indexes if x != i]
    o.lifetime = lifetime
    o.location = DataLocation()
    if lifetime == L.CONSTANT_COPY:
        _become_constant_copy(m, o, _size_of(o))
    elif lifetime == L.SUBGRAPH_INPUT:
        sg.input_indexes.append(i)
    elif lifetime == L.SUBGRAPH_OUTPUT:
        sg.output_indexes.append(i)
    return ModelMutant(f"operand_lifetime: {at}operand {i} has lifetime {lifetime.name} instead of "
                       f"{old.name}", m)


# 7. input/output role ----------------------------------------------------------------

def _input_output_lifetime(o: Operand):
    """AOSP ``getInputOutputLifeTime``."""
    if o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
        return L.SUBGRAPH_INPUT
    if o.lifetime == L.SUBGRAPH_INPUT:
        size = _size_of(o)
        return L.CONSTANT_COPY if size and size <= MAX_CONSTANT_COPY_BYTES else None
    if o.lifetime == L.SUBGRAPH_OUTPUT:
        return L.TEMPORARY_VARIABLE
    if o.lifetime == L.TEMPORARY_VARIABLE:
        return L.SUBGRAPH_OUTPUT
    return None


def _input_output_sites(sg: Subgraph) -> list:
    return [(i, lt) for i, o in enumerate(sg.operands) if not is_extension_type(o.type)
            for lt in [_input_output_lifetime(o)] if lt is not None]


@_kind("input_output_role", "model", "mutateOperandInputOutputTest", _input_output_sites)
def _input_output_role(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandInputOutputTest``: an operand's lifetime changes whether it is a
    model input, a model output or neither, keeping whether it has a writer, while the
    subgraph's input/output index lists stay as they were: a constant becomes
    SUBGRAPH_INPUT, a SUBGRAPH_INPUT becomes CONSTANT_COPY (size known), a SUBGRAPH_OUTPUT
    becomes TEMPORARY_VARIABLE, a TEMPORARY_VARIABLE becomes SUBGRAPH_OUTPUT.

    HAL rule broken: the operands with lifetime SUBGRAPH_INPUT / SUBGRAPH_OUTPUT are
    exactly those listed in inputIndexes / outputIndexes."""
    m, sg, (i, lifetime), at = _copy_at(model, site)
    o = sg.operands[i]
    old = L(o.lifetime)
    o.lifetime = lifetime
    o.location = DataLocation()
    if lifetime == L.CONSTANT_COPY:
        _become_constant_copy(m, o, _size_of(o))
    return ModelMutant(f"input_output_role: {at}operand {i} has lifetime {lifetime.name} instead of "
                       f"{old.name}", m)


# 8. numberOfConsumers ----------------------------------------------------------------

def _number_of_consumers_sites(sg: Subgraph) -> list:
    sites = []
    for i, o in enumerate(sg.operands):
        n = o.number_of_consumers
        for wrong in ((1,) if n == 0 else (n - 1, n + 1)):
            sites.append((i, wrong))
    return sites


@_kind("number_of_consumers", "model", "mutateOperandNumberOfConsumersTest (HAL 1.3)",
       _number_of_consumers_sites)
def _number_of_consumers(model: Model, site) -> ModelMutant:
    """HAL 1.3 AOSP ``mutateOperandNumberOfConsumersTest`` / ``getInvalidNumberOfConsumers``:
    each operand's numberOfConsumers becomes 1 when it is 0, else one less and one more.

    HAL rule broken: ``Operand.numberOfConsumers`` equals the number of operation inputs
    that read the operand (HAL 1.0-1.3 ``Operand``)."""
    m, sg, (i, wrong), at = _copy_at(model, site)
    sg.operands[i].number_of_consumers = wrong
    return ModelMutant(f"number_of_consumers: {at}operand {i} numberOfConsumers = {wrong}", m)


# 9. extra writer ---------------------------------------------------------------------

def _operation_output_sites(sg: Subgraph) -> list:
    return [(k, j) for k, op in enumerate(sg.operations) for j in range(len(op.outputs))]


def _as_new_temporary(sg: Subgraph, index: int) -> int:
    """Append a copy of operand ``index`` as a TEMPORARY_VARIABLE nobody reads; its index."""
    o = _clone_operand(sg.operands[index])
    o.lifetime = L.TEMPORARY_VARIABLE
    o.number_of_consumers = 0
    o.location = DataLocation()
    sg.operands.append(o)
    return len(sg.operands) - 1


@_kind("extra_writer", "model", "mutateOperandAddWriterTest", _operation_output_sites)
def _extra_writer(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandAddWriterTest``: a copy of an operation is appended at the end
    of the operation list, writing one of the original's outputs again (its other outputs
    go to new temporaries). Its inputs gain a consumer each.

    HAL rule broken: an operand is written by at most one operation."""
    m, sg, (k, j), at = _copy_at(model, site)
    new = Operation(sg.operations[k].type, list(sg.operations[k].inputs), list(sg.operations[k].outputs))
    for n, idx in enumerate(new.outputs):
        if n != j:
            new.outputs[n] = _as_new_temporary(sg, idx)
    for idx in new.inputs:
        sg.operands[idx].number_of_consumers += 1
    sg.operations.append(new)
    return ModelMutant(f"extra_writer: a copy of {at}operation {k} also writes operand "
                       f"{sg.operations[k].outputs[j]}", m)


# 10. operation operand type ----------------------------------------------------------

def _operand_as(o: Operand, t) -> Operand | None:
    """AOSP ``mutateOperand``: operand ``o`` as type ``t``, adjusted so the operand itself
    stays valid (dimensions, scale, zeroPoint, per-channel parameters; a constant's value
    is then re-located by the caller). None when it cannot be made valid."""
    new = _clone_operand(o)
    new.type = t
    new.extra_params = None
    dims = list(o.dimensions) if o.dimensions else [1]
    if t in _SCALAR_TYPES:
        new.dimensions, new.scale, new.zero_point = [], 0.0, 0
    elif t in (T.TENSOR_BOOL8, T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
        new.dimensions, new.scale, new.zero_point = dims, 0.0, 0
    elif t == T.TENSOR_INT32:
        new.dimensions, new.zero_point = dims, 0
        new.scale = o.scale if o.scale >= 0 else 0.0
    elif t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_ASYMM,
               T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        new.dimensions = dims
        new.scale = o.scale if o.scale > 0 else 1.0
        lo, hi = {T.TENSOR_QUANT8_ASYMM: (0, 255), T.TENSOR_QUANT16_ASYMM: (0, 65535),
                  T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127)}.get(t, (0, 0))
        new.zero_point = min(max(o.zero_point, lo), hi)
    elif t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if dims[0] == 0:
            return None  # no channel count to give scales for
        new.dimensions, new.scale, new.zero_point = dims, 0.0, 0
        new.extra_params = SymmPerChannelQuantParams(tuple([1.0] * dims[0]), 0)
    else:  # SUBGRAPH: only valid with lifetime SUBGRAPH
        return None
    return new


#: Operations with a slot of several types (AOSP ``mutateOperationOperandTypeSkip``).
_FLEXIBLE_OPS = frozenset({OT.LSH_PROJECTION, OT.CAST, OT.ARGMAX, OT.ARGMIN, OT.QUANTIZE,
                           OT.RANDOM_MULTINOMIAL, OT.DEQUANTIZE, OT.TRANSPOSE_CONV_2D,
                           OT.GROUPED_CONV_2D, OT.DEPTHWISE_CONV_2D, OT.CONV_2D,
                           OT.AXIS_ALIGNED_BBOX_TRANSFORM, OT.RANK})


def _operation_operand_type_skip(sg: Subgraph, i: int, t, flexible_ops=None) -> bool:
    """AOSP ``mutateOperationOperandTypeSkip``: slots that accept several types
    (``flexible_ops``: the subgraph's operations of :data:`_FLEXIBLE_OPS`, if known)."""
    if t == sg.operands[i].type:
        return True
    flexible = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                T.TENSOR_QUANT8_ASYMM_SIGNED)
    for op in sg.operations if flexible_ops is None else flexible_ops:
        first_in = op.inputs[0] if op.inputs else None
        first_out = op.outputs[0] if op.outputs else None
        second_in = op.inputs[1] if len(op.inputs) > 1 else None
        if op.type == OT.LSH_PROJECTION and i == second_in:
            return True
        if op.type in (OT.CAST, OT.ARGMAX, OT.ARGMIN) and t in flexible:
            return True
        if op.type == OT.QUANTIZE and ((i == first_in and t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)) or
                                       (i == first_out and t in (T.TENSOR_QUANT8_ASYMM,
                                                                 T.TENSOR_QUANT8_ASYMM_SIGNED))):
            return True
        if op.type == OT.RANDOM_MULTINOMIAL and i == first_in and t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
            return True
        if op.type == OT.DEQUANTIZE and (
                (i == first_in and t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                                         T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL)) or
                (i == first_out and t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32))):
            return True
        if op.type in (OT.TRANSPOSE_CONV_2D, OT.GROUPED_CONV_2D, OT.DEPTHWISE_CONV_2D, OT.CONV_2D) and \
                i == second_in and t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL):
            return True
        if op.type == OT.AXIS_ALIGNED_BBOX_TRANSFORM and i == second_in and \
                t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
            return True
        if op.type == OT.RANK and i == first_in and is_tensor_type(t):
            return True
    return False


def _still_matches(sg: Subgraph, i: int, new: Operand) -> bool:
    """Whether every operation using operand ``i`` still matches a signature of the
    operation table (types, counts, ranks) with operand ``i`` replaced by ``new``: such a
    mutant may be a valid model in another form of the operation (e.g. CONV_2D's BOOL
    layout flag turned INT32 reads as the explicit-padding form), so it is not offered."""
    from runtime.hal.validate import operand_view
    users = [op for op in sg.operations if i in op.inputs or i in op.outputs]
    for op in users:
        opdef = None if is_extension_type(op.type) else ops.get(op.type)
        if opdef is None:
            return False

        def view(k):
            o = new if k == i else sg.operands[k]
            return operand_view(o, None, o.lifetime == L.NO_VALUE)
        if opdef.match([view(k) for k in op.inputs], [view(k) for k in op.outputs]) is None:
            return False
    return bool(users)


def _operation_operand_type_sites(sg: Subgraph) -> list:
    used = _used_operands(sg)
    flexible_ops = [op for op in sg.operations if op.type in _FLEXIBLE_OPS]
    sites = []
    for i, o in enumerate(sg.operands):
        if i not in used or is_extension_type(o.type) or o.lifetime in (L.SUBGRAPH, L.NO_VALUE):
            continue
        for t in _BASE_TYPES:
            if t == T.SUBGRAPH or _operation_operand_type_skip(sg, i, t, flexible_ops):
                continue
            if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and (o.dimensions or [1])[0] == 0:
                continue
            new = _operand_as(o, t)
            if new is not None and _still_matches(sg, i, new):
                continue
            sites.append((i, t))
    return sites


@_kind("operation_operand_type", "model", "mutateOperationOperandTypeTest",
       _operation_operand_type_sites)
def _operation_operand_type(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationOperandTypeTest`` / ``mutateOperand``: an operand that an
    operation reads or writes gets another OperandType, adjusted so the operand itself stays
    valid (dimensions, scale, zeroPoint, per-channel parameters; a constant gets a value of
    the new size at the start of operandValues), except where AOSP's skip list says the slot
    accepts that type (LSH_PROJECTION's hash input, CAST/ARGMAX/ARGMIN, QUANTIZE,
    DEQUANTIZE, RANDOM_MULTINOMIAL, the convolutions' filter, AXIS_ALIGNED_BBOX_TRANSFORM's
    boxes, RANK), and where the mutated operation still matches a signature of the
    operation table (another form of it, as a CONV_2D whose BOOL layout flag turned INT32
    reads as the explicit-padding form). Omitted (NO_VALUE) and unused operands are left
    alone.

    HAL rule broken: each operation's operands have the types one of its signatures
    gives."""
    m, sg, (i, t), at = _copy_at(model, site)
    old = sg.operands[i]
    new = _operand_as(old, t)
    if new.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
        _become_constant_copy(m, new, _size_of(new))
    sg.operands[i] = new
    return ModelMutant(f"operation_operand_type: {at}operand {i} set to type {T(t).name} "
                       f"(was {T(old.type).name})", m)


# 11. operation type ------------------------------------------------------------------

def _operation_type_sites(sg: Subgraph) -> list:
    return [(k, code) for k in range(len(sg.operations)) for code in INVALID_OPERATION_TYPES]


@_kind("operation_type", "model", "mutateOperationTypeTest", _operation_type_sites)
def _operation_type(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationTypeTest``: each operation's type becomes an invalid code: -1,
    one past the last OperationType, and an extension operation of an undeclared prefix.

    HAL rule broken: an operation type is an OperationType value or an operation of a
    declared extension."""
    m, sg, (k, code), at = _copy_at(model, site)
    sg.operations[k].type = code
    return ModelMutant(f"operation_type: {at}operation {k} set to type {code}", m)


# 12-13. operand index out of range ---------------------------------------------------

def _operation_input_sites(sg: Subgraph) -> list:
    return [(k, j) for k, op in enumerate(sg.operations) for j in range(len(op.inputs))]


@_kind("input_index_out_of_range", "model", "mutateOperationInputOperandIndexTest",
       _operation_input_sites)
def _input_index_out_of_range(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationInputOperandIndexTest``: an operation input refers to operand
    ``len(operands)`` (one past the last); the operand it read loses that consumer.

    HAL rule broken: operation inputs are indexes of the subgraph's operands."""
    m, sg, (k, j), at = _copy_at(model, site)
    sg.operands[sg.operations[k].inputs[j]].number_of_consumers -= 1
    sg.operations[k].inputs[j] = len(sg.operands)
    return ModelMutant(f"input_index_out_of_range: {at}operation {k} input {j} = {len(sg.operands)}", m)


@_kind("output_index_out_of_range", "model", "mutateOperationOutputOperandIndexTest",
       _operation_output_sites)
def _output_index_out_of_range(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationOutputOperandIndexTest``: an operation output refers to
    operand ``len(operands)`` (one past the last).

    HAL rule broken: operation outputs are indexes of the subgraph's operands."""
    m, sg, (k, j), at = _copy_at(model, site)
    sg.operations[k].outputs[j] = len(sg.operands)
    return ModelMutant(f"output_index_out_of_range: {at}operation {k} output {j} = {len(sg.operands)}", m)


# 14. removed write -------------------------------------------------------------------

def _removed_write_sites(sg: Subgraph) -> list:
    consumers = count_consumers(sg)
    return [(k, j) for k, op in enumerate(sg.operations)
            for j, idx in enumerate(op.outputs) if consumers[idx] > 0]


@_kind("removed_write", "model", "mutateOperationRemoveWriteTest", _removed_write_sites)
def _removed_write(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationRemoveWriteTest``: an operation output that other operations
    read is redirected to a new temporary (a copy of the operand, nobody reading it), so
    the operand its readers read is never written.

    HAL rule broken: every TEMPORARY_VARIABLE / SUBGRAPH_OUTPUT operand is written by
    exactly one operation (before it is read)."""
    m, sg, (k, j), at = _copy_at(model, site)
    idx = sg.operations[k].outputs[j]
    sg.operations[k].outputs[j] = _as_new_temporary(sg, idx)
    return ModelMutant(f"removed_write: {at}operation {k} no longer writes operand {idx}", m)


# 15. removed operand -----------------------------------------------------------------

_SEQUENCE_OPS = (OT.UNIDIRECTIONAL_SEQUENCE_LSTM, OT.UNIDIRECTIONAL_SEQUENCE_RNN,
                 OT.BIDIRECTIONAL_SEQUENCE_LSTM, OT.BIDIRECTIONAL_SEQUENCE_RNN)


def _removed_operand_sites(sg: Subgraph) -> list:
    consumers = count_consumers(sg)
    skip = {i for op in sg.operations if op.type == OT.SPLIT or op.type in _SEQUENCE_OPS
            for i in op.outputs}
    # nncts: AOSP decrements nothing (its decrement is a no-op), so its mutants also break
    # operand indexes; with real renumbering, removing an operand whose every read is a
    # removable input (removeOperationInputSkip: CONCATENATION's tensors, optional
    # trailing parameters) leaves a valid model, so those operands are skipped too.
    removable = {}
    for op in sg.operations:
        for j, i in enumerate(op.inputs):
            removable[i] = removable.get(i, True) and _remove_input_skip(op, j, sg)
    return [i for i in range(len(sg.operands))
            if consumers[i] > 0 and i not in skip and not removable.get(i, False)]


def _without(indexes: list[int], index: int) -> list[int]:
    """AOSP ``removeValueAndDecrementGreaterValues`` (decrementing for real)."""
    return [i - 1 if i > index else i for i in indexes if i != index]


@_kind("removed_operand", "model", "removeOperandTest", _removed_operand_sites)
def _removed_operand(model: Model, site) -> ModelMutant:
    """AOSP ``removeOperandTest``: an operand some operation reads is deleted from the
    operand list and from every operation and the input/output lists (later indexes shift
    down). Skipped like AOSP: unread operands, outputs of SPLIT and of the sequence
    LSTM/RNN operations (their output counts vary); and operands only read as inputs
    AOSP's ``removeOperationInputSkip`` calls removable.

    HAL rule broken: the operation that read it no longer has the inputs its signature
    needs."""
    m, sg, i, at = _copy_at(model, site)
    del sg.operands[i]
    for op in sg.operations:
        op.inputs, op.outputs = _without(op.inputs, i), _without(op.outputs, i)
    sg.input_indexes, sg.output_indexes = _without(sg.input_indexes, i), _without(sg.output_indexes, i)
    return ModelMutant(f"removed_operand: {at}operand {i} removed", m)


# 16. removed operation ---------------------------------------------------------------

def _operation_sites(sg: Subgraph) -> list:
    return list(range(len(sg.operations)))


@_kind("removed_operation", "model", "removeOperationTest", _operation_sites)
def _removed_operation(model: Model, site) -> ModelMutant:
    """AOSP ``removeOperationTest``: an operation is deleted (its inputs lose a consumer
    each, as HAL 1.3 ``removeOperation`` does).

    HAL rule broken: the operands it wrote are never written."""
    m, sg, k, at = _copy_at(model, site)
    for idx in sg.operations[k].inputs:
        sg.operands[idx].number_of_consumers -= 1
    del sg.operations[k]
    return ModelMutant(f"removed_operation: {at}operation {k} removed", m)


# 17. removed operation input ---------------------------------------------------------

def _matches_without(op: Operation, j: int, sg: Subgraph) -> bool:
    """Whether ``op`` without its input ``j`` still matches a signature of the operation
    table (types, counts, ranks): e.g. one tensor fewer of a variadic PACK."""
    from runtime.hal.validate import operand_view
    opdef = None if is_extension_type(op.type) else ops.get(op.type)
    if opdef is None:
        return False

    def view(k):
        o = sg.operands[k]
        return operand_view(o, None, o.lifetime == L.NO_VALUE)
    ins = [view(k) for n, k in enumerate(op.inputs) if n != j]
    return opdef.match(ins, [view(k) for k in op.outputs]) is not None


def _remove_input_skip(op: Operation, j: int, sg: Subgraph | None = None) -> bool:
    """AOSP ``removeOperationInputSkip``: inputs whose removal leaves a valid operation
    (optional trailing parameters, CONCATENATION's tensors), and, from the operation table,
    any input without which the operation still matches a signature (given ``sg``)."""
    if sg is not None and _matches_without(op, j, sg):
        return True
    n = len(op.inputs)
    t = op.type
    if t == OT.CONCATENATION:
        return n > 2 and j != n - 1
    if t == OT.DEPTHWISE_CONV_2D:
        return (n == 12 and j == 11) or (n == 9 and j == 8)
    if t in (OT.CONV_2D, OT.AVERAGE_POOL_2D, OT.MAX_POOL_2D, OT.L2_POOL_2D):
        return (n == 11 and j == 10) or (n == 8 and j == 7)
    if t == OT.RESIZE_BILINEAR:
        return n >= 4 and j >= 3
    if t == OT.RESIZE_NEAREST_NEIGHBOR:
        return n >= 5 and j >= 3
    if t in (OT.SPACE_TO_DEPTH, OT.DEPTH_TO_SPACE, OT.BATCH_TO_SPACE_ND):
        return n == 3 and j == 2
    if t == OT.SPACE_TO_BATCH_ND:
        return n == 4 and j == 3
    if t == OT.L2_NORMALIZATION:
        return n == 2 and j == 1
    if t == OT.LOCAL_RESPONSE_NORMALIZATION:
        return n == 6 and j == 5
    if t == OT.SOFTMAX:
        return n == 3 and j == 2
    return False


def _removed_operation_input_sites(sg: Subgraph) -> list:
    return [(k, j) for k, op in enumerate(sg.operations) for j in range(len(op.inputs))
            if not _remove_input_skip(op, j, sg)]


@_kind("removed_operation_input", "model", "removeOperationInputTest", _removed_operation_input_sites)
def _removed_operation_input(model: Model, site) -> ModelMutant:
    """AOSP ``removeOperationInputTest``: an input is removed from an operation (the operand
    loses that consumer), except the inputs AOSP's skip list names as removable.

    HAL rule broken: an operation has the number of inputs one of its signatures takes."""
    m, sg, (k, j), at = _copy_at(model, site)
    idx = sg.operations[k].inputs.pop(j)
    sg.operands[idx].number_of_consumers -= 1
    return ModelMutant(f"removed_operation_input: {at}operation {k} input {j} (operand {idx}) removed", m)


# 18. removed operation output --------------------------------------------------------

@_kind("removed_operation_output", "model", "removeOperationOutputTest", _operation_output_sites)
def _removed_operation_output(model: Model, site) -> ModelMutant:
    """AOSP ``removeOperationOutputTest``: an output is removed from an operation.

    HAL rules broken: the operation's output count; the operand is never written."""
    m, sg, (k, j), at = _copy_at(model, site)
    idx = sg.operations[k].outputs.pop(j)
    return ModelMutant(f"removed_operation_output: {at}operation {k} output {j} (operand {idx}) removed", m)


# 19-20. added operation input / output -----------------------------------------------

def _add_input_skip(op: Operation) -> bool:
    """AOSP ``addOperationInputSkip``: operations taking an optional trailing INT32."""
    n = len(op.inputs)
    return ((op.type == OT.L2_NORMALIZATION and n == 1) or
            (op.type == OT.LOCAL_RESPONSE_NORMALIZATION and n == 5) or
            (op.type == OT.SOFTMAX and n == 2) or
            (op.type in (OT.RESIZE_BILINEAR, OT.RESIZE_NEAREST_NEIGHBOR) and n < 6))


def _added_operation_input_sites(sg: Subgraph) -> list:
    return [k for k, op in enumerate(sg.operations) if not _add_input_skip(op)]


def _new_int32(sg: Subgraph, lifetime, consumers: int) -> int:
    """AOSP ``addOperand``: a new INT32 scalar operand with ``lifetime``; its index."""
    sg.operands.append(Operand(T.INT32, [], consumers, 0.0, 0, lifetime, DataLocation()))
    return len(sg.operands) - 1


@_kind("added_operation_input", "model", "addOperationInputTest", _added_operation_input_sites)
def _added_operation_input(model: Model, site) -> ModelMutant:
    """AOSP ``addOperationInputTest``: an operation gets one more input, a new INT32
    model input, except where AOSP's skip list says an extra INT32 is a valid optional
    parameter (L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, SOFTMAX axis; RESIZE_*
    flags).

    HAL rule broken: an operation has the number of inputs one of its signatures takes."""
    m, sg, k, at = _copy_at(model, site)
    idx = _new_int32(sg, L.SUBGRAPH_INPUT, 1)
    sg.operations[k].inputs.append(idx)
    sg.input_indexes.append(idx)
    return ModelMutant(f"added_operation_input: {at}operation {k} gets input operand {idx} (INT32)", m)


@_kind("added_operation_output", "model", "addOperationOutputTest", _operation_sites)
def _added_operation_output(model: Model, site) -> ModelMutant:
    """AOSP ``addOperationOutputTest``: an operation gets one more output, a new INT32
    model output.

    HAL rule broken: an operation has the number of outputs one of its signatures gives."""
    m, sg, k, at = _copy_at(model, site)
    idx = _new_int32(sg, L.SUBGRAPH_OUTPUT, 0)
    sg.operations[k].outputs.append(idx)
    sg.output_indexes.append(idx)
    return ModelMutant(f"added_operation_output: {at}operation {k} gets output operand {idx} (INT32)", m)


# 21-22. prepare arguments ------------------------------------------------------------

@_kind("invalid_execution_preference", "prepare", "mutateExecutionPreferenceTest",
       lambda model: list(INVALID_PREFERENCES))
def _invalid_execution_preference(model: Model, site) -> ModelMutant:
    """AOSP ``mutateExecutionPreferenceTest``: the (valid) model is prepared with
    preference LOW_POWER - 1 or SUSTAINED_SPEED + 1. Only prepare_model takes it.

    HAL rule broken: the execution preference is LOW_POWER, FAST_SINGLE_ANSWER or
    SUSTAINED_SPEED."""
    return ModelMutant(f"invalid_execution_preference: preference {site}", clone_model(model),
                       preference=int(site))


@_kind("invalid_priority", "prepare", "mutateExecutionPriorityTest",
       lambda model: list(INVALID_PRIORITIES))
def _invalid_priority(model: Model, site) -> ModelMutant:
    """AOSP ``mutateExecutionPriorityTest``: the (valid) model is prepared with priority
    LOW - 1 or HIGH + 1. Only prepare_model takes it.

    HAL rule broken: the priority is LOW, MEDIUM or HIGH."""
    return ModelMutant(f"invalid_priority: priority {site}", clone_model(model), priority=int(site))


# --- request kinds --------------------------------------------------------------------

@_kind("removed_input", "request", "removeInputTest (ValidateRequest.cpp)",
       lambda request: list(range(len(request.inputs))))
def _removed_input(request: Request, site) -> tuple[str, Request]:
    """AOSP ``removeInputTest``: one argument is removed from the request's inputs.

    HAL rule broken: a request has one input argument per model input."""
    r = clone_request(request)
    del r.inputs[site]
    return f"removed_input: request input {site} removed", r


@_kind("removed_output", "request", "removeOutputTest (ValidateRequest.cpp)",
       lambda request: list(range(len(request.outputs))))
def _removed_output(request: Request, site) -> tuple[str, Request]:
    """AOSP ``removeOutputTest``: one argument is removed from the request's outputs.

    HAL rule broken: a request has one output argument per model output."""
    r = clone_request(request)
    del r.outputs[site]
    return f"removed_output: request output {site} removed", r


assert len(MODEL_KINDS) == 22 and len(REQUEST_KINDS) == 2, (len(MODEL_KINDS), len(REQUEST_KINDS))
__all__ += list(KINDS)  # each kind is also a module attribute of its name
