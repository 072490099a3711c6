"""Run one sweep on a driver and judge it against the float64 truth.

The model (:func:`sweep_model`) is the operation alone: input 0 a ``[N]`` tensor of the
sweep's inputs (SUBGRAPH_INPUT), its scalar parameters CONSTANT_COPY, one ``[N]`` output.
It runs once through the front end on the driver under test alone, as the CTS runs a model
(:func:`run_on_device`: getSupportedOperationsForDevices, a compilation for that one device,
one synchronous execution into user buffers), so N inputs cost one round trip. The truth
(:func:`truth_of`) is :func:`runtime.precision.truth.float64_outputs` of the same model:
the table's own kernels in float64, quantized outputs rounded once; the operation's error
budget (``OperationDef.error_budget``, None: no budget) is asked of the same use through
the executor's intercept hook.

Judging (:func:`judge`), per element:

* **undefined**, not judged, where NNAPI leaves the result undefined: a NaN input (the spec
  defines no NaN semantics), a NaN truth (outside the function's domain: LOG or SQRT of a
  negative, RSQRT of a negative, SIN of an infinity, HARD_SWISH of -inf; for a quantized
  output, whose truth saturates instead, the real result of the operation's float32 form on
  the dequantized input: :func:`real_results`), and a float converted
  to TENSOR_INT32 outside [-2^31, 2^31) (C++ ``static_cast``, AOSP ``Cast.cpp``: undefined
  behaviour).
* **conformance** (the verdict): AOSP's tolerance for the output type
  (:func:`runtime.testing.criteria.tolerance_for`; the model is relaxed when an operand is
  TENSOR_FLOAT16, as in the AOSP harness): a float within ``atol + rtol * |truth|`` of the
  truth, or equal to the truth rounded to the output type (so an overflow to infinity of
  the correctly rounded result passes); a quantized or integer output within ``atol``
  stored units of the rounded truth (1 quantum; 0 for TENSOR_INT32).
* **error**: float outputs in ULP of the output type (:func:`runtime.precision.ulp.ulp_error`,
  at the budget's scale when it gives one), quantized outputs in quanta, integer outputs in
  units; **grade**: ``within budget`` when every judged element is within the budget's ULP,
  ``over budget`` otherwise, ``no budget`` without one (or for a non-float output).

:func:`summarize` turns a judged sweep into its record (the ``sweep`` field of the outcome
record, the precision page's input): max / mean error, the counts, the histogram over the
input range (:mod:`precision.ranges`), the bins where elements fail or exceed the budget
(merged into ranges), the smallest and largest failing input and the one nearest zero, and
the worst inputs with the argv that replays them (``python -m precision``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.runner import execute_compilation, skip_reason
from runtime import ops
from runtime.nnapi import Compilation, Device, get_supported_operations_for_devices
from runtime.precision.truth import float64_outputs
from runtime.precision.ulp import ulp_error
from runtime.testing.criteria import Tolerance, is_relaxed, tolerance_for
from runtime.testing.frontend import build_model
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L, OperandType, is_float_type, is_quantized_type, operand_dtype

from .cases import SweepCase, sweep_inputs
from .ranges import input_bins, runs

T = OperandType
#: HAL version string of each feature level (the test model's ``min_supported_version``).
HAL_VERSIONS = {1: "V1_0", 2: "V1_1", 3: "V1_2", 4: "V1_3", 5: "AIDL_V1", 6: "AIDL_V2", 7: "AIDL_V3"}
#: Worst inputs a record keeps.
WORST = 8
#: Significant digits of the errors a record keeps.
DIGITS = 6


class SweepSkip(Exception):
    """The driver cannot run the sweep: ``kind`` (a record skip kind: ``feature_level``,
    ``not_implemented``, ``unsupported_by_driver``) and the reason."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def sweep_model(case: SweepCase, inputs: np.ndarray) -> TestModel:
    """The test model of ``case`` on ``inputs`` (a 1-D array of the input type's dtype); the
    output's data is zeros of the output type until :func:`truth_of` fills it."""
    n = int(inputs.shape[0])
    sig = case.signature
    operands = [TestOperand(case.in_type, [n], float(case.in_quant[0]), int(case.in_quant[1]), L.SUBGRAPH_INPUT,
                            1, False, None, np.ascontiguousarray(inputs))]
    params = dict(case.params)
    for k, a in enumerate(sig.inputs[1:], start=1):
        operands.append(TestOperand(a.type, [], 0.0, 0, L.CONSTANT_COPY, 1, False, None,
                                    np.asarray(params[k], operand_dtype(a.type))))
    operands.append(TestOperand(case.out_type, [n], float(case.out_quant[0]), int(case.out_quant[1]),
                                L.SUBGRAPH_OUTPUT, 0, False, None, np.zeros(n, operand_dtype(case.out_type))))
    main = TestSubgraph(operands, [TestOperation(case.operation, list(range(len(sig.inputs))), [len(sig.inputs)])],
                        [0], [len(sig.inputs)])
    return TestModel(case.id.split("/", 1)[1].replace("/", "_"), "precision", "precision",
                     HAL_VERSIONS.get(case.feature_level, "UNKNOWN"), False, False, 0.0, main)


def truth_of(case: SweepCase, tm: TestModel):
    """(float64 truth of the output, the operation's Budget or None) of ``tm`` (see the
    module docstring); the truth rounded to the output type becomes ``tm``'s expected
    output (the harness poisons outputs away from it)."""
    found = []
    opdef = ops.REGISTRY[case.operation]

    def budget(k, ctx, results):
        if opdef.error_budget is not None and is_float_type(case.out_type):
            found.append(opdef.error_budget(ctx))
        return results

    inputs = [tm.main.operands[0].data]
    truth = float64_outputs(to_hal_model(tm), inputs, intercept=budget)[0]
    out = tm.main.operands[tm.main.output_indexes[0]]
    with np.errstate(all="ignore"):
        out.data = np.asarray(truth).astype(operand_dtype(case.out_type))
    return np.asarray(truth), (found[0] if found else None)


def run_on_device(tm: TestModel, device: Device) -> np.ndarray:
    """The output of ``tm`` run on ``device`` alone (see the module docstring). Raises
    :class:`SweepSkip` when the driver cannot be asked (feature level, an operation it does
    not support), NnapiError or :class:`harness.runner.Failure` when a step fails."""
    skip = skip_reason(tm, device)
    if skip:
        raise SweepSkip(*skip)
    model = build_model(tm)
    if not all(get_supported_operations_for_devices(model, [device])):
        raise SweepSkip("unsupported_by_driver", f"driver {device.name} does not support "
                                                 f"{tm.main.operations[0].type.name} with these operand types")
    compilation = Compilation.create_for_devices(model, [device])
    compilation.finish()
    outputs, _ = execute_compilation(compilation, tm, require_timing=False)[0]
    out = tm.main.operands[tm.main.output_indexes[0]]
    dtype = operand_dtype(out.type)
    return np.frombuffer(bytes(outputs[0][:out.data.size * dtype.itemsize]), dtype).copy()


@dataclass
class Judged:
    """A judged sweep, per element: ``undefined`` (not judged), ``error`` (ULP, quanta or
    units; 0 where undefined), ``failing`` (beyond the tolerance), ``over`` (beyond the
    budget); ``why``: reason -> count of the undefined elements; ``unit``; ``tolerance``;
    ``budget`` (Budget or None)."""

    undefined: np.ndarray
    error: np.ndarray
    failing: np.ndarray
    over: np.ndarray
    why: dict
    unit: str
    tolerance: Tolerance
    budget: object = None


def real_results(case: SweepCase, inputs: np.ndarray) -> np.ndarray | None:
    """For a quantized input and output, the real (float64, unquantized) results: the same
    operation's TENSOR_FLOAT32 signature on the dequantized inputs, ``(q - zeroPoint) *
    scale``, through :func:`runtime.precision.truth.float64_outputs`; None for other cases
    or a row without that signature. NaN where the input is outside the function's domain
    (RSQRT of a negative), which the quantized truth hides in a saturated value."""
    if not is_quantized_type(case.out_type) or not is_quantized_type(case.in_type):
        return None
    sig = next((s for s in ops.REGISTRY[case.operation].signatures
                if s.inputs[0].type == T.TENSOR_FLOAT32 and s.outputs[0].type == T.TENSOR_FLOAT32
                and len(s.inputs) == len(case.signature.inputs)), None)
    if sig is None:
        return None
    real = ((inputs.astype(np.float64) - case.in_quant[1]) * case.in_quant[0]).astype(np.float32)
    model = sweep_model(SweepCase(case.operation, sig, case.sweep, case.params), real)
    return np.asarray(float64_outputs(to_hal_model(model), [real])[0], np.float64)


def undefined_elements(case: SweepCase, inputs: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, dict]:
    """(mask, reason -> count) of the elements whose result NNAPI leaves undefined (module
    docstring; for a quantized output the domain is read off :func:`real_results`)."""
    n = inputs.shape[0]
    reasons = {}
    if inputs.dtype.kind == "f":
        reasons["NaN input: NNAPI defines no NaN semantics"] = np.isnan(inputs)
    real = truth if truth.dtype.kind == "f" else real_results(case, inputs)
    if real is not None:
        reasons["NaN result: outside the function's domain"] = np.isnan(real)
    if inputs.dtype.kind == "f" and case.out_type == T.TENSOR_INT32:
        with np.errstate(invalid="ignore"):
            t = np.trunc(inputs.astype(np.float64))
            reasons["float to TENSOR_INT32 outside [-2^31, 2^31): undefined in C++"] = ~((t >= -2.0 ** 31) &
                                                                                            (t < 2.0 ** 31))
    mask = np.zeros(n, bool)
    why = {}
    for reason, m in reasons.items():
        new = m & ~mask
        if new.any():
            why[reason] = int(new.sum())
        mask |= m
    return mask, why


def judge(case: SweepCase, tm: TestModel, inputs: np.ndarray, actual: np.ndarray, truth: np.ndarray,
          budget=None) -> Judged:
    """Judge ``actual`` against ``truth`` element by element (module docstring)."""
    undefined, why = undefined_elements(case, inputs, truth)
    tol = tolerance_for(case.out_type, is_relaxed(tm), tm.name)
    if is_float_type(case.out_type):
        dt = operand_dtype(case.out_type)
        scale = None if budget is None else getattr(budget, "scale", None)
        with np.errstate(all="ignore"):
            a, t = actual.astype(np.float64), truth.astype(np.float64)
            error = ulp_error(a, t, dt, scale)
            rounded = t.astype(dt).astype(np.float64)
            ok = (a == rounded) | (np.abs(a - t) <= tol.atol + tol.rtol * np.abs(t))
        unit = "ULP"
    else:
        diff = np.abs(actual.astype(np.int64) - np.asarray(truth).astype(np.int64)).astype(np.float64)
        error, ok = diff, diff <= tol.atol
        unit = "quanta" if case.out_type != T.TENSOR_INT32 else "units"
    error = np.where(undefined, 0.0, error)
    failing = ~ok & ~undefined
    limit = None if budget is None or not is_float_type(case.out_type) else float(budget.ulps)
    over = (error > limit) & ~undefined if limit is not None else np.zeros_like(undefined)
    return Judged(undefined, error, failing, over, why, unit, tol, budget if limit is not None else None)


def _num(x) -> float | str:
    """A finite number rounded to :data:`DIGITS` significant digits; ``"inf"`` / ``"nan"``
    otherwise (JSON has neither)."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(f"{x:.{DIGITS}g}")


def _value(x) -> float | int | str:
    """An input, actual or truth value exactly (floats as Python floats; infinities and NaN as
    text)."""
    if isinstance(x, (np.floating, float)):
        return _num(x) if not math.isfinite(float(x)) else float(x)
    return int(x)


def bits_text(x) -> str:
    """The bit pattern of a float16 / float32 value (``0x4900``), or the stored integer."""
    arr = np.asarray(x)
    if arr.dtype.kind != "f":
        return str(int(arr))
    width = arr.dtype.itemsize * 2
    return f"0x{int(arr.view(np.uint16 if arr.dtype.itemsize == 2 else np.uint32)):0{width}x}"


def grade(j: Judged) -> str:
    """``within budget``, ``over budget`` or ``no budget`` (module docstring)."""
    if j.budget is None:
        return "no budget"
    return "over budget" if j.over.any() else "within budget"


def summarize(case: SweepCase, mode: str, inputs: np.ndarray, actual: np.ndarray, truth: np.ndarray,
              j: Judged) -> dict:
    """The sweep's record (the ``sweep`` field; module docstring)."""
    judged = ~j.undefined
    err = j.error[judged]
    finite = err[np.isfinite(err)]
    bins = input_bins(inputs, *case.in_quant)
    nb = len(bins.labels)
    idx = bins.index
    count = np.bincount(idx[judged], minlength=nb)
    with np.errstate(invalid="ignore"):
        ok_err = np.where(judged & np.isfinite(j.error), j.error, 0.0)
        total = np.bincount(idx, weights=ok_err, minlength=nb)
        n_finite = np.bincount(idx, weights=(judged & np.isfinite(j.error)).astype(float), minlength=nb)
    bin_max = np.full(nb, 0.0)
    np.maximum.at(bin_max, idx[judged], j.error[judged])
    fails = np.bincount(idx, weights=j.failing.astype(float), minlength=nb).astype(int)
    over = np.bincount(idx, weights=j.over.astype(float), minlength=nb).astype(int)
    undefined = np.bincount(idx, weights=j.undefined.astype(float), minlength=nb).astype(int)
    keep = (count + undefined) > 0
    labels = [lab for lab, k in zip(bins.labels, keep) if k]
    hist = {"labels": labels, "n": [int(c) for c, k in zip(count, keep) if k],
            "undefined": [int(u) for u, k in zip(undefined, keep) if k],
            "max": [_num(m) for m, k in zip(bin_max, keep) if k],
            "mean": [_num(t / f) if f else 0.0 for t, f, k in zip(total, n_finite, keep) if k],
            "fail": [int(f) for f, k in zip(fails, keep) if k], "over": [int(o) for o, k in zip(over, keep) if k]}
    order = np.lexsort((np.arange(len(inputs)), ~j.failing, -np.where(judged, j.error, -1.0)))
    worst = [int(i) for i in order[:WORST] if judged[i] and j.error[i] > 0]
    in_dt = inputs.dtype
    record = {
        "case": case.id, "operation": case.operation.name, "types": case.types, "in_type": case.in_type.name,
        "out_type": case.out_type.name, "sweep": case.sweep, "pair": case.pair, "mode": mode,
        "in_quant": list(case.in_quant), "out_quant": list(case.out_quant),
        "params": {str(k): v for k, v in case.params},
        "unit": j.unit, "elements": int(len(inputs)), "judged": int(judged.sum()),
        "undefined": int(j.undefined.sum()), "undefined_why": j.why,
        "max": _num(err.max()) if err.size else 0.0, "mean": _num(finite.mean()) if finite.size else 0.0,
        "infinite": int((~np.isfinite(err)).sum()),
        "tolerance": {"atol": j.tolerance.atol, "rtol": j.tolerance.rtol, "exact": j.tolerance.exact},
        "failing": int(j.failing.sum()), "fail_ranges": runs(np.asarray(fails)[keep] > 0, labels),
        "budget": None if j.budget is None else _num(j.budget.ulps),
        "budget_source": "" if j.budget is None else str(getattr(j.budget, "source", "")),
        "grade": grade(j), "over_budget": int(j.over.sum()),
        "over_ranges": runs(np.asarray(over)[keep] > 0, labels),
        "worst_bin": bins.labels[int(np.argmax(bin_max))] if judged.any() and bin_max.max() > 0 else "",
        "worst": [{"input": _value(inputs[i]), "bits": bits_text(inputs[i]), "actual": _value(actual[i]),
                   "truth": _num(truth[i]) if truth.dtype.kind == "f" else int(truth[i]),
                   "error": _num(j.error[i]), "failing": bool(j.failing[i]), "bin": bins.labels[idx[i]]}
                  for i in worst],
        "hist": hist,
    }
    if j.failing.any():
        bad = inputs[j.failing].astype(np.float64) if in_dt.kind == "f" else inputs[j.failing].astype(np.int64)
        record["failing_span"] = [_value(in_dt.type(bad.min())), _value(in_dt.type(bad.max()))]
        record["failing_nearest_zero"] = _value(in_dt.type(bad[np.argmin(np.abs(bad))]))
    record["replay"] = ["python", "-m", "precision", "--case", case.id, "--mode", mode,
                        *[w for i in worst for w in ("--input", bits_text(inputs[i]))]]
    return record


def describe_failure(rec: dict) -> str:
    """The one-paragraph message of a failing sweep: how many elements, where, the worst."""
    tol = rec["tolerance"]
    rule = "exact" if tol["exact"] else f"atol {tol['atol']:g}, rtol {tol['rtol']:g}" if rec["unit"] == "ULP" \
        else f"off by more than {tol['atol']:g} {rec['unit']}"
    head = (f"{rec['operation']} {rec['types']}: {rec['failing']} of {rec['judged']} judged elements beyond AOSP's "
            f"tolerance ({rule}), at inputs in {'; '.join(rec['fail_ranges'])}")
    if "failing_span" in rec:
        head += (f" (failing inputs from {rec['failing_span'][0]} to {rec['failing_span'][1]}, the nearest zero "
                 f"{rec['failing_nearest_zero']})")
    w = next((w for w in rec["worst"] if w["failing"]), None)
    if w:
        head += (f"; worst: input {w['input']} ({w['bits']}): got {w['actual']}, truth {w['truth']} "
                 f"({w['error']} {rec['unit']})")
    return head


def describe_undefined(rec: dict) -> str:
    """Which elements were not judged and why (``""`` when all were)."""
    if not rec["undefined"]:
        return ""
    return (f"{rec['undefined']} element(s) not judged (NNAPI leaves them undefined): "
            + "; ".join(f"{why}: {n}" for why, n in rec["undefined_why"].items()))


def measure_sweep(case: SweepCase, mode: str, device: Device) -> dict:
    """Run sweep ``case`` (inputs of ``mode``, ``full`` or ``quick``) on ``device`` in one
    execution and judge every element against the float64 truth: the record of
    :func:`summarize`. Raises :class:`SweepSkip` when the driver declines the model, and
    :class:`runtime.errors.NnapiError` / :class:`harness.runner.Failure` when it fails to
    run it (the precision suite and ``nncts triage`` both call this)."""
    inputs = sweep_inputs(case, mode)
    tm = sweep_model(case, inputs)
    truth, budget = truth_of(case, tm)
    actual = run_on_device(tm, device)
    return summarize(case, mode, inputs, actual, truth, judge(case, tm, inputs, actual, truth, budget))


def describe_over_budget(rec: dict) -> str:
    """The message of an over-budget sweep under ``--precision strict``: how many elements,
    where, the largest error in ULP."""
    return (f"{rec['operation']} {rec['types']}: {rec['over_budget']} element(s) over the budget of "
            f"{rec['budget']} ULP (--precision strict), at inputs in {'; '.join(rec['over_ranges'])}; "
            f"max {rec['max']} ULP")
