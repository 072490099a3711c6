"""The rules of one HAL operand, on its own (AOSP ``validateOperand``): a known type (or a
declared extension type), uint32 dimensions of a sane rank and size, the scale and zero
point its type allows, per-channel parameters only where they belong, a known lifetime
and a location inside operandValues or its pool for constants. Also the model's
extension table and the size rule shared with execution (:func:`operand_byte_size`).

Failures raise :class:`runtime.errors.HalError` with ``INVALID_ARGUMENT`` naming the operand.
The fuzzer's validation target traces this module's branches but not its comparisons
(:mod:`fuzz.__main__`): they are plain range checks that cost a twentieth of its throughput.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import HalError
from ..extension_types import extension_prefix, is_extension_type, type_name
from ..types import ErrorStatus, OperandLifeTime, OperandType, is_tensor_type, operand_element_size
from .types import Model, Operand, SymmPerChannelQuantParams

L = OperandLifeTime
T = OperandType
_LIFETIMES = OperandLifeTime._value2member_map_

#: No tensor may hold more bytes than this (hostile sizes are rejected before allocating).
MAX_OPERAND_BYTES = 2**31 - 1
#: No tensor may have a higher rank: declared (operands), given (request arguments) or
#: inferred at execution. NNAPI sets no limit; no operation takes more than rank 4 or 5
#: but the rank-generic ones, and numpy stops at 64.
MAX_RANK = 16

_ZERO_POINT_RANGE = {
    T.TENSOR_QUANT8_ASYMM: (0, 255),
    T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    T.TENSOR_QUANT8_SYMM: (0, 0),
    T.TENSOR_QUANT16_ASYMM: (0, 65535),
    T.TENSOR_QUANT16_SYMM: (0, 0),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (0, 0),
}


def fail(message: str):
    """Raise HalError(INVALID_ARGUMENT, ``message``)."""
    raise HalError(ErrorStatus.INVALID_ARGUMENT, message)


def operand_byte_size(operand_type: OperandType, dims) -> int:
    """Bytes needed by an operand of ``operand_type`` and fully specified ``dims``
    (scalars: element size). Returns 0 when a dimension is unknown.

    Extension types: from the :class:`ExtensionOperandTypeInformation` an
    :class:`runtime.extension_types.ExtensionTypeCode` carries (scalar: its byte size; tensor:
    byte size per element, 0 for unknown rank), as AOSP ``TypeManager::getSizeOfData``;
    0 (unknown) for a bare extension code, whose size only the driver knows."""
    n = math.prod(map(int, dims))
    if is_extension_type(operand_type):
        info = getattr(operand_type, "info", None)
        if info is None:
            return 0
        if not info.is_tensor:
            return int(info.byte_size)
        return n * int(info.byte_size) if len(dims) else 0
    return n * operand_element_size(operand_type)


def extension_prefixes(model: Model) -> set[int]:
    """The prefixes of ``model.extension_name_to_prefix``, after checking the table: names
    non-empty strings, prefixes in [1, 0xFFFF], neither repeated."""
    names, prefixes = set(), set()
    for i, e in enumerate(model.extension_name_to_prefix):
        if not isinstance(e.name, str) or not e.name:
            fail(f"extensionNameToPrefix {i}: name {e.name!r} must be a non-empty string")
        if not isinstance(e.prefix, (int, np.integer)) or not 1 <= e.prefix <= 0xFFFF:
            fail(f"extensionNameToPrefix {i} ({e.name}): prefix {e.prefix} must be in [1, 0xFFFF]")
        if e.name in names:
            fail(f"extensionNameToPrefix {i}: extension {e.name} is listed twice")
        if int(e.prefix) in prefixes:
            fail(f"extensionNameToPrefix {i} ({e.name}): prefix {e.prefix} is used twice")
        names.add(e.name)
        prefixes.add(int(e.prefix))
    return prefixes


def resolve_type(where: str, code, enum_cls, model: Model):
    """``code`` as a member of ``enum_cls`` (OperandType or OperationType), or the extension
    code itself when its prefix is declared in extensionNameToPrefix; INVALID_ARGUMENT
    otherwise. (A caller tells the two apart with ``isinstance(result, enum_cls)``.)"""
    try:
        member = enum_cls._value2member_map_.get(code)
    except TypeError:  # unhashable
        member = None
    if member is not None:
        return member
    if is_extension_type(code):
        if extension_prefix(code) not in extension_prefixes(model):
            fail(f"{where}: type {int(code):#x} is an extension type with prefix "
                 f"{extension_prefix(code)}, which extensionNameToPrefix does not declare")
        return code
    fail(f"{where}: type {code} is not a valid {enum_cls.__name__}")


_PLAIN_INT = frozenset({int})


def _uint32_dims(dims) -> bool:
    """Whether every dimension is an integer in [0, 2^32 - 1] (builtin calls only: this
    runs once per operand of every model validated)."""
    if not dims:
        return True
    if not _PLAIN_INT.issuperset(map(type, dims)) and \
            not all(isinstance(d, (int, np.integer)) for d in dims):
        return False
    return min(dims) >= 0 and max(dims) <= 0xFFFFFFFF


def check_operand(where: str, op: Operand, model: Model, n_referenced: int) -> None:
    """Check operand ``op`` of ``model`` on its own (its uses are checked per operation);
    ``where`` names it in messages ("main operand 3"), ``n_referenced`` bounds SUBGRAPH
    references. Raises HalError(INVALID_ARGUMENT) on the first rule broken."""
    t = resolve_type(where, op.type, OperandType, model)
    ext = not isinstance(t, OperandType)
    dims = op.dimensions
    if not _uint32_dims(dims):
        fail(f"{where}: dimensions {list(dims)} must be uint32 values")
    if ext:  # scalar or tensor: only the extension knows (the driver checks)
        if len(dims) > MAX_RANK:
            fail(f"{where}: rank {len(dims)} is absurd (more than {MAX_RANK})")
    elif not is_tensor_type(t):
        if dims:
            fail(f"{where}: scalar type {t.name} must have no dimensions, got {list(dims)}")
    elif len(dims) > MAX_RANK:
        fail(f"{where}: rank {len(dims)} is absurd (more than {MAX_RANK})")
    elif 0 not in dims and operand_byte_size(t, dims) > MAX_OPERAND_BYTES:
        fail(f"{where}: {t.name}{list(dims)} needs more than 2^31 bytes")
    scale, zp = op.scale, op.zero_point
    if not math.isfinite(scale) or scale < 0:
        fail(f"{where}: scale {scale} must be finite and >= 0")
    ep = op.extra_params
    if ep is None:
        pass
    elif ext:
        if not isinstance(ep, (bytes, bytearray)):
            fail(f"{where}: extension operand extraParams must be extension data (bytes), "
                  f"got {type(ep).__name__}")
    elif isinstance(ep, (bytes, bytearray)):
        fail(f"{where}: {t.name} is a base operand type and cannot carry extension data")
    elif not isinstance(ep, SymmPerChannelQuantParams):
        fail(f"{where}: extraParams of type {type(ep).__name__} are not valid")
    elif t != T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        fail(f"{where}: {t.name} cannot have per-channel quantization parameters")
    if ext:
        pass  # scale and zeroPoint of extension types: the driver's rules (AOSP ValidateHal)
    elif t in _ZERO_POINT_RANGE:
        lo, hi = _ZERO_POINT_RANGE[t]
        if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            if scale != 0 or zp != 0:
                fail(f"{where}: {t.name} must have scale 0 and zeroPoint 0 (scales are per channel)")
            if ep is None:
                fail(f"{where}: {t.name} needs per-channel quantization parameters")
            if not 0 <= ep.channel_dim < max(len(dims), 1):
                fail(f"{where}: channelDim {ep.channel_dim} is out of range for rank {len(dims)}")
            if dims and dims[ep.channel_dim] not in (0, len(ep.scales)):
                fail(f"{where}: {len(ep.scales)} scales for {dims[ep.channel_dim]} channels")
            if any(not (s > 0 and math.isfinite(s)) for s in ep.scales):
                fail(f"{where}: per-channel scales must be positive")
        else:
            if scale <= 0:
                fail(f"{where}: {t.name} scale {scale} must be > 0")
            if not lo <= zp <= hi:
                fail(f"{where}: {t.name} zeroPoint {zp} must be in [{lo}, {hi}]")
    elif t != T.TENSOR_INT32 and (scale != 0 or zp != 0):  # SUBGRAPH too (AOSP validateOperandScale)
        fail(f"{where}: {type_name(t)} must have scale 0 and zeroPoint 0, got {scale}/{zp}")
    elif t == T.TENSOR_INT32 and zp != 0:  # any scale >= 0, zeroPoint 0 (AOSP validateOperandZeroPoint)
        fail(f"{where}: TENSOR_INT32 zeroPoint {zp} must be 0")

    loc = op.location
    try:
        lt = _LIFETIMES.get(op.lifetime)
    except TypeError:  # unhashable
        lt = None
    if lt is None:
        fail(f"{where}: lifetime {op.lifetime} is not a valid OperandLifeTime")
    if min(loc.offset, loc.length, loc.pool_index) < 0:
        fail(f"{where}: location {loc} has a negative field")
    if lt in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
        if 0 in dims or (is_tensor_type(t) and not dims):
            fail(f"{where}: constant operand must have fully specified dimensions, got {list(dims)}")
        if lt == L.CONSTANT_COPY:
            if loc.pool_index != 0 or loc.offset + loc.length > len(model.operand_values):
                fail(f"{where}: CONSTANT_COPY location {loc} is outside operandValues "
                      f"({len(model.operand_values)} bytes)")
        else:
            if loc.pool_index >= len(model.pools):
                fail(f"{where}: CONSTANT_REFERENCE pool {loc.pool_index} does not exist "
                      f"({len(model.pools)} pools)")
            if loc.offset + loc.length > model.pools[loc.pool_index].size:
                fail(f"{where}: CONSTANT_REFERENCE location {loc} is outside pool "
                      f"{loc.pool_index} ({model.pools[loc.pool_index].size} bytes)")
        if not ext and t != T.SUBGRAPH and loc.length != operand_byte_size(t, dims):
            fail(f"{where}: constant holds {loc.length} bytes, {t.name}{list(dims)} needs "
                  f"{operand_byte_size(t, dims)}")
    elif lt == L.SUBGRAPH:
        if t != T.SUBGRAPH:
            fail(f"{where}: SUBGRAPH lifetime needs operand type SUBGRAPH, got {type_name(t)}")
        if loc.offset >= n_referenced or loc.length != 0:
            fail(f"{where}: subgraph reference {loc.offset} is out of range ({n_referenced} referenced)")
    elif (loc.pool_index, loc.offset, loc.length) != (0, 0, 0):
        fail(f"{where}: {lt.name} operand must have an empty location, got {loc}")
    if t == T.SUBGRAPH and lt != L.SUBGRAPH:
        fail(f"{where}: operand type SUBGRAPH needs lifetime SUBGRAPH, got {lt.name}")


