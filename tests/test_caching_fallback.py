"""Compilation caching through the front end when the cache cannot be used
(ANeuralNetworksCompilation_setCaching, FL3; runtime/nnapi/cache.py): a device without
usable caching gets a plain prepare, a driver failing to prepare from its cache falls back
to a full prepare, a driver that writes nothing is never offered a cache, a failed full
prepare raises as without caching, and a vanished cache directory still compiles."""
from __future__ import annotations

import pytest

from harness.runner import build_model
from runtime.errors import HalError, NnapiError
from runtime.nnapi import Compilation, get_devices
from runtime.types import ErrorStatus, PreferenceCode, PriorityCode, ResultCode
from tests.caching_support import TOKEN, CountingDevice, assert_correct, compile_cached, corpus_model


class NoCaching(CountingDevice):
    """A driver that does not cache (needs (0, 0) cache files)."""

    def get_number_of_cache_files_needed(self):
        return 0, 0


class BadCounts(CountingDevice):
    """A driver asking for more model cache files than MAX_NUMBER_OF_CACHE_FILES (32)."""

    def get_number_of_cache_files_needed(self):
        return 33, 1


class CrashingCache(CountingDevice):
    """A driver whose prepare_model_from_cache raises something other than HalError."""

    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token):
        super().prepare_model_from_cache(deadline_ns, model_cache, data_cache, token)
        raise RuntimeError("driver bug")


class ReturnsNothing(CountingDevice):
    """A driver whose prepare_model_from_cache returns None instead of a prepared model."""

    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token):
        self.from_cache += 1
        return None


class NeverWrites(CountingDevice):
    """A driver that ignores the cache files it is given when preparing."""

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
    """A driver whose prepare_model fails (GENERAL_FAILURE)."""

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
