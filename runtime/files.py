"""Reading files nncts did not write: bounded size, inflation, item count and nesting.

Every file a user, a vendor or another company hands nncts (a corpus document, a fuzz
finding, a certification bundle, a baseline or profile, a shard's report directory) is
hostile until checked. A 1 MiB gzip member can inflate to gigabytes, a JSON or TOML document
can nest deeper than Python's recursion limit, and a few megabytes of ``[],[],...`` parse into
millions of Python objects. The readers here bound all of these and turn every failure into a
:class:`FileFormatError` (a ``ValueError``; :class:`FileLimitError` when a stated bound was
broken) with a one-line message naming the file, never a traceback:

- :class:`BoundedReader` wraps any binary stream and raises :class:`FileLimitError` once more
  than ``limit`` bytes were read from it (checked before the bytes are returned, so memory
  held is at most ``limit`` plus one read);
- :func:`open_bounded` opens a file, inflating ``*.gz`` through a BoundedReader;
- :func:`read_bytes` / :func:`load_json` / :func:`load_toml` read a whole document under the
  byte limit, :data:`MAX_ITEMS` and a nesting limit;
- :func:`iter_json_lines` reads a JSON-lines file (``outcomes.jsonl``) line by line, each
  line under its own byte limit (a bad line is reported, not fatal).

Limits (bytes once inflated, and of the text once decoded: one character past U+FFFF makes
every character of a Python string 4 bytes): :data:`MAX_DOCUMENT_BYTES` for one corpus
document, finding or report JSON (the largest document the project ships inflates to 2.4 MB);
:data:`MAX_TOML_BYTES` for a baseline or profile (TOML parses about 3 MB/s);
:data:`MAX_RECORDS_BYTES` for a whole records file and :data:`MAX_LINE_BYTES` for one record
(a full CTS run writes about 150,000 records of a few hundred bytes each).
"""
from __future__ import annotations

import gzip
import io
import json
import sys
import tomllib
import zlib
from pathlib import Path
from typing import Iterator, NamedTuple

#: Most bytes one JSON document (corpus document, fuzz finding, shard.json, summary.json)
#: may hold once inflated (64 MiB).
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
#: Most bytes one TOML document (``--baseline``, ``--profile``) may hold (16 MiB: about
#: 150,000 known-failure entries).
MAX_TOML_BYTES = 16 * 1024 * 1024
#: Most bytes a JSON-lines records file (``outcomes.jsonl``, ``mlts.jsonl``) may hold (1 GiB).
MAX_RECORDS_BYTES = 1024 * 1024 * 1024
#: Most bytes one line of a JSON-lines file may hold (1 MiB).
MAX_LINE_BYTES = 1024 * 1024
#: Deepest nesting of arrays/objects/tables accepted in a JSON or TOML document.
MAX_NESTING = 64
#: Most values one JSON or TOML document may hold, counted before parsing from its
#: separators (``,`` ``[`` ``{``, and line breaks in TOML; those inside strings count too, so
#: the count is an upper bound). A parsed value costs up to about 100 bytes of memory; the
#: largest shipped corpus document has about 150,000.
MAX_ITEMS = 1_000_000


class FileFormatError(ValueError):
    """A file is not what its reader expects (corrupt gzip, not UTF-8, not JSON or TOML).
    ``str()`` is one line, ``<path>: <reason>``; ``path`` and ``reason`` are kept apart for
    callers that word the message their own way."""

    def __init__(self, path, reason: str | None = None):
        if reason is None:  # FileLimitError("<whole message>") as first written
            path, _, reason = str(path).rpartition(": ")
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path, self.reason = str(path), reason


class FileLimitError(FileFormatError):
    """A file broke a stated bound (size once inflated, line length, item count, nesting
    depth). ``str()`` is one line naming the file and the limit."""


class BoundedReader(io.RawIOBase):
    """A read-only binary stream over ``raw`` that raises :class:`FileLimitError` when more
    than ``limit`` bytes have been read (``what`` names the stream in the message)."""

    def __init__(self, raw, limit: int, what: str):
        super().__init__()
        self.raw, self.limit, self.what, self.count = raw, int(limit), what, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        room = self.limit - self.count
        view = memoryview(b)
        # Ask for at most one byte past the limit: enough to know it was exceeded.
        want = min(len(view), room + 1)
        data = self.raw.read(want)
        n = len(data)
        self.count += n
        if self.count > self.limit:
            inflated = " once inflated" if isinstance(self.raw, gzip.GzipFile) else ""
            raise FileLimitError(self.what, f"more than {self.limit:,} bytes{inflated} (the limit)")
        view[:n] = data
        return n

    def close(self) -> None:
        try:
            self.raw.close()
        finally:
            super().close()


def open_bounded(path: str | Path, limit: int = MAX_DOCUMENT_BYTES):
    """A buffered binary stream of the file at ``path`` (inflated when its name ends in
    ``.gz``) that raises :class:`FileLimitError` past ``limit`` bytes. Raises OSError when
    the file cannot be opened; reading a corrupt gzip stream raises what :mod:`gzip` raises
    (:func:`read_bytes` and :func:`iter_json_lines` turn that into FileFormatError)."""
    path = Path(path)
    raw = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")
    return io.BufferedReader(BoundedReader(raw, limit, str(path)))


_GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def _gzip_error(path, e: Exception) -> FileFormatError:
    return FileFormatError(path, f"not a valid gzip stream ({e or type(e).__name__})")


def read_bytes(path: str | Path, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The whole (inflated) content of ``path``, at most ``limit`` bytes. Raises
    :class:`FileLimitError` past the limit, :class:`FileFormatError` for a corrupt gzip
    stream and OSError when the file cannot be read."""
    try:
        with open_bounded(path, limit) as f:
            return f.read()
    except _GZIP_ERRORS as e:
        raise _gzip_error(path, e) from None


_CONTAINERS = (dict, list)


def _check_depth(doc, where: str, limit: int) -> None:
    """Raise FileLimitError when ``doc`` (parsed JSON/TOML) nests deeper than ``limit``
    (walked level by level, without recursion)."""
    level, depth = ([doc] if type(doc) in _CONTAINERS else []), 1
    while level:
        if depth > limit:
            raise FileLimitError(where, f"nested deeper than {limit} levels (the limit)")
        below = []
        for value in level:
            below += [c for c in (value.values() if type(value) is dict else value) if type(c) in _CONTAINERS]
        level, depth = below, depth + 1


def _check_items(separators: int, where: str) -> None:
    """Raise FileLimitError when a document of ``separators`` separators may hold more than
    :data:`MAX_ITEMS` values."""
    if separators > MAX_ITEMS:
        raise FileLimitError(where, f"more than {MAX_ITEMS:,} values (the limit; {separators:,} separators)")


def _decode(data: bytes, where: str, limit: int) -> str:
    """``data`` as UTF-8 text taking at most about ``limit`` bytes of memory: one character
    past U+FFFF makes Python store every character of the text in 4 bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileFormatError(where, f"not UTF-8 ({e.reason} at byte {e.start})") from None
    if sys.getsizeof(text) > limit + 100:
        raise FileLimitError(where, f"more than {limit:,} bytes once decoded to text (the limit; "
                                    f"{sys.getsizeof(text):,} bytes in memory)")
    return text


def parse_json(data: bytes, where: str, max_nesting: int = MAX_NESTING, limit: int = MAX_DOCUMENT_BYTES):
    """The JSON value of ``data`` (UTF-8), under :data:`MAX_ITEMS` values, ``max_nesting``
    levels and ``limit`` bytes of decoded text; ``where`` names the source in messages
    (``<path>`` or ``<path>:<line>``). Raises FileLimitError or FileFormatError (not UTF-8,
    not JSON, an integer of more digits than Python converts)."""
    containers = data.count(b"[") + data.count(b"{")
    if len(data) > MAX_ITEMS:  # fewer bytes cannot hold more values
        _check_items(containers + data.count(b","), where)
    text = _decode(data, where, limit)
    del data
    try:
        doc = json.loads(text)
    except RecursionError:
        raise FileLimitError(where, f"nested deeper than {max_nesting} levels (the limit)") from None
    except ValueError as e:  # JSONDecodeError, or an integer literal past sys.get_int_max_str_digits()
        raise FileFormatError(where, f"not valid JSON: {' '.join(str(e).split())}") from None
    if containers > max_nesting:  # fewer arrays and objects cannot nest deeper
        _check_depth(doc, where, max_nesting)
    return doc


def load_json(path: str | Path, limit: int = MAX_DOCUMENT_BYTES, max_nesting: int = MAX_NESTING):
    """The JSON document at ``path`` (``.gz`` inflated), under ``limit`` bytes (inflated,
    and as decoded text), :data:`MAX_ITEMS` values and ``max_nesting`` levels. Raises
    FileLimitError, FileFormatError (corrupt gzip, not UTF-8, not JSON; one line naming the
    file) or OSError."""
    return parse_json(read_bytes(path, limit), str(path), max_nesting, limit)


def load_toml(path: str | Path, limit: int = MAX_TOML_BYTES, max_nesting: int = MAX_NESTING) -> dict:
    """The TOML document at ``path``, under ``limit`` bytes, :data:`MAX_ITEMS` values and
    ``max_nesting`` levels. Raises FileLimitError, FileFormatError (not UTF-8, not TOML) or
    OSError."""
    data = read_bytes(path, limit)
    _check_items(sum(data.count(c) for c in (b",", b"[", b"{", b"\n")), str(path))
    text = _decode(data, str(path), limit)
    del data
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FileFormatError(path, f"not valid TOML: {e}") from None
    except RecursionError:
        raise FileLimitError(path, f"nested deeper than {max_nesting} levels (the limit)") from None
    _check_depth(doc, str(path), max_nesting)
    return doc


class JsonLine(NamedTuple):
    """One non-blank line of a JSON-lines file: its 1-based ``number``, its ``value`` (None
    when it has an ``error``, a FileFormatError naming ``<path>:<number>``), and whether it is
    the ``last`` non-blank line of the file (a run killed mid-write leaves a truncated last
    line)."""

    number: int
    value: object
    error: FileFormatError | None
    last: bool


def _raw_lines(f, line_limit: int) -> Iterator[tuple[int, bytes | None]]:
    """(1-based number, bytes without the line break) of each non-blank line of binary
    stream ``f``; None for a line longer than ``line_limit`` bytes (its bytes are read and
    dropped, never held)."""
    number = 0
    while True:
        line = f.readline(line_limit + 2)
        if not line:
            return
        number += 1
        text = line.rstrip(b"\r\n")
        if len(text) <= line_limit:
            if text.strip():
                yield number, text
            continue
        while line and not line.endswith(b"\n"):
            line = f.readline(1 << 16)
        yield number, None


def iter_json_lines(path: str | Path, limit: int = MAX_RECORDS_BYTES, line_limit: int = MAX_LINE_BYTES,
                    max_nesting: int = MAX_NESTING) -> Iterator[JsonLine]:
    """Each non-blank line of the JSON-lines file at ``path`` (``.gz`` inflated) as a
    :class:`JsonLine`: a line longer than ``line_limit`` bytes, not JSON or nested deeper
    than ``max_nesting`` comes with its error instead of a value, and reading goes on. Raises
    FileLimitError when the whole file holds more than ``limit`` bytes, FileFormatError for a
    corrupt gzip stream, OSError when it cannot be read."""
    try:
        with open_bounded(path, limit) as f:
            pending = None  # held back one line: only then is it known whether it is the last
            for entry in _raw_lines(f, line_limit):
                if pending is not None:
                    yield _json_line(path, *pending, False, line_limit, max_nesting)
                pending = entry
            if pending is not None:
                yield _json_line(path, *pending, True, line_limit, max_nesting)
    except _GZIP_ERRORS as e:
        raise _gzip_error(path, e) from None


def _json_line(path, number: int, raw: bytes | None, last: bool, line_limit: int, max_nesting: int) -> JsonLine:
    where = f"{path}:{number}"
    if raw is None:
        return JsonLine(number, None, FileLimitError(where, f"longer than {line_limit:,} bytes (the limit)"), last)
    try:
        # a line's text may take 4 bytes a character (one character past U+FFFF in it)
        return JsonLine(number, parse_json(raw, where, max_nesting, 4 * line_limit), None, last)
    except FileFormatError as e:
        return JsonLine(number, None, e, last)
