"""Compilation caching (``ANeuralNetworksCompilation_setCaching``, NNAPI feature level 3; HAL
1.2 ``IDevice::getNumberOfCacheFilesNeeded`` / ``prepareModel_1_2`` with cache handles /
``prepareModelFromCache``).

The runtime keeps, per device and cache key, the files the driver asked for in the app's cache
directory, and offers them back on the next compilation with the same token (source.android.com,
"Compilation caching", workflow):

* cache hit: every file exists and is non-empty -> the files are opened (read/write) and
  handed to ``prepare_model_from_cache``;
* cache miss, or the driver rejects the cache (HalError, or any other exception: a driver
  must never take the runtime down) -> a full ``prepare_model`` with the files created empty
  (truncated), for the driver to fill;
* no caching info, or a device that needs (0, 0) files -> a plain ``prepare_model``.

Cache file names, in ``cache_dir``: ``<key>_model_<i>`` and ``<key>_data_<i>`` where ``key`` is
the hex SHA-256 of, in order, the app's 32-byte token, the device name, the device version
string, the execution preference and priority (u32 little-endian each) and the partition id
(strings UTF-8, each prefixed with its u32 little-endian byte length). NNAPI derives the cache
from the app's token, the device, the execution preference and the partitioning outcome, and
hands the driver that derived token, not the app's (AOSP ``TokenHasher``), so a token reused
on another device, driver version or preference never reaches the wrong cache.

The token given to the driver (``prepare_model`` and ``prepare_model_from_cache``) is
SHA-256(key digest || SHA-256(serialized HAL model)), see :func:`driver_token`. Binding it to
the model is this runtime's addition: NNAPI makes token collisions the app's problem (the
runtime cannot detect them; the result may be a failure or wrong outputs). Here a cache left
by another model under the same app token (a collision, or an app that changed its model
and kept its token) sits in the same files but carries another token, so a driver that
checks the token, as it must, rejects it and the runtime prepares afresh. A driver that
skips the check is caught by the CTS caching mode.

What happened is recorded as a :class:`CacheOutcome` appended to ``caching.outcomes`` (the
:class:`CachingSettings` of the compilation, ``compilation.caching.outcomes``): one per
device prepared with caching set, in order. Nothing is printed.
"""
from __future__ import annotations

import contextlib
import hashlib
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HalError
from ..hal.interfaces import IPreparedModel
from ..hal import validation_memo
from ..hal.serialize import model_to_bytes
from ..types import MAX_NUMBER_OF_CACHE_FILES
from .device import Device, driver_call


@dataclass(frozen=True)
class CachingSettings:
    """Where caches live and the 32-byte token naming this model's cache; ``outcomes``
    collects a :class:`CacheOutcome` per prepare that used these settings."""

    cache_dir: Path
    token: bytes
    outcomes: list = field(default_factory=list, compare=False, repr=False)


@dataclass(frozen=True)
class CacheOutcome:
    """What :func:`prepare_on_device` did for one device.

    ``used_cache``: the model came from ``prepare_model_from_cache``.
    ``fell_back``: a complete cache was offered, the driver rejected it (``reason`` says how),
    and a full prepare followed.
    ``offered_files``: the full prepare got cache files to fill.
    ``wrote_cache``: after that prepare, every cache file was non-empty.
    ``key``: the hex base name of the cache files ("" when no files were involved).
    ``reason``: a short human-readable explanation ("" for a plain cache hit).
    """

    device: str
    used_cache: bool = False
    fell_back: bool = False
    offered_files: bool = False
    wrote_cache: bool = False
    key: str = ""
    reason: str = ""


def _lp(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return struct.pack("<I", len(raw)) + raw


def cache_key(token: bytes, device_name: str, device_version: str, preference: int, priority: int,
              partition: str | bytes = "") -> str:
    """Hex SHA-256 naming the cache files (inputs and encoding in the module docstring)."""
    h = hashlib.sha256(bytes(token))
    h.update(_lp(device_name))
    h.update(_lp(device_version))
    h.update(struct.pack("<II", int(preference) & 0xFFFFFFFF, int(priority) & 0xFFFFFFFF))
    h.update(_lp(partition))
    return h.hexdigest()


#: Fingerprints of the last models compiled with a cache, by content digest
#: (:func:`runtime.hal.validation_memo.model_key`): a model compiled again (the CTS's cache
#: mode compiles each model four times) is not serialized again.
_FINGERPRINTS: dict[bytes, bytes] = {}
_FINGERPRINTS_KEPT = 16


def model_fingerprint(hal_model) -> bytes:
    """SHA-256 of ``runtime.hal.serialize.model_to_bytes(hal_model)``; empty when the model
    cannot be serialized (then the driver token depends on the key alone, as in AOSP). Kept
    for the last :data:`_FINGERPRINTS_KEPT` models by their content's digest (a digest costs
    a tenth of a serialization), so the same content always gives the same fingerprint."""
    key = validation_memo.model_key(hal_model, 0)
    if key is not None and key in _FINGERPRINTS:
        return _FINGERPRINTS[key]
    try:
        found = hashlib.sha256(model_to_bytes(hal_model)).digest()
    except ValueError:
        found = b""
    if key is not None:
        if len(_FINGERPRINTS) >= _FINGERPRINTS_KEPT:
            _FINGERPRINTS.pop(next(iter(_FINGERPRINTS)))
        _FINGERPRINTS[key] = found
    return found


def driver_token(key: str, hal_model) -> bytes:
    """The 32-byte token handed to the driver for cache ``key`` (hex) and ``hal_model``."""
    return hashlib.sha256(bytes.fromhex(key) + model_fingerprint(hal_model)).digest()


def cache_paths(cache_dir: Path, key: str, n_model: int, n_data: int) -> tuple[list[Path], list[Path]]:
    """(model cache paths, data cache paths) for ``key``."""
    cache_dir = Path(cache_dir)
    return ([cache_dir / f"{key}_model_{i}" for i in range(n_model)],
            [cache_dir / f"{key}_data_{i}" for i in range(n_data)])


def _number_of_cache_files(device: Device) -> tuple[int, int] | str:
    """The device's (model, data) cache file counts, or why caching cannot be used."""
    try:
        counts = device.hal.get_number_of_cache_files_needed()
        n_model, n_data = counts
    except Exception as e:  # noqa: BLE001 - untrusted driver code
        return f"get_number_of_cache_files_needed failed: {type(e).__name__}: {e}"
    for n in (n_model, n_data):
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_NUMBER_OF_CACHE_FILES:
            return (f"get_number_of_cache_files_needed returned {counts!r}; each count must be an "
                    f"int in [0, {MAX_NUMBER_OF_CACHE_FILES}]")
    return n_model, n_data


class _CannotOpen(Exception):
    """Opening an existing cache file failed (not the driver's fault)."""


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def _nonempty(path: Path) -> bool:
    """Whether ``path`` is a regular file with at least one byte."""
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def _open_all(stack: contextlib.ExitStack, paths: list[Path], mode: str) -> list:
    return [stack.enter_context(open(p, mode)) for p in paths]


def prepare_on_device(device: Device, hal_model, preference, priority, deadline_ns=None,
                      caching: CachingSettings | None = None, *, partition: str | bytes = ""):
    """Prepare ``hal_model`` on ``device`` and return the driver's prepared model.

    With ``caching`` set and a device needing cache files: from the cache when a complete one
    exists and the driver accepts it, else a full prepare given fresh cache files (see the
    module docstring); a :class:`CacheOutcome` is appended to ``caching.outcomes``.
    ``partition`` tells apart the parts of one model prepared on the same device (mixed into
    the cache key). Raises NnapiError only for a failed full prepare (the driver's HalError
    mapped to its result code; OP_FAILED for a driver crash); a cache the driver rejects, or
    cache files that cannot be opened, only cost the cache.
    """
    def plain():
        with driver_call(f"{device.name}: prepare_model"):
            return device.hal.prepare_model(hal_model, preference, priority, deadline_ns)

    if caching is None:
        return plain()
    name = device.name
    counts = _number_of_cache_files(device)
    if isinstance(counts, str) or counts == (0, 0):
        reason = counts if isinstance(counts, str) else "the device does not support compilation caching"
        prepared = plain()
        caching.outcomes.append(CacheOutcome(name, reason=reason))
        return prepared
    n_model, n_data = counts
    try:
        key = cache_key(caching.token, name, device.version, preference, priority, partition)
    except Exception as e:  # noqa: BLE001 - untrusted driver code (get_version_string)
        prepared = plain()
        caching.outcomes.append(CacheOutcome(name, reason=f"cannot name the cache: {type(e).__name__}: {e}"))
        return prepared
    model_paths, data_paths = cache_paths(caching.cache_dir, key, n_model, n_data)
    paths = model_paths + data_paths
    token = driver_token(key, hal_model)

    fell_back, reason = False, "no cache yet"
    if all(_nonempty(p) for p in paths):
        try:
            with contextlib.ExitStack() as stack:
                try:
                    model_files = _open_all(stack, model_paths, "r+b")
                    data_files = _open_all(stack, data_paths, "r+b")
                except OSError as e:
                    raise _CannotOpen(str(e)) from None
                prepared = device.hal.prepare_model_from_cache(deadline_ns, model_files, data_files, token)
            if not isinstance(prepared, IPreparedModel):
                raise TypeError(f"prepare_model_from_cache returned {type(prepared).__name__}, "
                                f"not an IPreparedModel")
            caching.outcomes.append(CacheOutcome(name, used_cache=True, key=key))
            return prepared
        except _CannotOpen as e:
            fell_back, reason = True, f"cannot open the cache files: {e}"
        except HalError as e:
            fell_back, reason = True, f"driver rejected the cache: {e}"
        except Exception as e:  # noqa: BLE001 - untrusted driver code
            fell_back, reason = True, f"prepare_model_from_cache crashed: {type(e).__name__}: {e}"
    elif any(_exists(p) for p in paths):
        reason = "incomplete cache (a file is missing or empty)"

    with contextlib.ExitStack() as stack:
        try:
            model_files = _open_all(stack, model_paths, "w+b")
            data_files = _open_all(stack, data_paths, "w+b")
        except OSError as e:
            stack.close()
            prepared = plain()
            caching.outcomes.append(CacheOutcome(name, fell_back=fell_back, key=key,
                                                 reason=f"{reason}; cannot create cache files: {e}"))
            return prepared
        with driver_call(f"{name}: prepare_model"):
            prepared = device.hal.prepare_model(hal_model, preference, priority, deadline_ns,
                                                model_files, data_files, token)
    wrote = all(_nonempty(p) for p in paths)
    caching.outcomes.append(CacheOutcome(name, fell_back=fell_back, offered_files=True, wrote_cache=wrote,
                                         key=key, reason=reason))
    return prepared
