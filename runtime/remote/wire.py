"""Conversions between the HAL dataclasses (:mod:`runtime.hal.types`) and the messages of
``hal.proto``, used by both ends: :mod:`runtime.remote.proxy` (client) and
:mod:`runtime.remote.host`.

Codes travel as plain integers; decoding turns a known code into its enum member and keeps an
unknown one (a malformed model's) as an int, so the driver sees what the client sent. Pools
are encoded by :func:`pool_to_wire` (shared region, inline bytes, driver-buffer token, or
"not a memory") and decoded by :func:`pool_from_wire`.
"""
from __future__ import annotations

import enum
import mmap
import os

from ..errors import HalError
from ..hal.memory import SharedMemory
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
           "code_of", "MappedRegion"]


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


def model_to_wire(model: Model, share: bool) -> pb.Model:
    """``model`` as a message; its pools shared when ``share`` and they can be, else copied.
    Raises ValueError (or TypeError) for a value the message cannot hold."""
    return pb.Model(main=_subgraph_to_wire(model.main), referenced=[_subgraph_to_wire(s) for s in model.referenced],
                    operand_values=bytes(model.operand_values), pools=[pool_to_wire(p, share) for p in model.pools],
                    relax_computation_float32_to_float16=bool(model.relax_computation_float32_to_float16),
                    extension_name_to_prefix=[pb.ExtensionNameAndPrefix(name=e.name, prefix=e.prefix)
                                              for e in model.extension_name_to_prefix])


def model_from_wire(m: pb.Model) -> Model:
    """The HAL model of a message (pools mapped or copied, see :func:`pool_from_wire`)."""
    return Model(_subgraph_from_wire(m.main), [_subgraph_from_wire(s) for s in m.referenced],
                 m.operand_values, [pool_from_wire(p) for p in m.pools], m.relax_computation_float32_to_float16,
                 [ExtensionNameAndPrefix(e.name, e.prefix) for e in m.extension_name_to_prefix])


# ---- pools -------------------------------------------------------------------------------

def pool_to_wire(pool, share: bool) -> pb.Pool:
    """A pool: its shared region (``share`` and the pool has one), a driver-buffer token, an
    inline copy, or "invalid" for an object that is not a readable memory."""
    if isinstance(pool, MemoryDomainToken):
        return pb.Pool(token=pool.token) if pool.token >= 0 else pb.Pool(invalid=True)
    region = share and getattr(pool, "region", None) and pool.region()
    if region:
        path, offset, size, read_only = region
        return pb.Pool(shared=pb.SharedRegion(path=path, offset=offset, size=size, read_only=read_only))
    try:
        return pb.Pool(data=bytes(pool.buffer))
    except (AttributeError, TypeError, ValueError):
        return pb.Pool(invalid=True)


class MappedRegion(SharedMemory):
    """Host side of a :class:`pb.SharedRegion`: ``size`` bytes of the file at ``path`` from
    ``offset``, mapped shared (read-only when asked). Raises OSError when it cannot be
    opened or mapped."""

    def __init__(self, path: str, offset: int, size: int, read_only: bool):
        fd = os.open(path, os.O_RDONLY if read_only else os.O_RDWR)
        try:
            start = offset - offset % mmap.ALLOCATIONGRANULARITY
            prot = mmap.PROT_READ if read_only else mmap.PROT_READ | mmap.PROT_WRITE
            self._mmap = mmap.mmap(fd, offset - start + max(size, 1), flags=mmap.MAP_SHARED, prot=prot, offset=start)
        finally:
            os.close(fd)
        view = memoryview(self._mmap)[offset - start:offset - start + size]
        self.buffer = view.toreadonly() if read_only else view
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"MappedRegion(size={self._size})"


class _NotAMemory:
    """What the host hands the driver for a pool the client said is not a memory."""

    def __repr__(self) -> str:
        return "<not a memory>"


def pool_from_wire(m: pb.Pool):
    """The host-side pool of a message: a :class:`MappedRegion`, a :class:`SharedMemory`
    copy, a :class:`MemoryDomainToken`, or an object without ``buffer`` (invalid). A region
    that cannot be mapped raises HalError(INVALID_ARGUMENT)."""
    kind = m.WhichOneof("kind")
    if kind == "data":
        return SharedMemory(data=m.data)
    if kind == "shared":
        r = m.shared
        try:
            return MappedRegion(r.path, r.offset, r.size, r.read_only)
        except (OSError, ValueError) as e:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"cannot map shared memory {r.path}: {e}") from None
    if kind == "token":
        return MemoryDomainToken(m.token)
    return _NotAMemory()


# ---- request -----------------------------------------------------------------------------

def _argument_to_wire(a: RequestArgument) -> pb.RequestArgument:
    return pb.RequestArgument(has_no_value=bool(a.has_no_value), location=_location_to_wire(a.location),
                              dimensions=list(a.dimensions))


def _argument_from_wire(m: pb.RequestArgument) -> RequestArgument:
    return RequestArgument(m.has_no_value, _location_from_wire(m.location), list(m.dimensions))


def request_to_wire(request: Request, share: bool) -> pb.Request:
    """``request`` as a message (pools as :func:`pool_to_wire`)."""
    return pb.Request(inputs=[_argument_to_wire(a) for a in request.inputs],
                      outputs=[_argument_to_wire(a) for a in request.outputs],
                      pools=[pool_to_wire(p, share) for p in request.pools])


def request_from_wire(m: pb.Request) -> Request:
    """The host-side request of a message."""
    return Request([_argument_from_wire(a) for a in m.inputs], [_argument_from_wire(a) for a in m.outputs],
                   [pool_from_wire(p) for p in m.pools])


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
