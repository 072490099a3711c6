"""Exceptions of the runtime: front-end errors carry an NNAPI ``ResultCode``, HAL errors an
``ErrorStatus``; operation rules raise :class:`OperationError`, which the caller maps to the
code of the phase it happened in (model validation or execution)."""
from __future__ import annotations

from .types import ErrorStatus, ResultCode


class NnapiError(Exception):
    """A front-end API call failed with ``code`` (an NNAPI ``ResultCode``).

    ``str(err)`` reads ``"BAD_DATA: ADD (operation 0): input 1 ..."``.
    """

    def __init__(self, code: ResultCode, message: str):
        self.code = ResultCode(code)
        self.message = message
        super().__init__(f"{self.code.name}: {message}")


class HalError(Exception):
    """A HAL call failed with ``status`` (an ``ErrorStatus``).

    ``output_shapes`` is set for ``OUTPUT_INSUFFICIENT_SIZE`` (one ``OutputShape`` per output).
    """

    def __init__(self, status: ErrorStatus, message: str, output_shapes=None):
        self.status = ErrorStatus(status)
        self.message = message
        self.output_shapes = output_shapes
        super().__init__(f"{self.status.name}: {message}")


class OperationError(ValueError):
    """An operation's own rule failed (bad operand type, shape, parameter value).

    Raised by the operation table's ``validate``/``prepare``/``execute`` functions. Model
    validation turns it into ``INVALID_ARGUMENT``/``BAD_DATA``; execution into
    ``GENERAL_FAILURE``/``OP_FAILED``.
    """
