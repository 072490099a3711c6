"""Multi-device partitioning (AOSP ``partitionTheWork`` / ``ExecutionPlan``): the partial
sample drivers, the CPU reference device, best-device choice by preference, step models,
execution across steps, CPU fallback, and the V1_0 corpus run over three devices."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.runner import build_model, execute_compilation
from runtime.drivers.sample import SampleDevice
from runtime.drivers.variants import PartialSampleDevice
from runtime.errors import HalError, NnapiError
from runtime.hal.memory import SharedMemory
from runtime.hal.types import DataLocation, PerformanceInfo, Request, RequestArgument
from runtime.hal.validate import validate_model
from runtime.nnapi import Compilation, Device, Execution, Model, get_devices
from runtime.nnapi.device import CPU_DEVICE_NAME, cpu_device, default_devices
from runtime.nnapi.partition import (MODEL_INPUT, MODEL_OUTPUT, TEMPORARY, ExecutionPlan,
                                     best_device_for_each_operation, operation_performance)
from runtime.testing.criteria import judge
from runtime.testing.test_model import iter_corpus
from runtime.types import (DeviceTypeCode, ErrorStatus, OperandLifeTime as L, OperandType as T,
                           OperationType as Op, PreferenceCode, ResultCode)

CORPUS_V1_0 = Path(__file__).resolve().parent.parent / "cts" / "corpus" / "V1_0"


# -- models -------------------------------------------------------------------------------

def mixed_model() -> Model:
    """quant8 in0 [2,2] (scale 0.5) -> ADD(in0, in0) = q1 (scale 1) -> DEQUANTIZE = f1;
    out1 = ADD(q1, in0) (quant8, scale 1); out0 = (f1 + in1) * c (float).
    HAL operation order: 0 ADD(q), 1 DEQUANTIZE, 2 ADD(q), 3 ADD(f), 4 MUL."""
    m = Model()
    in0 = m.add_operand(T.TENSOR_QUANT8_ASYMM, [2, 2], 0.5, 0)
    in1 = m.add_operand(T.TENSOR_FLOAT32, [2, 2])
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, 0)
    q1 = m.add_operand(T.TENSOR_QUANT8_ASYMM, [2, 2], 1.0, 0)
    m.add_operation(Op.ADD, [in0, in0, act], [q1])
    f1 = m.add_operand(T.TENSOR_FLOAT32, [2, 2])
    m.add_operation(Op.DEQUANTIZE, [q1], [f1])
    out1 = m.add_operand(T.TENSOR_QUANT8_ASYMM, [2, 2], 1.0, 0)
    m.add_operation(Op.ADD, [q1, in0, act], [out1])
    f2 = m.add_operand(T.TENSOR_FLOAT32, [2, 2])
    m.add_operation(Op.ADD, [f1, in1, act], [f2])
    c = m.add_operand(T.TENSOR_FLOAT32, [2, 2])
    m.set_operand_value(c, np.array([[1, 2], [3, 4]], np.float32))
    out0 = m.add_operand(T.TENSOR_FLOAT32, [2, 2])
    m.add_operation(Op.MUL, [f2, c, act], [out0])
    m.identify_inputs_and_outputs([in0, in1], [out0, out1])
    m.finish()
    return m


MIXED_INPUTS = [np.array([[2, 4], [6, 8]], np.uint8), np.array([[0.5, 0.5], [1, 1]], np.float32)]
# in0 = [1, 2, 3, 4]; q1 = f1 = [2, 4, 6, 8]; out1 = q1 + in0 = [3, 6, 9, 12] (scale 1);
# out0 = (f1 + in1) * c = [2.5, 4.5, 7, 9] * [1, 2, 3, 4]
MIXED_EXPECTED = [np.array([[2.5, 9.0], [21.0, 36.0]], np.float32), np.array([[3, 6], [9, 12]], np.uint8)]


def chain_model(n: int = 2) -> Model:
    """quant8 in [n,2] (scale 0.5, zero point 128) -> DEQUANTIZE = f0 -> MUL(f0, f0) = sq
    (model output 0) -> EMBEDDING_LOOKUP(lookups, sq) = e -> ADD(e, e) = model output 1.
    Four operations on three kinds of device: quant, float, int32 (lookups) and float."""
    m = Model()
    x = m.add_operand(T.TENSOR_QUANT8_ASYMM, [n, 2], 0.5, 128)
    lookups = m.add_operand(T.TENSOR_INT32, [2])
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, 0)
    f0 = m.add_operand(T.TENSOR_FLOAT32, [n, 2])
    m.add_operation(Op.DEQUANTIZE, [x], [f0])
    sq = m.add_operand(T.TENSOR_FLOAT32, [n, 2])
    m.add_operation(Op.MUL, [f0, f0, act], [sq])
    e = m.add_operand(T.TENSOR_FLOAT32, [2, 2])
    m.add_operation(Op.EMBEDDING_LOOKUP, [lookups, sq], [e])
    out = m.add_operand(T.TENSOR_FLOAT32, [2, 2])
    m.add_operation(Op.ADD, [e, e, act], [out])
    m.identify_inputs_and_outputs([x, lookups], [sq, out])
    m.finish()
    return m


CHAIN_INPUTS = [np.array([[130, 132], [126, 128], [136, 120]], np.uint8), np.array([2, 0], np.int32)]
# x = [[1, 2], [-1, 0], [4, -4]]; sq = x * x; e = sq[[2, 0]]; out = e + e
CHAIN_EXPECTED = [np.array([[1, 4], [1, 0], [16, 16]], np.float32), np.array([[32, 32], [2, 8]], np.float32)]


def run(compilation: Compilation, inputs, outputs_like) -> list[np.ndarray]:
    execution = Execution(compilation)
    for j, value in enumerate(inputs):
        execution.set_input(j, value)
    outs = [np.zeros_like(o) for o in outputs_like]
    for j, o in enumerate(outs):
        execution.set_output(j, o)
    execution.compute()
    return outs


def compiled(model: Model, names, preference=None) -> Compilation:
    compilation = Compilation.create_for_devices(model, get_devices(names))
    if preference is not None:
        compilation.set_preference(preference)
    compilation.finish()
    return compilation


def steps_of(compilation: Compilation) -> list[tuple[str, list[int]]]:
    return [(s.device_name, s.operation_indexes) for s in compilation.plan.steps]


# -- test devices ------------------------------------------------------------------------

class FloatDevice(PartialSampleDevice):
    """A float-only device with configurable performance (per instance)."""

    operand_types = (T.TENSOR_FLOAT32, T.FLOAT32)

    def __init__(self, name: str, perf: PerformanceInfo, relaxed: PerformanceInfo | None = None):
        super().__init__()
        self.name, self.perf = name, perf
        self.relaxed_perf = relaxed or PerformanceInfo(1.0, 1.0)


class FailingPrepare(SampleDevice):
    """Supports everything, but every prepare_model fails with ``status`` (or crashes)."""

    name = "nncts-failing-prepare"

    def __init__(self, status: ErrorStatus | None = ErrorStatus.GENERAL_FAILURE):
        super().__init__()
        self.status = status

    def prepare_model(self, model, *args, **kwargs):
        if self.status is None:
            raise RuntimeError("driver bug")
        raise HalError(self.status, "cannot prepare today")


class FailingFloatPrepare(FailingPrepare, PartialSampleDevice):
    """Claims the float operations (better than anyone) but cannot prepare them."""

    name = "nncts-failing-float"
    operand_types = (T.TENSOR_FLOAT32,)
    perf = PerformanceInfo(0.1, 0.1)


class FailingExecution(PartialSampleDevice):
    """Claims the float operations; prepares fine, every execution fails."""

    name = "nncts-failing-execution"
    operand_types = (T.TENSOR_FLOAT32,)
    perf = PerformanceInfo(0.1, 0.1)

    def run(self, model, request):
        raise HalError(ErrorStatus.GENERAL_FAILURE, "the accelerator fell over")


# -- devices -------------------------------------------------------------------------------

def test_variant_devices_names_capabilities_and_support():
    devices = {d.name: d for d in get_devices(["sample-float-fast", "sample-float-slow", "sample-quant",
                                               "sample-minimal"])}
    assert set(devices) == {"nncts-sample-float-fast", "nncts-sample-float-slow", "nncts-sample-quant",
                            "nncts-sample-minimal"}
    fast = devices["nncts-sample-float-fast"].hal.get_capabilities()
    assert fast.performance_of(T.TENSOR_FLOAT32) == PerformanceInfo(0.8, 1.2)
    assert fast.relaxed_float32_to_float16_performance_tensor == PerformanceInfo(0.7, 1.1)
    assert T.TENSOR_QUANT8_ASYMM not in fast.operand_performance  # it cannot run quant8
    slow = devices["nncts-sample-float-slow"].hal.get_capabilities()
    assert slow.performance_of(T.TENSOR_FLOAT32) == PerformanceInfo(1.3, 0.7)
    quant = devices["nncts-sample-quant"].hal.get_capabilities()
    assert set(quant.operand_performance) == {T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED}
    for d in devices.values():
        caps = d.hal.get_capabilities()
        assert all(p.exec_time > 0 and p.power_usage > 0 for p in caps.operand_performance.values())

    hal = mixed_model().to_hal()  # ADD(q), DEQUANTIZE(q), ADD(q), ADD(f), MUL(f)
    assert devices["nncts-sample-float-fast"].hal.get_supported_operations(hal) == [False, False, False, True, True]
    assert devices["nncts-sample-float-slow"].hal.get_supported_operations(hal) == [False, False, False, True, True]
    assert devices["nncts-sample-quant"].hal.get_supported_operations(hal) == [True, True, True, False, False]
    assert devices["nncts-sample-minimal"].hal.get_supported_operations(hal) == [False, False, False, True, False]
    assert SampleDevice().get_supported_operations(hal) == [True] * 5


def test_cpu_reference_device_is_the_last_resort_of_default_lists_only():
    cpu = cpu_device()
    assert cpu is cpu_device()
    assert cpu.name == CPU_DEVICE_NAME == "nnapi-reference"
    assert cpu.type == DeviceTypeCode.CPU
    caps = cpu.hal.get_capabilities()
    assert all(caps.performance_of(t) == PerformanceInfo(1.0, 1.0) for t in T)
    assert caps.relaxed_float32_to_float16_performance_tensor == PerformanceInfo(1.0, 1.0)
    assert cpu.hal.get_number_of_cache_files_needed() == (0, 0)
    assert CPU_DEVICE_NAME not in [d.name for d in get_devices()]
    defaults = default_devices()
    assert [d.name for d in defaults] == ["nncts-sample", "nnapi-reference"]
    compilation = Compilation.create(mixed_model())
    assert [d.name for d in compilation.devices] == ["nncts-sample", "nnapi-reference"]
    explicit = Compilation.create_for_devices(mixed_model(), get_devices(["sample"]))
    assert [d.name for d in explicit.devices] == ["nncts-sample"]


def test_create_prefers_the_driver_over_an_equally_fast_cpu():
    compilation = Compilation.create(mixed_model())
    compilation.finish()
    assert steps_of(compilation) == [("nncts-sample", [0, 1, 2, 3, 4])]
    assert compilation.device.name == "nncts-sample" and compilation.fell_back_to_cpu is None
    assert compilation.plan.steps[0].model is compilation.model.to_hal()  # whole model, no step model
    assert compilation.prepared is compilation.plan.steps[0].prepared
    out = run(compilation, MIXED_INPUTS, MIXED_EXPECTED)
    assert all(np.array_equal(a, b) for a, b in zip(out, MIXED_EXPECTED))


# -- partitioning a float + quant model ------------------------------------------------------

def test_float_and_quant_model_splits_between_float_and_quant_devices():
    model = mixed_model()
    compilation = compiled(model, ["sample-float-fast", "sample-quant"])
    assert steps_of(compilation) == [("nncts-sample-quant", [0, 1, 2]), ("nncts-sample-float-fast", [3, 4])]
    assert compilation.device is None and compilation.prepared is compilation.plan
    assert compilation.device_names == ["nncts-sample-quant", "nncts-sample-float-fast"]
    hal = model.to_hal()
    q, f = compilation.plan.steps
    f1 = hal.main.operations[1].outputs[0]
    # step 0: reads model input 0; writes model output 1 and the temporary f1 for step 1
    assert q.inputs == [(MODEL_INPUT, hal.main.input_indexes[0])]
    assert q.outputs == [(MODEL_OUTPUT, hal.main.output_indexes[1]), (TEMPORARY, f1)]
    assert f.inputs == [(MODEL_INPUT, hal.main.input_indexes[1]), (TEMPORARY, f1)]
    assert f.outputs == [(MODEL_OUTPUT, hal.main.output_indexes[0])]
    for step in compilation.plan.steps:
        validate_model(step.model)
        sg = step.model.main
        assert [sg.operands[i].lifetime for i in sg.input_indexes] == [L.SUBGRAPH_INPUT] * len(sg.input_indexes)
        assert [sg.operands[i].lifetime for i in sg.output_indexes] == [L.SUBGRAPH_OUTPUT] * len(sg.output_indexes)
        assert all(sg.operands[i].dimensions == [2, 2] for i in sg.input_indexes + sg.output_indexes)
    # the float step's constant c was copied into its own model
    c = f.model.main.operands[f.model.main.operations[1].inputs[1]]
    assert c.lifetime == L.CONSTANT_COPY
    raw = f.model.operand_values[c.location.offset:c.location.offset + c.location.length]
    assert np.array_equal(np.frombuffer(raw, np.float32), [1, 2, 3, 4])

    out = run(compilation, MIXED_INPUTS, MIXED_EXPECTED)
    reference = run(compiled(model, ["sample"]), MIXED_INPUTS, MIXED_EXPECTED)
    for got, ref, want in zip(out, reference, MIXED_EXPECTED):
        assert np.array_equal(got, ref)
        assert np.array_equal(got, want)


def test_four_steps_over_three_devices_pass_temporaries_and_model_outputs():
    model = chain_model(3)
    names = ["sample-float-fast", "sample-quant", "sample"]
    compilation = compiled(model, names)
    assert steps_of(compilation) == [("nncts-sample-quant", [0]), ("nncts-sample-float-fast", [1]),
                                     ("nncts-sample", [2]), ("nncts-sample-float-fast", [3])]
    hal = model.to_hal()
    sq = hal.main.output_indexes[0]
    # model output 0 is written by step 1 and read back by step 2 (output as step input)
    assert (MODEL_OUTPUT, sq) in compilation.plan.steps[1].outputs
    assert (MODEL_OUTPUT, sq) in compilation.plan.steps[2].inputs
    assert compilation.plan.step_roles_of_output(0) == [
        (compilation.plan.steps[1].prepared, "output", 0), (compilation.plan.steps[2].prepared, "input", 1)]
    assert compilation.plan.step_roles_of_input(1) == [(compilation.plan.steps[2].prepared, "input", 0)]
    out = run(compilation, CHAIN_INPUTS, CHAIN_EXPECTED)
    reference = run(compiled(model, ["sample"]), CHAIN_INPUTS, CHAIN_EXPECTED)
    for got, ref, want in zip(out, reference, CHAIN_EXPECTED):
        assert np.array_equal(got, ref) and np.array_equal(got, want)


def test_plan_reports_output_shapes_and_too_small_caller_buffers():
    model = chain_model(3)
    compilation = compiled(model, ["sample-float-fast", "sample-quant", "sample"])
    plan: ExecutionPlan = compilation.prepared
    raw = [v.tobytes() for v in CHAIN_INPUTS]
    pools = [SharedMemory(data=raw[0]), SharedMemory(data=raw[1]), SharedMemory(24), SharedMemory(16)]
    request = Request([RequestArgument(False, DataLocation(0, 0, 6)), RequestArgument(False, DataLocation(1, 0, 8))],
                      [RequestArgument(False, DataLocation(2, 0, 24)), RequestArgument(False, DataLocation(3, 0, 16))],
                      pools)
    shapes, _ = plan.execute_synchronously(request)
    assert [s.dimensions for s in shapes] == [[3, 2], [2, 2]] and all(s.is_sufficient for s in shapes)
    assert np.array_equal(np.frombuffer(pools[3].buffer, np.float32).reshape(2, 2), CHAIN_EXPECTED[1])
    small = Request(request.inputs, [RequestArgument(False, DataLocation(2, 0, 8)), request.outputs[1]], pools)
    with pytest.raises(HalError) as err:
        plan.execute_synchronously(small)
    assert err.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [s.dimensions for s in err.value.output_shapes][0] == [3, 2]
    assert err.value.output_shapes[0].is_sufficient is False
    bad = Request(request.inputs[:1], request.outputs, pools)
    with pytest.raises(HalError) as err:
        plan.execute_synchronously(bad)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_temporaries_of_unknown_size_are_sized_from_the_producing_step():
    # 40 x 40 float temporary declared with unknown dimensions: bigger than the first guess
    m = Model()
    x = m.add_operand(T.TENSOR_QUANT8_ASYMM, [40, 40], 0.25, 0)
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, 0)
    f = m.add_operand(T.TENSOR_FLOAT32, [0, 0])
    m.add_operation(Op.DEQUANTIZE, [x], [f])
    out = m.add_operand(T.TENSOR_FLOAT32, [40, 40])
    m.add_operation(Op.ADD, [f, f, act], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    compilation = compiled(m, ["sample-float-fast", "sample-quant"])
    assert [name for name, _ in steps_of(compilation)] == ["nncts-sample-quant", "nncts-sample-float-fast"]
    assert compilation.plan.steps[0].model.main.operands[compilation.plan.steps[0].model.main.output_indexes[0]] \
        .dimensions == [0, 0]
    value = (np.arange(1600) % 256).astype(np.uint8).reshape(40, 40)
    (got,) = run(compilation, [value], [np.zeros((40, 40), np.float32)])
    assert np.array_equal(got, value.astype(np.float32) * 0.25 * 2)


# -- preference ----------------------------------------------------------------------------

def test_preference_picks_exec_time_or_power_usage():
    model = mixed_model()
    hal = model.to_hal()
    quick = Device(FloatDevice("quick", PerformanceInfo(0.5, 2.0)))
    frugal = Device(FloatDevice("frugal", PerformanceInfo(2.0, 0.5)))
    quant = get_devices(["sample-quant"])[0]
    devices = [quick, frugal, quant]
    assert best_device_for_each_operation(hal, devices, PreferenceCode.FAST_SINGLE_ANSWER) == [2, 2, 2, 0, 0]
    assert best_device_for_each_operation(hal, devices, PreferenceCode.SUSTAINED_SPEED) == [2, 2, 2, 0, 0]
    assert best_device_for_each_operation(hal, devices, PreferenceCode.LOW_POWER) == [2, 2, 2, 1, 1]
    caps = quick.hal.get_capabilities()
    assert operation_performance(hal, 3, caps, PreferenceCode.FAST_SINGLE_ANSWER) == 0.5
    assert operation_performance(hal, 3, caps, PreferenceCode.LOW_POWER) == 2.0
    # through the front end, with the bundled fast/slow pair (AOSP float_fast / float_slow)
    names = ["sample-float-fast", "sample-float-slow", "sample-quant"]
    fast = compiled(model, names, PreferenceCode.FAST_SINGLE_ANSWER)
    low = compiled(model, names, PreferenceCode.LOW_POWER)
    assert steps_of(fast)[1] == ("nncts-sample-float-fast", [3, 4])
    assert steps_of(low)[1] == ("nncts-sample-float-slow", [3, 4])
    for c in (fast, low):
        assert all(np.array_equal(a, b) for a, b in zip(run(c, MIXED_INPUTS, MIXED_EXPECTED), MIXED_EXPECTED))


def test_ties_go_to_the_earlier_device_and_relaxed_models_use_relaxed_figures():
    hal = mixed_model().to_hal()
    a = Device(FloatDevice("a", PerformanceInfo(1.0, 1.0)))
    b = Device(FloatDevice("b", PerformanceInfo(1.0, 1.0)))
    quant = get_devices(["sample-quant"])[0]
    assert best_device_for_each_operation(hal, [a, b, quant], PreferenceCode.FAST_SINGLE_ANSWER)[3:] == [0, 0]
    assert best_device_for_each_operation(hal, [b, a, quant], PreferenceCode.FAST_SINGLE_ANSWER)[3:] == [0, 0]
    # c is slower on float32, but faster when float32 may be computed as float16
    c = Device(FloatDevice("c", PerformanceInfo(2.0, 2.0), relaxed=PerformanceInfo(0.3, 0.3)))
    assert best_device_for_each_operation(hal, [a, c, quant], PreferenceCode.FAST_SINGLE_ANSWER)[3:] == [0, 0]
    m = Model()
    x = m.add_operand(T.TENSOR_FLOAT32, [2])
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, 0)
    y = m.add_operand(T.TENSOR_FLOAT32, [2])
    m.add_operation(Op.ADD, [x, x, act], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.relax_computation_float32_to_float16(True)
    m.finish()
    assert best_device_for_each_operation(m.to_hal(), [a, c], PreferenceCode.FAST_SINGLE_ANSWER) == [1]
    compilation = Compilation.create_for_devices(m, [a, c])
    compilation.finish()
    assert compilation.device is c and steps_of(compilation) == [("c", [0])]


# -- errors and CPU fallback -----------------------------------------------------------------

def test_explicit_devices_lacking_an_operation_is_bad_data_naming_it():
    with pytest.raises(NnapiError) as err:
        compiled(mixed_model(), ["sample-float-fast"])
    assert err.value.code == ResultCode.BAD_DATA
    assert "operation 0 (ADD)" in err.value.message and "nncts-sample-float-fast" in err.value.message
    with pytest.raises(NnapiError) as err:
        compiled(chain_model(), ["sample-minimal", "sample-quant"])
    assert err.value.code == ResultCode.BAD_DATA and "operation 1 (MUL)" in err.value.message
    # a failed finish cannot be retried
    compilation = Compilation.create_for_devices(mixed_model(), get_devices(["sample-quant"]))
    with pytest.raises(NnapiError):
        compilation.finish()
    with pytest.raises(NnapiError) as err:
        compilation.finish()
    assert err.value.code == ResultCode.BAD_STATE
    with pytest.raises(NnapiError) as err:
        Execution(compilation)
    assert err.value.code == ResultCode.BAD_STATE


@pytest.mark.parametrize("status, code", [(ErrorStatus.GENERAL_FAILURE, ResultCode.OP_FAILED),
                                          (None, ResultCode.OP_FAILED)])
def test_failed_prepare_falls_back_to_cpu_unless_devices_are_explicit(status, code):
    model = mixed_model()
    failing = Device(FailingPrepare(status))
    compilation = Compilation(model, [failing], explicit=False)
    assert [d.name for d in compilation.devices] == ["nncts-failing-prepare", "nnapi-reference"]
    compilation.finish()
    assert "nncts-failing-prepare" in compilation.fell_back_to_cpu
    assert steps_of(compilation) == [("nnapi-reference", [0, 1, 2, 3, 4])]
    assert compilation.device.name == "nnapi-reference"
    assert compilation.cpu_fallback() is compilation.prepared and not compilation.can_fall_back()
    assert all(np.array_equal(a, b) for a, b in zip(run(compilation, MIXED_INPUTS, MIXED_EXPECTED), MIXED_EXPECTED))

    explicit = Compilation.create_for_devices(model, [failing])
    with pytest.raises(NnapiError) as err:
        explicit.finish()
    assert err.value.code == code and "nncts-failing-prepare" in err.value.message


def test_a_failing_step_of_a_multi_step_plan_falls_back_to_cpu():
    model = mixed_model()
    devices = [Device(FailingFloatPrepare()), get_devices(["sample-quant"])[0]]
    compilation = Compilation(model, devices, explicit=False)
    compilation.finish()
    assert "nncts-failing-float" in compilation.fell_back_to_cpu and "step 1" in compilation.fell_back_to_cpu
    assert compilation.device.name == "nnapi-reference"
    assert all(np.array_equal(a, b) for a, b in zip(run(compilation, MIXED_INPUTS, MIXED_EXPECTED), MIXED_EXPECTED))
    explicit = Compilation.create_for_devices(model, devices)
    with pytest.raises(NnapiError) as err:
        explicit.finish()
    assert err.value.code == ResultCode.OP_FAILED
    assert "nncts-failing-float" in err.value.message and "operations [3, 4]" in err.value.message


def test_invalid_argument_from_prepare_is_the_apps_error_and_not_retried():
    # AOSP CompilationBuilder::finish: BAD_DATA (the driver's INVALID_ARGUMENT) never falls back
    compilation = Compilation(mixed_model(), [Device(FailingPrepare(ErrorStatus.INVALID_ARGUMENT))])
    with pytest.raises(NnapiError) as err:
        compilation.finish()
    assert err.value.code == ResultCode.BAD_DATA and compilation.fell_back_to_cpu is None


def test_failing_execution_step_raises_its_error_or_falls_back_to_cpu():
    model = mixed_model()
    devices = [Device(FailingExecution()), get_devices(["sample-quant"])[0]]
    explicit = Compilation.create_for_devices(model, devices)
    explicit.finish()
    assert [name for name, _ in steps_of(explicit)] == ["nncts-sample-quant", "nncts-failing-execution"]
    assert not explicit.can_fall_back()
    with pytest.raises(NnapiError) as err:
        explicit.cpu_fallback()
    assert err.value.code == ResultCode.BAD_STATE
    with pytest.raises(HalError) as herr:
        raw = [v.tobytes() for v in MIXED_INPUTS]
        pools = [SharedMemory(data=raw[0]), SharedMemory(data=raw[1]), SharedMemory(16), SharedMemory(4)]
        explicit.prepared.execute_synchronously(Request(
            [RequestArgument(False, DataLocation(0, 0, 4)), RequestArgument(False, DataLocation(1, 0, 16))],
            [RequestArgument(False, DataLocation(2, 0, 16)), RequestArgument(False, DataLocation(3, 0, 4))], pools))
    assert herr.value.status == ErrorStatus.GENERAL_FAILURE
    assert "step 1 (nncts-failing-execution)" in herr.value.message and "fell over" in herr.value.message
    with pytest.raises(NnapiError) as err:
        run(explicit, MIXED_INPUTS, MIXED_EXPECTED)
    assert err.value.code == ResultCode.OP_FAILED

    default = Compilation(model, devices, explicit=False)
    default.finish()
    assert default.fell_back_to_cpu is None and default.can_fall_back()
    fallback = default.cpu_fallback()
    assert fallback is default.cpu_fallback() and fallback is not default.prepared
    out = run(default, MIXED_INPUTS, MIXED_EXPECTED)  # the execution retries on the CPU
    assert all(np.array_equal(a, b) for a, b in zip(out, MIXED_EXPECTED))


# -- the V1_0 corpus over three devices -------------------------------------------------------

V1_0_MODELS = list(iter_corpus([CORPUS_V1_0]))
THREE = ["sample-float-fast", "sample-quant", "sample"]


def run_corpus_model(tm, names) -> tuple[list[str], Compilation]:
    """Compile ``tm`` for ``names`` (explicit), execute its example once as the CTS does
    (:func:`harness.runner.execute_compilation`: user buffers, outputs poisoned, no timing
    across devices) and judge the outputs (:func:`runtime.testing.criteria.judge`)."""
    compilation = Compilation.create_for_devices(build_model(tm), get_devices(names))
    compilation.finish()
    ((outputs, dims),) = execute_compilation(compilation, tm, require_timing=False)
    return judge(tm, outputs, dims), compilation


@pytest.mark.parametrize("tm", V1_0_MODELS, ids=[tm.test_id for tm in V1_0_MODELS])
def test_v1_0_corpus_on_float_fast_quant_and_sample(tm):
    assert not tm.expect_failure
    problems, _ = run_corpus_model(tm, THREE)
    assert not problems, problems


def test_v1_0_corpus_uses_each_of_the_three_devices():
    assert len(V1_0_MODELS) > 300
    by_name = {tm.name: tm for tm in V1_0_MODELS}
    expect = {"add": "nncts-sample-float-fast", "add_quant8": "nncts-sample-quant",
              "hashtable_lookup_float": "nncts-sample", "dequantize": "nncts-sample-quant",
              "embedding_lookup": "nncts-sample"}
    for name, device in expect.items():
        problems, compilation = run_corpus_model(by_name[name], THREE)
        assert not problems
        assert compilation.device_names == [device], name
