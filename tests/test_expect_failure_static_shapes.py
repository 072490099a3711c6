"""The sample driver's static shape check at prepare_model (runtime/hal/static_shapes.py): it
rejects a model whose shapes are certain to fail at execution, with INVALID_ARGUMENT naming the
operation, operand and both shapes; it never judges what depends on values known only at
execution; the front end and validate_model still accept such models (as NNAPI's runtime
does); and no valid model of the corpus or our specs is rejected."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.drivers.sample import SampleDevice
from runtime.errors import HalError
from runtime.hal.static_shapes import check_static_shapes
from runtime.hal.validate import validate_model
from runtime.testing.hal_convert import to_hal_model
from runtime.testing import test_model as corpus
from runtime.types import ErrorStatus, OperationType
from tests.cts_run import ROOT
from vts.hal_harness import L, T, operand, scalar_i32


def _model(operands, operations, inputs, outputs):
    return to_hal_model(corpus.TestModel("m", "static", "synthetic", "UNKNOWN", False, False, 0.0,
                                         corpus.TestSubgraph(operands, operations, inputs, outputs)))


def _cast(out_dims, internal: bool = False):
    """CAST float32 [2, 3] -> int32 ``out_dims``; ``internal``: the CAST input is first
    computed by ADD(x, zeros) into a temporary of unknown shape [0, 0]."""
    x = operand(T.TENSOR_FLOAT32, (2, 3), L.SUBGRAPH_INPUT, consumers=1)
    y = operand(T.TENSOR_INT32, out_dims, L.SUBGRAPH_OUTPUT)
    if not internal:
        return _model([x, y], [corpus.TestOperation(OperationType.CAST, [0], [1])], [0], [1])
    zeros = operand(T.TENSOR_FLOAT32, (2, 3), L.CONSTANT_COPY, data=np.zeros((2, 3)), consumers=1)
    tmp = operand(T.TENSOR_FLOAT32, (0, 0), L.TEMPORARY_VARIABLE, consumers=1)
    add = corpus.TestOperation(OperationType.ADD, [0, 1, 2], [3])
    cast = corpus.TestOperation(OperationType.CAST, [3], [4])
    return _model([x, zeros, scalar_i32(0), tmp, y], [add, cast], [0], [4])


def test_a_contradicting_output_shape_is_rejected_at_prepare_only():
    model = _cast((100,))
    validate_model(model)  # the front end's validation accepts it (AOSP cast_mismatching_shapes)
    assert SampleDevice().get_supported_operations(model) == [True]
    with pytest.raises(HalError) as e:
        SampleDevice().prepare_model(model)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    assert e.value.message == ("static shape check: operation 0 (CAST): output 0 (operand 1) has shape [2, 3] "
                               "from its inputs, the model declares [100]")
    check_static_shapes(_cast((2, 3)))
    check_static_shapes(_cast((0, 3)))  # unknown dimensions never contradict


def test_inferred_shapes_reach_later_operations():
    with pytest.raises(HalError, match=r"operation 1 \(CAST\): output 0 \(operand 4\) has shape \[2, 3\]"):
        check_static_shapes(_cast((3, 2), internal=True))
    check_static_shapes(_cast((2, 3), internal=True))


def _reshape(shape_lifetime, out_dims):
    """RESHAPE float32 [2, 3] by a TENSOR_INT32 [2] shape (constant [3, 2], or a model input)."""
    x = operand(T.TENSOR_FLOAT32, (2, 3), L.SUBGRAPH_INPUT, consumers=1)
    data = [3, 2] if shape_lifetime == L.CONSTANT_COPY else None
    shape = operand(T.TENSOR_INT32, (2,), shape_lifetime, data=data, consumers=1)
    y = operand(T.TENSOR_FLOAT32, out_dims, L.SUBGRAPH_OUTPUT)
    inputs = [0] if shape_lifetime == L.CONSTANT_COPY else [0, 1]
    return _model([x, shape, y], [corpus.TestOperation(OperationType.RESHAPE, [0, 1], [2])], inputs, [2])


def test_a_shape_known_only_at_execution_is_not_judged():
    with pytest.raises(HalError, match=r"output 0 \(operand 2\) has shape \[3, 2\] from its inputs, the model "
                                       r"declares \[6, 1\]"):
        check_static_shapes(_reshape(L.CONSTANT_COPY, (6, 1)))
    # the same shape as a model input: RESHAPE's prepare would read its value, unknown until
    # execution, so the operation is not judged (whatever the declared output)
    check_static_shapes(_reshape(L.SUBGRAPH_INPUT, (6, 1)))
    SampleDevice().prepare_model(_reshape(L.SUBGRAPH_INPUT, (6, 1)))


def test_a_parameter_the_kernel_refuses_is_rejected_naming_the_operation():
    # DEPTHWISE_CONV_2D with a filter of first dimension 2 (must be 1): AOSP
    # depthwise_conv2d_invalid_filter_dims, also when the filter is a model input (no value)
    model = next(tm for tm in corpus.iter_corpus([ROOT / "cts" / "corpus" / "V1_2"])
                 if tm.name == "depthwise_conv2d_invalid_filter_dims_nhwc_all_tensors_as_inputs")
    with pytest.raises(HalError, match=r"^INVALID_ARGUMENT: static shape check: operation 0 \(DEPTHWISE_CONV_2D\): "
                                       r"input 1 \(filter\) \[2, 2, 2, 4\]: dimension 0 must be 1"):
        check_static_shapes(to_hal_model(model))


def test_no_valid_model_of_the_corpus_or_our_specs_is_rejected():
    roots = [ROOT / "cts" / "corpus", ROOT / "cts" / "specs" / "built"]
    rejected, valid = [], 0
    for tm in corpus.iter_corpus(roots):
        if tm.expect_failure:
            continue
        valid += 1
        try:
            check_static_shapes(to_hal_model(tm))
        except HalError as e:
            rejected.append(f"{tm.test_id}: {e}")
    assert valid > 8000 and not rejected, rejected[:5]
