"""A driver's static shape check at ``prepare_model``: the operations of the main subgraph
whose output shapes are already certain are run through the operation table's ``prepare``
(shape inference), and a model that would certainly fail at execution is rejected now with
INVALID_ARGUMENT, as a driver should reject an invalid model (HAL ``IDevice::prepareModel``:
INVALID_ARGUMENT "if one of the input arguments related to preparing the model is
invalid"; AOSP's sample driver runs every operation's ``prepare`` in
``CpuExecutor``/``validateOperation`` before it accepts a model).

Not part of :func:`runtime.hal.validate.validate_model`: the front end (like AOSP's runtime)
accepts these models — a shape that contradicts the declared one, or a parameter value a
kernel refuses, is the driver's to find — and the CTS's ``expect_failure`` models
(``depthwise_conv2d_invalid_filter_dims``, ``strided_slice_invalid``,
``cast_mismatching_shapes``) exist to see the driver reject them.

Soundness: an operation is checked only when every input's dimensions are known (declared
fully, no 0, or inferred from earlier operations) and ``prepare`` never reads the value of an
input that is not a constant (such a read aborts the operation's check: its outcome would
depend on execution-time values). ``prepare`` is then a function of exactly what the executor
will give it at execution, so an error here is an error there; the check never rejects a
model the reference executor would run.
"""
from __future__ import annotations

from .. import ops
from ..errors import HalError, OperationError
from ..extension_types import is_tensor_operand_type
from ..ops.base import OperandView, OpContext
from ..types import ErrorStatus, OperandLifeTime, OperationType
from .types import Model
from .validate import constant_value, operand_fields

L = OperandLifeTime
_CONSTANT = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)


class _UnknownValue(BaseException):
    """``prepare`` read the value of an input that is known only at execution. A
    BaseException so that no ``except Exception`` in a kernel turns it into an OperationError
    (which would read as a real rejection)."""


class _PendingView(OperandView):
    """An operand view whose value exists only at execution: reading it raises
    :class:`_UnknownValue`; writing it is ignored."""

    @property
    def value(self):
        raise _UnknownValue

    @value.setter
    def value(self, _value) -> None:
        pass


def _known(dims: tuple[int, ...]) -> bool:
    """Whether a tensor's ``dims`` are a fully known shape: a known rank (not ``()``) and no 0."""
    return bool(dims) and 0 not in dims


def _contradicts(declared: tuple[int, ...], inferred: tuple[int, ...]) -> bool:
    """Whether an inferred output shape contradicts the declared one (the executor's rule:
    a declared rank differs, or a declared non-zero dimension differs)."""
    if not declared or declared == inferred:
        return False
    return len(declared) != len(inferred) or any(d not in (0, s) for d, s in zip(declared, inferred))


def check_static_shapes(model: Model) -> None:
    """Run ``prepare`` for each operation of ``model.main`` (a validated HAL model), in
    execution order, whose input shapes are known; carry the inferred output shapes to later
    operations.

    Raises HalError(INVALID_ARGUMENT) naming the operation when ``prepare`` rejects its
    operands (OperationError), or naming the operation, the output operand and both shapes
    when the inferred shape contradicts the declared one. Operations skipped: control flow
    (IF/WHILE: their shapes come from the referenced subgraphs at run time), operations
    outside the operation table (extensions), operations with an input of unknown shape,
    an input that is not a constant in an optional slot (it may be omitted at execution),
    or whose ``prepare`` reads a value known only at execution or fails in any other way.
    Referenced subgraphs are not checked (an IF branch may never run)."""
    sg = model.main
    relaxed = model.relax_computation_float32_to_float16
    shapes: dict[int, tuple[int, ...]] = {}  # operand -> known shape
    for i, o in enumerate(sg.operands):
        tensor = is_tensor_operand_type(o.type)  # None: an extension type of unknown kind
        if tensor is False or (tensor and _known(tuple(o.dimensions))):
            shapes[i] = tuple(o.dimensions)
    for k, operation in enumerate(sg.operations):
        try:
            inferred = _infer(k, operation, model, shapes, relaxed)
        except HalError:
            raise
        except Exception:  # noqa: BLE001 - an operand this check cannot read: not certain
            continue
        if inferred is None:
            continue
        for j, (idx, shape) in enumerate(zip(operation.outputs, inferred)):
            declared = tuple(sg.operands[idx].dimensions)
            if _contradicts(declared, shape):
                raise HalError(ErrorStatus.INVALID_ARGUMENT,
                               f"static shape check: operation {k} ({_name(operation.type)}): output {j} (operand "
                               f"{idx}) has shape {list(shape)} from its inputs, the model declares "
                               f"{list(declared)}")
            if _known(shape):
                shapes[idx] = shape


def _name(op_type) -> str:
    return OperationType(op_type).name if op_type in OperationType._value2member_map_ else str(op_type)


def _infer(k: int, operation, model: Model, shapes: dict, relaxed: bool) -> list[tuple[int, ...]] | None:
    """The output shapes ``prepare`` infers for operation ``k``, or None when they are not
    certain (see :func:`check_static_shapes`). Raises HalError(INVALID_ARGUMENT) when
    ``prepare`` rejects the operands."""
    opdef = ops.get(operation.type) if operation.type in OperationType._value2member_map_ else None
    if opdef is None or getattr(opdef, "run", None) is not None:
        return None
    sg = model.main
    views_in = []
    for idx in operation.inputs:
        o = sg.operands[idx]
        try:
            t, scale, zp, cq, data = operand_fields(o)
        except ValueError:
            return None
        if o.lifetime == L.NO_VALUE:
            views_in.append(OperandView(t, tuple(o.dimensions), scale, zp, None, True, cq, data))
        elif idx not in shapes:
            return None
        elif o.lifetime in _CONSTANT:
            views_in.append(OperandView(t, shapes[idx], scale, zp, constant_value(model, o), False, cq, data))
        else:
            views_in.append(_PendingView(t, shapes[idx], scale, zp, None, False, cq, data))
    views_out = []
    for idx in operation.outputs:
        t, scale, zp, cq, data = operand_fields(sg.operands[idx])
        views_out.append(OperandView(t, tuple(sg.operands[idx].dimensions), scale, zp, None, False, cq, data))
    signature = opdef.match(views_in, views_out)
    if signature is None or any(isinstance(v, _PendingView) and a.optional
                                for a, v in zip(signature.inputs, views_in)):
        return None
    try:
        return [tuple(int(d) for d in s) for s in opdef.prepare(OpContext(opdef.type, views_in, views_out, relaxed))]
    except _UnknownValue:
        return None
    except OperationError as e:
        raise HalError(ErrorStatus.INVALID_ARGUMENT,
                       f"static shape check: operation {k} ({_name(operation.type)}): {e}") from None
    except Exception:  # noqa: BLE001 - not certain: the executor decides at run time
        return None
