"""VTS driver-level tests, straight on the driver's HAL: device queries, bursts, memory
domains, compilation-cache security and deadlines. Each test names the AOSP VTS test
(``hardware/interfaces/neuralnetworks/aidl/vts/functional``) it mirrors; the rules are
AOSP's, restated for this HAL's Python form (errors are HalError statuses; any other
exception escaping the driver is a crash and fails the test).
"""
from __future__ import annotations

import contextlib
import math
import os
import random
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from nncts.pytest_plugin import corpus_models
from runtime.errors import HalError
from runtime.hal.interfaces import IPreparedModel
from runtime.hal.memory import SharedMemory
from runtime.hal.types import (BufferDesc, BufferRole, Capabilities, DataLocation, MemoryDomainToken, Model,
                               Operand, Operation, PerformanceInfo, Request, RequestArgument, Subgraph)
from runtime.hal.validate import operand_byte_size
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.testing.support import not_implemented_reason
from runtime.types import (BYTE_SIZE_OF_CACHE_TOKEN, MAX_NUMBER_OF_CACHE_FILES, DeviceTypeCode, ErrorStatus,
                           MeasureTiming, OperandLifeTime, OperandType, OperationType, PriorityCode)
from vts.hal_harness import (MISSED_DEADLINE, PATHS, check_run, chain_model, conv_model,
                             deadline, evaluate_prepared, execute, execute_burst, execute_fenced, execute_sync,
                             hal_call, io_operand, prepare, prepare_from_cache, single_add_model,
                             supported_operations, timing_problems)

E = ErrorStatus
T = OperandType
L = OperandLifeTime
NO, YES = MeasureTiming.NO, MeasureTiming.YES


_CURRENT: dict = {}


@pytest.fixture(autouse=True)
def _records(request):
    """Take part in the outcome records (suite vts, one "mode" per test group)."""
    name = request.node.originalname or request.node.name
    mode = next((m for prefix, m in _GROUPS if name.startswith(prefix)), "device")
    request.node.user_properties += [("operations", []), ("mode", mode), ("suite", "vts")]
    _CURRENT["node"] = request.node
    yield
    _CURRENT.pop("node", None)


def _skip(kind: str, message: str):
    """Skip the running test, recording the kind of skip (not_implemented: the reference
    operation table's gap; unsupported_by_driver; driver_feature: an optional feature the
    driver does not offer; not_applicable)."""
    node = _CURRENT.get("node")
    if node is not None:
        node.user_properties.append(("skip_kind", kind))
    pytest.skip(message)


_GROUPS = [("test_burst", "burst-validation"), ("test_allocate", "memory-domain"),
           ("test_copy", "memory-domain"), ("test_memory_domain", "memory-domain"),
           ("test_cache", "compilation-cache"), ("test_prepare_from_cache", "compilation-cache"),
           ("test_save_to_cache", "compilation-cache"), ("test_no_caching", "compilation-cache"),
           ("test_deadline", "qos"), ("test_priority", "qos")]


@pytest.fixture
def hal(nncts_device):
    return nncts_device.hal


@pytest.fixture
def wait_limit(request):
    return request.config.getoption("wait_limit")


def _unsupported(hal, tm, model) -> tuple[str, str] | None:
    """(skip kind, reason) when ``tm`` cannot be run here: the reference operation table lacks something it
    uses (the project's own gap, never counted as the driver's), or the driver does not
    support every operation. A valid model the driver fails to query is a failure."""
    reason = not_implemented_reason(model)
    if reason:
        return "not_implemented", f"not implemented: {tm.name}: {reason}"
    supported = supported_operations(hal, model)
    if not supported.ok:
        pytest.fail(f"get_supported_operations({tm.name}) of a valid model: {supported.describe()}")
    if not all(supported.value):
        return "unsupported_by_driver", f"unsupported by driver: {tm.name}"
    return None


def _prepared_or_skip(hal, tm):
    """Prepare ``tm`` (AOSP ``createPreparedModel``): skip when the driver does not support
    every operation, fail when a fully supported model does not prepare."""
    model = to_hal_model(tm)
    reason = _unsupported(hal, tm, model)
    if reason:
        _skip(*reason)
    prepared = prepare(hal, model)
    if not prepared.ok:
        pytest.fail(f"prepare_model({tm.name}) of a fully supported model: {prepared.describe()}")
    return prepared.value


def _expect(call_or_status, allowed, what: str):
    status = getattr(call_or_status, "status", call_or_status)
    message = getattr(call_or_status, "message", "")
    if status not in allowed:
        names = " or ".join(s.name for s in allowed)
        pytest.fail(f"{what}: expected {names}, got {status.name}" + (f" ({message})" if message else ""),
                    pytrace=False)


# =============================================================================================
# Device queries (BasicTests)
# =============================================================================================
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
    _expect(hal_call("get_supported_operations", hal.get_supported_operations, model), (E.INVALID_ARGUMENT,),
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
    prepared = _prepared_or_skip(hal, tm)
    request = to_hal_request(tm)
    run = execute_fenced(prepared, request, (), NO, None, wait_limit)
    _expect(run, (E.INVALID_ARGUMENT,), "fenced execution with an output of unspecified dimensions")
    run = execute_sync(prepared, request)
    assert not check_run(tm, request, run), check_run(tm, request, run)
    request.outputs[0].dimensions = [2]
    run = execute_fenced(prepared, request, (), NO, None, wait_limit)
    problems = check_run(tm, request, run)
    assert not problems, "fenced execution with output dimensions given by the request: " + "; ".join(problems)


# =============================================================================================
# Bursts (IBurst contract; GeneratedTestHarness Executor::BURST)
# =============================================================================================
@pytest.fixture
def chain(hal):
    """(test model, prepared model) of a 3-ADD float32 chain."""
    tm = chain_model(OperationType.ADD, 3)
    return tm, _prepared_or_skip(hal, tm)


def _burst(prepared):
    call = hal_call("configure_execution_burst", prepared.configure_execution_burst)
    assert call.ok and call.value is not None, f"configure_execution_burst: {call.describe()}"
    return call.value


def test_burst_token_count_mismatch(chain):
    """IBurst ``executeSynchronously``: memoryIdentifierTokens has one token per request
    pool; fewer or more give INVALID_ARGUMENT (AOSP burst adapter validation)."""
    tm, prepared = chain
    burst = _burst(prepared)
    request = to_hal_request(tm)
    n = len(request.pools)
    for tokens in ([], list(range(n - 1)), list(range(n + 1))):
        _expect(execute_burst(burst, request, tokens), (E.INVALID_ARGUMENT,),
                f"burst execution with {len(tokens)} tokens for {n} pools")
    run = execute_burst(burst, request, list(range(n)))
    assert not check_run(tm, request, run), "the burst no longer works after rejected executions"


def test_burst_invalid_token_value(chain):
    """IBurst ``executeSynchronously``: each token is non-negative or -1 (no identity);
    -2 gives INVALID_ARGUMENT."""
    tm, prepared = chain
    request = to_hal_request(tm)
    tokens = [-1] * len(request.pools)
    tokens[0] = -2
    _expect(execute_burst(_burst(prepared), request, tokens), (E.INVALID_ARGUMENT,),
            "burst execution with memory identifier token -2")


def test_burst_release_unknown_token_is_harmless(chain):
    """IBurst ``releaseMemoryResource``: releasing a token the burst never saw (or -1) is not
    an error and leaves the burst usable; a negative token other than -1 is
    INVALID_ARGUMENT."""
    tm, prepared = chain
    burst = _burst(prepared)
    for token in (12345, -1):
        call = hal_call("release_memory_resource", burst.release_memory_resource, token)
        assert call.ok, f"release_memory_resource({token}) of an unknown token: {call.describe()}"
    _expect(hal_call("release_memory_resource", burst.release_memory_resource, -2), (E.INVALID_ARGUMENT,),
            "release_memory_resource(-2)")
    request = to_hal_request(tm)
    run = execute_burst(burst, request, list(range(len(request.pools))))
    assert not check_run(tm, request, run), check_run(tm, request, run)


def test_burst_after_prepared_model_use(chain):
    """GeneratedTestHarness (SYNC then BURST on one prepared model): a burst configured
    after the prepared model ran synchronously runs correctly twice over the same memories,
    and the prepared model still runs synchronously afterwards (and between)."""
    tm, prepared = chain
    request = to_hal_request(tm)
    problems = check_run(tm, request, execute_sync(prepared, request))
    burst = _burst(prepared)
    tokens = list(range(len(request.pools)))
    for k in range(2):
        request.pools[1].buffer[:] = bytes(request.pools[1].size)
        problems += check_run(tm, request, execute_burst(burst, request, tokens, label=f"burst run {k + 1}"))
        problems += check_run(tm, request, execute_sync(prepared, request, label=f"sync after burst run {k + 1}"))
    for token in tokens:
        assert hal_call("release_memory_resource", burst.release_memory_resource, token).ok
    assert not problems, "; ".join(problems)


def test_burst_token_reused_for_new_memory_after_release(chain):
    """IBurst ``releaseMemoryResource``: once a token is released the client may use it for
    another memory; the driver must then read the new memory (not a stale cached one)."""
    tm, prepared = chain
    burst = _burst(prepared)
    request = to_hal_request(tm)
    tokens = list(range(len(request.pools)))
    assert not check_run(tm, request, execute_burst(burst, request, tokens))
    for token in tokens:
        assert hal_call("release_memory_resource", burst.release_memory_resource, token).ok
    fresh = to_hal_request(tm)
    fresh.pools[0] = SharedMemory(data=np.asarray([10.0], np.float32).tobytes())
    run = execute_burst(burst, fresh, tokens, label="burst run with new memories under released tokens")
    assert run.status == E.NONE, run.describe()
    got = np.frombuffer(bytes(fresh.pools[1].buffer[:4]), np.float32)[0]
    assert got == 13.0, f"the burst computed {got} from input 10 (expected 13): it used a released memory"


# =============================================================================================
# Memory domains (MemoryDomainTests)
# =============================================================================================
MEMORY_DOMAIN_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
MEMORY_DOMAIN_DIMS = (1, 8, 8, 4)
EXECUTORS = ("sync", "burst", "fenced")
#: ``MemoryDomainAllocateTest.ConflictOperandType``.
CONFLICT_TYPE = {T.TENSOR_FLOAT32: T.TENSOR_FLOAT16, T.TENSOR_FLOAT16: T.TENSOR_FLOAT32,
                 T.TENSOR_QUANT8_ASYMM: T.TENSOR_QUANT8_ASYMM_SIGNED,
                 T.TENSOR_QUANT8_ASYMM_SIGNED: T.TENSOR_QUANT8_ASYMM}


class _InvalidPreparedModel(IPreparedModel):
    """AOSP ``InvalidPreparedModel``: a prepared model the device under test did not make;
    every execution fails."""

    def execute_synchronously(self, request, measure=MeasureTiming.NO, deadline_ns=None,
                              loop_timeout_duration_ns=None):
        raise HalError(E.GENERAL_FAILURE, "invalid prepared model")

    def execute_fenced(self, *args, **kwargs):
        raise HalError(E.GENERAL_FAILURE, "invalid prepared model")

    def configure_execution_burst(self):
        raise HalError(E.GENERAL_FAILURE, "invalid prepared model")


@dataclass
class MemoryDomain:
    """The operand of one MemoryDomainTests parameter, and a device that allocates buffers
    for it."""

    hal: object
    type: OperandType
    skip_reason: tuple = ()

    @property
    def operand(self):
        return io_operand(self.type, MEMORY_DOMAIN_DIMS)

    @property
    def size(self) -> int:
        return operand_byte_size(self.type, MEMORY_DOMAIN_DIMS)

    def variant(self, dims=None, type_=None, scale=None, zero_point=None):
        o = self.operand
        return io_operand(type_ or self.type, MEMORY_DOMAIN_DIMS if dims is None else dims,
                          o.scale if scale is None else scale, o.zero_point if zero_point is None else zero_point)

    def _prepare(self, tm):
        model = to_hal_model(tm)
        self.skip_reason = _unsupported(self.hal, tm, model)
        if self.skip_reason:
            return None
        prepared = prepare(self.hal, model)
        if not prepared.ok:
            pytest.fail(f"prepare_model({tm.name}) of a fully supported model: {prepared.describe()}")
        return prepared.value

    def conv(self, io=None, num_operations: int = 1):
        """AOSP ``createConvPreparedModel`` (None when the driver does not support it)."""
        return self._prepare(conv_model(io or self.operand, num_operations))

    def conv_or_skip(self, io=None, num_operations: int = 1):
        pm = self.conv(io, num_operations)
        if pm is None:
            _skip(*self.skip_reason)
        return pm

    def add(self, io=None):
        """AOSP ``createAddPreparedModel`` (None when unsupported)."""
        return self._prepare(single_add_model(io or self.operand))

    def allocate(self, prepared, inputs=(), outputs=(), dims=()):
        """AOSP ``MemoryDomainCopyTestBase::allocateBuffer``: (buffer, token) for roles of one
        prepared model, or None when the driver cannot (it must then say GENERAL_FAILURE)."""
        call = hal_call("allocate", self.hal.allocate, BufferDesc(list(dims)), [prepared],
                        [BufferRole(0, i) for i in inputs], [BufferRole(0, i) for i in outputs])
        if not call.ok:
            _expect(call, (E.GENERAL_FAILURE,), "allocate of a valid buffer")
            return None
        buffer, token = call.value
        assert buffer is not None and isinstance(token, int) and token > 0, f"allocate returned {call.value!r}"
        return buffer, token

    def allocate_or_skip(self, prepared, inputs=(), outputs=(), dims=()):
        got = self.allocate(prepared, inputs, outputs, dims)
        if got is None:
            _skip("driver_feature", "the driver cannot allocate this buffer (GENERAL_FAILURE)")
        return got

    def data(self, dims=MEMORY_DOMAIN_DIMS, seed: int = 1) -> SharedMemory:
        """Shared memory holding an operand of ``dims`` with varied bytes."""
        n = operand_byte_size(self.type, dims)
        raw = np.random.default_rng(seed).integers(0, 64, n, dtype=np.uint8)
        if self.type == T.TENSOR_FLOAT16:  # small finite halves
            raw = np.random.default_rng(seed).random(n // 2).astype(np.float16).view(np.uint8)
        elif self.type == T.TENSOR_FLOAT32:
            raw = np.random.default_rng(seed).random(n // 4).astype(np.float32).view(np.uint8)
        return SharedMemory(data=raw.tobytes())


@pytest.fixture(params=MEMORY_DOMAIN_TYPES, ids=lambda t: t.name)
def md(request, hal):
    """A MemoryDomain for one operand type (AOSP ``kTestOperandTypeChoices``); skips when
    the driver does not support the CONV_2D model, or declares no memory domain support
    (a valid allocate gives GENERAL_FAILURE)."""
    domain = MemoryDomain(hal, request.param)
    pm = domain.conv_or_skip()
    if domain.allocate(pm, [0], [0]) is None:
        _skip("driver_feature", f"the driver declares no memory domain support: allocate of a valid "
                    f"{domain.type.name} buffer gives GENERAL_FAILURE")
    return domain


def _role(model_index=0, io_index=0, probability=1.0):
    return BufferRole(model_index, io_index, probability)


def _conflict_cases(md, conflict_io, make="conv"):
    """``testConflictOperands``: (prepared models, input roles, output roles) pairing the
    normal model with a conflicting one."""
    build = md.conv if make == "conv" else md.add
    a = build()
    b = build(conflict_io) if a is not None else None
    if a is None or b is None:
        _skip(*md.skip_reason)
    return [([a, b], [_role(0), _role(1)], []), ([a, b], [_role(0)], [_role(1)]),
            ([a, b], [], [_role(0), _role(1)])]


def _allocate_cases(md, case: str) -> list:
    """(desc dims, prepared models, input roles, output roles) of one
    ``MemoryDomainAllocateTest``."""
    if case == "EmptyRole":
        return [([], [], [], []), ([], [md.conv_or_skip()], [], [])]
    if case == "NullptrPreparedModel":
        return [([], [None], [_role()], []), ([], [None], [], [_role()])]
    if case == "InvalidPreparedModel":
        return [([], [_InvalidPreparedModel()], [_role()], []), ([], [_InvalidPreparedModel()], [], [_role()])]
    pm = md.conv_or_skip()
    if case == "InvalidModelIndex":
        return [([], [pm], [_role(1)], []), ([], [pm], [], [_role(1)])]
    if case == "InvalidIOIndex":
        return [([], [pm], [_role(0, 1)], []), ([], [pm], [], [_role(0, 1)])]
    if case == "InvalidProbability":
        return [c for p in (10.0, 0.0, -0.5) for c in (([], [pm], [_role(0, 0, p)], []),
                                                       ([], [pm], [], [_role(0, 0, p)]))]
    if case == "SameRoleSpecifiedTwice":
        return [([], [pm], [_role(), _role()], []), ([], [pm], [], [_role(), _role()]),
                ([], [pm, pm], [_role(0), _role(1)], []), ([], [pm, pm], [], [_role(0), _role(1)])]
    if case == "ConflictOperandType":
        return [([], *c) for c in _conflict_cases(md, md.variant(type_=CONFLICT_TYPE[md.type]))]
    if case in ("ConflictScale", "ConflictZeroPoint"):
        if md.type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
            _skip("not_applicable", "float operands have no scale or zero point")
        io = md.variant(scale=1.0) if case == "ConflictScale" else md.variant(zero_point=10)
        return [([], *c) for c in _conflict_cases(md, io)]
    if case == "ConflictRankBetweenRoles":
        return [([], *c) for c in _conflict_cases(md, md.variant(dims=MEMORY_DOMAIN_DIMS[:-1]), "add")]
    if case == "ConflictDimensionsBetweenRoles":
        return [([], *c) for c in _conflict_cases(md, md.variant(dims=(4, *MEMORY_DOMAIN_DIMS[1:])))]
    if case == "ConflictRankBetweenRoleAndDesc":
        bad = list(MEMORY_DOMAIN_DIMS[:-1])
        return [(bad, [pm], [_role()], []), (bad, [pm], [], [_role()])]
    if case == "ConflictDimensionsBetweenRoleAndDesc":
        bad = [4, *MEMORY_DOMAIN_DIMS[1:]]
        return [(bad, [pm], [_role()], []), (bad, [pm], [], [_role()])]
    if case == "ConflictRankWithScalarRole":
        add = md.add()
        if add is None:
            _skip(*md.skip_reason)
        return [([1], [add], [_role(0, 2)], [])]
    raise ValueError(case)


ALLOCATE_CASES = ("EmptyRole", "NullptrPreparedModel", "InvalidPreparedModel", "InvalidModelIndex",
                  "InvalidIOIndex", "InvalidProbability", "SameRoleSpecifiedTwice", "ConflictOperandType",
                  "ConflictScale", "ConflictZeroPoint", "ConflictRankBetweenRoles",
                  "ConflictDimensionsBetweenRoles", "ConflictRankBetweenRoleAndDesc",
                  "ConflictDimensionsBetweenRoleAndDesc", "ConflictRankWithScalarRole")


@pytest.mark.parametrize("case", ALLOCATE_CASES)
def test_allocate_invalid(md, case):
    """AIDL ``MemoryDomainAllocateTest.<case>``: IDevice.allocate with invalid prepared
    models or roles (none, out-of-range model or io index, probability outside (0, 1], a
    role given twice, roles or descriptor disagreeing on type, scale, zero point, rank or
    dimensions, dimensions for a scalar) is INVALID_ARGUMENT on a driver with memory domain
    support."""
    for dims, models, inputs, outputs in _allocate_cases(md, case):
        call = hal_call("allocate", md.hal.allocate, BufferDesc(list(dims)), models, inputs, outputs)
        _expect(call, (E.INVALID_ARGUMENT,),
                f"allocate(dims={dims}, {len(models)} prepared models, inputs={inputs}, outputs={outputs})")


def _copy_from(buffer, memory, dims):
    return hal_call("IBuffer.copy_from", buffer.copy_from, memory, list(dims))


def _copy_to(buffer, memory):
    return hal_call("IBuffer.copy_to", buffer.copy_to, memory)


def test_copy_from_invalid_memory_size(md):
    """AIDL ``MemoryDomainCopyTest.CopyFrom_InvalidMemorySize``: copy_from a memory of half
    or twice the buffer's size is INVALID_ARGUMENT."""
    buffer, _ = md.allocate_or_skip(md.conv_or_skip(), [0], [0])
    for size in (md.size // 2, md.size * 2):
        _expect(_copy_from(buffer, SharedMemory(size), []), (E.INVALID_ARGUMENT,),
                f"copy_from a {size}-byte memory into a {md.size}-byte buffer")


def _dynamic_buffer(md):
    io = md.variant(dims=(0, *MEMORY_DOMAIN_DIMS[1:]))
    return md.allocate_or_skip(md.conv_or_skip(io), [0], [0])


def test_copy_from_invalid_memory_size_dynamic_shape(md):
    """AIDL ``MemoryDomainCopyTest.CopyFrom_InvalidMemorySize_DynamicShape``: a buffer for a
    model of unknown batch: copy_from with the right dimensions but a memory of half or twice
    the size is INVALID_ARGUMENT; the right memory succeeds; dimensions then changed to a
    batch of 2 are INVALID_ARGUMENT. (Skipped when the driver cannot allocate buffers of
    unspecified dimensions, which it may refuse with GENERAL_FAILURE.)"""
    buffer, _ = _dynamic_buffer(md)
    good = list(MEMORY_DOMAIN_DIMS)
    for size in (md.size // 2, md.size * 2):
        _expect(_copy_from(buffer, SharedMemory(size), good), (E.INVALID_ARGUMENT,), f"copy_from {size} bytes")
    _expect(_copy_from(buffer, md.data(), good), (E.NONE,), "copy_from the right memory")
    _expect(_copy_from(buffer, md.data(), [2, *good[1:]]), (E.INVALID_ARGUMENT,), "copy_from batch 2 dims")


def test_copy_from_invalid_dimensions(md):
    """AIDL ``MemoryDomainCopyTest.CopyFrom_InvalidDimensions``: copy_from with a lower
    rank, a different dimension, or a dimension 0 (not fully specified) is
    INVALID_ARGUMENT; no dimensions or the buffer's own succeed."""
    buffer, _ = md.allocate_or_skip(md.conv_or_skip(), [0], [0])
    good = list(MEMORY_DOMAIN_DIMS)
    for bad in (good[:-1], [2, *good[1:]], [0, *good[1:]]):
        _expect(_copy_from(buffer, md.data(), bad), (E.INVALID_ARGUMENT,), f"copy_from with dimensions {bad}")
    _expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from with no dimensions")
    _expect(_copy_from(buffer, md.data(), good), (E.NONE,), f"copy_from with dimensions {good}")


def test_copy_from_invalid_dimensions_dynamic_shape(md):
    """AIDL ``MemoryDomainCopyTest.CopyFrom_InvalidDimensions_DynamicShape``: for a buffer of
    unknown batch, copy_from needs fully specified dimensions compatible with the buffer's:
    lower rank, a changed channel count, a 0 dimension or none at all are INVALID_ARGUMENT."""
    buffer, _ = _dynamic_buffer(md)
    good = list(MEMORY_DOMAIN_DIMS)
    for bad in (good[:-1], [2, *good[1:-1], 4 * good[-1]], [1, *good[1:-1], 0], []):
        _expect(_copy_from(buffer, md.data(), bad), (E.INVALID_ARGUMENT,), f"copy_from with dimensions {bad}")
    _expect(_copy_from(buffer, md.data(), good), (E.NONE,), f"copy_from with dimensions {good}")


def test_copy_to_uninitialized_memory(md):
    """AIDL ``MemoryDomainCopyTest.CopyTo_UninitializedMemory``: copy_to from a buffer never
    written is GENERAL_FAILURE."""
    buffer, _ = md.allocate_or_skip(md.conv_or_skip(), [0], [0])
    _expect(_copy_to(buffer, SharedMemory(md.size)), (E.GENERAL_FAILURE,), "copy_to of an uninitialized buffer")


def _copy_to_checks(md, buffer, dims):
    source = md.data(seed=7)
    _expect(_copy_from(buffer, source, dims), (E.NONE,), "copy_from (initializing the buffer)")
    for size in (md.size // 2, md.size * 2):
        _expect(_copy_to(buffer, SharedMemory(size)), (E.INVALID_ARGUMENT,), f"copy_to a {size}-byte memory")
    out = SharedMemory(md.size)
    _expect(_copy_to(buffer, out), (E.NONE,), "copy_to a memory of the buffer's size")
    assert bytes(out.buffer) == bytes(source.buffer), "copy_to did not give back what copy_from wrote"


def test_copy_to_invalid_memory_size(md):
    """AIDL ``MemoryDomainCopyTest.CopyTo_InvalidMemorySize``: after initialization, copy_to
    a memory of half or twice the size is INVALID_ARGUMENT; the right size succeeds (and
    gives back the bytes written)."""
    buffer, _ = md.allocate_or_skip(md.conv_or_skip(), [0], [0])
    _copy_to_checks(md, buffer, [])


def test_copy_to_invalid_memory_size_dynamic_shape(md):
    """AIDL ``MemoryDomainCopyTest.CopyTo_InvalidMemorySize_DynamicShape``: the same for a
    buffer of unknown batch initialized with full dimensions."""
    buffer, _ = _dynamic_buffer(md)
    _copy_to_checks(md, buffer, list(MEMORY_DOMAIN_DIMS))


def _shared_arg(pool: int, size: int, dims=()):
    return RequestArgument(False, DataLocation(pool, 0, size), list(dims))


def _device_arg(pool: int, dims=()):
    return RequestArgument(False, DataLocation(pool, 0, 0), list(dims))


@pytest.fixture(params=EXECUTORS)
def executor(request):
    return request.param


def _exec_status(executor, prepared, request, wait_limit) -> ErrorStatus:
    """``MemoryDomainExecutionTest::testExecution``: the status of one execution (timing not
    requested, so none may be reported when it succeeds)."""
    run = execute(executor, prepared, request, NO, None, wait_limit)
    if run.status == E.NONE:
        problems = timing_problems(run)
        assert not problems, "; ".join(problems)
    return run.status


def _check_exec(executor, prepared, request, expected, what, wait_limit):
    status = _exec_status(executor, prepared, request, wait_limit)
    if status != expected:
        pytest.fail(f"{executor} execution {what}: expected {expected.name}, got {status.name}", pytrace=False)


def test_memory_domain_invalid_token(md, executor, wait_limit):
    """AIDL ``MemoryDomainExecutionTest.InvalidToken``: a request pool that is a memory
    domain token 0 (invalid) or never allocated, used as input or output, is
    INVALID_ARGUMENT."""
    pm = md.conv_or_skip()
    for token in (0, 2**31 - 1):
        for kind in ("input", "output"):
            pools = [SharedMemory(md.size), MemoryDomainToken(token)]
            shared, device = _shared_arg(0, md.size), _device_arg(1)
            req = Request([device], [shared], pools) if kind == "input" else Request([shared], [device], pools)
            _check_exec(executor, pm, req, E.INVALID_ARGUMENT, f"with token {token} as {kind}", wait_limit)


def test_memory_domain_invalid_prepared_model(md, executor, wait_limit):
    """AIDL ``MemoryDomainExecutionTest.InvalidPreparedModel``: a buffer allocated for one
    prepared model, used with another, is INVALID_ARGUMENT."""
    pm = md.conv_or_skip()
    buffer, token = md.allocate_or_skip(pm, [0], [0])
    other = md.conv_or_skip()
    _expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
    pools = [SharedMemory(md.size), MemoryDomainToken(token)]
    shared, device = _shared_arg(0, md.size), _device_arg(1)
    _check_exec(executor, other, Request([device], [shared], pools), E.INVALID_ARGUMENT,
                "of another prepared model with the buffer as input", wait_limit)
    _check_exec(executor, other, Request([shared], [device], pools), E.INVALID_ARGUMENT,
                "of another prepared model with the buffer as output", wait_limit)


def test_memory_domain_invalid_io_index(md, executor, wait_limit):
    """AIDL ``MemoryDomainExecutionTest.InvalidIOIndex``: a buffer allocated for input 0
    only, used as input 1 or output 1, is INVALID_ARGUMENT."""
    pm = md.conv_or_skip(num_operations=2)
    buffer, token = md.allocate_or_skip(pm, [0], [])
    _expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
    pools = [SharedMemory(md.size), SharedMemory(md.size), SharedMemory(md.size), MemoryDomainToken(token)]
    a1, a2, a3, device = _shared_arg(0, md.size), _shared_arg(1, md.size), _shared_arg(2, md.size), _device_arg(3)
    _check_exec(executor, pm, Request([a1, device], [a2, a3], pools), E.INVALID_ARGUMENT,
                "with the input-0 buffer as input 1", wait_limit)
    _check_exec(executor, pm, Request([a1, a2], [a3, device], pools), E.INVALID_ARGUMENT,
                "with the input-0 buffer as output 1", wait_limit)


def test_memory_domain_invalid_io_type(md, executor, wait_limit):
    """AIDL ``MemoryDomainExecutionTest.InvalidIOType``: a buffer allocated as an input,
    used as an output, and one allocated as an output (initialized), used as an input, are
    INVALID_ARGUMENT."""
    pm = md.conv_or_skip()
    in_buffer, in_token = md.allocate_or_skip(pm, [0], [])
    out_buffer, out_token = md.allocate_or_skip(pm, [], [0])
    shared, device = _shared_arg(0, md.size), _device_arg(1)
    _check_exec(executor, pm, Request([shared], [device], [SharedMemory(md.size), MemoryDomainToken(in_token)]),
                E.INVALID_ARGUMENT, "with an input buffer as output", wait_limit)
    _expect(_copy_from(out_buffer, md.data(), []), (E.NONE,), "copy_from")
    _check_exec(executor, pm, Request([device], [shared], [SharedMemory(md.size), MemoryDomainToken(out_token)]),
                E.INVALID_ARGUMENT, "with an output buffer as input", wait_limit)


def test_memory_domain_uninitialized_memory(md, executor, wait_limit):
    """AIDL ``MemoryDomainExecutionTest.UninitializedMemory``: an uninitialized buffer as
    input is GENERAL_FAILURE; an execution writing it as output initializes it, after which
    it works as input."""
    pm = md.conv_or_skip()
    _, token = md.allocate_or_skip(pm, [0], [0])
    pools = [md.data(), MemoryDomainToken(token)]
    shared, device = _shared_arg(0, md.size), _device_arg(1)
    _check_exec(executor, pm, Request([device], [shared], pools), E.GENERAL_FAILURE,
                "with an uninitialized buffer as input", wait_limit)
    _check_exec(executor, pm, Request([shared], [device], pools), E.NONE, "writing the buffer", wait_limit)
    _check_exec(executor, pm, Request([device], [shared], pools), E.NONE,
                "reading the initialized buffer", wait_limit)


def test_memory_domain_same_request_multiple_roles(md, executor, wait_limit):
    """AIDL ``MemoryDomainExecutionTest.SameRequestMultipleRoles``: one buffer as an input
    and an output, or as two outputs, of one request is INVALID_ARGUMENT; as two inputs it
    is fine."""
    pm = md.conv_or_skip(num_operations=2)
    buffer, token = md.allocate_or_skip(pm, [0, 1], [0, 1])
    pools = [SharedMemory(md.size), SharedMemory(md.size), MemoryDomainToken(token)]
    a1, a2, device = _shared_arg(0, md.size), _shared_arg(1, md.size), _device_arg(2)
    _expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
    _check_exec(executor, pm, Request([device, a1], [device, a2], pools), E.INVALID_ARGUMENT,
                "with one buffer as input and output", wait_limit)
    _check_exec(executor, pm, Request([a1, a2], [device, device], pools), E.INVALID_ARGUMENT,
                "with one buffer as both outputs", wait_limit)
    _expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
    _check_exec(executor, pm, Request([device, device], [a1, a2], pools), E.NONE,
                "with one buffer as both inputs", wait_limit)


def test_memory_domain_invalid_dimensions(md, executor, wait_limit):
    """AIDL ``MemoryDomainExecutionTest.InvalidDimensions``: a buffer of [1, ...] for a model
    of unknown batch: used with request dimensions of batch 2 as input or output it is
    INVALID_ARGUMENT; as the output of an execution computing batch 2 it is
    GENERAL_FAILURE. (Not for fenced executions, which need fully specified outputs.)"""
    if executor == "fenced":
        _skip("not_applicable", "fenced executions do not support dynamic output shapes")
    good = list(MEMORY_DOMAIN_DIMS)
    pm = md.conv_or_skip(md.variant(dims=(0, *good[1:])))
    buffer, token = md.allocate_or_skip(pm, [0], [0], good)
    bad = [2, *good[1:]]
    pools = [SharedMemory(md.size * 2), MemoryDomainToken(token)]
    shared = _shared_arg(0, md.size * 2, bad)
    _expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
    _check_exec(executor, pm, Request([_device_arg(1, bad)], [shared], pools), E.INVALID_ARGUMENT,
                f"with the buffer as input of dimensions {bad}", wait_limit)
    _check_exec(executor, pm, Request([shared], [_device_arg(1, bad)], pools), E.INVALID_ARGUMENT,
                f"with the buffer as output of dimensions {bad}", wait_limit)
    _check_exec(executor, pm, Request([shared], [_device_arg(1)], pools), E.GENERAL_FAILURE,
                f"computing a {bad} output into the {good} buffer", wait_limit)


# =============================================================================================
# Compilation caching (CompilationCachingTests)
# =============================================================================================
CACHE_TYPES = {"float32": T.TENSOR_FLOAT32, "quant8": T.TENSOR_QUANT8_ASYMM}
CACHE_MODEL_LENGTH = 10
SEEDS = range(10)
TOCTOU_ITERATIONS = 10
REJECTED = (E.INVALID_ARGUMENT, E.GENERAL_FAILURE)


class CacheFiles:
    """AOSP ``CompilationCachingTestBase``'s cache directory: model cache files
    ``model0..``, data cache files ``data0..`` and a spare ``tmp`` file, all created empty;
    ``token`` is the (mutable) 32-byte cache token."""

    def __init__(self, directory: Path, n_model: int, n_data: int):
        self.dir = directory
        self.model = [directory / f"model{i}" for i in range(n_model)]
        self.data = [directory / f"data{i}" for i in range(n_data)]
        self.tmp = directory / "tmp"
        self.token = bytearray(BYTE_SIZE_OF_CACHE_TOKEN)
        for p in [*self.model, *self.data, self.tmp]:
            p.touch()

    @staticmethod
    def _open(path: Path, mode: str):
        if mode == "rw":
            return open(path, "r+b")
        if mode == "ro":
            return open(path, "rb")
        if mode == "wo":
            return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb")
        raise ValueError(mode)

    @contextlib.contextmanager
    def handles(self, model=None, data=None, model_modes=None, data_modes=None):
        """(model cache files, data cache files) opened ("rw" unless a mode says "ro"/"wo"),
        closed on exit."""
        model = self.model if model is None else model
        data = self.data if data is None else data
        model_modes = model_modes or ["rw"] * len(model)
        data_modes = data_modes or ["rw"] * len(data)
        with contextlib.ExitStack() as stack:
            yield ([stack.enter_context(self._open(p, m)) for p, m in zip(model, model_modes)],
                   [stack.enter_context(self._open(p, m)) for p, m in zip(data, data_modes)])


@pytest.fixture
def cache_counts(hal):
    counts = tuple(hal.get_number_of_cache_files_needed())
    if counts == (0, 0):
        _skip("driver_feature",
              "the driver does not cache compilations (get_number_of_cache_files_needed is (0, 0))")
    return counts


@pytest.fixture
def cache(cache_counts, tmp_path):
    return CacheFiles(tmp_path, *cache_counts)


@pytest.fixture(params=list(CACHE_TYPES), ids=list(CACHE_TYPES))
def cached_model(request, hal):
    """(test model, HAL model) of an ADD chain in the parameter's type, skipped when the
    driver does not support it (AOSP ``checkEarlyTermination``)."""
    tm = chain_model(OperationType.ADD, CACHE_MODEL_LENGTH, CACHE_TYPES[request.param])
    model = to_hal_model(tm)
    reason = _unsupported(hal, tm, model)
    if reason:
        _skip(*reason)
    return tm, model


def _save(hal, model, cache, model_files=None, data_files=None, model_modes=None, data_modes=None):
    """AOSP ``saveModelToCache``: prepare_model with cache files must succeed."""
    with cache.handles(model_files, data_files, model_modes, data_modes) as (mc, dc):
        prepared = prepare(hal, model, model_cache=mc, data_cache=dc, token=bytes(cache.token))
    assert prepared.ok, f"prepare_model with cache files: {prepared.describe()}"
    return prepared.value


def _load(hal, cache, model_files=None, data_files=None, model_modes=None, data_modes=None, token=None):
    with cache.handles(model_files, data_files, model_modes, data_modes) as (mc, dc):
        return prepare_from_cache(hal, mc, dc, bytes(cache.token) if token is None else token)


def _assert_evaluates(prepared, tm, what: str):
    problems = evaluate_prepared(prepared, tm)
    assert not problems, f"{what}: " + "; ".join(problems)


def _load_and_evaluate(hal, cache, tm, what):
    """Prepare from the cache: success (then correct results), or GENERAL_FAILURE (the
    driver cannot save this model: AOSP ``checkEarlyTermination``) which skips."""
    call = _load(hal, cache)
    if call.status == E.GENERAL_FAILURE:
        _skip("driver_feature", f"the driver could not prepare {tm.name} from its cache (GENERAL_FAILURE)")
    _expect(call, (E.NONE,), what)
    _assert_evaluates(call.value, tm, what)


def test_cache_saving_and_retrieval(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.CacheSavingAndRetrieval``: prepare with cache files,
    then prepare from them: the prepared model computes correct results."""
    tm, model = cached_model
    _save(hal, model, cache)
    _load_and_evaluate(hal, cache, tm, "prepare_model_from_cache")


def test_cache_saving_and_retrieval_non_zero_offset(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.CacheSavingAndRetrievalNonZeroOffset``: cache files
    handed over non-empty and at a non-zero position (both when saving and when loading)
    still work."""
    tm, model = cached_model
    with cache.handles() as (mc, dc):
        for f in [*mc, *dc]:
            f.write(b"\0\0")
        prepared = prepare(hal, model, model_cache=mc, data_cache=dc, token=bytes(cache.token))
    assert prepared.ok, prepared.describe()
    with cache.handles() as (mc, dc):
        for f in [*mc, *dc]:
            f.read(1)
        call = prepare_from_cache(hal, mc, dc, bytes(cache.token))
    if call.status == E.GENERAL_FAILURE:
        _skip("driver_feature", "the driver could not prepare the model from its cache (GENERAL_FAILURE)")
    _expect(call, (E.NONE,), "prepare_model_from_cache with files at a non-zero offset")
    _assert_evaluates(call.value, tm, "prepared from cache files at a non-zero offset")


def _wrong_counts(cache):
    """(label, model files, data files) with one file too many or too few of each kind."""
    cases = [("one model cache file too many", [*cache.model, cache.tmp], cache.data)]
    if cache.model:
        cases.append(("one model cache file too few", cache.model[:-1], cache.data))
    cases.append(("one data cache file too many", cache.model, [*cache.data, cache.tmp]))
    if cache.data:
        cases.append(("one data cache file too few", cache.model, cache.data[:-1]))
    return cases


def test_save_to_cache_invalid_num_cache(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.SaveToCacheInvalidNumCache``: prepare_model given the
    wrong number of model or data cache files still prepares (correct results) without
    relying on them; prepare_model_from_cache with those files is then rejected
    (INVALID_ARGUMENT or GENERAL_FAILURE)."""
    tm, model = cached_model
    for label, model_files, data_files in _wrong_counts(cache):
        prepared = _save(hal, model, cache, model_files, data_files)
        _assert_evaluates(prepared, tm, f"prepared with {label}")
        call = _load(hal, cache, model_files, data_files)
        _expect(call, REJECTED, f"prepare_model_from_cache with {label}")


def test_prepare_from_cache_invalid_num_cache(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.PrepareModelFromCacheInvalidNumCache``: after a good
    save, prepare_model_from_cache with one file too many or too few is rejected."""
    _, model = cached_model
    _save(hal, model, cache)
    for label, model_files, data_files in _wrong_counts(cache):
        _expect(_load(hal, cache, model_files, data_files), REJECTED, f"prepare_model_from_cache with {label}")


def test_save_to_cache_invalid_access_mode(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.SaveToCacheInvalidAccessMode``: prepare_model with one
    cache file opened read-only still prepares (correct results); the cache it could not
    write is then rejected by prepare_model_from_cache."""
    tm, model = cached_model
    for kind, files in (("model", cache.model), ("data", cache.data)):
        for i in range(len(files)):
            modes = ["rw"] * len(files)
            modes[i] = "ro"
            kw = {"model_modes": modes} if kind == "model" else {"data_modes": modes}
            prepared = _save(hal, model, cache, **kw)
            _assert_evaluates(prepared, tm, f"prepared with {kind} cache file {i} read-only")
            _expect(_load(hal, cache, **kw), REJECTED,
                    f"prepare_model_from_cache after saving with {kind} cache file {i} read-only")


def test_prepare_from_cache_invalid_access_mode(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.PrepareModelFromCacheInvalidAccessMode``: after a good
    save, prepare_model_from_cache with one cache file opened write-only is rejected."""
    _, model = cached_model
    _save(hal, model, cache)
    for kind, files in (("model", cache.model), ("data", cache.data)):
        for i in range(len(files)):
            modes = ["rw"] * len(files)
            modes[i] = "wo"
            kw = {"model_modes": modes} if kind == "model" else {"data_modes": modes}
            _expect(_load(hal, cache, **kw), REJECTED,
                    f"prepare_model_from_cache with {kind} cache file {i} write-only")


def _flip_one_bit(path: Path, rng: random.Random) -> bool:
    data = bytearray(path.read_bytes())
    if not data:
        return False
    pos = rng.randint(0, len(data) - 1)
    data[pos] ^= 1 << rng.randint(0, 7)
    path.write_bytes(bytes(data))
    return True


def _append_bytes(path: Path, rng: random.Random) -> bool:
    with open(path, "ab") as f:
        f.write(bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 256))))
    return True


def _truncate_half(path: Path, rng: random.Random) -> bool:
    size = path.stat().st_size
    if not size:
        return False
    os.truncate(path, size // 2)
    return True


def _truncate_empty(path: Path, rng: random.Random) -> bool:
    if not path.stat().st_size:
        return False
    os.truncate(path, 0)
    return True


CORRUPTIONS = {"flip_one_bit": _flip_one_bit, "append_bytes": _append_bytes, "truncate_half": _truncate_half,
               "truncate_empty": _truncate_empty}


def _corrupted_cache_outcomes(hal, cache, model, tm, kind: str, corrupt, seeds=SEEDS):
    """AOSP ``CompilationCachingSecurityTest::testCorruptedCache``: per seed and per file of
    ``kind``, save, corrupt that file, prepare from the cache; yields (label, Call)."""
    files = cache.model if kind == "model" else cache.data
    for seed in seeds:
        rng = random.Random(seed)
        for i, path in enumerate(files):
            _save(hal, model, cache)
            if not corrupt(path, rng):
                continue
            yield f"seed {seed}, {kind} cache file {i}", _load(hal, cache)


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_cache_corrupted_model_cache(hal, cache, cached_model, corruption):
    """AIDL ``CompilationCachingSecurityTest.CorruptedModelCache`` (one bit flipped) and
    ``WrongLengthModelCache`` (bytes appended), here also a model cache truncated to half
    or to nothing: prepare_model_from_cache must detect it: GENERAL_FAILURE, no prepared
    model (10 seeds)."""
    tm, model = cached_model
    for label, call in _corrupted_cache_outcomes(hal, cache, model, tm, "model", CORRUPTIONS[corruption]):
        _expect(call, (E.GENERAL_FAILURE,), f"prepare_model_from_cache of a model cache ({corruption}, {label})")


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_cache_corrupted_data_cache(hal, cache, cached_model, corruption):
    """AIDL ``CompilationCachingSecurityTest.CorruptedDataCache`` / ``WrongLengthDataCache``
    (and truncation): the driver may accept or reject a corrupted data cache but must not
    crash; a prepared model returned iff the status is NONE, and then computing correct
    results (10 seeds)."""
    tm, model = cached_model
    for label, call in _corrupted_cache_outcomes(hal, cache, model, tm, "data", CORRUPTIONS[corruption]):
        if call.ok:
            _assert_evaluates(call.value, tm, f"prepared from a data cache ({corruption}, {label})")


def test_cache_wrong_token(hal, cache, cached_model):
    """AIDL ``CompilationCachingSecurityTest.WrongToken``: one bit of the token flipped
    between save and load: GENERAL_FAILURE (10 seeds)."""
    _, model = cached_model
    for seed in SEEDS:
        rng = random.Random(seed)
        cache.token = bytearray(BYTE_SIZE_OF_CACHE_TOKEN)
        _save(hal, model, cache)
        cache.token[rng.randint(0, BYTE_SIZE_OF_CACHE_TOKEN - 1)] ^= 1 << rng.randint(0, 7)
        _expect(_load(hal, cache), (E.GENERAL_FAILURE,),
                f"prepare_model_from_cache with a wrong token (seed {seed})")


def test_cache_wrong_token_length(hal, cache, cached_model):
    """IDevice ``prepareModelFromCache``: the token is BYTE_SIZE_OF_CACHE_TOKEN bytes; a
    shorter, longer or empty token is rejected (INVALID_ARGUMENT or GENERAL_FAILURE)."""
    _, model = cached_model
    _save(hal, model, cache)
    token = bytes(cache.token)
    for bad in (token[:-1], token + b"\0", b""):
        _expect(_load(hal, cache, token=bad), REJECTED, f"prepare_model_from_cache with a {len(bad)}-byte token")


def _save_mul_chain_aside(hal, cache, cached_model):
    """Save a MUL chain's model cache into ``<model file>_mul`` files under the current token,
    then move the token on; returns (ADD chain test model, its HAL model, the MUL files).
    Skips when the driver does not support the MUL chain."""
    tm, model = cached_model
    mul_tm = chain_model(OperationType.MUL, CACHE_MODEL_LENGTH, tm.main.operands[1].type)
    mul = to_hal_model(mul_tm)
    reason = _unsupported(hal, mul_tm, mul)
    if reason:
        _skip(*reason)
    mul_files = [p.with_name(p.name + "_mul") for p in cache.model]
    for p in mul_files:
        p.touch()
    _save(hal, mul, cache, model_files=mul_files)
    cache.token[0] += 1
    return tm, model, mul_files


def test_cache_replace_security_sensitive_cache(hal, cache, cached_model):
    """AIDL ``CompilationCachingTest.ReplaceSecuritySensitiveCache``: a MUL chain's model
    cache (saved under another token) copied over an ADD chain's model cache: preparing
    the ADD chain from it gives GENERAL_FAILURE."""
    _, model, mul_files = _save_mul_chain_aside(hal, cache, cached_model)
    _save(hal, model, cache)
    for src, dst in zip(mul_files, cache.model):
        dst.write_bytes(src.read_bytes())
    _expect(_load(hal, cache), (E.GENERAL_FAILURE,), "prepare_model_from_cache of a replaced model cache")


def _copy_in_place(sources, targets):
    """AOSP ``copyCacheFiles``: overwrite each target with its source, without truncating."""
    for src, dst in zip(sources, targets):
        data = src.read_bytes()
        with open(dst, "r+b") as f:
            f.write(data)


@pytest.mark.parametrize("stage", ["save", "prepare"])
def test_cache_toctou(hal, cache, cached_model, stage):
    """AIDL ``CompilationCachingTest.SaveToCache_TOCTOU`` / ``PrepareFromCache_TOCTOU``:
    another model's cache is copied over the model cache files while the driver saves (or
    reads) them. Preparing from the cache may fail or succeed, but must not crash, and a
    success must compute the right (ADD chain) results."""
    tm, model, mul_files = _save_mul_chain_aside(hal, cache, cached_model)
    for _ in range(TOCTOU_ITERATIONS):
        copier = threading.Thread(target=_copy_in_place, args=(mul_files, cache.model))
        if stage == "save":
            copier.start()
            _save(hal, model, cache)
            copier.join()
            call = _load(hal, cache)
        else:
            _save(hal, model, cache)
            with cache.handles() as (mc, dc):
                copier.start()
                call = prepare_from_cache(hal, mc, dc, bytes(cache.token))
                copier.join()
        if call.ok:
            _assert_evaluates(call.value, tm, f"prepared from a cache raced by a copy ({stage})")


def test_no_caching_rejects_prepare_from_cache(hal, tmp_path):
    """AIDL ``CompilationCachingTest.CacheSavingAndRetrieval`` on a driver that does not
    cache (get_number_of_cache_files_needed is (0, 0)): prepare_model_from_cache gives
    GENERAL_FAILURE and no prepared model."""
    if tuple(hal.get_number_of_cache_files_needed()) != (0, 0):
        _skip("not_applicable", "the driver caches compilations (covered by the other caching tests)")
    call = prepare_from_cache(hal, [], [], bytes(BYTE_SIZE_OF_CACHE_TOKEN))
    _expect(call, (E.GENERAL_FAILURE,), "prepare_model_from_cache on a driver without caching")


# =============================================================================================
# Deadlines and priorities (QualityOfServiceTests)
# =============================================================================================
QOS_MODELS = {"float32": T.TENSOR_FLOAT32, "quant8": T.TENSOR_QUANT8_ASYMM}
DEADLINE_BOUNDS = ("now", "short", "unlimited", None)


@pytest.fixture(params=list(QOS_MODELS), ids=list(QOS_MODELS))
def qos_model(request, hal):
    tm = chain_model(OperationType.ADD, 3, QOS_MODELS[request.param])
    model = to_hal_model(tm)
    reason = _unsupported(hal, tm, model)
    if reason:
        _skip(*reason)
    return tm, model


@pytest.mark.parametrize("priority", [PriorityCode.LOW, PriorityCode.HIGH], ids=lambda p: p.name)
def test_priority_prepare(hal, qos_model, priority):
    """AIDL ``DeadlineTest`` (``runPrepareModelTests``, priorities other than the default):
    prepare_model with priority LOW or HIGH and no deadline succeeds."""
    tm, model = qos_model
    call = prepare(hal, model, priority=priority)
    _expect(call, (E.NONE,), f"prepare_model with priority {priority.name}")
    _assert_evaluates(call.value, tm, f"prepared with priority {priority.name}")


@pytest.mark.parametrize("bound", DEADLINE_BOUNDS, ids=lambda b: b or "none")
def test_deadline_prepare(hal, qos_model, bound):
    """AIDL ``DeadlineTest`` (``runPrepareModelTest``): prepare_model with a deadline already
    passed ("now") or 5 ms away ("short") either succeeds or gives MISSED_DEADLINE_TRANSIENT /
    PERSISTENT (no prepared model then); an unlimited deadline or none must succeed."""
    tm, model = qos_model
    call = prepare(hal, model, deadline_ns=deadline(bound))
    allowed = (E.NONE, *MISSED_DEADLINE) if bound in ("now", "short") else (E.NONE,)
    _expect(call, allowed, f"prepare_model with deadline {bound or 'none'}")
    if call.ok:
        _assert_evaluates(call.value, tm, f"prepared with deadline {bound or 'none'}")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bound", DEADLINE_BOUNDS, ids=lambda b: b or "none")
def test_deadline_execute(hal, qos_model, path, bound, wait_limit):
    """AIDL ``DeadlineTest`` (``runExecutionTest``; AOSP runs sync and burst, here every
    path): an execution with a deadline already passed ("now") or 5 ms away ("short")
    either succeeds or gives MISSED_DEADLINE_*; an unlimited deadline or none must succeed.
    Timing was not requested, so none may be reported; a success reports the model's output
    shapes and correct results."""
    tm, model = qos_model
    prepared = prepare(hal, model)
    _expect(prepared, (E.NONE,), "prepare_model")
    request = to_hal_request(tm)
    run = execute(path, prepared.value, request, NO, deadline(bound), wait_limit)
    allowed = (E.NONE, *MISSED_DEADLINE) if bound in ("now", "short") else (E.NONE,)
    _expect(run, allowed, f"{path} execution with deadline {bound or 'none'}")
    if run.status == E.NONE:
        problems = check_run(tm, request, run)
        assert not problems, "; ".join(problems)
