"""Integrity of a certification bundle: tree checksums, ``MANIFEST.sha256`` and its check.

A bundle is a directory (``nncts certify --out DIR``), optionally also packed as
``DIR.tar.gz`` (one top directory). ``MANIFEST.sha256`` is written last and lists every
other regular file of the bundle, one line ``<sha256 hex>  <relative path>`` (the format of
``sha256sum``, so ``sha256sum -c MANIFEST.sha256`` inside the bundle checks it too), sorted
by path. A signed bundle (:mod:`nncts.signing`) also holds ``SIGNER`` (the signing key's
fingerprint, listed in the manifest like any file) and ``MANIFEST.sha256.sig`` (the signature
of the manifest's bytes: the one file the manifest does not list).

:func:`verify` recomputes every digest from the directory or the archive and names each
altered, missing, unlisted or refused file. It treats the bundle as hostile:

- only regular files and directories: a symbolic link, a hard link (a regular file with more
  than one name; in an archive, a link member), a device, FIFO, socket or any other special
  file is refused and named, never followed, opened or read (files are opened with
  ``O_NOFOLLOW`` relative to their already opened directory, and must still be the regular
  file first seen);
- an archive holds one top directory: a member outside it (a second root), a file at the top
  level, an absolute name, a ``..``, ``.`` or empty component, a name present twice, each is
  refused and named;
- limits, checked before reading: :data:`MAX_FILE_BYTES` (256 MiB) for one file or member,
  :data:`MAX_BUNDLE_BYTES` (2 GiB) for all files together and for the archive once inflated
  (the gzip stream is read through :class:`runtime.files.BoundedReader`),
  :data:`MAX_HEADER_BYTES` (1 MiB) of tar headers (pax, GNU long names, sparse maps) per
  member, :data:`MAX_ENTRIES` (100,000) files and directories, :data:`MAX_DEPTH` (32)
  directory levels, and for the files verify parses, :data:`KEPT` (the manifest 16 MiB and at
  most MAX_ENTRIES lines, ``verdict.json`` 16 MiB, ``SIGNER`` and the signature 4 KiB). A
  file over the per-file or total limit ends the check (the archive is never inflated past
  it); digests are streamed in 1 MiB chunks, so memory does not grow with a file's size;
- ``verdict.json`` and ``SIGNER`` are read only as the bytes that were hashed, and used only
  when the manifest lists them and their digest matched;
- every string that comes from a bundle is printed through :func:`printable` (control
  characters escaped), so a file name or a verdict cannot write to the terminal.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from runtime.files import BoundedReader, FileLimitError

MANIFEST = "MANIFEST.sha256"
#: The signature of the manifest (:mod:`nncts.signing`); the manifest does not list it.
SIGNATURE = MANIFEST + ".sig"
#: The signing key's fingerprint (:mod:`nncts.signing`), listed in the manifest.
SIGNER = "SIGNER"
VERDICT = "verdict.json"
_MIB = 1 << 20
_CHUNK = _MIB
#: Most bytes of one file of a bundle (a directory's file, an archive's member).
MAX_FILE_BYTES = 256 * _MIB
#: Most bytes of all files of a bundle together, and of an archive once inflated.
MAX_BUNDLE_BYTES = 2048 * _MIB
#: Most bytes of tar headers (pax headers, GNU long names, sparse maps) before one member.
MAX_HEADER_BYTES = _MIB
#: Most files and directories in a bundle (and lines in its manifest).
MAX_ENTRIES = 100_000
#: Deepest directory nesting below the bundle's top.
MAX_DEPTH = 32
#: The files verify keeps in memory to parse them, with the most bytes each may hold.
KEPT = {MANIFEST: 16 * _MIB, VERDICT: 16 * _MIB, SIGNER: 4096, SIGNATURE: 4096}
_ONLY = "a bundle holds only regular files and directories"


class NotABundle(ValueError):
    """The path is not a bundle: no manifest, a malformed manifest line, an unreadable
    archive. ``str()`` is one line naming the path."""


def printable(text) -> str:
    """``str(text)`` safe to print on a terminal: every character that is not printable (C0
    and C1 controls, ESC, DEL, Unicode format characters such as bidirectional overrides,
    line and paragraph separators, lone surrogates) and the backslash written as a Python
    escape (``\\x1b``, ``\\u202e``, ``\\\\``); printable text, non-ASCII letters included,
    unchanged."""
    out = []
    for c in str(text):
        if c == "\\":
            out.append("\\\\")
        elif c.isprintable():
            out.append(c)
        else:
            n = ord(c)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return "".join(out)


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
    (replacing an older manifest; the signature ``MANIFEST.sha256.sig`` is not listed);
    returns its path. Call it after the last other file is written."""
    bundle = Path(bundle)
    lines = [f"{file_sha256(bundle / rel)}  {rel}\n" for rel in _files(bundle) if rel not in (MANIFEST, SIGNATURE)]
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


def _path_fault(path: str) -> str:
    """Why ``path`` is not a normalized relative POSIX path ("" when it is one)."""
    if path.startswith("/"):
        return "an absolute path"
    parts = path.split("/")
    if ".." in parts:
        return "a '..' component"
    if "" in parts or "." in parts:
        return "an empty or '.' component"
    return ""


def parse_manifest(text: str, where: str) -> dict[str, str]:
    """Relative path -> digest from a manifest's text. Raises NotABundle naming ``where``
    and the line number for a malformed line, an absolute path, a ``..``, ``.`` or empty
    component, a path listed twice, a line for the manifest or its signature, and for more
    than :data:`MAX_ENTRIES` lines."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if len(lines) > MAX_ENTRIES:
        raise NotABundle(f"{where}: {len(lines):,} lines, more than {MAX_ENTRIES:,} (the limit)")
    listed: dict[str, str] = {}
    for n, line in enumerate(lines, 1):
        digest, sep, rel = line.partition("  ")
        if (not sep or len(digest) != 64 or digest.strip("0123456789abcdef") or not rel or _path_fault(rel)
                or rel in listed or rel in (MANIFEST, SIGNATURE)):
            raise NotABundle(f"{where}: line {n} is not '<sha256>  <relative path>' of a new file: {line[:80]!r}")
        listed[rel] = digest
    return listed


@dataclass
class Check:
    """What :func:`verify` found: the manifest's entries, files whose digest differs,
    listed files that are absent, files present but not listed, files refused (``"<path>:
    <rule>"``, a special file, a second root, a limit), ``compared`` (every file was read and
    compared with the manifest: False when a limit ended the check or there is no usable
    manifest), the manifest's bytes, the signature file's bytes (None: unsigned), and the text
    of ``verdict.json`` and ``SIGNER`` when the manifest lists them and their digest matched
    (else None)."""

    listed: dict[str, str]
    altered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    compared: bool = True
    manifest: bytes | None = None
    signature: bytes | None = None
    verdict_text: str | None = None
    signer_text: str | None = None

    @property
    def ok(self) -> bool:
        """Every listed file present and unchanged, no other file, nothing refused."""
        return self.compared and not (self.altered or self.missing or self.unlisted or self.refused)


class _Stop(Exception):
    """A limit was broken: the check ends (the refusal is recorded)."""


@dataclass
class _Contents:
    """What the walk of a bundle found: digests of the regular files (not the manifest or
    its signature), the bytes of the :data:`KEPT` files, the refusals and the paths refused,
    and whether a broken limit ended the walk (``stopped``)."""

    digests: dict[str, str] = field(default_factory=dict)
    kept: dict[str, bytes] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    refused_paths: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)
    entries: int = 0
    total: int = 0
    stopped: bool = False

    def refuse(self, rel: str, rule: str) -> None:
        self.refused.append(f"{rel}: {rule}")
        self.refused_paths.add(rel)

    def stop(self, rel: str, rule: str) -> None:
        self.refuse(rel, rule)
        self.stopped = True
        raise _Stop

    def count(self, rel: str, more: int = 1) -> None:
        """Count ``more`` files, directories or members; ends the check past :data:`MAX_ENTRIES`."""
        self.entries += more
        if self.entries > MAX_ENTRIES:
            self.stop(rel, f"more than {MAX_ENTRIES:,} files and directories (the limit); not read")

    def first(self, rel: str) -> bool:
        """False (refused) when ``rel`` was seen before; ends the check past :data:`MAX_DEPTH`."""
        if rel.count("/") >= MAX_DEPTH:
            self.stop(rel, f"deeper than {MAX_DEPTH} directory levels (the limit)")
        if rel in self.seen:
            self.refuse(rel, "present twice")
            return False
        self.seen.add(rel)
        return True

    def check_size(self, rel: str, size: int) -> None:
        """End the check when a file of ``size`` bytes is over :data:`MAX_FILE_BYTES`."""
        if size > MAX_FILE_BYTES:
            self.stop(rel, f"{size:,} bytes, more than {MAX_FILE_BYTES:,} (the limit for one file); not read")

    def regular(self, rel: str, size: int, stream) -> None:
        """A regular file of ``size`` bytes read from the binary ``stream``: ends the check
        when it is over the per-file or total limit, refused unread when it is a KEPT file
        over its limit; else its digest streamed, its bytes kept when it is a KEPT file."""
        self.check_size(rel, size)
        self.total += size
        if self.total > MAX_BUNDLE_BYTES:
            self.stop(rel, f"the files up to this one hold {self.total:,} bytes, more than {MAX_BUNDLE_BYTES:,} "
                           f"(the limit for a bundle); not read")
        keep = KEPT.get(rel)
        if keep is not None and size > keep:
            return self.refuse(rel, f"{size:,} bytes, more than {keep:,} (the limit for {rel}); not read")
        h, data, n = hashlib.sha256(), [], 0
        while chunk := stream.read(min(_CHUNK, size - n + 1)):
            n += len(chunk)
            if n > size:
                return self.refuse(rel, f"grew past its {size:,} bytes while it was read")
            h.update(chunk)
            if keep is not None:
                data.append(chunk)
        if n != size:
            return self.refuse(rel, f"{n:,} bytes read of its {size:,}: changed while it was read")
        if keep is not None:
            self.kept[rel] = b"".join(data)
        if rel not in (MANIFEST, SIGNATURE):
            self.digests[rel] = h.hexdigest()


def _kind(mode: int) -> str:
    """The file type of a ``st_mode``, in words."""
    for test, kind in ((stat.S_ISDIR, "directory"), (stat.S_ISREG, "regular file"),
                       (stat.S_ISLNK, "symbolic link"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return kind
    return f"special file (mode {mode:o})"


def _walk_directory(dir_fd: int, prefix: str, contents: _Contents) -> None:
    """Every entry below the open directory ``dir_fd`` (paths ``prefix + name``), sorted, into
    ``contents``; nothing followed, only regular files opened."""
    with os.scandir(dir_fd) as entries:
        names = []
        for entry in entries:
            names.append(entry.name)
            contents.count(prefix + entry.name)
    for name in sorted(names):
        rel = prefix + name
        if not contents.first(rel):
            continue
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        kind = _kind(st.st_mode)
        if kind == "directory":
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            try:
                _walk_directory(sub, rel + "/", contents)
            finally:
                os.close(sub)
        elif kind == "symbolic link":
            contents.refuse(rel, f"a symbolic link (to {os.readlink(name, dir_fd=dir_fd)!r}); {_ONLY}")
        elif kind != "regular file":
            contents.refuse(rel, f"a {kind}; {_ONLY}")
        elif st.st_nlink > 1:
            contents.refuse(rel, f"a hard link (one of {st.st_nlink} names of one file); {_ONLY}")
        else:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dir_fd)
            with open(fd, "rb", buffering=0) as f:
                now = os.fstat(fd)
                if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                    contents.refuse(rel, f"replaced while it was read; {_ONLY}")
                else:
                    contents.regular(rel, st.st_size, f)


class _Through(io.RawIOBase):
    """A read-only stream reading from whichever stream ``target`` is at the time; closing
    it (a BoundedReader over it closes it when dropped) leaves ``target`` open."""

    def __init__(self, target):
        super().__init__()
        self.target = target

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self.target.readinto(b)


def _tar_kind(member: tarfile.TarInfo) -> str:
    """A tar member that is not a regular file or a directory, in words."""
    if member.issym():
        return f"symbolic link (to {member.linkname!r})"
    if member.islnk():
        return f"hard link (to {member.linkname!r})"
    kinds = {tarfile.CHRTYPE: "character device", tarfile.BLKTYPE: "block device", tarfile.FIFOTYPE: "FIFO"}
    return kinds.get(member.type, f"special file (tar type {member.type!r})")


def _archive_member(member: tarfile.TarInfo, root: str | None, contents: _Contents) -> tuple[str | None, str]:
    """The path of ``member`` below the archive's top directory ``root`` (None: refused, the
    refusal recorded) and the top directory (the first member's first component)."""
    name = member.name[:-1] if member.name.endswith("/") else member.name
    if fault := _path_fault(name):
        contents.refuse(member.name, f"{fault}; an archive bundle holds one top directory")
        return None, root
    top, _, rel = name.partition("/")
    root = top if root is None else root
    if top != root:
        contents.refuse(member.name, f"outside the top directory {root!r} (a second root); an archive bundle "
                                     f"holds one top directory")
        return None, root
    if not rel and not member.isdir():
        contents.refuse(member.name, "a file at the top level; an archive bundle holds one top directory")
        return None, root
    return rel, root


def _walk_archive(archive: Path, contents: _Contents) -> None:
    """Every member of the ``.tar.gz`` at ``archive`` into ``contents``, streamed (never
    extracted, never seeking back) under the inflation and header limits."""
    with open(archive, "rb") as raw, gzip.GzipFile(fileobj=raw) as inflated:
        data = BoundedReader(inflated, MAX_BUNDLE_BYTES, f"{archive}: the archive")
        last = "the first member"

        def headers():
            return BoundedReader(_Through(data), MAX_HEADER_BYTES + 2 * tarfile.RECORDSIZE,
                                 f"{archive}: tar headers of {last}")
        switch = _Through(headers())
        with tarfile.open(fileobj=switch, mode="r|") as tar:
            root = None
            while True:
                switch.target = headers()
                member = tar.next()
                switch.target = data
                if member is None:
                    return
                last = f"the member after {member.name!r}"
                contents.count(member.name)
                rel, root = _archive_member(member, root, contents)
                has_data = member.isreg() or member.type not in tarfile.SUPPORTED_TYPES
                if has_data:
                    contents.check_size(rel or member.name, member.size)
                stream = tar.extractfile(member) if has_data else None
                accepted = rel is not None and (rel == "" or contents.first(rel))
                if accepted and not (member.isfile() or member.isdir()):
                    contents.refuse(rel, f"a {_tar_kind(member)}; {_ONLY}")
                elif accepted and member.isfile():
                    contents.regular(rel, member.size, stream)
                while stream is not None and stream.read(_CHUNK):   # read past what was not read
                    pass


def _contents(path: Path) -> _Contents:
    """Walk the bundle directory or archive at ``path``; a broken limit ends the walk (and
    leaves its refusal last). Raises NotABundle for an unreadable archive."""
    contents = _Contents()
    try:
        if path.is_dir():
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
            try:
                _walk_directory(fd, "", contents)
            finally:
                os.close(fd)
        else:
            _walk_archive(path, contents)
    except _Stop:
        pass
    except FileLimitError as e:
        contents.refused.append(str(e))
        contents.stopped = True
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise NotABundle(f"{path}: not a readable .tar.gz bundle ({e or type(e).__name__})") from None
    return contents


def verify(path: str | Path) -> Check:
    """Walk the bundle at ``path`` (a directory or a ``.tar.gz`` of one) under the rules and
    limits of the module docstring, recompute every file digest and compare them with its
    manifest. Raises NotABundle when ``path`` is neither a directory nor a file, the archive
    is unreadable, there is no manifest (and nothing refused), or the manifest is not UTF-8,
    has a malformed line or too many lines; OSError when a file cannot be read."""
    path = Path(path)
    if not (path.is_dir() or path.is_file()):
        raise NotABundle(f"{path}: no such bundle directory or archive")
    contents = _contents(path)
    manifest = contents.kept.get(MANIFEST)
    if manifest is None or contents.stopped:
        if not contents.stopped and not contents.refused:
            where = f"<top directory>/{MANIFEST} in the archive" if path.is_file() else MANIFEST
            raise NotABundle(f"{path}: not a bundle (no {where})")
        return Check({}, refused=contents.refused, compared=False, manifest=manifest,
                     signature=contents.kept.get(SIGNATURE))
    try:
        text = manifest.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotABundle(f"{path}: {MANIFEST}: not UTF-8 ({e.reason} at byte {e.start})") from None
    listed = parse_manifest(text, f"{path}: {MANIFEST}")
    check = Check(listed, refused=contents.refused, manifest=manifest, signature=contents.kept.get(SIGNATURE))
    for rel, digest in sorted(listed.items()):
        if rel not in contents.digests:
            if rel not in contents.refused_paths:
                check.missing.append(rel)
        elif contents.digests[rel] != digest:
            check.altered.append(rel)
    check.unlisted = sorted(set(contents.digests) - set(listed))
    texts = {rel: contents.kept[rel].decode("utf-8", errors="replace") for rel in (VERDICT, SIGNER)
             if rel in contents.kept and listed.get(rel) == contents.digests.get(rel)}   # covered and matched
    check.verdict_text, check.signer_text = texts.get(VERDICT), texts.get(SIGNER)
    return check
