"""Builders of the operation table's error inputs (:attr:`.base.OperationDef.error_inputs`,
after PyTorch OpInfo's ``error_inputs_func``): hooks that, given the operand views of a
valid use of an operation, yield :class:`.base.ErrorInput` variants breaking one rule each.

A hook is ``hook(inputs, outputs) -> Iterator[ErrorInput]`` over :class:`.base.OperandView`
lists (constants carry their values, other operands ``value=None``). A variant changes one
view (a new object; the others are the valid use's own) and keeps every operand type and
rank, so it still matches a signature of the row and breaks the rule it names only.
:func:`chain` joins hooks; the rows declare theirs next to their signatures.

Two stages (:attr:`.base.ErrorInput.at`): :data:`VALIDATION` rules are the ones model
validation checks (the row's ``validate`` and ``fixed_quant`` slots: quantization rules
and constant parameter values), :data:`PREPARE` rules are the shape and parameter rules
AOSP checks only in the operation's ``prepare``, when it runs (``OperationsUtils``
``validate*`` functions read operand types; shapes are the CPU executor's).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Iterator

import numpy as np

from ..types import OperandType as T, is_tensor_type, operand_dtype
from .base import REGISTRY, ErrorInput, OperandView

VALIDATION, PREPARE = "validation", "prepare"
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

Hook = Callable[[list, list], Iterator[ErrorInput]]


def changed(inputs: list, outputs: list, where: str, error: str, reason: str,
            at: str = VALIDATION, **fields) -> ErrorInput:
    """The :class:`ErrorInput` whose operand ``where`` (``"input 2"``, ``"output 0"``) has
    ``fields`` (OperandView field names) changed. A new ``value`` is cast to the operand's
    dtype and shaped by its (new) dimensions; new ``dims`` of a constant without a new value
    resize its value (repeating it, ``numpy.resize``)."""
    kind, j = where.split()
    ins, outs = list(inputs), list(outputs)
    views = ins if kind == "input" else outs
    v: OperandView = views[int(j)]
    dims = tuple(fields.get("dims", v.dims))
    if fields.get("value") is not None:
        fields["value"] = np.asarray(fields["value"], operand_dtype(v.type)).reshape(dims)
    elif "dims" in fields and v.value is not None:
        fields["value"] = np.resize(v.value, dims)
    views[int(j)] = dataclasses.replace(v, **fields)
    return ErrorInput(where, ins, outs, error, reason, at)


def chain(*hooks: Hook) -> Hook:
    """One hook yielding the variants of each of ``hooks`` in turn."""
    def hook(inputs: list, outputs: list) -> Iterator[ErrorInput]:
        for h in hooks:
            yield from h(inputs, outputs)
    return hook


def _present_scalar(inputs: list, j: int) -> bool:
    return j < len(inputs) and not inputs[j].omitted and not is_tensor_type(inputs[j].type)


def _other_zero_point(v: OperandView) -> int:
    """A zeroPoint other than ``v``'s within its type's range."""
    info = np.iinfo(operand_dtype(v.type))
    return v.zero_point + 1 if v.zero_point < info.max else v.zero_point - 1


def scalar_values(j: int, values: Iterable, error: str, reason: str, at: str = VALIDATION) -> Hook:
    """Scalar input ``j`` (when given) set to each of ``values`` in turn; ``reason`` may
    name ``{value}``."""
    def hook(inputs: list, outputs: list) -> Iterator[ErrorInput]:
        if _present_scalar(inputs, j):
            for value in values:
                yield changed(inputs, outputs, f"input {j}", error, reason.format(value=value), at,
                              value=value)
    return hook


def axis_out_of_range(j: int, error: str = "out of range", at: str = VALIDATION,
                      data: int = 0, source: str = "NNAPI types.spec") -> Hook:
    """The axis scalar input ``j`` set to ``rank`` and ``-rank - 1`` of input ``data`` (when
    its rank is known): outside [-rank, rank)."""
    def hook(inputs: list, outputs: list) -> Iterator[ErrorInput]:
        rank = inputs[data].rank
        if rank and _present_scalar(inputs, j):
            for value in (rank, -rank - 1):
                yield changed(inputs, outputs, f"input {j}", error,
                              f"axis {value} outside [-rank, rank) of a rank-{rank} input ({source})",
                              at, value=value)
    return hook


def fuse_code(j: int, source: str) -> Hook:
    """The fused activation input ``j`` set to 4 and -1, outside FuseCode (0-3)."""
    return scalar_values(j, (4, -1), "is not a FuseCode",
                         f"fused activation {{value}} is not a FuseCode NONE/RELU/RELU1/RELU6 ({source})")


def output_quant_of_input(error: str, source: str, output: int = 0) -> Hook:
    """A quantized output ``output`` given twice its scale, then another zeroPoint: the
    rule of operations that move quantized values unchanged (output scale and zeroPoint
    equal to input 0's)."""
    def hook(inputs: list, outputs: list) -> Iterator[ErrorInput]:
        out = outputs[output]
        if out.type not in QUANT8:
            return
        rule = f"output {output} must keep input 0's scale and zeroPoint ({source})"
        yield changed(inputs, outputs, f"output {output}", error, f"{rule}: scale doubled",
                      scale=out.scale * 2)
        yield changed(inputs, outputs, f"output {output}", error, f"{rule}: zeroPoint moved",
                      zero_point=_other_zero_point(out))
    return hook


def fixed_output_quant(op) -> Hook:
    """Each output whose slot (of the row's matching signature) fixes its quantization for
    model validation (``Arg.fixed_quant_at == "validation"``) given twice the fixed scale,
    then another zeroPoint (NNAPI types.spec: LOGISTIC 1/256, TANH 1/128, ...)."""
    def hook(inputs: list, outputs: list) -> Iterator[ErrorInput]:
        s = REGISTRY[op].match(inputs, outputs)
        for j, (a, v) in enumerate(zip(s.outputs if s else (), outputs)):
            if a.fixed_quant is None or a.fixed_quant_at != VALIDATION or v.type != a.type:
                continue
            scale, zp = a.fixed_quant
            error = f"output {j} ({v.type.name}) must have scale"
            rule = (f"{op.name} output {j} ({v.type.name}) has the fixed quantization scale "
                    f"{scale:g}, zeroPoint {zp} (NNAPI types.spec)")
            yield changed(inputs, outputs, f"output {j}", error, f"{rule}: scale doubled",
                          scale=scale * 2)
            yield changed(inputs, outputs, f"output {j}", error, f"{rule}: zeroPoint moved",
                          zero_point=_other_zero_point(dataclasses.replace(v, zero_point=zp)))
    return hook


def quant_bias(source: str, weights: int = 1, bias: int = 2) -> Hook:
    """The TENSOR_INT32 bias of a quantized convolution / FULLY_CONNECTED with per-tensor
    weights given twice ``input_scale * weights_scale``. (Its zeroPoint must be 0 too, but
    that is a rule of every TENSOR_INT32 operand, checked before any row's.)"""
    def hook(inputs: list, outputs: list) -> Iterator[ErrorInput]:
        if inputs[0].type in QUANT8 and not inputs[bias].omitted \
                and inputs[weights].type != T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            yield changed(inputs, outputs, f"input {bias}", "must equal input scale * filter scale",
                          f"bias scale must be input_scale * weights_scale ({source})",
                          scale=inputs[bias].scale * 2)
    return hook


def grown(j: int, axis: int, error: str, reason: str, at: str = PREPARE, by: int = 1) -> Hook:
    """Tensor input ``j``'s dimension ``axis`` (counted from the end when negative) grown
    by ``by`` (a constant's value resized with it), when the rank allows."""
    def hook(inputs: list, outputs: list) -> Iterator[ErrorInput]:
        v = inputs[j]
        if v.omitted or not -v.rank <= axis < v.rank or v.dims[axis] == 0:
            return
        dims = list(v.dims)
        dims[axis] += by
        yield changed(inputs, outputs, f"input {j}", error, reason, at, dims=tuple(dims))
    return hook


def tensor_values(j: int, make: Callable[[OperandView, list], np.ndarray | None], error: str,
                  reason: str, at: str = PREPARE) -> Hook:
    """Tensor input ``j`` given the value ``make(view, inputs)`` (its dimensions follow the
    value's shape); nothing when ``make`` returns None or the input is omitted."""
    def hook(inputs: list, outputs: list) -> Iterator[ErrorInput]:
        v = inputs[j]
        if v.omitted:
            return
        value = make(v, inputs)
        if value is not None:
            value = np.asarray(value)
            yield changed(inputs, outputs, f"input {j}", error, reason, at,
                          dims=tuple(value.shape), value=value)
    return hook
