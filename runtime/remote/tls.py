"""Mutual TLS for driver endpoints: the PEM files of one end (:class:`TlsFiles`) and throwaway
test certificates (:func:`make_test_certs`).

A driver host listening on TCP (``python -m runtime.remote.host --listen host:port``) serves
only clients presenting a certificate signed by its ``--tls-ca``, and a client
(``--driver-endpoint host:port``) trusts only a host whose certificate is signed by its
``--driver-endpoint-ca`` and names the address it dialled (:mod:`runtime.remote.access` states
the whole rule). ``python -m runtime.remote.tls DIR`` writes a fresh CA, a server certificate
for ``127.0.0.1``, ``::1`` and ``localhost`` (plus any ``--host NAME`` given) and a client
certificate, each with its key, into ``DIR``:

=================  ===========================================================
``ca.pem``         the CA certificate: ``--tls-ca`` of the host, ``--driver-endpoint-ca``
                   of the client
``server.pem``     ``--tls-cert`` (``server.key``: ``--tls-key``)
``client.pem``     ``--driver-endpoint-cert`` (``client.key``: ``--driver-endpoint-key``)
=================  ===========================================================

Keys are ECDSA P-256: grpcio's BoringSSL refuses Ed25519 certificates in the handshake
(``NO_COMMON_SIGNATURE_ALGORITHMS``, grpcio 1.85), every TLS stack takes P-256. The CA's
key is not kept: the certificates are for tests, not for a deployment that issues more.
Making certificates needs the ``cryptography`` package; using them needs only grpcio.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..argparsing import OneLineParser

#: The three files of one end, as option suffixes: ``--tls-key`` / ``--driver-endpoint-key``...
PARTS = ("key", "cert", "ca")
#: Hosts the test server certificate names (besides ``--host``).
LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of one end of a mutual-TLS gRPC link: ``key`` (our private key), ``cert``
    (our certificate chain), ``ca`` (the CA certificates the peer's certificate must be signed
    by). Paths as given; read when credentials are made."""

    key: str
    cert: str
    ca: str

    @classmethod
    def from_options(cls, key: str | None, cert: str | None, ca: str | None, prefix: str) -> "TlsFiles | None":
        """The files of options ``{prefix}key``, ``{prefix}cert``, ``{prefix}ca`` (e.g.
        ``--tls-``); None when none is given. Raises ValueError (one line, naming the option)
        when only some are given, or a file cannot be read or holds no PEM block."""
        values = dict(zip(PARTS, (key, cert, ca)))
        given = [p for p in PARTS if values[p]]
        if not given:
            return None
        if len(given) < len(PARTS):
            missing = [f"{prefix}{p}" for p in PARTS if not values[p]]
            raise ValueError(f"{prefix}{given[0]}: mutual TLS needs {', '.join(f'{prefix}{p}' for p in PARTS)} "
                             f"together; missing {', '.join(missing)}")
        files = cls(**values)
        for part in PARTS:
            _check_pem(f"{prefix}{part}", getattr(files, part))
        return files

    def read(self) -> tuple[bytes, bytes, bytes]:
        """(key, cert, ca) bytes. Raises OSError when a file cannot be read."""
        return tuple(Path(getattr(self, p)).read_bytes() for p in PARTS)

    def server_credentials(self):
        """gRPC server credentials: our key and certificate, clients must present a
        certificate signed by ``ca`` (``require_client_auth``). Raises OSError."""
        import grpc
        key, cert, ca = self.read()
        return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=True)

    def channel_credentials(self):
        """gRPC channel credentials: the server must present a certificate signed by ``ca``
        naming the address dialled; we present our key and certificate. Raises OSError."""
        import grpc
        key, cert, ca = self.read()
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)


def _check_pem(option: str, path: str) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise ValueError(f"{option} {path}: cannot read it ({e.strerror or e})") from None
    if b"-----BEGIN " not in head:
        raise ValueError(f"{option} {path}: not a PEM file (no -----BEGIN line)")


def _name(common_name: str):
    from cryptography.x509.oid import NameOID
    from cryptography import x509
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "nncts test"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(host: str):
    from cryptography import x509
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _certificate(subject: str, key, issuer: str, issuer_key, *, ca: bool, usage=None, hosts=()):
    """An X.509 certificate for ``key`` signed by ``issuer_key`` (ECDSA with SHA-256), valid
    from an hour ago for 30 days; ``usage`` an extended key usage, ``hosts`` its names."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True))
    if not ca:
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                                        critical=False)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if hosts:
        builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_test_certs(directory: str | os.PathLike, hosts=(), ca_name: str = "nncts test CA") -> dict[str, TlsFiles]:
    """Write a throwaway CA, a server certificate (for 127.0.0.1, ::1, localhost and
    ``hosts``) and a client certificate with their ECDSA P-256 keys into ``directory``
    (created, mode 0700; keys mode 0600; see the module docstring for the file names).
    Returns ``{"server": TlsFiles, "client": TlsFiles}``. Needs ``cryptography`` (ImportError
    without it); raises OSError when the files cannot be written."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID
    out = Path(directory)
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate(ca_name, ca_key, ca_name, ca_key, ca=True)
    pem = serialization.Encoding.PEM
    (out / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
    files = {}
    for role, usage, names in (("server", ExtendedKeyUsageOID.SERVER_AUTH, (*LOOPBACK_NAMES, *hosts)),
                               ("client", ExtendedKeyUsageOID.CLIENT_AUTH, ())):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(f"nncts test {role}", key, ca_name, ca_key, ca=False, usage=usage, hosts=names)
        key_path = out / f"{role}.key"
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        (out / f"{role}.pem").write_bytes(cert.public_bytes(pem))
        files[role] = TlsFiles(str(key_path), str(out / f"{role}.pem"), str(out / "ca.pem"))
    return files


def main(argv=None) -> int:
    """``python -m runtime.remote.tls DIR [--host NAME ...]``: write test certificates into DIR
    and print the options that use them. Exit code 2 (one line) when DIR cannot be written."""
    parser = OneLineParser(prog="python -m runtime.remote.tls",
                                     description="write a throwaway CA, server and client certificate for "
                                                 "mutual-TLS driver endpoints (tests only)")
    parser.add_argument("directory")
    parser.add_argument("--host", action="append", default=[],
                        help="another name or IP address the server certificate is for (repeatable)")
    args = parser.parse_args(argv)
    try:
        files = make_test_certs(args.directory, args.host)
    except OSError as e:
        print(f"python -m runtime.remote.tls: cannot write {args.directory}: {e.strerror or e}", file=sys.stderr)
        return 2
    server, client = files["server"], files["client"]
    print(f"host:   --tls-key {server.key} --tls-cert {server.cert} --tls-ca {server.ca}")
    print(f"client: --driver-endpoint-key {client.key} --driver-endpoint-cert {client.cert} "
          f"--driver-endpoint-ca {client.ca}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
