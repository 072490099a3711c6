"""NNAPI -> ONNX for the image and neural-network families: CONV_2D, DEPTHWISE_CONV_2D,
GROUPED_CONV_2D, the 2-D poolings, FULLY_CONNECTED, RESIZE_*, L2_NORMALIZATION,
LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION, CHANNEL_SHUFFLE,
BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND, QUANTIZE and DEQUANTIZE (registered into
:data:`.builder.TABLE`).

NNAPI images are NHWC unless the layout flag (a BOOL input) is true; ONNX's are NCHW, so an
NHWC tensor is transposed in and out around the ONNX node. Padding: explicit NNAPI paddings
(left, right, top, bottom) become ONNX ``pads`` [top, left, bottom, right]; implicit SAME
is NNAPI's ``total = max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0)``, front
``total // 2`` (computed here when the input's height and width are known, else ONNX
``SAME_UPPER``, which is the same rule), VALID is no padding.
"""
from __future__ import annotations

import numpy as np

from ...types import OperandType as T
from ...types import OperationType as O
from .builder import (DATA, F16, F32, FLOATS, I32, QA8, QA8S, QUANT8, Builder, Unsupported,
                      op)

BOOL = T.BOOL
PER_CHANNEL = T.TENSOR_QUANT8_SYMM_PER_CHANNEL


def _is_nchw(b: Builder, op_, k: int) -> bool:
    return bool(b.scalar(op_, k, False)) if k < len(op_.inputs) else False


def _same_pads(size: int | None, k: int, stride: int, dilation: int) -> tuple[int, int] | None:
    if not size:
        return None
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _window(b: Builder, op_, explicit: bool, first: int, kh: int, kw: int, hw, dil=(1, 1)) -> dict:
    """ONNX pads/auto_pad and strides of an NNAPI window whose padding inputs start at
    ``first`` (explicit: left, right, top, bottom, stride w, stride h; implicit: code,
    stride w, stride h)."""
    if explicit:
        left, right, top, bottom, sw, sh = (int(b.scalar(op_, first + i)) for i in range(6))
        return {"pads": [top, left, bottom, right], "strides": [sh, sw]}
    code, sw, sh = (int(b.scalar(op_, first + i)) for i in range(3))
    attrs = {"strides": [sh, sw]}
    if code == 2:  # VALID
        attrs["pads"] = [0, 0, 0, 0]
    elif code == 1:  # SAME
        ph, pw = _same_pads(hw[0], kh, sh, dil[0]), _same_pads(hw[1], kw, sw, dil[1])
        if ph is None or pw is None:
            attrs["auto_pad"] = "SAME_UPPER"
        else:
            attrs["pads"] = [ph[0], pw[0], ph[1], pw[1]]
    else:
        raise Unsupported(f"padding code {code}")
    return attrs


def _hw(b: Builder, op_, nchw: bool):
    d = b.dims(op_.inputs[0])
    if len(d) != 4:
        return (None, None)
    return (d[2], d[3]) if nchw else (d[1], d[2])


def _conv(kind: str):
    """CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D (float and quantized)."""
    def emit(b: Builder, op_):
        n = len(op_.inputs)
        t = b.type_of(op_, 0)
        wt = b.type_of(op_, 1)
        extra = 1 if kind in ("depthwise", "grouped") else 0  # depth multiplier / num_groups
        explicit = n >= 10 + extra and b.type_of(op_, 7 + extra) == T.INT32
        first_after = (9 if explicit else 6) + extra  # index of the FuseCode
        fuse = int(b.scalar(op_, first_after))
        nchw = _is_nchw(b, op_, first_after + 1)
        dil = (1, 1)
        if n > first_after + 2:
            dil = (int(b.scalar(op_, first_after + 3)), int(b.scalar(op_, first_after + 2)))  # h, w
        fd = b.static_dims(op_, 1)
        if kind == "depthwise":  # [1, kh, kw, out] -> [out, 1, kh, kw]
            kh, kw, cout = fd[1], fd[2], fd[3]
            w = b.node("Transpose", [b.input(op_, 1)], perm=[3, 0, 1, 2])
        else:  # [out, kh, kw, in] -> [out, in, kh, kw]
            kh, kw, cout = fd[1], fd[2], fd[0]
            w = b.node("Transpose", [b.input(op_, 1)], perm=[0, 3, 1, 2])
        attrs = _window(b, op_, explicit, 3, kh, kw, _hw(b, op_, nchw), dil)
        attrs.update(kernel_shape=[kh, kw], dilations=list(dil))
        if kind == "depthwise":
            cin = b.static_dims(op_, 0)[1 if nchw else 3]
            mult = int(b.scalar(op_, 9 if explicit else 6))
            if cin * mult != cout:
                raise Unsupported("depth_multiplier * depth_in != depth_out")
            attrs["group"] = cin
        elif kind == "grouped":
            attrs["group"] = int(b.scalar(op_, 9 if explicit else 6))
        x = b.input(op_, 0)
        if not nchw:
            x = b.to_nchw(x)
        out = b.operand(op_.outputs[0])
        if t in FLOATS:
            if wt != t:
                raise Unsupported(f"filter type {wt.name}")
            y = b.node("Conv", [x, w] + ([] if b.omitted(op_, 2) else [b.input(op_, 2)]), **attrs)
        else:
            xo, wo = b.operand(op_.inputs[0]), b.operand(op_.inputs[1])
            if wt == PER_CHANNEL and t == QA8:
                # MLAS's u8s8 kernels sum pairs of u8*s8 products in saturating int16 on x86
                # without VNNI (onnxruntime's quantization docs): 255*127*2 overflows. The
                # exact u8u8 form: filter + 128 with zero point 128 per channel.
                scales = np.asarray(wo.extra_params.scales, np.float32)
                w = b.cast(b.node("Add", [b.cast(w, T.TENSOR_INT32), b.const(np.int32(128))]), QA8)
                ws, wz = b.const(scales), b.const(np.full(len(scales), 128, np.uint8))
            elif wt == PER_CHANNEL:
                scales = np.asarray(wo.extra_params.scales, np.float32)
                ws, wz = b.const(scales), b.const(np.zeros(len(scales), np.int8))
            elif wt == t:
                ws, wz = b.scalar_like(wo.scale, F32), b.scalar_like(wo.zero_point, wt)
            else:
                raise Unsupported(f"filter type {wt.name}")
            y = b.node("QLinearConv", [x, b.scalar_like(xo.scale, F32), b.scalar_like(xo.zero_point, t),
                                       w, ws, wz, b.scalar_like(out.scale, F32),
                                       b.scalar_like(out.zero_point, t), b.input(op_, 2)], **attrs)
        y = b.fuse(y, fuse, out)
        b.result(op_, 0, y if nchw else b.to_nhwc(y))
    return emit


op(O.CONV_2D, FLOATS | QUANT8)(_conv("conv"))
op(O.DEPTHWISE_CONV_2D, FLOATS | QUANT8)(_conv("depthwise"))
op(O.GROUPED_CONV_2D, FLOATS | QUANT8)(_conv("grouped"))


def _pool(kind: str):
    def emit(b: Builder, op_):
        n = len(op_.inputs)
        explicit = n >= 10
        first_fuse = 9 if explicit else 6
        nchw = _is_nchw(b, op_, first_fuse + 1)
        fw, fh = int(b.scalar(op_, first_fuse - 2)), int(b.scalar(op_, first_fuse - 1))
        attrs = _window(b, op_, explicit, 1, fh, fw, _hw(b, op_, nchw))
        attrs["kernel_shape"] = [fh, fw]
        if kind == "max":
            b.same_quant(op_)
        x = b.input(op_, 0)
        if not nchw:
            x = b.to_nchw(x)
        if kind == "max":
            y = b.node("MaxPool", [x], **attrs)
        elif kind == "avg":  # NNAPI averages the elements inside the image only
            y = b.node("AveragePool", [x], count_include_pad=0, **attrs)
        else:  # L2: sqrt(mean of squares over the elements inside the image)
            y = b.node("Sqrt", [b.node("AveragePool", [b.node("Mul", [x, x])], count_include_pad=0, **attrs)])
        y = b.fuse(y, int(b.scalar(op_, first_fuse)), b.operand(op_.outputs[0]))
        b.result(op_, 0, y if nchw else b.to_nhwc(y))
    return emit


op(O.AVERAGE_POOL_2D, FLOATS, QUANT8)(_pool("avg"))
op(O.MAX_POOL_2D, FLOATS | QUANT8, QUANT8)(_pool("max"))
op(O.L2_POOL_2D, FLOATS, QUANT8)(_pool("l2"))


@op(O.FULLY_CONNECTED, FLOATS | QUANT8)
def _fully_connected(b: Builder, op_):
    t = b.type_of(op_, 0)
    units, size = b.static_dims(op_, 1)
    x = b.node("Reshape", [b.input(op_, 0), b.i64([-1, size])])
    out = b.operand(op_.outputs[0])
    if t in FLOATS:
        ins = [x, b.input(op_, 1)] + ([] if b.omitted(op_, 2) else [b.input(op_, 2)])
        y = b.node("Gemm", ins, transB=1)
    else:
        xo, wo = b.operand(op_.inputs[0]), b.operand(op_.inputs[1])
        if b.type_of(op_, 1) != t:
            raise Unsupported(f"weights type {b.type_of(op_, 1).name}")
        wT = b.node("Transpose", [b.input(op_, 1)], perm=[1, 0])
        acc = b.node("MatMulInteger", [x, wT, b.scalar_like(xo.zero_point, t), b.scalar_like(wo.zero_point, t)])
        if not b.omitted(op_, 2):
            acc = b.node("Add", [acc, b.input(op_, 2)])
        # real = acc * s_in * s_w; quantized = round(real / s_out) + z_out
        scale = np.float32(out.scale / (xo.scale * wo.scale))
        y = b.node("QuantizeLinear", [b.node("Cast", [acc], to=1), b.scalar_like(scale, F32),
                                      b.scalar_like(out.zero_point, t)])
    b.result(op_, 0, b.fuse(y, int(b.scalar(op_, 3)), out))


def _resize(mode: str):
    def emit(b: Builder, op_):
        t = b.type_of(op_, 0)
        if t in QUANT8:
            b.same_quant(op_)
        nchw = _is_nchw(b, op_, 3)
        align = bool(b.scalar(op_, 4, False)) if len(op_.inputs) > 4 else False
        half = bool(b.scalar(op_, 5, False)) if len(op_.inputs) > 5 else False
        x = b.input(op_, 0)
        if not nchw:
            x = b.to_nchw(x)
        if b.type_of(op_, 1) == T.INT32:
            sizes = b.i64([int(b.scalar(op_, 2)), int(b.scalar(op_, 1))])  # height, width
        else:  # scales: floor(size * scale) in binary32, as NNAPI
            sw, sh = float(b.scalar(op_, 1)), float(b.scalar(op_, 2))
            hw = b.node("Slice", [b.node("Shape", [x]), b.i64([2]), b.i64([4])])
            prod = b.node("Mul", [b.node("Cast", [hw], to=1), b.const(np.array([sh, sw], np.float32))])
            sizes = b.node("Cast", [b.node("Floor", [prod])], to=7)
        if align and half:
            raise Unsupported("align_corners and half_pixel_centers both true")
        if mode == "linear":
            ctm = "align_corners" if align else "half_pixel" if half else "asymmetric"
            attrs = {"mode": "linear"}
        else:
            ctm = "align_corners" if align else "tf_half_pixel_for_nn" if half else "asymmetric"
            attrs = {"mode": "nearest", "nearest_mode": "round_prefer_ceil" if align else "floor"}
        # full 4-D sizes: ORT's transpose optimizer mishandles Resize's ``axes`` attribute
        nc = b.node("Slice", [b.node("Shape", [x]), b.i64([0]), b.i64([2])])
        sizes = b.node("Concat", [nc, sizes], axis=0)
        y = b.node("Resize", [x, "", "", sizes], coordinate_transformation_mode=ctm, **attrs)
        b.result(op_, 0, y if nchw else b.to_nhwc(y))
    return emit


op(O.RESIZE_BILINEAR, FLOATS, QUANT8)(_resize("linear"))
op(O.RESIZE_NEAREST_NEIGHBOR, FLOATS | QUANT8, QUANT8)(_resize("nearest"))


@op(O.L2_NORMALIZATION, FLOATS, QUANT8)
def _l2_normalization(b: Builder, op_):
    axis = int(b.scalar(op_, 1, -1))
    t = b.type_of(op_, 0)
    x = b.input(op_, 0)
    norm = b.node("Sqrt", [b.node("ReduceSumSquare", [x, b.i64([axis])], keepdims=1)])
    b.result(op_, 0, b.node("Div", [x, b.node("Max", [norm, b.scalar_like(1e-6, t)])]))


def _axis_last(b: Builder, op_, x: str, axis: int, rank: int):
    """(transposed x with ``axis`` last, inverse perm or None)."""
    axis %= rank
    if axis == rank - 1:
        return x, None
    perm = [i for i in range(rank) if i != axis] + [axis]
    inverse = [perm.index(i) for i in range(rank)]
    return b.node("Transpose", [x], perm=perm), inverse


@op(O.LOCAL_RESPONSE_NORMALIZATION, FLOATS)
def _lrn(b: Builder, op_):
    radius = int(b.scalar(op_, 1))
    bias, alpha, beta = (float(b.scalar(op_, k)) for k in (2, 3, 4))
    axis = int(b.scalar(op_, 5, -1))
    rank = b.rank(op_)
    x, inverse = _axis_last(b, op_, b.input(op_, 0), axis, rank)
    shape = b.node("Shape", [x])
    channels = b.node("Slice", [shape, b.i64([-1]), b.i64([rank])])
    rows = b.node("Reshape", [x, b.node("Concat", [b.i64([-1]), channels, b.i64([1, 1])], axis=0)])
    size = 2 * radius + 1  # ONNX divides alpha by size; NNAPI does not
    y = b.node("LRN", [rows], size=size, alpha=alpha * size, beta=beta, bias=bias)
    y = b.node("Reshape", [y, shape])
    b.result(op_, 0, y if inverse is None else b.node("Transpose", [y], perm=inverse))


@op(O.INSTANCE_NORMALIZATION, FLOATS)
def _instance_norm(b: Builder, op_):
    t = b.type_of(op_, 0)
    gamma, beta, eps = (float(b.scalar(op_, k)) for k in (1, 2, 3))
    nchw = _is_nchw(b, op_, 4)
    x = b.input(op_, 0)
    if not nchw:
        x = b.to_nchw(x)
    c = b.node("Slice", [b.node("Shape", [x]), b.i64([1]), b.i64([2])])
    scale = b.node("Expand", [b.const(np.array([gamma], np.float32 if t == F32 else np.float16)), c])
    shift = b.node("Expand", [b.const(np.array([beta], np.float32 if t == F32 else np.float16)), c])
    y = b.node("InstanceNormalization", [x, scale, shift], epsilon=eps)
    b.result(op_, 0, y if nchw else b.to_nhwc(y))


@op(O.CHANNEL_SHUFFLE, DATA - {I32}, QUANT8)
def _channel_shuffle(b: Builder, op_):
    b.same_quant(op_)
    dims = b.static_dims(op_, 0)
    groups, axis = int(b.scalar(op_, 1)), int(b.scalar(op_, 2)) % len(dims)
    c = dims[axis]
    split = dims[:axis] + [groups, c // groups] + dims[axis + 1:]
    perm = list(range(axis)) + [axis + 1, axis] + list(range(axis + 2, len(split)))
    y = b.node("Transpose", [b.node("Reshape", [b.input(op_, 0), b.i64(split)])], perm=perm)
    b.result(op_, 0, b.node("Reshape", [y, b.i64(dims)]))


@op(O.BATCH_TO_SPACE_ND, DATA - {I32, T.TENSOR_BOOL8}, QUANT8)
def _batch_to_space(b: Builder, op_):
    b.same_quant(op_)
    bh, bw = (int(v) for v in b.constant(op_, 1).reshape(-1))
    nchw = _is_nchw(b, op_, 2)
    x = b.input(op_, 0)
    if nchw:
        x = b.to_nhwc(x)
    n, h, w, c = (b.static_dims(op_, 0)[i] for i in ((0, 2, 3, 1) if nchw else (0, 1, 2, 3)))
    y = b.node("Reshape", [x, b.i64([bh, bw, n // (bh * bw), h, w, c])])
    y = b.node("Transpose", [y], perm=[2, 3, 0, 4, 1, 5])
    y = b.node("Reshape", [y, b.i64([n // (bh * bw), h * bh, w * bw, c])])
    b.result(op_, 0, b.to_nchw(y) if nchw else y)


@op(O.SPACE_TO_BATCH_ND, DATA - {I32, T.TENSOR_BOOL8}, QUANT8)
def _space_to_batch(b: Builder, op_):
    b.same_quant(op_)
    t = b.type_of(op_, 0)
    bh, bw = (int(v) for v in b.constant(op_, 1).reshape(-1))
    (pt, pb), (pl, pr) = b.constant(op_, 2).astype(int).reshape(2, 2)
    nchw = _is_nchw(b, op_, 3)
    x = b.input(op_, 0)
    if nchw:
        x = b.to_nhwc(x)
    n, h, w, c = (b.static_dims(op_, 0)[i] for i in ((0, 2, 3, 1) if nchw else (0, 1, 2, 3)))
    zero = b.operand(op_.inputs[0]).zero_point if t in QUANT8 else 0
    x = b.node("Pad", [x, b.i64([0, pt, pl, 0, 0, pb, pr, 0]), b.scalar_like(zero, t)])
    h, w = h + pt + pb, w + pl + pr
    y = b.node("Reshape", [x, b.i64([n, h // bh, bh, w // bw, bw, c])])
    y = b.node("Transpose", [y], perm=[2, 4, 0, 1, 3, 5])
    y = b.node("Reshape", [y, b.i64([n * bh * bw, h // bh, w // bw, c])])
    b.result(op_, 0, b.to_nchw(y) if nchw else y)


@op(O.QUANTIZE, FLOATS)
def _quantize(b: Builder, op_):
    out = b.operand(op_.outputs[0])
    if out.type not in QUANT8:
        raise Unsupported(f"QUANTIZE to {out.type.name}")
    x = b.input(op_, 0)
    if b.type_of(op_, 0) == F16:
        x = b.node("Cast", [x], to=1)
    b.result(op_, 0, b.node("QuantizeLinear", [x, b.scalar_like(out.scale, F32),
                                               b.scalar_like(out.zero_point, out.type)]))


@op(O.DEQUANTIZE, {QA8, QA8S, T.TENSOR_QUANT8_SYMM, PER_CHANNEL})
def _dequantize(b: Builder, op_):
    t = b.type_of(op_, 0)
    xo, out = b.operand(op_.inputs[0]), b.operand(op_.outputs[0])
    if t == PER_CHANNEL:
        scales = np.asarray(xo.extra_params.scales, np.float32)
        y = b.node("DequantizeLinear", [b.input(op_, 0), b.const(scales), b.const(np.zeros(len(scales), np.int8))],
                   axis=int(xo.extra_params.channel_dim))
    else:
        y = b.node("DequantizeLinear", [b.input(op_, 0), b.scalar_like(xo.scale, F32),
                                        b.scalar_like(xo.zero_point, t)])
    b.result(op_, 0, b.node("Cast", [y], to=10) if out.type == F16 else y)




def _tc_implicit_pads(code: int, out: int, stride: int, k: int) -> tuple[int, int]:
    if code == 2:
        return 0, 0
    if code != 1:
        raise Unsupported(f"padding code {code}")
    tmp = (-(-out // stride) - 1) * stride + k
    head = max(tmp - out, 0) // 2
    return head, tmp - out - head


@op(O.TRANSPOSE_CONV_2D, FLOATS, QUANT8)
def _transpose_conv(b: Builder, op_):
    explicit = len(op_.inputs) == 11
    fuse_k = 9 if explicit else 7
    nchw = _is_nchw(b, op_, fuse_k + 1)
    cout, kh, kw, _ = b.static_dims(op_, 1)
    if explicit:
        left, right, top, bottom, sw, sh = (int(b.scalar(op_, 3 + i)) for i in range(6))
    else:
        shape = [int(v) for v in b.constant(op_, 3).reshape(-1)]
        oh, ow = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
        code, sw, sh = (int(b.scalar(op_, 4 + i)) for i in range(3))
        top, bottom = _tc_implicit_pads(code, oh, sh, kh)
        left, right = _tc_implicit_pads(code, ow, sw, kw)
    if min(left, right, top, bottom) < 0:
        raise Unsupported("a negative padding (ONNX ConvTranspose pads are >= 0)")
    x = b.input(op_, 0)
    if not nchw:
        x = b.to_nchw(x)
    wt = b.operand(op_.inputs[1])
    w = b.raw_input(op_, 1)
    bias = None if b.omitted(op_, 2) else b.raw_input(op_, 2)
    if b.qdq:  # filter and int32 bias dequantized (bias scale: input scale * filter scale)
        s_in = b.operand(op_.inputs[0]).scale
        if wt.type == PER_CHANNEL:
            scales = np.asarray(wt.extra_params.scales, np.float32)
            w = b.node("DequantizeLinear", [w, b.const(scales), b.const(np.zeros(len(scales), np.int8))], axis=0)
        elif wt.type in QUANT8:
            scales = np.full(cout, wt.scale, np.float32)
            w = b.node("DequantizeLinear", [w, b.scalar_like(wt.scale, F32), b.scalar_like(wt.zero_point, wt.type)])
        else:
            raise Unsupported(f"filter type {wt.type.name}")
        if bias is not None:
            bias = b.node("Mul", [b.node("Cast", [bias], to=1), b.const((scales * np.float32(s_in)).astype(np.float32))])
    elif wt.type != b.type_of(op_, 0):
        raise Unsupported(f"filter type {wt.type.name}")
    w = b.node("Transpose", [w], perm=[3, 0, 1, 2])  # [out, kh, kw, in] -> [in, out, kh, kw]
    y = b.node("ConvTranspose", [x, w] + ([] if bias is None else [bias]), kernel_shape=[kh, kw],
               strides=[sh, sw], pads=[top, left, bottom, right])
    y = b.fuse(y, int(b.scalar(op_, fuse_k)), b.operand(op_.outputs[0]))
    b.result(op_, 0, y if nchw else b.to_nhwc(y))
