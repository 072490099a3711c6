"""Shared helpers of the compilation-caching tests (``tests/test_caching_*.py``): corpus
models, the app's cache token, a sample driver that counts its prepare calls, and compiling
with caching (ANeuralNetworksCompilation_setCaching) and checking the results through the
front end."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.runner import build_model
from runtime.drivers.sample import SampleDevice
from runtime.nnapi import Compilation, Device, Execution, get_devices
from runtime.nnapi.cache import cache_paths
from runtime.testing.criteria import compare, tolerance_for
from runtime.testing.test_model import TestModel, load_spec
from runtime.types import PreferenceCode, PriorityCode, operand_dtype

#: The CTS corpus (``cts/corpus/<version>/<spec>.json.gz``).
CORPUS = Path(__file__).resolve().parent.parent / "cts" / "corpus"
#: The app's cache token (BYTE_SIZE_OF_CACHE_TOKEN = 32 bytes).
TOKEN = bytes(range(32))


def corpus_model(spec: str, version: str = "V1_0", index: int = 0) -> TestModel:
    """Test model ``index`` of corpus spec ``<version>/<spec>.json.gz``; FileNotFoundError
    when there is no such spec, IndexError when it has fewer models."""
    return load_spec(CORPUS / version / f"{spec}.json.gz")[index]


class CountingDevice(SampleDevice):
    """The sample driver, counting its prepare calls: ``from_cache``
    (prepare_model_from_cache), ``full_with_files`` (prepare_model given cache files) and
    ``full_plain`` (prepare_model without)."""

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
    """A finished compilation of test model ``tm`` with caching in ``cache_dir`` under
    ``token``, on driver ``hal`` (default: the bundled sample driver) and with
    ``preference`` when given; its ``caching.outcomes`` tell what the cache did. Raises
    NnapiError as Compilation.finish does."""
    device = Device(hal) if hal is not None else get_devices(["sample"])[0]
    compilation = Compilation.create_for_devices(build_model(tm), [device])
    if preference is not None:
        compilation.set_preference(preference)
    compilation.set_caching(cache_dir, token)
    compilation.finish()
    return compilation


def run(compilation, tm) -> list[np.ndarray]:
    """Execute ``tm``'s example on ``compilation``; the raw outputs (one array per model
    output, of the output's dtype and expected shape)."""
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
    """One message per output of ``outs`` that differs from ``tm``'s expected output beyond
    the CTS tolerance of its type (empty when all match)."""
    problems = []
    for j, (idx, actual) in enumerate(zip(tm.main.output_indexes, outs)):
        o = tm.main.operands[idx]
        msg = compare(o.data, actual, tolerance_for(o.type, tm.is_relaxed, tm.name))
        if msg:
            problems.append(f"output {j}: {msg}")
    return problems


def assert_correct(compilation, tm) -> None:
    """Assert that ``compilation`` computes ``tm``'s expected outputs."""
    assert mismatches(tm, run(compilation, tm)) == []


def cache_files(cache_dir: Path, key: str) -> tuple[Path, Path]:
    """(model cache file, data cache file) of cache ``key`` for a driver needing one of each
    (the sample driver)."""
    (model_path,), (data_path,) = cache_paths(cache_dir, key, 1, 1)
    return model_path, data_path
