"""Structural validation of HAL models and requests (the rules of AOSP's
``ValidateHal``/``Validation``), plus each operation's own rules from the operation table.

Every failure raises :class:`runtime.errors.HalError` with ``INVALID_ARGUMENT`` and a
message naming the subgraph, operand or operation at fault and the rule broken.

Vendor extensions (FL3, :mod:`runtime.extension_types`): a type code above 0xFFFF is an extension
type whose prefix (high 16 bits) must be listed in ``model.extension_name_to_prefix``. The
HAL model does not say how big an extension operand is or which operands an extension
operation takes, so for them only the structural rules apply here (lifetimes, locations
inside their pools, execution order, consumers); constant sizes of extension operands and
the operands of extension operations are the driver's to check.
"""
from __future__ import annotations

from collections import Counter
from itertools import chain, repeat
from operator import attrgetter

import numpy as np

from .. import ops
from ..errors import HalError, OperationError
from ..extension_types import is_extension_type, is_tensor_operand_type, type_name
from ..identity import IdentityTable
from ..ops.base import OperandView, OpContext, fixed_quant_violation
from ..ops.control_flow import ANY, AnyOperand
from ..types import OperandLifeTime, OperandType, OperationType, is_tensor_type, operand_dtype
from . import validation_memo
from .model_limits import check_counts, check_model
from .operand_rules import (MAX_OPERAND_BYTES, MAX_RANK, check_operand, extension_prefixes,
                            operand_byte_size, resolve_type)
from .operand_rules import fail as _fail
from .types import Model, Operand, Request, Subgraph, SymmPerChannelQuantParams

L = OperandLifeTime
T = OperandType
_OPERAND_TYPES = OperandType._value2member_map_


def _signature_error(opdef, inputs, outputs, feature_level) -> str:
    """Explain why no signature of ``opdef`` fits (the signature that fits longest)."""
    best, best_pos = None, -1
    for s in opdef.signatures_for(len(inputs), len(outputs)):
        if s.feature_level > feature_level:
            continue
        if len(s.inputs) != len(inputs) or len(s.outputs) != len(outputs):
            continue
        pos = 0
        for a, o in list(zip(s.inputs, inputs)) + list(zip(s.outputs, outputs)):
            if not a.accepts(o.type, o.dims, o.omitted):
                break
            pos += 1
        if pos > best_pos:
            best, best_pos = s, pos
    if best is None:
        if getattr(opdef, "arity", ""):  # control flow: variadic data inputs and outputs
            return f"{opdef.arity}, got {len(inputs)} inputs and {len(outputs)} outputs"
        counts = sorted({(len(s.inputs), len(s.outputs)) for s in opdef.signatures
                         if s.feature_level <= feature_level})
        if opdef.variadic and opdef.variadic_index:
            return (f"takes {opdef.variadic_index} input(s) then n >= 1 tensors then "
                    f"{len(opdef.signatures[0].inputs) - 1 - opdef.variadic_index} more inputs")
        if opdef.variadic:
            return f"takes n >= 1 tensors then {len(opdef.signatures[0].inputs) - 1} more inputs"
        return (f"takes {' or '.join(f'{i} inputs and {o} outputs' for i, o in counts)}, "
                f"got {len(inputs)} inputs and {len(outputs)} outputs")
    n_in = len(best.inputs)
    slot = best.inputs[best_pos] if best_pos < n_in else best.outputs[best_pos - n_in]
    view = inputs[best_pos] if best_pos < n_in else outputs[best_pos - n_in]
    kind = f"input {best_pos}" if best_pos < n_in else f"output {best_pos - n_in}"
    if isinstance(slot, AnyOperand):
        return f"{kind} ({slot.name}) has type {type_name(view.type)}; it may be {ANY}"
    if view.type != slot.type:
        return (f"{kind} ({slot.name}) has type {T(view.type).name}, expected {slot.type.name} "
                f"[{best.describe()}]")
    return f"{kind} ({slot.name}) has rank {len(view.dims)}, allowed ranks {list(slot.ranks)}"


def constant_value(model: Model, operand: Operand, dtype=None) -> np.ndarray | None:
    """The numpy value of a CONSTANT_COPY / CONSTANT_REFERENCE operand (a view, not a
    copy), shaped by its dimensions; for a SUBGRAPH operand the index of the referenced
    subgraph it names (0-d uint32); None for other lifetimes. ``dtype`` overrides the
    operand type's (an extension type has none here: its driver supplies it)."""
    loc = operand.location
    if operand.lifetime == L.SUBGRAPH:  # the index of the referenced subgraph (IF/WHILE)
        return np.array(loc.offset, dtype=np.uint32)
    if operand.lifetime == L.CONSTANT_COPY:
        buf = model.operand_values
    elif operand.lifetime == L.CONSTANT_REFERENCE:
        buf = model.pools[loc.pool_index].buffer
    else:
        return None
    dtype = operand_dtype(operand.type) if dtype is None else np.dtype(dtype)
    arr = np.frombuffer(buf, dtype=dtype, count=loc.length // dtype.itemsize, offset=loc.offset)
    return arr.reshape(tuple(operand.dimensions))


def operand_fields(operand: Operand, strict: bool = True) -> tuple:
    """The static :class:`OperandView` fields of a HAL operand: (type, scale, zeroPoint,
    per-channel quantization, extension data). The type is its :class:`OperandType` member,
    or the code itself for an extension type; any other code raises ValueError, or with
    ``strict`` False is kept as is (the executor's: it fails only when an operation reads
    it). Per-channel quantization is (scales as float32, channelDim) for
    SymmPerChannelQuantParams extra params, extension data the bytes of an extension
    operand's extra params; each None otherwise."""
    cq = data = None
    extra = operand.extra_params
    if extra is None:  # the common case: one test
        pass
    elif isinstance(extra, SymmPerChannelQuantParams):
        cq = (np.asarray(extra.scales, np.float32), extra.channel_dim)
    elif isinstance(extra, (bytes, bytearray)):
        data = bytes(extra)
    t = _OPERAND_TYPES.get(operand.type)
    if t is None:
        t = operand.type if not strict or is_extension_type(operand.type) else T(operand.type)
    return t, operand.scale, operand.zero_point, cq, data


def operand_view(operand: Operand, value=None, omitted: bool = False, dims=None) -> OperandView:
    """The :class:`OperandView` of a HAL operand (optionally with refined ``dims``); an
    extension operand keeps its type code and passes its extension data along
    (:func:`operand_fields`; ValueError for an unknown non-extension type code)."""
    t, scale, zero_point, cq, data = operand_fields(operand)
    return OperandView(t, tuple(dims if dims is not None else operand.dimensions),
                       scale, zero_point, value, omitted, cq, data)


def _check_subgraph(name: str, sg: Subgraph, model: Model, feature_level: int) -> list[int | None]:
    """Check one subgraph; returns the feature level each of its operations needs (None
    for an extension operation)."""
    n = len(sg.operands)
    levels: list[int | None] = []
    n_referenced = len(model.referenced)
    by_lifetime: dict[OperandLifeTime, list[int]] = {}
    for i, op in enumerate(sg.operands):
        check_operand(f"{name} operand {i}", op, model, n_referenced)
        by_lifetime.setdefault(op.lifetime, []).append(i)
    for kind, indexes, lifetime in (("input", sg.input_indexes, L.SUBGRAPH_INPUT),
                                    ("output", sg.output_indexes, L.SUBGRAPH_OUTPUT)):
        if len(set(indexes)) != len(indexes):
            _fail(f"{name}: {kind} indexes {list(indexes)} repeat an operand")
        for j, idx in enumerate(indexes):
            if not 0 <= idx < n:
                _fail(f"{name}: {kind} {j} refers to operand {idx}, out of range ({n} operands)")
            if sg.operands[idx].lifetime != lifetime:
                _fail(f"{name}: {kind} {j} (operand {idx}) has lifetime "
                      f"{L(sg.operands[idx].lifetime).name}, expected {lifetime.name}")
        declared = set(by_lifetime.get(lifetime, ()))
        if declared != set(indexes):
            extra = sorted(declared - set(indexes))
            _fail(f"{name}: operand {extra[0]} has lifetime {lifetime.name} but is not a "
                  f"subgraph {kind}")

    written = {i for lt in (L.SUBGRAPH_INPUT, L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.NO_VALUE,
                            L.SUBGRAPH) for i in by_lifetime.get(lt, ())}
    views: list[OperandView | None] = [None] * n  # built once per operand, shared by its users

    def view(idx: int) -> OperandView:
        v = views[idx]
        if v is None:
            o = sg.operands[idx]
            v = views[idx] = operand_view(o, constant_value(model, o), o.lifetime == L.NO_VALUE)
        return v

    for k, operation in enumerate(sg.operations):
        op_type = resolve_type(f"{name} operation {k}", operation.type, OperationType, model)
        ext_op = not isinstance(op_type, OperationType)
        where = f"{name} operation {k} ({type_name(op_type)})"
        for kind, idxs in (("input", operation.inputs), ("output", operation.outputs)):
            if idxs and (min(idxs) < 0 or max(idxs) >= n):
                j, idx = next((j, idx) for j, idx in enumerate(idxs) if not 0 <= idx < n)
                _fail(f"{where}: {kind} {j} refers to operand {idx}, out of range ({n} operands)")
        if not written.issuperset(operation.inputs):
            j, idx = next((j, idx) for j, idx in enumerate(operation.inputs) if idx not in written)
            _fail(f"{where}: input {j} (operand {idx}) is read before it is written "
                  f"(operations out of execution order, a cycle, or no writer)")
        for j, idx in enumerate(operation.outputs):
            lt = sg.operands[idx].lifetime
            if lt not in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT):
                _fail(f"{where}: output {j} (operand {idx}) has lifetime {L(lt).name}; "
                      f"outputs must be TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT")
            if idx in written:
                _fail(f"{where}: output {j} (operand {idx}) is written more than once")
            written.add(idx)
        # an extension operation's operands are its driver's to check
        levels.append(None if ext_op else
                      _check_operation(where, op_type, operation, sg, model, feature_level, view))
    uses = Counter(chain.from_iterable(map(attrgetter("inputs"), sg.operations)))
    consumers = list(map(uses.get, range(n), repeat(0)))
    if list(map(attrgetter("number_of_consumers"), sg.operands)) != consumers or len(written) != n:
        for i, op in enumerate(sg.operands):  # the first operand at fault, for the message
            if op.number_of_consumers != consumers[i]:
                _fail(f"{name} operand {i}: numberOfConsumers is {op.number_of_consumers}, "
                      f"but {consumers[i]} operation inputs use it")
            if i not in written:
                _fail(f"{name} operand {i}: {L(op.lifetime).name} operand is never written")
    return levels


def _check_operation(where, op_type, operation, sg, model, feature_level, view) -> int:
    """Check one operation against the operation table (signature, optional inputs, the
    operation's own rules, control-flow references); returns the feature level this use
    needs. ``view(i)``: the OperandView of operand ``i`` (constants with their values)."""
    for kind, idxs in (("input", operation.inputs), ("output", operation.outputs)):
        for j, idx in enumerate(idxs):
            if is_extension_type(sg.operands[idx].type):
                _fail(f"{where}: {kind} {j} (operand {idx}) has extension type "
                      f"{type_name(sg.operands[idx].type)}; no base operation takes extension operands")
    opdef = ops.get(op_type)
    if opdef is None:
        _fail(f"{where}: operation is not implemented in the operation table")
    views_in = [view(idx) for idx in operation.inputs]
    views_out = [view(idx) for idx in operation.outputs]
    sig = opdef.match(views_in, views_out, feature_level)
    if sig is None:
        _fail(f"{where}: {_signature_error(opdef, views_in, views_out, feature_level)}")
    for j, v in enumerate(views_in):
        if v.omitted and not sig.inputs[j].optional:
            _fail(f"{where}: input {j} has no value but is not optional")
    # the lowest matching signature at any level is ``sig`` (match scans levels upwards)
    level, because = operation_feature_level(opdef, views_in, views_out,
                                             model.relax_computation_float32_to_float16, where, sig)
    if level > feature_level:
        _fail(f"{where}: needs feature level {level} ({because or f'signature {sig.describe()}'}); "
              f"validating for feature level {feature_level}")
    if getattr(opdef, "check_references", None) is not None:
        _check_references(where, opdef, views_in, views_out, model)
    return level


def _check_references(where, opdef, views_in, views_out, model: Model) -> None:
    """The rules a control-flow operation (IF, WHILE) sets on the referenced subgraphs it
    names (counts and compatible operands, :mod:`runtime.ops.control_flow`)."""
    def io_of(index: int):
        if not 0 <= index < len(model.referenced):
            raise OperationError(f"subgraph reference {index} is out of range "
                                 f"({len(model.referenced)} referenced subgraphs)")
        sg = model.referenced[index]
        # the referenced subgraph is checked after main: guard what is read of it here
        n = len(sg.operands)
        for kind, idxs in (("input", sg.input_indexes), ("output", sg.output_indexes)):
            for j, i in enumerate(idxs):
                if not 0 <= i < n:
                    raise OperationError(f"referenced subgraph {index}: {kind} {j} refers to operand "
                                         f"{i}, out of range ({n} operands)")
                if not is_extension_type(sg.operands[i].type) and \
                        sg.operands[i].type not in OperandType._value2member_map_:
                    raise OperationError(f"referenced subgraph {index}: {kind} {j} (operand {i}) has "
                                         f"type {sg.operands[i].type}, not a valid OperandType")
        return ([operand_view(sg.operands[i]) for i in sg.input_indexes],
                [operand_view(sg.operands[i]) for i in sg.output_indexes])
    try:
        opdef.check_references(OpContext(opdef.type, views_in, views_out,
                                         model.relax_computation_float32_to_float16), io_of)
    except OperationError as e:
        _fail(f"{where}: {e}")


def subgraph_references(sg: Subgraph) -> list[int]:
    """Indexes of the referenced subgraphs that ``sg``'s SUBGRAPH operands name."""
    return [int(o.location.offset) for o in sg.operands if o.lifetime == L.SUBGRAPH]


def _check_no_reference_cycles(model: Model) -> None:
    """No referenced subgraph may reference itself, directly or through others (AOSP
    ``checkNoReferenceCycles``); out-of-range references are left to the operand checks."""
    n = len(model.referenced)
    state = [0] * n  # 0 unvisited, 1 on the current path, 2 verified
    for root in range(n):
        if state[root]:
            continue
        stack = [(root, iter(subgraph_references(model.referenced[root])))]
        state[root] = 1
        path = [root]
        while stack:
            node, refs = stack[-1]
            nxt = next((r for r in refs if 0 <= r < n and state[r] != 2), None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            if state[nxt] == 1:
                cycle = path[path.index(nxt):] + [nxt]
                _fail(f"referenced subgraph {nxt} references itself "
                      f"({' -> '.join(f'subgraph {i}' for i in cycle)}); recursion is not allowed")
            state[nxt] = 1
            path.append(nxt)
            stack.append((nxt, iter(subgraph_references(model.referenced[nxt]))))


def operation_feature_level(opdef, views_in, views_out, relaxed: bool, where: str = "",
                            sig=None) -> tuple[int, str]:
    """(feature level, reason) this use of an operation needs: its lowest matching
    signature's level (``sig`` when the caller already matched it), raised by the
    operation's ``validate`` rules (e.g. a quant8 rule of FL1-2 broken); the reason is the
    rule's message, "" when the signature alone sets the level. Raises
    HalError(INVALID_ARGUMENT) when no signature matches, an operand's scale / zeroPoint
    differs from the ``fixed_quant`` its slot declares for validation (NNAPI types.spec:
    LOGISTIC, TANH, SOFTMAX, L2_NORMALIZATION outputs), or a rule of every level is broken."""
    if sig is None:
        sig = opdef.match(views_in, views_out)
    if sig is None:
        _fail(f"{where}: {_signature_error(opdef, views_in, views_out, 99)}")
    level, because = sig.feature_level, ""
    # the quantization the spec fixes for a slot (Arg.fixed_quant, enforced at validation)
    wrong_quant = fixed_quant_violation(opdef.type, sig, views_in, views_out)
    if wrong_quant is not None:
        _fail(f"{where}: {wrong_quant}")
    if opdef.validate is not None:
        ctx = OpContext(opdef.type, views_in, views_out, relaxed)
        try:
            opdef.validate(ctx)
        except OperationError as e:
            _fail(f"{where}: {e}")
        if ctx.required_feature_level > level:
            level, because = ctx.required_feature_level, ctx.required_because
    return level, because


class ModelLevels:
    """What :func:`validate_model` learned of a valid model: the feature level each
    operation use needs (its lowest matching signature, raised by the operation's own
    rules). ``per_subgraph[0]`` lists main's operations in order, ``per_subgraph[1 + r]``
    referenced subgraph ``r``'s; an extension operation has None (its driver decides)."""

    def __init__(self, model: Model, per_subgraph: list[list[int | None]]):
        self.per_subgraph = per_subgraph
        self._by_operation = {id(op): level for sg, levels in
                              zip([model.main, *model.referenced], per_subgraph)
                              for op, level in zip(sg.operations, levels)}
        self._model = model  # keeps the operations, hence their ids, alive

    def level_of(self, operation) -> int | None:
        """The feature level ``operation`` (an operation object of the validated model)
        needs; None for an extension operation or an operation of another model."""
        return self._by_operation.get(id(operation))

    @property
    def model_level(self) -> int:
        """The highest level any operation needs (1 for a model of extension operations only)."""
        return max((lv for levels in self.per_subgraph for lv in levels if lv is not None), default=1)


def validate_prepare_arguments(preference, priority) -> None:
    """The execution preference and priority of ``IDevice.prepare_model``: HalError
    (INVALID_ARGUMENT) unless each is a code of ``PreferenceCode`` / ``PriorityCode`` (HAL
    1.3 ``prepareModel_1_3``; VTS ``prepareModel`` with an invalid preference or priority)."""
    from ..types import ErrorStatus, PreferenceCode, PriorityCode
    if preference not in PreferenceCode._value2member_map_:
        raise HalError(ErrorStatus.INVALID_ARGUMENT, f"invalid execution preference {preference}")
    if priority not in PriorityCode._value2member_map_:
        raise HalError(ErrorStatus.INVALID_ARGUMENT, f"invalid priority {priority}")


#: {feature level: content key of :func:`runtime.hal.validation_memo.model_key`} per model
#: declared immutable (:func:`freeze_model`).
_FROZEN = IdentityTable()


def freeze_model(model: Model) -> None:
    """Declare that ``model`` will not change any more (the fuzzer's HAL models once its
    tweaks are applied, :mod:`fuzz.target`; only the owner of a model may say so), so that
    :func:`validate_model` digests its content once per feature level and afterwards finds
    the key by identity: the validations of the same model on its way to a driver (the
    front end's, then each driver's ``get_supported_operations`` and ``prepare_model``)
    then cost a dictionary lookup each. The entry goes when ``model`` is garbage collected;
    a model that takes no weak reference is not frozen. Changing a frozen model in place is
    undefined (as for a prepared model, :func:`runtime.executor.hold`)."""
    _FROZEN.add(model)  # a model without weak references is validated by content every time


def validate_model(model: Model, feature_level: int = 8) -> ModelLevels:
    """Check ``model`` against the HAL's structural rules and every operation's signature
    and rules up to ``feature_level``, within the count limits of
    :mod:`runtime.hal.model_limits` (operands, operations, subgraphs, pools).

    Raises HalError(INVALID_ARGUMENT) naming the culprit. Returns, for a valid model, the
    feature level each operation needs (:class:`ModelLevels`), which drivers read to answer
    ``get_supported_operations`` without matching the operations a second time. Verdicts
    are remembered by the model's exact content (:mod:`runtime.hal.validation_memo`), so
    validating the same model again (front end, then each driver call) costs a digest, and
    for a model declared immutable (:func:`freeze_model`) a lookup.
    """
    keys = _FROZEN.store(model)
    if keys is not None:  # frozen: its content key, once per level
        if feature_level in keys:
            key = keys[feature_level]
        else:
            key = keys[feature_level] = validation_memo.model_key(model, feature_level)
    else:
        key = validation_memo.model_key(model, feature_level)
    verdict = validation_memo.lookup(key)
    if verdict is not None:
        error, per_subgraph = verdict
        if error is not None:
            _fail(error)
        return ModelLevels(model, per_subgraph)
    try:
        per_subgraph = _validate_model(model, feature_level)
    except HalError as e:
        validation_memo.store(key, e.message, [])
        raise
    validation_memo.store(key, None, per_subgraph)
    return ModelLevels(model, per_subgraph)


def _validate_model(model: Model, feature_level: int) -> list[list[int | None]]:
    check_model("the model", model.main, model.referenced, model.pools)
    for i, pool in enumerate(model.pools):
        if not hasattr(pool, "buffer"):
            _fail(f"pool {i}: not a memory object")
    extension_prefixes(model)
    if model.referenced and feature_level < 4:
        _fail(f"the model has {len(model.referenced)} referenced subgraphs; referenced subgraphs "
              f"(IF/WHILE) need feature level 4, validating for feature level {feature_level}")
    _check_no_reference_cycles(model)
    per_subgraph = [_check_subgraph("main", model.main, model, feature_level)]
    for r, sg in enumerate(model.referenced):
        if not sg.operations:
            _fail(f"referenced subgraph {r}: has no operations")
        per_subgraph.append(_check_subgraph(f"referenced subgraph {r}", sg, model, feature_level))
    return per_subgraph


def merged_dimensions(where: str, operand: Operand, arg_dims) -> list[int]:
    """The operand's dimensions refined by a request argument's ``arg_dims`` (HAL rule:
    same rank, and every dimension the operand specifies must match)."""
    dims = list(operand.dimensions)
    if not arg_dims:
        return dims
    if is_tensor_operand_type(operand.type) is False:
        _fail(f"{where}: a scalar operand cannot take dimensions {list(arg_dims)}")
    arg_dims = list(arg_dims)
    if arg_dims == dims:  # the common case: the request repeats the operand's dimensions
        return arg_dims
    if dims and len(arg_dims) != len(dims):
        _fail(f"{where}: dimensions {list(arg_dims)} have rank {len(arg_dims)}, operand has rank {len(dims)}")
    if dims:
        for a, d in zip(arg_dims, dims):
            if d != 0 and a != d:
                _fail(f"{where}: dimensions {list(arg_dims)} contradict the operand's {dims}")
    return [a if a != 0 else d for a, d in zip(arg_dims, dims)] if dims else list(arg_dims)


def validate_request(request: Request, model: Model) -> None:
    """Check ``request`` against ``model``'s main subgraph: argument counts (and the limits
    of :mod:`runtime.hal.model_limits`), pool indexes and ranges, dimensions, and fully
    specified input sizes.

    A ``MemoryDomainToken`` pool (driver buffer) needs a positive token and arguments
    located at offset 0, length 0; its sizes are not checked here.

    Raises HalError(INVALID_ARGUMENT) naming the argument at fault.
    """
    from .types import MemoryDomainToken
    check_counts("the request", inputs=len(request.inputs), outputs=len(request.outputs), pools=len(request.pools))
    sg = model.main
    for kind, args, indexes in (("input", request.inputs, sg.input_indexes),
                                ("output", request.outputs, sg.output_indexes)):
        if len(args) != len(indexes):
            _fail(f"request has {len(args)} {kind}s, the model has {len(indexes)}")
        for j, (arg, idx) in enumerate(zip(args, indexes)):
            where = f"request {kind} {j}"
            operand = sg.operands[idx]
            loc = arg.location
            if arg.has_no_value:
                if (loc.pool_index, loc.offset, loc.length) != (0, 0, 0) or arg.dimensions:
                    _fail(f"{where}: an argument with no value must have no location or dimensions")
                continue
            if not 0 <= loc.pool_index < len(request.pools):
                _fail(f"{where}: pool {loc.pool_index} does not exist ({len(request.pools)} pools)")
            pool = request.pools[loc.pool_index]
            if isinstance(pool, MemoryDomainToken):  # a driver buffer: its size is the driver's
                if not isinstance(pool.token, int) or pool.token <= 0:
                    _fail(f"{where}: pool {loc.pool_index} has invalid memory domain token {pool.token}")
                if loc.offset != 0 or loc.length != 0:
                    _fail(f"{where}: a driver-allocated buffer (token {pool.token}) needs offset 0 "
                          f"and length 0, got {loc}")
                merged_dimensions(where, operand, arg.dimensions)
                continue
            if not hasattr(pool, "buffer"):
                _fail(f"{where}: pool {loc.pool_index} is not a memory object")
            if loc.offset < 0 or loc.length < 0 or \
                    loc.offset + loc.length > request.pools[loc.pool_index].size:
                _fail(f"{where}: location {loc} is outside pool {loc.pool_index} "
                      f"({request.pools[loc.pool_index].size} bytes)")
            dims = merged_dimensions(where, operand, arg.dimensions)
            if len(dims) > MAX_RANK:
                _fail(f"{where}: rank {len(dims)} is absurd (more than {MAX_RANK})")
            if kind == "input":
                if is_tensor_type(operand.type) and (not dims or 0 in dims):
                    _fail(f"{where}: input dimensions {dims} are not fully specified")
                need = operand_byte_size(operand.type, dims)
                if need > MAX_OPERAND_BYTES:
                    _fail(f"{where}: {need} bytes is more than 2^31")
                if loc.length < need:
                    _fail(f"{where}: buffer of {loc.length} bytes, {T(operand.type).name}{dims} "
                          f"needs {need}")
