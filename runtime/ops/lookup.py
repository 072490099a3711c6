"""Lookup operations: EMBEDDING_LOOKUP (NNAPI code 7), HASHTABLE_LOOKUP (10) and
LSH_PROJECTION (15), with the farmhash ``Fingerprint64`` that LSH_PROJECTION hashes with.

Forms:

- EMBEDDING_LOOKUP: lookups TENSOR_INT32 [k]; values [n, ...] (rank >= 2) and output of
  TENSOR_FLOAT32 (FL1), TENSOR_INT32 or TENSOR_QUANT8_ASYMM (FL3; quantized output with
  the values' scale and zeroPoint), TENSOR_FLOAT16 or TENSOR_QUANT8_ASYMM_SIGNED (FL4;
  the signed output too keeps the values' scale and zeroPoint). Values move unchanged.
- HASHTABLE_LOOKUP: lookups, keys TENSOR_INT32; values TENSOR_FLOAT32, TENSOR_INT32 or
  TENSOR_QUANT8_ASYMM (all FL1; no FL3 addition) -> output of the values' type, hits
  TENSOR_QUANT8_ASYMM.
- LSH_PROJECTION: hash seeds [num_hash, num_bits] and optional weight [input.dims[0]]:
  TENSOR_FLOAT32 (FL1) or TENSOR_FLOAT16 (FL3); input (rank >= 1) TENSOR_FLOAT32,
  TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL1) or TENSOR_FLOAT16 (FL3); type INT32 -> output
  TENSOR_INT32. A float16 seed is hashed as the bytes of its float32 value and float16
  input rows as their own 2-byte elements (AOSP ``LSHProjection.cpp``).

Errors: given per operation below (OperationError naming the input and rule).

Semantics: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` of each operation (type lists
and feature levels as AOSP ``common/types/operations/src/*.cpp`` validate them), and the
AOSP reference CPU implementation where the spec leaves a detail open (noted per rule).
"""
from __future__ import annotations

import math

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperandView, OperationDef, check, register, scalar, sig, tensor
from .common import is_quant
from .decision_rules import any_error_decision

T = OperandType
F32, I32, Q8 = T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM
F16, Q8S = T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM_SIGNED


# --- farmhash Fingerprint64 (farmhashna::Hash64), written from the algorithm's definition ---

_M64 = (1 << 64) - 1
_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _u64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 8], "little")


def _rot(v: int, r: int) -> int:
    return ((v >> r) | (v << (64 - r))) & _M64 if r else v


def _smix(v: int) -> int:
    return v ^ (v >> 47)


def _mix16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = (_u64(s, i + 8 * k) for k in range(4))
    a = (a + w) & _M64
    b = _rot((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rot(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def _short(s: bytes, n: int, mul: int) -> int:
    """Fingerprint64 of 0 to 64 bytes."""
    if n > 32:
        a, b = (_u64(s, 0) * _K2) & _M64, _u64(s, 8)
        c, d = (_u64(s, n - 8) * mul) & _M64, (_u64(s, n - 16) * _K2) & _M64
        y = (_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64
        z = _mix16(y, (a + _rot((b + _K2) & _M64, 18) + c) & _M64, mul)
        e, f = (_u64(s, 16) * mul) & _M64, _u64(s, 24)
        g, h = ((y + _u64(s, n - 32)) * mul) & _M64, ((z + _u64(s, n - 24)) * mul) & _M64
        return _mix16((_rot((e + f) & _M64, 43) + _rot(g, 30) + h) & _M64,
                      (e + _rot((f + a) & _M64, 18) + g) & _M64, mul)
    if n > 16:
        a, b = (_u64(s, 0) * _K1) & _M64, _u64(s, 8)
        c, d = (_u64(s, n - 8) * mul) & _M64, (_u64(s, n - 16) * _K2) & _M64
        return _mix16((_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64,
                      (a + _rot((b + _K2) & _M64, 18) + c) & _M64, mul)
    if n >= 8:
        a, b = (_u64(s, 0) + _K2) & _M64, _u64(s, n - 8)
        return _mix16((_rot(b, 37) * mul + a) & _M64, ((_rot(a, 25) + b) * mul) & _M64, mul)
    if n >= 4:
        first, last = (int.from_bytes(s[i:i + 4], "little") for i in (0, n - 4))
        return _mix16(n + (first << 3), last, mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_smix(((y * _K2) ^ (z * _K0)) & _M64) * _K2) & _M64
    return _K2


def fingerprint64(data: bytes) -> int:
    """farmhash ``Fingerprint64(data)`` (= ``farmhashna::Hash64``) as an unsigned 64-bit
    int: the portable, forever-fixed 64-bit hash LSH_PROJECTION uses (AOSP
    ``LSHProjection.cpp``). Checked against the pyfarmhash package on random inputs."""
    s, n = bytes(data), len(data)
    mul = (_K2 + 2 * n) & _M64
    if n <= 64:
        return _short(s, n, mul)
    x, y = 81, (81 * _K1 + 113) & _M64
    z = (_smix((y * _K2 + 113) & _M64) * _K2) & _M64
    v, w = (0, 0), (0, 0)
    x = (x * _K2 + _u64(s, 0)) & _M64
    end, last64 = ((n - 1) // 64) * 64, n - 64
    for i in range(0, end, 64):  # 64-byte blocks; 1..64 bytes remain for the last round
        x = (_rot((x + y + v[0] + _u64(s, i + 8)) & _M64, 37) * _K1) & _M64
        y = (_rot((y + v[1] + _u64(s, i + 48)) & _M64, 42) * _K1) & _M64
        x ^= w[1]
        y = (y + v[0] + _u64(s, i + 40)) & _M64
        z = (_rot((z + w[0]) & _M64, 33) * _K1) & _M64
        v = _weak32(s, i, (v[1] * _K1) & _M64, (x + w[0]) & _M64)
        w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _u64(s, i + 16)) & _M64)
        z, x = x, z
    mul = (_K1 + ((z & 0xFF) << 1)) & _M64
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & _M64
    v0 = (v[0] + w0) & _M64
    w = ((w0 + v0) & _M64, w[1])
    v = (v0, v[1])
    x = (_rot((x + y + v[0] + _u64(s, i + 8)) & _M64, 37) * mul) & _M64
    y = (_rot((y + v[1] + _u64(s, i + 48)) & _M64, 42) * mul) & _M64
    x ^= (w[1] * 9) & _M64
    y = (y + v[0] * 9 + _u64(s, i + 40)) & _M64
    z = (_rot((z + w[0]) & _M64, 33) * mul) & _M64
    v = _weak32(s, i, (v[1] * mul) & _M64, (x + w[0]) & _M64)
    w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _u64(s, i + 16)) & _M64)
    z, x = x, z
    return _mix16((_mix16(v[0], w[0], mul) + _smix(y) * _K0 + z) & _M64,
                  (_mix16(v[1], w[1], mul) + x) & _M64, mul)


# --- shared shape rules ------------------------------------------------------------------

def _check_rank(op: OperandView, name: str, ranks: tuple[int, ...] | int) -> None:
    if isinstance(ranks, int):
        check(op.rank >= ranks, f"{name} must have rank >= {ranks}, has shape {list(op.dims)}")
    else:
        check(op.rank in ranks, f"{name} must have rank {' or '.join(map(str, ranks))}, "
                                f"has shape {list(op.dims)}")


def _check_same_quant(out: OperandView, src: OperandView, out_name: str, src_name: str) -> None:
    """A quantized ``out`` must have the scale and zeroPoint of ``src`` (spec, FL1)."""
    if is_quant(out):
        check(np.float32(out.scale) == np.float32(src.scale) and out.zero_point == src.zero_point,
              f"{out_name} ({T(out.type).name}) must have the scale and zeroPoint of "
              f"{src_name}")


# --- EMBEDDING_LOOKUP ----------------------------------------------------------------------

def _embedding_prepare(ctx: OpContext):
    """lookups [k] TENSOR_INT32, values [n, d1, ...] (rank >= 2) -> output [k, d1, ...].
    Errors: lookups not 1-D, values of rank < 2 (spec and AOSP ``embeddingLookupPrepare``),
    quantized output scale/zeroPoint differing from values (spec)."""
    lookups, values = ctx.inputs
    _check_rank(lookups, "lookups", (1,))
    _check_rank(values, "values", 2)
    _check_same_quant(ctx.outputs[0], values, "output", "values")
    return [(lookups.dims[0],) + tuple(values.dims[1:])]


def _embedding_execute(ctx: OpContext):
    """output[i] = values[lookups[i]]; OperationError if a lookup is outside [0, n)
    (spec: "the operation must fail")."""
    idx, values = ctx.value(0).astype(np.int64), ctx.value(1)
    n = values.shape[0]
    bad = np.flatnonzero((idx < 0) | (idx >= n))
    check(bad.size == 0, f"lookups[{bad[0] if bad.size else 0}] = "
                         f"{idx[bad[0]] if bad.size else 0} is outside [0, {n})")
    return [values[idx].copy()]


def _draft_values(d, k: int, rows: int) -> None:
    """Values slot ``k``: [rows, ...] of rank 2-4 (spec: rank >= 2), at most 256 elements."""
    rank = d.integer(2, 4)
    d.tensor(k, [rows] + d.shape(rank - 1, budget=max(1, 256 // rows)))


def _generate_embedding(d) -> None:
    """values [n, ...] of rank >= 2 and lookups [k] in [0, n) (spec: an index out of range
    fails); a linked lookups tensor is kept when its values are small non-negative indices
    (n then covers them). A quantized output keeps the values' quantization (spec)."""
    prim = d.primary
    keep = prim is not None and len(prim.dims) == 1 and prim.dims[0] <= 64 and prim.value.size \
        and 0 <= int(prim.value.min()) and int(prim.value.max()) < 64
    n = d.dim(1, 16)
    if keep:
        n = max(n, int(prim.value.max()) + 1)
    else:
        d.tensor(0, [d.dim(1, 8)])
    d.slots[0].low, d.slots[0].high = 0, n - 1
    _draft_values(d, 1, n)
    if d.slots[1].scale:
        d.out_quant[0] = (d.slots[1].scale, d.slots[1].zero_point)


register(OperationDef(
    OperationType.EMBEDDING_LOOKUP,
    # FL1: TENSOR_FLOAT32 values; FL3: TENSOR_INT32 / TENSOR_QUANT8_ASYMM values;
    # FL4: TENSOR_FLOAT16 / TENSOR_QUANT8_ASYMM_SIGNED values (types.spec "since NNAPI
    # feature level 4").
    tuple(sig(level, [tensor("lookups", I32, (1,)), tensor("values", t, None)],
              [tensor("output", t, None)])
          for level, t in ((1, F32), (3, I32), (3, Q8), (4, F16), (4, Q8S))),
    _embedding_prepare, _embedding_execute, generate=_generate_embedding, error_budget=budgets.exact("lookup"),
    summary="output[i] = values[lookups[i]] (slices of the first dimension)",
    aosp_source="CpuExecutor.cpp"))


# --- HASHTABLE_LOOKUP ----------------------------------------------------------------------

def _hashtable_prepare(ctx: OpContext):
    """lookups [k] TENSOR_INT32, keys [n] TENSOR_INT32, values [n, ...] (rank >= 2, spec)
    -> output [k, ...] of the values' type, hits [k] TENSOR_QUANT8_ASYMM.
    Errors: lookups/keys not 1-D, values of rank < 2, keys and values disagreeing on n,
    quantized output scale/zeroPoint differing from values (spec, FL1)."""
    lookups, keys, values = ctx.inputs
    _check_rank(lookups, "lookups", (1,))
    _check_rank(keys, "keys", (1,))
    _check_rank(values, "values", 2)
    check(keys.dims[0] == values.dims[0],
          f"keys has {keys.dims[0]} entries but values has {values.dims[0]} rows")
    _check_same_quant(ctx.outputs[0], values, "output", "values")
    k = lookups.dims[0]
    return [(k,) + tuple(values.dims[1:]), (k,)]


def _hashtable_execute(ctx: OpContext):
    """For each lookup, the values row whose key equals it (hit = 1), or a row of zero
    bytes (hit = 0; AOSP writes raw zeros, also for quantized values). Keys must be sorted
    ascending (spec); this is not checked, and a key found twice selects its first row."""
    lookups, keys, values = ctx.value(0), ctx.value(1), ctx.value(2)
    row_of: dict[int, int] = {}
    for i, key in enumerate(keys.tolist()):
        row_of.setdefault(key, i)
    out = np.zeros((lookups.shape[0],) + values.shape[1:], dtype=values.dtype)
    hits = np.zeros(lookups.shape, dtype=np.uint8)
    for i, key in enumerate(lookups.tolist()):
        if key in row_of:
            out[i] = values[row_of[key]]
            hits[i] = 1
    return [out, hits]


def _generate_hashtable(d) -> None:
    """keys: a constant [n] of sorted unique values (spec: sorted ascending) covering about
    half of the lookups' range, so some lookups hit and some miss (constant lookups: at
    least one of each; a linked lookups tensor is kept when 1-D: keys then include about
    half its values); values [n, ...] of rank >= 2; a quantized output keeps the values'
    quantization, hits is (1.0, 0) (spec)."""
    prim = d.primary
    if prim is not None and len(prim.dims) == 1 and 0 < prim.dims[0] <= 64:
        seen = np.unique(np.asarray(prim.value, np.int64))
        lo, hi = int(seen[0]), int(seen[-1])
        hits = seen[d.rng.random(seen.size) < 0.5]
        extra = d.rng.integers(lo, hi + 1, d.integer(0, 4))
        keys = np.unique(np.concatenate([hits, extra]))[:32]
        if keys.size == 0:
            keys = seen[:1]
    else:
        k = d.integer(4, 8)
        lo = d.integer(-20, 10)
        hi = lo + d.integer(3, 2 * k)
        span = np.arange(lo, hi + 1)
        keys = np.sort(d.rng.choice(span, size=span.size // 2, replace=False))
        if d.coin():  # constant lookups with at least one hit and one miss
            misses = np.setdiff1d(span, keys)
            look = d.rng.choice(span, size=k)
            look[:2] = d.choice(keys), d.choice(misses)
            d.param(0, d.rng.permutation(look).astype(np.int32), [k])
        else:
            d.tensor(0, [k])
    d.slots[0].low, d.slots[0].high = lo, hi
    d.param(1, keys.astype(np.int32), [keys.size])
    _draft_values(d, 2, keys.size)
    if d.slots[2].scale:
        d.out_quant[0] = (d.slots[2].scale, d.slots[2].zero_point)
    d.out_quant[1] = (1.0, 0)


register(OperationDef(
    OperationType.HASHTABLE_LOOKUP,
    tuple(sig(1, [tensor("lookups", I32, (1,)), tensor("keys", I32, (1,)),
                  tensor("values", t, None)],
              [tensor("output", t, None), tensor("hits", Q8, (1,), fixed_quant=(1.0, 0))]) for t in (F32, I32, Q8)),
    _hashtable_prepare, _hashtable_execute, generate=_generate_hashtable, error_budget=budgets.exact("lookup"),
    summary="output[i] = values[j] where keys[j] == lookups[i], hits[i] = found",
    aosp_source="CpuExecutor.cpp",
    # coupling: no TENSOR_QUANT8_ASYMM_SIGNED form; hits is a 0/1 map at (1.0, 0), not a
    # quantized value a zero-point shift could carry
    coupling_excluded=True))


# --- LSH_PROJECTION ------------------------------------------------------------------------

SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3  # LSHProjectionType (SPARSE = 3 is FL3's value)


def _lsh_prepare(ctx: OpContext):
    """hash [num_hash, num_bits] TENSOR_FLOAT32 or TENSOR_FLOAT16, input (rank >= 1),
    weight [input.dims[0]] (optional, the hash's type), type INT32 -> output TENSOR_INT32 [num_hash] (sparse) or
    [num_hash * num_bits] (dense).

    Errors: hash not 2-D or num_bits > 32 (AOSP), sparse with num_bits +
    ceil(log2(num_hash)) > 32 (spec), input of rank 0, weight not 1-D or not matching
    input.dims[0], type not 1 (SPARSE_DEPRECATED, FL1's "SPARSE"), 2 (DENSE) or 3 (SPARSE
    with per-function offset, whose value NNAPI defines from FL3). The weight is optional for
    every type (spec; AOSP's CPU requires it for DENSE and rejects it for sparse types)."""
    hsh, inp, weight = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    kind = ctx.scalar(3)
    check(kind in (SPARSE_DEPRECATED, DENSE, SPARSE),
          f"type {kind} is not 1 (SPARSE_DEPRECATED), 2 (DENSE) or 3 (SPARSE)")
    _check_rank(hsh, "hash", (2,))
    num_hash, num_bits = hsh.dims
    check(num_bits <= 32, f"hash.dims[1] = {num_bits} must be <= 32")
    if kind != DENSE and num_hash > 1:
        check(num_bits + math.ceil(math.log2(num_hash)) <= 32,
              f"sparse projection needs hash.dims[1] + ceil(log2(hash.dims[0])) <= 32, "
              f"has {num_bits} + ceil(log2({num_hash}))")
    _check_rank(inp, "input", 1)
    if not weight.omitted:
        _check_rank(weight, "weight", (1,))
        check(weight.dims[0] == inp.dims[0],
              f"weight has {weight.dims[0]} entries but input.dims[0] = {inp.dims[0]}")
    return [(num_hash * num_bits,) if kind == DENSE else (num_hash,)]


#: Work bound of the reference LSH_PROJECTION (pure-Python Fingerprint64): bytes hashed,
#: counting 16 extra per call (about 0.2 s of hashing; the CTS models need a few hundred).
#: A hostile but valid model (hash [65536, 1], or [1024, 32] over thousands of rows) fails
#: with GENERAL_FAILURE instead of hashing for minutes.
MAX_LSH_WORK = 1 << 19


def _sign_bit(seed: np.float32, rows: list[bytes], weight: list[float] | None) -> int:
    """1 if sum_i weight[i] * int64(Fingerprint64(seed bytes + row i bytes)) > 0, summed in
    double in row order (AOSP ``runningSignBit``), else 0."""
    prefix = np.asarray(seed, dtype="<f4").tobytes()
    score = 0.0
    for i, row in enumerate(rows):
        h = fingerprint64(prefix + row)
        h = float(h - (1 << 64) if h >= 1 << 63 else h)
        score += h if weight is None else weight[i] * h
    return 1 if score > 0 else 0


def _lsh_execute(ctx: OpContext):
    """Bits of sign(hash(seed, input rows) . weight) per seed (hash[i, j]). Dense: the
    bits, flattened. Sparse: per hash function i, the int32 made of its num_bits bits
    (first bit most significant), plus i * 2**num_bits for type 3 (SPARSE)."""
    seeds, inp, kind = ctx.value(0).astype(np.float32), ctx.value(1), ctx.scalar(3)
    w = ctx.inputs[2]
    weight = None if w.omitted else [float(x) for x in np.asarray(w.value, np.float64)]
    flat = np.ascontiguousarray(inp).reshape(inp.shape[0], -1) if inp.shape[0] else None
    rows = [] if flat is None else [r.tobytes() for r in flat]
    num_hash, num_bits = seeds.shape
    work = num_hash * num_bits * sum(len(r) + 16 for r in rows)  # bytes hashed (+ per-call cost)
    check(work <= MAX_LSH_WORK, f"hashes {num_hash * num_bits} seeds over {len(rows)} input rows "
                                f"({work} byte-equivalents); the reference kernel hashes at most "
                                f"{MAX_LSH_WORK}")
    bits = [[_sign_bit(seeds[i, j], rows, weight) for j in range(num_bits)]
            for i in range(num_hash)]
    if kind == DENSE:
        return [np.array(bits, dtype=np.int32).reshape(-1)]
    out = []
    for i, row in enumerate(bits):
        v = 0
        for b in row:
            v = ((v << 1) | b) & 0xFFFFFFFF
        if kind == SPARSE:
            v = (v + (i << num_bits)) & 0xFFFFFFFF
        out.append(v - (1 << 32) if v >= 1 << 31 else v)
    return [np.array(out, dtype=np.int32)]


def _lsh_signatures():
    """FL1: float32 hash and weight with float32, int32 or quant8 input. FL3: float16 hash
    and weight with any of the four input types, and float32 hash with float16 input."""
    forms = [(1, F32, t) for t in (F32, I32, Q8)] + [(3, F32, F16)] + \
            [(3, F16, t) for t in (F16, F32, I32, Q8)]
    return tuple(sig(level, [tensor("hash", h, (2,)), tensor("input", t, None),
                             tensor("weight", h, (1,), optional=True), scalar("type", T.INT32)],
                     [tensor("output", I32, (1,))]) for level, h, t in forms)


def _generate_lsh(d) -> None:
    """hash seeds [num_hash, num_bits] (2-6, 2-8, so sparse's num_bits + ceil(log2
    num_hash) <= 32 holds) in [-2, 2] (a linked one kept when it fits), input of rank 1-3
    with 1-6 rows of at most 16 elements (bounded hashing work), type among 1, 2, 3; the
    weight [input.dims[0]] given for DENSE and omitted for the sparse types as AOSP's CPU
    requires, the other way (the spec allows both) one time in five."""
    p = d.primary is not None and list(d.slots[0].dims)
    if not (p and len(p) == 2 and p[0] <= 8 and p[1] <= 8):
        d.tensor(0, [d.integer(2, 6), d.integer(2, 8)])
    rank = d.integer(1, 3)
    rows = d.dim(1, 6)
    d.tensor(1, [rows] + d.shape(rank - 1, budget=16))
    kind = d.choice((SPARSE_DEPRECATED, DENSE, SPARSE))
    d.param(3, kind)
    if (kind == DENSE) != d.coin(0.2):
        d.tensor(2, [rows], low=-2.0, high=2.0)
    else:
        s = d.slots[2]
        s.omitted, s.value, s.linkable, s.dims = True, None, False, []


register(OperationDef(
    OperationType.LSH_PROJECTION,
    _lsh_signatures(),
    _lsh_prepare, _lsh_execute, generate=_generate_lsh, decision=any_error_decision(0, 1, 2),
    summary="locality-sensitive hash projection of input rows (farmhash Fingerprint64)",
    allows_zero_sized_input=True, allows_omitted_operand=True, aosp_source="CpuExecutor.cpp",
    # coupling: no TENSOR_QUANT8_ASYMM_SIGNED form; a quant8 input is hashed byte by byte,
    # so shifted stored values hash differently
    coupling_excluded=True))
