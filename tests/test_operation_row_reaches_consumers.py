"""An operation row declared only here (patched into the table with
``runtime.ops.base.registered``) reaches every consumer of the table with no other file
touched: model validation, the VTS mutations, the fuzz decoder, random graphs and the
coverage matrix.

The throwaway row re-uses OperationType.ABS's code with one signature of its own
(TENSOR_FLOAT32 rank 1-2 -> same), ``y = -x``, a model-time rule (the output's dimensions
are the input's) and one error input breaking it, so every expectation below follows from
this file alone.
"""
from __future__ import annotations

import numpy as np
import pytest

from runtime import ops
from runtime.errors import HalError
from runtime.hal.types import DataLocation, Model, Operand, Operation, Subgraph
from runtime.hal.validate import validate_model
from runtime.ops.base import ErrorInput, OperationDef, check, registered, sig, tensor
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as OT

OP = OT.ABS


def _same_dims(ctx) -> None:
    """Where both are fully specified, the output's dimensions are the input's (an output
    of unknown dimensions, 0 in the model, is left to execution as NNAPI allows)."""
    x, y = ctx.inputs[0].dims, ctx.outputs[0].dims
    if 0 not in x and 0 not in y and x and y:
        check(y == x, "output dims must equal the input's")


def _wider_output(inputs, outputs):
    """The output one wider on its last dimension than the input."""
    out = outputs[0]
    wider = type(out)(**{**out.__dict__, "dims": (*out.dims[:-1], out.dims[-1] + 1)})
    yield ErrorInput("output 0", inputs, [wider], "must equal the input's", "y = -x keeps the shape")


def _negate_row() -> OperationDef:
    return OperationDef(
        OP, (sig(1, [tensor("input", T.TENSOR_FLOAT32, (1, 2))], [tensor("output", T.TENSOR_FLOAT32, (1, 2))]),),
        prepare=lambda ctx: [tuple(ctx.inputs[0].dims)],
        execute=lambda ctx: [-ctx.inputs[0].value],
        validate=_same_dims, error_inputs=_wider_output,
        summary="-x (a throwaway row of tests/test_operation_row_reaches_consumers.py)")


def _model(t=T.TENSOR_FLOAT32) -> Model:
    x = Operand(t, [2, 3], 1, 0.0, 0, L.SUBGRAPH_INPUT, DataLocation())
    y = Operand(T.TENSOR_FLOAT32, [2, 3], 0, 0.0, 0, L.SUBGRAPH_OUTPUT, DataLocation())
    return Model(Subgraph([x, y], [Operation(OP, [0], [1])], [0], [1]), [], b"", [], False, [])


@pytest.fixture
def row():
    with registered(_negate_row()) as r:
        yield r
    assert ops.get(OP) is not r  # the original row is back


def test_validation_reads_the_row(row):
    validate_model(_model())  # TENSOR_FLOAT32 rank 2: the row's one signature
    with pytest.raises(HalError, match="ABS"):
        validate_model(_model(T.TENSOR_INT32))  # no TENSOR_INT32 signature in this row
    rank3 = _model()
    rank3.main.operands[0].dimensions = [1, 2, 3]
    with pytest.raises(HalError):
        validate_model(rank3)  # ranks 1-2 only


def test_vts_mutations_read_the_row(row):
    from vts.mutations import MODEL_KINDS
    model = _model()
    rank = list(MODEL_KINDS["operand_rank"](model))
    # the row allows ranks 1-2: a rank-2 operand becomes rank 3 (element count kept)
    assert any("dimensions [2, 3] -> [1, 2, 3]" in m.description for m in rank)
    types = list(MODEL_KINDS["operation_operand_type"](model))
    assert types and all(not _valid(m.model) for m in types)
    assert not any("operand 0 set to type TENSOR_FLOAT32" in m.description for m in types)
    # the row's error input: the output [2, 3] made [2, 4], which its validate rejects
    (wider,) = MODEL_KINDS["row_error_inputs"](model)
    assert wider.description == "row_error_inputs: operation 0 (ABS) output 0: y = -x keeps the shape"
    assert wider.model.main.operands[1].dimensions == [2, 4] and model.main.operands[1].dimensions == [2, 3]
    with pytest.raises(HalError, match=r"operation 0 \(ABS\): output dims must equal the input's"):
        validate_model(wider.model)


def _valid(model) -> bool:
    try:
        validate_model(model)
    except HalError:
        return False
    return True


def test_random_graphs_draw_the_row(row):
    from harness.graphs import Config, generate
    tm = generate(Config("throwaway", operations=1, max_dim=4, only=(OP,)), seed=1)
    assert [op.type for op in tm.main.operations] == [OP]


def test_coverage_matrix_reads_the_row(row):
    from cts.coverage.axes import cells_for
    cells = cells_for(OP)
    assert [c.key for c in cells if c.axis == "signature"] == ["sig0"]
    assert cells[0].label == "FL1: (TENSOR_FLOAT32) -> (TENSOR_FLOAT32)"


def test_fuzz_decoder_draws_the_row(row):
    """The fuzz decoder's generated mode (header bit 0 set; hostility 0) drafts operations
    from the rows: the throwaway row's operation turns up, always in the row's one signature
    (TENSOR_FLOAT32 of rank 1 or 2, never the real ABS's other types or ranks), and every
    decoded model passes validation under the row."""
    from fuzz.decoder import decode
    from runtime.testing.hal_convert import to_hal_model
    uses = []
    for seed in range(400):
        data = bytes([1]) + np.random.default_rng(seed).integers(0, 256, 600, dtype=np.uint8).tobytes()
        case = decode(data, hostility=0)
        assert case.mode == "generated"
        found = [(case.model.main.operands[op.inputs[0]], case.model.main.operands[op.outputs[0]])
                 for op in case.model.main.operations if op.type == OP]
        if found:
            validate_model(to_hal_model(case.model))
            uses += found
    assert uses, "the decoder never drew the row's operation"
    for x, y in uses:
        assert x.type == y.type == T.TENSOR_FLOAT32 and len(x.dimensions) in (1, 2), (x, y)
