"""The CPU executor: runs a validated HAL model on a request with the operation table's
reference kernels (the oracle every suite compares drivers against)."""
from __future__ import annotations

import numpy as np

from . import ops
from .errors import HalError, OperationError
from .extensions import is_extension_type, type_name
from .hal.types import Model, OutputShape, Request, Subgraph
from .hal.validate import (MAX_OPERAND_BYTES, constant_value, merged_dimensions, operand_byte_size,
                           operand_view)
from .ops.base import OpContext
from .types import ErrorStatus, OperandLifeTime, OperationType, operand_dtype

L = OperandLifeTime
#: Resource bound of the reference executor: no operation output above this many elements
#: (the kernels compute in float64, 8 bytes per element). A larger, valid model fails with
#: GENERAL_FAILURE naming the operation, before anything is allocated.
MAX_REFERENCE_ELEMENTS = 1 << 24


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
                 relaxed: bool = False, table=None, dtypes=None) -> list[np.ndarray]:
    """Run ``sg`` given one (value or None if omitted, dims) per subgraph input, with the
    kernels of ``table`` (OperationType -> OperationDef; default: the operation table).
    A driver running extension operations puts their kernels in ``table`` under their int
    codes and gives ``dtypes`` (extension operand type code -> numpy dtype).

    Returns one numpy array per subgraph output. Raises HalError(GENERAL_FAILURE) naming the
    operation when a kernel rejects its operands, a computed shape contradicts the model,
    an input bound with no value is not optional, or an inferred output shape is past the
    size bounds (2^31 - 1 bytes, :data:`MAX_REFERENCE_ELEMENTS`; checked before the kernel
    allocates anything).
    """
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
            shapes = [tuple(int(d) for d in s) for s in opdef.prepare(ctx)]
            for j, (idx, shape) in enumerate(zip(operation.outputs, shapes)):
                _check_output_size(where, j, idx, sg.operands[idx].type, shape, dtypes)
            for view, shape in zip(views_out, shapes):
                view.dims = shape
            with np.errstate(all="ignore"):
                results = opdef.execute(ctx)
        except OperationError as e:
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: {e}") from None
        except HalError:
            raise
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


def execute(model: Model, request: Request, table=None, dtypes=None) -> list[OutputShape]:
    """Run ``model`` (validated) on ``request`` (validated), writing outputs into the
    request's pools; ``table`` overrides the operation table's kernels (test drivers) and
    ``dtypes`` gives extension operand types their numpy dtypes (see :func:`run_subgraph`).

    Returns one OutputShape per output. Raises HalError: GENERAL_FAILURE when an operation
    fails; OUTPUT_INSUFFICIENT_SIZE (with ``output_shapes``) when an output buffer is too
    small for the computed result.
    """
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
    results = run_subgraph(model, sg, inputs, model.relax_computation_float32_to_float16, table, dtypes)
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
