"""What runs inside a stress test's own process (the "test process", started by
:mod:`mlts.stress.runner`): the test context, the driver liveness checker, and client
processes with planned kills.

Process tree of one test::

    runner (never loads the driver)
      └─ test process: its own process group; loads the driver, runs the test body,
           │            the liveness checker thread, sends progress and one result
           ├─ client process 1 (spawned; threads loading / compiling / running models)
           └─ client process N ...

Outcome strings: SUCCESS, FAILURE (a check of the test failed), HANG (decided by the runner:
no result in time), CRASH (a process died: the test process, seen by the runner, or a client
that died of a signal the test did not send, reported by the test process).
"""
from __future__ import annotations

import faulthandler
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

SUCCESS, FAILURE, HANG, CRASH = "SUCCESS", "FAILURE", "HANG", "CRASH"
OUTCOMES = (SUCCESS, FAILURE, HANG, CRASH)
#: Seconds between progress messages of a client process.
CLIENT_REPORT_INTERVAL_S = 0.2
#: Pause between two runs of the liveness checker (seconds).
LIVENESS_INTERVAL_S = 0.02


class TestFailure(Exception):
    """A check of the test failed: the outcome is FAILURE (or ``outcome``) with this message."""

    __test__ = False

    def __init__(self, message: str, details: dict | None = None, outcome: str = FAILURE):
        super().__init__(message)
        self.details = details or {}
        self.outcome = outcome


@dataclass
class Result:
    """What a test body returns: outcome, one-line message, JSON-serializable details."""

    outcome: str
    message: str
    details: dict = field(default_factory=dict)


def signal_name(exitcode: int | None) -> str:
    """``"SIGABRT"`` for a process's negative exit code -6, ``"exit code 3"`` otherwise."""
    if exitcode is not None and exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


def scratch_root() -> str | None:
    """A memory file system for temporary files when writable (/dev/shm), else the default."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


#: Modules imported once by the fork server, so a new test or client process starts without
#: importing them again (see :func:`mp_context`).
PRELOAD = ["numpy", "runtime.nnapi", "runtime.drivers.sample", "runtime.testing.frontend",
           "runtime.testing.criteria", "harness.runner", "harness.graphs", "harness.graph_configs",
           "mlts.tflite_import", "mlts.execute", "mlts.stress.core", "mlts.stress.tests",
           "mlts.stress.workloads"]


def mp_context():
    """The multiprocessing context for test and client processes: ``forkserver`` (each new
    process is forked from a server process that imported :data:`PRELOAD` and nothing else:
    it never loads a driver nor runs a test, so every process starts clean, in milliseconds
    instead of a fresh interpreter's second of imports), else ``spawn``."""
    import multiprocessing as mp
    try:
        ctx = mp.get_context("forkserver")
    except ValueError:
        return mp.get_context("spawn")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def _release_fork_server() -> None:
    """Close the fork server's "keep alive" descriptor this process inherited (CPython hands
    every forked process the write end of its server's liveness pipe, so the server outlives
    its clients): without it, a killed runner's server sees EOF and exits, and
    :func:`die_with_parent` then takes its test processes down, and theirs in turn."""
    try:
        from multiprocessing import forkserver
        server = forkserver._forkserver
        if server._forkserver_pid is None and server._forkserver_alive_fd is not None:
            os.close(server._forkserver_alive_fd)
            server._forkserver_alive_fd = None
    except (ImportError, AttributeError, OSError):
        pass


def die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux ``prctl
    PR_SET_PDEATHSIG``), so a killed runner leaves no orphan behind (a hung test would
    otherwise sleep forever): the fork server exits with the runner, the test processes with
    the fork server, the clients with their test process. Exits at once if the parent is
    already gone (adopted by init)."""
    _release_fork_server()
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        os._exit(1)


def _error_text(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text if type(e).__name__ in text else f"{type(e).__name__}: {text}"


class Ctx:
    """A test's view of its process: ``params`` (the test's parameters, ``duration`` in
    seconds, ``seed``, ``models``), ``device`` (the front-end Device of the driver under
    test), ``rng``, the deadline (``start + duration``), progress messages to the runner,
    the usable workloads, a scratch directory and client processes."""

    def __init__(self, test: str, driver: str, params: dict, conn=None):
        import numpy as np
        from runtime.nnapi import get_devices
        self.test, self.driver, self.params, self._conn = test, driver, dict(params), conn
        self.start = time.monotonic()
        self.duration = float(params["duration"])
        self.deadline = self.start + self.duration
        self.rng = np.random.default_rng(int(params.get("seed") or 0))
        self._send_lock = threading.Lock()
        self.device = get_devices([driver])[0]
        self.tmp = Path(tempfile.mkdtemp(prefix="nncts-stress-", dir=scratch_root()))
        self.clients: list[Client] = []
        self.skipped: dict[str, str] = {}
        self._workloads = None

    # -- time and progress -------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def progress(self, message: str) -> None:
        """Tell the runner what the test is doing (shown when it hangs or crashes)."""
        if self._conn is None:
            return
        with self._send_lock:
            try:
                self._conn.send(("progress", f"{self.elapsed():.1f} s: {message}"))
            except (OSError, ValueError):
                pass

    # -- models ------------------------------------------------------------------------------
    def workloads(self):
        """The workloads of ``params["models"]`` the driver can run (loaded once); the others
        are listed in :attr:`skipped`. Raises TestFailure when none can run (MLTS: "No model
        available to be run on accelerator")."""
        from .workloads import load_workload
        if self._workloads is None:
            usable = []
            for spec in self.params["models"]:
                self.progress(f"loading model {spec}")
                try:
                    w = load_workload(spec)
                    reason = w.unsupported(self.device)
                except Exception as e:  # noqa: BLE001 - a model that cannot load is skipped
                    reason = f"cannot load: {_error_text(e)}"
                if reason:
                    self.skipped[spec] = reason
                else:
                    usable.append(w)
            if not usable:
                why = "; ".join(f"{s}: {r}" for s, r in self.skipped.items())
                raise TestFailure(f"no model available to run on driver {self.device.name} ({why})",
                                  {"skipped": self.skipped})
            self._workloads = usable
        return self._workloads

    def liveness(self, workload, mapped: bool = False) -> "Liveness":
        """Start the driver liveness checker on ``workload`` (see :class:`Liveness`)."""
        live = Liveness(self, workload, mapped)
        live.start()
        return live

    # -- client processes --------------------------------------------------------------------
    def spawn_client(self, mode: str, models: list[str], threads: int = 1, run_s: float = 0.0,
                     cache_dir: Path | None = None, pause: tuple[float, float] = (0.0, 0.0),
                     gate=None) -> "Client":
        """Start a client process (:func:`mp_context`) that loads the driver and ``models`` then, on
        ``threads`` threads for ``run_s`` seconds after it is ready: ``infer`` (compile once,
        run and check repeatedly), ``compile`` (load + compile repeatedly, pausing a uniform
        draw from ``pause`` seconds between compilations), or ``verify`` (one pass: compile
        with ``cache_dir``, run, check). ``gate``: an Event of :func:`mp_context` a ``compile``
        client waits for before each compilation (the test pauses it by clearing it). See
        :func:`client_main`."""
        index = len(self.clients)
        spec = {"driver": self.driver, "models": list(models), "mode": mode, "threads": int(threads),
                "run_s": float(run_s), "cache_dir": None if cache_dir is None else str(cache_dir),
                "pause": tuple(pause), "seed": int(self.rng.integers(1 << 31)), "index": index}
        mp = mp_context()
        recv, send = mp.Pipe(duplex=False)
        process = mp.Process(target=client_main, args=(spec, send, gate), name=f"stress-client-{index}",
                             daemon=True)
        process.start()
        send.close()
        client = Client(index, mode, process, recv, time.monotonic())
        self.clients.append(client)
        return client

    def close(self) -> None:
        """Kill leftover clients and remove the scratch directory."""
        for c in self.clients:
            if c.process.is_alive():
                c.process.kill()
                c.process.join(5)
        shutil.rmtree(self.tmp, ignore_errors=True)


class Liveness(threading.Thread):
    """MLTS's ``DriverLivenessChecker``: while a test stresses the driver, run one model on
    it over and over (compiled once; each result checked), so a driver that stops
    answering or starts failing is seen. A hung driver leaves this thread blocked, so the
    test never reports and the runner calls it a HANG."""

    def __init__(self, ctx: Ctx, workload, mapped: bool):
        super().__init__(name="liveness", daemon=True)
        self.ctx, self.workload, self.mapped = ctx, workload, mapped
        self.runs = 0
        self.error: str | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        w, ctx = self.workload, self.ctx
        try:
            built = w.build_mapped(ctx.tmp / "mapped") if self.mapped else None
            prepared = w.compile(ctx.device, built)
            while True:  # at least one run, however soon the test ends
                problems = w.check(w.run(prepared))
                if problems:
                    self.error = f"{w.name}: {'; '.join(problems)}"
                    return
                self.runs += 1
                if self._halt.wait(LIVENESS_INTERVAL_S):
                    return
        except Exception as e:  # noqa: BLE001 - any failure of the driver is the finding
            self.error = f"{w.name}: {_error_text(e)}"

    def stop(self) -> tuple[str, str] | None:
        """Stop and wait (forever, if the driver hangs). Returns (FAILURE, message) when
        a run failed, else None; :attr:`runs` counts the good runs."""
        self._halt.set()
        self.join()
        if self.error:
            return FAILURE, f"driver liveness check failed after {self.runs} good runs: {self.error}"
        return None


@dataclass
class Client:
    """A client process as its test sees it (filled in by :func:`watch_clients`)."""

    index: int
    mode: str
    process: multiprocessing.Process
    conn: object
    started: float
    ready_at: float | None = None
    kill_at: float | None = None
    kill_decided: bool = False
    killed_at: float | None = None
    ended_at: float | None = None
    count: int = 0
    error: str | None = None
    stats: dict | None = None

    def handle(self, message) -> None:
        kind, payload = message
        if kind == "ready":
            self.ready_at = time.monotonic()
        elif kind == "count":
            self.count = payload
        elif kind == "done":
            self.stats = payload
            self.count = payload.get("count", self.count)
        elif kind == "error":
            self.error = payload

    def drain(self) -> None:
        try:
            while self.conn.poll():
                self.handle(self.conn.recv())
        except (EOFError, OSError):
            pass

    @property
    def exitcode(self) -> int | None:
        return self.process.exitcode

    def verdict(self) -> tuple[str, str] | None:
        """(outcome, message) when this ended client makes the test fail, else None: killed
        by its planned SIGKILL or exited 0 -> fine; died of another signal (or of a SIGKILL
        the test did not send) -> CRASH; an error it reported -> FAILURE."""
        code = self.exitcode
        who = f"client {self.index} ({self.mode}, pid {self.process.pid})"
        if self.killed_at is not None and code == -signal.SIGKILL:
            return None
        if code is not None and code < 0:
            return CRASH, f"{who} died of {signal_name(code)} after {self.count} {self._unit()}"
        if self.error:
            return FAILURE, f"{who}: {self.error}"
        if code != 0:
            return FAILURE, f"{who} ended with {signal_name(code)}"
        return None

    def _unit(self) -> str:
        return {"infer": "inferences", "compile": "compilations", "verify": "checked runs"}.get(self.mode, "runs")

    def summary(self) -> dict:
        return {"index": self.index, "mode": self.mode, "exit": signal_name(self.exitcode),
                "count": self.count, "planned_kill_s": None if self.kill_at is None or self.ready_at is None
                else round(self.kill_at - self.ready_at, 3),
                "killed": self.killed_at is not None}


def watch_clients(ctx: Ctx, clients: list[Client], kill_after=None) -> None:
    """Wait until every client has ended, reading its messages; ``kill_after(client)`` is
    called when a client is ready and returns seconds after which to SIGKILL it (None: no
    planned kill). Blocks as long as a client runs (the runner's watchdog bounds it)."""
    pending = list(clients)
    while pending:
        now = time.monotonic()
        due = [c.kill_at for c in pending if c.kill_at is not None and c.killed_at is None]
        timeout = max(0.0, min(due) - now) if due else None
        waitables = [c.conn for c in pending if not c.conn.closed] + [c.process.sentinel for c in pending]
        ready = multiprocessing.connection.wait(waitables, timeout)
        for c in list(pending):
            if c.conn in ready:
                try:
                    c.handle(c.conn.recv())
                except (EOFError, OSError):
                    c.conn.close()
                if c.ready_at is not None and not c.kill_decided and kill_after is not None:
                    c.kill_decided = True
                    delay = kill_after(c)
                    c.kill_at = None if delay is None else c.ready_at + max(0.0, float(delay))
            if c.kill_at is not None and c.killed_at is None and time.monotonic() >= c.kill_at \
                    and c.process.is_alive():
                os.kill(c.process.pid, signal.SIGKILL)
                c.killed_at = time.monotonic()
                ctx.progress(f"killed client {c.index} (planned) after {c.count} {c._unit()}")
            if c.process.sentinel in ready or not c.process.is_alive():
                c.process.join()
                if not c.conn.closed:
                    c.drain()
                c.ended_at = time.monotonic()
                pending.remove(c)
                ctx.progress(f"client {c.index} ended: {signal_name(c.exitcode)}")


def worst(verdicts: list[tuple[str, str] | None]) -> tuple[str, str] | None:
    """The verdict that decides: the first CRASH, else the first FAILURE, else None."""
    real = [v for v in verdicts if v]
    for outcome in (CRASH, FAILURE):
        for v in real:
            if v[0] == outcome:
                return v
    return None


# --- client process ---------------------------------------------------------------------------

def client_main(spec: dict, conn, gate=None) -> None:
    """Body of a client process (see :meth:`Ctx.spawn_client`). Reports ("ready", None),
    ("count", n) every :data:`CLIENT_REPORT_INTERVAL_S`, then ("done", stats) and exits 0,
    or ("error", message) and exits 1."""
    die_with_parent()
    faulthandler.enable(all_threads=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    import numpy as np
    from runtime.nnapi import get_devices
    from .workloads import load_workload

    def send(kind, payload=None):
        try:
            with lock:
                conn.send((kind, payload))
        except (OSError, ValueError):
            pass

    lock = threading.Lock()
    try:
        device = get_devices([spec["driver"]])[0]
        workloads = [load_workload(s) for s in spec["models"]]
        cache_dir = Path(spec["cache_dir"]) if spec["cache_dir"] else None
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
    except Exception as e:  # noqa: BLE001
        send("error", f"setup failed: {_error_text(e)}")
        conn.close()
        os._exit(1)
    mode, rng = spec["mode"], np.random.default_rng(spec["seed"])
    counts = [0] * spec["threads"]
    errors: list[str] = []
    send("ready")
    end = time.monotonic() + spec["run_s"]
    lo, hi = spec["pause"]
    pauses = rng.uniform(lo, hi, size=(spec["threads"], 4096)) if hi > 0 else None

    def thread_body(t: int) -> None:
        try:
            if mode == "verify":
                for w in workloads:
                    problems = w.check(w.run(w.compile(device, None, cache_dir)))
                    if problems:
                        raise RuntimeError(f"{w.name}: {'; '.join(problems)}")
                    counts[t] += 1
                return
            if mode == "infer":
                prepared = [(w, w.compile(device, None, cache_dir)) for w in workloads]
                while not errors:
                    for w, p in prepared:
                        problems = w.check(w.run(p))
                        if problems:
                            raise RuntimeError(f"{w.name}: {'; '.join(problems)}")
                        counts[t] += 1
                    if time.monotonic() >= end:
                        return
                return
            k = 0
            while not errors:
                for w in workloads:
                    if gate is not None:
                        gate.wait()
                    w.compile(device, w.build(), cache_dir)
                    counts[t] += 1
                    if pauses is not None:
                        time.sleep(pauses[t, k % pauses.shape[1]])
                        k += 1
                if time.monotonic() >= end:
                    return
        except Exception as e:  # noqa: BLE001
            errors.append(f"thread {t}: {_error_text(e)}")

    threads = [threading.Thread(target=thread_body, args=(t,), daemon=True) for t in range(spec["threads"])]
    for th in threads:
        th.start()
    while True:
        alive = [th for th in threads if th.is_alive()]
        if not alive:
            break
        alive[0].join(CLIENT_REPORT_INTERVAL_S)
        send("count", sum(counts))
    if errors:
        send("error", errors[0])
        conn.close()
        os._exit(1)
    send("done", {"count": sum(counts), "per_thread": counts})
    conn.close()
    os._exit(0)


# --- test process entry -----------------------------------------------------------------------

def _preload() -> None:
    """Import what the tests use before the test's clock starts (imports are slow on a
    loaded machine, and not what a stress test measures)."""
    import importlib
    for name in ("runtime.nnapi", "runtime.testing.frontend", "runtime.testing.criteria", "harness.runner",
                 "harness.graphs", "harness.graph_configs", "mlts.tflite_import", "mlts.execute"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - optional (the TFLite importer needs its extra)
            pass


def test_main(test: str, body, driver: str, params: dict, conn, log_path: str) -> None:
    """Body of a test process: own process group (so the runner can kill the whole tree),
    stdout/stderr to ``log_path``, faulthandler on fatal signals and on SIGUSR1 (the runner
    asks for every thread's stack before killing a hung test), run the test ``test``
    (``body(ctx) -> Result``: its :class:`~mlts.stress.tests.StressTest` body, a module-level
    function so that it reaches this process by reference), send
    ("result", {outcome, message, details}) and exit at once (a thread stuck in the driver
    must not hold the exit). Dies with its parent (:func:`die_with_parent`)."""
    os.setpgid(0, 0)
    die_with_parent()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    faulthandler.enable(all_threads=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    _preload()
    ctx = None
    try:
        ctx = Ctx(test, driver, params, conn)
        ctx.workloads()  # models loaded before the test's clock starts (a failure is reported below)
        conn.send(("started", None))
        ctx.start = time.monotonic()
        ctx.deadline = ctx.start + ctx.duration
        result = body(ctx)
    except TestFailure as e:
        result = Result(e.outcome, str(e), e.details)
    except Exception as e:  # noqa: BLE001 - a test's own error is a FAILURE with its traceback
        traceback.print_exc()
        result = Result(FAILURE, f"test raised {_error_text(e)}", {})
    if ctx is not None:
        if ctx.skipped:
            result.details.setdefault("skipped_models", ctx.skipped)
        ctx.close()
    try:
        conn.send(("result", {"outcome": result.outcome, "message": result.message, "details": result.details}))
        conn.close()
    finally:
        import sys
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
