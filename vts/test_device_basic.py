"""VTS device queries (AOSP VTS ``BasicTests``, ``hardware/interfaces/neuralnetworks/aidl/
vts/functional``), straight on the driver's HAL: identity, capabilities, cache file counts,
extension names, the length of the supported-operations list, cyclic models, and the fenced
path's need of fully specified outputs. Each test names the AOSP test it mirrors; the rules
are AOSP's, restated for this HAL's Python form (errors are HalError statuses; any other
exception escaping the driver is a crash and fails the test).
"""
from __future__ import annotations

import math

import numpy as np

from harness.plugin import corpus_models
from runtime.hal.types import Capabilities, Model, Operand, Operation, PerformanceInfo, Subgraph
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.testing.support import not_implemented_reason
from runtime.types import (MAX_NUMBER_OF_CACHE_FILES, DeviceTypeCode, ErrorStatus as E, MeasureTiming,
                           OperandLifeTime as L, OperandType as T, OperationType)
from vts.device_support import expect, prepared_or_skip, records_fixture
from vts.hal_harness import (chain_model, check_run, conv_model, execute_fenced, execute_sync, hal_call,
                             io_operand, prepare, single_add_model)

_records = records_fixture("device")


def test_device_identity(hal):
    """AIDL/HIDL BasicTests ``CreateDevice``, ``GetDeviceTypeTest``,
    ``GetDeviceVersionStringTest``: a non-empty name and version string, a device type that
    is not UNKNOWN, a feature level in 1..8; each the same on a second call."""
    for what, query in (("get_name", hal.get_name), ("get_version_string", hal.get_version_string)):
        first, second = hal_call(what, query), hal_call(what, query)
        assert first.ok and isinstance(first.value, str) and first.value, f"{what}: {first.value!r}"
        assert first.value == second.value, f"{what} changed between calls"
    kind = hal_call("get_type", hal.get_type)
    assert kind.ok and kind.value in (DeviceTypeCode.OTHER, DeviceTypeCode.CPU, DeviceTypeCode.GPU,
                                      DeviceTypeCode.ACCELERATOR), f"get_type: {kind.value!r}"
    level = hal_call("get_feature_level", hal.get_feature_level)
    assert level.ok and isinstance(level.value, int) and 1 <= level.value <= 8, \
        f"get_feature_level: {level.value!r} is not a feature level 1..8"
    assert hal.get_feature_level() == level.value
    assert hal_call("wait", hal.wait).ok


def _perf_problems(where: str, perf) -> list[str]:
    if not isinstance(perf, PerformanceInfo):
        return [f"{where}: {perf!r} is not a PerformanceInfo"]
    return [f"{where}.{f} = {getattr(perf, f)!r} must be positive and finite"
            for f in ("exec_time", "power_usage")
            if not (isinstance(getattr(perf, f), (int, float)) and math.isfinite(getattr(perf, f))
                    and getattr(perf, f) > 0)]


def test_capabilities(hal):
    """AIDL BasicTests ``GetCapabilitiesTest``: relaxed scalar/tensor, IF and WHILE figures
    present; every PerformanceInfo positive (and finite); operand performance keyed by
    operand types other than SUBGRAPH; the same capabilities on a second call."""
    call = hal_call("get_capabilities", hal.get_capabilities)
    assert call.ok, call.describe()
    caps = call.value
    assert isinstance(caps, Capabilities), f"get_capabilities returned {caps!r}"
    problems = []
    for f in ("relaxed_float32_to_float16_performance_scalar", "relaxed_float32_to_float16_performance_tensor",
              "if_performance", "while_performance"):
        problems += _perf_problems(f, getattr(caps, f))
    for t, perf in caps.operand_performance.items():
        if not isinstance(t, int) or (t <= 0xFFFF and t not in T._value2member_map_):
            problems.append(f"operand_performance key {t!r} is not an operand type")
        elif t == T.SUBGRAPH:
            problems.append("operand_performance lists SUBGRAPH")
        problems += _perf_problems(f"operand_performance[{getattr(t, 'name', t)}]", perf)
    assert not problems, "; ".join(problems)
    again = hal.get_capabilities()
    assert again == caps, "get_capabilities is not stable between calls"


def test_number_of_cache_files(hal):
    """HIDL 1.2 BasicTests ``getNumberOfCacheFilesNeeded``: two counts, each in
    [0, MAX_NUMBER_OF_CACHE_FILES], the same on a second call."""
    call = hal_call("get_number_of_cache_files_needed", hal.get_number_of_cache_files_needed)
    assert call.ok, call.describe()
    counts = tuple(call.value)
    assert len(counts) == 2 and all(isinstance(n, int) and 0 <= n <= MAX_NUMBER_OF_CACHE_FILES for n in counts), \
        f"get_number_of_cache_files_needed returned {call.value!r}"
    assert tuple(hal.get_number_of_cache_files_needed()) == counts


def test_supported_extensions(hal):
    """HIDL 1.2 BasicTests ``GetDeviceSupportedExtensionsTest``: extension names are made of
    a-z, 0-9, '_' and '.', and contain a '.' (reverse domain name of the vendor)."""
    call = hal_call("get_supported_extensions", hal.get_supported_extensions)
    assert call.ok, call.describe()
    for ext in call.value:
        name = getattr(ext, "name", None)
        assert isinstance(name, str) and name, f"extension {ext!r} has no name"
        bad = sorted({c for c in name if not (c.islower() and c.isascii() or c.isdigit() or c in "_.")})
        assert not bad, f"extension name {name!r} contains illegal characters {bad}"
        assert "." in name, f"extension name {name!r} must start with the vendor's reverse domain name"


def _sample_models(config, n: int = 6) -> list:
    """A few runnable valid corpus models (multi-operation ones first), plus synthetic ones."""
    picked = []
    models = [tm for tm in corpus_models(config) if not tm.expect_failure]
    models.sort(key=lambda tm: -len(tm.main.operations))
    for tm in models:
        if len(picked) >= n:
            break
        if not_implemented_reason(to_hal_model(tm)) is None:
            picked.append(tm)
    picked += [chain_model(OperationType.ADD, 5), chain_model(OperationType.MUL, 3, T.TENSOR_QUANT8_ASYMM),
               conv_model(io_operand(T.TENSOR_FLOAT32, (1, 4, 4, 2)), 2)]
    return picked


def test_supported_operations_length(hal, pytestconfig):
    """AIDL ``CompilationCachingTest::isModelFullySupported`` / ``createPreparedModel``:
    get_supported_operations of a valid model succeeds with exactly one bool per operation
    (a few corpus and synthetic models)."""
    problems = []
    for tm in _sample_models(pytestconfig):
        model = to_hal_model(tm)
        call = hal_call("get_supported_operations", hal.get_supported_operations, model)
        if not call.ok:
            problems.append(f"{tm.test_id}: {call.describe()}")
        elif not isinstance(call.value, (list, tuple)) or len(call.value) != len(model.main.operations) or \
                not all(isinstance(v, (bool, np.bool_)) for v in call.value):
            problems.append(f"{tm.test_id}: {call.value!r} for {len(model.main.operations)} operations")
    assert not problems, "; ".join(problems)


def _cycle_model() -> Model:
    f32 = [T.TENSOR_FLOAT32, [1]]
    operands = [Operand(*f32, 2, lifetime=L.SUBGRAPH_INPUT), Operand(*f32, 1, lifetime=L.SUBGRAPH_INPUT),
                Operand(T.INT32, [], 3, lifetime=L.SUBGRAPH_INPUT), Operand(*f32, 1), Operand(*f32, 2),
                Operand(*f32, 0, lifetime=L.SUBGRAPH_OUTPUT)]
    operations = [Operation(OperationType.ADD, [0, 4, 2], [3]), Operation(OperationType.ADD, [1, 3, 2], [4]),
                  Operation(OperationType.ADD, [4, 0, 2], [5])]
    return Model(Subgraph(operands, operations, [0, 1, 2], [5]))


def test_cycle_rejected(hal):
    """AIDL BasicTests ``CycleTest``: a model whose operations form a cycle is rejected by
    get_supported_operations (INVALID_ARGUMENT) and by prepare_model (any error)."""
    model = _cycle_model()
    expect(hal_call("get_supported_operations", hal.get_supported_operations, model), (E.INVALID_ARGUMENT,),
            "get_supported_operations of a cyclic model")
    prepared = prepare(hal, model)
    assert not prepared.ok, "prepare_model accepted a cyclic model"


def test_fenced_rejects_unspecified_output_dimensions(hal, wait_limit):
    """AIDL ``GeneratedTestHarness`` (DYNAMIC_SHAPE, Executor::FENCED): a fenced execution
    needs fully specified outputs, so an output of unspecified dimensions gives
    INVALID_ARGUMENT; the synchronous path runs it and reports the shape; dimensions given
    by the request argument make the fenced execution valid."""
    io = io_operand(T.TENSOR_FLOAT32, (2,))
    tm = single_add_model(io)
    tm.main.operands[3].dimensions = [0]
    for i, v in ((0, [1.0, 2.0]), (1, [3.0, 4.0]), (2, 0)):
        tm.main.operands[i].data = np.asarray(v, np.float32 if i < 2 else np.int32)
    tm.main.operands[3].data = np.asarray([4.0, 6.0], np.float32)
    prepared = prepared_or_skip(hal, tm)
    request = to_hal_request(tm)
    run = execute_fenced(prepared, request, (), MeasureTiming.NO, None, wait_limit)
    expect(run, (E.INVALID_ARGUMENT,), "fenced execution with an output of unspecified dimensions")
    run = execute_sync(prepared, request)
    assert not check_run(tm, request, run), check_run(tm, request, run)
    request.outputs[0].dimensions = [2]
    run = execute_fenced(prepared, request, (), MeasureTiming.NO, None, wait_limit)
    problems = check_run(tm, request, run)
    assert not problems, "fenced execution with output dimensions given by the request: " + "; ".join(problems)
