"""Conversions between the HAL dataclasses (:mod:`runtime.hal.types`) and the messages of
``hal.proto``, used by both ends: :mod:`runtime.remote.proxy` (client) and
:mod:`runtime.remote.host`.

Codes travel as plain integers; decoding turns a known code into its enum member and keeps an
unknown one (a malformed model's) as an int, so the driver sees what the client sent. Pools
are encoded by :func:`pool_to_wire` (shared region, inline bytes, driver-buffer token, or
"not a memory") and decoded by :func:`pool_from_wire`.

Shared memory crosses as a file descriptor, never a path: the client collects the descriptors
a message refers to in an :class:`FdList` (a ``SharedRegion`` or ``CacheFile`` holds an index
into it) and the local transport sends them with the frame (SCM_RIGHTS); the host decodes with
the frame's received descriptors (``fds``) and maps only a regular file sealed against
shrinking (:func:`map_region`). Over gRPC no descriptors exist (``fds`` empty), so there every
pool travels inline. Counts are checked against :mod:`runtime.hal.model_limits` on the message
itself, before any HAL object is built.
"""
from __future__ import annotations

import enum
import fcntl
import mmap
import os
import stat

from ..errors import HalError
from ..hal.memory import SharedMemory, shrink_sealed
from ..hal.model_limits import check_counts, check_model
from ..hal.types import (BufferRole, Capabilities, DataLocation, Extension, ExtensionNameAndPrefix,
                         ExtensionOperandTypeInformation, MemoryDomainToken, Model, Operand, Operation,
                         OutputShape, PerformanceInfo, Request, RequestArgument, Subgraph,
                         SymmPerChannelQuantParams, Timing)
from ..types import ErrorStatus, OperandLifeTime, OperandType, OperationType
from . import hal_pb2 as pb

__all__ = ["pb", "model_to_wire", "model_from_wire", "request_to_wire", "request_from_wire",
           "pool_to_wire", "pool_from_wire", "status_to_wire", "raise_for", "capabilities_to_wire",
           "capabilities_from_wire", "extensions_to_wire", "extensions_from_wire", "shapes_to_wire",
           "shapes_from_wire", "timing_to_wire", "timing_from_wire", "roles_to_wire", "roles_from_wire",
           "code_of", "MappedRegion", "FdList", "MAX_FDS", "map_region", "fd_of", "access_mode", "file_kind"]

#: Most file descriptors one message (one frame of the local transport) refers to: the
#: kernel's SCM_MAX_FD, the most one sendmsg(2) carries. Pools past it travel inline.
MAX_FDS = 253


def code_of(enum_type: type[enum.IntEnum], value: int):
    """``enum_type(value)`` when it is a known code, else the int itself."""
    try:
        return enum_type(value)
    except ValueError:
        return int(value)


# ---- status ------------------------------------------------------------------------------

def status_to_wire(error: HalError | None = None) -> pb.Status:
    """The reply status: NONE, or a HalError's status, message and output shapes."""
    if error is None:
        return pb.Status()
    return pb.Status(code=int(error.status), message=error.message or "",
                     output_shapes=shapes_to_wire(error.output_shapes or []))


def raise_for(status: pb.Status) -> None:
    """Raise the HalError a non-NONE reply status carries."""
    if status.code:
        shapes = shapes_from_wire(status.output_shapes) or None
        raise HalError(code_of(ErrorStatus, status.code), status.message, shapes)


# ---- model -------------------------------------------------------------------------------

def _location_to_wire(loc: DataLocation) -> pb.DataLocation:
    return pb.DataLocation(pool_index=loc.pool_index, offset=loc.offset, length=loc.length,
                           padding=getattr(loc, "padding", 0))


def _location_from_wire(m: pb.DataLocation) -> DataLocation:
    return DataLocation(m.pool_index, m.offset, m.length, m.padding)


def _operand_to_wire(o: Operand) -> pb.Operand:
    m = pb.Operand(type=int(o.type), dimensions=list(o.dimensions), number_of_consumers=o.number_of_consumers,
                   scale=float(o.scale), zero_point=int(o.zero_point), lifetime=int(o.lifetime),
                   location=_location_to_wire(o.location))
    extra = o.extra_params
    if isinstance(extra, SymmPerChannelQuantParams):
        m.channel_quant.scales.extend(float(s) for s in extra.scales)
        m.channel_quant.channel_dim = int(extra.channel_dim)
    elif isinstance(extra, (bytes, bytearray)):
        m.extension = bytes(extra)
    return m


def _operand_from_wire(m: pb.Operand) -> Operand:
    kind = m.WhichOneof("extra_params")
    extra = (SymmPerChannelQuantParams(tuple(m.channel_quant.scales), m.channel_quant.channel_dim)
             if kind == "channel_quant" else m.extension if kind == "extension" else None)
    return Operand(code_of(OperandType, m.type), list(m.dimensions), m.number_of_consumers, m.scale,
                   m.zero_point, code_of(OperandLifeTime, m.lifetime), _location_from_wire(m.location), extra)


def _subgraph_to_wire(sg: Subgraph) -> pb.Subgraph:
    return pb.Subgraph(operands=[_operand_to_wire(o) for o in sg.operands],
                       operations=[pb.Operation(type=int(op.type), inputs=list(op.inputs), outputs=list(op.outputs))
                                   for op in sg.operations],
                       input_indexes=list(sg.input_indexes), output_indexes=list(sg.output_indexes))


def _subgraph_from_wire(m: pb.Subgraph) -> Subgraph:
    return Subgraph([_operand_from_wire(o) for o in m.operands],
                    [Operation(code_of(OperationType, op.type), list(op.inputs), list(op.outputs))
                     for op in m.operations],
                    list(m.input_indexes), list(m.output_indexes))


def model_to_wire(model: Model, fds: "FdList | None") -> pb.Model:
    """``model`` as a message; its pools shared through ``fds`` when given and they can be,
    else copied (:func:`pool_to_wire`). Raises ValueError (or TypeError) for a value the
    message cannot hold."""
    return pb.Model(main=_subgraph_to_wire(model.main), referenced=[_subgraph_to_wire(s) for s in model.referenced],
                    operand_values=bytes(model.operand_values), pools=[pool_to_wire(p, fds) for p in model.pools],
                    relax_computation_float32_to_float16=bool(model.relax_computation_float32_to_float16),
                    extension_name_to_prefix=[pb.ExtensionNameAndPrefix(name=e.name, prefix=e.prefix)
                                              for e in model.extension_name_to_prefix])


def model_from_wire(m: pb.Model, fds=(), what: str = "the model") -> Model:
    """The HAL model of a message, its pools mapped from the frame's descriptors ``fds`` or
    copied (:func:`pool_from_wire`). The counts of the message (operands, operations,
    subgraphs, pools) are checked first, before any HAL object is built: over a limit of
    :mod:`runtime.hal.model_limits` is HalError(INVALID_ARGUMENT) naming ``what``."""
    check_model(what, m.main, m.referenced, m.pools)
    return Model(_subgraph_from_wire(m.main), [_subgraph_from_wire(s) for s in m.referenced],
                 m.operand_values, [pool_from_wire(p, fds, f"{what}: pool {k}") for k, p in enumerate(m.pools)],
                 m.relax_computation_float32_to_float16,
                 [ExtensionNameAndPrefix(e.name, e.prefix) for e in m.extension_name_to_prefix])


# ---- pools -------------------------------------------------------------------------------

class FdList:
    """The file descriptors an outgoing message refers to, in frame order (``fds``), each
    once; at most :data:`MAX_FDS`. The descriptors stay owned by their memories or files,
    which must outlive the call."""

    def __init__(self):
        self.fds: list[int] = []

    def index(self, fd: int) -> int | None:
        """The index of ``fd`` in the frame's list (added when new); None when the list is
        full (the caller copies the bytes instead)."""
        try:
            return self.fds.index(fd)
        except ValueError:
            if len(self.fds) >= MAX_FDS:
                return None
            self.fds.append(fd)
            return len(self.fds) - 1


def pool_to_wire(pool, fds: FdList | None) -> pb.Pool:
    """A pool: its shared region (``fds`` given, the pool has a region and the list has
    room: the region's descriptor goes into ``fds``), a driver-buffer token, an inline copy,
    or "invalid" for an object that is not a readable memory."""
    if isinstance(pool, MemoryDomainToken):
        return pb.Pool(token=pool.token) if pool.token >= 0 else pb.Pool(invalid=True)
    region = fds is not None and getattr(pool, "region", None) and pool.region()
    if region:
        fd, offset, size, read_only = region
        index = fds.index(fd)
        if index is not None:
            return pb.Pool(shared=pb.SharedRegion(fd_index=index, offset=offset, size=size, read_only=read_only))
    try:
        return pb.Pool(data=bytes(pool.buffer))
    except (AttributeError, TypeError, ValueError):
        return pb.Pool(invalid=True)


def fd_of(fds, index: int, what: str) -> int:
    """Descriptor ``index`` of the frame's received ``fds``. Raises
    HalError(INVALID_ARGUMENT) naming ``what`` when the frame did not carry it (gRPC carries
    none)."""
    if not 0 <= index < len(fds):
        raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{what}: descriptor {index} was not sent with the call "
                       f"({len(fds)} descriptor(s) received; only the local transport carries descriptors)")
    return fds[index]


class MappedRegion(SharedMemory):
    """Host side of a :class:`pb.SharedRegion`: ``size`` bytes of the file of descriptor
    ``fd`` from ``offset``, mapped shared (read-only when asked). The mapping keeps its own
    duplicate of the descriptor, so ``fd`` may be closed afterwards. Checks nothing: use
    :func:`map_region`. Raises OSError or ValueError when mmap fails."""

    def __init__(self, fd: int, offset: int, size: int, read_only: bool):
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        prot = mmap.PROT_READ if read_only else mmap.PROT_READ | mmap.PROT_WRITE
        self._mmap = mmap.mmap(fd, offset - start + size, flags=mmap.MAP_SHARED, prot=prot, offset=start)
        view = memoryview(self._mmap)[offset - start:offset - start + size]
        self.buffer = view.toreadonly() if read_only else view
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"MappedRegion(size={self._size})"


def map_region(r: pb.SharedRegion, fds, what: str) -> SharedMemory:
    """Map shared region ``r`` from the frame's received descriptors ``fds``, after checking,
    without blocking, that the descriptor is a regular file (a memfd is one; a FIFO, socket,
    directory or device is not) sealed against shrinking (``F_SEAL_SHRINK``: a file that
    could shrink under the mapping would kill this process with SIGBUS; such a file is
    refused, not copied, since outputs must reach the client's file), at least ``offset +
    size`` bytes long, and open for writing unless ``r.read_only``. A zero-sized region is an
    empty in-process pool.

    Raises HalError(INVALID_ARGUMENT) naming ``what`` (e.g. ``execute: request pool 1``) and
    the rule broken."""
    fd = fd_of(fds, r.fd_index, what)
    where = f"{what}: descriptor {r.fd_index}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{where} is not a regular file or memfd "
                           f"({file_kind(st.st_mode)}); only those can be mapped")
        if not shrink_sealed(fd):
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{where} is not sealed against shrinking (F_SEAL_SHRINK): "
                           f"a truncation would kill the driver process; send a sealed memfd or the bytes inline")
        size = os.fstat(fd).st_size  # after the seal check: it cannot shrink below this any more
        if r.offset + r.size > size:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{where}: bytes [{r.offset}, {r.offset + r.size}) are past "
                           f"the end of the file ({size} bytes)")
        if not r.read_only and access_mode(fd) != os.O_RDWR:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{where}: the region is writable but the descriptor is "
                           f"not open for reading and writing")
        if r.size == 0:
            return SharedMemory(0)
        return MappedRegion(fd, r.offset, r.size, r.read_only)
    except (OSError, ValueError, OverflowError) as e:
        raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{where}: cannot map {r.size} bytes from offset "
                       f"{r.offset}: {e}") from None


def access_mode(fd: int) -> int:
    """``O_RDONLY``, ``O_WRONLY`` or ``O_RDWR``: how ``fd`` was opened (``F_GETFL``).
    Raises OSError for a descriptor that is not open."""
    return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE


def file_kind(mode: int) -> str:
    """What a non-regular file of ``st_mode`` ``mode`` is, for messages ("a FIFO or pipe", ...)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO or pipe"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return f"file mode {mode:o}"


class _NotAMemory:
    """What the host hands the driver for a pool the client said is not a memory."""

    def __repr__(self) -> str:
        return "<not a memory>"


def pool_from_wire(m: pb.Pool, fds=(), what: str = "pool"):
    """The host-side pool of a message: a :class:`MappedRegion` of one of the frame's
    received descriptors ``fds`` (:func:`map_region`), a :class:`SharedMemory` copy, a
    :class:`MemoryDomainToken`, or an object without ``buffer`` (invalid). A region that
    cannot be mapped raises HalError(INVALID_ARGUMENT) naming ``what``."""
    kind = m.WhichOneof("kind")
    if kind == "data":
        return SharedMemory(data=m.data)
    if kind == "shared":
        return map_region(m.shared, fds, what)
    if kind == "token":
        return MemoryDomainToken(m.token)
    return _NotAMemory()


# ---- request -----------------------------------------------------------------------------

def _argument_to_wire(a: RequestArgument) -> pb.RequestArgument:
    return pb.RequestArgument(has_no_value=bool(a.has_no_value), location=_location_to_wire(a.location),
                              dimensions=list(a.dimensions))


def _argument_from_wire(m: pb.RequestArgument) -> RequestArgument:
    return RequestArgument(m.has_no_value, _location_from_wire(m.location), list(m.dimensions))


def request_to_wire(request: Request, fds: FdList | None) -> pb.Request:
    """``request`` as a message (pools as :func:`pool_to_wire`)."""
    return pb.Request(inputs=[_argument_to_wire(a) for a in request.inputs],
                      outputs=[_argument_to_wire(a) for a in request.outputs],
                      pools=[pool_to_wire(p, fds) for p in request.pools])


def request_from_wire(m: pb.Request, fds=(), what: str = "the request") -> Request:
    """The host-side request of a message (pools as :func:`pool_from_wire`). Its argument
    and pool counts are checked first (:mod:`runtime.hal.model_limits`): over a limit is
    HalError(INVALID_ARGUMENT) naming ``what``."""
    check_counts(what, inputs=len(m.inputs), outputs=len(m.outputs), pools=len(m.pools))
    return Request([_argument_from_wire(a) for a in m.inputs], [_argument_from_wire(a) for a in m.outputs],
                   [pool_from_wire(p, fds, f"{what}: pool {k}") for k, p in enumerate(m.pools)])


# ---- results, capabilities, extensions, roles --------------------------------------------

def shapes_to_wire(shapes) -> list[pb.OutputShape]:
    return [pb.OutputShape(dimensions=list(s.dimensions), is_sufficient=bool(s.is_sufficient)) for s in shapes]


def shapes_from_wire(shapes) -> list[OutputShape]:
    return [OutputShape(list(s.dimensions), s.is_sufficient) for s in shapes]


def timing_to_wire(t: Timing) -> pb.Timing:
    return pb.Timing(time_on_device=int(t.time_on_device), time_in_driver=int(t.time_in_driver))


def timing_from_wire(m: pb.Timing) -> Timing:
    return Timing(m.time_on_device, m.time_in_driver)


def _perf(p: PerformanceInfo) -> pb.PerformanceInfo:
    return pb.PerformanceInfo(exec_time=float(p.exec_time), power_usage=float(p.power_usage))


def _perf_from(m: pb.PerformanceInfo) -> PerformanceInfo:
    return PerformanceInfo(m.exec_time, m.power_usage)


def capabilities_to_wire(c: Capabilities) -> pb.Capabilities:
    return pb.Capabilities(
        relaxed_float32_to_float16_performance_scalar=_perf(c.relaxed_float32_to_float16_performance_scalar),
        relaxed_float32_to_float16_performance_tensor=_perf(c.relaxed_float32_to_float16_performance_tensor),
        operand_performance=[pb.OperandPerformance(type=int(t), info=_perf(p))
                             for t, p in c.operand_performance.items()],
        if_performance=_perf(c.if_performance), while_performance=_perf(c.while_performance))


def capabilities_from_wire(m: pb.Capabilities) -> Capabilities:
    return Capabilities(_perf_from(m.relaxed_float32_to_float16_performance_scalar),
                        _perf_from(m.relaxed_float32_to_float16_performance_tensor),
                        {code_of(OperandType, p.type): _perf_from(p.info) for p in m.operand_performance},
                        _perf_from(m.if_performance), _perf_from(m.while_performance))


def extensions_to_wire(extensions) -> list[pb.Extension]:
    return [pb.Extension(name=e.name, operand_types=[
        pb.ExtensionOperandTypeInformation(type=t.type, is_tensor=t.is_tensor, byte_size=t.byte_size)
        for t in e.operand_types]) for e in extensions]


def extensions_from_wire(extensions) -> list[Extension]:
    return [Extension(e.name, [ExtensionOperandTypeInformation(t.type, t.is_tensor, t.byte_size)
                               for t in e.operand_types]) for e in extensions]


def roles_to_wire(roles) -> list[pb.BufferRole]:
    return [pb.BufferRole(model_index=r.model_index, io_index=r.io_index, probability=r.probability) for r in roles]


def roles_from_wire(roles) -> list[BufferRole]:
    return [BufferRole(r.model_index, r.io_index, r.probability) for r in roles]
