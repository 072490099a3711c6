"""NNAPI accuracy criteria (AOSP ``TestHarness`` / NNAPI driver docs), used by every suite.

Element-wise rule: ``|actual - expected| <= atol + rtol * |expected|``, per operand type:

==========================  ===================================  ========================
type                        atol                                 rtol
==========================  ===================================  ========================
TENSOR_FLOAT32              1e-5                                 5 * 1.1920928955078125e-7
TENSOR_FLOAT32, relaxed     5 * 0.0009765625                     5 * 0.0009765625
TENSOR_FLOAT16              5 * 0.0009765625                     5 * 0.0009765625
8-bit quantized             1 (3 for mobilenet_quantized)        0
16-bit quantized            1                                    0
TENSOR_INT32 / INT32        0 (exact)                            0
TENSOR_BOOL8 / BOOL         exact                                exact
==========================  ===================================  ========================

A float32 model is "relaxed" when ``relaxComputationFloat32toFloat16`` is set or any of its
operands is TENSOR_FLOAT16 (as in the AOSP harness).

RANDOM_MULTINOMIAL test models (``expected_multinomial_distribution_tolerance`` > 0 in the
corpus, ``TestModel.multinomial_tolerance`` here) are judged by distribution, not element
by element: see :func:`multinomial_problems`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..types import OperandType, operand_dtype

T = OperandType
FP32_ATOL = 1e-5
FP32_RTOL = 5 * 1.1920928955078125e-7
FP16_TOL = 5 * 0.0009765625
QUANT8_TYPES = {T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                T.TENSOR_QUANT8_SYMM_PER_CHANNEL}
QUANT16_TYPES = {T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM}


@dataclass(frozen=True)
class Tolerance:
    """Absolute and relative tolerance; ``exact`` compares bit-for-bit values."""

    atol: float
    rtol: float = 0.0
    exact: bool = False


def tolerance_for(operand_type: OperandType, relaxed: bool, name: str = "") -> Tolerance:
    """The tolerance for an output of ``operand_type`` in a model that is ``relaxed`` (or
    has TENSOR_FLOAT16 operands); ``name`` is the test name (mobilenet gets 3 quanta)."""
    t = T(operand_type)
    if t in (T.TENSOR_FLOAT32, T.FLOAT32):
        return Tolerance(FP16_TOL, FP16_TOL) if relaxed else Tolerance(FP32_ATOL, FP32_RTOL)
    if t in (T.TENSOR_FLOAT16, T.FLOAT16):
        return Tolerance(FP16_TOL, FP16_TOL)
    if t in QUANT8_TYPES:
        return Tolerance(3 if "mobilenet" in name else 1)
    if t in QUANT16_TYPES:
        return Tolerance(1)
    return Tolerance(0, 0, exact=True)


def compare(expected: np.ndarray, actual: np.ndarray, tol: Tolerance, max_report: int = 3) -> str | None:
    """None when ``actual`` meets ``tol`` against ``expected``; otherwise a message giving
    the number of bad elements and the first few (index, expected, actual)."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if expected.size != actual.size:
        return f"{actual.size} elements, expected {expected.size}"
    e = expected.reshape(-1)
    a = actual.reshape(-1)
    if tol.exact:
        bad = e != a
    else:
        ef, af = e.astype(np.float64), a.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~(np.abs(af - ef) <= tol.atol + tol.rtol * np.abs(ef))
    n_bad = int(np.count_nonzero(bad))
    if n_bad == 0:
        return None
    idx = np.flatnonzero(bad)[:max_report]
    shape = expected.shape if expected.ndim else (1,)
    details = ", ".join(f"[{','.join(map(str, np.unravel_index(i, shape)))}] expected "
                        f"{e[i].item()!r} got {a[i].item()!r}" for i in idx)
    return f"{n_bad} of {e.size} elements off (atol={tol.atol}, rtol={tol.rtol}): {details}"


def is_relaxed(tm) -> bool:
    """Whether test model ``tm`` is judged with relaxed float32 tolerances: its
    ``is_relaxed`` flag is set or any main-subgraph operand is TENSOR_FLOAT16."""
    return bool(tm.is_relaxed) or any(o.type == T.TENSOR_FLOAT16 for o in tm.main.operands)


def multinomial_problems(tm, outputs, dims) -> list[str]:
    """Problems with the samples of a RANDOM_MULTINOMIAL test model ``tm`` (one operation,
    one input: logits [batches, classes], one output: TENSOR_INT32 samples [batches,
    samples]); ``outputs``/``dims`` as for :func:`judge`.

    The AOSP harness (``expectMultinomialDistributionWithinTolerance``): every sample is a
    class index, and for every class the observed frequency count / samples is within
    ``tm.multinomial_tolerance`` (absolute) of the expected probability exp(logit) / sum of
    exp(logits). This check does it per batch row (the harness pools the counts of all rows
    and reads row b of the logits at offset batches * b, which only agrees for one row, the
    only case in the CTS); probabilities are computed in float64 as exp(logit - max) over
    the finite logits (0 for a non-finite one), the kernel's distribution."""
    ops_ = tm.main.operations
    if len(ops_) != 1 or len(tm.main.input_indexes) != 1 or len(tm.main.output_indexes) != 1:
        return ["multinomial check: the model must have one operation, one input and one output"]
    logits = tm.main.operands[tm.main.input_indexes[0]].data
    if logits is None or logits.ndim != 2 or len(dims[0]) != 2:
        return ["multinomial check: logits and samples must be 2-D"]
    batches, classes = logits.shape
    n = int(np.prod(dims[0]))
    if int(dims[0][0]) != batches:
        return [f"output 0: {dims[0][0]} rows of samples, expected {batches}"]
    samples = np.frombuffer(bytes(outputs[0][:n * 4]), "<i4").reshape(batches, -1)
    if samples.shape[1] == 0:
        return ["output 0: no samples"]
    bad = (samples < 0) | (samples >= classes)
    if bad.any():
        return [f"output 0: {int(bad.sum())} samples are not class indexes in [0, {classes}), "
                f"e.g. {samples[bad][0]}"]
    problems = []
    for b in range(batches):
        row = np.asarray(logits[b], np.float64)
        finite = np.isfinite(row)
        weights = np.where(finite, np.exp(row - (row[finite].max() if finite.any() else 0)), 0.0)
        expected = weights / weights.sum()
        observed = np.bincount(samples[b], minlength=classes) / samples.shape[1]
        off = np.flatnonzero(np.abs(observed - expected) > tm.multinomial_tolerance)
        if off.size:
            details = ", ".join(f"class {c}: frequency {observed[c]:.4f}, probability "
                                f"{expected[c]:.4f}" for c in off[:3])
            problems.append(f"output 0 row {b}: {off.size} classes off by more than "
                            f"{tm.multinomial_tolerance:g}: {details}")
    return problems


def zero_sized_problem(operand, dims) -> str:
    """For an expected zero-sized output (``operand.data`` None and a 0 among its declared
    dimensions, corpus README): why the reported ``dims`` are wrong ("" when they are right:
    same rank, every declared non-zero dimension matched, and no element at all). Other
    outputs: always ""."""
    declared = list(operand.dimensions)
    if operand.data is not None or 0 not in declared:
        return ""
    dims = list(dims or [])
    if len(dims) != len(declared) or any(d != 0 and a != d for a, d in zip(dims, declared)) \
            or 0 not in dims:
        return f"dimensions {dims}, expected a zero-sized tensor of dimensions {declared}"
    return ""


def judge(tm, outputs, dims) -> list[str]:
    """Problems with the results of one execution of test model ``tm`` (empty when it
    passes): ``outputs[j]`` holds output j's bytes (at least its expected size),
    ``dims[j]`` its reported dimensions. An output with an expected value must have the
    expected dimensions and meet :func:`tolerance_for` (relaxed per :func:`is_relaxed`);
    ignored outputs are only checked for their dimensions. A RANDOM_MULTINOMIAL model
    (``tm.multinomial_tolerance`` > 0) is judged by :func:`multinomial_problems` instead of
    the element-wise rule. Shared by the CTS, the VTS and ``runtime.tools.refcheck``."""
    relaxed = is_relaxed(tm)
    problems = []
    multinomial = (getattr(tm, "multinomial_tolerance", 0) or 0) > 0
    for j, idx in enumerate(tm.main.output_indexes):
        o = tm.main.operands[idx]
        if o.data is not None and list(o.data.shape) != list(dims[j]):
            problems.append(f"output {j}: dimensions {list(dims[j])}, expected {list(o.data.shape)}")
            continue
        problem = zero_sized_problem(o, dims[j])
        if problem:
            problems.append(f"output {j}: {problem}")
            continue
        if o.is_ignored or o.data is None or multinomial:
            continue
        dtype = operand_dtype(o.type)
        actual = np.frombuffer(bytes(outputs[j][:o.data.size * dtype.itemsize]), dtype)
        msg = compare(o.data, actual, tolerance_for(o.type, relaxed, tm.name))
        if msg:
            problems.append(f"output {j} ({T(o.type).name}): {msg}")
    if multinomial and not problems:
        problems += multinomial_problems(tm, outputs, dims)
    return problems
