"""Device discovery and introspection (``ANeuralNetworksDevice``), and the guard that turns
anything a driver raises into an NNAPI result code."""
from __future__ import annotations

import contextlib

from ..drivers import DEFAULT_DRIVER, load_driver
from ..errors import HalError, NnapiError
from ..hal.interfaces import IDevice
from ..types import RESULT_CODE_OF_ERROR_STATUS, DeviceTypeCode, FEATURE_LEVEL_CODES, ResultCode


@contextlib.contextmanager
def driver_call(what: str):
    """Map a HalError to its ResultCode and any other exception from a driver to OP_FAILED
    (a driver crash must never take the runtime down)."""
    try:
        yield
    except NnapiError:
        raise
    except HalError as e:
        raise NnapiError(RESULT_CODE_OF_ERROR_STATUS.get(e.status, ResultCode.OP_FAILED),
                         f"{what}: {e}") from None
    except Exception as e:  # noqa: BLE001 - untrusted driver code
        raise NnapiError(ResultCode.OP_FAILED, f"{what}: driver raised {type(e).__name__}: {e}") from e


class Device:
    """A device as the front end sees it: name, type, version, feature level."""

    def __init__(self, hal: IDevice):
        self.hal = hal

    @property
    def name(self) -> str:
        return self.hal.get_name()

    @property
    def type(self) -> DeviceTypeCode:
        return DeviceTypeCode(self.hal.get_type())

    @property
    def version(self) -> str:
        return self.hal.get_version_string()

    @property
    def feature_level(self) -> int:
        """Feature level number (1..8)."""
        return int(self.hal.get_feature_level())

    @property
    def feature_level_code(self) -> int:
        """The ``ANEURALNETWORKS_FEATURE_LEVEL_*`` code of :attr:`feature_level`."""
        return FEATURE_LEVEL_CODES[self.feature_level]

    def wait(self) -> None:
        with driver_call(f"{self.name}: wait"):
            self.hal.wait()

    def __repr__(self) -> str:
        return f"Device({self.name!r}, feature level {self.feature_level})"


def get_devices(driver_specs=(DEFAULT_DRIVER,)) -> list[Device]:
    """Devices for each driver spec (name, entry point or module:factory)."""
    return [Device(load_driver(s)) for s in driver_specs]


def get_supported_operations_for_devices(model, devices) -> list[bool]:
    """Per operation of ``model`` (finished front-end Model): whether any of ``devices``
    supports it. Raises NnapiError (BAD_STATE if the model is unfinished)."""
    hal_model = model.to_hal()
    supported = [False] * len(hal_model.main.operations)
    for d in devices:
        with driver_call(f"{d.name}: get_supported_operations"):
            result = d.hal.get_supported_operations(hal_model)
        if len(result) != len(supported):
            raise NnapiError(ResultCode.OP_FAILED, f"{d.name}: get_supported_operations returned "
                             f"{len(result)} entries for {len(supported)} operations")
        supported = [a or bool(b) for a, b in zip(supported, result)]
    return supported
