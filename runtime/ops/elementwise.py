"""Element-wise operations: ADD (0), MUL (18), SUB (36), DIV (30) (broadcasting, fused
activation), FLOOR (8), DEQUANTIZE (6) and the activations RELU (19), RELU1 (20),
RELU6 (21), LOGISTIC (14), TANH (28); and the broadcasting / unary machinery that
:mod:`.comparison`, :mod:`.math_ops` and :mod:`.cast` share.

Declared signatures (NNAPI ``types.spec``; AOSP ``common/types/operations/src/
{Broadcast,Activation,Elementwise,Dequantize}.cpp`` for the feature level of each form):

* FL1: ADD, MUL (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM); FLOOR, TANH (TENSOR_FLOAT32);
  RELU, RELU1, RELU6, LOGISTIC (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM);
  DEQUANTIZE (TENSOR_QUANT8_ASYMM -> TENSOR_FLOAT32).
* FL2: SUB, DIV (TENSOR_FLOAT32).
* FL3: TENSOR_FLOAT16 for ADD, MUL, SUB, DIV, FLOOR, RELU, RELU1, RELU6, LOGISTIC, TANH;
  TENSOR_QUANT8_ASYMM for SUB and TANH; DEQUANTIZE from TENSOR_QUANT8_ASYMM,
  TENSOR_QUANT8_SYMM or TENSOR_QUANT8_SYMM_PER_CHANNEL to TENSOR_FLOAT16 or
  TENSOR_FLOAT32 (except the FL1 form).
* FL4: the TENSOR_QUANT8_ASYMM_SIGNED twin of every FL1 quant8 signature above (ADD, MUL,
  RELU, RELU1, RELU6, LOGISTIC; DEQUANTIZE TENSOR_QUANT8_ASYMM_SIGNED -> TENSOR_FLOAT32
  or TENSOR_FLOAT16); TENSOR_QUANT8_ASYMM_SIGNED SUB and TANH; TENSOR_INT32 ADD, MUL,
  SUB, DIV (AOSP ``Broadcast.cpp``, ``Activation.cpp``). DIV has no quantized form at any level.

TENSOR_INT32 ADD/MUL/SUB/DIV (FL4): input 2 (activation) must be NONE (spec "For a
TENSOR_INT32 tensor, the FusedActivationFunc must be NONE"; OperationError at validation
when constant, else at prepare). Computed on the stored int32 values, wrapping around as
two's-complement C++ int32 arithmetic does in AOSP's ``executeInt32``. DIV rounds toward
negative infinity (floor division: -7 / 2 = -4, AOSP ``Broadcast.cpp``; the spec does not
say) and gives 0 for a zero divisor (spec: undefined; AOSP returns 0).

All tensors have rank 1 to 4 (OperationError otherwise, at execution when the rank was
unknown at model time); since FL3 any of them may be zero-sized (a dimension of 0, e.g. a
batch from BOX_WITH_NMS_LIMIT), giving an empty output of the broadcast shape.
Quantization rules of the spec, for TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED
alike: MUL's output scale must be greater than the product of the input scales;
RELU/RELU1/RELU6 output scale and zeroPoint equal the input's; LOGISTIC's output has scale
1/256 and zeroPoint 0 (TENSOR_QUANT8_ASYMM) or -128 (TENSOR_QUANT8_ASYMM_SIGNED); TANH's
TENSOR_QUANT8_ASYMM output (FL3) has scale 1/128 and zeroPoint 128, its
TENSOR_QUANT8_ASYMM_SIGNED output (FL4) scale 1/128 and zeroPoint 0. ADD's and SUB's
quantized inputs and output may all have different scales and zero points. Broadcasting
(FL1+): trailing dimensions aligned, equal or one of them 1 (OperationError naming both
input shapes otherwise).

Kernels compute on real values: float32 for TENSOR_FLOAT32, float64 for TENSOR_FLOAT16
(one rounding cast at the end, the policy of :mod:`.common`) and for the quant8 types
(dequantized, requantized with round half away from zero and saturation, within the one
quantum the criteria allow of AOSP's fixed-point results). DEQUANTIZE of
TENSOR_QUANT8_SYMM_PER_CHANNEL uses the scale of each element's channel (``channelDim``).
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType
from . import budgets
from .base import OpContext, OperandView, OperationDef, check, register, scalar, sig, tensor
from .common import apply_activation, check_fuse_code, computing_truth, from_float, to_float
from .decision_rules import floor_decision
from .error_inputs import chain, changed, fixed_output_quant, fuse_code, output_quant_of_input
from .generation import quant_limits

T = OperandType
F32, Q8, Q8S = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
_F32_DTYPE = np.dtype(np.float32)
F16, I32, BOOL8 = T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8
QUANT8 = (Q8, Q8S)
MAX_RANK = 4

# --- shared machinery (also used by comparison.py, math_ops.py, cast.py) ------------------

def check_rank(ctx: OpContext, index: int, max_rank: int = MAX_RANK) -> None:
    """Input ``index`` has rank <= ``max_rank`` (the rank may have been unknown when the
    model was validated). Raises OperationError naming the operation and input."""
    rank = len(ctx.inputs[index].dims)
    check(rank <= max_rank,
          f"{ctx.operation.name}: input {index} must have rank <= {max_rank}, got {rank}")


def broadcast_shape(ctx: OpContext, i: int = 0, j: int = 1) -> tuple[int, ...]:
    """NumPy-style broadcast of the shapes of inputs ``i`` and ``j`` (NNAPI binary
    operations, FL1+; AOSP ``calculateBroadcastedShape``): trailing dimensions are aligned;
    two dimensions are compatible when equal or when one of them is 1, and the output takes
    the other one (so 0 against 1 gives 0). Raises OperationError if incompatible."""
    a, b = tuple(ctx.inputs[i].dims), tuple(ctx.inputs[j].dims)
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        check(x == y or x == 1 or y == 1,
              f"{ctx.operation.name}: input {i} shape {a} and input {j} shape {b} cannot be "
              f"broadcast (dimensions {x} and {y}: compatible only when equal or one is 1)")
        out.append(y if x == 1 else x)
    return tuple(out)


def same_shape(ctx: OpContext, max_rank: int | None = MAX_RANK) -> list[tuple[int, ...]]:
    """Output shape of a unary operation: input 0's shape (rank <= ``max_rank`` unless
    None)."""
    if max_rank is not None:
        check_rank(ctx, 0, max_rank)
    return [tuple(ctx.inputs[0].dims)]


def real(ctx: OpContext, index: int) -> np.ndarray:
    """Real values of input ``index`` at the working precision: float32 for TENSOR_FLOAT32
    (as AOSP computes), float64 for every other type (exact for TENSOR_FLOAT16, dequantized
    ``(q - zeroPoint) * scale`` for the quantized types, converted for TENSOR_INT32)."""
    if ctx.inputs[index].type == F32:  # to_float then float32: the same values
        return ctx.value(index)
    return to_float(ctx.inputs[index])


def store(out: OperandView, result, *sources) -> np.ndarray:
    """``result`` stored into ``out``'s type (:func:`.common.from_float`), without the copy
    when it already is a fresh array of that dtype (owning its data, none of ``sources``:
    the input values it was computed from)."""
    if isinstance(result, np.ndarray) and result.dtype == _F32_DTYPE and out.type == F32 and \
            result.flags.owndata and result.flags.c_contiguous and not computing_truth() and \
            all(result is not v for v in sources):
        return result
    return from_float(out, result)


def bool_values(ctx: OpContext, index: int) -> np.ndarray:
    """TENSOR_BOOL8 input ``index`` as numpy bool (any non-zero byte is true)."""
    return np.asarray(ctx.value(index)).view(np.uint8) != 0


def unary_execute(fn, raw_types=(I32,)):
    """``execute`` of a unary operation: ``fn`` on the raw values for a type in
    ``raw_types`` (TENSOR_INT32 wraps around as C++ int32 arithmetic does), else on
    :func:`real` values, stored with :func:`.common.from_float` into the output type."""
    def execute(ctx: OpContext):
        inp = ctx.inputs[0]
        with np.errstate(all="ignore"):
            if inp.type in raw_types:
                return [np.asarray(fn(ctx.value(0))).astype(ctx.value(0).dtype)]
            x = real(ctx, 0)
            return [store(ctx.outputs[0], fn(x), x)]
    return execute


def unary_sigs(level: int, types, ranks=(1, 2, 3, 4), out_type=None, out_quant=None):
    """One signature per type in ``types``: (input of that type) -> (output of
    ``out_type`` or the same type), both of ``ranks`` (None: any rank). ``out_quant``:
    ``{type: (scale, zeroPoint)}`` the spec fixes for the output of that type, checked by
    model validation (``Arg.fixed_quant``)."""
    quant = out_quant or {}
    return tuple(sig(level, [tensor("input", t, ranks)],
                     [tensor("output", out_type or t, ranks, fixed_quant=quant.get(out_type or t),
                             fixed_quant_at="validation")])
                 for t in types)


# --- random-graph drafting (runtime/ops/generation.py), shared by the element-wise modules --

FLOATS = (F32, F16)


def linked(d, k: int = 0) -> bool:
    """Whether draft input ``k`` (input 0) still takes the earlier output ``d.primary``
    (same type and dims): its shape, quantization and values are then not ours to change."""
    p = d.primary
    return k == 0 and p is not None and d[k].type == p.type and list(d[k].dims) == list(p.dims)


def span_quant(d, t: OperandType, lo: float, hi: float, cover: bool = False) -> tuple[float, int]:
    """(scale, zeroPoint) of quantized type ``t`` whose stored range spans about the real
    interval [``lo``, ``hi``] (width and centre jittered by the draft's rng); ``cover``:
    a little wider and centred, so the whole interval is representable (outputs)."""
    qlo, qhi = quant_limits(t)
    widen, shift = ((1.05, 1.3), 0.0) if cover else ((0.8, 1.25), 0.1)
    scale = float(np.float32((hi - lo) * d.uniform(*widen) / (qhi - qlo)))
    centre = (lo + hi) / 2 + d.uniform(-shift, shift) * (hi - lo)
    return scale, int(np.clip(round((qlo + qhi) / 2 - centre / scale), qlo, qhi))


def draft_range(d, k: int, lo: float, hi: float) -> None:
    """Prefer values of input ``k`` in [``lo``, ``hi``] (a preference, not a constraint: a
    linked input keeps the earlier values): floats and TENSOR_INT32 as the slot's range,
    asymmetric quant8 types as a scale/zeroPoint spanning it."""
    s = d[k]
    if linked(d, k) or s.omitted or s.value is not None:
        return
    if s.type in QUANT8:
        s.scale, s.zero_point = span_quant(d, s.type, lo, hi)
    elif s.type in (F32, F16, I32):
        s.low, s.high = (lo, hi) if s.type != I32 else (int(np.floor(lo)), int(np.ceil(hi)))


def _broadcast_around(d, a: list[int], max_rank: int):
    """Output dims and per-position owner ("i": only input i has the dim, input j 1; "j":
    only input j; "b": both) around linked dims ``a``: leading dims and expanded 1s of
    ``a`` come from input j, dims of ``a`` > 1 are sometimes 1 in input j."""
    size = max(1, int(np.prod(a)))
    out, mask = [], []
    extra = 0 if len(a) >= max_rank or d.coin(0.5) else d.integer(1, max_rank - len(a))
    for _ in range(extra):
        if d.max_elements // size >= 2:
            n = d.dim(2, d.max_elements // size)
            out.append(n), mask.append("j")
            size *= n
    for x in a:
        if x == 1 and d.max_elements // size >= 2 and d.coin(0.5):
            n = d.dim(2, d.max_elements // size)
            out.append(n), mask.append("j")
            size *= n
        else:
            out.append(x), mask.append("i" if x > 1 and d.coin(0.4) else "b")
    if all(m == "b" for m in mask):
        big = [p for p, x in enumerate(out) if x > 1]
        if big:
            mask[d.choice(big)] = "i"
    return out, mask


def _broadcast_fresh(d, r0: int, max_rank: int):
    """Output dims and per-position owner (see :func:`_broadcast_around`) for an unlinked
    input i of rank ``r0``: input j with size-1 or missing leading dims, input i with
    size-1 dims or of lower rank (the output has more dims), or both at once."""
    mode = d.choice(("i", "j", "both"))  # "i": only input i has some dims ...
    r = r0
    if mode != "i" and r0 < max_rank and (d.coin(0.5) or (mode == "both" and r0 == 1)):
        r = d.integer(r0 + 1, max_rank)
    out = d.shape(r, lo=2 if d.coin(0.85) else 1)
    mask = ["j"] * (r - r0)
    free = list(range(r - r0, r))
    for _ in free:
        mask.append({"i": ("i", "b"), "j": ("j", "b"), "both": ("i", "j", "b")}[mode][
            d.integer(0, 1 if mode != "both" else 2)])
    if mode != "j" and r == r0 >= 2 and d.coin(0.6):  # input j of lower rank, often
        k = d.integer(1, r - 1)
        mask[:k] = ["i"] * k
        if mode == "both" and "j" not in mask[k:]:
            mask[d.integer(k, r - 1)] = "j"
    if mode == "both" and r == r0 and ("i" not in mask or "j" not in mask):
        mask[free[0]], mask[free[-1]] = "j", "i"
    elif mode in ("i", "both") and "i" not in mask:
        mask[free[-1]] = "i"  # (for "both", leading "j" positions exist)
    elif mode == "j" and "j" not in mask:
        mask[free[0]] = "j"
    return out, mask


def draft_broadcast(d, i: int = 0, j: int = 1, p: float = 0.5) -> None:
    """Shapes of broadcasting inputs ``i`` and ``j`` (NNAPI binary element-wise operations:
    trailing dims aligned, equal or one of them 1; AOSP ``calculateBroadcastedShape``):
    equal with probability 1 - ``p``, else input j of lower rank and/or with size-1 dims,
    input i with size-1 dims or of lower rank, or both broadcasting (the output larger than
    either). A linked input i keeps its dims and input j broadcasts against them."""
    a = list(d[i].dims)
    if not a or not d.coin(p):
        d[j].dims = list(a)
        return
    max_rank = max(4, len(a))
    if linked(d, i):
        out, mask = _broadcast_around(d, a, max_rank)
    else:
        out, mask = _broadcast_fresh(d, len(a), max_rank)
        d[i].dims = [1 if m == "j" else x for x, m in zip(out, mask)][len(out) - len(a):]
    dims_j = [1 if m == "i" else x for x, m in zip(out, mask)]
    lead = 0
    while lead < len(mask) - 1 and mask[lead] == "i":
        lead += 1
    if lead and d.coin(0.85):  # input j of lower rank: its missing leading dims count as 1
        dims_j = dims_j[d.integer(1, lead):]
    d[j].dims = dims_j


# --- ADD, MUL, SUB, DIV -------------------------------------------------------------------

def _check_int32_activation(ctx: OpContext) -> None:
    """TENSOR_INT32 ADD/MUL/SUB/DIV (FL4): input 2 (activation) must be NONE (spec; AOSP
    ``executeInt32`` checks it). Raises OperationError."""
    if ctx.inputs[0].type == I32:
        code = ctx.scalar(2)
        check(code == 0, f"{ctx.operation.name}: input 2 (activation) value {code} must be "
                         f"NONE (0) for TENSOR_INT32 tensors")


def _binary_validate(ctx: OpContext):
    """Model-time rules of ADD/MUL/SUB/DIV: a constant activation is a FuseCode, and NONE
    for TENSOR_INT32 (FL4); for MUL with TENSOR_QUANT8_ASYMM (FL1) or
    TENSOR_QUANT8_ASYMM_SIGNED (FL4), output_scale > input1_scale * input2_scale (spec; the
    product is taken in binary32 as the AOSP runtime does)."""
    if ctx.has_value(2):
        check_fuse_code(ctx.scalar(2))
        _check_int32_activation(ctx)
    out = ctx.outputs[0]
    if ctx.operation == OperationType.MUL and out.type in QUANT8:
        s1, s2 = np.float32(ctx.inputs[0].scale), np.float32(ctx.inputs[1].scale)
        check(np.float32(out.scale) > np.float32(s1 * s2),
              f"MUL: output 0 ({out.type.name}) scale must be greater than "
              f"input0 scale * input1 scale ({out.scale} <= {s1} * {s2})")


def _binary_prepare(ctx: OpContext):
    """Output shape of ADD/MUL/SUB/DIV: the broadcast of the two input shapes. Checks the
    ranks (<= 4) and that the activation is a FuseCode."""
    check_rank(ctx, 0)
    check_rank(ctx, 1)
    check_fuse_code(ctx.scalar(2))
    _check_int32_activation(ctx)
    return [broadcast_shape(ctx)]


def binary_execute(fn, activation_index: int | None = None):
    """``execute`` of a binary operation computing ``fn(a, b)`` (broadcasting) on the
    :func:`real` values of inputs 0 and 1, then (``activation_index`` given) the fused
    activation of that INT32 input, then the store into the output type (quantized with the
    output's own scale and zeroPoint, rounded and saturated for TENSOR_INT32)."""
    def execute(ctx: OpContext):
        a, b = real(ctx, 0), real(ctx, 1)
        with np.errstate(all="ignore"):
            result = fn(a, b)
        if activation_index is not None:
            result = apply_activation(result, ctx.scalar(activation_index))
        return [store(ctx.outputs[0], result, a, b)]
    return execute


def _int32_floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TENSOR_INT32 DIV (FL4): floor division (rounds toward -inf, as AOSP's kernel does);
    a zero divisor gives 0 (the spec leaves it undefined, AOSP returns 0); -2^31 / -1 wraps
    to -2^31. ``a``, ``b``: int32 arrays (broadcast); returns int32."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    return np.where(b64 == 0, 0, np.floor_divide(a64, safe)).astype(np.int32)


def int32_binary_execute(fn, float_execute):
    """``execute`` of ADD/MUL/SUB/DIV: for TENSOR_INT32 inputs (FL4) ``fn`` on the raw
    int32 values (int32 wrap-around, the two's-complement result of AOSP's C++ kernel), for
    every other type ``float_execute``."""
    def execute(ctx: OpContext):
        if ctx.inputs[0].type == I32:
            with np.errstate(all="ignore"):
                return [np.asarray(fn(ctx.value(0), ctx.value(1))).astype(np.int32)]
        return float_execute(ctx)
    return execute


def _binary_signatures(types_by_level):
    return tuple(
        sig(level, [tensor("input0", t), tensor("input1", t), scalar("activation", T.INT32)],
            [tensor("output", t)])
        for level, types in types_by_level for t in types)


def _generate_binary(d) -> None:
    """ADD/MUL/SUB/DIV drafts: NNAPI broadcasting shapes half the time; TENSOR_INT32 with
    activation NONE (spec); with RELU1/RELU6 fused, inputs spanning [-3, 3] / [-8, 8]
    (MUL: [-2, 2] / [-4, 4]) so the clamp bites, a quantized output spanning the clamp's
    range; quantized MUL with input 1's scale below 1; DIV divisors non-zero, floats away from 0 (|x| >= 0.4)."""
    t = d[0].type
    if t == I32:
        d.param(2, 0)
    draft_broadcast(d)
    act = int(d[2].value)
    if act in (2, 3):  # RELU1, RELU6
        lim = {(2, False): 3.0, (3, False): 8.0, (2, True): 2.0, (3, True): 4.0}[
            (act, d.opdef.type == OperationType.MUL)]
        for k in (0, 1):
            draft_range(d, k, -lim, lim)
        if t in QUANT8:  # an output spanning the clamp's range (the fit keeps input 0's)
            scale, zp = span_quant(d, t, -1.0 if act == 2 else 0.0, 1.0 if act == 2 else 6.0,
                                   cover=True)
            if d.opdef.type == OperationType.MUL:  # spec: output scale > product of inputs'
                scale = max(scale, float(np.float32(d[0].scale * d[1].scale)) * 1.25)
            d.out_quant[0] = (scale, zp)
    elif d.opdef.type == OperationType.MUL and t in QUANT8 and d[1].scale >= 0.95:
        # the generator starts the output at input 0's quantization (then fits it): valid
        # for MUL only if input 1's scale is below 1 (spec: output scale > s0 * s1)
        d[1].scale = float(np.float32(d[1].scale / 2.2))
    if d.opdef.type == OperationType.DIV:
        d[1].nonzero = True
        if t in FLOATS:
            d[1].low, d[1].high = -4.0, 4.0


def _mul_output_scale(inputs, outputs):
    """A quantized MUL output of scale input0_scale * input1_scale / 2 (types.spec: greater
    than the product)."""
    out = outputs[0]
    if out.type in QUANT8:
        yield changed(inputs, outputs, "output 0", "scale must be greater than",
                      "MUL: a quantized output's scale must exceed input0_scale * input1_scale "
                      "(NNAPI types.spec)", scale=inputs[0].scale * inputs[1].scale / 2)


for _op, _fn, _ifn, _levels in (
        (OperationType.ADD, np.add, np.add, [(1, (F32, Q8)), (3, (F16,)), (4, (Q8S, I32))]),
        (OperationType.MUL, np.multiply, np.multiply,
         [(1, (F32, Q8)), (3, (F16,)), (4, (Q8S, I32))]),
        (OperationType.SUB, np.subtract, np.subtract,
         [(2, (F32,)), (3, (F16, Q8)), (4, (Q8S, I32))]),
        (OperationType.DIV, np.divide, _int32_floor_divide, [(2, (F32,)), (3, (F16,)), (4, (I32,))])):
    register(OperationDef(_op, _binary_signatures(_levels), _binary_prepare,
                          int32_binary_execute(_ifn, binary_execute(_fn, 2)),
                          validate=_binary_validate, generate=_generate_binary, error_budget=budgets.elementwise(_op),
                          error_inputs=chain(fuse_code(2, f"NNAPI types.spec {_op.name}"),
                                             *([_mul_output_scale] if _op == OperationType.MUL else [])),
                          summary=f"{_op.name}(input0, input1) with broadcasting and fused activation",
                          allows_zero_sized_input=True, aosp_source="BroadcastExecution.cpp"))


# --- unary: activations, FLOOR, DEQUANTIZE ------------------------------------------------

def _prepare(ctx: OpContext):
    """Output shape of RELU*/LOGISTIC/TANH/FLOOR/DEQUANTIZE: the input's (rank <= 4)."""
    return same_shape(ctx)


def _same_quant_validate(ctx: OpContext):
    """RELU/RELU1/RELU6: a TENSOR_QUANT8_ASYMM (FL1) or TENSOR_QUANT8_ASYMM_SIGNED (FL4)
    output has the input's scale and zeroPoint."""
    inp, out = ctx.inputs[0], ctx.outputs[0]
    if out.type in QUANT8:
        check(np.float32(out.scale) == np.float32(inp.scale) and out.zero_point == inp.zero_point,
              f"{ctx.operation.name}: output 0 ({out.type.name}) must have the scale and "
              f"zeroPoint of input 0 ({inp.scale}, {inp.zero_point}), got "
              f"({out.scale}, {out.zero_point})")


def _sigmoid(x):
    """``1 / (1 + exp(-x))``, for x < 0 as ``exp(x) / (1 + exp(x))``: exp(-x) overflows float32
    from x = -88.7, which gave 0 where the result is a subnormal (the precision sweep found
    it); the same two roundings elsewhere."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


_Q_ACTIVATION_SIGS = unary_sigs(1, (F32, Q8)) + unary_sigs(3, (F16,)) + unary_sigs(4, (Q8S,))
#: LOGISTIC's output quantization (types.spec): scale 1/256, zeroPoint 0 (TENSOR_QUANT8_ASYMM,
#: FL1) or -128 (TENSOR_QUANT8_ASYMM_SIGNED, FL4).
_LOGISTIC_SIGS = (unary_sigs(1, (F32, Q8), out_quant={Q8: (1.0 / 256, 0)}) + unary_sigs(3, (F16,))
                  + unary_sigs(4, (Q8S,), out_quant={Q8S: (1.0 / 256, -128)}))
#: TANH's: scale 1/128, zeroPoint 128 (TENSOR_QUANT8_ASYMM, FL3) or 0 (signed, FL4).
_TANH_SIGS = (unary_sigs(1, (F32,)) + unary_sigs(3, (F16,))
              + unary_sigs(3, (Q8,), out_quant={Q8: (1.0 / 128, 128)})
              + unary_sigs(4, (Q8S,), out_quant={Q8S: (1.0 / 128, 0)}))
_DEQUANTIZE_SIGS = (unary_sigs(1, (Q8,), out_type=F32) + unary_sigs(3, (Q8,), out_type=F16)
                    + tuple(s for t in (T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
                            for o in (F32, F16) for s in unary_sigs(3, (t,), out_type=o))
                    + unary_sigs(4, (Q8S,), out_type=F32) + unary_sigs(4, (Q8S,), out_type=F16))

def _unary_generator(lo: float, hi: float, same_quant: bool = False):
    """A draft hook preferring input values in [``lo``, ``hi``] (see :func:`draft_range`);
    ``same_quant``: a quantized output takes the input's scale and zeroPoint
    (RELU/RELU1/RELU6). Outputs the spec fixes (LOGISTIC, TANH) take their slot's
    ``fixed_quant``."""
    def generate(d) -> None:
        draft_range(d, 0, lo, hi)
        if same_quant and d[0].type in QUANT8:
            d.out_quant[0] = (d[0].scale, d[0].zero_point)
    return generate


def _generate_dequantize(d) -> None:
    """DEQUANTIZE drafts: a TENSOR_QUANT8_SYMM_PER_CHANNEL input takes its scales on a
    random channelDim (spec: any dimension); other inputs keep the defaults."""
    if d[0].type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        d.per_channel(0, d.integer(0, len(d[0].dims) - 1))


_GENERATE = {
    OperationType.RELU: _unary_generator(-4.0, 4.0, True),
    OperationType.RELU1: _unary_generator(-3.0, 3.0, True),
    OperationType.RELU6: _unary_generator(-8.0, 10.0, True),
    OperationType.LOGISTIC: _unary_generator(-6.0, 6.0),
    OperationType.TANH: _unary_generator(-3.0, 3.0),
    OperationType.FLOOR: _unary_generator(-8.0, 8.0),
    OperationType.DEQUANTIZE: _generate_dequantize,
}

#: Invalid uses of the activations (NNAPI types.spec): RELU* outputs keep the input's
#: quantization; LOGISTIC and TANH outputs have a fixed one.
_ERROR_INPUTS = {
    **{op: output_quant_of_input("must have the scale and zeroPoint of input 0",
                                 f"NNAPI types.spec {op.name}")
       for op in (OperationType.RELU, OperationType.RELU1, OperationType.RELU6)},
    OperationType.LOGISTIC: fixed_output_quant(OperationType.LOGISTIC),
    OperationType.TANH: fixed_output_quant(OperationType.TANH),
}

for _op, _fn, _sigs, _summary, _validate in (
        (OperationType.RELU, lambda x: np.maximum(x, 0), _Q_ACTIVATION_SIGS, "max(0, x)",
         _same_quant_validate),
        (OperationType.RELU1, lambda x: np.clip(x, -1, 1), _Q_ACTIVATION_SIGS,
         "clamp(x, -1, 1)", _same_quant_validate),
        (OperationType.RELU6, lambda x: np.clip(x, 0, 6), _Q_ACTIVATION_SIGS,
         "clamp(x, 0, 6)", _same_quant_validate),
        (OperationType.LOGISTIC, _sigmoid, _LOGISTIC_SIGS, "1 / (1 + exp(-x))", None),
        (OperationType.TANH, np.tanh, _TANH_SIGS, "tanh(x)", None),
        (OperationType.FLOOR, np.floor, unary_sigs(1, (F32,)) + unary_sigs(3, (F16,)),
         "floor(x)", None),
        (OperationType.DEQUANTIZE, lambda x: x, _DEQUANTIZE_SIGS, "(q - zeroPoint) * scale",
         None)):
    register(OperationDef(_op, _sigs, _prepare, unary_execute(_fn, raw_types=()),
                          validate=_validate, summary=_summary, generate=_GENERATE[_op],
                          error_budget=budgets.elementwise(_op),
                          error_inputs=_ERROR_INPUTS.get(_op),
                          allows_zero_sized_input=_op != OperationType.FLOOR,
                          decision=floor_decision if _op == OperationType.FLOOR else None,
                          aosp_source={OperationType.FLOOR: "ElementwiseExecution.cpp",
                                       OperationType.DEQUANTIZE: "DequantizeExecution.cpp"}.get(
                                           _op, "ActivationExecution.cpp")))
