"""The fuzzer (fuzz/): the byte decoder is total and yields corpus-schema models, the
encoder round-trips the CTS corpus, a short atheris run on the sample driver finds nothing,
and a driver with lax quantization checks is caught and its finding replays in the CTS."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fuzz.decoder import Rejected, decode, encode, model_difference
from fuzz.findings import write_spec
from runtime.errors import HalError, NnapiError
from runtime.hal.validate import validate_model
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import iter_corpus, load_spec
from runtime.types import (OperandLifeTime, OperandType, OperationType, ResultCode, is_tensor_type,
                           operand_dtype)
from tests.cts_run import run_cts

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "cts" / "corpus"
L = OperandLifeTime


def _assert_schema(tm) -> None:
    """``tm`` obeys the corpus schema (cts/corpus/README.md) and survives a JSON round trip."""
    sg = tm.main
    uses = [0] * len(sg.operands)
    for op in sg.operations:
        for i in op.inputs:
            if 0 <= i < len(uses):
                uses[i] += 1
    for i, o in enumerate(sg.operands):
        assert isinstance(o.type, OperandType) and isinstance(o.lifetime, OperandLifeTime)
        assert all(isinstance(d, int) and 0 <= d <= 0xFFFFFFFF for d in o.dimensions)
        if o.lifetime in (L.TEMPORARY_VARIABLE, L.NO_VALUE):
            assert o.data is None
        if o.lifetime == L.SUBGRAPH:
            assert o.data is not None and o.data.size == 1
        if o.data is not None:
            assert o.data.size > 0 and o.data.dtype == operand_dtype(o.type)
            if (o.dimensions or not is_tensor_type(o.type)) and 0 not in o.dimensions:
                assert o.data.shape == tuple(o.dimensions)
        if o.channel_quant is not None:
            assert o.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
    for sub in tm.referenced:  # values flow in from IF / WHILE: no data on inputs and outputs
        for o in sub.operands:
            if o.lifetime in (L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT, L.TEMPORARY_VARIABLE, L.NO_VALUE):
                assert o.data is None
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.json.gz"
        write_spec(path, tm)
        [back] = load_spec(path)
    assert model_difference(tm, back) is None


def test_empty_input_is_the_only_rejection():
    with pytest.raises(Rejected):
        decode(b"")
    for data in (b"\0", b"\1", b"\xff" * 7, bytes(range(256))):
        _assert_schema(decode(data).model)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=1, max_size=600))
def test_any_bytes_decode_to_a_schema_model(data):
    _assert_schema(decode(data).model)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=1, max_size=400))
def test_generated_mode_decodes_to_a_schema_model(data):
    case = decode(bytes([data[0] | 1]) + data[1:])  # header bit 0: generated mode
    assert case.mode == "generated" and case.model.main.operations
    _assert_schema(case.model)


def test_generated_mode_reaches_every_table_operation():
    """Enumeration over the operation table: the generated-mode input whose decision bytes
    name operation k and signature s (the seeds of ``--make-seeds``) decodes, for some of 12
    tails, to a model holding that operation; for every operation some of them pass the
    reference validator; IF and WHILE come with valid referenced subgraphs, and per-channel
    signatures with valid TENSOR_QUANT8_SYMM_PER_CHANNEL operands (channel_quant set)."""
    import random
    from runtime import ops
    table = sorted(ops.REGISTRY)
    assert len(table) >= 95
    reached, valid, per_channel = set(), set(), set()
    for k, op in enumerate(table):
        for s, sig in enumerate(ops.REGISTRY[op].signatures):
            pc_sig = any(a.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL for a in sig.inputs)
            for j in range(12):
                tail = random.Random(f"{op.name}/{s}/{j}").randbytes(200)
                tm = decode(bytes([0x01, 0x00, k, s]) + tail).model  # hostility 0, one operation
                if op not in {o.type for o in tm.main.operations}:
                    continue
                reached.add((op, s))
                try:
                    validate_model(to_hal_model(tm))
                except HalError:
                    continue
                valid.add(op)
                if op in (OperationType.IF, OperationType.WHILE):
                    assert tm.referenced and all(sub.operations for sub in tm.referenced)
                    _assert_schema(tm)
                if pc_sig and any(o.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL and o.channel_quant
                                  for o in tm.main.operands):
                    per_channel.add((op, s))
    missing = [f"{op.name} signature {s}" for op in table for s in range(len(ops.REGISTRY[op].signatures))
               if (op, s) not in reached]
    assert not missing, missing
    assert not [op.name for op in table if op not in valid]
    pc_sigs = {(op, s) for op in table for s, sig in enumerate(ops.REGISTRY[op].signatures)
               if any(a.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL for a in sig.inputs)}
    assert pc_sigs and pc_sigs <= per_channel, sorted((op.name, s) for op, s in pc_sigs - per_channel)


def test_encoder_round_trips_control_flow_models():
    """Corpus models with referenced subgraphs (IF / WHILE, FL4) survive encode/decode."""
    models = [tm for tm in iter_corpus([CORPUS / "V1_3"]) if tm.referenced]
    assert len(models) > 100
    for tm in models:
        back = decode(encode(tm)).model
        assert model_difference(tm, back) is None, tm.name
        assert len(back.referenced) == len(tm.referenced)
        _assert_schema(back)


def test_encoder_round_trips_the_fl1_fl2_corpus():
    models = list(iter_corpus([CORPUS / "V1_0", CORPUS / "V1_1"]))
    assert len(models) == 807
    for tm in models:
        assert model_difference(tm, decode(encode(tm)).model) is None, tm.name
        seed = decode(encode(tm, expected_outputs=False, max_raw_bytes=64)).model
        assert model_difference(tm, seed, data=False) is None, tm.name
        for i in seed.main.output_indexes:
            assert seed.main.operands[i].data is None
        for a, b in zip(tm.main.operands, seed.main.operands):
            if a.data is not None and a.lifetime != L.SUBGRAPH_OUTPUT:
                assert b.data is not None and b.data.shape == a.data.shape


#: The fuzz runs below start from every SEED_STRIDE-th seed (sorted by name), so a short run
#: stays short now that the seeds hold the whole corpus and every table signature.
SEED_STRIDE = 8


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    path = tmp_path_factory.mktemp("seeds")
    subprocess.run([sys.executable, "-m", "fuzz", "--make-seeds", str(path)], cwd=ROOT, check=True,
                   capture_output=True, timeout=120)
    files = sorted(path.iterdir())
    assert len([f for f in files if f.name.startswith("cts_")]) >= 7000  # the whole corpus
    for k, f in enumerate(files):
        if k % SEED_STRIDE:
            f.unlink()
    return path


def _fuzz(tmp_path: Path, seeds: Path, driver: str, runs: int,
          target: str = "full") -> tuple[subprocess.CompletedProcess, Path]:
    findings = tmp_path / "findings"
    proc = subprocess.run([sys.executable, "-m", "fuzz", "--driver", driver, "--findings", str(findings),
                           "--target", target, "--seeds", str(seeds), f"-runs={runs}", "-seed=1", "-timeout=60"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    return proc, findings


def test_short_run_on_the_sample_driver_finds_nothing(tmp_path, seeds):
    runs = len(list(seeds.iterdir())) + 1000  # every seed once, then 1000 mutated inputs
    proc, findings = _fuzz(tmp_path, seeds, "sample", runs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"#{runs}\tDONE" in proc.stderr and "cov:" in proc.stderr
    assert f"stat::number_of_executed_units: {runs}" in proc.stderr
    assert not list(findings.glob("V_FUZZ/*.json.gz")) and not list(findings.glob("inputs/*"))
    assert "0 new finding(s)" in proc.stderr


def test_validation_target_short_run_finds_nothing(tmp_path, seeds):
    runs = len(list(seeds.iterdir())) + 3000  # every seed once, then 3000 mutated inputs
    proc, findings = _fuzz(tmp_path, seeds, "sample", runs, "validation")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"#{runs}\tDONE" in proc.stderr and "cov:" in proc.stderr
    assert not list(findings.glob("V_FUZZ/*.json.gz")) and not list(findings.glob("inputs/*"))


def test_validation_target_catches_lax_quantization_checks(tmp_path, seeds):
    proc, findings = _fuzz(tmp_path, seeds, "tests.broken_drivers:LaxScaleDriver", 1300, "validation")
    assert proc.returncode == 1, proc.stderr[-3000:]
    files = sorted((findings / "V_FUZZ").glob("differential_*.json.gz"))
    assert files and "driver accepted an invalid model (hal:" in proc.stderr, proc.stderr[-3000:]


def test_validation_target_does_not_execute(monkeypatch):
    """The validation target stops after prepare_model: no request, execution or front end."""
    from fuzz.findings import FindingRecorder
    from fuzz.target import FuzzTarget
    from runtime.drivers.sample import SamplePreparedModel
    from runtime.nnapi import Compilation
    tm = next(iter_corpus([CORPUS / "V1_0"]))

    def boom(*args, **kwargs):
        raise AssertionError("executed")
    monkeypatch.setattr(SamplePreparedModel, "execute_synchronously", boom)
    monkeypatch.setattr(Compilation, "create_for_devices", boom)
    target = FuzzTarget("sample", FindingRecorder(None, "sample", quiet=True), target="validation")
    assert target.run(encode(tm, expected_outputs=False)) == []
    full = FuzzTarget("sample", FindingRecorder(None, "sample", quiet=True))
    assert [f.kind for f in full.run(encode(tm, expected_outputs=False))] == ["crash", "crash"]
    with pytest.raises(ValueError, match="unknown fuzz target"):
        FuzzTarget("sample", FindingRecorder(None, "sample", quiet=True), target="nope")


def test_every_execution_bounds_its_loops_by_the_fuzz_loop_timeout(monkeypatch):
    """Both paths pass LOOP_TIMEOUT_NS to the driver, so an endless WHILE of the corpus ends
    in a documented MISSED_DEADLINE (no finding) after 2 x 100 ms, not 2 x 2 s."""
    from fuzz.findings import FindingRecorder
    from fuzz.target import LOOP_TIMEOUT_NS, FuzzTarget
    from runtime.drivers.sample import SamplePreparedModel
    [tm] = [m for m in iter_corpus([CORPUS / "V1_3"]) if m.name == "while_infinite_loop"]
    seen = []
    execute = SamplePreparedModel.execute_synchronously

    def spy(self, request, measure=None, deadline_ns=None, loop_timeout_duration_ns=None):
        seen.append(loop_timeout_duration_ns)
        return execute(self, request, measure, deadline_ns, loop_timeout_duration_ns)
    monkeypatch.setattr(SamplePreparedModel, "execute_synchronously", spy)
    target = FuzzTarget("sample", FindingRecorder(None, "sample", quiet=True))
    start = time.monotonic()
    assert target.run(encode(tm, expected_outputs=False)) == []
    assert seen == [LOOP_TIMEOUT_NS, LOOP_TIMEOUT_NS]  # the HAL path, then the front end
    assert time.monotonic() - start < 3.5  # the 2 s default on both paths takes 4 s


def test_full_target_instruments_the_runtime_but_its_plumbing():
    """The full target's exclusions are listed without importing the runtime (the import hook
    must see it first) and name real modules."""
    code = ("import sys; from fuzz.__main__ import full_target_exclusions as f; "
            "mods = lambda: sorted(m for m in sys.modules if m.startswith('runtime.')); "
            "before = mods(); x = f(); print(before == mods(), before); print(x)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=60).stdout.splitlines()
    assert out[0].startswith("True") and "runtime.hal" not in out[0] and "runtime.ops" not in out[0], out[0]
    excluded = eval(out[1])  # noqa: S307 - our own output
    assert {"runtime.testing.frontend", "runtime.ops.generation", "runtime.types", "runtime.ops.base"} <= set(excluded)
    assert not any(m.startswith(("runtime.hal.validate", "runtime.executor", "runtime.nnapi")) for m in excluded)
    import importlib.util
    assert all(importlib.util.find_spec(m) is not None for m in excluded)


def test_lax_quantization_checks_are_caught_and_replay_in_the_cts(tmp_path, seeds):
    proc, findings = _fuzz(tmp_path, seeds, "tests.broken_drivers:LaxScaleDriver", 1300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    files = sorted((findings / "V_FUZZ").glob("differential_*.json.gz"))
    assert files, proc.stderr[-3000:]
    assert "driver accepted an invalid model" in proc.stderr
    tm = load_spec(files[0])[0]
    assert tm.version == "V_FUZZ" and tm.expect_failure and tm.min_supported_version == "V1_0"
    assert (findings / "inputs" / f"{files[0].name[:-len('.json.gz')]}.bin").exists()
    with pytest.raises(HalError, match="scale|zeroPoint"):  # the parameters the driver let through
        validate_model(to_hal_model(tm))
    code, records, out = run_cts(tmp_path, "--corpus", str(findings))
    assert code == 0, out[-3000:]
    assert len(records) >= len(files)
    # invalid models: the sample driver rejects them, or the front end does before the driver
    # sees them (runtime_rejected: not run, never failed)
    assert all(r["outcome"] == "passed" or r["skip_kind"] == "runtime_rejected" for r in records.values()), out[-3000:]
    replay = subprocess.run([sys.executable, "-m", "fuzz", "--driver", "tests.broken_drivers:LaxScaleDriver",
                             "--replay", str(findings)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 1 and "still open" in replay.stdout


# --- regressions: the runtime bugs the fuzzer found (fixed in runtime/) --------------------

def _compute(build, feeds, out_shape, out_type=OperandType.TENSOR_FLOAT32):
    """Finish the front-end model ``build(model) -> (inputs, outputs)``, run it on the sample
    driver with ``feeds`` (None: omitted) and return the first output (or raise NnapiError)."""
    from runtime.nnapi import Compilation, Execution, Model, get_devices
    from runtime.types import operand_dtype
    model = Model()
    ins, outs = build(model)
    model.identify_inputs_and_outputs(ins, outs)
    model.finish()
    compilation = Compilation.create_for_devices(model, get_devices(["sample"]))
    compilation.finish()
    execution = Execution(compilation)
    for j, value in enumerate(feeds):
        execution.set_input(j, value)
    out = np.zeros(out_shape, operand_dtype(out_type))
    execution.set_output(0, out)
    execution.compute()
    return out


def _scalar(model, value, t=OperandType.INT32):
    i = model.add_operand(t)
    model.set_operand_value(i, np.asarray(value))
    return i


def test_an_omitted_required_input_fails_cleanly():
    # was: the RELU kernel crashed on a None value ("reference kernel raised AttributeError")
    def build(m):
        x, y = m.add_operand(OperandType.TENSOR_FLOAT32, [2]), m.add_operand(OperandType.TENSOR_FLOAT32, [2])
        m.add_operation(OperationType.RELU, [x], [y])
        return [x], [y]
    with pytest.raises(NnapiError) as e:
        _compute(build, [None], [2])
    assert e.value.code == ResultCode.OP_FAILED
    assert "operation 0 (RELU): input 0 (operand 0) has no value, but it is not an optional input" in str(e.value)


def test_an_output_past_2_31_bytes_is_refused_before_allocation():
    # was: PAD by 2^30 with unknown output dimensions allocated 2 GiB (39 s, near OOM)
    def build(m):
        x = m.add_operand(OperandType.TENSOR_FLOAT32, [2, 2])
        pads = m.add_operand(OperandType.TENSOR_INT32, [2, 2])
        m.set_operand_value(pads, np.array([[0, 2**30], [2, 1]], np.int32))
        y = m.add_operand(OperandType.TENSOR_FLOAT32, [0, 0])
        m.add_operation(OperationType.PAD, [x, pads], [y])
        return [x], [y]
    started = time.monotonic()
    with pytest.raises(NnapiError, match=r"operation 0 \(PAD\): output 0 \(operand 2\) would have shape "
                                         r"\[1073741826, 5\], 21474836520 bytes; a tensor may hold at most"):
        _compute(build, [np.ones((2, 2), np.float32)], [4])
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("op,expected", [(OperationType.AVERAGE_POOL_2D, 2.5), (OperationType.MAX_POOL_2D, 4.0),
                                         (OperationType.L2_POOL_2D, np.sqrt(7.5))])
def test_pooling_with_a_hostile_filter_size_is_computed_on_the_input_only(op, expected):
    # was: a 2^31 - 8 wide filter with SAME padding padded the input to 432 GiB (MemoryError)
    def build(m):
        x = m.add_operand(OperandType.TENSOR_FLOAT32, [1, 2, 2, 1])
        args = [_scalar(m, v) for v in (1, 1, 1, 2**31 - 8, 2**31 - 8, 0)]  # SAME, strides 1, filter, NONE
        y = m.add_operand(OperandType.TENSOR_FLOAT32, [1, 2, 2, 1])
        m.add_operation(op, [x, *args], [y])
        return [x], [y]
    out = _compute(build, [np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2, 1)], [1, 2, 2, 1])
    assert np.allclose(out, expected)  # every window covers the whole 2x2 input


def test_a_convolution_past_the_work_bound_fails_cleanly():
    def build(m):
        x = m.add_operand(OperandType.TENSOR_FLOAT32, [1, 64, 64, 1])
        f = m.add_operand(OperandType.TENSOR_FLOAT32, [1, 128, 128, 1])
        m.set_operand_value(f, np.ones((1, 128, 128, 1), np.float32))
        b = m.add_operand(OperandType.TENSOR_FLOAT32, [1])
        m.set_operand_value(b, np.zeros(1, np.float32))
        # explicit padding 127 on every side: 191 x 191 outputs of 128 x 128 windows
        args = [_scalar(m, v) for v in (127, 127, 127, 127, 1, 1, 0)]
        y = m.add_operand(OperandType.TENSOR_FLOAT32, [1, 0, 0, 1])
        m.add_operation(OperationType.CONV_2D, [x, f, b, *args], [y])
        return [x], [y]
    with pytest.raises(NnapiError, match=r"operation 0 \(CONV_2D\): needs 597704704 multiply-adds; the "
                                         r"reference kernel computes at most 268435456"):
        _compute(build, [np.ones((1, 64, 64, 1), np.float32)], [1, 191, 191, 1])


def test_lsh_projection_past_the_work_bound_fails_cleanly():
    def build(m):
        hsh = m.add_operand(OperandType.TENSOR_FLOAT32, [1024, 32])
        m.set_operand_value(hsh, np.linspace(-1, 1, 1024 * 32, dtype=np.float32).reshape(1024, 32))
        x = m.add_operand(OperandType.TENSOR_INT32, [4096, 4])
        w = m.add_operand(OperandType.TENSOR_FLOAT32, [4096])
        m.set_operand_value(w, None)
        y = m.add_operand(OperandType.TENSOR_INT32, [1024 * 32])
        m.add_operation(OperationType.LSH_PROJECTION, [hsh, x, w, _scalar(m, 2)], [y])
        return [x], [y]
    started = time.monotonic()
    with pytest.raises(NnapiError, match=r"operation 0 \(LSH_PROJECTION\): hashes 32768 seeds over 4096 "
                                         r"input rows .*the reference kernel hashes at most 524288"):
        _compute(build, [np.ones((4096, 4), np.int32)], [1024 * 32], OperandType.TENSOR_INT32)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("module", ["fuzz", "fuzz.host_target"])
def test_an_unknown_double_dash_option_is_one_line_exit_2(tmp_path, module):
    """libFuzzer flags take one dash, so ``--bogus`` is a usage error, not a flag handed to
    libFuzzer (on 6eac2af ``python -m fuzz --bogus`` started fuzzing, unbounded)."""
    proc = subprocess.run([sys.executable, "-m", module, "--bogus"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"python -m {module}: error: unrecognized arguments: --bogus "
                                        f"(libFuzzer flags take one dash: -runs=N)"]
    assert not (tmp_path / "fuzz-findings").exists()
