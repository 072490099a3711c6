"""Run one corpus test model through the front end (Model -> Compilation -> Execution) on a
device and judge it with the NNAPI accuracy criteria."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from runtime.errors import NnapiError
from runtime.nnapi import Compilation, Device, Execution, Memory, Model, get_supported_operations_for_devices
from runtime.testing.criteria import compare, tolerance_for
from runtime.testing.hal_convert import expected_output_size, to_hal_model
from runtime.testing.support import not_implemented_reason
from runtime.testing.test_model import TestModel
from runtime.types import OperandLifeTime, OperandType, operand_dtype

L = OperandLifeTime


@dataclass
class Outcome:
    """Result of one test model: ``status`` is passed, failed or skipped; ``message`` says why;
    ``skip_kind`` groups skips (not_implemented, feature_level, unsupported_by_driver)."""

    status: str
    message: str = ""
    skip_kind: str = ""
    details: list[str] = field(default_factory=list)


def build_model(tm: TestModel) -> Model:
    """The front-end Model of ``tm`` (finished). CONSTANT_REFERENCE values go through a
    Memory object, as the AOSP harness does. Raises NnapiError from the front end."""
    model = Model()
    sg = tm.main
    memory_values = [(i, o) for i, o in enumerate(sg.operands)
                     if o.lifetime == L.CONSTANT_REFERENCE and o.data is not None]
    memory, offsets = None, {}
    if memory_values:
        blob = bytearray()
        for i, o in memory_values:
            blob.extend(b"\0" * (-len(blob) % 8))
            offsets[i] = len(blob)
            blob.extend(np.ascontiguousarray(o.data, operand_dtype(o.type)).tobytes())
        memory = Memory.from_bytes(bytes(blob))
    for i, o in enumerate(sg.operands):
        model.add_operand(o.type, o.dimensions, o.scale, o.zero_point)
        if o.channel_quant:
            model.set_operand_symm_per_channel_quant_params(i, *o.channel_quant)
        if o.lifetime == L.CONSTANT_COPY:
            model.set_operand_value(i, o.data)
        elif o.lifetime == L.CONSTANT_REFERENCE:
            size = o.data.size * operand_dtype(o.type).itemsize
            model.set_operand_value_from_memory(i, memory, offsets[i], size)
        elif o.lifetime == L.NO_VALUE:
            model.set_operand_value(i, None)
    for op in sg.operations:
        model.add_operation(op.type, op.inputs, op.outputs)
    model.identify_inputs_and_outputs(sg.input_indexes, sg.output_indexes)
    model.relax_computation_float32_to_float16(tm.is_relaxed)
    model.finish()
    return model


def skip_reason(tm: TestModel, device: Device) -> tuple[str, str] | None:
    """(kind, reason) when ``tm`` cannot be judged yet on ``device``, else None."""
    reason = not_implemented_reason(to_hal_model(tm), signatures_too=not tm.expect_failure)
    if reason:
        return "not_implemented", reason
    if tm.feature_level > device.feature_level:
        return "feature_level", (f"not implemented by the driver: the model needs feature level "
                                 f"{tm.feature_level}, driver {device.name} implements up to "
                                 f"{device.feature_level}")
    return None


def run_test_model(tm: TestModel, device: Device) -> Outcome:
    """Build, compile for ``device`` only, execute and compare ``tm``; never raises for a
    driver's fault (it becomes a failed Outcome)."""
    skip = skip_reason(tm, device)
    if skip:
        return Outcome("skipped", skip[1], skip[0])
    try:
        model = build_model(tm)
        if not tm.expect_failure:
            supported = get_supported_operations_for_devices(model, [device])
            if not all(supported):
                ops = [tm.main.operations[k].type.name for k, ok in enumerate(supported) if not ok]
                return Outcome("skipped", f"driver {device.name} does not support {', '.join(ops)}",
                               "unsupported_by_driver")
        compilation = Compilation.create_for_devices(model, [device])
        compilation.finish()
        execution = Execution(compilation)
        for j, idx in enumerate(tm.main.input_indexes):
            data = tm.main.operands[idx].data
            execution.set_input(j, data, None if data is None else list(data.shape))
        buffers = []
        for j, idx in enumerate(tm.main.output_indexes):
            o = tm.main.operands[idx]
            size = expected_output_size(tm, j)
            buffers.append(np.zeros(size, np.uint8))
            execution.set_output(j, buffers[-1], None if o.data is not None else [])
        execution.compute()
    except NnapiError as e:
        if tm.expect_failure:
            return Outcome("passed", f"failed as expected: {e}")
        return Outcome("failed", str(e))
    if tm.expect_failure:
        return Outcome("failed", "expected a failure (expect_failure model), but every step succeeded")
    relaxed = tm.is_relaxed or any(o.type == OperandType.TENSOR_FLOAT16 for o in tm.main.operands)
    problems = []
    for j, idx in enumerate(tm.main.output_indexes):
        o = tm.main.operands[idx]
        dims = execution.get_output_operand_dimensions(j)
        if o.data is not None and list(o.data.shape) != dims and list(o.dimensions) != dims:
            problems.append(f"output {j}: dimensions {dims}, expected {list(o.data.shape)}")
            continue
        if o.is_ignored or o.data is None:
            continue
        actual = buffers[j].view(operand_dtype(o.type))
        msg = compare(o.data, actual, tolerance_for(o.type, relaxed, tm.name))
        if msg:
            problems.append(f"output {j} ({o.type.name}): {msg}")
    if problems:
        return Outcome("failed", "; ".join(problems), details=problems)
    return Outcome("passed")
