"""Generation constraints of the operation table: how a random graph (``random_graph/``)
drafts one valid use of an operation.

A draft (:class:`Draft`) holds one :class:`Slot` per input of the chosen signature. The
generator fills it in three steps:

1. :func:`draft_defaults`: every tensor slot of input 0's type gets input 0's dimensions
   (the element-wise rule); other tensors a shape of an allowed rank; quantized tensors a
   scale in [0.1, 2] and a zero point across the type's range (0 for symmetric types; one
   scale per channel on dimension 0 for per-channel filters); data values come from the
   slot's range (floats [-2, 2], integers [-10, 10], quantized: the type's whole range,
   booleans: either); scalars from the slot's domain (:mod:`runtime.ops.domains`: fused
   activations, padding codes, layouts ...; an axis in [-rank, rank) of input 0; other INT32
   scalars 1..3, other floats [0.1, 2], BOOL either). Optional slots are given (omitted
   only where AOSP lets the operation take omitted operands).
2. The operation's own ``generate(draft)`` (:attr:`OperationDef.generate`), declared next to
   its signatures, states what the defaults cannot know: filter and bias shapes, parameter
   tensors (permutations, paddings, block shapes), value ranges (positive inputs of LOG,
   non-zero divisors), fixed output quantizations.
3. The generator checks the draft with the operation's ``validate`` and ``prepare`` and
   runs its kernel; a draft they reject is drawn again.

Everything is drawn from ``draft.rng`` (a ``numpy.random.Generator``, or a stand-in with
the same draw methods: the fuzzer's byte-driven one), so a graph is reproducible from its
seed. :func:`draft` runs steps 1 and 2; :func:`variadic_signature` expands a repeating input
slot; :func:`outside_domain` names the values a parameter slot must not take (what a
fuzzer probes validation with).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..types import OperandType as T, is_quantized_type, is_tensor_type, operand_dtype
from .base import Arg, OperationDef, Signature
from .domains import AXIS_NAMES, DOMAINS, EXTRA_VALUES

#: Range of float data values (NNAPI TestRandomGraph draws from [-2, 2] too... for inputs).
FLOAT_RANGE = (-2.0, 2.0)
#: Range of TENSOR_INT32 data values.
INT_RANGE = (-10, 10)
#: Range of the scale of a generated quantized operand.
SCALE_RANGE = (0.1, 2.0)
SYMMETRIC = (T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL)


def quant_limits(t: T) -> tuple[int, int]:
    """(min, max) stored value of quantized tensor type ``t``."""
    info = np.iinfo(operand_dtype(t))
    return int(info.min), int(info.max)


@dataclass
class Slot:
    """One input of a drafted operation.

    ``dims``: tensor dimensions ([] for scalars). ``value``: the value of a parameter (a
    constant the generator must not change), shaped by ``dims``; None for data, drawn from
    [``low``, ``high``] (None: the type's default range) with ``nonzero`` excluding 0 (for
    quantized types: the stored value equal to the zero point). ``scale``/``zero_point``/
    ``channel_quant`` (scales, channel dimension): the quantization. ``omitted``: passed as
    NO_VALUE. ``linkable``: the slot may take an earlier operation's output (data slots)."""

    arg: Arg
    dims: list[int] = field(default_factory=list)
    value: np.ndarray | None = None
    low: float | None = None
    high: float | None = None
    nonzero: bool = False
    scale: float = 0.0
    zero_point: int = 0
    channel_quant: tuple[tuple[float, ...], int] | None = None
    omitted: bool = False
    linkable: bool = True

    @property
    def type(self) -> T:
        return self.arg.type

    @property
    def is_tensor(self) -> bool:
        return is_tensor_type(self.arg.type)


@dataclass
class Primary:
    """An earlier operand input 0 is linked to: its type, dimensions, quantization and
    values (drafts keep input 0 like it unless the operation cannot take it)."""

    type: T
    dims: list[int]
    scale: float
    zero_point: int
    value: np.ndarray


class Draft:
    """The inputs of one use of ``opdef`` with signature ``sig`` (see the module docstring).

    ``max_dim``: largest dimension drawn; ``max_elements``: largest element count of a drawn
    shape; ``ranks``: ranks a primary tensor may take (None: the signature's); ``primary``:
    the operand input 0 links to, or None. ``out_quant[j]`` = (scale, zero point) fixes
    output j's quantization (otherwise the slot's ``fixed_quant``, else the generator picks
    one that fits the computed values); ``n_outputs``: how many outputs an operation whose
    output slot repeats (SPLIT) has."""

    def __init__(self, opdef: OperationDef, sig: Signature, rng: np.random.Generator,
                 max_dim: int = 10, max_elements: int = 4096, ranks=None, primary: Primary | None = None):
        self.opdef, self.sig, self.rng = opdef, sig, rng
        self.max_dim, self.max_elements = max_dim, max_elements
        self.ranks = tuple(ranks) if ranks else None
        self.primary = primary
        self.slots = [Slot(a) for a in sig.inputs]
        self.out_quant: dict[int, tuple[float, int]] = {}
        #: Number of outputs of an operation whose output slot repeats (SPLIT); None: one.
        self.n_outputs: int | None = None
        #: Outputs whose content NNAPI leaves unspecified (LSTM's scratch buffer): not
        #: compared (``is_ignored``) and never linked to later inputs.
        self.ignored_outputs: set[int] = set()

    # --- random draws -------------------------------------------------------------------
    def integer(self, lo: int, hi: int) -> int:
        """A uniform integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def uniform(self, lo: float, hi: float) -> float:
        return float(self.rng.uniform(lo, hi))

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def dim(self, lo: int = 1, hi: int | None = None) -> int:
        """A dimension in [lo, hi] (default hi: ``max_dim``), log-uniform so small ones are
        common."""
        hi = max(lo, self.max_dim if hi is None else min(hi, self.max_dim))
        # math.log / math.exp: the values numpy's give (checked on 300,000 draws), at a
        # fraction of the cost of a numpy scalar call
        return int(min(hi, max(lo, round(math.exp(self.rng.uniform(math.log(lo), math.log(hi + 1)) - 0.5)))))

    def shape(self, rank: int, lo: int = 1, budget: int | None = None) -> list[int]:
        """``rank`` dimensions >= ``lo`` whose product is at most ``budget`` (default
        ``max_elements``): drawn, then the largest halved until it fits."""
        budget = budget or self.max_elements
        dims = [self.dim(lo) for _ in range(rank)]
        while dims and math.prod(dims) > budget and max(dims) > lo:
            k = int(np.argmax(dims))
            dims[k] = max(lo, dims[k] // 2)
        return dims

    def quant(self, t: T) -> tuple[float, int]:
        """(scale, zero point) for a new operand of quantized type ``t``."""
        scale = float(np.float32(self.uniform(*SCALE_RANGE)))
        if t in SYMMETRIC:
            return scale, 0
        lo, hi = quant_limits(t)
        return scale, self.integer(lo, hi)

    def rank_for(self, arg: Arg, prefer: int | None = None) -> int:
        """A rank ``arg`` allows (``prefer`` if allowed), within the draft's ``ranks``."""
        allowed = list(arg.ranks or (1, 2, 3, 4))
        if prefer in allowed:
            return prefer
        narrowed = [r for r in allowed if self.ranks is None or r in self.ranks]
        return self.choice(narrowed or allowed)

    # --- slots ----------------------------------------------------------------------------
    def __getitem__(self, k: int) -> Slot:
        return self.slots[k]

    def index(self, name: str) -> int:
        """Index of the slot named ``name`` (the first, for a variadic slot)."""
        for k, s in enumerate(self.slots):
            if s.arg.name == name:
                return k
        raise KeyError(name)

    def slot(self, name: str) -> Slot:
        return self.slots[self.index(name)]

    def param(self, k: int | str, value, dims: list[int] | None = None) -> None:
        """Make slot ``k`` (index or name) a constant parameter holding ``value`` (cast to
        the slot's type; a tensor gets ``dims``, default the value's shape)."""
        s = self.slots[self.index(k) if isinstance(k, str) else k]
        arr = np.asarray(value, dtype=operand_dtype(s.type))
        if s.is_tensor:
            s.dims = list(dims) if dims is not None else list(arr.shape) or [1]
            arr = arr.reshape(s.dims)
        else:
            arr = arr.reshape(())
        s.value, s.omitted, s.linkable = arr, False, False

    def tensor(self, k: int | str, dims, quant: tuple[float, int] | None = None, **fields) -> Slot:
        """Give data slot ``k`` dimensions ``dims`` (and a quantization, or keep the drawn
        one; other Slot fields by keyword)."""
        s = self.slots[self.index(k) if isinstance(k, str) else k]
        s.dims, s.value, s.omitted = [int(d) for d in dims], None, False
        if quant is not None:
            s.scale, s.zero_point = float(quant[0]), int(quant[1])
        if s.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and s.channel_quant is not None:
            ch = min(s.channel_quant[1], len(s.dims) - 1)
            s.channel_quant = (tuple(self.quant(s.type)[0] for _ in range(s.dims[ch])), ch)
        for key, v in fields.items():
            setattr(s, key, v)
        return s

    def per_channel(self, k: int | str, channel_dim: int) -> None:
        """Per-channel scales of slot ``k`` over dimension ``channel_dim``."""
        s = self.slots[self.index(k) if isinstance(k, str) else k]
        s.channel_quant = (tuple(self.quant(s.type)[0] for _ in range(s.dims[channel_dim])), channel_dim)

    @property
    def dims0(self) -> list[int]:
        """Dimensions of the first tensor input."""
        for s in self.slots:
            if s.is_tensor:
                return s.dims
        return []

    @property
    def rank0(self) -> int:
        return len(self.dims0)


def _scalar_default(d: Draft, s: Slot):
    name, t = s.arg.name, s.type
    if name in DOMAINS:
        return d.choice([v for _, v in DOMAINS[name]])
    if name in AXIS_NAMES and t == T.INT32:
        r = max(d.rank0, 1)
        axis = d.integer(-r, r - 1)  # one draw either way: [0, rank) for nonnegative_axis rows
        return axis % r if d.opdef.nonnegative_axis else axis
    if t == T.BOOL:
        return d.coin()
    if t == T.INT32:
        return d.integer(1, 3)
    return d.uniform(0.1, 2.0)


def draft_defaults(d: Draft) -> None:
    """Step 1 of drafting (see the module docstring): shapes, quantizations and parameters
    every operation starts from."""
    first = next((k for k, s in enumerate(d.slots) if s.is_tensor), None)
    for k, s in enumerate(d.slots):
        a = s.arg
        if a.optional and d.opdef.allows_omitted_operand and d.coin(0.2):
            s.omitted, s.linkable = True, False
            continue
        if not s.is_tensor:
            d.param(k, _scalar_default(d, s))
            continue
        s0 = d.slots[first]
        if k == first:
            if d.primary is not None and a.type == d.primary.type:
                s.dims = list(d.primary.dims)
                s.scale, s.zero_point = d.primary.scale, d.primary.zero_point
            else:
                s.dims = d.shape(d.rank_for(a))
        elif a.type == s0.type and (a.ranks is None or len(s0.dims) in a.ranks):
            s.dims = list(s0.dims)
        else:
            s.dims = d.shape(d.rank_for(a, len(s0.dims)))
        if is_quantized_type(a.type) and not (k == first and d.primary is not None):
            s.scale, s.zero_point = a.fixed_quant or d.quant(a.type)
        if a.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:  # scales per channel, none per tensor
            s.scale, s.zero_point = 0.0, 0
            d.per_channel(k, 0)
        if a.name in AXIS_NAMES and a.type == T.TENSOR_INT32:
            r = max(d.rank0, 1)
            n = d.integer(1, r)
            picked = d.rng.permutation(r)[:n]
            negative = d.rng.random(n) < 0.5  # drawn either way: [0, rank) for nonnegative_axis rows
            axes = picked - (0 if d.opdef.nonnegative_axis else np.where(negative, r, 0))
            d.param(k, axes.astype(np.int32), [n])
        if a.fixed_quant is not None:
            s.scale, s.zero_point = a.fixed_quant


def first_tensor(sig: Signature) -> int | None:
    """Index of the first tensor input of ``sig`` (input 0 of the element-wise rule), or
    None when every input is a scalar."""
    return next((k for k, a in enumerate(sig.inputs) if is_tensor_type(a.type)), None)


def variadic_signature(opdef: OperationDef, sig_index: int, repeats: int) -> Signature:
    """Signature ``sig_index`` of ``opdef`` with its repeating input slot (``variadic``
    rows: CONCATENATION's inputs, PACK's tensors) given ``repeats`` >= 1 times; the
    signature as declared when the row does not repeat or has no such expansion."""
    base = opdef.signatures[sig_index]
    if not opdef.variadic:
        return base
    expanded = opdef.signatures_for(len(base.inputs) - 1 + repeats)
    return expanded[sig_index] if len(expanded) > sig_index else base


def draft(opdef: OperationDef, sig: Signature, rng, max_dim: int = 10, max_elements: int = 4096,
          ranks=None, primary: Primary | None = None) -> Draft:
    """A drafted use of ``opdef`` with signature ``sig``: the defaults
    (:func:`draft_defaults`), then the row's own ``generate`` hook. ``rng``: a
    ``numpy.random.Generator`` or a stand-in with its draw methods; the other arguments as
    :class:`Draft`. Data values are not drawn (:func:`fill` per data slot)."""
    d = Draft(opdef, sig, rng, max_dim, max_elements, ranks, primary)
    draft_defaults(d)
    if opdef.generate is not None:
        opdef.generate(d)
    return d


def outside_domain(arg: Arg, rank: int, nonnegative_axis: bool = False) -> tuple[int, ...]:
    """Integer values parameter slot ``arg`` must not take, nearest the domain first: for
    an axis slot (:data:`AXIS_NAMES`) of an input of ``rank``, ``rank``, ``-rank - 1`` and
    ``rank + 1`` (and -1 when the row takes only ``nonnegative_axis``); for an enumerated
    INT32 slot (:data:`DOMAINS`, with :data:`EXTRA_VALUES` counted as inside), one above
    the largest value, one below the smallest, and the gaps between; () for other slots
    (a BOOL domain has no outside)."""
    if arg.name in AXIS_NAMES:
        r = max(rank, 1)
        return (r, -r - 1, r + 1) + ((-1,) if nonnegative_axis else ())
    values = [v for _, v in DOMAINS.get(arg.name, ()) + EXTRA_VALUES.get(arg.name, ())
              if isinstance(v, int) and not isinstance(v, bool)]
    if not values:
        return ()
    lo, hi = min(values), max(values)
    return (hi + 1, lo - 1) + tuple(v for v in range(lo + 1, hi) if v not in values)


def fill(d: Draft, s: Slot) -> np.ndarray:
    """Random data for slot ``s`` (shape ``s.dims``) from its range (see :class:`Slot`)."""
    t, shape, rng = s.type, tuple(s.dims), d.rng
    dtype = operand_dtype(t)
    if t in (T.TENSOR_BOOL8, T.BOOL):
        return rng.random(shape) < 0.5
    if t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.FLOAT32, T.FLOAT16):
        lo, hi = (s.low if s.low is not None else FLOAT_RANGE[0],
                  s.high if s.high is not None else FLOAT_RANGE[1])
        v = rng.uniform(lo, hi, shape).astype(dtype)
        if s.nonzero:
            tiny = max(abs(hi - lo) * 0.05, 1e-3)
            v = np.where(np.abs(v) < tiny, np.where(v < 0, -tiny, tiny), v).astype(dtype)
        return v
    if is_quantized_type(t):
        qlo, qhi = quant_limits(t)
        lo, hi = qlo, qhi
        if s.scale and s.low is not None:
            lo = min(max(qlo, int(np.ceil(s.low / s.scale + s.zero_point))), qhi)
        if s.scale and s.high is not None:
            hi = max(min(qhi, int(np.floor(s.high / s.scale + s.zero_point))), lo)
        v = rng.integers(lo, max(lo, hi) + 1, shape)
        if s.nonzero:
            v = np.where(v == s.zero_point, np.where(s.zero_point < qhi, s.zero_point + 1, s.zero_point - 1), v)
        return v.astype(dtype)
    lo = int(s.low) if s.low is not None else INT_RANGE[0]
    hi = int(s.high) if s.high is not None else INT_RANGE[1]
    v = rng.integers(lo, hi + 1, shape)
    if s.nonzero:
        v = np.where(v == 0, 1, v)
    return v.astype(dtype)


def in_range(s: Slot, value: np.ndarray) -> bool:
    """Whether an earlier operand's ``value`` meets slot ``s``'s range (so it may link)."""
    if s.low is None and s.high is None and not s.nonzero:
        return True
    v = np.asarray(value, np.float64)
    if is_quantized_type(s.type):
        v = (v - s.zero_point) * s.scale
    if not np.all(np.isfinite(v)):
        return False
    if s.low is not None and v.size and v.min() < s.low:
        return False
    if s.high is not None and v.size and v.max() > s.high:
        return False
    return not (s.nonzero and np.any(v == 0))
