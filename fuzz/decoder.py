"""Structure-aware decoding of fuzz input bytes into a test model (corpus schema,
:class:`runtime.testing.test_model.TestModel`) plus HAL-level tweaks and a request plan, and
the encoder that maps a corpus model back to bytes (seeds).

Decoding is total: any byte string decodes (a short input reads as zeros once exhausted,
like atheris' ``FuzzedDataProvider``), and the result always obeys the corpus schema, so
it can be written as a corpus JSON model and loaded back. The only "rejection" is
:class:`Rejected`, raised for an empty input.

Byte format
===========

Integers: ``u8``; ``u32`` little-endian; ``varint`` is unsigned LEB128 (at most 10 bytes,
masked to 64 bits); ``zigzag`` is a varint holding a signed value (``0, -1, 1, -2, ...``);
``f32`` is 4 little-endian bytes of a binary32 (any bits, NaN and infinities included).
Reading past the end yields zero bytes; in literal mode a list (operands, operations,
index lists) also ends early once the input is exhausted.

Byte 0 is the header:

====  ======================================================================================
bit   meaning
====  ======================================================================================
0     mode: 0 = *literal* graph (what the encoder writes), 1 = *generated* graph
1     ``is_relaxed`` (relaxComputationFloat32toFloat16)
2     literal mode: every operand carries an explicit ``number_of_consumers`` varint
      (otherwise it is counted from the operations, as in every corpus model)
3     a HAL tweak section follows the graph
4-5   generated mode: hostility 0..3 (how often a choice escapes to a hostile value:
      never, 1/256, 1/16, 1/4 of the time)
6-7   output buffer plan: 0-1 exact size (declared size; ``UNKNOWN_OUTPUT_BYTES`` for an
      output whose dimensions are not fully specified), 2 one byte short, 3 generous
      (declared size + 64 bytes; the front end then enables input/output padding)
====  ======================================================================================

Literal graph (mode 0)::

    varint  number of operands (at most MAX_OPERANDS)
    per operand:
      u8      type: OperandType code (byte % 16; 15 is SUBGRAPH)
      u8      rank: byte < 0x80 -> byte % 9; else byte - 0x80 (0..127, absurd ranks)
      varint  each dimension (uint32: value & 0xFFFFFFFF)
      f32     scale
      zigzag  zero point
      u8      lifetime = (byte & 0x7F) % 7 (OperandLifeTime code); bit 7: is_ignored.
              A SUBGRAPH lifetime makes the type SUBGRAPH (whatever the type byte said)
              and, after the data is read, the dimensions [] (a uint32 scalar)
      varint  number_of_consumers (only with header bit 2)
      TENSOR_QUANT8_SYMM_PER_CHANNEL only: u8 channel_dim, varint n (<= 1024), n x f32 scales
      lifetimes SUBGRAPH_INPUT, SUBGRAPH_OUTPUT, CONSTANT_COPY, CONSTANT_REFERENCE, SUBGRAPH:
      u8      data kind (byte % 4): 0 null; 1 raw: varint n then n bytes (little-endian
              elements); 2 fill: u32 seed, values from a hash of (seed, index);
              3 constant: one u8 repeated
    varint  number of operations (at most MAX_OPERATIONS)
    per operation:
      u8      type: byte < 106 -> that OperationType code; else an operation of the
              operation table (runtime.ops.REGISTRY, in code order), (byte - 106) % size
      varint  number of inputs (<= MAX_IO), then a varint operand index each
      varint  number of outputs (<= MAX_IO), then a varint operand index each
    varint  number of model inputs (<= MAX_IO), then a varint operand index each
    varint  number of model outputs (<= MAX_IO), then a varint operand index each
    varint  number of referenced subgraphs (<= MAX_REFERENCED; an exhausted input has none),
            then each in the same layout as the main graph above (operands ... outputs);
            a referenced subgraph's inputs and outputs keep no data (corpus schema)

Data are fitted to the schema: when the dimensions are fully specified the element count
must be their product, so the values are cut or zero-padded to it (or dropped, ``null``,
when the product exceeds ``MAX_ELEMENTS``); a tensor of unknown rank (no dimensions) keeps
one value, as a scalar; otherwise they stay flat; an empty array is ``null``. A SUBGRAPH operand always holds one uint32. Indexes are kept even when out of
range (the validators must reject them).

Generated graph (mode 1): a short chain of operations of the operation table, built from
bytes read one decision at a time, biased toward models that pass validation::

    u8      number of operations: 1 + byte % 4
    per operation:
      u8      operation: an entry of REGISTRY (byte % size); with hostility, an escape
              picks any OperationType code instead (often one the table lacks)
      u8      signature of that operation (byte % count); variadic: u8 repeat count
      u8      palette: the typical dimension p = 2 + byte % 3 of new operands
      per input slot: u8 source (reuse an earlier output or model input of the same type
              and an allowed rank; new model input; new constant; omitted if optional),
              then for a new operand its rank, dimensions, quantization and values
              (scalars and int32 parameter tensors get small in-range values chosen by
              the slot's name: activation 0..3, strides 1..2, a permutation for ``perm``,
              ...)
      per output: u8 declared dimensions (the shape the operation table's ``prepare``
              infers, or all unknown, or unknown rank) and quantization (input 0's, or
              fresh)
    Outputs no later operation reads become model outputs; every new SUBGRAPH_INPUT is a
    model input in creation order.

A TENSOR_QUANT8_SYMM_PER_CHANNEL operand gets ``channel_quant``: the channel dimension the
operation reads (DEPTHWISE_CONV_2D 3, others 0) and one scale per channel (an escape picks
another dimension, a wrong count or a hostile scale). An IF or WHILE (when the table has
them) is built with its referenced subgraphs instead of a signature: a data value x (an
earlier operand or a new model input of one of _CONTROL_FLOW_TYPES); IF: a TENSOR_BOOL8 [1]
condition, then and else branches each ``y = op(x)`` with ``op`` a shape-preserving table
operation (:func:`_body_operations`); WHILE over (x, i): condition ``LESS(i, limit)`` and
body ``(op(x), ADD(i, 1))`` with i in [-2, 2] and limit in [1, 4] (at most 6 rounds).
Branch and body operands declare x's dimensions, unknown ones or an unknown rank; an escape
names an arbitrary subgraph index or gives a body output other dimensions.

HAL tweak section (header bit 3), at most MAX_TWEAKS records, each::

    u8      kind (byte % len(TWEAK_KINDS))
    varint  target index (taken modulo the number of targets when applied)
    u8      field selector
    u8      value selector: < 0x80 -> HOSTILE_INTS[byte % len]; else a zigzag varint follows

A tweak is applied to the HAL model and request after :func:`to_hal_model` (see
:func:`apply_tweaks`): it reaches what the corpus schema cannot say (locations, negative
dimensions, raw enum codes, pool sizes). Tweaks do not change the test model; a finding
records them as metadata.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import numpy as np

from runtime import ops
from runtime.hal.memory import SharedMemory
from runtime.hal.types import (DataLocation, ExtensionNameAndPrefix, Model, Request,
                               SymmPerChannelQuantParams)
from runtime.ops.base import Arg, OpContext, OperandView
from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import (OperandLifeTime, OperandType, OperationType, is_tensor_type,
                           operand_dtype)

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
MAX_TWEAKS = 8
#: Output buffer size when the declared dimensions do not say (bytes).
UNKNOWN_OUTPUT_BYTES = 1 << 16

#: Lifetimes whose operands carry data in the corpus schema.
DATA_LIFETIMES = (L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT, L.CONSTANT_COPY, L.CONSTANT_REFERENCE,
                  L.SUBGRAPH)
N_OPERATION_CODES = 106

HOSTILE_INTS = (-1, 0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, -2**31, -2**63,
                65536, 0x7FFFFFF8, 8, 3, 255, 256, 46341, 2**30, -65536, 2**16 - 1)
HOSTILE_DIMS = (0, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 65536, 46341, 1 << 20, 100000, 1 << 24)
HOSTILE_FLOATS = (math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 1e-45, 3.4028234663852886e38,
                  1e30, -1e30, 2.0**-126)
SCALES = (0.5, 1.0, 0.25, 0.125, 2.0, 0.1, 0.0078125, 0.00390625)
FLOAT_PARAMS = (1.0, 0.5, 2.0, 0.0, 1e-3, 10.0, -1.0, 3.0)
#: escape threshold per hostility level: a byte >= it escapes (256: never).
_ESCAPE = (256, 255, 240, 192)

_U32 = struct.Struct("<I")
_F32 = struct.Struct("<f")
#: Enum members by code (an enum call per operand is a measurable part of decoding).
_TYPE_OF_CODE = tuple(T(i) for i in range(16))
_LIFETIME_OF_CODE = tuple(L(i) for i in range(7))
_OPERATION_OF_CODE = tuple(OperationType(i) for i in range(106))

TWEAK_KINDS = ("operand_dim", "operand_rank", "operand_location", "operand_type",
               "operand_lifetime", "operand_quant", "operand_consumers", "operation_type",
               "operation_io", "subgraph_io", "request_input_location",
               "request_output_location", "request_arg", "pool_size", "extra_params",
               "extension_prefix")


class Rejected(ValueError):
    """The input is not decoded (only an empty input)."""


# --- byte reader / writer -------------------------------------------------------------

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
        r = self.n - self.pos
        return r if r > 0 else 0

    def u8(self) -> int:
        p = self.pos
        self.pos = p + 1
        return self.data[p] if p < self.n else 0

    def take(self, n: int) -> bytes:
        n = max(0, min(n, self.remaining))
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        p = self.pos
        if p + 4 <= self.n:
            self.pos = p + 4
            return _U32.unpack_from(self.data, p)[0]
        raw = self.take(4)
        return int.from_bytes(raw + b"\0" * (4 - len(raw)), "little")

    def f32(self) -> float:
        p = self.pos
        if p + 4 <= self.n:
            self.pos = p + 4
            return _F32.unpack_from(self.data, p)[0]
        return _F32.unpack(self.u32().to_bytes(4, "little"))[0]

    def varint(self) -> int:
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
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def pick(self, seq):
        return seq[self.u8() % len(seq)]


class ByteWriter:
    """The inverse of :class:`ByteReader` for the encoder."""

    def __init__(self):
        self.out = bytearray()

    def u8(self, v: int) -> None:
        self.out.append(v & 0xFF)

    def u32(self, v: int) -> None:
        self.out += (v & 0xFFFFFFFF).to_bytes(4, "little")

    def f32(self, v: float) -> None:
        self.out += struct.pack("<f", v)

    def varint(self, v: int) -> None:
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
        self.varint((v << 1) if v >= 0 else ((-v) << 1) - 1)

    def raw(self, data: bytes) -> None:
        self.out += data


# --- decoded case ---------------------------------------------------------------------

@dataclass(frozen=True)
class Tweak:
    """One HAL-level perturbation: ``kind`` (a TWEAK_KINDS name), target ``index``,
    ``field`` selector and ``value``."""

    kind: str
    index: int
    field: int
    value: int

    def describe(self) -> str:
        return f"{self.kind}[{self.index}].{self.field}={self.value}"


@dataclass
class FuzzCase:
    """What one fuzz input decodes to."""

    model: TestModel
    mode: str  # "literal" or "generated"
    output_plan: int = 0  # 0 exact, 1 one byte short, 2 generous (see module docstring)
    tweaks: list[Tweak] = field(default_factory=list)


def _dims_known(t: OperandType, dims) -> bool:
    return (bool(dims) or not is_tensor_type(t)) and 0 not in dims


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


_M64 = (1 << 64) - 1
#: Below this many words, :func:`_hash_fill` computes in Python ints (same words, no numpy
#: call overhead: most fuzz operands are tiny).
_SMALL_FILL = 48


def _hash_fill(seed: int, n: int) -> np.ndarray:
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
    """``n`` plausible values of type ``t`` from ``seed``: floats in [-4, 4) in steps of
    1/64, int32 in [-4, 4], quantized and bool over their whole range."""
    words = _hash_fill(seed, n)
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


def _fit(t: OperandType, dims, arr: np.ndarray | None) -> np.ndarray | None:
    """``arr`` fitted to the schema for an operand of type ``t`` and ``dims``."""
    if arr is None:
        return None
    if _dims_known(t, dims):
        need = _prod(dims)
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


def _from_raw(t: OperandType, raw: bytes) -> np.ndarray:
    dtype = operand_dtype(t)
    raw = raw[:len(raw) - len(raw) % dtype.itemsize]
    if dtype.kind == "b":
        return np.frombuffer(raw, np.uint8) != 0
    return np.frombuffer(raw, dtype).copy()


def _count_consumers(operands, operations) -> list[int]:
    counts = [0] * len(operands)
    for op in operations:
        for i in op.inputs:
            if 0 <= i < len(counts):
                counts[i] += 1
    return counts


def _new_model(sg: TestSubgraph, relaxed: bool) -> TestModel:
    return TestModel("fuzz", "fuzz", "V_FUZZ", "UNKNOWN", False, relaxed, 0.0, sg, [])


# --- literal mode ---------------------------------------------------------------------

_TABLE_CACHE: list = [None, ()]


def _table_codes() -> tuple:
    """The operation table's OperationTypes in code order (cached while the table's size
    stays the same)."""
    if _TABLE_CACHE[0] != len(ops.REGISTRY):
        _TABLE_CACHE[:] = [len(ops.REGISTRY), tuple(sorted(ops.REGISTRY))]
    return _TABLE_CACHE[1]


def _read_data(r: ByteReader, t: OperandType, dims) -> np.ndarray | None:
    kind = r.u8() % 4
    if kind == 0:
        return None
    if kind == 1:
        n = min(r.varint(), MAX_RAW_BYTES)
        return _fit(t, dims, _from_raw(t, r.take(n)))
    count = _prod(dims) if _dims_known(t, dims) else 1
    if count > MAX_ELEMENTS:
        if kind == 2:
            r.u32()
        else:
            r.u8()
        return None
    if kind == 2:
        return _fit(t, dims, fill_values(t, count, r.u32()))
    return _fit(t, dims, _from_raw(t, bytes([r.u8()]) * (count * operand_dtype(t).itemsize)))


def _index_list(r: ByteReader) -> list[int]:
    out = []
    for _ in range(min(r.varint(), MAX_IO)):
        if not r.remaining:
            break
        out.append(r.varint())
    return out


def _decode_subgraph(r: ByteReader, explicit_consumers: bool, referenced: bool) -> TestSubgraph:
    """One literal subgraph; in a ``referenced`` one, inputs and outputs carry no data (the
    schema's rule: values flow in from the calling IF/WHILE), though their bytes are read."""
    operands, explicit = [], []
    for _ in range(min(r.varint(), MAX_OPERANDS)):
        if not r.remaining:  # an exhausted input declares no more operands
            break
        t = _TYPE_OF_CODE[r.u8() % 16]
        b = r.u8()
        rank = b % 9 if b < 0x80 else b - 0x80
        dims = [r.varint() & 0xFFFFFFFF for _ in range(rank)]
        scale = r.f32()
        zp = r.zigzag()
        zp = max(min(zp, 2**63 - 1), -2**63)
        b = r.u8()
        lifetime = _LIFETIME_OF_CODE[(b & 0x7F) % 7]
        ignored = bool(b & 0x80)
        if lifetime == L.SUBGRAPH:
            t = T.SUBGRAPH  # its data is a uint32 subgraph index, which only that type holds
        explicit.append(r.varint() if explicit_consumers else None)
        cq = None
        if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            channel_dim = r.u8()
            cq = (tuple(r.f32() for _ in range(min(r.varint(), MAX_SCALES))), channel_dim)
        data = None
        if lifetime in DATA_LIFETIMES:
            data = _read_data(r, t, dims)
            if referenced and lifetime in (L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT):
                data = None
        if lifetime == L.SUBGRAPH:  # a scalar: no dimensions
            dims = []
            data = (np.zeros(1, np.uint32) if data is None else data.reshape(-1)[:1]).reshape(())
        operands.append(TestOperand(t, dims, scale, zp, lifetime, 0, ignored, cq, data))
    operations = []
    table = _table_codes()
    for _ in range(min(r.varint(), MAX_OPERATIONS)):
        if not r.remaining:
            break
        b = r.u8()
        op_type = _OPERATION_OF_CODE[b] if b < N_OPERATION_CODES else table[(b - N_OPERATION_CODES) % len(table)]
        ins = _index_list(r)
        outs = _index_list(r)
        operations.append(TestOperation(op_type, ins, outs))
    inputs = _index_list(r)
    outputs = _index_list(r)
    counts = _count_consumers(operands, operations)
    for i, o in enumerate(operands):
        o.number_of_consumers = explicit[i] if explicit[i] is not None else counts[i]
    return TestSubgraph(operands, operations, inputs, outputs)


def _decode_literal(r: ByteReader, header: int) -> TestModel:
    explicit_consumers = bool(header & 4)
    model = _new_model(_decode_subgraph(r, explicit_consumers, False), bool(header & 2))
    for _ in range(min(r.varint(), MAX_REFERENCED)):
        if not r.remaining:
            break
        model.referenced.append(_decode_subgraph(r, explicit_consumers, True))
    return model


# --- generated mode -------------------------------------------------------------------

#: INT32 scalar parameters by slot name: (low, high) of their in-range values.
_SCALAR_RANGES = {
    "activation": (0, 3), "padding_scheme": (1, 2), "stride_height": (1, 2), "stride_width": (1, 2),
    "filter_height": (1, 3), "filter_width": (1, 3), "padding_top": (0, 1), "padding_bottom": (0, 1),
    "padding_left": (0, 1), "padding_right": (0, 1), "block_size": (1, 3), "depth_multiplier": (1, 2),
    "height": (1, 6), "width": (1, 6), "radius": (0, 3), "keep_dims": (0, 1), "begin_mask": (0, 15),
    "end_mask": (0, 15), "shrink_axis_mask": (0, 15), "rank": (1, 2), "type": (1, 2),
}


def _to_f32(x: float) -> float:
    """``x`` rounded to binary32 (as a Python float)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except (OverflowError, TypeError, struct.error):
        return float(np.float32(x))


_QUANT_TYPES = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM)
#: Data types of generated IF / WHILE values.
_CONTROL_FLOW_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                       T.TENSOR_QUANT8_ASYMM_SIGNED)
_BODY_CACHE: dict = {}


def _body_operations(t: OperandType, table) -> list:
    """(OperationType, Signature) of the table operations that map one tensor of type ``t``
    (given once or twice) and at most an INT32 fused activation to one output of type ``t``
    of the same shape: the bodies of generated IF branches and WHILE loops."""
    key = (t, len(table))
    if key not in _BODY_CACHE:
        found = []
        for opdef in table:
            if opdef.type in (OperationType.IF, OperationType.WHILE) or opdef.variadic \
                    or opdef.variadic_outputs:
                continue
            for sig in opdef.signatures:
                if len(sig.outputs) == 1 and sig.outputs[0].type == t and sig.inputs \
                        and sig.inputs[0].type == t and len(sig.inputs) <= 3 \
                        and all((a.type == t and not a.optional) or (a.type == T.INT32 and a.name == "activation")
                                for a in sig.inputs):
                    found.append((opdef.type, sig))
                    break
        _BODY_CACHE[key] = found
    return _BODY_CACHE[key]


def _operand(t, dims, lifetime, scale=0.0, zp=0, data=None) -> TestOperand:
    return TestOperand(T(t), [int(d) for d in dims], float(np.float32(scale)), int(zp), lifetime, 0, False,
                       None, data)


def _subgraph(operands, operations, inputs, outputs) -> TestSubgraph:
    for o, c in zip(operands, _count_consumers(operands, operations)):
        o.number_of_consumers = c
    return TestSubgraph(operands, operations, inputs, outputs)


class _Generator:
    """Builds a generated-mode model decision by decision (see module docstring)."""

    def __init__(self, r: ByteReader, hostility: int):
        self.r = r
        self.escape = _ESCAPE[hostility]
        self.operands: list[TestOperand] = []
        self.operations: list[TestOperation] = []
        self.inputs: list[int] = []
        self.dims_of: dict[int, tuple] = {}  # known actual shapes (temporaries: inferred)
        self.referenced: list[TestSubgraph] = []  # IF / WHILE subgraphs

    # hostile-escape helpers
    def hostile(self) -> bool:
        return self.r.u8() >= self.escape

    def small(self, lo: int, hi: int) -> int:
        b = self.r.u8()
        if b >= self.escape:
            return self.r.pick(HOSTILE_INTS)
        return lo + b % (hi - lo + 1)

    def dim(self, p: int) -> int:
        b = self.r.u8()
        if b >= self.escape:
            return self.r.pick(HOSTILE_DIMS)
        return 1 if b % 4 == 0 else p

    def scale(self) -> float:
        b = self.r.u8()
        if b >= self.escape:
            return self.r.pick(HOSTILE_FLOATS)
        return SCALES[b % len(SCALES)]

    def zero_point(self, t: OperandType) -> int:
        b = self.r.u8()
        if b >= self.escape:
            return self.r.pick(HOSTILE_INTS)
        if t == T.TENSOR_QUANT8_ASYMM:
            return b
        if t == T.TENSOR_QUANT8_ASYMM_SIGNED:
            return b - 128
        if t == T.TENSOR_QUANT16_ASYMM:
            return b * 257
        return 0

    def add(self, t, dims, lifetime, scale=0.0, zp=0, data=None, channel_quant=None) -> int:
        t = t if type(t) is T else T(t)
        dims = [int(d) for d in dims]
        self.operands.append(TestOperand(t, dims, _to_f32(scale), int(zp), lifetime, 0, False,
                                         channel_quant, data))
        idx = len(self.operands) - 1
        if lifetime == L.SUBGRAPH_INPUT:
            self.inputs.append(idx)
        if _dims_known(t, dims):
            self.dims_of[idx] = tuple(dims)
        return idx

    # values
    def values(self, t: OperandType, dims, name: str, ctx: dict) -> np.ndarray | None:
        """Values for a new operand of type ``t``: by slot name for int32 parameters, else
        a fill kind chosen by one byte."""
        n = _prod(dims) if _dims_known(t, dims) else 0
        if n > MAX_ELEMENTS or n == 0:
            return None
        r = self.r
        dtype = operand_dtype(t)
        if t == T.INT32:
            lo, hi = _SCALAR_RANGES.get(name, (-1, 4))
            if name == "axis":
                lo, hi = -ctx["rank0"], max(ctx["rank0"] - 1, 0)
            return np.asarray(self.small(lo, hi) & 0xFFFFFFFF, np.uint32).astype(np.int32).reshape(())
        if t == T.FLOAT32:
            v = r.pick(HOSTILE_FLOATS) if self.hostile() else r.pick(FLOAT_PARAMS)
            return np.asarray(v, np.float32).reshape(())
        if t == T.BOOL:
            return np.asarray(bool(r.u8() & 1)).reshape(())
        if t == T.TENSOR_INT32 and name not in ("input", "values"):
            rank0 = ctx["rank0"]
            if name == "perm":
                order = list(range(n))
                for i in range(n - 1, 0, -1):  # Fisher-Yates driven by bytes
                    j = r.u8() % (i + 1)
                    order[i], order[j] = order[j], order[i]
                if self.hostile():
                    order[r.u8() % n] = r.pick(HOSTILE_INTS)
                vals = order
            else:
                lo, hi = {"paddings": (0, 2), "block_shape": (1, 2), "begin": (0, 1),
                          "end": (0, 4), "strides": (1, 2), "shape": (-1, 4),
                          "axis": (-rank0, max(rank0 - 1, 0)), "squeeze_dims": (0, max(rank0 - 1, 0)),
                          "keys": (0, 4), "lookups": (0, 3), "bias": (-8, 8)}.get(name, (-1, 4))
                vals = [self.small(lo, hi) for _ in range(min(n, 8))]  # repeated to n below
            arr = np.asarray([v & 0xFFFFFFFF for v in vals], np.uint64).astype(np.uint32).view(np.int32)
            return np.resize(arr, n).reshape(tuple(dims))
        kind = r.u8()
        if kind >= self.escape and dtype.kind == "f":
            arr = fill_values(t, n, r.u32())
            arr[r.u8() % n] = r.pick(HOSTILE_FLOATS)
        elif kind % 4 == 3:
            raw = r.take(min(n * dtype.itemsize, 64))
            arr = _from_raw(t, raw)
            if arr.size == 0:
                arr = np.zeros(1, dtype)
            arr = np.resize(arr, n)
        else:
            arr = fill_values(t, n, r.u32() if kind % 4 else kind)
        return arr.astype(dtype).reshape(tuple(dims))

    def new_operand(self, slot, quant_like, p: int, ctx: dict) -> int:
        """A new operand for input ``slot``: model input, constant, or omitted."""
        r = self.r
        t = slot.type
        scalar = not is_tensor_type(t)
        b = r.u8()
        if slot.optional and b % 8 == 7:
            return self.add(t, [], L.NO_VALUE) if b & 0x80 else self.add(t, [], L.SUBGRAPH_INPUT)
        if scalar:
            lifetime = L.SUBGRAPH_INPUT if b % 10 == 9 else L.CONSTANT_COPY
        else:
            lifetime = (L.SUBGRAPH_INPUT, L.SUBGRAPH_INPUT, L.SUBGRAPH_INPUT, L.SUBGRAPH_INPUT,
                        L.CONSTANT_COPY, L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_INPUT)[b % 8]
            if t == T.TENSOR_INT32 and slot.name not in ("input", "values") and b % 8 < 3:
                lifetime = L.CONSTANT_COPY  # parameters are mostly constants
        dims: list[int] = []
        if not scalar:
            rank0 = ctx["rank0"]
            name = slot.name
            if name == "paddings":
                dims = [max(rank0 - 2, 1) if ctx["op"] == OperationType.SPACE_TO_BATCH_ND else rank0, 2]
            elif name == "filter" and ctx["op"] == OperationType.DEPTHWISE_CONV_2D:
                dims = [1, self.dim(p), self.dim(p), ctx["depth0"]]
            elif name in ("perm", "begin", "end", "strides"):
                dims = [rank0]
            elif name == "block_shape":
                dims = [2]
            elif name == "shape":
                dims = [1 + r.u8() % 4]
            elif name in ("axis", "squeeze_dims"):
                dims = [1 + r.u8() % max(rank0, 1)]
            else:
                ranks = slot.ranks or (1, 2, 3, 4)
                rank = ranks[r.u8() % len(ranks)]
                dims = [self.dim(p) for _ in range(rank)]
            if self.hostile():  # absurd rank or a hostile dimension
                if r.u8() & 1:
                    dims = dims + [1] * (r.u8() % 24)
                elif dims:
                    dims[r.u8() % len(dims)] = r.pick(HOSTILE_DIMS)
        scale, zp = 0.0, 0
        if t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                 T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM):
            if quant_like is not None and r.u8() % 4:
                scale, zp = quant_like
                if t in (T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM):
                    zp = 0  # symmetric: input 0's scale, zero point 0
            else:
                scale, zp = self.scale(), self.zero_point(t)
        elif t == T.TENSOR_INT32 and slot.name == "bias" and ctx.get("bias_scale"):
            scale = ctx["bias_scale"] if r.u8() % 8 else self.scale()
        cq = self.channel_quant(dims, ctx["op"]) if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL else None
        data = self.values(t, dims, slot.name, ctx)
        if lifetime == L.CONSTANT_REFERENCE and data is None:
            lifetime = L.CONSTANT_COPY  # the schema has no valueless memory constant
        return self.add(t, dims, lifetime, scale, zp, data, cq)

    def channel_quant(self, dims, op_type) -> tuple:
        """Per-channel parameters for a TENSOR_QUANT8_SYMM_PER_CHANNEL operand of ``dims``:
        the channel dimension the operation reads (DEPTHWISE_CONV_2D: 3, others: 0), one
        scale per channel; an escape picks another dimension or a wrong scale count."""
        r = self.r
        channel_dim = 3 if op_type == OperationType.DEPTHWISE_CONV_2D and len(dims) > 3 else 0
        n = int(dims[channel_dim]) if len(dims) > channel_dim else 1
        if self.hostile():
            if r.u8() & 1:
                channel_dim = r.u8() % 5
            else:
                n = r.u8() % 5
        scales = tuple(SCALES[(r.u8() + k) % len(SCALES)] for k in range(min(n, 64)))
        if n and self.hostile():
            scales = scales[:-1] + (r.pick(HOSTILE_FLOATS),)
        return scales, channel_dim

    # control flow (IF / WHILE with referenced subgraphs)
    def reference(self, sg: TestSubgraph) -> int:
        """A SUBGRAPH operand (main graph) naming ``sg``, appended to the referenced
        subgraphs; an escape names an arbitrary index instead."""
        self.referenced.append(sg)
        index = len(self.referenced) - 1
        if self.hostile():
            index = self.r.u8() % 8
        return self.add(T.SUBGRAPH, [], L.SUBGRAPH, data=np.asarray(index, np.uint32).reshape(()))

    def loop_value(self, t: OperandType, p: int) -> int:
        """An operand of type ``t`` with known dimensions for a control-flow data input: an
        earlier one, or a new model input."""
        x = self.reuse(Arg("input", t, None))
        if x is not None and x in self.dims_of:
            return x
        dims = [self.dim(p) for _ in range(1 + self.r.u8() % 4)]
        scale, zp = (self.scale(), self.zero_point(t)) if t in _QUANT_TYPES else (0.0, 0)
        return self.add(t, dims, L.SUBGRAPH_INPUT, scale, zp,
                        self.values(t, dims, "input", {"rank0": len(dims)}))

    def inner_dims(self, dims) -> list[int]:
        """Declared dimensions of a referenced subgraph operand: the actual ones, all
        unknown, or (an unknown rank) none."""
        b = self.r.u8() % 8
        return list(dims) if b < 5 else [0] * len(dims) if b < 7 else []

    def body(self, operands: list, operations: list, x: int, t: OperandType, table) -> int:
        """Append to a referenced subgraph one shape-preserving operation of the table on
        operand ``x`` (of type ``t``); returns its output (same type, quantization and
        declared dimensions as ``x``, lifetime SUBGRAPH_OUTPUT)."""
        choices = _body_operations(t, table)
        op_type, sig = choices[self.r.u8() % len(choices)]
        ins = []
        for a in sig.inputs:
            if a.type == t:
                ins.append(x)
            else:  # the fused activation: a constant
                operands.append(_operand(T.INT32, [], L.CONSTANT_COPY,
                                         data=np.asarray(self.r.u8() % 4, np.int32).reshape(())))
                ins.append(len(operands) - 1)
        xo = operands[x]
        dims = xo.dimensions if not self.hostile() else [d + 1 for d in xo.dimensions]
        operands.append(_operand(t, dims, L.SUBGRAPH_OUTPUT, xo.scale, xo.zero_point))
        operations.append(TestOperation(op_type, ins, [len(operands) - 1]))
        return len(operands) - 1

    def control_flow(self, op_type: OperationType, table) -> None:
        """An IF or a WHILE with its referenced subgraphs (see the module docstring)."""
        r = self.r
        types = [t for t in _CONTROL_FLOW_TYPES if _body_operations(t, table)]
        t = types[r.u8() % len(types)]
        p = 2 + r.u8() % 3
        x = self.loop_value(t, p)
        xo = self.operands[x]
        dims = self.dims_of.get(x, tuple(xo.dimensions))
        if op_type == OperationType.IF:
            refs = []
            for _ in range(2):  # the then and else branches
                operands = [_operand(t, self.inner_dims(dims), L.SUBGRAPH_INPUT, xo.scale, xo.zero_point)]
                operations: list[TestOperation] = []
                out = self.body(operands, operations, 0, t, table)
                refs.append(self.reference(_subgraph(operands, operations, [0], [out])))
            if r.u8() % 4:
                cond = self.add(T.TENSOR_BOOL8, [1], L.SUBGRAPH_INPUT, data=np.asarray([bool(r.u8() & 1)]))
            else:
                cond = self.add(T.TENSOR_BOOL8, [1], L.CONSTANT_COPY, data=np.asarray([bool(r.u8() & 1)]))
            ins = [cond, *refs, x]
        else:  # WHILE over (x, i): x = body(x), i += 1 while i < limit (at most 6 rounds)
            i = self.add(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT,
                         data=np.asarray([float(r.u8() % 5) - 2.0], np.float32))
            limit = np.asarray([float(1 + r.u8() % 4)], np.float32)
            # condition(x, i) = LESS(i, limit)
            operands = [_operand(t, self.inner_dims(dims), L.SUBGRAPH_INPUT, xo.scale, xo.zero_point),
                        _operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),
                        _operand(T.TENSOR_FLOAT32, [1], L.CONSTANT_COPY, data=limit),
                        _operand(T.TENSOR_BOOL8, [1], L.SUBGRAPH_OUTPUT)]
            cond = self.reference(_subgraph(operands, [TestOperation(OperationType.LESS, [1, 2], [3])],
                                            [0, 1], [3]))
            # body(x, i) = (op(x), ADD(i, 1))
            operands = [_operand(t, self.inner_dims(dims), L.SUBGRAPH_INPUT, xo.scale, xo.zero_point),
                        _operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),
                        _operand(T.TENSOR_FLOAT32, [1], L.CONSTANT_COPY, data=np.ones(1, np.float32)),
                        _operand(T.INT32, [], L.CONSTANT_COPY, data=np.asarray(0, np.int32).reshape(())),
                        _operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_OUTPUT)]
            operations = [TestOperation(OperationType.ADD, [1, 2, 3], [4])]
            out = self.body(operands, operations, 0, t, table)
            body = self.reference(_subgraph(operands, operations, [0, 1], [out, 4]))
            ins = [cond, body, x, i]
        y = self.add(t, list(dims) if r.u8() % 4 else [0] * len(dims), L.TEMPORARY_VARIABLE,
                     xo.scale, xo.zero_point)
        self.dims_of[y] = tuple(dims)
        self.operations.append(TestOperation(op_type, ins, [y]))

    def operation(self, table) -> None:
        r = self.r
        b = r.u8()
        if b >= self.escape:  # any operation code, often one the table lacks
            op_type = OperationType(r.u8() % N_OPERATION_CODES)
            opdef = ops.get(op_type) or ops.get(OperationType.ADD)
        else:
            opdef = table[b % len(table)]
            op_type = opdef.type
        if op_type in (OperationType.IF, OperationType.WHILE) and getattr(opdef, "check_references", None):
            self.control_flow(op_type, table)
            return
        sig = opdef.signatures[r.u8() % len(opdef.signatures)]
        in_slots = list(sig.inputs)
        if opdef.variadic:  # the repeating slot: CONCATENATION's first, PACK's second
            k = opdef.variadic_index
            in_slots = in_slots[:k] + [in_slots[k]] * (1 + r.u8() % 3) + in_slots[k + 1:]
        p = 2 + r.u8() % 3
        ctx = {"rank0": 0, "op": op_type, "depth0": p}
        ins = []
        quant_like = None
        for k, slot in enumerate(in_slots):
            idx = self.reuse(slot)
            if idx is None:
                idx = self.new_operand(slot, quant_like, p, ctx)
            ins.append(idx)
            o = self.operands[idx]
            if k == 0:
                ctx["rank0"] = len(o.dimensions)
                if o.dimensions and 0 < o.dimensions[-1] <= 8:
                    p = ctx["depth0"] = int(o.dimensions[-1])
                if o.scale:
                    quant_like = (o.scale, o.zero_point)
            if k == 1 and quant_like and o.scale and is_tensor_type(o.type):
                ctx["bias_scale"] = float(np.float32(quant_like[0]) * np.float32(o.scale))
        shapes = self.infer(opdef, ins)
        out_slots = list(sig.outputs)
        if opdef.variadic_outputs:  # e.g. SPLIT: as many outputs as the inferred shapes say
            out_slots = out_slots[:1] * (len(shapes) if shapes else 1 + r.u8() % 3)
        outs = []
        for j, slot in enumerate(out_slots):
            b = r.u8()
            shape = shapes[j] if shapes and j < len(shapes) else None
            if shape is not None and b % 8 < 6:
                dims = list(shape)
            elif shape is not None and b % 8 == 6:
                dims = [0] * len(shape)
            else:
                dims = []
            scale, zp = 0.0, 0
            if slot.type in _QUANT_TYPES:
                b = r.u8()
                if op_type in (OperationType.LOGISTIC, OperationType.SOFTMAX) and b % 8:
                    scale, zp = 1 / 256, (0 if slot.type == T.TENSOR_QUANT8_ASYMM else -128)
                elif quant_like is not None and b % 8 and slot.type not in (T.TENSOR_QUANT8_SYMM,
                                                                          T.TENSOR_QUANT16_SYMM):
                    scale, zp = quant_like
                else:
                    scale, zp = self.scale(), self.zero_point(slot.type)
            idx = self.add(slot.type, dims, L.TEMPORARY_VARIABLE, scale, zp)
            if shape is not None:
                self.dims_of[idx] = tuple(shape)
            outs.append(idx)
        self.operations.append(TestOperation(op_type, ins, outs))

    def reuse(self, slot) -> int | None:
        """An earlier operand of the slot's type and an allowed rank, or None (new)."""
        if not is_tensor_type(slot.type):
            return None
        b = self.r.u8()
        if b % 4 == 0:
            return None
        cands = [i for i, o in enumerate(self.operands)
                 if o.type == slot.type and (o.lifetime == L.TEMPORARY_VARIABLE or
                                             (o.lifetime == L.SUBGRAPH_INPUT and o.data is not None))
                 and (slot.ranks is None or len(self.dims_of.get(i, o.dimensions)) in slot.ranks
                      or not self.dims_of.get(i, o.dimensions))]
        if not cands:
            return None
        return cands[-1 - (b >> 2) % len(cands)]

    def infer(self, opdef, ins) -> list | None:
        """Output shapes from the operation table's ``prepare`` (None when it cannot tell)."""
        views = []
        for i in ins:
            o = self.operands[i]
            omitted = o.lifetime == L.NO_VALUE or (o.lifetime == L.SUBGRAPH_INPUT and o.data is None)
            dims = self.dims_of.get(i)
            if dims is None and not omitted and is_tensor_type(o.type):
                return None
            cq = None if o.channel_quant is None else (np.asarray(o.channel_quant[0], np.float32),
                                                       o.channel_quant[1])
            views.append(OperandView(o.type, tuple(dims or ()), o.scale, o.zero_point,
                                     o.data if o.lifetime != L.TEMPORARY_VARIABLE else None, omitted, cq))
        for i, v in zip(ins, views):
            if v.value is None and not v.omitted and self.operands[i].lifetime == L.TEMPORARY_VARIABLE \
                    and not is_tensor_type(v.type):
                return None
        try:
            ctx = OpContext(opdef.type, views, [], False)
            with np.errstate(all="ignore"):
                shapes = opdef.prepare(ctx)
            shapes = [tuple(int(d) for d in s) for s in shapes]
        except Exception:  # noqa: BLE001 - shape inference is a hint only
            return None
        if any(any(d < 0 or d > 0xFFFFFFFF for d in s) for s in shapes):
            return None
        return shapes


def _decode_generated(r: ByteReader, header: int) -> TestModel:
    g = _Generator(r, (header >> 4) & 3)
    table = [ops.REGISTRY[t] for t in _table_codes()]
    for _ in range(1 + r.u8() % 4):
        g.operation(table)
    consumed = {i for op in g.operations for i in op.inputs}
    outputs = []
    for op in g.operations:
        for i in op.outputs:
            if i not in consumed:
                g.operands[i].lifetime = L.SUBGRAPH_OUTPUT
                outputs.append(i)
    counts = _count_consumers(g.operands, g.operations)
    for i, o in enumerate(g.operands):
        o.number_of_consumers = counts[i]
    model = _new_model(TestSubgraph(g.operands, g.operations, g.inputs, outputs), bool(header & 2))
    model.referenced = g.referenced
    return model


# --- tweaks ---------------------------------------------------------------------------

def _decode_tweaks(r: ByteReader) -> list[Tweak]:
    tweaks = []
    while r.remaining and len(tweaks) < MAX_TWEAKS:
        kind = TWEAK_KINDS[r.u8() % len(TWEAK_KINDS)]
        index = r.varint()
        fld = r.u8()
        b = r.u8()
        value = HOSTILE_INTS[b % len(HOSTILE_INTS)] if b < 0x80 else r.zigzag()
        tweaks.append(Tweak(kind, index, fld, value))
    return tweaks


def apply_tweaks(tweaks: list[Tweak], model: Model, request: Request) -> None:
    """Apply ``tweaks`` in order to a HAL ``model`` and ``request`` (in place). Sizes are
    never grown past 1 MiB here: a hostile size is only ever *claimed*, not allocated."""
    sg = model.main
    for tw in tweaks:
        v = tw.value
        if tw.kind.startswith("operand_") and not sg.operands:
            continue
        if tw.kind.startswith("operand_"):
            o = sg.operands[tw.index % len(sg.operands)]
        if tw.kind == "operand_dim":
            dims = list(o.dimensions)
            k = tw.field % (len(dims) + 1)
            if k == len(dims):
                dims.append(v)
            else:
                dims[k] = v
            o.dimensions = dims
        elif tw.kind == "operand_rank":
            o.dimensions = list(o.dimensions) + [1] * (tw.field + 1)
        elif tw.kind == "operand_location":
            loc = o.location
            name = ("pool_index", "offset", "length", "padding")[tw.field % 4]
            o.location = DataLocation(**{**loc.__dict__, name: v})
        elif tw.kind == "operand_type":
            o.type = _enum_or_int(OperandType, v)
        elif tw.kind == "operand_lifetime":
            o.lifetime = _enum_or_int(OperandLifeTime, v)
        elif tw.kind == "operand_quant":
            if tw.field & 1:
                o.scale = HOSTILE_FLOATS[(tw.field >> 1) % len(HOSTILE_FLOATS)]
            else:
                o.zero_point = v
        elif tw.kind == "operand_consumers":
            o.number_of_consumers = v
        elif tw.kind == "operation_type" and sg.operations:
            sg.operations[tw.index % len(sg.operations)].type = _enum_or_int(OperationType, v)
        elif tw.kind == "operation_io" and sg.operations:
            op = sg.operations[tw.index % len(sg.operations)]
            lst = op.inputs if tw.field & 1 else op.outputs
            _set_or_append(lst, tw.field >> 1, v)
        elif tw.kind == "subgraph_io":
            _set_or_append(sg.input_indexes if tw.field & 1 else sg.output_indexes, tw.index, v)
        elif tw.kind in ("request_input_location", "request_output_location"):
            args = request.inputs if tw.kind == "request_input_location" else request.outputs
            if args:
                arg = args[tw.index % len(args)]
                name = ("pool_index", "offset", "length", "padding")[tw.field % 4]
                arg.location = DataLocation(**{**arg.location.__dict__, name: v})
        elif tw.kind == "request_arg":
            args = request.inputs if tw.field & 1 else request.outputs
            if args:
                arg = args[tw.index % len(args)]
                if tw.field & 2:
                    arg.has_no_value = not arg.has_no_value
                else:
                    arg.dimensions = [v] * (1 + (tw.field >> 2) % 5)
        elif tw.kind == "pool_size":
            size = min(max(v, 0), 1 << 20)
            which = tw.field % 3
            if which == 0:
                model.operand_values = bytes(model.operand_values[:size]).ljust(size, b"\0")
            elif which == 1 and model.pools:
                k = tw.index % len(model.pools)
                model.pools[k] = SharedMemory(data=bytes(model.pools[k].buffer[:size]).ljust(size, b"\0"))
            elif which == 2 and request.pools:
                k = tw.index % len(request.pools)
                pool = request.pools[k]
                if isinstance(pool, SharedMemory):
                    request.pools[k] = SharedMemory(data=bytes(pool.buffer[:size]).ljust(size, b"\0"))
        elif tw.kind == "extra_params" and sg.operands:
            o = sg.operands[tw.index % len(sg.operands)]
            if tw.field & 1:
                o.extra_params = bytes([tw.field]) * (1 + tw.field % 8)
            else:
                n = (tw.field >> 1) % 5
                o.extra_params = SymmPerChannelQuantParams(
                    tuple(HOSTILE_FLOATS[(tw.field + k) % len(HOSTILE_FLOATS)] if k % 2 else 0.5
                          for k in range(n)), v)
        elif tw.kind == "extension_prefix":
            name = "" if tw.field & 1 else f"com.example.fuzz{tw.field % 4}"
            model.extension_name_to_prefix.append(ExtensionNameAndPrefix(name, v))


def _enum_or_int(enum_cls, v: int):
    try:
        return enum_cls(v)
    except ValueError:
        return v


def _set_or_append(lst: list, k: int, v: int) -> None:
    if lst and k % (len(lst) + 1) < len(lst):
        lst[k % (len(lst) + 1)] = v
    else:
        lst.append(v)


# --- entry points ---------------------------------------------------------------------

def decode(data: bytes) -> FuzzCase:
    """The :class:`FuzzCase` of fuzz input ``data``. Raises :class:`Rejected` for an empty
    input only; any other byte string decodes to a model that obeys the corpus schema."""
    if not data:
        raise Rejected("empty input")
    r = ByteReader(data)
    header = r.u8()
    if header & 1:
        model, mode = _decode_generated(r, header), "generated"
    else:
        model, mode = _decode_literal(r, header), "literal"
    plan = (header >> 6) & 3
    tweaks = _decode_tweaks(r) if header & 8 else []
    return FuzzCase(model, mode, max(plan - 1, 0), tweaks)


def encode(tm: TestModel, expected_outputs: bool = True, max_raw_bytes: int | None = None) -> bytes:
    """Bytes that :func:`decode` maps back to ``tm`` (literal mode): same operands, data,
    operations, inputs, outputs, referenced subgraphs and relaxed flag; names and the other
    metadata are not encoded. ``expected_outputs=False`` leaves main outputs without data
    (seeds); ``max_raw_bytes`` stores longer data as a hash fill instead (same shape, other
    values).

    Raises ValueError for what the format cannot hold: more than MAX_OPERANDS operands or
    MAX_REFERENCED referenced subgraphs, ranks above 127, negative indexes, operation codes
    outside NNAPI's 106."""
    if len(tm.referenced) > MAX_REFERENCED:
        raise ValueError(f"{len(tm.referenced)} referenced subgraphs, at most {MAX_REFERENCED}")
    w = ByteWriter()
    explicit = any(o.number_of_consumers != c for sg in (tm.main, *tm.referenced)
                   for o, c in zip(sg.operands, _count_consumers(sg.operands, sg.operations)))
    w.u8((2 if tm.is_relaxed else 0) | (4 if explicit else 0))
    _encode_subgraph(w, tm.main, explicit, expected_outputs, max_raw_bytes)
    w.varint(len(tm.referenced))
    for sg in tm.referenced:
        _encode_subgraph(w, sg, explicit, expected_outputs, max_raw_bytes)
    return bytes(w.out)


def _encode_subgraph(w: ByteWriter, sg: TestSubgraph, explicit: bool, expected_outputs: bool,
                     max_raw_bytes: int | None) -> None:
    w.varint(len(sg.operands))
    if len(sg.operands) > MAX_OPERANDS:
        raise ValueError(f"{len(sg.operands)} operands, at most {MAX_OPERANDS}")
    for o in sg.operands:
        rank = len(o.dimensions)
        if rank > 127:
            raise ValueError(f"rank {rank} is above 127")
        w.u8(int(o.type))
        w.u8(rank if rank <= 8 else 0x80 + rank)
        for d in o.dimensions:
            w.varint(int(d) & 0xFFFFFFFF)
        w.f32(o.scale)
        w.zigzag(int(o.zero_point))
        w.u8(int(o.lifetime) | (0x80 if o.is_ignored else 0))
        if explicit:
            w.varint(int(o.number_of_consumers))
        if o.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            scales, channel_dim = o.channel_quant or ((), 0)
            w.u8(channel_dim)
            w.varint(len(scales))
            for s in scales:
                w.f32(s)
        if o.lifetime in DATA_LIFETIMES:
            data = o.data
            if o.lifetime == L.SUBGRAPH_OUTPUT and not expected_outputs:
                data = None
            if data is None:
                w.u8(0)
                continue
            raw = np.ascontiguousarray(data, operand_dtype(o.type)).tobytes()
            if max_raw_bytes is not None and len(raw) > max_raw_bytes:
                w.u8(2)
                w.u32(int.from_bytes(raw[:4].ljust(4, b"\0"), "little"))
            else:
                w.u8(1)
                w.varint(len(raw))
                w.raw(raw)
    w.varint(len(sg.operations))
    for op in sg.operations:
        if not 0 <= int(op.type) < N_OPERATION_CODES:
            raise ValueError(f"operation code {int(op.type)} cannot be encoded")
        w.u8(int(op.type))
        for idxs in (op.inputs, op.outputs):
            w.varint(len(idxs))
            for i in idxs:
                w.varint(int(i))
    for idxs in (sg.input_indexes, sg.output_indexes):
        w.varint(len(idxs))
        for i in idxs:
            w.varint(int(i))


def _f32_bits(values) -> bytes:
    """binary32 bits of ``values``, every NaN made the same (JSON keeps no NaN payload)."""
    arr = np.asarray(values, np.float64).astype(np.float32)
    arr[np.isnan(arr)] = np.float32("nan")
    return arr.tobytes()


def model_difference(a: TestModel, b: TestModel, data: bool = True) -> str | None:
    """The first difference between the graphs of ``a`` and ``b`` (None: same operands,
    operations, inputs, outputs, relaxed flag and, with ``data``, the same data bytes;
    scales compare as binary32, any NaN equal to any other)."""
    if a.is_relaxed != b.is_relaxed:
        return "is_relaxed"
    if len(a.referenced) != len(b.referenced):
        return f"{len(a.referenced)} vs {len(b.referenced)} referenced subgraphs"
    for name, sa, sb in [("main", a.main, b.main)] + [(f"referenced {k}", x, y) for k, (x, y)
                                                       in enumerate(zip(a.referenced, b.referenced))]:
        diff = _subgraph_difference(sa, sb, data)
        if diff is not None:
            return diff if name == "main" else f"{name}: {diff}"
    return None


def _subgraph_difference(sa: TestSubgraph, sb: TestSubgraph, data: bool) -> str | None:
    if len(sa.operands) != len(sb.operands):
        return f"{len(sa.operands)} vs {len(sb.operands)} operands"
    for i, (x, y) in enumerate(zip(sa.operands, sb.operands)):
        for f in ("type", "dimensions", "zero_point", "lifetime", "number_of_consumers", "is_ignored"):
            if getattr(x, f) != getattr(y, f):
                return f"operand {i}: {f} {getattr(x, f)!r} vs {getattr(y, f)!r}"
        if _f32_bits([x.scale]) != _f32_bits([y.scale]):
            return f"operand {i}: scale {x.scale!r} vs {y.scale!r}"
        cx, cy = ((None if c is None else (_f32_bits(c[0]), c[1])) for c in (x.channel_quant, y.channel_quant))
        if cx != cy:
            return f"operand {i}: channel_quant {cx} vs {cy}"
        if data:
            if (x.data is None) != (y.data is None):
                return f"operand {i}: data {'null' if x.data is None else 'set'} vs {'null' if y.data is None else 'set'}"
            if x.data is not None:
                dt = operand_dtype(x.type)
                if x.data.shape != y.data.shape or \
                        np.ascontiguousarray(x.data, dt).tobytes() != np.ascontiguousarray(y.data, dt).tobytes():
                    return f"operand {i}: data differs"
    if len(sa.operations) != len(sb.operations):
        return f"{len(sa.operations)} vs {len(sb.operations)} operations"
    for k, (x, y) in enumerate(zip(sa.operations, sb.operations)):
        if (x.type, list(x.inputs), list(x.outputs)) != (y.type, list(y.inputs), list(y.outputs)):
            return f"operation {k} differs"
    if list(sa.input_indexes) != list(sb.input_indexes) or list(sa.output_indexes) != list(sb.output_indexes):
        return "model inputs or outputs differ"
    return None
