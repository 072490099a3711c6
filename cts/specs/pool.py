"""AVERAGE_POOL_2D (NNAPI code 1), L2_POOL_2D (12) and MAX_POOL_2D (17), feature levels 1-4:
the signature rows, FuseCodes, padding schemes, layouts and quantization regimes the AOSP
corpus leaves empty (``nncts coverage``).

Definition (NNAPI ``types.spec``). Input 0 [batches, height, width, depth] (NHWC; NCHW when
the layout flag is true, FL3). Explicit padding: inputs 1-4 padding left, right, top,
bottom, 5-6 stride width, height, 7-8 filter width, height, 9 FuseCode, 10 the optional
layout (FL3). Implicit padding: 1 PaddingCode (SAME / VALID, as CONV_2D with dilation 1),
2-3 strides, 4-5 filter size, 6 FuseCode, 7 layout. Each output element pools the window's
elements that lie inside the input (padding is not an element): AVERAGE_POOL_2D their mean,
L2_POOL_2D the square root of the mean of their squares, MAX_POOL_2D their maximum; then
the FuseCode clamp. Types: TENSOR_FLOAT32 (FL1), TENSOR_FLOAT16 (FL3), TENSOR_QUANT8_ASYMM
(FL1; not L2_POOL_2D), TENSOR_QUANT8_ASYMM_SIGNED (FL4); the quantized output has the
input's scale and zero point.

Golden: :func:`pool_formula`, numpy over each output position's in-bounds window, written
from the definition above; the zero-sized case (AVERAGE_POOL_2D on zero batches, AOSP's
form: :func:`.typed.zero_sized`) by hand.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .conv import _CLAMP, NONE, RELU, RELU1, RELU6, SAME, VALID, implicit_padding
from .typed import case, values_for, x, zero_sized
from .variations import QUANT_REGIMES

FAMILY = "pool"
GOLDEN = "numpy formula: {} over each window's in-bounds elements, FuseCode clamp (cts/specs/pool.py)"
_REDUCE = {Op.AVERAGE_POOL_2D: ("mean", np.mean), Op.MAX_POOL_2D: ("max", np.max),
           Op.L2_POOL_2D: ("sqrt(mean(x^2))", lambda w, axis: np.sqrt(np.mean(w * w, axis=axis)))}


#: Float input spread per FuseCode, so pooled values fall both inside and beyond the clamp.
_SPREAD = {NONE: 1.0, RELU: 1.0, RELU1: 0.4, RELU6: 2.5}


def pool_formula(op, x_nhwc, pads, strides, filt, act) -> np.ndarray:
    """NHWC pooling in float64: ``pads`` (left, right, top, bottom), ``strides`` and
    ``filt`` (width, height)."""
    left, right, top, bottom = pads
    (sw, sh), (fw, fh) = strides, filt
    n, h, w, c = x_nhwc.shape
    oh, ow = (h + top + bottom - fh) // sh + 1, (w + left + right - fw) // sw + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * sh - top, j * sw - left
            win = x_nhwc[:, max(y0, 0):min(y0 + fh, h), max(x0, 0):min(x0 + fw, w), :]
            out[:, i, j, :] = _REDUCE[op][1](win, axis=(1, 2))
    return np.clip(out, *_CLAMP[act])


def pool_case(name, op, t, shape, padding, strides, filt, act, layout=None, q=None, seed=0):
    """One model: ``padding`` SAME, VALID or (left, right, top, bottom); ``layout`` None
    (no layout input), False (NHWC given) or True (NCHW)."""
    rng = np.random.default_rng(seed)
    value = values_for(rng, shape, t, q) * (_SPREAD[act] if q is None else 1.0)
    if op == Op.L2_POOL_2D:
        value = np.abs(value)
    if isinstance(padding, int):
        pt, pb = implicit_padding(shape[1], strides[1], filt[1], 1, padding)
        pl, pr = implicit_padding(shape[2], strides[0], filt[0], 1, padding)
        pads, head = (pl, pr, pt, pb), [padding]
    else:
        pads, head = padding, list(padding)
    ints = [const(T.INT32, v) for v in [*head, *strides, *filt, act]]
    tail = [] if layout is None else [const(T.BOOL, layout)]
    return case(name, FAMILY, op, t, [x(value), *ints, *tail],
                lambda v, *_: pool_formula(op, v, pads, strides, filt, act),
                GOLDEN.format(_REDUCE[op][0]), 1 if layout is None else 3, q=q, nchw=bool(layout))


def _cases(op, prefix):
    """Every type x {explicit, implicit} x {no layout, layout}, rotating FuseCodes (float
    types), padding schemes, layouts, batch sizes and quantization regimes over them."""
    types = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16]
    if op != Op.L2_POOL_2D:
        types += [T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED]
    acts = (NONE, RELU, RELU1, RELU6)
    out = []
    k = 0
    for t in types:
        regimes = QUANT_REGIMES.get(t, ((None, None, None),))
        for explicit in (True, False):
            for layout in (None, False, True):
                if t == T.TENSOR_FLOAT32 and layout is None:
                    continue  # FL1 rows: the corpus has them
                rname, scale, zp = regimes[k % len(regimes)]
                q = None if rname is None else (scale, zp)
                shape = (2, 5, 4, 3) if k % 2 else (1, 4, 6, 2)
                padding = (1, 0, 1, 1) if explicit else (SAME, VALID)[k % 2]
                strides, filt = ((2, 1), (3, 2)) if k % 3 else ((1, 2), (2, 3))
                tname = {T.TENSOR_FLOAT32: "float32", T.TENSOR_FLOAT16: "float16",
                         T.TENSOR_QUANT8_ASYMM: "quant8", T.TENSOR_QUANT8_ASYMM_SIGNED: "quant8_signed"}[t]
                lname = {None: "no_layout", False: "nhwc", True: "nchw"}[layout]
                name = (f"{prefix}_{tname}_{'explicit' if explicit else 'implicit'}_{lname}"
                        + (f"_{rname}" if rname else ""))
                act = acts[k % 4] if q is None else NONE  # a clamp would flatten the quantized outputs
                out.append(pool_case(name, op, t, shape, padding, strides, filt, act, layout, q, seed=k))
                k += 1
    return out


def models():
    # zero batches (AOSP registers the pooling operations with allowZeroSizedInput): explicit
    # padding 0, strides 1, a 2x2 filter over [0, 2, 2, 1] -> [0, 1, 1, 1]
    zero = zero_sized("avg_pool_zero_sized", FAMILY, Op.AVERAGE_POOL_2D,
                      [const(T.INT32, v) for v in (0, 0, 0, 0, 1, 1, 2, 2, NONE)], [1, 1, 1], 3)
    return [*_cases(Op.AVERAGE_POOL_2D, "avg_pool"), *_cases(Op.MAX_POOL_2D, "max_pool"),
            *_cases(Op.L2_POOL_2D, "l2_pool"), zero]
