"""NNAPI vendor extensions (FL3): type codes, the front end's extension calls, HAL validation
of extension operands and operations, and the bundled ``sample-fibonacci`` driver running the
example extension ``com.example.fibonacci``.

Expected Fibonacci numbers are written out by hand: 1, 1, 2, 3, 5, 8, 13, 21, 34, 55.
"""
import numpy as np
import pytest

from runtime.errors import HalError, NnapiError
from runtime.extension_types import (ExtensionTypeCode, extension_prefix, is_extension_type,
                                make_extension_type, type_name, type_within_extension)
from runtime.drivers.fibonacci import (EXAMPLE_FIBONACCI, EXAMPLE_INT64,
                                          EXAMPLE_TENSOR_QUANT64_ASYMM, EXTENSION_NAME,
                                          FibonacciDevice, quant64_params)
from runtime.drivers.sample import SampleDevice
from runtime.hal.memory import SharedMemory
from runtime.hal.types import (DataLocation, Extension, ExtensionNameAndPrefix,
                               ExtensionOperandTypeInformation, Model as HalModel, Operand,
                               Operation, Request, RequestArgument, Subgraph)
from runtime.hal.validate import validate_model
from runtime.nnapi import (Compilation, Execution, Model, get_devices,
                           get_supported_operations_for_devices)
from runtime.types import (ErrorStatus, FuseCode, OperandLifeTime as L, OperandType as T,
                           OperationType as Op, ResultCode)

F32 = T.TENSOR_FLOAT32
FIB10 = [1, 1, 2, 3, 5, 8, 13, 21, 34, 55]


@pytest.fixture(scope="module", params=["sample-fibonacci", "process:sample-fibonacci"])
def fib_devices(request):
    """The Fibonacci extension driver in process and out of process (its extension info,
    prefix table and extension operand types then cross the HAL protocol)."""
    return get_devices([request.param])


class OtherExtensionDevice(SampleDevice):
    """Advertises a second extension, to see prefixes assigned in order."""

    name = "test-other-extension"

    def get_supported_extensions(self):
        return [Extension("com.example.other", [ExtensionOperandTypeInformation(0, False, 4)])]


class LyingFibonacciDevice(SampleDevice):
    """Describes com.example.fibonacci differently from FibonacciDevice."""

    name = "test-lying-fibonacci"

    def get_supported_extensions(self):
        return [Extension(EXTENSION_NAME, [ExtensionOperandTypeInformation(EXAMPLE_INT64, False, 4)])]


def codes(m: Model, devices):
    return (m.get_extension_operand_type(EXTENSION_NAME, EXAMPLE_INT64, devices),
            m.get_extension_operand_type(EXTENSION_NAME, EXAMPLE_TENSOR_QUANT64_ASYMM, devices),
            m.get_extension_operation_type(EXTENSION_NAME, EXAMPLE_FIBONACCI, devices))


def quant64_model(devices, n_out=10, scale=0.5, zero_point=10):
    """n (EXAMPLE_INT64 input) -> EXAMPLE_FIBONACCI -> EXAMPLE_TENSOR_QUANT64_ASYMM[n_out]."""
    m = Model()
    int64, quant64, fib = codes(m, devices)
    n = m.add_operand(int64)
    out = m.add_operand(quant64, [n_out])
    m.set_operand_extension_data(out, quant64_params(scale, zero_point))
    m.add_operation(fib, [n], [out])
    m.identify_inputs_and_outputs([n], [out])
    m.finish()
    return m


def float_model_with_temporaries(devices, n_out=10):
    """As AOSP's test: float32[1] n -> ADD 0 -> EXAMPLE_FIBONACCI -> ADD 0 -> float32[n_out]."""
    m = Model()
    fib = m.get_extension_operation_type(EXTENSION_NAME, EXAMPLE_FIBONACCI, devices)
    x = m.add_operand(F32, [1])
    zero_in = m.add_operand(F32, [1])
    m.set_operand_value(zero_in, np.zeros(1, np.float32))
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, np.int32(FuseCode.NONE))
    n = m.add_operand(F32, [1])
    m.add_operation(Op.ADD, [x, zero_in, act], [n])
    fibs = m.add_operand(F32, [n_out])
    m.add_operation(fib, [n], [fibs])
    zero_out = m.add_operand(F32, [n_out])
    m.set_operand_value(zero_out, np.zeros(n_out, np.float32))
    y = m.add_operand(F32, [n_out])
    m.add_operation(Op.ADD, [fibs, zero_out, act], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def run(model, devices, value, out):
    c = Compilation.create_for_devices(model, devices)
    c.finish()
    e = Execution(c)
    e.set_input(0, value)
    e.set_output(0, out)
    e.compute()
    return c, e


# -- type codes ------------------------------------------------------------------------------

def test_type_code_encoding():
    assert make_extension_type(1, 0) == 0x10000
    assert make_extension_type(3, 7) == (3 << 16) | 7 == 0x30007
    assert extension_prefix(0x30007) == 3 and type_within_extension(0x30007) == 7
    assert is_extension_type(0x10000) and not is_extension_type(0xFFFF)
    assert not is_extension_type(T.TENSOR_FLOAT32) and not is_extension_type(Op.ADD)
    with pytest.raises(ValueError):
        make_extension_type(0, 1)  # prefix 0 is the base range
    with pytest.raises(ValueError):
        make_extension_type(1, 0x10000)
    assert type_name(Op.ADD) == "ADD"
    assert type_name(0x20001) == "EXTENSION(prefix=2, type=1)"


def test_prefixes_are_per_model_from_1_in_order_of_first_use(fib_devices):
    devices = fib_devices + [OtherExtensionDevice()]
    m = Model()
    other = m.get_extension_operand_type("com.example.other", 0, devices)
    int64, quant64, fib = codes(m, devices)
    assert other == 0x10000  # first extension asked for: prefix 1
    assert (int64, quant64, fib) == (0x20000, 0x20001, 0x20000)  # second: prefix 2
    assert isinstance(fib, ExtensionTypeCode) and fib.name == f"{EXTENSION_NAME}:0"
    assert int64.info == ExtensionOperandTypeInformation(EXAMPLE_INT64, False, 8)
    assert quant64.info == ExtensionOperandTypeInformation(EXAMPLE_TENSOR_QUANT64_ASYMM, True, 8)
    # asking again gives the same code; a fresh model starts again at 1
    assert m.get_extension_operand_type(EXTENSION_NAME, EXAMPLE_INT64, devices) == 0x20000
    assert Model().get_extension_operation_type(EXTENSION_NAME, EXAMPLE_FIBONACCI, fib_devices) == 0x10000


def test_default_devices_are_every_available_driver():
    # no devices given: the bundled sample-fibonacci driver supplies the extension
    m = Model()
    assert m.get_extension_operation_type(EXTENSION_NAME, EXAMPLE_FIBONACCI) == 0x10000


def test_hal_model_lists_only_the_extensions_it_uses(fib_devices):
    devices = fib_devices + [OtherExtensionDevice()]
    m = Model()
    m.get_extension_operand_type("com.example.other", 0, devices)  # prefix 1, never used
    int64, quant64, fib = codes(m, devices)
    n = m.add_operand(int64)
    out = m.add_operand(quant64, [3])
    m.set_operand_extension_data(out, quant64_params(1.0, 0))
    m.add_operation(fib, [n], [out])
    m.identify_inputs_and_outputs([n], [out])
    m.finish()
    hal = m.to_hal()
    assert hal.extension_name_to_prefix == [ExtensionNameAndPrefix(EXTENSION_NAME, 2)]
    assert hal.main.operands[out].type == 0x20001
    assert hal.main.operands[out].extra_params == quant64_params(1.0, 0)
    assert len(hal.main.operands[out].extra_params) == 16
    assert hal.main.operations[0].type == 0x20000


def test_unknown_extension_name_is_bad_data(fib_devices):
    m = Model()
    for call in (m.get_extension_operand_type, m.get_extension_operation_type):
        with pytest.raises(NnapiError) as e:
            call("com.example.nope", 0, fib_devices)
        assert e.value.code == ResultCode.BAD_DATA and "com.example.nope" in str(e.value)
        with pytest.raises(NnapiError) as e:
            call("com.example.nope", 0)  # nor does any available driver support it
        assert e.value.code == ResultCode.BAD_DATA
    # the plain sample driver supports no extension at all
    with pytest.raises(NnapiError) as e:
        m.get_extension_operand_type(EXTENSION_NAME, EXAMPLE_INT64, get_devices(["sample"]))
    assert e.value.code == ResultCode.BAD_DATA
    with pytest.raises(NnapiError) as e:
        m.get_extension_operand_type(EXTENSION_NAME, 0x10000, fib_devices)
    assert e.value.code == ResultCode.BAD_DATA and "uint16" in str(e.value)
    with pytest.raises(NnapiError) as e:
        m.get_extension_operand_type(None, 0, fib_devices)
    assert e.value.code == ResultCode.UNEXPECTED_NULL


def test_inconsistent_extension_descriptions_disable_it(fib_devices):
    with pytest.raises(NnapiError) as e:
        Model().get_extension_operand_type(EXTENSION_NAME, EXAMPLE_INT64,
                                           fib_devices + [LyingFibonacciDevice()])
    assert e.value.code == ResultCode.BAD_DATA and "inconsistently" in str(e.value)


# -- front-end rules -----------------------------------------------------------------------

def test_add_operand_rules_for_extension_types(fib_devices):
    m = Model()
    int64, quant64, fib = codes(m, fib_devices)
    cases = [
        ((1 << 16) | 5, [], "no operand type 5"),  # a type the extension does not declare
        (0x70000, [], "prefix 7"),  # a prefix this model never obtained
        (int64, [2], "scalar"),  # EXAMPLE_INT64 is a scalar
    ]
    for code, dims, words in cases:
        with pytest.raises(NnapiError) as e:
            m.add_operand(code, dims)
        assert e.value.code == ResultCode.BAD_DATA and words in str(e.value), str(e.value)
    with pytest.raises(NnapiError) as e:
        m.add_operand(quant64, [3], scale=0.5, zero_point=10)  # params go in extension data
    assert e.value.code == ResultCode.BAD_DATA and "scale 0" in str(e.value)
    with pytest.raises(NnapiError) as e:
        m.add_operation(0x70000, [], [])
    assert e.value.code == ResultCode.BAD_DATA and "prefix 7" in str(e.value)
    # a plain int code of an obtained extension is accepted like the returned object
    i = m.add_operand(0x10001, [4])
    assert m._operands[i].type.info.byte_size == 8


def test_set_operand_extension_data_rules(fib_devices):
    m = Model()
    int64, quant64, fib = codes(m, fib_devices)
    base = m.add_operand(F32, [2])
    ext = m.add_operand(quant64, [2])
    with pytest.raises(NnapiError) as e:
        m.set_operand_extension_data(base, quant64_params(1.0, 0))
    assert e.value.code == ResultCode.BAD_DATA and "base type TENSOR_FLOAT32" in str(e.value)
    with pytest.raises(NnapiError) as e:
        m.set_operand_extension_data(ext, b"")
    assert e.value.code == ResultCode.BAD_DATA
    with pytest.raises(NnapiError) as e:
        m.set_operand_extension_data(99, b"x")
    assert e.value.code == ResultCode.BAD_DATA
    m.set_operand_extension_data(ext, b"\x01\x02")
    assert m._operands[ext].extra_params == b"\x01\x02"
    m.set_operand_extension_data(ext, None)
    assert m._operands[ext].extra_params is None
    with pytest.raises(NnapiError) as e:  # per-channel params are for base per-channel tensors
        m.set_operand_symm_per_channel_quant_params(ext, [1.0, 2.0], 0)
    assert e.value.code == ResultCode.BAD_DATA


def test_extension_operand_values_use_the_extension_byte_size(fib_devices):
    m = Model()
    int64, quant64, fib = codes(m, fib_devices)
    n = m.add_operand(int64)
    with pytest.raises(NnapiError) as e:
        m.set_operand_value(n, np.int32(7).tobytes())  # EXAMPLE_INT64 is 8 bytes
    assert e.value.code == ResultCode.BAD_DATA and "needs 8 bytes" in str(e.value)
    m.set_operand_value(n, np.int64(7).tobytes())
    t = m.add_operand(quant64, [3, 0])
    with pytest.raises(NnapiError) as e:  # a tensor value needs fully specified dimensions
        m.set_operand_value(t, bytes(24))
    assert e.value.code == ResultCode.BAD_DATA
    t = m.add_operand(quant64, [3])
    m.set_operand_value(t, np.arange(3, dtype=np.uint64))  # a numpy array gives its bytes
    with pytest.raises(NnapiError):
        m.set_operand_value(t, 5)  # no dtype is known for an extension type: bytes or array


# -- execution on sample-fibonacci ----------------------------------------------------------

def test_quant64_output_from_int64_input(fib_devices):
    m = quant64_model(fib_devices, n_out=10, scale=0.5, zero_point=10)
    out = np.zeros(10, np.uint64)
    c, e = run(m, fib_devices, np.int64(10).tobytes(), out)
    assert c.device.name == "nncts-sample-fibonacci"
    # q = fib / 0.5 + 10 = 2 * fib + 10
    assert out.tolist() == [12, 12, 14, 16, 20, 26, 36, 52, 78, 120]
    assert e.get_output_operand_dimensions(0) == [10]


def test_quant64_truncates_like_the_example(fib_devices):
    m = quant64_model(fib_devices, n_out=6, scale=4.0, zero_point=3)
    out = np.zeros(6, np.uint64)
    run(m, fib_devices, np.int64(6).tobytes(), out)
    # fib 1 1 2 3 5 8 -> /4 = .25 .25 .5 .75 1.25 2 -> +3 and truncated
    assert out.tolist() == [3, 3, 3, 3, 4, 5]


def test_float_output_through_base_operations(fib_devices):
    m = float_model_with_temporaries(fib_devices, n_out=10)
    out = np.zeros(10, np.float32)
    run(m, fib_devices, np.array([10], np.float32), out)
    assert out.tolist() == FIB10


def test_float_n_is_truncated(fib_devices):
    m = float_model_with_temporaries(fib_devices, n_out=4)
    out = np.zeros(4, np.float32)
    run(m, fib_devices, np.array([4.9], np.float32), out)
    assert out.tolist() == [1, 1, 2, 3]


def test_constant_n(fib_devices):
    m = Model()
    int64, quant64, fib = codes(m, fib_devices)
    x = m.add_operand(F32, [7])
    n = m.add_operand(int64)
    m.set_operand_value(n, np.int64(7).tobytes())
    fibs = m.add_operand(F32, [7])
    m.add_operation(fib, [n], [fibs])
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, np.int32(FuseCode.NONE))
    y = m.add_operand(F32, [7])
    m.add_operation(Op.ADD, [x, fibs, act], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    out = np.zeros(7, np.float32)
    run(m, fib_devices, np.full(7, 100, np.float32), out)
    assert out.tolist() == [101, 101, 102, 103, 105, 108, 113]


def test_bad_n_at_execution_is_op_failed(fib_devices):
    m = quant64_model(fib_devices, n_out=4)
    for n in (0, -3):
        c = Compilation.create_for_devices(m, fib_devices)
        c.finish()
        e = Execution(c)
        e.set_input(0, np.int64(n).tobytes())
        e.set_output(0, np.zeros(4, np.uint64))
        with pytest.raises(NnapiError) as err:
            e.compute()
        assert err.value.code == ResultCode.OP_FAILED and "n must be >= 1" in str(err.value)


def test_output_shape_other_than_n_is_op_failed(fib_devices):
    m = quant64_model(fib_devices, n_out=10)
    c = Compilation.create_for_devices(m, fib_devices)
    c.finish()
    e = Execution(c)
    e.set_input(0, np.int64(5).tobytes())
    e.set_output(0, np.zeros(10, np.uint64))
    with pytest.raises(NnapiError) as err:
        e.compute()
    assert err.value.code == ResultCode.OP_FAILED


# -- support queries ------------------------------------------------------------------------

def test_plain_sample_driver_does_not_support_the_extension_operation(fib_devices):
    m = float_model_with_temporaries(fib_devices)
    assert get_supported_operations_for_devices(m, get_devices(["sample"])) == [True, False, True]
    assert get_supported_operations_for_devices(m, fib_devices) == [True, True, True]
    with pytest.raises(NnapiError) as e:
        Compilation.create_for_devices(m, get_devices(["sample"])).finish()
    assert e.value.code == ResultCode.BAD_DATA
    assert FibonacciDevice().get_supported_extensions()[0].name == EXTENSION_NAME
    assert get_devices(["sample"])[0].hal.get_supported_extensions() == []


def build(devices, input_type="int64", output_type="quant64", data=quant64_params(1.0, 0),
          out_dims=(5,), n_value=None):
    m = Model()
    int64, quant64, fib = codes(m, devices)
    ins = {"int64": (int64, []), "f32": (F32, [1]), "i32": (T.TENSOR_INT32, [1]),
           "f32x2": (F32, [2])}
    outs = {"quant64": quant64, "f32": F32, "int64": int64}
    x = m.add_operand(*ins[input_type])
    y = m.add_operand(outs[output_type], list(out_dims))
    if data is not None and output_type == "quant64":
        m.set_operand_extension_data(y, data)
    if n_value is not None:
        m.set_operand_value(x, np.int64(n_value).tobytes())
    m.add_operation(fib, [x], [y])
    m.identify_inputs_and_outputs([] if n_value is not None else [x], [y])
    m.finish()
    return m


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(input_type="f32", output_type="f32"),
    dict(input_type="f32", out_dims=()),
    dict(n_value=5),
])
def test_fibonacci_device_accepts(fib_devices, kwargs):
    assert get_supported_operations_for_devices(build(fib_devices, **kwargs), fib_devices) == [True]


@pytest.mark.parametrize("kwargs, why", [
    (dict(data=None), "quant64 output without its scale/zeroPoint"),
    (dict(data=b"\x00" * 8), "extension data of the wrong size"),
    (dict(data=quant64_params(0.0, 0)), "scale 0"),
    (dict(data=quant64_params(float("nan"), 0)), "scale NaN"),
    (dict(input_type="i32"), "n of a type the operation does not take"),
    (dict(input_type="f32x2"), "float n with 2 elements"),
    (dict(output_type="int64", out_dims=()), "scalar output"),
    (dict(out_dims=(5, 1)), "2-D output"),
    (dict(n_value=0), "constant n = 0"),
    (dict(n_value=4), "constant n = 4 with output [5]"),
])
def test_fibonacci_device_rejects(fib_devices, kwargs, why):
    m = build(fib_devices, **kwargs)
    assert get_supported_operations_for_devices(m, fib_devices) == [False], why
    with pytest.raises(NnapiError) as e:
        Compilation.create_for_devices(m, fib_devices).finish()
    assert e.value.code == ResultCode.BAD_DATA


# -- HAL validation and the HAL path ---------------------------------------------------------

def hal_fibonacci_model(prefix=1, table=((EXTENSION_NAME, 1),)):
    """A HAL model built by hand with plain int codes (as a deserialized model has)."""
    int64, quant64, fib = (prefix << 16) | 0, (prefix << 16) | 1, (prefix << 16) | 0
    operands = [
        Operand(int64, [], 1, lifetime=L.SUBGRAPH_INPUT),
        Operand(quant64, [4], 0, lifetime=L.SUBGRAPH_OUTPUT, extra_params=quant64_params(0.25, 1)),
    ]
    main = Subgraph(operands, [Operation(fib, [0], [1])], [0], [1])
    return HalModel(main, extension_name_to_prefix=[ExtensionNameAndPrefix(n, p) for n, p in table])


def test_hal_path_with_plain_int_codes():
    model = hal_fibonacci_model(prefix=3, table=((EXTENSION_NAME, 3),))
    validate_model(model)
    device = FibonacciDevice()
    assert device.get_supported_operations(model) == [True]
    prepared = device.prepare_model(model)
    pools = [SharedMemory(data=np.int64(4).tobytes()), SharedMemory(32)]
    request = Request([RequestArgument(location=DataLocation(0, 0, 8))],
                      [RequestArgument(location=DataLocation(1, 0, 32))], pools)
    shapes, _ = prepared.execute_synchronously(request)
    assert shapes[0].dimensions == [4]
    # fib 1 1 2 3 -> / 0.25 + 1 = 5 5 9 13
    assert np.frombuffer(pools[1].buffer, np.uint64).tolist() == [5, 5, 9, 13]
    assert SampleDevice().get_supported_operations(model) == [False]


def _add_base_operand_with_extension_data(model):
    model.main.operands.append(Operand(T.TENSOR_FLOAT32, [1], 0, lifetime=L.SUBGRAPH_INPUT,
                                       extra_params=b"\x01"))
    model.main.input_indexes.append(2)


#: One invalid change to :func:`hal_fibonacci_model` per case: (change, fragments of the
#: expected INVALID_ARGUMENT message). Extension codes get the extension checks (declared
#: prefixes, bytes as extension data) and keep the structural rules of every operation.
INVALID_FIBONACCI_MODELS = {
    "unknown operand prefix": (lambda m: setattr(m.main.operands[1], "type", (2 << 16) | 1),
                               ["operand 1", "prefix 2"]),
    "unknown operation prefix": (lambda m: setattr(m.main.operations[0], "type", (5 << 16) | 0),
                                 ["operation 0", "prefix 5"]),
    "input index out of range": (lambda m: setattr(m.main.operations[0], "inputs", [7]), ["out of range"]),
    "wrong numberOfConsumers": (lambda m: setattr(m.main.operands[0], "number_of_consumers", 0),
                                ["numberOfConsumers"]),
    "extension data not bytes": (lambda m: setattr(m.main.operands[1], "extra_params", 3.5), ["extraParams"]),
    "base operand with extension data": (_add_base_operand_with_extension_data, ["operand 2", "extension data"]),
}


@pytest.mark.parametrize("case", list(INVALID_FIBONACCI_MODELS))
def test_validate_model_rejects_an_invalid_extension_model(case):
    change, fragments = INVALID_FIBONACCI_MODELS[case]
    model = hal_fibonacci_model()
    validate_model(model)  # valid before the change
    change(model)
    with pytest.raises(HalError) as e:
        validate_model(model)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    assert all(f in e.value.message for f in fragments), e.value.message


def test_validate_model_rejects_a_bad_prefix_table():
    for table in (((EXTENSION_NAME, 1), (EXTENSION_NAME, 2)),  # a name twice
                  ((EXTENSION_NAME, 1), ("com.example.other", 1)),  # a prefix twice
                  ((EXTENSION_NAME, 0),),  # prefix 0 is the base range
                  (("", 1),)):
        model = hal_fibonacci_model(table=table)
        with pytest.raises(HalError) as e:
            validate_model(model)
        assert e.value.status == ErrorStatus.INVALID_ARGUMENT and "extensionNameToPrefix" in e.value.message


def test_validate_model_skips_sizes_it_cannot_know():
    # a constant of an extension type: the HAL does not know its element size
    model = hal_fibonacci_model()
    model.main.operands[0] = Operand(0x10000, [], 1, lifetime=L.CONSTANT_COPY,
                                     location=DataLocation(0, 0, 3))
    model.operand_values = b"abc"
    model.main.input_indexes = []
    validate_model(model)


def test_base_operation_on_extension_operands_is_invalid():
    operands = [Operand(0x10001, [2], 1, lifetime=L.SUBGRAPH_INPUT),
                Operand(0x10001, [2], 1, lifetime=L.SUBGRAPH_INPUT),
                Operand(T.INT32, [], 1, lifetime=L.CONSTANT_COPY, location=DataLocation(0, 0, 4)),
                Operand(0x10001, [2], 0, lifetime=L.SUBGRAPH_OUTPUT)]
    model = HalModel(Subgraph(operands, [Operation(Op.ADD, [0, 1, 2], [3])], [0, 1], [3]),
                     operand_values=bytes(4),
                     extension_name_to_prefix=[ExtensionNameAndPrefix(EXTENSION_NAME, 1)])
    with pytest.raises(HalError) as e:
        validate_model(model)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    assert "ADD" in e.value.message and "extension type" in e.value.message


def test_front_end_finish_maps_hal_errors_to_bad_data(fib_devices):
    m = Model()
    int64, quant64, fib = codes(m, fib_devices)
    x = m.add_operand(F32, [2])
    y = m.add_operand(quant64, [2])
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, np.int32(0))
    out = m.add_operand(F32, [2])
    m.add_operation(Op.ADD, [x, y, act], [out])
    m.identify_inputs_and_outputs([x, y], [out])
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA and "extension type" in str(e.value)


def test_device_reports_its_extensions(fib_devices):
    fib = fib_devices[0]
    assert [e.name for e in fib.extensions] == [EXTENSION_NAME]
    assert fib.get_extension_support(EXTENSION_NAME)
    assert not fib.get_extension_support("com.example.nope")
    assert not get_devices(["sample"])[0].get_extension_support(EXTENSION_NAME)
