"""The CPU executor: runs a validated HAL model on a request with the operation table's
reference kernels (the oracle every suite compares drivers against).

Shapes are resolved at execution: every operation's ``prepare`` infers its output shapes
from the actual input shapes, so temporaries and outputs declared with unknown dimensions
(0) or an unknown rank (a tensor of rank 0) get their dimensions here, in the main subgraph
and in referenced subgraphs alike. Control flow (IF, WHILE: :mod:`runtime.ops.control_flow`)
runs referenced subgraphs through a runner (:class:`_Runner`) that passes values and their
actual shapes in and out; nested control flow recurses (at most :data:`MAX_NESTING` deep).
Each WHILE is bounded by the loop timeout (default 2 s, at most 15 s) and the execution
deadline, both given to :func:`execute` or set for a whole driver call by
:func:`execution_limits`; past either the execution fails with MISSED_DEADLINE_TRANSIENT.
The deadline is also checked before every operation (one clock read each, only when a
deadline is set), so a long loop-free model ends the same way as a long loop.

Per-operation cost. What an execution needs to know about a subgraph that does not depend
on the request (each operation's kernel, its constant inputs as operand views over the
model's pools, the static fields of every other operand) is compiled once per run into a
:class:`Program`. A prepared model, whose HAL model may no longer change (the HAL
contract: a driver owns, or has copied, what it prepared), declares it with :func:`hold`;
its programs are then kept until the model is garbage collected, so an execution only binds
the request's values and runs the kernels. A model nobody holds is compiled afresh on every
call (it may have been changed in place since the last one).
"""
from __future__ import annotations

import contextlib
import contextvars
import time

import numpy as np

from . import ops
from .errors import HalError, OperationError
from .extension_types import is_extension_type, type_name
from .identity import IdentityTable
from .hal.types import Model, OutputShape, Request, Subgraph
from .hal.validate import (MAX_OPERAND_BYTES, MAX_RANK, constant_value, merged_dimensions, operand_byte_size,
                           operand_fields)
from .ops.base import OperandView, OpContext
from .ops.common import computing_truth, freeze, value_dtype
from .ops.control_flow import LOOP_TIMEOUT_DEFAULT_NS, LOOP_TIMEOUT_MAXIMUM_NS, LoopTimeoutError
from .types import ErrorStatus, OperandLifeTime, OperationType, operand_dtype

L = OperandLifeTime
#: Resource bound of the reference executor: no operation output above this many elements
#: (the kernels compute in float64, 8 bytes per element). A larger, valid model fails with
#: GENERAL_FAILURE naming the operation, before anything is allocated.
MAX_REFERENCE_ELEMENTS = 1 << 24
#: Deepest nesting of control flow (IF/WHILE calling subgraphs that hold IF/WHILE ...) the
#: executor follows; validation already rejects reference cycles, this bounds the rest.
MAX_NESTING = 32

#: (loop timeout ns or None, deadline ns or None) for executions that do not pass them.
_LIMITS: contextvars.ContextVar = contextvars.ContextVar("nncts_execution_limits", default=(None, None))


@contextlib.contextmanager
def execution_limits(loop_timeout_ns: int | None = None, deadline_ns: int | None = None):
    """Within this block, :func:`execute` calls that give no limits of their own use this
    WHILE loop timeout (ns; None: the 2 s default, clamped to 15 s) and execution deadline
    (absolute ``time.monotonic_ns()``; None: none). Drivers wrap their call of the executor
    in it, so drivers that override how they call :func:`execute` keep the limits."""
    token = _LIMITS.set((loop_timeout_ns, deadline_ns))
    try:
        yield
    finally:
        _LIMITS.reset(token)


class _Runner:
    """What a control-flow operation runs its referenced subgraphs with (see
    :mod:`runtime.ops.control_flow`): ``call(index, values)`` runs ``model.referenced[index]``
    on ``values`` ([(array or None, dims)], one per subgraph input) and returns its outputs;
    ``loop_timeout_ns`` / ``deadline_ns`` bound WHILE loops."""

    def __init__(self, model: Model, relaxed: bool, table, dtypes, loop_timeout_ns, deadline_ns, depth: int):
        self.model, self.relaxed, self.table, self.dtypes = model, relaxed, table, dtypes
        self.loop_timeout_ns, self.deadline_ns, self.depth = loop_timeout_ns, deadline_ns, depth

    def call(self, index: int, values) -> list[np.ndarray]:
        referenced = self.model.referenced
        if not 0 <= index < len(referenced):
            raise OperationError(f"subgraph reference {index} is out of range ({len(referenced)} referenced)")
        sg = referenced[index]
        if len(values) != len(sg.input_indexes):
            raise OperationError(f"referenced subgraph {index} takes {len(sg.input_indexes)} inputs, "
                                 f"got {len(values)}")
        if self.depth >= MAX_NESTING:
            raise OperationError(f"control flow nested more than {MAX_NESTING} deep")
        try:
            return run_subgraph(self.model, sg, list(values), self.relaxed, self.table, self.dtypes,
                                loop_timeout_ns=self.loop_timeout_ns, deadline_ns=self.deadline_ns,
                                _depth=self.depth + 1)
        except HalError as e:
            raise HalError(e.status, f"referenced subgraph {index}: {e.message}") from None


def _dtype(operand_type, dtypes=None) -> np.dtype:
    """The numpy dtype of ``operand_type``: from ``dtypes`` (a driver's mapping of extension
    operand type codes to dtypes) first, else the base table."""
    if dtypes and operand_type in dtypes:
        return np.dtype(dtypes[operand_type])
    return operand_dtype(operand_type)


def _value_dtype(operand_type, dtypes=None) -> np.dtype:
    """The dtype values of ``operand_type`` are held in while running: :func:`_dtype`, or
    float64 for the float types while computing truth (``ops.common.value_dtype``)."""
    if dtypes and operand_type in dtypes:
        return np.dtype(dtypes[operand_type])
    return value_dtype(operand_type)


def _read(pool, loc, operand_type, dims, dtypes=None) -> np.ndarray:
    dtype = _dtype(operand_type, dtypes)
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    arr = np.frombuffer(pool.buffer, dtype=dtype, count=count, offset=loc.offset)
    return arr.reshape(tuple(dims))


def _check_omitted(where: str, opdef, operation, views_in, views_out) -> None:
    """An input bound with no value at execution time must be one the operation's
    signature marks optional (HalError GENERAL_FAILURE naming the input otherwise)."""
    omitted = [j for j, v in enumerate(views_in) if v.omitted]
    if not omitted:
        return
    sig = opdef.match(views_in, views_out)
    for j in omitted:
        if sig is None or not sig.inputs[j].optional:
            raise HalError(ErrorStatus.GENERAL_FAILURE,
                           f"{where}: input {j} (operand {operation.inputs[j]}) has no value, but it "
                           f"is not an optional input")


def _check_output_size(where: str, j: int, idx: int, operand_type, shape, dtypes) -> None:
    """The shape ``prepare`` inferred for output ``j`` must be a valid tensor size: no
    negative dimension, at most MAX_OPERAND_BYTES (checked before anything is allocated)."""
    if len(shape) > MAX_RANK:
        raise HalError(ErrorStatus.GENERAL_FAILURE,
                       f"{where}: output {j} (operand {idx}) would have rank {len(shape)}; a tensor may "
                       f"have rank at most {MAX_RANK}")
    if any(d < 0 for d in shape):
        raise HalError(ErrorStatus.GENERAL_FAILURE,
                       f"{where}: output {j} (operand {idx}) would have a negative dimension {list(shape)}")
    n = 1
    for d in shape:
        n *= d
    size = n * _dtype(operand_type, dtypes).itemsize
    if size > MAX_OPERAND_BYTES:
        raise HalError(ErrorStatus.GENERAL_FAILURE,
                       f"{where}: output {j} (operand {idx}) would have shape {list(shape)}, {size} bytes; "
                       f"a tensor may hold at most 2^31 - 1 bytes")
    if n > MAX_REFERENCE_ELEMENTS:
        raise HalError(ErrorStatus.GENERAL_FAILURE,
                       f"{where}: output {j} (operand {idx}) would have shape {list(shape)}, {n} elements; "
                       f"the reference executor computes at most 2^24 elements per tensor")


class _Step:
    """One operation of a :class:`Program`: its type, kernel (None: the table has none),
    error prefix, and per input either a constant view's fields (constants, omitted
    operands) or None (a value bound at run time); ``const_views`` the constant inputs'
    OperandViews, made once (kernels never change a view they read)."""

    __slots__ = ("operation", "op_type", "where", "opdef", "inputs", "consts", "const_views", "bound",
                 "runs", "has_no_value", "failure", "omission_checked")

    def __init__(self, k: int, operation, sg: Subgraph, model: Model, table, dtypes, fields, wide=False,
                 frozen=False):
        self.operation = operation
        self.op_type = operation.type if is_extension_type(operation.type) else OperationType(operation.type)
        self.where = f"operation {k} ({type_name(self.op_type)})"
        self.opdef = (table or ops.REGISTRY).get(self.op_type)
        self.runs = self.opdef is not None and getattr(self.opdef, "run", None) is not None
        self.inputs = list(operation.inputs)
        self.consts = []
        self.has_no_value = False
        #: The input ranks with which the model's own omitted inputs (NO_VALUE operands) were
        #: found optional: with no request input omitted, the check depends on nothing else.
        self.omission_checked = None
        #: What reading a constant input raised (an extension type without a dtype): raised
        #: again when the operation is reached, as reading it there would.
        self.failure = None
        for idx in self.inputs:
            o = sg.operands[idx]
            t, scale, zp, cq, data = fields[idx]
            if o.lifetime == L.NO_VALUE:
                self.consts.append((t, tuple(o.dimensions), scale, zp, None, True, cq, data))
                self.has_no_value = True
            elif o.lifetime in _CONSTANT_LIFETIMES:
                try:
                    value = constant_value(model, o, _dtype(o.type, dtypes))
                    if wide and value is not None and value.dtype.kind == "f":
                        value = value.astype(_value_dtype(o.type, dtypes))
                except Exception as e:  # noqa: BLE001
                    self.failure, value = e, None
                if frozen:  # a held model's constants: kernels may keep forms derived from them
                    freeze(value)
                self.consts.append((t, tuple(o.dimensions), scale, zp, value, False, cq, data))
            else:
                self.consts.append(None)
        self.const_views = [None if c is None else OperandView(*c) for c in self.consts]
        #: (position, operand index) of the inputs bound at run time.
        self.bound = [(j, idx) for j, (idx, c) in enumerate(zip(self.inputs, self.consts)) if c is None]


_CONSTANT_LIFETIMES = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH)
_UNBOUND_LIFETIMES = _CONSTANT_LIFETIMES + (L.NO_VALUE,)


class Program:
    """A subgraph compiled for execution with one kernel table: per operand its static
    view fields (type, scale, zeroPoint, per-channel quantization, extension data), its
    declared dimensions, numpy dtype and item size; per operation a :class:`_Step`.
    ``wide``: compiled for float64 truth (float values held as float64, float constants
    widened; ``ops.common.float64_truth``). ``frozen``: the model is held (:func:`hold`),
    its constant values are declared immutable (``ops.common.freeze``)."""

    def __init__(self, model: Model, sg: Subgraph, table=None, dtypes=None, wide: bool = False,
                 frozen: bool = False):
        # an extension type keeps its code (an invalid one too: it fails when used)
        self.fields = [operand_fields(o, strict=False) for o in sg.operands]
        self.declared = [tuple(o.dimensions) for o in sg.operands]
        self.dtypes = [_dtype_or_none(o.type, dtypes) for o in sg.operands]
        self.steps = [_Step(k, op, sg, model, table, dtypes, self.fields, wide, frozen)
                      for k, op in enumerate(sg.operations)]
        # per step, the values no later step reads (dropped after it: the allocator reuses
        # their memory, still in cache, for the next outputs); subgraph outputs are kept
        last: dict[int, int] = {}
        for k, op in enumerate(sg.operations):
            for idx in (*op.inputs, *op.outputs):
                last[idx] = k
        kept = set(sg.output_indexes)
        self.release: list[list[int]] = [[] for _ in sg.operations]
        for idx, k in last.items():  # constants and omitted operands are never in the values
            if idx not in kept and sg.operands[idx].lifetime not in _UNBOUND_LIFETIMES:
                self.release[k].append(idx)


def _dtype_or_none(operand_type, dtypes):
    try:
        return _value_dtype(operand_type, dtypes)
    except Exception:  # noqa: BLE001 - an extension type without a dtype: fails when used
        return None


#: Programs of held models: {(id(subgraph), id(table), id(dtypes), wide): (subgraph, table,
#: dtypes, Program)} per model.
_HELD = IdentityTable()
#: Programs kept per held model (kernel tables and subgraphs combined).
_PROGRAMS_PER_MODEL = 16


def hold(model: Model) -> None:
    """Declare that ``model`` will not change any more (a prepared model's), so the
    programs compiled for it are kept and reused by every execution until it is garbage
    collected. Changing a held model in place is undefined (as in the HAL)."""
    _HELD.add(model)


def program(model: Model, sg: Subgraph, table=None, dtypes=None) -> Program:
    """The :class:`Program` of ``sg`` (a subgraph of ``model``) with ``table`` / ``dtypes``
    (for float64 truth inside ``ops.common.float64_truth``): the kept one for a held model
    (compiled on first use), else a new one."""
    wide = computing_truth()
    programs = _HELD.store(model)
    if programs is None:
        return Program(model, sg, table, dtypes, wide)
    key = (id(sg), id(table), id(dtypes), wide)
    found = programs.get(key)
    if found is None or found[0] is not sg or found[1] is not table or found[2] is not dtypes:
        if len(programs) >= _PROGRAMS_PER_MODEL:
            programs.clear()
        found = programs[key] = (sg, table, dtypes, Program(model, sg, table, dtypes, wide, frozen=True))
    return found[3]


def run_subgraph(model: Model, sg: Subgraph, inputs: list[tuple[np.ndarray | None, list[int]]],
                 relaxed: bool = False, table=None, dtypes=None, *, loop_timeout_ns: int | None = None,
                 deadline_ns: int | None = None, intercept=None, _depth: int = 0) -> list[np.ndarray]:
    """Run ``sg`` given one (value or None if omitted, dims) per subgraph input, with the
    kernels of ``table`` (OperationType -> OperationDef; default: the operation table).
    A driver running extension operations puts their kernels in ``table`` under their int
    codes and gives ``dtypes`` (extension operand type code -> numpy dtype). IF/WHILE run
    ``model.referenced`` subgraphs; ``loop_timeout_ns`` (None: 2 s, clamped to 15 s) and
    ``deadline_ns`` bound each WHILE; ``deadline_ns`` (absolute ``time.monotonic_ns()``) is
    also checked before every operation, so a long loop-free model ends the
    same way. ``intercept(k, ctx, results) -> results``, if given, sees
    each operation ``k`` of this subgraph after its kernel ran (``ctx``: the
    :class:`OpContext`, input views with their values) and may return other results of the
    same shapes (an oracle's alternative answers; not passed into referenced subgraphs).

    Returns one numpy array per subgraph output. Raises HalError(GENERAL_FAILURE) naming the
    operation when a kernel rejects its operands, a computed shape contradicts the model,
    an input bound with no value is not optional, or an inferred output shape is past the
    size bounds (2^31 - 1 bytes, :data:`MAX_REFERENCE_ELEMENTS`; checked before the kernel
    allocates anything); HalError(MISSED_DEADLINE_TRANSIENT) when a WHILE runs past the loop
    timeout or the deadline, or the deadline passes between two operations.
    """
    if loop_timeout_ns is None:
        loop_timeout_ns = LOOP_TIMEOUT_DEFAULT_NS
    loop_timeout_ns = min(max(int(loop_timeout_ns), 0), LOOP_TIMEOUT_MAXIMUM_NS)
    prog = program(model, sg, table, dtypes)
    fields, declared, out_dtypes = prog.fields, prog.declared, prog.dtypes
    runner = None
    values: dict[int, np.ndarray | None] = {}
    dims_of: dict[int, tuple[int, ...]] = {}
    omitted: set[int] = set()
    for idx, (value, dims) in zip(sg.input_indexes, inputs):
        values[idx] = value
        dims_of[idx] = tuple(dims)
        if value is None:
            omitted.add(idx)
    with np.errstate(all="ignore"):
        for step_index, (step, release) in enumerate(zip(prog.steps, prog.release)):
            if step.failure is not None:
                raise step.failure
            # the deadline ends a long loop-free model as it ends a loop (HAL 1.3 IPreparedModel
            # execute*_1_3: MISSED_DEADLINE_* when the deadline passes during the execution);
            # one clock read per operation, and only when a deadline is set
            if deadline_ns is not None and time.monotonic_ns() >= deadline_ns:
                raise HalError(ErrorStatus.MISSED_DEADLINE_TRANSIENT,
                               f"{step.where}: execution deadline passed after {step_index} of "
                               f"{len(prog.steps)} operations")
            views_in = step.const_views.copy()  # constants' views (kernels never change a view)
            for j, idx in step.bound:
                t, scale, zp, cq, data = fields[idx]
                if idx in values:
                    views_in[j] = OperandView(t, dims_of[idx], scale, zp, values[idx], idx in omitted, cq, data)
                else:  # not computed yet (only in a model validation would reject)
                    views_in[j] = OperandView(t, declared[idx], scale, zp, None, False, cq, data)
            outputs = step.operation.outputs
            views_out = []
            for idx in outputs:
                t, scale, zp, cq, data = fields[idx]
                views_out.append(OperandView(t, declared[idx], scale, zp, None, False, cq, data))
            where, opdef = step.where, step.opdef
            ctx = OpContext(step.op_type, views_in, views_out, relaxed)
            if opdef is None:
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: no kernel for this operation")
            if omitted:
                _check_omitted(where, opdef, step.operation, views_in, views_out)
            elif step.has_no_value:
                ranks = tuple(len(v.dims) for v in views_in)
                if step.omission_checked != ranks:
                    _check_omitted(where, opdef, step.operation, views_in, views_out)
                    step.omission_checked = ranks
            try:
                if step.runs:  # control flow: run referenced subgraphs
                    if runner is None:
                        runner = _Runner(model, relaxed, table, dtypes, loop_timeout_ns, deadline_ns, _depth)
                    results = opdef.run(ctx, runner)
                    if len(results) != len(outputs):
                        raise OperationError(f"gave {len(results)} values for {len(outputs)} outputs")
                    shapes = [tuple(int(d) for d in np.shape(r)) for r in results]
                    results = [np.asarray(r) for r in results]
                    for j, (idx, shape) in enumerate(zip(outputs, shapes)):
                        _check_output_size(where, j, idx, fields[idx][0], shape, dtypes)
                else:
                    shapes = [tuple(map(int, s)) for s in opdef.prepare(ctx)]
                    for j, (idx, shape) in enumerate(zip(outputs, shapes)):
                        dtype = out_dtypes[idx]
                        n = 1
                        for d in shape:
                            n *= d
                        if dtype is None or len(shape) > MAX_RANK or (shape and min(shape) < 0) or \
                                n > MAX_REFERENCE_ELEMENTS or n * dtype.itemsize > MAX_OPERAND_BYTES:
                            _check_output_size(where, j, idx, fields[idx][0], shape, dtypes)
                    for view, shape in zip(views_out, shapes):
                        view.dims = shape
                    results = opdef.execute(ctx)
            except LoopTimeoutError as e:
                raise HalError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, f"{where}: {e}") from None
            except OperationError as e:
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: {e}") from None
            except HalError as e:
                if step.runs:
                    raise HalError(e.status, f"{where}: {e.message}", e.output_shapes) from None
                raise
            except RecursionError:
                raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: control flow nested too deep") from None
            except Exception as e:  # a reference kernel bug must not crash the caller
                raise HalError(ErrorStatus.GENERAL_FAILURE,
                               f"{where}: reference kernel raised {type(e).__name__}: {e}") from e
            if intercept is not None:
                results = intercept(step_index, ctx, results)
            for j, (idx, shape, result) in enumerate(zip(outputs, shapes, results)):
                decl = declared[idx]
                if result.shape != shape:
                    raise HalError(ErrorStatus.GENERAL_FAILURE,
                                   f"{where}: kernel produced shape {result.shape} for output {j}, "
                                   f"prepare inferred {shape}")
                if decl and decl != shape and (len(decl) != len(shape) or
                                               any(d not in (0, s) for d, s in zip(decl, shape))):
                    raise HalError(ErrorStatus.GENERAL_FAILURE,
                                   f"{where}: output {j} (operand {idx}) has shape {list(shape)}, "
                                   f"the model declares {list(decl)}")
                # asarray(order="C"), not ascontiguousarray, which would make a scalar output
                # (RANK's INT32) 1-D
                dtype = out_dtypes[idx]
                values[idx] = np.asarray(result, dtype=dtype if dtype is not None else
                                         _dtype(fields[idx][0], dtypes), order="C")
                dims_of[idx] = shape
            for idx in release:
                values.pop(idx, None)
    return [values[idx] for idx in sg.output_indexes]


def execute(model: Model, request: Request, table=None, dtypes=None, *,
            loop_timeout_ns: int | None = None, deadline_ns: int | None = None) -> list[OutputShape]:
    """Run ``model`` (validated) on ``request`` (validated), writing outputs into the
    request's pools; ``table`` overrides the operation table's kernels (test drivers) and
    ``dtypes`` gives extension operand types their numpy dtypes (see :func:`run_subgraph`).
    ``loop_timeout_ns`` / ``deadline_ns`` bound WHILE loops (None: those of the enclosing
    :func:`execution_limits`, else a 2 s loop timeout and no deadline).

    Returns one OutputShape per output (the actual dimensions, inferred at execution). Raises
    HalError: GENERAL_FAILURE when an operation fails; MISSED_DEADLINE_TRANSIENT when a WHILE
    runs past the loop timeout or the deadline; OUTPUT_INSUFFICIENT_SIZE (with
    ``output_shapes``, the actual dimensions) when an output buffer is too small for the
    computed result.
    """
    default_loop, default_deadline = _LIMITS.get()
    loop_timeout_ns = default_loop if loop_timeout_ns is None else loop_timeout_ns
    deadline_ns = default_deadline if deadline_ns is None else deadline_ns
    sg = model.main
    inputs = []
    for j, (arg, idx) in enumerate(zip(request.inputs, sg.input_indexes)):
        operand = sg.operands[idx]
        if arg.has_no_value:
            inputs.append((None, list(operand.dimensions)))
            continue
        dims = merged_dimensions(f"request input {j}", operand, arg.dimensions)
        inputs.append((_read(request.pools[arg.location.pool_index], arg.location,
                             operand.type, dims, dtypes), dims))
    results = run_subgraph(model, sg, inputs, model.relax_computation_float32_to_float16, table, dtypes,
                           loop_timeout_ns=loop_timeout_ns, deadline_ns=deadline_ns)
    return write_outputs(request, sg, results)


def write_outputs(request: Request, sg, results) -> list[OutputShape]:
    """Write each computed output array of subgraph ``sg`` into its place in ``request``'s
    pools (one copy, bytes in memory order) and return its :class:`OutputShape`. Raises
    HalError(OUTPUT_INSUFFICIENT_SIZE) with every output's actual dimensions, writing
    nothing, when an output's region is too small (HAL ``execute``)."""
    shapes, sufficient = [], True
    for arg, idx, result in zip(request.outputs, sg.output_indexes, results):
        ok = arg.has_no_value or result.nbytes <= arg.location.length
        shapes.append(OutputShape(list(result.shape), ok))
        sufficient &= ok
    if not sufficient:
        raise HalError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE,
                       "output buffer too small: " + ", ".join(
                           f"output {j} needs {operand_byte_size(sg.operands[i].type, s.dimensions)} bytes"
                           for j, (i, s) in enumerate(zip(sg.output_indexes, shapes))
                           if not s.is_sufficient), output_shapes=shapes)
    for arg, result in zip(request.outputs, results):
        if arg.has_no_value:
            continue
        off, size = arg.location.offset, result.nbytes
        buffer = request.pools[arg.location.pool_index].buffer
        try:  # one copy, straight into the pool
            np.frombuffer(buffer, np.uint8, size, off)[:] = np.ascontiguousarray(result).reshape(-1).view(np.uint8)
        except (TypeError, ValueError, BufferError):  # not a writable buffer numpy maps, or empty
            buffer[off:off + size] = result.tobytes()
    return shapes
