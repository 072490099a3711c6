"""NNAPI -> TFLite for CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D, MAX_POOL_2D and
FULLY_CONNECTED of the ``litert`` drivers (registered into :data:`.builder.TABLE`).

An NCHW ``layout`` input is written as TRANSPOSE to NHWC, the NHWC operator, and
TRANSPOSE back (exact: data movement). NNAPI's filter layouts are TFLite's: CONV_2D [out, h, w, in] (OHWI), DEPTHWISE_CONV_2D [1, h, w, out], FULLY_CONNECTED
[units, input_size]; the fused activation is the FuseCode (:data:`.builder.FUSED`).

Padding: the implicit schemes SAME (1) and VALID (2) are TFLite's (SAME: output
``ceil(in / stride)``, total padding ``max((out - 1) * stride + (k - 1) * dilation + 1 - in,
0)``, the smaller half before). Explicit padding maps to SAME or VALID when it yields the
same leading padding and output size; otherwise a convolution is written as PAD (zeros, or
the zero point of a quantized input: real 0, as NNAPI pads) followed by a VALID
convolution, and a pooling is declined (padded cells would count in an average / could win
a max).

Quantization: 8-bit asymmetric input with a per-tensor filter of the same type, or signed
8-bit input with a
TENSOR_QUANT8_SYMM_PER_CHANNEL filter along TFLite's channel axis (0 for CONV_2D, 3 for
DEPTHWISE_CONV_2D); the int32 bias of a per-channel filter carries the scales
``input_scale * filter_scale[c]`` NNAPI implies. TFLite has no unsigned per-channel kernel.
TFLite's signed 8-bit kernels need a filter zero point of 0; a signed 8-bit convolution or
FULLY_CONNECTED whose filter has another zero point runs in the unsigned kernel on the same
real values (input, filter and output zero points + 128, the values shifted by QUANTIZE or,
for a constant, rewritten): the integer accumulations are identical.
"""
from __future__ import annotations

import numpy as np

from ...types import OperationType as O
from ..translated import Unsupported
from .builder import BOOL, F32, QA8S, QPC, QUANT8, Builder, rule

FLOAT = frozenset({F32})
SAME, VALID = 1, 2
#: TFLite Padding values.
TFL_PADDING = {SAME: 0, VALID: 1}


def _same_geometry(size: int, k: int, stride: int, dilation: int) -> tuple[int, int, int]:
    """(out, before, after) of TFLite's/NNAPI's SAME padding along one dimension."""
    out = -(-size // stride)
    eff = (k - 1) * dilation + 1
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2, total - total // 2


def explicit_scheme(size: int, k: int, stride: int, dilation: int, before: int, after: int) -> int | None:
    """SAME or VALID when explicit padding ``before``/``after`` along one dimension gives
    the same output (size and the leading padding) as that scheme, else None."""
    eff = (k - 1) * dilation + 1
    if size + before + after < eff:
        return None
    out = (size + before + after - eff) // stride + 1
    if before == 0 and out == (size - eff) // stride + 1 and size >= eff:
        return VALID
    s_out, s_before, _ = _same_geometry(size, k, stride, dilation)
    if before == s_before and out == s_out:
        return SAME
    return None


def _geometry(b: Builder, op, implicit: bool, first: int, hw: tuple[int, int], kh: int, kw: int,
              dil: tuple[int, int]):
    """(TFLite padding, explicit pads (top, bottom, left, right) or None when the scheme
    covers them, stride_h, stride_w) of a convolution/pooling of an input of spatial size
    ``hw`` whose padding inputs start at ``first`` (scheme, stride_w, stride_h or left,
    right, top, bottom, stride_w, stride_h)."""
    if implicit:
        scheme = int(b.scalar(op, first))
        if scheme not in TFL_PADDING:
            raise Unsupported(f"padding scheme {scheme}")
        return TFL_PADDING[scheme], None, int(b.scalar(op, first + 2)), int(b.scalar(op, first + 1))
    left, right, top, bottom = (int(b.scalar(op, first + i)) for i in range(4))
    sw, sh = int(b.scalar(op, first + 4)), int(b.scalar(op, first + 5))
    if min(left, right, top, bottom) < 0 or sw < 1 or sh < 1:
        raise Unsupported("negative padding or stride below 1")
    (h, w), (dh, dw) = hw, dil
    if 0 in (h, w):
        raise Unsupported("explicit padding of an input of unknown height/width")
    sch_h = explicit_scheme(h, kh, sh, dh, top, bottom)
    sch_w = explicit_scheme(w, kw, sw, dw, left, right)
    if sch_h is not None and sch_h == sch_w:
        return TFL_PADDING[sch_h], None, sh, sw
    return TFL_PADDING[VALID], (top, bottom, left, right), sh, sw


class NHWC:
    """Input 0 and output 0 of ``op`` as NHWC TFLite tensors: as they are, or through
    TRANSPOSE when the layout input ``layout`` says NCHW (data movement only, exact).
    ``x`` the input tensor, ``dims`` its NHWC dimensions (0 = unknown), ``y`` the tensor
    the operator writes; :meth:`finish` writes the NCHW output from it."""

    def __init__(self, b: Builder, op, layout: int):
        if b.rank(op, 0) != 4:
            raise Unsupported("input rank is not 4")
        self.b, self.op = b, op
        self.nchw = b.is_nchw(op, layout)
        d = b.dims(op.inputs[0])
        if self.nchw:
            self.dims = [d[0], d[2], d[3], d[1]]
            self.x = b.transpose(b.input(op, 0), [0, 2, 3, 1], op.inputs[0], self.dims)
            self.y = b.temporary(op.outputs[0], [1, 1, 1, 1], "nhwc")
        else:
            self.dims, self.x, self.y = d, b.input(op, 0), b.output(op)

    def finish(self) -> None:
        if self.nchw:
            b = self.b
            b.emit("TRANSPOSE", [self.y, b.const(np.array([0, 3, 1, 2]), np.int32, "perm")], [b.output(self.op)])


def _padded_input(b: Builder, op, io: NHWC, pads) -> int:
    """The NHWC input padded by PAD with ``pads`` (top, bottom, left, right) of zeros (the
    zero point when quantized: TFLite's PAD fills quantized tensors with it)."""
    top, bottom, left, right = pads
    n, h, w, c = io.dims
    paddings = np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32)
    out = b.temporary(op.inputs[0], [n, h + top + bottom, w + left + right, c], "pad")
    b.emit("PAD", [io.x, b.const(paddings, np.int32, "paddings")], [out])
    return out


def _check_quant(b: Builder, op, channel_axis: int) -> bool:
    """Check the filter/bias types of a convolution (or FULLY_CONNECTED, ``channel_axis``
    0) for a TFLite kernel that computes what NNAPI specifies; True when the operation must
    run in the unsigned 8-bit kernel on shifted operands (signed 8-bit with a filter zero
    point other than 0, which TFLite's int8 kernels reject)."""
    t, ft = b.type_of(op, 0), b.type_of(op, 1)
    f = b.operand(op.inputs[1])
    if t == F32:
        if ft != F32:
            raise Unsupported(f"float32 input with a {ft.name} filter")
        return False
    if ft == QPC:
        if t != QA8S:
            raise Unsupported("per-channel filter with an unsigned 8-bit input (TFLite: int8 only)")
        if f.extra_params is None or f.extra_params.channel_dim != channel_axis:
            raise Unsupported(f"per-channel filter not along axis {channel_axis}")
        scales = [b.operand(op.inputs[0]).scale * s for s in f.extra_params.scales]
        bias = b.graph.tensors[b.tensor(op.inputs[2])]  # gets the implied per-channel scales
        bias.scales, bias.zero_points, bias.quantized_dimension = scales, [0] * len(scales), 0
        return False
    if ft != t:
        raise Unsupported(f"{t.name} input with a {ft.name} filter")
    return t == QA8S and f.zero_point != 0


def _conv(depthwise: bool):
    def emit(b: Builder, op):
        n_params = 8 if depthwise else 7  # inputs of the implicit form
        implicit = len(op.inputs) == n_params or b.operand(op.inputs[n_params]).type == BOOL
        base = n_params if implicit else n_params + 3  # index of the layout input
        dw = 1 if b.omitted(op, base + 1) else int(b.scalar(op, base + 1))
        dh = 1 if b.omitted(op, base + 2) else int(b.scalar(op, base + 2))
        shift = _check_quant(b, op, 3 if depthwise else 0)
        fdims = b.static_dims(op, 1)
        kh, kw = fdims[1], fdims[2]
        act = b.fused(op, base - 1)
        io = NHWC(b, op, base)
        padding, pads, sh, sw = _geometry(b, op, implicit, 3, (io.dims[1], io.dims[2]), kh, kw, (dh, dw))
        x = _padded_input(b, op, io, pads) if pads is not None else io.x
        ins = [x, b.input(op, 1), b.input(op, 2)]
        final = io.y
        if shift:  # signed 8-bit, filter zero point != 0: the uint8 kernel on shifted values
            ins[:2] = [b.shifted_uint8(ins[0], op.inputs[0]), b.shifted_uint8(ins[1], op.inputs[1])]
            io.y = b.shifted_output(op.outputs[0], 4)
        if depthwise:
            dm = int(b.scalar(op, base - 2))
            b.emit("DEPTHWISE_CONV_2D", ins, [io.y], "DepthwiseConv2D", Padding=padding,
                   StrideW=sw, StrideH=sh, DepthMultiplier=dm, FusedActivationFunction=act,
                   DilationWFactor=dw, DilationHFactor=dh)
        else:
            b.emit("CONV_2D", ins, [io.y], "Conv2D", Padding=padding, StrideW=sw, StrideH=sh,
                   FusedActivationFunction=act, DilationWFactor=dw, DilationHFactor=dh)
        if shift:
            b.unshift(io.y, final)
            io.y = final
        io.finish()
    return emit


rule(O.CONV_2D, FLOAT | QUANT8)(_conv(False))
rule(O.DEPTHWISE_CONV_2D, FLOAT | QUANT8)(_conv(True))


def _pool(name: str):
    def emit(b: Builder, op):
        implicit = len(op.inputs) in (7, 8)
        base = 7 if implicit else 10  # index of the layout input
        fw, fh = int(b.scalar(op, base - 3)), int(b.scalar(op, base - 2))
        act = b.fused(op, base - 1)
        b.same_quant(op)
        io = NHWC(b, op, base)
        padding, pads, sh, sw = _geometry(b, op, implicit, 1, (io.dims[1], io.dims[2]), fh, fw, (1, 1))
        if pads is not None:
            raise Unsupported(f"explicit padding {pads} (top, bottom, left, right) is neither SAME nor VALID")
        b.emit(name, [io.x], [io.y], "Pool2D", Padding=padding, StrideW=sw, StrideH=sh, FilterWidth=fw,
               FilterHeight=fh, FusedActivationFunction=act)
        io.finish()
    return emit


rule(O.AVERAGE_POOL_2D, FLOAT | QUANT8)(_pool("AVERAGE_POOL_2D"))
rule(O.MAX_POOL_2D, FLOAT | QUANT8)(_pool("MAX_POOL_2D"))


@rule(O.FULLY_CONNECTED, FLOAT | QUANT8)
def _fully_connected(b: Builder, op):
    if b.type_of(op, 1) == QPC:
        raise Unsupported("per-channel weights")
    shift = _check_quant(b, op, 0)
    if b.rank(op, 0) < 2:
        raise Unsupported("input rank below 2")
    ins = [b.input(op, 0), b.input(op, 1), -1 if b.omitted(op, 2) else b.input(op, 2)]
    out = b.output(op)
    y = out
    if shift:  # signed 8-bit, weights zero point != 0: the uint8 kernel on shifted values
        ins[:2] = [b.shifted_uint8(ins[0], op.inputs[0]), b.shifted_uint8(ins[1], op.inputs[1])]
        y = b.shifted_output(op.outputs[0], 2)
    b.emit("FULLY_CONNECTED", ins, [y], "FullyConnected", FusedActivationFunction=b.fused(op, 3),
           KeepNumDims=False)
    if shift:
        b.unshift(y, out)
