"""The client's connection to a driver host, and what happens when the host dies or hangs.

A :class:`Link` makes every call of the proxies (:mod:`runtime.remote.proxy`): it gives each
call a deadline (``call_timeout_s``), turns the host's death into HalError(DEAD_OBJECT) and
records an *incident* (:data:`INCIDENTS`: kind ``crash`` or ``hang``, the call, what happened),
then brings a new host up for the next call. :class:`ProcessLink` starts the host itself
(``--driver-process``, over the local transport of :mod:`runtime.remote.frames`) and restarts
it; :class:`EndpointLink` connects over gRPC to a host someone else started
(``--driver-endpoint``) and reconnects. Objects of a host that died (prepared models,
bursts, buffers) belong to its *generation*: using them afterwards is DEAD_OBJECT too.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ..errors import HalError
from ..types import ErrorStatus
from .frames import FrameChannel, TransportError, connectable
from .incidents import INCIDENTS, Incident
from .access import check_endpoint
from .host import CHANNEL_OPTIONS
from .tls import TlsFiles


#: How long a new host may take to start serving (seconds).
START_TIMEOUT_S = 60.0
#: How long a host measuring coverage may take to write its data when stopped (seconds).
STOP_TIMEOUT_S = 30.0


def _grpc():
    try:
        import grpc
    except ImportError:
        raise HalError(ErrorStatus.GENERAL_FAILURE, "out-of-process drivers need grpcio: "
                       "pip install 'nncts[remote]'") from None
    return grpc


class GrpcChannel:
    """Calls over gRPC (the ``Device`` service) to ``address``; errors as TransportError.
    With ``tls`` the channel is mutual TLS (the host must present a certificate signed by
    ``tls.ca`` naming ``address``; we present ``tls.cert``); without, ``address`` must be a
    ``unix:`` socket or loopback. Messages are bounded by :data:`CHANNEL_OPTIONS`. Raises
    HalError(GENERAL_FAILURE) when the access rule (:mod:`runtime.remote.access`) refuses
    ``address`` or a TLS file cannot be read."""

    def __init__(self, address: str, tls: TlsFiles | None = None):
        grpc = _grpc()
        from .hal_pb2_grpc import DeviceStub
        try:
            check_endpoint(address, tls)
            credentials = tls.channel_credentials() if tls is not None else None
        except (ValueError, OSError) as e:
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"cannot connect to driver endpoint {address}: {e}") from None
        self.channel = grpc.secure_channel(address, credentials, options=CHANNEL_OPTIONS) if credentials \
            else grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self.stub = DeviceStub(self.channel)

    def wait_ready(self, timeout_s: float) -> bool:
        grpc = _grpc()
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout_s)
            return True
        except grpc.FutureTimeoutError:
            return False

    @staticmethod
    def _error(e) -> TransportError:
        grpc = _grpc()
        code = e.code() if hasattr(e, "code") else None
        details = e.details() if hasattr(e, "details") else str(e)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return TransportError("timeout", "no answer in time")
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN,
                    grpc.StatusCode.INTERNAL):
            return TransportError("lost", f"the connection broke ({details})")
        return TransportError("other", f"transport error {code}: {details}")

    def call(self, method: str, message, timeout: float | None):
        grpc = _grpc()
        try:
            return getattr(self.stub, method)(message, timeout=timeout)
        except grpc.RpcError as e:
            raise self._error(e) from None

    def call_later(self, method: str, message, timeout: float | None, done) -> None:
        grpc = _grpc()
        future = getattr(self.stub, method).future(message, timeout=timeout)

        def finished(f):
            try:
                reply = f.result()
            except grpc.RpcError as e:
                done(None, self._error(e))
                return
            done(reply, None)
        future.add_done_callback(finished)

    def close(self) -> None:
        self.channel.close()


class LocalChannel(FrameChannel):
    """Calls over the local transport (:class:`~runtime.remote.frames.FrameChannel`), with
    :meth:`call_later` on a short-lived thread (the frame encoded first: one over the limit
    raises HalError at once)."""

    def call_later(self, method: str, message, timeout: float | None, done, fds=()) -> None:
        payload = self.encode(method, message)

        def run():
            try:
                reply = self.exchange(method, payload, timeout, fds)
            except TransportError as e:
                done(None, e)
                return
            done(reply, None)
        threading.Thread(target=run, name="nncts-remote-call", daemon=True).start()


class Link:
    """Calls to one driver host (see the module docstring). ``call_timeout_s`` bounds every
    call (None: no bound). :attr:`passes_fds`: whether calls may carry file descriptors
    (only the local transport can; over gRPC all memory travels inline)."""

    passes_fds = False

    def __init__(self, driver: str, call_timeout_s: float | None):
        self.driver = driver
        self.call_timeout_s = call_timeout_s
        self.generation = 0
        self.channel = None
        self._lock = threading.RLock()
        self._released: list[tuple[int, int]] = []

    # -- to be provided ------------------------------------------------------------------
    def _connect(self):
        """Bring a host up (or reconnect); returns the channel. Raises HalError."""
        raise NotImplementedError

    def _lost(self, call: str, detail: str) -> Incident:
        """The incident for a call whose connection broke (the host died or vanished)."""
        raise NotImplementedError

    def _kill(self) -> None:
        """Stop a hung host."""

    # -- calls ---------------------------------------------------------------------------
    def ensure(self) -> None:
        with self._lock:
            if self.channel is None:
                self.channel = self._connect()
                self.generation += 1

    def call(self, method: str, message, generation: int | None = None, what: str | None = None, fds=()):
        """``method(message)`` on the host, with descriptors ``fds``; the reply. Raises
        HalError(DEAD_OBJECT) when the host died or hung (after recording the incident), or
        when ``generation`` (of the object the call is on) is not the current host's;
        HalError(GENERAL_FAILURE) for ``fds`` on a link that cannot carry them."""
        channel, current = self._begin(method, generation, what)
        try:
            return channel.call(method, message, self.call_timeout_s, *self._fds_argument(fds, what or method))
        except TransportError as e:
            raise self._failure(e, current, what or method) from None

    def call_later(self, method: str, message, generation: int | None, what: str, done, fds=()) -> None:
        """Start ``method(message)`` (with descriptors ``fds``) and return; ``done(reply,
        None)`` or ``done(None, HalError)`` runs when it ends (on another thread). Raises
        HalError as :meth:`call` when the call cannot start."""
        channel, current = self._begin(method, generation, what)

        def finished(reply, error):
            done(reply, None if error is None else self._failure(error, current, what))
        channel.call_later(method, message, self.call_timeout_s, finished, *self._fds_argument(fds, what))

    def _fds_argument(self, fds, what: str) -> tuple:
        """The channel call's extra argument for ``fds``: none when there are none (a
        gRPC channel takes none). Raises HalError(GENERAL_FAILURE) when this link cannot
        carry descriptors."""
        if not fds:
            return ()
        if not self.passes_fds:
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"{what}: file descriptors cannot travel over gRPC; "
                           f"memory must be sent inline")
        return (list(fds),)

    def _begin(self, method: str, generation: int | None, what: str | None):
        self.ensure()
        channel, current = self.channel, self.generation
        if generation is not None and generation != current:
            raise HalError(ErrorStatus.DEAD_OBJECT, f"{what or method}: the object belongs to a driver process "
                           f"that died; prepare the model again")
        self._flush_releases(channel, current)
        return channel, current

    def _failure(self, error: TransportError, generation: int, what: str) -> HalError:
        """The HalError of a call that got no reply: DEAD_OBJECT after recording the
        incident when the host died or hung (killing a hung host), else GENERAL_FAILURE."""
        if error.kind == "timeout":
            incident = Incident("hang", what, f"no answer within {self.call_timeout_s:g} s; "
                                f"the driver process was killed", self.driver)
            self._drop(generation, kill=True)
        elif error.kind == "lost":
            incident = self._lost(what, error.detail)
            self._drop(generation)
        else:
            return HalError(ErrorStatus.GENERAL_FAILURE, f"{what}: {error.detail}")
        INCIDENTS.append(incident)
        verb = "hung" if incident.kind == "hang" else "died"
        return HalError(ErrorStatus.DEAD_OBJECT, f"driver process {verb} during {incident.call}: {incident.detail}")

    def _drop(self, generation: int, kill: bool = False) -> None:
        with self._lock:
            if generation == self.generation and self.channel is not None:
                if kill:
                    self._kill()
                self.channel.close()
                self.channel = None

    # -- releases ------------------------------------------------------------------------
    def release_later(self, generation: int, key: int) -> None:
        """Forget host object ``key`` at a later call (objects of a dead host are gone)."""
        self._released.append((generation, key))

    def _flush_releases(self, channel, generation: int) -> None:
        if len(self._released) < 64:
            return
        from .wire import pb
        batch, self._released = self._released, []
        ids = [k for g, k in batch if g == generation]
        if ids:
            try:
                channel.call("Release", pb.ReleaseRequest(ids=ids), self.call_timeout_s)
            except TransportError:  # the next real call reports a dead host
                pass

    def close(self) -> None:
        """Stop using the host (and stop it if we started it)."""


def _signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


class ProcessLink(Link):
    """A host process this link starts (``python -m runtime.remote.host``), served on a Unix
    socket over the local transport, restarted after each death. The host's stderr goes to a
    log file whose last lines are quoted in the incident. Calls carry file descriptors
    (shared memory and cache files)."""

    passes_fds = True

    def __init__(self, driver: str, call_timeout_s: float | None = 300.0, coverage: tuple[str, str] | None = None):
        super().__init__(driver, call_timeout_s)
        #: (data file prefix, sources): the hosts measure their driver's code coverage
        #: (:func:`runtime.remote.client.set_host_coverage`); None: they do not.
        self.coverage = coverage
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self._dir = tempfile.mkdtemp(prefix="nncts-driver-")
        self.log_path = os.path.join(self._dir, "driver.log")

    def _connect(self):
        path = f"{self._dir}/hal-{self.starts}.sock"
        self.starts += 1
        log = open(self.log_path, "ab")
        measure = [] if self.coverage is None else \
            ["--coverage-data", f"{self.coverage[0]}.{os.getpid()}.{self.starts}", "--coverage-sources", self.coverage[1]]
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "runtime.remote.host", "--driver", self.driver, "--listen-local", path,
                 "--parent-pid", str(os.getpid()), *measure],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        finally:
            log.close()
        start = time.monotonic()
        while not connectable(path):
            if self.proc.poll() is not None:
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"driver process for {self.driver!r} "
                               f"{_signal_name(self.proc.returncode)} while starting: {self.log_tail()}")
            if time.monotonic() - start > START_TIMEOUT_S:
                self._kill()
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"driver process for {self.driver!r} did not "
                               f"serve within {START_TIMEOUT_S:g} s")
            time.sleep(0.01)
        return LocalChannel(path)

    def log_tail(self, lines: int = 3) -> str:
        """The last lines the driver process wrote to stderr (one line, for messages)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log_path) - 4096))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        tail = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
        return " | ".join(tail)

    def _lost(self, call: str, detail: str) -> Incident:
        proc = self.proc
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._kill()
            return Incident("crash", call, f"{detail}; the process was killed", self.driver)
        tail = self.log_tail()
        return Incident("crash", call, f"the process {_signal_name(proc.returncode)}"
                        + (f"; its last words: {tail}" if tail else ""), self.driver)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def stop_host(self) -> None:
        """Stop the host (one measuring coverage gets SIGTERM and up to
        :data:`STOP_TIMEOUT_S` to write its data); the next call starts a new one."""
        with self._lock:
            if self.coverage and self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()   # a host measuring coverage writes its data on SIGTERM
                try:
                    self.proc.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    pass
            self._kill()
            if self.channel is not None:
                self.channel.close()
                self.channel = None

    def close(self) -> None:
        self.stop_host()
        shutil.rmtree(self._dir, ignore_errors=True)


class EndpointLink(Link):
    """A host someone else started, at gRPC ``address`` (over mutual TLS with ``tls``; see
    :class:`GrpcChannel`); after a lost connection the next call reconnects (waiting up to
    ``START_TIMEOUT_S`` for the endpoint)."""

    def __init__(self, address: str, call_timeout_s: float | None = 300.0, tls: TlsFiles | None = None):
        super().__init__(address, call_timeout_s)
        self.address, self.tls = address, tls

    def _connect(self):
        channel = GrpcChannel(self.address, self.tls)
        if not channel.wait_ready(START_TIMEOUT_S):
            channel.close()
            hint = "; over TLS this is also what a certificate either end refuses looks like" if self.tls else ""
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"no driver serving at {self.address} "
                           f"(waited {START_TIMEOUT_S:g} s{hint})")
        return channel

    def _lost(self, call: str, detail: str) -> Incident:
        return Incident("crash", call, f"{detail} (endpoint {self.address})", self.driver)

    def close(self) -> None:
        with self._lock:
            if self.channel is not None:
                self.channel.close()
                self.channel = None
