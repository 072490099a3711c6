"""Changed inputs for the CTS's repeated executions: modes that reuse an object across
executions (a burst, a reusable execution, shared or driver memories) run a model with its
example inputs, then with changed inputs, then with the example inputs again, so a driver
that keeps stale state (replays earlier results, caches a memory's old contents) fails.

The change keeps the model valid: each float or quantized input tensor's elements are
permuted, so every value stays one the model was given (a LOG or SQRT input stays in its
domain, a quantized value in its range), or offset when no permutation changes the results
(:data:`CHANGES`); INT32, boolean and scalar inputs (indices, shapes, axes) are left alone. The
expected outputs come from the reference executor (:mod:`runtime.executor`) on the changed
model, as random graphs compute theirs.
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from runtime.errors import HalError
from runtime.executor import execute
from runtime.testing.criteria import judge
from runtime.testing.hal_convert import read_outputs, to_hal_model, to_hal_request
from runtime.testing.test_model import TestModel
from runtime.types import OperandType as T

#: Input types whose elements are permuted.
CHANGEABLE = {T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
              T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM}


#: Quanta a quantized input is offset by.
QUANTA = 8


def _offset(data: np.ndarray) -> np.ndarray:
    if np.issubdtype(data.dtype, np.floating):
        return np.where(data == 0, 0.5, data * 1.5).astype(data.dtype)
    wide, top = data.astype(np.int64), np.iinfo(data.dtype).max
    return np.where(wide > top - QUANTA, wide - QUANTA, wide + QUANTA).astype(data.dtype)


#: The changes tried in turn, each on every changeable input: elements reversed, rotated by
#: one, then offset (floats times 1.5 with 0 becoming 0.5, so signs and hence domains are
#: kept; integers, i.e. quantized values, :data:`QUANTA` quanta up, down near the type's
#: maximum: one quantum is within the quantized tolerance).
CHANGES = (("reversed", lambda d: d.reshape(-1)[::-1].reshape(d.shape)),
           ("rotated", lambda d: np.roll(d.reshape(-1), 1).reshape(d.shape)),
           ("offset", _offset))


def _reference_outputs(tm: TestModel) -> list[np.ndarray] | None:
    request = to_hal_request(tm)
    try:
        shapes = execute(to_hal_model(tm), request)
    except (HalError, ArithmeticError, ValueError, IndexError):  # the reference refuses the change
        return None
    return read_outputs(tm, request, shapes)


def changed_inputs(tm: TestModel) -> TestModel | None:
    """A copy of ``tm`` with changed inputs and the reference executor's outputs as its
    expected values: the first of :data:`CHANGES`, made to every changeable input, then to
    the first one alone (EQUAL of two inputs changed alike stays as it was), under which
    ``tm``'s expected outputs fail (a reversal can leave a sum, a window's maximum or a symmetric softmax as it
    was). None when nothing changes them: no non-empty input of a :data:`CHANGEABLE` type,
    a validation or RANDOM_MULTINOMIAL model, the reference refusing every change or giving
    outputs of other shapes (data-dependent shapes). Only the changed operands are copied
    (constants are shared with ``tm``)."""
    if tm.expect_failure or (tm.multinomial_tolerance or 0) > 0:
        return None
    inputs = [idx for idx in tm.main.input_indexes if tm.main.operands[idx].data is not None
              and tm.main.operands[idx].type in CHANGEABLE and tm.main.operands[idx].data.size]
    for (_, change), which in itertools.product(CHANGES, (inputs, inputs[:1])) if inputs else ():
        operands = list(tm.main.operands)
        for idx in which:
            operands[idx] = dataclasses.replace(operands[idx], data=np.array(change(operands[idx].data)))
        other = _with_reference_outputs(tm, operands)
        if other is not None:
            return other
    return None


def _with_reference_outputs(tm: TestModel, operands: list) -> TestModel | None:
    """``tm`` over ``operands`` (changed inputs) with the reference's outputs; None when the
    reference refuses it, an output changes shape, or ``tm``'s expected outputs would still
    pass (:func:`runtime.testing.criteria.judge`: a change within the tolerances cannot
    show stale results)."""
    other = dataclasses.replace(tm, main=dataclasses.replace(tm.main, operands=operands))
    outputs = _reference_outputs(other)
    if outputs is None:
        return None
    for idx, value in zip(tm.main.output_indexes, outputs):
        o = operands[idx]
        if o.data is None:
            continue
        if list(value.shape) != list(o.data.shape):
            return None
        operands[idx] = dataclasses.replace(o, data=np.array(value, o.data.dtype))
    old = [tm.main.operands[i].data for i in tm.main.output_indexes]
    stale = judge(other, [b"" if d is None else d.tobytes() for d in old],
                  [tm.main.operands[i].dimensions if d is None else list(d.shape)
                   for d, i in zip(old, tm.main.output_indexes)])
    return other if stale else None
