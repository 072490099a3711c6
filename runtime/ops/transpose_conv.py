"""TRANSPOSE_CONV_2D (91, feature levels 3-4): the transposed (fractionally strided) 2-D
convolution, the gradient of CONV_2D with respect to its input.

Shapes. Input [batches, height, width, depth_in] (NHWC) or [batches, depth_in, height,
width] (layout flag true, NCHW); filter [depth_out, filter_height, filter_width, depth_in];
bias [depth_out]; output [batches, out_height, out_width, depth_out] in the input's layout.
Input cell (y, x) scatters ``input[y, x, :] . filter[o, a, b, :]`` to output cell
``(y * stride_height + a - padding_top, x * stride_width + b - padding_left)``; the output
is ``out_height = height * stride_height + filter_height - stride_height - padding_top -
padding_bottom`` (widths likewise; AOSP ``computeOutSizeTransposeConv``). Only batches may
be 0 (zero batches, e.g. from ROI_ALIGN, give an empty output).

Inputs. Explicit padding (11 inputs): 0 input, 1 filter, 2 bias, 3-6 padding left, right,
top, bottom, 7-8 stride width, height, 9 FuseCode, 10 layout BOOL. Implicit padding (9
inputs): 0-2 as above, 3 output shape (1-D TENSOR_INT32 of 4 values, in the layout of the
input; only its height and width are read), 4 PaddingCode, 5-6 stride width, height, 7
FuseCode, 8 layout BOOL. The layout flag is not optional. With implicit padding the
paddings come from the requested output size ``out`` of each axis (AOSP
``calculateExplicitPaddingTransposeConv``): VALID gives 0, 0; SAME gives, with
``tmp = (ceil(out / stride) - 1) * stride + filter``, head ``max(tmp - out, 0) // 2`` and
tail ``tmp - out - head`` (the tail may be negative), so the output size equals ``out``
when ``height == ceil(out / stride)``.

Types (input, filter, bias, output), all FL3: TENSOR_FLOAT32 x4; TENSOR_FLOAT16 x4;
TENSOR_QUANT8_ASYMM input, filter and output with a TENSOR_INT32 bias of scale
input_scale * filter_scale and zeroPoint 0; TENSOR_QUANT8_ASYMM input/output with a
TENSOR_QUANT8_SYMM_PER_CHANNEL filter (channelDim 0) and a TENSOR_INT32 bias whose value
``i`` has scale input_scale * filter_scale[i] (zeroPoint 0). FL4: the same two quantized
rows with TENSOR_QUANT8_ASYMM_SIGNED input and output (filter TENSOR_QUANT8_ASYMM_SIGNED or
TENSOR_QUANT8_SYMM_PER_CHANNEL), both padding forms (AOSP ``validate``: a quant8-signed
input makes the use feature level 4).

Errors (OperationError naming the input and rule): input and filter not 4-D, bias not 1-D;
height, width, depth_in or depth_out 0; filter depth != depth_in; bias size != depth_out;
padding left or top < 0 (right and bottom may be negative, as in AOSP); strides <= 0;
filter height or width 0; output shape not 4 values or its height/width <= 0; a padding
code other than SAME (1) or VALID (2); output height or width <= 0; a FuseCode outside 0-3;
past the work bound (``conv.MAX_MACS``). At model time: the quantized bias and per-channel
rules of ``conv.check_filter_quant``.

Sources: NNAPI ``types.spec`` / ``NeuralNetworksTypes.h`` (TRANSPOSE_CONV_2D, FL3; signed
FL4), AOSP
``common/types/operations/src/TransposeConv2D.cpp`` (``validate``: operand counts and types,
per-channel channelDim 0) and the CPU ``prepare`` of ``common/cpu_operations/
TransposeConv2D.cpp`` plus ``OperationsExecutionUtils`` (padding and output size).
Departures from AOSP: AOSP treats a padding code other than SAME as VALID and reads output
shape values without checking them; the reference rejects codes other than SAME/VALID and
non-positive output heights/widths (the spec allows only those values). Arithmetic as in
``conv``: float64 on real values, one final store (``common.from_float``); AOSP's quantized
kernel uses fixed-point multipliers, within the criteria's 1 quantum.

Kernel: ``conv.window_conv`` with the transposed index map (output row ``i``, filter row
``a`` reads input row ``(i + padding_top - a) / stride_height`` when that is an integer
inside the input, else zero); memory is bounded by the output size, never by the paddings.
"""
from __future__ import annotations

import numpy as np

from ..types import OperandType, OperationType, PaddingCode
from . import budgets
from .base import OpContext, OperationDef, check, register, scalar, sig, tensor
from .common import (apply_activation, check_fuse_code, from_float, from_nhwc, layout_dims,
                     nhwc_dims, to_float, to_nhwc)
from .conv import TYPE_ROWS_FL1, TYPE_ROWS_FL3, TYPE_ROWS_FL4
from .error_inputs import quant_bias
from .window import (GEN_MACS, GEN_MIN_OUTPUT, GEN_OUTPUT_ELEMENTS, bias_real, check_filter_quant,
                     check_work, draft_bias, draft_count, draft_linked, draft_quantization,
                     draft_rms, draft_spatial, draft_target, draft_weights, window_conv)

T = OperandType


def _signatures():
    """Every (input, filter, bias) type row, FL3 (FL4 for the quant8-signed rows): explicit
    padding (11 inputs) and implicit padding with an output shape tensor (9 inputs), layout
    flag last."""
    sigs = []
    for level, t, filter_t, bias_t in TYPE_ROWS_FL1 + TYPE_ROWS_FL3 + TYPE_ROWS_FL4:
        level = max(level, 3)
        head = [tensor("input", t, (4,)), tensor("filter", filter_t, (4,)),
                tensor("bias", bias_t, (1,))]
        tail = [scalar("stride_width", T.INT32), scalar("stride_height", T.INT32),
                scalar("activation", T.INT32), scalar("layout", T.BOOL)]
        outputs = [tensor("output", t, (4,))]
        explicit = [scalar(n, T.INT32) for n in
                    ("padding_left", "padding_right", "padding_top", "padding_bottom")]
        sigs.append(sig(level, head + explicit + tail, outputs))
        implicit = [tensor("output_shape", T.TENSOR_INT32, (1,)), scalar("padding_scheme", T.INT32)]
        sigs.append(sig(level, head + implicit + tail, outputs))
    return tuple(sigs)


def _implicit_padding(code: int, out_size: int, stride: int, filter_size: int) -> tuple[int, int]:
    """(head, tail) of an axis for PaddingCode ``code`` and requested output ``out_size``
    (AOSP ``calculateExplicitPaddingTransposeConv``; the tail may be negative)."""
    if code == PaddingCode.VALID:
        return 0, 0
    tmp = ((out_size + stride - 1) // stride - 1) * stride + filter_size
    head = max(tmp - out_size, 0) // 2
    return head, tmp - out_size - head


def _params(ctx: OpContext):
    """Check shapes and scalars (rules in the module docstring). Returns (nchw, input dims
    NHWC, depth_out, (pad_top, pad_left), (stride_h, stride_w), output (h, w), FuseCode).
    Raises OperationError."""
    inp, flt, bias = ctx.inputs[:3]
    check(inp.rank == 4, f"input 0 (input) {list(inp.dims)} must be 4-D")
    check(flt.rank == 4, f"input 1 (filter) {list(flt.dims)} must be 4-D")
    check(bias.rank == 1, f"input 2 (bias) {list(bias.dims)} must be 1-D")
    explicit = len(ctx.inputs) == 11
    first = 7 if explicit else 5  # stride_width, stride_height, activation, layout
    nchw = bool(ctx.scalar(first + 3))
    batches, h, w, depth_in = nhwc_dims(inp.dims, nchw)
    depth_out, fh, fw = flt.dims[0], flt.dims[1], flt.dims[2]
    check(flt.dims[3] == depth_in,
          f"input 1 (filter) depth {flt.dims[3]} must equal the input depth {depth_in}")
    check(bias.dims[0] == depth_out,
          f"input 2 (bias) size {bias.dims[0]} must equal depth_out {depth_out}")
    check(h > 0 and w > 0 and depth_in > 0 and depth_out > 0,
          f"input 0 (input) {list(inp.dims)} and depth_out {depth_out}: height, width and "
          f"depths must be > 0 (only batches may be 0)")
    check(fh > 0 and fw > 0, f"input 1 (filter) {list(flt.dims)}: height and width must be > 0")
    sw, sh = ctx.scalar(first), ctx.scalar(first + 1)
    check(sw > 0 and sh > 0,
          f"inputs {first}-{first + 1} (strides): width {sw} and height {sh} must be > 0")
    activation = ctx.scalar(first + 2)
    check_fuse_code(activation)
    if explicit:
        left, right, top, bottom = (ctx.scalar(i) for i in range(3, 7))
    else:
        shape = ctx.value(3)
        check(shape.ndim == 1 and shape.shape[0] == 4,
              f"input 3 (output_shape) must hold 4 values, got shape {list(shape.shape)}")
        _, out_h, out_w, _ = nhwc_dims([int(v) for v in shape], nchw)
        check(out_h > 0 and out_w > 0,
              f"input 3 (output_shape): height {out_h} and width {out_w} must be > 0")
        code = ctx.scalar(4)
        check(code in (PaddingCode.SAME, PaddingCode.VALID),
              f"input 4 (padding_scheme) {code} is not SAME (1) or VALID (2)")
        top, bottom = _implicit_padding(code, out_h, sh, fh)
        left, right = _implicit_padding(code, out_w, sw, fw)
    check(left >= 0 and top >= 0, f"padding left {left} and top {top} must be >= 0")
    oh = h * sh + fh - sh - top - bottom
    ow = w * sw + fw - sw - left - right
    check(oh > 0 and ow > 0,
          f"output height {oh} and width {ow} must be > 0 (input {h}x{w}, filter {fh}x{fw}, "
          f"paddings left {left}, right {right}, top {top}, bottom {bottom})")
    return nchw, (batches, h, w, depth_in), depth_out, (top, left), (sh, sw), (oh, ow), activation


def validate(ctx: OpContext) -> None:
    """Model-time rules: quantized bias scale/zeroPoint, per-channel filter channelDim 0
    (``conv.check_filter_quant``). Raises OperationError."""
    check_filter_quant(ctx, 0)


def prepare(ctx: OpContext):
    """Output [batches, out_height, out_width, depth_out] (NCHW: [batches, depth_out,
    out_height, out_width])."""
    nchw, (batches, *_), depth_out, _, _, out_hw, _ = _params(ctx)
    return [layout_dims((batches, *out_hw, depth_out), nchw)]


def _transposed_axis(pad: int, stride: int, taps: int):
    """Index map of ``conv.window_conv`` along one axis: output index ``i`` and filter tap
    ``a`` read input ``(i + pad - a) / stride`` when divisible, else -1 (a zero)."""
    a = np.arange(taps, dtype=np.int64)

    def rows_of(i: np.ndarray) -> np.ndarray:
        r = i[:, None] + pad - a[None, :]
        return np.where(r % stride == 0, r // stride, -1)
    return rows_of


def execute(ctx: OpContext):
    """Scatter-add of input * filter over the transposed windows, plus bias, then the
    fused activation; float64 from real values, stored in the output type and layout.
    Raises OperationError past the work bound."""
    nchw, (batches, _, _, depth_in), depth_out, (top, left), (sh, sw), out_hw, activation = \
        _params(ctx)
    check_filter_quant(ctx, 0)
    inp, flt, bias = ctx.inputs[:3]
    fh, fw = flt.dims[1], flt.dims[2]
    check_work(batches * out_hw[0] * out_hw[1] * depth_out * fh * fw * depth_in)
    x = to_nhwc(to_float(inp), nchw)
    real = window_conv(x, to_float(flt), 1, _transposed_axis(top, sh, fh),
                       _transposed_axis(left, sw, fw), out_hw)
    real = apply_activation(real + bias_real(inp, flt, bias), activation)
    return [from_nhwc(from_float(ctx.outputs[0], real), nchw)]


def _draft_axis(d, size: int, stride: int, explicit: bool, scheme: int | None):
    """(filter, pad head, pad tail, output extent) of one axis: filter 1-5; explicit pads
    in [0, filter) (AOSP allows a negative tail; not drawn) leaving an output > 0; implicit
    padding: the requested output of SAME in ((size - 1) * stride, size * stride] (so the
    computed output equals it), of VALID (size - 1) * stride + filter (pads 0)."""
    f = d.integer(1, 5)
    if explicit:
        head, tail = (0 if d.coin(0.3) else d.integer(0, f - 1) for _ in range(2))
        while (size - 1) * stride + f - head - tail < 1:
            if head >= tail:
                head -= 1
            else:
                tail -= 1
        return f, head, tail, (size - 1) * stride + f - head - tail
    if scheme == PaddingCode.SAME:
        return f, 0, 0, d.integer((size - 1) * stride + 1, size * stride)
    return f, 0, 0, (size - 1) * stride + f


def _generate(d) -> None:
    """Filter [depth_out, fh, fw, depth_in], bias [depth_out] of scale input * filter
    scale, zeroPoint 0 (NNAPI); explicit pads below the filter or an output_shape the padding
    code reproduces (AOSP prepare); weights scaled to the activation's clamp."""
    nchw = bool(d.slot("layout").value)
    explicit = any(s.arg.name == "padding_left" for s in d.slots)
    scheme = None if explicit else int(d.slot("padding_scheme").value)
    activation = int(d.slot("activation").value)
    if not draft_linked(d):
        n, c = d.dim(1, 2), d.dim(1, 8)
        h, w = draft_spatial(d, min(d.max_elements // (n * c), 256))
        d.tensor(0, layout_dims((n, h, w, c), nchw))
    n, h, w, cin = nhwc_dims(d.slots[0].dims, nchw)
    sh, sw = (1 if d.coin(0.4) else d.integer(2, 3) for _ in range(2))
    if n * h * w * sh * sw > GEN_OUTPUT_ELEMENTS:  # a large linked input: no upsampling
        sh = sw = 1
    fh, top, bottom, oh = _draft_axis(d, h, sh, explicit, scheme)
    fw, left, right, ow = _draft_axis(d, w, sw, explicit, scheme)
    positions = n * oh * ow
    cap = max(1, min(GEN_OUTPUT_ELEMENTS // positions,
                     GEN_MACS // max(1, positions * fh * fw * cin)))
    want = -(-GEN_MIN_OUTPUT // positions)
    depth_out = draft_count(d, cap, max(8, want), want)
    if explicit:
        for name, v in (("padding_left", left), ("padding_right", right),
                        ("padding_top", top), ("padding_bottom", bottom)):
            d.param(name, v)
    else:
        d.param("output_shape", np.array(layout_dims((n, oh, ow, depth_out), nchw), np.int32))
    d.param("stride_width", sw)
    d.param("stride_height", sh)
    d.tensor(1, [depth_out, fh, fw, cin])
    d.tensor(2, [depth_out])
    spread, centre = draft_target(d, activation)
    draft_quantization(d, activation, spread, centre, positions * depth_out)
    taps = max(1.0, min(fh, h * sh) / sh) * max(1.0, min(fw, w * sw) / sw)  # input cells per output
    scales = draft_weights(d, 1, taps * cin, draft_rms(d, 0), spread, 0)
    draft_bias(d, 2, spread, centre, d.slots[0].scale, scales)


register(OperationDef(OperationType.TRANSPOSE_CONV_2D, _signatures(), prepare, execute,
                      validate=validate, generate=_generate, error_budget=budgets.conv("transpose"),
                      error_inputs=quant_bias("NNAPI types.spec TRANSPOSE_CONV_2D"),
                      summary="transposed 2-D convolution (NHWC or NCHW) with bias and fused "
                              "activation; explicit padding or an output shape",
                      allows_zero_sized_input=True, aosp_source="TransposeConv2DExecution.cpp"))
