"""An endpoint only its owner can use (runtime.remote.access, runtime.remote.tls): a driver host
on TCP serves only clients with a certificate from its CA (mutual TLS), or, without TLS, only
on loopback when told so; Unix sockets live in private directories with mode 0600; messages
over the size bound are refused while the host goes on answering. Expected outcomes: the
host's exit code and its one line, gRPC refusing calls, the CTS passing through an mTLS
endpoint (golden outputs of the corpus), file modes."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import grpc
import pytest

import runtime.remote.client
from harness.locations import DEFAULT_ROOTS
from runtime.loader import load_driver
from runtime.errors import HalError
from runtime.remote import hal_pb2_grpc
from runtime.remote.access import address_host, is_loopback
from runtime.remote.host import CHANNEL_OPTIONS, DeviceServicer, serve
from runtime.remote.limits import MAX_MESSAGE_BYTES
from runtime.remote.tls import TlsFiles, make_test_certs
from runtime.remote.wire import pb
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import iter_corpus
from runtime.types import ErrorStatus
from tests.cts_run import ROOT
from tests.remote_hosts import client_tls_args, host_tls_args, start_host


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """Test certificates of one CA ({"server", "client"}) and of another ({"other_server",
    "other_client"})."""
    ours = make_test_certs(tmp_path_factory.mktemp("ca"))
    theirs = make_test_certs(tmp_path_factory.mktemp("other-ca"), ca_name="another CA")
    return {**ours, "other_server": theirs["server"], "other_client": theirs["client"]}


@pytest.fixture(scope="module")
def tls_host(certs):
    """The sample driver served on a loopback TCP port with mutual TLS: (process, port)."""
    host, port = start_host("--listen", "127.0.0.1:0", *host_tls_args(certs["server"]))
    yield host, port
    host.kill()
    host.wait()


def _host_exit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime.remote.host", "--driver", "sample", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def _describe(port: int, credentials) -> str:
    """The driver's name from Describe over a channel with ``credentials`` (None: no TLS)."""
    address = f"127.0.0.1:{port}"
    channel = grpc.secure_channel(address, credentials) if credentials else grpc.insecure_channel(address)
    try:
        return hal_pb2_grpc.DeviceStub(channel).Describe(pb.DescribeRequest(), timeout=10).name
    finally:
        channel.close()


def test_host_refuses_tcp_without_tls():
    proc = _host_exit("--listen", "127.0.0.1:0")
    assert proc.returncode == 2 and not proc.stdout
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "--tls-key, --tls-cert and --tls-ca" in proc.stderr and "--insecure-loopback" in proc.stderr


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", ":0"])
def test_host_refuses_insecure_loopback_on_other_addresses(address):
    proc = _host_exit("--listen", address, "--insecure-loopback")
    assert proc.returncode == 2 and not proc.stdout
    assert proc.stderr.count("\n") == 1 and "is not a loopback address" in proc.stderr, proc.stderr


def test_host_refuses_missing_tls_files(tmp_path, certs):
    server = certs["server"]
    proc = _host_exit("--listen", "127.0.0.1:0", "--tls-key", server.key, "--tls-cert", server.cert)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "missing --tls-ca" in proc.stderr
    proc = _host_exit("--listen", "127.0.0.1:0", "--tls-key", str(tmp_path / "nope.key"), "--tls-cert",
                      server.cert, "--tls-ca", server.ca)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--tls-key" in proc.stderr
    assert "cannot read it" in proc.stderr


def test_insecure_loopback_host_serves_loopback_clients(tmp_path):
    host, port = start_host("--listen", "127.0.0.1:0", "--insecure-loopback")
    try:
        assert _describe(port, None) == "nncts-sample"
    finally:
        host.kill()
        host.wait()


def test_loopback_rule():
    loopback = ["127.0.0.1:5000", "127.3.4.5:1", "[::1]:5000", "localhost:5000", "LOCALHOST:1",
                "ipv4:127.0.0.1:5000", "ipv6:[::1]:5000", "dns:///localhost:5000", "::1"]
    other = ["0.0.0.0:5000", "[::]:5000", ":5000", "10.0.0.1:5000", "example.com:443", "dns://8.8.8.8/host:1",
             "ipv4:127.0.0.1:1,10.0.0.1:2", "unix-abstract:hal", "unix:/tmp/x.sock", "localhost.example.com:1"]
    assert [a for a in loopback if not is_loopback(a)] == []
    assert [a for a in other if is_loopback(a)] == []
    assert address_host("dns:///localhost:5000") == "localhost" and address_host("[::1]:1") == "::1"


def test_only_clients_with_a_certificate_of_our_ca_get_an_answer(tls_host, certs):
    _, port = tls_host
    ca = open(certs["client"].ca, "rb").read()
    refused = {
        "no TLS": None,
        "no client certificate": grpc.ssl_channel_credentials(root_certificates=ca),
        "client certificate of another CA": TlsFiles(certs["other_client"].key, certs["other_client"].cert,
                                                     certs["client"].ca).channel_credentials(),
        "client trusting another CA": certs["other_client"].channel_credentials(),
    }
    for what, credentials in refused.items():
        with pytest.raises(grpc.RpcError) as e:
            _describe(port, credentials)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE, what
    assert _describe(port, certs["client"].channel_credentials()) == "nncts-sample"


def test_cts_runs_through_an_mtls_endpoint(tmp_path, tls_host, certs):
    """The CTS through --driver-endpoint over mutual TLS: every ADD and RELU model of V1_0
    passes against the corpus's golden outputs; the report's replay commands carry the TLS
    files."""
    _, port = tls_host
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--report-dir", str(report),
                           "--driver-endpoint", f"127.0.0.1:{port}", *client_tls_args(certs["client"]),
                           "--mode", "sync", "-m", "ADD or RELU", "-k", "V1_0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    records = [json.loads(line) for line in (report / "outcomes.jsonl").read_text().splitlines()]
    assert len(records) >= 5 and all(r["outcome"] == "passed" for r in records), records[:2]
    from reports.replay import replay_argv
    meta = json.loads((report / "summary.json").read_text()).get("meta", {})
    argv = replay_argv(records[0], meta)
    assert argv[argv.index("--driver-endpoint") + 1] == f"127.0.0.1:{port}"
    assert argv[argv.index("--driver-endpoint-cert") + 1] == os.path.abspath(certs["client"].cert)


def test_cts_refuses_endpoint_options_breaking_the_rule(tmp_path, certs):
    """A TCP endpoint that is not loopback needs the TLS files; a file that is missing is
    one line and exit 2, before any test."""
    cases = [(["--driver-endpoint", "10.1.2.3:5000"], "--driver-endpoint-key, --driver-endpoint-cert"),
             (["--driver-endpoint", "127.0.0.1:1", "--driver-endpoint-key", str(tmp_path / "nope"),
               "--driver-endpoint-cert", certs["client"].cert, "--driver-endpoint-ca", certs["client"].ca],
              "--driver-endpoint-key"),
             (["--driver-endpoint-ca", certs["client"].ca], "--driver-endpoint-ca")]
    for args, expected in cases:
        proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--report-dir", str(tmp_path / "r"), *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and expected in proc.stderr, proc.stderr


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_unix_sockets_are_private(tmp_path):
    """Sockets of --listen unix: and --listen-local are mode 0600 in a directory of mode 0700
    (created when missing); a directory others can enter is refused; the directory of
    --driver-process's sockets is 0700 too."""
    hidden = tmp_path / "made-by-the-host"
    grpc_sock, local_sock = hidden / "hal.sock", hidden / "local.sock"
    host, _ = start_host("--listen", f"unix:{grpc_sock}", "--listen-local", str(local_sock))
    try:
        assert _mode(hidden) == 0o700 and _mode(grpc_sock) == 0o600 and _mode(local_sock) == 0o600
        assert stat.S_ISSOCK(os.stat(grpc_sock).st_mode) and stat.S_ISSOCK(os.stat(local_sock).st_mode)
    finally:
        host.kill()
        host.wait()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    for args in (["--listen", f"unix:{shared}/hal.sock"], ["--listen-local", str(shared / "hal.sock")]):
        proc = _host_exit(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "mode 0755" in proc.stderr, proc.stderr
        assert not (shared / "hal.sock").exists()
    device = load_driver("process:sample")
    assert _mode(device.link._dir) == 0o700 and _mode(device.link.channel.path) == 0o600


def test_message_over_the_limit_is_refused_and_the_host_answers(certs, monkeypatch):
    """A host bounding messages to 1 MiB (the default bound is MAX_MESSAGE_BYTES on both
    ends) refuses a 2 MiB model with RESOURCE_EXHAUSTED, no driver call, and answers the
    next call."""
    assert dict(CHANNEL_OPTIONS) == {"grpc.max_send_message_length": MAX_MESSAGE_BYTES,
                                     "grpc.max_receive_message_length": MAX_MESSAGE_BYTES}
    server, port = serve(DeviceServicer(load_driver("sample")), "127.0.0.1:0", tls=certs["server"],
                         max_message_bytes=1 << 20)
    try:
        monkeypatch.setattr(runtime.remote.client, "ENDPOINT_TLS", certs["client"])
        device = load_driver(f"endpoint:127.0.0.1:{port}")
        add = next(tm for tm in iter_corpus(DEFAULT_ROOTS) if "V1_0/add" in tm.test_id)
        small, big = to_hal_model(add), to_hal_model(add)
        big.operand_values = bytes(2 << 20)
        with pytest.raises(HalError) as e:
            device.get_supported_operations(big)
        assert e.value.status == ErrorStatus.GENERAL_FAILURE and "RESOURCE_EXHAUSTED" in e.value.message
        assert device.get_supported_operations(small) == [True]
    finally:
        server.stop(None)


def test_test_certificates_command(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "runtime.remote.tls", str(tmp_path / "certs"), "--host",
                           "driver.example"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"--tls-ca {tmp_path / 'certs' / 'ca.pem'}" in proc.stdout
    assert _mode(tmp_path / "certs") == 0o700
    assert _mode(tmp_path / "certs" / "server.key") == 0o600 and _mode(tmp_path / "certs" / "client.key") == 0o600
    from cryptography import x509
    cert = x509.load_pem_x509_certificate((tmp_path / "certs" / "server.pem").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(n.value) for n in names} == {"127.0.0.1", "::1", "localhost", "driver.example"}
