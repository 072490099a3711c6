"""LSH_PROJECTION (NNAPI code 15): the signature rows, TENSOR_QUANT8_ASYMM input regimes and
omitted weight the AOSP corpus leaves empty (``nncts coverage``): TENSOR_FLOAT32 and
TENSOR_QUANT8_ASYMM inputs (FL1), TENSOR_FLOAT16 inputs and seeds (FL3).

Definition (NNAPI ``types.spec``; AOSP ``LSHProjection.cpp`` for the key layout). Inputs:
0 hash seeds [num_hash, num_bits] (TENSOR_FLOAT32, or TENSOR_FLOAT16 at FL3), 1 input of
rank >= 1, 2 optional weight [input.dims[0]] of the seeds' type (NO_VALUE: every weight 1),
3 type (1 SPARSE_DEPRECATED, 2 DENSE, 3 SPARSE). Bit (i, j) is 1 when sum over input rows r
of weight[r] * int64(Fingerprint64(key)) > 0, the key being the seed as float32 bytes
followed by row r's bytes as stored. DENSE output [num_hash * num_bits]: the bits; SPARSE
output [num_hash]: bits of hash i read as a binary number (bit 0 first, most significant),
plus i * 2^num_bits (SPARSE_DEPRECATED: without the offset).

Golden: numpy formula above, with farmhash's ``Fingerprint64`` (farmhashna::Hash64) written
here from its published definition for keys of up to 32 bytes (:func:`fingerprint64`).
The hash reads stored bytes, so a quantized input's scale and zero point do not change the
result; they are set to each quantization regime all the same.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, omitted, one_operation

FAMILY = "lsh"
GOLDEN = "numpy formula: sign bits of weighted farmhash Fingerprint64 sums (cts/specs/lsh.py)"
M64 = (1 << 64) - 1
K0, K1, K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F
F32, F16, Q8, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32
DTYPE = {F32: np.float32, F16: np.float16, Q8: np.uint8, I32: np.int32}


def _rot(v, s):
    return v if s == 0 else ((v >> s) | (v << (64 - s))) & M64


def _mix16(u, v, mul):
    a = ((u ^ v) * mul) & M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & M64
    b ^= b >> 47
    return (b * mul) & M64


def fingerprint64(s: bytes) -> int:
    """farmhash Fingerprint64 of ``s`` (at most 32 bytes), as an unsigned 64-bit value."""
    n = len(s)
    u64 = lambda i: int.from_bytes(s[i:i + 8], "little")  # noqa: E731
    mul = (K2 + 2 * n) & M64
    if n > 32:
        raise ValueError("keys longer than 32 bytes are not written here")
    if n > 16:
        a, b = (u64(0) * K1) & M64, u64(8)
        c, d = (u64(n - 8) * mul) & M64, (u64(n - 16) * K2) & M64
        return _mix16((_rot((a + b) & M64, 43) + _rot(c, 30) + d) & M64,
                      (a + _rot((b + K2) & M64, 18) + c) & M64, mul)
    if n >= 8:
        a, b = (u64(0) + K2) & M64, u64(n - 8)
        return _mix16((_rot(b, 37) * mul + a) & M64, ((_rot(a, 25) + b) * mul) & M64, mul)
    if n >= 4:
        a = int.from_bytes(s[:4], "little")
        return _mix16((n + (a << 3)) & M64, int.from_bytes(s[n - 4:], "little"), mul)
    if n > 0:
        y, z = s[0] + (s[n >> 1] << 8), n + (s[n - 1] << 2)
        v = ((y * K2) ^ (z * K0)) & M64
        return ((v ^ (v >> 47)) * K2) & M64
    return K2


def projection(seeds, rows: np.ndarray, weight, kind: int) -> np.ndarray:
    """LSH_PROJECTION of stored ``rows`` (numpy array, first axis = rows) by ``seeds``."""
    rows = rows.reshape(len(rows), -1)
    bits = np.zeros(seeds.shape, np.int64)
    for (i, j), seed in np.ndenumerate(seeds):
        score = 0.0
        for r in range(len(rows)):
            h = fingerprint64(np.float32(seed).tobytes() + rows[r].tobytes())
            h = h - (1 << 64) if h >> 63 else h
            score += (1.0 if weight is None else float(weight[r])) * float(h)
        bits[i, j] = score > 0
    if kind == 2:
        return bits.reshape(-1)
    value = (bits * (1 << np.arange(seeds.shape[1])[::-1])).sum(axis=1)
    return value + (np.arange(len(seeds)) << seeds.shape[1] if kind == 3 else 0)


def _model(name, seed_t, in_t, shape, kind, weighted=True, q=(0.0, 0), level=1):
    rng = np.random.default_rng(len(name))
    seeds = (rng.uniform(-1, 1, (3, 2)) * 8).astype(DTYPE[seed_t])
    if in_t == Q8:
        rows = rng.integers(0, 256, shape).astype(np.uint8)
    else:
        rows = (np.round(rng.uniform(-4, 4, shape) * 4) / 4).astype(DTYPE[in_t])
    weight = np.round(rng.uniform(-1, 1, shape[0]) * 8).astype(DTYPE[seed_t]) / 4 if weighted else None
    want = projection(seeds, rows, weight, kind)
    w = const(seed_t, weight) if weighted else omitted(seed_t)
    return one_operation(f"lsh_projection_{name}", FAMILY, Op.LSH_PROJECTION,
                         [const(seed_t, seeds), inp(in_t, rows, *q), w, const(T.INT32, kind)],
                         [expect(I32, want.astype(np.int32))], level, GOLDEN)


def models():
    return [
        _model("float32_dense", F32, F32, (3, 2), 2),
        _model("float32_sparse_weight_omitted", F32, F32, (4, 4), 3, weighted=False),
        _model("quant8_zp0_scale0.5_sparse", F32, Q8, (3, 5), 3, q=(0.5, 0)),
        _model("quant8_zp_mid_scale2_dense", F32, Q8, (4, 1), 2, q=(2.0, 100)),
        _model("quant8_zp255_scale0.25_sparse_deprecated", F32, Q8, (2, 3), 1, q=(0.25, 255)),
        _model("float32_seeds_float16_input", F32, F16, (4, 3), 3, level=3),
        _model("float16", F16, F16, (3, 2), 2, level=3),
        _model("float16_seeds_float32_input", F16, F32, (3, 3), 3, level=3),
        _model("float16_seeds_quant8_input", F16, Q8, (2, 7), 2, q=(2.0, 128), level=3),
    ]
