"""Error budgets: per operation, the error in ULP of the output type a correct
implementation stays within against the float64 truth (declared in the operation table's
``error_budget``; formulas of the shapes after WebNN's conformance tests).

(Filled in by the budgets work: the formula builders and their sources.)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Budget:
    """An error budget of one use of an operation: ``ulps``, the bound in ULP of the output
    type; ``scale``: None, or per output element (broadcastable to the output) the magnitude
    the ULP is taken at when larger than the truth (``runtime.precision.ulp.ulp_error``'s
    ``scale``: the sum of absolute terms of an accumulation); ``source``: where the formula
    comes from."""

    ulps: float
    scale: np.ndarray | None = None
    source: str = ""
