"""The VTS model mutation kinds 1-9, on operands and the operand graph (AOSP
``ValidateModel.cpp``): execution order, operand type, rank, scale, zero point, lifetime,
input/output role, numberOfConsumers and an extra writer. See :mod:`vts.mutations`.
"""
from __future__ import annotations

import math

from runtime import ops
from runtime.extension_types import is_extension_type
from runtime.hal.types import DataLocation, Model, Operand, Operation, Subgraph
from runtime.types import is_tensor_type

from .common import (INVALID_OPERAND_TYPES, MAX_CONSTANT_COPY_BYTES, SCALAR_TYPES, L, ModelMutant, T,
                     as_new_temporary, become_constant_copy, copy_at, count_consumers,
                     operation_output_sites, register_kind, size_of)


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


@register_kind("execution_order", "model", "mutateExecutionOrderTest", _execution_order_sites)
def _execution_order(model: Model, site) -> ModelMutant:
    """AOSP ``mutateExecutionOrderTest``. An operation reading an operand that another
    operation writes moves to the front of the operation list (it now reads the operand
    before it is written); an operation writing an operand others read moves to the end
    (it now writes the operand after it is read).

    HAL rule broken: operations are listed in execution order, every operation input is
    known (a constant, a model input or written by an earlier operation) when it runs."""
    m, sg, (role, k), at = copy_at(model, site)
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


@register_kind("operand_type", "model", "mutateOperandTypeTest", _operand_type_sites)
def _operand_type(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandTypeTest``. Each operand's type becomes an invalid code: -1,
    one past the last OperandType, and an extension type whose prefix the model's
    extensionNameToPrefix does not declare.

    HAL rule broken: an operand type is an OperandType value or an extension type of a
    declared extension."""
    m, sg, (i, code), at = copy_at(model, site)
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
        if o.type in SCALAR_TYPES:
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


@register_kind("operand_rank", "model", "mutateOperandRankTest", _operand_rank_sites)
def _operand_rank(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandRankTest``: a scalar operand (FLOAT16, FLOAT32, INT32, UINT32,
    BOOL) is given dimensions ``[0]`` (rank 1). nncts adds: a tensor operand that an
    operation constrains in rank (every signature of the operation table for that slot
    lists its ranks) is reshaped to a rank none of them allows, keeping its element count
    (so a constant keeps its size and only the rank is wrong).

    HAL rules broken: a scalar has no dimensions; an operation's operands have the ranks
    the operation accepts."""
    m, sg, (i, dims), at = copy_at(model, site)
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


@register_kind("operand_scale", "model", "mutateOperandScaleTest", _operand_scale_sites)
def _operand_scale(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandScaleTest`` / ``getInvalidScale``: each operand's scale becomes
    invalid for its type: 1.0 for the float, bool, integer scalar, SUBGRAPH and
    per-channel types (scale must be 0), -1.0 for TENSOR_INT32 (must be >= 0), 0.0 for
    the quantized types (must be > 0).

    HAL rule broken: ``Operand.scale`` per type (AOSP ``validateOperandScale``)."""
    m, sg, (i, scale), at = copy_at(model, site)
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


@register_kind("operand_zero_point", "model", "mutateOperandZeroPointTest", _operand_zero_point_sites)
def _operand_zero_point(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandZeroPointTest`` / ``getInvalidZeroPoints``: each operand's
    zeroPoint becomes invalid for its type: 1 where it must be 0 (non-quantized types,
    TENSOR_INT32, per-channel), -1 and 256 for TENSOR_QUANT8_ASYMM, -1 and 65536 for
    TENSOR_QUANT16_ASYMM, -129/-1/1/128 and -32769/-1/1/32768 for the symmetric 8/16-bit
    types (must be 0), -129 and 128 for TENSOR_QUANT8_ASYMM_SIGNED (nncts addition).

    HAL rule broken: ``Operand.zeroPoint`` per type (AOSP ``validateOperandZeroPoint``)."""
    m, sg, (i, zp), at = copy_at(model, site)
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
    size = size_of(o)
    if not size or size > MAX_CONSTANT_COPY_BYTES:
        out = [lt for lt in out if lt != L.CONSTANT_COPY]
    return out


def _operand_lifetime_sites(sg: Subgraph) -> list:
    return [(i, lt) for i, o in enumerate(sg.operands) if not is_extension_type(o.type)
            for lt in _invalid_lifetimes(o)]


@register_kind("operand_lifetime", "model", "mutateOperandLifeTimeTest", _operand_lifetime_sites)
def _operand_lifetime(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandLifeTimeTest``: an operand written by an operation
    (TEMPORARY_VARIABLE, SUBGRAPH_OUTPUT) becomes SUBGRAPH_INPUT or CONSTANT_COPY (when
    its size is known); an operand with a value before execution (CONSTANT_COPY,
    CONSTANT_REFERENCE, SUBGRAPH_INPUT) becomes TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT.
    The subgraph's input/output index lists follow the new lifetime.

    HAL rule broken: an operand has exactly one source of value: written by one operation
    iff its lifetime is TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT."""
    m, sg, (i, lifetime), at = copy_at(model, site)
    o = sg.operands[i]
    old = L(o.lifetime)
    if o.lifetime == L.SUBGRAPH_INPUT:
        sg.input_indexes = [x for x in sg.input_indexes if x != i]
    elif o.lifetime == L.SUBGRAPH_OUTPUT:
        sg.output_indexes = [x for x in sg.output_indexes if x != i]
    o.lifetime = lifetime
    o.location = DataLocation()
    if lifetime == L.CONSTANT_COPY:
        become_constant_copy(m, o, size_of(o))
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
        size = size_of(o)
        return L.CONSTANT_COPY if size and size <= MAX_CONSTANT_COPY_BYTES else None
    if o.lifetime == L.SUBGRAPH_OUTPUT:
        return L.TEMPORARY_VARIABLE
    if o.lifetime == L.TEMPORARY_VARIABLE:
        return L.SUBGRAPH_OUTPUT
    return None


def _input_output_sites(sg: Subgraph) -> list:
    return [(i, lt) for i, o in enumerate(sg.operands) if not is_extension_type(o.type)
            for lt in [_input_output_lifetime(o)] if lt is not None]


@register_kind("input_output_role", "model", "mutateOperandInputOutputTest", _input_output_sites)
def _input_output_role(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandInputOutputTest``: an operand's lifetime changes whether it is a
    model input, a model output or neither, keeping whether it has a writer, while the
    subgraph's input/output index lists stay as they were: a constant becomes
    SUBGRAPH_INPUT, a SUBGRAPH_INPUT becomes CONSTANT_COPY (size known), a SUBGRAPH_OUTPUT
    becomes TEMPORARY_VARIABLE, a TEMPORARY_VARIABLE becomes SUBGRAPH_OUTPUT.

    HAL rule broken: the operands with lifetime SUBGRAPH_INPUT / SUBGRAPH_OUTPUT are
    exactly those listed in inputIndexes / outputIndexes."""
    m, sg, (i, lifetime), at = copy_at(model, site)
    o = sg.operands[i]
    old = L(o.lifetime)
    o.lifetime = lifetime
    o.location = DataLocation()
    if lifetime == L.CONSTANT_COPY:
        become_constant_copy(m, o, size_of(o))
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


@register_kind("number_of_consumers", "model", "mutateOperandNumberOfConsumersTest (HAL 1.3)",
       _number_of_consumers_sites)
def _number_of_consumers(model: Model, site) -> ModelMutant:
    """HAL 1.3 AOSP ``mutateOperandNumberOfConsumersTest`` / ``getInvalidNumberOfConsumers``:
    each operand's numberOfConsumers becomes 1 when it is 0, else one less and one more.

    HAL rule broken: ``Operand.numberOfConsumers`` equals the number of operation inputs
    that read the operand (HAL 1.0-1.3 ``Operand``)."""
    m, sg, (i, wrong), at = copy_at(model, site)
    sg.operands[i].number_of_consumers = wrong
    return ModelMutant(f"number_of_consumers: {at}operand {i} numberOfConsumers = {wrong}", m)


# 9. extra writer ---------------------------------------------------------------------

@register_kind("extra_writer", "model", "mutateOperandAddWriterTest", operation_output_sites)
def _extra_writer(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperandAddWriterTest``: a copy of an operation is appended at the end
    of the operation list, writing one of the original's outputs again (its other outputs
    go to new temporaries). Its inputs gain a consumer each.

    HAL rule broken: an operand is written by at most one operation."""
    m, sg, (k, j), at = copy_at(model, site)
    new = Operation(sg.operations[k].type, list(sg.operations[k].inputs), list(sg.operations[k].outputs))
    for n, idx in enumerate(new.outputs):
        if n != j:
            new.outputs[n] = as_new_temporary(sg, idx)
    for idx in new.inputs:
        sg.operands[idx].number_of_consumers += 1
    sg.operations.append(new)
    return ModelMutant(f"extra_writer: a copy of {at}operation {k} also writes operand "
                       f"{sg.operations[k].outputs[j]}", m)
