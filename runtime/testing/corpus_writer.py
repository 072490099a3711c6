"""Write test models in the corpus schema (cts/corpus/README.md): the inverse of
:func:`runtime.testing.test_model.load_spec`, used by our own specs (cts/specs) and
replayable reproducers."""
from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import numpy as np

from ..types import OperandLifeTime, OperandType, operand_dtype
from .test_model import TestModel, TestSubgraph

#: numpy dtype string -> the schema's ``data.dtype`` name.
DTYPE_NAMES = {"<f4": "float32", "<f2": "float16", "<i4": "int32", "<u4": "uint32", "|u1": "uint8",
               "|i1": "int8", "<i2": "int16", "<u2": "uint16", "|b1": "bool8"}


def _data_json(o) -> dict | None:
    if o.data is None:
        return None
    dtype = np.dtype("<u4") if o.type == OperandType.SUBGRAPH else operand_dtype(o.type)
    arr = np.ascontiguousarray(o.data, dtype)
    return {"dtype": DTYPE_NAMES[dtype.str], "b64": base64.b64encode(arr.tobytes()).decode("ascii")}


def subgraph_json(sg: TestSubgraph) -> dict:
    """The schema object of one subgraph (operands with their data, operations, inputs and
    outputs)."""
    operands = []
    for o in sg.operands:
        cq = None
        if o.channel_quant is not None:
            cq = {"scales": [float(np.float32(s)) for s in o.channel_quant[0]],
                  "channel_dim": int(o.channel_quant[1])}
        operands.append({"type": OperandType(o.type).name, "dimensions": [int(d) for d in o.dimensions],
                         "scale": float(np.float32(o.scale)), "zero_point": int(o.zero_point),
                         "lifetime": OperandLifeTime(o.lifetime).name,
                         "number_of_consumers": int(o.number_of_consumers),
                         "is_ignored": bool(o.is_ignored), "channel_quant": cq, "data": _data_json(o)})
    return {"operands": operands,
            "operations": [{"type": op.type.name, "inputs": [int(i) for i in op.inputs],
                            "outputs": [int(i) for i in op.outputs]} for op in sg.operations],
            "input_indexes": [int(i) for i in sg.input_indexes],
            "output_indexes": [int(i) for i in sg.output_indexes]}


def model_json(tm: TestModel, extra: dict | None = None) -> dict:
    """The schema object of ``tm`` (main and referenced subgraphs); ``extra`` keys are added
    at model level (readers ignore fields they do not know)."""
    doc = {"name": tm.name, "spec": tm.spec, "version": tm.version,
           "min_supported_version": tm.min_supported_version, "expect_failure": bool(tm.expect_failure),
           "is_relaxed": bool(tm.is_relaxed),
           "expected_multinomial_distribution_tolerance": float(tm.multinomial_tolerance),
           "main": subgraph_json(tm.main), "referenced": [subgraph_json(s) for s in tm.referenced]}
    if getattr(tm, "criteria", ""):
        doc["accuracy_criteria"] = tm.criteria
    if getattr(tm, "expected_failure", ""):
        doc["expected_failure"] = tm.expected_failure
    doc.update(extra or {})
    return doc


def write_document(path: Path, spec: str, version: str, models: list[dict], source: str) -> None:
    """Write one spec document (gzip JSON, compact, ASCII) holding ``models`` (schema
    objects from :func:`model_json`) at ``path``, atomically. The gzip header carries no
    time stamp, so the same models give the same bytes."""
    doc = {"format_version": 2, "spec": spec, "version": version,
           "source": {"path": source, "blob": "", "commit": ""}, "models": models}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=True, sort_keys=True).encode("ascii")
    with open(tmp, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as g:
        g.write(raw)
    tmp.replace(path)
