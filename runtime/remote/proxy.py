"""Client proxies: :class:`RemoteDevice` implements :class:`~runtime.hal.interfaces.IDevice` by
calling a driver host (:mod:`runtime.remote.host`) through a :class:`~runtime.remote.link.Link`,
so the front end and every suite use an out-of-process driver like any other.

Device queries are answered from one ``Describe`` at connection. Pools travel as
:func:`runtime.remote.wire.pool_to_wire` says: shared when the host mapped the probe region
(same machine), else copied, outputs copied back. Cache files travel as the client's own open
files (same machine, with their access mode) or as their content. A value the wire cannot
carry (an integer beyond 64 bits) is HalError(INVALID_ARGUMENT) here.
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


def _encode(what: str, build):
    """``build()``, a message; a value out of the wire's range is INVALID_ARGUMENT."""
    try:
        return build()
    except (ValueError, TypeError, OverflowError) as e:
        raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{what}: cannot be sent to the driver process: {e}") from None


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

    def _call(self, method: str, message, what: str):
        reply = self.link.call(method, message, self.generation, what)
        wire.raise_for(reply.status)
        return reply


class RemoteBuffer(_HostObject, IBuffer):
    """A driver buffer in the host (``IBuffer``)."""

    def __init__(self, device: "RemoteDevice", key: int, generation: int):
        _HostObject.__init__(self, device.link, key, generation)
        self.device = device

    def copy_to(self, dst) -> None:
        pool = self.device.pool(dst)
        reply = self._call("CopyTo", pb.CopyToRequest(buffer=self.key, dst=pool), "IBuffer.copy_to")
        if pool.WhichOneof("kind") == "data":
            dst.buffer[:len(reply.data)] = reply.data

    def copy_from(self, src, dimensions) -> None:
        message = _encode("IBuffer.copy_from", lambda: pb.CopyFromRequest(
            buffer=self.key, src=self.device.pool(src), dimensions=list(dimensions)))
        self._call("CopyFrom", message, "IBuffer.copy_from")


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
        device = self.prepared_model.device
        message = _encode("IBurst.execute", lambda: pb.ExecuteRequest(
            path=pb.BURST, burst=self.key, request=device.request(request),
            memory_identifier_tokens=list(memory_identifier_tokens), measure=int(measure),
            deadline_ns=_relative(deadline_ns), loop_timeout_duration_ns=_opt(loop_timeout_duration_ns)))
        return self.prepared_model._finish(request, self._call("Execute", message, "IBurst.execute"))

    def release_memory_resource(self, token: int) -> None:
        self._call("ReleaseMemoryResource", _encode("IBurst.release_memory_resource", lambda: pb.ReleaseMemoryRequest(
            burst=self.key, token=int(token))), "IBurst.release_memory_resource")


class RemoteExecution(_HostObject, IExecution):
    """A reusable execution held by the host (``IExecution``); each call sends the current
    bytes of the request's inline pools."""

    def __init__(self, prepared: "RemotePreparedModel", key: int, generation: int, request, measure, loop):
        _HostObject.__init__(self, prepared.link, key, generation)
        IExecution.__init__(self, prepared, request, measure, loop)

    def execute_synchronously(self, deadline_ns=None):
        pm = self.prepared_model
        message = _encode("IExecution.execute", lambda: pb.ExecuteRequest(
            path=pb.REUSABLE, execution=self.key, request=pm.device.request(self.request),
            deadline_ns=_relative(deadline_ns)))
        return pm._finish(self.request, self._call("Execute", message, "IExecution.execute"))

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
        message = _encode(what, lambda: pb.ExecuteRequest(
            path=path, prepared_model=self.key, request=self.device.request(request), measure=int(measure),
            deadline_ns=_relative(deadline_ns), loop_timeout_duration_ns=_opt(loop_timeout_duration_ns)))
        return self._finish(request, self.link.call("Execute", message, self.generation, what))

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
            message = _encode(what, lambda: pb.ExecuteRequest(
                path=pb.ASYNC, prepared_model=self.key, request=self.device.request(request), measure=int(measure),
                deadline_ns=_relative(deadline_ns), loop_timeout_duration_ns=_opt(loop_timeout_duration_ns)))
            self.link.call_later("Execute", message, self.generation, what, done)
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
        message = _encode("IPreparedModel.execute_fenced", lambda: pb.ExecuteFencedRequest(
            prepared_model=self.key, execution=execution, request=self.device.request(request), wait_for=deps,
            measure=int(measure), deadline_ns=_relative(deadline_ns),
            loop_timeout_duration_ns=_opt(loop_timeout_duration_ns), duration_ns=_opt(duration_ns)))
        for key, fence in watchers:
            threading.Thread(target=self._forward, args=(key, fence, deadline_ns), daemon=True).start()
        reply = self._call("ExecuteFenced", message, "IPreparedModel.execute_fenced")
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
        message = _encode("create_reusable_execution", lambda: pb.ReusableRequest(
            prepared_model=self.key, request=self.device.request(request), measure=int(measure),
            loop_timeout_duration_ns=_opt(loop_timeout_duration_ns)))
        reply = self._call("CreateReusableExecution", message, "create_reusable_execution")
        return RemoteExecution(self, reply.id, self.generation, request, measure, loop_timeout_duration_ns)


def _cache_to_wire(files, share: bool) -> list[pb.CacheFile]:
    """Cache files as their path (``share``: the host opens the file itself) or content."""
    out = []
    for f in files or []:
        try:
            read_only, write_only = not f.writable(), not f.readable()
            if share:
                if not read_only:
                    f.flush()
                out.append(pb.CacheFile(path=f"/proc/{os.getpid()}/fd/{f.fileno()}", read_only=read_only,
                                        write_only=write_only))
                continue
            data = b""
            if not write_only:
                f.seek(0)
                data = f.read()
            out.append(pb.CacheFile(data=data, read_only=read_only, write_only=write_only))
        except (AttributeError, OSError, ValueError):
            out.append(pb.CacheFile(invalid=True))
    return out


def _cache_back(files, contents) -> None:
    """Write back what the host's copies of inline cache files hold after the call."""
    for f, c in zip(files or [], contents):
        if c.invalid or c.path or not hasattr(f, "writable") or not f.writable():
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
        probe, self._probe = self._describe_probe()
        reply = link.call("Describe", probe)
        wire.raise_for(reply.status)
        self.info = reply
        self.shared = reply.shared_memory
        self._capabilities = wire.capabilities_from_wire(reply.capabilities)
        self._extensions = wire.extensions_from_wire(reply.extensions)
        self._fence_ids = itertools.count(1 << 40)

    @staticmethod
    def _describe_probe():
        memory = shared_memory(data=os.urandom(16))
        region = memory.region()
        if region is None:
            return pb.DescribeRequest(), memory
        path, offset, size, _ = region
        return pb.DescribeRequest(shared_memory_probe=pb.SharedRegion(path=path, offset=offset, size=size,
                                                                      read_only=True),
                                  probe_bytes=bytes(memory.buffer)), memory

    def pool(self, pool) -> pb.Pool:
        return wire.pool_to_wire(pool, self.shared)

    def request(self, request) -> pb.Request:
        return wire.request_to_wire(request, self.shared)

    def fence_id(self) -> int:
        return next(self._fence_ids)

    def _call(self, method: str, message, what: str):
        reply = self.link.call(method, message, None, what)
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
        message = _encode("get_supported_operations", lambda: pb.ModelRequest(
            model=wire.model_to_wire(model, self.shared)))
        return list(self._call("GetSupportedOperations", message, "get_supported_operations").supported)

    def prepare_model(self, model, preference=1, priority=100, deadline_ns=None, model_cache=None,
                      data_cache=None, token=None) -> IPreparedModel:
        has_cache = model_cache is not None or data_cache is not None
        message = _encode("prepare_model", lambda: pb.PrepareModelRequest(
            model=wire.model_to_wire(model, self.shared), preference=int(preference), priority=int(priority),
            deadline_ns=_relative(deadline_ns), model_cache=_cache_to_wire(model_cache, self.shared),
            data_cache=_cache_to_wire(data_cache, self.shared), token=bytes(token or b""), has_token=token is not None,
            has_cache=has_cache))
        generation = self.link.generation
        reply = self._call("PrepareModel", message, "prepare_model")
        _cache_back(model_cache, reply.model_cache)
        _cache_back(data_cache, reply.data_cache)
        return RemotePreparedModel(self, reply.prepared_model, max(generation, self.link.generation))

    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token) -> IPreparedModel:
        message = _encode("prepare_model_from_cache", lambda: pb.PrepareFromCacheRequest(
            deadline_ns=_relative(deadline_ns), model_cache=_cache_to_wire(model_cache, self.shared),
            data_cache=_cache_to_wire(data_cache, self.shared), token=bytes(token or b"")))
        reply = self._call("PrepareModelFromCache", message, "prepare_model_from_cache")
        return RemotePreparedModel(self, reply.prepared_model, self.link.generation)

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        keys = [p.key if isinstance(p, RemotePreparedModel) and p.link is self.link
                and p.generation == self.link.generation else 0 for p in prepared_models]
        message = _encode("allocate", lambda: pb.AllocateRequest(
            dimensions=list(desc.dimensions), prepared_models=keys, input_roles=wire.roles_to_wire(input_roles),
            output_roles=wire.roles_to_wire(output_roles)))
        reply = self._call("Allocate", message, "allocate")
        return RemoteBuffer(self, reply.buffer, self.link.generation), reply.token

    def wait(self) -> None:
        self._call("Wait", pb.Empty(), "wait")
