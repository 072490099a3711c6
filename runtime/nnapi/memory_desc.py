"""Memory descriptors (``ANeuralNetworksMemoryDesc``, FL4): the roles (compilation,
input/output index, usage frequency) and dimensions a memory created from a descriptor
(:meth:`runtime.nnapi.memory.Memory.from_desc`) is made for.

Failures raise :class:`NnapiError`: BAD_DATA (bad argument, incompatible roles), BAD_STATE
(call after finish, or before).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..drivers.buffers import OperandMeta, combine_dimensions
from ..errors import NnapiError
from ..types import ResultCode, is_tensor_type

INPUT, OUTPUT = "input", "output"


def _bad(message: str) -> NnapiError:
    return NnapiError(ResultCode.BAD_DATA, message)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@runtime_checkable
class RoleCompilation(Protocol):
    """What a descriptor role needs of its compilation: the finished flag, the model (whose
    ``input_operands`` / ``output_operands`` the role's index selects), and, for
    :meth:`runtime.nnapi.memory.Memory.from_desc`, the ``plan``, ``prepared`` model and
    single ``device`` of a finished compilation.

    :class:`runtime.nnapi.compilation.Compilation` is one. The check is structural
    (``isinstance`` looks for these attributes) so that this module, which the model and
    compilation modules import through :mod:`runtime.nnapi.memory`, does not import them.
    """

    model: Any
    plan: Any
    prepared: Any
    device: Any

    @property
    def finished(self) -> bool: ...


@dataclass(frozen=True)
class _Role:
    compilation: RoleCompilation
    kind: str
    index: int
    frequency: float


class MemoryDesc:
    """``ANeuralNetworksMemoryDesc`` (FL4): the roles (compilation, input/output index,
    usage frequency) and dimensions a :meth:`Memory.from_desc` memory is created for.

    Build with :meth:`add_input_role` / :meth:`add_output_role` / :meth:`set_dimensions`,
    then :meth:`finish`. Rules (NeuralNetworks.h ``ANeuralNetworksMemoryDesc_*``):
    BAD_STATE for any call after ``finish``; BAD_DATA for an unfinished compilation, an
    index out of range, a frequency outside (0, 1], the same role twice, roles whose
    operands differ in type/scale/zeroPoint (or per-channel quantization), dimensions
    (of the roles' operands and set_dimensions) that are incompatible (both ranks known and
    different, or an axis known in both with different values), dimensions for a scalar,
    and ``finish`` without any role.
    """

    def __init__(self):
        self._roles: list[_Role] = []
        self._keys: set = set()
        self._meta: OperandMeta | None = None
        self._dims: list[int] = []
        self._finished = False

    def _check_open(self, call: str) -> None:
        if self._finished:
            raise NnapiError(ResultCode.BAD_STATE, f"MemoryDesc.{call}: the descriptor is already finished")

    def _add_role(self, call: str, kind: str, compilation, index, frequency) -> None:
        self._check_open(call)
        where = f"MemoryDesc.{call}({index})"
        if compilation is None:
            raise NnapiError(ResultCode.UNEXPECTED_NULL, f"{where}: no compilation")
        if not isinstance(compilation, RoleCompilation):
            raise _bad(f"{where}: {type(compilation).__name__} is not a Compilation")
        if (compilation, kind, index) in self._keys:
            raise _bad(f"{where}: the same {kind} of this compilation is already a role")
        if not compilation.finished:
            raise _bad(f"{where}: the compilation is not finished")
        operands = compilation.model.input_operands if kind == INPUT else compilation.model.output_operands
        if not _is_int(index) or not 0 <= index < len(operands):
            raise _bad(f"{where}: {kind} index {index} is out of range (the model has "
                       f"{len(operands)} {kind}s)")
        operand = operands[index]
        meta = OperandMeta.of(operand)
        if self._meta is not None and meta != self._meta:
            raise _bad(f"{where}: the {kind} operand is {meta.type.name} (scale {meta.scale}, zeroPoint "
                       f"{meta.zero_point}), the other roles' is {self._meta.type.name} (scale "
                       f"{self._meta.scale}, zeroPoint {self._meta.zero_point})")
        if not is_tensor_type(meta.type) and self._dims:
            raise _bad(f"{where}: the {kind} is a scalar {meta.type.name}, but the descriptor has "
                       f"dimensions {self._dims}")
        combined = combine_dimensions(self._dims, operand.dimensions)
        if combined is None:
            raise _bad(f"{where}: the {kind}'s dimensions {list(operand.dimensions)} are incompatible "
                       f"with the descriptor's {self._dims}")
        if not isinstance(frequency, (int, float, np.floating)) or math.isnan(frequency) \
                or not 0.0 < frequency <= 1.0:
            raise _bad(f"{where}: frequency {frequency} must be in (0, 1]")
        self._roles.append(_Role(compilation, kind, int(index), float(frequency)))
        self._keys.add((compilation, kind, int(index)))
        self._meta = meta
        self._dims = combined

    def add_input_role(self, compilation, index: int, frequency: float = 1.0) -> None:
        """The memory will be input ``index`` of executions of ``compilation`` (finished),
        used with ``frequency`` in (0, 1] (``ANeuralNetworksMemoryDesc_addInputRole``)."""
        self._add_role("add_input_role", INPUT, compilation, index, frequency)

    def add_output_role(self, compilation, index: int, frequency: float = 1.0) -> None:
        """The memory will be output ``index`` of executions of ``compilation`` (finished),
        used with ``frequency`` in (0, 1] (``ANeuralNetworksMemoryDesc_addOutputRole``)."""
        self._add_role("add_output_role", OUTPUT, compilation, index, frequency)

    def set_dimensions(self, dimensions) -> None:
        """Refine the memory's dimensions (0 = unknown axis; [] for a scalar), compatible
        with every role's operand (``ANeuralNetworksMemoryDesc_setDimensions``). Raises
        BAD_DATA for negative/non-uint32 values, dimensions for a scalar, or incompatible
        dimensions; BAD_STATE after finish."""
        self._check_open("set_dimensions")
        dims = list(dimensions if dimensions is not None else [])
        if any(not _is_int(d) or not 0 <= d <= 0xFFFFFFFF for d in dims):
            raise _bad(f"MemoryDesc.set_dimensions: {dims} must be uint32 values")
        dims = [int(d) for d in dims]
        if self._meta is not None and not is_tensor_type(self._meta.type) and dims:
            raise _bad(f"MemoryDesc.set_dimensions: the roles are scalar {self._meta.type.name}, "
                       f"which take no dimensions ({dims})")
        combined = combine_dimensions(self._dims, dims)
        if combined is None:
            raise _bad(f"MemoryDesc.set_dimensions: {dims} are incompatible with the roles' {self._dims}")
        self._dims = combined

    def finish(self) -> None:
        """Freeze the descriptor (``ANeuralNetworksMemoryDesc_finish``). Raises BAD_DATA
        when no role was added, BAD_STATE when already finished."""
        self._check_open("finish")
        if not self._roles:
            raise _bad("MemoryDesc.finish: no input or output role was added")
        self._finished = True

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def roles(self) -> list[_Role]:
        """The roles in the order they were added."""
        return list(self._roles)

    @property
    def operand(self) -> OperandMeta | None:
        """Type, scale, zero point (and per-channel quantization) shared by the roles."""
        return self._meta

    @property
    def dimensions(self) -> list[int]:
        """The combined dimensions so far (0 = unknown axis, [] = unknown rank or scalar)."""
        return list(self._dims)
