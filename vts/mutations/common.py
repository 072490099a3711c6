"""Shared pieces of the VTS mutation kinds (:mod:`vts.mutations`): invalid codes, the
mutant record, deep copies of HAL models and requests, the kind registry and the questions
the kinds ask the operation table (does an operation still match one of its row's
signatures after an edit).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable, Iterator, NamedTuple

from runtime import ops
from runtime.extension_types import is_extension_type
from runtime.hal.types import (DataLocation, ExtensionNameAndPrefix, Model, Operand, Operation,
                               Request, RequestArgument, Subgraph, SymmPerChannelQuantParams)
from runtime.hal.validate import operand_byte_size, operand_view
from runtime.types import (OperandLifeTime, OperandType, OperationType, PreferenceCode,
                           PriorityCode, is_tensor_type)

L = OperandLifeTime
T = OperandType

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

SCALAR_TYPES = (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL)
BASE_TYPES = tuple(OperandType)  # every code once (SUBGRAPH is an alias of MODEL)


class ModelMutant(NamedTuple):
    """A mutated model with the preference and priority to prepare it with."""

    description: str
    model: Model
    preference: int = PreferenceCode.FAST_SINGLE_ANSWER
    priority: int = PriorityCode.MEDIUM


# --- copies -------------------------------------------------------------------------


def clone_operand(o: Operand) -> Operand:
    ep = o.extra_params
    if isinstance(ep, SymmPerChannelQuantParams):
        ep = SymmPerChannelQuantParams(tuple(ep.scales), ep.channel_dim)
    elif isinstance(ep, bytearray):
        ep = bytes(ep)
    loc = o.location
    return Operand(o.type, list(o.dimensions), o.number_of_consumers, o.scale, o.zero_point,
                   o.lifetime, DataLocation(loc.pool_index, loc.offset, loc.length, loc.padding), ep)


def clone_subgraph(sg: Subgraph) -> Subgraph:
    return Subgraph([clone_operand(o) for o in sg.operands],
                    [Operation(op.type, list(op.inputs), list(op.outputs)) for op in sg.operations],
                    list(sg.input_indexes), list(sg.output_indexes))


def clone_model(model: Model) -> Model:
    """A deep copy of ``model`` (pools too: a driver may not touch the original)."""
    return Model(clone_subgraph(model.main), [clone_subgraph(s) for s in model.referenced],
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


def used_operands(sg: Subgraph) -> set[int]:
    return {i for op in sg.operations for i in (*op.inputs, *op.outputs)}


def size_of(o: Operand) -> int:
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


def become_constant_copy(model: Model, operand: Operand, size: int) -> None:
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


def subgraphs(model: Model) -> list[tuple[int | None, Subgraph]]:
    """``(None, main)``, then ``(r, referenced subgraph r)`` for each referenced subgraph."""
    return [(None, model.main), *enumerate(model.referenced)]


def in_every_subgraph(sites_of: Callable[..., list], with_model: bool = False) -> Callable[[Model], list]:
    """A model kind's sites from ``sites_of(subgraph)`` (``sites_of(subgraph, model)`` when
    ``with_model``: a kind reading constant values), its places in one subgraph: each
    place as ``(g, place)``, ``g`` None for main or the referenced subgraph's index."""
    def sites(model: Model) -> list:
        return [(g, place) for g, sg in subgraphs(model)
                for place in (sites_of(sg, model) if with_model else sites_of(sg))]
    return sites


def copy_at(model: Model, site) -> tuple[Model, Subgraph, object, str]:
    """For a model kind's mutant of ``site``: a copy of ``model``, the subgraph the site
    names (in the copy), the place within it, and the subgraph's name for the description
    (``""`` for main, AOSP's wording; ``"referenced subgraph R "`` otherwise)."""
    g, place = site
    m = clone_model(model)
    if g is None:
        return m, m.main, place, ""
    return m, m.referenced[g], place, f"referenced subgraph {g} "


def register_kind(name: str, target: str, aosp: str, sites: Callable, with_model: bool = False):
    """Register a kind. A model kind's ``sites`` takes one subgraph (and the model, when
    ``with_model``; every subgraph of the model is searched, see :func:`in_every_subgraph`)
    and its ``apply`` gets the subgraph from the site with :func:`copy_at`; other kinds'
    ``sites`` take the whole subject."""
    if target == "model":
        sites = in_every_subgraph(sites, with_model)

    def register(apply: Callable) -> MutationKind:
        kind = MutationKind(name, target, aosp, sites, apply, apply.__doc__ or "")
        (REQUEST_KINDS if target == "request" else MODEL_KINDS)[name] = kind
        KINDS[name] = kind  # vts.mutations.<name>(model) yields the mutants too
        return kind
    return register


def operation_output_sites(sg: Subgraph) -> list:
    """``(operation k, output j)`` for every operation output of ``sg``."""
    return [(k, j) for k, op in enumerate(sg.operations) for j in range(len(op.outputs))]


def as_new_temporary(sg: Subgraph, index: int) -> int:
    """Append a copy of operand ``index`` as a TEMPORARY_VARIABLE nobody reads; its index."""
    o = clone_operand(sg.operands[index])
    o.lifetime = L.TEMPORARY_VARIABLE
    o.number_of_consumers = 0
    o.location = DataLocation()
    sg.operands.append(o)
    return len(sg.operands) - 1


# --- what the operation table says of an edited operation ---------------------------


def still_matches(sg: Subgraph, op: Operation, inputs: list[int] | None = None,
                  outputs: list[int] | None = None, replaced: dict[int, Operand] | None = None) -> bool:
    """Whether operation ``op`` of ``sg``, with its input / output operand indexes
    ``inputs`` / ``outputs`` (default: its own) and the operands of ``replaced`` (index ->
    operand; an index past the operand list adds a new one) in place of the subgraph's,
    still matches a signature of its table row: operand types, counts and ranks (the rules
    a HAL validator checks first). False for an extension or unknown operation.

    The VTS kinds skip an edit that leaves every operation it touches matching (the mutant
    might be a valid model in another form of the operation); this replaces AOSP's hand
    lists of flexible slots and optional inputs (``ValidateModel.cpp``)."""
    opdef = None if is_extension_type(op.type) else ops.get(op.type)
    if opdef is None:
        return False
    new = replaced or {}

    def view(k: int):
        o = new.get(k) or sg.operands[k]
        return operand_view(o, None, o.lifetime == L.NO_VALUE)
    ins = op.inputs if inputs is None else inputs
    outs = op.outputs if outputs is None else outputs
    return opdef.match([view(k) for k in ins], [view(k) for k in outs]) is not None
