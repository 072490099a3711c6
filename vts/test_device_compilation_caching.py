"""VTS compilation caching (AOSP VTS ``CompilationCachingTests``: ``CompilationCachingTest``
and ``CompilationCachingSecurityTest``), straight on the driver's HAL: saving to and
preparing from cache files, wrong file counts and access modes, corrupted caches, wrong
tokens, replaced caches and caches raced by a copy (TOCTOU). Each test names the AOSP test
it mirrors (errors are HalError statuses; any other exception escaping the driver is a crash
and fails the test). A driver that does not cache (``get_number_of_cache_files_needed`` is
(0, 0)) skips them all but one.
"""
from __future__ import annotations

import contextlib
import os
import random
import threading
from pathlib import Path

import pytest

from runtime.testing.hal_convert import to_hal_model
from runtime.types import BYTE_SIZE_OF_CACHE_TOKEN, ErrorStatus as E, OperandType as T, OperationType
from vts.device_support import assert_evaluates, expect, records_fixture, skip, unsupported
from vts.hal_harness import chain_model, prepare, prepare_from_cache

_records = records_fixture("compilation-cache")


CACHE_TYPES = {"float32": T.TENSOR_FLOAT32, "quant8": T.TENSOR_QUANT8_ASYMM}
CACHE_MODEL_LENGTH = 10
SEEDS = range(10)
TOCTOU_ITERATIONS = 10
REJECTED = (E.INVALID_ARGUMENT, E.GENERAL_FAILURE)


class CacheFiles:
    """AOSP ``CompilationCachingTestBase``'s cache directory: model cache files
    ``model0..``, data cache files ``data0..`` and a spare ``tmp`` file, all created empty;
    ``token`` is the (mutable) 32-byte cache token."""

    def __init__(self, directory: Path, n_model: int, n_data: int):
        self.dir = directory
        self.model = [directory / f"model{i}" for i in range(n_model)]
        self.data = [directory / f"data{i}" for i in range(n_data)]
        self.tmp = directory / "tmp"
        self.token = bytearray(BYTE_SIZE_OF_CACHE_TOKEN)
        for p in [*self.model, *self.data, self.tmp]:
            p.touch()

    @staticmethod
    def _open(path: Path, mode: str):
        if mode == "rw":
            return open(path, "r+b")
        if mode == "ro":
            return open(path, "rb")
        if mode == "wo":
            return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb")
        raise ValueError(mode)

    @contextlib.contextmanager
    def handles(self, model=None, data=None, model_modes=None, data_modes=None):
        """(model cache files, data cache files) opened ("rw" unless a mode says "ro"/"wo"),
        closed on exit."""
        model = self.model if model is None else model
        data = self.data if data is None else data
        model_modes = model_modes or ["rw"] * len(model)
        data_modes = data_modes or ["rw"] * len(data)
        with contextlib.ExitStack() as stack:
            yield ([stack.enter_context(self._open(p, m)) for p, m in zip(model, model_modes)],
                   [stack.enter_context(self._open(p, m)) for p, m in zip(data, data_modes)])


@pytest.fixture
def cache_counts(hal):
    counts = tuple(hal.get_number_of_cache_files_needed())
    if counts == (0, 0):
        skip("driver_feature",
              "the driver does not cache compilations (get_number_of_cache_files_needed is (0, 0))")
    return counts


@pytest.fixture
def cache(cache_counts, tmp_path):
    return CacheFiles(tmp_path, *cache_counts)


@pytest.fixture(params=list(CACHE_TYPES), ids=list(CACHE_TYPES))
def cached_model(request, hal):
    """(test model, HAL model) of an ADD chain in the parameter's type, skipped when the
    driver does not support it (AOSP ``checkEarlyTermination``)."""
    tm = chain_model(OperationType.ADD, CACHE_MODEL_LENGTH, CACHE_TYPES[request.param])
    model = to_hal_model(tm)
    reason = unsupported(hal, tm, model)
    if reason:
        skip(*reason)
    return tm, model


def _save(hal, model, cache, model_files=None, data_files=None, model_modes=None, data_modes=None):
    """AOSP ``saveModelToCache``: prepare_model with cache files must succeed."""
    with cache.handles(model_files, data_files, model_modes, data_modes) as (mc, dc):
        prepared = prepare(hal, model, model_cache=mc, data_cache=dc, token=bytes(cache.token))
    assert prepared.ok, f"prepare_model with cache files: {prepared.describe()}"
    return prepared.value


def _load(hal, cache, model_files=None, data_files=None, model_modes=None, data_modes=None, token=None):
    with cache.handles(model_files, data_files, model_modes, data_modes) as (mc, dc):
        return prepare_from_cache(hal, mc, dc, bytes(cache.token) if token is None else token)


def _load_and_evaluate(hal, cache, tm, what):
    """Prepare from the cache: success (then correct results), or GENERAL_FAILURE (the
    driver cannot save this model: AOSP ``checkEarlyTermination``) which skips."""
    call = _load(hal, cache)
    if call.status == E.GENERAL_FAILURE:
        skip("driver_feature", f"the driver could not prepare {tm.name} from its cache (GENERAL_FAILURE)")
    expect(call, (E.NONE,), what)
    assert_evaluates(call.value, tm, what)


def test_cache_saving_and_retrieval(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.CacheSavingAndRetrieval``: prepare with cache files,
    then prepare from them: the prepared model computes correct results."""
    tm, model = cached_model
    _save(hal, model, cache)
    _load_and_evaluate(hal, cache, tm, "prepare_model_from_cache")


def test_cache_saving_and_retrieval_non_zero_offset(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.CacheSavingAndRetrievalNonZeroOffset``: cache files
    handed over non-empty and at a non-zero position (both when saving and when loading)
    still work."""
    tm, model = cached_model
    with cache.handles() as (mc, dc):
        for f in [*mc, *dc]:
            f.write(b"\0\0")
        prepared = prepare(hal, model, model_cache=mc, data_cache=dc, token=bytes(cache.token))
    assert prepared.ok, prepared.describe()
    with cache.handles() as (mc, dc):
        for f in [*mc, *dc]:
            f.read(1)
        call = prepare_from_cache(hal, mc, dc, bytes(cache.token))
    if call.status == E.GENERAL_FAILURE:
        skip("driver_feature", "the driver could not prepare the model from its cache (GENERAL_FAILURE)")
    expect(call, (E.NONE,), "prepare_model_from_cache with files at a non-zero offset")
    assert_evaluates(call.value, tm, "prepared from cache files at a non-zero offset")


def _wrong_counts(cache):
    """(label, model files, data files) with one file too many or too few of each kind."""
    cases = [("one model cache file too many", [*cache.model, cache.tmp], cache.data)]
    if cache.model:
        cases.append(("one model cache file too few", cache.model[:-1], cache.data))
    cases.append(("one data cache file too many", cache.model, [*cache.data, cache.tmp]))
    if cache.data:
        cases.append(("one data cache file too few", cache.model, cache.data[:-1]))
    return cases


def test_save_to_cache_invalid_num_cache(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.SaveToCacheInvalidNumCache``: prepare_model given the
    wrong number of model or data cache files still prepares (correct results) without
    relying on them; prepare_model_from_cache with those files is then rejected
    (INVALID_ARGUMENT or GENERAL_FAILURE)."""
    tm, model = cached_model
    for label, model_files, data_files in _wrong_counts(cache):
        prepared = _save(hal, model, cache, model_files, data_files)
        assert_evaluates(prepared, tm, f"prepared with {label}")
        call = _load(hal, cache, model_files, data_files)
        expect(call, REJECTED, f"prepare_model_from_cache with {label}")


def test_prepare_from_cache_invalid_num_cache(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.PrepareModelFromCacheInvalidNumCache``: after a good
    save, prepare_model_from_cache with one file too many or too few is rejected."""
    _, model = cached_model
    _save(hal, model, cache)
    for label, model_files, data_files in _wrong_counts(cache):
        expect(_load(hal, cache, model_files, data_files), REJECTED, f"prepare_model_from_cache with {label}")


def test_save_to_cache_invalid_access_mode(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.SaveToCacheInvalidAccessMode``: prepare_model with one
    cache file opened read-only still prepares (correct results); the cache it could not
    write is then rejected by prepare_model_from_cache."""
    tm, model = cached_model
    for kind, files in (("model", cache.model), ("data", cache.data)):
        for i in range(len(files)):
            modes = ["rw"] * len(files)
            modes[i] = "ro"
            kw = {"model_modes": modes} if kind == "model" else {"data_modes": modes}
            prepared = _save(hal, model, cache, **kw)
            assert_evaluates(prepared, tm, f"prepared with {kind} cache file {i} read-only")
            expect(_load(hal, cache, **kw), REJECTED,
                    f"prepare_model_from_cache after saving with {kind} cache file {i} read-only")


def test_prepare_from_cache_invalid_access_mode(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.PrepareModelFromCacheInvalidAccessMode``: after a good
    save, prepare_model_from_cache with one cache file opened write-only is rejected."""
    _, model = cached_model
    _save(hal, model, cache)
    for kind, files in (("model", cache.model), ("data", cache.data)):
        for i in range(len(files)):
            modes = ["rw"] * len(files)
            modes[i] = "wo"
            kw = {"model_modes": modes} if kind == "model" else {"data_modes": modes}
            expect(_load(hal, cache, **kw), REJECTED,
                    f"prepare_model_from_cache with {kind} cache file {i} write-only")


def _flip_one_bit(path: Path, rng: random.Random) -> bool:
    data = bytearray(path.read_bytes())
    if not data:
        return False
    pos = rng.randint(0, len(data) - 1)
    data[pos] ^= 1 << rng.randint(0, 7)
    path.write_bytes(bytes(data))
    return True


def _append_bytes(path: Path, rng: random.Random) -> bool:
    with open(path, "ab") as f:
        f.write(bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 256))))
    return True


def _truncate_half(path: Path, rng: random.Random) -> bool:
    size = path.stat().st_size
    if not size:
        return False
    os.truncate(path, size // 2)
    return True


def _truncate_empty(path: Path, rng: random.Random) -> bool:
    if not path.stat().st_size:
        return False
    os.truncate(path, 0)
    return True


CORRUPTIONS = {"flip_one_bit": _flip_one_bit, "append_bytes": _append_bytes, "truncate_half": _truncate_half,
               "truncate_empty": _truncate_empty}


def _corrupted_cache_outcomes(hal, cache, model, tm, kind: str, corrupt, seeds=SEEDS):
    """AOSP ``CompilationCachingSecurityTest::testCorruptedCache``: per seed and per file of
    ``kind``, save, corrupt that file, prepare from the cache; yields (label, Call)."""
    files = cache.model if kind == "model" else cache.data
    for seed in seeds:
        rng = random.Random(seed)
        for i, path in enumerate(files):
            _save(hal, model, cache)
            if not corrupt(path, rng):
                continue
            yield f"seed {seed}, {kind} cache file {i}", _load(hal, cache)


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_cache_corrupted_model_cache(hal, cache, cached_model, corruption):
    """AIDL ``CompilationCachingSecurityTest.CorruptedModelCache`` (one bit flipped) and
    ``WrongLengthModelCache`` (bytes appended), here also a model cache truncated to half
    or to nothing: prepare_model_from_cache must detect it: GENERAL_FAILURE, no prepared
    model (10 seeds)."""
    tm, model = cached_model
    for label, call in _corrupted_cache_outcomes(hal, cache, model, tm, "model", CORRUPTIONS[corruption]):
        expect(call, (E.GENERAL_FAILURE,), f"prepare_model_from_cache of a model cache ({corruption}, {label})")


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_cache_corrupted_data_cache(hal, cache, cached_model, corruption):
    """AIDL ``CompilationCachingSecurityTest.CorruptedDataCache`` / ``WrongLengthDataCache``
    (and truncation): the driver may accept or reject a corrupted data cache but must not
    crash; a prepared model returned iff the status is NONE, and then computing correct
    results (10 seeds)."""
    tm, model = cached_model
    for label, call in _corrupted_cache_outcomes(hal, cache, model, tm, "data", CORRUPTIONS[corruption]):
        if call.ok:
            assert_evaluates(call.value, tm, f"prepared from a data cache ({corruption}, {label})")


def test_cache_wrong_token(hal, cache, cached_model):
    """AIDL ``CompilationCachingSecurityTest.WrongToken``: one bit of the token flipped
    between save and load: GENERAL_FAILURE (10 seeds)."""
    _, model = cached_model
    for seed in SEEDS:
        rng = random.Random(seed)
        cache.token = bytearray(BYTE_SIZE_OF_CACHE_TOKEN)
        _save(hal, model, cache)
        cache.token[rng.randint(0, BYTE_SIZE_OF_CACHE_TOKEN - 1)] ^= 1 << rng.randint(0, 7)
        expect(_load(hal, cache), (E.GENERAL_FAILURE,),
                f"prepare_model_from_cache with a wrong token (seed {seed})")


def test_cache_wrong_token_length(hal, cache, cached_model):
    """IDevice ``prepareModelFromCache``: the token is BYTE_SIZE_OF_CACHE_TOKEN bytes; a
    shorter, longer or empty token is rejected (INVALID_ARGUMENT or GENERAL_FAILURE)."""
    _, model = cached_model
    _save(hal, model, cache)
    token = bytes(cache.token)
    for bad in (token[:-1], token + b"\0", b""):
        expect(_load(hal, cache, token=bad), REJECTED, f"prepare_model_from_cache with a {len(bad)}-byte token")


def _save_mul_chain_aside(hal, cache, cached_model):
    """Save a MUL chain's model cache into ``<model file>_mul`` files under the current token,
    then move the token on; returns (ADD chain test model, its HAL model, the MUL files).
    Skips when the driver does not support the MUL chain."""
    tm, model = cached_model
    mul_tm = chain_model(OperationType.MUL, CACHE_MODEL_LENGTH, tm.main.operands[1].type)
    mul = to_hal_model(mul_tm)
    reason = unsupported(hal, mul_tm, mul)
    if reason:
        skip(*reason)
    mul_files = [p.with_name(p.name + "_mul") for p in cache.model]
    for p in mul_files:
        p.touch()
    _save(hal, mul, cache, model_files=mul_files)
    cache.token[0] += 1
    return tm, model, mul_files


def test_cache_replace_security_sensitive_cache(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.ReplaceSecuritySensitiveCache``: a MUL chain's model
    cache (saved under another token) copied over an ADD chain's model cache: preparing
    the ADD chain from it gives GENERAL_FAILURE."""
    _, model, mul_files = _save_mul_chain_aside(hal, cache, cached_model)
    _save(hal, model, cache)
    for src, dst in zip(mul_files, cache.model):
        dst.write_bytes(src.read_bytes())
    expect(_load(hal, cache), (E.GENERAL_FAILURE,), "prepare_model_from_cache of a replaced model cache")


def _copy_in_place(sources, targets):
    """AOSP ``copyCacheFiles``: overwrite each target with its source, without truncating."""
    for src, dst in zip(sources, targets):
        data = src.read_bytes()
        with open(dst, "r+b") as f:
            f.write(data)


@pytest.mark.parametrize("stage", ["save", "prepare"])
def test_cache_toctou(hal, cache, cached_model, stage):
    """AIDL ``CompilationCachingTest.SaveToCache_TOCTOU`` / ``PrepareFromCache_TOCTOU``:
    another model's cache is copied over the model cache files while the driver saves (or
    reads) them. Preparing from the cache may fail or succeed, but must not crash, and a
    success must compute the right (ADD chain) results."""
    tm, model, mul_files = _save_mul_chain_aside(hal, cache, cached_model)
    for _ in range(TOCTOU_ITERATIONS):
        copier = threading.Thread(target=_copy_in_place, args=(mul_files, cache.model))
        if stage == "save":
            copier.start()
            _save(hal, model, cache)
            copier.join()
            call = _load(hal, cache)
        else:
            _save(hal, model, cache)
            with cache.handles() as (mc, dc):
                copier.start()
                call = prepare_from_cache(hal, mc, dc, bytes(cache.token))
                copier.join()
        if call.ok:
            assert_evaluates(call.value, tm, f"prepared from a cache raced by a copy ({stage})")


def test_no_caching_rejects_prepare_from_cache(hal, tmp_path):
    """AIDL ``CompilationCachingTest.CacheSavingAndRetrieval`` on a driver that does not
    cache (get_number_of_cache_files_needed is (0, 0)): prepare_model_from_cache gives
    GENERAL_FAILURE and no prepared model."""
    if tuple(hal.get_number_of_cache_files_needed()) != (0, 0):
        skip("not_applicable", "the driver caches compilations (covered by the other caching tests)")
    call = prepare_from_cache(hal, [], [], bytes(BYTE_SIZE_OF_CACHE_TOKEN))
    expect(call, (E.GENERAL_FAILURE,), "prepare_model_from_cache on a driver without caching")
