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
"""
from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from . import ops
from .errors import HalError, OperationError
from .extensions import is_extension_type, type_name
from .hal.types import Model, OutputShape, Request, Subgraph
from .hal.validate import (MAX_OPERAND_BYTES, MAX_RANK, constant_value, merged_dimensions,
                           operand_byte_size, operand_view)
from .ops.base import OpContext
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


def run_subgraph(model: Model, sg: Subgraph, inputs: list[tuple[np.ndarray | None, list[int]]],
                 relaxed: bool = False, table=None, dtypes=None, *, loop_timeout_ns: int | None = None,
                 deadline_ns: int | None = None, _depth: int = 0) -> list[np.ndarray]:
    """Run ``sg`` given one (value or None if omitted, dims) per subgraph input, with the
    kernels of ``table`` (OperationType -> OperationDef; default: the operation table).
    A driver running extension operations puts their kernels in ``table`` under their int
    codes and gives ``dtypes`` (extension operand type code -> numpy dtype). IF/WHILE run
    ``model.referenced`` subgraphs; ``loop_timeout_ns`` (None: 2 s, clamped to 15 s) and
    ``deadline_ns`` bound each WHILE.

    Returns one numpy array per subgraph output. Raises HalError(GENERAL_FAILURE) naming the
    operation when a kernel rejects its operands, a computed shape contradicts the model,
    an input bound with no value is not optional, or an inferred output shape is past the
    size bounds (2^31 - 1 bytes, :data:`MAX_REFERENCE_ELEMENTS`; checked before the kernel
    allocates anything); HalError(MISSED_DEADLINE_TRANSIENT) when a WHILE runs past the loop
    timeout or the deadline.
    """
    if loop_timeout_ns is None:
        loop_timeout_ns = LOOP_TIMEOUT_DEFAULT_NS
    loop_timeout_ns = min(max(int(loop_timeout_ns), 0), LOOP_TIMEOUT_MAXIMUM_NS)
    runner = None
    values: dict[int, np.ndarray | None] = {}
    dims_of: dict[int, tuple[int, ...]] = {}
    omitted: set[int] = set()
    for idx, (value, dims) in zip(sg.input_indexes, inputs):
        values[idx] = value
        dims_of[idx] = tuple(dims)
        if value is None:
            omitted.add(idx)
    for k, operation in enumerate(sg.operations):
        op_type = operation.type if is_extension_type(operation.type) else OperationType(operation.type)
        where = f"operation {k} ({type_name(op_type)})"
        views_in = []
        for idx in operation.inputs:
            o = sg.operands[idx]
            if o.lifetime == L.NO_VALUE:
                views_in.append(operand_view(o, None, omitted=True))
            elif idx in values:
                views_in.append(operand_view(o, values[idx], idx in omitted, dims_of[idx]))
            else:
                views_in.append(operand_view(o, constant_value(model, o, _dtype(o.type, dtypes))))
        views_out = [operand_view(sg.operands[idx]) for idx in operation.outputs]
        ctx = OpContext(op_type, views_in, views_out, relaxed)
        opdef = (table or ops.REGISTRY).get(op_type)
        if opdef is None:
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: no kernel for this operation")
        _check_omitted(where, opdef, operation, views_in, views_out)
        try:
            if getattr(opdef, "run", None) is not None:  # control flow: run referenced subgraphs
                if runner is None:
                    runner = _Runner(model, relaxed, table, dtypes, loop_timeout_ns, deadline_ns, _depth)
                results = opdef.run(ctx, runner)
                if len(results) != len(operation.outputs):
                    raise OperationError(f"gave {len(results)} values for {len(operation.outputs)} outputs")
                shapes = [tuple(int(d) for d in np.shape(r)) for r in results]
                results = [np.asarray(r) for r in results]
                for j, (idx, shape) in enumerate(zip(operation.outputs, shapes)):
                    _check_output_size(where, j, idx, sg.operands[idx].type, shape, dtypes)
            else:
                shapes = [tuple(int(d) for d in s) for s in opdef.prepare(ctx)]
                for j, (idx, shape) in enumerate(zip(operation.outputs, shapes)):
                    _check_output_size(where, j, idx, sg.operands[idx].type, shape, dtypes)
                for view, shape in zip(views_out, shapes):
                    view.dims = shape
                with np.errstate(all="ignore"):
                    results = opdef.execute(ctx)
        except LoopTimeoutError as e:
            raise HalError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, f"{where}: {e}") from None
        except OperationError as e:
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: {e}") from None
        except HalError as e:
            if getattr(opdef, "run", None) is not None:
                raise HalError(e.status, f"{where}: {e.message}", e.output_shapes) from None
            raise
        except RecursionError:
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: control flow nested too deep") from None
        except Exception as e:  # a reference kernel bug must not crash the caller
            raise HalError(ErrorStatus.GENERAL_FAILURE,
                           f"{where}: reference kernel raised {type(e).__name__}: {e}") from e
        for j, (idx, shape, result) in enumerate(zip(operation.outputs, shapes, results)):
            declared = sg.operands[idx].dimensions
            if tuple(result.shape) != shape:
                raise HalError(ErrorStatus.GENERAL_FAILURE,
                               f"{where}: kernel produced shape {result.shape} for output {j}, "
                               f"prepare inferred {shape}")
            if declared and (len(declared) != len(shape) or
                             any(d not in (0, s) for d, s in zip(declared, shape))):
                raise HalError(ErrorStatus.GENERAL_FAILURE,
                               f"{where}: output {j} (operand {idx}) has shape {list(shape)}, "
                               f"the model declares {list(declared)}")
            # asarray(order="C"), not ascontiguousarray, which would make a scalar output
            # (RANK's INT32) 1-D
            values[idx] = np.asarray(result, dtype=_dtype(sg.operands[idx].type, dtypes), order="C")
            dims_of[idx] = shape
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
    shapes, sufficient = [], True
    for arg, idx, result in zip(request.outputs, sg.output_indexes, results):
        data = result.tobytes()
        ok = arg.has_no_value or len(data) <= arg.location.length
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
        data = result.tobytes()
        off = arg.location.offset
        request.pools[arg.location.pool_index].buffer[off:off + len(data)] = data
    return shapes
