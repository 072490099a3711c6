"""The input range of a sweep cut into bins, so a record can say where in the range the error
lives: for a float input, one bin per binade of each sign, ordered along the real line
(``-inf``, ``-[2^127, 2^128)`` ... ``-[1, 2)`` ... ``-subnormal``, ``-0``, ``+0``,
``subnormal``, ``[1, 2)`` ... ``+inf``, then ``NaN``); for an 8-bit quantized input, 16
bins of 16 stored values each, labelled by the real values they hold ((q - zeroPoint) *
scale, so ``[-8, -7)`` under scale 1/16 and zeroPoint 128).

A binade [2^e, 2^(e+1)) of float32 has e in [-126, 127], of float16 in [-14, 15] (IEEE 754
binary32 / binary16); below 2^emin the numbers are subnormal (one bin per sign).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.precision.ulp import FORMATS

#: Stored values per bin of an 8-bit quantized input.
QUANT_BIN = 16


@dataclass(frozen=True)
class Bins:
    """``index``: per input element its bin (int array); ``labels``: per bin its label;
    ``lo`` / ``hi``: per bin the smallest and largest real value it may hold (NaN's bin:
    NaN)."""

    index: np.ndarray
    labels: list[str]
    lo: list[float]
    hi: list[float]


def pow2_text(e: int) -> str:
    """2^e as text: a decimal for -4 <= e <= 16 (``0.0625``, ``64``, ``65536``), else ``2^e``."""
    if 0 <= e <= 16:
        return str(2 ** e)
    if -4 <= e < 0:
        return repr(2.0 ** e)
    return f"2^{e}"


def float_bins(x: np.ndarray) -> Bins:
    """Bins of float16 / float32 inputs ``x`` by sign and binade (module docstring)."""
    dt = np.dtype(x.dtype)
    _, emin = FORMATS[dt]
    emax = int(np.finfo(dt).maxexp) - 1
    binades = list(range(emin, emax + 1))
    # positive side, ascending: +0, subnormal, binades, +inf
    pos_labels = ["+0", "subnormal"] + [f"[{pow2_text(e)}, {pow2_text(e + 1)})" for e in binades] + ["+inf"]
    pos_lo = [0.0, 2.0 ** (emin - FORMATS[dt][0] + 1)] + [2.0 ** e for e in binades] + [np.inf]
    pos_hi = [0.0, 2.0 ** emin] + [2.0 ** (e + 1) for e in binades] + [np.inf]
    n_pos = len(pos_labels)
    labels = [("-" + s if s != "+0" and s != "+inf" else s.replace("+", "-")) for s in pos_labels[::-1]]
    labels = labels + pos_labels + ["NaN"]
    lo = [-h for h in pos_hi[::-1]] + pos_lo + [np.nan]
    hi = [-v for v in pos_lo[::-1]] + pos_hi + [np.nan]
    v = np.asarray(x, np.float64)
    mag = np.abs(v)
    finite = np.isfinite(v)
    _, q = np.frexp(np.where(finite & (mag > 0), mag, 1.0))
    e = q - 1
    k = np.where(mag == 0, 0, np.where(e < emin, 1, e - emin + 2))
    k = np.where(np.isinf(v), n_pos - 1, k)
    index = np.where(np.signbit(v), n_pos - 1 - k, n_pos + k)
    index = np.where(np.isnan(v), 2 * n_pos, index)
    return Bins(index.astype(np.int64), labels, lo, hi)


def quant_bins(q: np.ndarray, scale: float, zero_point: int) -> Bins:
    """Bins of 8-bit quantized stored values ``q`` (module docstring)."""
    info = np.iinfo(q.dtype)
    starts = list(range(int(info.min), int(info.max) + 1, QUANT_BIN))
    lo = [(s - zero_point) * scale for s in starts]
    hi = [(s + QUANT_BIN - zero_point) * scale for s in starts]
    labels = [f"[{a:g}, {b:g})" for a, b in zip(lo, hi)]
    index = (np.asarray(q, np.int64) - int(info.min)) // QUANT_BIN
    return Bins(index, labels, lo, hi)


def input_bins(x: np.ndarray, scale: float = 0.0, zero_point: int = 0) -> Bins:
    """:func:`float_bins` for a float input, else :func:`quant_bins` under its quantization."""
    return float_bins(x) if np.asarray(x).dtype.kind == "f" else quant_bins(x, scale, zero_point)


def runs(mask: np.ndarray, labels: list[str]) -> list[str]:
    """The bins where ``mask`` (one bool per bin) holds, contiguous runs merged:
    ``["-[2^127, 2^128) .. -[256, 512)", "[256, 512) .. [2^127, 2^128)"]``."""
    out, start = [], None
    flags = list(np.asarray(mask, bool)) + [False]
    for i, flag in enumerate(flags):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append(labels[start] if i - 1 == start else f"{labels[start]} .. {labels[i - 1]}")
            start = None
    return out
