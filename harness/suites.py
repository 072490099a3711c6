"""The suite table: one declaration per suite that the CLI (``nncts <command>``), ``nncts
certify``, the replay commands of the reports and the root ``conftest.py`` all read.

A suite is named by its ``command`` (``random-graph``) on the command line and by its
``record_name`` (``random_graph``) in outcome records and certificate bundles;
:func:`suite` accepts either. The table holds names and paths, never the suites' code: the
harness stands below the suites and imports none of them.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.locations import CORPUS


def _no_options(_record: dict) -> list[str]:
    return []


def _cts_replay(record: dict) -> list[str]:
    return ["--mode", record.get("mode") or "sync"]


def _precision_replay(record: dict) -> list[str]:
    """A sweep exists in the mode it ran in (``--sweep full`` or ``quick``)."""
    return ["--sweep", record.get("mode") if record.get("mode") in ("full", "quick") else "full"]


def _random_graph_replay(record: dict) -> list[str]:
    """A random graph's id is ``RANDOM_GRAPH/<config>/<seed>``: that one configuration and seed."""
    _, config, seed = record["id"].split("/")
    return ["--config", config, "--first-seed", seed, "--seeds", "1"]


def _relations_replay(record: dict) -> list[str]:
    """A relation item's id is ``RELATIONS/<relation>/<source>``: that relation, on the full
    budget (every corpus model and graph: the item exists again, whatever sample it came from)."""
    return ["--relation", record["id"].split("/")[1], "--relations-budget", "full"]


@dataclass(frozen=True)
class SuiteSpec:
    """One suite.

    ``command``: the ``nncts`` subcommand; ``record_name``: the ``suite`` of its outcome
    records and its folder in a certificate bundle; ``title``: the report title;
    ``package``: its top-level package. A pytest suite has ``paths`` (below the package
    folder; ``"."`` the whole package) and ``plugins`` (pytest plugin modules); the others
    (``fuzz``, ``mlts``) run as their own programs. ``certify_options``: what ``nncts
    certify`` adds for this suite beyond the driver options, from its ``args``;
    ``quick_options``: what ``--quick`` adds; ``replay_options(record)``: the options under
    which a recorded test exists again (the CTS mode, a random graph's configuration and
    seed). ``required``: ``nncts certify``'s verdict needs the suite to pass (False: it runs
    and is reported, and a profile's ``suites`` makes it required:
    :mod:`harness.requirements`)."""

    command: str
    record_name: str
    title: str
    package: str
    paths: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    certify_options: Callable = field(default=lambda args: [])
    quick_options: tuple[str, ...] = ()
    replay_options: Callable[[dict], list[str]] = _no_options
    required: bool = True

    @property
    def runs_under_pytest(self) -> bool:
        """Whether ``nncts <command>`` runs the suite through pytest."""
        return bool(self.paths)

    def pytest_paths(self) -> list[str]:
        """Absolute paths pytest collects (the package located without importing it)."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise LookupError(f"suite {self.command}: package {self.package} is not installed")
        folder = Path(list(spec.submodule_search_locations)[0])
        return [str(folder if p == "." else folder / p) for p in self.paths]


#: The quick selection of the CTS and VTS (``nncts certify --quick``): the V1_0 corpus
#: directory filtered by a pytest ``-k`` (quantized and broadcast ADD, a float CONV_2D, a
#: quantized CONV_2D).
QUICK_CORPUS = CORPUS / "V1_0"
QUICK_K = "add_quant8 or add_broadcast_quant8 or conv_float_2 or conv_quant8_2"
_QUICK_GOLDEN = ("--corpus", str(QUICK_CORPUS), "-k", QUICK_K)
#: The quick MLTS model (``nncts certify --quick``).
QUICK_MLTS_MODEL = "mobilenet_v1_0.25_128_quant_uint8"
#: Seconds of fuzzing under ``nncts certify --quick``.
QUICK_FUZZ_SECONDS = 3

#: Every suite, in the order ``nncts certify`` runs them.
SUITES: tuple[SuiteSpec, ...] = (
    SuiteSpec("cts", "cts", "nncts CTS", "cts", ("test_generated.py",), ("cts.plugin",),
              certify_options=lambda args: ["--mode", args.modes], quick_options=_QUICK_GOLDEN,
              replay_options=_cts_replay),
    # the VTS package: generated tests on every execution path, device, validation tests
    SuiteSpec("vts", "vts", "nncts VTS", "vts", (".",), ("vts.plugin",), quick_options=_QUICK_GOLDEN),
    SuiteSpec("random-graph", "random_graph", "nncts random graphs", "random_graph", ("test_random_graph.py",),
              ("random_graph.plugin",),
              quick_options=("--seeds", "1", "--config", "single-ADD-*", "--config", "small-TENSOR_FLOAT32-rank2"),
              replay_options=_random_graph_replay),
    # unary element-wise operations over every float16 / quant8 input and a float32 sample
    SuiteSpec("precision", "precision", "nncts precision sweeps", "precision", ("test_sweeps.py",),
              ("precision.plugin",), quick_options=("--sweep", "quick"), replay_options=_precision_replay,
              required=False),
    # metamorphic relations (no golden) over the corpus and random graphs
    SuiteSpec("relations", "relations", "nncts metamorphic relations", "relations", ("test_metamorphic.py",),
              ("relations.plugin",), quick_options=("--relations-budget", "quick", "--relations-source", "graphs"),
              replay_options=_relations_replay, required=False),
    SuiteSpec("fuzz", "fuzz", "nncts fuzzing", "fuzz"),
    SuiteSpec("mlts", "mlts", "nncts MLTS", "mlts", quick_options=("--models", QUICK_MLTS_MODEL)),
)

#: The pytest suites' command names (``nncts cts``, ``vts``, ``random-graph``, ``precision``,
#: ``relations``).
PYTEST_SUITES = tuple(s.command for s in SUITES if s.runs_under_pytest)


def suite(name: str) -> SuiteSpec:
    """The suite whose command or record name is ``name``; ValueError naming the suites
    otherwise."""
    for s in SUITES:
        if name in (s.command, s.record_name):
            return s
    raise ValueError(f"unknown suite {name!r} (one of {', '.join(s.command for s in SUITES)})")


def conftest_plugins() -> list[str]:
    """The pytest plugins the root conftest loads: the harness's, then each pytest suite's."""
    return ["harness.plugin", *(p for s in SUITES for p in s.plugins)]
