"""The sample driver's compilation cache files (HAL 1.2 ``IDevice::prepareModel_1_2`` with
cache handles, ``IDevice::prepareModelFromCache``; NNAPI feature level 3).

The sample driver asks for one model cache file and one data cache file
(``getNumberOfCacheFilesNeeded`` -> (1, 1)). NNAPI requires a driver to check the model cache
for corruption before preparing from it, and to fail (GENERAL_FAILURE / INVALID_ARGUMENT, never
crash) on a cache it did not write for that token (source.android.com, "Compilation caching",
Security; VTS ``CompilationCachingTest``). Both files carry the token and a SHA-256 digest:

Model cache file (``model_cache[0]``), integers little-endian::

    offset  size  field
    0       8     magic b"NNCTSSMC"
    8       4     u32 format version (1)
    12      32    the cache token
    44      8     u64 N: payload length
    52      32    SHA-256 of bytes 0..52 followed by the payload
    84      N     payload: runtime.hal.serialize.model_to_bytes(model)
    (the file ends exactly there)

Data cache file (``data_cache[0]``), exactly 76 bytes::

    0       8     magic b"NNCTSSDC"
    8       4     u32 format version (1)
    12      32    the cache token
    44      32    SHA-256 of the whole model cache file

Cache "files" are binary file objects the runtime opened for reading and writing (seekable):
they are read from position 0, and truncated before being written.
"""
from __future__ import annotations

import hashlib
import hmac
import struct

from ..errors import HalError
from ..hal.serialize import model_from_bytes, model_to_bytes
from ..hal.types import Model
from ..types import BYTE_SIZE_OF_CACHE_TOKEN, ErrorStatus

NUM_MODEL_CACHE, NUM_DATA_CACHE = 1, 1
MODEL_MAGIC, DATA_MAGIC = b"NNCTSSMC", b"NNCTSSDC"
VERSION = 1
#: Largest cache file the driver will read (bigger files are rejected unread).
MAX_CACHE_FILE_BYTES = 2**31

_MODEL_HEAD = struct.Struct(f"<8sI{BYTE_SIZE_OF_CACHE_TOKEN}sQ")  # magic, version, token, N
_DIGEST = 32
_MODEL_FIXED = _MODEL_HEAD.size + _DIGEST
_DATA = struct.Struct(f"<8sI{BYTE_SIZE_OF_CACHE_TOKEN}s{_DIGEST}s")


def _arguments_ok(model_cache, data_cache, token) -> str:
    """Why the cache arguments are unusable ("" when they are fine)."""
    if not isinstance(model_cache, (list, tuple)) or not isinstance(data_cache, (list, tuple)):
        return "cache files must be given as lists"
    if (len(model_cache), len(data_cache)) != (NUM_MODEL_CACHE, NUM_DATA_CACHE):
        return (f"{len(model_cache)} model and {len(data_cache)} data cache files, the driver needs "
                f"{NUM_MODEL_CACHE} and {NUM_DATA_CACHE}")
    if not isinstance(token, (bytes, bytearray)) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
        return f"the token must be {BYTE_SIZE_OF_CACHE_TOKEN} bytes"
    return ""


def encode(model: Model, token: bytes) -> tuple[bytes, bytes]:
    """(model cache bytes, data cache bytes) for ``model`` under ``token``. Raises ValueError
    when the model cannot be serialized."""
    payload = model_to_bytes(model)
    head = _MODEL_HEAD.pack(MODEL_MAGIC, VERSION, bytes(token), len(payload))
    model_file = head + hashlib.sha256(head + payload).digest() + payload
    return model_file, _DATA.pack(DATA_MAGIC, VERSION, bytes(token), hashlib.sha256(model_file).digest())


def decode(model_file: bytes, data_file: bytes, token: bytes, verify: bool = True) -> Model:
    """The model in a cache file pair written for ``token``. Raises ValueError naming the
    check that failed (wrong magic/version, token mismatch, truncated, digest mismatch,
    undecodable payload). ``verify=False`` skips the token and digest checks (only for
    deliberately broken test drivers)."""
    if len(model_file) < _MODEL_FIXED:
        raise ValueError(f"model cache: {len(model_file)} bytes, shorter than its {_MODEL_FIXED}-byte header")
    magic, version, stored_token, n = _MODEL_HEAD.unpack_from(model_file, 0)
    if verify:
        if magic != MODEL_MAGIC or version != VERSION:
            raise ValueError("model cache: not a sample driver cache file of this version")
        if not hmac.compare_digest(stored_token, bytes(token)):
            raise ValueError("model cache: written for a different token")
        if n != len(model_file) - _MODEL_FIXED:
            raise ValueError(f"model cache: payload of {len(model_file) - _MODEL_FIXED} bytes, "
                             f"the header says {n} (truncated or extended)")
        digest = hashlib.sha256(model_file[:_MODEL_HEAD.size] + model_file[_MODEL_FIXED:]).digest()
        if not hmac.compare_digest(digest, model_file[_MODEL_HEAD.size:_MODEL_FIXED]):
            raise ValueError("model cache: digest mismatch (corrupted)")
        if len(data_file) != _DATA.size:
            raise ValueError(f"data cache: {len(data_file)} bytes, expected {_DATA.size}")
        magic, version, stored_token, model_digest = _DATA.unpack(data_file)
        if magic != DATA_MAGIC or version != VERSION:
            raise ValueError("data cache: not a sample driver cache file of this version")
        if not hmac.compare_digest(stored_token, bytes(token)):
            raise ValueError("data cache: written for a different token")
        if not hmac.compare_digest(model_digest, hashlib.sha256(model_file).digest()):
            raise ValueError("data cache: does not belong to this model cache")
    return model_from_bytes(model_file[_MODEL_FIXED:])


def _read(f, what: str) -> bytes:
    try:
        size = f.seek(0, 2)
        if size > MAX_CACHE_FILE_BYTES:
            raise ValueError(f"{size} bytes is more than {MAX_CACHE_FILE_BYTES}")
        f.seek(0)
        data = f.read(size + 1)
    except (OSError, ValueError, AttributeError, TypeError) as e:
        raise HalError(ErrorStatus.GENERAL_FAILURE, f"cannot read the {what}: {e}") from None
    if not isinstance(data, (bytes, bytearray)):
        raise HalError(ErrorStatus.GENERAL_FAILURE, f"the {what} is not a binary file")
    return bytes(data)


def load(model_cache, data_cache, token, verify: bool = True) -> Model:
    """Read and check the cache files (``prepareModelFromCache``). Raises HalError:
    INVALID_ARGUMENT for wrong file counts or token length, GENERAL_FAILURE for a file that
    cannot be read or fails a check of :func:`decode`."""
    problem = _arguments_ok(model_cache, data_cache, token)
    if problem:
        raise HalError(ErrorStatus.INVALID_ARGUMENT, f"prepare_model_from_cache: {problem}")
    model_file = _read(model_cache[0], "model cache file")
    data_file = _read(data_cache[0], "data cache file")
    try:
        return decode(model_file, data_file, token, verify)
    except ValueError as e:
        raise HalError(ErrorStatus.GENERAL_FAILURE, f"prepare_model_from_cache: rejected cache: {e}") from None


def save(model_cache, data_cache, token, model: Model) -> bool:
    """Write the cache files for ``model`` after a successful prepare. Returns False (and
    writes nothing, or leaves a cache that :func:`load` rejects) when the arguments are not
    what the driver asked for or a write fails: not saving a cache never fails the prepare
    (VTS ``CompilationCachingTest.SaveToCacheInvalidNumCache``)."""
    if _arguments_ok(model_cache, data_cache, token):
        return False
    try:
        model_bytes, data_bytes = encode(model, token)
    except ValueError:
        return False
    for f, blob in ((model_cache[0], model_bytes), (data_cache[0], data_bytes)):
        try:
            f.seek(0)
            f.truncate()
            f.write(blob)
            f.flush()
        except (OSError, ValueError, AttributeError, TypeError):
            return False
    return True
