"""Shared helpers of the element-wise spec families (:mod:`.binary`, :mod:`.unary`,
:mod:`.compare`, :mod:`.convert`): one-operation models whose quantized operands carry
explicit scales and zero points (the coverage matrix's quant regimes,
:data:`ZP`, from :data:`.variations.QUANT_REGIMES`), and goldens computed by the family's own numpy formula on
the real values the model feeds.

A tensor is given as :func:`q` (quantized: stored values, scale, zero point) or :func:`v`
(any other type: the values as stored). :func:`case` dequantizes every input
(``(q - zeroPoint) * scale``, NNAPI ``types.spec`` "real_value = (integer_value -
zeroPoint) * scale"), applies the formula in float64, and stores the result in the output's
type: quantized outputs round half away from zero and saturate (:func:`.variations.quantize`),
float outputs are rounded once to their type, TENSOR_INT32 and TENSOR_BOOL8 keep the value.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.types import OperandType as T, is_quantized_type, operand_dtype

from . import const, expect, inp, one_operation
from .variations import QUANT_REGIMES, dequantize, quantize, stored_range

#: FuseCode (NNAPI ``NeuralNetworksTypes.h``): NONE, RELU max(x, 0), RELU1 clamp to [-1, 1],
#: RELU6 clamp to [0, 6].
NONE, RELU, RELU1, RELU6 = 0, 1, 2, 3
FUSE = {NONE: (-np.inf, np.inf), RELU: (0.0, np.inf), RELU1: (-1.0, 1.0), RELU6: (0.0, 6.0)}
FUSE_NAMES = {NONE: "none", RELU: "relu", RELU1: "relu1", RELU6: "relu6"}
#: Zero points of the coverage regimes per asymmetric type: ``ZP[t]["0" | "mid" |
#: "extreme"]`` (:data:`.variations.QUANT_REGIMES`; extreme: 255 unsigned, -128 signed).
ZP = {t: dict(zip(("0", "mid", "extreme"), (zp for _, _, zp in rows)))
      for t, rows in QUANT_REGIMES.items() if rows[0][0] == "zp0"}


@dataclass(frozen=True)
class Tensor:
    """One tensor operand: type, stored value, scale, zero point, and whether it is a model
    input (else a constant)."""

    t: T
    value: np.ndarray
    scale: float = 0.0
    zp: int = 0
    is_input: bool = True

    def real(self) -> np.ndarray:
        """The values the operand stands for (float64; bools stay bools)."""
        if is_quantized_type(self.t):
            return dequantize(self.value, self.scale, self.zp)
        return self.value if self.t == T.TENSOR_BOOL8 else self.value.astype(np.float64)


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


def quarters(rng, shape, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
    """Uniform multiples of 1/4 in [lo, hi] (exact in float16, products exact in float32)."""
    return np.round(rng.uniform(lo, hi, shape) * 4) / 4


def stored(rng, t: T, shape, lo: int | None = None, hi: int | None = None) -> np.ndarray:
    """Uniform stored values of quantized type ``t`` in [lo, hi] (default: the whole range)."""
    tlo, thi = stored_range(t)
    return rng.integers(tlo if lo is None else lo, (thi if hi is None else hi) + 1, shape)


def spans_fuse_codes(pre) -> bool:
    """Whether values ``pre`` lie below -1, in (-1, 1), in (1, 6) and above 6, so each
    FuseCode's clamp changes some element."""
    pre = np.asarray(pre)
    return bool((pre < -1).any() and (abs(pre) < 1).any() and ((pre > 1) & (pre < 6)).any() and (pre > 6).any())


def output(t: T, real, scale: float = 0.0, zp: int = 0):
    """The expected output operand tuple for real values ``real`` in type ``t``."""
    real = np.asarray(real)
    if is_quantized_type(t):
        return expect(t, quantize(real, np.float32(scale), zp, t), scale, zp)
    return expect(t, real.astype(operand_dtype(t)), scale, zp)


def case(name: str, family: str, op, level: int, golden: str, formula, tensors, out_t: T,
         out_scale: float = 0.0, out_zp: int = 0, scalars=()) -> tuple:
    """One model: ``tensors`` (:class:`Tensor`) then ``scalars`` (``(type, value)``
    constants) as the operation's inputs; the expected output is ``formula(*real values of
    tensors)`` stored as ``out_t`` with ``out_scale`` and ``out_zp``."""
    want = formula(*[x.real() for x in tensors])
    ins = [(inp if x.is_input else const)(x.t, x.value, x.scale, x.zp) for x in tensors]
    ins += [const(t, val) for t, val in scalars]
    return one_operation(name, family, op, ins, [output(out_t, want, out_scale, out_zp)], level, golden)
