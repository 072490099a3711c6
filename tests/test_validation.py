"""Malformed models and requests get the right NNAPI result code (front end) or ErrorStatus
(HAL) and a message naming the culprit; never a crash."""
import copy
from pathlib import Path

import numpy as np
import pytest

from runtime.errors import HalError, NnapiError
from runtime.hal.validate import validate_model, validate_request
from runtime.nnapi import Compilation, Execution, Model, get_devices
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from runtime.testing.test_model import load_spec
from runtime.types import ErrorStatus, FuseCode, OperandType as T, OperationType as Op, ResultCode

CORPUS = Path(__file__).resolve().parents[1] / "cts" / "corpus"
F32 = T.TENSOR_FLOAT32


def add_model():
    m = Model()
    a = m.add_operand(F32, [2])
    b = m.add_operand(F32, [2])
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, np.int32(FuseCode.NONE))
    out = m.add_operand(F32, [2])
    return m, a, b, act, out


def test_bad_operand_index_is_bad_data_naming_operand_and_operation():
    m, a, b, act, out = add_model()
    with pytest.raises(NnapiError) as e:
        m.add_operation(Op.ADD, [a, 7, act], [out])
    assert e.value.code == ResultCode.BAD_DATA
    assert "ADD" in str(e.value) and "operand 7" in str(e.value)
    assert e.value.__cause__ is None and e.value.__context__ is None


def conv_model(bias_type):
    m = Model()
    x = m.add_operand(F32, [1, 3, 3, 1])
    w = m.add_operand(F32, [1, 2, 2, 1])
    m.set_operand_value(w, np.ones(4, np.float32))
    bias = m.add_operand(bias_type, [1], 0.25 if bias_type == T.TENSOR_INT32 else 0.0)
    m.set_operand_value(bias, np.zeros(1))
    scalars = []
    for v in (2, 1, 1, 0):  # VALID, stride 1, 1, NONE
        s = m.add_operand(T.INT32)
        m.set_operand_value(s, np.int32(v))
        scalars.append(s)
    out = m.add_operand(F32, [1, 2, 2, 1])
    m.add_operation(Op.CONV_2D, [x, w, bias, *scalars], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m


def test_conv_2d_wrong_bias_type_is_bad_data_naming_bias():
    m = conv_model(T.TENSOR_INT32)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    msg = str(e.value)
    assert "CONV_2D" in msg and "input 2 (bias)" in msg and "TENSOR_INT32" in msg
    conv_model(F32).finish()  # the same model with a float32 bias is valid


def test_cycle_is_bad_data_naming_operations():
    m, a, b, act, out = add_model()
    t = m.add_operand(F32, [2])
    m.add_operation(Op.ADD, [a, out, act], [t])
    m.add_operation(Op.ADD, [t, b, act], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    assert "cycle" in str(e.value) and "ADD" in str(e.value)


def test_calls_after_finish_are_bad_state():
    m, a, b, act, out = add_model()
    m.add_operation(Op.ADD, [a, b, act], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    with pytest.raises(NnapiError) as e:
        m.add_operand(F32, [2])
    assert e.value.code == ResultCode.BAD_STATE


def test_execution_argument_errors():
    m, a, b, act, out = add_model()
    m.add_operation(Op.ADD, [a, b, act], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    c = Compilation.create_for_devices(m, get_devices(["sample"]))
    c.finish()
    ex = Execution(c)
    with pytest.raises(NnapiError) as e:
        ex.set_input(0, np.zeros(3, np.float32))
    assert e.value.code == ResultCode.BAD_DATA and "needs 8 bytes, got 12" in str(e.value)
    with pytest.raises(NnapiError) as e:
        ex.set_input(5, np.zeros(2, np.float32))
    assert e.value.code == ResultCode.BAD_DATA
    ex.set_input(0, np.array([1, 2], np.float32))
    with pytest.raises(NnapiError) as e:
        ex.compute()
    assert e.value.code == ResultCode.BAD_DATA and "input 1 is not set" in str(e.value)
    ex.set_input(1, np.array([10, 20], np.float32))
    result = np.zeros(2, np.float32)
    ex.set_output(0, result)
    ex.compute()
    assert result.tolist() == [11, 22]
    with pytest.raises(NnapiError) as e:
        ex.compute()
    assert e.value.code == ResultCode.BAD_STATE


@pytest.fixture
def hal_add():
    (tm,) = [t for t in load_spec(CORPUS / "V1_0" / "add.json.gz") if t.name == "add"]
    model = to_hal_model(tm)
    validate_model(model)
    return model, to_hal_request(tm)


def mutate_and_expect(model, mutate, fragment):
    m = copy.deepcopy(model)
    mutate(m)
    with pytest.raises(HalError) as e:
        validate_model(m)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    assert fragment in str(e.value), str(e.value)


@pytest.mark.parametrize("mutate,fragment", [
    (lambda m: setattr(m.main.operands[0], "number_of_consumers", 2), "numberOfConsumers"),
    (lambda m: setattr(m.main.operations[0], "inputs", [0, 9, 2]), "operand 9, out of range"),
    (lambda m: setattr(m.main.operands[0], "type", 99), "not a valid OperandType"),
    (lambda m: setattr(m.main.operands[0], "scale", 0.5), "must have scale 0"),
    (lambda m: setattr(m.main.operations[0], "type", 2000), "not a valid OperationType"),
    (lambda m: m.main.operations.append(copy.deepcopy(m.main.operations[0])), "written more than once"),
    (lambda m: setattr(m.main.operands[2].location, "offset", 10_000), "outside operandValues"),
    (lambda m: m.main.output_indexes.append(0), "lifetime SUBGRAPH_INPUT"),
], ids=["consumers", "input-index", "operand-type", "scale", "operation-type", "extra-writer",
        "constant-location", "role-swap"])
def test_hal_model_mutations_are_invalid_argument(hal_add, mutate, fragment):
    mutate_and_expect(hal_add[0], mutate, fragment)


def test_quant8_zero_point_out_of_range():
    (tm,) = [t for t in load_spec(CORPUS / "V1_0" / "add_quant8.json.gz")][:1]
    model = to_hal_model(tm)
    mutate_and_expect(model, lambda m: setattr(m.main.operands[0], "zero_point", 256),
                      "zeroPoint 256 must be in [0, 255]")


def test_hostile_dimensions_rejected_before_allocation(hal_add):
    mutate_and_expect(hal_add[0], lambda m: setattr(m.main.operands[0], "dimensions", [2**20, 2**20]),
                      "more than 2^31 bytes")


def test_request_mutations_are_invalid_argument(hal_add):
    model, request = hal_add
    validate_request(request, model)
    for mutate, fragment in [(lambda r: r.inputs.pop(), "request has 1 inputs"),
                             (lambda r: setattr(r.inputs[0].location, "pool_index", 5), "pool 5 does not exist"),
                             (lambda r: setattr(r.outputs[0].location, "offset", 1 << 40), "outside pool")]:
        r = copy.deepcopy(request)
        mutate(r)
        with pytest.raises(HalError) as e:
            validate_request(r, model)
        assert e.value.status == ErrorStatus.INVALID_ARGUMENT and fragment in str(e.value)


def fc_quant8_model(output_scale):
    m = Model()
    Q8 = T.TENSOR_QUANT8_ASYMM
    x = m.add_operand(Q8, [1, 2], 1.0, 0)
    w = m.add_operand(Q8, [1, 2], 1.0, 0)
    m.set_operand_value(w, np.array([[1, 1]], np.uint8))
    b = m.add_operand(T.TENSOR_INT32, [1], 1.0, 0)
    m.set_operand_value(b, np.array([0], np.int32))
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, np.int32(0))
    out = m.add_operand(Q8, [1, 1], output_scale, 0)
    m.add_operation(Op.FULLY_CONNECTED, [x, w, b, act], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    return m.to_hal()


def test_fl1_quant_output_scale_rule_raises_required_feature_level():
    # NNAPI FL1-2: quant8 FULLY_CONNECTED needs output_scale > input_scale * weights_scale
    # (1.0 * 1.0); with 0.5 the model is valid only from feature level 3.
    from runtime.drivers.sample import SampleDevice
    strict = fc_quant8_model(0.5)
    validate_model(strict)  # valid at the latest feature level
    with pytest.raises(HalError) as e:
        validate_model(strict, feature_level=2)
    assert "needs feature level 3" in str(e.value) and "FULLY_CONNECTED" in str(e.value)
    fl2_device = SampleDevice(feature_level=2)
    assert fl2_device.get_supported_operations(strict) == [False]
    assert fl2_device.get_supported_operations(fc_quant8_model(2.0)) == [True]
    assert SampleDevice(feature_level=3).get_supported_operations(strict) == [True]
