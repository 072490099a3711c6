"""Integrity of a certification bundle: tree checksums, ``MANIFEST.sha256`` and its check.

A bundle is a directory (``nncts certify --out DIR``), optionally also packed as
``DIR.tar.gz`` (one top directory). ``MANIFEST.sha256`` is written last and lists every
other regular file of the bundle, one line ``<sha256 hex>  <relative path>`` (the format of
``sha256sum``, so ``sha256sum -c MANIFEST.sha256`` inside the bundle checks it too), sorted
by path. :func:`verify` recomputes every digest from the directory or the archive and
names each altered, missing or unlisted file.
"""
from __future__ import annotations

import hashlib
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MANIFEST = "MANIFEST.sha256"
_LINE = re.compile(r"^([0-9a-f]{64})  (.+)$")
_CHUNK = 1 << 20


class NotABundle(ValueError):
    """The path is not a bundle: no manifest, a malformed manifest line, an unreadable
    archive. ``str()`` is one line naming the path."""


def file_sha256(path: Path) -> str:
    """The SHA-256 hex digest of the file at ``path``. Raises OSError."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _files(root: Path, skip_dirs: tuple[str, ...] = ()) -> list[str]:
    """Relative POSIX paths of the regular files under ``root`` (symlinks not followed),
    sorted; directories named in ``skip_dirs`` (e.g. ``__pycache__``) left out."""
    out = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if p.is_file() and not p.is_symlink() and not set(rel.parts) & set(skip_dirs):
            out.append(rel.as_posix())
    return sorted(out)


def tree_digest(root: str | Path, skip_dirs: tuple[str, ...] = ("__pycache__",)) -> dict:
    """One digest for the file tree at ``root``: SHA-256 over the lines
    ``<file sha256>  <relative path>\\n`` of its files sorted by relative path (so a renamed,
    added, removed or changed file changes it), with the file count:
    ``{"sha256": hex, "files": n}``. Raises FileNotFoundError when ``root`` is not a
    directory."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such directory")
    h = hashlib.sha256()
    files = _files(root, skip_dirs)
    for rel in files:
        h.update(f"{file_sha256(root / rel)}  {rel}\n".encode())
    return {"sha256": h.hexdigest(), "files": len(files)}


def write_manifest(bundle: str | Path) -> Path:
    """Write ``MANIFEST.sha256`` over every other regular file of the directory ``bundle``
    (replacing an older manifest); returns its path. Call it after the last other file is
    written."""
    bundle = Path(bundle)
    lines = [f"{file_sha256(bundle / rel)}  {rel}\n" for rel in _files(bundle) if rel != MANIFEST]
    path = bundle / MANIFEST
    path.write_text("".join(lines), encoding="utf-8")
    return path


def write_archive(bundle: str | Path) -> Path:
    """Pack the bundle directory into ``<bundle>.tar.gz`` next to it, its files under one
    top directory named like the bundle; returns the archive's path."""
    bundle = Path(bundle)
    archive = bundle.with_name(bundle.name + ".tar.gz")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(bundle, arcname=bundle.name)
    return archive


def parse_manifest(text: str, where: str) -> dict[str, str]:
    """Relative path -> digest from a manifest's text. Raises NotABundle naming ``where``
    and the line number for a malformed line, an absolute path, a ``..`` component or a
    path listed twice."""
    listed: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        parts = PurePosixPath(m.group(2)).parts if m else ()
        if not m or m.group(2).startswith("/") or ".." in parts or m.group(2) in listed:
            raise NotABundle(f"{where}: line {n} is not '<sha256>  <relative path>' of a new file: {line[:80]!r}")
        listed[m.group(2)] = m.group(1)
    return listed


@dataclass
class Check:
    """What :func:`verify` found: the manifest's entries, files whose digest differs,
    listed files that are absent, files present but not listed, and the bundle's
    ``verdict.json`` text when there is one."""

    listed: dict[str, str]
    altered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    verdict_text: str | None = None

    @property
    def ok(self) -> bool:
        """Every listed file present and unchanged, no other file."""
        return not (self.altered or self.missing or self.unlisted)


def _dir_contents(bundle: Path) -> tuple[str, dict[str, str], str | None]:
    manifest = bundle / MANIFEST
    if not manifest.is_file():
        raise NotABundle(f"{bundle}: not a bundle (no {MANIFEST})")
    digests = {rel: file_sha256(bundle / rel) for rel in _files(bundle) if rel != MANIFEST}
    verdict = bundle / "verdict.json"
    return (manifest.read_text(encoding="utf-8", errors="replace"), digests,
            verdict.read_text(encoding="utf-8", errors="replace") if verdict.is_file() else None)


def _archive_contents(archive: Path) -> tuple[str, dict[str, str], str | None]:
    """The manifest text, file digests and verdict text of a ``.tar.gz`` bundle, read
    without extracting (member paths below its one top directory)."""
    texts: dict[str, str] = {}
    digests: dict[str, str] = {}
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                parts = PurePosixPath(member.name).parts
                rel = PurePosixPath(*parts[1:]).as_posix() if len(parts) > 1 else ""
                data = tar.extractfile(member).read()
                if rel in (MANIFEST, "verdict.json"):
                    texts[rel] = data.decode("utf-8", errors="replace")
                if rel and rel != MANIFEST:
                    digests[rel] = hashlib.sha256(data).hexdigest()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise NotABundle(f"{archive}: not a readable .tar.gz bundle ({e})") from None
    if MANIFEST not in texts:
        raise NotABundle(f"{archive}: not a bundle (no <top directory>/{MANIFEST} in the archive)")
    return texts[MANIFEST], digests, texts.get("verdict.json")


def verify(path: str | Path) -> Check:
    """Recompute every file digest of the bundle at ``path`` (a directory or a ``.tar.gz``
    of one) and compare them with its manifest. Raises NotABundle when ``path`` is neither a
    directory nor a file, has no manifest, or its manifest has a malformed line."""
    path = Path(path)
    if path.is_dir():
        text, digests, verdict = _dir_contents(path)
    elif path.is_file():
        text, digests, verdict = _archive_contents(path)
    else:
        raise NotABundle(f"{path}: no such bundle directory or archive")
    listed = parse_manifest(text, f"{path}: {MANIFEST}")
    check = Check(listed, verdict_text=verdict)
    for rel, digest in sorted(listed.items()):
        if rel not in digests:
            check.missing.append(rel)
        elif digests[rel] != digest:
            check.altered.append(rel)
    check.unlisted = sorted(set(digests) - set(listed))
    return check
