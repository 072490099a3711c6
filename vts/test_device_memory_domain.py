"""VTS memory domains (AOSP VTS ``MemoryDomainTests``: ``MemoryDomainAllocateTest``,
``MemoryDomainCopyTest``, ``MemoryDomainExecutionTest``), straight on the driver's HAL:
``IDevice.allocate`` with invalid roles, ``IBuffer`` copies, and driver-managed buffers in
requests on the sync, burst and fenced paths. Each test names the AOSP test it mirrors
(errors are HalError statuses; any other exception escaping the driver is a crash and fails
the test). A driver without memory domain support (a valid allocate gives GENERAL_FAILURE)
skips them all.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from runtime.errors import HalError
from runtime.hal.interfaces import IPreparedModel
from runtime.hal.memory import SharedMemory
from runtime.hal.types import (BufferDesc, BufferRole, DataLocation, MemoryDomainToken, Request,
                               RequestArgument)
from runtime.hal.validate import operand_byte_size
from runtime.testing.hal_convert import to_hal_model
from runtime.types import ErrorStatus, MeasureTiming, OperandType
from runtime.types import ErrorStatus as E, OperandType as T
from vts.device_support import expect, records_fixture, skip, unsupported
from vts.hal_harness import (conv_model, execute, hal_call, io_operand, prepare, single_add_model,
                             timing_problems)

_records = records_fixture("memory-domain")


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
        self.skip_reason = unsupported(self.hal, tm, model)
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
            skip(*self.skip_reason)
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
            expect(call, (E.GENERAL_FAILURE,), "allocate of a valid buffer")
            return None
        buffer, token = call.value
        assert buffer is not None and isinstance(token, int) and token > 0, f"allocate returned {call.value!r}"
        return buffer, token

    def allocate_or_skip(self, prepared, inputs=(), outputs=(), dims=()):
        got = self.allocate(prepared, inputs, outputs, dims)
        if got is None:
            skip("driver_feature", "the driver cannot allocate this buffer (GENERAL_FAILURE)")
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
        skip("driver_feature", f"the driver declares no memory domain support: allocate of a valid "
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
        skip(*md.skip_reason)
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
            skip("not_applicable", "float operands have no scale or zero point")
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
            skip(*md.skip_reason)
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
        expect(call, (E.INVALID_ARGUMENT,),
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
        expect(_copy_from(buffer, SharedMemory(size), []), (E.INVALID_ARGUMENT,),
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
        expect(_copy_from(buffer, SharedMemory(size), good), (E.INVALID_ARGUMENT,), f"copy_from {size} bytes")
    expect(_copy_from(buffer, md.data(), good), (E.NONE,), "copy_from the right memory")
    expect(_copy_from(buffer, md.data(), [2, *good[1:]]), (E.INVALID_ARGUMENT,), "copy_from batch 2 dims")


def test_copy_from_invalid_dimensions(md):
    """AIDL ``MemoryDomainCopyTest.CopyFrom_InvalidDimensions``: copy_from with a lower
    rank, a different dimension, or a dimension 0 (not fully specified) is
    INVALID_ARGUMENT; no dimensions or the buffer's own succeed."""
    buffer, _ = md.allocate_or_skip(md.conv_or_skip(), [0], [0])
    good = list(MEMORY_DOMAIN_DIMS)
    for bad in (good[:-1], [2, *good[1:]], [0, *good[1:]]):
        expect(_copy_from(buffer, md.data(), bad), (E.INVALID_ARGUMENT,), f"copy_from with dimensions {bad}")
    expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from with no dimensions")
    expect(_copy_from(buffer, md.data(), good), (E.NONE,), f"copy_from with dimensions {good}")


def test_copy_from_invalid_dimensions_dynamic_shape(md):
    """AIDL ``MemoryDomainCopyTest.CopyFrom_InvalidDimensions_DynamicShape``: for a buffer of
    unknown batch, copy_from needs fully specified dimensions compatible with the buffer's:
    lower rank, a changed channel count, a 0 dimension or none at all are INVALID_ARGUMENT."""
    buffer, _ = _dynamic_buffer(md)
    good = list(MEMORY_DOMAIN_DIMS)
    for bad in (good[:-1], [2, *good[1:-1], 4 * good[-1]], [1, *good[1:-1], 0], []):
        expect(_copy_from(buffer, md.data(), bad), (E.INVALID_ARGUMENT,), f"copy_from with dimensions {bad}")
    expect(_copy_from(buffer, md.data(), good), (E.NONE,), f"copy_from with dimensions {good}")


def test_copy_to_uninitialized_memory(md):
    """AIDL ``MemoryDomainCopyTest.CopyTo_UninitializedMemory``: copy_to from a buffer never
    written is GENERAL_FAILURE."""
    buffer, _ = md.allocate_or_skip(md.conv_or_skip(), [0], [0])
    expect(_copy_to(buffer, SharedMemory(md.size)), (E.GENERAL_FAILURE,), "copy_to of an uninitialized buffer")


def _copy_to_checks(md, buffer, dims):
    source = md.data(seed=7)
    expect(_copy_from(buffer, source, dims), (E.NONE,), "copy_from (initializing the buffer)")
    for size in (md.size // 2, md.size * 2):
        expect(_copy_to(buffer, SharedMemory(size)), (E.INVALID_ARGUMENT,), f"copy_to a {size}-byte memory")
    out = SharedMemory(md.size)
    expect(_copy_to(buffer, out), (E.NONE,), "copy_to a memory of the buffer's size")
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
    run = execute(executor, prepared, request, MeasureTiming.NO, None, wait_limit)
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
    expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
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
    expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
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
    expect(_copy_from(out_buffer, md.data(), []), (E.NONE,), "copy_from")
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
    expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
    _check_exec(executor, pm, Request([device, a1], [device, a2], pools), E.INVALID_ARGUMENT,
                "with one buffer as input and output", wait_limit)
    _check_exec(executor, pm, Request([a1, a2], [device, device], pools), E.INVALID_ARGUMENT,
                "with one buffer as both outputs", wait_limit)
    expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
    _check_exec(executor, pm, Request([device, device], [a1, a2], pools), E.NONE,
                "with one buffer as both inputs", wait_limit)


def test_memory_domain_invalid_dimensions(md, executor, wait_limit):
    """AIDL ``MemoryDomainExecutionTest.InvalidDimensions``: a buffer of [1, ...] for a model
    of unknown batch: used with request dimensions of batch 2 as input or output it is
    INVALID_ARGUMENT; as the output of an execution computing batch 2 it is
    GENERAL_FAILURE. (Not for fenced executions, which need fully specified outputs.)"""
    if executor == "fenced":
        skip("not_applicable", "fenced executions do not support dynamic output shapes")
    good = list(MEMORY_DOMAIN_DIMS)
    pm = md.conv_or_skip(md.variant(dims=(0, *good[1:])))
    buffer, token = md.allocate_or_skip(pm, [0], [0], good)
    bad = [2, *good[1:]]
    pools = [SharedMemory(md.size * 2), MemoryDomainToken(token)]
    shared = _shared_arg(0, md.size * 2, bad)
    expect(_copy_from(buffer, md.data(), []), (E.NONE,), "copy_from")
    _check_exec(executor, pm, Request([_device_arg(1, bad)], [shared], pools), E.INVALID_ARGUMENT,
                f"with the buffer as input of dimensions {bad}", wait_limit)
    _check_exec(executor, pm, Request([shared], [_device_arg(1, bad)], pools), E.INVALID_ARGUMENT,
                f"with the buffer as output of dimensions {bad}", wait_limit)
    _check_exec(executor, pm, Request([shared], [_device_arg(1)], pools), E.GENERAL_FAILURE,
                f"computing a {bad} output into the {good} buffer", wait_limit)
