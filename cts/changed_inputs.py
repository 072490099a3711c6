"""Changed inputs for the CTS's repeated executions: modes that reuse an object across
executions (a burst, a reusable execution, shared or driver memories) run a model with its
example inputs, then with changed inputs, then with the example inputs again, so a driver
that keeps stale state (replays earlier results, caches a memory's old contents) fails.

The change keeps the model valid: each float or quantized input tensor's elements are
permuted (reversed; rotated by one when reversing leaves them as they were), so every value
stays one the model was given (a LOG or SQRT input stays in its domain, a quantized value in
its range); a tensor of one repeated value is offset instead (:func:`changed`); INT32,
boolean and scalar inputs (indices, shapes, axes) are left alone. The
expected outputs come from the reference executor (:mod:`runtime.executor`) on the changed
model, as random graphs compute theirs.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from runtime.errors import HalError
from runtime.executor import execute
from runtime.testing.hal_convert import read_outputs, to_hal_model, to_hal_request
from runtime.testing.test_model import TestModel
from runtime.types import OperandType as T

#: Input types whose elements are permuted.
CHANGEABLE = {T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
              T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM}


def changed(data: np.ndarray) -> np.ndarray:
    """``data`` with other values, same shape and dtype: its elements reversed, or rotated by
    one when reversing changes nothing; when no permutation does (one distinct value), an
    offset: floats times 1.5 (0 becomes 0.5; signs, hence domains, are kept), integers
    (quantized) one quantum up (down at the type's maximum)."""
    flat = data.reshape(-1)
    for candidate in (flat[::-1], np.roll(flat, 1)):
        if candidate.tobytes() != flat.tobytes():
            return np.ascontiguousarray(candidate).reshape(data.shape)
    if np.issubdtype(data.dtype, np.floating):
        return np.where(data == 0, 0.5, data * 1.5).astype(data.dtype)
    wide = data.astype(np.int64)
    return np.where(wide == np.iinfo(data.dtype).max, wide - 1, wide + 1).astype(data.dtype)


def _reference_outputs(tm: TestModel) -> list[np.ndarray] | None:
    request = to_hal_request(tm)
    try:
        shapes = execute(to_hal_model(tm), request)
    except (HalError, ArithmeticError, ValueError, IndexError):  # the reference refuses the change
        return None
    return read_outputs(tm, request, shapes)


def changed_inputs(tm: TestModel) -> TestModel | None:
    """A copy of ``tm`` with changed inputs (see the module) and the reference executor's
    outputs as its expected values; None when nothing can change: no non-empty input of a
    changeable type, a validation or RANDOM_MULTINOMIAL model, the reference
    refusing the changed model, an output of another shape, or the same expected bytes.
    Only the changed operands are copied (constants are shared with ``tm``)."""
    if tm.expect_failure or (tm.multinomial_tolerance or 0) > 0:
        return None
    operands, any_change = list(tm.main.operands), False
    for idx in tm.main.input_indexes:
        o = operands[idx]
        if o.data is not None and o.type in CHANGEABLE and o.data.size:
            operands[idx], any_change = dataclasses.replace(o, data=changed(o.data)), True
    if not any_change:
        return None
    other = dataclasses.replace(tm, main=dataclasses.replace(tm.main, operands=operands))
    outputs = _reference_outputs(other)
    if outputs is None:
        return None
    differs = False
    for idx, value in zip(tm.main.output_indexes, outputs):
        o = operands[idx]
        if o.data is None:
            continue
        if list(value.shape) != list(o.data.shape):
            return None
        value = np.ascontiguousarray(value, o.data.dtype)
        differs = differs or value.tobytes() != np.ascontiguousarray(o.data).tobytes()
        operands[idx] = dataclasses.replace(o, data=value)
    return other if differs else None
