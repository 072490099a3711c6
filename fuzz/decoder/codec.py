"""The decoder's entry point and its inverse: :func:`decode` (fuzz bytes to a
:class:`FuzzCase`), :func:`encode` (a corpus model to the literal-mode bytes that decode back
to it: the seeds) and :func:`model_difference` (what a round trip must preserve)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from runtime.testing.test_model import TestModel, TestSubgraph
from runtime.types import operand_dtype

from .common import (DATA_LIFETIMES, MAX_OPERANDS, MAX_REFERENCED, N_OPERATION_CODES, ByteReader,
                     ByteWriter, L, Rejected, T, count_consumers)
from .generator import decode_generated
from .literal import decode_literal
from .tweaks import Tweak, decode_tweaks


@dataclass
class FuzzCase:
    """What one fuzz input decodes to: the test ``model``, its ``mode`` ("literal" or
    "generated"), the ``output_plan`` of the request's output buffers (0 exact, 1 one byte
    short, 2 generous) and the HAL ``tweaks``."""

    model: TestModel
    mode: str
    output_plan: int = 0
    tweaks: list[Tweak] = field(default_factory=list)


def decode(data: bytes, hostility: int | None = None) -> FuzzCase:
    """The :class:`FuzzCase` of fuzz input ``data``. Raises :class:`Rejected` for an empty
    input only; any other byte string decodes to a model that obeys the corpus schema.
    ``hostility``: generated mode's escape chance in 1/256 (0..256), overriding the level
    the header names (None: the header's)."""
    if not data:
        raise Rejected("empty input")
    r = ByteReader(data)
    header = r.u8()
    if header & 1:
        model, mode = decode_generated(r, header, hostility), "generated"
    else:
        model, mode = decode_literal(r, header), "literal"
    plan = (header >> 6) & 3
    tweaks = decode_tweaks(r) if header & 8 else []
    return FuzzCase(model, mode, max(plan - 1, 0), tweaks)


def encode(tm: TestModel, expected_outputs: bool = True, max_raw_bytes: int | None = None) -> bytes:
    """Bytes that :func:`decode` maps back to ``tm`` (literal mode): same operands, data,
    operations, inputs, outputs, referenced subgraphs and relaxed flag; names and the other
    metadata are not encoded. ``expected_outputs=False`` leaves main outputs without data
    (seeds); ``max_raw_bytes`` stores longer data as a hash fill instead (same shape, other
    values).

    Raises ValueError for what the format cannot hold: more than MAX_OPERANDS operands or
    MAX_REFERENCED referenced subgraphs, ranks above 127, negative indexes, operation codes
    outside NNAPI's 106."""
    if len(tm.referenced) > MAX_REFERENCED:
        raise ValueError(f"{len(tm.referenced)} referenced subgraphs, at most {MAX_REFERENCED}")
    w = ByteWriter()
    explicit = any(o.number_of_consumers != c for sg in (tm.main, *tm.referenced)
                   for o, c in zip(sg.operands, count_consumers(sg.operands, sg.operations)))
    w.u8((2 if tm.is_relaxed else 0) | (4 if explicit else 0))
    _encode_subgraph(w, tm.main, explicit, expected_outputs, max_raw_bytes)
    w.varint(len(tm.referenced))
    for sg in tm.referenced:
        _encode_subgraph(w, sg, explicit, expected_outputs, max_raw_bytes)
    return bytes(w.out)


def _encode_subgraph(w: ByteWriter, sg: TestSubgraph, explicit: bool, expected_outputs: bool,
                     max_raw_bytes: int | None) -> None:
    w.varint(len(sg.operands))
    if len(sg.operands) > MAX_OPERANDS:
        raise ValueError(f"{len(sg.operands)} operands, at most {MAX_OPERANDS}")
    for o in sg.operands:
        rank = len(o.dimensions)
        if rank > 127:
            raise ValueError(f"rank {rank} is above 127")
        w.u8(int(o.type))
        w.u8(rank if rank <= 8 else 0x80 + rank)
        for d in o.dimensions:
            w.varint(int(d) & 0xFFFFFFFF)
        w.f32(o.scale)
        w.zigzag(int(o.zero_point))
        w.u8(int(o.lifetime) | (0x80 if o.is_ignored else 0))
        if explicit:
            w.varint(int(o.number_of_consumers))
        if o.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            scales, channel_dim = o.channel_quant or ((), 0)
            w.u8(channel_dim)
            w.varint(len(scales))
            for s in scales:
                w.f32(s)
        if o.lifetime in DATA_LIFETIMES:
            data = o.data
            if o.lifetime == L.SUBGRAPH_OUTPUT and not expected_outputs:
                data = None
            if data is None:
                w.u8(0)
                continue
            raw = np.ascontiguousarray(data, operand_dtype(o.type)).tobytes()
            if max_raw_bytes is not None and len(raw) > max_raw_bytes:
                w.u8(2)
                w.u32(int.from_bytes(raw[:4].ljust(4, b"\0"), "little"))
            else:
                w.u8(1)
                w.varint(len(raw))
                w.raw(raw)
    w.varint(len(sg.operations))
    for op in sg.operations:
        if not 0 <= int(op.type) < N_OPERATION_CODES:
            raise ValueError(f"operation code {int(op.type)} cannot be encoded")
        w.u8(int(op.type))
        for idxs in (op.inputs, op.outputs):
            w.varint(len(idxs))
            for i in idxs:
                w.varint(int(i))
    for idxs in (sg.input_indexes, sg.output_indexes):
        w.varint(len(idxs))
        for i in idxs:
            w.varint(int(i))


def _f32_bits(values) -> bytes:
    """binary32 bits of ``values``, every NaN made the same (JSON keeps no NaN payload)."""
    arr = np.asarray(values, np.float64).astype(np.float32)
    arr[np.isnan(arr)] = np.float32("nan")
    return arr.tobytes()


def model_difference(a: TestModel, b: TestModel, data: bool = True) -> str | None:
    """The first difference between the graphs of ``a`` and ``b`` (None: same operands,
    operations, inputs, outputs, relaxed flag and, with ``data``, the same data bytes;
    scales compare as binary32, any NaN equal to any other)."""
    if a.is_relaxed != b.is_relaxed:
        return "is_relaxed"
    if len(a.referenced) != len(b.referenced):
        return f"{len(a.referenced)} vs {len(b.referenced)} referenced subgraphs"
    for name, sa, sb in [("main", a.main, b.main)] + [(f"referenced {k}", x, y) for k, (x, y)
                                                       in enumerate(zip(a.referenced, b.referenced))]:
        diff = _subgraph_difference(sa, sb, data)
        if diff is not None:
            return diff if name == "main" else f"{name}: {diff}"
    return None


def _subgraph_difference(sa: TestSubgraph, sb: TestSubgraph, data: bool) -> str | None:
    if len(sa.operands) != len(sb.operands):
        return f"{len(sa.operands)} vs {len(sb.operands)} operands"
    for i, (x, y) in enumerate(zip(sa.operands, sb.operands)):
        for f in ("type", "dimensions", "zero_point", "lifetime", "number_of_consumers", "is_ignored"):
            if getattr(x, f) != getattr(y, f):
                return f"operand {i}: {f} {getattr(x, f)!r} vs {getattr(y, f)!r}"
        if _f32_bits([x.scale]) != _f32_bits([y.scale]):
            return f"operand {i}: scale {x.scale!r} vs {y.scale!r}"
        cx, cy = ((None if c is None else (_f32_bits(c[0]), c[1])) for c in (x.channel_quant, y.channel_quant))
        if cx != cy:
            return f"operand {i}: channel_quant {cx} vs {cy}"
        if data:
            if (x.data is None) != (y.data is None):
                said = ["null" if o.data is None else "set" for o in (x, y)]
                return f"operand {i}: data {said[0]} vs {said[1]}"
            if x.data is not None:
                dt = operand_dtype(x.type)
                if x.data.shape != y.data.shape or \
                        np.ascontiguousarray(x.data, dt).tobytes() != np.ascontiguousarray(y.data, dt).tobytes():
                    return f"operand {i}: data differs"
    if len(sa.operations) != len(sb.operations):
        return f"{len(sa.operations)} vs {len(sb.operations)} operations"
    for k, (x, y) in enumerate(zip(sa.operations, sb.operations)):
        if (x.type, list(x.inputs), list(x.outputs)) != (y.type, list(y.inputs), list(y.outputs)):
            return f"operation {k} differs"
    if list(sa.input_indexes) != list(sb.input_indexes) or list(sa.output_indexes) != list(sb.output_indexes):
        return "model inputs or outputs differ"
    return None
