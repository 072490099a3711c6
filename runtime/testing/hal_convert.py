"""Turn a corpus :class:`TestModel` into a HAL :class:`Model` and :class:`Request` (the VTS
path and the reference oracle use this; the CTS goes through the front end instead)."""
from __future__ import annotations

import numpy as np

from ..hal.memory import SharedMemory
from ..hal.types import (DataLocation, Model, Operand, Operation, Request, RequestArgument,
                         Subgraph, SymmPerChannelQuantParams)
from ..hal.validate import operand_byte_size
from ..nnapi.model import pack_constants
from ..types import OperandLifeTime, operand_dtype
from .test_model import TestModel, TestSubgraph

L = OperandLifeTime
ALIGN = 8


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _raw(operand) -> bytes:
    return np.ascontiguousarray(operand.data, dtype=operand_dtype(operand.type)).tobytes()


def to_hal_model(tm: TestModel) -> Model:
    """The HAL model of ``tm``: CONSTANT_COPY values in ``operand_values``, CONSTANT_REFERENCE
    values of every subgraph in one shared memory pool at non-zero offsets
    (:func:`~runtime.nnapi.model.pack_constants`), SUBGRAPH operands pointing at ``referenced``."""
    values = bytearray()
    refs = [_raw(o) for ts in (tm.main, *tm.referenced) for o in ts.operands
            if o.lifetime == L.CONSTANT_REFERENCE and o.data is not None]
    ref, offsets = pack_constants(refs)
    next_ref = iter(offsets)

    def subgraph(ts: TestSubgraph) -> Subgraph:
        operands = []
        for o in ts.operands:
            loc = DataLocation()
            if o.lifetime == L.CONSTANT_COPY and o.data is not None:
                raw = _raw(o)
                values.extend(b"\0" * (_align(len(values)) - len(values)))
                loc = DataLocation(0, len(values), len(raw))
                values.extend(raw)
            elif o.lifetime == L.CONSTANT_REFERENCE and o.data is not None:
                loc = DataLocation(0, next(next_ref), o.data.size * operand_dtype(o.type).itemsize)
            elif o.lifetime == L.SUBGRAPH:
                loc = DataLocation(0, int(o.data.reshape(-1)[0]), 0)
            extra = SymmPerChannelQuantParams(*o.channel_quant) if o.channel_quant else None
            operands.append(Operand(o.type, list(o.dimensions), o.number_of_consumers, o.scale,
                                    o.zero_point, o.lifetime, loc, extra))
        ops = [Operation(op.type, list(op.inputs), list(op.outputs)) for op in ts.operations]
        return Subgraph(operands, ops, list(ts.input_indexes), list(ts.output_indexes))

    main = subgraph(tm.main)
    referenced = [subgraph(s) for s in tm.referenced]
    pools = [SharedMemory(data=ref)] if ref else []
    return Model(main, referenced, bytes(values), pools, tm.is_relaxed)


def expected_output_size(tm: TestModel, j: int) -> int:
    """Bytes of output ``j``'s expected value (at least 1, as the AOSP harness binds)."""
    o = tm.main.operands[tm.main.output_indexes[j]]
    if o.data is None:
        return 1
    return max(o.data.size * operand_dtype(o.type).itemsize, 1)


def to_hal_request(tm: TestModel) -> Request:
    """A request with ``tm``'s example inputs in pool 0 and room for each expected output in
    pool 1 (inputs with no data are passed with no value)."""
    ins, in_bytes = [], bytearray()
    for idx in tm.main.input_indexes:
        o = tm.main.operands[idx]
        if o.data is None:
            ins.append(RequestArgument(has_no_value=True))
            continue
        raw = _raw(o)
        in_bytes.extend(b"\0" * (_align(len(in_bytes)) - len(in_bytes)))
        ins.append(RequestArgument(False, DataLocation(0, len(in_bytes), len(raw)),
                                   list(o.data.shape) if o.data.ndim else []))
        in_bytes.extend(raw)
    outs, offset = [], 0
    for j in range(len(tm.main.output_indexes)):
        size = expected_output_size(tm, j)
        offset = _align(offset)
        outs.append(RequestArgument(False, DataLocation(1, offset, size), []))
        offset += size
    return Request(ins, outs, [SharedMemory(data=bytes(in_bytes) or b"\0"), SharedMemory(max(offset, 1))])


def read_outputs(tm: TestModel, request: Request, shapes) -> list[np.ndarray]:
    """Output values from ``request``'s pools, shaped by ``shapes`` (OutputShape list)."""
    outs = []
    for j, (arg, idx) in enumerate(zip(request.outputs, tm.main.output_indexes)):
        o = tm.main.operands[idx]
        dims = shapes[j].dimensions
        n = operand_byte_size(o.type, dims) if dims else operand_dtype(o.type).itemsize
        pool = request.pools[arg.location.pool_index]
        raw = bytes(pool.buffer[arg.location.offset:arg.location.offset + n])
        outs.append(np.frombuffer(raw, dtype=operand_dtype(o.type)).reshape(dims))
    return outs
