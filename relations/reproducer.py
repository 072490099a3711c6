"""Models that break a relation, written as replayable corpus documents (schema
``cts/corpus/README.md``): ``nncts relations --relation NAME --corpus DIR`` checks them again."""
from __future__ import annotations

import re
from pathlib import Path

from runtime.testing.corpus_writer import model_json, write_document
from runtime.testing.test_model import TestModel

VERSION = "RELATIONS"


def write_reproducer(tm: TestModel, relation: str, out_dir: str | Path, suffix: str = "") -> Path:
    """Write ``tm`` as ``out_dir/RELATIONS/<relation>-<spec>-<name><suffix>.json.gz`` (one
    document, one model; characters outside ``[A-Za-z0-9_.-]`` become ``_``); returns the path."""
    spec = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{relation}-{tm.spec}-{tm.name}{suffix}")
    path = Path(out_dir) / VERSION / f"{spec}.json.gz"
    write_document(path, spec, VERSION, [model_json(tm, {"spec": spec, "version": VERSION})],
                   source=f"relations {relation}: {tm.test_id}")
    return path
