"""Bursts (``ANeuralNetworksBurst``): a sequence of executions of one compilation that lets
the driver keep the memory objects they share mapped between executions."""
from __future__ import annotations

import itertools

from ..errors import NnapiError
from ..types import ResultCode
from .compilation import Compilation
from .device import driver_call


class Burst:
    """A burst for ``compilation``; use with :meth:`Execution.burst_compute`, then
    :meth:`free`. Memory objects get stable tokens across executions
    (``memory_identifier_tokens`` of HAL ``IBurst``)."""

    def __init__(self, compilation: Compilation):
        if not isinstance(compilation, Compilation) or not compilation.finished:
            raise NnapiError(ResultCode.BAD_STATE, "burst: the compilation is not finished")
        self.compilation = compilation
        self._hal = None
        self._tokens: dict[int, int] = {}
        self._memories: dict[int, object] = {}
        self._next = itertools.count(1)
        self.freed = False

    def hal_burst(self):
        """The driver's IBurst (configured on first use). Raises NnapiError."""
        if self.freed:
            raise NnapiError(ResultCode.BAD_STATE, "burst: already freed")
        if self._hal is None:
            with driver_call("configure_execution_burst"):
                self._hal = self.compilation.prepared.configure_execution_burst()
        return self._hal

    def token_for(self, memory) -> int:
        """Stable token of a memory object (or of a pool the runtime made for user buffers:
        -1, not cached)."""
        if memory is None:
            return -1
        key = id(memory)
        if key not in self._tokens:
            self._tokens[key] = next(self._next)
            self._memories[key] = memory  # keep alive so ids stay unique
        return self._tokens[key]

    def free(self) -> None:
        """Release the burst and every memory the driver cached for it."""
        if self._hal is not None and not self.freed:
            with driver_call("release_memory_resource"):
                for token in self._tokens.values():
                    self._hal.release_memory_resource(token)
        self.freed = True
        self._tokens.clear()
        self._memories.clear()
