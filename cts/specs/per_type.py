"""One numpy formula, one test model per operand type and quantization regime: for the
operations whose quantized output keeps the input's scale and zero point or needs no
quantization (RESHAPE, SLICE, PAD, GATHER, ARGMAX, REDUCE_MAX, RANK, ...; NNAPI
``types.spec``: "the scale and zeroPoint must be the same as input0").

A spec lists the operation's inputs in order: :func:`data` marks a data tensor (its type is
the case's), a plain tuple from :func:`~cts.specs.const` is fixed, and a callable
``(type, scale, zero point) -> tuple`` gives a type-dependent operand (PAD_V2's pad value).
Outputs are ``DATA`` (the case's type, scale and zero point), a fixed
:class:`~runtime.types.OperandType` (ARGMAX's TENSOR_INT32, RANK's INT32) or a fixed
(type, scale, zero point) (HASHTABLE_LOOKUP's hits).

Data values: quarter multiples in [-4, 4] for the float types (exact in float16),
integers for TENSOR_INT32, raw values over the whole range of a quantized type (so the
extreme regimes saturate nothing the formula needs), booleans for TENSOR_BOOL8;
``distinct`` draws without replacement (no ties for ARGMAX, TOPK_V2). A quantized case
runs once per regime of :data:`~cts.specs.variations.QUANT_REGIMES` (zero point 0, mid,
extreme; scale below and above 1). The formula gets the real values (dequantized) and
keyword ``q`` = (type, scale, zero point); ``DATA`` outputs are quantized back with the
same scale and zero point (:func:`~cts.specs.variations.quantize`), so a data-moving
formula returns exactly the raw values it moved.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from runtime.types import OperandType as T

from . import const, expect, inp, one_operation
from .variations import QUANT_REGIMES, quantize

DATA = "data"
FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
#: Model-name suffix per data type.
SUFFIX = {T.TENSOR_FLOAT32: "float32", T.TENSOR_FLOAT16: "float16", T.TENSOR_INT32: "int32",
          T.TENSOR_QUANT8_ASYMM: "quant8", T.TENSOR_QUANT8_ASYMM_SIGNED: "quant8_signed",
          T.TENSOR_QUANT16_ASYMM: "quant16", T.TENSOR_QUANT16_SYMM: "quant16_symm",
          T.TENSOR_QUANT8_SYMM: "quant8_symm", T.TENSOR_QUANT8_SYMM_PER_CHANNEL: "per_channel",
          T.TENSOR_BOOL8: "bool8"}
_RAW = {T.TENSOR_QUANT8_ASYMM: (0, 255), T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
        T.TENSOR_QUANT16_ASYMM: (0, 65535), T.TENSOR_QUANT16_SYMM: (-32768, 32767),
        T.TENSOR_QUANT8_SYMM: (-127, 127), T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
        T.TENSOR_INT32: (-100, 100)}
#: Per-channel scales (channel dimension 0): one below and one above 1.
PER_CHANNEL_SCALES = (0.5, 2.0)


@dataclass(frozen=True)
class Data:
    """A data tensor of ``shape``: a model input (``role`` "input") or a constant."""

    shape: tuple
    role: str = "input"
    distinct: bool = False


def data(*shape, role: str = "input", distinct: bool = False) -> Data:
    return Data(tuple(shape), role, distinct)


def regimes(t: T) -> tuple:
    """(suffix, scale, zero point) of every case of type ``t``."""
    if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return (("", PER_CHANNEL_SCALES, 0),)
    return QUANT_REGIMES.get(t, (("", 0.0, 0),))


def _raw(rng, t: T, d: Data) -> np.ndarray:
    n = int(np.prod(d.shape))
    if t == T.TENSOR_BOOL8:
        return rng.integers(0, 2, d.shape).astype(bool)
    if t in FLOATS:
        pool = np.arange(-16, 17) / 4
    else:
        lo, hi = _RAW[t]
        pool = np.arange(lo, hi + 1)
    return rng.choice(pool, n, replace=not d.distinct).reshape(d.shape)


def cases(name: str, family: str, op, inputs, outputs, formula: Callable, golden: str,
          levels: dict, seed: int = 0) -> list:
    """One model per type in ``levels`` (type -> feature level, or a callable
    ``(scale, zero point) -> level``) and regime of that type:
    ``name_<type>[_<regime>]``; ``formula(*real data values, q=(type, scale, zp))``
    returns one array per output (a bare array for one output)."""
    models = []
    for t, lv in levels.items():
        for suffix, scale, zp in regimes(t):
            level = lv(scale, zp) if callable(lv) else lv
            rng = np.random.default_rng(seed)
            cq = None
            if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
                cq, scale = (tuple(scale), 0), 0.0
            tuples, reals = [], []
            for x in inputs:
                if isinstance(x, Data):
                    raw = _raw(rng, t, x)
                    reals.append((raw - zp) * scale if scale else raw)
                    tuples.append((inp if x.role == "input" else const)(t, raw, scale, zp, cq))
                else:
                    tuples.append(x(t, scale, zp) if callable(x) else x)
            want = formula(*reals, q=(t, scale, zp))
            want = [want] if len(outputs) == 1 else list(want)
            outs = []
            for o, w in zip(outputs, want):
                if isinstance(o, tuple):
                    outs.append(expect(o[0], w, o[1], o[2]))
                elif o != DATA:
                    outs.append(expect(o, w))
                elif scale:
                    outs.append(expect(t, quantize(w, scale, zp, t), scale, zp))
                else:
                    outs.append(expect(t, w))
            text = f"numpy formula: {golden}"
            if scale and DATA in outputs:
                text += " on the dequantized inputs, quantized with the same scale and zero point"
            full = "_".join(p for p in (name, SUFFIX[t], suffix) if p)
            models.append(one_operation(full, family, op, tuples, outs, level, text))
    return models


def values_for(rng, shape, t, q=None) -> np.ndarray:
    """Example values for a tensor of type ``t``: float types, multiples of 1/4 in [-4, 4]
    (float16 holds them and their small sums exactly); quantized types, the real values of
    stored values drawn over the whole range (scale, zero point) ``q`` spans, so extreme
    zero points still get distinct values."""
    if t in FLOATS or q is None:
        return np.round(rng.uniform(-4, 4, shape) * 4) / 4
    lo, hi = (0, 255) if t == T.TENSOR_QUANT8_ASYMM else (-128, 127)
    return (rng.integers(lo, hi + 1, shape) - q[1]) * f32(q[0])
