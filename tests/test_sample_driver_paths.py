"""The sample driver's lines that no suite reaches (``--driver-coverage`` over the CTS, VTS,
random graphs and precision sweeps; the list and its measurement in
``runtime/drivers/coverage_explained.toml``), each reached here through the HAL and judged by
the HAL's rule, or explained in that file; and the file kept in step with the source.

Each test measures itself (coverage.py, in this process) and asserts it ran the lines it is
for, found by their text: a test that stopped reaching its line fails."""
from __future__ import annotations

import contextlib
import io
import copy
import hashlib
import sys
import time
import tomllib
from pathlib import Path

import pytest

from runtime.drivers.sample import SampleDevice
from runtime.errors import HalError
from runtime.hal.types import Operation
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.types import ErrorStatus, MeasureTiming, OperationType
from tests.caching_support import corpus_model
from tests.cts_run import ROOT

DRIVERS = ROOT / "runtime" / "drivers"
SAMPLE = DRIVERS / "sample.py"
EXPLAINED = DRIVERS / "coverage_explained.toml"


def _line(path: Path, text: str) -> int:
    found = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (path.name, text, found)
    return found[0]


@contextlib.contextmanager
def reaches(path: Path, *texts: str):
    """Run the block under coverage.py (lines of ``path``) and assert it ran the line holding
    each of ``texts`` (a pair ``(text, k)``: the k-th line after it). Under another tracer (a debugger, a coverage run of the tests) the
    block runs unmeasured."""
    if sys.gettrace() is not None:
        yield
        return
    import coverage
    cov = coverage.Coverage(data_file=None, include=[str(path)], config_file=False)
    cov.start()
    try:
        yield
    finally:
        cov.stop()
    ran = set(cov.get_data().lines(str(path)) or ())
    missed = [t for t in texts if _line(path, t if isinstance(t, str) else t[0]) + (0 if isinstance(t, str) else t[1])
              not in ran]
    assert not missed, f"{path.name}: not reached: {missed}"


def _prepared(spec: str = "add", version: str = "V1_0", device: SampleDevice | None = None):
    tm = corpus_model(spec, version)
    model = to_hal_model(tm)
    return tm, model, (device or SampleDevice()).prepare_model(model)


def test_a_deadline_passed_before_the_execution_starts():
    """HAL 1.3 IPreparedModel::executeSynchronously: a deadline already passed is
    MISSED_DEADLINE_* (the sample driver: _PERSISTENT, nothing ran)."""
    tm, _, prepared = _prepared()
    with reaches(SAMPLE, '"deadline passed before execution"'), pytest.raises(HalError) as e:
        prepared.execute_synchronously(to_hal_request(tm), MeasureTiming.NO, time.monotonic_ns() - 1)
    assert e.value.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT


def test_a_fenced_execution_refuses_outputs_of_unknown_dimensions_and_skips_omitted_ones():
    """HAL 1.3 executeFenced cannot report output shapes: an output whose dimensions the model
    and request leave unknown is INVALID_ARGUMENT (AOSP sample driver); an omitted output is
    not checked."""
    tm = corpus_model("add")
    model = to_hal_model(tm)
    out = model.main.output_indexes[0]
    model.main.operands[out].dimensions = [0] * len(model.main.operands[out].dimensions)
    prepared = SampleDevice().prepare_model(model)
    request = to_hal_request(tm)
    request.outputs[0].dimensions = []
    with reaches(SAMPLE, "are not fully specified"), pytest.raises(HalError) as e:
        prepared.execute_fenced(request, [], MeasureTiming.NO, None, None, None)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT and "output 0 dimensions" in e.value.message
    omitted = copy.deepcopy(request)
    omitted.outputs[0].has_no_value = True
    with reaches(SAMPLE, ("if arg.has_no_value or not is_tensor_operand_type", 1)):
        with contextlib.suppress(HalError):   # past the check: what the executor says of it is not this test's
            prepared.execute_fenced(omitted, [], MeasureTiming.NO, None, None, None)


def test_supports_without_the_levels_of_a_validated_model():
    """``supports(model, operation)`` (the subclasses' hook, asked without levels) finds the
    feature level itself: ADD float32 is feature level 1 (NNAPI 1.0); an operation type the
    table lacks, and a use above the device's feature level, are not supported."""
    tm = corpus_model("add")
    model = to_hal_model(tm)
    op = model.main.operations[0]
    with reaches(SAMPLE, "opdef = ops.get(operation.type)", "level, _ = operation_feature_level("):
        assert SampleDevice().supports(model, op) is True
    unknown = Operation(type=0x7FFF, inputs=op.inputs, outputs=op.outputs)
    with reaches(SAMPLE, "if opdef is None:"):
        assert SampleDevice().supports(model, unknown) is False
    # TANH of a TENSOR_FLOAT16 tensor: NNAPI 1.2 (feature level 3)
    quant = to_hal_model(corpus_model("tanh_v1_2", "V1_2"))
    with reaches(SAMPLE, "if level > self.feature_level:"):
        assert SampleDevice(feature_level=2).supports(quant, quant.main.operations[0]) is False
        assert SampleDevice(feature_level=3).supports(quant, quant.main.operations[0]) is True


def test_supports_refuses_an_operation_whose_operands_do_not_fit_its_signature():
    """``operation_feature_level`` raising HalError (no signature of ADD takes these
    operands: an output of another type) is not supported."""
    model = to_hal_model(corpus_model("add"))
    op = model.main.operations[0]
    bad = Operation(type=OperationType.ADD, inputs=op.inputs[:2] + [op.inputs[0]], outputs=op.outputs)
    with reaches(SAMPLE, "except HalError:"):
        assert SampleDevice().supports(model, bad) is False


def test_control_flow_support_walks_each_referenced_subgraph_once():
    """IF / WHILE (NNAPI 1.3) are supported when every operation of the subgraphs they
    reference is; a SUBGRAPH operand pointing past ``referenced`` is not supported."""
    model = to_hal_model(corpus_model("while_fib", "V1_3"))
    loop = model.main.operations[0]
    assert loop.type == OperationType.WHILE
    with reaches(SAMPLE, "seen.add(o.location.offset)", "ref = model.referenced[o.location.offset]"):
        assert SampleDevice().supports(model, loop) is True
    broken = copy.deepcopy(model)
    sub = next(i for i in loop.inputs if broken.main.operands[i].location.offset >= 0
               and broken.main.operands[i].lifetime.name == "SUBGRAPH")
    broken.main.operands[sub].location.offset = len(broken.referenced)
    with reaches(SAMPLE, ("if not 0 <= o.location.offset < len(model.referenced):", 1)):
        assert SampleDevice().supports(broken, broken.main.operations[0]) is False
    # an operation type the table lacks in a subgraph the loop references: the WHILE is not supported
    unknown = copy.deepcopy(model)
    body = unknown.referenced[max(unknown.main.operands[i].location.offset for i in loop.inputs
                                  if unknown.main.operands[i].lifetime.name == "SUBGRAPH")]
    body.operations[0].type = 0x7FFF
    with reaches(SAMPLE, ("if not all(self._supports_in(model, ref, op, seen, levels) for op in ref.operations):", 1)):
        assert SampleDevice().supports(unknown, unknown.main.operations[0]) is False


def test_prepare_refuses_an_operation_above_the_device_feature_level():
    """prepareModel of a model the device does not fully support: INVALID_ARGUMENT naming the
    operation (HAL: a driver must not prepare what getSupportedOperations says it cannot)."""
    model = to_hal_model(corpus_model("tanh_v1_2", "V1_2"))   # TENSOR_FLOAT16 TANH: NNAPI 1.2
    with reaches(SAMPLE, '"unsupported: "'), pytest.raises(HalError) as e:
        SampleDevice(feature_level=2).prepare_model(model)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT and "operation 0 (TANH)" in e.value.message


def _explained() -> dict:
    return tomllib.loads(EXPLAINED.read_text(encoding="utf-8"))


def _listed_line(source: list[str], item: dict) -> int:
    """The line an entry names: the one line whose text is ``text``, or with ``after``, the
    first line with that text below the one line whose text is ``after``."""
    def only(text: str) -> int:
        found = [n for n, line in enumerate(source, 1) if line.strip() == text]
        assert len(found) == 1, (text, found)
        return found[0]
    if "after" not in item:
        return only(item["text"])
    start = only(item["after"])
    return next(n for n in range(start + 1, len(source) + 1) if source[n - 1].strip() == item["text"])


def test_every_line_no_suite_reaches_is_reached_here_or_explained():
    """coverage_explained.toml lists, per file, the lines the recorded measurement found no
    suite reaching (with the file's SHA-256 then) and for each the test of this file that
    reaches it or the reason it is left: every listed line's text is still in the file, and
    while the file is unchanged the list is exactly the measured lines."""
    doc = _explained()
    tests = {name for name in globals() if name.startswith("test_")}
    for rel, entry in doc["files"].items():
        path = ROOT / rel
        source = path.read_text(encoding="utf-8").splitlines()
        listed = {}
        for item in entry["lines"]:
            assert ("test" in item) != ("reason" in item), item   # one or the other
            if "test" in item:
                assert item["test"] in tests, item
            n = _listed_line(source, item)
            assert n not in listed, (rel, item)
            listed[n] = item
        if hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]:
            assert sorted(listed) == entry["unreached"], f"{rel}: the list and the measured lines differ"


CACHE = DRIVERS / "sample_cache.py"
TOKEN = bytes(range(32))   # BYTE_SIZE_OF_CACHE_TOKEN: 32 bytes (HAL 1.2)


def _cache_pair(model) -> tuple[bytes, bytes]:
    mc, dc = io.BytesIO(), io.BytesIO()
    SampleDevice().prepare_model(model, model_cache=[mc], data_cache=[dc], token=TOKEN)
    return mc.getvalue(), dc.getvalue()


def _flip(blob: bytes, at: int) -> bytes:
    return blob[:at] + bytes([blob[at] ^ 0xFF]) + blob[at + 1:]


def _retoken(blob: bytes, at: int) -> bytes:
    return blob[:at] + bytes(32) + blob[at + 32:]


# (what is changed, the message line reached): the model file is magic (8 bytes), version
# (4), token (32), payload length (8), SHA-256 (32), payload; the data file is magic,
# version, token and the model file's SHA-256 (runtime/drivers/sample_cache.py's layout).
CORRUPTIONS = {
    "model file shorter than its header": (lambda m, d: (m[:20], d), "shorter than its"),
    "model magic": (lambda m, d: (_flip(m, 0), d), '"model cache: not a sample driver cache file'),
    "model token": (lambda m, d: (_retoken(m, 12), d), '"model cache: written for a different token"'),
    "model payload length": (lambda m, d: (m + b"x", d), "(truncated or extended)"),
    "model digest": (lambda m, d: (_flip(m, 60), d), '"model cache: digest mismatch (corrupted)"'),
    "data file length": (lambda m, d: (m, d + b"x"), 'f"data cache: {len(data_file)} bytes'),
    "data magic": (lambda m, d: (m, _flip(d, 0)), '"data cache: not a sample driver cache file'),
    "data token": (lambda m, d: (m, _retoken(d, 12)), '"data cache: written for a different token"'),
    "data digest": (lambda m, d: (m, _flip(d, 50)), '"data cache: does not belong to this model cache"'),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_a_corrupted_cache_is_refused_with_general_failure(case):
    """HAL 1.3 prepareModelFromCache: cache files that fail the driver's checks are
    GENERAL_FAILURE (VTS CompilationCachingTest's corruption cases), never a model."""
    model = to_hal_model(corpus_model("add"))
    m, d = _cache_pair(model)
    change, line = CORRUPTIONS[case]
    m, d = change(m, d)
    with reaches(CACHE, line), pytest.raises(HalError) as e:
        SampleDevice().prepare_model_from_cache(None, [io.BytesIO(m)], [io.BytesIO(d)], TOKEN)
    assert e.value.status == ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("model_cache, data_cache, token, line", [
    ((io.BytesIO(),), io.BytesIO(), TOKEN, '"cache files must be given as lists"'),
    ([io.BytesIO(), io.BytesIO()], [io.BytesIO()], TOKEN, 'return (f"{len(model_cache)} model and'),
    ([io.BytesIO()], [io.BytesIO()], TOKEN[:31], 'return f"the token must be'),
])
def test_cache_arguments_the_driver_did_not_ask_for(model_cache, data_cache, token, line):
    """HAL 1.2: prepareModelFromCache with a cache file count other than
    getNumberOfCacheFilesNeeded's (1 and 1 here) or a token not of 32 bytes is
    INVALID_ARGUMENT; prepareModel with them still prepares, writing no cache (VTS
    SaveToCacheInvalidNumCache)."""
    with reaches(CACHE, line, ("raise HalError(ErrorStatus.INVALID_ARGUMENT, f\"prepare_model_from_cache:", 0)), \
            pytest.raises(HalError) as e:
        SampleDevice().prepare_model_from_cache(None, list(model_cache), data_cache, token)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    model = to_hal_model(corpus_model("add"))
    with reaches(CACHE, ("if _arguments_ok(model_cache, data_cache, token):", 1)):
        assert SampleDevice().prepare_model(model, model_cache=model_cache, data_cache=data_cache, token=token)
    assert all(f.getvalue() == b"" for f in [*model_cache, *data_cache])


class _Huge(io.BytesIO):
    def seek(self, offset, whence=0):
        return 2**31 + 1 if whence == 2 else super().seek(offset, whence)


def test_cache_files_that_cannot_be_read_are_general_failure():
    """A cache file larger than the driver reads (2 GiB), one that fails to read, and a text
    file: GENERAL_FAILURE naming the file, nothing read past the check."""
    closed = io.BytesIO()
    closed.close()
    for model_file, line in ((_Huge(), 'raise ValueError(f"{size} bytes is more than'),
                             (closed, 'raise HalError(ErrorStatus.GENERAL_FAILURE, f"cannot read the {what}'),
                             (io.StringIO("text"), 'f"the {what} is not a binary file"')):
        with reaches(CACHE, line), pytest.raises(HalError) as e:
            SampleDevice().prepare_model_from_cache(None, [model_file], [io.BytesIO()], TOKEN)
        assert e.value.status == ErrorStatus.GENERAL_FAILURE and "model cache file" in e.value.message


def test_a_cache_that_cannot_be_written_never_fails_the_prepare():
    """HAL 1.2 prepareModel: saving to the cache is best effort; a file that refuses the write
    leaves the prepare successful (VTS SaveToCache_InvalidNumFd's principle)."""
    model = to_hal_model(corpus_model("add"))
    read_only = io.BufferedReader(io.BytesIO(b"old"))
    with reaches(CACHE, ("except (OSError, ValueError, AttributeError, TypeError):", 1)):
        prepared = SampleDevice().prepare_model(model, model_cache=[read_only], data_cache=[io.BytesIO()], token=TOKEN)
    assert prepared.model is model
