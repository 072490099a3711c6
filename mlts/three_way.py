"""Three-way precision of an MLTS model: the driver and the reference's own float32 path,
each against the float64 truth of the same imported NNAPI model, and TFLite beside them.

Three answers per model output, all on the same inputs:

* the **truth**: the imported NNAPI model evaluated by the reference kernels in float64
  (:func:`runtime.precision.truth.float64_outputs`, partition by partition; quantized
  operations compute in real arithmetic and round once, when they store their quantized
  output; a CPU fallback step runs its numpy kernel on the truth's values and keeps float
  results as float64);
* the **reference**: the same partitions run by the executor's normal path
  (:func:`runtime.executor.run_subgraph`, what the sample driver computes);
* the **driver** under test (its outputs from :func:`mlts.execute.run_imported`), and
  **TFLite** (ai-edge-litert's outputs, when given).

Errors against the truth, per output (:func:`output_precision`), with one definition of
"times worse than the reference's own error" (issue 23 item 6, the random graphs' too):

* float outputs (TENSOR_FLOAT32 / TENSOR_FLOAT16): :func:`runtime.precision.three_way.compare`
  (driver, reference, truth) for the driver and (TFLite, reference, truth) for TFLite, whose
  docstring says why: ``max`` is the largest absolute error in ULP of the output's largest
  truth magnitude, ``mean`` the mean of the same, ``ratio`` its ``times_worse`` (worst against
  worst, the reference floored at one ULP, :data:`DEFINITION`); ``max_elementwise`` keeps the
  largest error in ULP at each element's own magnitude (a correct float32 network leaves 10^5
  of those on an element that cancels to near zero); ``nonfinite``: elements where the answer
  is NaN or infinite and the truth is not; elements whose truth is not finite are left out;
* quantized outputs (MLTS only) in quanta: ``|q - q_truth|`` (``max``, ``mean``);
* integer and boolean outputs (MLTS only): ``mismatches``, 1 per element unequal to the truth
  (``max``, ``mean`` the fraction).

Quantized and integer outputs take the same ratio in their unit (:func:`times_worse`:
``max / max(reference max, 1)``). A driver computing what the reference computes has ratio
<= 1 exactly. ``tflite_ratio``: TFLite's ratio against the reference; ``driver_vs_tflite`` =
the driver's max / max(TFLite's max, 1).

Cost: the truth of MobileNet v1 1.0 224 takes 0.2-0.7 s on 2 shared cores (float64 BLAS),
once per model and input set per run (:func:`imported_answers` keeps the last few in memory).
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np

from runtime.executor import run_subgraph
from runtime.precision.three_way import DEFINITION as FLOAT_DEFINITION
from runtime.precision.three_way import compare
from runtime.precision.truth import float64_outputs
from runtime.testing.frontend import build_model

from .execute import _check_inputs, _run_fallback, collect_outputs
from .tflite_import import ImportedModel, Partition

#: What the truth is, as the page and ``mlts.json`` say it.
TRUTH = "float64 truth of the imported NNAPI model (runtime.precision.truth, the reference kernels at float64)"
#: What the reference's float32 path is.
REFERENCE = "the reference's own float32 path (runtime.executor, the sample driver's arithmetic)"
#: One line defining ``ratio`` (page legend, JSON): the random graphs' definition
#: (:data:`runtime.precision.three_way.DEFINITION`), and the same in the other units.
DEFINITION = (f"{FLOAT_DEFINITION}; quantized outputs: the same in quanta, integer and boolean outputs: in "
              "mismatching elements")
_FLOATS = {np.dtype(np.float32), np.dtype(np.float16)}
_QUANT = {"uint8", "int8", "int16", "uint16"}
#: Answers kept by :func:`imported_answers` (model digest and input digest -> answers).
_CACHE: dict[tuple[str, str], "Answers"] = {}
_CACHE_SIZE = 4


@dataclass
class Answers:
    """The truth and the reference's float32 answers of an imported model on one input set:
    ``truth`` (one array per TFLite graph output: float64 for float outputs, the output's
    dtype otherwise), ``reference`` (the outputs' dtypes), the seconds each took."""

    truth: list[np.ndarray]
    reference: list[np.ndarray]
    truth_s: float
    reference_s: float


def _run_chain(imported: ImportedModel, hals: dict, xs: list[np.ndarray], run, wide: bool) -> list[np.ndarray]:
    """Run ``imported``'s steps on inputs ``xs`` with ``run(hal_model, inputs) -> outputs``
    for each partition (``hals``: step index -> its HAL model; inputs shaped as the
    partition's operands), CPU fallback steps with their numpy kernels (``wide``: float
    results kept as float64)."""
    env: dict[int, np.ndarray] = {info.index: x for info, x in zip(imported.inputs, xs)}
    for k, step in enumerate(imported.steps):
        if not isinstance(step, Partition):
            _run_fallback(imported, step, env, wide=wide)
            continue
        hal = hals[k]
        sg = hal.main
        values = [np.asarray(env[t]).reshape(sg.operands[i].dimensions)
                  for t, i in zip(step.input_tensors, sg.input_indexes)]
        for t, v in zip(step.output_tensors, run(hal, values)):
            env[t] = np.asarray(v).reshape(imported.tensors[t].shape)
    return collect_outputs(imported, env)


def _truth(hal, values):
    return float64_outputs(hal, values)


def _reference(hal, values):
    return run_subgraph(hal, hal.main, [(v, list(v.shape)) for v in values],
                        hal.relax_computation_float32_to_float16)


def _digest(xs: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for x in xs:
        h.update(f"{x.dtype.str}{x.shape}".encode())
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()


def imported_answers(imported: ImportedModel, inputs) -> Answers:
    """The float64 truth and the reference's float32 outputs of ``imported`` on ``inputs``
    (one array per TFLite graph input, as :func:`mlts.execute.run_imported` takes them),
    computed once per model digest and input set (the last :data:`_CACHE_SIZE` kept);
    ``truth_s`` / ``reference_s`` time the evaluations, not the partitions' one model build.
    Raises ValueError for wrong inputs, NnapiError when the front end refuses a partition,
    HalError when a kernel rejects an operation, TFLiteImportError for a fallback step that
    cannot run."""
    xs = _check_inputs(imported, inputs)
    key = (imported.digest, _digest(xs))
    if key in _CACHE:
        return _CACHE[key]
    hals = {k: build_model(step.model).to_hal() for k, step in enumerate(imported.steps)
            if isinstance(step, Partition)}
    t0 = time.perf_counter()
    truth = _run_chain(imported, hals, xs, _truth, True)
    t1 = time.perf_counter()
    reference = _run_chain(imported, hals, xs, _reference, False)
    answers = Answers(truth, reference, t1 - t0, time.perf_counter() - t1)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = answers
    return answers


# ---------------------------------------------------------------------------------------
# Errors against the truth


def output_unit(dtype) -> str:
    """The unit errors of an output of numpy ``dtype`` are counted in: "ULP" (float32,
    float16), "quanta" (8/16-bit quantized), "mismatches" (integers, booleans)."""
    dt = np.dtype(dtype)
    if dt in _FLOATS:
        return "ULP"
    return "quanta" if dt.name in _QUANT else "mismatches"


def errors(actual, truth, dtype) -> np.ndarray:
    """Per element (float64, flat) error of a quantized or integer ``actual`` against
    ``truth`` in the unit of :func:`output_unit` for ``dtype``: quanta (``|q - q_truth|``, no
    wrap-around) or 1 per mismatch. ValueError when the element counts differ or ``dtype``
    is a float type (float outputs: :func:`runtime.precision.three_way.compare`)."""
    a, t = np.asarray(actual).reshape(-1), np.asarray(truth).reshape(-1)
    if a.size != t.size:
        raise ValueError(f"{a.size} elements against a truth of {t.size}")
    unit = output_unit(dtype)
    if unit == "ULP":
        raise ValueError(f"{np.dtype(dtype).name} is a float type: runtime.precision.three_way.compare")
    if unit == "quanta":
        return np.abs(a.astype(np.int64) - t.astype(np.int64)).astype(np.float64)
    return (a != t).astype(np.float64)


def figures(actual, truth, dtype) -> dict:
    """The error figures of one quantized or integer answer (:func:`errors`): ``max``,
    ``mean``, ``max_elementwise`` (None: the unit is the element's own), ``nonfinite`` (0).
    Empty outputs have zeros. ValueError as :func:`errors`."""
    e = errors(actual, truth, dtype)
    return {"max": float(e.max()) if e.size else 0.0, "mean": float(e.mean()) if e.size else 0.0,
            "max_elementwise": None, "nonfinite": 0}


def _float_figures(c: dict, who: str) -> dict:
    """``who``'s ("driver" or "reference") figures out of a
    :func:`runtime.precision.three_way.compare` result (``means=True``), as :func:`figures`
    names them."""
    return {"max": c[f"{who}_ulp_at_scale"], "mean": c[f"{who}_mean_at_scale"], "max_elementwise": c[f"{who}_ulp"],
            "nonfinite": c["nonfinite" if who == "driver" else "reference_nonfinite"]}


def times_worse(candidate: float | None, reference: float | None) -> float | None:
    """``candidate / max(reference, 1)``: the ratio of :data:`DEFINITION` on worst errors
    already measured (quanta, mismatches; TFLite as the baseline), the reference floored at
    one unit; None when either is missing, inf for an infinite candidate."""
    if candidate is None or reference is None:
        return None
    return float(candidate) / max(float(reference), 1.0)


def output_precision(index: int, name: str, dtype, truth, reference, driver, tflite=None) -> dict:
    """The three-way figures of one output: ``index``, ``name``, ``dtype``, ``unit``,
    ``driver`` / ``reference`` / ``tflite`` (``max``, ``mean``, ``max_elementwise``,
    ``nonfinite``; ``tflite`` None without TFLite's answer), ``ratio`` (the driver against
    the reference: float outputs ``times_worse`` of
    :func:`runtime.precision.three_way.compare`, other units :func:`times_worse` of the
    maxima), ``tflite_ratio`` (TFLite against the reference, the same way),
    ``driver_vs_tflite`` (driver's max / max(TFLite's max, 1)). ``dtype``: the output's
    numpy dtype; ``truth`` as :func:`imported_answers` gives it (float64 for float
    outputs); the answers of the same element count (ValueError otherwise)."""
    dt = np.dtype(dtype)
    row = {"index": index, "name": name, "dtype": dt.name, "unit": output_unit(dt), "driver": None,
           "reference": None, "tflite": None, "ratio": None, "tflite_ratio": None, "driver_vs_tflite": None}
    if row["unit"] == "ULP":
        c = compare(driver, reference, truth, dt, means=True)
        row.update(driver=_float_figures(c, "driver"), reference=_float_figures(c, "reference"),
                   ratio=c["times_worse"])
        if tflite is not None:
            ct = compare(tflite, reference, truth, dt, means=True)
            row.update(tflite=_float_figures(ct, "driver"), tflite_ratio=ct["times_worse"])
    else:
        row.update(driver=figures(driver, truth, dt), reference=figures(reference, truth, dt))
        row["ratio"] = times_worse(row["driver"]["max"], row["reference"]["max"])
        if tflite is not None:
            row["tflite"] = figures(tflite, truth, dt)
            row["tflite_ratio"] = times_worse(row["tflite"]["max"], row["reference"]["max"])
    if tflite is not None:
        row["driver_vs_tflite"] = times_worse(row["driver"]["max"], row["tflite"]["max"])
    return row


def _worst(rows: list[dict], key: str) -> float | None:
    """The largest finite-or-infinite ``key`` over rows (None when no row has one)."""
    values = [r[key] for r in rows if r.get(key) is not None]
    return max(values, default=None)


def three_way(imported: ImportedModel, inputs, driver_outputs, tflite_outputs=None, *, names=None,
              tflite_label: str = "") -> dict:
    """The report's ``three_way`` dict for one model and input set (``mlts.json``, schema in
    :mod:`reports.mlts`): ``outputs`` (:func:`output_precision` per TFLite graph output,
    named by ``names`` or the imported tensor names), ``ratio`` / ``tflite_ratio`` /
    ``driver_vs_tflite`` (the worst over outputs), ``truth_s`` / ``reference_s`` (seconds),
    ``truth``, ``reference``, ``tflite`` (``tflite_label``; "" without TFLite) and
    ``definition`` (what the ratio is). ``driver_outputs`` / ``tflite_outputs``: one array
    per graph output (TFLite's order). Raises what :func:`imported_answers` raises, and
    ValueError when the output counts or an output's element count differ."""
    answers = imported_answers(imported, inputs)
    n = len(imported.outputs)
    if len(driver_outputs) != n or (tflite_outputs is not None and len(tflite_outputs) != n):
        raise ValueError(f"{imported.name}: {len(driver_outputs)} driver outputs"
                         + ("" if tflite_outputs is None else f", {len(tflite_outputs)} TFLite outputs")
                         + f" for {n} model outputs")
    rows = []
    for j, info in enumerate(imported.outputs):
        name = names[j] if names else info.name
        tfl = None if tflite_outputs is None else tflite_outputs[j]
        rows.append(output_precision(j, name, info.dtype, answers.truth[j], answers.reference[j], driver_outputs[j],
                                     tfl))
    return {"outputs": rows, "ratio": _worst(rows, "ratio"), "tflite_ratio": _worst(rows, "tflite_ratio"),
            "driver_vs_tflite": _worst(rows, "driver_vs_tflite"), "truth_s": answers.truth_s,
            "reference_s": answers.reference_s, "truth": TRUTH, "reference": REFERENCE,
            "tflite": tflite_label if tflite_outputs is not None else "", "definition": DEFINITION}


def failed(e: BaseException) -> dict:
    """The ``three_way`` dict of a model whose truth could not be computed: ``error`` (one
    line naming the exception), no outputs, no ratio."""
    return {"outputs": [], "ratio": None, "tflite_ratio": None, "driver_vs_tflite": None,
            "error": f"{type(e).__name__}: {e}".splitlines()[0][:500], "definition": DEFINITION}


__all__ = ["Answers", "DEFINITION", "errors", "failed", "figures", "imported_answers", "output_precision",
           "output_unit", "three_way", "times_worse"]
