"""Type conversions: CAST (NNAPI code 45, FL3; identity casts of the FL4 types), QUANTIZE
(72, FL3; TENSOR_QUANT8_ASYMM_SIGNED output FL4), DEQUANTIZE (6, FL1; FL3-FL4 input types):
what the AOSP corpus leaves out.

Definition (NNAPI ``types.spec``): CAST converts each stored value to the output type and
ignores the scale and zeroPoint of quantized tensors (a TENSOR_QUANT8_ASYMM input is a
tensor of uint8 values); FL4 adds same-type casts of TENSOR_BOOL8, TENSOR_QUANT16_ASYMM,
TENSOR_QUANT16_SYMM, TENSOR_QUANT8_ASYMM_SIGNED and TENSOR_QUANT8_SYMM, which copy the
values. QUANTIZE: ``output = max(0, min(255, round(input / scale) + zeroPoint))``
(TENSOR_QUANT8_ASYMM; the signed type saturates to [-128, 127]), ``round`` half away from
zero. DEQUANTIZE: ``output = (input - zeroPoint) * scale``.

Cases: CAST in every quant regime the corpus misses (zero point 0, mid-range, extreme;
scales below and above 1) as same-type casts (FL3 TENSOR_QUANT8_ASYMM, FL4 the others) and
a TENSOR_QUANT8_ASYMM to TENSOR_FLOAT32 cast of stored values; QUANTIZE's FL3 signatures
with zero points 0, mid-range and 255, scales 0.5 and 2, saturating inputs, batch 2;
DEQUANTIZE with scales above 1 and the extreme zero point. Not zero-sized inputs (left for
a model that produces them; AOSP's QUANTIZE and DEQUANTIZE accept them).

Golden: the stored values (CAST: a copy, or the integer value as a float; a
hand calculation), or the formulas above in numpy (QUANTIZE, DEQUANTIZE, :func:`.typed.case`).
"""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import expect, inp, one_operation
from .typed import ZP, case, q, quarters, stored, v

FAMILY = "convert"
F32, F16, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
Q16A, Q16S, Q8SYMM = T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT8_SYMM
CAST_GOLDEN = "hand calculation (NNAPI CAST ignores scale and zeroPoint): the stored values {} (cts/specs/convert.py)"


def _cast(name, x, out_t):
    """CAST of quantized tensor ``x``: to its own type (same scale and zero point) the
    stored values copied; to TENSOR_FLOAT32 the stored integers as floats."""
    same = out_t == x.t
    want = x.value if same else x.value.astype(np.float32)
    level = 3 if x.t == Q8 else 4
    return one_operation(name, FAMILY, Op.CAST, [inp(x.t, x.value, x.scale, x.zp)],
                         [expect(out_t, want, x.scale if same else 0.0, x.zp if same else 0)], level,
                         CAST_GOLDEN.format("copied" if same else "as floats"))


def _casts(rng) -> list:
    z8, z8s, z16 = ZP[Q8], ZP[Q8S], ZP[Q16A]
    return [
        _cast("cast_quant8_zp0_scale0.5", q(Q8, stored(rng, Q8, (2, 3)), 0.5, z8["0"]), Q8),
        _cast("cast_quant8_zp_extreme_to_float32", q(Q8, stored(rng, Q8, (2, 3)), 0.25, z8["extreme"]), F32),
        _cast("cast_quant16_asymm_zp0", q(Q16A, stored(rng, Q16A, (2, 3)), 0.125, z16["0"]), Q16A),
        _cast("cast_quant16_asymm_zp_extreme", q(Q16A, stored(rng, Q16A, (2, 3)), 0.5, z16["extreme"]), Q16A),
        _cast("cast_quant16_symm_scale0.125", q(Q16S, stored(rng, Q16S, (2, 3)), 0.125, 0), Q16S),
        _cast("cast_quant8_symm_scale0.125", q(Q8SYMM, stored(rng, Q8SYMM, (2, 3)), 0.125, 0), Q8SYMM),
        _cast("cast_quant8_signed_zp0", q(Q8S, stored(rng, Q8S, (2, 3)), 0.5, z8s["0"]), Q8S),
        _cast("cast_quant8_signed_zp_mid_scale2", q(Q8S, stored(rng, Q8S, (2, 3)), 2.0, z8s["mid"]), Q8S),
        _cast("cast_quant8_signed_zp_extreme", q(Q8S, stored(rng, Q8S, (2, 3)), 0.25, z8s["extreme"]), Q8S),
    ]


def _quantize(name, x, out_t, scale, zp):
    return case(name, FAMILY, Op.QUANTIZE, None, [x], lambda r: r,
                "numpy formula: clamp(round half away(x / scale) + zeroPoint) (cts/specs/convert.py)",
                3 if out_t == Q8 else 4, out_t=out_t, out_q=(scale, zp))


def _dequantize(name, x, out_t):
    level = {Q8: 1 if out_t == F32 else 3, Q8SYMM: 3, Q8S: 4}[x.t]
    return case(name, FAMILY, Op.DEQUANTIZE, None, [x], lambda r: r,
                "numpy formula: (q - zeroPoint) * scale (cts/specs/convert.py)", level, out_t=out_t)


def models():
    rng = np.random.default_rng(3)
    z8 = ZP[Q8]
    return [
        *_casts(rng),
        # QUANTIZE: inputs below and above the representable range saturate; multiples of 1/4
        # give exact quotients, ties included (round half away from zero)
        _quantize("quantize_float32_zp0_scale0.5_batch2", v(F32, quarters(rng, (2, 4), -5, 130)), Q8, 0.5, z8["0"]),
        _quantize("quantize_float32_zp_mid_scale2", v(F32, quarters(rng, (2, 3), -250, 350)), Q8, 2.0, z8["mid"]),
        _quantize("quantize_float16_zp_extreme", v(F16, quarters(rng, (2, 3), -70, 5)), Q8, 0.25, z8["extreme"]),
        _dequantize("dequantize_quant8_zp_extreme_scale1.5", q(Q8, stored(rng, Q8, (2, 3)), 1.5, z8["extreme"]), F32),
        _dequantize("dequantize_quant8_symm_scale2", q(Q8SYMM, stored(rng, Q8SYMM, (2, 3)), 2.0, 0), F32),
        _dequantize("dequantize_quant8_signed_scale3_float16", q(Q8S, stored(rng, Q8S, (2, 3)), 3.0, 7), F16),
    ]
