"""Compilation caching (``ANeuralNetworksCompilation_setCaching``): cache files per device and
token in the app's cache directory, offered to the driver on the next compilation.

STUB: the caching logic is being written; today :func:`prepare_on_device` just prepares.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .device import Device, driver_call


@dataclass(frozen=True)
class CachingSettings:
    """Where caches live and the 32-byte token naming this model's cache."""

    cache_dir: Path
    token: bytes


def prepare_on_device(device: Device, hal_model, preference, priority, deadline_ns=None,
                      caching: CachingSettings | None = None):
    """Prepare ``hal_model`` on ``device``: from its cache when ``caching`` is set and a valid
    cache exists, else a full prepare (which may write the cache). Raises NnapiError."""
    with driver_call(f"{device.name}: prepare_model"):
        return device.hal.prepare_model(hal_model, preference, priority, deadline_ns)
