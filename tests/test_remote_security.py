"""The driver host's local transport against a hostile client (issue 20): no message can name
a file (memory and cache files cross as descriptors, SCM_RIGHTS); the host maps only sealed
regular files of the right size and refuses FIFOs, directories, sockets, devices, unsealed
files and read-only descriptors for writable regions, without blocking; received descriptors
are closed; frames, descriptors and model counts are bounded before anything is allocated;
garbage gets INVALID_ARGUMENT or a clean disconnect, never a traceback in the driver log, and
the host keeps serving. Every attack runs against a real host process (``python -m
runtime.remote.host --listen-local``) through a raw socket, as a hostile client would."""
from __future__ import annotations

import array
import os
import socket
import subprocess
import sys
import time

import pytest

from runtime.hal.memory import F_SEAL_SHRINK, FileMemory, seals_of
from runtime.hal.model_limits import MAX_OPERANDS
from runtime.hal.types import DataLocation, Model, Operand, Operation, Request, RequestArgument, Subgraph
from runtime.remote import wire
from runtime.remote.budget import MAX_ELEMENTS
from runtime.remote.frames import FrameServer, encode_frame, read_frame, send_frame
from runtime.remote.host import DeviceServicer
from runtime.remote.limits import MAX_MESSAGE_BYTES
from runtime.remote.wire import pb
from runtime.types import ErrorStatus, OperandLifeTime as L, OperandType as T, OperationType as O
from tests.cts_run import ROOT

INVALID = ErrorStatus.INVALID_ARGUMENT


# ---- a host process and a raw client ------------------------------------------------------

class Host:
    """A driver host process serving the sample driver on the local transport; its stderr
    (the driver log) goes to :attr:`log`."""

    def __init__(self, directory, *extra: str):
        self.path, self.log = str(directory / "hal.sock"), directory / "driver.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "runtime.remote.host", "--driver", "sample",
                                          "--listen-local", self.path, *extra], cwd=ROOT,
                                         stdout=subprocess.PIPE, stderr=log, text=True)
        assert "serving nncts-sample" in self.proc.stdout.readline(), self.log.read_text()

    def connect(self) -> socket.socket:
        """A new connection to the host (30 s timeout)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.path)
        sock.settimeout(30)
        return sock

    def call(self, method: str, message, fds=(), reply_type=None):
        """The reply to one call on a fresh connection (``reply_type`` default: the method's)."""
        with self.connect() as sock:
            send_frame(sock, encode_frame(method, message), fds)
            with sock.makefile("rb") as rfile:
                frame = read_frame(rfile)
        assert frame is not None, "the host dropped the connection without a reply"
        return (reply_type or _REPLIES.get(method, pb.Ack)).FromString(frame.body)

    def raw(self, data: bytes, fds=()) -> list:
        """Send raw bytes, then read replies until the host closes: [Ack of each reply]."""
        with self.connect() as sock:
            send_frame(sock, data, fds)
            sock.shutdown(socket.SHUT_WR)
            replies = []
            with sock.makefile("rb") as rfile:
                while (frame := read_frame(rfile)) is not None:
                    replies.append(pb.Ack.FromString(frame.body))
        return replies

    def alive(self) -> bool:
        """Running and answering a Describe."""
        return self.proc.poll() is None and self.call("Describe", pb.DescribeRequest()).name == "nncts-sample"

    def status(self, key: str) -> int:
        """A /proc/<pid>/status figure in kB (VmHWM: peak resident memory)."""
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1])
        raise KeyError(key)

    def reset_peak(self) -> None:
        """Make the host's VmHWM its current resident size."""
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")  # VmHWM := VmRSS

    def open_fds(self) -> int:
        """How many descriptors the host process has open."""
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self) -> None:
        """Kill the host process."""
        self.proc.kill()
        self.proc.wait()


_REPLIES = {"Describe": pb.DeviceInfo, "GetSupportedOperations": pb.SupportedOperations, "PrepareModel": pb.Prepared,
            "Execute": pb.ExecuteReply}


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """One host for the module; at the end its driver log must hold no traceback."""
    h = Host(tmp_path_factory.mktemp("host"))
    yield h
    h.stop()
    assert "Traceback" not in h.log.read_text(), h.log.read_text()[-3000:]


def _add_model() -> Model:
    """ADD of two float32[4] inputs (activation NONE): output = a + b."""
    ops = [Operand(T.TENSOR_FLOAT32, [4], 1, 0.0, 0, L.SUBGRAPH_INPUT),
           Operand(T.TENSOR_FLOAT32, [4], 1, 0.0, 0, L.SUBGRAPH_INPUT),
           Operand(T.INT32, [], 1, 0.0, 0, L.CONSTANT_COPY, DataLocation(0, 0, 4)),
           Operand(T.TENSOR_FLOAT32, [4], 0, 0.0, 0, L.SUBGRAPH_OUTPUT)]
    return Model(Subgraph(ops, [Operation(O.ADD, [0, 1, 2], [3])], [0, 1], [3]), [], b"\0\0\0\0", [])


def _request(input_pool: pb.Pool) -> pb.Request:
    """Inputs: 32 bytes of ``input_pool`` (pool 0); output: an inline pool 1 of 16 bytes."""
    request = wire.request_to_wire(Request([RequestArgument(False, DataLocation(0, 0, 16), []),
                                            RequestArgument(False, DataLocation(0, 16, 16), [])],
                                           [RequestArgument(False, DataLocation(1, 0, 16), [])], []), None)
    request.pools.extend([input_pool, pb.Pool(data=bytes(16))])
    return request


@pytest.fixture(scope="module")
def prepared(host) -> int:
    """The host id of the ADD model prepared on :func:`host`."""
    reply = host.call("PrepareModel", _prepare_request(_add_model()))
    assert reply.status.code == 0, reply.status.message
    return reply.prepared_model


def _prepare_request(model: Model, fds=None, **fields) -> pb.PrepareModelRequest:
    """PrepareModel of ``model``, preference FAST_SINGLE_ANSWER, priority MEDIUM, no deadline."""
    return pb.PrepareModelRequest(model=wire.model_to_wire(model, fds), preference=1, priority=100, deadline_ns=-1,
                                  **fields)


def _execute_request(prepared: int, request: pb.Request) -> pb.ExecuteRequest:
    """A synchronous execution without deadline or loop timeout."""
    return pb.ExecuteRequest(prepared_model=prepared, request=request, deadline_ns=-1, loop_timeout_duration_ns=-1)


def _execute(host, prepared, region: pb.SharedRegion, fds) -> pb.ExecuteReply:
    return host.call("Execute", _execute_request(prepared, _request(pb.Pool(shared=region))), fds)


def _refused(reply, *words: str) -> None:
    assert reply.status.code == INVALID, reply
    for w in words:
        assert w in reply.status.message, reply.status.message


# ---- no paths: descriptors only -----------------------------------------------------------

def test_no_message_can_name_a_file():
    """SharedRegion and CacheFile have no string field left; the bytes of the old ``path``
    field (1 / 3) decode as unknown fields, and the region then names descriptor 0, which a
    frame without descriptors does not have."""
    for message in (pb.SharedRegion, pb.CacheFile, pb.Pool, pb.DescribeRequest):
        assert not [f.name for f in message.DESCRIPTOR.fields if f.type == f.TYPE_STRING], message
    old_region = b"\x0a\x0b/etc/passwd\x18\x10"  # path="/etc/passwd", size=16 (HEAD's encoding)
    region = pb.SharedRegion.FromString(old_region)
    with pytest.raises(Exception) as e:
        wire.pool_from_wire(pb.Pool(shared=region), (), "Execute: request pool 0")
    assert e.value.status == INVALID and "descriptor 0 was not sent" in e.value.message


def test_secret_file_cannot_be_read_through_an_input_region(host, prepared, tmp_path):
    """HEAD: an ADD whose input region named a secret file returned its bytes. Now the
    region can only be a descriptor, and the client's own descriptor of an ordinary file is
    refused (not sealed against shrinking): the host maps nothing but sealed memfds."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"s3cr3t-passw0rd!" * 4)
    fd = os.open(secret, os.O_RDONLY)
    try:
        reply = _execute(host, prepared, pb.SharedRegion(fd_index=0, size=32, read_only=True), [fd])
    finally:
        os.close(fd)
    _refused(reply, "Execute: request: pool 0: descriptor 0", "not sealed against shrinking")
    assert not reply.written
    reply = _execute(host, prepared, pb.SharedRegion(fd_index=0, size=32, read_only=True), [])  # no descriptor
    _refused(reply, "descriptor 0 was not sent")


def test_a_sealed_memfd_region_is_mapped_and_read(host, prepared):
    """The honest case: a sealed memfd input region is mapped (no copy) and computed on."""
    import numpy as np
    memory = FileMemory(data=np.arange(8, dtype=np.float32).tobytes())
    fd = memory.region()[0]
    reply = _execute(host, prepared, pb.SharedRegion(fd_index=0, size=32, read_only=True), [fd])
    assert reply.status.code == 0, reply.status.message
    np.testing.assert_array_equal(np.frombuffer(reply.written[0].data, np.float32), [4, 6, 8, 10])


def test_a_read_only_descriptor_cannot_be_mapped_writable(host, prepared):
    """A read-only descriptor of a sealed memfd: refused for a writable region, mapped for a
    read-only one."""
    import numpy as np
    memory = FileMemory(data=np.ones(8, np.float32).tobytes())
    fd = os.open(f"/proc/self/fd/{memory.region()[0]}", os.O_RDONLY)
    try:
        reply = _execute(host, prepared, pb.SharedRegion(fd_index=0, size=32, read_only=False), [fd])
        _refused(reply, "writable but the descriptor is not open for reading and writing")
        reply = _execute(host, prepared, pb.SharedRegion(fd_index=0, size=32, read_only=True), [fd])
        assert reply.status.code == 0, reply.status.message
    finally:
        os.close(fd)


def _kinds_of_non_files(tmp_path):
    """(name, descriptor, keep-alive) of a FIFO, a pipe, a directory, a socket, a device."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r, w = os.pipe()
    a, b = socket.socketpair()
    return [("FIFO", os.open(fifo, os.O_RDONLY | os.O_NONBLOCK), None, "a FIFO or pipe"),
            ("pipe", r, w, "a FIFO or pipe"),
            ("directory", os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY), None, "a directory"),
            ("socket", a.detach(), b, "a socket"),
            ("device", os.open("/dev/zero", os.O_RDWR), None, "a character device")]


def test_fifo_directory_socket_and_device_descriptors_are_refused_at_once(host, prepared, tmp_path):
    """HEAD: a region naming a FIFO blocked the host in open(). Each non-file descriptor is
    INVALID_ARGUMENT at once (bounded at 10 s for a loaded CI machine: blocking is forever), for
    a pool and for a cache file alike."""
    for name, fd, keep, kind in _kinds_of_non_files(tmp_path):
        try:
            start = time.monotonic()
            reply = _execute(host, prepared, pb.SharedRegion(fd_index=0, size=4), [fd])
            _refused(reply, "not a regular file or memfd", kind)
            cache = host.call("PrepareModel", _prepare_request(_add_model(), has_cache=True,
                                                               model_cache=[pb.CacheFile(fd_index=0)]), [fd])
            _refused(cache, "PrepareModel: model cache file 0: descriptor 0 is not a regular file", kind)
            assert time.monotonic() - start < 10.0, name
        finally:
            os.close(fd)
            if isinstance(keep, int):
                os.close(keep)
            elif keep is not None:
                keep.close()
    assert host.alive()


def test_unsealed_shrinkable_files_are_refused(host, prepared, tmp_path):
    """HEAD: truncating a mapped pool file after PrepareModel killed the host with SIGBUS.
    A memfd without F_SEAL_SHRINK and a file on disk could shrink: both are refused."""
    memfd = os.memfd_create("unsealed")
    disk = os.open(tmp_path / "pool", os.O_RDWR | os.O_CREAT)
    try:
        for fd in (memfd, disk):
            os.ftruncate(fd, 64)
            reply = _execute(host, prepared, pb.SharedRegion(fd_index=0, size=32), [fd])
            _refused(reply, "not sealed against shrinking (F_SEAL_SHRINK)")
    finally:
        os.close(memfd)
        os.close(disk)


def test_the_describe_probe_is_no_oracle_on_files(host, tmp_path):
    """HEAD: Describe mapped any path the probe named and said whether it held
    ``probe_bytes``: a byte oracle on every file the host could read. Now the probe is a
    descriptor the client sent, mapped only when it is a sealed memfd."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"0123456789abcdef")
    probe = pb.SharedRegion(fd_index=0, size=16, read_only=True)
    fd = os.open(secret, os.O_RDONLY)
    try:
        guess = host.call("Describe", pb.DescribeRequest(shared_memory_probe=probe, probe_bytes=b"0123456789abcdef"),
                          [fd])
    finally:
        os.close(fd)
    assert guess.status.code == 0 and not guess.shared_memory
    assert not host.call("Describe", pb.DescribeRequest(shared_memory_probe=probe, probe_bytes=bytes(16))).shared_memory
    memory = FileMemory(data=b"0123456789abcdef")
    honest = host.call("Describe", pb.DescribeRequest(shared_memory_probe=probe, probe_bytes=b"0123456789abcdef"),
                       [memory.region()[0]])
    assert honest.shared_memory


def test_sealed_memfds_cannot_shrink_and_the_host_survives_the_attempt(host):
    """Our memories are sealed (F_SEAL_SHRINK): ftruncate to less is EPERM, so a model whose
    constant pool the host keeps mapped cannot be shrunk under it; growing is allowed."""
    import numpy as np
    memory = FileMemory(data=np.zeros(16, np.float32).tobytes())
    fd = memory.region()[0]
    assert seals_of(fd) & F_SEAL_SHRINK
    model = _add_model()
    model.main.operands[2].lifetime, model.main.operands[2].location = L.CONSTANT_REFERENCE, DataLocation(0, 0, 4)
    model.pools = [memory]
    fds = wire.FdList()
    message = _prepare_request(model, fds)
    assert message.model.pools[0].WhichOneof("kind") == "shared"
    reply = host.call("PrepareModel", message, fds.fds)
    assert reply.status.code == 0, reply.status.message
    with pytest.raises(PermissionError):
        os.ftruncate(fd, 0)
    os.ftruncate(fd, 1 << 16)  # growing is harmless
    request = _request(pb.Pool(data=np.arange(8, dtype=np.float32).tobytes()))
    executed = host.call("Execute", _execute_request(reply.prepared_model, request))
    assert executed.status.code == 0, executed.status.message
    assert host.alive()


def test_a_cache_file_is_opened_with_its_descriptors_own_access_mode(host, tmp_path):
    """HEAD opened a cache file ``r+b`` from a path the client named: any file the host could
    write. Now the client passes its open file, and the host opens it with the descriptor's
    access mode (F_GETFL): a file passed read-only stays unwritten even when the driver
    writes its cache; one passed read-write is written in place."""
    files = {name: tmp_path / name for name in ("model-ro", "data-ro", "model-rw", "data-rw")}
    for path in files.values():
        path.write_bytes(b"original")
    fds = [os.open(files["model-ro"], os.O_RDONLY), os.open(files["data-ro"], os.O_RDONLY),
           os.open(files["model-rw"], os.O_RDWR), os.open(files["data-rw"], os.O_RDWR)]
    try:
        for first in (0, 2):
            reply = host.call("PrepareModel", _prepare_request(
                _add_model(), has_cache=True, model_cache=[pb.CacheFile(fd_index=first)],
                data_cache=[pb.CacheFile(fd_index=first + 1)], token=bytes(32), has_token=True), fds)
            assert reply.status.code == 0, reply.status.message
            assert [c.WhichOneof("content") for c in (*reply.model_cache, *reply.data_cache)] == ["fd_index"] * 2
    finally:
        for fd in fds:
            os.close(fd)
    assert files["model-ro"].read_bytes() == files["data-ro"].read_bytes() == b"original"
    assert files["model-rw"].read_bytes() != b"original" and files["data-rw"].read_bytes() != b"original"


def test_memories_hand_out_descriptors_and_share_only_sealed_files(tmp_path):
    """region() gives the memory's own descriptor, never a path; a front-end memory mapped
    from a file that could shrink has no region (its bytes are copied), one from a sealed
    memfd shares it; Memory.region() is its pool's."""
    from runtime.nnapi.memory import Memory
    runtime_memory = Memory(64)
    fd, offset, size, read_only = runtime_memory.region()
    assert isinstance(fd, int) and (offset, size, read_only) == (0, 64, False)
    assert seals_of(fd) & F_SEAL_SHRINK
    path = tmp_path / "weights"
    path.write_bytes(bytes(64))
    assert Memory.from_file(path, 64).region() is None
    sealed = FileMemory(64)
    from_memfd = Memory.from_fd(sealed.region()[0], 32, offset=8)
    fd, offset, size, read_only = from_memfd.region()
    assert seals_of(fd) & F_SEAL_SHRINK and (offset, size, read_only) == (8, 32, False)
    from_memfd.free()
    assert from_memfd.region() is None


def test_received_descriptors_are_closed(host, prepared, tmp_path):
    """Descriptors sent with calls, accepted or refused, do not accumulate in the host."""
    import numpy as np
    memory = FileMemory(data=np.arange(8, dtype=np.float32).tobytes())
    before = host.open_fds()
    for _ in range(20):
        _execute(host, prepared, pb.SharedRegion(fd_index=0, size=32, read_only=True), [memory.region()[0]])
        with open(tmp_path / "x", "wb") as f:
            _execute(host, prepared, pb.SharedRegion(fd_index=0, size=32), [f.fileno()] * 5)
        host.call("Describe", pb.DescribeRequest(), [memory.region()[0]] * 3)
    time.sleep(0.2)
    assert host.open_fds() == before, (before, host.open_fds())


def test_too_many_descriptors_are_refused(host):
    """More than 253 descriptors with one frame (the kernel's SCM_MAX_FD): the host refuses
    the frame; the descriptors it got are closed."""
    r, w = os.pipe()
    try:
        sock = host.connect()
        payload = encode_frame("Describe", pb.DescribeRequest())
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r] * 253))]
        sock.sendmsg([payload[:1]], ancillary)
        sock.sendmsg([payload[1:2]], ancillary)  # a second batch for the same frame
        sock.sendall(payload[2:])
        with sock.makefile("rb") as rfile:
            reply = pb.Ack.FromString(read_frame(rfile).body)
        sock.close()
    finally:
        os.close(r)
        os.close(w)
    _refused(reply, "at most 253 file descriptors")
    assert host.alive()


# ---- bounds before allocation ------------------------------------------------------------

def _varint(n: int) -> bytes:
    """Protobuf's base-128 varint of ``n`` > 0 (the frame length prefix), as protobuf itself
    writes it: a uint64 field's bytes after its one-byte tag (not the transport's encoder)."""
    assert n > 0
    return pb.SharedRegion(offset=n).SerializeToString()[1:]


@pytest.mark.parametrize("size", [1 << 30, 1 << 40])
def test_a_huge_length_prefix_is_refused_before_reading(host, size):
    """HEAD: a frame declaring 1 GiB was read into memory as it came (the host grew by what
    the client sent). Now the length prefix alone is refused, naming the limit, the
    connection is closed (the client cannot stream on), and the host's peak memory stays."""
    host.reset_peak()
    before = host.status("VmHWM")
    sock = host.connect()
    sock.sendall(_varint(size) + b"\x0a\x08Describe")
    with sock.makefile("rb") as rfile:
        reply = pb.Ack.FromString(read_frame(rfile).body)
        assert read_frame(rfile) is None  # closed after the refusal
    _refused(reply, f"frame of {size} bytes exceeds the limit of {MAX_MESSAGE_BYTES} (--max-frame-bytes)")
    with pytest.raises(OSError):  # broken pipe or reset: nobody reads the rest any more
        for _ in range(64):
            sock.sendall(bytes(1 << 20))
    sock.close()
    assert host.status("VmHWM") - before < 20_000, (before, host.status("VmHWM"))  # kB
    assert host.alive()


def test_max_frame_bytes_option(tmp_path):
    """--max-frame-bytes N: a frame of N + 1 bytes is refused, one of N served."""
    h = Host(tmp_path, "--max-frame-bytes", "4096")
    try:
        big = pb.DescribeRequest(probe_bytes=b"x" * 4096)
        replies = h.raw(encode_frame("Describe", big))
        _refused(replies[0], "exceeds the limit of 4096 (--max-frame-bytes)")
        small = pb.DescribeRequest(probe_bytes=b"x" * 4000)
        assert len(encode_frame("Describe", small)) <= 4096 + 2
        assert h.call("Describe", small).name == "nncts-sample"
    finally:
        h.stop()
    assert "Traceback" not in h.log.read_text()


def _empty_operands_model_request(n: int) -> bytes:
    """A ModelRequest whose main subgraph has ``n`` empty operands, built as bytes."""
    subgraph = b"\x0a\x00" * n
    model = b"\x0a" + _varint(len(subgraph)) + subgraph
    return b"\x0a" + _varint(len(model)) + model


def _peak_and_time(host, data: bytes):
    """(replies, seconds, growth of the host's peak resident memory in kB) of sending ``data``."""
    host.reset_peak()
    before, start = host.status("VmHWM"), time.monotonic()
    replies = host.raw(data)
    return replies, time.monotonic() - start, host.status("VmHWM") - before


def test_a_million_empty_operands_are_refused_before_decoding(host):
    """HEAD: 1,000,000 empty operands in GetSupportedOperations cost 17 s and 780 MB. Now
    they are counted before the request is decoded (runtime.remote.budget) and refused."""
    replies, seconds, grown_kb = _peak_and_time(
        host, _frame("GetSupportedOperations", _empty_operands_model_request(1_000_000)))
    _refused(replies[0], "GetSupportedOperations: the request would decode into more than "
             f"{MAX_ELEMENTS} elements", "Subgraph.operands", "runtime.remote.budget.MAX_ELEMENTS")
    assert seconds < 10.0 and grown_kb < 100_000, (seconds, grown_kb)   # HEAD: 17 s or more, 780 MB
    assert host.alive()


def test_operands_over_the_limit_are_refused_before_the_model_is_built(host):
    """MAX_OPERANDS + 1 empty operands (within the decoding budget): the count is checked on
    the decoded message against MAX_OPERANDS, the limit the validator reads too, before a
    HAL operand is built."""
    replies, seconds, grown_kb = _peak_and_time(
        host, _frame("GetSupportedOperations", _empty_operands_model_request(MAX_OPERANDS + 1)))
    _refused(replies[0], f"GetSupportedOperations: model has {MAX_OPERANDS + 1} operands",
             f"limit of {MAX_OPERANDS} (runtime.hal.model_limits.MAX_OPERANDS)")
    assert seconds < 10.0 and grown_kb < 100_000, (seconds, grown_kb)
    assert host.alive()


def _frame(method: str, body: bytes) -> bytes:
    data = pb.Frame(method=method, body=body).SerializeToString()
    return _varint(len(data)) + data


def test_a_model_at_the_count_limits_fits_the_decoding_budget():
    """The decoding budget refuses no model the count limits allow: MAX_OPERANDS operands of
    rank 4 and MAX_OPERATIONS operations of 3 inputs and 1 output, with a location each."""
    from runtime.hal.model_limits import MAX_OPERATIONS
    from runtime.remote.budget import check_elements
    sg = pb.Subgraph(operands=[pb.Operand(type=3, dimensions=[1, 2, 3, 4], location=pb.DataLocation(length=4))
                               for _ in range(MAX_OPERANDS)],
                     operations=[pb.Operation(type=0, inputs=[1, 2, 3], outputs=[4]) for _ in range(MAX_OPERATIONS)])
    data = pb.ModelRequest(model=pb.Model(main=sg)).SerializeToString()
    assert check_elements(data, pb.ModelRequest.DESCRIPTOR) <= MAX_ELEMENTS


def test_the_validator_reads_the_same_limit():
    """validate_model refuses a model over MAX_OPERANDS with the same message shape."""
    from runtime.errors import HalError
    from runtime.hal.validate import validate_model
    ops = [Operand(T.INT32, [], 0, 0.0, 0, L.TEMPORARY_VARIABLE)] * (MAX_OPERANDS + 1)
    with pytest.raises(HalError) as e:
        validate_model(Model(Subgraph(ops, [], [], []), [], b"", []))
    assert e.value.status == INVALID
    assert f"has {MAX_OPERANDS + 1} operands, more than the limit of {MAX_OPERANDS}" in e.value.message


# ---- garbage -----------------------------------------------------------------------------

def test_garbage_unknown_methods_and_undecodable_bodies(host):
    """An unknown method and a body that does not decode get INVALID_ARGUMENT and the
    connection goes on; a frame that is not a Frame, or a length prefix that is not a
    varint, gets INVALID_ARGUMENT and a disconnect; none prints a traceback."""
    replies = host.raw(_frame("Nope", b"") + _frame("Execute", b"\xff\xff\xff") + _frame("Describe", b""))
    _refused(replies[0], "unknown method 'Nope'")
    _refused(replies[1], "Execute: the body is not a ExecuteRequest message")
    assert len(replies) == 3 and replies[2].status.code == 0
    replies = host.raw(b"\x05\xff\xff\xff\xff\xff" + _frame("Describe", b""))
    assert len(replies) == 1
    _refused(replies[0], "not a Frame")
    replies = host.raw(b"\xff" * 11)
    _refused(replies[0], "not a varint")
    assert host.raw(b"\x10abc") == []  # cut short: dropped
    import random
    rng = random.Random(20)
    for _ in range(200):
        host.raw(rng.randbytes(rng.randrange(1, 300)))
    assert host.alive()
    assert "Traceback" not in host.log.read_text()


def test_grpc_never_shares():
    """Over gRPC the servicer's context carries no descriptors: a probe region is not
    mapped (shared_memory false) and a shared pool is INVALID_ARGUMENT."""
    from runtime.loader import load_driver
    servicer = DeviceServicer(load_driver("sample"))
    info = servicer.Describe(pb.DescribeRequest(shared_memory_probe=pb.SharedRegion(fd_index=0, size=16),
                                                probe_bytes=bytes(16)), object())
    assert info.status.code == 0 and not info.shared_memory
    model = wire.model_to_wire(_add_model(), None)
    model.pools.add().shared.size = 4
    reply = servicer.GetSupportedOperations(pb.ModelRequest(model=model), object())
    _refused(reply, "GetSupportedOperations: model: pool 0: descriptor 0 was not sent",
             "only the local transport carries descriptors")


def test_the_server_loop_in_process_survives_a_socketpair_stream():
    """FrameServer.serve_connection over a socketpair (what the fuzz target drives): garbage
    in, replies out, returns at the end of the stream without raising."""
    from runtime.loader import load_driver
    lines = []
    server = FrameServer(DeviceServicer(load_driver("sample")), None, 1 << 20, log=lines.append)
    a, b = socket.socketpair()
    a.sendall(_frame("Describe", b"") + _varint(1 << 21))
    a.shutdown(socket.SHUT_WR)
    server.serve_connection(b)
    with a.makefile("rb") as rfile:
        first, second = read_frame(rfile), read_frame(rfile)
    assert pb.DeviceInfo.FromString(first.body).name == "nncts-sample"
    _refused(pb.Ack.FromString(second.body), "exceeds the limit of 1048576")
    assert lines and "refused a frame" in lines[0] and "exceeds the limit" in lines[0]
    a.close()


# ---- the fuzz target ---------------------------------------------------------------------

def test_host_fuzz_target_serves_every_seed_without_a_finding():
    """fuzz.host_target: each seed stream (a session of real calls with each kind of
    descriptor attached to each frame, and garbage) is served to the end, every reply a
    Frame, no unexpected log line, no descriptor left open."""
    from fuzz.host_target import HostTarget, seed_streams
    target = HostTarget()
    for name, data in seed_streams().items():
        target.run(data)
    assert target.lines == []


def test_host_fuzz_target_short_atheris_run_finds_nothing(tmp_path):
    """A few thousand libFuzzer inputs through the frame reader and dispatch (about 10 s)."""
    proc = subprocess.run([sys.executable, "-m", "fuzz.host_target", "-atheris_runs=3000", "-seed=1",
                           f"-artifact_prefix={tmp_path}/", str(tmp_path / "corpus")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done 3000" in proc.stderr and not list(tmp_path.glob("crash-*"))
