"""The VTS mutation kinds derive their skips from the operation table's signatures; AOSP's
``neuralnetworks/aidl/vts/functional/ValidateModel.cpp`` (and HAL 1.3's) keeps hand lists
instead. This test keeps AOSP's lists as test data (below, restated from
``mutateOperationOperandTypeSkip``, ``removeOperandSkip``, ``removeOperationInputSkip`` and
``addOperationInputSkip``) and shows, on corpus models of every operation they name, that
each case AOSP skips is either skipped by the derived rule too or is a genuinely invalid
mutant: the reference validator (``runtime.hal.validate.validate_model``) rejects it with
INVALID_ARGUMENT.

Deliberate differences (the derived rule offers a mutant AOSP skips, always an invalid one):

* operand type: AOSP skips every slot of CAST / ARGMAX / ARGMIN for five tensor types and
  any tensor type for RANK's input, whatever the rest of the operation; the derived rule
  skips a type only where every operation using the operand still matches a signature
  (e.g. ARGMAX's TENSOR_INT32 output turned TENSOR_FLOAT32 is offered: no signature has it);
* removed operand: AOSP skips every output of SPLIT and of the sequence LSTM/RNN operations
  (their output counts vary); the derived rule skips only when the writer still matches
  without that output and every reader without that input;
* added input: AOSP skips RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR with fewer than 6
  inputs; an INT32 after the size inputs sits in the BOOL layout slot, which no signature
  accepts, so the derived rule offers it.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from runtime.errors import HalError
from runtime.hal.types import DataLocation, Operation
from runtime.hal.validate import validate_model
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import load_spec
from runtime.types import ErrorStatus, OperandLifeTime as L, OperandType as T, OperationType as OT
from runtime.types import is_tensor_type
from vts.mutations import MODEL_KINDS, clone_model, count_consumers, spread

CORPUS = Path(__file__).resolve().parent.parent / "cts" / "corpus"

# --- AOSP's hand lists (ValidateModel.cpp), kept as test data ---------------------------

_FLEXIBLE = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
             T.TENSOR_QUANT8_ASYMM_SIGNED)


def aosp_operand_type_skip(sg, i: int, t) -> bool:
    """AOSP ``mutateOperationOperandTypeSkip``."""
    for op in sg.operations:
        first_in = op.inputs[0] if op.inputs else None
        first_out = op.outputs[0] if op.outputs else None
        second_in = op.inputs[1] if len(op.inputs) > 1 else None
        if op.type == OT.LSH_PROJECTION and i == second_in:
            return True
        if op.type in (OT.CAST, OT.ARGMAX, OT.ARGMIN) and t in _FLEXIBLE:
            return True
        if op.type == OT.QUANTIZE and ((i == first_in and t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)) or
                                       (i == first_out and t in (T.TENSOR_QUANT8_ASYMM,
                                                                 T.TENSOR_QUANT8_ASYMM_SIGNED))):
            return True
        if op.type == OT.RANDOM_MULTINOMIAL and i == first_in and t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
            return True
        if op.type == OT.DEQUANTIZE and (
                (i == first_in and t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                                         T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL)) or
                (i == first_out and t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32))):
            return True
        if op.type in (OT.TRANSPOSE_CONV_2D, OT.GROUPED_CONV_2D, OT.DEPTHWISE_CONV_2D, OT.CONV_2D) and \
                i == second_in and t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL):
            return True
        if op.type == OT.AXIS_ALIGNED_BBOX_TRANSFORM and i == second_in and \
                t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
            return True
        if op.type == OT.RANK and i == first_in and is_tensor_type(t):
            return True
    return False


#: AOSP ``removeOperandSkip``: outputs of these operations.
AOSP_REMOVE_OPERAND_SKIP = (OT.SPLIT, OT.UNIDIRECTIONAL_SEQUENCE_LSTM, OT.UNIDIRECTIONAL_SEQUENCE_RNN,
                            OT.BIDIRECTIONAL_SEQUENCE_LSTM, OT.BIDIRECTIONAL_SEQUENCE_RNN)


def aosp_remove_input_skip(op, j: int) -> bool:
    """AOSP ``removeOperationInputSkip``."""
    n, t = len(op.inputs), op.type
    if t == OT.CONCATENATION:
        return n > 2 and j != n - 1
    if t == OT.DEPTHWISE_CONV_2D:
        return (n == 12 and j == 11) or (n == 9 and j == 8)
    if t in (OT.CONV_2D, OT.AVERAGE_POOL_2D, OT.MAX_POOL_2D, OT.L2_POOL_2D):
        return (n == 11 and j == 10) or (n == 8 and j == 7)
    if t == OT.RESIZE_BILINEAR:
        return n >= 4 and j >= 3
    if t == OT.RESIZE_NEAREST_NEIGHBOR:
        return n >= 5 and j >= 3
    if t in (OT.SPACE_TO_DEPTH, OT.DEPTH_TO_SPACE, OT.BATCH_TO_SPACE_ND):
        return n == 3 and j == 2
    if t == OT.SPACE_TO_BATCH_ND:
        return n == 4 and j == 3
    if t == OT.L2_NORMALIZATION:
        return n == 2 and j == 1
    if t == OT.LOCAL_RESPONSE_NORMALIZATION:
        return n == 6 and j == 5
    if t == OT.SOFTMAX:
        return n == 3 and j == 2
    return False


def aosp_add_input_skip(op) -> bool:
    """AOSP ``addOperationInputSkip``."""
    n = len(op.inputs)
    return ((op.type == OT.L2_NORMALIZATION and n == 1) or
            (op.type == OT.LOCAL_RESPONSE_NORMALIZATION and n == 5) or
            (op.type == OT.SOFTMAX and n == 2) or
            (op.type in (OT.RESIZE_BILINEAR, OT.RESIZE_NEAREST_NEIGHBOR) and n < 6))


# --- corpus models of every operation those lists name ----------------------------------

SPEC_FILES = (
    "V1_2/lsh_projection_float16", "V1_2/cast", "V1_3/cast_identity", "V1_2/argmax_1", "V1_2/argmin_1",
    "V1_3/quantize_quant8_signed", "V1_2/random_multinomial", "V1_2/dequantize_v1_2",
    "V1_2/transpose_conv2d", "V1_2/grouped_conv2d", "V1_2/depthwise_conv2d_v1_2", "V1_3/conv2d_quant8_signed",
    "V1_2/axis_aligned_bbox_transform", "V1_3/rank", "V1_2/split_float_1",
    "V1_2/unidirectional_sequence_rnn", "V1_2/bidirectional_sequence_rnn",
    "V1_3/unidirectional_sequence_lstm_layer_norm_cifg_peephole_state_output",
    "V1_2/bidirectional_sequence_lstm_merge_outputs", "V1_0/concat_float_1", "V1_2/l2_pool_v1_2",
    "V1_2/resize_bilinear_v1_2", "V1_3/resize_nearest_neighbor_v1_3", "V1_2/space_to_depth_v1_2",
    "V1_2/depth_to_space_v1_2", "V1_2/batch_to_space_v1_2", "V1_2/space_to_batch_v1_2",
    "V1_2/l2_normalization_v1_2", "V1_2/local_response_normalization_v1_2", "V1_2/softmax_v1_2",
)
MODELS_PER_FILE = 4


def _models():
    out = []
    for name in SPEC_FILES:
        tms = [tm for tm in load_spec(CORPUS / f"{name}.json.gz") if not tm.expect_failure]
        out += [(f"{name}#{k}", to_hal_model(tm)) for k, tm in enumerate(spread(tms, MODELS_PER_FILE))]
    return out


@pytest.fixture(scope="module")
def models():
    return _models()


def _rejected(mutant) -> bool:
    try:
        validate_model(mutant.model)
    except HalError as e:
        return e.status == ErrorStatus.INVALID_ARGUMENT
    return False


def _compare(models, kind_name: str, aosp_cases) -> Counter:
    """For each model, every case ``aosp_cases(sg)`` yields (a site AOSP skips): skipped by
    the derived rule (not among the kind's sites) or offered and rejected by validation.
    Returns the tally; fails naming any case offered but accepted."""
    kind = MODEL_KINDS[kind_name]
    tally, accepted = Counter(), []
    for name, model in models:
        offered = {place for g, place in kind.sites(model) if g is None}
        for site in aosp_cases(model.main):
            tally["aosp skips"] += 1
            if site not in offered:
                tally["derived skips too"] += 1
            elif _rejected(kind.apply(model, (None, site))):
                tally["offered, invalid"] += 1
            else:
                accepted.append(f"{name}: {site}")
    assert not accepted, accepted
    return tally


def _operand_type_cases(sg):
    used = {i for op in sg.operations for i in (*op.inputs, *op.outputs)}
    for i, o in enumerate(sg.operands):
        if i not in used or o.lifetime in (L.SUBGRAPH, L.NO_VALUE):
            continue
        for t in T:
            if t in (T.SUBGRAPH, o.type) or (t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and (o.dimensions or [1])[0] == 0):
                continue
            if aosp_operand_type_skip(sg, i, t):
                yield (i, t)


def _outputs_as_internal(model):
    """``model`` with each float / quant8 main output read by a RELU whose output is the new
    model output (AOSP's ``all_outputs_as_internal`` idea; the corpus has none): the outputs
    of SPLIT and the sequence operations then have readers, the operands
    ``removeOperandSkip`` is about (nncts removes only operands some operation reads)."""
    m = clone_model(model)
    sg = m.main
    outs = []
    for idx in sg.output_indexes:
        o = sg.operands[idx]
        if o.type not in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM) or len(o.dimensions) > 4:
            outs.append(idx)
            continue
        new = clone_model(m).main.operands[idx]
        new.number_of_consumers, new.location = 0, DataLocation()
        sg.operands.append(new)
        o.lifetime, o.number_of_consumers = L.TEMPORARY_VARIABLE, o.number_of_consumers + 1
        sg.operations.append(Operation(OT.RELU, [idx], [len(sg.operands) - 1]))
        outs.append(len(sg.operands) - 1)
    sg.output_indexes = outs
    validate_model(m)  # still a valid model
    return m


def _removed_operand_cases(sg):
    consumers = count_consumers(sg)
    skip = {i for op in sg.operations if op.type in AOSP_REMOVE_OPERAND_SKIP for i in op.outputs}
    return [i for i in sorted(skip) if consumers[i] > 0]


def _remove_input_cases(sg):
    return [(k, j) for k, op in enumerate(sg.operations) for j in range(len(op.inputs))
            if aosp_remove_input_skip(op, j)]


def _add_input_cases(sg):
    return [k for k, op in enumerate(sg.operations) if aosp_add_input_skip(op)]


def test_operand_type_skips_cover_aosp(models):
    tally = _compare(models, "operation_operand_type", _operand_type_cases)
    print("mutateOperationOperandTypeSkip:", dict(tally))
    # the signatures accept most of what AOSP's list names (e.g. DEQUANTIZE's input types,
    # the convolutions' per-channel filter); the rest are invalid operations
    assert tally["aosp skips"] > 200 and tally["derived skips too"] > 50 and tally["offered, invalid"] > 0


def test_remove_input_skips_cover_aosp(models):
    tally = _compare(models, "removed_operation_input", _remove_input_cases)
    print("removeOperationInputSkip:", dict(tally))
    assert tally["aosp skips"] > 20
    # every optional trailing input AOSP lists is optional in the signatures too
    assert tally["derived skips too"] == tally["aosp skips"]


def test_add_input_skips_cover_aosp(models):
    tally = _compare(models, "added_operation_input", _add_input_cases)
    print("addOperationInputSkip:", dict(tally))
    assert tally["aosp skips"] > 10 and tally["derived skips too"] > 0


def test_removed_operand_skips_cover_aosp(models):
    internal = [(name, _outputs_as_internal(m)) for name, m in models
                if any(op.type in AOSP_REMOVE_OPERAND_SKIP for op in m.main.operations)]
    tally = _compare(internal, "removed_operand", _removed_operand_cases)
    print("removeOperandSkip:", dict(tally))
    assert tally["aosp skips"] > 5
