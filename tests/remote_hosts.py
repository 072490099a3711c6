"""Driver hosts for the tests of runtime.remote: start ``python -m runtime.remote.host`` in a
subprocess and learn where it serves; the client options of a set of test certificates."""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile

from runtime.remote.tls import TlsFiles
from tests.cts_run import ROOT


def start_host(*args: str, driver: str = "sample") -> tuple[subprocess.Popen, int | None]:
    """A host serving ``driver`` with host options ``args``, once it says it serves; returns
    (process, TCP port or None). The caller kills it. Raises AssertionError when the host
    exits instead (its stderr in the message)."""
    log = tempfile.TemporaryFile()  # not a pipe: gRPC logs each refused handshake there
    host = subprocess.Popen([sys.executable, "-m", "runtime.remote.host", "--driver", driver, *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
    line = host.stdout.readline()
    if "serving" not in line:
        host.kill()
        host.wait()
        log.seek(0)
        raise AssertionError(f"the host did not start: {line} {log.read().decode(errors='replace')}")
    port = re.search(r"\(port (\d+)", line)
    return host, int(port.group(1)) if port else None


def host_tls_args(server: TlsFiles) -> list[str]:
    """``--tls-key K --tls-cert C --tls-ca CA`` of the host's files."""
    return ["--tls-key", server.key, "--tls-cert", server.cert, "--tls-ca", server.ca]


def client_tls_args(client: TlsFiles) -> list[str]:
    """``--driver-endpoint-key K --driver-endpoint-cert C --driver-endpoint-ca CA``."""
    return ["--driver-endpoint-key", client.key, "--driver-endpoint-cert", client.cert,
            "--driver-endpoint-ca", client.ca]
