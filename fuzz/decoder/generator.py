"""Generated mode (header bit 0 set): the bytes steer a generator of valid-ish models drawn
from the operation table, the same way random graphs are (:mod:`runtime.ops.generation`):
each operation is *drafted* by the table's defaults and the row's own ``generate`` hook,
with :class:`~fuzz.decoder.byterng.ByteRng` in place of a numpy Generator, so the input's
bytes choose the shapes, parameters (by Arg name: :mod:`runtime.ops.domains`; axes in
[-rank, rank), [0, rank) for ``nonnegative_axis`` rows) and quantizations (``fixed_quant``
of the signature's slots). Nothing here names an operation: a new table row is fuzzed as
soon as it is registered.

Hostility: a chance in 256 (:data:`HOSTILITY_LEVELS` by the header's level, or the caller's
value) that a drafted value is pushed outside its domain, so validation is still probed:
an operation code the table may lack, an out-of-domain scalar or axis, a parameter tensor
entry, an absurd rank or dimension, a hostile scale or zero point, a wrong fixed
quantization, broken per-channel parameters, a hostile float in the data, a required
input omitted, a link to an operand of the wrong shape. One escape byte is read per input
and per quantized output whatever the level, so a level change keeps the other decisions.
"""
from __future__ import annotations

import numpy as np

from runtime import ops
from runtime.ops.base import OpContext, OperandView, OperationDef
from runtime.ops.generation import (Draft, Primary, Slot, SYMMETRIC, draft, draft_defaults, fill,
                                    first_tensor, outside_domain, quant_limits, variadic_signature)
from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import OperationType, is_quantized_type, is_tensor_type, operand_dtype

from .byterng import ByteRng
from .common import (HOSTILE_DIMS, HOSTILE_FLOATS, HOSTILE_INTS, MAX_ELEMENTS, N_OPERATION_CODES,
                     OPERATION_OF_CODE, SCALES, ByteReader, L, T, count_consumers, dims_known,
                     fill_values, fit, from_raw, new_model, prod, table_rows, to_f32)
from .flow import build_control_flow, has_references

#: Escape chance (in 1/256) of a drafted value, by the header's hostility level (bits 4-5):
#: never, 1/256, 1/16, 1/4.
HOSTILITY_LEVELS = (0, 1, 16, 64)
#: Largest element count of a drafted shape (the table's hooks may go past it for weights).
DRAFT_MAX_ELEMENTS = 1024
#: Lifetimes of a new data operand and of a new parameter tensor, by a byte % 8.
_DATA_LIFETIMES = (L.SUBGRAPH_INPUT, L.SUBGRAPH_INPUT, L.SUBGRAPH_INPUT, L.SUBGRAPH_INPUT,
                   L.CONSTANT_COPY, L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_INPUT)
_PARAMETER_LIFETIMES = (L.CONSTANT_COPY, L.CONSTANT_COPY, L.CONSTANT_COPY, L.CONSTANT_COPY,
                        L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_INPUT, L.SUBGRAPH_INPUT)


def _wrap(v, dtype: np.dtype):
    """``v`` stored as ``dtype`` the way raw bytes would hold it (integers wrap modulo the
    width; floats round, overflowing to infinity; bools are truthiness)."""
    if dtype.kind in "iu":
        bits = dtype.itemsize * 8
        return np.asarray(int(v) & ((1 << bits) - 1), np.dtype(f"u{dtype.itemsize}")).view(dtype)[()]
    if dtype.kind == "f":
        with np.errstate(all="ignore"):
            return dtype.type(v)
    return bool(v)


def _hostile_kinds(s: Slot) -> tuple[str, ...]:
    """What an escape may break in drafted input ``s`` (see :meth:`Generator.input`)."""
    if s.value is not None:
        return ("value", "omit", "dims") if s.is_tensor else ("value", "omit")
    return ("dims", "omit", "link", "values") + (("channels",) if s.channel_quant is not None else ())


class Generator:
    """Builds a generated-mode model decision by decision from reader ``r`` with an escape
    chance of ``hostility``/256 per drafted value (see the module docstring)."""

    def __init__(self, r: ByteReader, hostility: int):
        self.r = r
        self.rng = ByteRng(r)
        self.escape = 256 - max(0, min(int(hostility), 256))  # a byte >= it escapes
        self.table = table_rows()
        self.operands: list[TestOperand] = []
        self.operations: list[TestOperation] = []
        self.inputs: list[int] = []
        self.dims_of: dict[int, tuple] = {}  # known actual shapes (temporaries: inferred)
        self.referenced: list[TestSubgraph] = []  # IF / WHILE subgraphs
        self.readable: dict[T, list[int]] = {}  # by type: outputs and model inputs of known dimensions

    # --- primitives -------------------------------------------------------------------------
    def hostile(self) -> bool:
        """One escape byte: whether the next value leaves its domain."""
        return self.r.u8() >= self.escape

    def add(self, t, dims, lifetime, scale=0.0, zp=0, data=None, channel_quant=None) -> int:
        """Append an operand (a model input when ``lifetime`` is SUBGRAPH_INPUT); returns
        its index."""
        t = t if type(t) is T else T(t)
        dims = [int(d) for d in dims]
        self.operands.append(TestOperand(t, dims, to_f32(scale), int(zp), lifetime, 0, False,
                                         channel_quant, data))
        idx = len(self.operands) - 1
        if lifetime == L.SUBGRAPH_INPUT:
            self.inputs.append(idx)
        if dims_known(t, dims):
            self.dims_of[idx] = tuple(dims)
            if lifetime == L.SUBGRAPH_INPUT and data is not None:
                self.readable.setdefault(t, []).append(idx)
        return idx

    def output(self, t, dims, shape, scale, zp, ignored: bool) -> int:
        """Append an operation output declaring ``dims`` whose actual ``shape`` (None:
        unknown) later inputs may read."""
        idx = self.add(t, dims, L.TEMPORARY_VARIABLE, scale, zp)
        self.operands[idx].is_ignored = ignored
        if shape is not None:
            self.dims_of[idx] = tuple(shape)
            if not ignored:
                self.readable.setdefault(self.operands[idx].type, []).append(idx)
        return idx

    def fresh_quant(self, t) -> tuple[float, int]:
        """(scale, zero point) for a new operand of quantized type ``t`` outside a draft:
        a scale of :data:`SCALES`, a zero point across the type's range (0 if symmetric)."""
        scale = SCALES[self.r.u8() % len(SCALES)]
        if t in SYMMETRIC:
            return scale, 0
        lo, hi = quant_limits(t)
        return scale, self.rng.integers(lo, hi + 1)

    def plain_values(self, t, dims) -> np.ndarray | None:
        """Hash-filled values for a new operand of ``t`` / ``dims`` outside a draft (None
        when the dimensions are not known or too many)."""
        n = prod(dims) if dims_known(t, dims) else 0
        if n == 0 or n > MAX_ELEMENTS:
            return None
        return fill_values(t, n, self.r.u32()).reshape(tuple(dims))

    def earlier(self, t, ranks=None, exact: Slot | None = None, bounded: bool = False) -> list[int]:
        """Earlier operands an input of type ``t`` may read: operation outputs and model
        inputs with data, of known dimensions of a rank in ``ranks`` (None: any); ``exact``:
        only those with that slot's dimensions and quantization; ``bounded``: only shapes a
        draft may start from (every dimension >= 1, at most DRAFT_MAX_ELEMENTS elements)."""
        out = []
        for i in self.readable.get(t, ()):
            o, dims = self.operands[i], self.dims_of[i]
            if ranks is not None and len(dims) not in ranks:
                continue
            if bounded and (not dims or min(dims) < 1 or prod(dims) > DRAFT_MAX_ELEMENTS):
                continue
            if exact is not None and (list(dims) != list(exact.dims) or o.channel_quant is not None
                                      or exact.channel_quant is not None
                                      or (o.scale, o.zero_point) != (to_f32(exact.scale), exact.zero_point)):
                continue
            out.append(i)
        return out

    def pick(self, candidates: list[int]) -> int | None:
        """One byte: None (a quarter of the time, or without candidates), else one of
        ``candidates``, the latest most often."""
        b = self.r.u8()
        if b % 4 == 0 or not candidates:
            return None
        return candidates[-1 - (b >> 2) % len(candidates)]

    # --- hostile values ---------------------------------------------------------------------
    def hostile_dims(self, dims) -> list[int]:
        """``dims`` with an absurd rank (up to 23 more ones) or one hostile dimension."""
        r = self.r
        dims = list(dims)
        if r.u8() & 1 or not dims:
            return dims + [1] * (r.u8() % 24)
        dims[r.u8() % len(dims)] = r.pick(HOSTILE_DIMS)
        return dims

    def hostile_quant(self, scale: float, zp: int, required: bool) -> tuple[float, int]:
        """A hostile (scale, zero point): for a ``required`` one (fixed by NNAPI) often a
        near miss (scale doubled, zero point moved by one), else a hostile scale or zero
        point."""
        r = self.r
        b = r.u8()
        if required and b % 3 == 0:
            return (scale * 2, zp) if b & 0x80 else (scale, zp + 1)
        if b & 1:
            return r.pick(HOSTILE_FLOATS), zp
        return scale, r.pick(HOSTILE_INTS)

    def hostile_channels(self, cq, dims) -> tuple:
        """Per-channel parameters gone wrong: another channel dimension, a wrong scale
        count, or a hostile scale."""
        r = self.r
        scales, channel_dim = cq if cq is not None else ((), 0)
        b = r.u8() % 3
        if b == 0:
            return scales, r.u8() % 5
        if b == 1:
            n = r.u8() % 5
            return tuple(SCALES[k % len(SCALES)] for k in range(n)), channel_dim
        if not scales:
            return (r.pick(HOSTILE_FLOATS),), channel_dim
        return scales[:-1] + (r.pick(HOSTILE_FLOATS),), channel_dim

    def hostile_parameter(self, d: Draft, s: Slot) -> np.ndarray:
        """Parameter slot ``s``'s value with one entry out of its domain: an axis out of
        range or a value outside an enumerated domain (:func:`outside_domain`), else (or
        half the time) a hostile integer; a hostile float for a float slot; a flipped
        boolean."""
        r = self.r
        value = np.array(s.value, copy=True)
        dtype = value.dtype
        if dtype.kind == "f":
            v = r.pick(HOSTILE_FLOATS)
        elif dtype.kind == "b":
            v = not bool(value.reshape(-1)[0]) if value.size else True
        else:
            near = outside_domain(s.arg, d.rank0, d.opdef.nonnegative_axis)
            b = r.u8()
            v = near[(b >> 1) % len(near)] if near and b & 1 else r.pick(HOSTILE_INTS)
        if value.ndim == 0:
            return np.asarray(_wrap(v, dtype), dtype)
        if value.size:
            value.reshape(-1)[r.u8() % value.size] = _wrap(v, dtype)
        return value

    # --- one operation ----------------------------------------------------------------------
    def operation(self) -> None:
        """Append one operation: a table row (by a byte; an escape names any operation code,
        drafted with ADD's signatures when the table lacks it), its signature, then the
        draft turned into operands."""
        r = self.r
        b = r.u8()
        if b >= self.escape:  # any operation code, often one the table lacks
            op_type = OPERATION_OF_CODE[r.u8() % N_OPERATION_CODES]
            opdef = ops.get(op_type) or ops.get(OperationType.ADD)
        else:
            opdef = self.table[b % len(self.table)]
            op_type = opdef.type
        if has_references(opdef):
            build_control_flow(self, op_type)
            return
        sig_index = r.u8() % len(opdef.signatures)
        sig = variadic_signature(opdef, sig_index, 1 + r.u8() % 3) if opdef.variadic \
            else opdef.signatures[sig_index]
        max_dim = 2 + r.u8() % 5
        first = first_tensor(sig)
        link0 = primary = None
        if first is not None:
            a = sig.inputs[first]
            link0 = self.pick(self.earlier(a.type, a.ranks, bounded=True))
            if link0 is not None:
                o, dims = self.operands[link0], self.dims_of[link0]
                value = o.data if o.data is not None else fill_values(o.type, prod(dims), link0).reshape(dims)
                primary = Primary(o.type, list(dims), o.scale, o.zero_point, value)
        d = self.draft(opdef, sig, max_dim, primary)
        ins = [self.input(d, k, s, link0 if k == first else None) for k, s in enumerate(d.slots)]
        outs = self.outputs(d, opdef, sig.outputs, ins, first)
        self.operations.append(TestOperation(op_type, ins, outs))

    def draft(self, opdef: OperationDef, sig, max_dim: int, primary: Primary | None) -> Draft:
        """The drafted use (:func:`runtime.ops.generation.draft`); a hook that cannot draft
        from these bytes leaves the defaults alone (decoding is total)."""
        try:
            with np.errstate(all="ignore"):
                return draft(opdef, sig, self.rng, max_dim, DRAFT_MAX_ELEMENTS, primary=primary)
        except Exception:  # noqa: BLE001 - a hook's failure on fuzz bytes: the fuzzer needs a model anyway
            d = Draft(opdef, sig, self.rng, max_dim, DRAFT_MAX_ELEMENTS, primary=primary)
            draft_defaults(d)
            return d

    def input(self, d: Draft, k: int, s: Slot, link0: int | None) -> int:
        """The operand for drafted input ``k``: omitted, a parameter, a link to an earlier
        operand of the same shape and quantization, or a new model input or constant."""
        r = self.r
        if s.omitted:  # a quantized type keeps a valid scale even when omitted
            b = r.u8()
            return self.add(s.type, [], L.NO_VALUE if b & 0x80 else L.SUBGRAPH_INPUT,
                            s.scale if is_quantized_type(s.type) else 0.0, s.zero_point)
        kind = r.pick(_hostile_kinds(s)) if self.hostile() else None
        if kind == "omit":  # a required input left out
            return self.add(s.type, [], L.NO_VALUE)
        if s.value is not None:
            return self.parameter(d, s, kind)
        if link0 is not None and kind is None and link0 in self.earlier(s.type, exact=s):
            return link0
        if kind in (None, "link"):  # an earlier operand that fits (an escape: any of the type)
            link = self.pick(self.earlier(s.type) if kind else self.earlier(s.type, exact=s))
            if link is not None:
                return link
        dims, scale, zp, cq = list(s.dims), s.scale, s.zero_point, s.channel_quant
        if kind == "dims":
            dims = self.hostile_dims(dims)
        elif kind == "channels":
            cq = self.hostile_channels(cq, dims)
        if is_quantized_type(s.type) and self.hostile():  # its own escape, as an output's
            scale, zp = self.hostile_quant(scale, zp, s.arg.fixed_quant is not None)
        lifetime = _DATA_LIFETIMES[r.u8() % 8]
        data = self.data(d, s, dims, kind == "values")
        if lifetime == L.CONSTANT_REFERENCE and data is None:
            lifetime = L.CONSTANT_COPY  # the schema has no valueless memory constant
        return self.add(s.type, dims, lifetime, scale, zp, data, cq)

    def parameter(self, d: Draft, s: Slot, kind: str | None) -> int:
        """A parameter the draft fixed (scalar or tensor): a constant, now and then a model
        input; hostile ``kind`` "value" puts an entry out of its domain, "dims" breaks the
        shape of a tensor."""
        r = self.r
        dims, value = list(s.dims), s.value
        if kind == "value":
            value = self.hostile_parameter(d, s)
        elif kind == "dims" and s.is_tensor:
            dims = self.hostile_dims(dims)
            value = fit(s.type, dims, np.asarray(value).reshape(-1))
        b = r.u8()
        if s.is_tensor:
            lifetime = _PARAMETER_LIFETIMES[b % 8]
        else:
            lifetime = L.SUBGRAPH_INPUT if b % 10 == 9 else L.CONSTANT_COPY
        if lifetime == L.CONSTANT_REFERENCE and value is None:
            lifetime = L.CONSTANT_COPY
        return self.add(s.type, dims, lifetime, s.scale, s.zero_point, value, s.channel_quant)

    def data(self, d: Draft, s: Slot, dims, hostile: bool) -> np.ndarray | None:
        """Values of a new data operand: from the slot's range (:func:`fill`), or raw input
        bytes (a byte % 4 == 3); ``hostile``: one hostile float or integer among them. None
        when the dimensions are unknown or too many."""
        r = self.r
        t = s.type
        n = prod(dims) if dims_known(t, dims) else 0
        if n == 0 or n > MAX_ELEMENTS:
            return None
        dtype = operand_dtype(t)
        kind = r.u8() % 4
        if kind == 3:
            arr = from_raw(t, r.take(min(n * dtype.itemsize, 64)))
            arr = np.resize(arr if arr.size else np.zeros(1, dtype), n)
        elif list(dims) == list(s.dims):
            with np.errstate(all="ignore"):
                arr = np.asarray(fill(d, s), dtype).reshape(-1)
        else:
            arr = fill_values(t, n, r.u32())
        if hostile and dtype.kind in "fiu":  # a NaN, infinity, huge or negative index ...
            arr = np.array(arr, dtype)
            arr[r.u8() % n] = _wrap(r.pick(HOSTILE_FLOATS if dtype.kind == "f" else HOSTILE_INTS), dtype)
        return np.asarray(arr, dtype).reshape(tuple(dims))

    def outputs(self, d: Draft, opdef: OperationDef, out_args, ins, first: int | None) -> list[int]:
        """The operation's outputs: declared dimensions (the shape the row's ``prepare``
        infers, all unknown, or an unknown rank) and, for a quantized slot, its
        ``fixed_quant`` or the hook's ``out_quant``, else input 0's or (a byte % 8 == 0, or
        input 0 not quantized) a fresh one, kept if the row's ``validate`` and ``prepare``
        accept it; an escape makes it hostile."""
        r = self.r
        s0 = d.slots[first] if first is not None else None
        like = (s0.scale, s0.zero_point) if s0 is not None and is_quantized_type(s0.type) and s0.scale else None
        out_args = list(out_args)
        if opdef.variadic_outputs:  # e.g. SPLIT: as many outputs as the draft says
            out_args = out_args[:1] * (d.n_outputs or 1)
        views = self.views(ins)
        planned = [_planned_quant(d, j, a, like) for j, a in enumerate(out_args)]
        shapes = self.shapes(opdef, views, [OperandView(a.type, (), *q) for a, q in zip(out_args, planned)])
        if opdef.variadic_outputs:
            out_args = out_args[:1] * (len(shapes) if shapes else 1 + r.u8() % 3)
            planned = planned[:1] * len(out_args)
        outs, fresh = [], []
        for j, a in enumerate(out_args):
            b = r.u8()
            shape = shapes[j] if shapes and j < len(shapes) else None
            if shape is not None and b % 8 < 6:
                dims = list(shape)
            elif shape is not None and b % 8 == 6:
                dims = [0] * len(shape)
            else:
                dims = []
            scale, zp = planned[j]
            if is_quantized_type(a.type):
                hostile = self.hostile()
                required = a.fixed_quant or d.out_quant.get(j)
                b = r.u8()
                if required is None and (like is None or b % 8 == 0):
                    scale, zp = self.fresh_quant(a.type)
                    fresh.append(j)
                if hostile:
                    scale, zp = self.hostile_quant(scale, zp, required is not None)
                    fresh = [k for k in fresh if k != j]
            outs.append(self.output(a.type, dims, shape, scale, zp, j in d.ignored_outputs))
        if fresh and views is not None and shapes is not None and len(shapes) == len(outs):
            out_views = [OperandView(o.type, tuple(shape), o.scale, o.zero_point)
                         for o, shape in ((self.operands[i], s) for i, s in zip(outs, shapes))]
            if not self.accepts(opdef, views, out_views):  # the row refuses the fresh ones
                for j in fresh:
                    o = self.operands[outs[j]]
                    o.scale, o.zero_point = to_f32(planned[j][0]), int(planned[j][1])
        return outs

    def views(self, ins) -> list[OperandView] | None:
        """Operand views of inputs ``ins`` as the row's ``prepare`` sees them (constants
        with their values), or None when a tensor's dimensions or a scalar's value is not
        known."""
        views = []
        for i in ins:
            o = self.operands[i]
            omitted = o.lifetime == L.NO_VALUE or (o.lifetime == L.SUBGRAPH_INPUT and o.data is None)
            dims = self.dims_of.get(i)
            if dims is None and not omitted and is_tensor_type(o.type):
                return None
            if o.lifetime == L.TEMPORARY_VARIABLE and not omitted and not is_tensor_type(o.type):
                return None
            cq = None if o.channel_quant is None else (np.asarray(o.channel_quant[0], np.float32),
                                                       o.channel_quant[1])
            views.append(OperandView(o.type, tuple(dims or ()), o.scale, o.zero_point,
                                     o.data if o.lifetime != L.TEMPORARY_VARIABLE else None, omitted, cq))
        return views

    @staticmethod
    def shapes(opdef: OperationDef, views, out_views) -> list | None:
        """Output shapes from the row's ``prepare`` (None when it cannot tell)."""
        if views is None:
            return None
        try:
            with np.errstate(all="ignore"):
                shapes = opdef.prepare(OpContext(opdef.type, views, out_views, False))
            shapes = [tuple(int(x) for x in s) for s in shapes]
        except Exception:  # noqa: BLE001 - shape inference is a hint only
            return None
        if any(any(x < 0 or x > 0xFFFFFFFF for x in s) for s in shapes):
            return None
        return shapes

    @staticmethod
    def accepts(opdef: OperationDef, views, out_views) -> bool:
        """Whether the row's ``validate`` and ``prepare`` accept these inputs and outputs."""
        ctx = OpContext(opdef.type, views, out_views, False)
        try:
            with np.errstate(all="ignore"):
                if opdef.validate is not None:
                    opdef.validate(ctx)
                opdef.prepare(ctx)
        except Exception:  # noqa: BLE001 - a refusal of any kind: the planned quantization stays
            return False
        return True


def _planned_quant(d: Draft, j: int, a, like) -> tuple[float, int]:
    """The quantization output ``j`` (slot ``a``) takes unless a byte asks for a fresh one:
    its ``fixed_quant``, the hook's ``out_quant``, else input 0's (``like``; zero point 0
    for a symmetric type; scale 1 when input 0 is not quantized); (0, 0) when the output is
    not quantized."""
    if not is_quantized_type(a.type):
        return 0.0, 0
    q = a.fixed_quant or d.out_quant.get(j) or like or (1.0, 0)
    return (q[0], 0) if a.type in SYMMETRIC else (q[0], q[1])


def decode_generated(r: ByteReader, header: int, hostility: int | None = None) -> TestModel:
    """The generated-mode model of the bytes after ``header``: 1 + byte % 4 operations;
    outputs no later operation reads become model outputs. ``hostility``: escape chance in
    1/256 (None: :data:`HOSTILITY_LEVELS` of the header's bits 4-5)."""
    g = Generator(r, HOSTILITY_LEVELS[(header >> 4) & 3] if hostility is None else hostility)
    for _ in range(1 + r.u8() % 4):
        g.operation()
    consumed = {i for op in g.operations for i in op.inputs}
    outputs = []
    for op in g.operations:
        for i in op.outputs:
            if i not in consumed:
                g.operands[i].lifetime = L.SUBGRAPH_OUTPUT
                outputs.append(i)
    counts = count_consumers(g.operands, g.operations)
    for i, o in enumerate(g.operands):
        o.number_of_consumers = counts[i]
    model = new_model(TestSubgraph(g.operands, g.operations, g.inputs, outputs), bool(header & 2))
    model.referenced = g.referenced
    return model
