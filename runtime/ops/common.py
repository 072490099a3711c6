"""Helpers shared by the reference kernels: (de)quantization, fused activations,
implicit padding, and float32/float16 handling."""
from __future__ import annotations

import numpy as np

from ..types import FuseCode, OperandType, PaddingCode, operand_dtype
from .base import OperandView, check

QUANT_RANGES = {
    OperandType.TENSOR_QUANT8_ASYMM: (0, 255),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    OperandType.TENSOR_QUANT8_SYMM: (-127, 127),
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
    OperandType.TENSOR_QUANT16_SYMM: (-32768, 32767),
    OperandType.TENSOR_QUANT16_ASYMM: (0, 65535),
    OperandType.TENSOR_INT32: (-(2**31), 2**31 - 1),
}


def is_quant(op: OperandView) -> bool:
    return op.type in QUANT_RANGES and op.type != OperandType.TENSOR_INT32


def to_float(op: OperandView, value: np.ndarray | None = None) -> np.ndarray:
    """Real values of ``op`` as float64: dequantized for quantized types
    (``(q - zero_point) * scale``, per channel for TENSOR_QUANT8_SYMM_PER_CHANNEL), cast for
    float and int types."""
    v = op.value if value is None else value
    if op.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL and op.channel_quant is not None:
        scales, dim = op.channel_quant
        shape = [1] * v.ndim
        shape[dim] = -1
        return v.astype(np.float64) * np.asarray(scales, np.float64).reshape(shape)
    if is_quant(op):
        return (v.astype(np.float64) - op.zero_point) * np.float64(np.float32(op.scale))
    return v.astype(np.float64)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, ties away from zero (C ``std::round``)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def from_float(out: OperandView, real: np.ndarray) -> np.ndarray:
    """Store real values ``real`` into ``out``'s type: quantize (round half away from zero,
    saturate) for quantized types, cast for float types, round+saturate for TENSOR_INT32."""
    dtype = operand_dtype(out.type)
    real = np.asarray(real, dtype=np.float64)
    if is_quant(out):
        lo, hi = QUANT_RANGES[out.type]
        q = round_half_away(real / np.float64(np.float32(out.scale))) + out.zero_point
        return np.clip(np.nan_to_num(q), lo, hi).astype(dtype)
    if out.type in (OperandType.TENSOR_INT32, OperandType.INT32):
        lo, hi = QUANT_RANGES[OperandType.TENSOR_INT32]
        return np.clip(round_half_away(real), lo, hi).astype(dtype)
    return real.astype(dtype)


def activation_range(code: int) -> tuple[float, float]:
    """Real clamp range of a FuseCode (NONE: unbounded, RELU: [0, inf), RELU1: [-1, 1],
    RELU6: [0, 6])."""
    return {
        FuseCode.NONE: (-np.inf, np.inf),
        FuseCode.RELU: (0.0, np.inf),
        FuseCode.RELU1: (-1.0, 1.0),
        FuseCode.RELU6: (0.0, 6.0),
    }[FuseCode(code)]


def check_fuse_code(code: int) -> None:
    check(code in FuseCode._value2member_map_, f"fused activation {code} is not a FuseCode (0-3)")


def apply_activation(real: np.ndarray, code: int) -> np.ndarray:
    """Clamp real values to the range of FuseCode ``code``."""
    lo, hi = activation_range(code)
    return np.clip(real, lo, hi)


def float_output(out: OperandView, real: np.ndarray) -> np.ndarray:
    """Apply nothing but the store: alias of :func:`from_float` for readability."""
    return from_float(out, real)


def same_padding(in_size: int, stride: int, filter_size: int, dilation: int = 1) -> tuple[int, int]:
    """NNAPI implicit SAME padding: (head, tail) so that out = ceil(in / stride)."""
    eff = (filter_size - 1) * dilation + 1
    out = (in_size + stride - 1) // stride
    total = max((out - 1) * stride + eff - in_size, 0)
    return total // 2, total - total // 2


def implicit_padding(code: int, in_size: int, stride: int, filter_size: int,
                     dilation: int = 1) -> tuple[int, int]:
    """(head, tail) padding for PaddingCode ``code`` (SAME or VALID)."""
    check(code in (PaddingCode.SAME, PaddingCode.VALID), f"padding scheme {code} is not SAME (1) or VALID (2)")
    if code == PaddingCode.VALID:
        return 0, 0
    return same_padding(in_size, stride, filter_size, dilation)


def conv_out_size(in_size: int, filter_size: int, stride: int, pad_head: int, pad_tail: int,
                  dilation: int = 1) -> int:
    """Output extent of a convolution/pooling window along one axis."""
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + pad_head + pad_tail) // stride + 1
