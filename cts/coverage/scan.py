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


@dataclass
class Hits:
    """Per operation and cell key: how many operation uses of each source cover it, and the
    first covering test id per source."""

    count: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    example: dict = field(default_factory=lambda: defaultdict(dict))
    models: dict = field(default_factory=lambda: defaultdict(int))

    def add(self, op: OperationType, key: str, source: str, test_id: str) -> None:
        self.count[(op, key)][source] += 1
        self.example[(op, key)].setdefault(source, test_id)


def _views(sg: TestSubgraph, idxs: list[int], main: bool = False) -> list[OperandView]:
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
    for sg in (tm.main, *tm.referenced):
        for op in sg.operations:
            ins = _views(sg, op.inputs, sg is tm.main)
            for key in axes.covered(op.type, ins, _views(sg, op.outputs)):
                hits.add(op.type, key, source, tm.test_id)


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
