"""The one set of spec-building helpers: one-operation models whose operand types and
quantization the spec states, for the coverage matrix's signature rows and quant regimes
(``nncts coverage``) that the derived variations (:mod:`.variations`) do not reach.

Every model goes through one builder: its inputs are :class:`Tensor` operands (type, stored
value, scale, zero point; the formula gets their real values, ``(q - zeroPoint) * scale``,
NNAPI ``types.spec``) and plain operand tuples (:func:`~cts.specs.const`, ...; the formula
gets their value); the spec's numpy ``formula`` gives the float64 golden, stored in each
output's type: quantized outputs round half away from zero and saturate
(:func:`.variations.quantize`), other types are converted once. Three ways to state inputs:

- :func:`case` with a case type ``t``: markers :func:`x` (a tensor of the case's type, at its
  own or the case's (scale, zero point)), :func:`pc` (a TENSOR_QUANT8_SYMM_PER_CHANNEL filter),
  :func:`bias` (TENSOR_INT32 at input_scale * filter_scale, NNAPI ``types.spec`` CONV_2D),
  :func:`fs` (FLOAT16 in float16 cases, else FLOAT32); ``nchw`` transposes every rank-4
  model input and the output after the formula ran.
- :func:`case` with ``t`` None and mixed element types: :func:`q` / :func:`q_of` (quantized,
  from stored or real values) and :func:`v` (any other type) state each tensor's type
  (the element-wise families; the regimes' zero points in :data:`ZP`).
- :func:`cases`: one model per operand type and quantization regime from one formula, for
  operations whose quantized output keeps the input's scale and zero point (NNAPI
  ``types.spec``: "the scale and zeroPoint must be the same as input0"); :func:`data` marks
  a data tensor of the case's type, outputs are :data:`DATA`, a fixed type or a fixed
  (type, scale, zero point).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as Op, is_quantized_type, operand_dtype

from . import LEVEL_VERSION, VERSION, _operand, const, expect, inp, one_operation
from .variations import QUANT_REGIMES, dequantize, f32, qparams, quantize, stored_range

FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
#: Feature level at which each tensor type enters NNAPI (relaxed float32 models: FL2).
TYPE_LEVEL = {T.TENSOR_FLOAT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3,
              T.TENSOR_QUANT8_ASYMM_SIGNED: 4, T.TENSOR_INT32: 1}
#: FuseCode (NNAPI ``NeuralNetworksTypes.h``): NONE, RELU max(x, 0), RELU1 clamp to [-1, 1],
#: RELU6 clamp to [0, 6].
NONE, RELU, RELU1, RELU6 = 0, 1, 2, 3
FUSE = {NONE: (-np.inf, np.inf), RELU: (0.0, np.inf), RELU1: (-1.0, 1.0), RELU6: (0.0, 6.0)}
FUSE_NAMES = {NONE: "none", RELU: "relu", RELU1: "relu1", RELU6: "relu6"}
#: Zero points of the coverage regimes per asymmetric type: ``ZP[t]["0" | "mid" |
#: "extreme"]`` (:data:`.variations.QUANT_REGIMES`; extreme: 255 unsigned, -128 signed).
ZP = {t: dict(zip(("0", "mid", "extreme"), (zp for _, _, zp in rows)))
      for t, rows in QUANT_REGIMES.items() if rows[0][0] == "zp0"}
#: A :func:`cases` output of the case's type, scale and zero point.
DATA = "data"
#: Model-name suffix per data type (:func:`cases`).
SUFFIX = {T.TENSOR_FLOAT32: "float32", T.TENSOR_FLOAT16: "float16", T.TENSOR_INT32: "int32",
          T.TENSOR_QUANT8_ASYMM: "quant8", T.TENSOR_QUANT8_ASYMM_SIGNED: "quant8_signed",
          T.TENSOR_QUANT16_ASYMM: "quant16", T.TENSOR_QUANT16_SYMM: "quant16_symm",
          T.TENSOR_QUANT8_SYMM: "quant8_symm", T.TENSOR_QUANT8_SYMM_PER_CHANNEL: "per_channel",
          T.TENSOR_BOOL8: "bool8"}
#: Per-channel scales of :func:`cases` (channel dimension 0): one below and one above 1.
PER_CHANNEL_SCALES = (0.5, 2.0)


@dataclass(frozen=True)
class Tensor:
    """One tensor operand: type, stored value, scale, zero point, whether it is a model input
    (else a constant), per-channel quantization, and the values the formula gets when not
    the stored ones dequantized (``real_value``)."""

    t: T
    value: np.ndarray
    scale: float = 0.0
    zp: int = 0
    is_input: bool = True
    channel_quant: tuple | None = None
    real_value: object = None

    def real(self):
        """The values the operand stands for (float64 for float types and scaled tensors;
        other types as stored)."""
        if self.real_value is not None:
            return self.real_value
        if self.scale:
            return dequantize(self.value, self.scale, self.zp)
        return self.value.astype(np.float64) if self.t in FLOATS else self.value

    def operand(self, layout) -> tuple:
        """The operand tuple (model inputs laid out by ``layout``)."""
        if self.is_input:
            return inp(self.t, layout(self.value), self.scale, self.zp, self.channel_quant)
        return const(self.t, self.value, self.scale, self.zp, self.channel_quant)


def _nhwc(a):
    return a


def _nchw(a):
    return a.transpose(0, 3, 1, 2) if a.ndim == 4 else a


def _store(want, t: T, scale, zp) -> np.ndarray:
    if scale and is_quantized_type(t):
        return quantize(want, f32(scale), zp, t)
    return np.asarray(want).astype(operand_dtype(t))


def _build(name, family, op, inputs, formula, outs, level, golden, relaxed=False, nchw=False):
    """The one model builder: ``inputs`` (:class:`Tensor` or operand tuples), ``outs`` one
    (type, scale, zero point) per output (scale "auto": :func:`.variations.qparams` of the
    golden); ``formula(*input values)`` returns the output (a sequence for several)."""
    layout = _nchw if nchw else _nhwc
    want = formula(*[a.real() if isinstance(a, Tensor) else a[2] for a in inputs])
    want = [want] if len(outs) == 1 else list(want)
    expected = []
    for (t, scale, zp), w in zip(outs, want):
        if scale == "auto":
            scale, zp = qparams(w, t)
        expected.append(expect(t, layout(_store(w, t, scale, zp)), f32(scale), zp))
    ops = [a.operand(layout) if isinstance(a, Tensor) else a for a in inputs]
    return one_operation(name, family, op, ops, expected, level, golden, relaxed)


def v(t: T, values, is_input: bool = True) -> Tensor:
    """A non-quantized tensor holding ``values`` converted to ``t``'s storage."""
    return Tensor(t, np.asarray(values).astype(operand_dtype(t)), is_input=is_input)


def q(t: T, stored, scale: float, zp: int, is_input: bool = True) -> Tensor:
    """A quantized tensor from its stored values (checked against ``t``'s range)."""
    stored = np.asarray(stored)
    lo, hi = stored_range(t)
    if stored.min() < lo or stored.max() > hi:
        raise ValueError(f"stored values outside {t.name}'s range [{lo}, {hi}]")
    return Tensor(t, stored.astype(operand_dtype(t)), scale, zp, is_input)


def q_of(t: T, real, scale: float, zp: int) -> Tensor:
    """A quantized tensor holding the real values ``real`` (each must be exact on the grid)."""
    stored = np.asarray(real, np.float64) / np.float64(np.float32(scale)) + zp
    if not np.allclose(stored, np.round(stored)):
        raise ValueError("real values not representable with this scale and zero point")
    return q(t, np.round(stored).astype(np.int64), scale, zp)


def x(value, q=None, role="input"):
    """A tensor of the case's type; ``q`` (scale, zero point) overrides the case's."""
    return ("x", np.asarray(value, np.float64), q, role)


def pc(value, channel_dim=0):
    """A per-channel filter (scale max|w_c| / 127 per channel, zero point 0)."""
    return ("pc", np.asarray(value, np.float64), channel_dim, "const")


def bias(value):
    """A bias following input 0 and the filter (input 1)."""
    return ("bias", np.asarray(value, np.float64), None, "const")


def fs(value):
    """A float scalar: FLOAT16 in float16 cases, else FLOAT32."""
    return ("fs", value, None, "const")


def _marker(a) -> bool:
    return isinstance(a, tuple) and len(a) == 4 and a[0] in ("x", "pc", "bias", "fs")


def _typed(a, t: T, q, scales: list):
    """The :class:`Tensor` marker ``a`` stands for in a case of type ``t``."""
    kind, val, extra, role = a
    is_input = role == "input"
    if kind == "fs":
        st = T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32
        return Tensor(st, val, is_input=False,
                      real_value=float(np.asarray(val, np.float16 if st == T.FLOAT16 else np.float32)))
    if t in FLOATS:
        scales.append(None)
        return Tensor(t, val.astype(np.float16 if t == T.TENSOR_FLOAT16 else np.float32), is_input=is_input)
    if kind == "x":
        scale, zp = extra or q
        scales.append(np.array([f32(scale)]))
        return Tensor(t, quantize(val, f32(scale), zp, t), f32(scale), zp, is_input)
    if kind == "pc":
        axes = tuple(i for i in range(val.ndim) if i != extra)
        sc = np.array([f32(max(m, 1e-6) / 127) for m in np.abs(val).max(axis=axes)])
        shape = [1] * val.ndim
        shape[extra] = -1
        qv = quantize(val, sc.reshape(shape), 0, T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
        scales.append(sc)
        return Tensor(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, qv, is_input=is_input, channel_quant=(tuple(sc), extra),
                      real_value=qv * sc.reshape(shape))
    # bias: input 0's scale times the filter's
    sc = np.array([f32(np.float32(scales[0][0]) * np.float32(s)) for s in scales[1]])
    qv = quantize(val, sc, 0, T.TENSOR_INT32)
    return Tensor(T.TENSOR_INT32, qv, float(sc[0]) if len(sc) == 1 else 0.0, is_input=is_input, real_value=qv * sc)


def case(name, family, op, t, inputs, formula, golden, level, q=None, out_q=None, nchw=False,
         relaxed=False, out_t=None):
    """One model. With a case type ``t``, ``inputs`` may hold markers (quantized: every
    :func:`x` tensor at ``q`` unless it says otherwise, the output at ``out_q``, default
    ``q``; "auto": :func:`.variations.qparams` of the golden, so the expected values spread
    over the type's range), ``level`` is the signature's feature level (raised to ``t``'s)
    and ``golden`` says how the inputs were typed. With ``t`` None every tensor states its
    type (:func:`q`, :func:`v`): the output is ``out_t`` at ``out_q`` (scale, zero point),
    ``level`` and ``golden`` as given. ``out_t`` defaults to ``t``; plain operand tuples
    are passed as is."""
    out_t = out_t or t
    if t is None:
        return _build(name, family, op, inputs, formula, [(out_t, *(out_q or (0.0, 0)))], level, golden,
                      relaxed, nchw)
    scales = []
    inputs = [_typed(a, t, q, scales) if _marker(a) else a for a in inputs]
    if out_t in FLOATS or out_t == T.TENSOR_INT32 == t:
        out = (out_t, 0.0, 0)
        golden += " on the float16 inputs" if t == T.TENSOR_FLOAT16 and out_t in FLOATS else ""
    else:
        out = (out_t, *(("auto", None) if out_q == "auto" else out_q or q))
        golden += " on the dequantized inputs"
    level = max(level, TYPE_LEVEL[t], 2 if relaxed else 1)
    return _build(name, family, op, inputs, lambda *a: np.asarray(formula(*a), np.float64), [out], level,
                  golden, relaxed, nchw)


@dataclass(frozen=True)
class Data:
    """A :func:`cases` data tensor of ``shape``: a model input (``role`` "input") or a
    constant; ``distinct`` draws without replacement (no ties for ARGMAX, TOPK_V2)."""

    shape: tuple
    role: str = "input"
    distinct: bool = False


def data(*shape, role: str = "input", distinct: bool = False) -> Data:
    """A data tensor of the case's type (:func:`cases`)."""
    return Data(tuple(shape), role, distinct)


def regimes(t: T) -> tuple:
    """(suffix, scale, zero point) of every :func:`cases` case of type ``t``."""
    if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return (("", PER_CHANNEL_SCALES, 0),)
    return QUANT_REGIMES.get(t, (("", 0.0, 0),))


def quarters(rng, shape, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
    """Uniform multiples of 1/4 in [lo, hi] (exact in float16, products exact in float32)."""
    return np.round(rng.uniform(lo, hi, shape) * 4) / 4


def stored(rng, t: T, shape, lo: int | None = None, hi: int | None = None) -> np.ndarray:
    """Uniform stored values of quantized type ``t`` in [lo, hi] (default: the whole range)."""
    tlo, thi = stored_range(t)
    return rng.integers(tlo if lo is None else lo, (thi if hi is None else hi) + 1, shape)


def values_for(rng, shape, t, q=None) -> np.ndarray:
    """Example values for a tensor of type ``t``: float types, multiples of 1/4 in [-4, 4]
    (float16 holds them and their small sums exactly); quantized types, the real values of
    stored values drawn over the whole range (scale, zero point) ``q`` spans, so extreme
    zero points still get distinct values."""
    if t in FLOATS or q is None:
        return quarters(rng, shape)
    lo, hi = (0, 255) if t == T.TENSOR_QUANT8_ASYMM else (-128, 127)
    return (rng.integers(lo, hi + 1, shape) - q[1]) * f32(q[0])


_RAW = {T.TENSOR_QUANT8_ASYMM: (0, 255), T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
        T.TENSOR_QUANT16_ASYMM: (0, 65535), T.TENSOR_QUANT16_SYMM: (-32768, 32767),
        T.TENSOR_QUANT8_SYMM: (-127, 127), T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
        T.TENSOR_INT32: (-100, 100)}


def _raw(rng, t: T, d: Data) -> np.ndarray:
    """Stored values of a :func:`cases` data tensor: quarter multiples in [-4, 4] for the
    float types, integers in [-100, 100] for TENSOR_INT32, the whole range of a quantized
    type (the extreme regimes saturate nothing; symmetric 8-bit types from -127), booleans for TENSOR_BOOL8."""
    if t == T.TENSOR_BOOL8:
        return rng.integers(0, 2, d.shape).astype(bool)
    if t in FLOATS:
        pool = np.arange(-16, 17) / 4
    else:
        lo, hi = _RAW[t]
        pool = np.arange(lo, hi + 1)
    return rng.choice(pool, int(np.prod(d.shape)), replace=not d.distinct).reshape(d.shape)


def cases(name: str, family: str, op, inputs, outputs, formula: Callable, golden: str,
          levels: dict, seed: int = 0) -> list:
    """One model per type in ``levels`` (type -> feature level, or a callable
    ``(scale, zero point) -> level``) and regime of that type (:func:`regimes`):
    ``name_<type>[_<regime>]``. ``inputs``: :func:`data` tensors, operand tuples, or
    callables ``(type, scale, zero point) -> tuple``; ``outputs``: :data:`DATA` (quantized
    back with the case's scale and zero point), a fixed type or (type, scale, zero point).
    ``formula(*real data values, q=(type, scale, zp))`` returns one array per output (a
    bare array for one output)."""
    models = []
    for t, lv in levels.items():
        for suffix, scale, zp in regimes(t):
            level = lv(scale, zp) if callable(lv) else lv
            rng = np.random.default_rng(seed)
            cq = None
            if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
                cq, scale = (tuple(scale), 0), 0.0
            ins = [Tensor(t, _raw(rng, t, a), scale, zp, a.role == "input", cq) if isinstance(a, Data)
                   else a(t, scale, zp) if callable(a) else a for a in inputs]
            picks = [i for i, a in enumerate(inputs) if isinstance(a, Data)]
            outs = [(t, scale, zp) if o == DATA else o if isinstance(o, tuple) else (o, 0.0, 0) for o in outputs]
            text = f"numpy formula: {golden}"
            if scale and DATA in outputs:
                text += " on the dequantized inputs, quantized with the same scale and zero point"
            full = "_".join(p for p in (name, SUFFIX[t], suffix) if p)
            models.append(_build(full, family, op, ins,
                                 lambda *vals, q=(t, scale, zp): formula(*[vals[i] for i in picks], q=q),
                                 outs, level, text))
    return models


def spans_fuse_codes(pre) -> bool:
    """Whether values ``pre`` lie below -1, in (-1, 1), in (1, 6) and above 6, so each
    FuseCode's clamp changes some element."""
    pre = np.asarray(pre)
    return bool((pre < -1).any() and (abs(pre) < 1).any() and ((pre > 1) & (pre < 6)).any() and (pre > 6).any())


#: Golden of :func:`zero_sized`: every output is empty, by hand.
ZERO_SIZED_GOLDEN = ("hand calculation: BOX_WITH_NMS_LIMIT keeps no box (the one non-background class "
                     "scores 0.1 < the 0.3 threshold), so ROI_ALIGN gives 0 regions and every output is empty")


def zero_sized(name, family, op, params, out_tail, level, depth=1) -> tuple[TestModel, str]:
    """AOSP's zero-sized test (``frameworks/ml/nn/runtime/test/specs/V1_2/*zero_sized*``):
    BOX_WITH_NMS_LIMIT on scores [[0.9, 0.1]] (class 0 is background) with score threshold 0.3
    keeps no box; ROI_ALIGN of a [1, 1, 1, depth] TENSOR_FLOAT32 input over those 0 regions
    gives a [0, 2, 2, depth] temporary, which feeds ``op`` with the operand tuples ``params``
    after it; ``op``'s output is [0, *out_tail]. Only for operations AOSP registers with
    ``allowZeroSizedInput``."""
    F, I = T.TENSOR_FLOAT32, T.TENSOR_INT32
    ops = [_operand(*c) for c in (
        const(F, np.array([[0.9, 0.1]], np.float32)), const(F, np.array([[1, 1, 10, 10, 0, 0, 10, 10]], np.float32)),
        const(I, np.array([0], np.int32)), const(T.FLOAT32, 0.3), const(T.INT32, -1), const(T.INT32, 0),
        const(T.FLOAT32, 0.4), const(T.FLOAT32, 1.0), const(T.FLOAT32, 0.3))]
    def empty(t, dims, life):  # no data: zero elements, as the corpus stores them
        return TestOperand(t, dims, 0.0, 0, life, int(life == L.TEMPORARY_VARIABLE), False, None, None)
    ops += [empty(F, [0], L.SUBGRAPH_OUTPUT), empty(F, [0, 4], L.TEMPORARY_VARIABLE),
            empty(I, [0], L.SUBGRAPH_OUTPUT), empty(I, [0], L.TEMPORARY_VARIABLE)]
    ops.append(_operand(*inp(F, np.ones((1, 1, 1, depth), np.float32))))
    ops += [_operand(*c) for c in (const(T.INT32, 2), const(T.INT32, 2), const(T.FLOAT32, 2.0),
                                   const(T.FLOAT32, 2.0), const(T.INT32, 4), const(T.INT32, 4), const(T.BOOL, False))]
    ops.append(empty(F, [0, 2, 2, depth], L.TEMPORARY_VARIABLE))
    first = len(ops)
    ops += [_operand(*c) for c in params]
    ops.append(empty(F, [0, *out_tail], L.SUBGRAPH_OUTPUT))
    operations = [TestOperation(Op.BOX_WITH_NMS_LIMIT, list(range(9)), [9, 10, 11, 12]),
                  TestOperation(Op.ROI_ALIGN, [13, 10, 12, *range(14, 21)], [21]),
                  TestOperation(op, [21, *range(first, len(ops) - 1)], [len(ops) - 1])]
    sg = TestSubgraph(ops, operations, [13], [9, 11, len(ops) - 1])
    return TestModel(name, family, VERSION, LEVEL_VERSION[level], False, False, 0.0, sg), ZERO_SIZED_GOLDEN
