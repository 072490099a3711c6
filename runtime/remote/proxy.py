"""Client proxies: :class:`RemoteDevice` implements :class:`~runtime.hal.interfaces.IDevice` by
calling a driver host (:mod:`runtime.remote.host`) through a :class:`~runtime.remote.link.Link`,
so the front end and every suite use an out-of-process driver like any other.

Device queries are answered from one ``Describe`` at connection. Pools travel as
:func:`runtime.remote.wire.pool_to_wire` says: shared when the link carries file descriptors
(the local transport of ``process:`` drivers) and the host mapped the probe region sent as
one, else copied, outputs copied back; over gRPC (``endpoint:``) nothing is shared. A shared
pool or cache file is its descriptor, sent with the call (:meth:`RemoteDevice.encode`), never a
path. Cache files travel as the client's own open files (their descriptors: the host opens
them with their own access mode) or as their content. A value the wire cannot carry (an
integer beyond 64 bits) is HalError(INVALID_ARGUMENT) here.
"""
from __future__ import annotations

import itertools
import os
import threading
import time
import weakref

from ..errors import HalError
from ..hal.interfaces import IBuffer, IBurst, IDevice, IExecution, IPreparedModel
from ..hal.memory import shared_memory
from ..hal.sync import SyncFence
from ..types import DeviceTypeCode, ErrorStatus
from . import wire
from .link import Link
from .wire import pb


def _relative(deadline_ns: int | None) -> int:
    return -1 if deadline_ns is None else max(deadline_ns - time.monotonic_ns(), 0)


def _opt(value: int | None) -> int:
    return -1 if value is None else int(value)




def _copy_back(request, written) -> None:
    for pd in written:
        pool = request.pools[pd.index]
        pool.buffer[:len(pd.data)] = pd.data


class _HostObject:
    """A proxy for host object ``key`` of ``link``'s generation ``generation``; released on
    the host when the proxy is collected."""

    def __init__(self, link: Link, key: int, generation: int):
        self.link, self.key, self.generation = link, key, generation
        weakref.finalize(self, link.release_later, generation, key)

    def _call(self, method: str, message, what: str, fds=()):
        reply = self.link.call(method, message, self.generation, what, fds)
        wire.raise_for(reply.status)
        return reply


class RemoteBuffer(_HostObject, IBuffer):
    """A driver buffer in the host (``IBuffer``)."""

    def __init__(self, device: "RemoteDevice", key: int, generation: int):
        _HostObject.__init__(self, device.link, key, generation)
        self.device = device

    def copy_to(self, dst) -> None:
        message, fds = self.device.encode("IBuffer.copy_to", lambda fds: pb.CopyToRequest(
            buffer=self.key, dst=wire.pool_to_wire(dst, fds)))
        reply = self._call("CopyTo", message, "IBuffer.copy_to", fds)
        if message.dst.WhichOneof("kind") == "data":
            dst.buffer[:len(reply.data)] = reply.data

    def copy_from(self, src, dimensions) -> None:
        message, fds = self.device.encode("IBuffer.copy_from", lambda fds: pb.CopyFromRequest(
            buffer=self.key, src=wire.pool_to_wire(src, fds), dimensions=list(dimensions)))
        self._call("CopyFrom", message, "IBuffer.copy_from", fds)


class RemoteFence(SyncFence):
    """The driver's fence of a fenced execution: :meth:`wait` asks the host; once signaled,
    the outputs of inline pools are copied back and the execution info is kept for the
    callback."""

    def __init__(self, prepared: "RemotePreparedModel", key: int, request, reply):
        super().__init__()
        self.prepared, self.key, self.request = prepared, key, request
        self.info = None
        self._absorb(reply)

    def _absorb(self, reply) -> None:
        if reply.signaled and not self._event.is_set():
            _copy_back(self.request, reply.written)
            self.info = (wire.timing_from_wire(reply.timing_launched), wire.timing_from_wire(reply.timing_fenced),
                         wire.code_of(ErrorStatus, reply.callback_status))
            self.signal(wire.code_of(ErrorStatus, reply.fence_status))

    def wait(self, timeout: float | None = None) -> bool:
        if not self._event.is_set():
            message = pb.WaitFenceRequest(fence=self.key, timeout_s=-1.0 if timeout is None else float(timeout))
            self._absorb(self.prepared._call("WaitFence", message, "SyncFence.wait"))
        return self._event.is_set()

    @property
    def is_signaled(self) -> bool:
        return self.wait(0)


class RemoteFencedCallback:
    """``IFencedExecutionCallback`` of a remote fenced execution."""

    def __init__(self, fence: RemoteFence):
        self.fence = fence

    def get_execution_info(self):
        from ..hal.types import Timing
        if not self.fence.wait(0):
            return Timing(), Timing(), ErrorStatus.GENERAL_FAILURE
        return self.fence.info


class RemoteBurst(_HostObject, IBurst):
    """A burst of a remote prepared model (``IBurst``)."""

    def __init__(self, prepared: "RemotePreparedModel", key: int, generation: int):
        _HostObject.__init__(self, prepared.link, key, generation)
        IBurst.__init__(self, prepared)

    def execute_synchronously(self, request, memory_identifier_tokens, measure=0, deadline_ns=None,
                              loop_timeout_duration_ns=None):
        message, fds = self.prepared_model.device.encode("IBurst.execute", lambda fds: pb.ExecuteRequest(
            path=pb.BURST, burst=self.key, request=wire.request_to_wire(request, fds),
            memory_identifier_tokens=list(memory_identifier_tokens), measure=int(measure),
            deadline_ns=_relative(deadline_ns), loop_timeout_duration_ns=_opt(loop_timeout_duration_ns)))
        return self.prepared_model._finish(request, self._call("Execute", message, "IBurst.execute", fds))

    def release_memory_resource(self, token: int) -> None:
        message, _ = self.prepared_model.device.encode("IBurst.release_memory_resource", lambda fds: (
            pb.ReleaseMemoryRequest(burst=self.key, token=int(token))))
        self._call("ReleaseMemoryResource", message, "IBurst.release_memory_resource")


class RemoteExecution(_HostObject, IExecution):
    """A reusable execution held by the host (``IExecution``); each call sends the current
    bytes of the request's inline pools."""

    def __init__(self, prepared: "RemotePreparedModel", key: int, generation: int, request, measure, loop):
        _HostObject.__init__(self, prepared.link, key, generation)
        IExecution.__init__(self, prepared, request, measure, loop)

    def execute_synchronously(self, deadline_ns=None):
        pm = self.prepared_model
        message, fds = pm.device.encode("IExecution.execute", lambda fds: pb.ExecuteRequest(
            path=pb.REUSABLE, execution=self.key, request=wire.request_to_wire(self.request, fds),
            deadline_ns=_relative(deadline_ns)))
        return pm._finish(self.request, self._call("Execute", message, "IExecution.execute", fds))

    def execute_fenced(self, wait_for, deadline_ns=None, duration_ns=None):
        return self.prepared_model._fenced(self.request, wait_for, self.measure, deadline_ns,
                                           self.loop_timeout_duration_ns, duration_ns, execution=self.key)


class RemotePreparedModel(_HostObject, IPreparedModel):
    """A model prepared by the host (``IPreparedModel``), on every execution path."""

    def __init__(self, device: "RemoteDevice", key: int, generation: int):
        _HostObject.__init__(self, device.link, key, generation)
        self.device = device

    def _finish(self, request, reply):
        wire.raise_for(reply.status)
        _copy_back(request, reply.written)
        return wire.shapes_from_wire(reply.output_shapes), wire.timing_from_wire(reply.timing)

    def _execute(self, path, request, measure, deadline_ns, loop_timeout_duration_ns, what):
        message, fds = self.device.encode(what, lambda fds: self._execute_request(
            path, request, fds, measure, deadline_ns, loop_timeout_duration_ns))
        return self._finish(request, self.link.call("Execute", message, self.generation, what, fds))

    def _execute_request(self, path, request, fds, measure, deadline_ns, loop_timeout_duration_ns):
        return pb.ExecuteRequest(path=path, prepared_model=self.key, request=wire.request_to_wire(request, fds),
                                 measure=int(measure), deadline_ns=_relative(deadline_ns),
                                 loop_timeout_duration_ns=_opt(loop_timeout_duration_ns))

    def execute_synchronously(self, request, measure=0, deadline_ns=None, loop_timeout_duration_ns=None):
        return self._execute(pb.SYNC, request, measure, deadline_ns, loop_timeout_duration_ns,
                             "IPreparedModel.execute_synchronously")

    def execute_asynchronously(self, request, measure, deadline_ns, loop_timeout_duration_ns, callback) -> None:
        """Start the driver's own asynchronous execution; ``callback`` is notified when the
        host answers (the host answers when the driver's callback fired)."""
        what = "IPreparedModel.execute_asynchronously"

        def done(reply, error):
            if error is None:
                try:
                    shapes, timing = self._finish(request, reply)
                    callback.notify(ErrorStatus.NONE, shapes, timing)
                    return
                except HalError as e:
                    error = e
            callback.notify(error.status, error.output_shapes or [], None, error.message)
        try:
            message, fds = self.device.encode(what, lambda fds: self._execute_request(
                pb.ASYNC, request, fds, measure, deadline_ns, loop_timeout_duration_ns))
            self.link.call_later("Execute", message, self.generation, what, done, fds)
        except HalError as e:
            done(None, e)

    def execute_fenced(self, request, wait_for, measure, deadline_ns, loop_timeout_duration_ns, duration_ns):
        return self._fenced(request, wait_for, measure, deadline_ns, loop_timeout_duration_ns, duration_ns)

    def _fenced(self, request, wait_for, measure, deadline_ns, loop_timeout_duration_ns, duration_ns, execution=0):
        deps, watchers = [], []
        for fence in wait_for:
            if not isinstance(fence, SyncFence):
                deps.append(pb.FenceDependency(invalid=True))
            elif fence.is_signaled:
                deps.append(pb.FenceDependency(signaled_status=int(fence.status)))
            else:
                key = self.device.fence_id()
                deps.append(pb.FenceDependency(pending=key))
                watchers.append((key, fence))
        message, fds = self.device.encode("IPreparedModel.execute_fenced", lambda fds: pb.ExecuteFencedRequest(
            prepared_model=self.key, execution=execution, request=wire.request_to_wire(request, fds), wait_for=deps,
            measure=int(measure), deadline_ns=_relative(deadline_ns),
            loop_timeout_duration_ns=_opt(loop_timeout_duration_ns), duration_ns=_opt(duration_ns)))
        for key, fence in watchers:
            threading.Thread(target=self._forward, args=(key, fence, deadline_ns), daemon=True).start()
        reply = self._call("ExecuteFenced", message, "IPreparedModel.execute_fenced", fds)
        fence = RemoteFence(self, reply.fence, request, reply)
        return fence, RemoteFencedCallback(fence)

    def _forward(self, key: int, fence: SyncFence, deadline_ns) -> None:
        """Signal the host's copy of a client fence once it is signaled (or the deadline
        passed: then it stays pending and the driver's own wait decides)."""
        limit = None if deadline_ns is None else max(deadline_ns - time.monotonic_ns(), 0) / 1e9
        if fence.wait(limit if limit is not None else 3600):
            try:
                self.link.call("SignalFence", pb.SignalFenceRequest(pending=key, status=int(fence.status)),
                               self.generation, "SyncFence.signal")
            except HalError:
                pass

    def configure_execution_burst(self) -> IBurst:
        reply = self._call("ConfigureBurst", pb.ObjectRequest(id=self.key), "configure_execution_burst")
        return RemoteBurst(self, reply.id, self.generation)

    def create_reusable_execution(self, request, measure, loop_timeout_duration_ns) -> IExecution:
        message, fds = self.device.encode("create_reusable_execution", lambda fds: pb.ReusableRequest(
            prepared_model=self.key, request=wire.request_to_wire(request, fds), measure=int(measure),
            loop_timeout_duration_ns=_opt(loop_timeout_duration_ns)))
        reply = self._call("CreateReusableExecution", message, "create_reusable_execution", fds)
        return RemoteExecution(self, reply.id, self.generation, request, measure, loop_timeout_duration_ns)


def _cache_to_wire(files, fds: wire.FdList | None, offsets: list) -> list[pb.CacheFile]:
    """Cache files as their descriptors (``fds`` given: the host opens each with its own
    access mode and the driver reads and writes it in place, moving the file offset it
    shares with us: each file's (descriptor, offset) goes into ``offsets`` for
    :func:`_restore_offsets`) or as their content."""
    out = []
    for f in files or []:
        try:
            read_only, write_only = not f.writable(), not f.readable()
            if fds is not None:
                if not read_only:
                    f.flush()
                index = fds.index(f.fileno())
                if index is not None:
                    offsets.append((f.fileno(), os.lseek(f.fileno(), 0, os.SEEK_CUR)))
                    out.append(pb.CacheFile(fd_index=index))
                    continue
            data = b""
            if not write_only:
                f.seek(0)
                data = f.read()
            out.append(pb.CacheFile(data=data, read_only=read_only, write_only=write_only))
        except (AttributeError, OSError, ValueError):
            out.append(pb.CacheFile(invalid=True))
    return out


def _restore_offsets(offsets) -> None:
    """Put the file offsets the driver moved back where our buffered file objects think
    they are."""
    for fd, offset in offsets:
        try:
            os.lseek(fd, offset, os.SEEK_SET)
        except OSError:
            pass


def _cache_back(files, contents) -> None:
    """Write back what the host's copies of inline cache files hold after the call."""
    for f, c in zip(files or [], contents):
        if c.invalid or c.WhichOneof("content") != "data" or not hasattr(f, "writable") or not f.writable():
            continue
        f.seek(0)
        f.truncate()
        f.write(c.data)
        f.flush()


class RemoteDevice(IDevice):
    """``IDevice`` of a driver served by a host over ``link`` (see the module docstring).
    Raises HalError when the host cannot be started or described."""

    def __init__(self, link: Link):
        self.link = link
        probe, fds, self._probe = self._describe_probe(link.passes_fds)
        reply = link.call("Describe", probe, fds=fds)
        wire.raise_for(reply.status)
        self.info = reply
        #: Pools and cache files travel as descriptors (else inline): the link carries
        #: descriptors (never gRPC) and the host mapped the probe sent as one.
        self.shared = bool(link.passes_fds and reply.shared_memory)
        self._capabilities = wire.capabilities_from_wire(reply.capabilities)
        self._extensions = wire.extensions_from_wire(reply.extensions)
        self._fence_ids = itertools.count(1 << 40)

    @staticmethod
    def _describe_probe(passes_fds: bool):
        """(DescribeRequest, its descriptors, the probe memory): a read-only region of 16
        random bytes sent as a descriptor when the link carries descriptors, else no probe."""
        memory = shared_memory(data=os.urandom(16)) if passes_fds else None
        fds = wire.FdList()
        pool = wire.pool_to_wire(memory, fds) if memory is not None else None
        if pool is None or pool.WhichOneof("kind") != "shared":
            return pb.DescribeRequest(), [], memory
        pool.shared.read_only = True
        return pb.DescribeRequest(shared_memory_probe=pool.shared, probe_bytes=bytes(memory.buffer)), fds.fds, memory

    def encode(self, what: str, build):
        """(message, descriptors to send with it): ``build(fds)`` makes a call's message,
        sharing pools and cache files through ``fds`` (a :class:`~runtime.remote.wire.FdList`,
        None when this device cannot share: everything inline). A value out of the wire's
        range is HalError(INVALID_ARGUMENT) naming ``what``."""
        fds = wire.FdList() if self.shared else None
        try:
            message = build(fds)
        except (ValueError, TypeError, OverflowError) as e:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{what}: cannot be sent to the driver process: {e}") from None
        return message, fds.fds if fds is not None else []

    def fence_id(self) -> int:
        return next(self._fence_ids)

    def _call(self, method: str, message, what: str, fds=()):
        reply = self.link.call(method, message, None, what, fds)
        wire.raise_for(reply.status)
        return reply

    # -- queries (answered from Describe) -------------------------------------------------
    def get_name(self) -> str:
        return self.info.name

    def get_version_string(self) -> str:
        return self.info.version

    def get_type(self):
        return wire.code_of(DeviceTypeCode, self.info.type)

    def get_feature_level(self) -> int:
        return int(self.info.feature_level)

    def get_capabilities(self):
        return self._capabilities

    def get_supported_extensions(self) -> list:
        return list(self._extensions)

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        return int(self.info.model_cache_files), int(self.info.data_cache_files)

    # -- calls ----------------------------------------------------------------------------
    def get_supported_operations(self, model) -> list[bool]:
        message, fds = self.encode("get_supported_operations", lambda fds: pb.ModelRequest(
            model=wire.model_to_wire(model, fds)))
        return list(self._call("GetSupportedOperations", message, "get_supported_operations", fds).supported)

    def prepare_model(self, model, preference=1, priority=100, deadline_ns=None, model_cache=None,
                      data_cache=None, token=None) -> IPreparedModel:
        has_cache, offsets = model_cache is not None or data_cache is not None, []
        message, fds = self.encode("prepare_model", lambda fds: pb.PrepareModelRequest(
            model=wire.model_to_wire(model, fds), preference=int(preference), priority=int(priority),
            deadline_ns=_relative(deadline_ns), model_cache=_cache_to_wire(model_cache, fds, offsets),
            data_cache=_cache_to_wire(data_cache, fds, offsets), token=bytes(token or b""),
            has_token=token is not None, has_cache=has_cache))
        generation = self.link.generation
        try:
            reply = self._call("PrepareModel", message, "prepare_model", fds)
        finally:
            _restore_offsets(offsets)
        _cache_back(model_cache, reply.model_cache)
        _cache_back(data_cache, reply.data_cache)
        return RemotePreparedModel(self, reply.prepared_model, max(generation, self.link.generation))

    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token) -> IPreparedModel:
        offsets = []
        message, fds = self.encode("prepare_model_from_cache", lambda fds: pb.PrepareFromCacheRequest(
            deadline_ns=_relative(deadline_ns), model_cache=_cache_to_wire(model_cache, fds, offsets),
            data_cache=_cache_to_wire(data_cache, fds, offsets), token=bytes(token or b"")))
        try:
            reply = self._call("PrepareModelFromCache", message, "prepare_model_from_cache", fds)
        finally:
            _restore_offsets(offsets)
        return RemotePreparedModel(self, reply.prepared_model, self.link.generation)

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        keys = [p.key if isinstance(p, RemotePreparedModel) and p.link is self.link
                and p.generation == self.link.generation else 0 for p in prepared_models]
        message, _ = self.encode("allocate", lambda fds: pb.AllocateRequest(
            dimensions=list(desc.dimensions), prepared_models=keys, input_roles=wire.roles_to_wire(input_roles),
            output_roles=wire.roles_to_wire(output_roles)))
        reply = self._call("Allocate", message, "allocate")
        return RemoteBuffer(self, reply.buffer, self.link.generation), reply.token

    def wait(self) -> None:
        self._call("Wait", pb.Empty(), "wait")
