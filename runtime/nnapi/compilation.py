"""Compilation (``ANeuralNetworksCompilation``): a finished model prepared for a device."""
from __future__ import annotations

import time
from pathlib import Path

from ..errors import NnapiError
from ..types import BYTE_SIZE_OF_CACHE_TOKEN, PreferenceCode, PriorityCode, ResultCode
from .cache import CachingSettings, prepare_on_device
from .device import Device, get_devices, get_supported_operations_for_devices
from .model import Model


class Compilation:
    """Prepare ``model`` for ``devices`` (default: the default driver).

    ``Compilation.create(model)`` / ``Compilation.create_for_devices(model, devices)``, then
    ``set_preference``, ``set_priority``, ``finish``. Errors: BAD_STATE (unfinished model,
    call after finish), BAD_DATA (bad argument, or an operation no chosen device supports),
    and the driver's prepare errors mapped to result codes.
    """

    def __init__(self, model: Model, devices: list[Device] | None = None, explicit: bool = False):
        if not isinstance(model, Model) or not model.finished:
            raise NnapiError(ResultCode.BAD_STATE, "compilation: the model is not finished")
        self.model = model
        self.devices = devices or get_devices()
        self.explicit = explicit
        self.preference = PreferenceCode.FAST_SINGLE_ANSWER
        self.priority = PriorityCode.MEDIUM
        self.timeout_ns: int | None = None
        self.caching: CachingSettings | None = None
        self.prepared = None
        self.device: Device | None = None
        self._finished = False

    @classmethod
    def create(cls, model: Model) -> "Compilation":
        return cls(model)

    @classmethod
    def create_for_devices(cls, model: Model, devices: list[Device]) -> "Compilation":
        if not devices:
            raise NnapiError(ResultCode.BAD_DATA, "create_for_devices: no devices")
        return cls(model, list(devices), explicit=True)

    def _check_open(self, call: str) -> None:
        if self._finished:
            raise NnapiError(ResultCode.BAD_STATE, f"{call}: the compilation is already finished")

    def set_preference(self, preference: PreferenceCode) -> None:
        self._check_open("set_preference")
        if preference not in PreferenceCode._value2member_map_:
            raise NnapiError(ResultCode.BAD_DATA, f"set_preference: {preference} is not a PreferenceCode")
        self.preference = PreferenceCode(preference)

    def set_priority(self, priority: PriorityCode) -> None:
        self._check_open("set_priority")
        if priority not in PriorityCode._value2member_map_:
            raise NnapiError(ResultCode.BAD_DATA, f"set_priority: {priority} is not a PriorityCode")
        self.priority = PriorityCode(priority)

    def set_timeout(self, duration_ns: int) -> None:
        """Bound the compilation to ``duration_ns`` nanoseconds (0 = none); only for a
        compilation created for exactly one device (BAD_DATA otherwise), FL4."""
        self._check_open("set_timeout")
        if not (self.explicit and len(self.devices) == 1):
            raise NnapiError(ResultCode.BAD_DATA, "set_timeout: only for a compilation created for one device")
        if duration_ns < 0:
            raise NnapiError(ResultCode.BAD_DATA, f"set_timeout: {duration_ns} is negative")
        self.timeout_ns = duration_ns or None

    def set_caching(self, cache_dir, token: bytes) -> None:
        """Cache the prepared model in ``cache_dir`` under ``token`` (32 bytes), FL3. Raises
        BAD_DATA for a wrong token length or a missing directory."""
        self._check_open("set_caching")
        if not isinstance(token, (bytes, bytearray)) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
            raise NnapiError(ResultCode.BAD_DATA,
                             f"set_caching: the token must be {BYTE_SIZE_OF_CACHE_TOKEN} bytes")
        if not Path(cache_dir).is_dir():
            raise NnapiError(ResultCode.BAD_DATA, f"set_caching: {cache_dir} is not a directory")
        self.caching = CachingSettings(Path(cache_dir), bytes(token))

    def deadline_ns(self) -> int | None:
        """Absolute monotonic deadline of the compilation, from set_timeout."""
        return None if self.timeout_ns is None else time.monotonic_ns() + self.timeout_ns

    def finish(self) -> None:
        """Pick the first device supporting every operation and prepare the model on it.
        Raises BAD_DATA naming the unsupported operations when no device supports them all."""
        self._check_open("finish")
        hal_model = self.model.to_hal()
        missing = None
        for device in self.devices:
            supported = get_supported_operations_for_devices(self.model, [device])
            if all(supported):
                self.prepared = prepare_on_device(device, hal_model, self.preference, self.priority,
                                                  self.deadline_ns(), self.caching)
                self.device = device
                self._finished = True
                return
            missing = [f"operation {k} ({op.type.name})" for k, (op, ok) in
                       enumerate(zip(hal_model.main.operations, supported)) if not ok]
        raise NnapiError(ResultCode.BAD_DATA, f"finish: no device supports {', '.join(missing or [])} "
                         f"(devices: {', '.join(d.name for d in self.devices)})")

    def can_fall_back(self) -> bool:
        """Whether a failed execution may be retried on the CPU reference device (only when
        the app did not choose the devices)."""
        return False

    @property
    def finished(self) -> bool:
        return self._finished
