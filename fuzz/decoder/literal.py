"""Literal mode (header bit 0 clear): the bytes spell a model operand by operand, the layout
:func:`fuzz.decoder.encode` writes (see the byte format in :mod:`fuzz.decoder`)."""
from __future__ import annotations

import numpy as np

from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import operand_dtype

from .common import (DATA_LIFETIMES, LIFETIME_OF_CODE, MAX_ELEMENTS, MAX_IO, MAX_OPERANDS,
                     MAX_OPERATIONS, MAX_RAW_BYTES, MAX_REFERENCED, MAX_SCALES, N_OPERATION_CODES,
                     OPERATION_OF_CODE, TYPE_OF_CODE, ByteReader, L, T, count_consumers, dims_known,
                     fill_values, fit, from_raw, new_model, prod, table_codes)


_I64_MIN, _I64_MAX = -2**63, 2**63 - 1
_SUBGRAPH, _PER_CHANNEL = L.SUBGRAPH, T.TENSOR_QUANT8_SYMM_PER_CHANNEL
_DATA_LIFETIMES = frozenset(DATA_LIFETIMES)
_IO_LIFETIMES = frozenset((L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT))


def read_data(r: ByteReader, t, dims) -> np.ndarray | None:
    """The data of an operand of type ``t`` and ``dims``: a kind byte (null, raw, hash fill,
    one repeated byte), then its payload; fitted to the schema (:func:`fit`)."""
    kind = r.u8() % 4
    if kind == 0:
        return None
    if kind == 1:
        n = min(r.varint(), MAX_RAW_BYTES)
        return fit(t, dims, from_raw(t, r.take(n)))
    count = prod(dims) if dims_known(t, dims) else 1
    if count > MAX_ELEMENTS:
        if kind == 2:
            r.u32()
        else:
            r.u8()
        return None
    if kind == 2:
        return fit(t, dims, fill_values(t, count, r.u32()))
    return fit(t, dims, from_raw(t, bytes([r.u8()]) * (count * operand_dtype(t).itemsize)))


def _index_list(r: ByteReader) -> list[int]:
    out = []
    varint = r.varint
    for _ in range(min(varint(), MAX_IO)):
        if r.pos >= r.n:
            break
        out.append(varint())
    return out


def _decode_subgraph(r: ByteReader, explicit_consumers: bool, referenced: bool) -> TestSubgraph:
    """One literal subgraph; in a ``referenced`` one, inputs and outputs carry no data (the
    schema's rule: values flow in from the calling IF/WHILE), though their bytes are read."""
    operands, explicit = [], []
    u8, varint, f32 = r.u8, r.varint, r.f32  # bound once: the loop below is the decoder's hot path
    for _ in range(min(varint(), MAX_OPERANDS)):
        if r.pos >= r.n:  # an exhausted input declares no more operands
            break
        t = TYPE_OF_CODE[u8() % 16]
        b = u8()
        rank = b % 9 if b < 0x80 else b - 0x80
        dims = [varint() & 0xFFFFFFFF for _ in range(rank)]
        scale = f32()
        zp = r.zigzag()
        if not _I64_MIN <= zp <= _I64_MAX:
            zp = max(min(zp, _I64_MAX), _I64_MIN)
        b = u8()
        lifetime = LIFETIME_OF_CODE[(b & 0x7F) % 7]
        ignored = bool(b & 0x80)
        if lifetime == _SUBGRAPH:
            t = T.SUBGRAPH  # its data is a uint32 subgraph index, which only that type holds
        explicit.append(varint() if explicit_consumers else None)
        cq = None
        if t == _PER_CHANNEL:
            channel_dim = u8()
            cq = (tuple(f32() for _ in range(min(varint(), MAX_SCALES))), channel_dim)
        data = None
        if lifetime in _DATA_LIFETIMES:
            data = read_data(r, t, dims)
            if referenced and lifetime in _IO_LIFETIMES:
                data = None
        if lifetime == _SUBGRAPH:  # a scalar: no dimensions
            dims = []
            data = (np.zeros(1, np.uint32) if data is None else data.reshape(-1)[:1]).reshape(())
        operands.append(TestOperand(t, dims, scale, zp, lifetime, 0, ignored, cq, data))
    operations = []
    table = table_codes()
    for _ in range(min(r.varint(), MAX_OPERATIONS)):
        if r.pos >= r.n:
            break
        b = r.u8()
        op_type = OPERATION_OF_CODE[b] if b < N_OPERATION_CODES else table[(b - N_OPERATION_CODES) % len(table)]
        ins = _index_list(r)
        outs = _index_list(r)
        operations.append(TestOperation(op_type, ins, outs))
    inputs = _index_list(r)
    outputs = _index_list(r)
    counts = count_consumers(operands, operations)
    for i, o in enumerate(operands):
        o.number_of_consumers = explicit[i] if explicit[i] is not None else counts[i]
    return TestSubgraph(operands, operations, inputs, outputs)


def decode_literal(r: ByteReader, header: int) -> TestModel:
    """The literal-mode model of the bytes after ``header`` (header bit 1: relaxed; bit 2:
    explicit consumer counts)."""
    explicit_consumers = bool(header & 4)
    model = new_model(_decode_subgraph(r, explicit_consumers, False), bool(header & 2))
    for _ in range(min(r.varint(), MAX_REFERENCED)):
        if not r.remaining:
            break
        model.referenced.append(_decode_subgraph(r, explicit_consumers, True))
    return model
