"""Memory objects: ``ANeuralNetworksMemory`` from fds and descriptors, ``MemoryDesc`` rules,
``Memory.copy``, and the sample driver's memory domain (``IDevice.allocate`` / ``IBuffer``
and MemoryDomainToken request pools) through the HAL and end to end."""
import mmap
import os
from pathlib import Path

import numpy as np
import pytest

from runtime.drivers.buffers import SampleBuffer, combine_dimensions
from runtime.errors import HalError, NnapiError
from runtime.hal.memory import SharedMemory
from runtime.hal.types import (BufferDesc, BufferRole, DataLocation, MemoryDomainToken, Request,
                               RequestArgument)
from runtime.hal.validate import validate_request
from runtime.nnapi import Compilation, Execution, Model, get_devices
from runtime.nnapi.memory import PROT_NONE, PROT_READ, PROT_WRITE, Memory, MemoryDesc
from runtime.types import ErrorStatus, FuseCode, OperandType as T, OperationType as Op, ResultCode

CORPUS = Path(__file__).resolve().parents[1] / "cts" / "corpus"
F32 = T.TENSOR_FLOAT32
PAGE = mmap.ALLOCATIONGRANULARITY


def f32(*values) -> bytes:
    return np.array(values, np.float32).tobytes()


def add_model(dims=(2,), out_dims=None, operand_type=F32, scale=0.0, zero_point=0, act_input=False):
    """a + b (ADD, no activation); inputs a, b (and the activation when ``act_input``)."""
    m = Model()
    a = m.add_operand(operand_type, list(dims), scale, zero_point)
    b = m.add_operand(operand_type, list(dims), scale, zero_point)
    act = m.add_operand(T.INT32)
    if not act_input:
        m.set_operand_value(act, np.int32(FuseCode.NONE))
    out = m.add_operand(operand_type, list(out_dims if out_dims is not None else dims), scale, zero_point)
    m.add_operation(Op.ADD, [a, b, act], [out])
    m.identify_inputs_and_outputs([a, b, act] if act_input else [a, b], [out])
    m.finish()
    return m


def compile_(model, devices=None) -> Compilation:
    c = Compilation.create_for_devices(model, devices or get_devices(["sample"]))
    c.finish()
    return c


def desc_of(*roles, dims=None, finish=True) -> MemoryDesc:
    """roles: (compilation, "input"/"output", index[, frequency])."""
    d = MemoryDesc()
    for c, kind, index, *freq in roles:
        (d.add_input_role if kind == "input" else d.add_output_role)(c, index, *freq)
    if dims is not None:
        d.set_dimensions(dims)
    if finish:
        d.finish()
    return d


def code_of(call) -> ResultCode:
    with pytest.raises(NnapiError) as e:
        call()
    return e.value.code


def status_of(call) -> ErrorStatus:
    with pytest.raises(HalError) as e:
        call()
    return e.value.status


@pytest.fixture
def data_file(tmp_path):
    """A file of 3 pages + 100 bytes whose byte i is i % 251."""
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(i % 251 for i in range(3 * PAGE + 100)))
    return path


# -- createFromFd -----------------------------------------------------------------------

def test_fd_memory_shares_bytes_with_the_file_both_ways(data_file):
    fd = os.open(data_file, os.O_RDWR)
    try:
        mem = Memory.from_fd(fd, 64, PAGE)
        assert mem.size == 64 and mem.initialized and not mem.is_from_desc
        assert bytes(mem.pool.buffer) == bytes((PAGE + i) % 251 for i in range(64))
        mem.pool.buffer[0:4] = b"\x01\x02\x03\x04"       # memory -> file
        assert os.pread(fd, 4, PAGE) == b"\x01\x02\x03\x04"
        os.pwrite(fd, b"xyz", PAGE + 10)                  # file -> memory
        assert bytes(mem.pool.buffer[10:13]) == b"xyz"
    finally:
        os.close(fd)
    # the descriptor was duplicated: the memory outlives the caller's fd
    assert bytes(mem.pool.buffer[10:13]) == b"xyz"
    mem.free()
    assert data_file.read_bytes()[PAGE:PAGE + 4] == b"\x01\x02\x03\x04"


@pytest.mark.parametrize("offset", [1, 7, PAGE - 1, PAGE + 5, 2 * PAGE + 99])
def test_fd_memory_at_unaligned_offsets(data_file, offset):
    with Memory.from_file(data_file, 1, offset) as mem:
        assert bytes(mem.pool.buffer) == bytes([offset % 251])
        mem.pool.buffer[0] = 0xEE
    assert data_file.read_bytes()[offset] == 0xEE


def test_fd_memory_rejects_bad_arguments_with_bad_data(data_file):
    size = data_file.stat().st_size
    fd = os.open(data_file, os.O_RDWR)
    try:
        for args, words in [((fd, 0), "size"), ((fd, -4), "size"), ((fd, 8, -1), "offset"),
                            ((fd, size + 1), "past the end"), ((fd, 8, size - 7), "past the end"),
                            ((fd, 1, size), "past the end"), ((-1, 8), "file descriptor"),
                            ((fd, 8, 0, 4), "prot"), ((fd, 8, 0, PROT_READ | 0x8), "prot")]:
            with pytest.raises(NnapiError) as e:
                Memory.from_fd(*args)
            assert e.value.code == ResultCode.BAD_DATA, args
            assert words in e.value.message, (args, e.value.message)
        Memory.from_fd(fd, size).free()          # exactly the whole file is fine
        Memory.from_fd(fd, 1, size - 1).free()   # and its last byte
    finally:
        os.close(fd)
    closed = os.open(data_file, os.O_RDONLY)
    os.close(closed)
    assert code_of(lambda: Memory.from_fd(closed, 8)) == ResultCode.BAD_DATA
    assert code_of(lambda: Memory.from_file(data_file.parent / "missing", 8)) == ResultCode.BAD_DATA


def test_fd_memory_unmappable(data_file):
    fd = os.open(data_file, os.O_RDONLY)
    try:  # a shared writable mapping of a read-only descriptor
        assert code_of(lambda: Memory.from_fd(fd, 16, 0, PROT_READ | PROT_WRITE)) == ResultCode.UNMAPPABLE
        Memory.from_fd(fd, 16, 0, PROT_READ).free()
    finally:
        os.close(fd)
    r, w = os.pipe()
    try:
        assert code_of(lambda: Memory.from_fd(r, 16, 0, PROT_READ)) == ResultCode.UNMAPPABLE
    finally:
        os.close(r)
        os.close(w)


def test_fd_memory_protection_is_enforced(data_file):
    c = compile_(add_model())
    ro = Memory.from_file(data_file, 16, 3, PROT_READ)
    assert bytes(ro.pool.buffer[:2]) == bytes([3, 4])
    ro.check_argument(c, "input", 0, 0, 8)
    assert code_of(lambda: ro.check_argument(c, "output", 0, 0, 8)) == ResultCode.BAD_DATA
    assert code_of(lambda: Memory.copy(Memory(16), ro)) == ResultCode.BAD_DATA
    none = Memory.from_file(data_file, 16, 0, PROT_NONE)
    assert code_of(lambda: none.check_argument(c, "input", 0, 0, 8)) == ResultCode.BAD_DATA
    assert code_of(lambda: Memory.copy(none, Memory(16))) == ResultCode.BAD_DATA
    assert not hasattr(none.pool, "buffer")  # never a segfault: the bytes are simply not reachable
    ro.free()
    none.free()


def test_check_argument_of_shared_memory():
    c = compile_(add_model())
    mem = Memory(16)
    mem.check_argument(c, "input", 0, 8, 8)
    mem.check_argument(c, "output", 0, 0, 16)
    for offset, length in [(0, 0), (8, 9), (16, 1), (-1, 4), (0, -1)]:
        with pytest.raises(NnapiError) as e:
            mem.check_argument(c, "input", 0, offset, length)
        assert e.value.code == ResultCode.BAD_DATA, (offset, length)
    assert mem.request_pool(c.device) is mem.pool
    assert mem.request_location(c.device, 8, 8) == (mem.pool, 8, 8)


def test_memory_constructors_and_free(data_file):
    assert Memory(8).size == 8 and bytes(Memory(8).pool.buffer) == bytes(8)
    assert bytes(Memory.from_bytes(b"abc").pool.buffer) == b"abc"
    assert code_of(lambda: Memory(-1)) == ResultCode.BAD_DATA
    mem = Memory.from_file(data_file, 32, 5)
    view = np.frombuffer(mem.pool.buffer, np.uint8)   # an exported view does not block free
    mem.free()
    mem.free()  # twice is harmless
    assert view[0] == 5
    del view
    assert code_of(lambda: mem.request_pool(None)) == ResultCode.BAD_STATE
    assert code_of(lambda: Memory.copy(mem, Memory(32))) == ResultCode.BAD_STATE
    assert not hasattr(mem.pool, "buffer")


def test_fd_memory_as_model_constant(data_file):
    with open(data_file, "r+b") as f:
        f.seek(PAGE + 3)
        f.write(f32(10, 20))
    mem = Memory.from_file(data_file, 8, PAGE + 3)
    m = Model()
    a = m.add_operand(F32, [2])
    b = m.add_operand(F32, [2])
    m.set_operand_value_from_memory(b, mem, 0, 8)
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, np.int32(0))
    out = m.add_operand(F32, [2])
    m.add_operation(Op.ADD, [a, b, act], [out])
    m.identify_inputs_and_outputs([a], [out])
    m.finish()
    e = Execution(compile_(m))
    e.set_input(0, np.array([1, 2], np.float32))
    result = np.zeros(2, np.float32)
    e.set_output(0, result)
    e.compute()
    assert result.tolist() == [11, 22]


# -- MemoryDesc -------------------------------------------------------------------------

def test_desc_rules():
    c = compile_(add_model())
    unfinished = Compilation.create_for_devices(add_model(), get_devices(["sample"]))
    d = MemoryDesc()
    assert code_of(lambda: d.finish()) == ResultCode.BAD_DATA           # no role
    assert code_of(lambda: d.add_input_role(unfinished, 0, 1.0)) == ResultCode.BAD_DATA
    assert code_of(lambda: d.add_input_role(None, 0, 1.0)) == ResultCode.UNEXPECTED_NULL
    assert code_of(lambda: d.add_input_role(object(), 0, 1.0)) == ResultCode.BAD_DATA
    for index in (2, -1, 1.0):
        assert code_of(lambda: d.add_input_role(c, index, 1.0)) == ResultCode.BAD_DATA
    assert code_of(lambda: d.add_output_role(c, 1, 1.0)) == ResultCode.BAD_DATA
    for freq in (0.0, -0.5, 1.01, float("nan")):
        assert code_of(lambda: d.add_input_role(c, 0, freq)) == ResultCode.BAD_DATA
    d.add_input_role(c, 0, 0.25)
    assert code_of(lambda: d.add_input_role(c, 0, 1.0)) == ResultCode.BAD_DATA   # same role twice
    d.add_input_role(c, 1, 1.0)
    d.add_output_role(c, 0, 1.0)          # the same index as an output is another role
    assert code_of(lambda: d.set_dimensions([3])) == ResultCode.BAD_DATA
    assert code_of(lambda: d.set_dimensions([2, 1])) == ResultCode.BAD_DATA
    assert code_of(lambda: d.set_dimensions([-2])) == ResultCode.BAD_DATA
    d.set_dimensions([0])                 # compatible: unknown axis
    d.set_dimensions([2])
    d.finish()
    assert d.dimensions == [2] and d.operand.type == F32 and len(d.roles) == 3
    for call in (lambda: d.add_input_role(c, 0, 1.0), lambda: d.add_output_role(c, 0, 1.0),
                 lambda: d.set_dimensions([2]), d.finish):
        assert code_of(call) == ResultCode.BAD_STATE


def test_desc_roles_must_agree_on_type_and_dimensions():
    c2 = compile_(add_model((2,)))
    c3 = compile_(add_model((3,)))
    cq = compile_(add_model((2,), operand_type=T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=1))
    cq2 = compile_(add_model((2,), operand_type=T.TENSOR_QUANT8_ASYMM, scale=0.25, zero_point=1))
    d = MemoryDesc()
    d.add_input_role(c2, 0, 1.0)
    with pytest.raises(NnapiError) as e:
        d.add_input_role(c3, 1, 1.0)
    assert e.value.code == ResultCode.BAD_DATA and "add_input_role(1)" in e.value.message
    with pytest.raises(NnapiError) as e:
        d.add_output_role(cq, 0, 1.0)
    assert e.value.code == ResultCode.BAD_DATA and "TENSOR_QUANT8_ASYMM" in e.value.message
    dq = MemoryDesc()
    dq.add_input_role(cq, 0, 1.0)
    assert code_of(lambda: dq.add_input_role(cq2, 0, 1.0)) == ResultCode.BAD_DATA  # scale differs
    # unknown dims are compatible with known ones
    cu = compile_(add_model((2,), out_dims=(0,)))
    d.add_output_role(cu, 0, 1.0)
    assert d.dimensions == [2]


def test_desc_scalar_roles_take_no_dimensions():
    c = compile_(add_model(act_input=True))
    d = MemoryDesc()
    d.add_input_role(c, 2, 1.0)           # the INT32 activation
    assert code_of(lambda: d.set_dimensions([1])) == ResultCode.BAD_DATA
    d2 = MemoryDesc()
    d2.set_dimensions([2])
    assert code_of(lambda: d2.add_input_role(c, 2, 1.0)) == ResultCode.BAD_DATA


def test_from_desc_allocates_a_driver_buffer_on_the_single_device():
    c = compile_(add_model((2, 3)))
    assert code_of(lambda: Memory.from_desc(desc_of((c, "input", 0), finish=False))) == ResultCode.BAD_STATE
    assert code_of(lambda: Memory.from_desc(None)) == ResultCode.UNEXPECTED_NULL
    mem = Memory.from_desc(desc_of((c, "input", 0), (c, "output", 0, 0.5)))
    assert mem.is_from_desc and not mem.initialized and mem.dimensions == [2, 3]
    assert isinstance(mem.buffer, SampleBuffer) and mem.token > 0 and mem.device is c.device
    assert mem.pool is None and mem.size == 0 and mem.logical_size == 24
    assert mem.request_pool(c.device) == MemoryDomainToken(mem.token)
    assert mem.request_location(c.device, 0, 0) == (MemoryDomainToken(mem.token), 0, 0)
    other = get_devices(["sample"])[0]    # another driver instance knows nothing of the token
    assert code_of(lambda: mem.request_pool(other)) == ResultCode.BAD_DATA
    mem2 = Memory.from_desc(desc_of((c, "input", 1)))
    assert mem2.token != mem.token
    mem.check_argument(c, "input", 0, 0, 0)
    mem.check_argument(c, "output", 0, 0, 0)
    for args in [(c, "input", 1, 0, 0), (c, "output", 0, 0, 24), (c, "input", 0, 4, 0)]:
        assert code_of(lambda: mem.check_argument(*args)) == ResultCode.BAD_DATA, args
    c_other = compile_(add_model((2, 3)))
    assert code_of(lambda: mem.check_argument(c_other, "input", 0, 0, 0)) == ResultCode.BAD_DATA
    mem.mark_initialized(True)
    assert mem.initialized
    mem.mark_initialized(False)
    assert not mem.initialized
    mem.free()
    assert mem.token not in (None, 0) and code_of(lambda: mem.request_pool(c.device)) == ResultCode.BAD_STATE


def test_from_desc_falls_back_to_shared_memory():
    a = compile_(add_model((2,)))
    b = compile_(add_model((2,)))         # another driver instance: roles span devices
    mem = Memory.from_desc(desc_of((a, "output", 0), (b, "input", 0)))
    assert mem.buffer is None and mem.device is None and "different devices" in mem.fallback_reason
    assert mem.size == 8 and isinstance(mem.pool, SharedMemory) and not mem.initialized
    assert mem.request_pool(a.device) is mem.pool and mem.request_pool(b.device) is mem.pool
    assert mem.request_location(a.device, 0, 0) == (mem.pool, 0, 8)
    # the sample driver cannot allocate unknown dimensions; nor can the fallback
    cu = compile_(add_model((2,), out_dims=(0,)))
    with pytest.raises(NnapiError) as e:
        Memory.from_desc(desc_of((cu, "output", 0), dims=[0]))
    assert e.value.code == ResultCode.BAD_DATA and "fully specified" in e.value.message
    assert Memory.from_desc(desc_of((cu, "output", 0), dims=[2])).buffer is not None


# -- allocate / IBuffer through the HAL --------------------------------------------------

def test_allocate_validates_roles():
    c = compile_(add_model((2,)))
    c3 = compile_(add_model((3,)), [c.device])
    cq = compile_(add_model((2,), operand_type=T.TENSOR_QUANT8_ASYMM, scale=0.5), [c.device])
    foreign = compile_(add_model((2,)))
    hal, pm = c.device.hal, c.prepared
    ok = ([pm], [BufferRole(0, 0, 1.0)], [BufferRole(0, 0, 0.5)])
    buffer, token = hal.allocate(BufferDesc([2]), *ok)
    assert isinstance(buffer, SampleBuffer) and token > 0 and buffer.size == 8 and not buffer.initialized
    assert hal.allocate(BufferDesc([]), *ok)[1] not in (token, 0)
    bad = [
        (BufferDesc([2]), [], [BufferRole(0, 0)], []),                          # no prepared model
        (BufferDesc([2]), [foreign.prepared], [BufferRole(0, 0)], []),          # other device's
        (BufferDesc([2]), [object()], [BufferRole(0, 0)], []),
        (BufferDesc([2]), [pm], [], []),                                        # no role
        (BufferDesc([2]), [pm], [BufferRole(1, 0)], []),                        # model_index
        (BufferDesc([2]), [pm], [BufferRole(0, 2)], []),                        # io_index
        (BufferDesc([2]), [pm], [], [BufferRole(0, 1)]),
        (BufferDesc([2]), [pm], [BufferRole(0, 0, 0.0)], []),                   # probability
        (BufferDesc([2]), [pm], [BufferRole(0, 0, 1.5)], []),
        (BufferDesc([2]), [pm], [BufferRole(0, 0), BufferRole(0, 0)], []),      # same role twice
        (BufferDesc([3]), [pm], [BufferRole(0, 0)], []),                        # dims
        (BufferDesc([2]), [pm, c3.prepared], [BufferRole(0, 0), BufferRole(1, 0)], []),
        (BufferDesc([2]), [pm, cq.prepared], [BufferRole(0, 0), BufferRole(1, 0)], []),  # type
    ]
    for args in bad:
        assert status_of(lambda: hal.allocate(*args)) == ErrorStatus.INVALID_ARGUMENT, args
    cu = compile_(add_model((2,), out_dims=(0,)), [c.device])
    assert status_of(lambda: hal.allocate(BufferDesc([]), [cu.prepared], [], [BufferRole(0, 0)])) \
        == ErrorStatus.GENERAL_FAILURE
    assert hal.allocate(BufferDesc([2]), [cu.prepared], [], [BufferRole(0, 0)])[0].dimensions == [2]


def test_ibuffer_copy_rules():
    c = compile_(add_model((2,)))
    buffer, _ = c.device.hal.allocate(BufferDesc(), [c.prepared], [BufferRole(0, 0)], [])
    assert status_of(lambda: buffer.copy_to(SharedMemory(8))) == ErrorStatus.GENERAL_FAILURE
    assert status_of(lambda: buffer.copy_from(SharedMemory(4), [])) == ErrorStatus.INVALID_ARGUMENT
    assert status_of(lambda: buffer.copy_from(SharedMemory(8), [3])) == ErrorStatus.INVALID_ARGUMENT
    assert status_of(lambda: buffer.copy_from(SharedMemory(8), [2, 1])) == ErrorStatus.INVALID_ARGUMENT
    assert not buffer.initialized
    buffer.copy_from(SharedMemory(data=f32(1.5, 2.5)), [2])
    assert buffer.initialized
    out = SharedMemory(8)
    buffer.copy_to(out)
    assert bytes(out.buffer) == f32(1.5, 2.5)
    assert status_of(lambda: buffer.copy_to(SharedMemory(12))) == ErrorStatus.INVALID_ARGUMENT
    # a failed copy_from leaves the buffer uninitialized
    assert status_of(lambda: buffer.copy_from(SharedMemory(16), [])) == ErrorStatus.INVALID_ARGUMENT
    assert not buffer.initialized


def _token_request(in_pool, other, out_pool, in_loc=(0, 0), out_loc=(0, 0)):
    return Request([RequestArgument(False, DataLocation(0, *in_loc)),
                    RequestArgument(False, DataLocation(1, 0, 8))],
                   [RequestArgument(False, DataLocation(2, *out_loc))],
                   [in_pool, other, out_pool])


def test_execute_with_memory_domain_tokens():
    c = compile_(add_model((2,)))
    hal, pm = c.device.hal, c.prepared
    a, ta = hal.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])
    o, to = hal.allocate(BufferDesc(), [pm], [BufferRole(0, 1)], [BufferRole(0, 0)])
    b = SharedMemory(data=f32(10, 20))
    request = _token_request(MemoryDomainToken(ta), b, MemoryDomainToken(to))
    validate_request(request, pm.model)   # the HAL rules accept token pools at (0, 0)
    assert status_of(lambda: pm.execute_synchronously(request)) == ErrorStatus.GENERAL_FAILURE  # uninitialized
    a.copy_from(SharedMemory(data=f32(1, 2)), [])
    shapes, _ = pm.execute_synchronously(request)
    assert shapes[0].dimensions == [2] and o.initialized
    out = SharedMemory(8)
    o.copy_to(out)
    assert bytes(out.buffer) == f32(11, 22)
    assert request.pools[0] == MemoryDomainToken(ta)   # the caller's request is left alone
    # a failed execution leaves its output buffer uninitialized
    assert status_of(lambda: pm.execute_synchronously(request, deadline_ns=0)) != ErrorStatus.NONE
    assert not o.initialized


def test_token_request_rules():
    c = compile_(add_model((2,)))
    hal, pm = c.device.hal, c.prepared
    a, ta = hal.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])
    o, to = hal.allocate(BufferDesc(), [pm], [BufferRole(0, 1)], [BufferRole(0, 0)])
    a.copy_from(SharedMemory(data=f32(1, 2)), [])
    b = SharedMemory(data=f32(10, 20))
    invalid = [
        _token_request(MemoryDomainToken(999), b, MemoryDomainToken(to)),          # unknown token
        _token_request(MemoryDomainToken(ta), b, MemoryDomainToken(to), in_loc=(0, 8)),
        _token_request(MemoryDomainToken(ta), b, MemoryDomainToken(to), out_loc=(4, 0)),
        _token_request(MemoryDomainToken(ta), b, MemoryDomainToken(ta)),           # no output role
        _token_request(MemoryDomainToken(to), b, MemoryDomainToken(to)),           # input & output
    ]
    for request in invalid:
        assert status_of(lambda: pm.execute_synchronously(request)) == ErrorStatus.INVALID_ARGUMENT
    for request in invalid[1:3] + [_token_request(MemoryDomainToken(0), b, SharedMemory(8), out_loc=(0, 8))]:
        assert status_of(lambda: validate_request(request, pm.model)) == ErrorStatus.INVALID_ARGUMENT
    # a buffer of another prepared model (same device) is not usable here
    c2 = compile_(add_model((2,)), [c.device])
    x, tx = hal.allocate(BufferDesc(), [c2.prepared], [BufferRole(0, 0)], [])
    x.copy_from(SharedMemory(data=f32(1, 2)), [])
    req = _token_request(MemoryDomainToken(tx), b, SharedMemory(8), out_loc=(0, 8))
    assert status_of(lambda: pm.execute_synchronously(req)) == ErrorStatus.INVALID_ARGUMENT
    c2.prepared.execute_synchronously(req)
    x.release()                                             # a released token is unknown
    assert status_of(lambda: c2.prepared.execute_synchronously(req)) == ErrorStatus.INVALID_ARGUMENT


def test_combine_dimensions():
    assert combine_dimensions([], [2, 0]) == [2, 0]
    assert combine_dimensions([0, 3], [2, 0]) == [2, 3]
    assert combine_dimensions([2], [3]) is None
    assert combine_dimensions([2], [2, 1]) is None


# -- Memory.copy --------------------------------------------------------------------------

def test_copy_between_shared_memories(data_file):
    src = Memory.from_bytes(b"0123456789abcdef")
    dst = Memory.from_file(data_file, 16, 3)
    Memory.copy(src, dst)
    assert data_file.read_bytes()[3:19] == b"0123456789abcdef"
    assert code_of(lambda: Memory.copy(src, Memory(15))) == ResultCode.BAD_DATA
    assert code_of(lambda: Memory.copy(Memory(17), src)) == ResultCode.BAD_DATA
    assert code_of(lambda: Memory.copy(None, src)) == ResultCode.UNEXPECTED_NULL
    Memory.copy(src, src)
    dst.free()


def test_copy_with_desc_memories():
    c = compile_(add_model((2,)))
    d1 = Memory.from_desc(desc_of((c, "input", 0)))
    d2 = Memory.from_desc(desc_of((c, "output", 0)))
    out = Memory(8)
    assert code_of(lambda: Memory.copy(d1, out)) == ResultCode.BAD_DATA     # uninitialized source
    assert code_of(lambda: Memory.copy(Memory(12), d1)) == ResultCode.BAD_DATA  # 12 bytes vs 8
    assert not d1.initialized
    Memory.copy(Memory.from_bytes(f32(3, 4)), d1)                            # shared -> driver
    assert d1.initialized
    Memory.copy(d1, d2)                                                      # driver -> driver
    assert d2.initialized
    Memory.copy(d2, out)                                                     # driver -> shared
    assert bytes(out.pool.buffer) == f32(3, 4)
    # a failed copy leaves the destination uninitialized
    assert code_of(lambda: Memory.copy(Memory(4), d2)) == ResultCode.BAD_DATA
    assert not d2.initialized
    # incompatible descriptors
    c3 = compile_(add_model((3,)), [c.device])
    cq = compile_(add_model((2,), operand_type=T.TENSOR_QUANT8_ASYMM, scale=0.5), [c.device])
    for other in (c3, cq):
        d = Memory.from_desc(desc_of((other, "input", 0)))
        assert code_of(lambda: Memory.copy(d1, d)) == ResultCode.BAD_DATA
    # fallback (shared) desc memories follow the same rules
    f = Memory.from_desc(desc_of((c, "input", 1), (compile_(add_model((2,))), "input", 1)))
    assert f.buffer is None
    assert code_of(lambda: Memory.copy(f, out)) == ResultCode.BAD_DATA
    Memory.copy(d1, f)
    assert f.initialized and bytes(f.pool.buffer) == f32(3, 4)


# -- end to end -----------------------------------------------------------------------------

def _corpus_add():
    from harness.runner import build_model
    from runtime.testing.test_model import load_spec
    tm = load_spec(CORPUS / "V1_0" / "add.json.gz")[0]
    assert tm.name == "add"
    ins = [np.ascontiguousarray(tm.main.operands[i].data, np.float32) for i in tm.main.input_indexes]
    expected = [tm.main.operands[i].data for i in tm.main.output_indexes]
    return build_model(tm), ins, expected


def test_corpus_model_with_fd_memory(tmp_path):
    model, ins, expected = _corpus_add()
    c = compile_(model)
    raw = [x.tobytes() for x in ins]
    path = tmp_path / "io.bin"
    # input 0 at an unaligned offset of the first page, input 1 across a page boundary
    layout = [(5, raw[0]), (PAGE - 3, raw[1])]
    out_off, out_len = 2 * PAGE + 1, expected[0].nbytes
    blob = bytearray(2 * PAGE + 64)
    for off, data in layout:
        blob[off:off + len(data)] = data
    path.write_bytes(bytes(blob))
    mem = Memory.from_file(path, len(blob) - 4, 4)      # the memory itself starts at offset 4
    e = Execution(c)
    for j, (off, data) in enumerate(layout):
        e.set_input_from_memory(j, mem, off - 4, len(data))
    e.set_output_from_memory(0, mem, out_off - 4, out_len)
    e.compute()
    got = np.frombuffer(path.read_bytes()[out_off:out_off + out_len], np.float32)
    np.testing.assert_allclose(got, expected[0].reshape(-1), rtol=1e-6)
    mem.free()


def test_corpus_model_with_desc_memory():
    model, ins, expected = _corpus_add()
    c = compile_(model)
    mems = [Memory.from_desc(desc_of((c, "input", j))) for j in range(len(ins))]
    out = Memory.from_desc(desc_of((c, "output", 0), (c, "input", 0)))
    assert all(m.buffer is not None for m in mems + [out])   # driver buffers of the sample driver
    e = Execution(c)
    e.set_input_from_memory(0, mems[0], 0, 0)
    e.set_input_from_memory(1, mems[1], 0, 0)
    e.set_output_from_memory(0, out, 0, 0)
    with pytest.raises(NnapiError) as err:                     # inputs never written
        e.compute()
    assert err.value.code == ResultCode.BAD_DATA
    for m, x in zip(mems, ins):
        Memory.copy(Memory.from_bytes(x.tobytes()), m)
    e = Execution(c)
    e.set_input_from_memory(0, mems[0], 0, 0)
    e.set_input_from_memory(1, mems[1], 0, 0)
    e.set_output_from_memory(0, out, 0, 0)
    e.compute()
    assert out.initialized and e.get_output_operand_dimensions(0) == list(expected[0].shape)
    result = Memory(expected[0].nbytes)
    Memory.copy(out, result)
    np.testing.assert_allclose(np.frombuffer(result.pool.buffer, np.float32), expected[0].reshape(-1),
                               rtol=1e-6)
    # the output memory feeds the next execution (its input role): out + input 1
    e2 = Execution(c)
    e2.set_input_from_memory(0, out, 0, 0)
    e2.set_input(1, ins[1])
    final = np.zeros(expected[0].shape, np.float32)
    e2.set_output(0, final)
    e2.compute()
    np.testing.assert_allclose(final, expected[0] + ins[1], rtol=1e-6)
    # a driver buffer is bound to its compilation's roles
    with pytest.raises(NnapiError) as err:
        Execution(c).set_output_from_memory(0, mems[0], 0, 0)
    assert err.value.code == ResultCode.BAD_DATA


def test_corpus_model_with_fallback_desc_memory():
    model, ins, expected = _corpus_add()
    c, other = compile_(model), compile_(model)          # two driver instances: no single allocator
    mems = [Memory.from_desc(desc_of((c, "input", j), (other, "input", j))) for j in range(len(ins))]
    out = Memory.from_desc(desc_of((c, "output", 0), (other, "output", 0)))
    assert all(m.buffer is None for m in mems + [out])
    for m, x in zip(mems, ins):
        Memory.copy(Memory.from_bytes(x.tobytes()), m)
    e = Execution(c)
    for j, m in enumerate(mems):
        e.set_input_from_memory(j, m, 0, 0)
    e.set_output_from_memory(0, out, 0, 0)
    e.compute()
    assert out.initialized
    np.testing.assert_allclose(np.frombuffer(out.pool.buffer, np.float32), expected[0].reshape(-1), rtol=1e-6)
