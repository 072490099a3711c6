"""Control flow: IF (96) and WHILE (97), feature level 4 (Android 11 / HAL 1.3; nothing new at
FL5+). Both run *referenced subgraphs*: an input of type SUBGRAPH (the NDK's
ANEURALNETWORKS_MODEL, lifetime SUBGRAPH) names one of ``Model.referenced`` by index.

IF. Inputs: 0 condition, TENSOR_BOOL8 of shape [1] (fully specified); 1 the "then" subgraph;
2 the "else" subgraph; 3 ... 3 + n - 1 the n >= 0 data inputs passed to the selected
subgraph. Outputs: m >= 1, the selected subgraph's outputs. Both branches must have n inputs
and m outputs, each *compatible* with the operation's matching input or output.

WHILE. Inputs: 0 the condition subgraph; 1 the body subgraph; then m >= 1 input-output
values, k >= 0 state-only values and n >= 0 input-only values. Outputs: the m final
input-output values. m = output count, k = body outputs - m, n = body inputs - m - k. The
condition subgraph takes the m + k + n values and has exactly one output, TENSOR_BOOL8 of
shape [1]; the body takes the m + k + n values and gives m + k outputs, each compatible with
the operation's matching input (and its first m with the operation's outputs, its m + k
with its own matching inputs). Semantics (NNAPI pseudo-code)::

    values = inputs[2:]
    while condition(values)[0]:
        values[:m + k] = body(values)
    return values[:m]

Compatible (AOSP ``compatible``): same operand type, scale, zeroPoint and per-channel
parameters; ranks equal when both are specified; each dimension equal when both are
specified (non-zero). A referenced subgraph may declare unknown dimensions or an unknown
rank (rank 0 tensor): its shapes are resolved at execution from the values flowing in, and a
WHILE value may change shape from one iteration to the next.

Operand types: data inputs and outputs may be of any operand type but SUBGRAPH (tensors of
every type, scalars), shown in the table by :class:`AnyOperand` slots. None may be omitted
(an omitted condition or value is rejected: AOSP's executor cannot read it either and fails).

Loop timeout: each WHILE runs at most ``loop_timeout_ns`` (the execution's
``ANeuralNetworksExecution_setLoopTimeout``, default :data:`LOOP_TIMEOUT_DEFAULT_NS` = 2 s,
at most :data:`LOOP_TIMEOUT_MAXIMUM_NS` = 15 s), measured from the loop's start and checked,
as AOSP's CpuExecutor does, each time the condition is true before the body runs; past it the
execution ends with :class:`LoopTimeoutError` (the executor's MISSED_DEADLINE_TRANSIENT). An
execution deadline (``deadline_ns``) passed during a loop ends it the same way.

Errors. Model time (``validate`` / :func:`check_references`, OperationError naming the input
or output and the rule): the IF condition's shape is not [1]; an input of type SUBGRAPH does
not name an existing referenced subgraph; a referenced subgraph's input/output counts do not
fit the operation (IF: n inputs and m outputs; WHILE condition: m + k + n inputs and 1
output; WHILE body: m + k + n inputs and m + k >= m outputs); an operand of a referenced
subgraph is not compatible with the operation's (or, for the WHILE body, with its own input);
the WHILE condition output is not TENSOR_BOOL8 [1]. A subgraph that references itself,
directly or through others, is rejected by model validation (``runtime.hal.validate``).
Execution (``run``): an empty condition value; a referenced subgraph failing (its error,
prefixed by the subgraph); the loop timeout (:class:`LoopTimeoutError`).

Execution needs the model's referenced subgraphs, so these rows have no numpy kernel: the
executor calls :meth:`ControlFlowDef.run` with a runner (``runner.call(index, values)`` runs
referenced subgraph ``index`` on ``values`` = [(array, dims)] and returns its output arrays;
``runner.loop_timeout_ns`` and ``runner.deadline_ns`` bound loops). ``prepare`` and
``execute`` raise OperationError (the shapes are known only by running the subgraphs).

Sources: NNAPI ``NeuralNetworksTypes.h`` (ANEURALNETWORKS_IF, ANEURALNETWORKS_WHILE,
ANeuralNetworksExecution_setLoopTimeout, ANeuralNetworks_getDefaultLoopTimeout /
getMaximumLoopTimeout); AOSP ``common/types/src/Validation.cpp`` (``validateIfOperation``,
``validateWhileOperation``, ``compatible``, ``validateConditionOperand``,
``checkNoReferenceCycles``), ``common/types/include/ControlFlow.h`` (input indexes, timeout
constants) and ``common/CpuExecutor.cpp`` (``executeIfOperation``: the first element of the
condition selects the branch; ``executeWhileOperation``: condition first, timeout checked
after a true condition, body outputs feed the next iteration, outputs of unknown shape may
change size). Departure: AOSP gives control flow with operands of unknown size to its
runtime's CPU executor only (HAL 1.3 drivers cannot take them); the reference runs them like
any other model.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import OperationError
from ..types import OperandType, OperationType
from . import budgets
from .base import Arg, OpContext, OperandView, OperationDef, Signature, check, register, scalar, sig, tensor

T = OperandType

#: Default and maximum WHILE loop timeouts (NNAPI kLoopTimeoutDefault / kLoopTimeoutMaximum).
LOOP_TIMEOUT_DEFAULT_NS = 2_000_000_000
LOOP_TIMEOUT_MAXIMUM_NS = 15_000_000_000


class LoopTimeoutError(OperationError):
    """A WHILE ran past its loop timeout (or the execution deadline passed during a loop):
    the executor ends the execution with MISSED_DEADLINE_TRANSIENT."""


@dataclass(frozen=True)
class AnyOperand(Arg):
    """A control-flow data slot: any base operand type but SUBGRAPH, any rank. ``type`` is
    only a representative (TENSOR_FLOAT32) for table readers that need one type per slot."""

    def accepts(self, operand_type, dims: Sequence[int], omitted: bool) -> bool:
        if isinstance(operand_type, OperandType) or (isinstance(operand_type, (int, np.integer))
                                                     and int(operand_type) in T._value2member_map_):
            return T(operand_type) != T.SUBGRAPH
        return False


ANY = "any operand type but SUBGRAPH"


@dataclass
class ControlFlowDef(OperationDef):
    """A table row whose execution runs referenced subgraphs (IF, WHILE).

    ``fixed_inputs``: leading inputs before the repeated data slot; ``min_data``: fewest
    data inputs; ``run(ctx, runner)``: the outputs (see the module docstring);
    ``check_references(ctx, io_of)``: model-time rules on the referenced subgraphs, with
    ``io_of(index) -> (input views, output views)`` of referenced subgraph ``index``;
    ``arity``: the operand counts in words, for error messages."""

    fixed_inputs: int = 0
    min_data: int = 0
    run: Callable | None = None
    check_references: Callable | None = None
    arity: str = ""

    def signatures_for(self, n_inputs: int, n_outputs: int | None = None) -> tuple[Signature, ...]:
        """Each signature with its data slot repeated for ``n_inputs`` and its output slot for
        ``n_outputs`` (none when the counts are below the minimum; WHILE: more outputs than
        loop values is none too)."""
        out = []
        for s in self.signatures:
            n_data = n_inputs - self.fixed_inputs
            n_out = len(s.outputs) if n_outputs is None else n_outputs
            if n_data < self.min_data or n_out < 1:
                continue
            if self.type == OperationType.WHILE and n_out > n_data:
                continue
            out.append(Signature(s.feature_level,
                                 s.inputs[:self.fixed_inputs] + (s.inputs[self.fixed_inputs],) * n_data,
                                 (s.outputs[0],) * n_out))
        return tuple(out)


def _no_kernel(ctx: OpContext):
    raise OperationError(f"{ctx.operation.name} runs referenced subgraphs: its outputs are known only "
                         f"by running them (the executor calls ControlFlowDef.run)")


def _describe(v: OperandView) -> str:
    name = getattr(v.type, "name", str(v.type))
    q = f", scale {v.scale}, zeroPoint {v.zero_point}" if v.scale or v.zero_point else ""
    return f"{name} {list(v.dims)}{q}"


def compatible(outer: OperandView, inner: OperandView) -> str | None:
    """Why ``inner`` (a referenced subgraph's operand) is not compatible with ``outer`` (the
    operation's), or None: same type, scale, zeroPoint and per-channel parameters; equal
    ranks when both are known; equal dimensions where both are known (AOSP ``compatible``)."""
    if outer.type != inner.type:
        return "types differ"
    if outer.dims and inner.dims:
        if len(outer.dims) != len(inner.dims):
            return "ranks differ"
        if any(a and b and a != b for a, b in zip(outer.dims, inner.dims)):
            return "dimensions differ"
    if np.float32(outer.scale) != np.float32(inner.scale):
        return "scales differ"
    if outer.zero_point != inner.zero_point:
        return "zeroPoints differ"
    a, b = outer.channel_quant, inner.channel_quant
    if (a is None) != (b is None) or (a is not None and (a[1] != b[1] or not np.array_equal(a[0], b[0]))):
        return "per-channel quantization parameters differ"
    return None


def _check_compatible(outer_kind: str, outer: OperandView, what: str, inner: OperandView) -> None:
    why = compatible(outer, inner)
    check(why is None, f"{outer_kind} ({_describe(outer)}) is not compatible with {what} "
                       f"({_describe(inner)}): {why}")


def _reference(ctx: OpContext, j: int, role: str, io_of) -> tuple[int, list, list]:
    v = ctx.inputs[j]
    check(v.value is not None, f"input {j} ({role} subgraph) must reference a subgraph")
    index = int(np.asarray(v.value).reshape(-1)[0])
    ins, outs = io_of(index)
    return index, ins, outs


def _check_condition_shape(kind: str, v: OperandView) -> None:
    check(v.type == T.TENSOR_BOOL8 and tuple(v.dims) == (1,),
          f"{kind} must be TENSOR_BOOL8 of shape [1], got {_describe(v)}")


# --- IF ------------------------------------------------------------------------------

def _if_validate(ctx: OpContext) -> None:
    _check_condition_shape("input 0 (condition)", ctx.inputs[0])


def _if_check_references(ctx: OpContext, io_of) -> None:
    n, m = len(ctx.inputs) - 3, len(ctx.outputs)
    for j, role in ((1, "then"), (2, "else")):
        index, ins, outs = _reference(ctx, j, role, io_of)
        what = f"input {j} ({role} branch, referenced subgraph {index})"
        check(len(ins) == n and len(outs) == m,
              f"{what} has {len(ins)} inputs and {len(outs)} outputs; IF with {n} data inputs and "
              f"{m} outputs needs {n} and {m}")
        for i in range(n):
            _check_compatible(f"input {3 + i}", ctx.inputs[3 + i], f"input {i} of the {role} branch", ins[i])
        for i in range(m):
            _check_compatible(f"output {i}", ctx.outputs[i], f"output {i} of the {role} branch", outs[i])


def _condition_value(value: np.ndarray | None, where: str) -> bool:
    check(value is not None and value.size >= 1, f"{where} has no value to test")
    return bool(np.asarray(value).reshape(-1)[0])


def _if_run(ctx: OpContext, runner) -> list[np.ndarray]:
    branch = 1 if _condition_value(ctx.inputs[0].value, "input 0 (condition)") else 2
    index = ctx.scalar(branch)
    return runner.call(index, [(v.value, v.dims) for v in ctx.inputs[3:]])


# --- WHILE ---------------------------------------------------------------------------

def _while_check_references(ctx: OpContext, io_of) -> None:
    values, m = ctx.inputs[2:], len(ctx.outputs)
    cond, c_ins, c_outs = _reference(ctx, 0, "condition", io_of)
    body, b_ins, b_outs = _reference(ctx, 1, "body", io_of)
    cwhat, bwhat = f"input 0 (condition, referenced subgraph {cond})", f"input 1 (body, referenced subgraph {body})"
    check(len(c_ins) == len(values),
          f"{cwhat} has {len(c_ins)} inputs; WHILE with {len(values)} loop values needs {len(values)}")
    check(len(c_outs) == 1, f"{cwhat} has {len(c_outs)} outputs; it must have exactly 1")
    _check_condition_shape(f"{cwhat} output 0", c_outs[0])
    check(len(b_ins) == len(values),
          f"{bwhat} has {len(b_ins)} inputs; WHILE with {len(values)} loop values needs {len(values)}")
    check(m <= len(b_outs) <= len(b_ins),
          f"{bwhat} has {len(b_outs)} outputs; it needs at least the {m} outputs of the WHILE and at "
          f"most its {len(b_ins)} inputs")
    for i, v in enumerate(values):
        _check_compatible(f"input {2 + i}", v, f"input {i} of the condition", c_ins[i])
        _check_compatible(f"input {2 + i}", v, f"input {i} of the body", b_ins[i])
    for i in range(m):
        _check_compatible(f"output {i}", ctx.outputs[i], f"output {i} of the body", b_outs[i])
    for i in range(len(b_outs)):
        _check_compatible(f"{bwhat} input {i}", b_ins[i], f"its output {i}", b_outs[i])


def _while_run(ctx: OpContext, runner) -> list[np.ndarray]:
    cond, body = ctx.scalar(0), ctx.scalar(1)
    values = [(v.value, tuple(v.dims)) for v in ctx.inputs[2:]]
    timeout = getattr(runner, "loop_timeout_ns", None)
    timeout = LOOP_TIMEOUT_DEFAULT_NS if timeout is None else min(int(timeout), LOOP_TIMEOUT_MAXIMUM_NS)
    deadline = getattr(runner, "deadline_ns", None)
    start = time.monotonic_ns()
    iteration = 0
    while True:
        c = runner.call(cond, values)
        check(len(c) == 1, f"input 0 (condition subgraph {cond}) gave {len(c)} outputs, expected 1")
        if not _condition_value(c[0], f"iteration {iteration}: the condition subgraph's output"):
            break
        now = time.monotonic_ns()
        if now - start > timeout:
            raise LoopTimeoutError(f"loop timed out after {(now - start) / 1e6:.0f} ms and {iteration} "
                                   f"iterations (loop timeout {timeout / 1e6:.0f} ms)")
        if deadline is not None and now >= deadline:
            raise LoopTimeoutError(f"execution deadline passed during the loop, after {iteration} iterations")
        outs = runner.call(body, values)
        check(len(outs) <= len(values), f"input 1 (body subgraph {body}) gave {len(outs)} outputs for "
                                        f"{len(values)} loop values")
        values[:len(outs)] = [(o, tuple(o.shape)) for o in outs]
        iteration += 1
    return [values[i][0] for i in range(len(ctx.outputs))]


_DATA = AnyOperand("input", T.TENSOR_FLOAT32, None)
_OUT = AnyOperand("output", T.TENSOR_FLOAT32, None)

register(ControlFlowDef(
    OperationType.IF,
    (sig(4, [tensor("condition", T.TENSOR_BOOL8, (1,)), scalar("then", T.SUBGRAPH),
             scalar("else", T.SUBGRAPH), _DATA], [_OUT]),),
    _no_kernel, _no_kernel, _if_validate,
    summary="run the then or else subgraph on the data inputs, chosen by a TENSOR_BOOL8 [1] condition",
    fixed_inputs=3, min_data=0, run=_if_run, check_references=_if_check_references,
    error_budget=budgets.control_flow(),
    allows_zero_sized_input=True, aosp_source="CpuExecutor.cpp",
    # dynamic shapes: AOSP's generator derives no dynamic-output variant of a model whose
    # outputs come from a referenced subgraph (the branch's outputs fix them)
    dynamic_shape_excluded=True,
    arity="takes a TENSOR_BOOL8 condition, two SUBGRAPH references, n >= 0 data inputs and m >= 1 outputs"))

register(ControlFlowDef(
    OperationType.WHILE,
    (sig(4, [scalar("condition", T.SUBGRAPH), scalar("body", T.SUBGRAPH), _DATA], [_OUT]),),
    _no_kernel, _no_kernel, None,
    summary="run the body subgraph while the condition subgraph gives true; outputs the loop values",
    fixed_inputs=2, min_data=1, run=_while_run, check_references=_while_check_references,
    error_budget=budgets.control_flow(),
    allows_zero_sized_input=True, aosp_source="CpuExecutor.cpp",
    # dynamic shapes: as IF, the outputs come from the body subgraph's
    dynamic_shape_excluded=True,
    arity="takes two SUBGRAPH references, m + k + n >= 1 loop values and 1 <= m <= m + k + n outputs"))
