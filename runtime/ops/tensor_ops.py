"""Tensor-building and data-movement operations of feature levels 4-7: FILL, RANK (FL4),
PACK (FL6), MIRROR_PAD and REVERSE (FL7).

FILL (100), FL4
    input 0: 1-D TENSOR_INT32 of k >= 1 values >= 0, the output shape; input 1: the fill
    value, a FLOAT16 scalar for a TENSOR_FLOAT16 output, FLOAT32 for TENSOR_FLOAT32, INT32
    for TENSOR_INT32. output 0: rank k (any k >= 1), every element the value.
    AOSP's kernel reads negative sizes as huge unsigned ones; the reference rejects them.
RANK (101), FL4
    input 0: a tensor of rank >= 1 of any of TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32,
    TENSOR_QUANT8_ASYMM, TENSOR_QUANT16_SYMM, TENSOR_BOOL8, TENSOR_QUANT8_SYMM_PER_CHANNEL,
    TENSOR_QUANT16_ASYMM, TENSOR_QUANT8_SYMM, TENSOR_QUANT8_ASYMM_SIGNED. output 0: an INT32
    scalar, the input's number of dimensions (the values are never read).
PACK (103), FL6
    input 0: INT32 axis in [0, R + 1) (negative values are not accepted); inputs 1..N
    (N >= 1): tensors of rank R >= 1, all of one type (TENSOR_FLOAT16, TENSOR_FLOAT32,
    TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_INT32) and identical dimensions.
    output 0: rank R + 1, dims[:axis] + [N] + dims[axis:]; output[..., i, ...] (i on the
    axis) = input i + 1. Quantized inputs and the output share one scale and zeroPoint.
    The operation's variadic slot is input 1 (``OperationDef.variadic_index``).
MIRROR_PAD (104), FL7
    input 0: tensor of rank n >= 1 (TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM,
    TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_INT32); input 1: [n, 2] TENSOR_INT32 paddings
    (before, after) per dimension, each >= 0 and < dims[i] for REFLECT, <= dims[i] for
    SYMMETRIC; input 2: INT32 mode, 0 = REFLECT (the border element is not repeated),
    1 = SYMMETRIC (it is). output 0: dims[i] + before[i] + after[i], input 0's type,
    scale and zeroPoint. [1, 2, 3] padded [0, 2]: REFLECT [1, 2, 3, 2, 1], SYMMETRIC
    [1, 2, 3, 3, 2] (NNAPI's example).
REVERSE (105), FL7
    input 0: tensor of rank n in 1..8 (TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM,
    TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_INT32); input 1: TENSOR_INT32 of shape [1], the
    axis in [0, n) (negative values are not accepted). output 0: input 0 reversed along
    the axis, same shape, type, scale and zeroPoint.

Every operation here moves raw values (no requantization).

Errors (OperationError, i.e. GENERAL_FAILURE, naming the input and the rule): FILL shape
input not 1-D, empty or with a negative value; a rank-0 input of RANK, PACK, MIRROR_PAD;
PACK inputs of different dimensions or rank, axis out of range; MIRROR_PAD paddings of the
wrong shape or out of range, a mode other than 0 or 1; REVERSE rank outside 1..8, an axis
tensor not holding exactly one value, axis out of range. At model time (``validate``): a
quantized output (PACK, MIRROR_PAD, REVERSE) or PACK input whose scale/zeroPoint differ
from input 0's (PACK: the output's); known ranks that contradict each other (PACK inputs
vs output rank - 1; MIRROR_PAD paddings rows vs input rank; input vs output rank).

Sources: NNAPI ``NeuralNetworksTypes.h`` (types.spec) FILL, RANK, PACK, MIRROR_PAD,
REVERSE; type and level rules of AOSP ``common/types/operations/src/{Fill,Rank,Pack,
MirrorPad,Reverse}.cpp`` (``validate`` returns kVersionFeatureLevel4, 4, 6, 7, 7); shape
and parameter rules of the ``prepare`` functions in ``common/cpu_operations/`` of the same
names. The reference matches AOSP's kernels except where noted above (FILL negative sizes).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType, is_quantized_type
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import check_same_quant, int_vector, is_quant, value_dtype

T = OperandType
I32 = T.TENSOR_INT32
#: Data types of PACK, MIRROR_PAD and REVERSE (types.spec).
MOVE_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM,
              T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)
FILL_LEVEL, RANK_LEVEL, PACK_LEVEL, MIRROR_PAD_LEVEL, REVERSE_LEVEL = 4, 4, 6, 7, 7
#: MIRROR_PAD modes (input 2).
REFLECT, SYMMETRIC = 0, 1


def _rank_at_least_1(ctx: OpContext, index: int = 0) -> int:
    """Rank of input ``index``, which must be >= 1. Raises OperationError."""
    r = ctx.inputs[index].rank
    check(r >= 1, f"input {index} has rank {r}, {ctx.operation.name} needs rank 1 or more")
    return r


def _same_quant(ctx: OpContext) -> None:
    """validate: a quantized output keeps input 0's scale and zeroPoint, and a known input
    rank equals a known output rank (MIRROR_PAD, REVERSE)."""
    inp, out = ctx.inputs[0], ctx.outputs[0]
    check_same_quant(inp, out, ctx.operation.name)
    check(not inp.rank or not out.rank or inp.rank == out.rank,
          f"output 0 has rank {out.rank}, input 0 has rank {inp.rank}; they must be equal")


# --- FILL (FL4) -----------------------------------------------------------------------------

#: Value scalar type per output type (NNAPI FILL input 1).
_FILL_VALUE_TYPE = {T.TENSOR_FLOAT16: T.FLOAT16, T.TENSOR_FLOAT32: T.FLOAT32, I32: T.INT32}


def _fill_prepare(ctx: OpContext):
    """Output shape = the values of input 0 (1-D TENSOR_INT32, >= 1 values, each >= 0)."""
    shape = int_vector(ctx, 0, "dims")
    check(len(shape) >= 1, "input 0 (dims) must hold at least 1 value (output rank >= 1)")
    check(min(shape) >= 0, f"input 0 (dims) values must be >= 0, got {shape}")
    return [tuple(shape)]


def _fill_execute(ctx: OpContext):
    """Every element the value of input 1, in the output's type."""
    shape = _fill_prepare(ctx)[0]
    return [np.full(shape, ctx.scalar(1), dtype=value_dtype(ctx.outputs[0].type))]


def _generate_fill(d) -> None:
    """dims a constant shape of rank 1-4 (values >= 1, at most max_elements elements; a
    linked input 0 is dropped, its values need not be a shape); the value a float in
    [-2, 2] or an INT32 in [-10, 10]."""
    shape = d.shape(d.integer(1, 4))
    d.param("dims", shape, [len(shape)])
    d.param("value", d.integer(-10, 10) if d.slot("value").type == T.INT32 else d.uniform(-2.0, 2.0))


register(OperationDef(
    OperationType.FILL,
    tuple(sig(FILL_LEVEL, [tensor("dims", I32, (1,)), scalar("value", v)],
              [tensor("output", t, None)]) for t, v in _FILL_VALUE_TYPE.items()),
    _fill_prepare, _fill_execute, error_budget=budgets.exact("a float scalar filled in"),
    summary="tensor of a given shape filled with a scalar value", aosp_source="FillExecution.cpp",
    generate=_generate_fill))


# --- RANK (FL4) -----------------------------------------------------------------------------

#: Input types of RANK (types.spec, AOSP Rank.cpp).
RANK_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
              T.TENSOR_QUANT16_SYMM, T.TENSOR_BOOL8, T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
              T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def _rank_prepare(ctx: OpContext):
    """A scalar output (shape ()); input 0 must have rank >= 1."""
    _rank_at_least_1(ctx)
    return [()]


def _rank_execute(ctx: OpContext):
    return [np.array(_rank_at_least_1(ctx), dtype=np.int32)]


register(OperationDef(
    OperationType.RANK,
    tuple(sig(RANK_LEVEL, [tensor("input", t, None)], [scalar("rank", T.INT32)])
          for t in RANK_TYPES),
    _rank_prepare, _rank_execute, summary="number of dimensions of a tensor (INT32 scalar)",
    aosp_source="RankExecution.cpp",
    # dynamic shapes: the output is an INT32 scalar, it has no dimensions to leave unknown
    dynamic_shape_excluded=True))


# --- PACK (FL6) -----------------------------------------------------------------------------

def _pack_validate(ctx: OpContext) -> None:
    """Quantized inputs have the output's scale and zeroPoint; known input ranks agree
    with each other and with the output's rank - 1 (AOSP ``pack_op::validate``)."""
    out = ctx.outputs[0]
    want = out.rank - 1 if out.rank else 0
    for i in range(1, len(ctx.inputs)):
        inp = ctx.inputs[i]
        if is_quant(out):
            check(np.float32(inp.scale) == np.float32(out.scale)
                  and inp.zero_point == out.zero_point,
                  f"input {i} scale {inp.scale} and zeroPoint {inp.zero_point} must equal the "
                  f"output's scale {out.scale} and zeroPoint {out.zero_point}")
        if inp.rank:
            check(not want or inp.rank == want,
                  f"input {i} has rank {inp.rank}, expected {want} "
                  f"({'output rank - 1' if out.rank else 'the rank of an earlier input'})")
            want = inp.rank


def _pack_prepare(ctx: OpContext):
    """dims[:axis] + [N] + dims[axis:]: inputs 1..N of identical dims (rank R >= 1),
    axis (input 0) in [0, R + 1)."""
    _pack_validate(ctx)
    rank = _rank_at_least_1(ctx, 1)
    dims = ctx.inputs[1].dims
    for i in range(2, len(ctx.inputs)):
        check(ctx.inputs[i].dims == dims,
              f"input {i} dimensions {list(ctx.inputs[i].dims)} differ from input 1's {list(dims)}")
    axis = ctx.scalar(0)
    check(0 <= axis <= rank, f"input 0 (axis) value {axis} is out of range [0, {rank + 1})")
    return [(*dims[:axis], len(ctx.inputs) - 1, *dims[axis:])]


def _pack_execute(ctx: OpContext):
    _pack_prepare(ctx)
    return [np.stack([ctx.value(i) for i in range(1, len(ctx.inputs))], axis=ctx.scalar(0))]


def _generate_pack(d) -> None:
    """Axis in [0, R] (AOSP refuses negative ones); every input with input 1's dims and,
    quantized, its scale and zeroPoint, which the output keeps (NNAPI PACK)."""
    d.param("axis", d.integer(0, len(d[1].dims)))
    if is_quantized_type(d[1].type):
        q = (d[1].scale, d[1].zero_point)
        for s in d.slots[2:]:
            s.scale, s.zero_point = q
        d.out_quant[0] = q


register(OperationDef(
    OperationType.PACK,
    tuple(sig(PACK_LEVEL, [scalar("axis", T.INT32), tensor("input1..n", t, None)],
              [tensor("output", t, None)]) for t in MOVE_TYPES),
    _pack_prepare, _pack_execute, validate=_pack_validate, error_budget=budgets.exact(),
    summary="stack n >= 1 tensors of equal shape along a new axis",
    variadic=True, variadic_index=1, nonnegative_axis=True, aosp_source="PackExecution.cpp",
    generate=_generate_pack))


# --- MIRROR_PAD (FL7) -----------------------------------------------------------------------

def _mirror_pad_validate(ctx: OpContext) -> None:
    """Same quantization and rank as input 0; a known paddings row count equals a known
    input rank (AOSP ``mirror_pad_op::validate``)."""
    _same_quant(ctx)
    inp, pad = ctx.inputs[0], ctx.inputs[1]
    if inp.rank and pad.rank == 2:
        check(pad.dims[0] in (0, inp.rank) and pad.dims[1] in (0, 2),
              f"input 1 (paddings) has shape {list(pad.dims)}, expected [{inp.rank}, 2]")


def _mirror_pad_params(ctx: OpContext) -> tuple[np.ndarray, int]:
    """(paddings [n, 2] int64, mode) after the checks of AOSP ``mirror_pad_op::prepare``."""
    _mirror_pad_validate(ctx)
    rank = _rank_at_least_1(ctx)
    mode = ctx.scalar(2)
    check(mode in (REFLECT, SYMMETRIC),
          f"input 2 (mode) value {mode} is not 0 (REFLECT) or 1 (SYMMETRIC)")
    p = ctx.value(1)
    check(p.shape == (rank, 2),
          f"input 1 (paddings) must have shape [{rank}, 2], got {list(p.shape)}")
    p = p.astype(np.int64)
    for i, d in enumerate(ctx.inputs[0].dims):
        limit = d - (mode == REFLECT)
        before, after = int(p[i, 0]), int(p[i, 1])
        check(0 <= before <= limit and 0 <= after <= limit,
              f"input 1 (paddings) row {i} ({before}, {after}) is out of range [0, {limit}] "
              f"(dimension {i} of input 0 is {d}, mode "
              f"{'REFLECT: < dimension' if mode == REFLECT else 'SYMMETRIC: <= dimension'})")
    return p, mode


def _mirror_pad_prepare(ctx: OpContext):
    """output.dims[i] = before[i] + input.dims[i] + after[i]."""
    p, _ = _mirror_pad_params(ctx)
    return [tuple(int(d + a + b) for d, (a, b) in zip(ctx.inputs[0].dims, p))]


def _mirror_pad_execute(ctx: OpContext):
    """numpy ``reflect`` (REFLECT) or ``symmetric`` (SYMMETRIC) padding, which are NNAPI's
    two modes when every padding is within the limits checked above."""
    p, mode = _mirror_pad_params(ctx)
    x = ctx.value(0)
    if not p.any():
        return [np.array(x)]
    return [np.pad(x, [tuple(r) for r in p], mode="reflect" if mode == REFLECT else "symmetric")]


def _generate_mirror_pad(d) -> None:
    """[n, 2] paddings in [0, min(3, limit)] with limit dims[i] - 1 for REFLECT, dims[i]
    for SYMMETRIC (NNAPI MIRROR_PAD), trimmed to keep the output at most 2 * max_elements."""
    dims = d.dims0
    reflect = int(d.slot("mode").value) == REFLECT
    p = np.array([[d.integer(0, min(3, x - reflect)) for _ in range(2)] for x in dims], np.int64)
    while int(np.prod([x + a + b for x, (a, b) in zip(dims, p)])) > 2 * d.max_elements and p.any():
        p[np.unravel_index(int(np.argmax(p)), p.shape)] -= 1
    d.param("paddings", p, [len(dims), 2])


register(OperationDef(
    OperationType.MIRROR_PAD,
    tuple(sig(MIRROR_PAD_LEVEL, [tensor("input", t, None), tensor("paddings", I32, (2,)),
                                 scalar("mode", T.INT32)], [tensor("output", t, None)])
          for t in MOVE_TYPES),
    _mirror_pad_prepare, _mirror_pad_execute, validate=_mirror_pad_validate, error_budget=budgets.exact(),
    summary="pad every dimension with mirrored values (REFLECT or SYMMETRIC)",
    aosp_source="MirrorPadExecution.cpp", generate=_generate_mirror_pad))


# --- REVERSE (FL7) --------------------------------------------------------------------------

_REVERSE_RANKS = tuple(range(1, 9))


def _reverse_axis(ctx: OpContext) -> int:
    """The axis (input 1: TENSOR_INT32 holding one value in [0, n)); input 0 of rank
    1..8."""
    _same_quant(ctx)
    rank = ctx.inputs[0].rank
    check(1 <= rank <= 8, f"input 0 has rank {rank}, REVERSE needs rank 1 to 8")
    axis = int_vector(ctx, 1, "axis", 1)[0]
    check(0 <= axis < rank, f"input 1 (axis) value {axis} is out of range [0, {rank})")
    return axis


def _reverse_prepare(ctx: OpContext):
    _reverse_axis(ctx)
    return [ctx.inputs[0].dims]


def _reverse_execute(ctx: OpContext):
    return [np.ascontiguousarray(np.flip(ctx.value(0), axis=_reverse_axis(ctx)))]


def _generate_reverse(d) -> None:
    """axis a [1] tensor holding one axis in [0, n) (NNAPI REVERSE; negative ones are not
    accepted), preferably of a dimension larger than 1. An unlinked input 0 is mostly of
    rank 1-4 (what other operations take), sometimes up to 8."""
    low = [r for r in (1, 2, 3, 4) if d.ranks is None or r in d.ranks]
    if d.primary is None and d.rank0 > 4 and low and d.coin(0.6):
        d.tensor(0, d.shape(d.choice(low)))
    dims = d.dims0
    wide = [i for i, x in enumerate(dims) if x > 1]
    axis = d.choice(wide) if wide and d.coin(0.9) else d.integer(0, len(dims) - 1)
    d.param("axis", [axis], [1])


register(OperationDef(
    OperationType.REVERSE,
    tuple(sig(REVERSE_LEVEL, [tensor("input", t, _REVERSE_RANKS), tensor("axis", I32, (1,))],
              [tensor("output", t, _REVERSE_RANKS)]) for t in MOVE_TYPES),
    _reverse_prepare, _reverse_execute, validate=_same_quant, error_budget=budgets.exact(),
    summary="reverse a tensor along one dimension", nonnegative_axis=True,
    aosp_source="ReverseExecution.cpp", generate=_generate_reverse))
