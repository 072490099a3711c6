"""Where the project's own files are: the project root (node ids are relative to it), the
vendored corpus and our built golden specs. The one place that knows the tree's shape."""
from __future__ import annotations

from pathlib import Path

#: The project root: pytest's rootdir (its conftest.py loads every suite's plugin).
ROOT = Path(__file__).resolve().parents[1]
#: The golden test models vendored from AOSP's NNAPI CTS (corpus schema, see cts/corpus/README).
CORPUS = ROOT / "cts" / "corpus"
#: Our own golden specs, built into corpus-schema files (``nncts specs build``).
SPECS = ROOT / "cts" / "specs" / "built"
#: What runs without ``--corpus``: the vendored corpus and the built specs.
DEFAULT_ROOTS = (CORPUS, SPECS)
#: ``meta["corpus"]`` labels of a run over the default roots, and of the built specs.
DEFAULT_CORPUS_LABEL = "vendored AOSP corpus"
SPECS_LABEL = "cts/specs/built"
#: The bundled MLTS models (TFLite files).
MLTS_MODELS = ROOT / "mlts" / "models"
