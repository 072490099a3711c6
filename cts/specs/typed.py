"""One-operation spec models whose operand types and quantization the spec states, for the
coverage matrix's signature rows and quant regimes (``nncts coverage``) that the derived
variations (:mod:`.variations`) do not reach: a given (scale, zero point) per tensor
(:data:`.variations.QUANT_REGIMES`), a given layout, a given operand list.

:func:`case` takes the operation's inputs as markers: :func:`x` a tensor of the case's
type (float64 values; quantized with its own or the case's (scale, zero point)),
:func:`pc` a TENSOR_QUANT8_SYMM_PER_CHANNEL filter (float cases: the case's type),
:func:`bias` a bias (TENSOR_INT32 with scale input_scale * filter_scale for quantized cases,
NNAPI ``types.spec`` CONV_2D), :func:`fs` a float scalar (FLOAT16 in float16 cases, else
FLOAT32); anything else is an operand tuple (:func:`~cts.specs.const`, ...) passed as is.
The spec's ``formula`` gets the values every input stands for (float16-rounded or
dequantized, NHWC) and returns the float64 golden, which is quantized with the output's
(scale, zero point) (round half away from zero, saturated). With ``nchw`` every rank-4
:func:`x` model input and the output are transposed to NCHW after the formula ran (constant
tensors, such as filters, keep their layout).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T

from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L, OperationType as Op

from . import LEVEL_VERSION, VERSION, _operand, const, expect, inp, one_operation
from .variations import f32, qparams, quantize

FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
#: Feature level at which each tensor type enters NNAPI (relaxed float32 models: FL2).
TYPE_LEVEL = {T.TENSOR_FLOAT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3,
              T.TENSOR_QUANT8_ASYMM_SIGNED: 4, T.TENSOR_INT32: 1}


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


def case(name, family, op, t, inputs, formula, golden, level, q=None, out_q=None, nchw=False,
         relaxed=False, out_t=None):
    """One model of type ``t`` (quantized: every :func:`x` tensor at ``q`` unless it says
    otherwise, the output at ``out_q``, default ``q``; "auto": :func:`.variations.qparams`
    of the golden, so the expected values spread over the type's range); ``level`` the signature's feature
    level (raised to ``t``'s); ``out_t`` the output type when it differs from ``t``."""
    ops, values, scales = [], [], []
    to_layout = (lambda a: a.transpose(0, 3, 1, 2) if a.ndim == 4 else a) if nchw else (lambda a: a)
    for a in inputs:
        if not _marker(a):
            ops.append(a)
            values.append(a[2])
            continue
        kind, v, extra, role = a
        make = inp if role == "input" else const
        if kind == "fs":
            st = T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32
            ops.append(const(st, v))
            values.append(float(np.asarray(v, np.float16 if st == T.FLOAT16 else np.float32)))
        elif t in FLOATS:
            v = v.astype(np.float16 if t == T.TENSOR_FLOAT16 else np.float32)
            ops.append(make(t, to_layout(v) if make is inp else v))
            values.append(v.astype(np.float64))
            scales.append(None)
        elif kind == "x":
            scale, zp = extra or q
            qv = quantize(v, f32(scale), zp, t)
            ops.append(make(t, to_layout(qv) if make is inp else qv, f32(scale), zp))
            values.append((qv - zp) * f32(scale))
            scales.append(np.array([f32(scale)]))
        elif kind == "pc":
            axes = tuple(i for i in range(v.ndim) if i != extra)
            sc = np.array([f32(max(m, 1e-6) / 127) for m in np.abs(v).max(axis=axes)])
            shape = [1] * v.ndim
            shape[extra] = -1
            qv = quantize(v, sc.reshape(shape), 0, T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
            ops.append(make(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, qv, channel_quant=(tuple(sc), extra)))
            values.append(qv * sc.reshape(shape))
            scales.append(sc)
        else:  # bias: input 0's scale times the filter's
            sc = np.array([f32(np.float32(scales[0][0]) * np.float32(s)) for s in scales[1]])
            qv = quantize(v, sc, 0, T.TENSOR_INT32)
            ops.append(make(T.TENSOR_INT32, qv, float(sc[0]) if len(sc) == 1 else 0.0))
            values.append(qv * sc)
    want = np.asarray(formula(*values), np.float64)
    out_t = out_t or t
    if out_t in FLOATS:
        out = expect(out_t, to_layout(want.astype(np.float16 if out_t == T.TENSOR_FLOAT16 else np.float32)))
        golden += " on the float16 inputs" if t == T.TENSOR_FLOAT16 else ""
    elif out_t == T.TENSOR_INT32 and t == T.TENSOR_INT32:
        out = expect(out_t, to_layout(want.astype(np.int32)))
    else:
        scale, zp = qparams(want, out_t) if out_q == "auto" else out_q or q
        out = expect(out_t, to_layout(quantize(want, f32(scale), zp, out_t)), f32(scale), zp)
        golden += " on the dequantized inputs"
    level = max(level, TYPE_LEVEL[t], 2 if relaxed else 1)
    return one_operation(name, family, op, ops, [out], level, golden, relaxed)


def values_for(rng, shape, t, q=None) -> np.ndarray:
    """Example values for a tensor of type ``t``: float types, multiples of 1/4 in [-4, 4]
    (float16 holds them and their small sums exactly); quantized types, the real values of
    stored values drawn over the whole range (scale, zero point) ``q`` spans, so extreme
    zero points still get distinct values."""
    if t in FLOATS or q is None:
        return np.round(rng.uniform(-4, 4, shape) * 4) / 4
    lo, hi = (0, 255) if t == T.TENSOR_QUANT8_ASYMM else (-128, 127)
    return (rng.integers(lo, hi + 1, shape) - q[1]) * f32(q[0])


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
