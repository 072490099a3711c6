"""pytest plugin of the relations suite: options ``--relation``, ``--relations-budget``,
``--relations-source``, ``--relations-seeds`` and ``--relations-dump``; one test item per
(relation, source model), id ``RELATIONS/<relation>/<source id>`` (a corpus test id or
``RANDOM_GRAPH/<config>/<seed>``). Each item records the relation as its ``mode``, the
model's operations and feature level; a model the relation does not apply to is skipped
with ``skip_kind`` ``relation_not_applicable``. Shared options (``--driver``, ``--corpus``), the
device fixture and the records come from :mod:`harness.plugin`."""
from __future__ import annotations

import pytest

from harness.driver import corpus_roots, driver_identity
from harness.records import GRAPH
from harness.suites import suite
from runtime.testing.test_model import CorpusError

from .catalog import RELATIONS
from .sources import BUDGETS, SOURCES, Source, corpus_sources, graph_sources

pytest_plugins = ["harness.plugin"]
#: The ``suite`` of this suite's records.
SUITE = suite("relations").record_name
DEFAULT_DUMP = "relations-failures"
DEFAULT_SEEDS = 2


def pytest_addoption(parser):
    g = parser.getgroup("nncts")
    g.addoption("--relation", action="append", default=[], choices=sorted(RELATIONS), metavar="NAME",
                help=f"metamorphic relations to check (repeatable; default all: {', '.join(RELATIONS)})")
    g.addoption("--relations-budget", default="quick", choices=BUDGETS, metavar="BUDGET",
                help="quick (a sample of the corpus and three random graphs: CI; the pytest default) or full "
                     "(every corpus model and --relations-seeds seeds of every multi-operation random-graph "
                     "configuration; nncts relations' default)")
    g.addoption("--relations-source", default="all", choices=SOURCES, metavar="SOURCE",
                help="corpus, graphs or all (default)")
    g.addoption("--relations-seeds", type=int, default=DEFAULT_SEEDS, metavar="N",
                help=f"random graphs per configuration under the full budget (default {DEFAULT_SEEDS})")
    g.addoption("--relations-dump", default=DEFAULT_DUMP, metavar="DIR",
                help=f"where failing models and their minimized reproducers go (default {DEFAULT_DUMP})")


def sources(config) -> list[Source]:
    """The source models of the run (options above). UsageError for a malformed corpus or
    fewer than one seed."""
    budget, which = config.getoption("relations_budget"), config.getoption("relations_source")
    if config.getoption("relations_seeds") < 1:
        raise pytest.UsageError("--relations-seeds: must be at least 1")
    out = []
    if which in ("corpus", "all"):
        try:
            out += corpus_sources(corpus_roots(config), budget)
        except CorpusError as e:
            raise pytest.UsageError(f"corpus: {e}") from None
    if which in ("graphs", "all"):
        out += graph_sources(driver_identity(config)[1], budget, config.getoption("relations_seeds"))
    return out


def pytest_generate_tests(metafunc):
    if "relation_case" not in metafunc.fixturenames:
        return
    config = metafunc.config
    chosen = [RELATIONS[n] for n in config.getoption("relation")] or list(RELATIONS.values())
    found = sources(config)
    metafunc.parametrize("relation_case", [pytest.param((r, s), id=f"RELATIONS/{r.name}/{s.id}")
                                           for r in chosen for s in found])


def pytest_nncts_record_fields(item):
    """A relation item's record: suite, mode (the relation), and for a corpus model its
    operations, operation under test and feature level (the test adds a graph's)."""
    spec = getattr(item, "callspec", None)
    case = spec.params.get("relation_case") if spec is not None else None
    if case is None:
        return None
    relation, source = case
    fields = {"suite": SUITE, "mode": relation.name}
    tm = source.corpus_model
    if tm is None:
        return {**fields, "operation_under_test": GRAPH}
    under = tm.under_test
    fields.update(operations=[t.name for t in tm.operation_types], feature_level=tm.feature_level)
    if under.operation is not None:
        fields["operation_under_test"] = under.operation.name
    if under.operand_type is not None:
        fields["operand_type"] = under.operand_type.name
    return fields
