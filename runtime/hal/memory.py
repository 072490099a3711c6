"""Memory pools: the HAL's shared memory.

:class:`SharedMemory` is a writable byte buffer in this process. :class:`FileMemory` is the
same backed by an anonymous shared file (Linux ``memfd``), so another process (an
out-of-process driver, :mod:`runtime.remote`) can map the very same bytes: its
:meth:`~SharedMemory.region` hands out the file descriptor, which the local transport sends
to the driver process (SCM_RIGHTS; no path ever names it). :func:`shared_memory` makes a
FileMemory where the platform allows and a SharedMemory elsewhere.

Shrinking a mapped file makes every process that touches the lost pages die of SIGBUS, so a
FileMemory's memfd is sealed against shrinking (``F_SEAL_SHRINK``, and ``F_SEAL_SEAL`` so no
one removes or adds seals later), and only files sealed so are shared
(:func:`shrink_sealed`); a driver host refuses to map any other.
"""
from __future__ import annotations

import fcntl
import mmap
import os
import weakref

# Linux file sealing (fcntl(2), memfd_create(2)); Python 3.11 exposes them on Linux, the
# numbers are the kernel's where it does not.
F_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)
F_GET_SEALS = getattr(fcntl, "F_GET_SEALS", 1034)
F_SEAL_SEAL = getattr(fcntl, "F_SEAL_SEAL", 0x1)
F_SEAL_SHRINK = getattr(fcntl, "F_SEAL_SHRINK", 0x2)
MFD_ALLOW_SEALING = getattr(os, "MFD_ALLOW_SEALING", 2)


def seals_of(fd: int) -> int:
    """The seals of file descriptor ``fd`` (``F_GET_SEALS``); 0 for a file that cannot be
    sealed (not shmem/memfd) or a descriptor that is not open."""
    try:
        return fcntl.fcntl(fd, F_GET_SEALS)
    except OSError:
        return 0


def shrink_sealed(fd: int) -> bool:
    """Whether the file of ``fd`` can never shrink (``F_SEAL_SHRINK``): only such a file is
    safe to map in another process, which a truncation would kill with SIGBUS."""
    return bool(seals_of(fd) & F_SEAL_SHRINK)


class SharedMemory:
    """A memory pool of ``size`` bytes (zero-filled) or holding a copy of ``data``.

    ``buffer`` is a writable ``memoryview`` of unsigned bytes; ``size`` its length in bytes.
    """

    def __init__(self, size: int = 0, data: bytes | None = None):
        self._data = bytearray(data) if data is not None else bytearray(size)
        self.buffer = memoryview(self._data)

    @property
    def size(self) -> int:
        return len(self._data)

    def region(self) -> tuple[int, int, int, bool] | None:
        """(fd, offset, size, read_only) of a file another process of this machine may map
        to share these bytes: ``fd`` is this object's own descriptor (valid while it lives;
        the local transport sends it with the frame), of a file sealed against shrinking.
        None when the memory lives only in this process."""
        return None

    def __deepcopy__(self, memo) -> "SharedMemory":
        return SharedMemory(data=bytes(self.buffer))

    def __repr__(self) -> str:
        return f"SharedMemory(size={self.size})"


def _unmap(fd: int, mapping: mmap.mmap) -> None:
    try:
        mapping.close()
    except BufferError:  # a view is still exported: the mapping goes when it is collected
        pass
    os.close(fd)


class FileMemory(SharedMemory):
    """A SharedMemory whose bytes live in an anonymous shared file (``memfd_create``,
    Linux): ``size`` zero bytes or a copy of ``data``. The file is sealed against shrinking
    (``F_SEAL_SHRINK | F_SEAL_SEAL``: ``ftruncate`` to less raises EPERM), so a driver
    process may map it safely; :meth:`region` gives its descriptor, which the local
    transport passes to the driver process (no copy). The file and the mapping are released
    when the object is collected. Raises OSError where memfd or sealing is unavailable (use
    :func:`shared_memory`)."""

    def __init__(self, size: int = 0, data: bytes | None = None):
        n = len(data) if data is not None else int(size)
        fd = os.memfd_create("nncts-memory", os.MFD_CLOEXEC | MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, max(n, 1))
            fcntl.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL)
            self._mmap = mmap.mmap(fd, max(n, 1))
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._size = fd, n
        self.buffer = memoryview(self._mmap)[:n]
        if data:
            self.buffer[:] = data
        weakref.finalize(self, _unmap, fd, self._mmap)

    @property
    def size(self) -> int:
        return self._size

    def region(self) -> tuple[int, int, int, bool]:
        """(fd, 0, size, False): the sealed memfd, writable (see :meth:`SharedMemory.region`)."""
        return self._fd, 0, self._size, False

    def __repr__(self) -> str:
        return f"FileMemory(size={self._size})"


_MEMFD = hasattr(os, "memfd_create")


def shared_memory(size: int = 0, data: bytes | None = None) -> SharedMemory:
    """A pool of ``size`` zero bytes (or a copy of ``data``) that other processes can map
    (:class:`FileMemory`) where the platform has memfd, else a plain :class:`SharedMemory`."""
    if _MEMFD:
        try:
            return FileMemory(size, data)
        except OSError:  # out of file descriptors, memfd or sealing refused: an in-process pool
            pass
    return SharedMemory(size, data)
