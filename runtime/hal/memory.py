"""Memory pools: the HAL's shared memory.

:class:`SharedMemory` is a writable byte buffer in this process. :class:`FileMemory` is the
same backed by an anonymous shared file (Linux ``memfd``), so another process (an
out-of-process driver, :mod:`runtime.remote`) can map the very same bytes: its
:meth:`~SharedMemory.region` names them. :func:`shared_memory` makes a FileMemory where the
platform allows and a SharedMemory elsewhere.
"""
from __future__ import annotations

import mmap
import os
import weakref


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

    def region(self) -> tuple[str, int, int, bool] | None:
        """(path, offset, size, read_only) of a file another process of this machine may
        map to share these bytes; None when the memory lives only in this process."""
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
    Linux): ``size`` zero bytes or a copy of ``data``. :meth:`region` gives
    ``/proc/<pid>/fd/<fd>`` so a driver process maps the same pages (no copy). The file
    and the mapping are released when the object is collected. Raises OSError where memfd
    is unavailable (use :func:`shared_memory`)."""

    def __init__(self, size: int = 0, data: bytes | None = None):
        n = len(data) if data is not None else int(size)
        fd = os.memfd_create("nncts-memory", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, max(n, 1))
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

    def region(self) -> tuple[str, int, int, bool]:
        return f"/proc/{os.getpid()}/fd/{self._fd}", 0, self._size, False

    def __repr__(self) -> str:
        return f"FileMemory(size={self._size})"


_MEMFD = hasattr(os, "memfd_create") and os.path.isdir(f"/proc/{os.getpid()}/fd")


def shared_memory(size: int = 0, data: bytes | None = None) -> SharedMemory:
    """A pool of ``size`` zero bytes (or a copy of ``data``) that other processes can map
    (:class:`FileMemory`) where the platform has memfd, else a plain :class:`SharedMemory`."""
    if _MEMFD:
        try:
            return FileMemory(size, data)
        except OSError:  # out of file descriptors or memfd refused: an in-process pool
            pass
    return SharedMemory(size, data)
