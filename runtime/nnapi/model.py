"""Front-end model builder (``ANeuralNetworksModel``) in Pythonic form.

Every call validates its arguments and raises :class:`NnapiError` with the NNAPI result code
(``BAD_DATA`` for a bad argument, ``BAD_STATE`` after ``finish``) and a message naming the
operand or operation. ``finish`` orders the operations (a cycle is ``BAD_DATA``) and runs
the HAL model validation plus every operation's own rules.

Vendor extensions (FL3, ``NeuralNetworksExtensions.h``): :meth:`Model.get_extension_operand_type`
and :meth:`Model.get_extension_operation_type` turn an extension name and a type within it
into a type code (``prefix << 16 | type``, see :mod:`runtime.extension_types`) that
:meth:`Model.add_operand` / :meth:`Model.add_operation` accept, and
:meth:`Model.set_operand_extension_data` attaches an extension operand's parameters.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import HalError, NnapiError
from ..extension_types import (BASE_MAX, MAX_PREFIX, ExtensionTypeCode, extension_prefix,
                               is_extension_type, is_tensor_operand_type, type_name,
                               type_within_extension)
from ..hal.memory import SharedMemory
from .extensions import collect_extensions, operand_type_info
from ..hal.types import DataLocation, Extension, ExtensionNameAndPrefix, Model as HalModel, \
    Operand, Operation, Subgraph, SymmPerChannelQuantParams
from ..hal.validate import operand_byte_size, validate_model
from ..types import (MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES, OperandLifeTime, OperandType,
                     OperationType, ResultCode, is_tensor_type, operand_dtype)
from .memory import Memory

L = OperandLifeTime
#: Enum members by value (a dictionary lookup instead of an enum call per operand / operation).
_OPERAND_TYPE_OF = OperandType._value2member_map_
_OPERATION_TYPE_OF = OperationType._value2member_map_


@dataclass(frozen=True)
class OperandDesc:
    """``ANeuralNetworksOperandType``: type, dimensions (0 = unknown, () = scalar or unknown
    rank), scale and zero point."""

    type: OperandType
    dimensions: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0


def _bad(message: str) -> NnapiError:
    return NnapiError(ResultCode.BAD_DATA, message)


def _available_devices() -> list:
    """HAL devices of every driver that loads (bundled and entry points): the devices whose
    extensions a model may use when no device list is given, as AOSP's ``TypeManager``
    registers the extensions of every device on the system."""
    from ..loader import available_drivers, load_driver
    devices = []
    for name in available_drivers():
        try:
            devices.append(load_driver(name))
        except Exception:  # noqa: BLE001 - a driver that does not load offers no extension
            continue
    return devices


#: Bytes before the first value of a constant pool the runtime or the harness lays out
#: (:func:`pack_constants`). AOSP's ``ModelBuilder::copyLargeValuesToSharedMemory`` starts
#: at offset 0; nncts starts every pool with this guard so that no constant sits at offset 0
#: and a driver ignoring ``DataLocation.offset`` reads the guard (issue 24, HAL contracts).
#: 64 is Android's ``kDefaultRequestMemoryAlignment``.
POOL_GUARD = 64
#: The guard's byte: 0x7F makes float32 3.4e38, float16 6.5e4 (0x7F7F), int32 2139062143.
GUARD_BYTE = 0x7F


def value_alignment(length: int) -> int:
    """Alignment in bytes of a constant of ``length`` bytes in a shared pool: 1 below 2
    bytes, 2 below 4, else 4 (AOSP ``getAlignmentForLength`` / ``alignBytesNeeded``,
    ``nn/common/Utils.cpp``, used by ``copyLargeValuesToSharedMemory``)."""
    return 1 if length < 2 else 2 if length < 4 else 4


def pack_constants(raws: list[bytes]) -> tuple[bytes, list[int]]:
    """One shared pool holding every value of ``raws`` (bytes, in order) and each value's
    byte offset in it: :data:`POOL_GUARD` guard bytes (:data:`GUARD_BYTE`), then each value at
    the next offset aligned by :func:`value_alignment`, padding filled with the guard byte.
    Every offset is non-zero (at least ``POOL_GUARD``). Empty ``raws`` gives ``(b"", [])``."""
    if not raws:
        return b"", []
    pool, offsets = bytearray([GUARD_BYTE] * POOL_GUARD), []
    for raw in raws:
        pool.extend([GUARD_BYTE] * (-len(pool) % value_alignment(len(raw))))
        offsets.append(len(pool))
        pool.extend(raw)
    return bytes(pool), offsets


def _embed(child: HalModel, referenced: list[Subgraph], values: bytearray, pools: list) -> int:
    """Append ``child``'s main subgraph, then its own referenced subgraphs, to ``referenced``
    (AOSP ``ModelBuilder::makeModel`` flattens referenced models the same way), moving its
    constants into ``values`` / ``pools``; returns the index of its main subgraph."""
    base = len(referenced)
    values.extend(b"\0" * (-len(values) % 8))
    value_base, pool_base = len(values), len(pools)
    values.extend(child.operand_values)
    pools.extend(child.pools)

    def moved(sg: Subgraph) -> Subgraph:
        operands = []
        for o in sg.operands:
            loc = o.location
            if o.lifetime == L.CONSTANT_COPY:
                loc = DataLocation(loc.pool_index, loc.offset + value_base, loc.length)
            elif o.lifetime == L.CONSTANT_REFERENCE:
                loc = DataLocation(loc.pool_index + pool_base, loc.offset, loc.length)
            elif o.lifetime == L.SUBGRAPH:
                loc = DataLocation(0, loc.offset + base + 1, 0)
            operands.append(Operand(o.type, list(o.dimensions), o.number_of_consumers, o.scale, o.zero_point,
                                    o.lifetime, loc, o.extra_params))
        return Subgraph(operands, [Operation(op.type, list(op.inputs), list(op.outputs)) for op in sg.operations],
                        list(sg.input_indexes), list(sg.output_indexes))
    referenced.append(moved(child.main))
    referenced.extend(moved(sg) for sg in child.referenced)
    return base


class Model:
    """Build a model operand by operand and operation by operation, then :meth:`finish`.
    IF/WHILE refer to other finished models through SUBGRAPH operands
    (:meth:`set_operand_value_from_model`); :meth:`finish` flattens them into the HAL
    model's referenced subgraphs."""

    def __init__(self):
        self._operands: list[Operand] = []
        self._values: dict[int, bytes] = {}  # CONSTANT_COPY and large copied values
        self._memory_values: dict[int, tuple[Memory, int, int]] = {}
        self._model_values: dict[int, "Model"] = {}  # SUBGRAPH operands -> referenced model
        self._operations: list[Operation] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._relaxed = False
        self._finished = False
        self._hal: HalModel | None = None
        self._extension_prefixes: dict[str, int] = {}  # extension name -> prefix (1, 2, ...)
        self._extensions: dict[int, Extension] = {}  # prefix -> the devices' description
        self._default_extensions: tuple[dict, set] | None = None

    # -- construction --------------------------------------------------------------------
    def _check_open(self, call: str) -> None:
        if self._finished:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: the model is already finished")

    def _operand(self, index: int, call: str) -> Operand:
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(self._operands):
            raise _bad(f"{call}: operand {index} does not exist ({len(self._operands)} operands)")
        return self._operands[index]

    # -- extensions ----------------------------------------------------------------------
    def _extension_prefix(self, call: str, extension_name: str, devices) -> int:
        """The prefix of ``extension_name`` in this model, assigned (next free, from 1) on
        first use. Raises BAD_DATA unless one of ``devices`` (default: every available
        driver's) supports the extension, consistently."""
        if extension_name is None:
            raise NnapiError(ResultCode.UNEXPECTED_NULL, f"{call}: no extension name")
        if not isinstance(extension_name, str) or not extension_name:
            raise _bad(f"{call}: extension name {extension_name!r} must be a non-empty string")
        if extension_name in self._extension_prefixes:
            return self._extension_prefixes[extension_name]
        if devices is None:
            if self._default_extensions is None:
                self._default_extensions = collect_extensions(_available_devices())
            found, inconsistent = self._default_extensions
        else:
            found, inconsistent = collect_extensions(devices)
        if extension_name in inconsistent:
            raise _bad(f"{call}: devices describe extension {extension_name} inconsistently, so "
                       f"it is disabled")
        if extension_name not in found:
            raise _bad(f"{call}: no available device supports extension {extension_name}")
        prefix = len(self._extension_prefixes) + 1
        if prefix > MAX_PREFIX:
            raise _bad(f"{call}: too many extensions in use (at most {MAX_PREFIX})")
        self._extension_prefixes[extension_name] = prefix
        self._extensions[prefix] = found[extension_name]
        return prefix

    @staticmethod
    def _check_type_within(call: str, type_within_extension) -> int:
        if not isinstance(type_within_extension, (int, np.integer)) or \
                not 0 <= type_within_extension <= BASE_MAX:
            raise _bad(f"{call}: type within an extension {type_within_extension!r} must be a "
                       f"uint16 (0..{BASE_MAX})")
        return int(type_within_extension)

    def get_extension_operand_type(self, extension_name: str, type_within_extension: int,
                                   devices=None) -> ExtensionTypeCode:
        """The operand type code (``prefix << 16 | type_within_extension``) of an operand
        type of extension ``extension_name``, for :meth:`add_operand`
        (``ANeuralNetworksModel_getExtensionOperandType``).

        The model gives each extension it uses a prefix, from 1 in order of first use.
        ``devices``: the devices (front-end ``Device`` or HAL ``IDevice``) whose extensions
        may be used; default every available driver's. Raises BAD_DATA when none of them
        supports the extension (AOSP hands out the prefix anyway and fails at
        ``addOperand``; nncts reports it here, where the cause is clear), when devices
        describe it inconsistently, or for a type outside uint16; UNEXPECTED_NULL for no
        name. Whether the extension declares that operand type is checked by
        :meth:`add_operand`."""
        call = "get_extension_operand_type"
        type_within = self._check_type_within(call, type_within_extension)
        prefix = self._extension_prefix(call, extension_name, devices)
        info = operand_type_info(self._extensions[prefix], type_within)
        return ExtensionTypeCode((prefix << 16) | type_within, extension_name, info)

    def get_extension_operation_type(self, extension_name: str, type_within_extension: int,
                                     devices=None) -> ExtensionTypeCode:
        """The operation type code (``prefix << 16 | type_within_extension``) of an operation
        of extension ``extension_name``, for :meth:`add_operation`
        (``ANeuralNetworksModel_getExtensionOperationType``). Same prefixes, ``devices`` and
        errors as :meth:`get_extension_operand_type`."""
        call = "get_extension_operation_type"
        type_within = self._check_type_within(call, type_within_extension)
        prefix = self._extension_prefix(call, extension_name, devices)
        return ExtensionTypeCode((prefix << 16) | type_within, extension_name)

    def _extension_code(self, call: str, code, operand: bool) -> ExtensionTypeCode:
        """``code`` (an extension operand or operation type) as an :class:`ExtensionTypeCode`
        of an extension this model obtained. Raises BAD_DATA for an unknown prefix or, for
        an operand type, a type the extension does not declare."""
        if not isinstance(code, (int, np.integer)) or int(code) > 0xFFFFFFFF:
            raise _bad(f"{call}: type {code} does not fit in 32 bits")
        prefix, within = extension_prefix(code), type_within_extension(code)
        extension = self._extensions.get(prefix)
        if extension is None:
            raise _bad(f"{call}: type {int(code):#x} has extension prefix {prefix}, which this "
                       f"model never obtained (get_extension_operand_type / "
                       f"get_extension_operation_type)")
        if not operand:
            return ExtensionTypeCode(code, extension.name)
        info = operand_type_info(extension, within)
        if info is None:
            raise _bad(f"{call}: extension {extension.name} has no operand type {within}")
        return ExtensionTypeCode(code, extension.name, info)

    def set_operand_extension_data(self, index: int, data) -> None:
        """Attach ``data`` (bytes-like, laid out as the operand's extension defines) to
        extension operand ``index``, or remove it with ``None``
        (``ANeuralNetworksModel_setOperandExtensionData``). The HAL operand carries it in
        ``extra_params``. Raises BAD_DATA for a base operand type, a missing operand or empty
        data (AOSP: a non-null pointer with length 0); BAD_STATE after :meth:`finish`."""
        call = "set_operand_extension_data"
        self._check_open(call)
        operand = self._operand(index, call)
        if not is_extension_type(operand.type):
            raise _bad(f"{call}: operand {index} has base type {type_name(operand.type)}; only "
                       f"extension operands take extension data")
        if data is None:
            operand.extra_params = None
            return
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise _bad(f"{call}: data must be bytes-like, got {type(data).__name__}")
        raw = bytes(data)
        if not raw:
            raise _bad(f"{call}: data is empty (give None to remove extension data)")
        operand.extra_params = raw

    # -- operands ------------------------------------------------------------------------
    def add_operand(self, operand_type: OperandType | OperandDesc, dimensions=(), scale: float = 0.0,
                    zero_point: int = 0) -> int:
        """Add an operand; returns its index. Raises BAD_DATA for an unknown type, negative
        dimensions or dimensions on a scalar type (quantization ranges are checked at
        :meth:`finish`).

        An extension type (from :meth:`get_extension_operand_type`) must be an operand type
        its extension declares, scalar or tensor as declared, with scale and zero point 0
        (its parameters go in :meth:`set_operand_extension_data`)."""
        self._check_open("add_operand")
        if isinstance(operand_type, OperandDesc):
            operand_type, dimensions, scale, zero_point = (operand_type.type, operand_type.dimensions,
                                                           operand_type.scale, operand_type.zero_point)
        if is_extension_type(operand_type):
            t = self._extension_code("add_operand", operand_type, operand=True)
            dims = [int(d) for d in dimensions]
            if any(d < 0 or d > 0xFFFFFFFF for d in dims):
                raise _bad(f"add_operand: dimensions {dims} must be uint32")
            if dims and not t.info.is_tensor:
                raise _bad(f"add_operand: extension scalar type {t.name} cannot have dimensions {dims}")
            if scale != 0 or zero_point != 0:
                raise _bad(f"add_operand: extension type {t.name} must have scale 0 and zeroPoint 0, "
                           f"got {scale}/{zero_point} (extension parameters go in "
                           f"set_operand_extension_data)")
            self._operands.append(Operand(t, dims, 0, 0.0, 0))
            return len(self._operands) - 1
        try:
            t = _OPERAND_TYPE_OF[operand_type]  # what OperandType(operand_type) gives, one lookup
        except (KeyError, TypeError):
            try:
                t = OperandType(operand_type)
            except ValueError:
                raise _bad(f"add_operand: {operand_type} is not an OperandType") from None
        dims = [int(d) for d in dimensions]
        if dims and (min(dims) < 0 or max(dims) > 0xFFFFFFFF):
            raise _bad(f"add_operand: dimensions {dims} must be uint32")
        if dims and not is_tensor_type(t):
            raise _bad(f"add_operand: scalar type {t.name} cannot have dimensions {dims}")
        self._operands.append(Operand(t, dims, 0, float(scale), int(zero_point)))
        return len(self._operands) - 1

    def set_operand_value(self, index: int, value) -> None:
        """Give operand ``index`` a constant value (bytes, numpy array or Python scalar, stored
        in the operand's dtype), or ``None`` to mark an omitted optional operand (NO_VALUE).

        Raises BAD_DATA when the byte length does not match the operand's size.
        """
        self._check_open("set_operand_value")
        operand = self._operand(index, "set_operand_value")
        if value is None:
            operand.lifetime = L.NO_VALUE
            self._values.pop(index, None)
            return
        if isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
        elif is_extension_type(operand.type):  # no dtype known here: take the array's bytes
            if not isinstance(value, np.ndarray):
                raise _bad(f"set_operand_value: operand {index} has extension type "
                           f"{type_name(operand.type)}; give its value as bytes or a numpy array")
            raw = np.ascontiguousarray(value).tobytes()
        else:
            raw = np.ascontiguousarray(value, dtype=operand_dtype(operand.type)).tobytes()
        if 0 in operand.dimensions or (is_tensor_operand_type(operand.type) and not operand.dimensions):
            raise _bad(f"set_operand_value: operand {index} needs fully specified dimensions to "
                       f"take a value, has {operand.dimensions}")
        need = operand_byte_size(operand.type, operand.dimensions)
        if len(raw) != need:
            raise _bad(f"set_operand_value: operand {index} ({type_name(operand.type)}"
                       f"{operand.dimensions}) needs {need} bytes, got {len(raw)}")
        self._values[index] = raw
        self._memory_values.pop(index, None)
        self._model_values.pop(index, None)
        operand.lifetime = L.CONSTANT_COPY if need <= MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES \
            else L.CONSTANT_REFERENCE

    def set_operand_value_from_memory(self, index: int, memory: Memory, offset: int, length: int) -> None:
        """Give operand ``index`` a constant value held in ``memory`` at ``offset`` (bytes).
        Raises BAD_DATA when the range is outside the memory or the length is wrong."""
        self._check_open("set_operand_value_from_memory")
        operand = self._operand(index, "set_operand_value_from_memory")
        if not isinstance(memory, Memory):
            raise NnapiError(ResultCode.UNEXPECTED_NULL, "set_operand_value_from_memory: no memory")
        if getattr(memory, "is_from_desc", False):
            raise _bad(f"set_operand_value_from_memory: operand {index}: a memory created from a "
                       f"descriptor cannot hold constant values")
        if offset < 0 or length < 0 or offset + length > memory.size:
            raise _bad(f"set_operand_value_from_memory: operand {index}: range [{offset}, "
                       f"{offset + length}) is outside the memory ({memory.size} bytes)")
        need = operand_byte_size(operand.type, operand.dimensions)
        if length != need:
            raise _bad(f"set_operand_value_from_memory: operand {index} needs {need} bytes, got {length}")
        self._memory_values[index] = (memory, offset, length)
        self._values.pop(index, None)
        self._model_values.pop(index, None)
        operand.lifetime = L.CONSTANT_REFERENCE

    def set_operand_value_from_model(self, index: int, model: "Model") -> None:
        """Make operand ``index`` (type SUBGRAPH, the NDK's ANEURALNETWORKS_MODEL) refer to the
        finished ``model``, for IF/WHILE (``ANeuralNetworksModel_setOperandValueFromModel``,
        FL4). Raises BAD_DATA when the operand is not of type SUBGRAPH, UNEXPECTED_NULL when
        ``model`` is not a Model, BAD_STATE when ``model`` is not finished."""
        self._check_open("set_operand_value_from_model")
        operand = self._operand(index, "set_operand_value_from_model")
        if not isinstance(model, Model):
            raise NnapiError(ResultCode.UNEXPECTED_NULL, "set_operand_value_from_model: no model")
        if operand.type != OperandType.SUBGRAPH:
            raise _bad(f"set_operand_value_from_model: operand {index} has type {type_name(operand.type)}; "
                       f"only a SUBGRAPH (MODEL) operand can refer to a model")
        if not model.finished:
            raise NnapiError(ResultCode.BAD_STATE, f"set_operand_value_from_model: operand {index}: the "
                             f"referenced model is not finished")
        self._values.pop(index, None)
        self._memory_values.pop(index, None)
        self._model_values[index] = model
        operand.lifetime = L.SUBGRAPH

    def set_operand_symm_per_channel_quant_params(self, index: int, scales, channel_dim: int) -> None:
        """Per-channel scales of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand (FL3)."""
        self._check_open("set_operand_symm_per_channel_quant_params")
        operand = self._operand(index, "set_operand_symm_per_channel_quant_params")
        if operand.type != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            raise _bad(f"operand {index} is {type_name(operand.type)}, not TENSOR_QUANT8_SYMM_PER_CHANNEL")
        operand.extra_params = SymmPerChannelQuantParams(tuple(float(s) for s in scales), int(channel_dim))

    def add_operation(self, operation_type: OperationType, inputs, outputs) -> None:
        """Add an operation reading ``inputs`` and writing ``outputs`` (operand indexes).

        Raises BAD_DATA for an unknown operation type or an operand index out of range (the
        operand types are checked against the operation table at :meth:`finish`). An
        extension operation (from :meth:`get_extension_operation_type`) is checked by the
        drivers, not the operation table.
        """
        self._check_open("add_operation")
        if is_extension_type(operation_type):
            t = self._extension_code("add_operation", operation_type, operand=False)
        else:
            try:
                t = _OPERATION_TYPE_OF[operation_type]  # as OperationType(operation_type)
            except (KeyError, TypeError):
                try:
                    t = OperationType(operation_type)
                except ValueError:
                    raise _bad(f"add_operation: {operation_type} is not an OperationType") from None
        n = len(self._operands)
        for kind, idxs in (("input", inputs), ("output", outputs)):
            for j, i in enumerate(idxs):
                if not isinstance(i, (int, np.integer)) or not 0 <= i < n:
                    raise _bad(f"add_operation {t.name} (operation {len(self._operations)}): {kind} {j} "
                               f"refers to operand {i}, which does not exist ({n} operands)")
        self._operations.append(Operation(t, [int(i) for i in inputs], [int(i) for i in outputs]))

    def identify_inputs_and_outputs(self, inputs, outputs) -> None:
        """Declare the model's inputs and outputs (operand indexes, in execution order).
        Raises BAD_DATA for an index out of range or an operand that has a value."""
        self._check_open("identify_inputs_and_outputs")
        for kind, idxs, lt in (("input", inputs, L.SUBGRAPH_INPUT), ("output", outputs, L.SUBGRAPH_OUTPUT)):
            for j, i in enumerate(idxs):
                operand = self._operand(i, f"identify_inputs_and_outputs {kind} {j}")
                if operand.lifetime not in (L.TEMPORARY_VARIABLE, lt):
                    raise _bad(f"identify_inputs_and_outputs: {kind} {j} (operand {i}) has lifetime "
                               f"{L(operand.lifetime).name}; it cannot also be a model {kind}")
        for i in inputs:
            self._operands[i].lifetime = L.SUBGRAPH_INPUT
        for i in outputs:
            self._operands[i].lifetime = L.SUBGRAPH_OUTPUT
        self._inputs, self._outputs = [int(i) for i in inputs], [int(i) for i in outputs]

    def relax_computation_float32_to_float16(self, allow: bool) -> None:
        """Allow TENSOR_FLOAT32 to be computed with float16 range and precision (FL2)."""
        self._check_open("relax_computation_float32_to_float16")
        self._relaxed = bool(allow)

    # -- finish --------------------------------------------------------------------------
    def _run_order(self) -> list[Operation]:
        """Operations sorted so every operand is written before it is read (:func:`run_order`).
        Raises BAD_DATA naming the operations on a cycle."""
        order = run_order(self._operations)
        if len(order) != len(self._operations):
            done = set(order)
            stuck = [f"{k} ({self._operations[k].type.name})" for k in range(len(self._operations))
                     if k not in done]
            raise _bad(f"finish: the model contains a cycle through operations {', '.join(stuck)}")
        return [self._operations[k] for k in order]

    def _build_hal(self) -> HalModel:
        operands = [Operand(o.type, list(o.dimensions), 0, o.scale, o.zero_point, o.lifetime,
                            DataLocation(), o.extra_params) for o in self._operands]
        values, pools, mem_pools = bytearray(), [], {}
        large = []  # AOSP mLargeOperandValues: values over 128 bytes, in operand order
        for i, raw in self._values.items():
            if operands[i].lifetime == L.CONSTANT_COPY:
                values.extend(b"\0" * (-len(values) % 8))
                operands[i].location = DataLocation(0, len(values), len(raw))
                values.extend(raw)
            else:
                large.append(i)
        for i, (memory, offset, length) in self._memory_values.items():
            if id(memory) not in mem_pools:
                mem_pools[id(memory)] = len(pools)
                pools.append(memory.pool)
            operands[i].location = DataLocation(mem_pools[id(memory)], offset, length)
        if large:  # one shared pool after the client's memories, as AOSP's finish() adds it
            pool_bytes, offsets = pack_constants([self._values[i] for i in large])
            for i, offset in zip(large, offsets):
                operands[i].location = DataLocation(len(pools), offset, len(self._values[i]))
            pools.append(SharedMemory(data=pool_bytes))
        referenced: list[Subgraph] = []
        embedded: dict[int, int] = {}  # id(referenced Model) -> index of its main subgraph
        for i, child in self._model_values.items():
            if id(child) not in embedded:
                embedded[id(child)] = _embed(child.to_hal(), referenced, values, pools)
            operands[i].location = DataLocation(0, embedded[id(child)], 0)
        operations = self._run_order()
        for op in operations:
            for i in op.inputs:
                operands[i].number_of_consumers += 1
        main = Subgraph(operands, [Operation(o.type, list(o.inputs), list(o.outputs)) for o in operations],
                        list(self._inputs), list(self._outputs))
        used = {extension_prefix(x.type) for x in [*operands, *operations] if is_extension_type(x.type)}
        prefixes = [ExtensionNameAndPrefix(self._extensions[p].name, p) for p in sorted(used)]
        return HalModel(main, referenced, bytes(values), pools, self._relaxed, prefixes)

    def finish(self) -> None:
        """Validate and freeze the model. Raises BAD_DATA with the culprit named (structure,
        operand ranges, cycle, operation signature or rule), BAD_STATE if already finished."""
        self._check_open("finish")
        if not self._outputs:
            raise _bad("finish: the model has no outputs (call identify_inputs_and_outputs)")
        hal = self._build_hal()
        try:
            validate_model(hal)
        except HalError as e:
            raise _bad(f"finish: {e.message}") from None
        self._hal = hal
        self._finished = True

    @property
    def finished(self) -> bool:
        return self._finished

    def to_hal(self) -> HalModel:
        """The HAL model (after :meth:`finish`); raises BAD_STATE before."""
        if self._hal is None:
            raise NnapiError(ResultCode.BAD_STATE, "the model is not finished")
        return self._hal

    @property
    def input_operands(self) -> list[Operand]:
        return [self._operands[i] for i in self._inputs]

    @property
    def output_operands(self) -> list[Operand]:
        return [self._operands[i] for i in self._outputs]


def run_order(operations) -> list[int]:
    """Indexes of ``operations`` (objects with ``inputs`` / ``outputs`` operand lists) in the
    order ``Model.finish`` runs them: Kahn's algorithm, ready operations first come, first
    served, so every operand is written before it is read. Operations on a cycle are left
    out (the list is then shorter)."""
    writer = {}
    for k, op in enumerate(operations):
        for o in op.outputs:
            writer.setdefault(o, k)
    deps = [{writer[i] for i in op.inputs if i in writer} for op in operations]
    users: dict[int, list[int]] = {}
    for k, d in enumerate(deps):
        for w in d:
            users.setdefault(w, []).append(k)
    order, done = [], set()
    ready = [k for k, d in enumerate(deps) if not d]
    while ready:
        k = ready.pop(0)
        order.append(k)
        done.add(k)
        for u in users.get(k, []):
            if u not in done and deps[u] <= done and u not in ready:
                ready.append(u)
    return order
