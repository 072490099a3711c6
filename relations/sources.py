"""The models relations run over: corpus models (the ``--corpus`` roots, by default the
vendored AOSP corpus and the built specs) and random graphs (:func:`harness.graphs.generate`).

``quick`` (the default, what CI runs): every :data:`QUICK_FILE_STRIDE`-th corpus file, its
first and last model, and one seed of :data:`QUICK_CONFIGS`; ``full`` (``nncts relations``):
every corpus model and ``--relations-seeds`` seeds of every multi-operation configuration
(``small-*``, ``large-*``). Models that must fail (``expect_failure``) are left out: they
have no outputs to relate.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.graph_configs import MAX_FEATURE_LEVEL, all_configs, criteria_for, select
from harness.graphs import generate
from runtime.testing.test_model import TestModel, corpus_files, load_spec

#: Budgets of a run.
BUDGETS = ("quick", "full")
#: Sources.
SOURCES = ("corpus", "graphs", "all")
#: Corpus files the quick budget samples: every this-many-th file.
QUICK_FILE_STRIDE = 7
#: Random-graph configurations of the quick budget (one seed each).
QUICK_CONFIGS = ("small-TENSOR_FLOAT32-rank4", "small-TENSOR_FLOAT32-rank2", "small-TENSOR_QUANT8_ASYMM-rank2")
#: Configurations of the full budget.
FULL_CONFIGS = ("small-*", "large-*")


@dataclass(frozen=True)
class Source:
    """One source model: ``id`` (a corpus test id ``<version>/<spec>/<name>`` or
    ``RANDOM_GRAPH/<config>/<seed>``) and how to get it (``load()``)."""

    id: str
    corpus_model: TestModel | None = None
    config: object = None
    seed: int = 0

    def load(self) -> TestModel:
        """The model (a random graph is drawn here, not at collection). Raises
        :class:`harness.graphs.GenerationError` when a graph cannot be drawn."""
        if self.corpus_model is not None:
            return self.corpus_model
        return generate(self.config, self.seed, criteria_for(self.config).name)


def corpus_sources(roots, budget: str) -> list[Source]:
    """The corpus models of ``roots`` the ``budget`` takes. Raises CorpusError naming a
    malformed file."""
    files = corpus_files(roots)
    out = []
    for path in files if budget == "full" else files[::QUICK_FILE_STRIDE]:
        models = [m for m in load_spec(path) if not m.expect_failure]
        if budget != "full":
            models = models[:1] + models[-1:] if len(models) > 1 else models
        out += [Source(m.test_id, m) for m in models]
    return out


def graph_sources(feature_level: int, budget: str, seeds: int, first_seed: int = 0) -> list[Source]:
    """Random graphs of the configurations of ``budget`` at the driver's feature level:
    ``seeds`` seeds from ``first_seed`` (the quick budget: one)."""
    patterns = list(FULL_CONFIGS if budget == "full" else QUICK_CONFIGS)
    suffix = "" if feature_level >= MAX_FEATURE_LEVEL else f"-fl{feature_level}"
    chosen = select(all_configs(feature_level), [p if "*" in p else p + suffix for p in patterns])
    n = seeds if budget == "full" else 1
    return [Source(f"RANDOM_GRAPH/{c.name}/{s}", config=c, seed=s)
            for c in chosen for s in range(first_seed, first_seed + n)]
