"""Runs of a relation's models: on the reference executor (which decides whether the relation
applies) and on the driver under test (alone, or split by the runtime's partitioner across
the driver and the reference sample device), outputs read back as numpy arrays.

A *run* is ``(model, placement)``: ``placement`` is :data:`ALONE` (the driver alone) or
:data:`SPLIT` (the model's operations alternate between the driver and the sample device,
each declining the other's: :class:`Restricted`). Runs of the same model object and
placement share one compilation, so repeating a run repeats an execution of one prepared
model (the determinism relation).
"""
from __future__ import annotations

import copy

import numpy as np

from harness.graphs import GenerationError, with_reference_outputs
from harness.runner import Failure, execute_compilation, skip_reason
from runtime.drivers.sample import SampleDevice
from runtime.errors import NnapiError
from runtime.nnapi import Compilation, Device, get_supported_operations_for_devices
from runtime.testing.frontend import build_model
from runtime.testing.test_model import TestModel
from runtime.types import operand_dtype

#: Placements of a run.
ALONE, SPLIT = "alone", "split"


class NotApplicable(Exception):
    """The relation does not apply to the model (the reference refuses a twin, or does not
    satisfy the relation itself); the message says why."""


class Skip(Exception):
    """The driver cannot be judged on the model (it declines an operation, or the model
    needs a newer feature level); ``kind`` is the harness's skip kind."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def reference(tm: TestModel) -> list[np.ndarray]:
    """The reference executor's outputs of ``tm`` (a copy; dimensions inferred), one array
    per main output. Raises :class:`NotApplicable` when the reference refuses the model."""
    try:
        done = with_reference_outputs(copy.deepcopy(tm))
    except GenerationError as e:
        raise NotApplicable(str(e)) from None
    return [np.asarray(done.main.operands[i].data) for i in done.main.output_indexes]


def resolved(tm: TestModel) -> TestModel:
    """``tm`` (a copy) with its outputs and temporaries' dimensions and expected values as
    the reference computes them, ready for the driver. Raises :class:`NotApplicable`."""
    try:
        return with_reference_outputs(copy.deepcopy(tm))
    except GenerationError as e:
        raise NotApplicable(str(e)) from None


class Restricted:
    """A HAL device that is ``inner`` supporting only the operations whose index ``i``
    satisfies ``i % 2 == parity`` (and that ``inner`` supports), named ``inner``'s name plus
    ``suffix``; every other call goes to ``inner``. Two of them with opposite parities force
    the runtime's partitioner (:mod:`runtime.nnapi.partition`) to split a model between them."""

    def __init__(self, inner, parity: int, suffix: str):
        self._inner, self._parity, self._suffix = inner, parity, suffix

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def get_name(self) -> str:
        return self._inner.get_name() + self._suffix

    def get_supported_operations(self, model) -> list[bool]:
        return [ok and i % 2 == self._parity for i, ok in enumerate(self._inner.get_supported_operations(model))]


def split_devices(device: Device) -> list[Device]:
    """The driver restricted to the even operations and the sample device to the odd ones."""
    return [Device(Restricted(device.hal, 0, "")), Device(Restricted(SampleDevice(), 1, "-odd-ops"))]


class Runner:
    """Runs models on ``device``, one compilation per (model object, placement)."""

    def __init__(self, device: Device):
        self.device = device
        self._compiled: dict[tuple[int, str], tuple[TestModel, Compilation]] = {}

    def _compilation(self, tm: TestModel, placement: str) -> Compilation:
        key = (id(tm), placement)
        if key in self._compiled:
            return self._compiled[key][1]
        skip = skip_reason(tm, self.device)
        if skip:
            raise Skip(skip[1], skip[0])
        devices = [self.device] if placement == ALONE else split_devices(self.device)
        model = build_model(tm)
        supported = get_supported_operations_for_devices(model, devices)
        if not all(supported):
            names = ", ".join(tm.main.operations[k].type.name for k, ok in enumerate(supported) if not ok)
            raise Skip(f"driver {self.device.name} does not support {names}", "unsupported_by_driver")
        compilation = Compilation.create_for_devices(model, devices)
        compilation.finish()
        self._compiled[key] = (tm, compilation)  # keeps tm alive: its id stays unique
        return compilation

    def run(self, tm: TestModel, placement: str = ALONE) -> list[np.ndarray]:
        """One execution of ``tm`` (resolved: :func:`resolved`) at ``placement``: per main
        output an array of the output's dtype shaped as the driver reports. Raises
        :class:`Skip`, or :class:`harness.runner.Failure` for an error of the driver."""
        try:
            outputs, dims = execute_compilation(self._compilation(tm, placement), tm, require_timing=False)[0]
        except NnapiError as e:
            raise Failure(str(e)) from None
        arrays = []
        for j, idx in enumerate(tm.main.output_indexes):
            dtype = operand_dtype(tm.main.operands[idx].type)
            shape = [int(d) for d in dims[j]]
            n = int(np.prod(shape)) if shape else 1
            arrays.append(np.frombuffer(bytes(outputs[j][:n * dtype.itemsize]), dtype).reshape(shape))
        return arrays
