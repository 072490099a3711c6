"""Error budgets: per operation, the error in ULP of the output type a correct
implementation stays within against the float64 truth (declared in the operation table's
``error_budget``; the formula builders and their sources are in :mod:`runtime.ops.budgets`,
which stands beside the table so the rows can import it, and are re-exported here), the
bound of a whole model's outputs composed from them (:func:`test_budget`), and a driver's
error measured and graded by that bound (:func:`measure`, :func:`grade`).

Composition (first order, as rounding-error analysis composes bounds; Higham 2002, ch. 3):
every float operand carries a relative error bound ``r`` (its absolute error over its
magnitude) and a magnitude per element ``M >= |truth|``. Model inputs and constants are
exact (``r = 0``, ``M = |value|``), except float32 ones of a relaxed model, which a driver
may round to float16 (``r``: their largest float16 rounding error, at most 0.5 float16 ULP
in float16's range). An operation's float output gets

    r_out = own ULPs * u(format) + gain * sum of r over its float inputs
    M_out = max(|truth|, the budget's scale)

where ``u`` is the relative size of one ULP at the top of a binade (``2 ** (1 - p)``: 2^-23
float32, 2^-10 float16; float16 for TENSOR_FLOAT16 and for float32 in a relaxed model), so
an error inherited through a gain-1 operation keeps its ULP count and one crossing formats
(CAST float16 -> float32) is converted (one float16 ULP is 8,192 float32 ULPs). The sum
along the operations producing an output is its bound: a helper ``ADD(x, 0)`` of the
variations is exact (0 ULP, gain 1), a data movement adds 0.5. Where an input's magnitude
exceeds its truth (cancellation upstream) the budget is also evaluated on the magnitudes
(the scale of an accumulation of magnitudes; a data movement moves them), so an inherited
error stays measured at the magnitude it was made at. IF / WHILE run their referenced
subgraphs again under the same bookkeeping, so a loop's outputs carry every iteration's
error. Unbounded (``inf``, graded "no budget"): an output downstream of a row without a
budget, of a budget that raised, or of a quantized operand an operation computed (its 1
quantum of AOSP tolerance is no relative bound). Integer and boolean results of float
inputs (comparisons, ARGMAX, CAST to integers) count as exact here: their ambiguity is the
decisions' business (``OperationDef.decision``).

The output's error is ``runtime.precision.ulp.ulp_error(actual, truth, format, M_out)``
and its bound ``r_out / u``; :func:`measure` gives max and mean ULP per float output and
the worst element, :func:`grade` the grade ("within budget", "over budget", "no budget").
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import OperationError
from ..executor import MAX_NESTING, run_subgraph
from ..hal.types import Model, Subgraph
from ..ops import REGISTRY
from ..ops.budgets import (Budget, Ulps, abs_terms, average_pool, batch_matmul, box_with_nms_limit, composed,
                           control_flow, conv, elementwise, exact, fully_connected, half_precision,
                           instance_normalization, l2_normalization, l2_pool, local_response_normalization,
                           log_softmax, lstm, pooling, reduction, resize, rnn, roi_align, slope, softmax, svdf)
from ..ops.common import QUANT_RANGES
from ..types import OperandType
from .truth import float64_outputs
from .ulp import ulp_error

__all__ = [
    # composition and grading
    "GRADES", "NO_BUDGET", "OVER", "WITHIN", "OutputBound", "OutputError", "TestBudget", "grade",
    "graded_format", "measure", "test_budget", "worst",
    # the formula builders (runtime.ops.budgets)
    "Budget", "Ulps", "abs_terms", "average_pool", "batch_matmul", "box_with_nms_limit", "composed",
    "control_flow", "conv", "elementwise", "exact", "fully_connected", "half_precision",
    "instance_normalization", "l2_normalization", "l2_pool", "local_response_normalization", "log_softmax",
    "lstm", "pooling", "reduction", "resize", "rnn", "roi_align", "slope", "softmax", "svdf"]

T = OperandType
FLOAT_TYPES = frozenset((T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.FLOAT32, T.FLOAT16))
F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
#: Relative size of one ULP at the top of a binade, ``2 ** (1 - p)``, per graded format.
UNIT = {F32: 2.0 ** -23, F16: 2.0 ** -10}
#: The grades of a float output (and of a test: its worst output's).
WITHIN, OVER, NO_BUDGET = "within budget", "over budget", "no budget"
GRADES = (WITHIN, OVER, NO_BUDGET)
_INF = float("inf")


def graded_format(operand_type, relaxed: bool) -> np.dtype:
    """The format a float output of ``operand_type`` is graded in: float16 for
    TENSOR_FLOAT16 / FLOAT16 and for float32 in a relaxed model, else float32."""
    return F16 if operand_type in (T.TENSOR_FLOAT16, T.FLOAT16) or relaxed else F32


@dataclass(frozen=True)
class _State:
    """What the composition knows of one operand: relative error bound ``rel`` (inf:
    unbounded), magnitudes ``mag`` (None: ``|truth|``) and the operations its bound
    comes from."""

    rel: float = 0.0
    mag: np.ndarray | None = None
    operations: frozenset = frozenset()


@dataclass(frozen=True)
class OutputBound:
    """The bound of one float output of a model: ``ulps`` in ULP of ``dtype`` (float32 or
    float16) at the magnitudes ``scale`` (per element, or None: the truth's own), ``inf``
    when unbounded; ``operations``: the operations on its path whose budgets it sums;
    ``note``: why it is unbounded, if it is."""

    ulps: float
    scale: np.ndarray | None
    dtype: np.dtype
    operations: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class TestBudget:
    """:func:`test_budget`'s answer: the float64 truth of every main output (float64 for
    float outputs, the operand's dtype otherwise) and an :class:`OutputBound` per float
    output (None for the others)."""

    __test__ = False  # not a pytest test class

    truth: list
    outputs: list


class _Composer:
    """Runs the composition of the module docstring for one model (see :func:`test_budget`)."""

    def __init__(self, model: Model, table, dtypes, loop_timeout_ns):
        self.model, self.table, self.dtypes = model, table, dtypes
        self.loop_timeout_ns, self.deadline_ns = loop_timeout_ns, None
        self.relaxed = bool(model.relax_computation_float32_to_float16)
        self.notes: dict[str, str] = {}

    # --- operand states ---
    def initial(self, operand, value=None) -> _State:
        """A model input or constant: exact, but for float32 in a relaxed model, which a
        driver may store as float16: the largest float16 rounding error of ``value`` in
        float16 ULP (0 for values float16 holds; 0.5 when the value is not known)."""
        if not (self.relaxed and operand.type in (T.TENSOR_FLOAT32, T.FLOAT32)):
            return _State()
        if value is None or not np.size(value):
            return _State(0.5 * UNIT[F16])
        v = np.asarray(value, np.float64)
        with np.errstate(all="ignore"):
            worst = float(np.max(ulp_error(v.astype(np.float16), v, F16)))
        return _State(worst * UNIT[F16])

    def state(self, sg: Subgraph, states: dict, idx: int, value=None) -> _State:
        found = states.get(idx)
        return found if found is not None else self.initial(sg.operands[idx], value)

    def hook(self, sg: Subgraph, states: dict, depth: int = 0):
        """The executor ``intercept`` keeping ``states`` (operand index -> _State) of ``sg``."""
        def intercept(k, ctx, results):
            op = sg.operations[k]
            opdef = (self.table or REGISTRY).get(op.type)
            ins = [self.state(sg, states, i, v.value) for i, v in zip(op.inputs, ctx.inputs)]
            if getattr(opdef, "run", None) is not None:
                outs = self.control_flow(opdef, ctx, ins, len(results), depth)
            else:
                outs = self.operation(opdef, ctx, ins, results)
            for idx, s in zip(op.outputs, outs):
                states[idx] = s
            return results
        return intercept

    # --- one operation ---
    def operation(self, opdef, ctx, ins: list[_State], results) -> list[_State]:
        name = getattr(ctx.operation, "name", str(ctx.operation))
        floats = [(v, s) for v, s in zip(ctx.inputs, ins) if v.type in FLOAT_TYPES]
        inherited_ops = frozenset().union(*(s.operations for _, s in floats)) if floats else frozenset()
        inherited = sum(s.rel for s in ins)  # integer inputs 0, quantized ones 0 or inf
        budget, why = self.budget(opdef, ctx, name)
        if not math.isfinite(inherited) and not why:
            why = f"{name} reads a quantized operand an operation computed (1 quantum of tolerance, no relative bound)"
        out = []
        for j, o in enumerate(ctx.outputs):
            if o.type in _QUANTIZED:
                out.append(_State(inherited if _keeps_quantized(budget, ctx, o) else _INF))
                continue
            if o.type not in FLOAT_TYPES:  # integers and booleans: decisions, not budgets
                out.append(_State(0.0))
                continue
            if budget is None:
                self.notes.setdefault(name, why)
                out.append(_State(_INF, None, inherited_ops | {name}))
                continue
            if not math.isfinite(inherited):
                self.notes.setdefault(name, why)
            truth = np.asarray(results[j], np.float64)
            mag = budget.scale_of(j, truth)
            gain = budget.gain
            if budget.slope is not None and inherited > 0 and floats:
                v, s = floats[0]
                m_in = s.mag if s.mag is not None else np.abs(np.asarray(v.value, np.float64))
                mag = _max_mag(mag, np.broadcast_to(budget.slope * m_in, truth.shape))
                gain = 1.0
            if any(s.mag is not None for _, s in floats) and (budget.scale is not None or budget.moves):
                mag = _max_mag(mag, self.moved_magnitudes(opdef, ctx, ins, budget, j, truth))
            if mag is not None:
                mag = np.maximum(np.abs(truth), mag)
            carried = 0.0 if inherited == 0 else gain * inherited
            rel = budget.ulps * UNIT[graded_format(o.type, self.relaxed)] + carried
            out.append(_State(_INF if math.isnan(rel) else rel, mag,
                              inherited_ops | ({name} if budget.ulps else frozenset())))
        return out

    def budget(self, opdef, ctx, name: str) -> tuple[Budget | None, str]:
        """The row's budget of this use (evaluated when it has a float or quantized output;
        a relaxed model's context says relaxed) or None and why not."""
        if not any(o.type in FLOAT_TYPES for o in ctx.outputs) and not any(
                o.type in _QUANTIZED and _same_quantization(ctx, o) for o in ctx.outputs):
            return None, ""
        fn = getattr(opdef, "error_budget", None)
        if fn is None:
            return None, f"{name} declares no error budget"
        try:
            return fn(dataclasses.replace(ctx, relaxed=True) if self.relaxed else ctx), ""
        except Exception as e:  # noqa: BLE001 - a formula that cannot read this use
            return None, f"{name}: budget formula raised {type(e).__name__}: {e}"

    def moved_magnitudes(self, opdef, ctx, ins, budget: Budget, j: int, truth) -> np.ndarray | None:
        """Output ``j``'s magnitudes from its inputs' (cancellation upstream): the budget's
        scale evaluated on them, and for a data movement the kernel run on them."""
        views = []
        for v, s in zip(ctx.inputs, ins):
            if v.type in FLOAT_TYPES and v.value is not None:
                m = s.mag if s.mag is not None and np.shape(s.mag) == np.shape(v.value) else np.abs(v.value)
                v = dataclasses.replace(v, value=np.asarray(m, np.float64))
            views.append(v)
        mctx = dataclasses.replace(ctx, inputs=views, outputs=[dataclasses.replace(o) for o in ctx.outputs])
        try:
            found = budget_on = opdef.error_budget(mctx).scale_of(j, truth)
            if budget.moves:
                for view, shape in zip(mctx.outputs, opdef.prepare(mctx)):
                    view.dims = tuple(shape)
                moved = np.abs(np.asarray(opdef.execute(mctx)[j], np.float64))
                found = moved if budget_on is None else np.maximum(budget_on, moved)
            return None if found is None else np.broadcast_to(found, truth.shape)
        except Exception:  # noqa: BLE001 - fall back to the largest input magnitude
            top = max((float(np.max(s.mag)) for s in ins if s.mag is not None and np.size(s.mag)), default=0.0)
            return np.full(truth.shape, top)

    # --- control flow ---
    def control_flow(self, opdef, ctx, ins: list[_State], n_out: int, depth: int) -> list[_State]:
        """IF / WHILE: the referenced subgraphs run again with their own bookkeeping; values
        are followed by identity from the operation's inputs through every call."""
        carried = {id(v.value): (v.value, s) for v, s in zip(ctx.inputs, ins) if v.value is not None}
        runner = _Runner(self, carried, depth)
        outs = opdef.run(ctx, runner)
        return [carried.get(id(o), (None, _State(_INF)))[1] for o in outs][:n_out]

    def output_bound(self, sg: Subgraph, states: dict, idx: int) -> OutputBound | None:
        o = sg.operands[idx]
        if o.type not in FLOAT_TYPES:
            return None
        s = self.state(sg, states, idx)
        fmt = graded_format(o.type, self.relaxed)
        note = "" if math.isfinite(s.rel) else "; ".join(self.notes.get(n, "") for n in sorted(s.operations)
                                                         if self.notes.get(n)) or "unbounded"
        return OutputBound(s.rel / UNIT[fmt], s.mag, fmt, tuple(sorted(s.operations)), note)


#: Quantized operand types (TENSOR_INT32 is an integer here).
_QUANTIZED = frozenset(t for t in QUANT_RANGES if t != T.TENSOR_INT32)


def _keeps_quantized(budget: Budget | None, ctx, out) -> bool:
    """Whether a quantized output is exact given exact inputs: the row moves values, or adds
    zero (a budget of 0: the variations' helper ADD), and the output keeps the scale and
    zero point of every quantized input. Any other quantized result carries AOSP's 1-quantum
    tolerance, no relative bound."""
    return budget is not None and (budget.moves or budget.ulps == 0) and _same_quantization(ctx, out)


def _same_quantization(ctx, out) -> bool:
    """Whether every quantized input with a value has the scale and zero point of ``out``."""
    return all(v.scale == out.scale and v.zero_point == out.zero_point
               for v in ctx.inputs if v.type in _QUANTIZED and v.value is not None)


def _max_mag(a, b):
    if a is None:
        return b
    return a if b is None else np.maximum(a, b)


class _Runner:
    """The control-flow runner of :meth:`_Composer.control_flow` (the executor's runner
    interface: ``call(index, values)``, ``loop_timeout_ns``, ``deadline_ns``)."""

    def __init__(self, composer: _Composer, carried: dict, depth: int):
        self.composer, self.carried, self.depth = composer, carried, depth
        self.loop_timeout_ns, self.deadline_ns = composer.loop_timeout_ns, composer.deadline_ns

    def call(self, index: int, values) -> list[np.ndarray]:
        c = self.composer
        referenced = c.model.referenced
        if not 0 <= index < len(referenced):
            raise OperationError(f"subgraph reference {index} is out of range ({len(referenced)} referenced)")
        if self.depth >= MAX_NESTING:
            raise OperationError(f"control flow nested more than {MAX_NESTING} deep")
        sg = referenced[index]
        states = {idx: self.carried[id(v)][1] for idx, (v, _) in zip(sg.input_indexes, values)
                  if v is not None and id(v) in self.carried}
        outs = run_subgraph(c.model, sg, list(values), False, c.table, c.dtypes,
                            loop_timeout_ns=self.loop_timeout_ns, intercept=c.hook(sg, states, self.depth + 1),
                            _depth=self.depth + 1)
        for idx, o in zip(sg.output_indexes, outs):
            self.carried[id(o)] = (o, c.state(sg, states, idx))
        return outs


def test_budget(model: Model, inputs: list, *, table=None, dtypes=None,
                loop_timeout_ns: int | None = None) -> TestBudget:
    """The float64 truth of ``model`` (a validated HAL model; ``inputs`` one array or None
    per main input, as :func:`runtime.precision.truth.float64_outputs` takes them) and the
    bound of each of its float outputs, composed from the operation table's budgets as the
    module docstring says (one truth run, with the executor's ``intercept``). Raises
    HalError as the truth run does (an execution of the model would fail)."""
    composer = _Composer(model, table, dtypes, loop_timeout_ns)
    states: dict[int, _State] = {}
    truth = float64_outputs(model, inputs, table=table, dtypes=dtypes, loop_timeout_ns=loop_timeout_ns,
                            intercept=composer.hook(model.main, states))
    sg = model.main
    bounds = [composer.output_bound(sg, states, idx) for idx in sg.output_indexes]
    return TestBudget(truth, bounds)


test_budget.__test__ = False  # a pytest module importing it must not collect it


# --- measuring and grading ------------------------------------------------------------------

@dataclass(frozen=True)
class OutputError:
    """A driver's error on one float output: ``ulp_max`` / ``ulp_mean`` in ULP of the
    bound's format at its scale (inf for a NaN or infinity where the truth is finite),
    ``worst`` the index of the largest error (with its ``truth`` and ``actual`` values),
    ``budget`` the bound (inf: none) and ``grade``."""

    output: int
    ulp_max: float
    ulp_mean: float
    budget: float
    grade: str
    worst: tuple[int, ...] = ()
    truth: float = 0.0
    actual: float = 0.0
    elements: int = 0
    operations: tuple[str, ...] = field(default_factory=tuple)

    def describe(self, operand_type: str = "") -> str:
        """One line: output, element, ULP, budget, the values."""
        kind = f" ({operand_type})" if operand_type else ""
        budget = "no budget" if not math.isfinite(self.budget) else f"budget {self.budget:.4g} ULP"
        return (f"output {self.output}{kind} element [{','.join(map(str, self.worst))}]: "
                f"{self.ulp_max:.4g} ULP, {budget} (truth {self.truth!r}, got {self.actual!r})")


def measure(bound: OutputBound, truth: np.ndarray, actual: np.ndarray, output: int = 0) -> OutputError | None:
    """The error of ``actual`` (any float array of ``truth``'s size) against the real
    ``truth`` of output ``output`` under ``bound``: max and mean ULP and the worst element
    (:func:`runtime.precision.ulp.ulp_error` in the bound's format at its scale), graded.
    None for an empty output."""
    t = np.asarray(truth, np.float64)
    if t.size == 0:
        return None
    a = np.asarray(actual, np.float64).reshape(t.shape)
    err = ulp_error(a, t, bound.dtype, bound.scale)
    k = int(np.argmax(err))
    worst = tuple(int(i) for i in np.unravel_index(k, t.shape)) if t.ndim else ()
    ulp_max = float(err.reshape(-1)[k])
    if not math.isfinite(bound.ulps):
        g = NO_BUDGET
    else:
        g = WITHIN if ulp_max <= bound.ulps else OVER
    return OutputError(output, ulp_max, float(np.mean(err)), bound.ulps, g, worst,
                       float(t.reshape(-1)[k]), float(a.reshape(-1)[k]), int(t.size), bound.operations)


def grade(errors) -> str:
    """A test's grade from its outputs' :class:`OutputError` (None entries ignored): over
    budget when any output is, else no budget when any output has none, else within budget;
    "" without any graded output."""
    grades = {e.grade for e in errors if e is not None}
    for g in (OVER, NO_BUDGET, WITHIN):
        if g in grades:
            return g
    return ""


def worst(errors) -> OutputError | None:
    """The output error with the largest ratio of error to budget (over a budget of 0:
    infinite for any error), or, when no output has a budget, the largest error; None
    without any."""
    found = [e for e in errors if e is not None]
    bounded = [e for e in found if math.isfinite(e.budget)]
    if bounded:
        return max(bounded, key=lambda e: e.ulp_max / e.budget if e.budget > 0 else _INF * (e.ulp_max > 0))
    return max(found, key=lambda e: e.ulp_max, default=None)
