"""Errors in units in the last place (ULP) of a float operand type.

``ulp(t)`` of a real number ``t`` in a binary float format with ``p`` significand bits
and minimum normal exponent ``emin`` is ``2 ** (max(floor(log2 |t|), emin) - p + 1)``: the
gap between the two representable numbers around ``t`` (the subnormal gap below the normal
range; ``ulp(0)`` is the smallest subnormal). A correctly rounded result is within 0.5 ULP of
the truth. float32: p = 24, emin = -126; float16: p = 11, emin = -14 (IEEE 754 binary32 /
binary16, the formats of TENSOR_FLOAT32 and TENSOR_FLOAT16).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType

#: float dtype -> (significand bits p, minimum normal exponent emin).
FORMATS = {np.dtype(np.float32): (24, -126), np.dtype(np.float16): (11, -14)}
_TYPE_DTYPES = {OperandType.TENSOR_FLOAT32: np.dtype(np.float32), OperandType.FLOAT32: np.dtype(np.float32),
                OperandType.TENSOR_FLOAT16: np.dtype(np.float16), OperandType.FLOAT16: np.dtype(np.float16)}


def float_format(dtype_or_type) -> np.dtype:
    """The numpy float dtype (float32 or float16) of a numpy dtype or a float OperandType;
    ValueError for anything else."""
    if dtype_or_type in _TYPE_DTYPES:
        return _TYPE_DTYPES[dtype_or_type]
    dt = np.dtype(dtype_or_type)
    if dt not in FORMATS:
        raise ValueError(f"{dtype_or_type} is not float32 or float16")
    return dt


def ulp(truth: np.ndarray, dtype) -> np.ndarray:
    """ULP (float64 array of ``truth``'s shape) of each real value of ``truth`` in the format
    of ``dtype`` (float32 / float16, or a float OperandType): see the module docstring.
    Infinities and NaN get ``inf``."""
    p, emin = FORMATS[float_format(dtype)]
    t = np.abs(np.asarray(truth, dtype=np.float64))
    finite = np.isfinite(t)
    _, q = np.frexp(np.where(finite & (t > 0), t, 1.0))  # t = m * 2**q, m in [0.5, 1)
    e = np.maximum(np.where(finite & (t > 0), q - 1, emin), emin)
    return np.where(finite, np.ldexp(1.0, e - p + 1), np.inf)


def ulp_error(actual: np.ndarray, truth: np.ndarray, dtype, scale: np.ndarray | None = None) -> np.ndarray:
    """Error of ``actual`` against the real ``truth`` in ULP of ``dtype`` (float64 array of
    the broadcast shape): ``|actual - truth| / ulp(max(|truth|, scale))``. ``scale``
    (optional, broadcastable): a magnitude the ULP is taken at when it is larger than the
    truth, e.g. the sum of the absolute terms of an accumulation, whose classical error bound
    is relative to it (Higham, *Accuracy and Stability of Numerical Algorithms*, ch. 4).

    Special values: an actual equal to the truth (infinities included) or NaN where the truth
    is NaN has error 0; a NaN or infinity anywhere else, or a truth the format cannot hold
    (overflow) that the actual does not round to, has error ``inf``. The truth's rounding to
    ``dtype`` overflowing to infinity is matched by an infinite actual of the same sign."""
    dt = float_format(dtype)
    a = np.asarray(actual, dtype=np.float64)
    t = np.asarray(truth, dtype=np.float64)
    a, t = np.broadcast_arrays(a, t)
    with np.errstate(all="ignore"):
        rounded = t.astype(dt).astype(np.float64)
        mag = np.abs(t) if scale is None else np.maximum(np.abs(t), np.abs(np.asarray(scale, np.float64)))
        err = np.abs(a - t) / ulp(mag, dt)
    same = (a == t) | (np.isnan(a) & np.isnan(t)) | (np.isinf(rounded) & (a == rounded))
    err = np.where(same, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)
