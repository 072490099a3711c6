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


def judge(tm, outputs, dims, ambiguous=None) -> list[str]:
    """Problems with the results of one execution of test model ``tm`` (empty when it
    passes): ``outputs[j]`` holds output j's bytes (at least its expected size),
    ``dims[j]`` its reported dimensions. An output with an expected value must have the
    expected dimensions and meet :func:`tolerance_for` (relaxed per :func:`is_relaxed`);
    ignored outputs are only checked for their dimensions. A RANDOM_MULTINOMIAL model
    (``tm.multinomial_tolerance`` > 0) is judged by :func:`multinomial_problems` instead of
    the element-wise rule; a model naming a criteria set (``tm.criteria``: random-graph
    reproducers) by :func:`aggregate_problems` with that set. ``ambiguous``: None, or per
    output None or a mask of elements with more than one right answer, left out
    (``runtime.precision.decisions``; random graphs). Shared by the CTS, the VTS, random
    graphs and ``runtime.tools.refcheck``."""
    relaxed = is_relaxed(tm)
    aggregate = CRITERIA.get(getattr(tm, "criteria", "") or "")
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
        mask = None if ambiguous is None else ambiguous[j]
        if aggregate is not None:
            problems += [f"output {j} ({T(o.type).name}): {p}"
                         for p in aggregate_problems(o.type, o.data, actual, aggregate, mask)]
            continue
        expected = o.data
        if mask is not None:
            keep = ~np.asarray(mask, bool).reshape(-1)
            expected, actual = expected.reshape(-1)[keep], actual[keep]
        msg = compare(expected, actual, tolerance_for(o.type, relaxed, tm.name))
        if msg:
            problems.append(f"output {j} ({T(o.type).name}): {msg}")
    if multinomial and not problems:
        problems += multinomial_problems(tm, outputs, dims)
    return problems


# --- aggregate criteria of random graphs (AOSP TestRandomGraph) ------------------------

@dataclass(frozen=True)
class Criterion:
    """AOSP ``AccuracyCriterion`` for one operand type: every element within ``atol + rtol *
    |expected|``; over an output of at least :data:`MIN_ELEMENTS_FOR_AGGREGATES` judged
    elements, ``|bias|`` (mean difference) and ``mse`` (mean squared difference) within bounds,
    differences relative (divided by max(1, |expected|)) for floats and in quanta for
    quantized types; ``mean_error``: nncts's tighter bound on ``|bias|`` of quantized outputs
    (see :data:`QUANT_MEAN_ERROR_BOUND`). None: not checked."""

    atol: float
    rtol: float = 0.0
    bias: float | None = None
    mse: float | None = None
    mean_error: float | None = None


@dataclass(frozen=True)
class AccuracyCriteria:
    """AOSP ``AccuracyCriteria``: one :class:`Criterion` per type family. TENSOR_BOOL8 is
    always compared exactly."""

    name: str
    float32: Criterion
    float16: Criterion
    int32: Criterion
    quant8: Criterion
    quant16: Criterion

    def for_type(self, t: OperandType) -> Criterion | None:
        t = T(t)
        if t in (T.TENSOR_FLOAT32, T.FLOAT32):
            return self.float32
        if t in (T.TENSOR_FLOAT16, T.FLOAT16):
            return self.float16
        if t in QUANT8_TYPES:
            return self.quant8
        if t in QUANT16_TYPES:
            return self.quant16
        if t in (T.TENSOR_INT32, T.INT32, T.UINT32):
            return self.int32
        return None  # booleans: exact


#: The tighter bound on the mean error (|bias|, in quanta) of a quantized output. AOSP's
#: quantized bias bounds (0.1 strict, 1.2 medium, 1.5 relaxed and convolution, 2 for
#: graphs) let a driver whose every output is one quantum high pass every criterion but
#: the strict one. Measured with ``python -m random_graph.calibrate --seeds 50`` (268
#: quantized configurations, 13,400 graphs): the reference and the sample variants 0;
#: ``sample-fixed-point`` (TFLite's integer requantization) at most 0.21 on single
#: operations (99th percentile 0.03-0.04), 0.07 on 5-operation graphs, 0.52 on
#: 40-operation graphs (a rounding difference early in a long chain spreads; 99th
#: percentile 0.06), hence :data:`LARGE_GRAPH_MEAN_ERROR_BOUND` there. A CONV_2D one quantum
#: high measures 0.98 to 1.0 on every one of its 1,200 single-operation outputs, and at
#: least 0.667 on the graph outputs it reaches (0.78 in 5-operation graphs).
QUANT_MEAN_ERROR_BOUND = 0.5
#: The mean-error bound of 40-operation graphs: between the largest correct figure (0.517:
#: a FULLY_CONNECTED whose outputs share one accumulator in a rounding-tie window) and the
#: smallest one-quantum-high figure (0.667).
LARGE_GRAPH_MEAN_ERROR_BOUND = 0.6
#: AOSP judges bias and MSE only over outputs with at least this many judged elements.
MIN_ELEMENTS_FOR_AGGREGATES = 10


def _q(bias, mse, atol, mean_error=QUANT_MEAN_ERROR_BOUND):
    return Criterion(atol, 0.0, bias, mse, mean_error)


def _f(bias, mse, atol, rtol):
    return Criterion(atol, rtol, bias, mse)


_INT32 = Criterion(1)
#: AOSP TestRandomGraph's criteria sets (its values, by the set's name).
STRICT = AccuracyCriteria("strict", _f(1e-7, 1e-10, 1e-6, 1e-6), _f(1e-4, 1e-8, 1e-3, 1e-3), _INT32,
                          _q(0.1, 0.1, 1), _q(0.1, 0.1, 1))
MEDIUM = AccuracyCriteria("medium", _f(1e-6, 1e-8, 1e-5, 1e-5), _f(1e-3, 1e-5, 1e-2, 1e-2), _INT32,
                          _q(1.2, 1.2, 2), _q(1.2, 1.2, 2))
RELAXED = AccuracyCriteria("relaxed", _f(3e-5, 1e-6, 1e-3, 1e-3), _f(5e-3, 1e-3, 1.0, 1.0), _INT32,
                           _q(1.5, 1.5, 10), _q(1.5, 1.5, 10))
CONVOLUTION = AccuracyCriteria("convolution", _f(4e-4, 1e-5, 2e-2, 2e-2), _f(5e-2, 1e-2, 1.0, 1.0), _INT32,
                               _q(1.5, 1.5, 10), _q(1.5, 1.5, 10))
SMALL_GRAPH = AccuracyCriteria("small graph", _f(4e-4, 1e-5, 1e-2, 1e-2), _f(5e-2, 1e-2, 1.0, 1.0), _INT32,
                               _q(2, 2, 12), _q(2, 2, 12))
LARGE_GRAPH = AccuracyCriteria("large graph", _f(1e-2, 1e-4, 1e-1, 1e-1), _f(1e-1, 5e-2, 1.0, 1.0), _INT32,
                               _q(2, 2, 12, LARGE_GRAPH_MEAN_ERROR_BOUND),
                               _q(2, 2, 12, LARGE_GRAPH_MEAN_ERROR_BOUND))
CRITERIA = {c.name: c for c in (STRICT, MEDIUM, RELAXED, CONVOLUTION, SMALL_GRAPH, LARGE_GRAPH)}

#: AOSP TestRandomGraph's criteria set of each single-operation test (by operation name;
#: where its feature levels disagree, the latest: DIV is medium from 1.3). Operations AOSP
#: does not generate take :data:`DEFAULT_SINGLE_CRITERIA`, convolution-like ones CONVOLUTION.
SINGLE_OPERATION_CRITERIA = {
    **dict.fromkeys("ADD MUL SUB DIV FLOOR RELU RELU1 RELU6 CONCATENATION DEQUANTIZE ABS NEG MAXIMUM "
                    "MINIMUM PRELU QUANTIZE CAST SPLIT ELU HARD_SWISH".split(), MEDIUM),
    **dict.fromkeys("LOGISTIC TANH SOFTMAX L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION AVERAGE_POOL_2D "
                    "L2_POOL_2D MAX_POOL_2D RESIZE_BILINEAR FULLY_CONNECTED MEAN EXP LOG RSQRT SIN SQRT POW "
                    "REDUCE_ALL REDUCE_ANY REDUCE_MAX REDUCE_MIN REDUCE_PROD REDUCE_SUM INSTANCE_NORMALIZATION "
                    "LOG_SOFTMAX RESIZE_NEAREST_NEIGHBOR ROI_ALIGN ROI_POOLING HEATMAP_MAX_KEYPOINT".split(),
                    RELAXED),
    **dict.fromkeys("CONV_2D DEPTHWISE_CONV_2D GROUPED_CONV_2D TRANSPOSE_CONV_2D".split(), CONVOLUTION),
    **dict.fromkeys("DEPTH_TO_SPACE SPACE_TO_DEPTH EMBEDDING_LOOKUP HASHTABLE_LOOKUP RESHAPE BATCH_TO_SPACE_ND "
                    "SPACE_TO_BATCH_ND PAD TRANSPOSE SQUEEZE STRIDED_SLICE ARGMAX ARGMIN EQUAL GREATER "
                    "GREATER_EQUAL LESS LESS_EQUAL LOGICAL_AND LOGICAL_NOT LOGICAL_OR NOT_EQUAL CHANNEL_SHUFFLE "
                    "PAD_V2 EXPAND_DIMS TILE GATHER SELECT TOPK_V2 SLICE FILL RANK".split(), STRICT),
}
#: Operations AOSP's random graphs leave out, by kind: recurrent and detection pipelines
#: accumulate like a convolution; the rest (data movement, FL4+ operations) are exact.
CONVOLUTION_LIKE = frozenset(
    "LSTM RNN SVDF UNIDIRECTIONAL_SEQUENCE_LSTM BIDIRECTIONAL_SEQUENCE_LSTM UNIDIRECTIONAL_SEQUENCE_RNN "
    "BIDIRECTIONAL_SEQUENCE_RNN QUANTIZED_16BIT_LSTM QUANTIZED_LSTM BATCH_MATMUL AXIS_ALIGNED_BBOX_TRANSFORM "
    "BOX_WITH_NMS_LIMIT GENERATE_PROPOSALS DETECTION_POSTPROCESSING".split())
DEFAULT_SINGLE_CRITERIA = MEDIUM


def single_operation_criteria(operation_name: str) -> AccuracyCriteria:
    """The criteria set of a single-operation random graph of ``operation_name``."""
    if operation_name in SINGLE_OPERATION_CRITERIA:
        return SINGLE_OPERATION_CRITERIA[operation_name]
    return CONVOLUTION if operation_name in CONVOLUTION_LIKE else DEFAULT_SINGLE_CRITERIA


def _skipped(t: T, expected: np.ndarray) -> np.ndarray:
    """Elements AOSP leaves out of the comparison: non-finite expected values, float32
    beyond 1e3 and float16 beyond 1e2 in magnitude. (AOSP's harness reads its float16 test
    as "float16 or beyond 1e2" and so skips every float16 element; nncts does not.)"""
    if t in (T.TENSOR_FLOAT32, T.FLOAT32):
        return ~np.isfinite(expected) | (np.abs(expected) > 1e3)
    if t in (T.TENSOR_FLOAT16, T.FLOAT16):
        return ~np.isfinite(expected) | (np.abs(expected) > 1e2)
    return np.zeros(expected.shape, bool)


def aggregate_problems(operand_type: OperandType, expected: np.ndarray, actual: np.ndarray,
                       c: AccuracyCriteria, ambiguous: np.ndarray | None = None) -> list[str]:
    """Problems of one output judged with criteria set ``c`` (AOSP ``expectNear``): the
    per-element bound, then bias and MSE and (quantized) the mean-error bound over outputs
    of at least :data:`MIN_ELEMENTS_FOR_AGGREGATES` judged elements. Empty when it passes.
    ``ambiguous``: optional mask of elements left out (more than one right answer)."""
    t = T(operand_type)
    e = np.asarray(expected).reshape(-1)
    a = np.asarray(actual).reshape(-1)
    if e.size != a.size:
        return [f"{a.size} elements, expected {e.size}"]
    crit = c.for_type(t)
    if ambiguous is not None:
        keep = ~np.asarray(ambiguous, bool).reshape(-1)
        e, a = e[keep], a[keep]
    if crit is None:
        msg = compare(e, a, Tolerance(0, 0, exact=True))
        return [msg] if msg else []
    ef, af = e.astype(np.float64), a.astype(np.float64)
    keep = ~_skipped(t, ef)
    ef, af = ef[keep], af[keep]
    problems = []
    msg = compare(ef, af, Tolerance(crit.atol, crit.rtol))
    if msg:
        problems.append(msg)
    if ef.size < MIN_ELEMENTS_FOR_AGGREGATES:
        return problems
    diff = af - ef
    if t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.FLOAT32, T.FLOAT16):
        diff = diff / np.maximum(1.0, np.abs(ef))
    with np.errstate(invalid="ignore", over="ignore"):
        bias, mse = float(np.mean(diff)), float(np.mean(diff * diff))
    if crit.bias is not None and not abs(bias) <= crit.bias:
        problems.append(f"bias {bias:.4g} beyond {crit.bias:g} ({c.name} criteria)")
    if crit.mse is not None and not mse <= crit.mse:
        problems.append(f"MSE {mse:.4g} beyond {crit.mse:g} ({c.name} criteria)")
    if crit.mean_error is not None and not abs(bias) <= crit.mean_error and \
            (crit.bias is None or abs(bias) <= crit.bias):
        problems.append(f"mean error {bias:+.4g} quanta beyond nncts's bound {crit.mean_error:g} "
                        f"(every output shifted the same way)")
    return problems
