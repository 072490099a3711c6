"""The example driver's ``IDevice`` and ``IPreparedModel`` (nncts's ``runtime.hal.interfaces``).

What a vendor writes, and what this example does:

* **Validation.** A driver must reject a malformed model or request with
  ``ErrorStatus.INVALID_ARGUMENT``. A vendor may use nncts's own validators for that,
  ``runtime.hal.validate.validate_model`` (structure, every operation's signature and rules;
  it also returns the feature level each operation needs) and ``validate_request``; this
  driver does.
* **Honest support.** ``get_supported_operations`` says True only for the operations of
  :data:`~nncts_example_driver.kernels.KERNELS` on TENSOR_FLOAT32 whose use needs feature
  level <= :data:`FEATURE_LEVEL`; False for everything else (other operand types, other
  operations, IF/WHILE, extensions). ``prepare_model`` refuses a model with an unsupported
  operation.
* **Execution.** Constants are copied at prepare; an execution reads the inputs from the
  request's pools, runs the kernels in order, reports each output's actual dimensions and,
  when an output buffer is too small, ``OUTPUT_INSUFFICIENT_SIZE`` with those dimensions,
  writing nothing. Timing is measured when asked (the CTS requires it).
* **Left to nncts's defaults** (``IPreparedModel``): asynchronous, burst and reusable
  executions run :meth:`ExamplePreparedModel.execute_synchronously`; no compilation cache
  (``get_number_of_cache_files_needed`` is (0, 0)); no memory domains (``allocate`` fails, so
  the runtime falls back to shared memory).
"""
from __future__ import annotations

import time

import numpy as np

from runtime.errors import HalError
from runtime.hal.interfaces import IDevice, IPreparedModel
from runtime.hal.types import (Capabilities, MemoryDomainToken, Model, OutputShape, PerformanceInfo,
                               Request, Timing)
from runtime.hal.validate import constant_value, merged_dimensions, validate_model, validate_request
from runtime.types import (DeviceTypeCode, ErrorStatus, MeasureTiming, OperandLifeTime, OperandType,
                           OperationType, PreferenceCode, PriorityCode, operand_dtype)

from .kernels import KERNELS

#: NNAPI feature level whose semantics the kernels implement (3 = Android 10, HAL 1.2).
FEATURE_LEVEL = 3

_CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _fail(status: ErrorStatus, message: str):
    raise HalError(status, message)


def _op_name(operation) -> str:
    try:
        return OperationType(operation.type).name
    except ValueError:
        return f"operation type {operation.type:#x}"


class ExamplePreparedModel(IPreparedModel):
    """A validated, fully supported model with its constants copied (the "compiled" form)."""

    def __init__(self, model: Model):
        self.model = model
        sg = model.main
        self.constants = {i: np.array(constant_value(model, o)) for i, o in enumerate(sg.operands)
                          if o.lifetime in _CONSTANT}

    def execute_synchronously(self, request: Request, measure=MeasureTiming.NO, deadline_ns=None,
                              loop_timeout_duration_ns=None) -> tuple[list[OutputShape], Timing]:
        entered = time.monotonic_ns()
        sg = self.model.main
        validate_request(request, self.model)  # INVALID_ARGUMENT for a malformed request
        if any(isinstance(pool, MemoryDomainToken) for pool in request.pools):
            _fail(ErrorStatus.INVALID_ARGUMENT, "this device allocates no driver buffers (memory domain tokens)")
        if deadline_ns is not None and time.monotonic_ns() >= deadline_ns:
            _fail(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
        values = dict(self.constants)
        for j, (arg, idx) in enumerate(zip(request.inputs, sg.input_indexes)):
            operand = sg.operands[idx]
            if arg.has_no_value:
                values[idx] = None
                continue
            dims = merged_dimensions(f"request input {j}", operand, arg.dimensions)
            dtype = operand_dtype(operand.type)
            pool = request.pools[arg.location.pool_index]
            count = int(np.prod(dims, dtype=np.int64))
            values[idx] = np.frombuffer(pool.buffer, dtype, count, arg.location.offset).reshape(dims).copy()

        computing = time.monotonic_ns()
        for k, operation in enumerate(sg.operations):
            args = [values.get(i) for i in operation.inputs]
            where = f"operation {k} ({_op_name(operation)})"
            if any(a is None for a in args):
                _fail(ErrorStatus.GENERAL_FAILURE, f"{where}: an input has no value")
            try:
                with np.errstate(all="ignore"):  # inf and NaN are results, not errors
                    values[operation.outputs[0]] = KERNELS[operation.type](*args)
            except ValueError as e:
                _fail(ErrorStatus.GENERAL_FAILURE, f"{where}: {e}")
        computed = time.monotonic_ns()

        results, shapes = [], []
        for j, (arg, idx) in enumerate(zip(request.outputs, sg.output_indexes)):
            result = values[idx]
            declared = merged_dimensions(f"request output {j}", sg.operands[idx], arg.dimensions)
            if declared and (len(declared) != result.ndim or
                             any(d not in (0, s) for d, s in zip(declared, result.shape))):
                _fail(ErrorStatus.GENERAL_FAILURE, f"output {j}: computed shape {list(result.shape)} "
                                                   f"contradicts the declared {declared}")
            results.append(result)
            shapes.append(OutputShape(list(result.shape),
                                      arg.has_no_value or result.nbytes <= arg.location.length))
        if not all(s.is_sufficient for s in shapes):
            raise HalError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "output buffer too small: " + ", ".join(
                f"output {j} needs {r.nbytes} bytes" for j, (r, s) in enumerate(zip(results, shapes))
                if not s.is_sufficient), output_shapes=shapes)
        for arg, result in zip(request.outputs, results):
            if not arg.has_no_value and result.nbytes:
                off = arg.location.offset
                request.pools[arg.location.pool_index].buffer[off:off + result.nbytes] = result.tobytes()

        if measure != MeasureTiming.YES:
            return shapes, Timing()
        return shapes, Timing(time_on_device=computed - computing, time_in_driver=time.monotonic_ns() - entered)

    def execute_fenced(self, request, wait_for, measure, deadline_ns, loop_timeout_duration_ns, duration_ns):
        """A fenced execution cannot report output shapes: every output's dimensions must be
        fully specified (INVALID_ARGUMENT otherwise, as AOSP's VTS requires)."""
        sg = self.model.main
        for j, (arg, idx) in enumerate(zip(request.outputs, sg.output_indexes)):
            dims = merged_dimensions(f"request output {j}", sg.operands[idx], arg.dimensions)
            if not arg.has_no_value and (not dims or 0 in dims):
                _fail(ErrorStatus.INVALID_ARGUMENT, f"execute_fenced: output {j} dimensions {dims} "
                                                    f"are not fully specified")
        return super().execute_fenced(request, wait_for, measure, deadline_ns, loop_timeout_duration_ns,
                                      duration_ns)


class ExampleDevice(IDevice):
    """The ``example`` driver: :data:`KERNELS` on TENSOR_FLOAT32, feature level 3."""

    def get_name(self) -> str:
        return "example"

    def get_type(self) -> DeviceTypeCode:
        return DeviceTypeCode.CPU  # numpy runs on the CPU; an accelerator says ACCELERATOR

    def get_version_string(self) -> str:
        return "nncts-example-driver 0.1.0"

    def get_feature_level(self) -> int:
        return FEATURE_LEVEL

    def get_capabilities(self) -> Capabilities:
        """Figures relative to the CPU (lower is better) for the operand types it handles;
        unlisted types get the worst figure."""
        same = PerformanceInfo(1.0, 1.0)
        types = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.INT32)
        return Capabilities(same, same, {t: same for t in types}, same, same)

    def supports(self, model: Model, operation, levels) -> bool:
        """One of our operations, on TENSOR_FLOAT32 (its first input fixes the signature),
        needing no feature level above ours (``levels`` from ``validate_model``)."""
        level = levels.level_of(operation)
        return (operation.type in KERNELS and level is not None and level <= FEATURE_LEVEL
                and model.main.operands[operation.inputs[0]].type == OperandType.TENSOR_FLOAT32)

    def get_supported_operations(self, model: Model) -> list[bool]:
        levels = validate_model(model)  # HalError(INVALID_ARGUMENT) for a malformed model
        return [self.supports(model, op, levels) for op in model.main.operations]

    def prepare_model(self, model: Model, preference=PreferenceCode.FAST_SINGLE_ANSWER,
                      priority=PriorityCode.MEDIUM, deadline_ns=None, model_cache=None, data_cache=None,
                      token=None) -> ExamplePreparedModel:
        if preference not in PreferenceCode._value2member_map_:
            _fail(ErrorStatus.INVALID_ARGUMENT, f"invalid execution preference {preference}")
        if priority not in PriorityCode._value2member_map_:
            _fail(ErrorStatus.INVALID_ARGUMENT, f"invalid priority {priority}")
        levels = validate_model(model)
        unsupported = [f"operation {k} ({_op_name(op)})" for k, op in enumerate(model.main.operations)
                       if not self.supports(model, op, levels)]
        if unsupported:
            _fail(ErrorStatus.GENERAL_FAILURE, "not supported by this driver: " + ", ".join(unsupported))
        if deadline_ns is not None and time.monotonic_ns() >= deadline_ns:
            _fail(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed during preparation")
        return ExamplePreparedModel(model)
