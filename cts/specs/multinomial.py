"""RANDOM_MULTINOMIAL (NNAPI code 74, FL3) with batch 2, the shape cell the AOSP corpus leaves
empty (``nncts coverage``; its models have one row of logits).

Definition (NNAPI ``types.spec``): input 0 logits [batches, classes] (unnormalized log
probabilities), input 1 sample count INT32, input 2 seeds TENSOR_INT32 [2]; output [batches,
samples] TENSOR_INT32, each sample of row b drawn from softmax(logits[b]).

Golden, by hand: the rows' distributions are softmax(log p) = p for the chosen p, judged as
AOSP's harness judges them (``expected_multinomial_distribution_tolerance``: every sample a
class index, each class's frequency within the tolerance of its probability, per row); the
stored expected samples are placeholders (zeros) that the distribution check never reads.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from runtime.types import OperandType as T, OperationType as Op

from . import const, expect, inp, one_operation

FAMILY = "multinomial"
GOLDEN = "hand calculation: softmax(log p) = p per row, judged by class frequency within the tolerance"
SAMPLES = 4000
#: Frequency tolerance: more than 5 standard deviations of a frequency at 4000 samples.
TOLERANCE = 0.04


def _model(t, p):
    logits = np.log(np.asarray(p, np.float64))
    name = f"random_multinomial_{'float16' if t == T.TENSOR_FLOAT16 else 'float32'}_batch{len(p)}"
    tm, golden = one_operation(name, FAMILY, Op.RANDOM_MULTINOMIAL,
                               [inp(t, logits), const(T.INT32, SAMPLES), const(T.TENSOR_INT32, [37, 42])],
                               [expect(T.TENSOR_INT32, np.zeros((len(p), SAMPLES), np.int32))], 3, GOLDEN)
    return dataclasses.replace(tm, multinomial_tolerance=TOLERANCE), golden


def models():
    return [_model(T.TENSOR_FLOAT32, [[0.5, 0.25, 0.25], [0.1, 0.2, 0.7]]),
            _model(T.TENSOR_FLOAT16, [[0.2, 0.2, 0.6], [0.75, 0.125, 0.125]])]
