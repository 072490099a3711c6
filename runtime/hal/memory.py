"""Memory pools: the HAL's shared memory, here a writable byte buffer in this process."""
from __future__ import annotations


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

    def __deepcopy__(self, memo) -> "SharedMemory":
        return SharedMemory(data=bytes(self._data))

    def __repr__(self) -> str:
        return f"SharedMemory(size={self.size})"
