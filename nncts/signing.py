"""Signed certification bundles: Ed25519 key pairs, fingerprints and ``MANIFEST.sha256.sig``.

``nncts keygen DIR`` writes ``DIR/nncts-signing.key`` (the private key: PEM, PKCS #8,
unencrypted, created with ``O_EXCL`` and mode 0600, never overwritten) and
``DIR/nncts-signing.pub`` (the public key: PEM, SubjectPublicKeyInfo). A key's fingerprint is
``SHA256:`` and the base64 (standard alphabet, no ``=`` padding) of the SHA-256 of the 32 raw
bytes of the Ed25519 public key.

``nncts certify --sign-key KEY`` seals the bundle (:func:`seal`): it writes ``SIGNER`` (the
fingerprint and a newline; the manifest lists it, so swapping it breaks the signature), then
``MANIFEST.sha256`` (:func:`nncts.bundle.write_manifest`), then ``MANIFEST.sha256.sig``: the
Ed25519 signature of the manifest's exact bytes, base64 (standard, padded) on one line. The
manifest covers every file but the signature; the signature covers the manifest.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from runtime.files import read_bytes

from .bundle import SIGNATURE, SIGNER, write_manifest

PRIVATE_KEY = "nncts-signing.key"
PUBLIC_KEY = "nncts-signing.pub"
#: Most bytes of a key file nncts reads.
MAX_KEY_BYTES = 64 * 1024


def fingerprint(public_key: Ed25519PublicKey) -> str:
    """``SHA256:<base64 without padding>`` of the SHA-256 of the key's 32 raw bytes."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` (never an existing file, never through a symlink) with ``mode`` and
    write ``data``. Raises FileExistsError, OSError."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)     # the umask only removes bits; state the mode whatever it is
        with open(fd, "wb", closefd=False) as f:
            f.write(data)
    finally:
        os.close(fd)


def keygen(directory: str | Path) -> tuple[Path, Path, str]:
    """A new Ed25519 key pair in ``directory`` (created, mode 0700, when missing): the private
    key file (0600), the public key file (0644) and the fingerprint. Raises FileExistsError
    (one line naming the file) when either file exists, OSError when they cannot be written."""
    directory = Path(directory)
    private, public = directory / PRIVATE_KEY, directory / PUBLIC_KEY
    for path in (private, public):
        if os.path.lexists(path):
            raise FileExistsError(f"{path}: exists; nncts keygen never overwrites a key (move it away or choose "
                                  f"another directory)")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    _write_new(private, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()), 0o600)
    _write_new(public, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)
    return private, public, fingerprint(key.public_key())


def _load(path: str | Path, what: str, loader, kind):
    """A key of class ``kind`` from the PEM file at ``path``. Raises ValueError (one line
    naming the file and what it should hold)."""
    try:
        data = read_bytes(path, MAX_KEY_BYTES)
        key = loader(data)
    except OSError as e:
        raise ValueError(f"{path}: cannot read it ({e.strerror or e})") from None
    except (ValueError, TypeError, UnsupportedAlgorithm) as e:
        raise ValueError(f"{path}: not {what} ({' '.join(str(e).split())[:200]})") from None
    if not isinstance(key, kind):
        raise ValueError(f"{path}: not {what} (a {type(key).__name__.lstrip('_')})")
    return key


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    """The private key at ``path`` (unencrypted PEM PKCS #8 Ed25519, as ``nncts keygen``
    writes). Raises ValueError (one line naming the file)."""
    return _load(path, "an unencrypted PEM Ed25519 private key (nncts keygen writes one)",
                 lambda data: serialization.load_pem_private_key(data, password=None), Ed25519PrivateKey)


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    """The public key at ``path`` (PEM SubjectPublicKeyInfo Ed25519, as ``nncts keygen``
    writes). Raises ValueError (one line naming the file)."""
    return _load(path, "a PEM Ed25519 public key (nncts keygen writes one)", serialization.load_pem_public_key,
                 Ed25519PublicKey)


def seal(bundle: str | Path, key: Ed25519PrivateKey | None = None) -> Path:
    """Finish the bundle directory: with ``key``, write ``SIGNER``; write the manifest; with
    ``key``, sign the manifest into ``MANIFEST.sha256.sig``. Returns the manifest's path.
    Raises OSError."""
    bundle = Path(bundle)
    if key is not None:
        (bundle / SIGNER).write_text(fingerprint(key.public_key()) + "\n", encoding="utf-8")
    manifest = write_manifest(bundle)
    if key is not None:
        signature = key.sign(manifest.read_bytes())
        (bundle / SIGNATURE).write_text(base64.b64encode(signature).decode() + "\n", encoding="ascii")
    return manifest


def signature_matches(manifest: bytes, signature: bytes, public_key: Ed25519PublicKey) -> bool:
    """Whether ``signature`` (the bytes of a ``MANIFEST.sha256.sig``) is ``public_key``'s
    signature of ``manifest`` (the bytes of a ``MANIFEST.sha256``). A malformed signature
    file does not match."""
    try:
        raw = binascii.a2b_base64(signature.strip(), strict_mode=True)
        public_key.verify(raw, manifest)
    except (binascii.Error, ValueError, InvalidSignature):
        return False
    return True

