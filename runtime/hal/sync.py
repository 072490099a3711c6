"""Synchronization objects of the HAL: sync fences and the callbacks of asynchronous and
fenced executions (HAL ``IExecutionCallback`` / ``IFencedExecutionCallback``, AIDL
``ExecutionResult``), built on :mod:`threading`."""
from __future__ import annotations

import threading

from ..types import ErrorStatus
from .types import OutputShape, Timing


class SyncFence:
    """A one-shot fence: :meth:`signal` once (with an ErrorStatus), :meth:`wait` with a
    timeout in seconds (None = forever). ``SyncFence.signaled()`` makes one already
    signaled with NONE."""

    def __init__(self):
        self._event = threading.Event()
        self.status: ErrorStatus | None = None

    @classmethod
    def signaled(cls, status: ErrorStatus = ErrorStatus.NONE) -> "SyncFence":
        fence = cls()
        fence.signal(status)
        return fence

    def signal(self, status: ErrorStatus = ErrorStatus.NONE) -> None:
        if not self._event.is_set():
            self.status = ErrorStatus(status)
            self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """True once signaled; False if ``timeout`` seconds passed first."""
        return self._event.wait(timeout)

    @property
    def is_signaled(self) -> bool:
        return self._event.is_set()


class ExecutionCallback:
    """Receives the result of ``IPreparedModel.execute_asynchronously`` (HAL
    ``IExecutionCallback.notify``): status, output shapes and timing; :meth:`wait` blocks
    until notified or ``timeout`` seconds pass."""

    def __init__(self):
        self._event = threading.Event()
        self.status: ErrorStatus | None = None
        self.output_shapes: list[OutputShape] = []
        self.timing = Timing()
        self.message = ""

    def notify(self, status: ErrorStatus, output_shapes=None, timing: Timing | None = None,
               message: str = "") -> None:
        """Deliver the result; later calls are ignored (a callback fires once)."""
        if self._event.is_set():
            return
        self.status = ErrorStatus(status)
        self.output_shapes = list(output_shapes or [])
        self.timing = timing or Timing()
        self.message = message
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


class FencedExecutionCallback:
    """What ``execute_fenced`` returns beside its fence (HAL ``IFencedExecutionCallback``):
    :meth:`get_execution_info` gives (timing_launched, timing_fenced, status) once the
    fence is signaled."""

    def __init__(self, fence: SyncFence):
        self.fence = fence
        self.timing_launched = Timing()
        self.timing_fenced = Timing()
        self.status = ErrorStatus.NONE

    def get_execution_info(self) -> tuple[Timing, Timing, ErrorStatus]:
        return self.timing_launched, self.timing_fenced, self.status
