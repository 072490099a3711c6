"""FULLY_CONNECTED (NNAPI code 9) and BATCH_MATMUL (102, FL6): the FuseCodes, quantization
regimes and weight shapes the AOSP corpus leaves empty (``nncts coverage``).

Definitions (NNAPI ``types.spec``). FULLY_CONNECTED: input 0 [batch, input_size], input 1
weights [num_units, input_size], input 2 bias [num_units] (TENSOR_INT32 with scale
input_scale * weights_scale for quantized inputs), input 3 FuseCode: out = clamp(x @ w^T +
b); at FL1-2 a TENSOR_QUANT8_ASYMM output needs scale > input_scale * weights_scale.
BATCH_MATMUL: inputs lhs, rhs [..., r, c] of the same type and rank, adj_x, adj_y (BOOL):
out[b] = op_x(lhs[b]) @ op_y(rhs[b]), op the transpose when the flag is true; a
TENSOR_QUANT8_ASYMM_SIGNED output has its own scale and zero point.

Golden: the numpy matrix products above, on the dequantized inputs.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const
from .conv import _CLAMP, NONE, RELU1, RELU6
from .typed import bias, case, values_for, x

FAMILY = "dense"
F32, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
FC_GOLDEN = "numpy formula: clamp(x @ weights^T + bias) (cts/specs/dense.py)"
BMM_GOLDEN = "numpy formula: op_x(lhs) @ op_y(rhs) per batch (cts/specs/dense.py)"


def _fc(name, t, batch, units, size, act, q=None, wq=None, out_q=None, seed=0, spread=1.0):
    """``spread`` scales float inputs and weights so the products straddle the clamp bounds."""
    rng = np.random.default_rng(seed)
    v, w = values_for(rng, (batch, size), t, q) * spread, values_for(rng, (units, size), t, wq) * spread
    b = np.round(rng.uniform(-4, 4, units)) * (1 if q is None else q[0] * wq[0])
    return case(name, FAMILY, Op.FULLY_CONNECTED, t, [x(v), x(w, wq, "const"), bias(b), const(T.INT32, act)],
                lambda v, w, b, *_: np.clip(v @ w.T + b, *_CLAMP[act]), FC_GOLDEN, 1, q=q, out_q=out_q)


def _bmm(name, t, lhs, rhs, adj_x, adj_y, q=None, rq=None, out_q=None, seed=0):
    rng = np.random.default_rng(seed)
    a, b = values_for(rng, lhs, t, q), values_for(rng, rhs, t, rq)
    for m in (a, b):  # a square matrix must not equal its transpose, or the adjoint is moot
        if m.shape[-1] == m.shape[-2] and np.allclose(m, np.swapaxes(m, -1, -2)):
            raise ValueError(f"{name}: symmetric square matrix")
    op = lambda m, adj: np.swapaxes(m, -1, -2) if adj else m  # noqa: E731
    return case(name, FAMILY, Op.BATCH_MATMUL, t,
                [x(a), x(b, rq, "const"), const(T.BOOL, adj_x), const(T.BOOL, adj_y)],
                lambda a, b, *_: op(a, adj_x) @ op(b, adj_y), BMM_GOLDEN, 6, q=q, out_q=out_q)


def models():
    return [
        _fc("fully_connected_float32_relu1_batch2", F32, 2, 3, 4, RELU1, seed=1, spread=0.25),
        _fc("fully_connected_float32_relu6_square", F32, 3, 4, 4, RELU6, seed=2, spread=0.5),
        # output (scale, zero point) from the golden's range ("auto"), above input_scale *
        # weights_scale (the FL1 rule)
        _fc("fully_connected_quant8_zp_max", Q8, 2, 3, 5, NONE, (0.25, 255), (0.125, 128), "auto", seed=3),
        _fc("fully_connected_quant8_scale_large", Q8, 2, 4, 3, NONE, (2.0, 100), (0.25, 120), "auto", seed=4),
        _fc("fully_connected_quant8_signed_scale_large", Q8S, 3, 2, 4, NONE, (2.0, -20), (0.25, 3), "auto", seed=5),
        _bmm("batch_matmul_float32_square_rhs", F32, (2, 3, 4), (2, 4, 4), False, False, seed=6),
        _bmm("batch_matmul_quant8_signed_scale_large_adj_y", Q8S, (2, 2, 3), (2, 4, 3), False, True,
             (2.0, -20), (0.5, 0), "auto", seed=7),
        # square, non-symmetric matrices (checked in _bmm): the output shape is the same with
        # or without an adjoint, so only the values show whether adj_x / adj_y were honoured
        # (issue 24: effect coverage of adj_x / adj_y)
        *(_bmm(f"batch_matmul_float32_square_adj_{ax:d}{ay:d}", F32, (2, 3, 3), (2, 3, 3), ax, ay,
               seed=8 + 2 * ax + ay) for ax in (False, True) for ay in (False, True)),
    ]
