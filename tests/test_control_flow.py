"""Control flow (IF, WHILE), the loop timeout on every compute path, shapes resolved through
referenced subgraphs, and validation of subgraph references. Every expected value is worked
out by hand in a comment next to it."""
import time

import numpy as np
import pytest

from runtime.errors import HalError, NnapiError
from runtime.executor import execute
from runtime.hal.validate import validate_model
from runtime.nnapi import (Compilation, Execution, Model, get_default_loop_timeout, get_devices,
                           get_maximum_loop_timeout)
from runtime.nnapi.burst import Burst
from runtime.testing.hal_convert import to_hal_request
from runtime.types import ErrorStatus, OperandType as T, OperationType as Op, ResultCode

F32, I32, B8 = T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_BOOL8


def _finish(m, inputs, outputs):
    m.identify_inputs_and_outputs(inputs, outputs)
    m.finish()
    return m


def add_constant_op(m, op, x, constant, dims):
    """Add ``y = op(x, [constant], FuseCode NONE)`` (ADD or SUB of a [1] float constant) to
    model ``m``; returns y (TENSOR_FLOAT32 of ``dims``)."""
    c = m.add_operand(F32, [1])
    m.set_operand_value(c, np.array([constant], np.float32))
    a = m.add_operand(T.INT32)
    m.set_operand_value(a, np.int32(0))
    y = m.add_operand(F32, list(dims))
    m.add_operation(op, [x, c, a], [y])
    return y


def binary_model(op, constant, dims=(2,)):
    """x -> op(x, constant) (ADD or SUB of a [1] float constant), inputs/outputs of ``dims``."""
    m = Model()
    x = m.add_operand(F32, list(dims))
    return _finish(m, [x], [add_constant_op(m, op, x, constant, dims)])


def if_graph(then_m, else_m, dims=(2,), cond_dims=(1,)):
    """IF(cond, then_m, else_m)(x) with a TENSOR_BOOL8 ``cond_dims`` condition and x, y of
    ``dims``; inputs (cond, x), output y identified, not finished (tests of bad graphs
    finish it themselves)."""
    m = Model()
    cond = m.add_operand(B8, list(cond_dims))
    t, e = m.add_operand(T.SUBGRAPH), m.add_operand(T.SUBGRAPH)
    m.set_operand_value_from_model(t, then_m)
    m.set_operand_value_from_model(e, else_m)
    x, y = m.add_operand(F32, list(dims)), m.add_operand(F32, list(dims))
    m.add_operation(Op.IF, [cond, t, e, x], [y])
    m.identify_inputs_and_outputs([cond, x], [y])
    return m


def if_model(dims=(2,)):
    """IF(cond, then: x + 10, else: x - 10)(x)."""
    m = if_graph(binary_model(Op.ADD, 10.0, dims), binary_model(Op.SUB, 10.0, dims), dims)
    m.finish()
    return m


def condition_model(op):
    """(x [1], limit [1]) -> op(x, limit) as TENSOR_BOOL8 [1] (LESS, GREATER_EQUAL, ...)."""
    m = Model()
    x, limit = m.add_operand(F32, [1]), m.add_operand(F32, [1])
    c = m.add_operand(B8, [1])
    m.add_operation(op, [x, limit], [c])
    return _finish(m, [x, limit], [c])


def counting_body(nested_if=False):
    """(x [1], limit [1]) -> x + 1; with ``nested_if``: IF(true, x + 1, x - 1)(x)."""
    if not nested_if:
        m = Model()
        x, limit = m.add_operand(F32, [1]), m.add_operand(F32, [1])
        return _finish(m, [x, limit], [add_constant_op(m, Op.ADD, x, 1.0, (1,))])
    m = Model()
    x, limit = m.add_operand(F32, [1]), m.add_operand(F32, [1])
    cond = m.add_operand(B8, [1])
    m.set_operand_value(cond, np.array([True]))
    t, e = m.add_operand(T.SUBGRAPH), m.add_operand(T.SUBGRAPH)
    m.set_operand_value_from_model(t, binary_model(Op.ADD, 1.0, (1,)))
    m.set_operand_value_from_model(e, binary_model(Op.SUB, 1.0, (1,)))
    y = m.add_operand(F32, [1])
    m.add_operation(Op.IF, [cond, t, e, x], [y])
    return _finish(m, [x, limit], [y])


def while_model(cond_op=Op.LESS, nested_if=False):
    """WHILE cond_op(x, limit): x = body(x); inputs x [1], limit [1]; output x [1]."""
    m = Model()
    c, b = m.add_operand(T.SUBGRAPH), m.add_operand(T.SUBGRAPH)
    m.set_operand_value_from_model(c, condition_model(cond_op))
    m.set_operand_value_from_model(b, counting_body(nested_if))
    x, limit = m.add_operand(F32, [1]), m.add_operand(F32, [1])
    y = m.add_operand(F32, [1])
    m.add_operation(Op.WHILE, [c, b, x, limit], [y])
    return _finish(m, [x, limit], [y])


def compile_(model):
    c = Compilation.create_for_devices(model, get_devices(["sample"]))
    c.finish()
    return c


def run(model, inputs, out_size):
    e = Execution(compile_(model))
    for j, v in enumerate(inputs):
        e.set_input(j, v)
    out = np.zeros(out_size, np.float32)
    e.set_output(0, out)
    e.compute()
    return out


# --- IF and WHILE ---------------------------------------------------------------------

def test_if_runs_the_branch_the_condition_selects():
    m = if_model()
    # true: [1, 2] + 10 = [11, 12]; false: [1, 2] - 10 = [-9, -8]
    assert run(m, [np.array([True]), np.array([1, 2], np.float32)], 2).tolist() == [11, 12]
    assert run(m, [np.array([False]), np.array([1, 2], np.float32)], 2).tolist() == [-9, -8]


def test_if_flattens_shared_and_distinct_branches():
    hal = if_model().to_hal()
    assert len(hal.referenced) == 2
    assert [hal.main.operands[i].location.offset for i in (1, 2)] == [0, 1]


def test_while_counts_up_to_the_limit():
    # x = 0; while x < 5: x = x + 1  -> 5 (five iterations); x = 7 already >= 5 -> 7
    m = while_model()
    assert run(m, [np.array([0], np.float32), np.array([5], np.float32)], 1).tolist() == [5]
    assert run(m, [np.array([7], np.float32), np.array([5], np.float32)], 1).tolist() == [7]


def test_while_with_an_if_in_its_body():
    # body = IF(true, x + 1, x - 1): the same count, 0 -> 3 with limit 3
    m = while_model(nested_if=True)
    hal = m.to_hal()
    assert len(hal.referenced) == 4  # condition, body, and the body's two branches
    assert run(m, [np.array([0], np.float32), np.array([3], np.float32)], 1).tolist() == [3]


def growing_while():
    """WHILE i < n: t = CONCATENATION(t, t, axis 0); i = i + 1. t: input-output (declared
    [0] inside the body and as the WHILE output), i: state-only, n: input-only."""
    cond = Model()
    t, i, n = cond.add_operand(F32, [0]), cond.add_operand(I32, [1]), cond.add_operand(I32, [1])
    c = cond.add_operand(B8, [1])
    cond.add_operation(Op.LESS, [i, n], [c])
    _finish(cond, [t, i, n], [c])
    body = Model()
    t, i, n = body.add_operand(F32, [0]), body.add_operand(I32, [1]), body.add_operand(I32, [1])
    axis = body.add_operand(T.INT32)
    body.set_operand_value(axis, np.int32(0))
    t2 = body.add_operand(F32, [0])
    body.add_operation(Op.CONCATENATION, [t, t, axis], [t2])
    one = body.add_operand(I32, [1])
    body.set_operand_value(one, np.array([1], np.int32))
    a = body.add_operand(T.INT32)
    body.set_operand_value(a, np.int32(0))
    i2 = body.add_operand(I32, [1])
    body.add_operation(Op.ADD, [i, one, a], [i2])
    _finish(body, [t, i, n], [t2, i2])
    m = Model()
    cr, br = m.add_operand(T.SUBGRAPH), m.add_operand(T.SUBGRAPH)
    m.set_operand_value_from_model(cr, cond)
    m.set_operand_value_from_model(br, body)
    t, i, n = m.add_operand(F32, [1]), m.add_operand(I32, [1]), m.add_operand(I32, [1])
    m.set_operand_value(i, np.array([0], np.int32))
    out = m.add_operand(F32, [0])
    m.add_operation(Op.WHILE, [cr, br, t, i, n], [out])
    return _finish(m, [t, n], [out])


def test_while_output_of_unknown_size_grows_and_reports_its_dimensions():
    # t = [2.5] doubled 3 times: 8 elements of 2.5
    e = Execution(compile_(growing_while()))
    e.set_input(0, np.array([2.5], np.float32))
    e.set_input(1, np.array([3], np.int32))
    out = np.zeros(8, np.float32)
    e.set_output(0, out)
    e.compute()
    assert out.tolist() == [2.5] * 8
    assert e.get_output_operand_dimensions(0) == [8]


def test_while_output_too_small_gives_insufficient_size_with_actual_dimensions():
    # n = 4: 16 elements, the buffer holds 8
    e = Execution(compile_(growing_while()))
    e.set_input(0, np.array([1], np.float32))
    e.set_input(1, np.array([4], np.int32))
    e.set_output(0, np.zeros(8, np.float32))
    with pytest.raises(NnapiError) as err:
        e.compute()
    assert err.value.code == ResultCode.OUTPUT_INSUFFICIENT_SIZE
    assert e.get_output_operand_dimensions(0) == [16]


def test_unknown_rank_inside_a_branch_is_resolved_at_execution():
    m = if_graph(binary_model(Op.ADD, 1.0, ()), binary_model(Op.SUB, 1.0, ()), (2, 2))  # rank 0 = unknown
    m.finish()
    # [[1, 2], [3, 4]] - 1 = [[0, 1], [2, 3]]
    out = run(m, [np.array([False]), np.arange(1, 5, dtype=np.float32).reshape(2, 2)], 4)
    assert out.tolist() == [0, 1, 2, 3]


# --- the loop timeout -----------------------------------------------------------------

LOOP_TIMEOUT_NS = 200_000_000  # 0.2 s


def _endless_execution(c):
    # x >= x is always true: the loop never ends by itself
    e = Execution(c)
    e.set_input(0, np.array([0], np.float32))
    e.set_input(1, np.array([0], np.float32))
    e.set_output(0, np.zeros(1, np.float32))
    e.set_loop_timeout(LOOP_TIMEOUT_NS)
    return e


@pytest.fixture(scope="module")
def endless():
    return compile_(while_model(Op.GREATER_EQUAL))


def _sync(c, e):
    e.compute()


def _async(c, e):
    e.start_compute().wait()


def _burst(c, e):
    burst = Burst(c)
    try:
        e.burst_compute(burst)
    finally:
        burst.free()


def _fenced(c, e):
    e.start_compute_with_dependencies([], 0).wait()


@pytest.mark.parametrize("path", [_sync, _async, _burst, _fenced], ids=["sync", "async", "burst", "fenced"])
def test_endless_while_ends_with_missed_deadline_within_the_loop_timeout(endless, path):
    e = _endless_execution(endless)
    start = time.monotonic()
    with pytest.raises(NnapiError) as err:
        path(endless, e)
    elapsed = time.monotonic() - start
    assert err.value.code == ResultCode.MISSED_DEADLINE_TRANSIENT, err.value
    assert elapsed < LOOP_TIMEOUT_NS / 1e9 + 1.0


def test_loop_timeout_defaults_and_bounds():
    assert get_default_loop_timeout() == 2_000_000_000
    assert get_maximum_loop_timeout() == 15_000_000_000
    e = Execution(compile_(while_model()))
    with pytest.raises(NnapiError) as err:
        e.set_loop_timeout(-1)
    assert err.value.code == ResultCode.BAD_DATA
    e.set_loop_timeout(10**12)  # clamped to the maximum, not refused


def test_hal_executor_loop_timeout():
    hal = while_model(Op.GREATER_EQUAL).to_hal()
    from runtime.hal.memory import SharedMemory
    from runtime.hal.types import DataLocation, Request, RequestArgument
    pool = SharedMemory(data=np.zeros(3, np.float32).tobytes())
    req = Request([RequestArgument(False, DataLocation(0, 0, 4)), RequestArgument(False, DataLocation(0, 4, 4))],
                  [RequestArgument(False, DataLocation(0, 8, 4))], [pool])
    start = time.monotonic()
    with pytest.raises(HalError) as err:
        execute(hal, req, loop_timeout_ns=50_000_000)
    assert err.value.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert time.monotonic() - start < 1.05


# --- validation -----------------------------------------------------------------------

def test_a_subgraph_referencing_itself_is_rejected():
    hal = while_model(nested_if=True).to_hal()
    body_index = hal.main.operands[1].location.offset
    body = hal.referenced[body_index]
    then_operand = next(o for o in body.operands if o.lifetime == 6)  # SUBGRAPH lifetime
    then_operand.location.offset = body_index  # the body's IF now runs the body itself
    with pytest.raises(HalError) as err:
        validate_model(hal)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
    assert "references itself" in err.value.message


def test_branch_with_the_wrong_input_count_is_rejected():
    two_inputs = Model()
    a, b = two_inputs.add_operand(F32, [2]), two_inputs.add_operand(F32, [2])
    act = two_inputs.add_operand(T.INT32)
    two_inputs.set_operand_value(act, np.int32(0))
    y = two_inputs.add_operand(F32, [2])
    two_inputs.add_operation(Op.ADD, [a, b, act], [y])
    _finish(two_inputs, [a, b], [y])
    m = if_graph(two_inputs, binary_model(Op.SUB, 1.0))
    with pytest.raises(NnapiError) as err:
        m.finish()
    assert err.value.code == ResultCode.BAD_DATA
    assert "then branch" in err.value.message and "2 inputs" in err.value.message


def test_incompatible_operand_and_bad_condition_shape_are_rejected():
    m = if_graph(binary_model(Op.ADD, 1.0), binary_model(Op.SUB, 1.0), cond_dims=(2,))  # must be [1]
    with pytest.raises(NnapiError) as err:
        m.finish()
    assert "condition" in err.value.message
    m = if_graph(binary_model(Op.ADD, 1.0), binary_model(Op.SUB, 1.0), dims=(3,))  # branches take [2]
    with pytest.raises(NnapiError) as err:
        m.finish()
    assert "dimensions differ" in err.value.message


def test_referenced_subgraphs_need_feature_level_4():
    hal = if_model().to_hal()
    validate_model(hal, 4)
    with pytest.raises(HalError):
        validate_model(hal, 3)


def test_set_operand_value_from_model_rules():
    m = Model()
    x = m.add_operand(F32, [2])
    with pytest.raises(NnapiError) as err:
        m.set_operand_value_from_model(x, binary_model(Op.ADD, 1.0))
    assert err.value.code == ResultCode.BAD_DATA  # not a SUBGRAPH operand
    s = m.add_operand(T.SUBGRAPH)
    with pytest.raises(NnapiError) as err:
        m.set_operand_value_from_model(s, Model())
    assert err.value.code == ResultCode.BAD_STATE  # the referenced model is not finished


def test_partitioned_compilation_runs_control_flow():
    # Compilation.create (every device) partitions; the WHILE runs as one step
    c = Compilation.create(while_model())
    c.finish()
    e = Execution(c)
    e.set_input(0, np.array([1], np.float32))
    e.set_input(1, np.array([4], np.float32))
    out = np.zeros(1, np.float32)
    e.set_output(0, out)
    e.compute()
    assert out.tolist() == [4]  # 1 -> 2 -> 3 -> 4


def test_hal_request_of_a_corpus_if_model():
    from runtime.testing.test_model import load_spec
    from runtime.testing.hal_convert import read_outputs, to_hal_model
    tm = next(t for t in load_spec("cts/corpus/V1_3/if_simple.json.gz") if t.name == "if_simple_false")
    model, request = to_hal_model(tm), to_hal_request(tm)
    validate_model(model)
    shapes = execute(model, request)
    expected = tm.main.operands[tm.main.output_indexes[0]].data
    # else branch: x - 10 (the corpus's expected output, computed by AOSP's generator)
    assert np.array_equal(read_outputs(tm, request, shapes)[0], expected)


def test_two_device_plan_runs_an_add_then_an_if():
    # main: t = x + 0 (ADD: sample-minimal), y = IF(cond, t + 10, t - 10) (IF: sample)
    then_m, else_m = binary_model(Op.ADD, 10.0), binary_model(Op.SUB, 10.0)
    m = Model()
    cond, x = m.add_operand(B8, [1]), m.add_operand(F32, [2])
    t = add_constant_op(m, Op.ADD, x, 0.0, (2,))
    tr, er = m.add_operand(T.SUBGRAPH), m.add_operand(T.SUBGRAPH)
    m.set_operand_value_from_model(tr, then_m)
    m.set_operand_value_from_model(er, else_m)
    y = m.add_operand(F32, [2])
    m.add_operation(Op.IF, [cond, tr, er, t], [y])
    _finish(m, [cond, x], [y])
    c = Compilation.create_for_devices(m, get_devices(["sample-minimal", "sample"]))
    c.finish()
    assert c.device_names == ["nncts-sample-minimal", "nncts-sample"]
    e = Execution(c)
    e.set_input(0, np.array([False]))
    e.set_input(1, np.array([3, 4], np.float32))
    out = np.zeros(2, np.float32)
    e.set_output(0, out)
    e.compute()
    assert out.tolist() == [-7, -6]  # [3, 4] + 0 - 10
