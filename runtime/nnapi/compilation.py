"""Compilation (``ANeuralNetworksCompilation``): a finished model prepared for one or more
devices, partitioned between them when no single device is best for every operation
(AOSP ``CompilationBuilder::finish`` and ``ModelBuilder::partitionTheWork``, see
:mod:`runtime.nnapi.partition`)."""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

from ..errors import NnapiError
from ..types import BYTE_SIZE_OF_CACHE_TOKEN, OperationType, PreferenceCode, PriorityCode, ResultCode
from .cache import CachingSettings, prepare_on_device
from .device import Device, cpu_device, default_devices, is_cpu_device
from .model import Model
from .partition import ExecutionPlan, ExecutionStep, build_plan, step_cache_token, MODEL_INPUT, MODEL_OUTPUT

#: Result codes of a failed partitioning that are the app's fault: never retried on the CPU
#: (AOSP ``CompilationBuilder::finish``: BAD_DATA and UNEXPECTED_NULL).
_NO_FALLBACK = (ResultCode.BAD_DATA, ResultCode.UNEXPECTED_NULL)


class Compilation:
    """Prepare ``model`` for a list of devices.

    ``Compilation.create(model)``: the default device list (:func:`default_devices`: the
    default drivers, then the CPU reference device ``nnapi-reference`` as last resort); the
    work is partitioned between them and, if a device fails to prepare its part, the whole
    model is compiled on the CPU instead (``fell_back_to_cpu`` says why).
    ``Compilation.create_for_devices(model, devices)``: exactly ``devices``, no CPU
    fallback: an operation none of them supports is BAD_DATA, a failed prepare is the
    driver's error. Then ``set_preference``, ``set_priority``, ``set_timeout``,
    ``set_caching``, ``finish``.

    After finish: ``plan`` (the :class:`~runtime.nnapi.partition.ExecutionPlan`, with
    ``plan.steps``), ``prepared`` (the IPreparedModel to execute: the single step's prepared
    model, or the plan itself), ``device`` (the Device of a single-step compilation, None
    for a multi-step one). Errors: BAD_STATE (unfinished model, call after finish), BAD_DATA
    (bad argument, or an operation no device supports), and the driver's prepare errors
    mapped to result codes.
    """

    def __init__(self, model: Model, devices: list[Device] | None = None, explicit: bool = False):
        if not isinstance(model, Model) or not model.finished:
            raise NnapiError(ResultCode.BAD_STATE, "compilation: the model is not finished")
        self.model = model
        if devices is None:
            devices = default_devices()
        devices = list(devices)
        if not explicit and not any(is_cpu_device(d) for d in devices):
            devices.append(cpu_device())  # the default list always ends with the CPU
        self.devices = devices
        self.explicit = explicit
        self.preference = PreferenceCode.FAST_SINGLE_ANSWER
        self.priority = PriorityCode.MEDIUM
        self.timeout_ns: int | None = None
        self.caching: CachingSettings | None = None
        self.plan: ExecutionPlan | None = None
        self.prepared = None
        self.device: Device | None = None
        #: Why the whole model was compiled on the CPU reference device instead (None: it was not).
        self.fell_back_to_cpu: str | None = None
        self._cpu_prepared = None
        self._cpu_lock = threading.Lock()
        self._finish_called = False
        self._finished = False

    @classmethod
    def create(cls, model: Model) -> "Compilation":
        """A compilation over the default device list (``ANeuralNetworksCompilation_create``)."""
        return cls(model)

    @classmethod
    def create_for_devices(cls, model: Model, devices: list[Device]) -> "Compilation":
        """A compilation over exactly ``devices``, no CPU fallback
        (``ANeuralNetworksCompilation_createForDevices``). BAD_DATA for an empty list, a
        non-Device or a device listed twice."""
        devices = list(devices or [])
        if not devices:
            raise NnapiError(ResultCode.BAD_DATA, "create_for_devices: no devices")
        for d in devices:
            if not isinstance(d, Device):
                raise NnapiError(ResultCode.UNEXPECTED_NULL if d is None else ResultCode.BAD_DATA,
                                 f"create_for_devices: {d!r} is not a Device")
        if len({id(d) for d in devices}) != len(devices):
            raise NnapiError(ResultCode.BAD_DATA, "create_for_devices: a device is listed twice")
        return cls(model, devices, explicit=True)

    def _check_open(self, call: str) -> None:
        if self._finish_called:
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
        """Partition the model between the devices and prepare every step (AOSP
        ``CompilationBuilder::finish``). A second call is BAD_STATE, even after a failure.

        Raises NnapiError: BAD_DATA naming an operation no device supports (never retried
        on the CPU: the app's fault); a step's prepare error naming its device (explicit
        devices only; otherwise the whole model is compiled on the CPU reference device,
        ``fell_back_to_cpu`` recording why, unless the model has extension operations the
        CPU cannot run).
        """
        self._check_open("finish")
        self._finish_called = True
        hal_model = self.model.to_hal()
        deadline = self.deadline_ns()
        try:
            plan = build_plan(hal_model, self.devices, self.preference)
            self._prepare_steps(plan, deadline)
        except NnapiError as e:
            if self.explicit or e.code in _NO_FALLBACK or _has_extension_operations(hal_model):
                raise
            cpu = cpu_device()
            self.fell_back_to_cpu = e.message
            prepared = prepare_on_device(cpu, hal_model, self.preference, self.priority, deadline,
                                         self.caching)
            plan = ExecutionPlan(hal_model, [ExecutionStep(
                0, cpu, list(range(len(hal_model.main.operations))), hal_model,
                [(MODEL_INPUT, i) for i in hal_model.main.input_indexes],
                [(MODEL_OUTPUT, i) for i in hal_model.main.output_indexes], prepared)], self.preference)
            self._cpu_prepared = prepared
        self.plan = plan
        if plan.is_simple:
            self.prepared = plan.steps[0].prepared
            self.device = plan.steps[0].device
            if is_cpu_device(self.device):
                self._cpu_prepared = self.prepared
        else:
            self.prepared = plan
            self.device = None
        self._finished = True

    def _prepare_steps(self, plan: ExecutionPlan, deadline) -> None:
        """Prepare every step of ``plan`` through ``prepare_on_device`` (a step of a
        multi-step plan caches under its own token, AOSP ``ExecutionStep`` token hashing).
        Raises the first failure, its message naming the step's device and operations."""
        for step in plan.steps:
            caching, partition = self.caching, ""
            if caching is not None and not plan.is_simple:
                caching = replace(caching, token=step_cache_token(caching.token, step.operation_indexes))
                partition = "operations " + ",".join(str(k) for k in step.operation_indexes)
            try:
                if partition:
                    step.prepared = prepare_on_device(step.device, step.model, self.preference,
                                                      self.priority, deadline, caching, partition=partition)
                else:
                    step.prepared = prepare_on_device(step.device, step.model, self.preference,
                                                      self.priority, deadline, caching)
            except NnapiError as e:
                what = "" if plan.is_simple else f" (step {step.index}: operations {step.operation_indexes})"
                raise NnapiError(e.code, f"finish: preparing on {step.device_name}{what} failed: "
                                 f"{e.message}") from e

    def can_fall_back(self) -> bool:
        """Whether a failed execution may be retried on the CPU reference device (AOSP
        ``ExecutionBuilder``: partitioning allows fallback, i.e. the app did not choose the
        devices, and the plan is not already the whole model on the CPU); never for models
        with extension operations."""
        if not self._finished or self.explicit:
            return False
        if self.plan is not None and self.plan.is_simple and is_cpu_device(self.plan.steps[0].device):
            return False
        return not _has_extension_operations(self.model.to_hal())

    def cpu_fallback(self):
        """The whole model prepared on the CPU reference device (prepared once, then reused):
        what an execution of a non-explicit compilation retries on when its plan fails (AOSP
        ``ExecutionBuilder`` CPU fallback). Raises NnapiError: BAD_STATE before finish or for
        a compilation created for explicit devices (no fallback allowed); the CPU's prepare
        error otherwise."""
        if not self._finished:
            raise NnapiError(ResultCode.BAD_STATE, "cpu_fallback: the compilation is not finished")
        if self.explicit:
            raise NnapiError(ResultCode.BAD_STATE, "cpu_fallback: the compilation was created for "
                             "explicit devices; it never falls back to the CPU")
        with self._cpu_lock:
            if self._cpu_prepared is None:
                self._cpu_prepared = prepare_on_device(cpu_device(), self.model.to_hal(), self.preference,
                                                       self.priority, None, self.caching)
            return self._cpu_prepared

    @property
    def device_names(self) -> list[str]:
        """Names of the devices the compilation runs on (after finish), in step order."""
        return [d.name for d in self.plan.devices] if self.plan is not None else []

    @property
    def finished(self) -> bool:
        return self._finished


def _has_extension_operations(hal_model) -> bool:
    """Whether the model uses an operation type outside NNAPI's own (the CPU cannot run it)."""
    return any(int(op.type) not in OperationType._value2member_map_
               for sg in [hal_model.main, *hal_model.referenced] for op in sg.operations)
