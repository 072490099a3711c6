"""Error budgets of the operation table's float outputs: the builders the rows declare as
``error_budget=`` (``OperationDef.error_budget(ctx) -> Budget``).

A budget bounds, in ULP of the output's format, how far a correct implementation's float
result may lie from the real (float64) result of one use of an operation, given its exact
inputs. :mod:`runtime.precision.budgets` composes them along a model and grades drivers by
them; this module lives beside the table (the rows import it; the precision package stands
above the operations and re-exports :class:`Budget`).

Conventions, and where each number comes from:

- WebNN's conformance tests (web-platform-tests ``webnn/resources/utils.js``,
  ``PrecisionMetrics``; after webmachinelearning/webnn#265) bound each operation by a ULP
  *distance from the golden rounded to the output type*; against the real result that is
  the same number plus 0.5 (the golden's own rounding): a WebNN tolerance n is n + 0.5 here.
- The OpenCL C specification (3.0, section 7.4, tables "ULP values for single precision
  built-in math functions" and "... half precision ..."; the bounds the OpenCL CTS
  ``math_brute_force/function_list.cpp`` tests) bounds the error against the infinitely
  precise result: an OpenCL bound n is n here.
- IEEE 754-2019 section 4.3: a correctly rounded result is within 0.5 ULP of the real one:
  exact operations (ABS, NEG, the clamps, MAXIMUM / MINIMUM, FLOOR), conversions
  (convertFormat, section 5.4.2: CAST, DEQUANTIZE's single product) and data movement
  (WebNN: 0 ULP for concat, gather, pad, reshape, slice, split, tile, transpose ...) get 0.5.
- Where both tables bound an element-wise function the larger bound is taken (a driver
  meeting either table is correct). float16 budgets are the tables' float16 columns where
  they differ (EXP 2, LOG 2, SIN 2, RSQRT 1, SQRT 1.5, POW 4, LOGISTIC 10.5, RESIZE_BILINEAR
  10.5); a float32 output of a relaxed model (``relaxComputationFloat32toFloat16``) is
  computed at float16 precision and gets the float16 column (:func:`half_precision`).
- Accumulations (convolutions, FULLY_CONNECTED, BATCH_MATMUL, the reductions, average
  pooling, bilinear interpolation, ROI_ALIGN, the recurrent cells) carry a per-element
  ``scale``: the same accumulation over absolute terms (the row's own kernel on ``|x|``,
  ``|w|``, ``|b|`` with the fused activation NONE: :func:`abs_terms`). The classical bound
  of a computed sum of n terms is relative to the sum of their absolute values (Higham,
  *Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 4.2): an output near
  zero by cancellation has its ULP taken at that scale, not at its own tiny magnitude.
- ``gain`` says how errors already in the inputs carry to the output, in relative terms (1
  for linear maps, whose inherited errors the scale absorbs, and for data movement; POW's
  condition number ``max(|y|, |y ln x|)``; SOFTMAX ``2 |beta| max|x|``). A unary function
  instead gives its ``slope`` ``|f'(x)|`` per element: an error the input carries moves the
  output by ``slope * (input magnitude)`` in absolute terms, and where that exceeds
  ``|f(x)|`` (condition number above 1, e.g. LOG near 1, EXP of large x) the output's
  magnitude is raised to it rather than its ULP count multiplied, which stays finite at the
  function's zeros (only when the input carries an error). ``moves``: output elements are
  input elements (data movement, selection), so their magnitudes move with them.
  ``normwise``: the ULP is taken at the largest magnitude of the output tensor
  (compositions whose intermediate values exceed their results: the detection operations,
  HEATMAP_MAX_KEYPOINT, the LSTM cells).

Budgets need the inputs' values (scales, gains, data-dependent counts): call a builder's
function on the context of an execution (input views with values), e.g. from the
executor's ``intercept`` hook. Errors: a context without the values a formula reads raises
OperationError (``ctx.value``); :mod:`runtime.precision.budgets` then grades "no budget".
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..types import OperandType, OperationType
from .base import REGISTRY, OpContext

T = OperandType
OP = OperationType
FLOAT_TENSORS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
FLOAT_TYPES = FLOAT_TENSORS + (T.FLOAT32, T.FLOAT16)

WEBNN = "WebNN conformance tests (wpt webnn/resources/utils.js PrecisionMetrics; tolerance n -> n + 0.5)"
OPENCL = "OpenCL C 3.0 section 7.4 ULP tables (OpenCL-CTS math_brute_force/function_list.cpp)"
IEEE = "IEEE 754-2019 4.3: correctly rounded, 0.5 ULP"
HIGHAM = "scale: the sum of absolute terms (Higham 2002, section 4.2)"


@dataclass(frozen=True)
class Budget:
    """An error budget of one use of an operation: ``ulps``, the bound in ULP of the output
    format (float32, or float16 for TENSOR_FLOAT16 and relaxed float32 outputs) against the
    real result; ``scale``: None, per output element (broadcastable to the output) the
    magnitude the ULP is taken at when larger than the truth (``runtime.precision.ulp.
    ulp_error``'s ``scale``), or a tuple with one such entry per output; ``source``: where
    the formula comes from; ``gain``: the factor on relative errors the inputs already carry
    (see the module docstring); ``moves``: the outputs are input elements moved or selected;
    ``normwise``: the ULP is taken at the output tensor's largest magnitude; ``slope``:
    for a unary function, ``|f'(x)|`` per element (see the module docstring)."""

    ulps: float
    scale: np.ndarray | tuple | None = None
    source: str = ""
    gain: float = 1.0
    moves: bool = False
    normwise: bool = False
    slope: np.ndarray | None = None

    def scale_of(self, j: int, truth: np.ndarray) -> np.ndarray | None:
        """The magnitude (float64 array of ``truth``'s shape, or None) output ``j``'s errors
        are taken at, given its real values ``truth``: the per-output entry of ``scale``,
        broadcast, and with ``normwise`` at least the largest finite ``|truth|``."""
        s = self.scale[j] if isinstance(self.scale, tuple) else self.scale
        t = np.asarray(truth, np.float64)
        out = None if s is None else np.broadcast_to(np.abs(np.asarray(s, np.float64)), t.shape)
        if self.normwise and t.size:
            finite = np.abs(t[np.isfinite(t)])
            top = np.full(t.shape, finite.max() if finite.size else 0.0)
            out = top if out is None else np.maximum(out, top)
        return out


@dataclass(frozen=True)
class Ulps:
    """A bound per format: ``f32`` for float32 results, ``f16`` for float16 (and relaxed
    float32) ones."""

    f32: float
    f16: float

    def of(self, ctx: OpContext) -> float:
        return self.f16 if half_precision(ctx) else self.f32


def half_precision(ctx: OpContext) -> bool:
    """Whether the use computes at float16 precision: a TENSOR_FLOAT16 output, or a float32
    one in a relaxed model (``ctx.relaxed``, NNAPI ``relaxComputationFloat32toFloat16``)."""
    types = [o.type for o in ctx.outputs if o.type in FLOAT_TYPES]
    return bool(types) and (types[0] in (T.TENSOR_FLOAT16, T.FLOAT16) or ctx.relaxed)


def slot_names(ctx: OpContext) -> list[str]:
    """The signature slot name of each input (``""`` where no signature matches)."""
    opdef = REGISTRY.get(ctx.operation)
    s = opdef.match(ctx.inputs, ctx.outputs) if opdef is not None else None
    names = [a.name for a in s.inputs] if s is not None else []
    return names + [""] * (len(ctx.inputs) - len(names))


def named(ctx: OpContext, name: str, default=None):
    """The value (Python scalar for a scalar slot, else the array) of the input slot
    ``name``, or ``default`` when the use has no such slot or it is omitted."""
    for i, n in enumerate(slot_names(ctx)):
        if n == name and ctx.has_value(i):
            v = ctx.inputs[i].value
            return v.item() if np.ndim(v) == 0 else v
    return default


def output_shapes(ctx: OpContext) -> list[tuple[int, ...]]:
    """The output dimensions of the use (the row's ``prepare``)."""
    return [tuple(map(int, s)) for s in REGISTRY[ctx.operation].prepare(ctx)]


def abs_terms(ctx: OpContext, slots: tuple[str, ...] | None = None) -> list[np.ndarray]:
    """The row's own kernel on absolute values: every float tensor input (or those of
    ``slots``, by signature name) replaced by ``|value|`` and a fused ``activation`` by 0
    (NONE); one float64 array per output. For a sum of products (convolution, matrix
    product, pooling average, interpolation, reduction) that is, per output element, the
    sum of the absolute values of its terms."""
    names = slot_names(ctx)
    inputs = []
    for name, v in zip(names, ctx.inputs):
        if v.value is not None and v.type in FLOAT_TENSORS and (slots is None or name in slots):
            v = dataclasses.replace(v, value=np.abs(v.value))
        elif name == "activation" and v.value is not None:
            v = dataclasses.replace(v, value=np.zeros_like(v.value))
        inputs.append(v)
    c = OpContext(ctx.operation, inputs, [dataclasses.replace(o) for o in ctx.outputs], ctx.relaxed)
    opdef = REGISTRY[ctx.operation]
    for view, shape in zip(c.outputs, opdef.prepare(c)):
        view.dims = tuple(shape)
    return [np.abs(np.asarray(r, np.float64)) for r in opdef.execute(c)]


def _max_finite(x: np.ndarray) -> float:
    x = np.abs(np.asarray(x, np.float64))
    x = x[np.isfinite(x)]
    return float(x.max()) if x.size else 0.0


def slope(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``|f'(x)|`` per element of ``x`` (float64, central differences with a relative step
    of 1e-6; 0 where not finite)."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        h = np.abs(x) * 1e-6 + 1e-12
        d = np.abs((f(x + h) - f(x - h)) / (2 * h))
    return np.where(np.isfinite(d), d, 0.0)


# --- exact operations and data movement ----------------------------------------------------

def exact(what: str = "data movement") -> Callable[[OpContext], Budget]:
    """0.5 ULP: the outputs are input elements moved or selected (WebNN: 0 ULP for every
    data movement operator, max, min, relu, clamp, abs, neg, floor; 0.5 against the real
    value) or one correctly rounded conversion (IEEE 754-2019 4.3 / 5.4.2: CAST between
    float formats or from integers, FILL of a float scalar). ``what`` names the kind."""
    source = f"{what}: {IEEE}; {WEBNN}: 0"

    def budget(ctx: OpContext) -> Budget:
        return Budget(0.5, source=source, moves=True)
    return budget


def control_flow() -> Callable[[OpContext], Budget]:
    """IF / WHILE add no rounding of their own: their outputs carry the budgets of the
    operations the referenced subgraphs run, composed along the path each value takes
    (iteration after iteration) by :func:`runtime.precision.budgets.test_budget`."""
    def budget(ctx: OpContext) -> Budget:
        return Budget(0.0, source="control flow: the referenced subgraphs' operations, composed", moves=True)
    return budget


# --- element-wise operations ---------------------------------------------------------------

def _sum_scale(ctx: OpContext) -> np.ndarray:
    a, b = (np.abs(np.asarray(v.value, np.float64)) for v in ctx.inputs[:2])
    return a + b


def _has_zero_operand(ctx: OpContext) -> bool:
    """Whether input 0 or 1 is all real zeros (the zero point of a quantized operand)."""
    return any(v.value is not None and v.value.size and np.all(v.value == v.zero_point) for v in ctx.inputs[:2])


def _pow_gain(ctx: OpContext) -> float:
    base, exponent = (np.asarray(v.value, np.float64) for v in ctx.inputs[:2])
    with np.errstate(all="ignore"):
        g = np.maximum(np.abs(exponent), np.abs(exponent * np.log(np.abs(base))))
    return _max_finite(g) if np.all(np.isfinite(g)) else float("inf")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _elu(alpha: float):
    return lambda x: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


def _hard_swish(x):
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


@dataclass(frozen=True)
class _Elementwise:
    """One element-wise function's bound: per format ULPs, the source and the function
    (for its :func:`slope`; None: a binary operation, gain 1)."""

    ulps: Ulps
    source: str
    f: Callable | None = None


_E = _Elementwise
#: Element-wise operations: WebNN tolerance n counts n + 0.5; OpenCL bound n counts n; the
#: larger of the two where both bound the function.
ELEMENTWISE: dict[OperationType, _Elementwise] = {
    OP.ADD: _E(Ulps(1.5, 1.5), f"{WEBNN}: add 1; {HIGHAM} |a| + |b|"),
    OP.SUB: _E(Ulps(1.5, 1.5), f"{WEBNN}: sub 1; {HIGHAM} |a| + |b|"),
    OP.MUL: _E(Ulps(1.5, 1.5), f"{WEBNN}: mul 1 (OpenCL: correctly rounded)"),
    OP.DIV: _E(Ulps(2.5, 2.5), f"{OPENCL}: x / y 2.5; {WEBNN}: div 2"),
    OP.POW: _E(Ulps(32.5, 4.0), f"{WEBNN}: pow float32 32; {OPENCL}: pow float16 4"),
    OP.EXP: _E(Ulps(32.5, 2.0), f"{WEBNN}: exp float32 32; {OPENCL}: exp half 2", np.exp),
    OP.LOG: _E(Ulps(3.0, 2.0), f"{OPENCL}: log 3, half 2", np.log),
    OP.SIN: _E(Ulps(4.0, 2.0), f"{OPENCL}: sin 4, half 2", np.sin),
    OP.RSQRT: _E(Ulps(2.0, 1.0), f"{OPENCL}: rsqrt 2, half 1", lambda x: 1.0 / np.sqrt(x)),
    OP.SQRT: _E(Ulps(3.0, 1.5), f"{OPENCL}: sqrt 3; {WEBNN}: sqrt 1 (float16)", np.sqrt),
    OP.LOGISTIC: _E(Ulps(34.5, 10.5), f"{WEBNN}: sigmoid float32 34, float16 10", _sigmoid),
    OP.TANH: _E(Ulps(16.5, 16.5), f"{WEBNN}: tanh 16 (OpenCL: 5, half 2)", np.tanh),
    OP.HARD_SWISH: _E(Ulps(4.5, 4.5), f"{WEBNN}: hardSwish 4", _hard_swish),
    OP.PRELU: _E(Ulps(1.5, 1.5), f"{WEBNN}: prelu 1"),
}
#: Element-wise operations whose result is exact or one correct rounding.
EXACT_ELEMENTWISE = {OP.ABS: "exact", OP.NEG: "exact", OP.RELU: "exact", OP.RELU1: "exact",
                     OP.RELU6: "exact", OP.MAXIMUM: "selection", OP.MINIMUM: "selection",
                     OP.FLOOR: "exact (discontinuous: see the row's decision)",
                     OP.DEQUANTIZE: "one correctly rounded product (q - zeroPoint) * scale",
                     OP.CAST: "conversion"}


def elementwise(op: OperationType) -> Callable[[OpContext], Budget]:
    """The budget of element-wise ``op`` (:data:`ELEMENTWISE`, :data:`EXACT_ELEMENTWISE`;
    ELU: WebNN elu 18). ADD and SUB take their ULP at ``|a| + |b|`` (cancellation) and are
    exact (0 ULP) when an operand is all zeros (x + 0 = x: the variations' helper ADDs);
    MUL, DIV and PRELU carry their inputs' relative errors with gain 1 each; a unary
    function gives its :func:`slope` (see the module docstring); POW its condition number
    ``max(|y|, |y ln x|)`` as gain. KeyError for an operation without an element-wise
    budget."""
    if op in EXACT_ELEMENTWISE:
        return exact(EXACT_ELEMENTWISE[op])
    if op == OP.ELU:
        spec = _E(Ulps(18.5, 18.5), f"{WEBNN}: elu 18")
    else:
        spec = ELEMENTWISE[op]

    def budget(ctx: OpContext) -> Budget:
        if op in (OP.ADD, OP.SUB):
            if _has_zero_operand(ctx):
                return Budget(0.0, source="x + 0 / x - 0 / 0 - x: exact")
            return Budget(spec.ulps.of(ctx), _sum_scale(ctx), spec.source)
        if op == OP.POW:
            return Budget(spec.ulps.of(ctx), source=spec.source, gain=_pow_gain(ctx))
        f = _elu(float(ctx.scalar(1))) if op == OP.ELU else spec.f
        return Budget(spec.ulps.of(ctx), source=spec.source,
                      slope=None if f is None else slope(f, ctx.value(0)))
    return budget


# --- accumulations -------------------------------------------------------------------------

def _accumulation(ulps: Callable[[OpContext], float], source: str, slots=None) -> Callable[[OpContext], Budget]:
    """A budget of ``ulps(ctx)`` ULP at the sums of absolute terms (:func:`abs_terms` of
    ``slots``), one scale per output."""
    def budget(ctx: OpContext) -> Budget:
        scale = tuple(abs_terms(ctx, slots))
        return Budget(float(ulps(ctx)), scale if len(scale) > 1 else scale[0], f"{source}; {HIGHAM}")
    return budget


def conv(kind: str) -> Callable[[OpContext], Budget]:
    """CONV_2D / GROUPED_CONV_2D (``kind`` "conv"), DEPTHWISE_CONV_2D ("depthwise") and
    TRANSPOSE_CONV_2D ("transpose"): WebNN conv2d / convTranspose2d ``kW * kH * (Cin /
    groups) * 2``, + 1 for the bias addition (as WebNN's gemm adds one for C), + 0.5; the
    filter is [depth_out, kH, kW, depth_in / groups] ([1, kH, kW, depth_out] depthwise:
    Cin / groups = 1). Scale: the convolution of ``|x|`` with ``|w|`` plus ``|b|``."""
    def ulps(ctx: OpContext) -> float:
        dims = ctx.inputs[1].dims
        k = dims[1] * dims[2] * (1 if kind == "depthwise" else dims[3])
        return 2 * k + 1 + 0.5
    return _accumulation(ulps, f"{WEBNN}: conv2d kW*kH*(Cin/groups)*2, + 1 bias")


def fully_connected() -> Callable[[OpContext], Budget]:
    """FULLY_CONNECTED: WebNN gemm ``2K`` + 1 for the bias (C) + 0.5, K = input_size
    (weights [num_units, input_size]). Scale: ``|x| |W|' + |b|``."""
    return _accumulation(lambda ctx: 2 * ctx.inputs[1].dims[1] + 1 + 0.5, f"{WEBNN}: gemm 2K + 1 (bias)")


def batch_matmul() -> Callable[[OpContext], Budget]:
    """BATCH_MATMUL: WebNN matmul ``2K`` + 0.5, K the contracted dimension (the last of
    lhs, or the one before with adj_x). Scale: ``|lhs| |rhs|``."""
    def ulps(ctx: OpContext) -> float:
        dims = ctx.inputs[0].dims
        return 2 * dims[-2 if named(ctx, "adj_x", False) else -1] + 0.5
    return _accumulation(ulps, f"{WEBNN}: matmul 2K")


def _window_cells(ctx: OpContext) -> int:
    return int(named(ctx, "filter_width", 1)) * int(named(ctx, "filter_height", 1))


def average_pool() -> Callable[[OpContext], Budget]:
    """AVERAGE_POOL_2D: WebNN averagePool2d ``window height * width + 2`` + 0.5. Scale:
    the average of ``|x|`` over the window."""
    return _accumulation(lambda ctx: _window_cells(ctx) + 2 + 0.5, f"{WEBNN}: averagePool2d hW + 2")


def pooling(op: OperationType) -> Callable[[OpContext], Budget]:
    """AVERAGE_POOL_2D (:func:`average_pool`), L2_POOL_2D (:func:`l2_pool`) or MAX_POOL_2D
    (a selection: :func:`exact`)."""
    return {OP.AVERAGE_POOL_2D: average_pool, OP.L2_POOL_2D: l2_pool}.get(op, lambda: exact("selection"))()


def l2_pool() -> Callable[[OpContext], Budget]:
    """L2_POOL_2D: WebNN l2Pool2d ``window height * width + 2`` + 0.5 (a sum of squares:
    no cancellation, no scale); gain 1 (the relative errors of the squares halve under the
    square root and average)."""
    def budget(ctx: OpContext) -> Budget:
        return Budget(_window_cells(ctx) + 2 + 0.5, source=f"{WEBNN}: l2Pool2d hW + 2")
    return budget


def _reduced_count(ctx: OpContext) -> int:
    n_out = int(np.prod(output_shapes(ctx)[0], dtype=np.int64))
    return max(1, int(np.prod(ctx.inputs[0].dims, dtype=np.int64)) // max(1, n_out))


def reduction(op: OperationType) -> Callable[[OpContext], Budget] | None:
    """REDUCE_SUM (WebNN reduceSum N), MEAN (reduceMean N + 2), REDUCE_PROD (reduceProduct
    N, gain N: each factor's relative error enters the product), REDUCE_MAX / REDUCE_MIN
    (0: selection); N the number of reduced elements per output, + 0.5. Scale of the sum and
    mean: the same reduction of ``|x|``. None for REDUCE_ALL / REDUCE_ANY (boolean)."""
    if op in (OP.REDUCE_ALL, OP.REDUCE_ANY):
        return None
    if op in (OP.REDUCE_MAX, OP.REDUCE_MIN):
        return exact("selection")
    if op == OP.REDUCE_PROD:
        def budget(ctx: OpContext) -> Budget:
            n = _reduced_count(ctx)
            return Budget(n + 0.5, source=f"{WEBNN}: reduceProduct N", gain=float(n))
        return budget
    extra = 2 if op == OP.MEAN else 0
    return _accumulation(lambda ctx: _reduced_count(ctx) + extra + 0.5,
                         f"{WEBNN}: {'reduceMean N + 2' if extra else 'reduceSum N'}")


def _axis_length(ctx: OpContext) -> int:
    dims = ctx.inputs[0].dims
    axis = int(named(ctx, "axis", -1))
    return int(dims[axis % len(dims)]) if dims else 1


def softmax() -> Callable[[OpContext], Budget]:
    """SOFTMAX: WebNN softmax ``3N + 3`` + 0.5, N the length of the axis (positive terms:
    no scale). Gain ``2 |beta| max|x|``: an absolute input error d moves each output by a
    relative ``|beta| (d_i + sum_k y_k d_k)``."""
    def budget(ctx: OpContext) -> Budget:
        beta = abs(float(named(ctx, "beta", 1.0)))
        return Budget(3 * _axis_length(ctx) + 3 + 0.5, source=f"{WEBNN}: softmax 3N + 3",
                      gain=2 * beta * _max_finite(ctx.value(0)))
    return budget


def log_softmax() -> Callable[[OpContext], Budget]:
    """LOG_SOFTMAX ``y = beta x - m - log(sum exp(beta x - m))``, m the maximum: composed
    from WebNN reduceLogSumExp (``2N + 18`` with N the axis length, the exponentials at
    the exp tolerance) plus one subtraction (1) + 0.5. Scale ``max(1, |beta x - m| + log
    sum)``: the logarithm turns the sum's relative error into an absolute one."""
    def budget(ctx: OpContext) -> Budget:
        n = _axis_length(ctx)
        beta = float(named(ctx, "beta", 1.0))
        axis = int(named(ctx, "axis", -1))
        z = beta * np.asarray(ctx.value(0), np.float64)
        z = z - np.max(z, axis=axis, keepdims=True) if z.size else z
        lse = np.log(np.sum(np.exp(z), axis=axis, keepdims=True)) if z.size else z
        return Budget(2 * n + 18 + 1 + 0.5, np.maximum(1.0, np.abs(z) + lse),
                      f"{WEBNN}: reduceLogSumExp 2N + 18, + 1 subtraction", gain=2 * abs(beta) * _max_finite(z))
    return budget


def l2_normalization() -> Callable[[OpContext], Budget]:
    """L2_NORMALIZATION ``x / sqrt(sum x^2)``: WebNN reduceL2 ``2N + 1`` + div 2 + 0.5, N
    the axis length (a sum of squares: no scale); gain 2 (x in the numerator and the
    norm)."""
    def budget(ctx: OpContext) -> Budget:
        return Budget(2 * _axis_length(ctx) + 3 + 0.5, source=f"{WEBNN}: reduceL2 2N + 1, div 2", gain=2.0)
    return budget


def local_response_normalization() -> Callable[[OpContext], Budget]:
    """LOCAL_RESPONSE_NORMALIZATION ``x / (bias + alpha sum x^2) ^ beta`` over a window of
    N = 2 radius + 1 channels: WebNN reduceSumSquare ``2N`` + the bias addition and alpha
    product (1 each) + pow (WebNN 32, OpenCL half 4) + div 2 (+ 1, + 0.5); gain
    ``1 + 2 |beta|``."""
    def budget(ctx: OpContext) -> Budget:
        n = 2 * int(named(ctx, "radius", 0)) + 1
        beta = abs(float(named(ctx, "beta", 0.5)))
        pow_ulps = Ulps(32.0, 4.0).of(ctx)
        return Budget(2 * n + 1 + 1 + pow_ulps + 2 + 1 + 0.5,
                      source=f"{WEBNN}: reduceSumSquare 2N, pow, div 2", gain=1 + 2 * beta)
    return budget


def instance_normalization() -> Callable[[OpContext], Budget]:
    """INSTANCE_NORMALIZATION ``gamma (x - mean) / sqrt(var + epsilon) + beta`` over the
    N = H * W values of each instance: WebNN reduceMean ``N + 2``, reduceSumSquare ``2N``,
    sqrt 1, div 2, mul 1, add 1 (``3N + 7``, + 0.5; WebNN's own instanceNormalization
    tolerance, 840, is looser for N < 278). Scale ``|gamma| (|x| + |mean|) / sqrt(var +
    epsilon) + |beta|`` (x - mean cancels); gain 2."""
    def budget(ctx: OpContext) -> Budget:
        nchw = bool(named(ctx, "layout", False))
        x = np.asarray(ctx.value(0), np.float64)
        axes = (2, 3) if nchw else (1, 2)
        n = int(np.prod([x.shape[a] for a in axes])) if x.ndim == 4 else 1
        gamma, beta, eps = (float(named(ctx, k, d)) for k, d in (("gamma", 1.0), ("beta", 0.0),
                                                                 ("epsilon", 0.0)))
        if not x.size:
            return Budget(3 * n + 7.5, source=f"{WEBNN}: reduceMean, reduceSumSquare, sqrt, div")
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        with np.errstate(all="ignore"):
            scale = abs(gamma) * (np.abs(x) + np.abs(mean)) / np.sqrt(var + eps) + abs(beta)
        return Budget(3 * n + 7.5, np.where(np.isfinite(scale), scale, 0.0),
                      f"{WEBNN}: reduceMean N + 2, reduceSumSquare 2N, sqrt, div, mul, add", gain=2.0)
    return budget


def resize(bilinear: bool) -> Callable[[OpContext], Budget]:
    """RESIZE_BILINEAR: WebNN resample2d linear (float32 84, float16 10) + 0.5, scale the
    interpolation of ``|x|``; RESIZE_NEAREST_NEIGHBOR: data movement."""
    if not bilinear:
        return exact("nearest-neighbour selection")
    ulps = Ulps(84.5, 10.5)
    return _accumulation(lambda ctx: ulps.of(ctx), f"{WEBNN}: resample2d linear float32 84, float16 10",
                         slots=("input",))


def roi_align() -> Callable[[OpContext], Budget]:
    """ROI_ALIGN: each output averages S bilinear samples (S = the height times width
    sampling ratios, or the adaptive ``ceil(roi size / output size)`` per axis when 0):
    WebNN resample2d linear (84, float16 10) for the samples + averagePool ``S + 2`` + 0.5.
    Scale: the same samples of ``|x|``."""
    ulps = Ulps(84.0, 10.0)

    def samples(ctx: OpContext) -> float:
        s = 1
        for ratio, size, lo, hi, stride in (("height_sampling_ratio", "output_height", 1, 3, "height_stride"),
                                            ("width_sampling_ratio", "output_width", 0, 2, "width_stride")):
            r = int(named(ctx, ratio, 0))
            if r <= 0:
                rois = np.asarray(ctx.value(1), np.float64).reshape(-1, 4)
                extent = (rois[:, hi] - rois[:, lo]) / float(named(ctx, stride, 1.0)) if rois.size else np.zeros(1)
                r = int(np.ceil(_max_finite(extent) / max(1, int(named(ctx, size, 1))))) or 1
            s *= r
        return ulps.of(ctx) + s + 2 + 0.5
    return _accumulation(samples, f"{WEBNN}: resample2d linear per sample, averagePool S + 2", slots=("input",))


# --- recurrent cells -----------------------------------------------------------------------

def _time_steps(ctx: OpContext) -> int:
    dims = ctx.inputs[0].dims
    if len(dims) != 3:
        return 1
    return int(dims[0] if named(ctx, "time_major", True) else dims[1])


def _fan_in(ctx: OpContext, suffixes: tuple[str, ...]) -> int:
    """Largest sum, over the forward and backward cells, of the columns of the weight
    matrices whose slot names end with ``suffixes``."""
    sums: dict[str, int] = {}
    for name, v in zip(slot_names(ctx), ctx.inputs):
        for suffix in suffixes:
            if name.endswith(suffix) and len(v.dims) == 2 and not v.omitted:
                prefix = "bw_" if name.startswith("bw_") else ""
                sums[prefix] = sums.get(prefix, 0) + int(v.dims[1])
                break
    return max(sums.values(), default=1)


def rnn(sequence: bool = False) -> Callable[[OpContext], Budget]:
    """RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN: each step is a
    gemm of fan-in K (input, hidden state and auxiliary input sizes: WebNN ``2K + 1``
    with the bias) and a clamp; the hidden state carries the error of every earlier step
    with gain ``|R|`` into the next, which the scale absorbs: ``T (2K + 1)`` + 0.5 over T
    steps. Scale: the cell run on ``|x|, |W|, |R|, |b|, |h|`` with no activation (the
    magnitudes of the recurrence)."""
    def ulps(ctx: OpContext) -> float:
        k = _fan_in(ctx, ("weights",))
        return (_time_steps(ctx) if sequence else 1) * (2 * k + 1) + 0.5
    return _accumulation(ulps, f"{WEBNN}: gemm 2K + 1 per step")


def svdf() -> Callable[[OpContext], Budget]:
    """SVDF: the feature gemm (WebNN ``2K + 1``, K = input_size), the time filter over the
    memory (``2M + 1``) and the sum over the rank (R), + 1 for the bias, + 0.5. Scale: the
    operation on absolute values (no activation)."""
    def ulps(ctx: OpContext) -> float:
        k = ctx.inputs[1].dims[1]
        memory = ctx.inputs[2].dims[1]
        rank = int(named(ctx, "rank", 1))
        return 2 * k + 1 + 2 * memory + 1 + rank + 1 + 0.5
    return _accumulation(ulps, f"{WEBNN}: gemm 2K + 1, time filter 2M + 1, rank sum")


def lstm(sequence: bool = False) -> Callable[[OpContext], Budget]:
    """LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM, per step: the gate
    gemms (WebNN ``2K + 1``, K the input + output (+ auxiliary) sizes, + 2 for a peephole,
    counted always), two sigmoids on the cell state's path and one on the output (WebNN
    sigmoid 34 / float16 10), tanh of the cell (WebNN tanh 16) and the cell activation (the
    larger of tanh and sigmoid), the cell update (3), layer normalization when present (``3N + 7``, N cells) and the projection when
    present (gemm ``2 * num_units + 1``); T steps of it, + 0.5. Normwise: the gates'
    pre-activations can exceed the bounded outputs, so the ULP is taken at each output
    tensor's largest magnitude."""
    def budget(ctx: OpContext) -> Budget:
        k = _fan_in(ctx, ("input_to_forget_weights", "recurrent_to_forget_weights"))
        cells = next((int(v.dims[0]) for n, v in zip(slot_names(ctx), ctx.inputs)
                      if n.endswith("input_to_forget_weights") and len(v.dims) == 2), 1)
        sig, tanh = Ulps(34.0, 10.0).of(ctx), 16.0
        step = 2 * k + 1 + 2 + 3 * sig + tanh + max(sig, tanh) + 3
        if any(n.endswith("forget_layer_norm_weights") and v.value is not None
               for n, v in zip(slot_names(ctx), ctx.inputs)):
            step += 3 * cells + 7
        proj = next((v for n, v in zip(slot_names(ctx), ctx.inputs)
                     if n.endswith("projection_weights") and v.value is not None), None)
        if proj is not None:
            step += 2 * int(proj.dims[1]) + 1
        return Budget((_time_steps(ctx) if sequence else 1) * step + 0.5,
                      source=f"{WEBNN}: gemm 2K + 1, sigmoid, tanh per gate and step; normwise", normwise=True)
    return budget


# --- detection and keypoints ---------------------------------------------------------------

def composed(ulps: Ulps, what: str) -> Callable[[OpContext], Budget]:
    """A fixed composition of roundings counted per output element (``ulps``, per format),
    taken normwise: box coordinates computed as centre -/+ half size cancel, so their
    errors are relative to the tensor's largest coordinate. Used by
    AXIS_ALIGNED_BBOX_TRANSFORM, GENERATE_PROPOSALS, DETECTION_POSTPROCESSING (box
    decoding: exp (WebNN 32 / OpenCL half 2) and 8 products and sums: float32 40.5,
    float16 10.5; scores are moved) and HEATMAP_MAX_KEYPOINT (the 3x3 quadratic fit: about
    30 operations, one division by the determinant: 32.5 / 32.5)."""
    def budget(ctx: OpContext) -> Budget:
        return Budget(ulps.of(ctx), source=f"{what}; normwise", normwise=True)
    return budget


def box_with_nms_limit() -> Callable[[OpContext], Budget]:
    """BOX_WITH_NMS_LIMIT: boxes and, with hard NMS, scores are moved (0.5); linear and
    Gaussian NMS multiply a kept score by one weight per suppressing box (``1 - IoU`` or
    ``exp(-IoU^2 / sigma)``: IoU from about 10 operations, exp at WebNN 32 / OpenCL half
    2, one product): up to R such rounds, R the number of input boxes: ``0.5 + R (10 + exp
    + 1)``, normwise."""
    def budget(ctx: OpContext) -> Budget:
        kernel = int(named(ctx, "nms_kernel", 0))
        if kernel == 0:
            return Budget(0.5, source=f"hard NMS: selection; {IEEE}", moves=True)
        rounds = int(ctx.inputs[0].dims[0]) if ctx.inputs[0].dims else 1
        return Budget(0.5 + rounds * (10 + Ulps(32.0, 2.0).of(ctx) + 1),
                      source=f"soft NMS: IoU, {WEBNN} exp, product per round; normwise", normwise=True)
    return budget
