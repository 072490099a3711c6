"""Mappings of the TFLite operators with weights and a bias (the delegate's ``Map`` cases):
CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV -> TRANSPOSE_CONV_2D and FULLY_CONNECTED. A
missing bias becomes a zero bias; a float input with int8/uint8 weights (hybrid) gets
DEQUANTIZE operations for weights and bias (``AddDequantizeOperatorsWhereNeeded``); int8
per-channel FULLY_CONNECTED weights (which NNAPI FULLY_CONNECTED cannot take) become RESHAPE
+ a 1x1 CONV_2D with a per-channel filter + RESHAPE. Each mapper takes the
:class:`~mlts.tflite_import.builder.Builder` and the TFLite operator and returns the names of
the NNAPI operations it emitted, or raises :class:`~mlts.tflite_import.builder.Unmappable`."""
from __future__ import annotations

import numpy as np

from runtime.types import OperandType as T
from runtime.types import OperationType as OP

from .builder import (Builder, act_code, const_value, emit, is_quant8, nn_dims, nn_type, padding_code,
                      require)
from .model import TensorInfo
from .reader import Op


def _weights_and_bias(b: Builder, op: Op, x: TensorInfo, w_t: int, bias_t: int, units: int,
                      w_operand: int | None = None) -> tuple[int, int, list[str]]:
    """Filter/weights and bias operands of a convolution or fully connected operator:
    hybrid (float input, quantized weights) -> DEQUANTIZE; a missing bias -> zeros."""
    w = b.info(w_t)
    names = []
    hybrid = x.type_name == "FLOAT32" and is_quant8(w)
    if w_operand is not None:
        wk = w_operand
    elif hybrid:
        wk = b.dequantized(w_t)
        names.append("DEQUANTIZE")
    else:
        require(x.type_name == w.type_name, f"input type {x.type_name} with weights of type {w.type_name}")
        wk = b.tensor(w_t)
    quant = is_quant8(x)
    if quant:
        if w.per_channel:
            bias_scale = 0.0
        else:
            bias_scale = float(np.float32(x.scale) * np.float32(w.scale))
    if bias_t < 0:
        if quant:
            bk = b.const(np.zeros(units, np.int32), T.TENSOR_INT32, bias_scale, 0)
        else:
            bk = b.const(np.zeros(units, np.float32), T.TENSOR_FLOAT32)
    else:
        bi = b.info(bias_t)
        if quant:
            require(bi.type_name == "INT32", f"bias of type {bi.type_name} for a quantized input")
            v = const_value(b, bias_t, "the bias")
            bk = b.const(v.astype(np.int32).reshape(-1), T.TENSOR_INT32, bias_scale, 0)
        elif hybrid and is_quant8(bi) or (hybrid and bi.type_name == "INT32" and bi.quantized):
            v = const_value(b, bias_t, "the bias")
            bk = b.const(((v.astype(np.float64) - bi.zero_point) * bi.scale).astype(np.float32).reshape(-1),
                         T.TENSOR_FLOAT32)
        else:
            bk = b.tensor(bias_t)
    return wk, bk, names


def map_conv(b: Builder, op: Op) -> list[str]:
    """CONV_2D -> CONV_2D: inputs [input, filter, bias, padding code, stride w, stride h,
    FuseCode] (+ layout false, dilation w, h when a dilation factor is not 1)."""
    x_t, w_t = op.inputs[0], op.inputs[1]
    bias_t = op.inputs[2] if len(op.inputs) > 2 else -1
    x, w = b.info(x_t), b.info(w_t)
    require(len(x.shape) == 4 and len(w.shape) == 4, "input and filter must be 4-D")
    o = op.options
    wk, bk, names = _weights_and_bias(b, op, x, w_t, bias_t, w.shape[0])
    params = [b.i32(padding_code(op)), b.i32(o.get("StrideW", 1)), b.i32(o.get("StrideH", 1))]
    return names + emit(b, op, OP.CONV_2D, [b.tensor(x_t), wk, bk] + params, _dilation(b, o))


def map_depthwise(b: Builder, op: Op) -> list[str]:
    """DEPTHWISE_CONV_2D -> DEPTHWISE_CONV_2D; the depth multiplier is filter channels /
    input channels (TFLite's kernel derives it from the shapes, the option may be stale)."""
    x_t, w_t = op.inputs[0], op.inputs[1]
    bias_t = op.inputs[2] if len(op.inputs) > 2 else -1
    x, w = b.info(x_t), b.info(w_t)
    require(len(x.shape) == 4 and len(w.shape) == 4, "input and filter must be 4-D")
    require(x.shape[3] > 0 and w.shape[3] % x.shape[3] == 0,
            f"filter channels {w.shape[3]} are not a multiple of input channels {x.shape[3]}")
    multiplier = w.shape[3] // x.shape[3]
    require(not (x.type_name == "FLOAT32" and is_quant8(w)), "hybrid DEPTHWISE_CONV_2D")
    o = op.options
    wk, bk, names = _weights_and_bias(b, op, x, w_t, bias_t, w.shape[3])
    params = [b.i32(padding_code(op)), b.i32(o.get("StrideW", 1)), b.i32(o.get("StrideH", 1)),
              b.i32(multiplier)]
    return names + emit(b, op, OP.DEPTHWISE_CONV_2D, [b.tensor(x_t), wk, bk] + params, _dilation(b, o))


def _dilation(b: Builder, o: dict) -> list:
    """The trailing NNAPI inputs of a dilated convolution (layout NHWC, dilation width and
    height, FL3), or none when both factors are 1 (the FL1 form)."""
    dw, dh = o.get("DilationWFactor", 1) or 1, o.get("DilationHFactor", 1) or 1
    return [b.boolean(False), b.i32(dw), b.i32(dh)] if (dw, dh) != (1, 1) else []


def map_transpose_conv(b: Builder, op: Op) -> list[str]:
    """TRANSPOSE_CONV (inputs output shape, filter, input[, bias]) -> TRANSPOSE_CONV_2D
    [input, filter, bias, output shape, padding code, stride w, stride h, FuseCode, NHWC]."""
    shape_t, w_t, x_t = op.inputs[:3]
    bias_t = op.inputs[3] if len(op.inputs) > 3 else -1
    x, w = b.info(x_t), b.info(w_t)
    require(not (x.type_name == "FLOAT32" and is_quant8(w)), "hybrid TRANSPOSE_CONV")
    out_shape = const_value(b, shape_t, "the output shape")
    wk, bk, names = _weights_and_bias(b, op, x, w_t, bias_t, w.shape[0])
    o = op.options
    ins = [b.tensor(x_t), wk, bk, b.i32_vector(out_shape), b.i32(padding_code(op)),
           b.i32(o.get("StrideW", 1)), b.i32(o.get("StrideH", 1))]
    return names + emit(b, op, OP.TRANSPOSE_CONV_2D, ins, [b.boolean(False)])


def map_fully_connected(b: Builder, op: Op) -> list[str]:
    """FULLY_CONNECTED -> FULLY_CONNECTED (NNAPI flattens an input of rank 2-4 to [batch,
    input_size]; other ranks get a RESHAPE first; a [batch, units] result that is not the
    TFLite output shape, ``keep_num_dims``, is RESHAPEd to it, the delegate's
    ``AppendReshape``); int8 per-channel weights -> RESHAPE + 1x1 CONV_2D + RESHAPE."""
    x_t, w_t = op.inputs[0], op.inputs[1]
    bias_t = op.inputs[2] if len(op.inputs) > 2 else -1
    x, w, out = b.info(x_t), b.info(w_t), b.info(op.outputs[0])
    o = op.options
    require(o.get("WeightsFormat", 0) == 0, "shuffled weights format")
    require(len(w.shape) == 2, "weights must be 2-D")
    units, in_size = w.shape
    n = int(np.prod(x.shape)) if x.shape else 1
    require(in_size > 0 and n % in_size == 0, f"input of {n} elements is not a multiple of {in_size}")
    batch = n // in_size
    names = []
    xk = b.tensor(x_t)
    if w.per_channel and is_quant8(x):
        # NNAPI FULLY_CONNECTED has no per-channel form: a 1x1 CONV_2D has.
        x4 = b.temp_like(x_t, (batch, 1, 1, in_size))
        b.op(OP.RESHAPE, [xk, b.i32_vector([batch, 1, 1, in_size])], [x4])
        wv = const_value(b, w_t, "the per-channel weights")
        ty, _, _, cq = nn_type(w)
        require(w.quantized_dimension == 0, "per-channel weights not along dimension 0")
        wk = b.const(wv.reshape(units, 1, 1, in_size), ty, channel_quant=cq)
        _, bk, _ = _weights_and_bias(b, op, x, w_t, bias_t, units, w_operand=wk)
        y4 = b.temp_like(op.outputs[0], (batch, 1, 1, units))
        b.op(OP.CONV_2D, [x4, wk, bk, b.i32(2), b.i32(1), b.i32(1), b.i32(act_code(b, op))], [y4])
        b.op(OP.RESHAPE, [y4, b.i32_vector(nn_dims(out.shape))], [b.output(op.outputs[0])])
        return ["RESHAPE", "CONV_2D", "RESHAPE"]
    if not 2 <= len(x.shape) <= 4:
        x2 = b.temp_like(x_t, (batch, in_size))
        b.op(OP.RESHAPE, [xk, b.i32_vector([batch, in_size])], [x2])
        xk = x2
        names.append("RESHAPE")
    wk, bk, wnames = _weights_and_bias(b, op, x, w_t, bias_t, units)
    names += wnames
    if tuple(out.shape) == (batch, units):
        return names + emit(b, op, OP.FULLY_CONNECTED, [xk, wk, bk])
    require(int(np.prod(out.shape)) == batch * units,
            f"output shape {list(out.shape)} does not hold [{batch}, {units}]")
    y = b.temp_like(op.outputs[0], (batch, units))
    b.op(OP.FULLY_CONNECTED, [xk, wk, bk, b.i32(act_code(b, op))], [y])
    names.append("FULLY_CONNECTED")
    b.op(OP.RESHAPE, [y, b.i32_vector(nn_dims(out.shape))], [b.output(op.outputs[0])])
    return names + ["RESHAPE"]
