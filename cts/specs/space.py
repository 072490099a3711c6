"""DEPTH_TO_SPACE (NNAPI code 5), SPACE_TO_DEPTH (19), BATCH_TO_SPACE_ND (20, FL2),
SPACE_TO_BATCH_ND (21, FL2) and CHANNEL_SHUFFLE (56, FL3): the float16 rows, quantization
regimes (zero point 0 / mid / extreme, scale < 1 / > 1), batch > 1 and non-square inputs the
AOSP corpus leaves empty (``nncts coverage``).

Definitions (NNAPI ``types.spec``), NHWC (NCHW with the optional layout flag, FL3):
DEPTH_TO_SPACE with block size b (input 1) maps [n, h, w, b*b*c] to [n, h*b, w*b, c],
output (y*b + i, x*b + j, k) = input (y, x, (i*b + j)*c + k); SPACE_TO_DEPTH is its inverse.
BATCH_TO_SPACE_ND with block [bh, bw] (TENSOR_INT32 input 1) maps [bh*bw*n, h, w, c] to
[n, h*bh, w*bw, c], output (b, y*bh + i, x*bw + j) = input ((i*bw + j)*n + b, y, x);
SPACE_TO_BATCH_ND pads height and width with the [2, 2] paddings (input 2; the zero point
for quantized types, which needs FL3 when it is not 0: AOSP validation) and applies the
inverse. CHANNEL_SHUFFLE (input 1 num_groups g,
input 2 axis) views the axis of size g*k as [g, k] and transposes it to [k, g]. Every
output has the input's type, scale and zero point.

Golden: numpy reshapes and transposes written from the definitions above (one per
operation, :data:`FORMULAS`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .typed import case, values_for, x
from .variations import QUANT_REGIMES

FAMILY = "space"
GOLDEN = "numpy formula: reshape and transpose per the NNAPI definition (cts/specs/space.py {})"


def depth_to_space(v, b):
    n, h, w, c = v.shape
    return v.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * b, w * b, -1)


def space_to_depth(v, b):
    n, h, w, c = v.shape
    return v.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h // b, w // b, -1)


def batch_to_space(v, block):
    (bh, bw), (nb, h, w, c) = block, v.shape
    return v.reshape(bh, bw, nb // (bh * bw), h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(-1, h * bh, w * bw, c)


def space_to_batch(v, block, pads, pad_value):
    (bh, bw) = block
    p = np.pad(v, ((0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)), constant_values=pad_value)
    n, h, w, c = p.shape
    return p.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5).reshape(-1, h // bh, w // bw, c)


def channel_shuffle(v, groups, axis):
    v = np.moveaxis(v, axis, -1)
    s = v.shape
    return np.moveaxis(v.reshape(*s[:-1], groups, s[-1] // groups).swapaxes(-1, -2).reshape(s), -1, axis)


def _op_cases(t, k, q, layout):
    """(name, op, input shape, extra inputs, formula, base level) of each operation."""
    lay = [] if layout is None else [const(T.BOOL, layout)]
    base = 1 if layout is None else 3
    pads = np.array([[1, 0], [2, 1]], np.int32)
    axis = -1 if k % 2 else 3
    return [
        ("depth_to_space", Op.DEPTH_TO_SPACE, (2, 2, 3, 8), [const(T.INT32, 2), *lay],
         lambda v, *_: depth_to_space(v, 2), base),
        ("space_to_depth", Op.SPACE_TO_DEPTH, (2, 4, 6, 2), [const(T.INT32, 2), *lay],
         lambda v, *_: space_to_depth(v, 2), base),
        ("batch_to_space", Op.BATCH_TO_SPACE_ND, (8, 2, 3, 1),
         [const(T.TENSOR_INT32, np.array([2, 2], np.int32)), *lay],
         lambda v, *_: batch_to_space(v, (2, 2)), max(base, 2)),
        ("space_to_batch", Op.SPACE_TO_BATCH_ND, (2, 3, 5, 2),
         [const(T.TENSOR_INT32, np.array([2, 4], np.int32)), const(T.TENSOR_INT32, pads), *lay],
         lambda v, *_: space_to_batch(v, (2, 4), pads, 0.0), max(base, 2 if q is None or q[1] == 0 else 3)),
        ("channel_shuffle", Op.CHANNEL_SHUFFLE, (2, 2, 3, 6), [const(T.INT32, 3), const(T.INT32, axis)],
         lambda v, *_: channel_shuffle(v, 3, 3), 3),
    ]


def models():
    out = []
    tname = {T.TENSOR_FLOAT16: "float16", T.TENSOR_QUANT8_ASYMM: "quant8",
             T.TENSOR_QUANT8_ASYMM_SIGNED: "quant8_signed"}
    forms = [(T.TENSOR_FLOAT16, None, None)]
    forms += [(t, (s, zp), r) for t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
              for r, s, zp in QUANT_REGIMES[t]]
    for k, (t, q, regime) in enumerate(forms):
        layout = None if k % 2 == 0 else True
        for i, (name, op, shape, extra, formula, base) in enumerate(_op_cases(t, k, q, layout)):
            v = values_for(np.random.default_rng(100 * k + i), shape, t, q)
            lay = "" if layout is None or op == Op.CHANNEL_SHUFFLE else "_nchw"
            full = f"{name}_{tname[t]}{lay}" + (f"_{regime}" if regime else "")
            out.append(case(full, FAMILY, op, t, [x(v), *extra], formula, GOLDEN.format(name), base, q=q,
                            nchw=bool(layout) and op != Op.CHANNEL_SHUFFLE))
    return out
