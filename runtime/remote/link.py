"""The client's connection to a driver host, and what happens when the host dies or hangs.

A :class:`Link` makes every call of the proxies (:mod:`runtime.remote.proxy`): it gives each
call a deadline (``call_timeout_s``), turns the host's death into HalError(DEAD_OBJECT) and
records an *incident* (:data:`INCIDENTS`: kind ``crash`` or ``hang``, the call, what happened),
then brings a new host up for the next call. :class:`ProcessLink` starts the host itself
(``--driver-process``) and restarts it; :class:`EndpointLink` connects to a host someone else
started (``--driver-endpoint``) and reconnects. Objects of a host that died (prepared models,
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
from dataclasses import dataclass, field

from ..errors import HalError
from ..types import ErrorStatus
from .host import CHANNEL_OPTIONS


@dataclass
class Incident:
    """A driver host that died (``crash``) or stopped answering (``hang``) during ``call``."""

    kind: str
    call: str
    detail: str
    driver: str
    time: float = field(default_factory=time.time)


#: Every incident of this process, in order (the test plugins attribute them to tests).
INCIDENTS: list[Incident] = []

#: How long a new host may take to start serving (seconds).
START_TIMEOUT_S = 60.0


def _grpc():
    try:
        import grpc
    except ImportError:
        raise HalError(ErrorStatus.GENERAL_FAILURE, "out-of-process drivers need grpcio: "
                       "pip install 'nncts[remote]'") from None
    return grpc


class Link:
    """Calls to one driver host over gRPC (see the module docstring). ``call_timeout_s``
    bounds every call (None: no bound)."""

    def __init__(self, driver: str, call_timeout_s: float | None):
        self.driver = driver
        self.call_timeout_s = call_timeout_s
        self.generation = 0
        self.stub = None
        self._lock = threading.RLock()
        self._released: list[tuple[int, int]] = []

    # -- to be provided ------------------------------------------------------------------
    def _connect(self) -> None:
        """Bring a host up (or reconnect) and set :attr:`stub`; raises HalError."""
        raise NotImplementedError

    def _lost(self, call: str, error) -> Incident:
        """The incident for a call that failed at the transport (the host died/vanished)."""
        raise NotImplementedError

    def _kill(self) -> None:
        """Stop a hung host."""

    # -- calls ---------------------------------------------------------------------------
    def ensure(self) -> None:
        with self._lock:
            if self.stub is None:
                self._connect()
                self.generation += 1

    def call(self, method: str, message, generation: int | None = None, what: str | None = None):
        """``method(message)`` on the host; the reply. Raises HalError(DEAD_OBJECT) when the
        host died or hung (after recording the incident), or when ``generation`` (of the
        object the call is on) is not the current host's."""
        grpc = _grpc()
        stub, current = self._begin(method, generation, what)
        try:
            return getattr(stub, method)(message, timeout=self.call_timeout_s)
        except grpc.RpcError as e:
            raise self._failure(e, current, what or method) from None

    def call_later(self, method: str, message, generation: int | None, what: str, done) -> None:
        """Start ``method(message)`` and return; ``done(reply, None)`` or ``done(None,
        HalError)`` runs when it ends (on a gRPC thread). Raises HalError as :meth:`call`
        when the call cannot start."""
        grpc = _grpc()
        stub, current = self._begin(method, generation, what)
        future = getattr(stub, method).future(message, timeout=self.call_timeout_s)

        def finished(f):
            try:
                reply = f.result()
            except grpc.RpcError as e:
                done(None, self._failure(e, current, what))
                return
            done(reply, None)
        future.add_done_callback(finished)

    def _begin(self, method: str, generation: int | None, what: str | None):
        self.ensure()
        stub, current = self.stub, self.generation
        if generation is not None and generation != current:
            raise HalError(ErrorStatus.DEAD_OBJECT, f"{what or method}: the object belongs to a driver process "
                           f"that died; prepare the model again")
        self._flush_releases(stub, current)
        return stub, current

    def _failure(self, error, generation: int, what: str) -> HalError:
        """The HalError of a call that failed at the transport: DEAD_OBJECT after recording
        the incident when the host died or hung (killing a hung host), else GENERAL_FAILURE."""
        grpc = _grpc()
        code = error.code() if hasattr(error, "code") else None
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            incident = Incident("hang", what, f"no answer within {self.call_timeout_s:g} s; "
                                f"the driver process was killed", self.driver)
            self._drop(generation, kill=True)
        elif code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN,
                      grpc.StatusCode.INTERNAL):
            incident = self._lost(what, error)
            self._drop(generation)
        else:
            return HalError(ErrorStatus.GENERAL_FAILURE, f"{what}: transport error {code}: {error.details()}")
        INCIDENTS.append(incident)
        verb = "hung" if incident.kind == "hang" else "died"
        return HalError(ErrorStatus.DEAD_OBJECT, f"driver process {verb} during {incident.call}: {incident.detail}")

    def _drop(self, generation: int, kill: bool = False) -> None:
        with self._lock:
            if generation == self.generation and self.stub is not None:
                if kill:
                    self._kill()
                self.stub = None

    # -- releases ------------------------------------------------------------------------
    def release_later(self, generation: int, key: int) -> None:
        """Forget host object ``key`` at the next call (objects of a dead host are gone)."""
        self._released.append((generation, key))

    def _flush_releases(self, stub, generation: int) -> None:
        if len(self._released) < 64:
            return
        from .wire import pb
        batch, self._released = self._released, []
        ids = [k for g, k in batch if g == generation]
        if ids:
            try:
                stub.Release(pb.ReleaseRequest(ids=ids), timeout=self.call_timeout_s)
            except Exception:  # noqa: BLE001 - the next real call reports a dead host
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
    """A host process this link starts (``python -m runtime.remote.host``) on a Unix socket,
    restarted after each death. The host's stderr goes to a log file whose last lines are
    quoted in the incident."""

    def __init__(self, driver: str, call_timeout_s: float | None = 300.0):
        super().__init__(driver, call_timeout_s)
        self.proc: subprocess.Popen | None = None
        self.channel = None
        self.starts = 0
        self._dir = tempfile.mkdtemp(prefix="nncts-driver-")
        self.log_path = os.path.join(self._dir, "driver.log")

    def _connect(self) -> None:
        grpc = _grpc()
        address = f"unix:{self._dir}/hal-{self.starts}.sock"
        self.starts += 1
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "runtime.remote.host", "--driver", self.driver, "--listen", address,
                 "--parent-pid", str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        finally:
            log.close()
        self.channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        ready = grpc.channel_ready_future(self.channel)
        start = time.monotonic()
        while True:
            try:
                ready.result(timeout=0.05)
                break
            except grpc.FutureTimeoutError:
                pass
            if self.proc.poll() is not None:
                self.channel.close()
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"driver process for {self.driver!r} "
                               f"{_signal_name(self.proc.returncode)} while starting: {self.log_tail()}")
            if time.monotonic() - start > START_TIMEOUT_S:
                self._kill()
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"driver process for {self.driver!r} did not "
                               f"serve within {START_TIMEOUT_S:g} s")
        from .hal_pb2_grpc import DeviceStub
        self.stub = DeviceStub(self.channel)

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

    def _lost(self, call: str, error) -> Incident:
        proc = self.proc
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._kill()
            return Incident("crash", call, f"the connection broke ({error.details()}); the process was "
                            f"killed", self.driver)
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
        if self.channel is not None:
            self.channel.close()

    def close(self) -> None:
        with self._lock:
            self._kill()
            self.stub = None
        shutil.rmtree(self._dir, ignore_errors=True)


class EndpointLink(Link):
    """A host someone else started, at gRPC ``address``; after a lost connection the next
    call reconnects (waiting up to ``START_TIMEOUT_S`` for the endpoint)."""

    def __init__(self, address: str, call_timeout_s: float | None = 300.0):
        super().__init__(address, call_timeout_s)
        self.address = address
        self.channel = None

    def _connect(self) -> None:
        grpc = _grpc()
        self.channel = grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        try:
            grpc.channel_ready_future(self.channel).result(timeout=START_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            self.channel.close()
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"no driver serving at {self.address} "
                           f"(waited {START_TIMEOUT_S:g} s)") from None
        from .hal_pb2_grpc import DeviceStub
        self.stub = DeviceStub(self.channel)

    def _lost(self, call: str, error) -> Incident:
        return Incident("crash", call, f"the connection to {self.address} broke ({error.details()})", self.driver)

    def _kill(self) -> None:
        if self.channel is not None:
            self.channel.close()

    def close(self) -> None:
        self._kill()
