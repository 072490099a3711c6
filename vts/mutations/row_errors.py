"""The VTS model mutation kind 21, beyond AOSP's list: the invalid uses the operation
table's rows declare (:attr:`runtime.ops.base.OperationDef.error_inputs`, built with
:mod:`runtime.ops.error_inputs`), applied to the operations of a valid model.

A row's error inputs break rules signatures cannot tell (a quantized bias off
input_scale * filter_scale, SOFTMAX's beta <= 0, LOGISTIC's output off its fixed
quantization ...). Only those model validation rejects (``ErrorInput.at ==
"validation"``) become mutants here; the shape rules AOSP checks when the operation runs
(``"prepare"``) leave the model valid, so a driver may accept it (tests/test_error_inputs.py
checks both stages against the reference). See :mod:`vts.mutations`.
"""
from __future__ import annotations

import numpy as np

from runtime import ops
from runtime.extension_types import is_extension_type
from runtime.hal.types import DataLocation, Model, Operand, Operation, Subgraph, SymmPerChannelQuantParams
from runtime.hal.validate import constant_value, operand_view
from runtime.ops.base import ErrorInput, OperandView
from runtime.ops.error_inputs import VALIDATION
from runtime.types import OperationType, operand_dtype

from .common import L, ModelMutant, copy_at, register_kind

#: Byte alignment of a constant a mutant appends to operandValues.
ALIGN = 8


def operation_views(model: Model, sg: Subgraph, operation: Operation) -> tuple[list, list]:
    """The operand views of ``operation`` of subgraph ``sg`` as model validation sees them
    (constants with their values, other operands ``value=None``)."""
    def view(i: int) -> OperandView:
        o = sg.operands[i]
        return operand_view(o, constant_value(model, o), o.lifetime == L.NO_VALUE)
    return [view(i) for i in operation.inputs], [view(i) for i in operation.outputs]


def error_inputs_of(model: Model, sg: Subgraph, operation: Operation,
                    at: str | None = VALIDATION) -> list[ErrorInput]:
    """The error inputs the table row of ``operation`` declares for this use (those of stage
    ``at``; None: every stage); none for an extension or unknown operation or a row
    without error inputs, or when an operand index is out of range."""
    n = len(sg.operands)
    if is_extension_type(operation.type) or operation.type not in OperationType._value2member_map_ \
            or not all(0 <= i < n for i in (*operation.inputs, *operation.outputs)):
        return []
    row = ops.get(OperationType(operation.type))
    if row is None or row.error_inputs is None:
        return []
    inputs, outputs = operation_views(model, sg, operation)
    if row.match(inputs, outputs) is None:
        return []
    return [e for e in row.error_inputs(inputs, outputs) if at is None or e.at == at]


def _operand_of(view: OperandView, lifetime, location: DataLocation, consumers: int) -> Operand:
    cq = view.channel_quant
    extra = SymmPerChannelQuantParams(tuple(float(s) for s in cq[0]), cq[1]) if cq is not None else None
    return Operand(view.type, list(view.dims), consumers, view.scale, view.zero_point, lifetime,
                   location, extra)


def apply_error_input(model: Model, sg: Subgraph, k: int, e: ErrorInput) -> str:
    """Make operation ``k`` of ``sg`` (a subgraph of ``model``; both edited in place) the
    variant ``e``: a changed input becomes a new operand (a CONSTANT_COPY appended to
    operandValues when the variant gives it a value, else a new subgraph input), the old one
    losing that consumer; a changed output is edited in place. Returns the description
    ``operation K (NAME) <where>: <reason>``."""
    op = sg.operations[k]
    old_in, old_out = operation_views(model, sg, op)
    for j, (old, new) in enumerate(zip(old_in, e.inputs)):
        if _same_operand(old, new):
            continue
        if new.value is not None:
            raw = np.ascontiguousarray(new.value, dtype=operand_dtype(new.type)).tobytes()
            values = bytes(model.operand_values)
            values += bytes(-len(values) % ALIGN)
            model.operand_values = values + raw
            operand = _operand_of(new, L.CONSTANT_COPY, DataLocation(0, len(values), len(raw)), 1)
        else:
            operand = _operand_of(new, L.SUBGRAPH_INPUT, DataLocation(), 1)
            sg.input_indexes.append(len(sg.operands))
        sg.operands[op.inputs[j]].number_of_consumers -= 1
        op.inputs[j] = len(sg.operands)
        sg.operands.append(operand)
    for j, new in enumerate(e.outputs):
        o = sg.operands[op.outputs[j]]
        o.type, o.dimensions, o.scale, o.zero_point = new.type, list(new.dims), new.scale, new.zero_point
    return f"operation {k} ({OperationType(op.type).name}) {e.where}: {e.reason}"


def _same_operand(old: OperandView, new: OperandView) -> bool:
    """Whether ``new`` describes the operand ``old`` does (type, dimensions, quantization,
    value, omission)."""
    return (old.type, old.dims, old.scale, old.zero_point, old.omitted) == \
        (new.type, tuple(new.dims), new.scale, new.zero_point, new.omitted) \
        and (old.value is None) == (new.value is None) \
        and (old.value is None or np.array_equal(old.value, new.value)) \
        and _same_channels(old.channel_quant, new.channel_quant)


def _same_channels(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a[1] == b[1] and np.array_equal(a[0], b[0])


def _row_error_input_sites(sg: Subgraph, model: Model) -> list:
    return [(k, i) for k, op in enumerate(sg.operations)
            for i in range(len(error_inputs_of(model, sg, op)))]


@register_kind("row_error_inputs", "model", "validateOperation", _row_error_input_sites, with_model=True)
def _row_error_inputs(model: Model, site) -> ModelMutant:
    """Invalid uses the operation table's rows declare: each operation whose row has error
    inputs becomes, in turn, each variant that model validation rejects (AOSP
    ``validateOperation``, the operation's own ``validate`` in ``common/types/operations``,
    and the NNAPI types.spec rules the reference checks at model time: a quantized bias off
    input_scale * filter_scale, SOFTMAX's beta <= 0, an axis out of range, LOGISTIC's
    output off its fixed quantization, an output off its input's quantization, a fused
    activation outside FuseCode). The changed input becomes a new operand (a constant when
    it has a value), a changed output is edited in place. No AOSP VTS kind does this; its
    ``ValidateModel.cpp`` mutates types, ranks and structure only.

    HAL rule broken: the operation's own rule the variant names (``ErrorInput.reason``)."""
    m, sg, (k, i), at = copy_at(model, site)
    e = error_inputs_of(m, sg, sg.operations[k])[i]
    return ModelMutant(f"row_error_inputs: {at}{apply_error_input(m, sg, k, e)}", m)
