"""The driver host: serves one Python :class:`~runtime.hal.interfaces.IDevice` over the HAL
of ``hal.proto``, so the driver runs in its own process.

``python -m runtime.remote.host --driver NAME [--listen ADDRESS [--tls-key PEM --tls-cert PEM
--tls-ca PEM | --insecure-loopback]] [--listen-local PATH] [--parent-pid PID]`` loads the driver
(a bundled name, an entry point in group ``nncts.drivers`` or ``module:factory``) and serves it
over gRPC on ``ADDRESS`` (``unix:/path/to.sock`` or ``host:port``; TCP with mutual TLS, or
without on loopback only: :mod:`runtime.remote.access`) and/or over the local transport
(:mod:`runtime.remote.frames`, file descriptors for shared memory) on the Unix socket
``PATH`` (in a private directory), until killed or until process ``PID`` (the runtime that
started it) is gone. A driver that cannot
be loaded, or an address the access rule refuses, is one line on stderr and exit code 2.
``--max-frame-bytes N`` (default 256 MiB) bounds every message on both transports.

Every reply carries the driver's HalError as its status (anything else a driver raises becomes
GENERAL_FAILURE naming the exception); a driver that kills the process or never returns is the
client's to detect (:mod:`runtime.remote.process`).
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import signal
import stat
import sys
import tempfile
import threading
import time
from concurrent import futures

from ..errors import HalError
from ..hal.sync import ExecutionCallback, SyncFence
from ..hal.types import BufferDesc
from ..argparsing import OneLineParser
from ..drivers import DriverNotFound, load_driver
from ..types import MAX_NUMBER_OF_CACHE_FILES, ErrorStatus, MeasureTiming, PreferenceCode, PriorityCode
from . import hal_pb2_grpc
from . import wire
from .access import check_listen, private_socket, private_socket_dir, unix_socket_path
from .limits import MAX_MESSAGE_BYTES
from .tls import TlsFiles
from .wire import pb

def channel_options(max_message_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    """gRPC options bounding every message sent or received to ``max_message_bytes`` (a
    bigger one fails with RESOURCE_EXHAUSTED; the connection and the host carry on)."""
    return [("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes)]


#: gRPC channel options of both ends: messages up to :data:`~runtime.remote.limits.MAX_MESSAGE_BYTES`
#: (models carry their weights inline when memory cannot be shared).
CHANNEL_OPTIONS = channel_options()


#: Where inline cache contents become files for the driver: memory-backed when possible.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _deadline(relative_ns: int) -> int | None:
    return None if relative_ns < 0 else time.monotonic_ns() + relative_ns


def _optional(value: int) -> int | None:
    return None if value < 0 else value


class _NotAFence:
    """What the driver gets for a dependency the client said is not a fence."""


def _fence_status(code: int) -> ErrorStatus:
    """The status a client signaled a fence with: its ErrorStatus, GENERAL_FAILURE for a
    code ErrorStatus does not have (a failed fence either way)."""
    status = wire.code_of(ErrorStatus, code)
    return status if isinstance(status, ErrorStatus) else ErrorStatus.GENERAL_FAILURE


_MODES = {os.O_RDONLY: "rb", os.O_WRONLY: "wb", os.O_RDWR: "r+b"}


def _open_as(path: str, read_only: bool, write_only: bool):
    """``path`` (a temporary file of the host's own) opened for reading, writing or both,
    never truncated."""
    flags = os.O_RDONLY if read_only else os.O_WRONLY if write_only else os.O_RDWR
    return os.fdopen(os.open(path, flags), _MODES[flags])


def _fds(context) -> tuple[int, ...] | list[int]:
    """The descriptors sent with a call: the local transport's
    :class:`~runtime.remote.frames.FrameContext` has them; gRPC carries none."""
    return getattr(context, "fds", ())


def _client_file(fds, index: int, what: str):
    """The client's open file sent as descriptor ``index``, for the driver: a duplicate
    opened with the descriptor's own access mode (``F_GETFL``), never truncated, sharing the
    client's file offset. Raises HalError(INVALID_ARGUMENT) when it was not sent or is not a
    regular file (a FIFO would block the driver, a directory cannot hold a cache)."""
    fd = wire.fd_of(fds, index, what)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{what}: descriptor {index} is not a regular file "
                           f"({wire.file_kind(st.st_mode)})")
        return os.fdopen(os.dup(fd), _MODES[wire.access_mode(fd)])
    except (OSError, KeyError) as err:
        raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{what}: descriptor {index} cannot be used as a "
                       f"cache file: {err}") from None


class _CacheFiles:
    """The cache files of a call as the driver gets them: the client's own files (sent as
    descriptors: the driver reads and writes them in place) or temporary files holding
    inline contents (read back after the call). At most MAX_NUMBER_OF_CACHE_FILES (32, HAL
    1.2); more, or a file that cannot be used, is HalError(INVALID_ARGUMENT) naming
    ``what``."""

    def __init__(self, entries, fds=(), what: str = "cache"):
        if len(entries) > MAX_NUMBER_OF_CACHE_FILES:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{what}: {len(entries)} files, more than "
                           f"MAX_NUMBER_OF_CACHE_FILES ({MAX_NUMBER_OF_CACHE_FILES})")
        self.entries, self.files = list(entries), []
        try:
            for k, e in enumerate(self.entries):
                self.files.append(self._open(e, fds, f"{what} file {k}"))
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _open(e: pb.CacheFile, fds, what: str):
        if e.invalid:
            return object()
        if e.WhichOneof("content") == "fd_index":
            return _client_file(fds, e.fd_index, what)
        # inline content: a temporary file holding it, opened as the client's was
        f = tempfile.NamedTemporaryFile(dir=SCRATCH, delete=False)
        try:
            with f:
                f.write(e.data)
            return _open_as(f.name, e.read_only, e.write_only)
        except OSError as err:
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"{what}: cannot make a file of its content: {err}") from None
        finally:
            os.unlink(f.name)

    def contents(self) -> list[pb.CacheFile]:
        """What each file holds now: the content of inline ones, the ``fd_index`` of the
        client's own files (written in place), ``invalid`` for the rest."""
        out = []
        for f, e in zip(self.files, self.entries):
            if not e.invalid and e.WhichOneof("content") == "fd_index":
                out.append(pb.CacheFile(fd_index=e.fd_index))
            elif not hasattr(f, "read") or not f.readable():
                out.append(pb.CacheFile(invalid=True))
            else:
                f.flush()
                f.seek(0)
                out.append(pb.CacheFile(data=f.read()))
        return out

    def close(self) -> None:
        for f in self.files:
            if hasattr(f, "close"):
                f.close()


@contextlib.contextmanager
def _cache_files(req, fds, call: str):
    """(model cache, data cache) :class:`_CacheFiles` of a prepare request, closed at exit."""
    model_files = _CacheFiles(req.model_cache, fds, f"{call}: model cache")
    try:
        data_files = _CacheFiles(req.data_cache, fds, f"{call}: data cache")
        try:
            yield model_files, data_files
        finally:
            data_files.close()
    finally:
        model_files.close()


class DeviceServicer(hal_pb2_grpc.DeviceServicer):
    """The gRPC service of one driver: HAL calls in, the driver's answers out. Host objects
    (prepared models, bursts, executions, buffers, fences) live in :attr:`objects` by id, with
    their kind: an id of one kind used as another is INVALID_ARGUMENT."""

    def __init__(self, device):
        self.device = device
        self.objects: dict[int, tuple[str, object]] = {}  # id -> (kind, object)
        self.pending_fences: dict[int, SyncFence] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- helpers ---------------------------------------------------------------------------
    def _put(self, obj, kind: str) -> int:
        with self._lock:
            key = next(self._ids)
            self.objects[key] = (kind, obj)
            return key

    def _get(self, key: int, kind: str):
        """Host object ``key`` of ``kind``. Raises HalError(INVALID_ARGUMENT) when there is
        none, or it is of another kind."""
        held, obj = self.objects.get(key, (None, None))
        if held != kind:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"no {kind} with id {key} in the driver process"
                           + (f" (id {key} is a {held})" if held else ""))
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
                try:  # the client's probe region, mapped from the descriptor sent with the call
                    probe = wire.pool_from_wire(pb.Pool(shared=req.shared_memory_probe), _fds(context),
                                                "Describe: shared memory probe")
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
            supported=[bool(s) for s in self.device.get_supported_operations(
                wire.model_from_wire(req.model, _fds(context), "GetSupportedOperations: model"))]))

    def PrepareModel(self, req, context):
        def call():
            model = wire.model_from_wire(req.model, _fds(context), "PrepareModel: model")
            with _cache_files(req, _fds(context), "PrepareModel") as (model_files, data_files):
                prepared = self.device.prepare_model(
                    model, wire.code_of(PreferenceCode, req.preference), wire.code_of(PriorityCode, req.priority),
                    _deadline(req.deadline_ns), model_files.files if req.has_cache else None,
                    data_files.files if req.has_cache else None, req.token if req.has_token else None)
                return dict(prepared_model=self._put(prepared, "prepared model"), model_cache=model_files.contents(),
                            data_cache=data_files.contents())
        return self._guard(pb.Prepared, call)

    def PrepareModelFromCache(self, req, context):
        def call():
            with _cache_files(req, _fds(context), "PrepareModelFromCache") as (model_files, data_files):
                prepared = self.device.prepare_model_from_cache(_deadline(req.deadline_ns), model_files.files,
                                                                data_files.files, req.token)
                return dict(prepared_model=self._put(prepared, "prepared model"))
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
            request = wire.request_from_wire(req.request, _fds(context), "Execute: request")
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
                deps.append(SyncFence.signaled(_fence_status(d.signaled_status))
                            if kind == "signaled_status" else self._pending(d.pending) if kind == "pending"
                            else _NotAFence())
            deadline, duration = _deadline(req.deadline_ns), _optional(req.duration_ns)
            if req.execution:
                execution, request, outputs = self._get(req.execution, "reusable execution")
                _refresh(request, req.request)
                fence, callback = execution.execute_fenced(deps, deadline, duration)
            else:
                request = wire.request_from_wire(req.request, _fds(context), "ExecuteFenced: request")
                outputs = _inline_output_pools(req.request)
                fence, callback = self._get(req.prepared_model, "prepared model").execute_fenced(
                    request, deps, wire.code_of(MeasureTiming, req.measure), deadline,
                    _optional(req.loop_timeout_duration_ns), duration)
            key = self._put((fence, callback, request, outputs), "fence")
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
        return self._guard(pb.Ack, lambda: self._pending(req.pending).signal(_fence_status(req.status)) or {})

    def WaitFence(self, req, context):
        def call():
            fence, callback, request, outputs = self._get(req.fence, "fence")
            return self._fence_state(fence, callback, request, outputs, None if req.timeout_s < 0 else req.timeout_s)
        return self._guard(pb.WaitFenceReply, call)

    def ConfigureBurst(self, req, context):
        return self._guard(pb.ObjectReply, lambda: dict(
            id=self._put(self._get(req.id, "prepared model").configure_execution_burst(), "burst")))

    def ReleaseMemoryResource(self, req, context):
        return self._guard(pb.Ack, lambda: self._get(req.burst, "burst").release_memory_resource(req.token) or {})

    def CreateReusableExecution(self, req, context):
        def call():
            request = wire.request_from_wire(req.request, _fds(context), "CreateReusableExecution: request")
            execution = self._get(req.prepared_model, "prepared model").create_reusable_execution(
                request, wire.code_of(MeasureTiming, req.measure), _optional(req.loop_timeout_duration_ns))
            return dict(id=self._put((execution, request, _inline_output_pools(req.request)), "reusable execution"))
        return self._guard(pb.ObjectReply, call)

    # -- memory domains --------------------------------------------------------------------
    def Allocate(self, req, context):
        def call():
            models = [obj if kind == "prepared model" else object()
                      for kind, obj in (self.objects.get(k, (None, None)) for k in req.prepared_models)]
            buffer, token = self.device.allocate(BufferDesc(list(req.dimensions)), models,
                                                 wire.roles_from_wire(req.input_roles),
                                                 wire.roles_from_wire(req.output_roles))
            return dict(buffer=self._put(buffer, "buffer"), token=int(token))
        return self._guard(pb.AllocateReply, call)

    def CopyTo(self, req, context):
        def call():
            dst = wire.pool_from_wire(req.dst, _fds(context), "CopyTo: destination")
            self._get(req.buffer, "buffer").copy_to(dst)
            return dict(data=bytes(dst.buffer)) if req.dst.WhichOneof("kind") == "data" else {}
        return self._guard(pb.CopyToReply, call)

    def CopyFrom(self, req, context):
        return self._guard(pb.Ack, lambda: self._get(req.buffer, "buffer").copy_from(
            wire.pool_from_wire(req.src, _fds(context), "CopyFrom: source"), list(req.dimensions)) or {})

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


def serve(servicer: DeviceServicer, address: str, max_workers: int = 32, tls: TlsFiles | None = None,
          max_message_bytes: int = MAX_MESSAGE_BYTES):
    """Start a gRPC server for ``servicer`` on ``address``; returns (server, bound port).
    With ``tls`` only clients presenting a certificate signed by ``tls.ca`` get through (mutual
    TLS); without, ``address`` must be a ``unix:`` socket or loopback (the caller decided that
    it may: :func:`~runtime.remote.access.check_listen`). A ``unix:`` socket is made mode 0600
    (its directory should be private: :func:`~runtime.remote.access.private_socket_dir`).
    Messages over ``max_message_bytes`` are refused (RESOURCE_EXHAUSTED). Raises ValueError
    for an insecure non-loopback TCP address, OSError/RuntimeError when it cannot listen."""
    import grpc
    path = unix_socket_path(address)
    if tls is None and path is None:
        check_listen(address, None, insecure_loopback=True)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers),
                         options=channel_options(max_message_bytes))
    hal_pb2_grpc.add_DeviceServicer_to_server(servicer, server)
    with private_socket(path):
        port = server.add_secure_port(address, tls.server_credentials()) if tls else server.add_insecure_port(address)
    if not port and path is None:
        raise OSError(f"cannot listen on {address}")
    server.start()
    return server, port


def _watch_parent(pid: int) -> None:
    """Exit when the process that started us is gone (no orphaned driver processes)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != pid:
            os._exit(0)


def _positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of bytes")
    return value


def _measure(driver: str, data_file: str, sources: str) -> None:
    """Start measuring the code coverage of ``driver``'s source (or of the modules
    ``sources`` names: :mod:`runtime.drivers.code_coverage`) into ``data_file``, written
    when SIGTERM stops the host. Raises DriverNotFound, or ImportError without coverage.py."""
    from ..drivers import code_coverage
    if missing := code_coverage.coverage_missing():
        raise ImportError(missing)
    if sources == "auto":
        files = code_coverage.driver_sources(driver)
    else:
        files = {}
        for name in sources.split(","):
            files.update(code_coverage.source_files(name.strip()))
    measurement = code_coverage.Measurement(files, data_file)
    measurement.start()

    def stop(signum, frame):
        measurement.stop()
        os._exit(0)
    signal.signal(signal.SIGTERM, stop)


def main(argv=None) -> int:
    parser = OneLineParser(prog="python -m runtime.remote.host",
                                     description="serve an nncts driver over the HAL of runtime/remote/hal.proto "
                                                 "(gRPC and/or the local transport)")
    parser.add_argument("--driver", required=True, help="bundled name, entry point in nncts.drivers, or module:factory")
    parser.add_argument("--listen", default=None, help="gRPC address: unix:/path.sock or host:port")
    parser.add_argument("--listen-local", default=None, metavar="PATH",
                        help="Unix socket for the local transport (length-delimited protobuf frames)")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process is gone")
    parser.add_argument("--max-frame-bytes", type=_positive_int, default=MAX_MESSAGE_BYTES, metavar="N",
                        help="longest message accepted: --listen-local refuses (INVALID_ARGUMENT) a frame longer "
                             "than N bytes from its length prefix, before reading it; --listen (gRPC) refuses a "
                             f"longer message (RESOURCE_EXHAUSTED) (default {MAX_MESSAGE_BYTES}, 256 MiB)")
    parser.add_argument("--tls-key", default=None, metavar="PEM", help="--listen: the host's private key")
    parser.add_argument("--tls-cert", default=None, metavar="PEM", help="--listen: the host's certificate (chain)")
    parser.add_argument("--tls-ca", default=None, metavar="PEM",
                        help="--listen: CA certificate(s); only clients presenting a certificate it signed are served")
    parser.add_argument("--insecure-loopback", action="store_true",
                        help="--listen on a loopback TCP address (127.0.0.0/8, ::1, localhost) without TLS: any "
                             "local user can connect")
    parser.add_argument("--coverage-data", default=None, metavar="PATH",
                        help="measure the code coverage of the driver's own source (coverage.py, lines and branches) "
                             "from before it is imported, into the data file PATH, written on SIGTERM")
    parser.add_argument("--coverage-sources", default="auto", metavar="MODULES",
                        help="with --coverage-data: the modules measured (comma-separated), or auto: the driver's own")
    args = parser.parse_args(argv)
    if not (args.listen or args.listen_local):
        parser.error("give --listen and/or --listen-local")
    try:
        tls = TlsFiles.from_options(args.tls_key, args.tls_cert, args.tls_ca, "--tls-")
        if args.listen:
            check_listen(args.listen, tls, args.insecure_loopback)
        elif tls is not None or args.insecure_loopback:
            raise ValueError("--tls-key/--tls-cert/--tls-ca and --insecure-loopback: only with --listen")
        if args.listen_local:
            private_socket_dir(args.listen_local, f"--listen-local {args.listen_local}")
    except ValueError as e:
        print(f"nncts driver host: {e}", file=sys.stderr)
        return 2
    try:
        if args.coverage_data:
            _measure(args.driver, args.coverage_data, args.coverage_sources)
        device = load_driver(args.driver)
    except (DriverNotFound, TypeError, ImportError) as e:
        print(f"nncts driver host: {e}", file=sys.stderr)
        return 2
    servicer = DeviceServicer(device)
    server = local = None
    try:
        if args.listen:
            server, port = serve(servicer, args.listen, tls=tls, max_message_bytes=args.max_frame_bytes)
        if args.listen_local:
            from .frames import FrameServer
            with private_socket(args.listen_local):
                local = FrameServer(servicer, args.listen_local, args.max_frame_bytes)
    except (OSError, RuntimeError, ValueError) as e:
        print(f"nncts driver host: cannot listen on {args.listen or args.listen_local}: {e}", file=sys.stderr)
        return 2
    if args.parent_pid:
        threading.Thread(target=_watch_parent, args=(args.parent_pid,), daemon=True).start()
    where = []
    if args.listen:
        how = "Unix socket" if unix_socket_path(args.listen) else f"port {port}"
        where.append(f"{args.listen} ({how}, {'mutual TLS' if tls else 'no TLS'})")
    where += [f"{args.listen_local} (local transport)"] if args.listen_local else []
    print(f"nncts driver host: serving {device.get_name()} on {' and '.join(where)}", flush=True)
    if local is not None:
        local.serve_forever()
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
