"""Float64 truth: a model evaluated by the reference kernels at float64 precision.

The same operation table runs (no second kernel set): inside
:func:`runtime.ops.common.float64_truth` every float value is held as float64, float
constants and inputs are widened exactly, float kernels compute at float64 and never round to
float32 / float16, and quantized operations compute in real arithmetic and round once, when
they store their quantized output. Relaxed models (``relaxComputationFloat32toFloat16``) are
evaluated the same way: the truth does not depend on the precision a driver may use.
"""
from __future__ import annotations

import numpy as np

from ..executor import run_subgraph
from ..hal.types import Model
from ..ops.common import float64_truth

__all__ = ["float64_outputs", "float64_truth"]


def float64_outputs(model: Model, inputs: list[np.ndarray | None], *, table=None, dtypes=None,
                    loop_timeout_ns: int | None = None, intercept=None) -> list[np.ndarray]:
    """The float64 truth of ``model`` (a validated HAL model) on ``inputs``: one array (or
    None for an omitted input) per input of the main subgraph, in the operand's own dtype
    (float inputs are widened here). Returns one array per main output: float64 for
    FLOAT32 / FLOAT16 tensors, the operand's dtype otherwise (quantized, integer, bool).

    ``table`` / ``dtypes`` / ``loop_timeout_ns`` / ``intercept`` as for
    :func:`runtime.executor.run_subgraph`. Raises HalError as an execution of the model
    would (GENERAL_FAILURE naming the operation, MISSED_DEADLINE_TRANSIENT for a loop past
    its timeout)."""
    sg = model.main
    values = []
    for idx, value in zip(sg.input_indexes, inputs):
        if value is None:
            values.append((None, list(sg.operands[idx].dimensions)))
            continue
        arr = np.asarray(value)
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
        values.append((arr, list(arr.shape)))
    with float64_truth():
        return run_subgraph(model, sg, values, False, table, dtypes, loop_timeout_ns=loop_timeout_ns,
                            intercept=intercept)
