"""Front-end memory objects (``ANeuralNetworksMemory``)."""
from __future__ import annotations

from ..hal.memory import SharedMemory


class Memory:
    """A block of shared memory that operand values and execution arguments can live in.

    ``Memory.from_bytes(data)`` copies ``data``; ``Memory(size)`` is zero-filled.
    """

    def __init__(self, size: int = 0, *, _pool: SharedMemory | None = None):
        self.pool = _pool or SharedMemory(size)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Memory":
        return cls(_pool=SharedMemory(data=data))

    @property
    def size(self) -> int:
        return self.pool.size
