"""The bundled sample driver ``sample`` (NNAPI's sample-all): every operation in the operation
table, run by the reference CPU executor, with validation before anything runs."""
from __future__ import annotations

import time

from .. import ops
from . import sample_cache
from ..errors import HalError
from ..executor import execute, execution_limits, hold
from ..hal.interfaces import IDevice, IPreparedModel
from ..hal.static_shapes import check_static_shapes
from ..hal.types import Capabilities, Model, OutputShape, PerformanceInfo, Request, Timing
from ..extension_types import is_tensor_operand_type
from ..hal.validate import (ModelLevels, constant_value, merged_dimensions, operand_view,
                            operation_feature_level, validate_model, validate_prepare_arguments,
                            validate_request)
from ..types import (DeviceTypeCode, ErrorStatus, MeasureTiming, OperandLifeTime, OperandType,
                     PreferenceCode, PriorityCode)


class SamplePreparedModel(IPreparedModel):
    """A validated model held for execution by :class:`SampleDevice`."""

    def __init__(self, model: Model, device: "SampleDevice"):
        self.model = model
        self.device = device
        hold(model)  # prepared: the executor keeps its compiled programs

    def execute_synchronously(self, request: Request, measure=MeasureTiming.NO, deadline_ns=None,
                              loop_timeout_duration_ns=None) -> tuple[list[OutputShape], Timing]:
        """Validate ``request`` then run it on the reference executor (see IPreparedModel).
        MemoryDomainToken pools are first resolved to this device's buffers (see
        :func:`runtime.drivers.buffers.resolve_request`). Each WHILE loop is bounded by
        ``loop_timeout_duration_ns`` (None: 2 s; at most 15 s) and ``deadline_ns``: past
        either, HalError(MISSED_DEADLINE_TRANSIENT)."""
        from .buffers import resolve_request
        request, buffers = resolve_request(self.device, self, request)
        with buffers:
            validate_request(request, self.model)
            if deadline_ns is not None and time.monotonic_ns() >= deadline_ns:
                raise HalError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
            start = time.monotonic_ns()
            with execution_limits(loop_timeout_duration_ns, deadline_ns):
                shapes = self.device.run(self.model, request)
            elapsed = time.monotonic_ns() - start
            buffers.written((shapes, None))
        timing = Timing(elapsed, elapsed) if measure == MeasureTiming.YES else Timing()
        return shapes, timing

    def execute_fenced(self, request: Request, wait_for, measure, deadline_ns, loop_timeout_duration_ns,
                       duration_ns):
        """As :meth:`IPreparedModel.execute_fenced`, after checking that every output's
        dimensions (the model's refined by the request's) are fully specified: a fenced
        execution cannot report output shapes (INVALID_ARGUMENT otherwise, as AOSP's sample
        driver and VTS ``GeneratedTestHarness`` require)."""
        sg = self.model.main
        for j, (arg, idx) in enumerate(zip(request.outputs, sg.output_indexes)):
            operand = sg.operands[idx]
            if arg.has_no_value or not is_tensor_operand_type(operand.type):
                continue
            dims = merged_dimensions(f"request output {j}", operand, arg.dimensions)
            if not dims or 0 in dims:
                raise HalError(ErrorStatus.INVALID_ARGUMENT,
                               f"execute_fenced: output {j} dimensions {dims} are not fully specified")
        return super().execute_fenced(request, wait_for, measure, deadline_ns, loop_timeout_duration_ns,
                                      duration_ns)


#: (registry size, the operation table's OperationDefs, sorted operand types) of
#: :func:`_signature_types`, recomputed only when the table changes.
_TYPES_MEMO: list = [None]


def _signature_types() -> tuple:
    """The operand types some signature of the operation table uses as an input, sorted,
    SUBGRAPH left out; computed once per state of the table (not per compilation)."""
    defs = tuple(ops.REGISTRY.values())
    memo = _TYPES_MEMO[0]
    if memo is None or memo[0] != defs:  # identical items compare equal without __eq__
        types = {a.type for d in defs for s in d.signatures for a in s.inputs} - {OperandType.SUBGRAPH}
        memo = _TYPES_MEMO[0] = (defs, tuple(sorted(types)))
    return memo[1]


class SampleDevice(IDevice):
    """Reference device: supports every operation signature in the operation table up to
    :attr:`feature_level`; prepare validates the model; execution uses the CPU executor.

    Subclasses (test drivers, partial drivers) override :meth:`supports` or :meth:`run`.
    """

    name = "nncts-sample"
    version = "1.0"

    def __init__(self, feature_level: int | None = None):
        levels = [s.feature_level for d in ops.REGISTRY.values() for s in d.signatures]
        self.feature_level = feature_level or max(levels)

    def get_name(self) -> str:
        return self.name

    def get_type(self) -> DeviceTypeCode:
        return DeviceTypeCode.CPU

    def get_version_string(self) -> str:
        return self.version

    def get_feature_level(self) -> int:
        return self.feature_level

    def get_capabilities(self) -> Capabilities:
        """1.0 (the CPU itself) for every operand type some signature uses (SUBGRAPH has
        no figure of its own: IF and WHILE have ``if_performance`` / ``while_performance``)."""
        perf = {t: PerformanceInfo(1.0, 1.0) for t in _signature_types()}
        return Capabilities(PerformanceInfo(1.0, 1.0), PerformanceInfo(1.0, 1.0), perf,
                            PerformanceInfo(1.0, 1.0), PerformanceInfo(1.0, 1.0))

    def supports(self, model: Model, operation, levels: ModelLevels | None = None) -> bool:
        """Whether this device runs ``operation`` of the main subgraph: the operation table
        has it and this use needs no feature level above :attr:`feature_level`; for IF and
        WHILE, every operation of the subgraphs they reference (nested ones included) too.
        ``levels``: what :func:`validate_model` found for this model (the levels are then
        read, not recomputed)."""
        return self._supports_in(model, model.main, operation, set(), levels)

    def _supports_in(self, model: Model, sg, operation, seen: set, levels: ModelLevels | None) -> bool:
        level = levels.level_of(operation) if levels is not None else None
        if level is None:
            opdef = ops.get(operation.type)
            if opdef is None:
                return False
            ins = [operand_view(sg.operands[i], constant_value(model, sg.operands[i]),
                                sg.operands[i].lifetime == OperandLifeTime.NO_VALUE) for i in operation.inputs]
            outs = [operand_view(sg.operands[i]) for i in operation.outputs]
            try:
                level, _ = operation_feature_level(opdef, ins, outs, model.relax_computation_float32_to_float16)
            except HalError:
                return False
        if level > self.feature_level:
            return False
        for i in operation.inputs:
            o = sg.operands[i]
            if o.lifetime != OperandLifeTime.SUBGRAPH or o.location.offset in seen:
                continue
            if not 0 <= o.location.offset < len(model.referenced):
                return False
            seen.add(o.location.offset)  # each referenced subgraph checked once (no cycles)
            ref = model.referenced[o.location.offset]
            if not all(self._supports_in(model, ref, op, seen, levels) for op in ref.operations):
                return False
        return True

    def get_supported_operations(self, model: Model) -> list[bool]:
        levels = validate_model(model)
        return [self.supports(model, op, levels) for op in model.main.operations]

    def prepare_model(self, model: Model, preference=PreferenceCode.FAST_SINGLE_ANSWER,
                      priority=PriorityCode.MEDIUM, deadline_ns=None, model_cache=None,
                      data_cache=None, token=None) -> SamplePreparedModel:
        validate_prepare_arguments(preference, priority)
        self._check_preparable(model)
        if model_cache is not None or data_cache is not None:
            sample_cache.save(model_cache, data_cache, token, model)  # never fails the prepare
        return SamplePreparedModel(model, self)

    def _check_preparable(self, model: Model) -> None:
        """Validate ``model``, check every operation is supported, then check the shapes
        that are already certain (:func:`runtime.hal.static_shapes.check_static_shapes`: an
        operation whose ``prepare`` rejects its operands, or an output shape contradicting
        the declared one); HalError(INVALID_ARGUMENT) otherwise."""
        levels = validate_model(model)
        unsupported = [f"operation {k} ({getattr(op.type, 'name', op.type)})"
                       for k, op in enumerate(model.main.operations)
                       if not self.supports(model, op, levels)]
        if unsupported:
            raise HalError(ErrorStatus.INVALID_ARGUMENT, "unsupported: " + ", ".join(unsupported))
        check_static_shapes(model)

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        """One model and one data cache file (formats in :mod:`runtime.drivers.sample_cache`)."""
        return sample_cache.NUM_MODEL_CACHE, sample_cache.NUM_DATA_CACHE

    def prepare_model_from_cache(self, deadline_ns, model_cache, data_cache, token) -> SamplePreparedModel:
        """Rebuild the prepared model from a cache :meth:`prepare_model` wrote for ``token``:
        checks counts, token and digests (HalError INVALID_ARGUMENT / GENERAL_FAILURE), then
        validates the model as a prepare would."""
        model = sample_cache.load(model_cache, data_cache, token)
        self._check_preparable(model)
        return SamplePreparedModel(model, self)

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        """A driver buffer for the roles (memory domain, FL4): see
        :func:`runtime.drivers.buffers.allocate_buffer` (INVALID_ARGUMENT for bad roles,
        GENERAL_FAILURE for dimensions not fully specified). Returns (buffer, token > 0)."""
        from .buffers import allocate_buffer
        return allocate_buffer(self, desc, prepared_models, input_roles, output_roles, SamplePreparedModel)

    def run(self, model: Model, request: Request) -> list[OutputShape]:
        """Execute on the reference executor (override to plant faults in test drivers)."""
        return execute(model, request)
