"""Multi-device partitioning: split a model's work between devices and run the pieces in
order (AOSP ``ModelBuilder::partitionTheWork``, ``findBestDeviceForEachOperation``,
``ExecutionPlan``, ``ExecutionStep`` and ``ExecutionPlan::next``).

1. :func:`best_device_for_each_operation`: for every operation, among the devices that
   support it (``IDevice.get_supported_operations``), the one with the best (lowest)
   performance figure for the operation (:func:`operation_performance`: ``exec_time`` for
   PREFER_FAST_SINGLE_ANSWER and PREFER_SUSTAINED_SPEED, ``power_usage`` for
   PREFER_LOW_POWER, of the operation's first input operand type).
2. :func:`schedule_steps`: if one device is best for everything, one step runs the whole
   model there. Otherwise operations become ready in topological order (all the operands
   they read are known) and queue on their device; the partitioner repeatedly takes the
   last device in the list with ready operations and makes one step of everything it can
   drain from that queue (operations it makes ready on the same device join the step).
3. :func:`build_step_model`: each step of a multi-step plan gets its own HAL model (operands
   renumbered, constants copied) whose inputs are the model inputs it reads, the temporaries
   earlier steps produce and the model outputs earlier steps produce; whose outputs are the
   model outputs it produces and the temporaries later steps read.
4. :class:`ExecutionPlan` (an ``IPreparedModel``) runs the steps' prepared models in order,
   passing temporaries through runtime shared memory whose dimensions come from the
   producing step's output shapes (dynamic temporaries: a temporary of unknown size is
   re-run with a buffer of the size the step asked for).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..errors import HalError, NnapiError
from ..hal.interfaces import IPreparedModel
from ..hal.memory import SharedMemory
from ..hal.types import (DataLocation, Model, Operand, Operation, OutputShape, PerformanceInfo,
                         Request, RequestArgument, Subgraph, Timing)
from ..hal.validate import merged_dimensions, operand_byte_size, validate_request
from ..types import (NO_TIMING, ErrorStatus, MeasureTiming, OperandLifeTime, OperandType,
                     OperationType, PreferenceCode, ResultCode, is_tensor_type)
from .device import Device, driver_call

L = OperandLifeTime

__all__ = ["ExecutionPlan", "ExecutionStep", "operation_performance", "supported_by_device",
           "best_device_for_each_operation", "schedule_steps", "build_step_model", "build_plan",
           "operation_name"]

#: Bytes first given to a temporary whose size is unknown before its step runs.
UNKNOWN_TEMPORARY_BYTES = 4096
#: Worst performance (FLT_MAX), as ``Capabilities.performance_of`` reports for unlisted types.
WORST = 3.4028234663852886e38

# Operand roles of a step's inputs and outputs.
MODEL_INPUT = "model_input"
MODEL_OUTPUT = "model_output"
TEMPORARY = "temporary"


def operation_name(operation_type) -> str:
    """``ADD`` for a known operation type, the number for an extension's."""
    try:
        return OperationType(operation_type).name
    except ValueError:
        return f"operation type {int(operation_type)}"


# -- 1. best device per operation ------------------------------------------------------

def _figure(perf: PerformanceInfo, preference: PreferenceCode) -> float:
    return perf.power_usage if preference == PreferenceCode.LOW_POWER else perf.exec_time


def _subgraph_performance(model: Model, sg: Subgraph, caps, preference) -> float:
    return sum(_operation_figure(model, sg, op, caps, preference) for op in sg.operations)


def _operation_figure(model: Model, sg: Subgraph, operation: Operation, caps, preference) -> float:
    t = operation.type
    if t in (OperationType.IF, OperationType.WHILE):
        subs = [model.referenced[sg.operands[i].location.offset] for i in operation.inputs
                if sg.operands[i].lifetime == L.SUBGRAPH and
                sg.operands[i].location.offset < len(model.referenced)]
        if t == OperationType.IF and len(subs) >= 2:
            # AOSP: IF costs its own figure plus the average of its two branches.
            return _figure(caps.if_performance, preference) + 0.5 * (
                _subgraph_performance(model, subs[0], caps, preference) +
                _subgraph_performance(model, subs[1], caps, preference))
        if t == OperationType.WHILE and len(subs) >= 2:
            # AOSP: WHILE costs its own figure plus one run of the condition and the body.
            return _figure(caps.while_performance, preference) + sum(
                _subgraph_performance(model, s, caps, preference) for s in subs[:2])
    # AOSP assumes the operation's type is dictated by its first input operand.
    operands = operation.inputs or operation.outputs
    if not operands:
        return WORST
    operand_type = sg.operands[operands[0]].type
    if model.relax_computation_float32_to_float16:
        if operand_type == OperandType.FLOAT32:
            return _figure(caps.relaxed_float32_to_float16_performance_scalar, preference)
        if operand_type == OperandType.TENSOR_FLOAT32:
            return _figure(caps.relaxed_float32_to_float16_performance_tensor, preference)
    return _figure(caps.performance_of(operand_type), preference)


def operation_performance(model: Model, operation_index: int, capabilities,
                          preference: PreferenceCode = PreferenceCode.FAST_SINGLE_ANSWER) -> float:
    """The figure (lower is better) a device with ``capabilities`` gets for operation
    ``operation_index`` of ``model.main`` (AOSP ``ModelBuilder::getPerformance``): the
    performance of the type of the operation's first input operand, with the relaxed
    float32 figures (scalar / tensor) for FLOAT32 / TENSOR_FLOAT32 when the model allows
    float16 computation; ``power_usage`` under PREFER_LOW_POWER, ``exec_time`` otherwise.
    IF adds half of each branch's total, WHILE the condition's and body's totals."""
    sg = model.main
    return _operation_figure(model, sg, sg.operations[operation_index], capabilities, preference)


def supported_by_device(device: Device, model: Model) -> tuple[list[bool], str]:
    """(per operation of ``model.main``: does ``device`` support it, problem). A device
    whose ``get_supported_operations`` fails or answers with the wrong length supports
    nothing (AOSP ``DriverDevice::getSupportedOperations``); ``problem`` then says why."""
    n = len(model.main.operations)
    try:
        with driver_call(f"{device.name}: get_supported_operations"):
            result = list(device.hal.get_supported_operations(model))
    except NnapiError as e:
        return [False] * n, str(e)
    if len(result) != n:
        return [False] * n, (f"{device.name}: get_supported_operations returned {len(result)} "
                             f"entries for {n} operations")
    return [bool(b) for b in result], ""


def best_device_for_each_operation(model: Model, devices: list[Device], preference: PreferenceCode,
                                   supported: list[list[bool]] | None = None) -> list[int]:
    """Index into ``devices`` of the best device for each operation of ``model.main`` (AOSP
    ``findBestDeviceForEachOperation``): the lowest :func:`operation_performance` among the
    devices that support the operation; on a tie the earlier device in the list wins.

    AOSP breaks ties in favour of its CPU device; nncts keeps the CPU reference device last
    in default lists and lets the earlier device (the driver under test) win, so a driver
    as fast as the CPU is still exercised. ``supported``: per device, per operation (default:
    :func:`supported_by_device`). Raises NnapiError(BAD_DATA) naming the first operation no
    device supports (and why a device that failed to answer supports nothing).
    """
    problems = []
    if supported is None:
        supported = []
        for d in devices:
            flags, problem = supported_by_device(d, model)
            supported.append(flags)
            if problem:
                problems.append(problem)
    capabilities = []
    for d in devices:
        try:
            with driver_call(f"{d.name}: get_capabilities"):
                capabilities.append(d.hal.get_capabilities())
        except NnapiError as e:  # a device that cannot describe itself is never best
            capabilities.append(None)
            problems.append(str(e))
    best = []
    for k, operation in enumerate(model.main.operations):
        choice, choice_figure = -1, 0.0
        for i, d in enumerate(devices):
            if not supported[i][k]:
                continue
            figure = WORST if capabilities[i] is None else \
                operation_performance(model, k, capabilities[i], preference)
            if choice < 0 or figure < choice_figure:
                choice, choice_figure = i, figure
        if choice < 0:
            raise NnapiError(ResultCode.BAD_DATA,
                             f"finish: no device supports operation {k} ({operation_name(operation.type)}) "
                             f"(devices: {', '.join(d.name for d in devices)})"
                             + (f"; {'; '.join(problems)}" if problems else ""))
        best.append(choice)
    return best


# -- 2. steps ---------------------------------------------------------------------------

def schedule_steps(model: Model, best: list[int]) -> list[tuple[int, list[int]]]:
    """Group the operations into steps: (device index, operation indexes in the order the
    step runs them), in execution order (AOSP ``partitionTheWork`` with its
    ``OperandTracker``). One device best for all operations: a single step of every
    operation in model order."""
    operations = model.main.operations
    if not operations:
        return []
    if all(b == best[0] for b in best):
        return [(best[0], list(range(len(operations))))]
    sg = model.main
    readers: dict[int, list[int]] = {}
    unknown = []
    queues: dict[int, list[int]] = {}

    def enqueue(k: int) -> None:
        queues.setdefault(best[k], []).append(k)

    for k, operation in enumerate(operations):
        count = 0
        for idx in operation.inputs:
            if sg.operands[idx].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT):
                count += 1
                readers.setdefault(idx, []).append(k)
        unknown.append(count)
        if count == 0:
            enqueue(k)
    steps = []
    while True:
        ready = [i for i, q in queues.items() if q]
        if not ready:
            break
        device_index = max(ready)  # AOSP looks at the devices from the end of the list
        queue = queues[device_index]
        step_ops = []
        while queue:
            k = queue.pop(0)
            step_ops.append(k)
            for idx in operations[k].outputs:
                for reader in readers.get(idx, []):
                    unknown[reader] -= 1
                    if unknown[reader] == 0:
                        enqueue(reader)
        steps.append((device_index, step_ops))
    scheduled = sum(len(s) for _, s in steps)
    if scheduled != len(operations):
        raise NnapiError(ResultCode.BAD_DATA, f"finish: only {scheduled} of {len(operations)} "
                         f"operations could be ordered (an operand is read before it is written)")
    return steps


@dataclass
class StepModel:
    """A step's HAL model and how its inputs and outputs map to the source model:
    ``inputs`` / ``outputs`` are (role, source operand index) per step-model input /
    output, role being MODEL_INPUT, TEMPORARY or MODEL_OUTPUT."""

    model: Model
    inputs: list[tuple[str, int]]
    outputs: list[tuple[str, int]]


def build_step_model(model: Model, operation_indexes: list[int], needed_later: set[int]) -> StepModel:
    """The HAL model of one step running ``operation_indexes`` of ``model.main`` (AOSP
    ``ExecutionStep::addOperation`` / ``finishStepModel``).

    Operands are renumbered in order of first use; constants keep their values (CONSTANT_COPY
    bytes copied, CONSTANT_REFERENCE pools shared); model inputs, and operands written by
    earlier steps, become SUBGRAPH_INPUT; model outputs this step writes, and temporaries in
    ``needed_later`` (read by later steps), become SUBGRAPH_OUTPUT. Input order: model
    inputs, then temporaries, then model outputs of earlier steps; output order: model
    outputs, then temporaries (by source operand index). Referenced subgraphs (IF/WHILE) are
    carried over whole.
    """
    sg = model.main
    keep_layout = bool(model.referenced)  # referenced subgraphs point into the same values/pools
    operands: list[Operand] = []
    mapping: dict[int, int] = {}
    values = bytearray(model.operand_values if keep_layout else b"")
    pools = list(model.pools) if keep_layout else []
    pool_map: dict[int, int] = {}
    model_inputs, temps_in, outputs_in, model_outputs, temps_out = [], [], [], [], []

    def add(idx: int, as_input: bool) -> int:
        if idx in mapping:
            return mapping[idx]
        src = sg.operands[idx]
        new = Operand(src.type, list(src.dimensions), 0, src.scale, src.zero_point,
                      L.TEMPORARY_VARIABLE, DataLocation(), src.extra_params)
        lt = src.lifetime
        if lt == L.CONSTANT_COPY and not keep_layout:
            loc = src.location
            values.extend(b"\0" * (-len(values) % 8))
            new.location = DataLocation(0, len(values), loc.length)
            values.extend(model.operand_values[loc.offset:loc.offset + loc.length])
            new.lifetime = lt
        elif lt == L.CONSTANT_REFERENCE and not keep_layout:
            loc = src.location
            if loc.pool_index not in pool_map:
                pool_map[loc.pool_index] = len(pools)
                pools.append(model.pools[loc.pool_index])
            new.location = DataLocation(pool_map[loc.pool_index], loc.offset, loc.length, loc.padding)
            new.lifetime = lt
        elif lt in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.NO_VALUE, L.SUBGRAPH, L.POINTER):
            new.lifetime = lt
            new.location = DataLocation(src.location.pool_index, src.location.offset,
                                        src.location.length, src.location.padding)
        elif lt == L.SUBGRAPH_INPUT:
            new.lifetime = L.SUBGRAPH_INPUT
            model_inputs.append(idx)
        elif as_input:  # a temporary or model output written by an earlier step
            new.lifetime = L.SUBGRAPH_INPUT
            (outputs_in if lt == L.SUBGRAPH_OUTPUT else temps_in).append(idx)
        elif lt == L.SUBGRAPH_OUTPUT:
            new.lifetime = L.SUBGRAPH_OUTPUT
            model_outputs.append(idx)
        elif idx in needed_later:
            new.lifetime = L.SUBGRAPH_OUTPUT
            temps_out.append(idx)
        mapping[idx] = len(operands)
        operands.append(new)
        return mapping[idx]

    operations = []
    for k in operation_indexes:
        op = sg.operations[k]
        ins = [add(i, True) for i in op.inputs]
        outs = [add(i, False) for i in op.outputs]
        for i in ins:
            operands[i].number_of_consumers += 1
        operations.append(Operation(op.type, ins, outs))
    model_inputs.sort(key=sg.input_indexes.index)
    model_outputs.sort(key=sg.output_indexes.index)
    outputs_in.sort(key=sg.output_indexes.index)
    temps_out.sort()
    inputs = [(MODEL_INPUT, i) for i in model_inputs] + [(TEMPORARY, i) for i in temps_in] + \
        [(MODEL_OUTPUT, i) for i in outputs_in]
    outputs = [(MODEL_OUTPUT, i) for i in model_outputs] + [(TEMPORARY, i) for i in temps_out]
    main = Subgraph(operands, operations, [mapping[i] for _, i in inputs], [mapping[i] for _, i in outputs])
    step_model = Model(main, list(model.referenced), bytes(values), pools,
                       model.relax_computation_float32_to_float16,
                       list(getattr(model, "extension_name_to_prefix", []) or []))
    return StepModel(step_model, inputs, outputs)


# -- 3. the plan ------------------------------------------------------------------------

@dataclass
class ExecutionStep:
    """One step of a plan: ``device`` runs ``operation_indexes`` (of the source model's
    main subgraph, in the step's order) as ``model``; ``prepared`` once compiled.
    ``inputs`` / ``outputs``: (role, source operand index) per step-model input / output
    (for a single-step plan, the model's own inputs and outputs)."""

    index: int
    device: Device
    operation_indexes: list[int]
    model: Model
    inputs: list[tuple[str, int]] = field(default_factory=list)
    outputs: list[tuple[str, int]] = field(default_factory=list)
    prepared: IPreparedModel | None = None

    @property
    def device_name(self) -> str:
        return self.device.name

    def __repr__(self) -> str:
        return f"ExecutionStep({self.index}, {self.device_name!r}, operations {self.operation_indexes})"


@dataclass
class _Value:
    """Where a value crossing steps lives: ``pool`` at ``offset``, ``length`` bytes, with
    its actual ``dims``; None stands for an omitted input."""

    pool: object
    offset: int
    length: int
    dims: list[int]


def _known_size(operand: Operand) -> int | None:
    dims = list(operand.dimensions)
    if is_tensor_type(operand.type) and (not dims or 0 in dims):
        return None
    return operand_byte_size(operand.type, dims)


class ExecutionPlan(IPreparedModel):
    """How a compilation runs (AOSP ``ExecutionPlan``): one step (the whole model on one
    device, :attr:`is_simple`) or several steps run in order, each on its own device.

    It is an ``IPreparedModel`` of the source model: :meth:`execute_synchronously` takes
    a request of the source model and returns its output shapes. Temporaries crossing steps
    live in runtime shared memory; model outputs go straight into the request's pools.
    A failing step raises its HalError (message prefixed with the step and device).
    """

    def __init__(self, model: Model, steps: list[ExecutionStep], preference=PreferenceCode.FAST_SINGLE_ANSWER):
        self.model = model
        self.steps = steps
        self.preference = preference

    @property
    def is_simple(self) -> bool:
        return len(self.steps) == 1

    @property
    def devices(self) -> list[Device]:
        """Devices used, in first-use order, without repeats."""
        seen, out = set(), []
        for s in self.steps:
            if id(s.device) not in seen:
                seen.add(id(s.device))
                out.append(s.device)
        return out

    def describe(self) -> str:
        """``step 0: nncts-sample-quant [0]; step 1: ...`` (reports, error messages)."""
        return "; ".join(f"step {s.index}: {s.device_name} {s.operation_indexes}" for s in self.steps)

    def __repr__(self) -> str:
        return f"ExecutionPlan({self.describe()})"

    # roles of the source model's inputs and outputs in the steps (memory domains) --------
    def step_roles_of_input(self, index: int) -> list[tuple[IPreparedModel, str, int]]:
        """(prepared step model, "input"/"output", io index) for each use of model input
        ``index`` by a step (AOSP ``forEachStepRoleOfInput``)."""
        operand = self.model.main.input_indexes[index]
        return [(s.prepared, "input", j) for s in self.steps for j, (role, i) in enumerate(s.inputs)
                if role == MODEL_INPUT and i == operand]

    def step_roles_of_output(self, index: int) -> list[tuple[IPreparedModel, str, int]]:
        """Step roles of model output ``index``: the output of the step that writes it and
        the inputs of later steps that read it (AOSP ``forEachStepRoleOfOutput``)."""
        operand = self.model.main.output_indexes[index]
        roles = []
        for s in self.steps:
            roles += [(s.prepared, "output", j) for j, (role, i) in enumerate(s.outputs)
                      if role == MODEL_OUTPUT and i == operand]
            roles += [(s.prepared, "input", j) for j, (role, i) in enumerate(s.inputs)
                      if role == MODEL_OUTPUT and i == operand]
        return roles

    # execution --------------------------------------------------------------------------
    def execute_synchronously(self, request: Request, measure=MeasureTiming.NO, deadline_ns=None,
                              loop_timeout_duration_ns=None) -> tuple[list[OutputShape], Timing]:
        """Run every step in order on ``request`` (a request of the source model), see
        :class:`ExecutionPlan`. Raises HalError: INVALID_ARGUMENT (malformed request),
        OUTPUT_INSUFFICIENT_SIZE (a model output buffer is too small; ``output_shapes`` per
        model output), or the failing step's status."""
        if self.is_simple:
            return self.steps[0].prepared.execute_synchronously(request, measure, deadline_ns,
                                                                loop_timeout_duration_ns)
        sg = self.model.main
        validate_request(request, self.model)
        values: dict[int, _Value | None] = {}
        for j, (arg, idx) in enumerate(zip(request.inputs, sg.input_indexes)):
            if arg.has_no_value:
                values[idx] = None
                continue
            dims = merged_dimensions(f"request input {j}", sg.operands[idx], arg.dimensions)
            values[idx] = _Value(request.pools[arg.location.pool_index], arg.location.offset,
                                 arg.location.length, dims)
        output_of = {idx: j for j, idx in enumerate(sg.output_indexes)}
        shapes: list[OutputShape | None] = [None] * len(sg.output_indexes)
        total = [0, 0]
        timed = measure == MeasureTiming.YES
        for step in self.steps:
            step_shapes, timing = self._run_step(step, request, values, output_of, shapes, measure,
                                                 deadline_ns, loop_timeout_duration_ns)
            if timing.time_on_device == NO_TIMING or timing.time_in_driver == NO_TIMING:
                timed = False
            else:
                total[0] += timing.time_on_device
                total[1] += timing.time_in_driver
        result = [s if s is not None else OutputShape(list(sg.operands[i].dimensions))
                  for s, i in zip(shapes, sg.output_indexes)]
        return result, (Timing(total[0], total[1]) if timed else Timing())

    def _run_step(self, step: ExecutionStep, request: Request, values, output_of, shapes, measure,
                  deadline_ns, loop_timeout_duration_ns):
        sg = self.model.main
        where = f"step {step.index} ({step.device_name})"
        pools: list = []
        pool_ids: dict[int, int] = {}

        def pool_index(pool) -> int:
            if id(pool) not in pool_ids:
                pool_ids[id(pool)] = len(pools)
                pools.append(pool)
            return pool_ids[id(pool)]

        inputs = []
        for role, idx in step.inputs:
            v = values.get(idx)
            if v is None:
                if idx not in values:
                    raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: operand {idx} was never computed")
                inputs.append(RequestArgument(has_no_value=True))
            else:
                inputs.append(RequestArgument(False, DataLocation(pool_index(v.pool), v.offset, v.length),
                                              list(v.dims)))
        # Outputs: model outputs into the caller's buffers, temporaries into runtime memory.
        targets: list[tuple[object, int, int, list[int], bool]] = []  # pool, offset, length, dims, is_temp
        for role, idx in step.outputs:
            arg = request.outputs[output_of[idx]] if role == MODEL_OUTPUT else None
            if arg is not None and not arg.has_no_value:
                targets.append((request.pools[arg.location.pool_index], arg.location.offset,
                                arg.location.length, list(arg.dimensions), False))
            else:
                size = _known_size(sg.operands[idx])
                size = UNKNOWN_TEMPORARY_BYTES if size is None else size
                targets.append((SharedMemory(max(size, 1)), 0, size, [], True))
        for attempt in range(3):
            outputs = [RequestArgument(False, DataLocation(pool_index(p), off, length), dims)
                       for p, off, length, dims, _ in targets]
            step_request = Request(inputs, outputs, pools)
            try:
                step_shapes, timing = step.prepared.execute_synchronously(
                    step_request, measure, deadline_ns, loop_timeout_duration_ns)
                break
            except HalError as e:
                if e.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE or not e.output_shapes or \
                        len(e.output_shapes) != len(step.outputs):
                    raise HalError(e.status, f"{where}: {e.message}") from e
                grown = False
                for j, ((role, idx), s) in enumerate(zip(step.outputs, e.output_shapes)):
                    if s.is_sufficient:
                        continue
                    if not targets[j][4]:  # the caller's buffer is too small
                        raise HalError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, f"{where}: {e.message}",
                                       output_shapes=self._model_shapes(step, e.output_shapes, shapes)) from e
                    need = operand_byte_size(sg.operands[idx].type, s.dimensions)
                    if need > targets[j][2]:
                        targets[j] = (SharedMemory(max(need, 1)), 0, need, [], True)
                        grown = True
                if not grown or attempt == 2:
                    raise HalError(ErrorStatus.GENERAL_FAILURE,
                                   f"{where}: still OUTPUT_INSUFFICIENT_SIZE for a temporary after "
                                   f"growing it: {e.message}") from e
            except Exception as e:  # noqa: BLE001 - driver code
                raise HalError(ErrorStatus.GENERAL_FAILURE,
                               f"{where}: driver raised {type(e).__name__}: {e}") from e
        if len(step_shapes) != len(step.outputs):
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"{where}: returned {len(step_shapes)} output "
                           f"shapes for {len(step.outputs)} outputs")
        for (role, idx), s, (pool, off, _length, _dims, _t) in zip(step.outputs, step_shapes, targets):
            dims = [int(d) for d in s.dimensions]
            values[idx] = _Value(pool, off, operand_byte_size(sg.operands[idx].type, dims), dims)
            if role == MODEL_OUTPUT:
                shapes[output_of[idx]] = OutputShape(dims, s.is_sufficient)
        return step_shapes, timing

    def _model_shapes(self, step: ExecutionStep, step_shapes, shapes) -> list[OutputShape]:
        """Output shapes of the source model when ``step`` reported ``step_shapes``."""
        sg = self.model.main
        out = [s if s is not None else OutputShape(list(sg.operands[i].dimensions))
               for s, i in zip(shapes, sg.output_indexes)]
        for (role, idx), s in zip(step.outputs, step_shapes):
            if role == MODEL_OUTPUT:
                out[sg.output_indexes.index(idx)] = OutputShape(list(s.dimensions), s.is_sufficient)
        return out


def build_plan(model: Model, devices: list[Device], preference: PreferenceCode) -> ExecutionPlan:
    """The unprepared plan of ``model`` over ``devices`` (steps without ``prepared``).
    Raises NnapiError(BAD_DATA) when no device supports some operation."""
    if not devices:
        raise NnapiError(ResultCode.BAD_DATA, "finish: no devices")
    best = best_device_for_each_operation(model, devices, preference)
    schedule = schedule_steps(model, best)
    if len(schedule) <= 1:
        device_index = schedule[0][0] if schedule else 0
        sg = model.main
        step = ExecutionStep(0, devices[device_index], schedule[0][1] if schedule else [], model,
                             [(MODEL_INPUT, i) for i in sg.input_indexes],
                             [(MODEL_OUTPUT, i) for i in sg.output_indexes])
        return ExecutionPlan(model, [step], preference)
    step_of: dict[int, int] = {}
    for s, (_, ops) in enumerate(schedule):
        for k in ops:
            for idx in model.main.operations[k].outputs:
                step_of[idx] = s
    needed_later: list[set[int]] = [set() for _ in schedule]
    for s, (_, ops) in enumerate(schedule):
        for k in ops:
            for idx in model.main.operations[k].inputs:
                producer = step_of.get(idx)
                if producer is not None and producer != s:
                    needed_later[producer].add(idx)
    steps = []
    for s, (device_index, ops) in enumerate(schedule):
        built = build_step_model(model, ops, needed_later[s])
        steps.append(ExecutionStep(s, devices[device_index], list(ops), built.model, built.inputs, built.outputs))
    return ExecutionPlan(model, steps, preference)


def step_cache_token(token: bytes, operation_indexes: list[int]) -> bytes:
    """The cache token of one step of a multi-step plan: the app's token re-hashed with the
    step's operation indexes (AOSP ``ExecutionStep`` updates its ``TokenHasher`` with each
    operation index), so every step caches under its own name."""
    h = hashlib.sha256(bytes(token))
    for k in operation_indexes:
        h.update(int(k).to_bytes(4, "little"))
    return h.digest()[:len(token)]
