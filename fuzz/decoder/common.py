"""What every part of the fuzz decoder shares: the byte reader and writer, the format's
limits, the tables of hostile values, and the helpers that fit decoded data to the corpus
schema (:class:`runtime.testing.test_model.TestModel`). The byte format itself is described
in :mod:`fuzz.decoder`."""
from __future__ import annotations

import math
import struct

import numpy as np

from runtime import ops
from runtime.testing.test_model import TestModel, TestSubgraph
from runtime.types import OperandLifeTime, OperandType, OperationType, is_tensor_type, operand_dtype

L = OperandLifeTime
T = OperandType

MAX_OPERANDS = 256
MAX_OPERATIONS = 64
MAX_IO = 64
#: Most referenced subgraphs (IF / WHILE bodies) of a literal model.
MAX_REFERENCED = 8
MAX_SCALES = 1024
#: Largest number of elements a decoded data array may have (fill kinds and padding).
MAX_ELEMENTS = 1 << 16
#: Longest raw data run read from the input.
MAX_RAW_BYTES = 1 << 20
#: Output buffer size when the declared dimensions do not say (bytes).
UNKNOWN_OUTPUT_BYTES = 1 << 16

#: Lifetimes whose operands carry data in the corpus schema.
DATA_LIFETIMES = (L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT, L.CONSTANT_COPY, L.CONSTANT_REFERENCE,
                  L.SUBGRAPH)
#: OperationType codes of NNAPI (0..105); a literal operation byte at or above names a row
#: of the operation table instead.
N_OPERATION_CODES = 106

HOSTILE_INTS = (-1, 0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, -2**31, -2**63,
                65536, 0x7FFFFFF8, 8, 3, 255, 256, 46341, 2**30, -65536, 2**16 - 1)
HOSTILE_DIMS = (0, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 65536, 46341, 1 << 20, 100000, 1 << 24)
HOSTILE_FLOATS = (math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 1e-45, 3.4028234663852886e38,
                  1e30, -1e30, 2.0**-126)
#: Scales of freshly drawn per-channel and control-flow quantizations.
SCALES = (0.5, 1.0, 0.25, 0.125, 2.0, 0.1, 0.0078125, 0.00390625)

_U32 = struct.Struct("<I")
_F32 = struct.Struct("<f")
#: Enum members by code (an enum call per operand is a measurable part of decoding).
TYPE_OF_CODE = tuple(T(i) for i in range(16))
LIFETIME_OF_CODE = tuple(L(i) for i in range(7))
OPERATION_OF_CODE = tuple(OperationType(i) for i in range(N_OPERATION_CODES))


class Rejected(ValueError):
    """The input is not decoded (only an empty input)."""


class ByteReader:
    """Consumes a byte string from the front; past the end every read yields zeros.

    The hot path of the fuzzer: fixed-size reads use ``struct.unpack_from`` and a
    one-byte varint takes a single branch."""

    __slots__ = ("data", "pos", "n")

    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0
        self.n = len(self.data)

    @property
    def remaining(self) -> int:
        """Bytes not read yet (0 once exhausted)."""
        r = self.n - self.pos
        return r if r > 0 else 0

    def u8(self) -> int:
        """One byte, 0..255 (0 past the end)."""
        p = self.pos
        self.pos = p + 1
        return self.data[p] if p < self.n else 0

    def take(self, n: int) -> bytes:
        """Up to ``n`` raw bytes (fewer at the end)."""
        n = max(0, min(n, self.remaining))
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        """A little-endian uint32 (missing bytes read as zeros)."""
        p = self.pos
        if p + 4 <= self.n:
            self.pos = p + 4
            return _U32.unpack_from(self.data, p)[0]
        raw = self.take(4)
        return int.from_bytes(raw + b"\0" * (4 - len(raw)), "little")

    def f32(self) -> float:
        """4 bytes as a binary32 (any bits, NaN and infinities included)."""
        p = self.pos
        if p + 4 <= self.n:
            self.pos = p + 4
            return _F32.unpack_from(self.data, p)[0]
        return _F32.unpack(self.u32().to_bytes(4, "little"))[0]

    def varint(self) -> int:
        """An unsigned LEB128 of at most 10 bytes, masked to 64 bits."""
        p = self.pos
        if p < self.n and self.data[p] < 0x80:  # a one-byte varint
            self.pos = p + 1
            return self.data[p]
        value = 0
        for shift in range(0, 70, 7):
            b = self.u8()
            value |= (b & 0x7F) << shift
            if not b & 0x80 or self.remaining == 0:
                break
        return value & 0xFFFFFFFFFFFFFFFF

    def zigzag(self) -> int:
        """A varint holding a signed value (0, -1, 1, -2, ...)."""
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def pick(self, seq):
        """An element of non-empty ``seq`` chosen by one byte."""
        return seq[self.u8() % len(seq)]


class ByteWriter:
    """The inverse of :class:`ByteReader` for the encoder."""

    def __init__(self):
        self.out = bytearray()

    def u8(self, v: int) -> None:
        """One byte (``v`` modulo 256)."""
        self.out.append(v & 0xFF)

    def u32(self, v: int) -> None:
        """A little-endian uint32 (``v`` modulo 2**32)."""
        self.out += (v & 0xFFFFFFFF).to_bytes(4, "little")

    def f32(self, v: float) -> None:
        """``v`` as 4 little-endian bytes of a binary32."""
        self.out += _F32.pack(v)

    def varint(self, v: int) -> None:
        """``v`` as an unsigned LEB128; raises ValueError for a negative ``v``."""
        if v < 0:
            raise ValueError(f"varint of negative {v}")
        while True:
            b = v & 0x7F
            v >>= 7
            if v:
                self.out.append(b | 0x80)
            else:
                self.out.append(b)
                return

    def zigzag(self, v: int) -> None:
        """A signed ``v`` as the varint :meth:`ByteReader.zigzag` reads back."""
        self.varint((v << 1) if v >= 0 else ((-v) << 1) - 1)

    def raw(self, data: bytes) -> None:
        """``data`` as is."""
        self.out += data


# --- data fitted to the corpus schema -------------------------------------------------

def dims_known(t: OperandType, dims) -> bool:
    """Whether ``dims`` fully specify an operand of type ``t`` (a scalar always does)."""
    return (bool(dims) or not is_tensor_type(t)) and 0 not in dims


def prod(dims) -> int:
    """Product of ``dims`` (1 for none)."""
    n = 1
    for d in dims:
        n *= int(d)
    return n


_M64 = (1 << 64) - 1
#: Below this many words, :func:`hash_words` computes in Python ints (same words, no numpy
#: call overhead: most fuzz operands are tiny).
_SMALL_FILL = 48


def hash_words(seed: int, n: int) -> np.ndarray:
    """``n`` pseudo-random uint32 words from ``seed`` (a cheap integer hash)."""
    if n < _SMALL_FILL:
        words = []
        for i in range(n):
            x = ((i + (seed & 0xFFFFFFFF)) * 0x9E3779B97F4A7C15) & _M64
            x ^= x >> 29
            x = (x * 0xBF58476D1CE4E5B9) & _M64
            x ^= x >> 32
            words.append(x & 0xFFFFFFFF)
        return np.array(words, dtype=np.uint32)
    x = (np.arange(n, dtype=np.uint64) + np.uint64(seed & 0xFFFFFFFF)) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(29)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(32)
    return (x & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def fill_values(t: OperandType, n: int, seed: int) -> np.ndarray:
    """``n`` plausible values (flat, dtype of ``t``) from ``seed``: floats in [-4, 4) in
    steps of 1/64, int32 in [-4, 4], uint32 in [0, 8], quantized and bool over their whole
    range."""
    words = hash_words(seed, n)
    dtype = operand_dtype(t)
    if dtype.kind == "f":
        return ((words % 512).astype(np.float64) / 64.0 - 4.0).astype(dtype)
    if dtype.kind == "b":
        return (words & 1).astype(bool)
    if dtype == np.int32 or dtype == np.uint32:
        return ((words % 9).astype(np.int64) - 4).astype(dtype) if dtype == np.int32 \
            else (words % 9).astype(dtype)
    info = np.iinfo(dtype)
    return ((words % (info.max - info.min + 1)).astype(np.int64) + info.min).astype(dtype)


def fit(t: OperandType, dims, arr: np.ndarray | None) -> np.ndarray | None:
    """``arr`` fitted to the schema for an operand of type ``t`` and ``dims``: cut or
    zero-padded to the element count of fully specified dimensions (None past
    :data:`MAX_ELEMENTS`), one value (a scalar) for an unknown rank, else flat; None for an
    empty array."""
    if arr is None:
        return None
    if dims_known(t, dims):
        need = prod(dims)
        if need > MAX_ELEMENTS and arr.size != need:
            return None
        if arr.size > need:
            arr = arr[:need]
        elif arr.size < need:
            arr = np.concatenate([arr, np.zeros(need - arr.size, arr.dtype)])
        return arr.reshape(tuple(dims)) if dims else arr.reshape(())
    if not dims:  # a tensor of unknown rank: the schema loader reads its data as a scalar
        return arr[:1].reshape(()) if arr.size else None
    return arr if arr.size else None


def from_raw(t: OperandType, raw: bytes) -> np.ndarray:
    """Little-endian elements of type ``t`` from ``raw`` (a trailing partial element is
    dropped; a bool is any non-zero byte)."""
    dtype = operand_dtype(t)
    raw = raw[:len(raw) - len(raw) % dtype.itemsize]
    if dtype.kind == "b":
        return np.frombuffer(raw, np.uint8) != 0
    return np.frombuffer(raw, dtype).copy()


def to_f32(x: float) -> float:
    """``x`` rounded to binary32 (as a Python float)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except (OverflowError, TypeError, struct.error):
        return float(np.float32(x))


def count_consumers(operands, operations) -> list[int]:
    """Per operand, how many operation inputs name it (out-of-range indexes ignored)."""
    counts = [0] * len(operands)
    for op in operations:
        for i in op.inputs:
            if 0 <= i < len(counts):
                counts[i] += 1
    return counts


def new_model(sg: TestSubgraph, relaxed: bool) -> TestModel:
    """A decoded test model (named ``fuzz``, version ``V_FUZZ``) around main graph ``sg``."""
    return TestModel("fuzz", "fuzz", "V_FUZZ", "UNKNOWN", False, relaxed, 0.0, sg, [])


_TABLE_CACHE: list = [None, (), ()]


def table_codes() -> tuple:
    """The operation table's OperationTypes in code order (cached while the table holds the
    same rows: a row added, removed or replaced, as ``runtime.ops.base.registered`` does,
    is seen at the next decode)."""
    key = tuple(map(id, ops.REGISTRY.values()))
    if _TABLE_CACHE[0] != key:
        codes = tuple(sorted(ops.REGISTRY))
        _TABLE_CACHE[:] = [key, codes, tuple(ops.REGISTRY[c] for c in codes)]
    return _TABLE_CACHE[1]


def table_rows() -> tuple:
    """The operation table's rows (OperationDef) in code order, as :func:`table_codes`."""
    table_codes()
    return _TABLE_CACHE[2]
