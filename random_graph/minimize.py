"""Shrink a failing random graph to a small graph that still fails the same way: the
delta debugging of :mod:`harness.minimize` (shared with the metamorphic relations), with
"the same way" the failure kind (:func:`random_graph.run.failure_kind`: accuracy,
dimensions, or the NNAPI result code)."""
from harness.minimize import (MAX_TRIES, intermediate_values, keep_operations, minimize, shrink_dimension,
                              simplify_values, size_of)

__all__ = ["MAX_TRIES", "intermediate_values", "keep_operations", "minimize", "shrink_dimension",
           "simplify_values", "size_of"]
