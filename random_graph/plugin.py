"""pytest plugin of the random-graph suite: options ``--seeds``, ``--first-seed``,
``--config`` and ``--graph-dump``; one test item per (configuration, seed), id
``RANDOM_GRAPH/<config>/<seed>``; single-operation items are marked with their operation
and feature level. The configurations are those of the driver's feature level
(:func:`harness.graph_configs.all_configs`). Each item records its operations and, when it
fails, its reproducers (``("reproducers", {...})``) in the outcome records. Shared options
(``--driver``), the device fixture and the records come from :mod:`harness.plugin`."""
from __future__ import annotations

import pytest

from harness.driver import driver_identity
from harness.graph_configs import all_configs, select
from harness.records import GRAPH
from harness.suites import suite
from runtime import ops

pytest_plugins = ["harness.plugin"]
#: The ``suite`` of this suite's records.
SUITE = suite("random-graph").record_name

#: Seeds per configuration when --seeds is not given (CI); AOSP runs 50.
DEFAULT_SEEDS = 2
DEFAULT_DUMP = "random-graph-failures"


def pytest_addoption(parser):
    g = parser.getgroup("nncts")
    g.addoption("--seeds", type=int, default=DEFAULT_SEEDS, metavar="N",
                help=f"random graphs per configuration (default {DEFAULT_SEEDS}; AOSP runs 50)")
    g.addoption("--first-seed", type=int, default=0, metavar="S", help="first seed (default 0)")
    g.addoption("--config", action="append", default=[], metavar="PATTERN",
                help="random-graph configurations (shell patterns, repeatable): single-CONV_2D-*, "
                     "small-TENSOR_FLOAT32-rank4, large-*; default: all")
    g.addoption("--graph-dump", default=DEFAULT_DUMP, metavar="DIR",
                help=f"where failing graphs and their minimized reproducers go (default {DEFAULT_DUMP})")
    g.addoption("--no-minimize", action="store_true", help="write failing graphs without minimizing them")


def pytest_generate_tests(metafunc):
    if "random_graph_case" not in metafunc.fixturenames:
        return
    config = metafunc.config
    if config.getoption("seeds") < 1:
        raise pytest.UsageError("--seeds: must be at least 1")
    try:
        chosen = select(all_configs(driver_identity(config)[1]), config.getoption("config"))
    except ValueError as e:
        raise pytest.UsageError(f"--config: {e}") from None
    first = config.getoption("first_seed")
    params = []
    for c in chosen:
        marks = []
        if c.only and len(c.only) == 1:
            marks = [getattr(pytest.mark, c.only[0].name),
                     getattr(pytest.mark, f"fl{ops.REGISTRY[c.only[0]].signatures[c.signature].feature_level}")]
        for seed in range(first, first + config.getoption("seeds")):
            params.append(pytest.param((c, seed), id=f"RANDOM_GRAPH/{c.name}/{seed}", marks=marks))
    metafunc.parametrize("random_graph_case", params)


def config_operand_types(c) -> list[str]:
    """Operand type names of configuration ``c``'s graphs (the type of each operation's
    input 0, as :func:`harness.records.model_operand_types` names them): its ``types``, or
    for a single-operation configuration its signature's input 0."""
    if c.types:
        return [t.name for t in c.types]
    if c.only and len(c.only) == 1 and c.signature is not None:
        inputs = ops.REGISTRY[c.only[0]].signatures[c.signature].inputs
        return [inputs[0].type.name] if inputs else []
    return []


def config_under_test(c) -> dict:
    """``operation_under_test`` and ``operand_type`` of configuration ``c``'s graphs: a
    single-operation configuration's operation and its signature's input 0 type; a graph of
    several operations is ``"(graph)"`` (:data:`harness.records.GRAPH`: the minimized
    reproducer names the culprit, the record cannot) of its one primary type."""
    types = config_operand_types(c)
    single = c.operations == 1 and c.only and len(c.only) == 1
    fields = {"operation_under_test": c.only[0].name if single else GRAPH}
    if len(types) == 1:
        fields["operand_type"] = types[0]
    return fields


def pytest_nncts_record_fields(item):
    """A random-graph item's record: suite, mode (``single`` or ``graph``), its
    configuration's operand types and what it tests (:func:`config_under_test`); the test
    adds the operations and feature level of the graph it draws, and its reproducers when
    it fails."""
    spec = getattr(item, "callspec", None)
    case = spec.params.get("random_graph_case") if spec is not None else None
    if case is None:
        return None
    config = case[0]
    fields = {"suite": SUITE, "mode": "graph" if config.operations > 1 else "single"}
    types = config_operand_types(config)
    if types:
        fields["operand_types"] = types
    return {**fields, **config_under_test(config)}
