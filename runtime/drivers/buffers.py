"""Driver-allocated buffers of the sample driver (NNAPI memory domains, HAL 1.3
``IDevice::allocate`` / ``IBuffer``, feature level 4).

:func:`allocate_buffer` implements ``SampleDevice.allocate``: it validates the buffer
descriptor and roles (the rules of AOSP ``validateMemoryDesc``), creates a
:class:`SampleBuffer` whose storage is a :class:`SharedMemory` sized from the operand and
registers it under a positive token in the device's :class:`BufferTracker`.

:func:`resolve_request` is called by ``SamplePreparedModel.execute_synchronously``: it
replaces every ``MemoryDomainToken`` pool by the buffer's storage (checking the buffer's
roles, dimensions and initialization, as AOSP ``ManagedBuffer::validateRequest`` does),
and the returned :class:`ResolvedBuffers` marks output buffers initialized after a
successful execution (uninitialized after a failed one).

Sizes are in bytes. Every failure raises :class:`HalError`.
"""
from __future__ import annotations

import itertools
import math
import threading
import weakref
from dataclasses import dataclass, replace

from ..errors import HalError
from ..hal.interfaces import IBuffer
from ..hal.memory import SharedMemory
from ..hal.types import BufferDesc, BufferRole, DataLocation, MemoryDomainToken, OutputShape, Request
from ..hal.validate import operand_byte_size
from ..types import ErrorStatus, OperandType, is_tensor_type

INPUT, OUTPUT = "input", "output"


def _invalid(message: str) -> HalError:
    return HalError(ErrorStatus.INVALID_ARGUMENT, message)


def combine_dimensions(a, b) -> list[int] | None:
    """The dimensions compatible with both ``a`` and ``b`` (0 = unknown axis, [] = unknown
    rank), or None when they contradict: both ranks known and different, or an axis known
    in both with different values (NNAPI's rule for memory descriptor dimensions)."""
    a, b = [int(d) for d in a], [int(d) for d in b]
    if not a:
        return b
    if not b:
        return a
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            return None
        out.append(x or y)
    return out


def fully_specified(operand_type, dims) -> bool:
    """Whether ``dims`` give the element count of an operand of ``operand_type`` (scalars:
    always; tensors: known rank and no 0 axis)."""
    if not is_tensor_type(operand_type):
        return not dims
    return bool(dims) and 0 not in dims


@dataclass(frozen=True)
class OperandMeta:
    """What every role of a buffer must agree on: type, scale, zero point and per-channel
    quantization (dimensions are combined separately)."""

    type: OperandType
    scale: float
    zero_point: int
    extra_params: object = None

    @classmethod
    def of(cls, operand) -> "OperandMeta":
        return cls(OperandType(operand.type), float(operand.scale), int(operand.zero_point),
                   operand.extra_params)


class BufferTracker:
    """A device's token -> buffer table. Tokens are positive and never reused; a buffer's
    token disappears when it is released or garbage collected (AOSP ``BufferTracker``)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._buffers: "weakref.WeakValueDictionary[int, SampleBuffer]" = weakref.WeakValueDictionary()
        self._next = itertools.count(1)

    def add(self, buffer: "SampleBuffer") -> int:
        with self._lock:
            token = next(self._next)
            self._buffers[token] = buffer
            return token

    def get(self, token: int) -> "SampleBuffer | None":
        with self._lock:
            return self._buffers.get(token)

    def release(self, token: int) -> None:
        with self._lock:
            self._buffers.pop(token, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._buffers)


def tracker_of(device) -> BufferTracker:
    """The :class:`BufferTracker` of ``device`` (created on first use)."""
    tracker = getattr(device, "_buffer_tracker", None)
    if tracker is None:
        tracker = device._buffer_tracker = BufferTracker()
    return tracker


class SampleBuffer(IBuffer):
    """A buffer of the sample driver: ``storage`` (SharedMemory of ``size`` bytes) holding
    one operand of type ``meta.type`` and ``dimensions`` (fully specified), usable in the
    ``roles`` (prepared model, "input"/"output", io index) it was allocated for.

    ``initialized`` is False until an execution writes it as an output or
    :meth:`copy_from` succeeds; ``token`` is its MemoryDomainToken value (> 0).
    """

    def __init__(self, tracker: BufferTracker, meta: OperandMeta, dimensions: list[int], roles):
        self.meta = meta
        self.dimensions = list(dimensions)
        self.roles = frozenset(roles)
        self.size = operand_byte_size(meta.type, self.dimensions)
        self.storage = SharedMemory(self.size)
        self.initialized = False
        self._lock = threading.Lock()
        self._tracker = tracker
        self.token = tracker.add(self)

    def copy_to(self, dst) -> None:
        """Copy the buffer's ``size`` bytes into shared memory ``dst``. Raises HalError:
        INVALID_ARGUMENT when ``dst`` is not a memory of exactly ``size`` bytes,
        GENERAL_FAILURE when the buffer is uninitialized (HAL ``IBuffer::copyTo``)."""
        if not hasattr(dst, "buffer") or isinstance(dst, MemoryDomainToken):
            raise _invalid("copy_to: the destination is not a shared memory")
        with self._lock:
            if not self.initialized:
                raise HalError(ErrorStatus.GENERAL_FAILURE, "copy_to: the buffer is uninitialized")
            if dst.size != self.size:
                raise _invalid(f"copy_to: destination has {dst.size} bytes, the buffer holds {self.size}")
            try:
                dst.buffer[:self.size] = self.storage.buffer
            except TypeError as e:  # read-only mapping
                raise _invalid(f"copy_to: the destination is not writable ({e})") from None

    def copy_from(self, src, dimensions) -> None:
        """Fill the buffer from shared memory ``src`` holding an operand of ``dimensions``
        (compatible with the buffer's and fully specified; [] = the buffer's). Raises
        HalError(INVALID_ARGUMENT) for incompatible or not fully specified dimensions (AOSP
        ``ManagedBuffer::validateCopyFrom``) or a size other than the operand's byte size; the
        buffer is initialized on success and uninitialized on failure (HAL
        ``IBuffer::copyFrom``)."""
        with self._lock:
            try:
                if not hasattr(src, "buffer") or isinstance(src, MemoryDomainToken):
                    raise _invalid("copy_from: the source is not a shared memory")
                dims = [int(d) for d in (dimensions or [])]
                if dims and not is_tensor_type(self.meta.type):
                    raise _invalid(f"copy_from: a scalar buffer takes no dimensions, got {dims}")
                if dims and 0 in dims:
                    raise _invalid(f"copy_from: dimensions {dims} are not fully specified")
                combined = combine_dimensions(self.dimensions, dims)
                if combined is None or combined != self.dimensions:
                    raise _invalid(f"copy_from: dimensions {dims} are incompatible with the "
                                   f"buffer's {self.dimensions}")
                if src.size != self.size:
                    raise _invalid(f"copy_from: source has {src.size} bytes, "
                                   f"{self.meta.type.name}{self.dimensions} needs {self.size}")
                self.storage.buffer[:] = src.buffer[:self.size]
            except BaseException:
                self.initialized = False
                raise
            self.initialized = True

    def release(self) -> None:
        """Unregister the token (the buffer can no longer be used in requests)."""
        self._tracker.release(self.token)

    def __repr__(self) -> str:
        return (f"SampleBuffer(token={self.token}, {self.meta.type.name}{self.dimensions}, "
                f"{'initialized' if self.initialized else 'uninitialized'})")


def allocate_buffer(device, desc: BufferDesc, prepared_models, input_roles, output_roles,
                    prepared_model_type) -> tuple[SampleBuffer, int]:
    """Allocate a :class:`SampleBuffer` on ``device`` (HAL ``IDevice::allocate``).

    Rules (AOSP ``validateMemoryDesc`` / sample driver ``allocate``), HalError
    INVALID_ARGUMENT otherwise: at least one prepared model, each a
    ``prepared_model_type`` of this device; at least one role; every role's model_index
    in range of ``prepared_models``, io_index in range of that model's inputs/outputs,
    probability in (0, 1], no role given twice; all roles' operands agree on
    type/scale/zeroPoint/per-channel quantization and have compatible dimensions, also
    with ``desc.dimensions``; no dimensions for a scalar. GENERAL_FAILURE when the
    combined dimensions are not fully specified (the sample driver has no dynamic-shape
    buffers). Returns (buffer, token > 0).
    """
    if not isinstance(desc, BufferDesc):
        raise _invalid("allocate: desc is not a BufferDesc")
    desc_dims = list(desc.dimensions)
    if any(not isinstance(d, int) or isinstance(d, bool) or not 0 <= d <= 0xFFFFFFFF for d in desc_dims):
        raise _invalid(f"allocate: desc dimensions {desc_dims} must be uint32 values")
    prepared_models = list(prepared_models or [])
    if not prepared_models:
        raise _invalid("allocate: no prepared models")
    for i, pm in enumerate(prepared_models):
        if not isinstance(pm, prepared_model_type) or getattr(pm, "device", None) is not device:
            raise _invalid(f"allocate: prepared model {i} was not prepared by this device")
    roles = [(INPUT, r) for r in (input_roles or [])] + [(OUTPUT, r) for r in (output_roles or [])]
    if not roles:
        raise _invalid("allocate: no input or output roles")
    meta, dims, seen = None, desc_dims, set()
    for kind, role in roles:
        where = f"allocate: {kind} role {role}"
        if not isinstance(role, BufferRole):
            raise _invalid(f"{where}: not a BufferRole")
        if not isinstance(role.model_index, int) or not 0 <= role.model_index < len(prepared_models):
            raise _invalid(f"{where}: model_index out of range ({len(prepared_models)} prepared models)")
        pm = prepared_models[role.model_index]
        sg = pm.model.main
        indexes = sg.input_indexes if kind == INPUT else sg.output_indexes
        if not isinstance(role.io_index, int) or not 0 <= role.io_index < len(indexes):
            raise _invalid(f"{where}: io_index out of range (the model has {len(indexes)} {kind}s)")
        p = role.probability
        if not isinstance(p, (int, float)) or math.isnan(p) or not 0.0 < p <= 1.0:
            raise _invalid(f"{where}: probability {p} must be in (0, 1]")
        key = (id(pm), kind, role.io_index)
        if key in seen:
            raise _invalid(f"{where}: the same role is given twice")
        seen.add(key)
        operand = sg.operands[indexes[role.io_index]]
        this = OperandMeta.of(operand)
        if meta is not None and this != meta:
            raise _invalid(f"{where}: operand {this.type.name} scale {this.scale} zeroPoint "
                           f"{this.zero_point} differs from the other roles' {meta.type.name} "
                           f"scale {meta.scale} zeroPoint {meta.zero_point}")
        meta = this
        if not is_tensor_type(this.type) and dims:
            raise _invalid(f"{where}: scalar operand {this.type.name} cannot have dimensions {dims}")
        combined = combine_dimensions(dims, operand.dimensions)
        if combined is None:
            raise _invalid(f"{where}: operand dimensions {list(operand.dimensions)} are incompatible "
                           f"with {dims}")
        dims = combined
    if not fully_specified(meta.type, dims):
        raise HalError(ErrorStatus.GENERAL_FAILURE,
                       f"allocate: the sample driver needs fully specified dimensions, got {dims}")
    buffer_roles = [(prepared_models[r.model_index], kind, r.io_index) for kind, r in roles]
    buffer = SampleBuffer(tracker_of(device), meta, dims, buffer_roles)
    return buffer, buffer.token


class ResolvedBuffers:
    """The driver buffers a resolved request writes (see :func:`resolve_request`).

    Use as a context manager around the execution: on an exception the output buffers
    become uninitialized, and OUTPUT_INSUFFICIENT_SIZE on a buffer output is turned into
    GENERAL_FAILURE (a buffer's dimensions are fixed, so the model contradicts them).
    Call :meth:`written` with the execution's result on success.
    """

    def __init__(self, outputs: list[tuple[int, SampleBuffer]]):
        self.outputs = outputs

    def __enter__(self) -> "ResolvedBuffers":
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            return False
        for _, buffer in self.outputs:
            buffer.initialized = False
        if isinstance(exc, HalError) and exc.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
            shapes = exc.output_shapes or []
            bad = [j for j, _ in self.outputs if j < len(shapes) and not shapes[j].is_sufficient]
            if bad:
                raise HalError(ErrorStatus.GENERAL_FAILURE,
                               f"output {bad[0]}: the driver buffer is too small for shape "
                               f"{shapes[bad[0]].dimensions}") from None
        return False

    def written(self, result):
        """Mark the output buffers initialized; returns ``result`` (shapes, timing)."""
        shapes = result[0] if isinstance(result, tuple) else result
        for j, buffer in self.outputs:
            if j < len(shapes) and isinstance(shapes[j], OutputShape) and \
                    list(shapes[j].dimensions) != buffer.dimensions:
                buffer.initialized = False
                raise HalError(ErrorStatus.GENERAL_FAILURE,
                               f"output {j}: shape {shapes[j].dimensions} does not fit the driver "
                               f"buffer's {buffer.dimensions}")
            buffer.initialized = True
        return result


def resolve_request(device, prepared_model, request: Request) -> tuple[Request, ResolvedBuffers]:
    """A copy of ``request`` whose MemoryDomainToken pools are the storage of ``device``'s
    buffers, with those arguments located at (0, buffer size) and given the buffer's
    dimensions when they give none; plus the buffers written as outputs.

    Raises HalError: INVALID_ARGUMENT for an unknown token, a token argument with a
    non-zero offset/length, a buffer used in a role it was not allocated for (by
    ``prepared_model``), incompatible dimensions, or one buffer used as an input and an
    output or as two outputs; GENERAL_FAILURE when an input buffer is uninitialized
    (AOSP ``ManagedBuffer::validateRequest``). A request without tokens is returned as is.
    """
    pools = list(request.pools)
    buffers: dict[int, SampleBuffer] = {}
    for i, pool in enumerate(pools):
        if isinstance(pool, MemoryDomainToken):
            buffer = tracker_of(device).get(pool.token) if isinstance(pool.token, int) else None
            if buffer is None:
                raise _invalid(f"request pool {i}: unknown memory domain token {pool.token}")
            buffers[i] = buffer
            pools[i] = buffer.storage
    if not buffers:
        return request, ResolvedBuffers([])
    used: set[int] = set()
    outputs: list[tuple[int, SampleBuffer]] = []
    args = {INPUT: [], OUTPUT: []}
    for kind, arguments in ((INPUT, request.inputs), (OUTPUT, request.outputs)):
        for j, arg in enumerate(arguments):
            loc = arg.location
            if arg.has_no_value or loc.pool_index not in buffers:
                args[kind].append(arg)
                continue
            where = f"request {kind} {j}"
            buffer = buffers[loc.pool_index]
            if loc.offset != 0 or loc.length != 0:
                raise _invalid(f"{where}: a driver buffer (token {request.pools[loc.pool_index].token}) "
                               f"needs offset 0 and length 0, got {loc}")
            if (prepared_model, kind, j) not in buffer.roles:
                raise _invalid(f"{where}: the driver buffer was not allocated for this role")
            if kind == INPUT and not buffer.initialized:
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: the driver buffer is uninitialized")
            if kind == OUTPUT:
                if id(buffer) in used:
                    raise _invalid(f"{where}: the driver buffer is also another input or output")
                outputs.append((j, buffer))
            used.add(id(buffer))
            dims = list(arg.dimensions)
            combined = combine_dimensions(buffer.dimensions, dims)
            if combined is None or combined != buffer.dimensions:
                raise _invalid(f"{where}: dimensions {dims} are incompatible with the driver "
                               f"buffer's {buffer.dimensions}")
            args[kind].append(replace(arg, location=DataLocation(loc.pool_index, 0, buffer.size),
                                      dimensions=list(buffer.dimensions)))
    return Request(args[INPUT], args[OUTPUT], pools), ResolvedBuffers(outputs)
