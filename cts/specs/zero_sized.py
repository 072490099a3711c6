"""Zero-sized inputs of the operations that accept them and the AOSP corpus leaves untested
(``nncts coverage``, "zero-sized input"): HARD_SWISH (registered with
``allowZeroSizedInput``), SVDF, BIDIRECTIONAL_SEQUENCE_LSTM, IF, WHILE and LSH_PROJECTION
(AOSP's ``CpuExecutor`` does not check their inputs for zero size).

Built as AOSP's zero-sized tests are (``frameworks/ml/nn/runtime/test/specs/V1_2/*zero_sized*``):
BOX_WITH_NMS_LIMIT on scores [[0.9, 0.1]] with score threshold 0.3 keeps no box, ROI_ALIGN
over those 0 regions gives a [0, 2, 2, 1] temporary, and FULLY_CONNECTED (which allows
zero-sized input) turns it into each [0, k] operand the operation under test reads (input,
states; a time-major [steps, 0, k] input is ADD of it and zeros [steps, 1, k], broadcasting),
so the batch is 0 inside the model. The scores and classes outputs of
BOX_WITH_NMS_LIMIT ([0] each) are model outputs, as in AOSP's tests.

Golden (every model): hand calculation, every output is empty; the expected dimensions are
written below per model (batch 0, other dimensions from the operand shapes).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L, OperandType as T, OperationType as Op

from . import LEVEL_VERSION, VERSION, _operand, const, expect, inp, one_operation
from .typed import ZERO_SIZED_GOLDEN, zero_sized

FAMILY = "zero_sized"
F32, I32 = T.TENSOR_FLOAT32, T.TENSOR_INT32


def _empty(t, dims, life):
    return TestOperand(t, list(dims), 0.0, 0, life, 0, False, None, None)  # no data: zero elements


def _chain(operands: list[TestOperand]) -> tuple[list[TestOperation], int, list[int], list[int]]:
    """Appends BOX_WITH_NMS_LIMIT -> ROI_ALIGN to ``operands``: (operations, index of the
    [0, 2, 2, 1] temporary, new model inputs, new model outputs)."""
    base = len(operands)
    operands += [_operand(*c) for c in (
        const(F32, np.array([[0.9, 0.1]], np.float32)), const(F32, np.array([[1, 1, 10, 10, 0, 0, 10, 10]], np.float32)),
        const(I32, np.array([0], np.int32)), const(T.FLOAT32, 0.3), const(T.INT32, -1), const(T.INT32, 0),
        const(T.FLOAT32, 0.4), const(T.FLOAT32, 1.0), const(T.FLOAT32, 0.3))]
    operands += [_empty(F32, [0], L.SUBGRAPH_OUTPUT), _empty(F32, [0, 4], L.TEMPORARY_VARIABLE),
                 _empty(I32, [0], L.SUBGRAPH_OUTPUT), _empty(I32, [0], L.TEMPORARY_VARIABLE)]
    operands[base + 10].number_of_consumers = operands[base + 12].number_of_consumers = 1
    operands.append(_operand("input", F32, np.ones((1, 1, 1, 1), np.float32), 0.0, 0, None))
    operands += [_operand(*c) for c in (const(T.INT32, 2), const(T.INT32, 2), const(T.FLOAT32, 2.0),
                                        const(T.FLOAT32, 2.0), const(T.INT32, 4), const(T.INT32, 4),
                                        const(T.BOOL, False))]
    operands.append(_empty(F32, [0, 2, 2, 1], L.TEMPORARY_VARIABLE))
    b = base
    ops = [TestOperation(Op.BOX_WITH_NMS_LIMIT, list(range(b, b + 9)), [b + 9, b + 10, b + 11, b + 12]),
           TestOperation(Op.ROI_ALIGN, [b + 13, b + 10, b + 12, *range(b + 14, b + 21)], [b + 21])]
    return ops, b + 21, [b + 13], [b + 9, b + 11]


def graft(tm: TestModel, golden_dims: str) -> tuple[TestModel, str]:
    """``tm`` (one operation, built with batch 0) with every zero-sized [0, k] model input
    replaced by FULLY_CONNECTED of the chain's [0, 2, 2, 1] temporary (weights [k, 4] of ones,
    bias 0, no activation): the operation under test then reads tensors produced inside the
    model; every output is empty."""
    sg = tm.main
    operands = list(sg.operands)
    zero = [i for i in sg.input_indexes if 0 in operands[i].dimensions]
    assert zero, tm.name
    ops, roi, new_in, new_out = _chain(operands)
    for i in zero:
        dims = operands[i].dimensions
        assert operands[i].type == F32 and (dims[0] == 0 and len(dims) == 2 or dims[1] == 0 and len(dims) == 3), \
            (tm.name, i)
        k = dims[-1]
        w = len(operands)
        operands += [_operand(*c) for c in (const(F32, np.ones((k, 4), np.float32)),
                                            const(F32, np.zeros(k, np.float32)), const(T.INT32, 0))]
        operands[roi].number_of_consumers += 1
        operands[i] = dataclasses.replace(operands[i], lifetime=L.TEMPORARY_VARIABLE, data=None)
        fc = i
        if len(dims) == 3:  # time-major [steps, 0, k] = ADD([0, k], zeros [steps, 1, k]) (broadcast)
            fc = len(operands)
            operands += [_empty(F32, [0, k], L.TEMPORARY_VARIABLE),
                         _operand(*const(F32, np.zeros((dims[0], 1, k), np.float32))), _operand(*const(T.INT32, 0))]
            operands[fc].number_of_consumers = 1
            ops.append(TestOperation(Op.ADD, [fc, fc + 1, fc + 2], [i]))
            ops.insert(-1, TestOperation(Op.FULLY_CONNECTED, [roi, w, w + 1, w + 2], [fc]))
            continue
        ops.append(TestOperation(Op.FULLY_CONNECTED, [roi, w, w + 1, w + 2], [fc]))
    for i in sg.output_indexes:
        o = operands[i]
        assert 0 in o.dimensions, (tm.name, i)
        operands[i] = dataclasses.replace(o, data=None)  # as the corpus stores empty outputs
    main = TestSubgraph(operands, ops + list(sg.operations),
                        [i for i in sg.input_indexes if i not in zero] + new_in, sg.output_indexes + new_out)
    order = list(LEVEL_VERSION.values())  # BOX_WITH_NMS_LIMIT, ROI_ALIGN: feature level 3
    level = order[max(order.index(tm.min_supported_version), 2)]
    return (dataclasses.replace(tm, spec=FAMILY, min_supported_version=level, main=main),
            f"{ZERO_SIZED_GOLDEN}: {golden_dims}")


def _lstm():
    """LSTM on batch 0 (AOSP's CpuExecutor does not check zero-sized inputs for LSTM and its
    ``LSTMCell`` loops over no batch row; this spec found the reference's scratch-buffer
    reshape failing there)."""
    from . import lstm
    tm, _ = lstm.lstm("lstm_zero_sized", F32, lstm.TANH, 0, 3, 4, 4, seed=1)
    return graft(tm, "scratch_buffer [0, 16], output_state_out [0, 4], cell_state_out [0, 4], output [0, 4]")


def _bidi():
    """Time-major input [2, 0, 3] (ADD broadcasting), states [0, 3] from FULLY_CONNECTED."""
    from . import lstm
    tm, _ = lstm.bidi("bidirectional_sequence_lstm_zero_sized", F32, lstm.TANH, 0, 2, 3, 3, 3, time_major=True,
                      merge=False, states=True, seed=1)
    return graft(tm, "fw_output [2, 0, 3], bw_output [2, 0, 3], fw/bw output and cell states [0, 3] each")


def _svdf():
    rng = np.random.default_rng(1)  # units 2, rank 1 (2 filters), input_size 3, memory_size 3
    w = lambda *shape: (np.round(rng.uniform(-1, 1, shape) * 8) / 8).astype(np.float32)
    tm, _ = one_operation("svdf_zero_sized", FAMILY, Op.SVDF,
                          [inp(F32, np.zeros((0, 3), np.float32)), const(F32, w(2, 3)), const(F32, w(2, 3)),
                           const(F32, w(2)), inp(F32, np.zeros((0, 6), np.float32)), const(T.INT32, 1),
                           const(T.INT32, 0)],
                          [expect(F32, np.zeros((0, 6), np.float32)), expect(F32, np.zeros((0, 2), np.float32))],
                          1, ZERO_SIZED_GOLDEN)
    return graft(tm, "state_out [0, 6], output [0, 2]")


def _sub(operands, operations, inputs, outputs) -> TestSubgraph:
    ops = []
    for t, dims, life, value in operands:
        o = _empty(t, dims, life) if value is None else _operand("const", t, np.asarray(value), 0.0, 0, None)
        o.number_of_consumers = sum(i == len(ops) for op in operations for i in op.inputs)
        ops.append(o)
    return TestSubgraph(ops, operations, inputs, outputs)


def _subgraph_ref(index: int) -> TestOperand:
    return TestOperand(T.SUBGRAPH, [], 0.0, 0, L.SUBGRAPH, 1, False, None, np.array(index, np.uint32))


def _control_flow(name, op, level_version, extra_in, extra_out, referenced, golden_dims):
    """``op`` (IF or WHILE) of the chain's [0, 2, 2, 1] temporary; ``extra_in`` (operand, index
    in the operation's inputs) and ``extra_out`` (further outputs of ``op``)."""
    operands: list[TestOperand] = []
    ops, roi, new_in, new_out = _chain(operands)
    operands[roi].number_of_consumers = 1
    first = len(operands)
    operands += [_subgraph_ref(0), _subgraph_ref(1)]
    ins = [first, first + 1, roi]
    model_in = list(new_in)
    for o, at in extra_in:
        ins.insert(at, len(operands))
        if o.lifetime == L.SUBGRAPH_INPUT:
            model_in.append(len(operands))
        operands.append(o)
    outs = [len(operands)]
    operands.append(_empty(F32, [0, 2, 2, 1], L.SUBGRAPH_OUTPUT))
    for o in extra_out:
        outs.append(len(operands))
        operands.append(o)
    ops.append(TestOperation(op, ins, outs))
    model_out = [i for i in outs if operands[i].lifetime == L.SUBGRAPH_OUTPUT] + new_out
    main = TestSubgraph(operands, ops, model_in, model_out)
    tm = TestModel(name, FAMILY, VERSION, level_version, False, False, 0.0, main, referenced)
    return tm, f"{ZERO_SIZED_GOLDEN}: {golden_dims}"


def _if():
    """IF(cond = true, then: RELU, else: RELU6) of the [0, 2, 2, 1] temporary."""
    x = (F32, [0, 2, 2, 1], L.SUBGRAPH_INPUT, None)
    y = (F32, [0, 2, 2, 1], L.SUBGRAPH_OUTPUT, None)
    branches = [_sub([x, y], [TestOperation(k, [0], [1])], [0], [1]) for k in (Op.RELU, Op.RELU6)]
    cond = _operand("input", T.TENSOR_BOOL8, np.array([True]), 0.0, 0, None)
    return _control_flow("if_zero_sized", Op.IF, "V1_3", [(cond, 0)], [], branches, "output [0, 2, 2, 1]")


def _while():
    """WHILE(cond: i < n, body: x = RELU(x), i = i + 1) from x the [0, 2, 2, 1] temporary,
    i = 0, n = 2: two iterations, outputs x [0, 2, 2, 1] (empty) and i = [2]."""
    x_in, x_out = (F32, [0, 2, 2, 1], L.SUBGRAPH_INPUT, None), (F32, [0, 2, 2, 1], L.SUBGRAPH_OUTPUT, None)
    i_in, i_out = (I32, [1], L.SUBGRAPH_INPUT, None), (I32, [1], L.SUBGRAPH_OUTPUT, None)
    cond = _sub([x_in, i_in, i_in, (T.TENSOR_BOOL8, [1], L.SUBGRAPH_OUTPUT, None)],
                [TestOperation(Op.LESS, [1, 2], [3])], [0, 1, 2], [3])
    body = _sub([x_in, i_in, i_in, x_out, i_out, (I32, [1], L.CONSTANT_COPY, np.array([1], np.int32)),
                 (T.INT32, [], L.CONSTANT_COPY, np.int32(0))],
                [TestOperation(Op.RELU, [0], [3]), TestOperation(Op.ADD, [1, 5, 6], [4])], [0, 1, 2], [3, 4])
    i0 = _operand("const", I32, np.array([0], np.int32), 0.0, 0, None)
    n = _operand("const", I32, np.array([2], np.int32), 0.0, 0, None)
    i_final = _operand("output", I32, np.array([2], np.int32), 0.0, 0, None)
    return _control_flow("while_zero_sized", Op.WHILE, "V1_3", [(i0, 3), (n, 4)], [i_final], [cond, body],
                         "output [0, 2, 2, 1]; the counter output is [2] (i = 0 -> 1 -> 2, then 2 < 2 is false)")


def _lsh():
    """LSH_PROJECTION (SPARSE, weight omitted as AOSP's CPU kernel requires for sparse types)
    of TRANSPOSE(the [0, 2, 2, 1] temporary, perm [1, 0, 2, 3]) = [2, 0, 2, 1]: two input
    rows of 0 bytes each (AOSP ``runningSignBit``: item bytes = 0 / 2, so each row hashes the
    seed's 4 bytes alone; a batch-0 input would divide by SizeOfDimension(input, 0) = 0).
    Output [2], not empty: bit (i, j) = 2 * int64(Fingerprint64(float32 bytes of
    seed[i, j])) > 0, value sum_j bit(i, j) 2^(1 - j) + i * 2^2."""
    from .lsh import fingerprint64
    operands: list[TestOperand] = []
    ops, roi, model_in, model_out = _chain(operands)
    operands[roi].number_of_consumers = 1
    b = len(operands)
    seeds = np.array([[0.25, -1.5], [3.0, 0.75]], np.float32)
    operands += [_operand(*const(I32, np.array([1, 0, 2, 3], np.int32))), _empty(F32, [2, 0, 2, 1], L.TEMPORARY_VARIABLE),
                 _operand(*const(F32, seeds)), _operand("omitted", F32, None, 0.0, 0, None),
                 _operand(*const(T.INT32, 3))]
    operands[b + 1].number_of_consumers = 1
    h = np.array([[fingerprint64(v.tobytes()) for v in row] for row in seeds], dtype=object)
    bits = np.array([[int(2 * float(x - (1 << 64) if x >> 63 else x) > 0) for x in row] for row in h])
    want = (bits * np.array([2, 1])).sum(axis=1) + np.arange(2) * 4
    operands.append(_operand("output", I32, want.astype(np.int32), 0.0, 0, None))
    ops += [TestOperation(Op.TRANSPOSE, [roi, b], [b + 1]),
            TestOperation(Op.LSH_PROJECTION, [b + 2, b + 1, b + 3, b + 4], [b + 5])]
    main = TestSubgraph(operands, ops, model_in, [b + 5] + model_out)
    return (TestModel("lsh_projection_zero_sized", FAMILY, VERSION, "V1_2", False, False, 0.0, main),
            f"numpy formula: farmhash Fingerprint64 of each seed's bytes (cts/specs/lsh.py), sign bits of "
            f"2 * hash; by hand: BOX_WITH_NMS_LIMIT keeps no box, so the input is [2, 0, 2, 1] (rows of 0 "
            f"bytes); output [2] = {want.tolist()}")


def models():
    return [
        zero_sized("hard_swish_zero_sized", FAMILY, Op.HARD_SWISH, [], [2, 2, 1], 4),
        _svdf(),
        _if(),
        _while(),
        _lsh(),
        _bidi(),
        _lstm(),
    ]
