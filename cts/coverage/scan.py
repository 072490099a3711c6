"""Classify corpus models into coverage cells.

Every operation of every subgraph of a test model (main and the referenced subgraphs of
IF/WHILE models) is matched against the operation table like the validator does
(``runtime/hal/validate.py``: one :class:`OperandView` per operand; constants carry their
values; ``NO_VALUE`` operands and main-subgraph inputs with no example data, which the
harness passes with no value as AOSP's does, are omitted) and covers the cells
:func:`axes.covered` names.
Each operation covers cells from its own operands only (no operation is crossed with another's
types), so a helper operation a variation added (an ``_all_inputs_as_internal`` ADD) covers
the ADD cells its operands fall in: it does run ADD with them, and a report blames a failure
there on it (:mod:`reports.blame`).
A model whose version directory is ``SPECS`` (our own specs, ``cts/specs/built``) counts as
"specs", any other as "corpus".
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from runtime.ops.base import OperandView
from runtime.testing.test_model import TestModel, TestSubgraph, corpus_files, load_spec
from runtime.types import OperandLifeTime as L, OperationType

from cts.specs import VERSION as SPECS_VERSION

from . import axes

SOURCES = ("corpus", "specs")
_CONSTANT = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)


class CoverageInputError(ValueError):
    """A --corpus root is missing, holds no corpus document, or one is malformed."""


@dataclass(frozen=True)
class Use:
    """One use of a cell: operation ``operation`` of subgraph ``subgraph`` (0 = main, i =
    ``referenced[i-1]``) of test model ``model``, from ``source`` ("corpus" or "specs")."""

    source: str
    model: TestModel
    subgraph: int
    operation: int


@dataclass
class Hits:
    """Per operation and cell key: how many operation uses of each source cover it, and the
    first covering test id per source."""

    count: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    example: dict = field(default_factory=lambda: defaultdict(dict))
    models: dict = field(default_factory=lambda: defaultdict(int))
    #: (operation, cell key) -> every use (:class:`Use`), for the effect analysis.
    uses: dict = field(default_factory=lambda: defaultdict(list))

    def add(self, op: OperationType, key: str, source: str, test_id: str, use=None) -> None:
        self.count[(op, key)][source] += 1
        self.example[(op, key)].setdefault(source, test_id)
        if use is not None:
            self.uses[(op, key)].append(use)


def views(sg: TestSubgraph, idxs: list[int], main: bool = False) -> list[OperandView]:
    """The :class:`OperandView` of each operand ``idxs`` of ``sg`` as the validator sees it
    (constants with their values; NO_VALUE operands, and main inputs with no example data
    when ``main``, omitted)."""
    out = []
    for i in idxs:
        o = sg.operands[i]
        cq = None
        if o.channel_quant is not None:
            cq = (np.asarray(o.channel_quant[0], np.float32), o.channel_quant[1])
        out.append(OperandView(o.type, tuple(o.dimensions), o.scale, o.zero_point,
                               o.data if o.lifetime in _CONSTANT else None,
                               o.lifetime == L.NO_VALUE
                               or (main and o.lifetime == L.SUBGRAPH_INPUT and o.data is None),
                               cq))
    return out


def scan_model(tm: TestModel, hits: Hits) -> None:
    """Add the cells every operation of ``tm`` (all subgraphs) covers to ``hits``."""
    source = "specs" if tm.version == SPECS_VERSION else "corpus"  # cts/specs/built
    hits.models[source] += 1
    for sg_i, sg in enumerate((tm.main, *tm.referenced)):
        for op_i, op in enumerate(sg.operations):
            ins = views(sg, op.inputs, sg is tm.main)
            use = Use(source, tm, sg_i, op_i)
            for key in axes.covered(op.type, ins, views(sg, op.outputs)):
                hits.add(op.type, key, source, tm.test_id, use)


def scan(roots) -> Hits:
    """Classify every test model under ``roots`` (directories or files); raises
    :class:`CoverageInputError` (one line) for a missing root, a root without corpus
    documents, or a malformed document."""
    hits = Hits()
    for root in map(Path, roots):
        if not root.exists():
            raise CoverageInputError(f"--corpus: no such directory: {root}")
        files = corpus_files([root])
        if not files:
            raise CoverageInputError(f"--corpus: no corpus documents (*.json.gz) under {root}")
        for f in files:
            try:
                models = load_spec(f)
            except ValueError as e:
                raise CoverageInputError(f"--corpus: malformed corpus document: {e}") from None
            for tm in models:
                scan_model(tm, hits)
    return hits
