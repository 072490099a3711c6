"""Loader of test models in the AOSP-derived corpus schema (``cts/corpus/README.md``):
``<version>/<spec>.json.gz`` documents of models with example inputs and expected outputs.
"""
from __future__ import annotations

import binascii
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from ..files import FileFormatError, FileLimitError, load_json
from ..types import OperandLifeTime, OperandType, OperationType, operand_dtype
from .criteria import CRITERIA
from .under_test import under_test

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

    __test__ = False  # not a pytest test class
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
    """A corpus operation: its NNAPI type and the indexes of its input and output operands
    in the subgraph's operand list."""

    __test__ = False  # not a pytest test class
    type: OperationType
    inputs: list[int]
    outputs: list[int]


@dataclass
class TestSubgraph:
    """A corpus subgraph (main or referenced by IF / WHILE): operands, operations in
    execution order, and the operand indexes of its inputs and outputs."""

    __test__ = False  # not a pytest test class
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
    #: What an ``expect_failure`` model must see when the model says so (field
    #: ``expected_failure`` of the document; :mod:`runtime.testing.expected_failure`):
    #: ``"execution failure"`` for a valid model whose execution fails (a fuzz finding the
    #: reference cannot execute); "" to derive it from the model (AOSP's corpus).
    expected_failure: str = ""

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

    @property
    def under_test(self):
        """The operation under test, its operand type, the helper operations the variations
        added and the core digest (:class:`runtime.testing.under_test.UnderTest`), computed
        once per model."""
        found = self.__dict__.get("_under_test")
        if found is None:
            found = self.__dict__["_under_test"] = under_test(self)
        return found


# --- the schema check: every field's JSON kind, range and size, before anything is built ---

_REQUIRED = object()
_UINT32 = (0, 2**32 - 1)   # a dimension, a channel dimension
_UINT64 = (0, 2**64 - 1)   # an operand index, a consumer count (the fuzzer writes up to 64 bits)
_INT64 = (-2**63, 2**63 - 1)   # a zero point
#: Most dimensions one operand may declare (the fuzzer writes up to 127; NNAPI states none).
MAX_RANK = 1024
#: What a field may be -> the exact Python types json gives it (``type(v) in ...``: a bool
#: is no integer nor number here).
_ACCEPT = {"object": (dict,), "list": (list,), "string": (str,), "boolean": (bool,), "integer": (int,),
           "number": (int, float), "object or null": (dict, type(None))}
_KIND_NAMES = {dict: "object", list: "list", str: "string", bool: "boolean", int: "integer", float: "number",
               type(None): "null"}


def _schema(fields: dict) -> tuple:
    """A schema object's fields, ``{key: kind or (kind, default)}`` (no default: required), as
    the rows :func:`_fields` reads."""
    rows = []
    for key, spec in fields.items():
        kind, default = spec if isinstance(spec, tuple) else (spec, _REQUIRED)
        rows.append((key, _ACCEPT[kind], kind, default))
    return tuple(rows)


_DOCUMENT = _schema({"spec": ("string", None), "version": ("string", ""), "models": ("list", [])})
_MODEL = _schema({"name": "string", "spec": ("string", None), "version": ("string", None),
                  "min_supported_version": ("string", "UNKNOWN"), "expect_failure": ("boolean", False),
                  "is_relaxed": ("boolean", False), "expected_multinomial_distribution_tolerance": ("number", 0.0),
                  "main": "object", "referenced": ("list", []), "accuracy_criteria": ("string", ""),
                  "expected_failure": ("string", "")})
_SUBGRAPH = _schema({"operands": "list", "operations": "list", "input_indexes": "list", "output_indexes": "list"})
_OPERATION = _schema({"type": "string", "inputs": "list", "outputs": "list"})
_OPERAND = _schema({"type": "string", "dimensions": "list", "scale": "number", "zero_point": "integer",
                    "lifetime": "string", "number_of_consumers": "integer", "is_ignored": ("boolean", False),
                    "channel_quant": ("object or null", None), "data": ("object or null", None)})
_CHANNEL_QUANT = _schema({"scales": "list", "channel_dim": "integer"})
_DATA = _schema({"dtype": "string", "b64": "string"})


def _short(value, quote: bool = True, most: int = 100) -> str:
    """``repr(value)`` (``str`` without ``quote``) cut to ``most`` characters, for messages:
    a hostile file's names and lists can be megabytes long."""
    text = repr(value) if quote else str(value)
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _kind(value) -> str:
    """The JSON kind of a parsed value (``an object``, ``a list``, ``a string``, ...)."""
    return _a(_KIND_NAMES.get(type(value), type(value).__name__))


def _fields(obj, schema: tuple, where: str) -> list:
    """The values of the ``schema`` fields (:func:`_schema`) of ``obj``, in schema order, each
    of its kind (the default when absent). CorpusError naming ``where`` when ``obj`` is not an
    object, or a field is missing or of another kind."""
    if type(obj) is not dict:
        raise CorpusError(f"{where}: must be an object, not {_kind(obj)}")
    values = []
    append, get = values.append, obj.get
    for key, types, kind, default in schema:
        value = get(key, default)
        if type(value) not in types and value is not default or value is _REQUIRED:
            if value is _REQUIRED:
                raise CorpusError(f"{where}: missing field {key!r}")
            raise CorpusError(f"{where}: field {key!r} must be {_a(kind)}, not {_kind(value)}")
        append(value)
    return values


def _in_range(value: int, key: str, where: str, lo: int, hi: int) -> int:
    if not lo <= value <= hi:
        raise CorpusError(f"{where}: field {key!r} is {_short(value)}, outside {lo}..{hi}")
    return value


def _ints(values: list, key: str, where: str, lo: int, hi: int) -> list[int]:
    """``values`` (field ``key``) when each is an integer from ``lo`` to ``hi``; CorpusError
    naming the first that is not."""
    if not all(type(v) is int and lo <= v <= hi for v in values):
        k, bad = next((k, v) for k, v in enumerate(values) if not (type(v) is int and lo <= v <= hi))
        what = f"{_short(bad)}, outside {lo}..{hi}" if type(bad) is int else f"{_kind(bad)}, not an integer"
        raise CorpusError(f"{where}: field {key!r}: element {k} is {what}")
    return values


def _float(value, key: str, where: str) -> float:
    """A JSON number as a float; CorpusError for an integer too large for one."""
    try:
        return float(value)
    except OverflowError:
        raise CorpusError(f"{where}: field {key!r}: {_short(value)} is too large for a float") from None


def _enum(name: str, enum, key: str, where: str):
    """The member of ``enum`` called ``name``; CorpusError naming the field otherwise."""
    try:
        return enum[name]
    except KeyError:
        raise CorpusError(f"{where}: field {key!r}: unknown {enum.__name__} {_short(name)}") from None


def _dtype_table() -> dict[str, tuple[np.dtype, frozenset]]:
    """Schema dtype name -> (numpy dtype of its bytes, the codes of the operand types it holds)."""
    table = {}
    for name, code in _DTYPES.items():
        dtype = np.dtype(code)
        holds = np.dtype(np.bool_) if name == "bool8" else dtype
        table[name] = (dtype, frozenset(int(t) for t in OperandType if operand_dtype(t) == holds))
    return table


_DTYPE_TABLE = _dtype_table()


def _element_count(dims: list[int], cap: int) -> int:
    """prod(dims), or ``cap + 1`` as soon as the product passes ``cap`` (no product of a
    thousand 32-bit dimensions is ever computed)."""
    n = 1
    for d in dims:
        n *= d
        if n > cap:
            return cap + 1
    return n


def _decode_data(d: dict | None, t: OperandType, dims: list[int], where: str) -> np.ndarray | None:
    """The value of operand ``where`` from its schema object ``d`` (None for null), checked
    before it is decoded: its dtype must hold the operand type ``t``, and when the dimensions
    say how many elements there are (fully specified, or ``[]``: one) its size must be that
    many elements. Shaped by ``dims`` when fully specified, flat when a dimension is 0.
    CorpusError otherwise."""
    if d is None:
        return None
    where = f"{where} data"
    name, b64 = _fields(d, _DATA, where)
    if name not in _DTYPE_TABLE:
        raise CorpusError(f"{where}: field 'dtype': unknown dtype {_short(name)} (one of {', '.join(_DTYPES)})")
    dtype, holds = _DTYPE_TABLE[name]
    if int(t) not in holds:
        raise CorpusError(f"{where}: field 'dtype': {name!r} does not hold operand type {t.name}")
    if len(b64) % 4:
        raise CorpusError(f"{where}: field 'b64': {len(b64):,} characters, not a multiple of 4 (padded base64)")
    size = len(b64) // 4 * 3 - b64[-2:].count("=")
    count = _element_count(dims, _UINT64[1]) if 0 not in dims else None
    if count is not None and size != count * dtype.itemsize:
        need = f"{count * dtype.itemsize:,}" if count <= _UINT64[1] else "more than 2**64 elements"
        raise CorpusError(f"{where}: {size:,} bytes of {name}, but dimensions {_short(dims)} of {t.name} "
                          f"need {need}")
    if size % dtype.itemsize:
        raise CorpusError(f"{where}: {size:,} bytes, not a whole number of {name} elements")
    try:
        arr = np.frombuffer(binascii.a2b_base64(b64, strict_mode=True), dtype=dtype)
    except (binascii.Error, ValueError) as e:  # ValueError: a character that is not ASCII
        raise CorpusError(f"{where}: field 'b64': not base64 ({e})") from None
    arr = arr.astype(np.bool_) if name == "bool8" else arr
    return arr.reshape(dims) if count is not None else arr


def _operand(o, where: str) -> TestOperand:
    type_name, dims, scale, zero_point, lifetime, consumers, ignored, cq, data = _fields(o, _OPERAND, where)
    t = _enum(type_name, OperandType, "type", where)
    dims = _ints(dims, "dimensions", where, *_UINT32)
    lifetime = _enum(lifetime, OperandLifeTime, "lifetime", where)
    if len(dims) > MAX_RANK:
        raise CorpusError(f"{where}: field 'dimensions': rank {len(dims):,}, more than {MAX_RANK} (the limit)")
    if cq is not None:
        cq_where = f"{where} channel_quant"
        scales, channel_dim = _fields(cq, _CHANNEL_QUANT, cq_where)
        cq = (tuple(_float(v, "scales", cq_where) for v in _numbers(scales, "scales", cq_where)),
              _in_range(channel_dim, "channel_dim", cq_where, *_UINT32))
    data = _decode_data(data, t, dims, where)
    if lifetime == OperandLifeTime.SUBGRAPH and (data is None or data.size != 1):
        raise CorpusError(f"{where}: a SUBGRAPH operand needs data: one uint32, the referenced subgraph's index")
    return TestOperand(t, dims, _float(scale, "scale", where), _in_range(zero_point, "zero_point", where, *_INT64),
                       lifetime, _in_range(consumers, "number_of_consumers", where, *_UINT64), ignored, cq, data)


def _numbers(values: list, key: str, where: str) -> list:
    """``values`` (field ``key``) when each is a JSON number; CorpusError naming the first
    that is not."""
    bad = next((k for k, v in enumerate(values) if type(v) not in _ACCEPT["number"]), None)
    if bad is not None:
        raise CorpusError(f"{where}: field {key!r}: element {bad} is {_kind(values[bad])}, not a number")
    return values


def _operation(op, where: str) -> TestOperation:
    type_name, inputs, outputs = _fields(op, _OPERATION, where)
    return TestOperation(_enum(type_name, OperationType, "type", where), _ints(inputs, "inputs", where, *_UINT64),
                         _ints(outputs, "outputs", where, *_UINT64))


def _subgraph(s, where: str) -> TestSubgraph:
    operands, operations, inputs, outputs = _fields(s, _SUBGRAPH, where)
    return TestSubgraph([_operand(o, f"{where} operand {i}") for i, o in enumerate(operands)],
                        [_operation(op, f"{where} operation {i}") for i, op in enumerate(operations)],
                        _ints(inputs, "input_indexes", where, *_UINT64),
                        _ints(outputs, "output_indexes", where, *_UINT64))


def _model(m, index: int, spec: str, version: str, path: Path) -> TestModel:
    if type(m) is dict and type(m.get("name")) is str:
        where = f"{path}: model {_short(m['name'], quote=False)}"
    else:
        where = f"{path}: models[{index}]"
    (name, m_spec, m_version, min_version, expect_failure, relaxed, tolerance, main, referenced,
     criteria, failure_kind) = _fields(m, _MODEL, where)
    if criteria and criteria not in CRITERIA:
        raise CorpusError(f"{where}: field 'accuracy_criteria': unknown criteria {_short(criteria)} "
                          f"(one of {', '.join(CRITERIA)})")
    return TestModel(name, spec if m_spec is None else m_spec, version if m_version is None else m_version,
                     min_version, expect_failure, relaxed,
                     _float(tolerance, "expected_multinomial_distribution_tolerance", where),
                     _subgraph(main, f"{where} main"),
                     [_subgraph(s, f"{where} referenced {i}") for i, s in enumerate(referenced)],
                     str(path), criteria, _failure_kind(failure_kind, where))


def _failure_kind(kind: str, where: str) -> str:
    """The model's ``expected_failure`` field, checked: "" or one of
    :data:`EXPECTED_FAILURE_KINDS`; CorpusError otherwise."""
    if kind and kind not in EXPECTED_FAILURE_KINDS:
        raise CorpusError(f"{where}: field 'expected_failure': unknown kind {_short(kind)} "
                          f"(one of {', '.join(EXPECTED_FAILURE_KINDS)})")
    return kind


#: Values of a model's ``expected_failure`` field (:mod:`runtime.testing.expected_failure`).
EXPECTED_FAILURE_KINDS = ("execution failure",)


def load_spec(path: str | Path) -> list[TestModel]:
    """All test models of one spec document (``*.json.gz`` or ``*.json``).

    The document is read under :mod:`runtime.files`' bounds (64 MiB once inflated, 64
    levels of nesting, a million values) and every field is checked before it is used: its
    JSON kind, its range (dimensions are uint32, indexes and counts uint64, zero points
    int64) and a value's dtype and size against the operand's type and dimensions. Raises
    CorpusError (one line naming the file, the model and the field) for anything else: an
    unreadable or corrupt file, a bound broken, a field missing, of the wrong kind or out of
    range.
    """
    path = Path(path)
    try:
        doc = load_json(path)
    except OSError as e:
        raise CorpusError(f"{path}: cannot read ({e.strerror or e})") from None
    except FileLimitError as e:
        raise CorpusError(str(e)) from None
    except FileFormatError as e:
        raise CorpusError(f"{path}: cannot read ({e.reason})") from None
    spec, version, models = _fields(doc, _DOCUMENT, f"{path}: the document")
    spec = path.stem if spec is None else spec
    return [_model(m, i, spec, version, path) for i, m in enumerate(models)]


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
