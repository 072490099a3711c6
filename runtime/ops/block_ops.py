"""The block operations of the shape family: DEPTH_TO_SPACE (5), SPACE_TO_DEPTH (26) (FL1),
BATCH_TO_SPACE_ND (29), SPACE_TO_BATCH_ND (33) (FL2), each with its FL3 NCHW layout flag and
TENSOR_FLOAT16 form and its FL4 TENSOR_QUANT8_ASYMM_SIGNED twin. Types, shapes, quantization
and errors as the rest of the family (:mod:`.shape_ops`, whose shared pieces these rows use).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..types import OperationType
from .base import OpContext, check, scalar, tensor
from .common import from_nhwc, int_vector, layout_dims, layout_flag, nhwc_dims, to_nhwc
from .error_inputs import PREPARE, changed
# the family's shared pieces (signatures, registration, quantization and parameter rules)
from .shape_ops import (I32, T, _draft_nchw, _draft_zero_point_0, _pad_value, _paddings, _rank,
                        _reg, _same_quant, _sigs)


def _block_size(ctx: OpContext) -> int:
    """INT32 block_size of DEPTH_TO_SPACE / SPACE_TO_DEPTH (input 1), must be >= 1."""
    b = ctx.scalar(1)
    check(b >= 1, f"input 1 (block_size) must be >= 1, got {b}")
    return b


def _block_shape(ctx: OpContext) -> list[int]:
    """block_shape of BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND (input 1): a 1-D TENSOR_INT32
    with one value >= 1 per spatial dimension (2 for NHWC input)."""
    block = int_vector(ctx, 1, "block_shape", 2)
    check(min(block) >= 1, f"input 1 (block_shape) values must be >= 1, got {block}")
    return block


def _draft_nhwc(d, nhwc: Sequence[int]) -> None:
    """Give input 0 the NHWC dimensions ``nhwc`` in the draft's layout (drops a link)."""
    d.tensor(0, layout_dims(tuple(nhwc), _draft_nchw(d)))


# --- DEPTH_TO_SPACE, SPACE_TO_DEPTH (FL1; NCHW flag FL3) ------------------------------------

def _layout_index(ctx: OpContext) -> int:
    """Index of the optional BOOL layout input of a block operation: right after its fixed
    inputs (DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND: 2; SPACE_TO_BATCH_ND: 3)."""
    return 3 if ctx.operation == OperationType.SPACE_TO_BATCH_ND else 2


def _nhwc_input(ctx: OpContext) -> tuple[tuple[int, ...], bool]:
    """(input 0's dims as (N, H, W, C), nchw flag): input 0 must be 4-D."""
    _rank(ctx, (4,))
    nchw = layout_flag(ctx, _layout_index(ctx))
    return nhwc_dims(ctx.inputs[0].dims, nchw), nchw


def _nhwc_kernel(kernel):
    """An execute running ``kernel(ctx, x_nhwc) -> y_nhwc`` on input 0 in NHWC and giving
    the result back in the operand's layout (NCHW flag, FL3)."""
    def execute(ctx: OpContext) -> list[np.ndarray]:
        nchw = layout_flag(ctx, _layout_index(ctx))
        return [from_nhwc(kernel(ctx, to_nhwc(ctx.value(0), nchw)), nchw)]
    return execute


def _d2s_prepare(ctx: OpContext):
    """[N, H, W, C] -> [N, H*b, W*b, C/(b*b)] (NHWC; NCHW alike); C must be divisible by b*b."""
    _same_quant(ctx)
    (n, h, w, c), nchw = _nhwc_input(ctx)
    b = _block_size(ctx)
    check(c % (b * b) == 0, f"input 0 depth {c} must be divisible by block_size^2 = {b * b}")
    return [layout_dims((n, h * b, w * b, c // (b * b)), nchw)]


def _d2s(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j) * C_out + c]."""
    b = ctx.scalar(1)
    n, h, w, c = x.shape
    y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h * b, w * b, c // (b * b))


def _s2d_prepare(ctx: OpContext):
    """[N, H, W, C] -> [N, H/b, W/b, C*b*b] (NHWC; NCHW alike); H and W must be divisible
    by b."""
    _same_quant(ctx)
    (n, h, w, c), nchw = _nhwc_input(ctx)
    b = _block_size(ctx)
    check(h % b == 0 and w % b == 0,
          f"input 0 height {h} and width {w} must be divisible by block_size {b}")
    return [layout_dims((n, h // b, w // b, c * b * b), nchw)]


def _s2d(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """Inverse of DEPTH_TO_SPACE: out[n, h, w, (i*b + j) * C + c] = in[n, h*b + i, w*b + j, c]."""
    b = ctx.scalar(1)
    n, h, w, c = x.shape
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h // b, w // b, b * b * c)


def _generate_d2s(d) -> None:
    """block_size 1-4 whose square divides the depth: kept from input 0 when one >= 2
    does, else input 0 redrawn with depth a multiple of block_size^2 (NNAPI DEPTH_TO_SPACE)."""
    n, h, w, c = nhwc_dims(d.dims0, _draft_nchw(d))
    fits = [b for b in (2, 3, 4) if c % (b * b) == 0]
    if d.primary is not None and fits:
        b = d.choice(fits)
    else:
        b = d.choice((1, 2, 2, 2, 3, 4))
        n, h, w, c = d.shape(4, budget=max(1, d.max_elements // (b * b)))
        _draft_nhwc(d, (n, h, w, c * b * b))
    d.param("block_size", b)


def _generate_s2d(d) -> None:
    """block_size 1-4 dividing height and width: kept from input 0 when one >= 2 does,
    else input 0 redrawn with height and width multiples of it (NNAPI SPACE_TO_DEPTH)."""
    n, h, w, c = nhwc_dims(d.dims0, _draft_nchw(d))
    fits = [b for b in (2, 3, 4) if h % b == 0 and w % b == 0]
    if d.primary is not None and fits:
        b = d.choice(fits)
    else:
        b = d.choice((1, 2, 2, 2, 3, 4))
        n, h, w, c = d.shape(4, budget=max(1, d.max_elements // (b * b)))
        _draft_nhwc(d, (n, h * b, w * b, c))
    d.param("block_size", b)


def _block_error_inputs(op: OperationType):
    """block_size one more than the height (SPACE_TO_DEPTH: it must divide height and
    width) or the depth (DEPTH_TO_SPACE: its square must divide the depth); AOSP checks both
    in its prepare (``spaceToDepthPrepare``, ``depthToSpacePrepare``)."""
    def hook(inputs, outputs):
        if inputs[0].rank != 4 or inputs[1].value is None:
            return
        _, h, _, c = nhwc_dims(inputs[0].dims, layout_flag(OpContext(op, inputs, outputs), 2))
        space = op == OperationType.SPACE_TO_DEPTH
        yield changed(inputs, outputs, "input 1", "must be divisible by block_size",
                      f"{op.name} block_size must divide the input "
                      f"{'height and width' if space else 'depth (squared)'} (NNAPI types.spec)",
                      PREPARE, value=(h if space else c) + 1)
    return hook


_BLOCK = [scalar("block_size", T.INT32)]
_reg(OperationType.DEPTH_TO_SPACE, _sigs(1, _BLOCK, (4,), layout=True), _d2s_prepare,
     _nhwc_kernel(_d2s), "move depth blocks of block_size^2 into spatial blocks (NHWC or NCHW)",
     aosp_source="CpuExecutor.cpp", generate=_generate_d2s,
     error_inputs=_block_error_inputs(OperationType.DEPTH_TO_SPACE))
_reg(OperationType.SPACE_TO_DEPTH, _sigs(1, _BLOCK, (4,), layout=True), _s2d_prepare,
     _nhwc_kernel(_s2d), "move spatial blocks of block_size x block_size into depth (NHWC or NCHW)",
     aosp_source="CpuExecutor.cpp", generate=_generate_s2d,
     error_inputs=_block_error_inputs(OperationType.SPACE_TO_DEPTH))


# --- BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND (FL2; NCHW flag FL3) -------------------------------

def _b2s_prepare(ctx: OpContext):
    """[N, H, W, C] -> [N/(b0*b1), H*b0, W*b1, C] (NHWC; NCHW alike); N must be divisible
    by b0*b1."""
    _same_quant(ctx)
    (n, h, w, c), nchw = _nhwc_input(ctx)
    b0, b1 = _block_shape(ctx)
    check(n % (b0 * b1) == 0,
          f"input 0 batches {n} must be divisible by block_shape product {b0 * b1}")
    return [layout_dims((n // (b0 * b1), h * b0, w * b1, c), nchw)]


def _b2s(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """out[n, h*b0 + i, w*b1 + j, c] = in[(i*b1 + j) * N_out + n, h, w, c]."""
    b0, b1 = int_vector(ctx, 1, "block_shape")
    n, h, w, c = x.shape
    y = x.reshape(b0, b1, n // (b0 * b1), h, w, c).transpose(2, 3, 0, 4, 1, 5)
    return y.reshape(n // (b0 * b1), h * b0, w * b1, c)


def _s2b_prepare(ctx: OpContext):
    """[N, H, W, C] -> [N*b0*b1, Hp/b0, Wp/b1, C] (NHWC; NCHW alike) where Hp, Wp are H, W
    plus the paddings (input 2, [2, 2], >= 0); Hp and Wp must be divisible by the block
    shape."""
    _same_quant(ctx)
    (n, h, w, c), nchw = _nhwc_input(ctx)
    b0, b1 = _block_shape(ctx)
    p = _paddings(ctx, 2, 2)
    hp, wp = h + int(p[0].sum()), w + int(p[1].sum())
    check(hp % b0 == 0 and wp % b1 == 0,
          f"padded height {hp} and width {wp} must be divisible by block_shape [{b0}, {b1}]")
    return [layout_dims((n * b0 * b1, hp // b0, wp // b1, c), nchw)]


def _s2b(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    """Pad H and W with logical zero (0, or the zeroPoint of a quantized input: FL3 rule),
    then out[(i*b1 + j) * N + n, h, w, c] = padded[n, h*b0 + i, w*b1 + j, c]."""
    b0, b1 = int_vector(ctx, 1, "block_shape")
    p = ctx.value(2).astype(np.int64)
    x = np.pad(x, [(0, 0), tuple(p[0]), tuple(p[1]), (0, 0)],
               constant_values=_pad_value(ctx.inputs[0]))
    n, h, w, c = x.shape
    y = x.reshape(n, h // b0, b0, w // b1, b1, c).transpose(2, 4, 0, 1, 3, 5)
    return y.reshape(n * b0 * b1, h // b0, w // b1, c)


def _generate_b2s(d) -> None:
    """block_shape [b0, b1] (1-3 each, not both 1) whose product divides the batch: kept
    from input 0 when one does, else input 0 redrawn with a batch multiple of b0 * b1."""
    n, h, w, c = nhwc_dims(d.dims0, _draft_nchw(d))
    pairs = [(b0, b1) for b0 in (1, 2, 3) for b1 in (1, 2, 3) if b0 * b1 > 1]
    fits = [p for p in pairs if n % (p[0] * p[1]) == 0]
    if d.primary is not None and fits:
        b0, b1 = d.choice(fits)
    else:
        b0, b1 = d.choice(pairs)
        n, h, w, c = d.shape(4, budget=max(1, d.max_elements // (b0 * b1)))
        _draft_nhwc(d, (n * b0 * b1, h, w, c))
    d.param("block_shape", [b0, b1], [2])


def _generate_s2b(d) -> None:
    """block_shape [b0, b1] (1-3 each) and [2, 2] paddings (>= 0) making the padded height
    and width multiples of it; input 0 kept. TENSOR_QUANT8_ASYMM: sometimes zeroPoint 0."""
    n, h, w, c = nhwc_dims(d.dims0, _draft_nchw(d))
    b = [d.choice((1, 2, 2, 3)), d.choice((1, 2, 2, 3))]
    p = []
    for size, bk in zip((h, w), b):
        before = d.integer(0, 2)
        p.append([before, (-(size + before)) % bk + bk * d.integer(0, 1 if bk < 3 else 0)])
    d.param("block_shape", b, [2])
    d.param("paddings", p, [2, 2])
    _draft_zero_point_0(d)


_reg(OperationType.BATCH_TO_SPACE_ND,
     _sigs(2, [tensor("block_shape", I32, (1,))], (4,), layout=True),
     _b2s_prepare, _nhwc_kernel(_b2s), "move batch blocks back into the spatial grid (NHWC or NCHW)",
     aosp_source="CpuExecutor.cpp", generate=_generate_b2s)
_reg(OperationType.SPACE_TO_BATCH_ND,
     _sigs(2, [tensor("block_shape", I32, (1,)), tensor("paddings", I32, (2,))], (4,),
           layout=True),
     _s2b_prepare, _nhwc_kernel(_s2b),
     "pad with logical zero, then move spatial blocks into batch (NHWC or NCHW)", aosp_source="CpuExecutor.cpp",
     generate=_generate_s2b)
