"""The driver interfaces a vendor implements (NNAPI HAL 1.3 / AIDL ``IDevice``,
``IPreparedModel``, ``IBurst``, ``IBuffer``), in snake_case.

A driver must implement :meth:`IPreparedModel.execute_synchronously` and the abstract
:class:`IDevice` methods; the other execution paths (asynchronous, fenced, burst, reusable)
have default implementations on top of it that a driver may override.

Errors are raised as :class:`runtime.errors.HalError` with an ``ErrorStatus``; any other
exception escaping a driver is treated by the runtime as a driver crash
(``GENERAL_FAILURE``). Deadlines are absolute ``time.monotonic_ns()`` values (None: no
deadline); durations are nanoseconds.
"""
from __future__ import annotations

import abc
import threading
import time

from ..errors import HalError
from ..types import DeviceTypeCode, ErrorStatus, MeasureTiming, PreferenceCode, PriorityCode
from .sync import ExecutionCallback, FencedExecutionCallback, SyncFence
from .types import BufferDesc, BufferRole, Capabilities, Model, OutputShape, Request, Timing

#: How long the default fenced path waits for a dependency with no deadline (seconds).
FENCE_WAIT_LIMIT_S = 60.0


def _result_of(call) -> tuple[ErrorStatus, list, Timing, str]:
    """(status, output shapes, timing, message) of a synchronous execution ``call()``."""
    try:
        shapes, timing = call()
        return ErrorStatus.NONE, shapes, timing, ""
    except HalError as e:
        return e.status, e.output_shapes or [], Timing(), e.message
    except Exception as e:  # noqa: BLE001 - driver code
        return ErrorStatus.GENERAL_FAILURE, [], Timing(), f"driver raised {type(e).__name__}: {e}"


class IBurst:
    """A burst: a sequence of executions of one prepared model that may reuse the memory
    pools they share (HAL ``IBurst``). ``memory_identifier_tokens`` gives, per request pool,
    a token the runtime keeps stable for the same memory object (-1 for none), so a driver
    may cache its mapping until :meth:`release_memory_resource`."""

    def __init__(self, prepared_model: "IPreparedModel"):
        self.prepared_model = prepared_model
        self.cache: dict[int, object] = {}

    def execute_synchronously(self, request: Request, memory_identifier_tokens: list[int],
                              measure: MeasureTiming = MeasureTiming.NO, deadline_ns: int | None = None,
                              loop_timeout_duration_ns: int | None = None):
        """Run ``request`` like ``IPreparedModel.execute_synchronously``; remembers the pools
        by token. Raises HalError(INVALID_ARGUMENT) when the token list does not match the
        pools or holds a token below -1 (AIDL ``IBurst``: non-negative, or -1 for none)."""
        if len(memory_identifier_tokens) != len(request.pools):
            raise HalError(ErrorStatus.INVALID_ARGUMENT,
                           f"{len(memory_identifier_tokens)} memory tokens for {len(request.pools)} pools")
        if any(token < -1 for token in memory_identifier_tokens):
            raise HalError(ErrorStatus.INVALID_ARGUMENT,
                           f"memory identifier tokens {list(memory_identifier_tokens)}: each must be >= -1")
        for token, pool in zip(memory_identifier_tokens, request.pools):
            if token >= 0:
                self.cache[token] = pool
        return self.prepared_model.execute_synchronously(request, measure, deadline_ns,
                                                         loop_timeout_duration_ns)

    def release_memory_resource(self, token: int) -> None:
        """Forget the pool cached for ``token`` (an unknown token is harmless; a token
        below -1 is INVALID_ARGUMENT)."""
        if token < -1:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"memory identifier token {token} must be >= -1")
        self.cache.pop(token, None)


class IExecution:
    """A reusable execution (AIDL ``IExecution``): one request computed any number of times."""

    def __init__(self, prepared_model: "IPreparedModel", request: Request, measure: MeasureTiming,
                 loop_timeout_duration_ns: int | None):
        self.prepared_model, self.request = prepared_model, request
        self.measure, self.loop_timeout_duration_ns = measure, loop_timeout_duration_ns

    def execute_synchronously(self, deadline_ns: int | None = None):
        return self.prepared_model.execute_synchronously(self.request, self.measure, deadline_ns,
                                                         self.loop_timeout_duration_ns)

    def execute_fenced(self, wait_for: list[SyncFence], deadline_ns=None, duration_ns=None):
        return self.prepared_model.execute_fenced(self.request, wait_for, self.measure, deadline_ns,
                                                  self.loop_timeout_duration_ns, duration_ns)


class IPreparedModel(abc.ABC):
    """A model compiled for one device."""

    @abc.abstractmethod
    def execute_synchronously(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                              deadline_ns: int | None = None,
                              loop_timeout_duration_ns: int | None = None
                              ) -> tuple[list[OutputShape], Timing]:
        """Run ``request``; write outputs into its pools.

        Returns one :class:`OutputShape` per output and the :class:`Timing` (measured when
        ``measure`` is YES). Raises HalError: INVALID_ARGUMENT (malformed request),
        OUTPUT_INSUFFICIENT_SIZE (with ``output_shapes``), GENERAL_FAILURE (execution
        failed), MISSED_DEADLINE_* (deadline passed).
        """

    def execute_asynchronously(self, request: Request, measure: MeasureTiming,
                               deadline_ns: int | None, loop_timeout_duration_ns: int | None,
                               callback: ExecutionCallback) -> None:
        """Start ``request`` and return at once; the result goes to ``callback.notify``
        exactly once (HAL ``execute_1_3``). Default: a thread running
        :meth:`execute_synchronously`."""
        def run():
            status, shapes, timing, message = _result_of(
                lambda: self.execute_synchronously(request, measure, deadline_ns, loop_timeout_duration_ns))
            callback.notify(status, shapes, timing, message)
        threading.Thread(target=run, name="nncts-async-execution", daemon=True).start()

    def execute_fenced(self, request: Request, wait_for: list[SyncFence], measure: MeasureTiming,
                       deadline_ns: int | None, loop_timeout_duration_ns: int | None,
                       duration_ns: int | None) -> tuple[SyncFence, FencedExecutionCallback]:
        """Run ``request`` once every fence in ``wait_for`` is signaled; return a fence
        signaled when the outputs are ready and a callback with the timings (HAL
        ``executeFenced``). ``duration_ns`` bounds the run after the dependencies are met
        (MISSED_DEADLINE_TRANSIENT when exceeded). Default: waits here, then runs
        :meth:`execute_synchronously`. Raises HalError(INVALID_ARGUMENT) for a bad fence."""
        launched = time.monotonic_ns()
        for fence in wait_for:
            if not isinstance(fence, SyncFence):
                raise HalError(ErrorStatus.INVALID_ARGUMENT, "execute_fenced: wait_for holds a non-fence")
            limit = FENCE_WAIT_LIMIT_S if deadline_ns is None else max(deadline_ns - time.monotonic_ns(), 0) / 1e9
            if not fence.wait(limit):
                raise HalError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "execute_fenced: a dependency never signaled")
            if fence.status != ErrorStatus.NONE:
                raise HalError(ErrorStatus.GENERAL_FAILURE, "execute_fenced: a dependency failed")
        fenced_start = time.monotonic_ns()
        if duration_ns is not None:
            end = fenced_start + duration_ns
            deadline_ns = end if deadline_ns is None else min(deadline_ns, end)
        status, _shapes, timing, message = _result_of(
            lambda: self.execute_synchronously(request, measure, deadline_ns, loop_timeout_duration_ns))
        if status != ErrorStatus.NONE:
            raise HalError(status, message or "execute_fenced failed")
        fence = SyncFence.signaled()
        callback = FencedExecutionCallback(fence)
        if measure == MeasureTiming.YES and timing.time_in_driver != Timing().time_in_driver:
            waited = fenced_start - launched
            callback.timing_launched = Timing(timing.time_on_device + waited, timing.time_in_driver + waited)
            callback.timing_fenced = timing
        return fence, callback

    def configure_execution_burst(self) -> IBurst:
        """A burst object for this prepared model (HAL ``configureExecutionBurst``)."""
        return IBurst(self)

    def create_reusable_execution(self, request: Request, measure: MeasureTiming,
                                  loop_timeout_duration_ns: int | None) -> IExecution:
        """A reusable execution of ``request`` (AIDL ``createReusableExecution``)."""
        return IExecution(self, request, measure, loop_timeout_duration_ns)


class IBuffer(abc.ABC):
    """A driver-allocated buffer (memory domain, HAL ``IBuffer``)."""

    @abc.abstractmethod
    def copy_to(self, dst) -> None:
        """Copy the buffer's content into shared memory ``dst`` (same size). Raises
        HalError: INVALID_ARGUMENT (size mismatch), GENERAL_FAILURE (uninitialized)."""

    @abc.abstractmethod
    def copy_from(self, src, dimensions: list[int]) -> None:
        """Fill the buffer from shared memory ``src`` with the given dimensions. Raises
        HalError(INVALID_ARGUMENT) for a size or dimensions mismatch."""


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
        """Compile ``model``. ``model_cache``/``data_cache``: writable binary files (as many
        as :meth:`get_number_of_cache_files_needed` asks) the driver may fill for
        ``token``. Raises HalError: INVALID_ARGUMENT (malformed model or argument),
        GENERAL_FAILURE (cannot prepare), MISSED_DEADLINE_* ."""

    def prepare_model_from_cache(self, deadline_ns: int | None, model_cache: list, data_cache: list,
                                 token: bytes) -> IPreparedModel:
        """Rebuild a prepared model from cache files written by :meth:`prepare_model` for
        ``token``. Must reject corrupted, truncated or foreign caches with HalError
        (GENERAL_FAILURE / INVALID_ARGUMENT), never crash. Default: caching unsupported."""
        raise HalError(ErrorStatus.GENERAL_FAILURE, "compilation caching is not supported")

    def allocate(self, desc: BufferDesc, prepared_models: list[IPreparedModel],
                 input_roles: list[BufferRole], output_roles: list[BufferRole]) -> tuple[IBuffer, int]:
        """Allocate a driver buffer for the given roles; returns (buffer, token > 0). Default:
        memory domains unsupported (GENERAL_FAILURE)."""
        raise HalError(ErrorStatus.GENERAL_FAILURE, "memory domains are not supported")

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
        """Vendor extensions (:class:`runtime.hal.types.Extension`) the driver implements."""
        return []

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        """(model cache files, data cache files); (0, 0) = no compilation caching."""
        return 0, 0

    def wait(self) -> None:
        """Block until the device is ready (HAL ``IDevice::wait``)."""
