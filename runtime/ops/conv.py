"""Convolutions: CONV_2D (3), DEPTHWISE_CONV_2D (4) and GROUPED_CONV_2D (55), feature levels
1-4 (FL4: the TENSOR_QUANT8_ASYMM_SIGNED forms; nothing new at FL5+).

Shapes. Input [batches, height, width, depth_in] (NHWC) or, with the layout flag true,
[batches, depth_in, height, width] (NCHW); the output [batches, out_height, out_width,
depth_out] in the same layout. Only batches may be 0 (zero batches give an empty output).
The filter and bias are layout-independent:

- CONV_2D: filter [depth_out, filter_height, filter_width, depth_in], bias [depth_out].
- DEPTHWISE_CONV_2D: filter [1, filter_height, filter_width, depth_out] with
  depth_out = depth_in * depth_multiplier; output channel ``c * depth_multiplier + m``
  reads input channel ``c``.
- GROUPED_CONV_2D: filter [depth_out, filter_height, filter_width, depth_group] with
  depth_in = num_groups * depth_group and depth_out a multiple of num_groups; output
  channel ``o`` belongs to group ``g = o // (depth_out / num_groups)`` and reads input
  channels ``g * depth_group ... (g + 1) * depth_group - 1``.

Inputs (indexes). CONV_2D explicit padding: 0 input, 1 filter, 2 bias, 3-6 padding left,
right, top, bottom, 7-8 stride width, height, 9 FuseCode, then (FL3, optional) 10 layout
BOOL, 11-12 dilation width, height (13 inputs). Implicit padding: 3 PaddingCode, 4-5
strides, 6 FuseCode, (FL3) 7 layout, 8-9 dilation. So CONV_2D takes 7, 8, 10, 11 or 13
inputs; with 10 it is the explicit form when input 7 is INT32, the implicit one with
dilation when input 7 is BOOL (as AOSP ``conv_2d::validate`` decides).
DEPTHWISE_CONV_2D: the same with ``depth_multiplier`` before the FuseCode (explicit 9,
implicit 6), so every later index is one higher (8, 9, 11, 12 or 14 inputs; with 11 the
type of input 8 decides). GROUPED_CONV_2D (FL3 only): explicit 3-6 paddings, 7-8 strides,
9 num_groups, 10 FuseCode, 11 layout (12 inputs); implicit 3 PaddingCode, 4-5 strides,
6 num_groups, 7 FuseCode, 8 layout (9 inputs); the layout flag is not optional there.

Types (input, filter, bias, output):

- FL1: TENSOR_FLOAT32 x4; TENSOR_QUANT8_ASYMM input/filter/output with a TENSOR_INT32 bias
  of scale input_scale * filter_scale, zeroPoint 0 (CONV_2D, DEPTHWISE_CONV_2D).
- FL3: TENSOR_FLOAT16 x4 (float16 bias); TENSOR_QUANT8_ASYMM input/output with a
  TENSOR_QUANT8_SYMM_PER_CHANNEL filter (channelDim 0 for CONV_2D and GROUPED_CONV_2D, 3 for
  DEPTHWISE_CONV_2D) and a TENSOR_INT32 bias whose value ``i`` has scale
  input_scale * filter_scale[i] (its own scale is ignored; zeroPoint 0); the layout flag and
  dilation forms of every FL1/FL3 type; all of GROUPED_CONV_2D.
- FL4: TENSOR_QUANT8_ASYMM_SIGNED input/output with a TENSOR_QUANT8_ASYMM_SIGNED filter
  (TENSOR_INT32 bias of scale input_scale * filter_scale, zeroPoint 0) or with a
  TENSOR_QUANT8_SYMM_PER_CHANNEL filter (same channelDim and bias rules as the FL3
  per-channel row), in every form: explicit/implicit padding, layout flag, dilation (all
  FL4: AOSP ``validate`` gives a quant8-signed input feature level 4 whatever the other
  inputs), and both GROUPED_CONV_2D forms.

Errors (OperationError naming the input and rule): ranks (input and filter 4-D, bias
1-D); height, width, depth_in, depth_out 0; CONV_2D filter depth != depth_in;
DEPTHWISE_CONV_2D filter dimension 0 != 1, depth_multiplier <= 0 or
depth_in * depth_multiplier != depth_out; GROUPED_CONV_2D num_groups <= 0, depth_in !=
num_groups * depth_group or depth_out not a multiple of num_groups; bias size != depth_out;
the window rules of :func:`.common.read_window` (strides and dilations > 0, paddings >= 0
and smaller than the effective filter extent ``(filter - 1) * dilation + 1``, output size
> 0); a FuseCode outside 0-3; past the work bound :data:`MAX_MACS`. At model time
(``validate``): a per-tensor quantized bias whose scale is not input_scale * filter_scale
or whose zeroPoint is not 0, a per-channel filter with the wrong channelDim or without
scales, a per-channel bias with a zeroPoint other than 0.

Sources: NNAPI ``types.spec`` / ``NeuralNetworksTypes.h`` (CONV_2D and DEPTHWISE_CONV_2D
FL1, their FL3 and FL4 additions; GROUPED_CONV_2D FL3, its FL4 signed forms), AOSP ``common/types/operations/src/
{Conv2D,DepthwiseConv2D,GroupedConv2D}.cpp`` (``validate``: operand counts, layout/dilation
detection, per-channel channelDim, feature levels) and the AOSP CPU ``prepare`` of
``common/cpu_operations/Conv2D.cpp``, ``DepthwiseConv2D.cpp`` and
``common/OperationsExecutionUtils.cpp`` ``groupedConvPrepare`` / ``calculateExplicitPadding``
(shape rules; SAME padding from the dilated filter extent).

Arithmetic. TENSOR_FLOAT32 computes in float32 (matrix products through BLAS, as TFLite
does; the CTS float32 criteria, atol 1e-5 + rtol 5.96e-7, hold for it on the whole corpus).
The quantized forms (8-bit input and filter, INT32 bias) sum the integer products
``(input - zeroPoint) * (filter - zeroPoint)`` exactly (:func:`.window.integer_operands`:
float32 BLAS when no sum can reach 2^24, else float64; the filter's integer form is made
once for a prepared model's constant filter), then take real = sum * input_scale *
filter_scale + real bias and store it as ``common.from_float`` does
(:func:`.window.requantize`: round half away from zero, saturate). TENSOR_FLOAT16 computes
in float64 on real values (``common.to_float``) and rounds once at the end (the policy of
``common``).
AOSP's quantized kernels use fixed-point multipliers; the criteria allow 1 quantum.
A TENSOR_QUANT8_ASYMM model breaking the FL1-2 rule ``output_scale > input_scale *
filter_scale`` is not invalid: as in AOSP, it needs feature level 3 (``validate`` records
that; :func:`.common.meets_fl1_output_scale`). Departures from AOSP: none known; the layout
and dilation inputs may also be omitted (no value), meaning NHWC and dilation 1.

Kernels. CONV_2D (and GROUPED_CONV_2D with one group): :func:`direct_conv`, a 1x1 filter
without padding as one matrix product of the (strided) input, any other as the padded
input's patches (im2col) times the filter matrix. DEPTHWISE_CONV_2D: :func:`depthwise_taps`,
one ``np.einsum`` over the taps of a view of the padded input whose inner axis runs along an
output row. Both copy the input once, padded; when that copy would pass
:data:`MAX_PADDED_ELEMENTS` (huge paddings or dilations), or the groups are real
(GROUPED_CONV_2D), :func:`window_conv` runs:
it gathers, for chunks of output positions, the input cells each filter tap reads (cells
outside the input read a zero) and contracts them with the filter by one batched matrix
product per chunk (a batch per group), with no padded copy, so huge paddings and dilations
cost memory in proportion to the output only. The work is bounded by :data:`MAX_MACS`.
TRANSPOSE_CONV_2D (``transpose_conv.py``) uses :func:`window_conv` too; the kernel and the
window helpers live in :mod:`.window`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..types import OperationType
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (Window2D, check_fuse_code, from_float, from_nhwc, layout_dims,
                     meets_fl1_output_scale, nhwc_dims, read_window, to_float, to_nhwc, window_args)
from .error_inputs import PREPARE, chain, changed, grown, quant_bias
from .window import (F16, F32, GEN_MACS, GEN_MIN_OUTPUT, GEN_OUTPUT_ELEMENTS, I32, MAX_PADDED_ELEMENTS,
                     PER_CHANNEL, Q8, Q8S, T, bias_activation, bias_real, check_filter_quant,
                     check_work, compute_dtype, depthwise_columns, depthwise_taps, direct_conv,
                     draft_bias, draft_count, draft_linked, draft_quantization, draft_rms,
                     draft_spatial, draft_target, draft_weights, draft_window_axis, integer_operands,
                     optional_flag, optional_int, padded_size, param_window, requantize, window_axes,
                     window_conv)

#: (feature level, input, filter, bias) type rows of the convolutions (a form with the
#: layout flag or dilation is at least FL3; GROUPED_CONV_2D and TRANSPOSE_CONV_2D at least
#: FL3 for every row).
TYPE_ROWS_FL1 = ((1, F32, F32, F32), (1, Q8, Q8, I32))
TYPE_ROWS_FL3 = ((3, F16, F16, F16), (3, Q8, PER_CHANNEL, I32))
TYPE_ROWS_FL4 = ((4, Q8S, Q8S, I32), (4, Q8S, PER_CHANNEL, I32))


# --- signatures ---------------------------------------------------------------------------

def _conv_signatures(depthwise: bool):
    """CONV_2D / DEPTHWISE_CONV_2D: per type row, explicit and implicit padding, also with
    the optional layout flag, and with layout + dilation (width, height); those two forms
    are FL3 for the FL1/FL3 rows and FL4 for the quant8-signed rows (AOSP ``validate``)."""
    sigs = []
    for level, t, filter_t, bias_t in TYPE_ROWS_FL1 + TYPE_ROWS_FL3 + TYPE_ROWS_FL4:
        for explicit in (True, False):
            inputs = [tensor("input", t, (4,)), tensor("filter", filter_t, (4,)),
                      tensor("bias", bias_t, (1,)), *window_args(explicit)]
            if depthwise:
                inputs.append(scalar("depth_multiplier", T.INT32))
            inputs.append(scalar("activation", T.INT32))
            outputs = [tensor("output", t, (4,))]
            sigs.append(sig(level, inputs, outputs))
            layout = scalar("layout", T.BOOL, optional=True)
            dilation = [scalar("dilation_width", T.INT32, optional=True),
                        scalar("dilation_height", T.INT32, optional=True)]
            sigs.append(sig(max(level, 3), inputs + [layout], outputs))
            sigs.append(sig(max(level, 3), inputs + [layout, *dilation], outputs))
    return tuple(sigs)


def _grouped_signatures():
    """GROUPED_CONV_2D: explicit (12 inputs) and implicit (9) padding, layout last; FL3 for
    the FL1/FL3 type rows, FL4 for the quant8-signed rows."""
    sigs = []
    for level, t, filter_t, bias_t in TYPE_ROWS_FL1 + TYPE_ROWS_FL3 + TYPE_ROWS_FL4:
        for explicit in (True, False):
            inputs = [tensor("input", t, (4,)), tensor("filter", filter_t, (4,)),
                      tensor("bias", bias_t, (1,)), *window_args(explicit),
                      scalar("num_groups", T.INT32), scalar("activation", T.INT32),
                      scalar("layout", T.BOOL)]
            sigs.append(sig(max(level, 3), inputs, [tensor("output", t, (4,))]))
    return tuple(sigs)


# --- parameters ----------------------------------------------------------------------------

CONV, DEPTHWISE, GROUPED = "CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D"


@dataclass(frozen=True)
class ConvParams:
    """Resolved parameters of one convolution: layout, window (with dilation), number of
    groups (CONV_2D 1, DEPTHWISE_CONV_2D depth_in), FuseCode and NHWC input/output dims."""

    nchw: bool
    win: Window2D
    groups: int
    activation: int
    in_nhwc: tuple[int, int, int, int]
    depth_out: int

    @property
    def out_nhwc(self) -> tuple[int, int, int, int]:
        return (self.in_nhwc[0], *self.win.out_hw, self.depth_out)


def _layout_indexes(ctx: OpContext, kind: str) -> tuple[bool, int]:
    """(explicit padding?, index of the FuseCode input); the layout flag follows it."""
    n = len(ctx.inputs)
    if kind == GROUPED:
        explicit = n == 12
        return explicit, 10 if explicit else 7
    probe = 7 if kind == CONV else 8  # stride_height (explicit) or layout (implicit)
    explicit = n >= probe + 3 and ctx.inputs[probe].type == T.INT32
    return explicit, (probe + 2 if explicit else probe - 1)


def conv_params(ctx: OpContext, kind: str) -> ConvParams:
    """Check shapes and scalars of a CONV_2D / DEPTHWISE_CONV_2D / GROUPED_CONV_2D use
    (rules in the module docstring); returns its :class:`ConvParams`. Raises
    OperationError."""
    inp, flt, bias = ctx.inputs[:3]
    check(inp.rank == 4, f"input 0 (input) {list(inp.dims)} must be 4-D")
    check(flt.rank == 4, f"input 1 (filter) {list(flt.dims)} must be 4-D")
    check(bias.rank == 1, f"input 2 (bias) {list(bias.dims)} must be 1-D")
    explicit, act_index = _layout_indexes(ctx, kind)
    nchw = optional_flag(ctx, act_index + 1)
    batches, h, w, depth_in = nhwc_dims(inp.dims, nchw)
    fh, fw = flt.dims[1], flt.dims[2]
    if kind == DEPTHWISE:
        depth_out, multiplier = flt.dims[3], ctx.scalar(act_index - 1)
        check(flt.dims[0] == 1, f"input 1 (filter) {list(flt.dims)}: dimension 0 must be 1")
        check(multiplier > 0, f"input {act_index - 1} (depth_multiplier) {multiplier} must be > 0")
        check(depth_in * multiplier == depth_out,
              f"input 1 (filter) depth_out {depth_out} must equal depth_in {depth_in} * "
              f"depth_multiplier {multiplier}")
        groups = depth_in
    elif kind == GROUPED:
        depth_out, groups = flt.dims[0], ctx.scalar(act_index - 1)
        check(groups > 0, f"input {act_index - 1} (num_groups) {groups} must be > 0")
        check(flt.dims[3] * groups == depth_in,
              f"input 1 (filter) depth {flt.dims[3]} * num_groups {groups} must equal the "
              f"input depth {depth_in}")
        check(depth_out % groups == 0,
              f"input 1 (filter) depth_out {depth_out} must be a multiple of num_groups {groups}")
    else:
        depth_out, groups = flt.dims[0], 1
        check(flt.dims[3] == depth_in,
              f"input 1 (filter) depth {flt.dims[3]} must equal the input depth {depth_in}")
    check(bias.dims[0] == depth_out,
          f"input 2 (bias) size {bias.dims[0]} must equal depth_out {depth_out}")
    check(h > 0 and w > 0 and depth_in > 0 and depth_out > 0,
          f"input 0 (input) {list(inp.dims)} and depth_out {depth_out}: height, width and "
          f"depths must be > 0 (only batches may be 0)")
    activation = ctx.scalar(act_index)
    check_fuse_code(activation)
    dilation = (1, 1)
    if kind != GROUPED:
        dilation = (optional_int(ctx, act_index + 3, 1), optional_int(ctx, act_index + 2, 1))
    win = read_window(ctx, 3, explicit, (h, w), (fh, fw), dilation)
    return ConvParams(nchw, win, groups, activation, (batches, h, w, depth_in), depth_out)


def _has(d, name: str) -> bool:
    return any(s.arg.name == name for s in d.slots)


def _generate_conv(kind: str):
    def generate(d) -> None:
        """Filter [depth_out, fh, fw, depth_in / groups] (DEPTHWISE: [1, fh, fw, depth_in *
        multiplier]), bias [depth_out] of scale input * filter scale, zeroPoint 0 (NNAPI);
        window per AOSP prepare; weights scaled so the sums straddle the activation's clamp."""
        nchw = bool(d.slot("layout").value) if _has(d, "layout") else False
        explicit = _has(d, "padding_left")
        scheme = None if explicit else int(d.slot("padding_scheme").value)
        activation = int(d.slot("activation").value)
        groups = 1
        if kind == GROUPED:
            groups = d.integer(1, 4)
        if not draft_linked(d):
            n = d.dim(1, 3)
            c = groups * d.dim(1, 4) if kind == GROUPED else d.dim(1, 12)
            h, w = draft_spatial(d, d.max_elements // (n * c))
            d.tensor(0, layout_dims((n, h, w, c), nchw))
        n, h, w, cin = nhwc_dims(d.slots[0].dims, nchw)
        if kind == GROUPED and cin % groups:
            divisors = [g for g in range(2, min(cin, 8) + 1) if cin % g == 0]
            groups = d.choice(divisors) if divisors and d.coin(0.8) else 1
        dil = _has(d, "dilation_width")
        fh, sh, dh, top, bottom, oh = draft_window_axis(d, h, dilation=dil, scheme=scheme)
        fw, sw, dw, left, right, ow = draft_window_axis(d, w, dilation=dil, scheme=scheme)
        param_window(d, explicit, (left, right, top, bottom), (sw, sh))
        if dil:
            d.param("dilation_width", dw)
            d.param("dilation_height", dh)
        positions = n * oh * ow
        depth_group = cin // groups if kind != DEPTHWISE else 1
        cap = max(1, min(GEN_OUTPUT_ELEMENTS // positions,
                         GEN_MACS // max(1, positions * fh * fw * depth_group)))
        want = -(-GEN_MIN_OUTPUT // positions)
        if kind == DEPTHWISE:
            per_channel = -(-want // cin)
            mult = draft_count(d, cap // cin, max(3, per_channel), per_channel)
            d.param("depth_multiplier", mult)
            depth_out = cin * mult
            filter_dims = [1, fh, fw, depth_out]
        elif kind == GROUPED:
            d.param("num_groups", groups)
            per_group = -(-want // groups)
            depth_out = groups * draft_count(d, cap // groups, max(4, per_group), per_group)
            filter_dims = [depth_out, fh, fw, depth_group]
        else:
            depth_out = draft_count(d, cap, max(16, want), want)
            filter_dims = [depth_out, fh, fw, cin]
        d.tensor(1, filter_dims)
        d.tensor(2, [depth_out])
        spread, centre = draft_target(d, activation)
        draft_quantization(d, activation, spread, centre, positions * depth_out)
        taps = min(fh, -(-h // dh)) * min(fw, -(-w // dw))  # filter cells that can hit the input
        scales = draft_weights(d, 1, taps * depth_group, draft_rms(d, 0), spread,
                               3 if kind == DEPTHWISE else 0)
        draft_bias(d, 2, spread, centre, d.slots[0].scale, scales)
    return generate


# --- rows --------------------------------------------------------------------------------

def _validator(kind: str):
    def validate(ctx: OpContext) -> None:
        """Model-time rules: quantized bias / per-channel filter
        (:func:`check_filter_quant`); a quant8 output scale <= input scale * filter scale
        makes the use feature level 3. Raises OperationError."""
        check_filter_quant(ctx, 3 if kind == DEPTHWISE else 0)
        if not meets_fl1_output_scale(ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]):
            ctx.require_feature_level(3, "quant8 output scale <= input scale * filter scale")
    return validate


def _error_inputs(kind: str):
    """Invalid uses of a convolution (NNAPI types.spec CONV_2D / DEPTHWISE_CONV_2D /
    GROUPED_CONV_2D): at model validation a quantized bias off input_scale * filter_scale or
    with zeroPoint 1; at prepare (AOSP ``conv2d::prepare``, ``depthwise_conv_2d::prepare``,
    ``groupedConvPrepare``) a filter depth off the input depth (CONV_2D, GROUPED_CONV_2D),
    a depth_multiplier off depth_out / depth_in (DEPTHWISE_CONV_2D) and a bias longer than
    depth_out."""
    src = f"NNAPI types.spec {kind}"

    def depth(inputs, outputs):
        if kind == DEPTHWISE:
            j = _layout_indexes(OpContext(OperationType.DEPTHWISE_CONV_2D, inputs, outputs),
                                kind)[1] - 1
            if inputs[j].value is not None:
                m = int(inputs[j].value)
                yield changed(inputs, outputs, f"input {j}", "must equal depth_in",
                              f"depth_multiplier {m + 1}: depth_out must be depth_in * "
                              f"depth_multiplier ({src})", PREPARE, value=m + 1)
        else:
            yield from grown(1, 3, "must equal the input depth",
                             f"filter depth must be the input depth"
                             f"{' / num_groups' if kind == GROUPED else ''} ({src})")(inputs, outputs)
    return chain(quant_bias(src), depth,
                 grown(2, 0, "must equal depth_out", f"bias length must be depth_out ({src})"))


#: :func:`conv_params` results by everything they depend on (:func:`_params_key`); at most
#: :data:`_PARAMS_MEMO_SIZE` of them (then it starts afresh).
_PARAMS_MEMO: dict = {}
_PARAMS_MEMO_SIZE = 4096


def _params_key(ctx: OpContext, kind: str):
    """What :func:`conv_params` reads: the type and dimensions of inputs 0-2, the type,
    omission and value of every scalar input. None when a scalar input holds more than one
    value (no memo: conv_params reports it)."""
    key = [kind]
    for v in ctx.inputs[:3]:
        key.append((v.type, tuple(v.dims)))
    for v in ctx.inputs[3:]:
        value = v.value
        if value is not None:
            if getattr(value, "size", 1) != 1:
                return None
            value = value.item() if isinstance(value, np.ndarray) else value
        key.append((v.type, v.omitted, value))
    return tuple(key)


def _params_of(ctx: OpContext, kind: str) -> ConvParams:
    """:func:`conv_params` of ``ctx``, remembered by what it depends on (the same
    convolution is prepared and executed, then executed again, with the same parameters)."""
    key = _params_key(ctx, kind)
    p = _PARAMS_MEMO.get(key) if key is not None else None
    if p is None:
        p = conv_params(ctx, kind)
        if key is not None:
            if len(_PARAMS_MEMO) >= _PARAMS_MEMO_SIZE:
                _PARAMS_MEMO.clear()
            _PARAMS_MEMO[key] = p
    return p


def _kernel(kind: str):
    def prepare(ctx: OpContext):
        """Output [batches, out_height, out_width, depth_out] (NCHW: [batches, depth_out,
        out_height, out_width])."""
        p = _params_of(ctx, kind)
        ctx.prepared = (ctx.inputs, p)  # for execute, while the inputs are these
        return [layout_dims(p.out_nhwc, p.nchw)]

    def execute(ctx: OpContext):
        """Sum over the window (and the group's input channels) of input * filter, plus
        bias, then the fused activation; float64 from real values, stored in the output
        type and layout. Raises OperationError past :data:`MAX_MACS`."""
        memo = ctx.prepared
        p = memo[1] if isinstance(memo, tuple) and memo[0] is ctx.inputs else _params_of(ctx, kind)
        check_filter_quant(ctx, 3 if kind == DEPTHWISE else 0)
        inp, flt, bias = ctx.inputs[:3]
        (fh, fw), (oh, ow) = p.win.filter_hw, p.win.out_hw
        batches, _, _, depth_in = p.in_nhwc
        check_work(batches * oh * ow * p.depth_out * fh * fw * (depth_in // p.groups))
        out = ctx.outputs[0]
        dtype = compute_dtype(inp, flt, bias, out)
        mult = p.depth_out // depth_in if kind == DEPTHWISE else 1  # the depthwise kernel widens x
        copies = padded_size(p.in_nhwc, p.win)
        if kind == DEPTHWISE:
            copies = max(copies, depthwise_columns(p.in_nhwc, p.win))
        direct = copies * mult <= MAX_PADDED_ELEMENTS and (kind != GROUPED or p.groups == 1)
        # the integer path pads its NHWC input while still 8-bit (the direct kernels then
        # see no padding)
        win = p.win
        pre_pad = direct and not p.nchw and (win.pad_top or win.pad_bottom or win.pad_left or win.pad_right)
        # the integer path stores into an 8-bit output; any other (a driver's probe asking
        # for TENSOR_INT32 sums, runtime.drivers.fixed_point) takes the real-valued path
        ints = None if dtype == np.float32 or out.type not in (Q8, Q8S) else integer_operands(
            inp, flt, bias, 3 if kind == DEPTHWISE else 0, win if pre_pad else None)
        scale = None
        if ints is not None:  # quantized: exact integer sums, scaled once
            x, f, scale = ints
            x = to_nhwc(x, p.nchw)
            if pre_pad:
                win = replace(win, pad_top=0, pad_bottom=0, pad_left=0, pad_right=0)
        else:
            f = flt.value if dtype == np.float32 else to_float(flt)
            x = to_nhwc(inp.value if dtype == np.float32 else to_float(inp), p.nchw)
        if direct and kind != DEPTHWISE:
            acc = direct_conv(x, f, win)
        elif direct:
            acc = depthwise_taps(x, f[0], None, 0, win, mult)
        else:
            if kind == DEPTHWISE:  # [1, fh, fw, depth_out] -> grouped form [depth_out, fh, fw, 1]
                f = f[0].transpose(2, 0, 1)[..., None]
            acc = window_conv(x.astype(np.float64, copy=False), f.astype(np.float64, copy=False),
                              p.groups, *window_axes(p.win), p.win.out_hw).astype(dtype, copy=False)
        if scale is not None:  # one pass from the sums to the stored values
            return [from_nhwc(requantize(acc, scale, inp, flt, bias, p.activation, out), p.nchw)]
        real = bias_activation(acc, bias.value if dtype == np.float32 else bias_real(inp, flt, bias),
                               p.activation)
        if dtype != np.float32:
            real = from_float(out, real)
        return [from_nhwc(real, p.nchw)]

    return prepare, execute


for _op, _kind, _sigs, _summary in (
        (OperationType.CONV_2D, CONV, _conv_signatures(False),
         "2-D convolution (NHWC or NCHW, optional dilation) with bias and fused activation"),
        (OperationType.DEPTHWISE_CONV_2D, DEPTHWISE, _conv_signatures(True),
         "2-D depthwise convolution (NHWC or NCHW, optional dilation) with depth multiplier, "
         "bias and fused activation"),
        (OperationType.GROUPED_CONV_2D, GROUPED, _grouped_signatures(),
         "2-D convolution in channel groups (NHWC or NCHW) with bias and fused activation")):
    _prepare, _execute = _kernel(_kind)
    register(OperationDef(_op, _sigs, _prepare, _execute, validate=_validator(_kind),
                          generate=_generate_conv(_kind), summary=_summary,
                          error_inputs=_error_inputs(_kind),
                          error_budget=budgets.conv("depthwise" if _kind == DEPTHWISE else "conv"),
                          allows_zero_sized_input=_kind != GROUPED,
                          aosp_source={CONV: "Conv2DExecution.cpp",
                                       DEPTHWISE: "DepthwiseConv2DExecution.cpp"}.get(
                                           _kind, "CpuExecutor.cpp")))
