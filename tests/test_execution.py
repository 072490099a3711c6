"""The execution API on the sample driver: every compute path, reuse, timing, timeouts,
padding and call-order rules. Expected values are hand-computed sums."""
import numpy as np
import pytest

from runtime.errors import NnapiError
from runtime.nnapi import Compilation, Execution, Model, get_devices
from runtime.nnapi.burst import Burst
from runtime.nnapi.event import Event
from runtime.types import NO_TIMING, DurationCode, OperandType as T, OperationType as Op, ResultCode

F32 = T.TENSOR_FLOAT32


def add_compilation(dims=(2,), explicit=True):
    m = Model()
    a, b = m.add_operand(F32, list(dims)), m.add_operand(F32, list(dims))
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, np.int32(0))
    out = m.add_operand(F32, list(dims))
    m.add_operation(Op.ADD, [a, b, act], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    c = Compilation.create_for_devices(m, get_devices(["sample"])) if explicit else Compilation.create(m)
    c.finish()
    return c


def bound(c, x=(1, 2), y=(10, 20), out_len=None, reusable=False, padding=False):
    """A new Execution of ``c`` (an ADD of two float32 inputs) with inputs ``x`` and ``y``
    and a zeroed float32 output of ``out_len`` elements (default: ``len(x)``), made reusable
    and/or with input and output padding enabled first (both are allowed only before any
    argument is set); returns (execution, output array)."""
    e = Execution(c)
    if reusable:
        e.set_reusable(True)
    if padding:
        e.enable_input_and_output_padding(True)
    e.set_input(0, np.array(x, np.float32))
    e.set_input(1, np.array(y, np.float32))
    out = np.zeros(len(x) if out_len is None else out_len, np.float32)
    e.set_output(0, out)
    return e, out


def test_sync_async_and_burst_give_the_same_sums():
    c = add_compilation()
    e, out = bound(c)
    e.compute()
    assert out.tolist() == [11, 22]
    e, out = bound(c, (3, 4))
    event = e.start_compute()
    assert isinstance(event, Event)
    event.wait()
    assert out.tolist() == [13, 24]
    burst = Burst(c)
    for x in ((1, 1), (5, 6)):
        e, out = bound(c, x)
        e.burst_compute(burst)
        assert out.tolist() == [x[0] + 10, x[1] + 20]
    burst.free()
    with pytest.raises(NnapiError) as err:
        bound(c)[0].burst_compute(burst)
    assert err.value.code == ResultCode.BAD_STATE


def test_fenced_execution_waits_for_its_dependency():
    c = add_compilation()
    first, out1 = bound(c, (1, 1))
    event1 = first.start_compute()
    second, out2 = bound(c, (2, 2))
    event2 = second.start_compute_with_dependencies([event1], 0)
    event2.wait()
    assert out1.tolist() == [11, 21] and out2.tolist() == [12, 22]


def test_fenced_execution_needs_a_single_explicit_device():
    c = add_compilation(explicit=False)
    e, _ = bound(c)
    with pytest.raises(NnapiError) as err:
        e.start_compute_with_dependencies([], 0)
    assert err.value.code == ResultCode.BAD_DATA


def test_reusable_execution_computes_twice_and_plain_one_once():
    c = add_compilation()
    e, out = bound(c, (1, 2), (1, 1), reusable=True)
    e.compute()
    out[:] = 0
    e.compute()
    assert out.tolist() == [2, 3]
    once, _ = bound(c)
    once.compute()
    with pytest.raises(NnapiError) as err:
        once.compute()
    assert err.value.code == ResultCode.BAD_STATE


def test_timing_measured_for_every_duration_code():
    c = add_compilation()
    e, _ = bound(c)
    e.set_measure_timing(True)
    e.compute()
    on_hw, in_driver = e.get_duration(DurationCode.ON_HARDWARE), e.get_duration(DurationCode.IN_DRIVER)
    assert 0 < on_hw <= in_driver < NO_TIMING
    assert e.get_duration(DurationCode.FENCED_ON_HARDWARE) == NO_TIMING  # not a fenced execution
    f, _ = bound(c)
    f.set_measure_timing(True)
    f.start_compute_with_dependencies([], 0).wait()
    assert all(f.get_duration(code) < NO_TIMING for code in DurationCode)
    plain, _ = bound(c)
    plain.compute()
    assert plain.get_duration(DurationCode.ON_HARDWARE) == NO_TIMING  # not requested
    with pytest.raises(NnapiError) as err:
        bound(c)[0].get_duration(DurationCode.ON_HARDWARE)
    assert err.value.code == ResultCode.BAD_STATE


def test_measure_timing_needs_a_single_explicit_device():
    e, _ = bound(add_compilation(explicit=False))
    with pytest.raises(NnapiError) as err:
        e.set_measure_timing(True)
    assert err.value.code == ResultCode.BAD_DATA


def test_timeout_gives_missed_deadline():
    c = add_compilation()
    e, _ = bound(c)
    e.set_timeout(1)  # 1 ns: already over when the driver starts
    with pytest.raises(NnapiError) as err:
        e.compute()
    assert err.value.code in (ResultCode.MISSED_DEADLINE_TRANSIENT, ResultCode.MISSED_DEADLINE_PERSISTENT)


def test_dynamic_output_dimensions_and_insufficient_size():
    c = add_compilation(dims=(0,))
    e, _ = bound(c, (1, 2, 3), (1, 1, 1), out_len=2)
    with pytest.raises(NnapiError) as err:
        e.compute()
    assert err.value.code == ResultCode.OUTPUT_INSUFFICIENT_SIZE
    assert e.get_output_operand_dimensions(0) == [3]
    e, out = bound(c, (1, 2, 3), (1, 1, 1))
    e.compute()
    assert out.tolist() == [2, 3, 4] and e.get_output_operand_rank(0) == 1


def test_padding_allows_longer_buffers_only_when_enabled():
    c = add_compilation()
    e = Execution(c)
    with pytest.raises(NnapiError) as err:
        e.set_output(0, np.zeros(4, np.float32))
    assert err.value.code == ResultCode.BAD_DATA
    e, out = bound(c, (1, 2), (3, 4), out_len=4, padding=True)
    e.compute()
    assert out.tolist() == [4, 6, 0, 0]
