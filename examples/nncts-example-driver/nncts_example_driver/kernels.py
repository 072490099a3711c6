"""The example driver's own kernels: TENSOR_FLOAT32 only, NNAPI semantics up to feature level 3.

A real vendor runs these on its accelerator; here each is a few lines of numpy, written from
the NNAPI operation definitions (``NeuralNetworksTypes.h``), not taken from nncts's reference
kernels. Each kernel takes the operation's input values in NNAPI order (numpy arrays; scalars
as 0-d arrays) and returns its single output. A ``ValueError`` means the execution fails
(the device turns it into ``GENERAL_FAILURE``).

* ADD, SUB, MUL (inputs: a, b, fuse code): element-wise with numpy-style broadcasting (NNAPI:
  dimensions aligned from the last one, each pair equal or one of them 1; a 0 pairs with 0
  or 1 and gives 0), then the fused activation.
* RELU, RELU1, RELU6, LOGISTIC, TANH, FLOOR: element-wise, any rank up to 4.
* FULLY_CONNECTED (input, weights [units, size], bias [units], fuse code): the input is
  flattened to [batch, size] with batch = elements / size; output [batch, units].
* RESHAPE (input, shape): the new shape may hold one -1 (inferred); element count unchanged.
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperationType as O

F32 = np.float32

#: FuseCode (NNAPI ``ANEURALNETWORKS_FUSED_*``) -> (low, high) clamp; None = no bound.
FUSED = {0: (None, None), 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def activation(x: np.ndarray, code) -> np.ndarray:
    """Apply fused activation ``code`` (NONE, RELU, RELU1, RELU6) to float32 ``x``; NaN stays NaN."""
    code = int(code)
    if code not in FUSED:
        raise ValueError(f"fused activation {code} is not a FuseCode (0..3)")
    low, high = FUSED[code]
    if low is not None:
        x = np.where(x < low, F32(low), x)  # where, not max: NaN compares False and is kept
    if high is not None:
        x = np.where(x > high, F32(high), x)
    return x.astype(F32, copy=False)


def _binary(fn):
    def kernel(a, b, code):
        return activation(fn(a.astype(F32), b.astype(F32)), code)  # float32 arithmetic, IEEE rounding
    kernel.__name__ = fn.__name__
    return kernel


def _unary_f64(fn):
    """An element-wise function computed in float64, rounded once to float32."""
    def kernel(x):
        return fn(x.astype(np.float64)).astype(F32)
    kernel.__name__ = fn.__name__
    return kernel


def logistic(x):
    with np.errstate(over="ignore"):  # exp overflow gives inf -> 0.0, the right limit
        return 1.0 / (1.0 + np.exp(-x))


def fully_connected(x, weights, bias, code):
    if weights.ndim != 2 or bias.shape != (weights.shape[0],):
        raise ValueError(f"weights {weights.shape} and bias {bias.shape} do not match")
    size = weights.shape[1]
    if size == 0 or x.size % size:
        raise ValueError(f"input of {x.size} elements is not a multiple of input size {size}")
    rows = x.reshape(x.size // size, size).astype(np.float64)
    y = rows @ weights.astype(np.float64).T + bias.astype(np.float64)
    return activation(y.astype(F32), code)


def reshape(x, shape):
    shape = [int(d) for d in np.asarray(shape).reshape(-1)]
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise ValueError(f"RESHAPE shape {shape}: at most one -1 and no other negative size")
    return x.reshape(shape)  # ValueError when the element count differs


#: OperationType -> kernel: the operations this driver claims (TENSOR_FLOAT32 only).
KERNELS = {
    O.ADD: _binary(np.add),
    O.SUB: _binary(np.subtract),
    O.MUL: _binary(np.multiply),
    O.RELU: lambda x: activation(x, 1),
    O.RELU1: lambda x: activation(x, 2),
    O.RELU6: lambda x: activation(x, 3),
    O.LOGISTIC: _unary_f64(logistic),
    O.TANH: _unary_f64(np.tanh),
    O.FLOOR: lambda x: np.floor(x).astype(F32),
    O.FULLY_CONNECTED: fully_connected,
    O.RESHAPE: reshape,
}
