"""Front-end memory objects: :class:`Memory` (``ANeuralNetworksMemory``) and
:class:`MemoryDesc` (``ANeuralNetworksMemoryDesc``), feature levels 1-4.

A memory is one of:

* runtime shared memory: ``Memory(size)`` (zero-filled) or ``Memory.from_bytes(data)``;
* a mapping of a file descriptor: ``Memory.from_fd(fd, size, offset, prot)`` /
  ``Memory.from_file(path, size, offset)`` (``ANeuralNetworksMemory_createFromFd``, FL1);
  writes through the memory are seen in the file and the other way round;
* a memory created from a descriptor: ``Memory.from_desc(desc)``
  (``ANeuralNetworksMemory_createFromDesc``, FL4): a driver buffer (``IDevice.allocate``)
  when every role runs on one device that can allocate it, else runtime shared memory.
  Such a memory starts uninitialized and may only be used in the roles of its descriptor.

``Memory.copy(src, dst)`` is ``ANeuralNetworksMemory_copy`` (FL4).

Every failure raises :class:`NnapiError` with the NNAPI result code: BAD_DATA (bad
argument, incompatible memories, uninitialized source), BAD_STATE (call order, memory
already freed), UNEXPECTED_NULL (missing object), UNMAPPABLE (mmap failed), and the
driver's errors mapped to result codes (e.g. OP_FAILED).
"""
from __future__ import annotations

import mmap
import os
import stat
import threading
import weakref

import numpy as np

from ..drivers.buffers import OperandMeta, combine_dimensions, fully_specified
from ..errors import NnapiError
from ..hal.interfaces import IBuffer
from ..hal.memory import SharedMemory, shared_memory, shrink_sealed
from ..hal.types import BufferDesc, BufferRole, MemoryDomainToken
from ..hal.validate import operand_byte_size
from ..types import OperandType, ResultCode, is_tensor_type
from .device import driver_call
from .memory_desc import INPUT, OUTPUT, MemoryDesc  # noqa: F401  (MemoryDesc re-exported)

#: mmap protection flags accepted by :meth:`Memory.from_fd` (``PROT_NONE`` is 0).
PROT_NONE = 0
PROT_READ = mmap.PROT_READ
PROT_WRITE = mmap.PROT_WRITE

def _bad(message: str) -> NnapiError:
    return NnapiError(ResultCode.BAD_DATA, message)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class MemoryAccessError(AttributeError):
    """The pool's bytes cannot be accessed (mapped with PROT_NONE, or unmapped by
    ``free``). An AttributeError, so ``hasattr(pool, "buffer")`` checks see no memory."""


class MappedMemory(SharedMemory):
    """A SharedMemory backed by ``size`` bytes of a file descriptor from ``offset``
    (MAP_SHARED: writes reach the file). ``offset`` need not be page-aligned: the mapping
    starts at the aligned-down offset and :attr:`buffer` is the slice asked for.

    ``prot``: PROT_NONE (:attr:`buffer` raises MemoryAccessError), PROT_READ (read-only
    ``buffer``), PROT_WRITE or PROT_READ|PROT_WRITE (writable). Raises OSError/ValueError
    when mmap fails.
    """

    def __init__(self, fd: int, size: int, offset: int, prot: int):
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        delta = offset - start
        map_prot = PROT_READ | (prot & PROT_WRITE)  # no write-only pages: writable implies readable
        self._mmap = mmap.mmap(fd, delta + size, flags=mmap.MAP_SHARED, prot=map_prot, offset=start)
        try:  # our own descriptor of the file, so a driver process can map it too (region)
            self._fd = os.dup(fd)
            self._release_fd = weakref.finalize(self, os.close, self._fd)
        except OSError:
            self._fd = None
        self._base = memoryview(self._mmap)
        self._view = self._base[delta:delta + size]
        self._size = size
        self.prot = prot
        self.offset = offset

    @property
    def buffer(self) -> memoryview:
        if self._view is None:
            raise MemoryAccessError("the memory has been freed (unmapped)")
        if self.prot == PROT_NONE:
            raise MemoryAccessError("the memory was mapped with PROT_NONE and cannot be accessed")
        return self._view

    @property
    def size(self) -> int:
        return self._size

    def region(self) -> tuple[int, int, int, bool] | None:
        """(fd, offset, size, read-only) of the mapped file, ``fd`` this memory's own
        duplicate (see :meth:`SharedMemory.region`); None once freed, for PROT_NONE, when
        the descriptor could not be duplicated, or when the file is not sealed against
        shrinking (``F_SEAL_SHRINK``: a file someone may truncate would kill a driver
        process mapping it with SIGBUS, so its bytes are copied instead)."""
        if self._fd is None or not self.readable or not shrink_sealed(self._fd):
            return None
        return self._fd, self.offset, self._size, not self.writable

    @property
    def readable(self) -> bool:
        return self._view is not None and self.prot != PROT_NONE

    @property
    def writable(self) -> bool:
        return self._view is not None and bool(self.prot & PROT_WRITE)

    def close(self) -> None:
        """Unmap. Views still exported elsewhere (e.g. numpy arrays) keep the mapping alive
        until they are gone."""
        if self._view is None:
            return
        view, base, self._view, self._base = self._view, self._base, None, None
        if self._fd is not None:
            self._release_fd()
            self._fd = None
        try:
            view.release()
            base.release()
            self._mmap.close()
        except BufferError:  # an exported view is still alive: unmapped when collected
            pass

    def __deepcopy__(self, memo) -> SharedMemory:
        return SharedMemory(data=bytes(self.buffer))

    def __repr__(self) -> str:
        return f"MappedMemory(size={self._size}, offset={self.offset}, prot={self.prot})"


class Memory:
    """``ANeuralNetworksMemory``: a block of memory operand values and execution arguments
    can live in (see the module docstring for the kinds and :meth:`copy`).

    ``Memory(size)``: ``size`` bytes (>= 0, zero-filled) of runtime shared memory; BAD_DATA
    for a negative size. Attributes kept for the model builder: ``size`` (bytes of ``pool``;
    0 for a driver buffer) and ``pool`` (the :class:`SharedMemory`; None for a driver
    buffer).
    """

    def __init__(self, size: int = 0, *, _pool: SharedMemory | None = None):
        if _pool is None:
            if not _is_int(size) or size < 0:
                raise _bad(f"Memory: size {size!r} must be a non-negative number of bytes")
            _pool = shared_memory(int(size))
        self.pool: SharedMemory | None = _pool
        self.buffer: IBuffer | None = None   # driver buffer (from_desc on one device)
        self.token: int | None = None        # its MemoryDomainToken value
        self._device = None                  # the Device that allocated ``buffer``
        self._desc: MemoryDesc | None = None
        self._roles: frozenset = frozenset()
        self._dims: list[int] | None = None  # desc memory: dimensions after the last write
        self._initialized = True
        self._freed = False
        self._lock = threading.Lock()
        self.fallback_reason = ""            # desc memory: why no driver buffer was used

    # -- creation ----------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data) -> "Memory":
        """Runtime shared memory holding a copy of ``data`` (bytes-like; ``len(data)`` bytes)."""
        return cls(_pool=shared_memory(data=bytes(data)))

    @classmethod
    def from_fd(cls, fd: int, size: int, offset: int = 0, prot: int = PROT_READ | PROT_WRITE) -> "Memory":
        """Map ``size`` bytes of file descriptor ``fd`` from byte ``offset``
        (``ANeuralNetworksMemory_createFromFd``, FL1). The memory shares the file's bytes
        (MAP_SHARED); ``fd`` is duplicated, so the caller may close it afterwards. Offsets
        need not be page-aligned.

        Raises BAD_DATA when ``fd`` is not an open descriptor, ``size`` <= 0, ``offset``
        < 0, ``offset + size`` is past the end of a regular file, or ``prot`` is not
        PROT_NONE or a combination of PROT_READ and PROT_WRITE; UNMAPPABLE when mmap fails
        (e.g. PROT_WRITE on a descriptor opened read-only, or an unmappable file type).
        """
        if not _is_int(fd) or fd < 0:
            raise _bad(f"Memory.from_fd: {fd!r} is not a file descriptor")
        if not _is_int(size) or size <= 0:
            raise _bad(f"Memory.from_fd: size {size!r} must be a positive number of bytes")
        if not _is_int(offset) or offset < 0:
            raise _bad(f"Memory.from_fd: offset {offset!r} must be >= 0")
        if not _is_int(prot) or prot & ~(PROT_READ | PROT_WRITE):
            raise _bad(f"Memory.from_fd: prot {prot!r} must be PROT_NONE or a combination of "
                       f"PROT_READ and PROT_WRITE")
        fd, size, offset, prot = int(fd), int(size), int(offset), int(prot)
        try:
            st = os.fstat(fd)
        except OSError as e:
            raise _bad(f"Memory.from_fd: fd {fd} is not an open file descriptor ({e.strerror})") from None
        if stat.S_ISREG(st.st_mode) and offset + size > st.st_size:
            raise _bad(f"Memory.from_fd: bytes [{offset}, {offset + size}) are past the end of the "
                       f"file ({st.st_size} bytes)")
        try:
            pool = MappedMemory(fd, size, offset, prot)
        except (OSError, ValueError, OverflowError) as e:
            raise NnapiError(ResultCode.UNMAPPABLE, f"Memory.from_fd: cannot map fd {fd} "
                             f"(size {size}, offset {offset}, prot {prot}): {e}") from None
        return cls(_pool=pool)

    @classmethod
    def from_file(cls, path, size: int, offset: int = 0, prot: int = PROT_READ | PROT_WRITE) -> "Memory":
        """:meth:`from_fd` on ``path`` opened read-write (read-only when ``prot`` lacks
        PROT_WRITE); the descriptor is closed again. Raises BAD_DATA when the file cannot
        be opened, else as :meth:`from_fd`."""
        flags = os.O_RDWR if _is_int(prot) and prot & PROT_WRITE else os.O_RDONLY
        try:
            fd = os.open(os.fspath(path), flags | getattr(os, "O_CLOEXEC", 0))
        except (OSError, TypeError) as e:
            raise _bad(f"Memory.from_file: cannot open {path!r}: {e}") from None
        try:
            return cls.from_fd(fd, size, offset, prot)
        finally:
            os.close(fd)

    @classmethod
    def from_desc(cls, desc: MemoryDesc) -> "Memory":
        """A memory for the roles of the finished ``desc``
        (``ANeuralNetworksMemory_createFromDesc``, FL4), uninitialized.

        When every role's compilation runs on the same single device, that device's
        ``allocate(BufferDesc(dims), prepared models, input roles, output roles)`` is asked
        for a driver buffer (used through its token on that device only). When roles span
        devices or the allocation fails, the memory is runtime shared memory of the
        operand's byte size (:attr:`fallback_reason` says why).

        Raises UNEXPECTED_NULL (no desc), BAD_STATE (desc not finished), BAD_DATA (falling
        back with dimensions not fully specified).
        """
        if desc is None:
            raise NnapiError(ResultCode.UNEXPECTED_NULL, "Memory.from_desc: no descriptor")
        if not isinstance(desc, MemoryDesc):
            raise _bad(f"Memory.from_desc: {type(desc).__name__} is not a MemoryDesc")
        if not desc.finished:
            raise NnapiError(ResultCode.BAD_STATE, "Memory.from_desc: the descriptor is not finished")
        meta, dims = desc.operand, desc.dimensions
        memory = cls(_pool=SharedMemory(0))
        memory.pool = None
        memory._desc = desc
        memory._roles = frozenset((r.compilation, r.kind, r.index) for r in desc.roles)
        memory._dims = list(dims)
        memory._initialized = False
        buffer, token, device, reason = cls._allocate_on_device(desc)
        if buffer is not None:
            memory.buffer, memory.token, memory._device = buffer, token, device
            return memory
        memory.fallback_reason = reason
        if not fully_specified(meta.type, dims):
            raise _bad(f"Memory.from_desc: no driver buffer ({reason}), and runtime memory needs "
                       f"fully specified dimensions, got {dims}")
        memory.pool = shared_memory(operand_byte_size(meta.type, dims))
        return memory

    @staticmethod
    def _allocate_on_device(desc: MemoryDesc):
        """(IBuffer, token, Device, "") from the roles' single device, or (None, None, None,
        reason)."""
        devices = {}
        for role in desc.roles:
            device = getattr(role.compilation, "device", None)
            prepared = getattr(role.compilation, "prepared", None)
            if device is None or prepared is None:
                return None, None, None, "a role's compilation does not run on a single device"
            devices[id(device.hal)] = device
        if len(devices) != 1:
            return None, None, None, "the roles run on different devices"
        device = next(iter(devices.values()))
        prepared_models, inputs, outputs = [], [], []
        for role in desc.roles:
            pm = role.compilation.prepared
            k = next((i for i, p in enumerate(prepared_models) if p is pm), None)
            if k is None:
                prepared_models.append(pm)
                k = len(prepared_models) - 1
            (inputs if role.kind == INPUT else outputs).append(BufferRole(k, role.index, role.frequency))
        try:
            with driver_call(f"{device.name}: allocate"):
                result = device.hal.allocate(BufferDesc(list(desc.dimensions)), prepared_models,
                                             inputs, outputs)
        except NnapiError as e:
            return None, None, None, f"{device.name} could not allocate: {e}"
        try:
            buffer, token = result
        except (TypeError, ValueError):
            return None, None, None, f"{device.name}: allocate returned {result!r}, not (buffer, token)"
        if not isinstance(buffer, IBuffer) or not _is_int(token) or token <= 0:
            return None, None, None, f"{device.name}: allocate returned ({buffer!r}, {token!r})"
        return buffer, int(token), device, ""

    # -- state ---------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Bytes of the shared memory ``pool``; 0 for a driver buffer."""
        return self.pool.size if self.pool is not None else 0

    @property
    def logical_size(self) -> int:
        """Bytes of data: ``size``, or for a memory from a descriptor the operand's byte
        size with its current dimensions (0 when not fully specified)."""
        if self._desc is None:
            return self.size
        meta = self._desc.operand
        return operand_byte_size(meta.type, self._dims) if fully_specified(meta.type, self._dims) else 0

    @property
    def is_from_desc(self) -> bool:
        """Created by :meth:`from_desc`."""
        return self._desc is not None

    @property
    def desc(self) -> MemoryDesc | None:
        return self._desc

    @property
    def operand(self) -> OperandMeta | None:
        """Operand type/scale/zero point of a memory from a descriptor (None otherwise)."""
        return self._desc.operand if self._desc is not None else None

    @property
    def dimensions(self) -> list[int] | None:
        """Memory from a descriptor: its dimensions (the descriptor's, refined by the last
        copy into it); None for other memories."""
        return list(self._dims) if self._dims is not None else None

    @property
    def device(self):
        """The Device whose driver buffer this is (None for shared memory)."""
        return self._device

    @property
    def initialized(self) -> bool:
        """False for a memory from a descriptor until an execution output or
        :meth:`copy` writes it (and again after such a write failed); always True for
        other memories."""
        return self._initialized if self._desc is not None else True

    def mark_initialized(self, initialized: bool) -> None:
        """Record that an execution (or copy) wrote this memory successfully (True) or
        failed writing it (False). No effect on memories not created from a descriptor."""
        if self._desc is not None:
            with self._lock:
                self._initialized = bool(initialized)

    @property
    def freed(self) -> bool:
        return self._freed

    def region(self) -> tuple[int, int, int, bool] | None:
        """The :meth:`SharedMemory.region` of the memory's pool: (fd, offset, size,
        read-only) of a file another process may map; None for a driver buffer, once freed,
        or when the pool cannot be shared."""
        if self._freed or self.pool is None:
            return None
        return self.pool.region()

    @property
    def readable(self) -> bool:
        return self.pool is None or getattr(self.pool, "readable", True)

    @property
    def writable(self) -> bool:
        return self.pool is None or getattr(self.pool, "writable", True)

    def _check_alive(self, call: str) -> None:
        if self._freed:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: the memory has been freed")

    # -- execution contract --------------------------------------------------------------
    def check_argument(self, compilation, kind: str, index: int, offset: int, length: int) -> None:
        """Check that ``length`` bytes at ``offset`` may be ``kind`` ("input"/"output")
        ``index`` of an execution of ``compilation``
        (``ANeuralNetworksExecution_setInputFromMemory`` / ``setOutputFromMemory``).

        Memory from a descriptor: (compilation, kind, index) must be one of its roles and
        offset == length == 0. Other memories: offset, length >= 0, not both 0 (the size
        cannot be implied), ``offset + length <= size``, readable (not PROT_NONE), and
        writable (PROT_WRITE) for an output. Raises BAD_DATA; BAD_STATE once freed.
        """
        call = f"set_{kind}_from_memory({index})"
        self._check_alive(call)
        if kind not in (INPUT, OUTPUT):
            raise _bad(f"check_argument: kind {kind!r} must be 'input' or 'output'")
        if self._desc is not None:
            if (compilation, kind, index) not in self._roles:
                raise _bad(f"{call}: the memory was created from a descriptor without this role "
                           f"({kind} {index} of this compilation)")
            if offset != 0 or length != 0:
                raise _bad(f"{call}: a memory created from a descriptor needs offset 0 and length 0, "
                           f"got offset {offset} and length {length}")
            return
        if not _is_int(offset) or not _is_int(length) or offset < 0 or length < 0:
            raise _bad(f"{call}: offset {offset!r} and length {length!r} must be >= 0")
        if offset == 0 and length == 0:
            raise _bad(f"{call}: offset 0 and length 0 (the size cannot be implied for this memory)")
        if offset + length > self.size:
            raise _bad(f"{call}: bytes [{offset}, {offset + length}) are outside the memory "
                       f"({self.size} bytes)")
        if not self.readable:
            raise _bad(f"{call}: the memory was mapped with PROT_NONE")
        if kind == OUTPUT and not self.writable:
            raise _bad(f"{call}: the memory is read-only (mapped without PROT_WRITE)")

    def request_pool(self, device) -> SharedMemory | MemoryDomainToken:
        """The HAL request pool for executing on ``device`` (a Device): the driver buffer's
        MemoryDomainToken when ``device`` allocated it, else the SharedMemory. Raises
        BAD_DATA for a driver buffer of another device, BAD_STATE once freed."""
        self._check_alive("request_pool")
        if self.buffer is None:
            return self.pool
        if device is None or getattr(device, "hal", None) is not self._device.hal:
            name = getattr(device, "name", "a partitioned plan")
            raise _bad(f"the memory is a driver buffer of {self._device.name}; it cannot be used "
                       f"on {name}")
        return MemoryDomainToken(self.token)

    def request_location(self, device, offset: int, length: int):
        """(pool, offset, length) of an argument bound at ``offset``/``length`` (checked by
        :meth:`check_argument`): a driver buffer is (token, 0, 0); a memory from a
        descriptor in shared memory spans the whole pool (0, size); others are unchanged."""
        pool = self.request_pool(device)
        if isinstance(pool, MemoryDomainToken):
            return pool, 0, 0
        if self._desc is not None:
            return pool, 0, pool.size
        return pool, offset, length

    # -- copy ----------------------------------------------------------------------------
    @staticmethod
    def copy(src: "Memory", dst: "Memory") -> None:
        """Copy ``src``'s data into ``dst`` (``ANeuralNetworksMemory_copy``, FL4).

        The logical sizes must match (a memory from a descriptor: its operand's byte size,
        which must then be known); when both come from descriptors their operand types and
        dimensions must be compatible. ``src`` must be initialized. Driver buffers are
        copied with ``IBuffer.copy_to`` / ``copy_from`` (through a temporary shared memory
        between two driver buffers). ``dst`` is initialized afterwards on success and
        uninitialized on failure.

        Raises UNEXPECTED_NULL (missing memory), BAD_STATE (freed memory), BAD_DATA
        (uninitialized source, incompatible sizes/types/dimensions, unreadable source or
        read-only destination), or the driver's error mapped to a result code.
        """
        if src is None or dst is None:
            raise NnapiError(ResultCode.UNEXPECTED_NULL, "Memory.copy: src and dst are required")
        if not isinstance(src, Memory) or not isinstance(dst, Memory):
            raise _bad("Memory.copy: src and dst must be Memory objects")
        src._check_alive("Memory.copy (src)")
        dst._check_alive("Memory.copy (dst)")
        if src is dst:
            return
        try:
            new_dims = Memory._copy(src, dst)
        except BaseException:
            dst.mark_initialized(False)
            raise
        with dst._lock:
            dst._initialized = True
            if new_dims is not None:
                dst._dims = new_dims

    @staticmethod
    def _copy(src: "Memory", dst: "Memory") -> list[int] | None:
        if not src.initialized:
            raise _bad("Memory.copy: the source memory is uninitialized (never written)")
        src_size = src.logical_size
        src_dims = src.dimensions or []
        new_dims = None
        if dst._desc is not None:
            meta = dst._desc.operand
            if src.operand is not None and src.operand != meta:
                raise _bad(f"Memory.copy: incompatible memories: source holds {src.operand.type.name} "
                           f"(scale {src.operand.scale}, zeroPoint {src.operand.zero_point}), destination "
                           f"{meta.type.name} (scale {meta.scale}, zeroPoint {meta.zero_point})")
            if src_dims and not is_tensor_type(meta.type):
                raise _bad(f"Memory.copy: the destination is a scalar, the source has dimensions {src_dims}")
            new_dims = combine_dimensions(src_dims, dst._desc.dimensions)
            if new_dims is None:
                raise _bad(f"Memory.copy: incompatible dimensions: source {src_dims}, destination "
                           f"{dst._desc.dimensions}")
            dst_size = operand_byte_size(meta.type, new_dims) if fully_specified(meta.type, new_dims) else 0
            if src_size and src_size != dst_size:
                raise _bad(f"Memory.copy: incompatible sizes: source {src_size} bytes, destination "
                           f"{OperandType(meta.type).name}{new_dims} {dst_size or 'unknown'} bytes")
            if not src_size and not dst_size:
                raise _bad("Memory.copy: the number of elements is unknown")
        elif src_size and src_size != dst.size:
            raise _bad(f"Memory.copy: incompatible sizes: source {src_size} bytes, destination "
                       f"{dst.size} bytes")
        if not src.readable:
            raise _bad("Memory.copy: the source memory was mapped with PROT_NONE")
        if not dst.writable:
            raise _bad("Memory.copy: the destination memory is read-only (mapped without PROT_WRITE)")

        if src.buffer is not None and dst.buffer is not None:
            if not src_size:
                raise _bad("Memory.copy: the number of elements of the source is unknown")
            staging = SharedMemory(src_size)
            with driver_call(f"{src._device.name}: IBuffer.copy_to"):
                src.buffer.copy_to(staging)
            with driver_call(f"{dst._device.name}: IBuffer.copy_from"):
                dst.buffer.copy_from(staging, list(src_dims))
        elif src.buffer is not None:
            with driver_call(f"{src._device.name}: IBuffer.copy_to"):
                src.buffer.copy_to(dst.pool)
        elif dst.buffer is not None:
            with driver_call(f"{dst._device.name}: IBuffer.copy_from"):
                dst.buffer.copy_from(src.pool, list(src_dims))
        else:
            if src.pool.size != dst.pool.size:
                raise _bad(f"Memory.copy: incompatible sizes: source {src.pool.size} bytes, "
                           f"destination {dst.pool.size} bytes")
            dst.pool.buffer[:] = src.pool.buffer
        return new_dims

    # -- lifetime ------------------------------------------------------------------------
    def free(self) -> None:
        """Release the memory (``ANeuralNetworksMemory_free``): unmap a file mapping, let
        the driver drop its buffer. Using the memory afterwards raises BAD_STATE; freeing
        twice does nothing."""
        if self._freed:
            return
        self._freed = True
        release = getattr(self.buffer, "release", None)
        if callable(release):
            try:
                release()
            except Exception:  # noqa: BLE001 - a driver's release failing must not escape free
                pass
        self.buffer = None
        if isinstance(self.pool, MappedMemory):
            self.pool.close()

    close = free

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __repr__(self) -> str:
        if self._freed:
            return "Memory(freed)"
        if self.buffer is not None:
            return f"Memory(driver buffer of {self._device.name}, token {self.token})"
        kind = "descriptor, " if self._desc is not None else ""
        return f"Memory({kind}{self.size} bytes)"
