"""HAL contracts (issue 24 item 4): constant pools laid out as AOSP's runtime lays them out
(values over 128 bytes packed into one shared pool at aligned, non-zero offsets, also in
referenced subgraphs), and a driver reading every CONSTANT_REFERENCE at offset 0 caught by
the CTS; fenced executions chained through memory (vts/test_device_fenced_chain.py) catch a
driver ignoring its dependencies; loop timeouts and deadlines end an endless loop on every
path, and a deadline a long loop-free model, which a driver ignoring the deadline fails
(vts/test_device_loop_timeout.py, tests/broken_deadline_drivers.py). Offsets are worked out
by hand in comments."""
import subprocess
import sys

import numpy as np
import pytest

from harness.records import read_records

from runtime.executor import execute
from runtime.hal.memory import SharedMemory
from runtime.hal.types import DataLocation, Request, RequestArgument
from runtime.nnapi import Memory, Model
from runtime.nnapi.model import POOL_GUARD, pack_constants, value_alignment
from runtime.testing.frontend import build_model
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import iter_corpus
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as Op, operand_dtype
from tests.broken_drivers import ReadsConstantsAtOffsetZero
from tests.cts_run import ROOT, run_cts

F32 = T.TENSOR_FLOAT32
CORPUS = "cts/corpus"


def test_value_alignment_is_aosps():
    # AOSP getAlignmentForLength: 1 below 2 bytes, 2 below 4, else 4
    assert [value_alignment(n) for n in (1, 2, 3, 4, 5, 129, 4096)] == [1, 2, 2, 4, 4, 4, 4]


def test_pack_constants_offsets_by_hand():
    pool, offsets = pack_constants([b"\x01", b"\x02" * 3, b"\x03" * 200, b"\x04" * 5])
    # guard 64; 1 byte at 64 (end 65); 3 bytes at 66 (2-aligned, end 69); 200 bytes at 72
    # (4-aligned, end 272); 5 bytes at 272 (end 277)
    assert POOL_GUARD == 64
    assert offsets == [64, 66, 72, 272]
    assert len(pool) == 277
    assert pool[64:65] == b"\x01" and pool[66:69] == b"\x02" * 3 and pool[72:272] == b"\x03" * 200
    assert pool[272:] == b"\x04" * 5
    assert set(pool[:64]) == {0x7F} and pool[65] == 0x7F  # guard and padding bytes
    assert pack_constants([]) == (b"", [])


def _two_large_adds(memory_value=None):
    """y = (x + c1) + c2 with x, y TENSOR_FLOAT32 [40] and c1, c2 constants of 160 bytes
    (over ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES); c1 = 0..39, c2 = 100..139.
    With ``memory_value`` (Memory, offset) c0 = 1000 (the constant of a third ADD, in front)
    comes from a client memory."""
    m = Model()
    x = m.add_operand(F32, [40])
    cur = x
    consts = [np.arange(40, dtype=np.float32), np.arange(100, 140, dtype=np.float32)]
    if memory_value is not None:
        consts.insert(0, None)
    for k, value in enumerate(consts):
        c, act, y = m.add_operand(F32, [40]), m.add_operand(T.INT32), m.add_operand(F32, [40])
        if value is None:
            m.set_operand_value_from_memory(c, memory_value[0], memory_value[1], 160)
        else:
            m.set_operand_value(c, value)
        m.set_operand_value(act, np.int32(0))
        m.add_operation(Op.ADD, [cur, c, act], [y])
        cur = y
    m.identify_inputs_and_outputs([x], [cur])
    m.finish()
    return m.to_hal()


def _request(x: np.ndarray) -> Request:
    pool = SharedMemory(data=x.astype(np.float32).tobytes() + bytes(x.size * 4))
    n = x.size * 4
    return Request([RequestArgument(False, DataLocation(0, 0, n))],
                   [RequestArgument(False, DataLocation(0, n, n))], [pool])


def _output(request: Request) -> np.ndarray:
    loc = request.outputs[0].location
    return np.frombuffer(bytes(request.pools[0].buffer[loc.offset:loc.offset + loc.length]), np.float32)


def test_front_end_packs_large_values_into_one_pool_at_non_zero_offsets():
    hal = _two_large_adds()
    refs = [o for o in hal.main.operands if o.lifetime == L.CONSTANT_REFERENCE]
    # both 160-byte constants in pool 0: at the guard (64), then 64 + 160 = 224
    assert [(o.location.pool_index, o.location.offset, o.location.length) for o in refs] == \
        [(0, 64, 160), (0, 224, 160)]
    smalls = [o for o in hal.main.operands if o.lifetime == L.CONSTANT_COPY]
    assert len(smalls) == 2  # the two INT32 activations stay CONSTANT_COPY
    x = np.full(40, 0.5, np.float32)
    request = _request(x)
    execute(hal, request)
    # y[i] = 0.5 + i + (100 + i) = 100.5 + 2 i
    assert _output(request).tolist() == [100.5 + 2 * i for i in range(40)]


def test_large_value_pool_comes_after_client_memories():
    # AOSP finish(): the large-value memory is added after the memories the client gave
    memory = Memory.from_bytes(b"\0" * 32 + np.full(40, 1000, np.float32).tobytes())
    hal = _two_large_adds((memory, 32))
    refs = [o.location for o in hal.main.operands if o.lifetime == L.CONSTANT_REFERENCE]
    assert [(r.pool_index, r.offset) for r in refs] == [(0, 32), (1, 64), (1, 224)]
    request = _request(np.zeros(40, np.float32))
    execute(hal, request)
    # y[i] = 0 + 1000 + i + 100 + i = 1100 + 2 i
    assert _output(request).tolist() == [1100 + 2 * i for i in range(40)]


def test_offset_zero_reader_gets_a_wrong_answer():
    hal = _two_large_adds()
    request = _request(np.zeros(40, np.float32))
    ReadsConstantsAtOffsetZero().run(hal, request)
    # c1 and c2 both read at offset 0 of the pool: 16 guard floats (64 bytes of 0x7F, each
    # 0x7F7F7F7F = 3.39e38) then c1[0..23]; 0 + 3.39e38 + 3.39e38 overflows float32 to inf,
    # then 0 + j + j = 2 j; the right answer is 100 + 2 i
    assert _output(request).tolist() == [np.inf] * 16 + [2.0 * j for j in range(24)]


def _constant_refs(model):
    """(subgraph index, operand) of every CONSTANT_REFERENCE operand of a HAL model."""
    return [(k, o) for k, sg in enumerate([model.main, *model.referenced]) for o in sg.operands
            if o.lifetime == L.CONSTANT_REFERENCE]


def _has_pooled_constant(tm) -> bool:
    return any(o.lifetime == L.CONSTANT_REFERENCE or
               (o.lifetime == L.CONSTANT_COPY and o.data is not None and
                o.data.size * operand_dtype(o.type).itemsize > 128)
               for sg in (tm.main, *tm.referenced) for o in sg.operands if o.data is not None)


@pytest.fixture(scope="module")
def pooled_models():
    return [tm for tm in iter_corpus([CORPUS]) if _has_pooled_constant(tm) and not tm.expect_failure]


def test_every_corpus_constant_reference_is_at_an_aligned_non_zero_offset(pooled_models):
    # the corpus has 166 such models (162 with CONSTANT_REFERENCE operands, 4 with
    # CONSTANT_COPY values over 128 bytes), 12 with constants in referenced subgraphs
    assert len(pooled_models) >= 150
    in_referenced = 0
    for tm in pooled_models:
        has_ref = any(o.lifetime == L.CONSTANT_REFERENCE for sg in (tm.main, *tm.referenced) for o in sg.operands)
        # the HAL conversion (VTS) keeps CONSTANT_COPY of any size, as AOSP's VTS does
        for model, must in ((build_model(tm).to_hal(), True), (to_hal_model(tm), has_ref)):
            refs = _constant_refs(model)
            assert refs or not must, tm.name
            for k, o in refs:
                loc = o.location
                assert loc.offset >= POOL_GUARD and loc.offset % value_alignment(loc.length) == 0, tm.name
                pool = model.pools[loc.pool_index]
                assert loc.offset + loc.length <= len(pool.buffer), tm.name
            in_referenced += any(k > 0 for k, _ in refs)
    assert in_referenced >= 12


def test_cts_catches_the_offset_zero_reader(tmp_path):
    # fully_connected_float_2: weights of 8 x 24 float32 (768 bytes) set by value (the
    # front end's pool); if_constant_reference_true: CONSTANT_REFERENCE operands in main
    # and both branches (the harness's memories); the *_all_tensors_as_inputs variants have
    # no constant and must pass
    selection = ["-k", "fully_connected_float_2 or if_constant_reference_true"]
    code, records, out = run_cts(tmp_path, "--driver", "tests.broken_drivers:ReadsConstantsAtOffsetZero", *selection)
    assert code == 1, out[-2000:]
    outcome = {i: r["outcome"] for i, r in records.items()}
    assert outcome["V1_0/fully_connected_float_2/fully_connected_float_2"] == "failed"
    assert outcome["V1_3/if_constant/if_constant_reference_true"] == "failed"
    assert outcome["V1_0/fully_connected_float_2/fully_connected_float_2_all_tensors_as_inputs"] == "passed"
    code, records, out = run_cts(tmp_path / "sample", *selection)
    assert code == 0 and {r["outcome"] for r in records.values()} == {"passed"}, out[-2000:]


def _vts_file(tmp_path, path: str, *args: str) -> tuple[int, dict]:
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "pytest", path, "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--nncts-report", str(report), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    outcomes = {r["id"].split("::")[-1]: r["outcome"] for r in read_records(report / "outcomes.jsonl")}
    return proc.returncode, outcomes


def test_fenced_chain_catches_a_driver_ignoring_its_dependencies(tmp_path):
    code, outcomes = _vts_file(tmp_path / "sample", "vts/test_device_fenced_chain.py")
    assert code == 0 and set(outcomes.values()) == {"passed"} and len(outcomes) == 2, outcomes
    code, outcomes = _vts_file(tmp_path / "broken", "vts/test_device_fenced_chain.py",
                               "--driver", "tests.broken_drivers:IgnoresFenceDependencies")
    assert code == 1 and set(outcomes.values()) == {"failed"} and len(outcomes) == 2, outcomes


def test_loop_timeouts_end_an_endless_loop_on_every_path(tmp_path):
    # 5 paths x 1 ms and 100 ms loop timeouts, and 5 paths x a 100 ms deadline
    code, outcomes = _vts_file(tmp_path, "vts/test_device_loop_timeout.py", "-k", "loop1ms or loop100ms or deadline100ms")
    assert code == 0 and set(outcomes.values()) == {"passed"} and len(outcomes) == 15, outcomes


def test_a_driver_ignoring_the_deadline_fails_the_long_model(tmp_path):
    # 400 chained ADDs on 2^18 floats (0.5-2 s) under a 100 ms deadline; the sample driver
    # passes this test on every path where CI runs vts/ itself
    code, outcomes = _vts_file(tmp_path, "vts/test_device_loop_timeout.py", "-k", "long_model and sync and not async",
                               "--driver", "tests.broken_deadline_drivers:IgnoresExecutionDeadline")
    assert code == 1 and outcomes == {"sync": "failed"}, outcomes
