"""RANDOM_MULTINOMIAL (NNAPI code 74, feature level 3): draws samples from the categorical
distribution softmax(logits) of each row.

Inputs: 0 logits [batches, classes] TENSOR_FLOAT32 or TENSOR_FLOAT16 (unnormalized
log-probabilities); 1 sample count INT32; 2 seeds [2] TENSOR_INT32 (both 0: seeded from
the operating system). Output: [batches, samples] TENSOR_INT32 of class indexes in
[0, classes).

Errors (OperationError naming the input and the rule): logits not 2-D or with no class,
sample count < 1, seeds not of shape [2], a row with no finite logit.

Semantics: NNAPI ``NeuralNetworksTypes.h`` (RANDOM_MULTINOMIAL) and AOSP
``Multinomial.cpp``: non-finite logits get probability 0, the others exp(logit - max) /
sum. AOSP samples with TensorFlow's Philox stream; the spec fixes no stream, and the CTS
judges only the distribution of the samples (``expected_multinomial_distribution_
tolerance``; see :func:`runtime.testing.criteria.judge`), so this reference samples with a
numpy ``Generator`` seeded from the two seeds: the same seeds give the same samples here,
not AOSP's. AOSP checks no input value; a sample count < 1 (an empty or, for a negative
INT32, a 4-billion-sample output in AOSP's unsigned arithmetic) and a row without a finite
logit (AOSP would emit the out-of-range index ``classes``) are rejected here instead.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor

T = OperandType


def _prepare(ctx: OpContext):
    """Output shape [batches, samples]."""
    logits = ctx.inputs[0]
    check(logits.rank == 2, f"input 0 (logits) must be 2-D, has shape {list(logits.dims)}")
    check(logits.dims[1] >= 1, f"input 0 (logits) must have at least 1 class, has shape "
                               f"{list(logits.dims)}")
    samples = ctx.scalar(1)
    check(samples >= 1, f"input 1 (sample_count) value {samples} must be >= 1")
    check(tuple(ctx.inputs[2].dims) == (2,),
          f"input 2 (seeds) must have shape [2], has {list(ctx.inputs[2].dims)}")
    return [(logits.dims[0], samples)]


def _validate(ctx: OpContext) -> None:
    """Model-time rule: a constant sample count is >= 1."""
    if ctx.has_value(1):
        check(ctx.scalar(1) >= 1, f"input 1 (sample_count) value {ctx.scalar(1)} must be >= 1")


def _execute(ctx: OpContext):
    """Per row: cdf of exp(logit - max finite logit) over finite logits; each sample is
    the first class whose cdf exceeds u * total, u uniform in [0, 1)."""
    batches, samples = _prepare(ctx)[0]
    logits = np.asarray(ctx.value(0), np.float64)
    seeds = [int(s) & 0xFFFFFFFF for s in ctx.value(2)]
    rng = np.random.default_rng(None if seeds == [0, 0] else seeds)
    finite = np.isfinite(logits)
    empty = np.flatnonzero(~finite.any(axis=1))
    check(empty.size == 0, f"input 0 (logits) row {empty[0] if empty.size else 0} has no "
                           f"finite value")
    top = np.where(finite, logits, -np.inf).max(axis=1, keepdims=True)
    cdf = np.cumsum(np.where(finite, np.exp(logits - top), 0.0), axis=1)
    # All rows in one sorted search: row b's normalized cdf lies in (b, b + 1], its
    # targets are b + u (u uniform in [0, 1)); float64 keeps u to 2^-29 for 2^24 rows.
    classes = logits.shape[1]
    rows = np.arange(batches)[:, None]
    keys = (cdf / cdf[:, -1:] + rows).reshape(-1)
    targets = (rng.random((batches, samples)) + rows).reshape(-1)
    picks = np.searchsorted(keys, targets, side="right").reshape(batches, samples)
    out = np.clip(picks - rows * classes, 0, classes - 1).astype(np.int32)
    return [out]


register(OperationDef(
    OperationType.RANDOM_MULTINOMIAL,
    tuple(sig(3, [tensor("logits", t, (2,)), scalar("sample_count", T.INT32),
                  tensor("seeds", T.TENSOR_INT32, (1,))],
              [tensor("output", T.TENSOR_INT32, (2,))])
          for t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)),
    _prepare, _execute, validate=_validate,
    summary="samples class indexes from softmax(logits) per row", aosp_source="CpuExecutor.cpp",
    nondeterministic=True))
