"""Events (``ANeuralNetworksEvent``): the completion of an asynchronous or fenced execution."""
from __future__ import annotations

import threading
from typing import Callable

from ..errors import NnapiError
from ..hal.sync import SyncFence
from ..types import ErrorStatus, ResultCode

#: How long :meth:`Event.wait` waits for a driver by default before declaring the
#: completion lost (seconds). The runtime never waits forever on a driver.
EVENT_WAIT_LIMIT_S = 60.0


class Event:
    """Completion of an execution. :meth:`wait` blocks until done and raises the execution's
    NnapiError if it failed (OP_FAILED when the driver never completed within the limit).

    ``Event.from_sync_fence(fence)`` wraps an external fence (a dependency only).
    """

    def __init__(self, waiter: Callable[[float], None] | None = None, fence: SyncFence | None = None):
        self._waiter = waiter
        self._fence = fence
        self._lock = threading.Lock()
        self._done = False
        self._error: NnapiError | None = None

    @classmethod
    def from_sync_fence(cls, fence: SyncFence) -> "Event":
        """An event signaled with ``fence`` (ANeuralNetworksEvent_createFromSyncFenceFd)."""
        if not isinstance(fence, SyncFence):
            raise NnapiError(ResultCode.BAD_DATA, "from_sync_fence: not a SyncFence")

        def wait(limit: float) -> None:
            if not fence.wait(limit):
                raise NnapiError(ResultCode.OP_FAILED, f"sync fence not signaled within {limit} s")
            if fence.status != ErrorStatus.NONE:
                raise NnapiError(ResultCode.OP_FAILED, f"sync fence signaled {fence.status.name}")
        return cls(wait, fence)

    @property
    def sync_fence(self) -> SyncFence:
        """A fence signaled when this event completes (for start_compute_with_dependencies)."""
        if self._fence is None:
            fence = SyncFence()

            def bridge():
                try:
                    self.wait()
                    fence.signal(ErrorStatus.NONE)
                except NnapiError:
                    fence.signal(ErrorStatus.GENERAL_FAILURE)
            threading.Thread(target=bridge, daemon=True, name="nncts-event-fence").start()
            self._fence = fence
        return self._fence

    def wait(self, timeout_s: float | None = None) -> None:
        """Block until the execution completes (at most ``timeout_s`` seconds, default
        :data:`EVENT_WAIT_LIMIT_S`). Raises NnapiError with the execution's result code."""
        with self._lock:
            if not self._done:
                try:
                    if self._waiter is not None:
                        self._waiter(EVENT_WAIT_LIMIT_S if timeout_s is None else timeout_s)
                except NnapiError as e:
                    self._error = e
                self._done = True
        if self._error is not None:
            raise NnapiError(self._error.code, self._error.message)
