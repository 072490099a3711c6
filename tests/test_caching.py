"""Compilation caching (ANeuralNetworksCompilation_setCaching, FL3): the runtime's cache
lookup and fallback (runtime/nnapi/cache.py), the sample driver's cache files
(runtime/drivers/sample_cache.py) and the HAL model serialization (runtime/hal/serialize.py)."""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cts.harness import build_model
from runtime.drivers import sample_cache
from runtime.drivers.sample import SampleDevice, SamplePreparedModel
from runtime.errors import HalError, NnapiError
from runtime.hal import serialize
from runtime.hal.memory import SharedMemory
from runtime.hal.serialize import model_from_bytes, model_to_bytes
from runtime.hal.types import ExtensionNameAndPrefix, Model as HalModel, Operand, Operation
from runtime.nnapi import Compilation, Device, Execution, get_devices
from runtime.nnapi.cache import cache_key, cache_paths, driver_token
from runtime.testing.criteria import compare, tolerance_for
from runtime.testing.hal_convert import read_outputs, to_hal_model, to_hal_request
from runtime.testing.test_model import load_spec
from runtime.types import (ErrorStatus, OperandLifeTime, OperandType, PreferenceCode,
                           PriorityCode, ResultCode, operand_dtype)
from tests.broken_drivers import CacheAcceptsCorruption

CORPUS = Path(__file__).resolve().parent.parent / "cts" / "corpus"
TOKEN = bytes(range(32))
OTHER_TOKEN = bytes(range(1, 33))
BAD_CACHE = (ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT)


def corpus_model(spec: str, version: str = "V1_0", index: int = 0):
    return load_spec(CORPUS / version / f"{spec}.json.gz")[index]


class CountingDevice(SampleDevice):
    """The sample driver, counting its prepare calls."""

    def __init__(self):
        super().__init__()
        self.from_cache = 0
        self.full_with_files = 0
        self.full_plain = 0

    def prepare_model(self, model, preference=PreferenceCode.FAST_SINGLE_ANSWER, priority=PriorityCode.MEDIUM,
                      deadline_ns=None, model_cache=None, data_cache=None, token=None):
        if model_cache is None:
            self.full_plain += 1
        else:
            self.full_with_files += 1
        return super().prepare_model(model, preference, priority, deadline_ns, model_cache, data_cache, token)

    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token):
        self.from_cache += 1
        return super().prepare_model_from_cache(deadline_ns, model_cache, data_cache, token)


def compile_cached(tm, cache_dir, token=TOKEN, hal=None, preference=None) -> Compilation:
    device = Device(hal) if hal is not None else get_devices(["sample"])[0]
    compilation = Compilation.create_for_devices(build_model(tm), [device])
    if preference is not None:
        compilation.set_preference(preference)
    compilation.set_caching(cache_dir, token)
    compilation.finish()
    return compilation


def run(compilation, tm) -> list[np.ndarray]:
    """Execute ``tm``'s example on ``compilation``; the raw outputs."""
    execution = Execution(compilation)
    for j, idx in enumerate(tm.main.input_indexes):
        data = tm.main.operands[idx].data
        execution.set_input(j, data, None if data is None else list(data.shape))
    outs = []
    for j, idx in enumerate(tm.main.output_indexes):
        o = tm.main.operands[idx]
        outs.append(np.zeros(o.data.shape, operand_dtype(o.type)))
        execution.set_output(j, outs[-1])
    execution.compute()
    return outs


def mismatches(tm, outs) -> list[str]:
    problems = []
    for j, (idx, actual) in enumerate(zip(tm.main.output_indexes, outs)):
        o = tm.main.operands[idx]
        msg = compare(o.data, actual, tolerance_for(o.type, tm.is_relaxed, tm.name))
        if msg:
            problems.append(f"output {j}: {msg}")
    return problems


def assert_correct(compilation, tm) -> None:
    assert mismatches(tm, run(compilation, tm)) == []


def cache_files(cache_dir: Path, key: str) -> tuple[Path, Path]:
    (model_path,), (data_path,) = cache_paths(cache_dir, key, 1, 1)
    return model_path, data_path


# -- the runtime and the sample driver, through the front end ------------------------------
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


class NoCaching(CountingDevice):
    def get_number_of_cache_files_needed(self):
        return 0, 0


class BadCounts(CountingDevice):
    def get_number_of_cache_files_needed(self):
        return 33, 1


class CrashingCache(CountingDevice):
    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token):
        super().prepare_model_from_cache(deadline_ns, model_cache, data_cache, token)
        raise RuntimeError("driver bug")


class ReturnsNothing(CountingDevice):
    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token):
        self.from_cache += 1
        return None


class NeverWrites(CountingDevice):
    def prepare_model(self, model, preference=PreferenceCode.FAST_SINGLE_ANSWER, priority=PriorityCode.MEDIUM,
                      deadline_ns=None, model_cache=None, data_cache=None, token=None):
        return super().prepare_model(model, preference, priority, deadline_ns)


@pytest.mark.parametrize("driver, reason", [(NoCaching, "does not support"),
                                            (BadCounts, "get_number_of_cache_files_needed returned")])
def test_device_without_usable_caching_gets_a_plain_prepare(tmp_path, driver, reason):
    tm = corpus_model("add")
    device = driver()
    for _ in range(2):
        compilation = compile_cached(tm, tmp_path, hal=device)
        (outcome,) = compilation.caching.outcomes
        assert not (outcome.used_cache or outcome.fell_back or outcome.offered_files)
        assert reason in outcome.reason
        assert_correct(compilation, tm)
    assert (device.from_cache, device.full_with_files, device.full_plain) == (0, 0, 2)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("driver, reason", [(CrashingCache, "crashed: RuntimeError"),
                                            (ReturnsNothing, "not an IPreparedModel")])
def test_driver_failing_from_cache_falls_back(tmp_path, driver, reason):
    tm = corpus_model("add")
    device = driver()
    compile_cached(tm, tmp_path, hal=device)
    compilation = compile_cached(tm, tmp_path, hal=device)
    (outcome,) = compilation.caching.outcomes
    assert outcome.fell_back and not outcome.used_cache and reason in outcome.reason
    assert device.from_cache == 1 and device.full_with_files == 2
    assert_correct(compilation, tm)


def test_driver_that_writes_nothing_is_never_offered_a_cache(tmp_path):
    tm = corpus_model("add")
    device = NeverWrites()
    for _ in range(2):
        compilation = compile_cached(tm, tmp_path, hal=device)
        (outcome,) = compilation.caching.outcomes
        assert outcome.offered_files and not outcome.wrote_cache and not outcome.used_cache
    assert device.from_cache == 0


class FailsToPrepare(CountingDevice):
    def prepare_model(self, *args, **kwargs):
        raise HalError(ErrorStatus.GENERAL_FAILURE, "out of accelerator memory")


def test_failed_full_prepare_raises_as_without_caching(tmp_path):
    with pytest.raises(NnapiError) as e:
        compile_cached(corpus_model("add"), tmp_path, hal=FailsToPrepare())
    assert e.value.code == ResultCode.OP_FAILED
    assert "out of accelerator memory" in str(e.value)


def test_unwritable_cache_directory_still_compiles(tmp_path):
    tm = corpus_model("add")
    compilation = Compilation.create_for_devices(build_model(tm), get_devices(["sample"]))
    compilation.set_caching(tmp_path, TOKEN)
    tmp_path.rmdir()  # the directory disappears between set_caching and finish
    compilation.finish()
    (outcome,) = compilation.caching.outcomes
    assert not outcome.offered_files and "cannot create cache files" in outcome.reason
    assert_correct(compilation, tm)


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


# -- the sample driver's HAL calls directly -----------------------------------------------
def _prepared_cache(tm=None):
    model = to_hal_model(tm or corpus_model("fully_connected_float_2"))
    mc, dc = io.BytesIO(), io.BytesIO()
    SampleDevice().prepare_model(model, model_cache=[mc], data_cache=[dc], token=TOKEN)
    return model, mc, dc


def test_hal_prepare_from_cache_round_trip():
    tm = corpus_model("fully_connected_float_2")
    _, mc, dc = _prepared_cache(tm)
    mc.seek(7)  # the driver reads from position 0 whatever the position
    prepared = SampleDevice().prepare_model_from_cache(None, [mc], [dc], TOKEN)
    request = to_hal_request(tm)
    shapes, _ = prepared.execute_synchronously(request)
    outs = read_outputs(tm, request, shapes)
    assert mismatches(tm, outs) == []


def test_hal_prepare_truncates_old_cache_content():
    model = to_hal_model(corpus_model("add"))
    mc, dc = io.BytesIO(b"x" * 100000), io.BytesIO(b"y" * 1000)
    SampleDevice().prepare_model(model, model_cache=[mc], data_cache=[dc], token=TOKEN)
    expected_model, expected_data = sample_cache.encode(model, TOKEN)
    assert mc.getvalue() == expected_model and dc.getvalue() == expected_data


@pytest.mark.parametrize("counts", [(0, 1), (1, 0), (2, 1), (1, 2), (0, 0)])
def test_hal_prepare_with_wrong_file_counts_succeeds_without_writing(counts):
    model = to_hal_model(corpus_model("add"))
    mcs = [io.BytesIO() for _ in range(counts[0])]
    dcs = [io.BytesIO() for _ in range(counts[1])]
    prepared = SampleDevice().prepare_model(model, model_cache=mcs, data_cache=dcs, token=TOKEN)
    assert isinstance(prepared, SamplePreparedModel)
    assert all(f.getvalue() == b"" for f in mcs + dcs)


def test_hal_prepare_with_unwritable_files_still_succeeds(tmp_path):
    model = to_hal_model(corpus_model("add"))
    (tmp_path / "m").write_bytes(b"old")
    (tmp_path / "d").write_bytes(b"old")
    with open(tmp_path / "m", "rb") as mc, open(tmp_path / "d", "rb") as dc:
        prepared = SampleDevice().prepare_model(model, model_cache=[mc], data_cache=[dc], token=TOKEN)
    assert isinstance(prepared, SamplePreparedModel)


@pytest.mark.parametrize("args", [
    "no model file", "no data file", "two model files", "two data files", "short token", "long token",
    "token str", "files not a list"])
def test_hal_prepare_from_cache_rejects_bad_arguments(args):
    _, mc, dc = _prepared_cache()
    call = {"no model file": ([], [dc], TOKEN), "no data file": ([mc], [], TOKEN),
            "two model files": ([mc, mc], [dc], TOKEN), "two data files": ([mc], [dc, dc], TOKEN),
            "short token": ([mc], [dc], TOKEN[:31]), "long token": ([mc], [dc], TOKEN + b"\0"),
            "token str": ([mc], [dc], "x" * 32), "files not a list": (mc, dc, TOKEN)}[args]
    with pytest.raises(HalError) as e:
        SampleDevice().prepare_model_from_cache(None, *call)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT


def test_hal_prepare_from_cache_rejects_unreadable_files(tmp_path):
    _, mc, dc = _prepared_cache()
    (tmp_path / "m").write_bytes(mc.getvalue())
    with open(tmp_path / "m", "wb") as write_only:
        with pytest.raises(HalError) as e:
            SampleDevice().prepare_model_from_cache(None, [write_only], [dc], TOKEN)
    assert e.value.status in BAD_CACHE
    closed = io.BytesIO(mc.getvalue())
    closed.close()
    with pytest.raises(HalError):
        SampleDevice().prepare_model_from_cache(None, [closed], [dc], TOKEN)
    with pytest.raises(HalError):
        SampleDevice().prepare_model_from_cache(None, [object()], [dc], TOKEN)


def test_hal_prepare_from_cache_rejects_every_truncation():
    _, mc, dc = _prepared_cache(corpus_model("add"))
    model_file, data_file = mc.getvalue(), dc.getvalue()
    device = SampleDevice()
    for n in range(len(model_file)):
        with pytest.raises(HalError) as e:
            device.prepare_model_from_cache(None, [io.BytesIO(model_file[:n])], [io.BytesIO(data_file)], TOKEN)
        assert e.value.status in BAD_CACHE
    for n in range(len(data_file)):
        with pytest.raises(HalError) as e:
            device.prepare_model_from_cache(None, [io.BytesIO(model_file)], [io.BytesIO(data_file[:n])], TOKEN)
        assert e.value.status in BAD_CACHE


def test_hal_prepare_from_cache_rejects_every_bit_flip():
    _, mc, dc = _prepared_cache(corpus_model("add"))
    model_file, data_file = mc.getvalue(), dc.getvalue()
    device = SampleDevice()
    for which, blob in (("model", model_file), ("data", data_file)):
        for i in range(len(blob)):
            bad = bytearray(blob)
            bad[i] ^= 1 << (i % 8)
            files = ([io.BytesIO(bytes(bad))], [io.BytesIO(data_file)]) if which == "model" else \
                ([io.BytesIO(model_file)], [io.BytesIO(bytes(bad))])
            with pytest.raises(HalError) as e:
                device.prepare_model_from_cache(None, *files, TOKEN)
            assert e.value.status in BAD_CACHE, (which, i)


def test_hal_prepare_from_cache_validates_the_model():
    """A cache with good digests holding a model this device cannot run is still rejected."""
    model = to_hal_model(corpus_model("add"))
    model.main.operands[0].number_of_consumers += 1  # invalid
    model_file, data_file = sample_cache.encode(model, TOKEN)
    with pytest.raises(HalError) as e:
        SampleDevice().prepare_model_from_cache(None, [io.BytesIO(model_file)], [io.BytesIO(data_file)], TOKEN)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    fl2 = to_hal_model(corpus_model("batch_to_space", "V1_1"))  # BATCH_TO_SPACE_ND: feature level 2
    model_file, data_file = sample_cache.encode(fl2, TOKEN)
    assert SampleDevice().prepare_model_from_cache(None, [io.BytesIO(model_file)], [io.BytesIO(data_file)], TOKEN)
    with pytest.raises(HalError, match="unsupported"):
        SampleDevice(feature_level=1).prepare_model_from_cache(
            None, [io.BytesIO(model_file)], [io.BytesIO(data_file)], TOKEN)


# -- serialization ------------------------------------------------------------------------
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


def test_extension_model_is_cached(tmp_path):
    """A model using a vendor extension (sample-fibonacci, com.example.fibonacci): extension
    types and operand extension data survive the cache."""
    from runtime.extensions.fibonacci import (EXAMPLE_FIBONACCI, EXAMPLE_INT64, EXAMPLE_TENSOR_QUANT64_ASYMM,
                                              EXTENSION_NAME, quant64_params)
    from runtime.nnapi import Model
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
