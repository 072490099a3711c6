"""Failing random graphs written as replayable test models (corpus schema,
``cts/corpus/README.md``): ``pytest cts/ --corpus DIR --driver NAME`` runs them like any
corpus model, judged with the aggregate criteria the document names
(``accuracy_criteria``)."""
from __future__ import annotations

from pathlib import Path

from runtime.testing.corpus_writer import model_json, write_document
from runtime.testing.test_model import TestModel

VERSION = "RANDOM_GRAPH"


def write_reproducer(tm: TestModel, out_dir: str | Path, suffix: str = "") -> Path:
    """Write ``tm`` (a generated graph, ``tm.spec`` its configuration, ``tm.name`` its seed)
    as ``out_dir/RANDOM_GRAPH/<config>-<seed><suffix>.json.gz`` (one spec document holding
    one model); returns the path. Its test id in the CTS is
    ``RANDOM_GRAPH/<config>-<seed><suffix>/<seed>``."""
    spec = f"{tm.spec}-{tm.name}{suffix}"
    path = Path(out_dir) / VERSION / f"{spec}.json.gz"
    doc = model_json(tm, {"spec": spec, "version": VERSION})
    write_document(path, spec, VERSION, [doc], source=f"random_graph {tm.spec} seed {tm.name}")
    return path
