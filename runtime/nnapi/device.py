"""Device discovery and introspection (``ANeuralNetworksDevice``), the runtime's own CPU
reference device (:func:`cpu_device`), and the guard that turns anything a driver raises
into an NNAPI result code."""
from __future__ import annotations

import contextlib
import threading

from .. import ops
from ..loader import DEFAULT_DRIVER, load_driver
from ..drivers.sample import SampleDevice
from ..errors import HalError, NnapiError
from ..hal.interfaces import IDevice
from ..hal.types import Capabilities, PerformanceInfo
from ..types import (RESULT_CODE_OF_ERROR_STATUS, DeviceTypeCode, ErrorStatus, FEATURE_LEVEL_CODES,
                     OperandType, ResultCode)

#: Name of the runtime's CPU device (AOSP ``CpuDevice``, ``nnapi-reference``).
CPU_DEVICE_NAME = "nnapi-reference"


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

    @property
    def extensions(self) -> list:
        """The vendor extensions (:class:`runtime.hal.types.Extension`) the driver reports
        (FL3). Raises NnapiError when the driver fails."""
        with driver_call(f"{self.name}: get_supported_extensions"):
            return list(self.hal.get_supported_extensions())

    def get_extension_support(self, extension_name: str) -> bool:
        """Whether the device supports the extension ``extension_name``
        (``ANeuralNetworksDevice_getExtensionSupport``)."""
        return any(e.name == extension_name for e in self.extensions)

    def wait(self) -> None:
        with driver_call(f"{self.name}: wait"):
            self.hal.wait()

    def __repr__(self) -> str:
        return f"Device({self.name!r}, feature level {self.feature_level})"


def get_devices(driver_specs=(DEFAULT_DRIVER,)) -> list[Device]:
    """Devices for each driver spec (name, entry point or module:factory). The CPU
    reference device is never among them (as ``ANeuralNetworks_getDevice`` hides AOSP's
    ``nnapi-reference`` from apps); see :func:`cpu_device`."""
    return [Device(load_driver(s)) for s in driver_specs]


class CpuReferenceDevice(SampleDevice):
    """The runtime's own CPU implementation (AOSP ``Manager.cpp`` ``CpuDevice``, named
    ``nnapi-reference``): every operation of the operation table at the table's highest
    feature level, type CPU, performance 1.0 for every operand type, relaxed float32 and
    control flow (AOSP ``kPerformance``). No compilation caching and no memory domains
    (AOSP ``CpuDevice::isCachingSupported`` is false). It is the last resort of
    compilations over the default device list, never offered for explicit device lists."""

    name = CPU_DEVICE_NAME
    version = "nncts-runtime"

    def __init__(self):
        levels = [s.feature_level for d in ops.REGISTRY.values() for s in d.signatures]
        super().__init__(max(levels))

    def get_type(self) -> DeviceTypeCode:
        return DeviceTypeCode.CPU

    def get_capabilities(self) -> Capabilities:
        perf = {t: PerformanceInfo(1.0, 1.0) for t in OperandType}
        return Capabilities(PerformanceInfo(1.0, 1.0), PerformanceInfo(1.0, 1.0), perf,
                            PerformanceInfo(1.0, 1.0), PerformanceInfo(1.0, 1.0))

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        return 0, 0

    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token):
        raise HalError(ErrorStatus.GENERAL_FAILURE, f"{CPU_DEVICE_NAME}: compilation caching is not supported")

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        raise HalError(ErrorStatus.GENERAL_FAILURE, f"{CPU_DEVICE_NAME}: memory domains are not supported")

    def get_supported_extensions(self) -> list:
        return []


_cpu_lock = threading.Lock()
_cpu: Device | None = None


def cpu_device() -> Device:
    """The CPU reference device ``nnapi-reference`` (one instance per process)."""
    global _cpu
    with _cpu_lock:
        if _cpu is None:
            _cpu = Device(CpuReferenceDevice())
        return _cpu


def is_cpu_device(device: Device) -> bool:
    """Whether ``device`` is the runtime's CPU reference device."""
    return isinstance(device.hal, CpuReferenceDevice)


def default_devices() -> list[Device]:
    """The device list of ``Compilation.create`` (AOSP ``DeviceManager::getDrivers``): the
    default drivers (:func:`get_devices`) followed by the CPU reference device."""
    return get_devices() + [cpu_device()]


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
