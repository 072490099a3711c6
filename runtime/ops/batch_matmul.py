"""BATCH_MATMUL (102, feature level 6): the matrix product of every pair of slices of two
tensors, each slice optionally adjointed (transposed) first.

Shapes. Input 0 (LHS) [..., r_x, c_x] and input 1 (RHS) [..., r_y, c_y], both of rank 2 to
4, of the same rank and the same batch dimensions (every dimension but the last two).
Output [..., r_o, c_o] with ``r_o = c_x if adj_x else r_x`` and ``c_o = r_y if adj_y else
c_y``; ``output[b] = op_x(lhs[b]) @ op_y(rhs[b])``, ``op(m)`` being ``m`` or its transpose
(the adjoint: the types are real).

Inputs: 0 LHS, 1 RHS, 2 adj_x (BOOL), 3 adj_y (BOOL). The spec calls inputs 2 and 3
optional with default false; AOSP ``batch_matmul_op::validate`` requires all four inputs,
so the reference declares the 4-input form only, and also accepts an omitted (no value)
flag as false.

Types (LHS, RHS and output the same), all FL6: TENSOR_FLOAT32, TENSOR_FLOAT16,
TENSOR_INT32, TENSOR_QUANT8_ASYMM_SIGNED (any scale and zeroPoint per operand; the spec sets
no rule between them).

Errors (OperationError, naming the input): LHS rank outside 2-4; RHS rank != LHS rank;
a batch dimension differing between LHS and RHS; a row or column count 0 (AOSP
``canMatrixMul``); the contracted sizes (``c_x`` or ``r_x`` with adj_x against ``r_y`` or
``c_y`` with adj_y) differing; past the work bound (``conv.MAX_MACS`` multiply-adds).

Sources: NNAPI ``NeuralNetworksTypes.h`` / ``types.spec`` (BATCH_MATMUL = 102, FL6: types,
ranks, output shape), AOSP ``common/types/operations/src/BatchMatmul.cpp`` (``validate``:
4 inputs, equal input types, BOOL flags, output type) and ``common/cpu_operations/
BatchMatmul.cpp`` (``prepare``: equal ranks, rank 2-4, non-zero rows/columns, output
dims). Departure from AOSP: AOSP does not compare the batch dimensions (its TFLite kernel
would broadcast size-1 batch dimensions and takes the output's batch dimensions from
LHS); the reference follows the spec ("the same batch size") and rejects them.

Arithmetic. TENSOR_FLOAT32 / TENSOR_FLOAT16: float64 products and sums, one rounding to
the output type (the TENSOR_FLOAT16 policy of ``common``; AOSP computes float16 in
float16, within the fp16 criteria). TENSOR_QUANT8_ASYMM_SIGNED: real (dequantized) values
in float64, requantized once with ``common.from_float`` (round half away from zero,
saturate to [-128, 127]); AOSP's kernel uses a fixed-point output multiplier, within 1
quantum. TENSOR_INT32: exact integer products accumulated in int64 and wrapped to int32
(two's complement), the result of AOSP's int32 accumulation when it overflows.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import from_float, to_float
from .error_inputs import PREPARE, grown
from .window import (GEN_MACS, GEN_MIN_OUTPUT, GEN_OUTPUT_ELEMENTS, check_work, draft_count,
                     draft_linked, draft_quantization, draft_rms, draft_weights)

T = OperandType
RANKS_2_4 = (2, 3, 4)

SIGNATURES = tuple(
    sig(6, [tensor("lhs", t, RANKS_2_4), tensor("rhs", t, RANKS_2_4),
            scalar("adj_x", T.BOOL, optional=True), scalar("adj_y", T.BOOL, optional=True)],
        [tensor("output", t, RANKS_2_4)])
    for t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM_SIGNED))


def _flag(ctx: OpContext, index: int) -> bool:
    """BOOL input ``index`` (adj_x or adj_y); False when omitted."""
    if ctx.inputs[index].omitted or ctx.inputs[index].value is None:
        return False
    return bool(ctx.scalar(index))


def _params(ctx: OpContext) -> tuple[bool, bool, tuple[int, ...], int]:
    """Check the shapes (rules in the module docstring); returns (adj_x, adj_y, output
    dims, contracted size). Raises OperationError."""
    lhs, rhs = ctx.inputs[:2]
    check(2 <= lhs.rank <= 4, f"input 0 (lhs) {list(lhs.dims)} must have rank 2 to 4")
    check(rhs.rank == lhs.rank,
          f"input 1 (rhs) {list(rhs.dims)} must have the rank of input 0 (lhs) {list(lhs.dims)}")
    check(tuple(lhs.dims[:-2]) == tuple(rhs.dims[:-2]),
          f"input 1 (rhs) {list(rhs.dims)} must have the batch dimensions of input 0 (lhs) "
          f"{list(lhs.dims)}")
    adj_x, adj_y = _flag(ctx, 2), _flag(ctx, 3)
    r_x, c_x = lhs.dims[-2:]
    r_y, c_y = rhs.dims[-2:]
    check(min(r_x, c_x, r_y, c_y) > 0,
          f"inputs 0 (lhs) {list(lhs.dims)} and 1 (rhs) {list(rhs.dims)}: rows and columns "
          f"must be > 0")
    k_x, k_y = (r_x if adj_x else c_x), (c_y if adj_y else r_y)
    check(k_x == k_y,
          f"input 0 (lhs) {list(lhs.dims)} with adj_x {adj_x} has {k_x} columns but input 1 "
          f"(rhs) {list(rhs.dims)} with adj_y {adj_y} has {k_y} rows")
    out = (*lhs.dims[:-2], c_x if adj_x else r_x, r_y if adj_y else c_y)
    return adj_x, adj_y, out, k_x


def prepare(ctx: OpContext):
    """Output dims [..., r_o, c_o] (module docstring). Raises OperationError."""
    return [_params(ctx)[2]]


def execute(ctx: OpContext):
    """``op_x(lhs) @ op_y(rhs)`` per batch slice, stored in the output type (module
    docstring for the arithmetic of each type). Raises OperationError past the work
    bound."""
    adj_x, adj_y, out_dims, k = _params(ctx)
    check_work(int(np.prod(out_dims, dtype=np.int64)) * k)
    lhs, rhs = ctx.inputs[:2]
    if lhs.type == T.TENSOR_INT32:
        x, y = ctx.value(0).astype(np.int64), ctx.value(1).astype(np.int64)
    else:
        x, y = to_float(lhs), to_float(rhs)
    if adj_x:
        x = np.swapaxes(x, -1, -2)
    if adj_y:
        y = np.swapaxes(y, -1, -2)
    res = np.matmul(x, y)
    if lhs.type == T.TENSOR_INT32:
        return [res.astype(np.int32)]  # wraps modulo 2^32, as int32 accumulation does
    return [from_float(ctx.outputs[0], res)]


def _generate(d) -> None:
    """RHS of LHS's rank and batch dimensions, its contracted side (by adj_y) equal to
    LHS's (by adj_x) (AOSP ``prepare``); float and quantized RHS scaled so each dot product
    spreads 0.5-3 (``conv.draft_weights``)."""
    adj_x, adj_y = bool(d.slot("adj_x").value), bool(d.slot("adj_y").value)
    if not draft_linked(d):
        rank = len(d.slots[0].dims)
        batch = d.shape(rank - 2, budget=8)
        m = d.dim(1, 32)
        k = d.dim(1, 16 if d.slots[0].type == T.TENSOR_FLOAT16 else 64)
        d.tensor(0, [*batch, *((k, m) if adj_x else (m, k))])
    lhs = d.slots[0].dims
    batch = lhs[:-2]
    m, k = (lhs[-1], lhs[-2]) if adj_x else (lhs[-2], lhs[-1])
    rows = int(np.prod(batch, dtype=np.int64)) * m
    cap = max(1, min(GEN_OUTPUT_ELEMENTS // rows, GEN_MACS // (rows * k)))
    want = -(-GEN_MIN_OUTPUT // rows)
    n = draft_count(d, cap, max(32, want), want)
    d.tensor(1, [*batch, *((n, k) if adj_y else (k, n))])
    if d.slots[0].type != T.TENSOR_INT32:
        spread = float(np.exp(d.uniform(np.log(0.5), np.log(3.0))))
        draft_quantization(d, None, spread, 0.0, rows * n)
        draft_weights(d, 1, k, draft_rms(d, 0), spread)


def _error_inputs(inputs, outputs):
    """rhs one longer on its contracted dimension (rows, columns with adj_y): the inner
    dimensions no longer agree (NNAPI types.spec BATCH_MATMUL; AOSP ``batch_matmul::prepare``)."""
    adj_y = len(inputs) > 3 and not inputs[3].omitted and inputs[3].value is not None and bool(inputs[3].value)
    yield from grown(1, -1 if adj_y else -2, "columns but input 1",
                     "BATCH_MATMUL lhs columns equal rhs rows, after the adjoints "
                     "(NNAPI types.spec)", PREPARE)(inputs, outputs)


register(OperationDef(OperationType.BATCH_MATMUL, SIGNATURES, prepare, execute,
                      generate=_generate, error_inputs=_error_inputs,
                      summary="matrix product of each batch slice, optionally adjointing "
                              "either operand", aosp_source="BatchMatmulExecution.cpp",
                      weight_slots=("rhs",), error_budget=budgets.batch_matmul()))
