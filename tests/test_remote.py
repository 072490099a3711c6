"""Drivers out of process (runtime.remote): the generated gRPC code matches hal.proto, HAL
values survive the wire, the sample driver served by a host passes the CTS in every default
mode, front-end memories are shared rather than copied, and a driver process that aborts or
hangs is reported (DEAD_OBJECT, crash / hang records) while every other test runs and passes;
the fuzzer records a driver-process death as a crash finding. Expected outcomes are the
corpus's golden outputs (judged by the CTS harness) and the planted faults of
tests/remote_drivers.py."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from harness.runner import run_test_model
from harness.modes import applies, parse_modes
from harness.locations import DEFAULT_ROOTS
from harness.records import read_records
from runtime.loader import DriverNotFound, load_driver
from runtime.errors import HalError
from runtime.hal.memory import FileMemory, SharedMemory
from runtime.hal.types import (DataLocation, ExtensionNameAndPrefix, MemoryDomainToken, Model, Operand, Operation,
                               RequestArgument, Subgraph, SymmPerChannelQuantParams)
from runtime.nnapi import Device
from runtime.remote import wire
from runtime.remote.incidents import INCIDENTS
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.testing.test_model import iter_corpus
from runtime.types import ErrorStatus, OperandLifeTime as L, OperandType as T, OperationType as O
from tests.cts_run import ROOT

REMOTE = ROOT / "runtime" / "remote"


def first_models(n: int, pattern: str = ""):
    return [tm for tm in iter_corpus(DEFAULT_ROOTS) if pattern in tm.test_id][:n]


def test_generated_code_is_current(tmp_path):
    """hal_pb2*.py are what grpcio-tools makes of hal.proto today (regenerate with the command
    in the failure message)."""
    from grpc_tools import protoc
    (tmp_path / "runtime" / "remote").mkdir(parents=True)
    (tmp_path / "runtime" / "remote" / "hal.proto").write_bytes((REMOTE / "hal.proto").read_bytes())
    args = ["protoc", f"-I{tmp_path}", f"--python_out={tmp_path}", f"--grpc_python_out={tmp_path}",
            f"--pyi_out={tmp_path}", str(tmp_path / "runtime" / "remote" / "hal.proto")]
    assert protoc.main(args) == 0
    for name in ("hal_pb2.py", "hal_pb2_grpc.py", "hal_pb2.pyi"):
        assert (tmp_path / "runtime" / "remote" / name).read_bytes() == (REMOTE / name).read_bytes(), (
            f"{name} is stale: python -m grpc_tools.protoc -I . --python_out=. --grpc_python_out=. "
            f"--pyi_out=. runtime/remote/hal.proto")


def test_model_survives_the_wire_including_malformed_values():
    """Every HAL field round-trips, invalid codes (-1, unknown, extension) included, so the
    driver sees exactly the (possibly malformed) model the VTS built."""
    ops = [Operand(T.TENSOR_FLOAT32, [2, 0], 1, 0.0, 0, L.SUBGRAPH_INPUT),
           Operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [3, 1], 1, 0.0, 0, L.CONSTANT_REFERENCE,
                   DataLocation(0, 4, 3, 1), SymmPerChannelQuantParams((0.5, 0.25, 2.0), 0)),
           Operand(-1, [1 << 40], -5, float("inf"), -300, 99, DataLocation(-1, -2, -3)),
           Operand((7 << 16) | 3, [1], 0, 1.5, 2, L.CONSTANT_COPY, DataLocation(0, 0, 4), b"\x01\x02")]
    model = Model(Subgraph(ops, [Operation(O.ADD, [0, 1, 2], [3]), Operation(-1, [9], [])], [0], [3]),
                  [Subgraph(ops[:1], [], [0], [0])], b"\x00\x01\x02\x03", [SharedMemory(data=b"abcdefgh")], True,
                  [ExtensionNameAndPrefix("com.example.x", 7)])
    back = wire.model_from_wire(wire.pb.Model.FromString(wire.model_to_wire(model, None).SerializeToString()))
    assert bytes(back.pools[0].buffer) == b"abcdefgh"
    back.pools, model.pools = [], []
    assert back == model
    assert back.main.operands[0].type is T.TENSOR_FLOAT32 and back.main.operands[2].type == -1


def test_shared_pools_are_mapped_not_copied():
    """A front-end memory (memfd) travels as its descriptor, which the host maps: writes
    through the host's mapping are seen in the client's memory."""
    memory = FileMemory(data=b"\x00" * 64)
    fds = wire.FdList()
    message = wire.pool_to_wire(memory, fds)
    assert message.WhichOneof("kind") == "shared" and fds.fds == [memory.region()[0]]
    host_view = wire.pool_from_wire(message, fds.fds)
    host_view.buffer[10:14] = b"nnct"
    assert bytes(memory.buffer[10:14]) == b"nnct"
    assert wire.pool_to_wire(memory, None).WhichOneof("kind") == "data"
    assert wire.pool_to_wire(MemoryDomainToken(5), fds).token == 5
    assert wire.pool_to_wire(object(), fds).WhichOneof("kind") == "invalid"


@pytest.fixture(scope="module", params=["process", "grpc-endpoint"])
def remote_sample(request, tmp_path_factory):
    """The sample driver out of process: started by the link (local transport), or started
    apart and reached over gRPC (--driver-endpoint)."""
    if request.param == "process":
        device = load_driver("process:sample")
    else:
        address = f"unix:{tmp_path_factory.mktemp('grpc')}/hal.sock"
        host = subprocess.Popen([sys.executable, "-m", "runtime.remote.host", "--driver", "sample", "--listen",
                                 address], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        request.addfinalizer(host.kill)
        assert "serving nncts-sample" in host.stdout.readline()
        device = load_driver(f"endpoint:{address}")
    # memory is shared over the local transport (descriptors), never over gRPC (inline only)
    assert device.shared == (request.param == "process"), "the host could not map the client's memfd probe"
    return device


def test_sample_out_of_process_passes_every_default_mode(remote_sample):
    """The served sample driver against the corpus's golden outputs, on every execution path
    and memory kind (sync, async, burst, fenced, memory, device memory domains, dynamic and
    insufficient outputs, cache, signed coupling)."""
    device = Device(remote_sample)
    failures, passed = [], 0
    for tm in first_models(12, "V1_2/") + first_models(4, "V1_3/"):
        for mode in [m for m in parse_modes(["default"]) if applies(tm, m)]:
            outcome = run_test_model(tm, device, mode)
            if outcome.status == "failed":
                failures.append(f"{tm.test_id}@{mode.name}: {outcome.message}")
            passed += outcome.status == "passed"
    assert not failures, failures[:5]
    assert passed >= 100


def test_validation_errors_cross_the_wire(remote_sample):
    """A malformed model and a malformed request get the driver's INVALID_ARGUMENT."""
    tm = first_models(1, "V1_0/add")[0]
    model = to_hal_model(tm)
    model.main.operations[0].inputs[0] = 999
    with pytest.raises(HalError) as e:
        remote_sample.prepare_model(model)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    prepared = remote_sample.prepare_model(to_hal_model(tm))
    request = to_hal_request(tm)
    request.inputs[0] = RequestArgument(False, DataLocation(0, 0, 1 << 20))
    with pytest.raises(HalError) as e:
        prepared.execute_synchronously(request)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT


def test_outputs_of_inline_pools_come_back(remote_sample):
    """ADD of the corpus model: outputs written by the host land in the client's pools."""
    tm = first_models(1, "V1_0/add")[0]
    request = to_hal_request(tm)
    remote_sample.prepare_model(to_hal_model(tm)).execute_synchronously(request)
    out = tm.main.operands[tm.main.output_indexes[0]].data
    loc = request.outputs[0].location
    got = np.frombuffer(bytes(request.pools[loc.pool_index].buffer[loc.offset:loc.offset + loc.length]), out.dtype)
    np.testing.assert_allclose(got, out.ravel(), atol=1e-5)


def test_death_is_dead_object_then_a_new_process_serves():
    device = load_driver("process:tests.remote_drivers:abort_on_add")
    tm = first_models(1, "V1_0/add")[0]
    prepared = device.prepare_model(to_hal_model(tm))
    before = len(INCIDENTS)
    with pytest.raises(HalError) as e:
        prepared.execute_synchronously(to_hal_request(tm))
    assert e.value.status == ErrorStatus.DEAD_OBJECT and "SIGABRT" in e.value.message
    assert [i.kind for i in INCIDENTS[before:]] == ["crash"]
    with pytest.raises(HalError) as e:  # the old prepared model died with its process
        prepared.execute_synchronously(to_hal_request(tm))
    assert e.value.status == ErrorStatus.DEAD_OBJECT and "prepare the model again" in e.value.message
    relu = first_models(1, "V1_0/relu")[0]  # no ADD: the restarted process serves it
    outcome = run_test_model(relu, Device(device))
    assert outcome.status == "passed", outcome.message


def test_unknown_driver_out_of_process_is_driver_not_found():
    with pytest.raises(DriverNotFound, match="no driver named"):
        load_driver("process:no-such-driver")


def test_endpoint_started_by_someone_else(tmp_path, monkeypatch):
    """A host on a TCP port with mutual TLS (test certificates), reached through an
    ``endpoint:`` spec; its death is DEAD_OBJECT and a crash incident."""
    import runtime.remote.client
    from runtime.remote.tls import make_test_certs
    from tests.remote_hosts import host_tls_args, start_host
    certs = make_test_certs(tmp_path / "certs")
    host, port = start_host("--listen", "127.0.0.1:0", *host_tls_args(certs["server"]))
    try:
        monkeypatch.setattr(runtime.remote.client, "ENDPOINT_TLS", certs["client"])
        device = load_driver(f"endpoint:127.0.0.1:{port}")
        tm = first_models(1, "V1_0/relu")[0]
        assert run_test_model(tm, Device(device)).status == "passed"
        host.kill()
        host.wait()
        before = len(INCIDENTS)
        with pytest.raises(HalError) as e:
            device.prepare_model(to_hal_model(tm))
        assert e.value.status == ErrorStatus.DEAD_OBJECT
        assert [i.kind for i in INCIDENTS[before:]] == ["crash"]
    finally:
        host.kill()


def _cli(tmp_path, *args, env=None):
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--report-dir", str(report), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    records = read_records(report / "outcomes.jsonl") if (report / "outcomes.jsonl").exists() else []
    summary = json.loads((report / "summary.json").read_text()) if (report / "summary.json").exists() else {}
    return proc, records, summary, report


def test_cts_reports_each_crash_and_runs_everything_else(tmp_path):
    """A driver that aborts the process on TANH, run with --driver-process: every TANH test is
    a failed record tagged driver_incident=crash, every other test passes, the summary and
    report count the crashes."""
    proc, records, summary, report = _cli(tmp_path, "--driver", "tests.remote_drivers:abort_on_tanh",
                                          "--driver-process", "--mode", "sync", "-m", "TANH or RELU",
                                          "-k", "V1_0 or V1_1 or SPECS")
    tanh = [r for r in records if "TANH" in r["operations"]]
    other = [r for r in records if "TANH" not in r["operations"]]
    assert len(tanh) >= 3 and len(other) >= 5, proc.stdout[-2000:]
    assert all(r["outcome"] == "failed" and r.get("driver_incident") == "crash" and "DEAD_OBJECT" in r["message"]
               for r in tanh), [r for r in tanh if r.get("driver_incident") != "crash"][:2]
    assert all(r["outcome"] == "passed" for r in other), [r for r in other if r["outcome"] != "passed"][:2]
    assert summary["totals"]["driver:crash"] == len(tanh)
    assert f"driver process: {len(tanh)} test(s) with a crash" in proc.stdout
    assert "driver crash" in (report / "index.html").read_text()


def test_cts_reports_each_hang_and_runs_everything_else(tmp_path):
    proc, records, summary, _ = _cli(tmp_path, "--driver", "tests.remote_drivers:hang_on_tanh", "--driver-process",
                                     "--driver-timeout", "2", "--mode", "sync,async", "-m", "TANH or RELU",
                                     "-k", "V1_0")
    tanh = [r for r in records if "TANH" in r["operations"]]
    other = [r for r in records if "TANH" not in r["operations"]]
    assert tanh and len(other) >= 2, proc.stdout[-2000:]
    assert {r["mode"] for r in tanh} == {"sync", "async"}
    assert all(r["outcome"] == "failed" and r.get("driver_incident") == "hang" for r in tanh), tanh[:2]
    assert all(r["outcome"] == "passed" for r in other)
    assert summary["totals"]["driver:hang"] == len(tanh)


def test_unknown_driver_with_driver_process_is_one_line_exit_2(tmp_path):
    proc, records, _, _ = _cli(tmp_path, "--driver", "no-such-driver", "--driver-process")
    assert proc.returncode == 2 and not records
    assert proc.stderr.count("\n") == 1 and "no driver named 'no-such-driver'" in proc.stderr


def test_fuzzer_records_a_driver_process_death_as_a_crash(tmp_path):
    from fuzz.decoder import encode
    from fuzz.findings import FindingRecorder
    from fuzz.target import FuzzTarget
    tm = first_models(1, "V1_0/add")[0]
    target = FuzzTarget("process:tests.remote_drivers:abort_on_add", FindingRecorder(tmp_path, "abort_on_add"),
                        paths=("hal",))
    findings = target.run(encode(tm, expected_outputs=False))
    crashes = [f for f in findings if f.phase.startswith("driver-process:")]
    assert [f.kind for f in crashes] == ["crash"], findings
    assert "SIGABRT" in crashes[0].message and "execute_synchronously" in crashes[0].phase


def test_local_transport_survives_garbage_and_rejects_cut_frames():
    """The host answers a malformed frame with INVALID_ARGUMENT, drops the connection and
    keeps serving; a frame cut short is an error, not a hang."""
    import io
    import socket
    from runtime.remote.frames import read_frame
    device = load_driver("process:sample")
    path = device.link.channel.path
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.sendall(b"\x05garbage-that-is-not-a-frame")
    sock.settimeout(10)
    rfile = sock.makefile("rb")
    reply = wire.pb.Ack.FromString(read_frame(rfile).body)
    assert reply.status.code == ErrorStatus.INVALID_ARGUMENT and "not a Frame" in reply.status.message
    assert read_frame(rfile) is None  # dropped
    rfile.close()
    sock.close()
    assert device.get_supported_operations(to_hal_model(first_models(1, "V1_0/relu")[0])) == [True]
    with pytest.raises(EOFError):
        read_frame(io.BytesIO(b"\x10abc"))
    assert read_frame(io.BytesIO(b"")) is None
