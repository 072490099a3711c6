"""Three-way comparison of a float output (issue 23, item 6): the driver's answer and the
reference's own float32 path, each against the float64 truth
(:func:`runtime.precision.truth.float64_outputs`), and how many times worse the driver is.

Per float output (TENSOR_FLOAT32 / TENSOR_FLOAT16), over the judged elements (ambiguous ones,
:mod:`runtime.precision.decisions`, and those whose truth is not finite left out):

* ``driver_ulp`` / ``reference_ulp``: the largest error in ULP of the output type at each
  element's own magnitude (:func:`runtime.precision.ulp.ulp_error`);
* ``driver_ulp_at_scale`` / ``reference_ulp_at_scale``: the largest absolute error in ULP of
  the output's scale: its largest truth magnitude, or the caller's ``scale`` when larger
  (the magnitude of the operands the output was computed from: norm-wise, an element near
  zero weighs by its absolute error);
* ``times_worse = driver_ulp_at_scale / max(reference_ulp_at_scale, 1)``: the driver's worst
  element against the reference's worst, the reference floored at one ULP so that a driver
  within one ULP of the truth is never "worse".
* ``nonfinite``: elements where the driver gives NaN or an infinity the truth does not
  (their error is infinite; the ratio is then None).

Why worst against worst, at the output's scale: a composition cancels. A driver one ULP
high on a SOFTMAX whose result is then subtracted from a near-equal value leaves an error of
one ULP of the operands in an output whose truth is 0, where the reference happens to be
exact: element-wise that is 8.5e37 "ULP" and an infinite quotient (measured on
``large-TENSOR_FLOAT32-rank1`` seed 20, a one-element output whose truth is 0, so that only
the operands' magnitude gives a scale); at that scale it is one ULP. And two correct
float32 answers summing in different orders have independent rounding errors, so an
element-wise quotient explodes wherever the reference is exact by chance (the MLTS
three-way page makes the same choice of worst against worst).
"""
from __future__ import annotations

import numpy as np

from .ulp import float_format, ulp_error

#: One line defining the ratio (page legend, records).
DEFINITION = ("times worse = driver's max error / max(reference float32 path's max error, 1), both against "
              "the float64 truth in ULP of the output type at the output's largest magnitude, ambiguous "
              "elements left out")


def _finite_or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def compare(driver: np.ndarray, reference: np.ndarray, truth: np.ndarray, dtype,
            ambiguous: np.ndarray | None = None, scale: float = 0.0, means: bool = False) -> dict:
    """The figures of the module docstring for one output: ``elements`` (judged),
    ``driver_ulp``, ``reference_ulp``, ``driver_ulp_at_scale``, ``reference_ulp_at_scale``,
    ``times_worse`` (each None when not finite), ``nonfinite``; with ``means`` (the MLTS
    page) also ``driver_mean_at_scale`` / ``reference_mean_at_scale`` (the mean at-scale
    errors, None when not finite) and ``reference_nonfinite``. ``driver`` / ``reference``:
    the answers (any shape of the truth's element count); ``truth``: float64; ``dtype``:
    float32 / float16 or a float OperandType; ``ambiguous``: optional mask of elements left
    out; ``scale``: a magnitude the at-scale ULP is taken at when larger than the output's
    (module docstring). ValueError when the element counts differ or ``dtype`` is not a
    float format."""
    dt = float_format(dtype)
    d, r, t = (np.asarray(a).reshape(-1) for a in (driver, reference, truth))
    if not d.size == r.size == t.size:
        raise ValueError(f"element counts differ: driver {d.size}, reference {r.size}, truth {t.size}")
    t = t.astype(np.float64)
    keep = np.isfinite(t)
    if ambiguous is not None:
        keep &= ~np.asarray(ambiguous, bool).reshape(-1)
    d, r, t = d[keep], r[keep], t[keep]
    out = {"elements": int(t.size), "driver_ulp": 0.0, "reference_ulp": 0.0, "driver_ulp_at_scale": 0.0,
           "reference_ulp_at_scale": 0.0, "times_worse": 0.0, "nonfinite": 0}
    if means:
        out.update(driver_mean_at_scale=0.0, reference_mean_at_scale=0.0, reference_nonfinite=0)
    if not t.size:
        return out
    scale = max(float(np.abs(t).max()), abs(float(scale)) if np.isfinite(scale) else 0.0)
    ed, er = ulp_error(d, t, dt), ulp_error(r, t, dt)
    sd, sr = ulp_error(d, t, dt, scale=scale), ulp_error(r, t, dt, scale=scale)
    worst_d, worst_r = float(sd.max()), float(sr.max())
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = worst_d / max(worst_r, 1.0)
    out.update(driver_ulp=_finite_or_none(float(ed.max())), reference_ulp=_finite_or_none(float(er.max())),
               driver_ulp_at_scale=_finite_or_none(worst_d), reference_ulp_at_scale=_finite_or_none(worst_r),
               times_worse=_finite_or_none(ratio), nonfinite=int(np.count_nonzero(~np.isfinite(ed))))
    if means:
        out.update(driver_mean_at_scale=_finite_or_none(float(sd.mean())),
                   reference_mean_at_scale=_finite_or_none(float(sr.mean())),
                   reference_nonfinite=int(np.count_nonzero(~np.isfinite(er))))
    return out
