"""Variations of one float spec model, as AOSP's test generator derives them
(``frameworks/ml/nn/tools/test_generator``: ``DataTypeConverter``, ``RelaxedModeConverter``,
``DataLayoutConverter``, ``AllInputsAsInternalCoverter``), named by suffixes in the model name.

A spec declares a :class:`FloatSpec`: the operation, its input slots (:class:`Slot`, float64
values, activations in NHWC) and a numpy ``formula`` from input values to the output. Every
variation recomputes the golden with that formula from the values the variation actually
feeds (float16-rounded, or dequantized), so the expected values never come from the code
under test and quantization of the inputs does not leak into the comparison:

- ``""`` float32, ``_relaxed`` (``relaxComputationFloat32toFloat16``, FL2), ``_float16``
  (FL3).
- ``_quant8`` (TENSOR_QUANT8_ASYMM, FL1) and ``_quant8_signed`` (TENSOR_QUANT8_ASYMM_SIGNED,
  FL4): every tensor gets a scale and a NON-ZERO zero point chosen from its float range
  (:func:`qparams`); quantization rounds half away from zero and saturates (AOSP's
  ``QUANTIZE`` kernel: ``std::round``); a bias is TENSOR_INT32 with scale input_scale *
  filter_scale and zero point 0 (NNAPI ``types.spec``, CONV_2D). The expected output is the
  float golden of the dequantized inputs, quantized with the output's scale and zero point.
  Feature level 3 when the FL1-2 rule output_scale > input_scale * filter_scale breaks.
- ``_per_channel`` / ``_quant8_signed_per_channel`` (FL3 / FL4): filters
  TENSOR_QUANT8_SYMM_PER_CHANNEL (scale max|w_c| / 127 per channel ``c`` of the slot's
  ``channel_dim``, zero point 0), bias TENSOR_INT32 whose value ``c`` has scale
  input_scale * filter_scale[c] (its own scale 0).
- ``_nhwc`` / ``_nchw``: the layout flag and every activation tensor transposed to NCHW
  (FL3); only for specs with a layout slot.
- ``_all_inputs_as_internal``: every model input fed through ``ADD(input, zero constant
  [1] of the same type, scale and zero point, FuseCode NONE)`` whose output is the
  operation's original input operand (:func:`as_internal`, the corpus's form).
- ``_omitted``: optional inputs holding their default become NO_VALUE operands
  (``setOperandValue(i, nullptr, 0)``), for operations that allow omitted operands
  (:attr:`FloatSpec.omittable`); ``_without_optional``: trailing optional inputs
  holding their default are left out of the operation's input list (the shorter signature,
  :attr:`FloatSpec.level_without_optional`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as Op, operand_dtype

from . import const, expect, inp, omitted, one_operation

#: Slot kinds. ACT: an activation tensor (quantized per tensor, transposed by NCHW);
#: FILTER: weights (per-channel in the per-channel variations); BIAS: follows the filter;
#: INT: INT32 scalar; FSCALAR: float scalar (FLOAT16 in the float16 variation); LAYOUT: the
#: BOOL layout flag (true = NCHW).
ACT, FILTER, BIAS, INT, FSCALAR, LAYOUT = "act", "filter", "bias", "int", "fscalar", "layout"


@dataclass(frozen=True)
class Slot:
    """One operation input: ``role`` "input" (model input) or "const"; ``default`` is the
    value of an optional input meaning "absent" (None: not optional); ``channel_dim`` is a
    FILTER's per-channel dimension."""

    kind: str
    value: object
    role: str = "const"
    default: object = None
    channel_dim: int = 0


@dataclass(frozen=True)
class FloatSpec:
    """One float model: ``formula(*input values)`` gives the output (NHWC, float64) from the
    slots' values (dequantized for quantized variations); ``level`` is the float32 form's
    feature level; ``level_without_optional`` the level with trailing optional inputs left
    out; ``golden`` names the formula ("numpy formula: ...")."""

    name: str
    family: str
    op: Op
    slots: tuple
    formula: Callable
    golden: str
    level: int
    level_without_optional: int = 0
    #: Whether the operation accepts NO_VALUE optional inputs (AOSP ``OperationRegistration``
    #: flag ``allowOmittedOperand``: TRANSPOSE, SQUEEZE, the LSTMs, ...). AOSP's CPU executor
    #: rejects an omitted operand of any other operation (``checkNoOmittedOperand``), so
    #: only these get the ``_omitted`` variation.
    omittable: bool = False


@dataclass(frozen=True)
class Flavor:
    """Operand types of one variation: ``act``, ``filter`` (None: per-channel), ``bias``."""

    suffix: str
    act: T
    filter: T | None
    bias: T
    level: int
    relaxed: bool = False


FLOAT32 = Flavor("", T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, 1)
RELAXED = Flavor("_relaxed", T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, 2, relaxed=True)
FLOAT16 = Flavor("_float16", T.TENSOR_FLOAT16, T.TENSOR_FLOAT16, T.TENSOR_FLOAT16, 3)
QUANT8 = Flavor("_quant8", T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32, 1)
QUANT8_SIGNED = Flavor("_quant8_signed", T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_ASYMM_SIGNED,
                       T.TENSOR_INT32, 4)
PER_CHANNEL = Flavor("_per_channel", T.TENSOR_QUANT8_ASYMM, None, T.TENSOR_INT32, 3)
SIGNED_PER_CHANNEL = Flavor("_quant8_signed_per_channel", T.TENSOR_QUANT8_ASYMM_SIGNED, None,
                            T.TENSOR_INT32, 4)
FLAVORS = (FLOAT32, RELAXED, FLOAT16, QUANT8, QUANT8_SIGNED, PER_CHANNEL, SIGNED_PER_CHANNEL)
#: Explicit (name, scale, zero point) regimes per quantized type, one per coverage quant cell
#: (``cts/coverage/axes.py``): zero point 0, mid-range and extreme (the type's min or max) for
#: the asymmetric types, scale below and above 1 for every type; for specs that state their
#: quantization rather than derive it (:func:`qparams`).
QUANT_REGIMES = {
    T.TENSOR_QUANT8_ASYMM: (("zp0", 0.5, 0), ("zp_mid", 2.0, 100), ("zp_max", 0.25, 255)),
    T.TENSOR_QUANT8_ASYMM_SIGNED: (("zp0", 0.5, 0), ("zp_mid", 2.0, -20), ("zp_min", 0.25, -128)),
    T.TENSOR_QUANT16_ASYMM: (("zp0", 0.125, 0), ("zp_mid", 4.0, 30000), ("zp_max", 0.5, 65535)),
    T.TENSOR_QUANT16_SYMM: (("scale_small", 0.125, 0), ("scale_large", 4.0, 0)),
    T.TENSOR_QUANT8_SYMM: (("scale_small", 0.125, 0), ("scale_large", 4.0, 0)),
}


def stored_range(t: T) -> tuple[int, int]:
    """(min, max) stored value of quantized (or TENSOR_INT32) type ``t``."""
    info = np.iinfo(operand_dtype(t))
    return int(info.min), int(info.max)


def dequantize(q, scale, zp) -> np.ndarray:
    """(q - zp) * scale in float64 (the real value a stored value stands for)."""
    return (np.asarray(q, np.float64) - zp) * np.float64(np.float32(scale))


def f32(x: float) -> float:
    """``x`` rounded to binary32 (scales are stored as float32)."""
    return float(np.float32(x))


def qparams(values: np.ndarray, t: T) -> tuple[float, int]:
    """(scale, zero point) covering ``values`` and 0 in 240 of the 256 steps, the zero point
    8 steps above the lowest real value (127 instead of 128), so it is never 0
    (TENSOR_QUANT8_ASYMM; the signed type's is 128 lower, never 0 either)."""
    lo, hi = min(float(np.min(values)), 0.0), max(float(np.max(values)), 0.0)
    scale = f32(max(hi - lo, 1e-3) / 240)
    zp = int(round(-lo / scale)) + 8
    zp = 127 if zp == 128 else zp  # 128 would be the signed type's 0 (the 8-step margin allows 1 off)
    return scale, zp - 128 if t == T.TENSOR_QUANT8_ASYMM_SIGNED else zp


def quantize(x: np.ndarray, scale, zp, t: T) -> np.ndarray:
    """round(x / scale) + zp, half away from zero, saturated to ``t``'s range (``scale`` may
    be per-channel, broadcast against ``x``)."""
    q = np.asarray(x, np.float64) / np.asarray(scale, np.float64)
    q = np.sign(q) * np.floor(np.abs(q) + 0.5) + zp
    lo, hi = (-127, 127) if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL else stored_range(t)  # symmetric
    return np.clip(q, lo, hi).astype(np.int64)


def _per_channel_scales(w: np.ndarray, dim: int) -> np.ndarray:
    axes = tuple(a for a in range(w.ndim) if a != dim)
    return np.array([f32(max(m, 1e-6) / 127) for m in np.abs(w).max(axis=axes)])


def _typed_inputs(spec: FloatSpec, flavor: Flavor):
    """(operand tuples for :func:`one_operation` in NHWC, the values they stand for (float64,
    dequantized), the input scale) for ``flavor``."""
    ops, values, in_q, filter_scale = [], [], None, None
    for s in spec.slots:
        v = s.value
        if s.kind == INT:
            ops.append((T.INT32, np.int32(v), 0.0, 0, None))
        elif s.kind == LAYOUT:
            ops.append((T.BOOL, np.bool_(v), 0.0, 0, None))
        elif s.kind == FSCALAR:
            t = T.FLOAT16 if flavor.act == T.TENSOR_FLOAT16 else T.FLOAT32
            ops.append((t, v, 0.0, 0, None))
            v = float(np.asarray(v, np.float16 if t == T.FLOAT16 else np.float32))
        elif flavor.act in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
            dtype = np.float16 if flavor.act == T.TENSOR_FLOAT16 else np.float32
            v = np.asarray(v, dtype)
            ops.append((flavor.act, v, 0.0, 0, None))
            v = v.astype(np.float64)
        elif s.kind == ACT:
            scale, zp = qparams(v, flavor.act)
            in_q = in_q or (scale, zp)
            q = quantize(v, scale, zp, flavor.act)
            ops.append((flavor.act, q, scale, zp, None))
            v = (q - zp) * scale
        elif s.kind == FILTER and flavor.filter is None:
            scales = _per_channel_scales(v, s.channel_dim)
            shape = [1] * v.ndim
            shape[s.channel_dim] = -1
            q = quantize(v, scales.reshape(shape), 0, T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
            ops.append((T.TENSOR_QUANT8_SYMM_PER_CHANNEL, q, 0.0, 0, (tuple(scales), s.channel_dim)))
            filter_scale = scales
            v = q * scales.reshape(shape)
        elif s.kind == FILTER:
            scale, zp = qparams(v, flavor.filter)
            q = quantize(v, scale, zp, flavor.filter)
            ops.append((flavor.filter, q, scale, zp, None))
            filter_scale = scale
            v = (q - zp) * scale
        elif s.kind == BIAS:
            bias_scale = np.array([f32(np.float32(in_q[0]) * np.float32(f)) for f in np.atleast_1d(filter_scale)])
            q = quantize(v, bias_scale, 0, T.TENSOR_INT32)
            ops.append((T.TENSOR_INT32, q, 0.0 if flavor.filter is None else float(bias_scale[0]), 0, None))
            v = q * bias_scale
        values.append(v)
    return ops, values, in_q, filter_scale


def _level(base: int, flavor: Flavor, in_q, filter_scale, out_scale) -> int:
    level = max(base, flavor.level)
    if flavor == QUANT8 and filter_scale is not None and not out_scale > in_q[0] * filter_scale:
        level = max(level, 3)  # types.spec CONV_2D / DEPTHWISE_CONV_2D: FL1-2 need out > in * filter
    return level


def _at_default(s: Slot, nchw) -> bool:
    """Whether optional slot ``s`` holds its default in this variation."""
    if s.default is None:
        return False
    return bool(np.all(np.asarray(bool(nchw) if s.kind == LAYOUT else s.value) == s.default))


def variant(spec: FloatSpec, flavor: Flavor, nchw: bool | None = None, optional: str = "") -> tuple[TestModel, str]:
    """One variation of ``spec``: ``flavor``'s types; ``nchw`` None (no layout suffix), False
    (``_nhwc``) or True (``_nchw``); ``optional`` "" (as declared), "omitted" (NO_VALUE) or
    "without_optional" (left out)."""
    ops, values, in_q, filter_scale = _typed_inputs(spec, flavor)
    want = np.asarray(spec.formula(*values), np.float64)
    golden = spec.golden
    if flavor.act in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        out = (flavor.act, want.astype(np.float16 if flavor.act == T.TENSOR_FLOAT16 else np.float32), 0.0, 0)
        if flavor.act == T.TENSOR_FLOAT16:
            golden += " on the float16 inputs"
    else:
        # qparams from the golden of the float spec, so every quantized flavour shares them
        scale, zp = qparams(spec.formula(*[s.value for s in spec.slots]), flavor.act)
        out = (flavor.act, quantize(want, scale, zp, flavor.act), scale, zp)
        golden += " on the dequantized inputs (quantized from the float golden)"
    layout = (lambda a: np.transpose(a, (0, 3, 1, 2))) if nchw else (lambda a: a)
    tuples = []
    for s, (t, v, scale, zp, cq) in zip(spec.slots, ops):
        if s.kind == LAYOUT and nchw:
            v = np.bool_(True)
        elif s.kind == ACT:
            v = layout(v)
        maker = inp if s.role == "input" else const
        tuples.append(maker(t, v, scale, zp, cq))
    base = spec.level
    if optional == "omitted":
        tuples = [omitted(x[1]) if _at_default(s, nchw) else x for s, x in zip(spec.slots, tuples)]
    elif optional == "without_optional":
        while tuples and _at_default(spec.slots[len(tuples) - 1], nchw):
            tuples.pop()
        if not any(s.default is not None for s in spec.slots[:len(tuples)]):
            base = spec.level_without_optional
    level = _level(base, flavor, in_q, filter_scale, out[2])
    suffix = {None: "", False: "_nhwc", True: "_nchw"}[nchw] + flavor.suffix + (f"_{optional}" if optional else "")
    return one_operation(spec.name + suffix, spec.family, spec.op, tuples,
                         [expect(out[0], layout(out[1]), out[2], out[3])], level, golden, flavor.relaxed)


def as_internal(model: tuple[TestModel, str]) -> tuple[TestModel, str]:
    """``_all_inputs_as_internal``: each main input with a value becomes a temporary fed by
    ``ADD(new input, [zero] constant, NONE)``; the new input, the constant and the FuseCode
    are appended, the ADDs run first (AOSP ``AllInputsAsInternalCoverter``)."""
    tm, golden = model
    sg = tm.main
    operands = [dataclasses.replace(o) for o in sg.operands]
    adds, inputs = [], []
    for i in sg.input_indexes:
        o = operands[i]
        if o.data is None:
            inputs.append(i)
            continue
        zero = np.full([1], o.zero_point if o.scale else 0, o.data.dtype)
        base = len(operands)
        operands += [dataclasses.replace(o, number_of_consumers=1),
                     TestOperand(o.type, [1], o.scale, o.zero_point, L.CONSTANT_COPY, 1, False, None, zero),
                     TestOperand(T.INT32, [], 0.0, 0, L.CONSTANT_COPY, 1, False, None, np.asarray(0, np.int32))]
        operands[i] = dataclasses.replace(o, lifetime=L.TEMPORARY_VARIABLE, data=None)
        adds.append(TestOperation(Op.ADD, [base, base + 1, base + 2], [i]))
        inputs.append(base)
    main = TestSubgraph(operands, adds + list(sg.operations), inputs, list(sg.output_indexes))
    return dataclasses.replace(tm, name=tm.name + "_all_inputs_as_internal", main=main), golden


def expand(spec: FloatSpec) -> list[tuple[TestModel, str]]:
    """Every variation of ``spec``: each flavour in each layout (when the spec has a layout
    slot), each with its all-inputs-as-internal twin; then the float32 form with optional
    inputs at their default omitted (when the operation allows omitted operands), and the float32 and quant8 forms with trailing ones
    left out (when there are such inputs)."""
    has_layout = any(s.kind == LAYOUT for s in spec.slots)
    layouts = (False, True) if has_layout else (None,)
    out = []
    for flavor in FLAVORS:
        for nchw in layouts:
            m = variant(spec, flavor, nchw)
            out += [m, as_internal(m)]
    nhwc = False if has_layout else None
    if spec.omittable and any(_at_default(s, False) for s in spec.slots):
        out.append(variant(spec, FLOAT32, nhwc, "omitted"))
    if _at_default(spec.slots[-1], False):
        out += [variant(spec, FLOAT32, nhwc, "without_optional"), variant(spec, QUANT8, nhwc, "without_optional")]
    return out

