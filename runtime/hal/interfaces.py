"""The driver interfaces a vendor implements: :class:`IDevice` and :class:`IPreparedModel`
(NNAPI HAL 1.3 / AIDL ``IDevice``, ``IPreparedModel``), in snake_case.

Errors are raised as :class:`runtime.errors.HalError` with an ``ErrorStatus``; any other
exception escaping a driver is treated by the runtime as a driver crash
(``GENERAL_FAILURE``).
"""
from __future__ import annotations

import abc

from ..types import DeviceTypeCode, MeasureTiming, PreferenceCode, PriorityCode
from .types import Capabilities, Model, OutputShape, Request, Timing


class IPreparedModel(abc.ABC):
    """A model compiled for one device."""

    @abc.abstractmethod
    def execute_synchronously(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                              deadline_ns: int | None = None,
                              loop_timeout_duration_ns: int | None = None
                              ) -> tuple[list[OutputShape], Timing]:
        """Run ``request``; write outputs into its pools.

        Returns one :class:`OutputShape` per output and the :class:`Timing`.
        Raises HalError: INVALID_ARGUMENT (malformed request), OUTPUT_INSUFFICIENT_SIZE
        (with ``output_shapes``), GENERAL_FAILURE (execution failed),
        MISSED_DEADLINE_* (deadline passed).
        """


class IDevice(abc.ABC):
    """A driver's device (HAL ``IDevice``)."""

    @abc.abstractmethod
    def get_name(self) -> str:
        """The device name, e.g. ``"nncts-sample"``."""

    @abc.abstractmethod
    def get_capabilities(self) -> Capabilities:
        """Performance figures per operand type (positive, stable between calls)."""

    @abc.abstractmethod
    def get_supported_operations(self, model: Model) -> list[bool]:
        """One bool per operation of ``model.main``. Raises HalError(INVALID_ARGUMENT) when
        the model is malformed."""

    @abc.abstractmethod
    def prepare_model(self, model: Model, preference: PreferenceCode = PreferenceCode.FAST_SINGLE_ANSWER,
                      priority: PriorityCode = PriorityCode.MEDIUM, deadline_ns: int | None = None,
                      model_cache: list | None = None, data_cache: list | None = None,
                      token: bytes | None = None) -> IPreparedModel:
        """Compile ``model``. Raises HalError: INVALID_ARGUMENT (malformed model or
        argument), GENERAL_FAILURE (cannot prepare), MISSED_DEADLINE_* ."""

    def get_type(self) -> DeviceTypeCode:
        """The kind of device (``DeviceTypeCode``); OTHER unless overridden."""
        return DeviceTypeCode.OTHER

    def get_version_string(self) -> str:
        """Driver version, free-form."""
        return "unknown"

    def get_feature_level(self) -> int:
        """Highest NNAPI feature level (1..8) the driver supports."""
        return 1

    def get_supported_extensions(self) -> list:
        """Vendor extensions the driver implements (none by default)."""
        return []

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        """(model cache files, data cache files); (0, 0) = no compilation caching."""
        return 0, 0

    def wait(self) -> None:
        """Block until the device is ready (HAL ``IDevice::wait``)."""
