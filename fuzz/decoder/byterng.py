"""A stand-in for ``numpy.random.Generator`` whose scalar draws come from the fuzz bytes, so
that the operation table's drafting code (:mod:`runtime.ops.generation` and each row's
``generate`` hook, written against a numpy Generator) is steered by the input: libFuzzer's
mutation of one byte changes one decision (a dimension, a parameter, a choice).

Scalar draws read 1, 2, 4 or 8 bytes. Array draws (``size=...``: data values, box sets)
come from a numpy PCG64 Generator whose state is set from 4 input bytes the first time one
is needed (seeding a new Generator costs more than decoding a small model: one Generator
per thread is re-seeded instead, so a ByteRng must finish its draws before another on the
same thread starts; each decode uses one). Past the end of the input every byte reads as
zero, so every scalar draw is its lowest value: drafting never fails for lack of bytes.
"""
from __future__ import annotations

import threading

import numpy as np

from .common import ByteReader

#: Longest sequence permuted byte by byte (longer ones by the bulk Generator).
_BYTE_PERMUTATION = 32
#: PCG64 stream increment of the bulk Generator (any odd constant).
_INCREMENT = 0xDA3E39CB94B95BDB
_LOCAL = threading.local()


def _bulk_generator(seed: int) -> np.random.Generator:
    """This thread's bulk Generator, its state set from ``seed``."""
    gen = getattr(_LOCAL, "gen", None)
    if gen is None:
        gen = _LOCAL.gen = np.random.Generator(np.random.PCG64(0))
    gen.bit_generator.state = {"bit_generator": "PCG64", "has_uint32": 0, "uinteger": 0,
                               "state": {"state": seed * 0x9E3779B97F4A7C15 + 1, "inc": _INCREMENT}}
    return gen


class ByteRng:
    """The subset of ``numpy.random.Generator`` the drafting code uses: ``integers``,
    ``random``, ``uniform``, ``permutation``, ``choice``, ``normal`` (same signatures; a
    scalar draw returns a Python number)."""

    __slots__ = ("r", "_gen")

    def __init__(self, r: ByteReader):
        self.r = r
        self._gen: np.random.Generator | None = None

    def _bulk(self) -> np.random.Generator:
        if self._gen is None:
            self._gen = _bulk_generator(self.r.u32())
        return self._gen

    def index(self, n: int) -> int:
        """An integer in [0, ``n``) from as few bytes as cover the range."""
        r = self.r
        if n <= 1:
            return 0
        if n <= 256:
            return r.u8() % n
        if n <= 65536:
            return (r.u8() | r.u8() << 8) % n
        if n <= 1 << 32:
            return r.u32() % n
        return (r.u32() | r.u32() << 32) % n

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """An integer in [low, high) ([0, low) when ``high`` is None; ``endpoint``: high
        included). Raises ValueError for an empty range, as numpy does."""
        if size is not None:
            return self._bulk().integers(low, high, size, dtype=dtype, endpoint=endpoint)
        if high is None:
            low, high = 0, low
        n = int(high) - int(low) + (1 if endpoint else 0)
        if n <= 0:
            raise ValueError(f"integers: empty range [{low}, {high})")
        return int(low) + self.index(n)

    def random(self, size=None):
        """A float in [0, 1) in steps of 1/256."""
        if size is not None:
            return self._bulk().random(size)
        return self.r.u8() / 256.0

    def uniform(self, low=0.0, high=1.0, size=None):
        """A float in [low, high): one of 256 evenly spaced points."""
        if size is not None:
            return self._bulk().uniform(low, high, size)
        return float(low) + (float(high) - float(low)) * ((self.r.u8() + 0.5) / 256.0)

    def permutation(self, x):
        """A shuffled copy of ``x`` (an int n: of ``arange(n)``), Fisher-Yates by bytes."""
        arr = np.arange(int(x)) if isinstance(x, (int, np.integer)) else np.array(x)
        if arr.ndim != 1 or len(arr) > _BYTE_PERMUTATION:
            return self._bulk().permutation(arr)
        for i in range(len(arr) - 1, 0, -1):
            j = self.index(i + 1)
            arr[i], arr[j] = arr[j], arr[i]
        return arr

    def choice(self, a, size=None, replace=True, p=None):
        """An element of ``a`` (an int n: of ``arange(n)``). Raises ValueError for an
        empty ``a``, as numpy does."""
        if size is not None or p is not None:
            return self._bulk().choice(a, size=size, replace=replace, p=p)
        seq = np.arange(int(a)) if isinstance(a, (int, np.integer)) else a
        if len(seq) == 0:
            raise ValueError("choice: empty sequence")
        return seq[self.index(len(seq))]

    def normal(self, loc=0.0, scale=1.0, size=None):
        """Normal draws (always from the bulk Generator)."""
        return self._bulk().normal(loc, scale, size)
