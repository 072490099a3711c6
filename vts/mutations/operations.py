"""The VTS model mutation kinds 10-20, on operations (AOSP ``ValidateModel.cpp``): an
operand's type as its operations see it, invalid operation types, operand indexes out of
range, removed writes, operands, operations, inputs and outputs, added inputs and outputs.
Where AOSP keeps hand lists of the edits that leave a valid operation, these kinds ask the
operation table (:func:`~vts.mutations.common.still_matches`). See :mod:`vts.mutations`.
"""
from __future__ import annotations

from runtime.extension_types import is_extension_type
from runtime.hal.types import DataLocation, Model, Operand, Operation, Subgraph, SymmPerChannelQuantParams

from .common import (BASE_TYPES, INVALID_OPERATION_TYPES, L, ModelMutant, SCALAR_TYPES, T,
                     as_new_temporary, become_constant_copy, clone_operand, copy_at,
                     count_consumers, operation_output_sites, register_kind, size_of,
                     still_matches, used_operands)


# 10. operation operand type ----------------------------------------------------------

def _operand_as(o: Operand, t) -> Operand | None:
    """AOSP ``mutateOperand``: operand ``o`` as type ``t``, adjusted so the operand itself
    stays valid (dimensions, scale, zeroPoint, per-channel parameters; a constant's value
    is then re-located by the caller). None when it cannot be made valid."""
    new = clone_operand(o)
    new.type = t
    new.extra_params = None
    dims = list(o.dimensions) if o.dimensions else [1]
    if t in SCALAR_TYPES:
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


def _still_matches(sg: Subgraph, i: int, new: Operand) -> bool:
    """Whether every operation using operand ``i`` still matches a signature of its table
    row with operand ``i`` replaced by ``new`` (the slot accepts that type in another form
    of the operation, e.g. CONV_2D's filter as TENSOR_QUANT8_SYMM_PER_CHANNEL, or CONV_2D's
    BOOL layout flag turned INT32 read as the explicit-padding form): such a mutant may be
    a valid model, so it is not offered. Derived from the signatures, this covers AOSP's
    ``mutateOperationOperandTypeSkip`` list (tests/test_vts_derived_skips.py)."""
    users = [op for op in sg.operations if i in op.inputs or i in op.outputs]
    return bool(users) and all(still_matches(sg, op, replaced={i: new}) for op in users)


def _operation_operand_type_sites(sg: Subgraph) -> list:
    used = used_operands(sg)
    sites = []
    for i, o in enumerate(sg.operands):
        if i not in used or is_extension_type(o.type) or o.lifetime in (L.SUBGRAPH, L.NO_VALUE):
            continue
        for t in BASE_TYPES:
            if t == T.SUBGRAPH or t == o.type:
                continue
            if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and (o.dimensions or [1])[0] == 0:
                continue
            new = _operand_as(o, t)
            if new is not None and _still_matches(sg, i, new):
                continue
            sites.append((i, t))
    return sites


@register_kind("operation_operand_type", "model", "mutateOperationOperandTypeTest",
       _operation_operand_type_sites)
def _operation_operand_type(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationOperandTypeTest`` / ``mutateOperand``: an operand that an
    operation reads or writes gets another OperandType, adjusted so the operand itself stays
    valid (dimensions, scale, zeroPoint, per-channel parameters; a constant gets a value of
    the new size at the start of operandValues), except where every operation using the
    operand still matches a signature of its table row (the slot accepts that type, as
    DEQUANTIZE's input or a convolution's filter does, or the operation reads as another
    of its forms, as a CONV_2D whose BOOL layout flag turned INT32 reads as the
    explicit-padding form; AOSP keeps a hand list of such slots). Omitted (NO_VALUE) and
    unused operands are left alone.

    HAL rule broken: each operation's operands have the types one of its signatures
    gives."""
    m, sg, (i, t), at = copy_at(model, site)
    old = sg.operands[i]
    new = _operand_as(old, t)
    if new.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
        become_constant_copy(m, new, size_of(new))
    sg.operands[i] = new
    return ModelMutant(f"operation_operand_type: {at}operand {i} set to type {T(t).name} "
                       f"(was {T(old.type).name})", m)


# 11. operation type ------------------------------------------------------------------

def _operation_type_sites(sg: Subgraph) -> list:
    return [(k, code) for k in range(len(sg.operations)) for code in INVALID_OPERATION_TYPES]


@register_kind("operation_type", "model", "mutateOperationTypeTest", _operation_type_sites)
def _operation_type(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationTypeTest``: each operation's type becomes an invalid code: -1,
    one past the last OperationType, and an extension operation of an undeclared prefix.

    HAL rule broken: an operation type is an OperationType value or an operation of a
    declared extension."""
    m, sg, (k, code), at = copy_at(model, site)
    sg.operations[k].type = code
    return ModelMutant(f"operation_type: {at}operation {k} set to type {code}", m)


# 12-13. operand index out of range ---------------------------------------------------

def _operation_input_sites(sg: Subgraph) -> list:
    return [(k, j) for k, op in enumerate(sg.operations) for j in range(len(op.inputs))]


@register_kind("input_index_out_of_range", "model", "mutateOperationInputOperandIndexTest",
       _operation_input_sites)
def _input_index_out_of_range(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationInputOperandIndexTest``: an operation input refers to operand
    ``len(operands)`` (one past the last); the operand it read loses that consumer.

    HAL rule broken: operation inputs are indexes of the subgraph's operands."""
    m, sg, (k, j), at = copy_at(model, site)
    sg.operands[sg.operations[k].inputs[j]].number_of_consumers -= 1
    sg.operations[k].inputs[j] = len(sg.operands)
    return ModelMutant(f"input_index_out_of_range: {at}operation {k} input {j} = {len(sg.operands)}", m)


@register_kind("output_index_out_of_range", "model", "mutateOperationOutputOperandIndexTest",
       operation_output_sites)
def _output_index_out_of_range(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationOutputOperandIndexTest``: an operation output refers to
    operand ``len(operands)`` (one past the last).

    HAL rule broken: operation outputs are indexes of the subgraph's operands."""
    m, sg, (k, j), at = copy_at(model, site)
    sg.operations[k].outputs[j] = len(sg.operands)
    return ModelMutant(f"output_index_out_of_range: {at}operation {k} output {j} = {len(sg.operands)}", m)


# 14. removed write -------------------------------------------------------------------

def _removed_write_sites(sg: Subgraph) -> list:
    consumers = count_consumers(sg)
    return [(k, j) for k, op in enumerate(sg.operations)
            for j, idx in enumerate(op.outputs) if consumers[idx] > 0]


@register_kind("removed_write", "model", "mutateOperationRemoveWriteTest", _removed_write_sites)
def _removed_write(model: Model, site) -> ModelMutant:
    """AOSP ``mutateOperationRemoveWriteTest``: an operation output that other operations
    read is redirected to a new temporary (a copy of the operand, nobody reading it), so
    the operand its readers read is never written.

    HAL rule broken: every TEMPORARY_VARIABLE / SUBGRAPH_OUTPUT operand is written by
    exactly one operation (before it is read)."""
    m, sg, (k, j), at = copy_at(model, site)
    idx = sg.operations[k].outputs[j]
    sg.operations[k].outputs[j] = as_new_temporary(sg, idx)
    return ModelMutant(f"removed_write: {at}operation {k} no longer writes operand {idx}", m)


# 15. removed operand -----------------------------------------------------------------

def _removed_operand_sites(sg: Subgraph) -> list:
    """Operands some operation reads whose removal leaves an operation without a matching
    signature: skipped when the operation writing the operand still matches without that
    output (SPLIT's and the sequence LSTM/RNN operations' output counts vary; AOSP's
    ``removeOperandSkip`` lists them by name) and every read is an input its operation
    can do without (:func:`_removable_input`: CONCATENATION's tensors, optional trailing
    parameters; AOSP decrements nothing, so its mutants also break operand indexes)."""
    consumers = count_consumers(sg)
    sites = []
    for i in range(len(sg.operands)):
        if consumers[i] == 0:
            continue
        reads_removable = all(_removable_input(sg, op, j) for op in sg.operations
                              for j, k in enumerate(op.inputs) if k == i)
        write_removable = all(still_matches(sg, op, outputs=[k for k in op.outputs if k != i])
                              for op in sg.operations if i in op.outputs)
        if not (reads_removable and write_removable):
            sites.append(i)
    return sites


def _without(indexes: list[int], index: int) -> list[int]:
    """AOSP ``removeValueAndDecrementGreaterValues`` (decrementing for real)."""
    return [i - 1 if i > index else i for i in indexes if i != index]


@register_kind("removed_operand", "model", "removeOperandTest", _removed_operand_sites)
def _removed_operand(model: Model, site) -> ModelMutant:
    """AOSP ``removeOperandTest``: an operand some operation reads is deleted from the
    operand list and from every operation and the input/output lists (later indexes shift
    down). Skipped: unread operands, and operands whose removal leaves their writer and
    every reader matching a signature of its row (see :func:`_removed_operand_sites`).

    HAL rule broken: the operation that read it no longer has the inputs its signature
    needs."""
    m, sg, i, at = copy_at(model, site)
    del sg.operands[i]
    for op in sg.operations:
        op.inputs, op.outputs = _without(op.inputs, i), _without(op.outputs, i)
    sg.input_indexes, sg.output_indexes = _without(sg.input_indexes, i), _without(sg.output_indexes, i)
    return ModelMutant(f"removed_operand: {at}operand {i} removed", m)


# 16. removed operation ---------------------------------------------------------------

def _operation_sites(sg: Subgraph) -> list:
    return list(range(len(sg.operations)))


@register_kind("removed_operation", "model", "removeOperationTest", _operation_sites)
def _removed_operation(model: Model, site) -> ModelMutant:
    """AOSP ``removeOperationTest``: an operation is deleted (its inputs lose a consumer
    each, as HAL 1.3 ``removeOperation`` does).

    HAL rule broken: the operands it wrote are never written."""
    m, sg, k, at = copy_at(model, site)
    for idx in sg.operations[k].inputs:
        sg.operands[idx].number_of_consumers -= 1
    del sg.operations[k]
    return ModelMutant(f"removed_operation: {at}operation {k} removed", m)


# 17. removed operation input ---------------------------------------------------------

def _removable_input(sg: Subgraph, op: Operation, j: int) -> bool:
    """Whether ``op`` without its input ``j`` still matches a signature of its table row:
    optional trailing parameters (a pooling's layout flag, SOFTMAX's axis ...),
    CONCATENATION's or PACK's tensors beyond the first. Derived from the signatures, this
    covers AOSP's ``removeOperationInputSkip`` list (tests/test_vts_derived_skips.py)."""
    return still_matches(sg, op, inputs=[k for n, k in enumerate(op.inputs) if n != j])


def _removed_operation_input_sites(sg: Subgraph) -> list:
    return [(k, j) for k, op in enumerate(sg.operations) for j in range(len(op.inputs))
            if not _removable_input(sg, op, j)]


@register_kind("removed_operation_input", "model", "removeOperationInputTest", _removed_operation_input_sites)
def _removed_operation_input(model: Model, site) -> ModelMutant:
    """AOSP ``removeOperationInputTest``: an input is removed from an operation (the operand
    loses that consumer), except inputs the operation can do without (the operation still
    matches a signature of its row; AOSP keeps a hand list of them).

    HAL rule broken: an operation has the number of inputs one of its signatures takes."""
    m, sg, (k, j), at = copy_at(model, site)
    idx = sg.operations[k].inputs.pop(j)
    sg.operands[idx].number_of_consumers -= 1
    return ModelMutant(f"removed_operation_input: {at}operation {k} input {j} (operand {idx}) removed", m)


# 18. removed operation output --------------------------------------------------------

@register_kind("removed_operation_output", "model", "removeOperationOutputTest", operation_output_sites)
def _removed_operation_output(model: Model, site) -> ModelMutant:
    """AOSP ``removeOperationOutputTest``: an output is removed from an operation.

    HAL rules broken: the operation's output count; the operand is never written."""
    m, sg, (k, j), at = copy_at(model, site)
    idx = sg.operations[k].outputs.pop(j)
    return ModelMutant(f"removed_operation_output: {at}operation {k} output {j} (operand {idx}) removed", m)


# 19-20. added operation input / output -----------------------------------------------

def _added_operation_input_sites(sg: Subgraph) -> list:
    """Operations that no longer match a signature of their row with one more INT32 model
    input (an extra INT32 is not a valid optional parameter of theirs: L2_NORMALIZATION's,
    LOCAL_RESPONSE_NORMALIZATION's and SOFTMAX's axis are; AOSP's
    ``addOperationInputSkip`` lists those by name)."""
    extra = Operand(T.INT32, [], 1, 0.0, 0, L.SUBGRAPH_INPUT, DataLocation())
    n = len(sg.operands)
    return [k for k, op in enumerate(sg.operations)
            if not still_matches(sg, op, inputs=[*op.inputs, n], replaced={n: extra})]


def _new_int32(sg: Subgraph, lifetime, consumers: int) -> int:
    """AOSP ``addOperand``: a new INT32 scalar operand with ``lifetime``; its index."""
    sg.operands.append(Operand(T.INT32, [], consumers, 0.0, 0, lifetime, DataLocation()))
    return len(sg.operands) - 1


def _with_extra_int32(model: Model, site, role: str) -> ModelMutant:
    """A copy of ``model`` whose operation at ``site`` gets one more ``role`` ("input" or
    "output"): a new INT32 model input (one consumer) or model output."""
    m, sg, k, at = copy_at(model, site)
    is_input = role == "input"
    idx = _new_int32(sg, L.SUBGRAPH_INPUT if is_input else L.SUBGRAPH_OUTPUT, 1 if is_input else 0)
    (sg.operations[k].inputs if is_input else sg.operations[k].outputs).append(idx)
    (sg.input_indexes if is_input else sg.output_indexes).append(idx)
    return ModelMutant(f"added_operation_{role}: {at}operation {k} gets {role} operand {idx} (INT32)", m)


@register_kind("added_operation_input", "model", "addOperationInputTest", _added_operation_input_sites)
def _added_operation_input(model: Model, site) -> ModelMutant:
    """AOSP ``addOperationInputTest``: an operation gets one more input, a new INT32
    model input, except where an extra INT32 is a valid optional parameter (the operation
    still matches a signature of its row: L2_NORMALIZATION's, LOCAL_RESPONSE_NORMALIZATION's
    and SOFTMAX's axis).

    HAL rule broken: an operation has the number of inputs one of its signatures takes."""
    return _with_extra_int32(model, site, "input")


@register_kind("added_operation_output", "model", "addOperationOutputTest", _operation_sites)
def _added_operation_output(model: Model, site) -> ModelMutant:
    """AOSP ``addOperationOutputTest``: an operation gets one more output, a new INT32
    model output.

    HAL rule broken: an operation has the number of outputs one of its signatures gives."""
    return _with_extra_int32(model, site, "output")
