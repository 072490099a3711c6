"""The random-graph configurations, as AOSP TestRandomGraph's, and their criteria.

- ``single-<OPERATION>-<i>``: one operation, signature ``i`` of its table row (every
  signature of every generated operation), dimensions up to 1000; judged with AOSP's
  per-operation criteria set (:func:`runtime.testing.criteria.single_operation_criteria`).
- ``small-<TYPE>-rank<r>``: 5 operations whose input 0 is of ``TYPE`` and rank ``r``,
  dimensions up to 1000; SMALL_GRAPH criteria.
- ``large-<TYPE>-rank<r>``: 40 such operations, dimensions up to 10; LARGE_GRAPH criteria.

A graph is named by (configuration, seed); a driver below the newest feature level gets the
configurations capped at its level (name suffix ``-fl<N>``) so every graph it is given is one
it may support. AOSP runs 50 seeds per configuration.
"""
from __future__ import annotations

import fnmatch

from runtime import ops
from runtime.testing.criteria import LARGE_GRAPH, SMALL_GRAPH, AccuracyCriteria, single_operation_criteria
from runtime.types import OperandType as T

from .graphs import Config, generatable

#: Primary data types of the multi-operation configurations (AOSP: float32, float16,
#: int32, bool8; nncts adds the 8-bit asymmetric quantized types).
GRAPH_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
               T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_BOOL8)
GRAPH_RANKS = (1, 2, 3, 4)
#: (prefix, operations, largest dimension): AOSP's SINGLE/SMALL/LARGE and WIDE/NARROW.
SMALL, LARGE = ("small", 5, 1000), ("large", 40, 10)
AOSP_SEEDS = 50
#: Newest feature level of the operation table.
MAX_FEATURE_LEVEL = max(s.feature_level for d in ops.REGISTRY.values() for s in d.signatures)


def all_configs(feature_level: int = MAX_FEATURE_LEVEL) -> dict[str, Config]:
    """Every configuration for a driver of ``feature_level``, by name."""
    suffix = "" if feature_level >= MAX_FEATURE_LEVEL else f"-fl{feature_level}"
    out: dict[str, Config] = {}
    for op_type in sorted(ops.REGISTRY):
        opdef = ops.REGISTRY[op_type]
        if not generatable(opdef):
            continue
        for i, sig in enumerate(opdef.signatures):
            if sig.feature_level <= feature_level:
                name = f"single-{op_type.name}-{i}"
                out[name] = Config(name, 1, 1000, only=(op_type,), signature=i, feature_level=feature_level)
    for prefix, n_ops, max_dim in (SMALL, LARGE):
        for t in GRAPH_TYPES:
            for r in GRAPH_RANKS:
                name = f"{prefix}-{t.name}-rank{r}{suffix}"
                out[name] = Config(name, n_ops, max_dim, (t,), (r,), feature_level=feature_level)
    return out


def select(configs: dict[str, Config], patterns: list[str]) -> list[Config]:
    """The configurations matching any of ``patterns`` (shell globs, e.g. ``single-CONV_2D-*``,
    ``small-*``); all when none given. Raises ValueError naming a pattern that matches none."""
    if not patterns:
        return list(configs.values())
    chosen: dict[str, Config] = {}
    for p in patterns:
        names = fnmatch.filter(configs, p)
        if not names:
            raise ValueError(f"no random-graph configuration matches {p!r} (e.g. single-CONV_2D-0, "
                             f"small-TENSOR_FLOAT32-rank4, large-*)")
        chosen.update((n, configs[n]) for n in names)
    return list(chosen.values())


def criteria_for(config: Config) -> AccuracyCriteria:
    """AOSP's criteria set of ``config``."""
    if config.operations == 1 and config.only and len(config.only) == 1:
        return single_operation_criteria(config.only[0].name)
    return SMALL_GRAPH if config.operations <= SMALL[1] else LARGE_GRAPH
