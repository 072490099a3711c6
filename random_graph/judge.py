"""What the random-graph judge knows beyond AOSP's criteria (issue 23, items 5 and 6).

* :func:`ambiguity`: the output elements of a graph with more than one right answer (a
  decision, such as an EQUAL, reading a computed float within its allowed error of the
  boundary, and everything computed from it; :mod:`runtime.precision.decisions`), with the
  allowed error of every computed value the NNAPI tolerance of its type
  (:func:`runtime.testing.criteria.tolerance_for`, relaxed as the graph is). The judge
  (:func:`runtime.testing.criteria.judge` with ``ambiguous``) leaves them out and the record
  counts them (``ambiguous_elements``).
* :func:`precision`: per float output, the driver's and the reference's float32 errors
  against the float64 truth and how many times worse the driver is
  (:func:`runtime.precision.three_way.compare`).
"""
from __future__ import annotations

import numpy as np

from runtime.errors import HalError
from runtime.precision.decisions import Ambiguity, analyse
from runtime.precision.three_way import compare
from runtime.precision.truth import float64_outputs
from runtime.testing.criteria import is_relaxed, tolerance_for
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import TestModel
from runtime.types import OperandType as T, operand_dtype

_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


def _inputs(tm: TestModel) -> list[np.ndarray | None]:
    """The graph's example input values, one per main input (None: no value)."""
    return [tm.main.operands[i].data for i in tm.main.input_indexes]


def _magnitude(value) -> float:
    """Largest finite magnitude of ``value`` (0 for none)."""
    if value is None:
        return 0.0
    v = np.abs(np.asarray(value, np.float64))
    v = v[np.isfinite(v)]
    return float(v.max()) if v.size else 0.0


def ambiguity(tm: TestModel) -> Ambiguity:
    """The ambiguous output elements of graph ``tm`` on its example inputs (module
    docstring). A graph the reference refuses has none (its run fails on its own)."""
    relaxed = is_relaxed(tm)

    def tolerance(t):
        tol = tolerance_for(t, relaxed, tm.name)
        return None if tol.exact else (tol.atol, tol.rtol)

    try:
        model = to_hal_model(tm)
        return analyse(model, _inputs(tm), tolerance, relaxed=model.relax_computation_float32_to_float16)
    except HalError:
        return Ambiguity([None] * len(tm.main.output_indexes))


def precision(tm: TestModel, outputs, dims, found: Ambiguity) -> list[dict]:
    """Per float output of ``tm`` whose reported dimensions are the expected ones: ``output``
    (index), ``type`` and the figures of :func:`runtime.precision.three_way.compare` for the
    driver's ``outputs`` (bytes per output, as the judge reads them) against the reference
    (the graph's expected values) and the float64 truth, ``found``'s ambiguous elements left
    out, at the scale of the largest float input of the operation computing the output; the figures with 4 significant digits. Empty when the graph has no float output or
    the truth cannot be computed."""
    picked = [(j, idx) for j, idx in enumerate(tm.main.output_indexes)
              if tm.main.operands[idx].type in _FLOATS and tm.main.operands[idx].data is not None
              and list(dims[j]) == list(tm.main.operands[idx].data.shape)]
    if not picked:
        return []
    scales = {tm.main.output_indexes[j]: 0.0 for j, _ in picked}

    def operand_scale(k, ctx, results):
        # the magnitude of the operands each picked output is computed from (three_way.compare)
        for idx in tm.main.operations[k].outputs:
            if idx in scales:
                scales[idx] = max([scales[idx]] + [_magnitude(v.value) for v in ctx.inputs if v.type in _FLOATS])
        return results

    try:
        truth = float64_outputs(to_hal_model(tm), _inputs(tm), intercept=operand_scale)
    except HalError:
        return []
    rows = []
    for j, idx in picked:
        o = tm.main.operands[idx]
        dtype = operand_dtype(o.type)
        actual = np.frombuffer(bytes(outputs[j][:o.data.size * dtype.itemsize]), dtype)
        row = {"output": j, "type": T(o.type).name}
        row.update((k, float(f"{v:.4g}") if isinstance(v, float) else v)
                   for k, v in compare(actual, o.data, truth[j], dtype, found.masks[j], scales[idx]).items())
        rows.append(row)
    return rows


def worst(rows: list[dict]) -> float | None:
    """The largest ``times_worse`` over :func:`precision`'s rows (None: none measured, or a
    driver answer that is not finite)."""
    if any(r["nonfinite"] for r in rows):
        return None
    values = [r["times_worse"] for r in rows if r["times_worse"] is not None]
    return max(values) if values else None


def record_fields(outcome) -> dict:
    """Record fields of a judged graph: ``ambiguous_elements`` (output elements with more
    than one right answer, left out of the judgement) and the ``decisions`` that made them;
    for a graph with float outputs, ``three_way`` (per output, the figures of
    :func:`precision`) and ``times_worse`` (the worst ratio, None when an answer is not
    finite)."""
    fields = {"ambiguous_elements": outcome.ambiguous}
    if outcome.decisions:
        fields["decisions"] = outcome.decisions
    if outcome.three_way:
        fields.update(three_way=outcome.three_way, times_worse=worst(outcome.three_way))
    return fields
