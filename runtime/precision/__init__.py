"""The precision oracle: float64 truth of any model from the operation table's own kernels
(:mod:`.truth`), errors in ULP of the output type (:mod:`.ulp`) and the per-operation error
budgets they are graded by."""
