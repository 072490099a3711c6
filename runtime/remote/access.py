"""Who may reach a driver host: the rule both ends of :mod:`runtime.remote` enforce.

- **TCP** (``host:port``, ``ipv4:``/``ipv6:``/``dns:`` addresses): mutual TLS. The host
  (``--listen``) needs ``--tls-key``, ``--tls-cert`` and ``--tls-ca`` and serves only clients
  presenting a certificate signed by that CA; the client (``--driver-endpoint``) needs
  ``--driver-endpoint-key``, ``--driver-endpoint-cert`` and ``--driver-endpoint-ca``. Without
  TLS a host listens only when given ``--insecure-loopback`` and a loopback address
  (127.0.0.0/8, ::1, ``localhost``), and a client connects without TLS only to a loopback
  address: other users of the machine can still connect there, so this is for one-user
  machines and tests.
- **Unix sockets** (``unix:PATH`` for ``--listen``, the local transport's ``--listen-local
  PATH``): the file system is the access check. The socket's directory must be owned by us and
  closed to group and others (mode 0700; a missing directory is created so), and the socket is
  made with umask 077 and then mode 0600. Since nobody else can enter the directory, no moment
  exists in which someone else could connect. TLS over a Unix socket is used when given, never
  required. ``unix-abstract:`` sockets have no file-system permissions: they count as TCP.

Every check raises ValueError with one line naming the option and the rule broken.
"""
from __future__ import annotations

import contextlib
import ipaddress
import os
import stat

from .tls import PARTS, TlsFiles

#: What counts as loopback, for messages.
LOOPBACK = "a loopback address (127.0.0.0/8, ::1, localhost)"
#: The client's options ``--driver-endpoint-<part>`` (PEM files) and their help, for every
#: command line that takes ``--driver-endpoint``.
ENDPOINT_TLS_HELP = {
    "key": "--driver-endpoint over mutual TLS: the client's private key",
    "cert": "--driver-endpoint over mutual TLS: the client's certificate (signed by the host's --tls-ca)",
    "ca": "--driver-endpoint over mutual TLS: CA certificate(s) the host's certificate must be signed by",
}


def unix_socket_path(address: str) -> str | None:
    """The file of a gRPC ``unix:`` address (``unix:path``, ``unix:///absolute/path``); None
    for any other address."""
    if not address.startswith("unix:"):
        return None
    path = address[len("unix:"):]
    return path[2:] if path.startswith("///") else path


def address_host(address: str) -> str | None:
    """The host part of a gRPC network address (``host:port``, ``[v6]:port``,
    ``ipv4:a.b.c.d:port``, ``ipv6:[v6]:port``, ``dns:[//authority/]host:port``), brackets
    removed; None for ``unix:``/``unix-abstract:``/``vsock:`` addresses."""
    scheme, sep, rest = address.partition(":")
    if scheme in ("unix", "unix-abstract", "vsock"):
        return None
    if sep and scheme in ("ipv4", "ipv6", "dns"):
        address = rest.split("/")[-1] if rest.startswith("//") else rest
    if address.startswith("["):
        return address[1:].partition("]")[0]
    if address.count(":") > 1:  # a bare IPv6 address, no port
        return address
    return address.rpartition(":")[0] if ":" in address else address


def is_loopback(address: str) -> bool:
    """Whether the gRPC network ``address`` names this machine's loopback interface
    (127.0.0.0/8, ::1, ``localhost``)."""
    host = address_host(address)
    if host is None:
        return False
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.partition("%")[0]).is_loopback
    except ValueError:
        return False


def check_listen(address: str, tls: TlsFiles | None, insecure_loopback: bool) -> None:
    """The host's rule for ``--listen ADDRESS``: TCP needs ``tls``, or ``insecure_loopback``
    and a loopback address; a ``unix:`` socket needs a private directory
    (:func:`private_socket_dir`, which creates a missing one). Raises ValueError."""
    if insecure_loopback and tls is not None:
        raise ValueError("--insecure-loopback: give it or the --tls-key/--tls-cert/--tls-ca files, not both")
    path = unix_socket_path(address)
    if path is not None:
        if insecure_loopback:
            raise ValueError(f"--insecure-loopback: --listen {address} is a Unix socket, protected by its "
                             f"directory's permissions; drop --insecure-loopback")
        private_socket_dir(path, f"--listen {address}")
        return
    if insecure_loopback and not is_loopback(address):
        raise ValueError(f"--insecure-loopback: --listen {address} is not {LOOPBACK}; listening there needs "
                         f"--tls-key, --tls-cert and --tls-ca (mutual TLS)")
    if tls is None and not insecure_loopback:
        raise ValueError(f"--listen {address}: TCP needs mutual TLS: give --tls-key, --tls-cert and --tls-ca "
                         f"(PEM; make test ones with python -m runtime.remote.tls DIR), or --insecure-loopback "
                         f"with {LOOPBACK}")


def check_endpoint(address: str, tls: TlsFiles | None) -> None:
    """The client's rule for ``--driver-endpoint ADDRESS``: a network address without
    ``tls`` must be loopback (a ``unix:`` socket needs none). Raises ValueError."""
    if tls is None and unix_socket_path(address) is None and not is_loopback(address):
        raise ValueError(f"--driver-endpoint {address}: a TCP endpoint needs mutual TLS: give "
                         f"{', '.join('--driver-endpoint-' + p for p in PARTS)} (PEM files), unless it is "
                         f"{LOOPBACK}")


def endpoint_tls(address: str | None, key: str | None, cert: str | None, ca: str | None) -> TlsFiles | None:
    """The client's TLS files from ``--driver-endpoint-key/-cert/-ca`` for ``--driver-endpoint
    ADDRESS``, checked (all three or none, each a readable PEM file, only with an endpoint,
    the rule of :func:`check_endpoint`). Raises ValueError."""
    tls = TlsFiles.from_options(key, cert, ca, "--driver-endpoint-")
    if address is None:
        if tls is not None:
            raise ValueError("--driver-endpoint-key/-cert/-ca: only with --driver-endpoint ADDRESS")
        return None
    check_endpoint(address, tls)
    return tls


def private_socket_dir(path: str, option: str) -> None:
    """Make sure the directory of socket ``path`` is private: created with mode 0700 when
    missing (its parents as usual), else owned by us and without group/other permissions.
    Raises ValueError naming ``option`` (e.g. ``--listen-local /tmp/x.sock``) otherwise."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(directory):
        try:
            os.makedirs(os.path.dirname(directory), exist_ok=True)
            os.mkdir(directory, 0o700)
        except OSError as e:
            raise ValueError(f"{option}: cannot create directory {directory} ({e.strerror or e})") from None
    st = os.stat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{option}: {directory} is not a directory")
    if st.st_uid != os.geteuid():
        raise ValueError(f"{option}: directory {directory} belongs to uid {st.st_uid}, not us "
                         f"({os.geteuid()}); put the socket in a directory of our own with mode 0700")
    if st.st_mode & 0o077:
        raise ValueError(f"{option}: directory {directory} has mode {stat.S_IMODE(st.st_mode):04o}, open to "
                         f"group/other; put the socket in a directory of mode 0700 (e.g. made by mktemp -d)")


@contextlib.contextmanager
def private_socket(path: str | None):
    """Around the bind of Unix socket ``path``: umask 077 while binding (the process's umask:
    the host binds before serving calls), mode 0600 after. ``path`` None: nothing done."""
    if path is None:
        yield
        return
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)
    if os.path.exists(path):
        os.chmod(path, 0o600)
