"""Variants of a test model that the AOSP harness derives at run time (no separate corpus
models exist for them): dynamic output shapes and the asymm-to-signed quantization
coupling."""
from __future__ import annotations

import copy

import numpy as np

from ..types import OperandLifeTime, OperandType
from .test_model import TestModel


def with_dynamic_outputs(tm: TestModel) -> TestModel:
    """A copy whose SUBGRAPH_OUTPUT operands (every subgraph) have all dimensions 0, rank
    kept (AOSP ``convertToDynamicOutputShape`` variant)."""
    out = copy.deepcopy(tm)
    for sg in [out.main, *out.referenced]:
        for o in sg.operands:
            if o.lifetime == OperandLifeTime.SUBGRAPH_OUTPUT:
                o.dimensions = [0] * len(o.dimensions)
    return out


def with_signed_quantization(tm: TestModel) -> TestModel:
    """A copy with every TENSOR_QUANT8_ASYMM operand turned TENSOR_QUANT8_ASYMM_SIGNED:
    zeroPoint - 128 and every value - 128 (inputs, constants and expected outputs), which
    must give the same real results (AOSP quantization-coupling test, FL4)."""
    out = copy.deepcopy(tm)
    for sg in [out.main, *out.referenced]:
        for o in sg.operands:
            if o.type == OperandType.TENSOR_QUANT8_ASYMM:
                o.type = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
                o.zero_point -= 128
                if o.data is not None:
                    o.data = (o.data.astype(np.int16) - 128).astype(np.int8)
    return out
