"""Compilation (``ANeuralNetworksCompilation``): a finished model prepared for a device."""
from __future__ import annotations

from ..errors import NnapiError
from ..types import PreferenceCode, PriorityCode, ResultCode
from .device import Device, driver_call, get_devices, get_supported_operations_for_devices
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

    def finish(self) -> None:
        """Pick the first device supporting every operation and prepare the model on it.
        Raises BAD_DATA naming the unsupported operations when no device supports them all."""
        self._check_open("finish")
        hal_model = self.model.to_hal()
        missing = None
        for device in self.devices:
            supported = get_supported_operations_for_devices(self.model, [device])
            if all(supported):
                with driver_call(f"{device.name}: prepare_model"):
                    self.prepared = device.hal.prepare_model(hal_model, self.preference, self.priority)
                self.device = device
                self._finished = True
                return
            missing = [f"operation {k} ({op.type.name})" for k, (op, ok) in
                       enumerate(zip(hal_model.main.operations, supported)) if not ok]
        raise NnapiError(ResultCode.BAD_DATA, f"finish: no device supports {', '.join(missing or [])} "
                         f"(devices: {', '.join(d.name for d in self.devices)})")

    @property
    def finished(self) -> bool:
        return self._finished
