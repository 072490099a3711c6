"""The operation table's error inputs (``OperationDef.error_inputs``, built with
``runtime.ops.error_inputs``): for every row that declares them, valid one-operation models
of the row (random graphs, ``harness.graphs``, one per input-type row of its signatures)
are accepted by the reference validation, and each error input applied to them
(``vts.mutations.row_errors.apply_error_input``, the VTS kind's own edit) is rejected
where the ErrorInput says: model validation (HalError INVALID_ARGUMENT naming the operation
and the rule) or, for a valid model, the operation's prepare (OperationError naming the
rule; the executor turns it into GENERAL_FAILURE).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from harness.graphs import Config, GenerationError, generate
from runtime import ops
from runtime.errors import HalError, OperationError
from runtime.hal.validate import validate_model
from runtime.ops.base import ErrorInput, OpContext
from runtime.ops.error_inputs import PREPARE, VALIDATION
from runtime.testing.hal_convert import to_hal_model
from runtime.types import ErrorStatus, OperationType as OT
from vts.mutations import clone_model
from vts.mutations.row_errors import apply_error_input, error_inputs_of, operation_views

ROWS = sorted((op for op, row in ops.REGISTRY.items() if row.error_inputs is not None), key=lambda o: o.name)

#: The operations issue 21 names, each with the rule its error inputs must cover (the
#: ErrorInput ``error`` fragment contains it) and the stage NNAPI rejects it at.
NAMED = {
    OT.CONV_2D: {("must equal input scale * filter scale", VALIDATION),
                 ("must equal the input depth", PREPARE), ("must equal depth_out", PREPARE)},
    OT.DEPTHWISE_CONV_2D: {("must equal depth_in", PREPARE)},
    OT.FULLY_CONNECTED: {("must equal input scale * filter scale", VALIDATION),
                         ("must equal num_units", PREPARE)},
    OT.CONCATENATION: {("differ from input 0's", PREPARE), ("(axis) must be in [0,", PREPARE)},
    OT.RESHAPE: {("elements, input 0 has", PREPARE), ("may hold at most one -1", PREPARE)},
    OT.SOFTMAX: {("must be a positive scaling factor", VALIDATION)},
    OT.L2_NORMALIZATION: {("must have scale", VALIDATION)},
    OT.LOGISTIC: {("must have scale", VALIDATION)},
    OT.TANH: {("must have scale", VALIDATION)},
    OT.SPLIT: {("must divide dimension", PREPARE)},
    OT.TRANSPOSE: {("is not a permutation", PREPARE)},
    OT.GATHER: {("out of range", PREPARE)},
    OT.MEAN: {("out of range", PREPARE), ("must equal input scale", VALIDATION)},
    OT.SPACE_TO_DEPTH: {("must be divisible by block_size", PREPARE)},
    OT.DEPTH_TO_SPACE: {("must be divisible by block_size", PREPARE)},
    OT.PAD: {("(paddings) must have shape", PREPARE)},
    OT.BATCH_MATMUL: {("columns but input 1", PREPARE)},
}


#: Graphs drawn per signature (several: a rule may need a parameter the first draws lack,
#: e.g. SPLIT with num_splits > 1).
SEEDS = (1, 2, 3)


@functools.lru_cache(maxsize=None)
def _models(op: OT) -> tuple:
    """Valid one-operation test models of ``op``: random graphs (:data:`SEEDS`) of each
    signature whose input types differ from the earlier ones' (a draw the generator cannot
    make is left out)."""
    row, seen, out = ops.REGISTRY[op], set(), []
    for i, s in enumerate(row.signatures):
        key = tuple(a.type for a in s.inputs)
        if key in seen:
            continue
        seen.add(key)
        for seed in SEEDS:
            try:
                out.append(generate(Config(f"error-inputs-{op.name}-{i}", operations=1, max_dim=6,
                                           only=(op,), signature=i), seed=seed))
            except GenerationError:
                continue
    return tuple(out)


def _with_data(tm, operation, views: list) -> list:
    """``views`` with the test model's data for the inputs the model does not hold
    (model inputs: values for prepare, resized to a changed view's dimensions)."""
    out = []
    for idx, v in zip(operation.inputs, views):
        data = tm.main.operands[idx].data
        if v.value is None and not v.omitted and data is not None:
            v = type(v)(**{**v.__dict__, "value": np.resize(np.asarray(data), v.dims)})
        out.append(v)
    return out


def _check(op: OT, tm, model, e: ErrorInput) -> None:
    """``e`` applied to ``model``'s operation 0 is rejected where and as ``e`` says."""
    assert e.reason.strip() and e.error.strip() and e.at in (VALIDATION, PREPARE), e
    mutant = clone_model(model)
    described = apply_error_input(mutant, mutant.main, 0, e)
    assert described.startswith(f"operation 0 ({op.name}) {e.where}: ")
    if e.at == VALIDATION:
        assert e.status == ErrorStatus.INVALID_ARGUMENT
        with pytest.raises(HalError) as info:
            validate_model(mutant)
        assert info.value.status == ErrorStatus.INVALID_ARGUMENT
        assert op.name in info.value.message and e.error in info.value.message, (e.reason, info.value.message)
        return
    assert e.status == ErrorStatus.GENERAL_FAILURE
    validate_model(mutant)  # the model is valid: NNAPI rejects it when the operation runs
    operation = tm.main.operations[0]
    ctx = OpContext(op, _with_data(tm, operation, e.inputs), list(e.outputs))
    with pytest.raises(OperationError) as info:
        ops.REGISTRY[op].prepare(ctx)
    assert e.error in str(info.value), (e.reason, str(info.value))


@pytest.mark.parametrize("op", ROWS, ids=lambda o: o.name)
def test_error_inputs_are_rejected_where_they_say(op):
    models = _models(op)
    assert models, f"{op.name}: no signature could be drafted"
    n = 0
    for tm in models:
        model = to_hal_model(tm)
        validate_model(model)  # the unmodified use is valid
        inputs, outputs = operation_views(model, model.main, model.main.operations[0])
        ops.REGISTRY[op].prepare(OpContext(op, _with_data(tm, tm.main.operations[0], inputs), outputs))
        for e in error_inputs_of(model, model.main, model.main.operations[0], at=None):
            _check(op, tm, model, e)
            n += 1
    assert n, f"{op.name}: its error inputs yield nothing on {len(models)} valid models"


def _error_inputs(op: OT, at: str | None) -> list[ErrorInput]:
    """The error inputs (of stage ``at``; None: all) of every model of :func:`_models`."""
    out = []
    for tm in _models(op):
        model = to_hal_model(tm)
        out += error_inputs_of(model, model.main, model.main.operations[0], at=at)
    return out


def test_the_named_operations_cover_their_rules():
    """Issue 21's operations declare the rules it names, at NNAPI's stage; at least 12
    operations have error inputs model validation rejects (the VTS kind's)."""
    for op, wanted in NAMED.items():
        got = {(e.error, e.at) for e in _error_inputs(op, None)}
        missing = {(w, at) for w, at in wanted if not any(w in g and at == a for g, a in got)}
        assert not missing, f"{op.name}: missing {missing}"
    validation_ops = [op.name for op in ROWS if _error_inputs(op, VALIDATION)]
    assert len(validation_ops) >= 12, validation_ops
