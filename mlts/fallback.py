"""CPU fallback kernels (numpy) for TFLite operators the importer does not map to NNAPI.

TFLite's NNAPI delegate leaves an operator it cannot map to the TFLite CPU kernels and
splits the graph around it (``StatefulNnApiDelegate::DoPrepare``: the supported nodes
become delegated partitions, the rest run on the interpreter). :mod:`mlts.tflite_import`
does the same: such an operator becomes a :class:`~mlts.tflite_import.FallbackStep`
between NNAPI partitions and runs one of the kernels below. A fallback operator whose
inputs are all constant is evaluated once at import ("folded"), as the delegate densifies
constant sparse weights (``DensifyAndDequantizeConstTensor``).

Every kernel has the signature ``kernel(inputs, node) -> list[np.ndarray]``:

- ``inputs``: one numpy array per TFLite input (shaped as the TFLite tensor, in its
  storage dtype; ``None`` for an omitted optional input, TFLite index -1);
- ``node``: the :class:`~mlts.tflite_import.FallbackStep` (``options`` dict of the
  operator's builtin options, ``input_info`` / ``output_info``: the
  :class:`~mlts.tflite_import.TensorInfo` of every input and output, with shapes, dtypes
  and quantization);
- returns one array per TFLite output, in the output tensor's shape and dtype.

Kernels raise :class:`FallbackError` naming the operator and the rule broken.

Semantics follow the TFLite reference kernels (``tensorflow/lite/kernels/*.cc``); the
sparse format of DENSIFY is TFLite's ``SparsityParameters`` (``schema.fbs``) as expanded by
``tflite::internal::sparsity::FormatConverter::SparseToDense``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np


class FallbackError(RuntimeError):
    """A CPU fallback kernel cannot run the operator (names the operator and the rule)."""


def _where(node) -> str:
    return f"operator {node.operator} ({node.builtin})"


# --- DENSIFY ---------------------------------------------------------------------------------

def densify(values: np.ndarray, shape, sparsity) -> np.ndarray:
    """The dense tensor of ``shape`` holding the sparse ``values`` (1-D, the TFLite buffer)
    described by ``sparsity`` (:class:`~mlts.tflite_import.SparsityInfo`).

    TFLite's format: the dense shape, optionally blocked (``block_map[k]`` names the
    original dimension the k-th block dimension splits, its block size being that
    level's ``dense_size``), is traversed in ``traversal_order`` (original dimensions
    first, then block dimensions); each traversal level is DENSE (``dense_size``
    children) or SPARSE_CSR (children ``array_indices[segments[p]:segments[p+1]]`` of the
    parent position ``p``). The stored values are the leaves in depth-first order.
    Raises ValueError when the metadata and the value count disagree."""
    shape = tuple(int(d) for d in shape)
    rank = len(shape)
    order = [int(x) for x in sparsity.traversal_order]
    block_map = [int(x) for x in sparsity.block_map]
    levels = sparsity.dim_metadata
    if len(order) != len(levels) or len(order) != rank + len(block_map):
        raise ValueError(f"sparsity metadata: {len(levels)} levels and traversal order {order} "
                         f"for a rank-{rank} tensor with {len(block_map)} block dimensions")
    block_size = [int(levels[order.index(rank + k)].dense_size) for k in range(len(block_map))]
    # Breadth-first expansion keeps every parent's children together and the parents in
    # order, so the leaves come out in the depth-first order of the stored values.
    prev = np.zeros(1, np.int64)
    coords: list[np.ndarray] = []
    for lv in levels:
        if lv.format == 0:  # DENSE
            n = int(lv.dense_size)
            coords = [np.repeat(c, n) for c in coords]
            coords.append(np.tile(np.arange(n, dtype=np.int64), len(prev)))
            prev = (np.repeat(prev, n) * n + coords[-1])
        else:  # SPARSE_CSR
            seg = np.asarray(lv.segments, np.int64)
            idx = np.asarray(lv.indices, np.int64)
            if prev.size and prev.max() + 1 >= seg.size:
                raise ValueError(f"sparsity metadata: segment array of {seg.size} entries for "
                                 f"parent position {int(prev.max())}")
            starts, ends = seg[prev], seg[prev + 1]
            counts = ends - starts
            total = int(counts.sum())
            owner = np.repeat(np.arange(len(prev)), counts)
            offset = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            pos = starts[owner] + offset
            coords = [c[owner] for c in coords]
            coords.append(idx[pos])
            prev = pos
    values = np.asarray(values).reshape(-1)
    if len(prev) != values.size:
        raise ValueError(f"sparsity metadata gives {len(prev)} values, the buffer holds {values.size}")
    orig = [None] * rank
    for i in range(rank):
        orig[order[i]] = coords[i]
    for i in range(rank, len(order)):
        k = order[i] - rank
        d = block_map[k]
        orig[d] = orig[d] * block_size[k] + coords[i]
    out = np.zeros(shape, values.dtype)
    if values.size:
        out[tuple(orig)] = values
    return out


def _densify(inputs, node):
    info = node.input_info[0]
    if info.sparsity is None:
        raise FallbackError(f"{_where(node)}: input tensor {info.index} ({info.name}) has no "
                            f"sparsity parameters")
    try:
        return [densify(inputs[0], node.output_info[0].shape, info.sparsity)]
    except ValueError as e:
        raise FallbackError(f"{_where(node)}: {e}") from None


# --- element-wise and small kernels ------------------------------------------------------------

def _real(x: np.ndarray, info) -> np.ndarray:
    """Real values of a TFLite tensor (float64): dequantized when quantized."""
    if info.quantized and x.dtype.kind in "iu":
        if info.per_channel:
            shape = [1] * x.ndim
            shape[info.quantized_dimension] = -1
            s = info.scales.reshape(shape).astype(np.float64)
            z = info.zero_points.reshape(shape).astype(np.float64)
            return (x.astype(np.float64) - z) * s
        return (x.astype(np.float64) - info.zero_point) * float(info.scale)
    return x.astype(np.float64)


def _store(v: np.ndarray, info) -> np.ndarray:
    """``v`` (real values) stored in the output tensor's dtype (quantized: round half away
    from zero, saturate; TFLite's ``AffineQuantize``)."""
    dt = info.dtype
    if info.quantized and np.dtype(dt).kind in "iu":
        q = v / float(info.scale) + info.zero_point
        q = np.sign(q) * np.floor(np.abs(q) + 0.5)
        lim = np.iinfo(dt)
        return np.clip(q, lim.min, lim.max).astype(dt).reshape(info.shape)
    return np.asarray(v).astype(dt).reshape(info.shape)


def _unary(fn: Callable[[np.ndarray], np.ndarray]):
    def kernel(inputs, node):
        return [_store(fn(_real(inputs[0], node.input_info[0])), node.output_info[0])]
    return kernel


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def kernel(inputs, node):
        a = _real(inputs[0], node.input_info[0])
        b = _real(inputs[1], node.input_info[1])
        return [_store(fn(a, b), node.output_info[0])]
    return kernel


def _dequantize(inputs, node):
    return [_real(inputs[0], node.input_info[0]).astype(np.float32).reshape(node.output_info[0].shape)]


def _gelu(inputs, node):
    x = _real(inputs[0], node.input_info[0])
    if node.options.get("Approximate"):
        y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        from math import erf
        y = 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))
    return [_store(y, node.output_info[0])]


def _cast(inputs, node):
    return [inputs[0].astype(node.output_info[0].dtype)]


def _shape(inputs, node):
    return [np.asarray(node.input_info[0].shape, node.output_info[0].dtype)]


def _like(value):
    def kernel(inputs, node):
        return [np.full(node.output_info[0].shape, value, node.output_info[0].dtype)]
    return kernel


def _reshape(inputs, node):
    return [inputs[0].reshape(node.output_info[0].shape)]


def _transpose(inputs, node):
    return [np.transpose(inputs[0], [int(p) for p in inputs[1].reshape(-1)])]


def _range(inputs, node):
    start, limit, delta = (x.reshape(()).item() for x in inputs[:3])
    return [np.arange(start, limit, delta).astype(node.output_info[0].dtype)]


def _cumsum(inputs, node):
    x = inputs[0]
    axis = int(inputs[1].reshape(()).item())
    exclusive, reverse = bool(node.options.get("Exclusive")), bool(node.options.get("Reverse"))
    v = _real(x, node.input_info[0])
    if reverse:
        v = np.flip(v, axis)
    c = np.cumsum(v, axis)
    if exclusive:
        c = c - v
    if reverse:
        c = np.flip(c, axis)
    return [_store(c, node.output_info[0])]


def _broadcast_to(inputs, node):
    return [np.broadcast_to(inputs[0], node.output_info[0].shape).copy()]


def _add_n(inputs, node):
    return [_store(sum(_real(x, i) for x, i in zip(inputs, node.input_info)), node.output_info[0])]


def _unpack(inputs, node):
    axis = int(node.options.get("Axis", 0))
    return [np.take(inputs[0], k, axis=axis).reshape(o.shape) for k, o in enumerate(node.output_info)]


def _select_v2(inputs, node):
    return [np.where(inputs[0], inputs[1], inputs[2]).astype(node.output_info[0].dtype)]


def _strided_slice(inputs, node):
    """TFLite STRIDED_SLICE: begin/end/strides with begin, end and shrink-axis masks and the
    ``offset`` option (end relative to begin); ellipsis and new-axis masks are refused."""
    o = node.options
    if o.get("EllipsisMask", 0) or o.get("NewAxisMask", 0):
        raise FallbackError(f"{_where(node)}: ellipsis / new-axis masks are not supported")
    x = inputs[0]
    begin, end, strides = (np.asarray(v).reshape(-1).astype(np.int64) for v in inputs[1:4])
    bmask, emask, shrink = int(o.get("BeginMask", 0)), int(o.get("EndMask", 0)), int(o.get("ShrinkAxisMask", 0))
    out = x
    for i in range(len(begin)):
        n, s = x.shape[i], int(strides[i])
        if s == 0:
            raise FallbackError(f"{_where(node)}: stride {i} is 0")
        b = int(begin[i]) + (n if begin[i] < 0 else 0)
        if shrink >> i & 1:
            idx = np.array([b])
        else:
            e = int(end[i]) + int(begin[i]) if o.get("Offset", False) else int(end[i])
            e += n if e < 0 and not o.get("Offset", False) else 0
            if bmask >> i & 1:
                b = 0 if s > 0 else n - 1
            if emask >> i & 1:
                e = n if s > 0 else -1
            b = min(max(b, 0), n) if s > 0 else min(max(b, -1), n - 1)
            e = min(max(e, 0), n) if s > 0 else min(max(e, -1), n - 1)
            idx = np.arange(b, e, s)
        out = np.take(out, idx, axis=i)
    return [out.reshape(node.output_info[0].shape)]


def _pack(inputs, node):
    return [np.stack(inputs, axis=int(node.options.get("Axis", 0))).reshape(node.output_info[0].shape)]


def _concatenation(inputs, node):
    if node.options.get("FusedActivationFunction", 0):
        raise FallbackError(f"{_where(node)}: a fused activation")
    return [np.concatenate(inputs, axis=int(node.options.get("Axis", 0)))]


def _slice(inputs, node):
    x, begin, size = inputs[0], inputs[1].reshape(-1), inputs[2].reshape(-1)
    idx = tuple(slice(int(b), None if int(n) < 0 else int(b) + int(n)) for b, n in zip(begin, size))
    return [x[idx]]


def _gather(inputs, node):
    return [np.take(inputs[0], inputs[1].astype(np.int64), axis=int(node.options.get("Axis", 0)))]


def _fill(inputs, node):
    return [np.full(node.output_info[0].shape, inputs[1].reshape(()), node.output_info[0].dtype)]


def _int_binary(fn):
    def kernel(inputs, node):
        a, b = inputs[0], inputs[1]
        if a.dtype.kind not in "iu" or node.input_info[0].quantized or node.options.get("FusedActivationFunction", 0):
            raise FallbackError(f"{_where(node)}: only unquantized integer inputs without activation")
        return [fn(a, b).astype(node.output_info[0].dtype)]
    return kernel


def _floor_div(a, b):
    return np.floor(a / b)


def _floor_mod(a, b):
    return a - np.floor(a / b) * b


#: TFLite builtin name -> numpy kernel.
KERNELS: dict[str, Callable] = {
    "DENSIFY": _densify,
    "DEQUANTIZE": _dequantize,
    "CAST": _cast,
    "GELU": _gelu,
    "SQUARE": _unary(np.square),
    "COS": _unary(np.cos),
    "SIGN": _unary(np.sign),
    "ROUND": _unary(np.round),
    "CEIL": _unary(np.ceil),
    "SQUARED_DIFFERENCE": _binary(lambda a, b: (a - b) ** 2),
    "FLOOR_DIV": _binary(_floor_div),
    "FLOOR_MOD": _binary(_floor_mod),
    "ATAN2": _binary(np.arctan2),
    "ZEROS_LIKE": _like(0),
    "ONES_LIKE": _like(1),
    "SHAPE": _shape,
    "RESHAPE": _reshape,
    "TRANSPOSE": _transpose,
    "RANGE": _range,
    "CUMSUM": _cumsum,
    "BROADCAST_TO": _broadcast_to,
    "ADD_N": _add_n,
    "UNPACK": _unpack,
    "SELECT_V2": _select_v2,
    "STRIDED_SLICE": _strided_slice,
    "PACK": _pack,
    "CONCATENATION": _concatenation,
    "SLICE": _slice,
    "GATHER": _gather,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
    "FILL": _fill,
    "ADD": _int_binary(np.add),
    "SUB": _int_binary(np.subtract),
    "MUL": _int_binary(np.multiply),
}

#: Kernels that only move values (valid for any dtype, quantized or not, unchanged).
DTYPE_AGNOSTIC = {"DENSIFY", "CAST", "ZEROS_LIKE", "ONES_LIKE", "SHAPE", "RESHAPE", "TRANSPOSE",
                  "RANGE", "BROADCAST_TO", "UNPACK", "SELECT_V2", "DEQUANTIZE", "STRIDED_SLICE",
                  "PACK", "SLICE", "GATHER", "SQUEEZE", "EXPAND_DIMS", "FILL"}


def kernel_for(builtin: str) -> Callable | None:
    """The numpy kernel of TFLite builtin ``builtin`` (e.g. ``"DENSIFY"``), or None."""
    return KERNELS.get(builtin)
