"""The local transport of the HAL: the request and reply messages of ``hal.proto``'s service,
each wrapped in a ``Frame`` (method name, serialized message) and written in protobuf's
length-delimited form (a varint byte count, then the bytes; C++
``SerializeDelimitedToOstream``, Java ``writeDelimitedTo``) over a Unix stream socket.

It carries exactly what gRPC carries, several times faster for the small messages of a test
suite (a Python gRPC round trip costs about 0.5 ms, a socket round trip about 0.07 ms), so
``--driver-process`` uses it; ``--driver-endpoint`` speaks gRPC. One connection carries one
call at a time: a client opens a connection per calling thread (:class:`FrameChannel`), the
host serves each connection in its own thread (:class:`FrameServer`).

A request frame may carry file descriptors, the memory and cache files the message refers to
by index (``fd_index``, :class:`runtime.remote.wire.FdList`): at most
:data:`~runtime.remote.wire.MAX_FDS`, sent as SCM_RIGHTS ancillary data with the frame's first
bytes. The descriptors a frame's bytes arrive with are that frame's (hence one call at a time
per connection); the host closes them all once the call is answered.

The host trusts nothing it reads (:class:`FrameReader`): the length prefix is checked against
``max_frame_bytes`` before a byte of the frame is read or allocated, descriptors beyond the
bound are refused, a frame that does not decode, an unknown method or a body that does not
decode or would decode into too many objects (:mod:`runtime.remote.budget`) are answered with
INVALID_ARGUMENT (the reply body an ``Ack``: every reply message starts with its ``Status``),
and nothing a client sends prints a traceback or stops the host.
"""
from __future__ import annotations

import array
import os
import socket
import sys
import threading
import time

from google.protobuf.message import DecodeError

from ..errors import HalError
from ..types import ErrorStatus
from .budget import SCAN_ABOVE, OverBudget, check_elements
from .limits import MAX_MESSAGE_BYTES
from .wire import MAX_FDS, pb

_SERVICE = pb.DESCRIPTOR.services_by_name["Device"]
#: method name -> (request class, reply class)
METHODS = {m.name: (getattr(pb, m.input_type.name), getattr(pb, m.output_type.name))
           for m in _SERVICE.methods}

#: Most connections one host serves at once (each holds a thread); more are closed at once.
MAX_CONNECTIONS = 1024
#: Bytes asked of the socket by the first read of a frame (a whole small frame in one system
#: call), and by each later one.
_CHUNK, _BIG_CHUNK = 1 << 16, 1 << 20


class TransportError(Exception):
    """A call that did not get its reply: ``kind`` is ``timeout`` (no answer in time) or
    ``lost`` (the connection broke: the host died or closed it)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


class FrameRefused(ValueError):
    """A frame the reader will not take (over ``--max-frame-bytes``, too many descriptors,
    not a Frame): the host answers INVALID_ARGUMENT with this message and closes the
    connection, since the stream can no longer be trusted to be in step."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def too_large(size: int, limit: int) -> str:
    """The message of a frame of ``size`` bytes over ``limit``."""
    return f"frame of {size} bytes exceeds the limit of {limit} (--max-frame-bytes)"


def encode_frame(method: str, message, max_bytes: int | None = None) -> bytes:
    """``Frame(method, message)`` delimited, ready to send. Raises FrameRefused when the
    frame is longer than ``max_bytes``."""
    data = pb.Frame(method=method, body=message.SerializeToString()).SerializeToString()
    if max_bytes is not None and len(data) > max_bytes:
        raise FrameRefused(too_large(len(data), max_bytes))
    return _varint(len(data)) + data


def send_frame(sock: socket.socket, payload: bytes, fds=()) -> None:
    """Send an encoded frame, with descriptors ``fds`` (SCM_RIGHTS, attached to its first
    bytes) when there are any. Raises OSError."""
    if not fds:
        sock.sendall(payload)
        return
    sent = socket.send_fds(sock, [payload], list(fds))
    if sent < len(payload):
        sock.sendall(memoryview(payload)[sent:])


def read_frame(rfile, max_bytes: int | None = None) -> "pb.Frame | None":
    """The next delimited Frame from a buffered binary file (the client's side: replies
    carry no descriptors); None at a clean end of stream. Raises EOFError for a stream cut
    inside a frame, ValueError for a malformed one or one longer than ``max_bytes``."""
    size, shift = 0, 0
    while True:
        b = rfile.read(1)
        if not b:
            if shift:
                raise EOFError("stream ended inside a frame length")
            return None
        size |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("frame length varint too long")
    if max_bytes is not None and size > max_bytes:
        raise ValueError(too_large(size, max_bytes))
    data = rfile.read(size)
    if len(data) != size:
        raise EOFError(f"stream ended after {len(data)} of {size} frame bytes")
    return pb.Frame.FromString(data)


def close_fds(fds) -> None:
    """Close every descriptor of ``fds`` (received ones the host owns)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class FrameReader:
    """The host's reader of one connection: :meth:`read` returns the next frame and the
    descriptors that came with it, checking every bound before reading or allocating
    (``max_frame_bytes`` from the length prefix, ``max_fds`` descriptors per frame). It never
    asks the socket for a byte past the current frame (the length prefix a byte at a time),
    so descriptors sent with a later frame cannot arrive with this one's bytes."""

    def __init__(self, sock: socket.socket, max_frame_bytes: int = MAX_MESSAGE_BYTES, max_fds: int = MAX_FDS):
        self.sock, self.max_frame_bytes, self.max_fds = sock, max_frame_bytes, max_fds
        self._ancillary = socket.CMSG_SPACE(max_fds * array.array("i").itemsize)

    def _recv(self, n: int, fds: list[int]) -> bytes:
        """Up to ``n`` bytes (empty at end of stream), their descriptors appended to
        ``fds``. Raises FrameRefused past ``max_fds`` descriptors, OSError."""
        data, ancillary, flags, _ = self.sock.recvmsg(n, self._ancillary, getattr(socket, "MSG_CMSG_CLOEXEC", 0))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                got = array.array("i")
                got.frombytes(payload[:len(payload) - len(payload) % got.itemsize])
                fds.extend(got)
        if flags & socket.MSG_CTRUNC or len(fds) > self.max_fds:
            raise FrameRefused(f"a frame may carry at most {self.max_fds} file descriptors")
        return data

    def read(self) -> "tuple[pb.Frame, list[int]] | None":
        """(frame, its descriptors, the caller's to close), or None at a clean end of
        stream. Raises FrameRefused (answer, then close), EOFError for a stream cut inside
        a frame, OSError."""
        fds: list[int] = []
        try:
            size = self._length(fds)
            if size is None:
                return None
            if size > self.max_frame_bytes:
                raise FrameRefused(too_large(size, self.max_frame_bytes))
            data = self._recv(min(size, _CHUNK), fds) if size else b""
            if len(data) < size:
                buf = bytearray(data)
                while len(buf) < size:  # grows with what arrives, never to more than was sent
                    chunk = self._recv(min(size - len(buf), _BIG_CHUNK), fds)
                    if not chunk:
                        raise EOFError(f"stream ended after {len(buf)} of {size} frame bytes")
                    buf += chunk
                data = buf
            try:
                return pb.Frame.FromString(data), fds
            except DecodeError as e:
                raise FrameRefused(f"the {size} bytes after the length prefix are not a Frame: {e}") from None
        except BaseException:
            close_fds(fds)
            raise

    def _length(self, fds: list[int]) -> int | None:
        """The frame length from its varint prefix, read a byte at a time; None at a clean
        end of stream."""
        size, shift = 0, 0
        while True:
            b = self._recv(1, fds)
            if not b:
                if shift:
                    raise EOFError("stream ended inside a frame length")
                return None
            size |= (b[0] & 0x7F) << shift
            if b[0] < 0x80:
                return size
            shift += 7
            if shift > 63:
                raise FrameRefused("the frame length prefix is not a varint of at most 10 bytes")


class FrameContext:
    """The ``context`` a :class:`~runtime.remote.host.DeviceServicer` method gets for a call
    over the local transport: ``fds``, the descriptors sent with its frame (closed by the
    server once the call is answered; over gRPC the context has none)."""

    def __init__(self, fds):
        self.fds = fds


def _refusal(message: str) -> "pb.Ack":
    """A reply carrying only INVALID_ARGUMENT ``message`` (decodes as any reply type)."""
    return pb.Ack(status=pb.Status(code=int(ErrorStatus.INVALID_ARGUMENT), message=message))


class FrameServer:
    """Serves ``servicer`` (a :class:`~runtime.remote.host.DeviceServicer`) on the Unix socket
    ``path``: a thread per connection (at most :data:`MAX_CONNECTIONS`), calls answered in
    order, frames over ``max_frame_bytes`` refused. ``log`` takes one line per connection
    dropped for a reason worth a driver log line (default: stderr). ``path`` None: no
    listening socket, only :meth:`serve_connection` on sockets made elsewhere (the fuzz
    target, :mod:`fuzz.host_target`). Raises OSError when ``path`` cannot be bound."""

    def __init__(self, servicer, path: str, max_frame_bytes: int = MAX_MESSAGE_BYTES, log=None):
        self.servicer, self.path, self.max_frame_bytes = servicer, path, max_frame_bytes
        self.log = log or (lambda line: print(f"nncts driver host: {line}", file=sys.stderr, flush=True))
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) if path is not None else None
        if self.sock is not None:
            self.sock.bind(path)
            self.sock.listen(64)

    def serve_forever(self) -> None:
        """Accept connections until the process ends; a failed accept (e.g. out of
        descriptors) is logged and retried, never fatal."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError as e:
                self.log(f"accept failed ({e}); retrying")
                time.sleep(0.1)
                continue
            if not self._slots.acquire(blocking=False):
                self.log(f"refused a connection: {MAX_CONNECTIONS} already open")
                conn.close()
                continue
            try:
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
            except RuntimeError as e:  # no more threads
                self._slots.release()
                self.log(f"refused a connection: {e}")
                conn.close()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self.serve_connection(conn)
        finally:
            self._slots.release()

    def serve_connection(self, conn: socket.socket) -> None:
        """Answer the calls of one connection until it ends, then close it. Never raises:
        a refused frame is answered (INVALID_ARGUMENT) before the connection is dropped, a
        broken one is dropped, anything unexpected is one :attr:`log` line."""
        reader = FrameReader(conn, self.max_frame_bytes)
        try:
            while True:
                try:
                    got = reader.read()
                except FrameRefused as e:
                    self.log(f"refused a frame and closed the connection: {e}")
                    conn.settimeout(5.0)  # a client that reads nothing does not keep this thread
                    send_frame(conn, encode_frame("", _refusal(str(e))))
                    _discard_pending(conn)
                    return
                if got is None:
                    return
                frame, fds = got
                try:
                    reply = self.dispatch(frame, fds)
                finally:
                    close_fds(fds)
                send_frame(conn, encode_frame(frame.method, reply))
        except (OSError, EOFError):
            return  # the client went away, or cut its frame short
        except Exception as e:  # noqa: BLE001 - nothing a client sends may stop the host
            self.log(f"dropped a connection after an unexpected {type(e).__name__}: {e}")
        finally:
            conn.close()

    def dispatch(self, frame: "pb.Frame", fds) -> object:
        """The reply to one frame: the servicer's, or INVALID_ARGUMENT for an unknown method,
        a body that does not decode as the method's request or would decode into more than
        :data:`~runtime.remote.budget.MAX_ELEMENTS` elements (checked before decoding a body
        over :data:`~runtime.remote.budget.SCAN_ABOVE` bytes), GENERAL_FAILURE for a servicer
        method that raised."""
        entry = METHODS.get(frame.method)
        if entry is None:
            return _refusal(f"unknown method {frame.method[:100]!r}: the Device service has "
                            f"{', '.join(sorted(METHODS))}")
        request_type = entry[0]
        try:
            if len(frame.body) > SCAN_ABOVE:  # what decoding would cost, before it costs it
                check_elements(frame.body, request_type.DESCRIPTOR)
            request = request_type.FromString(frame.body)
        except OverBudget as e:
            return _refusal(f"{frame.method}: {e}")
        except (DecodeError, MemoryError, RecursionError) as e:
            return _refusal(f"{frame.method}: the body is not a {request_type.__name__} message "
                            f"({type(e).__name__}: {e})")
        try:
            return getattr(self.servicer, frame.method)(request, FrameContext(fds))
        except Exception as e:  # noqa: BLE001 - the servicer guards driver calls; this is the rest
            return pb.Ack(status=pb.Status(code=int(ErrorStatus.GENERAL_FAILURE),
                                           message=f"{frame.method}: the host raised {type(e).__name__}: {e}"))


def _discard_pending(conn: socket.socket, limit: int = 1 << 20) -> None:
    """Read and drop up to ``limit`` bytes already sent (their descriptors are dropped by the
    kernel), so closing does not reset the connection before the client reads our reply."""
    conn.setblocking(False)
    try:
        while limit > 0:
            data = conn.recv(min(limit, _CHUNK))
            if not data:
                return
            limit -= len(data)
    except OSError:  # nothing more pending (EAGAIN), or the client is gone
        pass


class FrameChannel:
    """Client side: ``call(method, message, timeout, fds)`` over a pooled connection to the
    host at ``path`` (one per concurrent caller; an idle one is reused); raises
    :class:`TransportError`, or HalError(INVALID_ARGUMENT) for a frame over
    ``max_frame_bytes`` (the host's default limit: it would refuse it)."""

    def __init__(self, path: str, max_frame_bytes: int = MAX_MESSAGE_BYTES):
        self.path, self.max_frame_bytes = path, max_frame_bytes
        self._idle: list[tuple[socket.socket, object]] = []
        self._lock = threading.Lock()
        self._closed = False

    def _acquire(self):
        with self._lock:
            if self._idle:
                return self._idle.pop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
        except OSError as e:
            sock.close()
            raise TransportError("lost", f"cannot connect to {self.path}: {e}") from None
        return sock, sock.makefile("rb")

    def _release(self, conn) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        _close(conn)

    def encode(self, method: str, message) -> bytes:
        """The frame of a call, ready for :meth:`exchange`. Raises HalError(INVALID_ARGUMENT)
        when it is longer than ``max_frame_bytes``."""
        try:
            return encode_frame(method, message, self.max_frame_bytes)
        except FrameRefused as e:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{method}: {e}; share memory instead of "
                           f"sending it inline") from None

    def call(self, method: str, message, timeout: float | None, fds=()):
        """The reply to ``method(message)``, sending descriptors ``fds`` with the frame."""
        return self.exchange(method, self.encode(method, message), timeout, fds)

    def exchange(self, method: str, payload: bytes, timeout: float | None, fds=()):
        """Send the encoded frame ``payload`` of ``method`` (with ``fds``) and return the
        decoded reply. Raises TransportError."""
        conn = self._acquire()
        sock, rfile = conn
        try:
            sock.settimeout(timeout)
            send_frame(sock, payload, fds)
            frame = read_frame(rfile, self.max_frame_bytes)
        except socket.timeout:
            _close(conn)
            raise TransportError("timeout", f"no answer within {timeout:g} s") from None
        except (OSError, EOFError, ValueError) as e:
            _close(conn)
            raise TransportError("lost", f"the connection broke ({type(e).__name__}: {e})") from None
        if frame is None:
            _close(conn)
            raise TransportError("lost", "the connection closed")
        self._release(conn)
        return METHODS[method][1].FromString(frame.body)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            _close(conn)


def _close(conn) -> None:
    for part in (conn[1], conn[0]):
        try:
            part.close()
        except OSError:
            pass


def connectable(path: str) -> bool:
    """Whether a host already listens on ``path``."""
    if not os.path.exists(path):
        return False
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        return True
    except OSError:
        return False
    finally:
        sock.close()
