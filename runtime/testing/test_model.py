"""Loader of test models in the AOSP-derived corpus schema (``cts/corpus/README.md``):
``<version>/<spec>.json.gz`` documents of models with example inputs and expected outputs.
"""
from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from ..types import OperandLifeTime, OperandType, OperationType

#: TestHalVersion name -> feature level (None for UNKNOWN).
HAL_VERSION_FEATURE_LEVEL = {"UNKNOWN": None, "V1_0": 1, "V1_1": 2, "V1_2": 3, "V1_3": 4,
                             "AIDL_V1": 5, "AIDL_V2": 6, "AIDL_V3": 7}
#: Corpus directory -> the feature level of its operations.
VERSION_FEATURE_LEVEL = {"V1_0": 1, "V1_1": 2, "V1_2": 3, "V1_3": 4, "V1_3_cts_only": 4,
                         "AIDL_V1": 5, "AIDL_V2": 6, "AIDL_V3": 7}

_DTYPES = {"float32": "<f4", "float16": "<f2", "int32": "<i4", "uint32": "<u4", "uint8": "u1",
           "int8": "i1", "int16": "<i2", "uint16": "<u2", "bool8": "u1"}


class CorpusError(ValueError):
    """A corpus file does not follow the schema (names the file and the field)."""


@dataclass
class TestOperand:
    """A corpus operand; ``data`` is a numpy array shaped by ``dimensions`` when they are
    fully specified (flat otherwise), or None (no value / omitted input / empty output)."""

    type: OperandType
    dimensions: list[int]
    scale: float
    zero_point: int
    lifetime: OperandLifeTime
    number_of_consumers: int
    is_ignored: bool
    channel_quant: tuple[tuple[float, ...], int] | None
    data: np.ndarray | None


@dataclass
class TestOperation:
    type: OperationType
    inputs: list[int]
    outputs: list[int]


@dataclass
class TestSubgraph:
    operands: list[TestOperand]
    operations: list[TestOperation]
    input_indexes: list[int]
    output_indexes: list[int]


@dataclass
class TestModel:
    """A corpus test model: graph, example inputs (main's SUBGRAPH_INPUT data) and expected
    outputs (main's SUBGRAPH_OUTPUT data)."""

    __test__ = False  # not a pytest test class

    name: str
    spec: str
    version: str
    min_supported_version: str
    expect_failure: bool
    is_relaxed: bool
    multinomial_tolerance: float
    main: TestSubgraph
    referenced: list[TestSubgraph] = field(default_factory=list)
    source: str = ""
    #: Name of an aggregate criteria set (``runtime.testing.criteria.CRITERIA``, field
    #: ``accuracy_criteria`` of the document) the model is judged with instead of the CTS
    #: tolerances: random-graph reproducers; "" for corpus models.
    criteria: str = ""

    @property
    def test_id(self) -> str:
        """``<version>/<spec>/<name>``."""
        return f"{self.version}/{self.spec}/{self.name}"

    @property
    def feature_level(self) -> int:
        """Feature level the model needs: its min_supported_version, else its directory's."""
        fl = HAL_VERSION_FEATURE_LEVEL.get(self.min_supported_version)
        return fl if fl is not None else VERSION_FEATURE_LEVEL.get(self.version, 8)

    @property
    def outputs_fully_specified(self) -> bool:
        """Whether every main output declares its rank and every dimension (none 0: neither
        unknown nor zero-sized). Fenced executions and driver-allocated memories need it
        (they report no output shapes), so AOSP's CTS and VTS run them only then."""
        return all(self.main.operands[i].dimensions and 0 not in self.main.operands[i].dimensions
                   for i in self.main.output_indexes)

    @property
    def operation_types(self) -> list[OperationType]:
        """Distinct operation types of every subgraph, in NNAPI code order."""
        return sorted({op.type for sg in [self.main, *self.referenced] for op in sg.operations})


def _decode_data(d, where: str) -> np.ndarray | None:
    if d is None:
        return None
    try:
        arr = np.frombuffer(base64.b64decode(d["b64"]), dtype=_DTYPES[d["dtype"]])
    except (KeyError, TypeError, ValueError) as e:
        raise CorpusError(f"{where}: bad data ({e})") from None
    return arr.astype(np.bool_) if d["dtype"] == "bool8" else arr


def _operand(o: dict, where: str) -> TestOperand:
    try:
        dims = [int(x) for x in o["dimensions"]]
        data = _decode_data(o.get("data"), where)
        if data is not None and dims and 0 not in dims:
            data = data.reshape(dims)
        elif data is not None and not dims:
            data = data.reshape(())
        cq = o.get("channel_quant")
        return TestOperand(OperandType[o["type"]], dims, float(o["scale"]), int(o["zero_point"]),
                           OperandLifeTime[o["lifetime"]], int(o["number_of_consumers"]),
                           bool(o.get("is_ignored", False)),
                           (tuple(cq["scales"]), int(cq["channel_dim"])) if cq else None, data)
    except (KeyError, ValueError, TypeError) as e:
        raise CorpusError(f"{where}: {type(e).__name__}: {e}") from None


def _subgraph(s: dict, where: str) -> TestSubgraph:
    try:
        return TestSubgraph(
            [_operand(o, f"{where} operand {i}") for i, o in enumerate(s["operands"])],
            [TestOperation(OperationType[op["type"]], list(op["inputs"]), list(op["outputs"]))
             for op in s["operations"]],
            list(s["input_indexes"]), list(s["output_indexes"]))
    except KeyError as e:
        raise CorpusError(f"{where}: missing or unknown {e}") from None


def load_spec(path: str | Path) -> list[TestModel]:
    """All test models of one spec document (``*.json.gz`` or ``*.json``).

    Raises CorpusError naming the file and field when the document breaks the schema.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError, EOFError) as e:
        raise CorpusError(f"{path}: cannot read ({e})") from None
    models = []
    for m in doc.get("models", []):
        where = f"{path}: model {m.get('name', '?')}"
        try:
            models.append(TestModel(
                m["name"], m.get("spec", doc.get("spec", path.stem)),
                m.get("version", doc.get("version", "")), m.get("min_supported_version", "UNKNOWN"),
                bool(m.get("expect_failure", False)), bool(m.get("is_relaxed", False)),
                float(m.get("expected_multinomial_distribution_tolerance", 0.0)),
                _subgraph(m["main"], f"{where} main"),
                [_subgraph(s, f"{where} referenced {i}") for i, s in enumerate(m.get("referenced", []))],
                str(path), str(m.get("accuracy_criteria", ""))))
        except KeyError as e:
            raise CorpusError(f"{where}: missing field {e}") from None
    return models


def corpus_files(roots) -> list[Path]:
    """Every ``*.json.gz`` under each root (a corpus root or any folder below it), sorted."""
    files = []
    for root in roots:
        root = Path(root)
        if root.is_file():
            files.append(root)
        else:
            files.extend(sorted(root.rglob("*.json.gz")))
    return files


def iter_corpus(roots) -> Iterator[TestModel]:
    """Every test model of every spec document under ``roots``."""
    for f in corpus_files(roots):
        yield from load_spec(f)
