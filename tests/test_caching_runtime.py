"""Compilation caching through the front end (ANeuralNetworksCompilation_setCaching, FL3):
the runtime's cache lookup (runtime/nnapi/cache.py) with the sample driver's cache files
(runtime/drivers/sample_cache.py): the first compilation writes the cache and the second
uses it; corrupted, incomplete or foreign caches are rejected and a full prepare follows;
cache keys per token, preference and device; the app token's checks; the planted fault of a
driver that accepts a corrupted cache; a vendor extension model through the cache. When
caching cannot be used at all: tests/test_caching_fallback.py."""
from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.runner import build_model
from runtime.drivers import sample_cache
from runtime.drivers.fibonacci import (EXAMPLE_FIBONACCI, EXAMPLE_INT64, EXAMPLE_TENSOR_QUANT64_ASYMM, EXTENSION_NAME,
                                       quant64_params)
from runtime.drivers.sample import SampleDevice, SamplePreparedModel
from runtime.errors import NnapiError
from runtime.nnapi import Compilation, Execution, Model, get_devices
from runtime.nnapi.cache import cache_key, driver_token
from runtime.testing.hal_convert import to_hal_model
from runtime.types import PreferenceCode, PriorityCode, ResultCode
from tests.broken_drivers import CacheAcceptsCorruption
from tests.caching_support import (TOKEN, CountingDevice, assert_correct, cache_files, compile_cached, corpus_model,
                                   mismatches, run)


OTHER_TOKEN = bytes(range(1, 33))


def test_sample_driver_needs_one_file_of_each_kind():
    assert SampleDevice().get_number_of_cache_files_needed() == (1, 1)


@pytest.mark.parametrize("spec", ["add", "fully_connected_float_2", "conv_quant8", "avg_pool_float_1"])
def test_first_compilation_writes_cache_second_uses_it(tmp_path, spec):
    tm = corpus_model(spec)
    device = CountingDevice()
    first = compile_cached(tm, tmp_path, hal=device)
    (outcome,) = first.caching.outcomes
    assert (outcome.used_cache, outcome.fell_back, outcome.offered_files, outcome.wrote_cache) == \
        (False, False, True, True)
    assert (device.from_cache, device.full_with_files, device.full_plain) == (0, 1, 0)
    model_path, data_path = cache_files(tmp_path, outcome.key)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([model_path.name, data_path.name])
    assert model_path.read_bytes()[:8] == sample_cache.MODEL_MAGIC
    stored_token = model_path.read_bytes()[12:44]  # the runtime's derived token, not the app's
    assert stored_token == driver_token(outcome.key, first.model.to_hal()) != TOKEN
    assert len(data_path.read_bytes()) == 76
    assert_correct(first, tm)

    second = compile_cached(tm, tmp_path, hal=device)
    (outcome2,) = second.caching.outcomes
    assert outcome2.used_cache and not outcome2.fell_back and not outcome2.offered_files
    assert outcome2.key == outcome.key
    assert (device.from_cache, device.full_with_files, device.full_plain) == (1, 1, 0)
    assert isinstance(second.prepared, SamplePreparedModel)
    assert second.prepared.model is not first.prepared.model
    assert_correct(second, tm)


def test_cached_model_equals_prepared_model(tmp_path):
    tm = corpus_model("fully_connected_float_2")
    first = compile_cached(tm, tmp_path)
    second = compile_cached(tm, tmp_path)
    assert second.caching.outcomes[0].used_cache
    a, b = first.prepared.model, second.prepared.model
    assert dataclasses.replace(a, pools=[]) == dataclasses.replace(b, pools=[])
    assert [bytes(p.buffer) for p in a.pools] == [bytes(p.buffer) for p in b.pools]
    assert len(a.pools) == 1  # the large constant went through a memory pool


def _flip(offset):
    def corrupt(model_path: Path, data_path: Path):
        raw = bytearray(model_path.read_bytes())
        raw[offset] ^= 0x40
        model_path.write_bytes(bytes(raw))
    return corrupt


def _flip_data(model_path: Path, data_path: Path):
    raw = bytearray(data_path.read_bytes())
    raw[-1] ^= 1
    data_path.write_bytes(bytes(raw))


def _truncate(keep):
    def corrupt(model_path: Path, data_path: Path):
        raw = model_path.read_bytes()
        model_path.write_bytes(raw[:keep(len(raw))])
    return corrupt


def _append(model_path: Path, data_path: Path):
    model_path.write_bytes(model_path.read_bytes() + b"\0")


def _garbage(model_path: Path, data_path: Path):
    model_path.write_bytes(b"\xff" * 300)
    data_path.write_bytes(b"\xff" * 76)


def _foreign_data(model_path: Path, data_path: Path):
    other, _ = sample_cache.encode(to_hal_model(corpus_model("add")), TOKEN)
    data_path.write_bytes(data_path.read_bytes()[:44] + hashlib.sha256(other).digest())


REJECTED = {
    "flip magic": _flip(0),
    "flip version": _flip(9),
    "flip token": _flip(20),
    "flip length": _flip(45),
    "flip digest": _flip(60),
    "flip payload start": _flip(84),
    "flip payload middle": lambda m, d: _flip(len(m.read_bytes()) // 2)(m, d),
    "flip last byte": _flip(-1),
    "flip data cache": _flip_data,
    "truncate to half": _truncate(lambda n: n // 2),
    "truncate one byte": _truncate(lambda n: n - 1),
    "truncate to header": _truncate(lambda n: 84),
    "truncate to 10 bytes": _truncate(lambda n: 10),
    "trailing byte": _append,
    "garbage": _garbage,
    "data cache of another model": _foreign_data,
}


@pytest.mark.parametrize("corruption", sorted(REJECTED))
def test_corrupted_cache_is_rejected_and_full_prepare_follows(tmp_path, corruption):
    tm = corpus_model("fully_connected_float_2")
    device = CountingDevice()
    key = compile_cached(tm, tmp_path, hal=device).caching.outcomes[0].key
    model_path, data_path = cache_files(tmp_path, key)
    REJECTED[corruption](model_path, data_path)

    compilation = compile_cached(tm, tmp_path, hal=device)
    (outcome,) = compilation.caching.outcomes
    assert not outcome.used_cache and outcome.fell_back and outcome.offered_files and outcome.wrote_cache
    assert outcome.reason.startswith("driver rejected the cache")
    assert (device.from_cache, device.full_with_files) == (1, 2)
    assert_correct(compilation, tm)
    # the fallback rewrote a good cache
    again = compile_cached(tm, tmp_path, hal=device)
    assert again.caching.outcomes[0].used_cache
    assert_correct(again, tm)


@pytest.mark.parametrize("which", ["model", "data", "both", "delete data"])
def test_empty_or_missing_cache_file_is_not_offered(tmp_path, which):
    tm = corpus_model("add")
    device = CountingDevice()
    key = compile_cached(tm, tmp_path, hal=device).caching.outcomes[0].key
    model_path, data_path = cache_files(tmp_path, key)
    if which == "delete data":
        data_path.unlink()
    else:
        for p in {"model": [model_path], "data": [data_path], "both": [model_path, data_path]}[which]:
            p.write_bytes(b"")
    compilation = compile_cached(tm, tmp_path, hal=device)
    (outcome,) = compilation.caching.outcomes
    assert not outcome.used_cache and not outcome.fell_back and outcome.wrote_cache
    assert "incomplete cache" in outcome.reason
    assert device.from_cache == 0 and device.full_with_files == 2
    assert_correct(compilation, tm)
    assert compile_cached(tm, tmp_path, hal=device).caching.outcomes[0].used_cache


def test_cache_of_another_token_is_rejected(tmp_path):
    tm = corpus_model("fully_connected_float_2")
    device = CountingDevice()
    key = compile_cached(tm, tmp_path, TOKEN, hal=device).caching.outcomes[0].key
    other_key = cache_key(OTHER_TOKEN, device.get_name(), device.get_version_string(),
                          PreferenceCode.FAST_SINGLE_ANSWER, PriorityCode.MEDIUM)
    assert other_key != key
    for src, dst in zip(cache_files(tmp_path, key), cache_files(tmp_path, other_key)):
        shutil.copyfile(src, dst)
    compilation = compile_cached(tm, tmp_path, OTHER_TOKEN, hal=device)
    (outcome,) = compilation.caching.outcomes
    assert outcome.key == other_key and outcome.fell_back and not outcome.used_cache
    assert "different token" in outcome.reason
    assert_correct(compilation, tm)
    assert cache_files(tmp_path, other_key)[0].read_bytes()[12:44] == driver_token(other_key, compilation.model.to_hal())
    # the first token's cache is untouched and still used
    assert compile_cached(tm, tmp_path, TOKEN, hal=device).caching.outcomes[0].used_cache


@pytest.mark.parametrize("driver", [SampleDevice, CacheAcceptsCorruption])
def test_cache_of_another_model_under_the_same_token(tmp_path, driver):
    """A token collision (or an app that changed its model and kept its token): the other
    model's cache sits in the same files, but the runtime binds the driver token to the model,
    so a driver checking the token rejects it; one that does not runs the wrong model."""
    first, second = corpus_model("add"), corpus_model("fully_connected_float_2")
    device = driver()
    key = compile_cached(first, tmp_path, hal=device).caching.outcomes[0].key
    compilation = compile_cached(second, tmp_path, hal=device)
    (outcome,) = compilation.caching.outcomes
    assert outcome.key == key  # same files
    if driver is SampleDevice:
        assert outcome.fell_back and "different token" in outcome.reason
        assert_correct(compilation, second)
        assert compile_cached(second, tmp_path, hal=device).caching.outcomes[0].used_cache
    else:
        assert outcome.used_cache
        with pytest.raises(NnapiError):
            run(compilation, second)  # the cached ADD model takes 2 inputs, not 3


def test_driver_token_is_bound_to_the_model():
    add, fc = to_hal_model(corpus_model("add")), to_hal_model(corpus_model("fully_connected_float_2"))
    key = "ab" * 32
    assert driver_token(key, add) == driver_token(key, to_hal_model(corpus_model("add")))
    assert len({driver_token(key, add), driver_token(key, fc), driver_token("cd" * 32, add)}) == 3
    assert len(driver_token(key, add)) == 32


def test_cache_is_per_token_preference_and_device(tmp_path):
    tm = corpus_model("add")
    keys = {compile_cached(tm, tmp_path).caching.outcomes[0].key,
            compile_cached(tm, tmp_path, OTHER_TOKEN).caching.outcomes[0].key,
            compile_cached(tm, tmp_path, preference=PreferenceCode.LOW_POWER).caching.outcomes[0].key}
    assert len(keys) == 3
    assert len(list(tmp_path.iterdir())) == 6
    low = compile_cached(tm, tmp_path, preference=PreferenceCode.LOW_POWER)
    assert low.caching.outcomes[0].used_cache
    args = (TOKEN, "nncts-sample", "1.0", PreferenceCode.FAST_SINGLE_ANSWER, PriorityCode.MEDIUM)
    assert cache_key(*args) != cache_key(TOKEN, "nncts-sample", "1.1", *args[3:])
    assert cache_key(*args) != cache_key(TOKEN, "other", "1.0", *args[3:])
    assert cache_key(*args) != cache_key(*args, partition="step 1")
    assert cache_key(TOKEN, "ab", "c", 1, 100) != cache_key(TOKEN, "a", "bc", 1, 100)


@pytest.mark.parametrize("length", [0, 31, 33])
def test_set_caching_with_a_wrong_token_length_is_bad_data(tmp_path, length):
    compilation = Compilation.create_for_devices(build_model(corpus_model("add")), get_devices(["sample"]))
    with pytest.raises(NnapiError) as e:
        compilation.set_caching(tmp_path, b"\0" * length)
    assert e.value.code == ResultCode.BAD_DATA
    compilation.finish()  # still usable, without caching
    assert compilation.caching is None and list(tmp_path.iterdir()) == []


def test_set_caching_with_a_missing_directory_is_bad_data(tmp_path):
    compilation = Compilation.create_for_devices(build_model(corpus_model("add")), get_devices(["sample"]))
    with pytest.raises(NnapiError) as e:
        compilation.set_caching(tmp_path / "missing", TOKEN)
    assert e.value.code == ResultCode.BAD_DATA


def test_cache_accepting_driver_returns_a_wrong_model(tmp_path):
    """The planted fault: CacheAcceptsCorruption prepares from a corrupted cache (a weight
    changed), so the outputs are wrong, where the sample driver falls back."""
    tm = corpus_model("fully_connected_float_2")
    broken = CacheAcceptsCorruption()
    key = compile_cached(tm, tmp_path, hal=broken).caching.outcomes[0].key
    model_path, _ = cache_files(tmp_path, key)
    raw = bytearray(model_path.read_bytes())
    raw[-5] ^= 0x40  # a byte of the last weights in the constant pool
    model_path.write_bytes(bytes(raw))
    saved = model_path.read_bytes()

    compilation = compile_cached(tm, tmp_path, hal=broken)
    assert compilation.caching.outcomes[0].used_cache
    assert mismatches(tm, run(compilation, tm)) != []

    model_path.write_bytes(saved)
    good = compile_cached(tm, tmp_path, hal=SampleDevice())
    assert good.caching.outcomes[0].fell_back
    assert_correct(good, tm)


def test_cache_accepting_driver_loads_garbage_as_a_broken_model(tmp_path):
    tm = corpus_model("add")
    broken = CacheAcceptsCorruption()
    key = compile_cached(tm, tmp_path, hal=broken).caching.outcomes[0].key
    model_path, _ = cache_files(tmp_path, key)
    _flip(100)(model_path, None)  # inside the structure document: undecodable
    compilation = compile_cached(tm, tmp_path, hal=broken)
    assert compilation.caching.outcomes[0].used_cache
    with pytest.raises(NnapiError):
        run(compilation, tm)


def test_extension_model_is_cached(tmp_path):
    """A model using a vendor extension (sample-fibonacci, com.example.fibonacci): extension
    types and operand extension data survive the cache."""
    devices = get_devices(["sample-fibonacci"])
    results = []
    for _ in range(2):
        m = Model()
        n = m.add_operand(m.get_extension_operand_type(EXTENSION_NAME, EXAMPLE_INT64, devices))
        out = m.add_operand(m.get_extension_operand_type(EXTENSION_NAME, EXAMPLE_TENSOR_QUANT64_ASYMM, devices), [10])
        m.set_operand_extension_data(out, quant64_params(0.5, 10))
        m.add_operation(m.get_extension_operation_type(EXTENSION_NAME, EXAMPLE_FIBONACCI, devices), [n], [out])
        m.identify_inputs_and_outputs([n], [out])
        m.finish()
        c = Compilation.create_for_devices(m, devices)
        c.set_caching(tmp_path, TOKEN)
        c.finish()
        e = Execution(c)
        e.set_input(0, np.int64(10).tobytes())
        buf = np.zeros(10, np.uint64)
        e.set_output(0, buf)
        e.compute()
        results.append((c.caching.outcomes[0], buf.tolist()))
    (first, out1), (second, out2) = results
    assert first.wrote_cache and second.used_cache
    assert out1 == out2 == [12, 12, 14, 16, 20, 26, 36, 52, 78, 120]
