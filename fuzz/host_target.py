"""``python -m fuzz.host_target``: coverage-guided fuzzing (atheris / libFuzzer) of the driver
host's local transport: the frame reader (:class:`runtime.remote.frames.FrameReader`), the
dispatch of :class:`~runtime.remote.frames.FrameServer` and the
:class:`~runtime.remote.host.DeviceServicer` behind it, with the sample driver, in process.

Usage::

    python -m fuzz.host_target [--driver NAME] [--hang-seconds S] [libFuzzer flags, e.g.
                               -atheris_runs=N -runs=N -max_total_time=S -seed=N] [corpus dirs]
    python -m fuzz.host_target --make-seeds DIR      # write the seed streams and exit

An input is one client's connection: byte 0 chooses which descriptors travel with the
stream (bit k: :data:`DESCRIPTORS` [k]: a sealed memfd, an unsealed one, a pipe, a directory,
a socket, /dev/null, a read-only sealed memfd, a file on disk), bytes 1-2 (big-endian) say
where in the stream they are attached (the frame being read there gets them), the rest is the
byte stream the client sends before it closes its side. :meth:`HostTarget.run` serves it over
a socketpair with ``serve_connection`` and reads every reply. Findings (raised, so libFuzzer
saves the input as a ``crash-*`` artifact and stops): an exception escaping the server loop;
a log line other than a refused frame (``unexpected``: the loop's last-resort handler ran, or
a thread died with a traceback); a reply that is not a delimited Frame or says the host or the
driver raised (an exception rather than a HalError: on malformed input both must answer with
an ErrorStatus); a stream not served within ``--hang-seconds`` (the client's pending fences are failed as
soon as the host waits: only this client, which has sent everything, could signal them); a descriptor still open in this
process after the connection is gone. When no corpus directory is given, a temporary one is
used; an empty (or missing) first corpus directory is seeded with :func:`seed_streams` (a
session of real calls, and garbage).
"""
from __future__ import annotations

import gc
import io
import os
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from runtime.argparsing import OneLineParser

#: Modules traced for coverage (control and data flow).
INSTRUMENTED = ("runtime.remote", "runtime.hal.model_limits")
#: The descriptor kinds byte 0 of an input selects (bit k -> kind k).
DESCRIPTORS = ("sealed-memfd", "unsealed-memfd", "pipe", "directory", "socket", "dev-null", "read-only-memfd",
               "disk-file")
#: Frames longer than this are refused (the limit's path is then reachable by small inputs).
FUZZ_MAX_FRAME_BYTES = 1 << 20
#: Longest client stream sent (a socket's buffer holds it without a reader).
MAX_STREAM = 1 << 16


class HostFinding(Exception):
    """What the host did wrong with one input (see the module docstring)."""


def _descriptors(directory: str) -> tuple[list[int], tuple]:
    """(one open descriptor of each kind of :data:`DESCRIPTORS`, the objects that must live
    as long as they are used: the memory, the other ends of the pipe and socket)."""
    from runtime.hal.memory import FileMemory
    sealed = FileMemory(data=bytes(range(64)))
    unsealed = os.memfd_create("unsealed")
    os.ftruncate(unsealed, 64)
    r, _w = os.pipe()
    a, _b = socket.socketpair()
    disk = os.open(os.path.join(directory, "pool"), os.O_RDWR | os.O_CREAT)
    os.ftruncate(disk, 64)
    fds = [sealed.region()[0], unsealed, r, os.open(directory, os.O_RDONLY | os.O_DIRECTORY), a.detach(),
           os.open(os.devnull, os.O_RDWR), os.open(f"/proc/self/fd/{sealed.region()[0]}", os.O_RDONLY), disk]
    return fds, (sealed, _w, _b)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class HostTarget:
    """One fuzz iteration per :meth:`run` against a fresh servicer of ``driver`` (loaded
    once). Raises HostFinding (or the exception that escaped the server loop)."""

    def __init__(self, driver: str = "sample", hang_seconds: float = 10.0):
        from runtime.loader import load_driver
        self.device = load_driver(driver)
        self.hang_seconds = hang_seconds
        self.lines: list[str] = []
        self._dir = tempfile.mkdtemp(prefix="nncts-host-fuzz-")
        self.fds, self._keep = _descriptors(self._dir)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="nncts-host-fuzz")
        self._baseline = None

    def thread_died(self, args) -> None:
        """A ``threading.excepthook``: a thread that died is an ``unexpected`` log line
        (installed by :func:`main`)."""
        self.lines.append(f"unexpected: thread {args.thread.name if args.thread else '?'} died: "
                          f"{args.exc_type.__name__}: {args.exc_value}")

    def run(self, data: bytes) -> None:
        """Serve input ``data`` (see the module docstring) as one connection and check the
        outcome. Raises HostFinding, or the exception that escaped the server loop."""
        from runtime.remote.frames import FrameServer, send_frame
        from runtime.remote.host import DeviceServicer
        mask, split, stream = _parse(data)
        fds = [fd for k, fd in enumerate(self.fds) if mask >> k & 1]
        servicer = DeviceServicer(self.device)
        server = FrameServer(servicer, None, FUZZ_MAX_FRAME_BYTES, log=self.lines.append)
        client, host_end = socket.socketpair()
        served = self._pool.submit(server.serve_connection, host_end)
        try:
            try:
                client.sendall(stream[:split])
                if stream[split:]:
                    send_frame(client, stream[split:], fds)
                client.shutdown(socket.SHUT_WR)
            except OSError:  # the host refused a frame and closed while we were still sending
                pass
            replies = self._drain(client, servicer, served)
        finally:
            client.close()
        served.result(timeout=self.hang_seconds)  # an exception that escaped the loop is raised here
        self._check(replies)
        del servicer, server, served
        self._check_fds()

    def _drain(self, client: socket.socket, servicer, served) -> bytes:
        """Every reply byte until the host closes. The client has sent all it ever will, so
        a fence pending on it can no longer be signaled by it: each is failed as soon as the
        host waits (what a client that went away leaves behind). Past ``hang_seconds`` the
        stream is a hang."""
        client.settimeout(0.01)
        chunks, start = [], time.monotonic()
        while True:
            try:
                chunk = client.recv(1 << 16)
            except ConnectionResetError:  # closed with our bytes unread: every reply came before
                return b"".join(chunks)
            except socket.timeout:
                for fence in list(servicer.pending_fences.values()):
                    if not fence.is_signaled:
                        fence.signal(_general_failure())
                if time.monotonic() - start >= self.hang_seconds:
                    raise HostFinding(f"hang: the host did not finish the stream within {self.hang_seconds:g} s")
                continue
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def _check(self, replies: bytes) -> None:
        from runtime.remote.frames import read_frame
        from runtime.remote.wire import pb
        rfile = io.BytesIO(replies)
        while True:
            try:
                frame = read_frame(rfile)
            except (EOFError, ValueError) as e:
                raise HostFinding(f"a reply is not a delimited Frame: {e}") from None
            if frame is None:
                break
            status = pb.Ack.FromString(frame.body).status
            if "the host raised" in status.message or "driver raised" in status.message:
                raise HostFinding(f"reply to {frame.method}: {status.message}")
        bad = [line for line in self.lines if "unexpected" in line or "Traceback" in line]
        self.lines.clear()
        if bad:
            raise HostFinding(bad[0])

    def _check_fds(self) -> None:
        n = _open_fds()
        if self._baseline is None:
            self._baseline = n
        elif n > self._baseline:
            gc.collect()
            n = _open_fds()
            if n > self._baseline:
                leaked = n - self._baseline
                self._baseline = n  # report once
                raise HostFinding(f"{leaked} descriptor(s) still open after the connection closed")


def _parse(data: bytes) -> tuple[int, int, bytes]:
    """(descriptor mask, where they attach, client stream) of an input."""
    data = bytes(data[:MAX_STREAM + 3])
    mask = data[0] if data else 0
    split = int.from_bytes(data[1:3], "big") if len(data) >= 3 else 0
    stream = data[3:]
    return mask, min(split, len(stream)), stream


def _general_failure():
    from runtime.types import ErrorStatus
    return ErrorStatus.GENERAL_FAILURE


def seed_streams() -> dict[str, bytes]:
    """Named seed inputs: byte 0 (descriptor mask) + a client stream of real calls (a
    Describe with a probe region, an ADD model supported, prepared and executed on a shared
    input), and a few malformed ones."""
    from runtime.hal.memory import FileMemory
    from runtime.hal.types import DataLocation, Model, Operand, Operation, Request, RequestArgument, Subgraph
    from runtime.remote import wire
    from runtime.remote.frames import encode_frame
    from runtime.remote.wire import pb
    from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as O
    ops = [Operand(T.TENSOR_FLOAT32, [4], 1, 0.0, 0, L.SUBGRAPH_INPUT),
           Operand(T.TENSOR_FLOAT32, [4], 1, 0.0, 0, L.SUBGRAPH_INPUT),
           Operand(T.INT32, [], 1, 0.0, 0, L.CONSTANT_COPY, DataLocation(0, 0, 4)),
           Operand(T.TENSOR_FLOAT32, [4], 0, 0.0, 0, L.SUBGRAPH_OUTPUT)]
    model = wire.model_to_wire(Model(Subgraph(ops, [Operation(O.ADD, [0, 1, 2], [3])], [0, 1], [3]), [],
                                     b"\0\0\0\0", []), None)
    request = wire.request_to_wire(Request([RequestArgument(False, DataLocation(0, 0, 16), []),
                                            RequestArgument(False, DataLocation(0, 16, 16), [])],
                                           [RequestArgument(False, DataLocation(1, 0, 16), [])],
                                           [FileMemory(32), FileMemory(16)]), wire.FdList())
    request.pools[1].CopyFrom(pb.Pool(data=bytes(16)))
    frames = [
        encode_frame("Describe", pb.DescribeRequest(shared_memory_probe=pb.SharedRegion(size=16, read_only=True),
                                                    probe_bytes=bytes(range(16)))),
        encode_frame("GetSupportedOperations", pb.ModelRequest(model=model)),
        encode_frame("PrepareModel", pb.PrepareModelRequest(model=model, preference=1, priority=100, deadline_ns=-1)),
        encode_frame("Execute", pb.ExecuteRequest(prepared_model=1, request=request, deadline_ns=-1,
                                                  loop_timeout_duration_ns=-1)),
        encode_frame("ExecuteFenced", pb.ExecuteFencedRequest(prepared_model=1, request=request, deadline_ns=-1,
                                                              wait_for=[pb.FenceDependency(pending=7)],
                                                              loop_timeout_duration_ns=-1, duration_ns=-1)),
        encode_frame("WaitFence", pb.WaitFenceRequest(fence=2, timeout_s=0.01)),
        encode_frame("PrepareModel", pb.PrepareModelRequest(model=model, preference=1, priority=100, deadline_ns=-1,
                                                            has_cache=True, model_cache=[pb.CacheFile(fd_index=0)],
                                                            data_cache=[pb.CacheFile(data=b"cache")],
                                                            token=bytes(32), has_token=True)),
        encode_frame("CopyTo", pb.CopyToRequest(buffer=1, dst=pb.Pool(shared=pb.SharedRegion(size=16)))),
        encode_frame("Release", pb.ReleaseRequest(ids=[1, 2]))]
    session, seeds = b"".join(frames), {}
    for k, mask in enumerate((0x01, 0x41, 0x02, 0xFC, 0x80)):  # descriptors with each frame in turn
        for j in range(len(frames)):
            split = sum(map(len, frames[:j]))
            seeds[f"session-{k}-{j}"] = bytes([mask]) + split.to_bytes(2, "big") + session
    return seeds | {
        "unknown-method": b"\x00\x00\x00" + encode_frame("Nope", pb.Empty()),
        "undecodable-body": b"\x00\x00\x00" + encode_frame("Execute", pb.Frame(body=b"\xff\xff")),
        "huge-prefix": b"\x00\x00\x00\x80\x80\x80\x80\x80\x80\x10",
        "cut-frame": b"\x00\x00\x00\x10abc"}


def make_seeds(directory: Path) -> int:
    """Write :func:`seed_streams` into ``directory``; returns how many."""
    directory.mkdir(parents=True, exist_ok=True)
    seeds = seed_streams()
    for name, data in seeds.items():
        (directory / f"{name}.bin").write_bytes(data)
    return len(seeds)


def main(argv=None) -> int:
    """The command line (see the module docstring); returns the exit status."""
    p = OneLineParser(prog="python -m fuzz.host_target", allow_abbrev=False,
                                description="Fuzz the driver host's frame reader and dispatch (atheris/libFuzzer). "
                                            "Unknown arguments go to libFuzzer.")
    p.add_argument("--driver", default="sample", help="driver served in process (default: sample)")
    p.add_argument("--hang-seconds", type=float, default=10.0, help="a stream not served in this time is a hang")
    p.add_argument("--make-seeds", metavar="DIR", help="write the seed streams into DIR and exit")
    args, rest = p.parse_with_libfuzzer_flags(argv)
    if args.make_seeds:
        print(f"wrote {make_seeds(Path(args.make_seeds))} seed streams to {args.make_seeds}")
        return 0
    corpora = [Path(a) for a in rest if not a.startswith("-")]
    if not corpora:  # no corpus: a temporary one
        corpora.append(Path(tempfile.mkdtemp(prefix="nncts-host-corpus-")))
        rest.append(str(corpora[0]))
    if not corpora[0].is_dir() or not any(corpora[0].iterdir()):  # libFuzzer wants it; seeds start it
        make_seeds(corpora[0])
    import atheris
    import importlib
    with atheris.instrument_imports(include=list(INSTRUMENTED)):
        for name in ("runtime.hal.model_limits", "runtime.remote.budget", "runtime.remote.frames",
                     "runtime.remote.host", "runtime.remote.wire"):
            importlib.import_module(name)
    target = HostTarget(args.driver, args.hang_seconds)
    threading.excepthook = target.thread_died
    gc.freeze()
    atheris.Setup([sys.argv[0], *rest], target.run)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
