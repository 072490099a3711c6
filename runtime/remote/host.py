"""The driver host: serves one Python :class:`~runtime.hal.interfaces.IDevice` over the HAL
of ``hal.proto``, so the driver runs in its own process.

``python -m runtime.remote.host --driver NAME [--listen ADDRESS] [--listen-local PATH]
[--parent-pid PID]`` loads the driver (a bundled name, an entry point in group
``nncts.drivers`` or ``module:factory``) and serves it over gRPC on ``ADDRESS``
(``unix:/path/to.sock`` or ``host:port``) and/or over the local transport
(:mod:`runtime.remote.frames`) on the Unix socket ``PATH``, until killed or until process
``PID`` (the runtime that started it) is gone. A driver that cannot be loaded is one line on
stderr and exit code 2.

Every reply carries the driver's HalError as its status (anything else a driver raises becomes
GENERAL_FAILURE naming the exception); a driver that kills the process or never returns is the
client's to detect (:mod:`runtime.remote.process`).
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import threading
import time
from concurrent import futures

from ..errors import HalError
from ..hal.sync import ExecutionCallback, SyncFence
from ..hal.types import BufferDesc
from ..types import ErrorStatus, MeasureTiming, PreferenceCode, PriorityCode
from . import hal_pb2_grpc
from . import wire
from .wire import pb

#: gRPC channel options of both ends: no message size limit below 2 GiB (models carry their
#: weights inline when memory cannot be shared).
CHANNEL_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


#: Where inline cache contents become files for the driver: memory-backed when possible.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _deadline(relative_ns: int) -> int | None:
    return None if relative_ns < 0 else time.monotonic_ns() + relative_ns


def _optional(value: int) -> int | None:
    return None if value < 0 else value


class _NotAFence:
    """What the driver gets for a dependency the client said is not a fence."""


def _open_as(path: str, read_only: bool, write_only: bool):
    """``path`` opened for reading, writing or both, never truncated."""
    if read_only:
        return open(path, "rb")
    if write_only:
        return os.fdopen(os.open(path, os.O_WRONLY), "wb")
    return open(path, "r+b")


class _CacheFiles:
    """Temporary files holding the cache contents of a request, handed to the driver, read
    back after the call."""

    def __init__(self, entries):
        import tempfile
        self.files, self.paths = [], []
        for e in entries:
            self.paths.append(e.path)
            if e.invalid:
                self.files.append(object())
                continue
            path = e.path
            if not path:  # inline content: a temporary file holding it, opened as the client's was
                f = tempfile.NamedTemporaryFile(dir=SCRATCH, delete=False)
                with f:
                    f.write(e.data)
                path = f.name
            try:
                self.files.append(_open_as(path, e.read_only, e.write_only))
            except OSError as err:
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"cannot open cache file {path}: {err}") from None
            finally:
                if not e.path:
                    os.unlink(path)

    def contents(self) -> list[pb.CacheFile]:
        """What each file holds now (nothing for the client's own files, written in place)."""
        out = []
        for f, path in zip(self.files, self.paths):
            if path or not hasattr(f, "read") or not f.readable():
                out.append(pb.CacheFile(path=path, invalid=not path))
                continue
            f.flush()
            f.seek(0)
            out.append(pb.CacheFile(data=f.read()))
        return out

    def close(self) -> None:
        for f in self.files:
            if hasattr(f, "close"):
                f.close()


class DeviceServicer(hal_pb2_grpc.DeviceServicer):
    """The gRPC service of one driver: HAL calls in, the driver's answers out. Host objects
    (prepared models, bursts, executions, buffers, fences) live in :attr:`objects` by id."""

    def __init__(self, device):
        self.device = device
        self.objects: dict[int, object] = {}
        self.pending_fences: dict[int, SyncFence] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- helpers ---------------------------------------------------------------------------
    def _put(self, obj) -> int:
        with self._lock:
            key = next(self._ids)
            self.objects[key] = obj
            return key

    def _get(self, key: int, what: str):
        obj = self.objects.get(key)
        if obj is None:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"no {what} with id {key} in the driver process")
        return obj

    def _pending(self, key: int) -> SyncFence:
        with self._lock:
            return self.pending_fences.setdefault(key, SyncFence())

    @staticmethod
    def _guard(reply_type, call, **fields):
        """Run ``call()`` (returning a dict of reply fields); a driver error becomes the
        reply's status."""
        try:
            fields.update(call())
            return reply_type(**fields)
        except HalError as e:
            return reply_type(status=wire.status_to_wire(e))
        except Exception as e:  # noqa: BLE001 - driver code
            return reply_type(status=pb.Status(code=int(ErrorStatus.GENERAL_FAILURE),
                                               message=f"driver raised {type(e).__name__}: {e}"))

    @staticmethod
    def _written(request, wire_request: pb.Request, indexes=None) -> list[pb.PoolData]:
        """Inline pools the outputs point into, with their bytes after the call."""
        if indexes is None:
            indexes = _inline_output_pools(wire_request)
        return [pb.PoolData(index=k, data=bytes(request.pools[k].buffer)) for k in indexes]

    # -- device ----------------------------------------------------------------------------
    def Describe(self, req, context):
        def call():
            shared = False
            if req.HasField("shared_memory_probe"):
                try:
                    probe = wire.pool_from_wire(pb.Pool(shared=req.shared_memory_probe))
                    shared = bytes(probe.buffer) == req.probe_bytes
                except HalError:
                    shared = False
            d = self.device
            models, data = d.get_number_of_cache_files_needed()
            return dict(name=d.get_name(), version=d.get_version_string(), type=int(d.get_type()),
                        feature_level=int(d.get_feature_level()),
                        capabilities=wire.capabilities_to_wire(d.get_capabilities()),
                        extensions=wire.extensions_to_wire(d.get_supported_extensions()),
                        model_cache_files=models, data_cache_files=data, shared_memory=shared, pid=os.getpid())
        return self._guard(pb.DeviceInfo, call)

    def GetSupportedOperations(self, req, context):
        return self._guard(pb.SupportedOperations, lambda: dict(
            supported=[bool(s) for s in self.device.get_supported_operations(wire.model_from_wire(req.model))]))

    def PrepareModel(self, req, context):
        def call():
            model = wire.model_from_wire(req.model)
            model_files, data_files = _CacheFiles(req.model_cache), _CacheFiles(req.data_cache)
            try:
                prepared = self.device.prepare_model(
                    model, wire.code_of(PreferenceCode, req.preference), wire.code_of(PriorityCode, req.priority),
                    _deadline(req.deadline_ns), model_files.files if req.has_cache else None,
                    data_files.files if req.has_cache else None, req.token if req.has_token else None)
                return dict(prepared_model=self._put(prepared), model_cache=model_files.contents(),
                            data_cache=data_files.contents())
            finally:
                model_files.close()
                data_files.close()
        return self._guard(pb.Prepared, call)

    def PrepareModelFromCache(self, req, context):
        def call():
            model_files, data_files = _CacheFiles(req.model_cache), _CacheFiles(req.data_cache)
            try:
                prepared = self.device.prepare_model_from_cache(_deadline(req.deadline_ns), model_files.files,
                                                                data_files.files, req.token)
                return dict(prepared_model=self._put(prepared))
            finally:
                model_files.close()
                data_files.close()
        return self._guard(pb.Prepared, call)

    def Wait(self, req, context):
        return self._guard(pb.Ack, lambda: self.device.wait() or {})

    # -- executions ------------------------------------------------------------------------
    def Execute(self, req, context):
        def call():
            measure = wire.code_of(MeasureTiming, req.measure)
            deadline, loop = _deadline(req.deadline_ns), _optional(req.loop_timeout_duration_ns)
            if req.path == pb.REUSABLE:
                execution, request, outputs = self._get(req.execution, "reusable execution")
                _refresh(request, req.request)
                shapes, timing = execution.execute_synchronously(deadline)
                return dict(output_shapes=wire.shapes_to_wire(shapes), timing=wire.timing_to_wire(timing),
                            written=self._written(request, req.request, outputs))
            request = wire.request_from_wire(req.request)
            if req.path == pb.BURST:
                burst = self._get(req.burst, "burst")
                shapes, timing = burst.execute_synchronously(request, list(req.memory_identifier_tokens), measure,
                                                             deadline, loop)
            elif req.path == pb.ASYNC:
                callback = ExecutionCallback()
                self._get(req.prepared_model, "prepared model").execute_asynchronously(
                    request, measure, deadline, loop, callback)
                callback.wait()
                if callback.status != ErrorStatus.NONE:
                    raise HalError(callback.status, callback.message, callback.output_shapes or None)
                shapes, timing = callback.output_shapes, callback.timing
            else:
                shapes, timing = self._get(req.prepared_model, "prepared model").execute_synchronously(
                    request, measure, deadline, loop)
            return dict(output_shapes=wire.shapes_to_wire(shapes), timing=wire.timing_to_wire(timing),
                        written=self._written(request, req.request))
        return self._guard(pb.ExecuteReply, call)

    def ExecuteFenced(self, req, context):
        def call():
            deps = []
            for d in req.wait_for:
                kind = d.WhichOneof("kind")
                deps.append(SyncFence.signaled(wire.code_of(ErrorStatus, d.signaled_status))
                            if kind == "signaled_status" else self._pending(d.pending) if kind == "pending"
                            else _NotAFence())
            deadline, duration = _deadline(req.deadline_ns), _optional(req.duration_ns)
            if req.execution:
                execution, request, outputs = self._get(req.execution, "reusable execution")
                _refresh(request, req.request)
                fence, callback = execution.execute_fenced(deps, deadline, duration)
            else:
                request, outputs = wire.request_from_wire(req.request), _inline_output_pools(req.request)
                fence, callback = self._get(req.prepared_model, "prepared model").execute_fenced(
                    request, deps, wire.code_of(MeasureTiming, req.measure), deadline,
                    _optional(req.loop_timeout_duration_ns), duration)
            key = self._put((fence, callback, request, outputs))
            return dict(fence=key, **self._fence_state(fence, callback, request, outputs, 0.0))
        return self._guard(pb.ExecuteFencedReply, call)

    def _fence_state(self, fence, callback, request, outputs, timeout_s: float | None) -> dict:
        if not fence.wait(timeout_s):
            return dict(signaled=False)
        launched, fenced, status = callback.get_execution_info()
        return dict(signaled=True, fence_status=int(fence.status), timing_launched=wire.timing_to_wire(launched),
                    timing_fenced=wire.timing_to_wire(fenced), callback_status=int(status),
                    written=self._written(request, None, outputs))

    def SignalFence(self, req, context):
        return self._guard(pb.Ack, lambda: self._pending(req.pending).signal(
            wire.code_of(ErrorStatus, req.status)) or {})

    def WaitFence(self, req, context):
        def call():
            fence, callback, request, outputs = self._get(req.fence, "fence")
            return self._fence_state(fence, callback, request, outputs, None if req.timeout_s < 0 else req.timeout_s)
        return self._guard(pb.WaitFenceReply, call)

    def ConfigureBurst(self, req, context):
        return self._guard(pb.ObjectReply, lambda: dict(
            id=self._put(self._get(req.id, "prepared model").configure_execution_burst())))

    def ReleaseMemoryResource(self, req, context):
        return self._guard(pb.Ack, lambda: self._get(req.burst, "burst").release_memory_resource(req.token) or {})

    def CreateReusableExecution(self, req, context):
        def call():
            request = wire.request_from_wire(req.request)
            execution = self._get(req.prepared_model, "prepared model").create_reusable_execution(
                request, wire.code_of(MeasureTiming, req.measure), _optional(req.loop_timeout_duration_ns))
            return dict(id=self._put((execution, request, _inline_output_pools(req.request))))
        return self._guard(pb.ObjectReply, call)

    # -- memory domains --------------------------------------------------------------------
    def Allocate(self, req, context):
        def call():
            models = [self.objects.get(k, object()) for k in req.prepared_models]
            buffer, token = self.device.allocate(BufferDesc(list(req.dimensions)), models,
                                                 wire.roles_from_wire(req.input_roles),
                                                 wire.roles_from_wire(req.output_roles))
            return dict(buffer=self._put(buffer), token=int(token))
        return self._guard(pb.AllocateReply, call)

    def CopyTo(self, req, context):
        def call():
            dst = wire.pool_from_wire(req.dst)
            self._get(req.buffer, "buffer").copy_to(dst)
            return dict(data=bytes(dst.buffer)) if req.dst.WhichOneof("kind") == "data" else {}
        return self._guard(pb.CopyToReply, call)

    def CopyFrom(self, req, context):
        return self._guard(pb.Ack, lambda: self._get(req.buffer, "buffer").copy_from(
            wire.pool_from_wire(req.src), list(req.dimensions)) or {})

    def Release(self, req, context):
        with self._lock:
            for key in req.ids:
                self.objects.pop(key, None)
                self.pending_fences.pop(key, None)
        return pb.Ack()


def _inline_output_pools(wire_request: pb.Request) -> list[int]:
    """Indexes of the inline pools that outputs point into (their bytes go back)."""
    pools = wire_request.pools
    return sorted({a.location.pool_index for a in wire_request.outputs
                   if not a.has_no_value and 0 <= a.location.pool_index < len(pools)
                   and pools[a.location.pool_index].WhichOneof("kind") == "data"})


def _refresh(request, wire_request: pb.Request) -> None:
    """Copy the client's current inline pool bytes into a held request's pools (a reusable
    execution computes the inputs of each call, not of its creation)."""
    for k, m in enumerate(wire_request.pools):
        if k < len(request.pools) and m.WhichOneof("kind") == "data":
            buf = getattr(request.pools[k], "buffer", None)
            if buf is not None and len(buf) == len(m.data):
                buf[:] = m.data


def serve(servicer: DeviceServicer, address: str, max_workers: int = 32):
    """Start a gRPC server for ``servicer`` on ``address``; returns (server, bound port)."""
    import grpc
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers), options=CHANNEL_OPTIONS)
    hal_pb2_grpc.add_DeviceServicer_to_server(servicer, server)
    port = server.add_insecure_port(address)
    if not port and not address.startswith("unix:"):
        raise OSError(f"cannot listen on {address}")
    server.start()
    return server, port


def _watch_parent(pid: int) -> None:
    """Exit when the process that started us is gone (no orphaned driver processes)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != pid:
            os._exit(0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.remote.host",
                                     description="serve an nncts driver over the HAL of runtime/remote/hal.proto "
                                                 "(gRPC and/or the local transport)")
    parser.add_argument("--driver", required=True, help="bundled name, entry point in nncts.drivers, or module:factory")
    parser.add_argument("--listen", default=None, help="gRPC address: unix:/path.sock or host:port")
    parser.add_argument("--listen-local", default=None, metavar="PATH",
                        help="Unix socket for the local transport (length-delimited protobuf frames)")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process is gone")
    args = parser.parse_args(argv)
    if not (args.listen or args.listen_local):
        parser.error("give --listen and/or --listen-local")
    from ..drivers import DriverNotFound, load_driver
    try:
        device = load_driver(args.driver)
    except (DriverNotFound, TypeError) as e:
        print(f"nncts driver host: {e}", file=sys.stderr)
        return 2
    servicer = DeviceServicer(device)
    server = local = None
    try:
        if args.listen:
            server, port = serve(servicer, args.listen)
        if args.listen_local:
            from .frames import FrameServer
            local = FrameServer(servicer, args.listen_local)
    except (OSError, RuntimeError) as e:
        print(f"nncts driver host: cannot listen on {args.listen or args.listen_local}: {e}", file=sys.stderr)
        return 2
    if args.parent_pid:
        threading.Thread(target=_watch_parent, args=(args.parent_pid,), daemon=True).start()
    where = [f"{args.listen}" + (f" (port {port})" if not args.listen.startswith("unix:") else "")] \
        if args.listen else []
    where += [f"{args.listen_local} (local transport)"] if args.listen_local else []
    print(f"nncts driver host: serving {device.get_name()} on {' and '.join(where)}", flush=True)
    if local is not None:
        local.serve_forever()
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
