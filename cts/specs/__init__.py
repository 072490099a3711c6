"""Our own golden test models, for what the AOSP corpus does not test (first: operations with
no corpus model at all, INSTANCE_NORMALIZATION and MIRROR_PAD; CONV_2D and DEPTHWISE_CONV_2D
with every fused activation).

A spec module (one per operation family, listed in :data:`FAMILIES`) defines ``models()``
returning test models built with :func:`one_operation`, directly or by expanding one float
spec into AOSP's usual variations (:mod:`.variations`). Every model names where its
expected values come from (``golden``): a hand calculation written in the spec, or a
numpy formula computed at build time, never the operation table under test (the builder
does not import ``runtime.ops``; ``tests/test_specs.py`` checks it).

``python -m cts.specs build`` writes the models as corpus-schema documents
(``cts/specs/built/SPECS/<family>.json.gz``, committed, so users need nothing to build), with
``golden_source`` on every model; ``python -m cts.specs check`` fails when a built file is
stale. The CTS reads ``cts/specs/built`` next to the vendored corpus by default; test ids
start with ``SPECS/`` so reports count them apart.
"""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import (OperandLifeTime as L, OperandType as T, OperationType, is_quantized_type,
                           operand_dtype)

BUILT = Path(__file__).resolve().parent / "built"
#: Version directory of the built documents (test ids ``SPECS/<family>/<name>``).
VERSION = "SPECS"
#: Spec modules, one per operation family.
FAMILIES = ("conv", "instance_norm", "mirror_pad",
            "convert",
            "compare",
            "unary",
            "binary",
            "reshape",
            "pad",
            "indexing",
            "join",
            "reduce",
            "pool",
            "space",
            "resize",
            "normalization",
            "dense",
            "grouped_transpose_conv",
            "recurrent",
            "lstm",
            "quantized_lstm",
            "roi",
            "detection",
            "multinomial",
            "lsh",
            "zero_sized",
            "decisive")
#: The corpus's ``min_supported_version`` of each feature level.
LEVEL_VERSION = {1: "V1_0", 2: "V1_1", 3: "V1_2", 4: "V1_3", 5: "AIDL_V1", 6: "AIDL_V2", 7: "AIDL_V3"}


def inp(t: T, value, scale: float = 0.0, zp: int = 0, channel_quant=None) -> tuple:
    """A model input (SUBGRAPH_INPUT) with its example value."""
    return ("input", t, np.asarray(value), scale, zp, channel_quant)


def const(t: T, value, scale: float = 0.0, zp: int = 0, channel_quant=None) -> tuple:
    """A constant operand (CONSTANT_COPY), scalar or tensor; ``channel_quant`` is
    ``(scales, channel_dim)`` for TENSOR_QUANT8_SYMM_PER_CHANNEL."""
    return ("const", t, np.asarray(value), scale, zp, channel_quant)


def omitted(t: T) -> tuple:
    """An omitted optional input (NO_VALUE: ``setOperandValue(i, nullptr, 0)``). The operand
    is still declared validly: a per-tensor quantized type gets scale 1.0 (NNAPI requires
    scale > 0 for it, value or not)."""
    scale = 1.0 if is_quantized_type(t) and t != T.TENSOR_QUANT8_SYMM_PER_CHANNEL else 0.0
    return ("omitted", t, None, scale, 0, None)


def expect(t: T, value, scale: float = 0.0, zp: int = 0) -> tuple:
    """A model output (SUBGRAPH_OUTPUT) with its expected value."""
    return ("output", t, np.asarray(value), scale, zp, None)


_LIFETIMES = {"input": L.SUBGRAPH_INPUT, "const": L.CONSTANT_COPY, "output": L.SUBGRAPH_OUTPUT,
              "omitted": L.NO_VALUE}
_SCALARS = (T.INT32, T.FLOAT32, T.FLOAT16, T.BOOL, T.UINT32)


def _operand(role: str, t: T, value, scale: float, zp: int, channel_quant) -> TestOperand:
    if value is None:  # omitted: a scalar slot, or a tensor of unknown shape
        return TestOperand(t, [], scale, zp, _LIFETIMES[role], 1, False, None, None)
    dims = [] if t in _SCALARS else list(value.shape)
    return TestOperand(t, dims, scale, zp, _LIFETIMES[role], int(role != "output"), False, channel_quant,
                       np.asarray(value, operand_dtype(t)).reshape(dims or ()))


def one_operation(name: str, family: str, op: OperationType, inputs, outputs, feature_level: int,
                  golden: str, is_relaxed: bool = False) -> tuple[TestModel, str]:
    """A one-operation test model: ``inputs`` from :func:`inp` / :func:`const` /
    :func:`omitted`, ``outputs`` from :func:`expect`; ``golden`` says where the expected
    values come from (ValueError if empty or naming the operation table). Returns (model,
    golden)."""
    if not golden or "runtime" in golden or "operation table" in golden:
        raise ValueError(f"{name}: the golden source must be independent of the code under test")
    operands = [_operand(*x) for x in [*inputs, *outputs]]
    n_in = len(inputs)
    sg = TestSubgraph(operands, [TestOperation(op, list(range(n_in)), list(range(n_in, len(operands))))],
                      [i for i, x in enumerate(inputs) if x[0] == "input"],
                      list(range(n_in, len(operands))))
    return TestModel(name, family, VERSION, LEVEL_VERSION[feature_level], False, is_relaxed, 0.0, sg), golden


def family_models(family: str) -> list[tuple[TestModel, str]]:
    """(model, golden source) of every model of spec module ``family``."""
    return importlib.import_module(f"cts.specs.{family}").models()
