"""Shape and data-movement operations of feature levels 1-3, with their FL4+ forms.

FL1: CONCATENATION (2), DEPTH_TO_SPACE (5), RESHAPE (22), SPACE_TO_DEPTH (26).
FL2: BATCH_TO_SPACE_ND (29), PAD (32), SPACE_TO_BATCH_ND (33), SQUEEZE (34),
     STRIDED_SLICE (35), TRANSPOSE (37).
FL3: PAD_V2 (69), and FL3 forms of all of the above.

The block operations (DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND)
are declared in :mod:`.block_ops` with this module's shared pieces.

Types: TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM at the operation's level, TENSOR_FLOAT16 at
FL3, TENSOR_QUANT8_ASYMM_SIGNED (same operand layout) at FL4 for every operation here
(types.spec "since NNAPI feature level 4"), and TENSOR_INT32 for RESHAPE at FL6 (types.spec
"TENSOR_INT32 (since NNAPI feature level 6)"; AOSP ``validateOperation`` requires
HalVersion AIDL_V2 for it). Shapes (rank up to 4): see each ``prepare``. Quantized values are
moved raw (int8 stays int8), so the output's scale and zeroPoint must equal input0's
(except CONCATENATION, see below); checked at model time by ``validate``.

FL3 forms: DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND take an
optional trailing BOOL input (false: NHWC, true: NCHW for input 0 and output 0; the
kernels run in NHWC through ``common.to_nhwc`` / ``from_nhwc``). CONCATENATION and
TRANSPOSE accept zero-sized tensors (a dimension of 0 gives an empty output of the right
shape; NNAPI "since feature level 3"). PAD_V2 pads with input 2: a FLOAT32 scalar for
TENSOR_FLOAT32, FLOAT16 for TENSOR_FLOAT16, and for TENSOR_QUANT8_ASYMM an INT32 already
in input 0's quantization, which must lie in [0, 255] (AOSP's CPU kernel keeps the low
byte of any INT32; the reference rejects an out-of-range value instead); likewise an INT32
in [-128, 127] for TENSOR_QUANT8_ASYMM_SIGNED (FL4).

Two FL1-2 quantization rules only decide the feature level of a model (AOSP
``validateOperation`` then reports feature level 3; the model is not invalid), so, like
CONV_2D's output-scale rule, breaking them makes ``validate`` require feature level 3
(:meth:`OpContext.require_feature_level`); :func:`meets_fl2_quant_rules` tells whether a
model keeps them: CONCATENATION inputs with the output's scale and zeroPoint, and a zero
zeroPoint for PAD and SPACE_TO_BATCH_ND inputs. The kernels follow the FL3
definition when they are broken: CONCATENATION requantizes, PAD and SPACE_TO_BATCH_ND pad
with the zeroPoint (logical zero). These rules are about TENSOR_QUANT8_ASYMM only: a
TENSOR_QUANT8_ASYMM_SIGNED use is FL4 anyway, its CONCATENATION inputs may have their own
scale and zeroPoint (spec) and PAD / SPACE_TO_BATCH_ND pad it with its zeroPoint.

Errors (OperationError, i.e. GENERAL_FAILURE, naming the input and rule): wrong rank,
block sizes < 1 or not dividing the dimensions, negative paddings or paddings of the
wrong shape, bad RESHAPE shapes, SQUEEZE dims that are out of range or not of size 1,
zero strides, non-permutations, axes out of range, an out-of-range PAD_V2 quant8 value.

Sources: NNAPI ``NeuralNetworksTypes.h`` (types.spec) per operation; type and level rules
of AOSP ``validateOperation`` (LegacyUtils.cpp) and ``operations/*.cpp`` ``validate``;
parameter rules of their ``prepare`` (OperationsExecutionUtils.cpp and cpu_operations;
PAD_V2: ``padPrepare`` and the PAD_V2 case of CpuExecutor.cpp).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..types import OperandType, OperationType, is_quantized_type
from . import budgets
from .base import (OpContext, OperandView, OperationDef, check, register, scalar,
                   sig, tensor)
from .common import check_same_quant, from_float, int_vector, is_quant, to_float
from .error_inputs import PREPARE, chain, changed, output_quant_of_input, tensor_values
from .generation import quant_limits

T = OperandType
F32, Q8, I32 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_INT32
F16, Q8S = T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM_SIGNED
DATA_TYPES = (F32, Q8)
#: Feature level of the TENSOR_FLOAT16 forms and of the NCHW layout flag.
FL3 = 3
#: Feature level of the TENSOR_QUANT8_ASYMM_SIGNED twin of every signature here.
SIGNED_LEVEL = 4


def _levels(level: int) -> list[tuple[int, OperandType]]:
    """(feature level, data type) of an operation introduced at ``level``: TENSOR_FLOAT32
    and TENSOR_QUANT8_ASYMM at ``level``, TENSOR_FLOAT16 at FL3 (or ``level`` if later),
    TENSOR_QUANT8_ASYMM_SIGNED at FL4."""
    return ([(level, t) for t in DATA_TYPES] + [(max(level, FL3), F16)]
            + [(SIGNED_LEVEL, Q8S)])


# --- shared pieces ---------------------------------------------------------------------

def _sigs(level: int, extra_inputs, in_ranks=(1, 2, 3, 4), out_ranks=None,
          layout: bool = False) -> tuple:
    """One signature per data type (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM at ``level``;
    TENSOR_FLOAT16 at FL3; TENSOR_QUANT8_ASYMM_SIGNED at FL4): ``input`` of that type and
    ``in_ranks``, then ``extra_inputs`` (Args), one ``output`` of the same type. With
    ``layout``, each also gets a twin (FL3 at the earliest) taking the optional BOOL
    NCHW flag as its last input."""
    out = []
    for lv, t in _levels(level):
        inputs = [tensor("input", t, in_ranks), *extra_inputs]
        outputs = [tensor("output", t, out_ranks or in_ranks)]
        out.append(sig(lv, inputs, outputs))
        if layout:
            out.append(sig(max(lv, FL3), inputs + [scalar("layout", T.BOOL, optional=True)],
                           outputs))
    return tuple(out)


def _same_quant(ctx: OpContext) -> None:
    """validate: a quantized (TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED) output keeps
    input0's scale and zeroPoint (NNAPI, every operation of this module but CONCATENATION).
    Raises OperationError."""
    check_same_quant(ctx.inputs[0], ctx.outputs[0], ctx.operation.name)
    _fl2_quant_rules(ctx)


def _fl2_quant_rules(ctx: OpContext) -> None:
    """validate: a use breaking :func:`meets_fl2_quant_rules` needs feature level 3."""
    if not meets_fl2_quant_rules(ctx):
        ctx.require_feature_level(3, "quant8 rule of feature levels 1-2 (concatenation inputs share the "
                                     "output's scale/zeroPoint; PAD/SPACE_TO_BATCH_ND zeroPoint 0)")


def _same_params(inp: OperandView, out: OperandView) -> bool:
    """Whether ``inp``'s values can be copied raw into ``out``: not quantized, or the same
    scale (binary32) and zeroPoint."""
    return not is_quant(out) or (np.float32(inp.scale) == np.float32(out.scale)
                                 and inp.zero_point == out.zero_point)


def meets_fl2_quant_rules(ctx: OpContext) -> bool:
    """Whether a TENSOR_QUANT8_ASYMM operation keeps the quantization rules that AOSP
    ``validateOperation`` requires for feature levels 1-2 (breaking them makes the model
    feature level 3, not invalid): CONCATENATION inputs with the output's scale and
    zeroPoint (FL1), PAD and SPACE_TO_BATCH_ND inputs with zeroPoint 0 (FL2; their pad
    value is undefined before FL3). True for other operations and types (including
    TENSOR_QUANT8_ASYMM_SIGNED, which is FL4)."""
    inp, out = ctx.inputs[0], ctx.outputs[0]
    if inp.type != Q8:
        return True
    if ctx.operation == OperationType.CONCATENATION:
        return all(_same_params(i, out) for i in ctx.inputs[:-1])
    if ctx.operation in (OperationType.PAD, OperationType.SPACE_TO_BATCH_ND):
        return inp.zero_point == 0
    return True


def _rank(ctx: OpContext, want: Sequence[int]) -> int:
    """Rank of input 0, which must be one of ``want``. Raises OperationError."""
    r = ctx.inputs[0].rank
    check(r in want,
          f"input 0 has rank {r}, {ctx.operation.name} needs rank {' or '.join(map(str, want))}")
    return r






def _paddings(ctx: OpContext, index: int, rows: int) -> np.ndarray:
    """A [rows, 2] TENSOR_INT32 of (before, after) paddings, all >= 0 (PAD, SPACE_TO_BATCH_ND),
    as an int64 array. Raises OperationError."""
    p = ctx.value(index)
    check(p.shape == (rows, 2),
          f"input {index} (paddings) must have shape [{rows}, 2], got {list(p.shape)}")
    check(bool((p >= 0).all()), f"input {index} (paddings) values must be >= 0, got {p.tolist()}")
    return p.astype(np.int64)


def _pad_value(inp: OperandView):
    """Logical zero in ``inp``'s storage: its zeroPoint if quantized (TENSOR_QUANT8_ASYMM,
    TENSOR_QUANT8_ASYMM_SIGNED), else 0."""
    return inp.zero_point if is_quant(inp) else 0


def _reshaping(prepare):
    """An execute giving input 0's values, in row-major order, in the shape ``prepare``
    computes (RESHAPE, SQUEEZE)."""
    def execute(ctx: OpContext) -> list[np.ndarray]:
        return [np.array(ctx.value(0)).reshape(prepare(ctx)[0])]
    return execute


def _reg(op, sigs, prepare, execute, summary, validate=_same_quant, error_inputs=None, **kw):
    """Register a row of this family; one validated with :func:`_same_quant` also gets the
    error inputs of that rule (a quantized output off input 0's scale / zeroPoint), then
    ``error_inputs``."""
    if validate is _same_quant:
        same = output_quant_of_input("must equal input scale", f"NNAPI types.spec {op.name}")
        error_inputs = same if error_inputs is None else chain(same, error_inputs)
    register(OperationDef(op, sigs, prepare, execute, validate=validate, summary=summary,
                          error_inputs=error_inputs, error_budget=budgets.exact(), **kw))


# --- random-graph generation helpers (runtime/ops/generation.py) --------------------------

def _draft_nchw(d) -> bool:
    """Whether a draft's optional layout flag (if any) is given and true (NCHW)."""
    try:
        s = d.slot("layout")
    except KeyError:
        return False
    return not s.omitted and s.value is not None and bool(s.value)




def _draft_zero_point_0(d) -> None:
    """Sometimes give an unlinked TENSOR_QUANT8_ASYMM input 0 zeroPoint 0, the rule of
    feature levels 1-2 for PAD and SPACE_TO_BATCH_ND (see meets_fl2_quant_rules)."""
    if d[0].type == Q8 and d.primary is None and d.coin(0.5):
        d[0].zero_point = 0


def _draft_paddings(d, dims: Sequence[int], limits: Sequence[int], most: int = 3) -> np.ndarray:
    """[rank, 2] paddings in [0, min(limit, most)] per dimension, trimmed until the padded
    tensor holds at most 2 * max_elements elements."""
    p = np.array([[d.integer(0, min(lim, most)) for _ in range(2)] for lim in limits], np.int64)
    while math.prod(int(x + a + b) for x, (a, b) in zip(dims, p)) > 2 * d.max_elements and p.any():
        p[np.unravel_index(int(np.argmax(p)), p.shape)] -= 1
    return p


# --- CONCATENATION (FL1) -----------------------------------------------------------------

def _concat_prepare(ctx: OpContext):
    """Output [D0, ..., sum(Daxis(i)), ..., Dm]: inputs of equal rank (1-4) and equal
    dimensions except on ``axis`` (INT32, 0 <= axis < rank; negative axes are not
    accepted by NNAPI CONCATENATION)."""
    n = len(ctx.inputs) - 1
    axis = ctx.scalar(n)
    first = ctx.inputs[0]
    rank = _rank(ctx, (1, 2, 3, 4))
    check(0 <= axis < rank, f"input {n} (axis) must be in [0, {rank}), got {axis}")
    dims = list(first.dims)
    for i in range(1, n):
        d = ctx.inputs[i].dims
        check(len(d) == rank, f"input {i} has rank {len(d)}, input 0 has rank {rank}")
        check(all(d[k] == dims[k] for k in range(rank) if k != axis),
              f"input {i} dimensions {list(d)} differ from input 0's "
              f"{list(first.dims)} off axis {axis}")
        dims[axis] += d[axis]
    return [tuple(dims)]


def _concat_execute(ctx: OpContext):
    """Raw values joined; a quantized input whose scale/zeroPoint differ from the output's
    (allowed from FL3 for TENSOR_QUANT8_ASYMM, always for TENSOR_QUANT8_ASYMM_SIGNED) is
    requantized (round half away from zero, saturate)."""
    n, out = len(ctx.inputs) - 1, ctx.outputs[0]
    parts = [ctx.value(i) if _same_params(ctx.inputs[i], out)
             else from_float(out, to_float(ctx.inputs[i])) for i in range(n)]
    return [np.concatenate(parts, axis=ctx.scalar(n))]


def _generate_concat(d) -> None:
    """Axis in [0, rank) (AOSP refuses negative ones); other inputs equal off the axis.
    Quantized: half the time one scale/zeroPoint for all (FL1 rule), else the output's
    covers every input's range (requantized, FL3+)."""
    n = len(d.slots) - 1
    dims0 = list(d.dims0)
    axis = d.integer(0, len(dims0) - 1)
    d.param(n, axis)
    rest = math.prod(dims0) // dims0[axis]
    for k in range(1, n):
        dims = list(dims0)
        dims[axis] = d.dim(1, max(1, d.max_elements // max(1, rest)))
        d.tensor(k, dims)
    if not is_quantized_type(d[0].type):
        return
    if d.coin(0.5):
        q = (d[0].scale, d[0].zero_point)
        for k in range(1, n):
            d[k].scale, d[k].zero_point = q
        d.out_quant[0] = q
        return
    lo, hi = quant_limits(d[0].type)
    rmin = min(0.0, *((lo - d[k].zero_point) * d[k].scale for k in range(n)))
    rmax = max(0.0, *((hi - d[k].zero_point) * d[k].scale for k in range(n)))
    scale = float(np.float32((rmax - rmin) / (hi - lo)))
    d.out_quant[0] = (scale, int(np.clip(round(lo - rmin / scale), lo, hi)))


def _concat_error_inputs(inputs, outputs):
    """Invalid CONCATENATION uses, rejected by AOSP ``concatenation::prepare``: the axis
    equal to the rank or negative (NNAPI: 0 <= axis < rank), and (two inputs or more, axis
    known, rank >= 2) input 1 one longer than input 0 off the axis."""
    n, rank = len(inputs) - 1, inputs[0].rank
    if not rank:
        return
    for value in (rank, -1):
        yield changed(inputs, outputs, f"input {n}", "(axis) must be in [0,",
                      f"CONCATENATION axis {value} outside [0, rank) (NNAPI types.spec)", PREPARE,
                      value=value)
    axis = inputs[n].value
    if n >= 2 and axis is not None and rank >= 2 and inputs[1].rank == rank:
        k = (int(axis) + 1) % rank
        dims = list(inputs[1].dims)
        dims[k] += 1
        yield changed(inputs, outputs, "input 1", "differ from input 0's",
                      f"CONCATENATION inputs agree on every dimension but the axis (dimension {k} "
                      f"differs; NNAPI types.spec)", PREPARE, dims=tuple(dims))


register(OperationDef(
    OperationType.CONCATENATION,
    tuple(sig(lv, [tensor("input0..n-1", t), scalar("axis", T.INT32)], [tensor("output", t)])
          for lv, t in _levels(1)),
    _concat_prepare, _concat_execute, validate=_fl2_quant_rules, error_budget=budgets.exact(),
    summary="concatenate n >= 1 tensors along axis", variadic=True, generate=_generate_concat,
    error_inputs=_concat_error_inputs,
    allows_zero_sized_input=True, nonnegative_axis=True, aosp_source="ConcatenationExecution.cpp"))


# --- RESHAPE (FL1) -------------------------------------------------------------------

def _reshape_prepare(ctx: OpContext):
    """Output shape = input 1 (1-D TENSOR_INT32, 1-4 values, each > 0 or one -1 inferred so
    the element count is kept). Raises OperationError if the counts differ."""
    _same_quant(ctx)
    shape = int_vector(ctx, 1, "shape")
    check(1 <= len(shape) <= 4, f"input 1 (shape) must hold 1 to 4 values, got {shape}")
    check(shape.count(-1) <= 1, f"input 1 (shape) may hold at most one -1, got {shape}")
    check(all(s > 0 or s == -1 for s in shape),
          f"input 1 (shape) values must be > 0 or -1, got {shape}")
    count, known = math.prod(ctx.inputs[0].dims), math.prod(s for s in shape if s != -1)
    if -1 in shape:
        check(count % known == 0, f"input 1 (shape) {shape}: {count} elements cannot fill it")
        shape[shape.index(-1)] = count // known
    check(math.prod(shape) == count,
          f"input 1 (shape) {shape} holds {math.prod(shape)} elements, input 0 has {count}")
    return [tuple(shape)]


def _generate_reshape(d) -> None:
    """A target shape of rank 1-4 holding input 0's element count (its prime factors
    spread over the dimensions), one value sometimes -1 (inferred)."""
    count, factors, p = math.prod(d.dims0), [], 2
    c = count
    while p * p <= c:
        while c % p == 0:
            factors.append(p)
            c //= p
        p += 1
    if c > 1:
        factors.append(c)
    shape = [1] * d.integer(1, 4)
    for f in factors:
        shape[d.integer(0, len(shape) - 1)] *= f
    if d.coin(0.3):
        shape[d.integer(0, len(shape) - 1)] = -1
    d.param("shape", shape, [len(shape)])


def _reshape_error_inputs(inputs, outputs):
    """Invalid RESHAPE uses, rejected by AOSP ``reshapePrepare``: a shape of -1s only (at
    most one -1 may be inferred), and the output's shape with its first dimension one
    larger (the element count must be kept)."""
    shape, out = inputs[1], outputs[0].dims
    if shape.dims and shape.dims[0] >= 2:
        yield changed(inputs, outputs, "input 1", "may hold at most one -1",
                      "RESHAPE infers at most one dimension (NNAPI types.spec)", PREPARE,
                      value=np.full(shape.dims, -1))
    if shape.dims and len(out) == shape.dims[0] and min(out, default=0) > 0:
        yield changed(inputs, outputs, "input 1", "elements, input 0 has",
                      "RESHAPE keeps the element count (NNAPI types.spec)", PREPARE,
                      value=[out[0] + 1, *out[1:]])


#: Feature level of RESHAPE's TENSOR_INT32 form (NNAPI feature level 6, Android API 31+).
RESHAPE_INT32_LEVEL = 6
_reg(OperationType.RESHAPE,
     _sigs(1, [tensor("shape", I32, (1,))])
     + (sig(RESHAPE_INT32_LEVEL, [tensor("input", I32), tensor("shape", I32, (1,))],
            [tensor("output", I32)]),),
     _reshape_prepare,
     _reshaping(_reshape_prepare), "same values in the shape given by input 1 (-1 inferred)",
     aosp_source="CpuExecutor.cpp", generate=_generate_reshape,
     error_inputs=_reshape_error_inputs)


# --- PAD (FL2) -------------------------------------------------------------------------

def _pad_prepare(ctx: OpContext):
    """output.dims[i] = paddings[i, 0] + input.dims[i] + paddings[i, 1]; paddings is a
    [rank, 2] TENSOR_INT32 of values >= 0, input rank 1-4."""
    _same_quant(ctx)
    rank = _rank(ctx, (1, 2, 3, 4))
    p = _paddings(ctx, 1, rank)
    return [tuple(int(d + a + b) for d, (a, b) in zip(ctx.inputs[0].dims, p))]


def _pad_execute(ctx: OpContext):
    """Pad with logical zero: 0.0, or the zeroPoint (0 at FL2 for TENSOR_QUANT8_ASYMM, see
    meets_fl2_quant_rules; any zeroPoint for TENSOR_QUANT8_ASYMM_SIGNED, FL4)."""
    p = ctx.value(1).astype(np.int64)
    x = ctx.value(0)
    out = np.full([d + a + b for d, (a, b) in zip(x.shape, p)], _pad_value(ctx.inputs[0]), x.dtype)
    out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, p))] = x
    return [out]


def _generate_pad(d) -> None:
    """[rank, 2] paddings in [0, 3] (NNAPI: >= 0), the output kept small.
    TENSOR_QUANT8_ASYMM: sometimes zeroPoint 0 (the FL2 rule)."""
    d.param("paddings", _draft_paddings(d, d.dims0, d.dims0), [d.rank0, 2])
    _draft_zero_point_0(d)


_reg(OperationType.PAD, _sigs(2, [tensor("paddings", I32, (2,))]), _pad_prepare, _pad_execute,
     "pad every dimension with zeros", aosp_source="CpuExecutor.cpp", generate=_generate_pad,
     error_inputs=tensor_values(1, lambda v, ins: np.zeros((ins[0].rank + 1, 2)) if ins[0].rank else None,
                                "(paddings) must have shape",
                                "PAD paddings has shape [rank, 2] (NNAPI types.spec)"))


# --- PAD_V2 (FL3) -----------------------------------------------------------------------

#: Scalar type of PAD_V2's pad value per input type (NNAPI PAD_V2 input 2).
_PAD_VALUE_TYPE = {F32: T.FLOAT32, F16: T.FLOAT16, Q8: T.INT32, Q8S: T.INT32}


def _pad_v2_value(ctx: OpContext):
    """PAD_V2 input 2 in input 0's storage: the float value for TENSOR_FLOAT32/FLOAT16; for a
    quantized input, an INT32 already quantized with input 0's scale and zeroPoint, which
    must lie in the type's range ([0, 255] for TENSOR_QUANT8_ASYMM, [-128, 127] for
    TENSOR_QUANT8_ASYMM_SIGNED). AOSP's CPU kernel keeps the low byte of an out-of-range
    value; the reference rejects it (OperationError)."""
    value = ctx.scalar(2)
    inp = ctx.inputs[0]
    if is_quant(inp):
        lo, hi = (0, 255) if inp.type == Q8 else (-128, 127)
        check(lo <= value <= hi, f"input 2 (pad_value) {value} is out of range [{lo}, {hi}] "
                                 f"of {inp.type.name}")
    return value


def _pad_v2_prepare(ctx: OpContext):
    """As PAD: output.dims[i] = paddings[i, 0] + input.dims[i] + paddings[i, 1]."""
    _pad_v2_value(ctx)
    return _pad_prepare(ctx)


def _pad_v2_execute(ctx: OpContext):
    """Pad with input 2 (raw value in input 0's type)."""
    p = ctx.value(1).astype(np.int64)
    x = ctx.value(0)
    return [np.pad(x, [tuple(r) for r in p],
                   constant_values=np.asarray(_pad_v2_value(ctx)).astype(x.dtype))]


def _generate_pad_v2(d) -> None:
    """PAD's paddings; the pad value a float in [-2, 2], or for quantized input 0 an INT32
    across the type's stored range (NNAPI PAD_V2: already in input 0's quantization)."""
    d.param("paddings", _draft_paddings(d, d.dims0, d.dims0), [d.rank0, 2])
    if is_quantized_type(d[0].type):
        d.param("pad_value", d.integer(*quant_limits(d[0].type)))
    else:
        d.param("pad_value", d.uniform(-2.0, 2.0))


register(OperationDef(
    OperationType.PAD_V2,
    tuple(sig(lv, [tensor("input", t), tensor("paddings", I32, (2,)),
                   scalar("pad_value", _PAD_VALUE_TYPE[t])], [tensor("output", t)])
          for lv, t in ((3, F32), (3, F16), (3, Q8), (SIGNED_LEVEL, Q8S))),
    _pad_v2_prepare, _pad_v2_execute, validate=_same_quant, error_budget=budgets.exact(),
    summary="pad every dimension with a given value", aosp_source="CpuExecutor.cpp",
    generate=_generate_pad_v2,
    # coupling: the INT32 pad_value is in the input's quantized domain; shifting the
    # tensors' zero points by -128 leaves it as it is, so the coupled model pads with
    # another real value
    coupling_excluded=True))


# --- SQUEEZE (FL2) -------------------------------------------------------------------

def _squeeze_prepare(ctx: OpContext):
    """Drop the size-1 dimensions listed in input 1 (1-D TENSOR_INT32, values in
    [-rank, rank), each naming a dimension of size 1), or every size-1 dimension when
    input 1 is omitted. Squeezing every dimension gives shape [1]."""
    _same_quant(ctx)
    dims = ctx.inputs[0].dims
    rank = _rank(ctx, (1, 2, 3, 4))
    if ctx.inputs[1].omitted:
        drop = {i for i, d in enumerate(dims) if d == 1}
    else:
        drop = set()
        for a in int_vector(ctx, 1, "squeeze dims"):
            check(-rank <= a < rank,
                  f"input 1 (squeeze dims) value {a} is out of range [{-rank}, {rank})")
            check(dims[a % rank] == 1,
                  f"input 1 (squeeze dims): dimension {a} has size {dims[a % rank]}, not 1")
            drop.add(a % rank)
    return [tuple(d for i, d in enumerate(dims) if i not in drop) or (1,)]


def _generate_squeeze(d) -> None:
    """Input 0 with some dimensions of size 1 (redrawn when a linked one has none, or
    sometimes when unlinked); squeeze_dims a non-empty subset of them, each in [-rank,
    rank) (NNAPI: every listed dimension has size 1)."""
    dims = list(d.dims0)
    ones = [i for i, x in enumerate(dims) if x == 1]
    if not ones or (d.primary is None and d.coin(0.5)):
        for i in d.rng.permutation(len(dims))[:d.integer(1, max(1, len(dims) - 1))]:
            dims[int(i)] = 1
        d.tensor(0, dims)
        ones = [i for i, x in enumerate(dims) if x == 1]
    s = d.slot("squeeze_dims")
    if not s.omitted:
        r = len(dims)
        pick = d.rng.permutation(ones)[:d.integer(1, len(ones))]
        pick = [int(a) - (r if d.coin(0.3) else 0) for a in pick]
        d.param("squeeze_dims", pick, [len(pick)])


_reg(OperationType.SQUEEZE, _sigs(2, [tensor("squeeze_dims", I32, (1,), optional=True)]),
     _squeeze_prepare, _reshaping(_squeeze_prepare), "remove dimensions of size 1",
     allows_omitted_operand=True, aosp_source="SqueezeExecution.cpp", generate=_generate_squeeze)


# --- STRIDED_SLICE (FL2) -------------------------------------------------------------

def _clamped_index(index: int, dim: int, positive: bool) -> int:
    """A begin/end value folded into range: negative values count from the end; positive
    strides clamp to [0, dim], negative strides to [-1, dim - 1]."""
    if positive:
        return dim if index >= dim else min(max(index, -dim), dim) % dim
    return -1 if index < -dim else min(max(index, -dim), dim - 1) % dim


def _slice_ranges(ctx: OpContext) -> list[range]:
    """The index range taken along every input dimension (begin/end/strides are 1-D
    TENSOR_INT32 of rank(input) values; a set bit i of begin_mask / end_mask takes the
    fullest range on dimension i). Strides must be nonzero; a dimension named by
    shrink_axis_mask needs a positive stride and a range of exactly one index."""
    dims = ctx.inputs[0].dims
    rank = _rank(ctx, (1, 2, 3, 4))
    begin, end, strides = (int_vector(ctx, i, n, rank)
                           for i, n in ((1, "begin"), (2, "end"), (3, "strides")))
    begin_mask, end_mask, shrink = ctx.scalar(4), ctx.scalar(5), ctx.scalar(6)
    ranges = []
    for i, (d, s) in enumerate(zip(dims, strides)):
        check(s != 0, f"input 3 (strides) value {i} must be nonzero")
        pos = s > 0
        b = (0 if pos else d - 1) if begin_mask >> i & 1 else _clamped_index(begin[i], d, pos)
        e = (d if pos else -1) if end_mask >> i & 1 else _clamped_index(end[i], d, pos)
        r = range(b, e, s)
        if shrink >> i & 1:
            check(pos and len(r) == 1, f"shrink_axis_mask bit {i}: dimension {i} needs a positive "
                  f"stride and a slice of size 1, got begin {b}, end {e}, stride {s}")
        ranges.append(r)
    return ranges


def _sliced_shape(ctx: OpContext, ranges: list[range]) -> tuple[int, ...]:
    """Output rank = rank - popcount(shrink_axis_mask) ([1] if every dimension shrinks)."""
    shrink = ctx.scalar(6)
    return tuple(len(r) for i, r in enumerate(ranges) if not shrink >> i & 1) or (1,)


def _strided_slice_prepare(ctx: OpContext):
    _same_quant(ctx)
    return [_sliced_shape(ctx, _slice_ranges(ctx))]


def _strided_slice_execute(ctx: OpContext):
    ranges = _slice_ranges(ctx)
    x = ctx.value(0)[np.ix_(*[np.arange(r.start, r.stop, r.step) for r in ranges])]
    return [x.reshape(_sliced_shape(ctx, ranges))]


def _slice_dimension(d, size: int, shrink: bool) -> tuple[int, int, int, bool, bool]:
    """(begin, end, stride, begin_mask bit, end_mask bit) of one STRIDED_SLICE dimension
    taking at least one index: strides 1-3 or -1, -2; begin / end sometimes negative
    (from the end), past the end (clamped) or replaced by a mask bit; a shrunk dimension
    takes one index with a positive stride."""
    if shrink:
        s = d.choice((1, 1, 2))
        b = d.integer(0, size - 1)
        e = min(size, b + d.integer(1, s))
    elif d.coin(0.6):
        s = d.choice((1, 1, 1, 2, 3))
        b = 0 if d.coin(0.4) else d.integer(0, size - 1)
        e = size if d.coin(0.4) else d.integer(b + 1, size)
    else:
        s = d.choice((-1, -1, -2))
        b = size - 1 if d.coin(0.4) else d.integer(0, size - 1)
        e = -1 if d.coin(0.4) else d.integer(-1, b - 1)
    first, last = (0, size) if s > 0 else (size - 1, -1)
    bmask = b == first and d.coin(0.4)
    emask = e == last and d.coin(0.4)
    if bmask:
        b = d.integer(-size, size)  # ignored
    elif b == size - 1 and s < 0 and d.coin(0.3):
        b = size + d.integer(0, 2)  # clamped to size - 1
    elif d.coin(0.3):
        b -= size
    if emask:
        e = d.integer(-size, size)  # ignored
    elif e == size:
        e = size + d.integer(0, 2)  # clamped to size
    elif e == -1:
        e = -size - 1 - d.integer(0, 2)  # clamped to -1 (before index 0)
    elif d.coin(0.3):
        e -= size
    return b, e, s, bmask, emask


def _generate_strided_slice(d) -> None:
    """begin / end / strides of input 0's rank and the three masks, every dimension taking
    at least one index (see _slice_dimension); shrink_axis_mask bits on dimensions of one
    index with a positive stride (NNAPI STRIDED_SLICE)."""
    rows = []
    masks = [0, 0, 0]
    for i, size in enumerate(d.dims0):
        shrink = d.coin(0.15)
        b, e, s, bm, em = _slice_dimension(d, size, shrink)
        rows.append((b, e, s))
        masks = [m | (bit << i) for m, bit in zip(masks, (bm, em, shrink))]
    r = d.rank0
    for k, name in enumerate(("begin", "end", "strides")):
        d.param(name, [row[k] for row in rows], [r])
    for name, m in zip(("begin_mask", "end_mask", "shrink_axis_mask"), masks):
        d.param(name, m)


_reg(OperationType.STRIDED_SLICE,
     _sigs(2, [tensor(n, I32, (1,)) for n in ("begin", "end", "strides")]
           + [scalar(n, T.INT32) for n in ("begin_mask", "end_mask", "shrink_axis_mask")]),
     _strided_slice_prepare, _strided_slice_execute, "slice with begin/end/strides and masks",
     aosp_source="StridedSliceExecution.cpp", generate=_generate_strided_slice)


# --- TRANSPOSE (FL2) -----------------------------------------------------------------

def _perm(ctx: OpContext) -> list[int]:
    """Input 1 (1-D TENSOR_INT32, a permutation of 0..rank-1), or (rank-1, ..., 0) when
    omitted. The AOSP CPU kernel accepts an omitted perm for rank 2 only; the NNAPI text
    defines it for any rank, which is what this follows."""
    rank = _rank(ctx, (1, 2, 3, 4))
    if ctx.inputs[1].omitted:
        return list(range(rank - 1, -1, -1))
    perm = int_vector(ctx, 1, "perm", rank)
    check(sorted(perm) == list(range(rank)),
          f"input 1 (perm) {perm} is not a permutation of 0..{rank - 1}")
    return perm


def _transpose_prepare(ctx: OpContext):
    """output.dims[i] = input.dims[perm[i]]."""
    _same_quant(ctx)
    return [tuple(ctx.inputs[0].dims[p] for p in _perm(ctx))]


def _transpose_execute(ctx: OpContext):
    return [np.ascontiguousarray(np.transpose(ctx.value(0), _perm(ctx)))]


def _generate_transpose(d) -> None:
    """perm a random permutation of 0..rank-1 (unless omitted: reversed dimensions)."""
    if not d.slot("perm").omitted:
        d.param("perm", d.rng.permutation(d.rank0), [d.rank0])


_reg(OperationType.TRANSPOSE, _sigs(2, [tensor("perm", I32, (1,), optional=True)]),
     _transpose_prepare, _transpose_execute,
     "permute dimensions (reverse them when perm is omitted)",
     allows_zero_sized_input=True, allows_omitted_operand=True, aosp_source="TransposeExecution.cpp",
     generate=_generate_transpose,
     error_inputs=tensor_values(1, lambda v, ins: (np.zeros(ins[0].rank) if ins[0].rank >= 2 else [1])
                                if ins[0].rank else None, "is not a permutation",
                                "TRANSPOSE perm is a permutation of 0..rank-1 (NNAPI types.spec)"))
