"""Recurrent, lookup and random operations (FL3 forms, and the FL4 state outputs, lookup
types and QUANTIZED_LSTM): small cases whose expected values are worked out by hand (each
test shows the arithmetic) or by an independent numpy formula written out in the test (said
where used). None is computed with the code under test."""
from pathlib import Path

import numpy as np
import pytest

from runtime.errors import NnapiError
from runtime.testing.criteria import judge
from runtime.testing.test_model import load_spec
from runtime.types import OperandType as T, OperationType as Op, operand_dtype
from runtime.ops.quantized_lstm import logistic16, quantize_multiplier, tanh16
from tests.util import OMIT, flag, i32, run_op

F32, F16, I32, Q8, Q16 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32,
                          T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT16_SYMM)
Q8S, Q8SYMM = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# --- RNN / SVDF float16 --------------------------------------------------------------------

def test_rnn_float16():
    # x [1, 2] = [1, 2], W [[0.5, 0.25]], R [[2]], b [0.5], h [[1]], NONE:
    # 1*0.5 + 2*0.25 + 1*2 + 0.5 = 3.5 (exact in float16), both outputs
    out = run_op(Op.RNN, [(F16, [1, 2], [[1, 2]]), (F16, [1, 2], [[0.5, 0.25]]), (F16, [1, 1], [[2]]),
                          (F16, [1], [0.5]), (F16, [1, 1], ("input", np.array([[1]], np.float16))),
                          i32(0)], [(F16, [1, 1]), (F16, [1, 1])])
    assert [o.dtype for o in out] == [np.float16] * 2
    assert out[0].tolist() == [[3.5]] and out[1].tolist() == [[3.5]]


def test_svdf_float16():
    # 1 filter (rank 1, 1 unit), memory 2; state_in [0.5, 1.0] (oldest first).
    # newest entry <- x . wf = 2 * 3 = 6: memory [0.5, 6];
    # output = memory . wt + bias = 0.5*1 + 6*0.5 + 1 = 4.5; state_out = [6, 0]
    state, out = run_op(Op.SVDF, [
        (F16, [1, 1], ("input", np.array([[2]], np.float16))), (F16, [1, 1], [[3]]),
        (F16, [1, 2], [[1, 0.5]]), (F16, [1], [1]), (F16, [1, 2], [[0.5, 1.0]]), i32(1), i32(0)],
        [(F16, [1, 2]), (F16, [1, 1])])
    assert out.tolist() == [[4.5]] and state.tolist() == [[6, 0]]


# --- LSTM ----------------------------------------------------------------------------------

def lstm_cell_inputs(t, n_in, xi=None, xf=0, xc=1, xo=0, ci=None, cf=None, co=None,
                     bi=None, bf=0, bc=0, bo=0, n=1):
    """The 17 cell tensors (LSTM inputs 1-17) of a cell with ``n`` units over ``n_in``
    inputs; ``None`` omits an optional one; recurrent weights are zero (h does not feed
    back) and there is no projection."""
    def mat(v, cols):
        return (t, [n, cols], np.broadcast_to(np.asarray(v, np.float64), (n, cols)))

    def vec(v):
        return (t, [n], np.broadcast_to(np.asarray(v, np.float64), (n,)))

    omit2, omit1 = (t, [n, n_in], OMIT), (t, [n], OMIT)
    return [omit2 if xi is None else mat(xi, n_in), mat(xf, n_in), mat(xc, n_in), mat(xo, n_in),
            (t, [n, n], OMIT) if xi is None else mat(0, n), mat(0, n), mat(0, n), mat(0, n),
            omit1 if ci is None else vec(ci), omit1 if cf is None else vec(cf),
            omit1 if co is None else vec(co), omit1 if bi is None else vec(bi),
            vec(bf), vec(bc), vec(bo), (t, [n, n], OMIT), (t, [n], OMIT)]


def test_lstm_float16_cifg_one_step():
    # CIFG, tanh, one cell: f = sigma(0) = 0.5, i = 1 - f = 0.5; g = tanh(x * 1) = tanh(1);
    # c' = 0.5 * 2 + 0.5 * tanh(1) = 1.3807970779...; o = sigma(0) = 0.5;
    # h = 0.5 * tanh(1.3807970779) = 0.4407...
    c_expected = 1 + 0.5 * np.tanh(1.0)
    h_expected = 0.5 * np.tanh(c_expected)
    scratch, h_out, c_out, out = run_op(Op.LSTM, [
        (F16, [1, 1], ("input", np.array([[1]], np.float16))), *lstm_cell_inputs(F16, 1),
        (F16, [1, 1], [[0]]), (F16, [1, 1], [[2]]), i32(4), (T.FLOAT16, [], 0.0),
        (T.FLOAT16, [], 0.0)], [(F16, [1, 3]), (F16, [1, 1]), (F16, [1, 1]), (F16, [1, 1])])
    assert c_out.dtype == np.float16
    np.testing.assert_allclose(c_out.astype(float), [[c_expected]], rtol=2 ** -10)
    np.testing.assert_allclose(out.astype(float), [[h_expected]], rtol=2 ** -10)
    np.testing.assert_array_equal(out, h_out)


def test_lstm_layer_norm_27_inputs():
    # 2 cells, 1 input x = 1, input weights [[1], [-1]] for every gate, no recurrence
    # (h = 0), c = 0. Each gate's pre-activation is [1, -1]; layer norm (mean 0, variance 1)
    # leaves [1, -1] / sqrt(1 + 1e-8); then * ln weights + bias (bias AFTER the norm):
    # i = sigma([1, -1]), f irrelevant (c = 0), g = tanh(2 * [1, -1]) (cell ln weights 2),
    # o = sigma([1, -1] + 0.5) (output bias 0.5); c' = i g; h = o tanh(c').
    k = 1 / np.sqrt(1 + 1e-8)
    zn = np.array([1.0, -1.0]) * k
    c_expected = sigmoid(zn) * np.tanh(2 * zn)
    h_expected = sigmoid(zn + 0.5) * np.tanh(c_expected)
    w = [[1], [-1]]
    cell = lstm_cell_inputs(F32, 1, xi=w, xf=w, xc=w, xo=w, bi=0, bo=0.5, n=2)
    cell[0], cell[1], cell[2], cell[3] = [(F32, [2, 1], w)] * 4
    ln = [(F32, [2], [1, 1]), (F32, [2], [1, 1]), (F32, [2], [2, 2]), (F32, [2], [1, 1])]
    _, h_out, c_out, out = run_op(Op.LSTM, [
        (F32, [1, 1], ("input", np.array([[1]], np.float32))), *cell,
        (F32, [1, 2], [[0, 0]]), (F32, [1, 2], [[0, 0]]), i32(4), (T.FLOAT32, [], 0.0),
        (T.FLOAT32, [], 0.0), *ln], [(F32, [1, 8]), (F32, [1, 2]), (F32, [1, 2]), (F32, [1, 2])])
    np.testing.assert_allclose(c_out[0], c_expected, rtol=1e-6)
    np.testing.assert_allclose(out[0], h_expected, rtol=1e-6)


def test_lstm_rejects_half_a_peephole():
    # cell_to_forget given, cell_to_output omitted: the peephole weights go together
    with pytest.raises(NnapiError):
        run_op(Op.LSTM, [(F32, [1, 1], ("input", np.array([[1]], np.float32))),
                         *lstm_cell_inputs(F32, 1, cf=1.0),
                         (F32, [1, 1], [[0]]), (F32, [1, 1], [[0]]), i32(4), (T.FLOAT32, [], 0.0),
                         (T.FLOAT32, [], 0.0)],
               [(F32, [1, 3]), (F32, [1, 1]), (F32, [1, 1]), (F32, [1, 1])])


# --- sequence LSTMs ------------------------------------------------------------------------
# Cell used below: CIFG, activation NONE (g(z) = z), forget and output weights 0, so
# f = i = o = 0.5, c' = 0.5 c + 0.5 x, h = 0.5 c'. For x = [2, 4] from c = 0:
# forward: c = 1, h = 0.5; c = 0.5 + 2 = 2.5, h = 1.25.
# backward (last step first): c = 2, h = 1; c = 1 + 1 = 2, h = 1 -> at t = 0, 1: [1, 1].

def scalars(t, st):
    return [i32(0), (st, [], 0.0), (st, [], 0.0)]


def test_unidirectional_sequence_lstm_batch_major():
    x = np.array([[[2], [4]]], np.float32)  # [batch 1, time 2, input 1]
    (out,) = run_op(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, [
        (F32, [1, 2, 1], ("input", x)), *lstm_cell_inputs(F32, 1), (F32, [1, 1], [[0]]),
        (F32, [1, 1], [[0]]), *scalars(F32, T.FLOAT32), flag(False),
        *[(F32, [1], OMIT)] * 4], [(F32, [1, 2, 1])])
    assert out.reshape(-1).tolist() == [0.5, 1.25]


def bidirectional_lstm_inputs(x, aux=None, merge=True, time_major=True):
    shape = list(x.shape)
    cell = lstm_cell_inputs(F32, 1)
    aux_w = [(F32, [1, 1], OMIT)] * 8 if aux is None else \
        [(F32, [1, 1], OMIT)] + [(F32, [1, 1], [[1]])] * 3 + [(F32, [1, 1], OMIT)] + \
        [(F32, [1, 1], [[1]])] * 3
    return [(F32, shape, ("input", x)), *cell, *cell, *[(F32, [1, 1], [[0]])] * 4,
            (F32, shape, OMIT) if aux is None else (F32, shape, ("input", aux)), *aux_w,
            *scalars(F32, T.FLOAT32), flag(merge), flag(time_major),
            *[(F32, [1], OMIT)] * 8]


def test_bidirectional_sequence_lstm_merged_outputs():
    # time-major [time 2, batch 1, 1]; merged output [.., fw + bw] = [[0.5, 1], [1.25, 1]]
    x = np.array([[[2]], [[4]]], np.float32)
    (out,) = run_op(Op.BIDIRECTIONAL_SEQUENCE_LSTM, bidirectional_lstm_inputs(x), [(F32, [2, 1, 2])])
    assert out.reshape(2, 2).tolist() == [[0.5, 1], [1.25, 1]]


def test_bidirectional_sequence_lstm_cross_linking():
    # aux input a = [2, 0] with aux forget/cell/output weights 1 (CIFG: no aux input-gate
    # weights). Forget/output pre-activations become a: f = sigma(a), i = 1 - f,
    # o = sigma(a); cell input x + a. Independent formula, step by step:
    x = np.array([[[2]], [[4]]], np.float32)
    a = np.array([[[2]], [[0]]], np.float32)

    def cell(order):
        c, hs = 0.0, {}
        for t in order:
            f = sigmoid(a[t, 0, 0])
            c = f * c + (1 - f) * (x[t, 0, 0] + a[t, 0, 0])
            hs[t] = sigmoid(a[t, 0, 0]) * c
        return [hs[t] for t in (0, 1)]

    fw, bw = run_op(Op.BIDIRECTIONAL_SEQUENCE_LSTM, bidirectional_lstm_inputs(x, a, merge=False),
                    [(F32, [2, 1, 1]), (F32, [2, 1, 1])])
    np.testing.assert_allclose(fw.reshape(-1), cell([0, 1]), rtol=1e-6)
    np.testing.assert_allclose(bw.reshape(-1), cell([1, 0]), rtol=1e-6)


# --- sequence RNNs -------------------------------------------------------------------------

def rnn_cell(w, r):
    return [(F32, [1, 1], [[w]]), (F32, [1, 1], [[r]]), (F32, [1], [0]), (F32, [1, 1], [[0]])]


def test_unidirectional_sequence_rnn_batch_major():
    # x = [1, 2, 3], W = 1, R = 0.5, h0 = 0, NONE: h = 1; 2 + 0.5 = 2.5; 3 + 1.25 = 4.25
    x = np.array([[[1], [2], [3]]], np.float32)
    (out,) = run_op(Op.UNIDIRECTIONAL_SEQUENCE_RNN, [(F32, [1, 3, 1], ("input", x)), *rnn_cell(1, 0.5),
                                                     i32(0), i32(0)], [(F32, [1, 3, 1])])
    assert out.reshape(-1).tolist() == [1, 2.5, 4.25]


def test_unidirectional_sequence_rnn_time_major_flag_must_be_0_or_1():
    x = np.array([[[1]]], np.float32)
    with pytest.raises(NnapiError):
        run_op(Op.UNIDIRECTIONAL_SEQUENCE_RNN, [(F32, [1, 1, 1], ("input", x)), *rnn_cell(1, 0.5),
                                                i32(0), i32(2)], [(F32, [1, 1, 1])])


def brnn_inputs(x, aux=None, aux_w=None, merge=False):
    shape = list(x.shape)
    return [(F32, shape, ("input", x)), *rnn_cell(1, 0.5), *rnn_cell(1, 1),
            (F32, shape, OMIT) if aux is None else (F32, shape, ("input", aux)),
            *([(F32, [1, 1], OMIT)] * 2 if aux_w is None else
              [(F32, [1, 1], [[aux_w[0]]]), (F32, [1, 1], [[aux_w[1]]])]),
            i32(0), flag(True), flag(merge)]


X3 = np.array([[[1]], [[2]], [[3]]], np.float32)  # time-major [3, 1, 1]


def test_bidirectional_sequence_rnn_merged():
    # fw (W 1, R 0.5): 1, 2.5, 4.25; bw (W 1, R 1) from the end: t2 = 3, t1 = 2 + 3 = 5,
    # t0 = 1 + 5 = 6 -> merged [[1, 6], [2.5, 5], [4.25, 3]]
    (out,) = run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, brnn_inputs(X3, merge=True), [(F32, [3, 1, 2])])
    assert out.reshape(3, 2).tolist() == [[1, 6], [2.5, 5], [4.25, 3]]


def test_bidirectional_sequence_rnn_cross_linking():
    # aux = 1 at every step, fw aux weight 10, bw 100:
    # fw: 1 + 10 = 11; 2 + 5.5 + 10 = 17.5; 3 + 8.75 + 10 = 21.75
    # bw: t2 = 3 + 100 = 103; t1 = 2 + 103 + 100 = 205; t0 = 1 + 205 + 100 = 306
    fw, bw = run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, brnn_inputs(X3, np.ones_like(X3), (10, 100)),
                    [(F32, [3, 1, 1]), (F32, [3, 1, 1])])
    assert fw.reshape(-1).tolist() == [11, 17.5, 21.75]
    assert bw.reshape(-1).tolist() == [306, 205, 103]


def test_bidirectional_sequence_rnn_parallel_linking():
    # aux input without aux weights: the backward cell reads aux = [1, 1, 1]:
    # t2 = 1, t1 = 1 + 1 = 2, t0 = 1 + 2 = 3; forward unchanged
    fw, bw = run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, brnn_inputs(X3, np.ones_like(X3)),
                    [(F32, [3, 1, 1]), (F32, [3, 1, 1])])
    assert fw.reshape(-1).tolist() == [1, 2.5, 4.25]
    assert bw.reshape(-1).tolist() == [3, 2, 1]


def test_bidirectional_sequence_rnn_output_count_must_match_merge():
    with pytest.raises(NnapiError):
        run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, brnn_inputs(X3, merge=True),
               [(F32, [3, 1, 1]), (F32, [3, 1, 1])])


# --- QUANTIZED_16BIT_LSTM ------------------------------------------------------------------

W_SCALE = 2 ** -7  # weights scale; bias scale = W_SCALE / 128 = 2^-14


def qlstm(x_raw, w_in_cell_raw=100, w_rec_cell_raw=100, bias_cell=16384, state_raw=2048):
    """One unit, one input; weights zeroPoint 100 (raw 100 = 0.0) except the cell gate's."""
    w = lambda raw: (Q8, [1, 1], [[raw]], W_SCALE, 100)
    b = lambda raw: (I32, [1], [raw], W_SCALE / 128, 0)
    return run_op(Op.QUANTIZED_16BIT_LSTM, [
        (Q8, [1, 1], ("input", np.array([[x_raw]], np.uint8)), 1 / 128, 128),
        w(100), w(100), w(w_in_cell_raw), w(100), w(100), w(100), w(w_rec_cell_raw), w(100),
        b(0), b(0), b(bias_cell), b(0), (Q16, [1, 1], [[state_raw]], 2 ** -11, 0),
        (Q8, [1, 1], [[128]], 1 / 128, 128)],
        [(Q16, [1, 1], 2 ** -11, 0), (Q8, [1, 1], 1 / 128, 128)])


def test_quantized_16bit_lstm_hand_computed():
    # all weights 0; biases: cell 16384 * 2^-14 = 1.0, others 0: i = f = o = sigma(0) = 0.5,
    # g = tanh(1) = 0.7615942; previous state 2048 * 2^-11 = 1.0.
    # state = round(0.5 * 0.7615942 * 2048) + round(0.5 * 1.0 * 2048) = 780 + 1024 = 1804
    # output = 0.5 * tanh(1804 / 2048) = 0.35342 -> round(45.238) = 45, + 128 = 173
    state, out = qlstm(128)
    assert state.tolist() == [[1804]] and out.tolist() == [[173]]


def test_quantized_16bit_lstm_follows_aosp_weight_layout():
    # input x = (192 - 128) / 128 = 0.5, previous output 0; input-to-cell weight
    # (164 - 100) * 2^-7 = 0.5, recurrent-to-cell 0, cell bias 0. The spec's formula gives
    # z_c = 0.5 * 0.5 = 0.25; AOSP (and the CTS) multiply [input, output] by [recurrent,
    # input] columns, so z_c = 0.5 * 0 + 0 * 0.5 = 0 -> g = 0, state = 0 + 1024 = 1024.
    state, _ = qlstm(192, w_in_cell_raw=164, bias_cell=0)
    assert state.tolist() == [[1024]]


# --- lookups -------------------------------------------------------------------------------

def test_embedding_lookup_int32_values():
    # rows [[1, 2], [3, 4], [5, 6]], lookups [2, 0] -> [[5, 6], [1, 2]]
    (out,) = run_op(Op.EMBEDDING_LOOKUP, [(I32, [2], ("input", np.array([2, 0], np.int32))),
                                          (I32, [3, 2], [[1, 2], [3, 4], [5, 6]])], [(I32, [2, 2])])
    assert out.tolist() == [[5, 6], [1, 2]]


def test_embedding_lookup_quant8_values_move_raw_bytes():
    (out,) = run_op(Op.EMBEDDING_LOOKUP, [(I32, [1], ("input", np.array([1], np.int32))),
                                          (Q8, [2, 2], [[1, 2], [250, 7]], 0.5, 3)],
                    [(Q8, [1, 2], 0.5, 3)])
    assert out.tolist() == [[250, 7]]


def test_lsh_projection_float16_seeds_hash_as_float32():
    # the float16 form hashes each seed as its float32 value (AOSP LSHProjection.cpp), so
    # seeds exactly representable in both types give the float32 form's bits
    seeds = np.array([[0.5, -1.25], [3.0, 0.125]])
    x = np.array([[1, 2], [3, 4], [5, 6]], np.int32)

    def project(t):
        return run_op(Op.LSH_PROJECTION, [(t, [2, 2], seeds), (I32, [3, 2], ("input", x)),
                                          (t, [3], OMIT), i32(1)], [(I32, [2])])[0]

    assert project(F16).tolist() == project(F32).tolist()


# --- RANDOM_MULTINOMIAL --------------------------------------------------------------------

def multinomial(logits, samples, seeds=(37, 42), t=F32):
    logits = np.asarray(logits, operand_dtype(t))
    return run_op(Op.RANDOM_MULTINOMIAL, [(t, list(logits.shape), ("input", logits)),
                                          i32(samples), (I32, [2], list(seeds))],
                  [(I32, [logits.shape[0], samples])])[0]


def test_random_multinomial_certain_classes():
    # probabilities exp(0) / (exp(0) + 2 exp(-100)) ~ 1 - 7e-44: every sample is that class;
    # a -inf logit has probability 0
    out = multinomial([[0, -100, -100], [-np.inf, -np.inf, 5]], 50)
    assert out.tolist() == [[0] * 50, [2] * 50]


def test_random_multinomial_distribution_and_seeds():
    # p = [0.2, 0.8]: 4000 samples, standard deviation of a frequency sqrt(.16 / 4000) =
    # 0.0063; within 0.025 (the CTS tolerance, ~4 sigma). Same seeds, same samples.
    out = multinomial([np.log([0.2, 0.8])], 4000, t=F16)
    assert abs(np.mean(out == 1) - 0.8) < 0.025
    assert multinomial([np.log([0.2, 0.8])], 4000, t=F16).tolist() == out.tolist()


def test_random_multinomial_rejects_zero_samples():
    with pytest.raises(NnapiError):
        multinomial([[0.0, 1.0]], 0)


def test_judge_checks_the_multinomial_distribution():
    # CTS model: 1 x 1024 logits, 128 samples, tolerance 0.025. 128 distinct classes
    # (frequency 1/128 = 0.0078 each) stay within 0.025 of probabilities ~0.001; all
    # samples on class 0 (frequency 1) do not; 2000 is not a class index.
    tm = load_spec(Path(__file__).parents[1] / "cts/corpus/V1_2/random_multinomial.json.gz")[0]
    assert tm.multinomial_tolerance > 0
    assert judge(tm, [np.arange(128, dtype=np.int32).tobytes()], [[1, 128]]) == []
    assert judge(tm, [np.zeros(128, np.int32).tobytes()], [[1, 128]])
    assert judge(tm, [np.full(128, 2000, np.int32).tobytes()], [[1, 128]])


# --- feature level 4: state outputs of the sequence operations -----------------------------

def test_unidirectional_sequence_rnn_state_output():
    # as test_unidirectional_sequence_rnn_batch_major: outputs 1, 2.5, 4.25; the state
    # output is the last step's hidden state, 4.25
    x = np.array([[[1], [2], [3]]], np.float32)
    seq, state = run_op(Op.UNIDIRECTIONAL_SEQUENCE_RNN,
                        [(F32, [1, 3, 1], ("input", x)), *rnn_cell(1, 0.5), i32(0), i32(0)],
                        [(F32, [1, 3, 1]), (F32, [1, 1])])
    assert seq.reshape(-1).tolist() == [1, 2.5, 4.25] and state.tolist() == [[4.25]]


def test_bidirectional_sequence_rnn_merged_with_state_outputs():
    # merged: [[1, 6], [2.5, 5], [4.25, 3]] (test_bidirectional_sequence_rnn_merged); the
    # state outputs move to indexes 1, 2: fw after t2 = 4.25, bw after t0 = 6
    merged, fw, bw = run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, brnn_inputs(X3, merge=True),
                            [(F32, [3, 1, 2]), (F32, [1, 1]), (F32, [1, 1])])
    assert merged.reshape(3, 2).tolist() == [[1, 6], [2.5, 5], [4.25, 3]]
    assert fw.tolist() == [[4.25]] and bw.tolist() == [[6]]


def test_bidirectional_sequence_rnn_state_outputs_need_both():
    # unmerged with 3 outputs: 2 sequence outputs + only one state output
    with pytest.raises(NnapiError):
        run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, brnn_inputs(X3),
               [(F32, [3, 1, 1]), (F32, [3, 1, 1]), (F32, [1, 1])])


def test_unidirectional_sequence_lstm_state_outputs():
    # CIFG cell of lstm_cell_inputs, activation NONE: f = i = o = 0.5, g = x.
    # c1 = 0.5 * 0 + 0.5 * 2 = 1, h1 = 0.5; c2 = 0.5 * 1 + 0.5 * 4 = 2.5, h2 = 1.25
    x = np.array([[[2], [4]]], np.float32)
    seq, h, c = run_op(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, [
        (F32, [1, 2, 1], ("input", x)), *lstm_cell_inputs(F32, 1), (F32, [1, 1], [[0]]),
        (F32, [1, 1], [[0]]), *scalars(F32, T.FLOAT32), flag(False),
        *[(F32, [1], OMIT)] * 4], [(F32, [1, 2, 1]), (F32, [1, 1]), (F32, [1, 1])])
    assert seq.reshape(-1).tolist() == [0.5, 1.25]
    assert h.tolist() == [[1.25]] and c.tolist() == [[2.5]]


def test_bidirectional_sequence_lstm_state_outputs():
    # fw over t0, t1: c = 1 then 2.5, h = 1.25 (as above). bw over t1, t0:
    # c = 0.5 * 0 + 0.5 * 4 = 2, h = 1; c = 0.5 * 2 + 0.5 * 2 = 2, h = 1
    x = np.array([[[2]], [[4]]], np.float32)
    outs = run_op(Op.BIDIRECTIONAL_SEQUENCE_LSTM, bidirectional_lstm_inputs(x, merge=False),
                  [(F32, [2, 1, 1]), (F32, [2, 1, 1])] + [(F32, [1, 1])] * 4)
    assert [o.reshape(-1).tolist() for o in outs] == [[0.5, 1.25], [1, 1], [1.25], [2.5],
                                                      [1], [2]]


# --- feature level 4: EMBEDDING_LOOKUP float16 and quant8 signed ---------------------------

def test_embedding_lookup_float16_and_quant8_signed():
    # lookups [1, 1, 0] copy rows: [[3, 4], [3, 4], [1.5, 2]]
    (o,) = run_op(Op.EMBEDDING_LOOKUP, [(I32, [3], ("input", np.array([1, 1, 0], np.int32))),
                                        (F16, [2, 2], [[1.5, 2], [3, 4]])], [(F16, [3, 2])])
    assert o.dtype == np.float16 and o.tolist() == [[3, 4], [3, 4], [1.5, 2]]
    (o,) = run_op(Op.EMBEDDING_LOOKUP, [(I32, [1], ("input", np.array([1], np.int32))),
                                        (Q8S, [2, 2], [[1, 2], [-128, 7]], 0.5, -3)],
                  [(Q8S, [1, 2], 0.5, -3)])
    assert o.dtype == np.int8 and o.tolist() == [[-128, 7]]


def test_embedding_lookup_quant8_signed_output_keeps_values_quantization():
    with pytest.raises(NnapiError):
        run_op(Op.EMBEDDING_LOOKUP, [(I32, [1], ("input", np.array([1], np.int32))),
                                     (Q8S, [2, 2], [[1, 2], [-128, 7]], 0.5, -3)],
               [(Q8S, [1, 2], 0.5, 0)])


# --- QUANTIZED_LSTM (FL4) ----------------------------------------------------------------

def test_gemmlowp_int16_logistic_and_tanh_track_the_real_functions():
    # Every Q3.12 input (and Q4.11 for tanh): the 16-bit fixed-point results stay within
    # 16 quanta (2^-11) of numpy's logistic / tanh of the input's real value (gemmlowp's
    # int16 Newton-Raphson division is that coarse: up to about 12 quanta for tanh), and
    # keep the functions' symmetries exactly.
    raw = np.arange(-32768, 32768, dtype=np.int64)
    lg, th3, th4 = logistic16(raw, 3), tanh16(raw, 3), tanh16(raw, 4)
    np.testing.assert_allclose(lg / 32768, sigmoid(raw / 4096), atol=16 / 32768)
    np.testing.assert_allclose(th3 / 32768, np.tanh(raw / 4096), atol=16 / 32768)
    np.testing.assert_allclose(th4 / 32768, np.tanh(raw / 2048), atol=16 / 32768)
    inner = slice(1, None)  # -32768 has no int16 negation
    assert (th3[inner] == -th3[inner][::-1]).all()  # tanh(-x) = -tanh(x)
    # logistic(-x) = 1 - logistic(x), 1 being 32767 in Q0.15 (x = 0 gives 16384 twice)
    assert ((lg[inner] + lg[inner][::-1] == 32767) | (raw[inner] == 0)).all()
    # exact points: logistic(0) = 1/2 -> 16384, tanh(0) = 0
    assert logistic16(np.array([0]), 3).tolist() == [16384]
    assert tanh16(np.array([0]), 4).tolist() == [0]


def test_quantize_multiplier_hand_values():
    # m = q * 2^shift with q in [0.5, 1) as Q0.31: 0.5 = 0.5 * 2^0 -> (2^30, 0);
    # 3 = 0.75 * 2^2 -> (0.75 * 2^31 = 1610612736, 2); 2^-40 flushes to (0, 0)
    assert quantize_multiplier(0.5, "m") == (1 << 30, 0)
    assert quantize_multiplier(3.0, "m") == (1610612736, 2)
    assert quantize_multiplier(2.0 ** -40, "m") == (0, 0)


def qlstm_step(forget_bias=0, cell_bias=0, cifg=False, cell_raw=4096, bias12=None):
    """One QUANTIZED_LSTM step with 1 unit, all weights 0 (scale 2^-5), input scale 2^-7:
    bias scale 2^-7 * 2^-5 = 2^-12, so a gate bias b is the Q3.12 pre-activation b / 4096;
    no layer norm, intermediate scales 2^-12, cell state scale 2^-11 (cell_raw / 2048),
    hidden and output scale 2^-7, zero points 0."""
    w = (Q8SYMM, [1, 1], [[0]], 2 ** -5, 0)
    w_opt = (Q8SYMM, [1, 1], OMIT, 2 ** -5, 0) if cifg else w
    bias = lambda v: (I32, [1], [v], 2 ** -12, 0)  # noqa: E731
    b_in = (I32, [1], OMIT) if cifg and bias12 is None else bias(bias12 or 0)
    ins = [(Q8S, [1, 1], ("input", np.array([[5]], np.int8)), 2 ** -7, 0),
           w_opt, w, w, w, w_opt, w, w, w, *[(Q16, [1], OMIT, 1.0, 0)] * 3,
           b_in, bias(forget_bias), bias(cell_bias), bias(0),
           (Q8SYMM, [1, 1], OMIT, 2 ** -5, 0), (I32, [1], OMIT),
           (Q8S, [1, 1], [[0]], 2 ** -7, 0), (Q16, [1, 1], [[cell_raw]], 2 ** -11, 0),
           *[(Q16, [1], OMIT, 1.0, 0)] * 4, (T.FLOAT32, [], 0.0), (T.FLOAT32, [], 0.0),
           *[(T.FLOAT32, [], 2 ** -12)] * 4, i32(0), (T.FLOAT32, [], 2 ** -7)]
    return run_op(Op.QUANTIZED_LSTM, ins, [(Q8S, [1, 1], 2 ** -7, 0), (Q16, [1, 1], 2 ** -11, 0),
                                           (Q8S, [1, 1], 2 ** -7, 0)])


def test_quantized_lstm_zero_weights():
    # every gate pre-activation 0: f = i = o = logistic(0) = 16384 (exactly 1/2),
    # g = tanh(0) = 0. cell = (16384 * 4096) >> 15 = 2048 (1.0) exactly.
    # output = 0.5 * tanh(1.0) = 0.5 * 0.7615942 = 0.3807971 / 2^-7 = 48.74 -> 49
    state_out, cell, output = qlstm_step()
    assert cell.tolist() == [[2048]]
    assert output.tolist() == [[49]] and state_out.tolist() == [[49]]


def test_quantized_lstm_gate_bias_without_layer_norm():
    # forget bias 4096 -> f = sigmoid(1) = 0.7310586; i = 0.5, g = 0:
    # cell = 0.7310586 * 2.0 = 1.4621172 -> 2994.42 raw (within 1: fixed-point sigmoid);
    # output = 0.5 * tanh(1.4621172) = 0.5 * 0.8982 = 0.4491 -> 57.49 raw (within 1)
    _, cell, output = qlstm_step(forget_bias=4096)
    c = sigmoid(1.0) * 2.0
    assert abs(int(cell[0, 0]) - c * 2048) <= 1
    assert abs(int(output[0, 0]) - 0.5 * np.tanh(c) * 128) <= 1


def test_quantized_lstm_cifg():
    # CIFG: i = 1 - f. forget bias 4096 -> f = 0.7310586, i = 0.2689414; cell bias 2048
    # -> g = tanh(0.5) = 0.4621172. cell = 0.7310586 * 2 + 0.2689414 * 0.4621172
    # = 1.5864 -> 3249.0 raw (within 1); without CIFG (i = 0.5) it would be 3467.
    _, cell, _ = qlstm_step(forget_bias=4096, cell_bias=2048, cifg=True)
    c = sigmoid(1.0) * 2 + (1 - sigmoid(1.0)) * np.tanh(0.5)
    assert abs(int(cell[0, 0]) - c * 2048) <= 1


def test_quantized_lstm_rejects_input_gate_bias_with_cifg():
    with pytest.raises(NnapiError):
        qlstm_step(cifg=True, bias12=7)
