"""The sweep cases, derived from the operation table: which operations are unary and
element-wise, with which signatures, parameters and quantizations they are swept, and the
inputs of each sweep.

**Unary element-wise**, read off each row of :data:`runtime.ops.REGISTRY` rather than listed
by hand: a signature whose only tensor input is input 0 (the others scalars, none optional),
with one tensor output, that accepts rank 1; the row's own ``validate`` / ``prepare`` /
``execute`` on a vector of 16 distinct values must accept it, give an output of the
vector's shape, commute with a permutation of the elements (``f(P x) = P f(x)``) and keep
every other output element when element 0 changes, for the parameters of four seeded drafts (:func:`runtime.ops.generation.draft`). That keeps ABS,
EXP, LOG, NEG, RSQRT, SIN, SQRT, FLOOR, LOGISTIC, TANH, RELU, RELU1, RELU6, ELU, HARD_SWISH,
CAST, QUANTIZE and DEQUANTIZE, and drops SOFTMAX, L2_NORMALIZATION, LOG_SOFTMAX,
LOCAL_RESPONSE_NORMALIZATION (an element depends on the others), ARGMAX, EXPAND_DIMS, RANK
(other shapes), CHANNEL_SHUFFLE (a permutation), CONCATENATION and SPLIT (variadic). Swept
input types: TENSOR_FLOAT16, TENSOR_FLOAT32 and the 8-bit quantized types with one scale
(TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_SYMM).

**Parameters**: a float scalar (ELU's alpha) is 1.0; any other scalar keeps the value of the
seed-0 draft. **Quantizations** (:data:`QUANT_PAIRS`): a quantized operand is swept under
three (scale, zeroPoint) pairs, ``centred`` (scale 1/16, the zero point mid-range: reals
[-8, 8)), ``low`` (scale 1/64, the zero point at the type's minimum: [0, 4)) and ``wide``
(scale 1/2, the zero point a quarter up: [-32, 96)); symmetric types keep zeroPoint 0. An
output whose quantization NNAPI fixes (LOGISTIC, TANH) takes it; any other quantized output
takes the input's (RELU's rule; valid for every unary operation) or, behind a float input
(QUANTIZE), the pair.

**Inputs** (:func:`sweep_inputs`): ``exhaustive`` for TENSOR_FLOAT16 (all 65,536 bit
patterns: both zeros, 2,046 subnormals, both infinities, 2,046 NaNs) and the 8-bit types
(all 256 stored values); ``stratified`` for TENSOR_FLOAT32: every binade [2^e, 2^(e+1)) of
both signs (e = -126..127), and the subnormal ones (e = -149..-127), each with its edges
(2^e, the next float up, 1.5 * 2^e, the last float below 2^(e+1)) and :data:`PER_BINADE`
values drawn uniformly inside it (seeded: :data:`SEED`), then +-0, +-inf and a NaN: 8,869
values. The ``quick`` mode (CI) takes every 7th float16 pattern, the edges alone of each
float32 binade and only the ``centred`` quantization.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from runtime import ops
from runtime.errors import OperationError
from runtime.ops.base import OpContext, OperandView, OperationDef, Signature
from runtime.ops.generation import draft, quant_limits
from runtime.types import OperandType, OperationType, is_float_type, is_quantized_type, is_tensor_type, operand_dtype

T = OperandType
#: Input types a sweep covers: float16 exhaustively, float32 stratified, 8-bit quantized
#: exhaustively.
FLOAT_INPUTS = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)
QUANT_INPUTS = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM)
SYMMETRIC = (T.TENSOR_QUANT8_SYMM,)
#: Seed of the float32 sample's values inside each binade.
SEED = 23
#: Values drawn inside each float32 binade (besides its four edges), full mode.
PER_BINADE = 12
#: float16 stride of the quick mode (every 7th bit pattern: 9,363 values, every binade).
QUICK_STRIDE = 7
#: Sweep modes.
MODES = ("full", "quick")
#: Length of the vector the element-wise probe runs.
PROBE_LENGTH = 16
#: Drafts (seeds 0..3) whose parameters the probe tries.
PROBE_SEEDS = 4


@dataclass(frozen=True)
class QuantPair:
    """One (scale, zeroPoint) of a quantized operand: ``name`` (centred, low, wide)."""

    name: str
    scale: float
    zero_point: int


def quant_pairs(t: OperandType, mode: str = "full") -> tuple[QuantPair, ...]:
    """The quantizations of type ``t`` a sweep runs under (module docstring); ``quick``:
    only ``centred``."""
    lo, hi = quant_limits(t)
    sym = t in SYMMETRIC
    pairs = (QuantPair("centred", 1 / 16, 0 if sym else (lo + hi + 1) // 2),
             QuantPair("low", 1 / 64, 0 if sym else lo),
             QuantPair("wide", 1 / 2, 0 if sym else lo + 64))
    return pairs[:1] if mode == "quick" else pairs


@dataclass(frozen=True)
class SweepCase:
    """One sweep: ``operation`` with ``signature`` (input 0 the swept tensor), scalar
    ``params`` (input index -> value), the quantization of a quantized input
    (``in_quant``) and output (``out_quant``) as (scale, zeroPoint), and the ``sweep``
    kind (``exhaustive`` / ``stratified``); ``pair``: the quantization's name."""

    operation: OperationType
    signature: Signature
    sweep: str
    params: tuple[tuple[int, object], ...] = ()
    in_quant: tuple[float, int] = (0.0, 0)
    out_quant: tuple[float, int] = (0.0, 0)
    pair: str = ""

    @property
    def feature_level(self) -> int:
        return self.signature.feature_level

    @property
    def in_type(self) -> OperandType:
        return self.signature.inputs[0].type

    @property
    def out_type(self) -> OperandType:
        return self.signature.outputs[0].type

    @property
    def types(self) -> str:
        """``TENSOR_FLOAT16`` or ``TENSOR_FLOAT16->TENSOR_INT32`` (input -> output type)."""
        a, b = self.in_type.name, self.out_type.name
        return a if a == b else f"{a}->{b}"

    @property
    def id(self) -> str:
        """``PRECISION/<operation>/<types>/<sweep>[-<pair>]``, e.g.
        ``PRECISION/SIN/TENSOR_FLOAT32/stratified``,
        ``PRECISION/RELU/TENSOR_QUANT8_ASYMM/exhaustive-centred``."""
        return f"PRECISION/{self.operation.name}/{self.types}/{self.sweep}" + (f"-{self.pair}" if self.pair else "")


def _probe_views(sig: Signature, params: dict, in_quant, out_quant, x: np.ndarray):
    inputs = []
    for k, a in enumerate(sig.inputs):
        if k == 0:
            inputs.append(OperandView(a.type, x.shape, *in_quant, value=x))
        else:
            inputs.append(OperandView(a.type, (), value=np.asarray(params[k], operand_dtype(a.type))))
    out = sig.outputs[0]
    return inputs, [OperandView(out.type, x.shape, *out_quant)]


def _run_kernel(opdef: OperationDef, sig: Signature, params: dict, in_quant, out_quant, x: np.ndarray):
    """The row's validate / prepare / execute on ``x``: (output shape, output), or None
    when the row rejects the use."""
    inputs, outputs = _probe_views(sig, params, in_quant, out_quant, x)
    ctx = OpContext(opdef.type, inputs, outputs)
    try:
        with np.errstate(all="ignore"):
            if opdef.validate is not None:
                opdef.validate(OpContext(opdef.type, inputs, outputs))
            shapes = opdef.prepare(ctx)
            result = opdef.execute(ctx)
    except (OperationError, ValueError, IndexError, TypeError, ZeroDivisionError):
        return None
    return tuple(shapes[0]), np.asarray(result[0])


def _probe_values(t: OperandType) -> np.ndarray:
    """16 distinct values of type ``t`` (floats across [-1.9, 1.9], stored quantized values
    across the type's range)."""
    if is_float_type(t):
        return np.linspace(-1.9, 1.9, PROBE_LENGTH).astype(operand_dtype(t))
    lo, hi = quant_limits(t) if is_quantized_type(t) else (-100, 100)
    return np.linspace(lo, hi, PROBE_LENGTH).round().astype(operand_dtype(t))


def _other_value(t: OperandType) -> np.ndarray:
    """One large value of type ``t`` whose magnitude none of :func:`_probe_values` has (1.7,
    or the type's maximum stored value - 3): element 0 moved there shifts a normalization
    (SOFTMAX, L2_NORMALIZATION) of every other element."""
    if is_float_type(t):
        return np.asarray([1.7], operand_dtype(t))
    hi = quant_limits(t)[1] if is_quantized_type(t) else 100
    return np.asarray([hi - 3], operand_dtype(t))


def _params(opdef: OperationDef, sig: Signature, seed: int) -> dict | None:
    """Scalar inputs of a seeded draft of ``sig`` at rank 1 (float scalars 1.0 for seed 0:
    see the module docstring), or None when the row cannot be drafted."""
    try:
        d = draft(opdef, sig, np.random.default_rng(seed), ranks=(1,))
    except (OperationError, ValueError, IndexError, TypeError):
        return None
    out = {}
    for k, s in enumerate(d.slots[1:], start=1):
        if s.value is None:
            return None
        v = np.asarray(s.value).item()
        out[k] = 1.0 if seed == 0 and s.type in (T.FLOAT32, T.FLOAT16) else v
    return out


def _output_quant(sig: Signature, in_quant: tuple[float, int]) -> tuple[float, int]:
    out = sig.outputs[0]
    if not is_quantized_type(out.type):
        return (0.0, 0)
    return out.fixed_quant or in_quant


def is_unary_elementwise(opdef: OperationDef, sig: Signature) -> bool:
    """Whether ``sig`` of ``opdef`` is a unary element-wise use (module docstring)."""
    if opdef.variadic or opdef.variadic_outputs or opdef.nondeterministic or len(sig.outputs) != 1:
        return False
    tensors = [k for k, a in enumerate(sig.inputs) if is_tensor_type(a.type)]
    if tensors != [0] or any(a.optional for a in sig.inputs) or not is_tensor_type(sig.outputs[0].type):
        return False
    if any(a.ranks is not None and 1 not in a.ranks for a in (sig.inputs[0], sig.outputs[0])):
        return False
    t = sig.inputs[0].type
    in_quant = (quant_pairs(t)[0].scale, quant_pairs(t)[0].zero_point) if t in QUANT_INPUTS else (0.0, 0)
    x = _probe_values(t)
    perm = np.random.default_rng(0).permutation(PROBE_LENGTH)
    for seed in range(PROBE_SEEDS):
        params = _params(opdef, sig, seed)
        if params is None:
            return False
        out_quant = _output_quant(sig, in_quant) if t in QUANT_INPUTS or not is_quantized_type(sig.outputs[0].type) \
            else (1 / 16, 0)
        ran, shuffled, moved = (_run_kernel(opdef, sig, params, in_quant, out_quant, v)
                                for v in (x, x[perm], np.concatenate([_other_value(t), x[1:]])))
        if any(r is None or r[0] != (PROBE_LENGTH,) for r in (ran, shuffled, moved)):
            return False
        nan = ran[1].dtype.kind == "f"
        if not (np.array_equal(ran[1][perm], shuffled[1], equal_nan=nan)
                and np.array_equal(ran[1][1:], moved[1][1:], equal_nan=nan)):
            return False
    return True


@functools.cache
def unary_signatures() -> tuple[tuple[OperationType, Signature], ...]:
    """Every (operation, signature) of the table that is unary and element-wise
    (:func:`is_unary_elementwise`) with a swept input type, in operation code order."""
    out = []
    for op in sorted(ops.REGISTRY, key=int):
        opdef = ops.REGISTRY[op]
        for sig in opdef.signatures:
            if sig.inputs and sig.inputs[0].type in FLOAT_INPUTS + QUANT_INPUTS and is_unary_elementwise(opdef, sig):
                out.append((op, sig))
    return tuple(out)


def cases(mode: str = "full") -> list[SweepCase]:
    """The sweep cases of ``mode`` (``full`` / ``quick``): per unary element-wise signature
    one case, or one per quantization pair of its quantized operand (module docstring)."""
    if mode not in MODES:
        raise ValueError(f"unknown sweep mode {mode!r} (one of {', '.join(MODES)})")
    out = []
    for op, sig in unary_signatures():
        t_in, t_out = sig.inputs[0].type, sig.outputs[0].type
        params = tuple(sorted(_params(ops.REGISTRY[op], sig, 0).items()))
        sweep = "stratified" if t_in == T.TENSOR_FLOAT32 else "exhaustive"
        quantized = t_in if t_in in QUANT_INPUTS else t_out if is_quantized_type(t_out) and \
            not sig.outputs[0].fixed_quant else None
        if quantized is None:
            out.append(SweepCase(op, sig, sweep, params))
            continue
        for p in quant_pairs(quantized, mode):
            q = (p.scale, p.zero_point)
            in_quant = q if t_in in QUANT_INPUTS else (0.0, 0)
            out_quant = _output_quant(sig, q) if t_in in QUANT_INPUTS else q
            out.append(SweepCase(op, sig, sweep, params, in_quant, out_quant, p.name))
    return out


def _binade_sample(e_lo: int, e_hi: int, per_binade: int, rng, subnormal: bool) -> np.ndarray:
    """float32 values of the binades [2^e, 2^(e+1)) for e in [e_lo, e_hi], positive: the four
    edges and ``per_binade`` drawn inside (subnormal binades: spacing 2^-149)."""
    out = []
    for e in range(e_lo, e_hi + 1):
        lo = np.float32(2.0 ** e)
        top = np.nextafter(np.float32(2.0 ** (e + 1)), np.float32(0)) if e < 127 else np.finfo(np.float32).max
        edges = [lo, np.nextafter(lo, np.float32(np.inf)), np.float32(1.5 * 2.0 ** e), top]
        if per_binade:
            if subnormal:
                k = rng.integers(2 ** (e + 149), 2 ** (e + 150), per_binade)
                drawn = (k.astype(np.float64) * 2.0 ** -149).astype(np.float32)
            else:
                drawn = (rng.uniform(1.0, 2.0, per_binade) * 2.0 ** e).astype(np.float32)
            edges += list(drawn)
        out += edges
    return np.asarray(out, np.float32)


def float32_sample(mode: str = "full") -> np.ndarray:
    """The stratified float32 sample (module docstring), ascending along the real line,
    NaN last; ``quick``: the edges alone."""
    rng = np.random.default_rng(SEED)
    per = PER_BINADE if mode == "full" else 0
    sub = _binade_sample(-149, -127, per, rng, True)
    normal = _binade_sample(-126, 127, per, rng, False)
    pos = np.unique(np.concatenate([sub, normal]))
    return np.concatenate([[np.float32(-np.inf)], -pos[::-1], [np.float32(-0.0), np.float32(0.0)], pos,
                           [np.float32(np.inf), np.float32(np.nan)]]).astype(np.float32)


def float16_inputs(mode: str = "full") -> np.ndarray:
    """Every float16 bit pattern (``quick``: every :data:`QUICK_STRIDE`-th, with the
    infinities), ascending along the real line, the NaNs last."""
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    if mode == "quick":
        bits = np.union1d(bits[::QUICK_STRIDE], np.array([0x7C00, 0xFC00, 0x0000, 0x8000], np.uint16))
    x = bits.view(np.float16)
    nan = np.isnan(x)
    finite = x[~nan]
    order = np.lexsort((np.signbit(finite) == 0, finite.astype(np.float64)))   # -0 before +0
    return np.concatenate([finite[order], x[nan]])


def quant_inputs(t: OperandType) -> np.ndarray:
    """Every stored value of 8-bit quantized type ``t``, ascending."""
    lo, hi = quant_limits(t)
    return np.arange(lo, hi + 1).astype(operand_dtype(t))


def sweep_inputs(case: SweepCase, mode: str = "full") -> np.ndarray:
    """The input vector of ``case`` in its input type's dtype (module docstring)."""
    t = case.in_type
    if t == T.TENSOR_FLOAT16:
        return float16_inputs(mode)
    if t == T.TENSOR_FLOAT32:
        return float32_sample(mode)
    return quant_inputs(t)
