"""The operator table: :data:`MAPPERS`, TFLite builtin name -> mapping function (the
delegate's ``Map`` cases, ``tensorflow/lite/delegates/nnapi/nnapi_delegate.cc``; the rules
are listed in :mod:`mlts.tflite_import`). A mapping function takes the
:class:`~mlts.tflite_import.builder.Builder` of the current partition and the TFLite
:class:`~mlts.tflite_import.reader.Op`, emits NNAPI operations and returns their names, or
raises :class:`~mlts.tflite_import.builder.Unmappable` (the builder is rolled back and the
operator falls back to the CPU). The element-wise, shape, reduction and quantization
mappings live here; :mod:`~mlts.tflite_import.weighted` (convolutions, fully connected) and
:mod:`~mlts.tflite_import.recurrent` (LSTM, RNN, SVDF) hold the larger ones."""
from __future__ import annotations

from typing import Callable

import numpy as np

from runtime.types import OperandType as T
from runtime.types import OperationType as OP

from .builder import (Builder, Unmappable, const_value, emit, is_float, is_quant8, nn_dims, padding_code,
                      require, same_quant)
from .reader import Op
from .recurrent import map_lstm_cell, map_rnn, map_sequence_lstm, map_sequence_rnn, map_svdf
from .weighted import map_conv, map_depthwise, map_fully_connected, map_transpose_conv


def _map_pool(nn: OP):
    def mapper(b: Builder, op: Op) -> list[str]:
        o = op.options
        require(len(b.info(op.inputs[0]).shape) == 4, "input must be 4-D")
        return emit(b, op, nn, [b.tensor(op.inputs[0]), b.i32(padding_code(op)), b.i32(o.get("StrideW", 1)),
                                b.i32(o.get("StrideH", 1)), b.i32(o.get("FilterWidth", 1)),
                                b.i32(o.get("FilterHeight", 1))])
    return mapper


def _map_binary(nn: OP, fused: bool = True):
    def mapper(b: Builder, op: Op) -> list[str]:
        a, c = b.info(op.inputs[0]), b.info(op.inputs[1])
        require(a.type_name == c.type_name, f"inputs of types {a.type_name} and {c.type_name}")
        if fused:
            require(a.type_name != "INT32" or not op.options.get("FusedActivationFunction", 0),
                    "int32 with a fused activation")
            return emit(b, op, nn, [b.tensor(op.inputs[0]), b.tensor(op.inputs[1])])
        b.op(nn, [b.tensor(op.inputs[0]), b.tensor(op.inputs[1])], [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _map_unary(nn: OP, extra: Callable[[Builder, Op], list[int]] | None = None):
    def mapper(b: Builder, op: Op) -> list[str]:
        ins = [b.tensor(op.inputs[0])] + (extra(b, op) if extra else [])
        b.op(nn, ins, [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _map_concat(b: Builder, op: Op) -> list[str]:
    rank = len(b.info(op.inputs[0]).shape)
    axis = int(op.options.get("Axis", 0))
    axis = axis + rank if axis < 0 else axis
    return emit(b, op, OP.CONCATENATION, [b.tensor(t) for t in op.inputs], [b.i32(axis)], fused=False)


def _map_pack(b: Builder, op: Op) -> list[str]:
    out = b.info(op.outputs[0])
    rank = len(out.shape)
    axis = int(op.options.get("Axis", 0))
    axis = axis + rank if axis < 0 else axis
    parts = []
    for t in op.inputs:
        shape = list(b.info(t).shape)
        shape.insert(axis, 1)
        r = b.temp_like(t, shape)
        b.op(OP.RESHAPE, [b.tensor(t), b.i32_vector(shape)], [r])
        parts.append(r)
    b.op(OP.CONCATENATION, parts + [b.i32(axis)], [b.output(op.outputs[0])])
    return ["RESHAPE"] * len(op.inputs) + ["CONCATENATION"]


def _map_reshape(b: Builder, op: Op) -> list[str]:
    out = b.info(op.outputs[0])
    b.op(OP.RESHAPE, [b.tensor(op.inputs[0]), b.i32_vector(nn_dims(out.shape))], [b.output(op.outputs[0])])
    return ["RESHAPE"]


def _map_squeeze(b: Builder, op: Op) -> list[str]:
    dims = op.options.get("SqueezeDims", [])
    k = b.i32_vector(dims) if dims else b.omitted(T.TENSOR_INT32)
    b.op(OP.SQUEEZE, [b.tensor(op.inputs[0]), k], [b.output(op.outputs[0])])
    return ["SQUEEZE"]


def _const_vector_input(pos: int, what: str):
    def extra(b: Builder, op: Op) -> list[int]:
        return [b.i32_vector(const_value(b, op.inputs[pos], what))]
    return extra


def _map_pad(b: Builder, op: Op) -> list[str]:
    x = b.info(op.inputs[0])
    pads = const_value(b, op.inputs[1], "the paddings").reshape(-1, 2)
    ins = [b.tensor(op.inputs[0]), b.const(pads.astype(np.int32), T.TENSOR_INT32)]
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        v = const_value(b, op.inputs[2], "the pad value").reshape(-1)[0]
        ins.append(b.f32(v) if is_float(x) else b.i32(int(v)))
        b.op(OP.PAD_V2, ins, [b.output(op.outputs[0])])
        return ["PAD_V2"]
    b.op(OP.PAD, ins, [b.output(op.outputs[0])])
    return ["PAD"]


def _map_mirror_pad(b: Builder, op: Op) -> list[str]:
    pads = const_value(b, op.inputs[1], "the paddings").reshape(-1, 2)
    b.op(OP.MIRROR_PAD, [b.tensor(op.inputs[0]), b.const(pads.astype(np.int32), T.TENSOR_INT32),
                         b.i32(int(op.options.get("Mode", 0)))], [b.output(op.outputs[0])])
    return ["MIRROR_PAD"]


def _map_softmax(b: Builder, op: Op) -> list[str]:
    b.op(OP.SOFTMAX, [b.tensor(op.inputs[0]), b.f32(op.options.get("Beta", 1.0))], [b.output(op.outputs[0])])
    return ["SOFTMAX"]


def _map_resize(nn: OP):
    def mapper(b: Builder, op: Op) -> list[str]:
        out = b.info(op.outputs[0])
        require(len(out.shape) == 4, "output must be 4-D")
        o = op.options
        ins = [b.tensor(op.inputs[0]), b.i32(out.shape[2]), b.i32(out.shape[1])]
        align, half = bool(o.get("AlignCorners", False)), bool(o.get("HalfPixelCenters", False))
        if nn == OP.RESIZE_NEAREST_NEIGHBOR or align or half:
            ins.append(b.boolean(False))
            if align or half:
                ins += [b.boolean(align), b.boolean(half)]
        b.op(nn, ins, [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _reduce_axes(b: Builder, op: Op) -> int:
    return b.i32_vector(const_value(b, op.inputs[1], "the reduction axes").reshape(-1))


def _map_reduce(nn: OP, keep_as_int: bool):
    def mapper(b: Builder, op: Op) -> list[str]:
        x, out = b.info(op.inputs[0]), b.info(op.outputs[0])
        keep = bool(op.options.get("KeepDims", False))
        keep_k = b.i32(int(keep)) if keep_as_int else b.boolean(keep)
        if is_quant8(x) and not same_quant(x, out):
            require(nn in (OP.MEAN, OP.REDUCE_MAX, OP.REDUCE_MIN), f"requantizing {nn.name}")
            xf = b.dequantized(op.inputs[0])
            y = b.temp(T.TENSOR_FLOAT32, out.shape)
            b.op(nn, [xf, _reduce_axes(b, op), keep_k], [y])
            b.op(OP.QUANTIZE, [y], [b.output(op.outputs[0])])
            return ["DEQUANTIZE", nn.name, "QUANTIZE"]
        b.op(nn, [b.tensor(op.inputs[0]), _reduce_axes(b, op), keep_k], [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _map_quantize(b: Builder, op: Op) -> list[str]:
    x = b.info(op.inputs[0])
    if is_quant8(x):
        b.op(OP.QUANTIZE, [b.dequantized(op.inputs[0])], [b.output(op.outputs[0])])
        return ["DEQUANTIZE", "QUANTIZE"]
    b.op(OP.QUANTIZE, [b.tensor(op.inputs[0])], [b.output(op.outputs[0])])
    return ["QUANTIZE"]


def _map_dequantize(b: Builder, op: Op) -> list[str]:
    x = b.info(op.inputs[0])
    if x.type_name == "FLOAT16":
        b.op(OP.CAST, [b.tensor(op.inputs[0])], [b.output(op.outputs[0])])
        return ["CAST"]
    b.op(OP.DEQUANTIZE, [b.tensor(op.inputs[0])], [b.output(op.outputs[0])])
    return ["DEQUANTIZE"]


def _map_leaky_relu(b: Builder, op: Op) -> list[str]:
    x = b.info(op.inputs[0])
    alpha = float(op.options.get("Alpha", 0.2))
    if x.type_name == "FLOAT32":
        a = b.const(np.array([alpha], np.float32), T.TENSOR_FLOAT32)
    elif x.type_name == "UINT8":
        a = b.const(np.array([1], np.uint8), T.TENSOR_QUANT8_ASYMM, alpha, 0)
    elif x.type_name == "INT8":
        a = b.const(np.array([1], np.int8), T.TENSOR_QUANT8_ASYMM_SIGNED, alpha, 0)
    else:
        raise Unmappable(f"input type {x.type_name}")
    b.op(OP.PRELU, [b.tensor(op.inputs[0]), a], [b.output(op.outputs[0])])
    return ["PRELU"]


def _map_argminmax(nn: OP):
    def mapper(b: Builder, op: Op) -> list[str]:
        require(b.info(op.outputs[0]).type_name == "INT32", "output type is not int32")
        axis = int(const_value(b, op.inputs[1], "the axis").reshape(-1)[0])
        b.op(nn, [b.tensor(op.inputs[0]), b.i32(axis)], [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _map_strided_slice(b: Builder, op: Op) -> list[str]:
    o = op.options
    require(not o.get("EllipsisMask", 0) and not o.get("NewAxisMask", 0), "ellipsis or new-axis mask")
    require(not o.get("Offset", False), "offset strided slice")
    begin, end, strides = (const_value(b, t, "a slice parameter").astype(np.int64).reshape(-1).copy()
                           for t in op.inputs[1:4])
    shape = b.info(op.inputs[0]).shape
    bmask, emask, shrink = int(o.get("BeginMask", 0)), int(o.get("EndMask", 0)), int(o.get("ShrinkAxisMask", 0))
    for i in range(len(begin)):
        if shrink >> i & 1:
            # TFLite takes begin[i] and ignores end[i]; NNAPI wants the size-1 slice spelled out.
            first = begin[i] + shape[i] if begin[i] < 0 else begin[i]
            begin[i], end[i], strides[i] = first, first + 1, 1
            bmask &= ~(1 << i)
            emask &= ~(1 << i)
    ins = [b.tensor(op.inputs[0]), b.i32_vector(begin), b.i32_vector(end), b.i32_vector(strides),
           b.i32(bmask), b.i32(emask), b.i32(shrink)]
    b.op(OP.STRIDED_SLICE, ins, [b.output(op.outputs[0])])
    return ["STRIDED_SLICE"]


def _map_gather(b: Builder, op: Op) -> list[str]:
    require(not op.options.get("BatchDims", 0), "batch_dims")
    require(len(b.info(op.inputs[1]).shape) > 0, "scalar indices")
    b.op(OP.GATHER, [b.tensor(op.inputs[0]), b.i32(int(op.options.get("Axis", 0))), b.tensor(op.inputs[1])],
         [b.output(op.outputs[0])])
    return ["GATHER"]


def _map_expand_dims(b: Builder, op: Op) -> list[str]:
    axis = int(const_value(b, op.inputs[1], "the axis").reshape(-1)[0])
    b.op(OP.EXPAND_DIMS, [b.tensor(op.inputs[0]), b.i32(axis)], [b.output(op.outputs[0])])
    return ["EXPAND_DIMS"]


def _map_split(b: Builder, op: Op) -> list[str]:
    axis = int(const_value(b, op.inputs[0], "the axis").reshape(-1)[0])
    b.op(OP.SPLIT, [b.tensor(op.inputs[1]), b.i32(axis), b.i32(int(op.options.get("NumSplits", len(op.outputs))))],
         [b.output(t) for t in op.outputs])
    return ["SPLIT"]


def _map_batch_to_space(b: Builder, op: Op) -> list[str]:
    if len(op.inputs) > 2:
        crops = const_value(b, op.inputs[2], "the crops")
        require(not crops.any(), "non-zero crops")
    b.op(OP.BATCH_TO_SPACE_ND, [b.tensor(op.inputs[0]), b.i32_vector(const_value(b, op.inputs[1], "the block shape"))],
         [b.output(op.outputs[0])])
    return ["BATCH_TO_SPACE_ND"]


def _map_space_to_batch(b: Builder, op: Op) -> list[str]:
    block = const_value(b, op.inputs[1], "the block shape")
    pads = const_value(b, op.inputs[2], "the paddings").reshape(-1, 2)
    b.op(OP.SPACE_TO_BATCH_ND, [b.tensor(op.inputs[0]), b.i32_vector(block),
                                b.const(pads.astype(np.int32), T.TENSOR_INT32)], [b.output(op.outputs[0])])
    return ["SPACE_TO_BATCH_ND"]


def _map_topk(b: Builder, op: Op) -> list[str]:
    k = int(const_value(b, op.inputs[1], "k").reshape(-1)[0])
    require(b.info(op.outputs[1]).type_name == "INT32", "int64 indices")
    b.op(OP.TOPK_V2, [b.tensor(op.inputs[0]), b.i32(k)], [b.output(op.outputs[0]), b.output(op.outputs[1])])
    return ["TOPK_V2"]


def _map_fill(b: Builder, op: Op) -> list[str]:
    dims = const_value(b, op.inputs[0], "the dimensions")
    v = const_value(b, op.inputs[1], "the value").reshape(-1)[0]
    out = b.info(op.outputs[0])
    require(out.type_name in ("FLOAT32", "INT32"), f"{out.type_name} output")
    b.op(OP.FILL, [b.i32_vector(dims), b.f32(v) if out.type_name == "FLOAT32" else b.i32(int(v))],
         [b.output(op.outputs[0])])
    return ["FILL"]


def _map_embedding_lookup(b: Builder, op: Op) -> list[str]:
    values, out = b.info(op.inputs[1]), b.info(op.outputs[0])
    require(values.type_name == out.type_name, f"{values.type_name} values giving {out.type_name}")
    b.op(OP.EMBEDDING_LOOKUP, [b.tensor(op.inputs[0]), b.tensor(op.inputs[1])], [b.output(op.outputs[0])])
    return ["EMBEDDING_LOOKUP"]


def _map_cast(b: Builder, op: Op) -> list[str]:
    ok = ("FLOAT32", "FLOAT16", "INT32", "UINT8")
    a, o = b.info(op.inputs[0]).type_name, b.info(op.outputs[0]).type_name
    require(a in ok and o in ok, f"CAST {a} -> {o}")
    b.op(OP.CAST, [b.tensor(op.inputs[0])], [b.output(op.outputs[0])])
    return ["CAST"]


def _map_select(b: Builder, op: Op) -> list[str]:
    shapes = {tuple(b.info(t).shape) for t in op.inputs}
    require(len(shapes) == 1, "inputs of different shapes")
    b.op(OP.SELECT, [b.tensor(t) for t in op.inputs], [b.output(op.outputs[0])])
    return ["SELECT"]


def _map_tile(b: Builder, op: Op) -> list[str]:
    b.op(OP.TILE, [b.tensor(op.inputs[0]), b.i32_vector(const_value(b, op.inputs[1], "the multiples"))],
         [b.output(op.outputs[0])])
    return ["TILE"]


def _f32_extra(*values):
    def extra(b: Builder, op: Op) -> list[int]:
        return [b.f32(v) for v in values]
    return extra


def _lrn_extra(b: Builder, op: Op) -> list[int]:
    o = op.options
    return [b.i32(o.get("Radius", 5)), b.f32(o.get("Bias", 1.0)), b.f32(o.get("Alpha", 1.0)),
            b.f32(o.get("Beta", 0.5))]


def _map_l2_norm(b: Builder, op: Op) -> list[str]:
    return emit(b, op, OP.L2_NORMALIZATION, [b.tensor(op.inputs[0])], fused=False)


def _map_log_softmax(b: Builder, op: Op) -> list[str]:
    b.op(OP.LOG_SOFTMAX, [b.tensor(op.inputs[0]), b.f32(1.0), b.i32(-1)], [b.output(op.outputs[0])])
    return ["LOG_SOFTMAX"]


#: TFLite builtin -> mapping function (the delegate's ``Map`` cases).
MAPPERS: dict[str, Callable[[Builder, Op], list[str]]] = {
    "ADD": _map_binary(OP.ADD), "SUB": _map_binary(OP.SUB), "MUL": _map_binary(OP.MUL),
    "DIV": _map_binary(OP.DIV),
    "CONV_2D": map_conv, "DEPTHWISE_CONV_2D": map_depthwise, "TRANSPOSE_CONV": map_transpose_conv,
    "FULLY_CONNECTED": map_fully_connected,
    "AVERAGE_POOL_2D": _map_pool(OP.AVERAGE_POOL_2D), "MAX_POOL_2D": _map_pool(OP.MAX_POOL_2D),
    "L2_POOL_2D": _map_pool(OP.L2_POOL_2D),
    "CONCATENATION": _map_concat, "PACK": _map_pack,
    "RESHAPE": _map_reshape, "SQUEEZE": _map_squeeze,
    "EXPAND_DIMS": _map_expand_dims,
    "TRANSPOSE": _map_unary(OP.TRANSPOSE, _const_vector_input(1, "the permutation")),
    "SLICE": _map_unary(OP.SLICE, lambda b, op: [b.i32_vector(const_value(b, op.inputs[1], "the begin")),
                                                 b.i32_vector(const_value(b, op.inputs[2], "the size"))]),
    "STRIDED_SLICE": _map_strided_slice, "GATHER": _map_gather, "TILE": _map_tile, "SPLIT": _map_split,
    "SPACE_TO_BATCH_ND": _map_space_to_batch, "BATCH_TO_SPACE_ND": _map_batch_to_space,
    "DEPTH_TO_SPACE": _map_unary(OP.DEPTH_TO_SPACE, lambda b, op: [b.i32(op.options.get("BlockSize", 1))]),
    "SPACE_TO_DEPTH": _map_unary(OP.SPACE_TO_DEPTH, lambda b, op: [b.i32(op.options.get("BlockSize", 1))]),
    "PAD": _map_pad, "PADV2": _map_pad, "MIRROR_PAD": _map_mirror_pad,
    "SOFTMAX": _map_softmax, "LOG_SOFTMAX": _map_log_softmax,
    "L2_NORMALIZATION": _map_l2_norm,
    "LOCAL_RESPONSE_NORMALIZATION": _map_unary(OP.LOCAL_RESPONSE_NORMALIZATION, _lrn_extra),
    "LOGISTIC": _map_unary(OP.LOGISTIC), "TANH": _map_unary(OP.TANH), "RELU": _map_unary(OP.RELU),
    "RELU_N1_TO_1": _map_unary(OP.RELU1), "RELU6": _map_unary(OP.RELU6),
    "HARD_SWISH": _map_unary(OP.HARD_SWISH), "ELU": _map_unary(OP.ELU, _f32_extra(1.0)),
    "EXP": _map_unary(OP.EXP), "LOG": _map_unary(OP.LOG), "SQRT": _map_unary(OP.SQRT),
    "RSQRT": _map_unary(OP.RSQRT), "SIN": _map_unary(OP.SIN), "ABS": _map_unary(OP.ABS),
    "NEG": _map_unary(OP.NEG), "FLOOR": _map_unary(OP.FLOOR), "LOGICAL_NOT": _map_unary(OP.LOGICAL_NOT),
    "CAST": _map_cast,
    "PRELU": _map_binary(OP.PRELU, fused=False), "LEAKY_RELU": _map_leaky_relu,
    "MAXIMUM": _map_binary(OP.MAXIMUM, fused=False), "MINIMUM": _map_binary(OP.MINIMUM, fused=False),
    "POW": _map_binary(OP.POW, fused=False),
    "LESS": _map_binary(OP.LESS, fused=False), "LESS_EQUAL": _map_binary(OP.LESS_EQUAL, fused=False),
    "GREATER": _map_binary(OP.GREATER, fused=False),
    "GREATER_EQUAL": _map_binary(OP.GREATER_EQUAL, fused=False),
    "EQUAL": _map_binary(OP.EQUAL, fused=False), "NOT_EQUAL": _map_binary(OP.NOT_EQUAL, fused=False),
    "LOGICAL_AND": _map_binary(OP.LOGICAL_AND, fused=False),
    "LOGICAL_OR": _map_binary(OP.LOGICAL_OR, fused=False),
    "SELECT": _map_select,
    "ARG_MAX": _map_argminmax(OP.ARGMAX), "ARG_MIN": _map_argminmax(OP.ARGMIN),
    "MEAN": _map_reduce(OP.MEAN, True), "SUM": _map_reduce(OP.REDUCE_SUM, False),
    "REDUCE_PROD": _map_reduce(OP.REDUCE_PROD, False), "REDUCE_MAX": _map_reduce(OP.REDUCE_MAX, False),
    "REDUCE_MIN": _map_reduce(OP.REDUCE_MIN, False), "REDUCE_ANY": _map_reduce(OP.REDUCE_ANY, False),
    "RESIZE_BILINEAR": _map_resize(OP.RESIZE_BILINEAR),
    "RESIZE_NEAREST_NEIGHBOR": _map_resize(OP.RESIZE_NEAREST_NEIGHBOR),
    "QUANTIZE": _map_quantize, "DEQUANTIZE": _map_dequantize,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": map_sequence_lstm, "LSTM": map_lstm_cell,
    "RNN": map_rnn, "UNIDIRECTIONAL_SEQUENCE_RNN": map_sequence_rnn, "SVDF": map_svdf,
    "TOPK_V2": _map_topk, "FILL": _map_fill, "EMBEDDING_LOOKUP": _map_embedding_lookup,
}
