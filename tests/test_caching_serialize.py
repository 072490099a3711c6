"""The HAL model serialization behind the cache files (runtime/hal/serialize.py):
``model_to_bytes``/``model_from_bytes`` round trips of every corpus model and of front-end
models with memory pools, what it refuses to write, and that reading any truncated, mutated
or malformed data raises ValueError naming what is wrong, never anything else."""
from __future__ import annotations

import dataclasses
import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from harness.runner import build_model
from runtime.hal import serialize
from runtime.hal.memory import SharedMemory
from runtime.hal.serialize import model_from_bytes, model_to_bytes
from runtime.hal.types import ExtensionNameAndPrefix, Model as HalModel, Operand, Operation
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import load_spec
from runtime.types import OperandLifeTime, OperandType
from tests.caching_support import CORPUS, corpus_model


def _assert_same_model(a: HalModel, b: HalModel) -> None:
    assert dataclasses.replace(a, pools=[]) == dataclasses.replace(b, pools=[])
    assert [bytes(p.buffer) for p in a.pools] == [bytes(p.buffer) for p in b.pools]
    assert all(isinstance(p, SharedMemory) for p in b.pools)


VERSIONS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


@pytest.mark.parametrize("version", VERSIONS)
def test_serialize_round_trips_every_corpus_model(version):
    count = 0
    for path in sorted((CORPUS / version).glob("*.json.gz")):
        for tm in load_spec(path):
            model = to_hal_model(tm)
            data = model_to_bytes(model)
            back = model_from_bytes(data)
            _assert_same_model(model, back)
            assert model_to_bytes(back) == data, tm.name
            for sg_a, sg_b in zip([model.main, *model.referenced], [back.main, *back.referenced]):
                for oa, ob in zip(sg_a.operands, sg_b.operands):
                    assert type(ob.type) is OperandType and type(ob.lifetime) is OperandLifeTime
            count += 1
    if version == "V1_0":
        assert count == 333


def test_serialize_round_trips_front_end_models_with_pools():
    model = build_model(corpus_model("fully_connected_float_2")).to_hal()
    assert model.pools
    _assert_same_model(model, model_from_bytes(model_to_bytes(model)))


def _small_model() -> HalModel:
    return to_hal_model(corpus_model("fully_connected_float_2"))


def test_serialize_carries_extensions_and_invalid_structure():
    model = _small_model()
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example.fibonacci", 1),
                                      ExtensionNameAndPrefix("ünïcode.ext", 0xFFFF)]
    model.main.operands.append(Operand((1 << 16) | 0, [], 0))
    model.main.operands.append(Operand((1 << 16) | 1, [4], 0, extra_params=b"\x00\xffext"))
    model.main.operations.append(Operation((1 << 16) | 0, [-1, 2**40], [99]))
    model.main.operands[0].scale = float("nan")
    model.main.operands[1].location.offset = -8
    model.relax_computation_float32_to_float16 = True
    back = model_from_bytes(model_to_bytes(model))
    assert back.extension_name_to_prefix == model.extension_name_to_prefix
    assert back.main.operands[-2].type == 0x10000 and back.main.operations[-1].type == 0x10000
    assert back.main.operands[-1].extra_params == b"\x00\xffext"
    assert back.main.operations[-1].inputs == [-1, 2**40]
    assert np.isnan(back.main.operands[0].scale)
    assert back.main.operands[1].location.offset == -8
    assert back.relax_computation_float32_to_float16 is True
    assert model_to_bytes(back) == model_to_bytes(model)


@pytest.mark.parametrize("mutate", [
    lambda m: setattr(m.main.operands[0], "type", 16),
    lambda m: setattr(m.main.operands[0], "type", -1),
    lambda m: setattr(m.main.operands[0], "lifetime", 9),
    lambda m: setattr(m.main.operations[0], "type", 1000),
    lambda m: setattr(m.main.operands[0], "dimensions", [1.5]),
    lambda m: setattr(m.main.operands[0], "zero_point", True),
    lambda m: setattr(m.main.operands[0], "scale", "1"),
    lambda m: setattr(m.main.operands[0], "dimensions", [2**64]),
    lambda m: setattr(m, "pools", [object()]),
    lambda m: setattr(m.main.operands[0], "extra_params", object()),
    lambda m: setattr(m.main, "operands", None),
    lambda m: setattr(m.main.operands[0], "location", None),
    lambda m: setattr(m, "operand_values", None),
    lambda m: setattr(m, "extension_name_to_prefix", [ExtensionNameAndPrefix("x", 70000)]),
])
def test_model_to_bytes_refuses_what_it_cannot_carry(mutate):
    model = _small_model()
    mutate(model)
    with pytest.raises(ValueError):
        model_to_bytes(model)


def _only_value_error(data) -> HalModel | None:
    """model_from_bytes(data): a Model, or None after a ValueError; anything else fails."""
    try:
        model = model_from_bytes(data)
    except ValueError as e:
        assert str(e)
        return None
    assert isinstance(model, HalModel)
    return model


def test_model_from_bytes_rejects_every_truncation():
    data = model_to_bytes(_small_model())
    for n in range(len(data)):
        with pytest.raises(ValueError):
            model_from_bytes(data[:n])
    with pytest.raises(ValueError, match="trailing"):
        model_from_bytes(data + b"\0")


def test_model_from_bytes_every_bit_flip_is_a_model_or_value_error():
    data = model_to_bytes(to_hal_model(corpus_model("add")))
    decoded = 0
    for i in range(len(data)):
        for bit in range(8):
            bad = bytearray(data)
            bad[i] ^= 1 << bit
            decoded += _only_value_error(bytes(bad)) is not None
    assert 0 < decoded < len(data) * 8


def _with_structure(doc, values=b"", pools=()) -> bytes:
    s = json.dumps(doc).encode()
    head = struct.pack("<8sIIQQI", serialize.MAGIC, serialize.FORMAT_VERSION, 0, len(s), len(values), len(pools))
    return head + b"".join(struct.pack("<Q", len(p)) for p in pools) + s + values + b"".join(pools)


def _structure_of(data: bytes) -> str:
    _, _, _, n_struct, _, n_pools = struct.unpack_from("<8sIIQQI", data)
    start = 36 + 8 * n_pools
    return data[start:start + n_struct].decode()


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["main"]["operands"][0].__setitem__("type", 16), "not a valid OperandType"),
    (lambda d: d["main"]["operands"][0].__setitem__("type", 2**32), "outside"),
    (lambda d: d["main"]["operands"][0].__setitem__("lifetime", 8), "OperandLifeTime"),
    (lambda d: d["main"]["operations"][0].__setitem__("type", 106), "OperationType"),
    (lambda d: d["main"]["operands"][0].__setitem__("dims", "1,2"), "expected a list"),
    (lambda d: d["main"]["operands"][0].__setitem__("dims", [1.0]), "expected an integer"),
    (lambda d: d["main"]["operands"][0].__setitem__("dims", [[1]]), "expected an integer"),
    (lambda d: d["main"]["operands"][0].__setitem__("zero_point", False), "expected an integer"),
    (lambda d: d["main"]["operands"][0].__setitem__("scale", "0.5"), "expected a number"),
    (lambda d: d["main"]["operands"][0].__setitem__("location", [0, 0, 0]), "4 integers"),
    (lambda d: d["main"]["operands"][0].__setitem__("extra_params", {"channel_quant": {"scales": [1.0]}}),
     "wrong keys"),
    (lambda d: d["main"]["operands"][0].__setitem__("extra_params", {"extension": 5}), "hex string"),
    (lambda d: d["main"]["operands"][0].__setitem__("extra_params", {"extension": "zz"}), "hex string"),
    (lambda d: d["main"]["operands"][0].__setitem__("extra_params", {"other": 1}), "expected null"),
    (lambda d: d["main"]["operands"][0].__setitem__("extra_params", [1]), "expected null"),
    (lambda d: d["main"]["operands"][0].pop("consumers"), "wrong keys"),
    (lambda d: d["main"]["operands"][0].__setitem__("extra", 1), "wrong keys"),
    (lambda d: d.__setitem__("relax", 1), "bool"),
    (lambda d: d.__setitem__("referenced", {}), "expected a list"),
    (lambda d: d.__setitem__("extensions", [{"name": 1, "prefix": 1}]), "name"),
    (lambda d: d.__setitem__("extensions", [{"name": "a", "prefix": 65536}]), "outside"),
    (lambda d: d.__setitem__("main", []), "expected an object"),
])
def test_model_from_bytes_names_what_is_wrong(edit, message):
    data = model_to_bytes(_small_model())
    doc = json.loads(_structure_of(data))
    edit(doc)
    model = _small_model()
    with pytest.raises(ValueError, match=message):
        model_from_bytes(_with_structure(doc, model.operand_values))


@pytest.mark.parametrize("data, message", [
    (b"", "shorter than"),
    (b"NOTMAGIC" + bytes(28), "bad magic"),
    (struct.pack("<8sIIQQI", serialize.MAGIC, 2, 0, 0, 0, 0), "format version"),
    (struct.pack("<8sIIQQI", serialize.MAGIC, 1, 1, 0, 0, 0), "flags"),
    (struct.pack("<8sIIQQI", serialize.MAGIC, 1, 0, 2**64 - 1, 2**64 - 1, 0), "truncated"),
    (struct.pack("<8sIIQQI", serialize.MAGIC, 1, 0, 0, 0, 2**32 - 1), "pools"),
    (struct.pack("<8sIIQQI", serialize.MAGIC, 1, 0, 0, 0, 1000), "past the end"),
    (struct.pack("<8sIIQQI", serialize.MAGIC, 1, 0, 0, 0, 1) + struct.pack("<Q", 2**63), "truncated"),
])
def test_model_from_bytes_rejects_bad_headers(data, message):
    with pytest.raises(ValueError, match=message):
        model_from_bytes(data)


@pytest.mark.parametrize("text", ["", "{", "[" * 100000 + "]" * 100000, '{"main": 1, "main": 2}',
                                  "null", "\udcff", '{"main": 1e999}', "1" * 5000],
                         ids=["empty", "unclosed", "deep nesting", "duplicate key", "null", "not utf-8",
                              "huge float", "huge int"])
def test_model_from_bytes_rejects_bad_json(text):
    raw = text.encode("utf-8", "surrogatepass")
    head = struct.pack("<8sIIQQI", serialize.MAGIC, 1, 0, len(raw), 0, 0)
    with pytest.raises(ValueError):
        model_from_bytes(head + raw)


def test_model_from_bytes_rejects_non_bytes():
    for bad in (None, 3, "NNCTSMDL", [1, 2]):
        with pytest.raises(ValueError):
            model_from_bytes(bad)
    model = _small_model()
    assert isinstance(model_from_bytes(bytearray(model_to_bytes(model))), HalModel)
    assert isinstance(model_from_bytes(memoryview(model_to_bytes(model))), HalModel)


SEED = model_to_bytes(to_hal_model(corpus_model("add")))


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(SEED) - 1), st.integers(0, 255)), min_size=1, max_size=8),
       st.integers(0, len(SEED)), st.binary(max_size=16))
def test_model_from_bytes_on_mutated_data_raises_only_value_error(edits, cut, tail):
    data = bytearray(SEED)
    for i, v in edits:
        data[i] = v
    _only_value_error(bytes(data[:cut]) + tail)
    _only_value_error(bytes(data))


@settings(max_examples=200, deadline=None, database=None)
@given(st.binary(max_size=200))
def test_model_from_bytes_on_random_bytes_after_a_good_header(blob):
    head = struct.pack("<8sIIQQI", serialize.MAGIC, 1, 0, len(blob), 0, 0)
    _only_value_error(head + blob)
    _only_value_error(blob)
