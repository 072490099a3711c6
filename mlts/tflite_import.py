"""Import a TFLite flatbuffer into NNAPI models, the way TFLite's NNAPI delegate maps builtin
operators (``tensorflow/lite/delegates/nnapi/nnapi_delegate.cc``: ``Validate``, ``Map``,
``AddOpsAndTensors``; the facts are restated here, nothing is copied).

``import_tflite(path_or_bytes) -> ImportedModel``. The model is read with the ``tflite``
package (the generated flatbuffer classes of TFLite's ``schema.fbs``); only subgraph 0 is
imported. Each operator, in TFLite's execution order, is

- **mapped**: it becomes one or more NNAPI operations of the current NNAPI partition
  (a :class:`Partition`, whose ``model`` is a :class:`runtime.testing.test_model.TestModel`
  with main inputs/outputs tied to TFLite tensor indexes);
- **folded**: evaluated once at import because every input is constant: a DEQUANTIZE of a
  constant float16 tensor (the delegate converts such weights to float32 constants,
  ``NN_TENSOR_FLAG_HALF_TO_FLOAT_CONVERSION``, and drops the DEQUANTIZE node), or a CPU
  fallback operator with constant inputs (DENSIFY of sparse weights: the delegate's
  ``DensifyAndDequantizeConstTensor``);
- **CPU fallback**: no NNAPI mapping; it runs a numpy kernel of :mod:`mlts.fallback` as a
  :class:`FallbackStep` between partitions (the delegate leaves such nodes to the
  interpreter and partitions the graph around them);
- **unsupported**: no mapping and no kernel; the import succeeds (``describe`` shows it)
  but running the model raises :class:`TFLiteImportError` naming the operator.

Operand types (TFLite tensor type -> NNAPI, ``NNAPIOpBuilder::AddTensor``, feature level 4
targets): FLOAT32 -> TENSOR_FLOAT32; FLOAT16 -> TENSOR_FLOAT16; UINT8 -> TENSOR_QUANT8_ASYMM;
INT8 -> TENSOR_QUANT8_ASYMM_SIGNED, or TENSOR_QUANT8_SYMM_PER_CHANNEL (``channelDim`` =
TFLite ``quantized_dimension``) when the tensor has more than one scale; INT32 ->
TENSOR_INT32 (a quantized operation's bias gets scale input_scale * filter_scale, or 0 with a
per-channel filter, zeroPoint 0); INT16 -> TENSOR_QUANT16_SYMM; BOOL -> TENSOR_BOOL8;
constant INT64 shape/axis tensors -> TENSOR_INT32. A quantized tensor of scale 0 gets scale 1
(NNAPI forbids 0, as the delegate does). A rank-0 tensor becomes shape [1] (NNAPI reads
rank 0 as "unknown rank"; the delegate's scalar-as-tensor rule); values are reshaped back to
the TFLite shape when read. Layout is NHWC throughout (the NNAPI layout flag, when present,
is false). Shapes are the static ``shape`` (not ``shape_signature``), as the delegate without
``allow_dynamic_dimensions``. Constants of more than 128 bytes are CONSTANT_REFERENCE (one
memory pool per partition, like the delegate's mmap sharing), smaller ones CONSTANT_COPY.

Operator mapping (TFLite builtin -> NNAPI; options as the delegate's ``Map``):

- ADD, SUB, MUL, DIV -> same (+ fused activation; NNAPI broadcasts like TFLite). A fused
  TANH or SIGN_BIT activation (any operator) is dropped, noted in the mapping: TFLite's
  kernels ignore it (``CalculateActivationRange`` clamps only for RELU, RELU_N1_TO_1, RELU6).
- CONV_2D -> CONV_2D (implicit padding SAME=1/VALID=2, strides, activation; the layout flag
  and dilations only when a dilation is not 1); a missing bias becomes a zero bias; a float
  input with int8/uint8 weights (hybrid) gets DEQUANTIZE operations for weights and bias
  (``AddDequantizeOperatorsWhereNeeded``).
- DEPTHWISE_CONV_2D -> DEPTHWISE_CONV_2D, depth multiplier = filter channels / input
  channels (TFLite's kernel derives it from the shapes, the option may be stale).
- FULLY_CONNECTED -> FULLY_CONNECTED (zero bias when absent; NNAPI flattens an input of rank
  2-4 to [batch, input_size], other ranks get a RESHAPE first; with ``keep_num_dims`` the
  [batch, units] result is RESHAPEd to the TFLite output shape, ``AppendReshape``). Int8
  weights with per-channel scales (which NNAPI FULLY_CONNECTED cannot take) become RESHAPE +
  CONV_2D 1x1 with a per-channel filter + RESHAPE.
- TRANSPOSE_CONV -> TRANSPOSE_CONV_2D (inputs reordered; zero bias when absent).
- AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D -> same (padding, strides, filter, activation).
- CONCATENATION -> CONCATENATION (axis made non-negative); a fused activation becomes a
  following RELU/RELU1/RELU6. PACK -> a RESHAPE per input (inserting the axis) +
  CONCATENATION (the delegate's CONCATENATION + RESHAPE lowering, valid for every axis).
- RESHAPE -> RESHAPE (new shape = the output tensor's static shape); SQUEEZE -> SQUEEZE;
  EXPAND_DIMS, TRANSPOSE, SLICE, STRIDED_SLICE (no ellipsis / new-axis masks), GATHER, TILE,
  SPLIT, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (zero crops), DEPTH_TO_SPACE, SPACE_TO_DEPTH,
  PAD / PADV2 (constant paddings; PADV2's value as a scalar) -> same.
- SOFTMAX (beta), LOG_SOFTMAX (beta 1, axis -1), L2_NORMALIZATION,
  LOCAL_RESPONSE_NORMALIZATION, LOGISTIC, TANH, RELU, RELU_N1_TO_1 (-> RELU1), RELU6,
  HARD_SWISH, ELU (alpha 1), EXP, LOG, SQRT, RSQRT, SIN, ABS, NEG, FLOOR, CAST, PRELU,
  LEAKY_RELU (-> PRELU with a one-element alpha), MAXIMUM, MINIMUM, POW, the comparisons,
  LOGICAL_AND/OR/NOT, SELECT, ARG_MAX/ARG_MIN (int32 output), MEAN, SUM, REDUCE_PROD,
  REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, RESIZE_BILINEAR (output size; ``align_corners`` /
  ``half_pixel_centers`` when set), RESIZE_NEAREST_NEIGHBOR -> the NNAPI operation of the
  same meaning. A quantized MEAN / REDUCE_MAX / REDUCE_MIN whose output quantization differs
  from its input's (NNAPI requires them equal; the delegate would leave it on the CPU)
  becomes DEQUANTIZE + the float reduction + QUANTIZE.
- QUANTIZE -> QUANTIZE (a quantized input, i.e. requantization, gets a DEQUANTIZE first).
- DEQUANTIZE: constant float16 input -> folded (see above); other float16 input -> CAST to
  float32; int8/uint8 input -> DEQUANTIZE.
- UNIDIRECTIONAL_SEQUENCE_LSTM (float32) -> UNIDIRECTIONAL_SEQUENCE_LSTM: TFLite inputs 0-19
  (an omitted optional input -> a NO_VALUE operand), activation, cell_clip, proj_clip,
  time_major, then the four layer-normalization weights (NO_VALUE when absent). TFLite's
  variable state tensors (inputs 18, 19) become zero constants: each run starts from zero
  state, like a fresh interpreter or one after ``reset_all_variables``. The same holds for
  the state of LSTM (full kernel, one step; NNAPI LSTM with temporary scratch and state
  outputs), RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF (float32; their activation must be
  a FuseCode: a TANH cell activation, real in TFLite, has no NNAPI form).
- TOPK_V2 (constant k, int32 indices), FILL (constant dims and value), EMBEDDING_LOOKUP ->
  same.

Everything else is a CPU fallback (:data:`mlts.fallback.KERNELS`) or unsupported. A
mapping the front end rejects when the partition is built (a type combination NNAPI lacks)
also falls back: the operator is re-imported as a CPU fallback with the front end's reason.

Errors: :class:`TFLiteImportError` (a ``ValueError``) naming the file and, where it applies,
the operator index and builtin name: unreadable file, not a TFLite flatbuffer (identifier
``TFL3``), missing ``tflite`` package, a graph input that is also an output, ...
"""
from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from runtime.nnapi.model import run_order
from runtime.testing.test_model import TestModel, TestOperand, TestOperation, TestSubgraph
from runtime.types import OperandLifeTime as L
from runtime.types import OperandType as T
from runtime.types import OperationType as OP
from runtime.types import operand_dtype

from . import fallback


class TFLiteImportError(ValueError):
    """The TFLite file cannot be imported (or an operator of it cannot run); the message
    names the file and, where it applies, the operator index and builtin name."""


# --- the TFLite side --------------------------------------------------------------------------

#: TFLite TensorType code -> (name, numpy dtype or None when numpy has none we use).
TFLITE_TYPES = {0: ("FLOAT32", np.float32), 1: ("FLOAT16", np.float16), 2: ("INT32", np.int32),
                3: ("UINT8", np.uint8), 4: ("INT64", np.int64), 5: ("STRING", None),
                6: ("BOOL", np.bool_), 7: ("INT16", np.int16), 8: ("COMPLEX64", np.complex64),
                9: ("INT8", np.int8), 10: ("FLOAT64", np.float64), 11: ("COMPLEX128", np.complex128),
                12: ("UINT64", np.uint64), 13: ("RESOURCE", None), 14: ("VARIANT", None),
                15: ("UINT32", np.uint32), 16: ("UINT16", np.uint16), 17: ("INT4", None)}

#: TFLite ActivationFunctionType names (NONE, RELU, RELU_N1_TO_1, RELU6 equal NNAPI's FuseCode).
ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


@dataclass
class DimensionLevel:
    """One traversal level of a sparse tensor: ``format`` 0 DENSE (``dense_size``) or 1
    SPARSE_CSR (``segments``, ``indices``)."""

    format: int
    dense_size: int
    segments: np.ndarray | None = None
    indices: np.ndarray | None = None


@dataclass
class SparsityInfo:
    """TFLite ``SparsityParameters``: traversal order, block map, one level per traversed
    dimension (see :func:`mlts.fallback.densify`)."""

    traversal_order: list[int]
    block_map: list[int]
    dim_metadata: list[DimensionLevel]


@dataclass
class TensorInfo:
    """A TFLite tensor: ``index`` in subgraph 0, ``name``, static ``shape``, ``type_name``
    (TFLite TensorType name) and numpy ``dtype`` (None for STRING/RESOURCE/...),
    quantization (``scales`` float32 and ``zero_points`` int64 arrays, or None;
    ``quantized_dimension``), ``buffer`` (constant value: shaped numpy array, or the flat
    stored values of a sparse tensor; None when not constant), ``sparsity``,
    ``is_variable`` (a TFLite variable, e.g. LSTM state)."""

    index: int
    name: str
    shape: tuple[int, ...]
    type_name: str
    dtype: np.dtype | None
    scales: np.ndarray | None = None
    zero_points: np.ndarray | None = None
    quantized_dimension: int = 0
    buffer: np.ndarray | None = None
    sparsity: SparsityInfo | None = None
    is_variable: bool = False

    @property
    def quantized(self) -> bool:
        """Whether the tensor carries affine quantization (at least one scale)."""
        return self.scales is not None and self.scales.size > 0

    @property
    def per_channel(self) -> bool:
        return self.quantized and self.scales.size > 1

    @property
    def scale(self) -> float:
        return float(self.scales[0]) if self.quantized else 0.0

    @property
    def zero_point(self) -> int:
        return int(self.zero_points[0]) if self.zero_points is not None and self.zero_points.size else 0

    @property
    def is_constant(self) -> bool:
        return self.buffer is not None

    def describe(self) -> str:
        """E.g. ``FLOAT32[1,128,128,3]`` or ``INT8[1,10] q(0.0039, -128)``."""
        s = f"{self.type_name}[{','.join(map(str, self.shape))}]"
        if self.per_channel:
            s += f" q(per-channel x{self.scales.size}, dim {self.quantized_dimension})"
        elif self.quantized:
            s += f" q({self.scale:.6g}, {self.zero_point})"
        return s


@dataclass
class OperatorMapping:
    """How one TFLite operator was imported: ``index``, ``builtin`` name, ``status``
    ("nnapi", "folded", "fallback" or "unsupported"), ``nnapi`` (the NNAPI operations it
    became), ``reason`` (why it was folded / fell back), ``step`` (index in
    ``ImportedModel.steps``, None when folded)."""

    index: int
    builtin: str
    status: str
    nnapi: list[str] = field(default_factory=list)
    reason: str = ""
    step: int | None = None

    @property
    def target(self) -> str:
        """One line: the NNAPI operations, or ``CPU fallback: <reason>``, ``folded: ...``."""
        if self.status == "nnapi":
            return " + ".join(self.nnapi) + (f" ({self.reason})" if self.reason else "")
        if self.status == "folded":
            return f"folded at import: {self.reason}"
        if self.status == "fallback":
            return f"CPU fallback: {self.reason}"
        return f"unsupported: {self.reason}"


@dataclass
class Partition:
    """A run of consecutive mapped operators: one NNAPI model. ``model`` is the TestModel
    (main inputs = ``input_tensors``, main outputs = ``output_tensors``, TFLite tensor
    indexes in the same order), ``operand_of`` maps every TFLite tensor the partition
    reads or writes to its operand index, ``operators`` lists the TFLite operators,
    ``origin[k]`` is the TFLite operator NNAPI operation k of ``model`` comes from (the
    front end lists operations in its own topological order; match them by outputs)."""

    index: int
    operators: list[int]
    model: TestModel
    input_tensors: list[int]
    output_tensors: list[int]
    operand_of: dict[int, int]
    origin: list[int] = field(default_factory=list)
    _full: tuple[TestModel, list[int]] | None = None

    kind = "nnapi"

    @property
    def produced_tensors(self) -> list[int]:
        """TFLite tensors written by the partition's operations, in operand order."""
        out = [t for t, k in self.operand_of.items()
               if self.model.main.operands[k].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)]
        return sorted(out, key=self.operand_of.__getitem__)

    def model_for(self, keep_tensors: bool = False) -> tuple[TestModel, list[int]]:
        """(TestModel, its output tensors): the partition as imported, or with every TFLite
        tensor it writes as an output (``keep_tensors``, for per-layer comparison)."""
        if not keep_tensors:
            return self.model, self.output_tensors
        if self._full is None:
            outs = list(self.output_tensors) + [t for t in self.produced_tensors
                                                if t not in self.output_tensors]
            main = self.model.main
            operands = [TestOperand(o.type, list(o.dimensions), o.scale, o.zero_point, o.lifetime,
                                    o.number_of_consumers, o.is_ignored, o.channel_quant, o.data)
                        for o in main.operands]
            for t in outs:
                operands[self.operand_of[t]].lifetime = L.SUBGRAPH_OUTPUT
            sg = TestSubgraph(operands, main.operations, list(main.input_indexes),
                              [self.operand_of[t] for t in outs])
            self._full = (_test_model(self.model.name + "-all-tensors", sg), outs)
        return self._full


@dataclass
class FallbackStep:
    """One TFLite operator run by a numpy kernel: ``operator`` index, ``builtin``,
    ``inputs`` / ``outputs`` (TFLite tensor indexes, -1 = omitted), their
    :class:`TensorInfo` (``input_info``, ``output_info``; None for omitted), ``options``,
    ``kernel`` (None when unsupported), ``reason``."""

    index: int
    operator: int
    builtin: str
    inputs: list[int]
    outputs: list[int]
    input_info: list[TensorInfo | None]
    output_info: list[TensorInfo]
    options: dict
    kernel: Callable | None
    reason: str

    kind = "fallback"


@dataclass
class ImportedModel:
    """The result of :func:`import_tflite` (see the module docstring).

    ``name`` (file stem), ``path`` (None for bytes), ``digest`` (sha256 hex of the file),
    ``tensors`` (every :class:`TensorInfo`), ``inputs`` / ``outputs`` (the subgraph's
    input/output TensorInfo, in TFLite order), ``steps`` (:class:`Partition` and
    :class:`FallbackStep` in execution order), ``mapping`` (one :class:`OperatorMapping`
    per TFLite operator), ``operand_of`` (TFLite tensor -> (step index, operand index) of
    the partition that writes it, else of the first partition reading it), ``constants``
    (tensor -> value folded at import), ``tflite_version`` (the model's schema version).
    """

    name: str
    path: Path | None
    digest: str
    tensors: list[TensorInfo]
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    steps: list
    mapping: list[OperatorMapping]
    operand_of: dict[int, tuple[int, int]]
    constants: dict[int, np.ndarray]
    tflite_version: int = 3

    @property
    def partitions(self) -> list[Partition]:
        return [s for s in self.steps if isinstance(s, Partition)]

    @property
    def fallbacks(self) -> list[OperatorMapping]:
        """The operators left to the CPU (or unsupported), in order."""
        return [m for m in self.mapping if m.status in ("fallback", "unsupported")]

    def constant(self, t: int) -> np.ndarray | None:
        """Constant value of tensor ``t`` (folded or stored; sparse tensors not densified
        give None), shaped as the tensor."""
        return _constant(self.tensors, self.constants, t)


def _constant(tensors, constants: dict, t: int) -> np.ndarray | None:
    """Tensor ``t``'s constant value: folded (``constants``) or stored in the file; None for
    a computed tensor or a sparse one not densified yet."""
    if t in constants:
        return constants[t]
    info = tensors[t]
    if info.buffer is None or info.sparsity is not None:
        return None
    return info.buffer


# --- reading the flatbuffer -------------------------------------------------------------------

_OPTION_CLASSES: dict[int, str] | None = None
_ACCESSORS: dict[type, list[tuple[str, str]]] = {}


def _option_class_names() -> dict[int, str]:
    global _OPTION_CLASSES
    if _OPTION_CLASSES is None:
        import tflite
        _OPTION_CLASSES = {v: k for k, v in vars(tflite.BuiltinOptions).items()
                           if not k.startswith("_") and isinstance(v, int)}
    return _OPTION_CLASSES


def _read_options(op) -> dict:
    """The operator's builtin options as a dict of accessor name -> value (vectors as
    lists), e.g. ``{"Padding": 0, "StrideW": 2, ...}``; {} when it has none."""
    import tflite
    kind = op.BuiltinOptionsType()
    table = op.BuiltinOptions()
    if not kind or table is None:
        return {}
    cls = getattr(tflite, _option_class_names().get(kind, ""), None)
    if cls is None:
        return {}
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    acc = _ACCESSORS.get(cls)
    if acc is None:
        acc = []
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("_") or name in ("Init",) or name.startswith("GetRootAs") \
                    or name.endswith(("Length", "IsNone")) or "BufferHasIdentifier" in name:
                continue
            params = list(inspect.signature(fn).parameters)
            if name.endswith("AsNumpy"):
                acc.append((name[:-len("AsNumpy")], name))
            elif params == ["self"]:
                acc.append((name, name))
        _ACCESSORS[cls] = acc
    out = {}
    for key, name in acc:
        v = getattr(obj, name)()
        if name.endswith("AsNumpy"):
            v = [] if isinstance(v, int) else v.tolist()
        elif hasattr(v, "_tab"):
            continue  # nested tables are not used by any mapping
        out[key] = v
    return out


def _index_vector(table_obj, kind: int) -> np.ndarray:
    import tflite
    cls = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}.get(kind)
    if cls is None or table_obj is None:
        return np.zeros(0, np.int64)
    v = cls()
    v.Init(table_obj.Bytes, table_obj.Pos)
    arr = v.ValuesAsNumpy()
    return np.zeros(0, np.int64) if isinstance(arr, int) else arr.astype(np.int64)


def _read_sparsity(s) -> SparsityInfo:
    levels = []
    for j in range(s.DimMetadataLength()):
        dm = s.DimMetadata(j)
        if dm.Format() == 0:
            levels.append(DimensionLevel(0, int(dm.DenseSize())))
        else:
            levels.append(DimensionLevel(1, 0, _index_vector(dm.ArraySegments(), dm.ArraySegmentsType()),
                                         _index_vector(dm.ArrayIndices(), dm.ArrayIndicesType())))
    order = s.TraversalOrderAsNumpy()
    bmap = s.BlockMapAsNumpy()
    return SparsityInfo([] if isinstance(order, int) else order.tolist(),
                        [] if isinstance(bmap, int) else bmap.tolist(), levels)


def _read_tensor(model, data: bytes, g, i: int, where: str) -> TensorInfo:
    t = g.Tensors(i)
    name = (t.Name() or b"").decode("utf-8", "replace")
    shape_np = t.ShapeAsNumpy()
    shape = tuple(int(d) for d in ([] if isinstance(shape_np, int) else shape_np))
    type_name, dtype = TFLITE_TYPES.get(t.Type(), (f"TYPE{t.Type()}", None))
    info = TensorInfo(i, name, shape, type_name, None if dtype is None else np.dtype(dtype),
                      is_variable=bool(t.IsVariable()))
    q = t.Quantization()
    if q is not None and not q.ScaleIsNone() and q.ScaleLength() > 0:
        info.scales = q.ScaleAsNumpy().astype(np.float32)
        zp = q.ZeroPointAsNumpy()
        info.zero_points = (np.zeros(info.scales.size, np.int64) if isinstance(zp, int)
                            else zp.astype(np.int64))
        info.quantized_dimension = int(q.QuantizedDimension())
    if t.Sparsity() is not None:
        info.sparsity = _read_sparsity(t.Sparsity())
    b = t.Buffer()
    raw = None
    if 0 < b < model.BuffersLength():
        buf = model.Buffers(b)
        if buf.Offset() > 1:
            raw = data[buf.Offset(): buf.Offset() + buf.Size()]
        elif buf.DataLength() > 0:
            raw = buf.DataAsNumpy().tobytes()
    if raw:
        if info.dtype is None:
            raise TFLiteImportError(f"{where}: constant tensor {i} ({name}) has type {type_name}, "
                                    f"which the importer cannot read")
        arr = np.frombuffer(raw, info.dtype.newbyteorder("<") if info.dtype.itemsize > 1 else info.dtype)
        arr = arr.astype(info.dtype)
        if info.sparsity is None:
            n = int(np.prod(shape)) if shape else 1
            if arr.size != n:
                raise TFLiteImportError(f"{where}: tensor {i} ({name}) has shape {list(shape)} "
                                        f"({n} elements) but its buffer holds {arr.size}")
            arr = arr.reshape(shape)
        info.buffer = arr
    return info



@dataclass
class _Op:
    index: int
    builtin: str
    inputs: list[int]
    outputs: list[int]
    options: dict
    version: int


def _read_model(path_or_bytes):
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data, path, where = bytes(path_or_bytes), None, "<tflite bytes>"
    else:
        path = Path(path_or_bytes)
        where = str(path)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise TFLiteImportError(f"{where}: cannot read ({e.strerror or e})") from None
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise TFLiteImportError(f"{where}: not a TFLite flatbuffer (no 'TFL3' identifier at byte 4)")
    try:
        import tflite
    except ImportError:
        raise TFLiteImportError(f"{where}: reading TFLite models needs the 'tflite' package "
                                f"(pip install tflite)") from None
    try:
        model = tflite.Model.GetRootAsModel(data, 0)
        if model.SubgraphsLength() < 1:
            raise TFLiteImportError(f"{where}: the model has no subgraph")
        g = model.Subgraphs(0)
        tensors = [_read_tensor(model, data, g, i, where) for i in range(g.TensorsLength())]
        names = {v: k for k, v in vars(tflite.BuiltinOperator).items()
                 if not k.startswith("_") and isinstance(v, int)}
        ops = []
        for k in range(g.OperatorsLength()):
            o = g.Operators(k)
            code = model.OperatorCodes(o.OpcodeIndex())
            builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
            name = names.get(builtin, f"BUILTIN_{builtin}")
            if name == "CUSTOM":
                name = "CUSTOM:" + (code.CustomCode() or b"?").decode("utf-8", "replace")
            ins = o.InputsAsNumpy()
            outs = o.OutputsAsNumpy()
            ops.append(_Op(k, name, [] if isinstance(ins, int) else [int(x) for x in ins],
                           [] if isinstance(outs, int) else [int(x) for x in outs],
                           _read_options(o), int(code.Version())))
        gin = g.InputsAsNumpy()
        gout = g.OutputsAsNumpy()
        gin = [] if isinstance(gin, int) else [int(x) for x in gin]
        gout = [] if isinstance(gout, int) else [int(x) for x in gout]
        version = int(model.Version())
    except TFLiteImportError:
        raise
    except Exception as e:  # noqa: BLE001 - a corrupt flatbuffer raises anything
        raise TFLiteImportError(f"{where}: corrupt TFLite flatbuffer ({type(e).__name__}: {e})") from None
    return data, path, where, tensors, ops, gin, gout, version


# --- building one NNAPI partition --------------------------------------------------------------

class _Unmappable(Exception):
    """The operator has no NNAPI mapping (the message says why)."""


def _nn_type(info: TensorInfo) -> tuple[T, float, int, tuple | None]:
    """(NNAPI operand type, scale, zeroPoint, channel_quant) of a TFLite tensor."""
    tn = info.type_name
    if tn == "FLOAT32":
        return T.TENSOR_FLOAT32, 0.0, 0, None
    if tn == "FLOAT16":
        return T.TENSOR_FLOAT16, 0.0, 0, None
    if tn == "INT32":
        return T.TENSOR_INT32, info.scale, info.zero_point, None
    if tn == "BOOL":
        return T.TENSOR_BOOL8, 0.0, 0, None
    if tn == "UINT8":
        if info.per_channel:
            raise _Unmappable(f"uint8 tensor {info.index} has per-channel quantization")
        return T.TENSOR_QUANT8_ASYMM, info.scale or 1.0, info.zero_point, None
    if tn == "INT8":
        if info.per_channel:
            return (T.TENSOR_QUANT8_SYMM_PER_CHANNEL, 0.0, 0,
                    (tuple(float(s) for s in info.scales), info.quantized_dimension))
        return T.TENSOR_QUANT8_ASYMM_SIGNED, info.scale or 1.0, info.zero_point, None
    if tn == "INT16":
        return T.TENSOR_QUANT16_SYMM, info.scale or 1.0, info.zero_point, None
    if tn == "INT64" and info.is_constant:
        return T.TENSOR_INT32, 0.0, 0, None
    raise _Unmappable(f"tensor {info.index} ({info.name}) has type {tn}, which NNAPI has not")


def _dims(shape) -> list[int]:
    return [int(d) for d in shape] if len(shape) else [1]


def _test_model(name: str, sg: TestSubgraph) -> TestModel:
    return TestModel(name, "mlts", "", "UNKNOWN", False, False, 0.0, sg)


class _Builder:
    """Operands and operations of the NNAPI partition being built."""

    def __init__(self, imp: "_Importer"):
        self.imp = imp
        self.operands: list[TestOperand] = []
        self.operations: list[TestOperation] = []
        self.origin: list[int] = []  # TFLite operator of each NNAPI operation
        self.of_tensor: dict[int, int] = {}
        self.input_tensors: list[int] = []
        self.produced: set[int] = set()
        self.operators: list[int] = []
        self.current = -1
        self.note = ""  # a remark on the operator being mapped (shown in the mapping)

    # -- transactions (an operator that turns out unmappable leaves no trace) --
    def checkpoint(self):
        return (len(self.operands), len(self.operations), dict(self.of_tensor),
                len(self.input_tensors), set(self.produced))

    def rollback(self, cp) -> None:
        n_opd, n_ops, of_tensor, n_in, produced = cp
        del self.operands[n_opd:]
        del self.operations[n_ops:]
        del self.origin[n_ops:]
        self.of_tensor, self.produced = of_tensor, produced
        del self.input_tensors[n_in:]

    @property
    def empty(self) -> bool:
        return not self.operations

    # -- operands --
    def add(self, type_: T, dims, scale=0.0, zp=0, lifetime=L.TEMPORARY_VARIABLE, data=None,
            channel_quant=None) -> int:
        self.operands.append(TestOperand(type_, list(dims), float(scale), int(zp), lifetime, 0, False,
                                         channel_quant, data))
        return len(self.operands) - 1

    def const(self, value, type_: T, scale=0.0, zp=0, channel_quant=None, dims=None) -> int:
        arr = np.array(value, dtype=operand_dtype(type_), order="C")
        if dims is None:
            dims = list(arr.shape)
        lifetime = L.CONSTANT_REFERENCE if arr.nbytes > 128 else L.CONSTANT_COPY
        return self.add(type_, dims, scale, zp, lifetime, arr.reshape(dims) if dims else arr.reshape(()),
                        channel_quant)

    def i32(self, v) -> int:
        return self.const(np.int32(v), T.INT32)

    def f32(self, v) -> int:
        return self.const(np.float32(v), T.FLOAT32)

    def boolean(self, v) -> int:
        return self.const(np.bool_(v), T.BOOL)

    def i32_vector(self, values) -> int:
        arr = np.asarray(values, np.int64).reshape(-1)
        if arr.size and (arr.max() > 2**31 - 1 or arr.min() < -2**31):
            raise _Unmappable("an int64 parameter does not fit int32")
        return self.const(arr.astype(np.int32), T.TENSOR_INT32)

    def omitted(self, type_: T = T.TENSOR_FLOAT32) -> int:
        return self.add(type_, [], lifetime=L.NO_VALUE)

    def temp(self, type_: T, dims, scale=0.0, zp=0) -> int:
        return self.add(type_, _dims(dims), scale, zp)

    def temp_like(self, t: int, dims=None, float_=False) -> int:
        """A temporary of tensor ``t``'s type (float32 when ``float_``) and ``dims``."""
        info = self.imp.tensors[t]
        if float_:
            return self.temp(T.TENSOR_FLOAT32, info.shape if dims is None else dims)
        ty, s, z, _ = _nn_type(info)
        return self.temp(ty, info.shape if dims is None else dims, s, z)

    def info(self, t: int) -> TensorInfo:
        return self.imp.tensors[t]

    def tensor(self, t: int) -> int:
        """The operand of TFLite tensor ``t`` as an operation input: a constant (its value
        converted to the operand type), the operand written earlier in this partition, or
        a new partition input."""
        if t < 0:
            raise _Unmappable("a required input is omitted")
        if t in self.of_tensor:
            return self.of_tensor[t]
        info = self.imp.tensors[t]
        value = self.imp.constant(t)
        ty, scale, zp, cq = _nn_type(info)
        if value is None and info.is_variable:
            value = np.zeros(info.shape, info.dtype)  # TFLite variables start at zero
        if value is None and info.sparsity is not None and info.is_constant:
            raise _Unmappable(f"tensor {t} is sparse (DENSIFY it first)")
        if value is not None:
            if info.type_name == "INT64":
                if value.size and (value.max() > 2**31 - 1 or value.min() < -2**31):
                    raise _Unmappable(f"int64 constant {t} does not fit int32")
                value = value.astype(np.int32)
            k = self.const(value.reshape(_dims(info.shape)), ty, scale, zp, cq)
        else:
            k = self.add(ty, _dims(info.shape), scale, zp, L.SUBGRAPH_INPUT, channel_quant=cq)
            self.input_tensors.append(t)
        self.of_tensor[t] = k
        return k

    def output(self, t: int, type_override: T | None = None) -> int:
        """A new operand written by the current operation for TFLite tensor ``t``."""
        if t in self.of_tensor:
            raise _Unmappable(f"tensor {t} is written twice")
        info = self.imp.tensors[t]
        ty, scale, zp, cq = _nn_type(info)
        if cq is not None:
            raise _Unmappable(f"output tensor {t} has per-channel quantization")
        k = self.add(type_override or ty, _dims(info.shape), scale, zp)
        self.of_tensor[t] = k
        self.produced.add(t)
        return k

    def op(self, type_: OP, inputs, outputs) -> None:
        self.operations.append(TestOperation(type_, [int(i) for i in inputs], [int(o) for o in outputs]))
        self.origin.append(self.current)

    def dequantized(self, t: int) -> int:
        """Operand of tensor ``t`` dequantized to float32 by a DEQUANTIZE operation (the
        delegate's ``AddDequantize``, shared between users)."""
        key = ("dq", t)
        if key in self.of_tensor:
            return self.of_tensor[key]
        src = self.tensor(t)
        k = self.temp(T.TENSOR_FLOAT32, self.info(t).shape)
        self.op(OP.DEQUANTIZE, [src], [k])
        self.of_tensor[key] = k
        return k

    # -- finishing --
    def finish(self, index: int, name: str, needed: Callable[[int], bool]) -> Partition:
        """The Partition: outputs are the produced tensors ``needed`` says are read after it
        (or are graph outputs)."""
        outs = sorted((t for t in self.produced if needed(t)), key=self.of_tensor.__getitem__)
        consumers = [0] * len(self.operands)
        for o in self.operations:
            for i in o.inputs:
                consumers[i] += 1
        operands = self.operands
        for k, o in enumerate(operands):
            o.number_of_consumers = consumers[k]
        for t in outs:
            operands[self.of_tensor[t]].lifetime = L.SUBGRAPH_OUTPUT
        sg = TestSubgraph(operands, self.operations, [self.of_tensor[t] for t in self.input_tensors],
                          [self.of_tensor[t] for t in outs])
        tm = _test_model(f"{name}-partition{index}", sg)
        operand_of = {t: k for t, k in self.of_tensor.items() if isinstance(t, int)}
        return Partition(index, list(self.operators), tm, list(self.input_tensors), outs, operand_of,
                         list(self.origin))


# --- operator mappings -----------------------------------------------------------------------

_PADDING = {0: 1, 1: 2}  # TFLite Padding SAME/VALID -> NNAPI PaddingCode SAME/VALID
_POST_ACTIVATION = {1: OP.RELU, 2: OP.RELU1, 3: OP.RELU6}


def _padding(op: _Op) -> int:
    p = op.options.get("Padding", 0)
    if p not in _PADDING:
        raise _Unmappable(f"padding {p}")
    return _PADDING[p]


def _act_code(b: _Builder, op: _Op, key="FusedActivationFunction") -> int:
    """The NNAPI FuseCode of the operator's fused activation. TFLite's kernels clamp only
    for RELU, RELU_N1_TO_1 and RELU6 (``CalculateActivationRange`` leaves TANH and SIGN_BIT
    unclamped), so those two become NONE, noted in the mapping."""
    act = int(op.options.get(key, 0))
    if act in (0, 1, 2, 3):
        return act
    b.note = (f"fused {ACTIVATIONS.get(act, act)} dropped: TFLite's kernels ignore it")
    return 0


def _emit(b: _Builder, op: _Op, nn: OP, before: list[int], after=(), *, key="FusedActivationFunction",
          fused=True) -> list[str]:
    """Emit ``nn`` with inputs ``before`` + [FuseCode] + ``after`` (``fused``; else the
    activation, if any, follows as a RELU / RELU1 / RELU6 operation) writing output 0."""
    out_t = op.outputs[0]
    code = _act_code(b, op, key)
    if fused:
        b.op(nn, list(before) + [b.i32(code)] + list(after), [b.output(out_t)])
        return [nn.name]
    ins = list(before) + list(after)
    if not code:
        b.op(nn, ins, [b.output(out_t)])
        return [nn.name]
    post = _POST_ACTIVATION[code]
    tmp = b.temp_like(out_t)
    b.op(nn, ins, [tmp])
    b.op(post, [tmp], [b.output(out_t)])
    return [nn.name, post.name]


def _is_float(info: TensorInfo) -> bool:
    return info.type_name in ("FLOAT32", "FLOAT16")


def _is_quant8(info: TensorInfo) -> bool:
    return info.type_name in ("UINT8", "INT8")


def _same_quant(a: TensorInfo, o: TensorInfo) -> bool:
    return np.float32(a.scale) == np.float32(o.scale) and a.zero_point == o.zero_point


def _require(cond: bool, why: str) -> None:
    if not cond:
        raise _Unmappable(why)


def _const_value(b: _Builder, t: int, what: str) -> np.ndarray:
    v = b.imp.constant(t) if t >= 0 else None
    _require(v is not None, f"{what} (input tensor {t}) is not constant")
    return v


def _weights_and_bias(b: _Builder, op: _Op, x: TensorInfo, w_t: int, bias_t: int, units: int,
                      w_operand: int | None = None) -> tuple[int, int, list[str]]:
    """Filter/weights and bias operands of a convolution or fully connected operator:
    hybrid (float input, quantized weights) -> DEQUANTIZE; a missing bias -> zeros."""
    w = b.info(w_t)
    names = []
    hybrid = x.type_name == "FLOAT32" and _is_quant8(w)
    if w_operand is not None:
        wk = w_operand
    elif hybrid:
        wk = b.dequantized(w_t)
        names.append("DEQUANTIZE")
    else:
        _require(x.type_name == w.type_name, f"input type {x.type_name} with weights of type {w.type_name}")
        wk = b.tensor(w_t)
    quant = _is_quant8(x)
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
            _require(bi.type_name == "INT32", f"bias of type {bi.type_name} for a quantized input")
            v = _const_value(b, bias_t, "the bias")
            bk = b.const(v.astype(np.int32).reshape(-1), T.TENSOR_INT32, bias_scale, 0)
        elif hybrid and _is_quant8(bi) or (hybrid and bi.type_name == "INT32" and bi.quantized):
            v = _const_value(b, bias_t, "the bias")
            bk = b.const(((v.astype(np.float64) - bi.zero_point) * bi.scale).astype(np.float32).reshape(-1),
                         T.TENSOR_FLOAT32)
        else:
            bk = b.tensor(bias_t)
    return wk, bk, names


def _map_conv(b: _Builder, op: _Op) -> list[str]:
    x_t, w_t = op.inputs[0], op.inputs[1]
    bias_t = op.inputs[2] if len(op.inputs) > 2 else -1
    x, w = b.info(x_t), b.info(w_t)
    _require(len(x.shape) == 4 and len(w.shape) == 4, "input and filter must be 4-D")
    o = op.options
    wk, bk, names = _weights_and_bias(b, op, x, w_t, bias_t, w.shape[0])
    params = [b.i32(_padding(op)), b.i32(o.get("StrideW", 1)), b.i32(o.get("StrideH", 1))]
    return names + _emit(b, op, OP.CONV_2D, [b.tensor(x_t), wk, bk] + params, _dilation(b, o))


def _map_depthwise(b: _Builder, op: _Op) -> list[str]:
    x_t, w_t = op.inputs[0], op.inputs[1]
    bias_t = op.inputs[2] if len(op.inputs) > 2 else -1
    x, w = b.info(x_t), b.info(w_t)
    _require(len(x.shape) == 4 and len(w.shape) == 4, "input and filter must be 4-D")
    _require(x.shape[3] > 0 and w.shape[3] % x.shape[3] == 0,
             f"filter channels {w.shape[3]} are not a multiple of input channels {x.shape[3]}")
    multiplier = w.shape[3] // x.shape[3]
    _require(not (x.type_name == "FLOAT32" and _is_quant8(w)), "hybrid DEPTHWISE_CONV_2D")
    o = op.options
    wk, bk, names = _weights_and_bias(b, op, x, w_t, bias_t, w.shape[3])
    params = [b.i32(_padding(op)), b.i32(o.get("StrideW", 1)), b.i32(o.get("StrideH", 1)),
              b.i32(multiplier)]
    return names + _emit(b, op, OP.DEPTHWISE_CONV_2D, [b.tensor(x_t), wk, bk] + params, _dilation(b, o))


def _dilation(b: _Builder, o: dict) -> list:
    """The trailing NNAPI inputs of a dilated convolution (layout NHWC, dilation width and
    height, FL3), or none when both factors are 1 (the FL1 form)."""
    dw, dh = o.get("DilationWFactor", 1) or 1, o.get("DilationHFactor", 1) or 1
    return [b.boolean(False), b.i32(dw), b.i32(dh)] if (dw, dh) != (1, 1) else []


def _map_transpose_conv(b: _Builder, op: _Op) -> list[str]:
    shape_t, w_t, x_t = op.inputs[:3]
    bias_t = op.inputs[3] if len(op.inputs) > 3 else -1
    x, w = b.info(x_t), b.info(w_t)
    _require(not (x.type_name == "FLOAT32" and _is_quant8(w)), "hybrid TRANSPOSE_CONV")
    out_shape = _const_value(b, shape_t, "the output shape")
    wk, bk, names = _weights_and_bias(b, op, x, w_t, bias_t, w.shape[0])
    o = op.options
    ins = [b.tensor(x_t), wk, bk, b.i32_vector(out_shape), b.i32(_padding(op)),
           b.i32(o.get("StrideW", 1)), b.i32(o.get("StrideH", 1))]
    return names + _emit(b, op, OP.TRANSPOSE_CONV_2D, ins, [b.boolean(False)])


def _map_fully_connected(b: _Builder, op: _Op) -> list[str]:
    x_t, w_t = op.inputs[0], op.inputs[1]
    bias_t = op.inputs[2] if len(op.inputs) > 2 else -1
    x, w, out = b.info(x_t), b.info(w_t), b.info(op.outputs[0])
    o = op.options
    _require(o.get("WeightsFormat", 0) == 0, "shuffled weights format")
    _require(len(w.shape) == 2, "weights must be 2-D")
    units, in_size = w.shape
    n = int(np.prod(x.shape)) if x.shape else 1
    _require(in_size > 0 and n % in_size == 0, f"input of {n} elements is not a multiple of {in_size}")
    batch = n // in_size
    names = []
    xk = b.tensor(x_t)
    if w.per_channel and _is_quant8(x):
        # NNAPI FULLY_CONNECTED has no per-channel form: a 1x1 CONV_2D has.
        x4 = b.temp_like(x_t, (batch, 1, 1, in_size))
        b.op(OP.RESHAPE, [xk, b.i32_vector([batch, 1, 1, in_size])], [x4])
        wv = _const_value(b, w_t, "the per-channel weights")
        ty, _, _, cq = _nn_type(w)
        _require(w.quantized_dimension == 0, "per-channel weights not along dimension 0")
        wk = b.const(wv.reshape(units, 1, 1, in_size), ty, channel_quant=cq)
        _, bk, _ = _weights_and_bias(b, op, x, w_t, bias_t, units, w_operand=wk)
        y4 = b.temp_like(op.outputs[0], (batch, 1, 1, units))
        b.op(OP.CONV_2D, [x4, wk, bk, b.i32(2), b.i32(1), b.i32(1), b.i32(_act_code(b, op))], [y4])
        b.op(OP.RESHAPE, [y4, b.i32_vector(_dims(out.shape))], [b.output(op.outputs[0])])
        return ["RESHAPE", "CONV_2D", "RESHAPE"]
    if not 2 <= len(x.shape) <= 4:
        x2 = b.temp_like(x_t, (batch, in_size))
        b.op(OP.RESHAPE, [xk, b.i32_vector([batch, in_size])], [x2])
        xk = x2
        names.append("RESHAPE")
    wk, bk, wnames = _weights_and_bias(b, op, x, w_t, bias_t, units)
    names += wnames
    if tuple(out.shape) == (batch, units):
        return names + _emit(b, op, OP.FULLY_CONNECTED, [xk, wk, bk])
    _require(int(np.prod(out.shape)) == batch * units,
             f"output shape {list(out.shape)} does not hold [{batch}, {units}]")
    y = b.temp_like(op.outputs[0], (batch, units))
    b.op(OP.FULLY_CONNECTED, [xk, wk, bk, b.i32(_act_code(b, op))], [y])
    names.append("FULLY_CONNECTED")
    b.op(OP.RESHAPE, [y, b.i32_vector(_dims(out.shape))], [b.output(op.outputs[0])])
    return names + ["RESHAPE"]


def _map_pool(nn: OP):
    def mapper(b: _Builder, op: _Op) -> list[str]:
        o = op.options
        _require(len(b.info(op.inputs[0]).shape) == 4, "input must be 4-D")
        return _emit(b, op, nn, [b.tensor(op.inputs[0]), b.i32(_padding(op)), b.i32(o.get("StrideW", 1)),
                                 b.i32(o.get("StrideH", 1)), b.i32(o.get("FilterWidth", 1)),
                                 b.i32(o.get("FilterHeight", 1))])
    return mapper


def _map_binary(nn: OP, fused: bool = True):
    def mapper(b: _Builder, op: _Op) -> list[str]:
        a, c = b.info(op.inputs[0]), b.info(op.inputs[1])
        _require(a.type_name == c.type_name, f"inputs of types {a.type_name} and {c.type_name}")
        if fused:
            _require(a.type_name != "INT32" or not op.options.get("FusedActivationFunction", 0),
                     "int32 with a fused activation")
            return _emit(b, op, nn, [b.tensor(op.inputs[0]), b.tensor(op.inputs[1])])
        b.op(nn, [b.tensor(op.inputs[0]), b.tensor(op.inputs[1])], [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _map_unary(nn: OP, extra: Callable[[_Builder, _Op], list[int]] | None = None):
    def mapper(b: _Builder, op: _Op) -> list[str]:
        ins = [b.tensor(op.inputs[0])] + (extra(b, op) if extra else [])
        b.op(nn, ins, [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _map_concat(b: _Builder, op: _Op) -> list[str]:
    rank = len(b.info(op.inputs[0]).shape)
    axis = int(op.options.get("Axis", 0))
    axis = axis + rank if axis < 0 else axis
    return _emit(b, op, OP.CONCATENATION, [b.tensor(t) for t in op.inputs], [b.i32(axis)], fused=False)


def _map_pack(b: _Builder, op: _Op) -> list[str]:
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


def _map_reshape(b: _Builder, op: _Op) -> list[str]:
    out = b.info(op.outputs[0])
    b.op(OP.RESHAPE, [b.tensor(op.inputs[0]), b.i32_vector(_dims(out.shape))], [b.output(op.outputs[0])])
    return ["RESHAPE"]


def _map_squeeze(b: _Builder, op: _Op) -> list[str]:
    dims = op.options.get("SqueezeDims", [])
    k = b.i32_vector(dims) if dims else b.omitted(T.TENSOR_INT32)
    b.op(OP.SQUEEZE, [b.tensor(op.inputs[0]), k], [b.output(op.outputs[0])])
    return ["SQUEEZE"]


def _const_vector_input(pos: int, what: str):
    def extra(b: _Builder, op: _Op) -> list[int]:
        return [b.i32_vector(_const_value(b, op.inputs[pos], what))]
    return extra


def _map_pad(b: _Builder, op: _Op) -> list[str]:
    x = b.info(op.inputs[0])
    pads = _const_value(b, op.inputs[1], "the paddings").reshape(-1, 2)
    ins = [b.tensor(op.inputs[0]), b.const(pads.astype(np.int32), T.TENSOR_INT32)]
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        v = _const_value(b, op.inputs[2], "the pad value").reshape(-1)[0]
        ins.append(b.f32(v) if _is_float(x) else b.i32(int(v)))
        b.op(OP.PAD_V2, ins, [b.output(op.outputs[0])])
        return ["PAD_V2"]
    b.op(OP.PAD, ins, [b.output(op.outputs[0])])
    return ["PAD"]


def _map_mirror_pad(b: _Builder, op: _Op) -> list[str]:
    pads = _const_value(b, op.inputs[1], "the paddings").reshape(-1, 2)
    b.op(OP.MIRROR_PAD, [b.tensor(op.inputs[0]), b.const(pads.astype(np.int32), T.TENSOR_INT32),
                         b.i32(int(op.options.get("Mode", 0)))], [b.output(op.outputs[0])])
    return ["MIRROR_PAD"]


def _map_softmax(b: _Builder, op: _Op) -> list[str]:
    b.op(OP.SOFTMAX, [b.tensor(op.inputs[0]), b.f32(op.options.get("Beta", 1.0))], [b.output(op.outputs[0])])
    return ["SOFTMAX"]


def _map_resize(nn: OP):
    def mapper(b: _Builder, op: _Op) -> list[str]:
        out = b.info(op.outputs[0])
        _require(len(out.shape) == 4, "output must be 4-D")
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


def _reduce_axes(b: _Builder, op: _Op) -> int:
    return b.i32_vector(_const_value(b, op.inputs[1], "the reduction axes").reshape(-1))


def _map_reduce(nn: OP, keep_as_int: bool):
    def mapper(b: _Builder, op: _Op) -> list[str]:
        x, out = b.info(op.inputs[0]), b.info(op.outputs[0])
        keep = bool(op.options.get("KeepDims", False))
        keep_k = b.i32(int(keep)) if keep_as_int else b.boolean(keep)
        if _is_quant8(x) and not _same_quant(x, out):
            _require(nn in (OP.MEAN, OP.REDUCE_MAX, OP.REDUCE_MIN), f"requantizing {nn.name}")
            xf = b.dequantized(op.inputs[0])
            y = b.temp(T.TENSOR_FLOAT32, out.shape)
            b.op(nn, [xf, _reduce_axes(b, op), keep_k], [y])
            b.op(OP.QUANTIZE, [y], [b.output(op.outputs[0])])
            return ["DEQUANTIZE", nn.name, "QUANTIZE"]
        b.op(nn, [b.tensor(op.inputs[0]), _reduce_axes(b, op), keep_k], [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _map_quantize(b: _Builder, op: _Op) -> list[str]:
    x = b.info(op.inputs[0])
    if _is_quant8(x):
        b.op(OP.QUANTIZE, [b.dequantized(op.inputs[0])], [b.output(op.outputs[0])])
        return ["DEQUANTIZE", "QUANTIZE"]
    b.op(OP.QUANTIZE, [b.tensor(op.inputs[0])], [b.output(op.outputs[0])])
    return ["QUANTIZE"]


def _map_dequantize(b: _Builder, op: _Op) -> list[str]:
    x = b.info(op.inputs[0])
    if x.type_name == "FLOAT16":
        b.op(OP.CAST, [b.tensor(op.inputs[0])], [b.output(op.outputs[0])])
        return ["CAST"]
    b.op(OP.DEQUANTIZE, [b.tensor(op.inputs[0])], [b.output(op.outputs[0])])
    return ["DEQUANTIZE"]


def _map_leaky_relu(b: _Builder, op: _Op) -> list[str]:
    x = b.info(op.inputs[0])
    alpha = float(op.options.get("Alpha", 0.2))
    if x.type_name == "FLOAT32":
        a = b.const(np.array([alpha], np.float32), T.TENSOR_FLOAT32)
    elif x.type_name == "UINT8":
        a = b.const(np.array([1], np.uint8), T.TENSOR_QUANT8_ASYMM, alpha, 0)
    elif x.type_name == "INT8":
        a = b.const(np.array([1], np.int8), T.TENSOR_QUANT8_ASYMM_SIGNED, alpha, 0)
    else:
        raise _Unmappable(f"input type {x.type_name}")
    b.op(OP.PRELU, [b.tensor(op.inputs[0]), a], [b.output(op.outputs[0])])
    return ["PRELU"]


def _map_argminmax(nn: OP):
    def mapper(b: _Builder, op: _Op) -> list[str]:
        _require(b.info(op.outputs[0]).type_name == "INT32", "output type is not int32")
        axis = int(_const_value(b, op.inputs[1], "the axis").reshape(-1)[0])
        b.op(nn, [b.tensor(op.inputs[0]), b.i32(axis)], [b.output(op.outputs[0])])
        return [nn.name]
    return mapper


def _map_strided_slice(b: _Builder, op: _Op) -> list[str]:
    o = op.options
    _require(not o.get("EllipsisMask", 0) and not o.get("NewAxisMask", 0), "ellipsis or new-axis mask")
    _require(not o.get("Offset", False), "offset strided slice")
    begin, end, strides = (_const_value(b, t, "a slice parameter").astype(np.int64).reshape(-1).copy()
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


def _map_gather(b: _Builder, op: _Op) -> list[str]:
    _require(not op.options.get("BatchDims", 0), "batch_dims")
    _require(len(b.info(op.inputs[1]).shape) > 0, "scalar indices")
    b.op(OP.GATHER, [b.tensor(op.inputs[0]), b.i32(int(op.options.get("Axis", 0))), b.tensor(op.inputs[1])],
         [b.output(op.outputs[0])])
    return ["GATHER"]


def _map_expand_dims(b: _Builder, op: _Op) -> list[str]:
    axis = int(_const_value(b, op.inputs[1], "the axis").reshape(-1)[0])
    b.op(OP.EXPAND_DIMS, [b.tensor(op.inputs[0]), b.i32(axis)], [b.output(op.outputs[0])])
    return ["EXPAND_DIMS"]


def _map_split(b: _Builder, op: _Op) -> list[str]:
    axis = int(_const_value(b, op.inputs[0], "the axis").reshape(-1)[0])
    b.op(OP.SPLIT, [b.tensor(op.inputs[1]), b.i32(axis), b.i32(int(op.options.get("NumSplits", len(op.outputs))))],
         [b.output(t) for t in op.outputs])
    return ["SPLIT"]


def _map_batch_to_space(b: _Builder, op: _Op) -> list[str]:
    if len(op.inputs) > 2:
        crops = _const_value(b, op.inputs[2], "the crops")
        _require(not crops.any(), "non-zero crops")
    b.op(OP.BATCH_TO_SPACE_ND, [b.tensor(op.inputs[0]), b.i32_vector(_const_value(b, op.inputs[1], "the block shape"))],
         [b.output(op.outputs[0])])
    return ["BATCH_TO_SPACE_ND"]


def _map_space_to_batch(b: _Builder, op: _Op) -> list[str]:
    block = _const_value(b, op.inputs[1], "the block shape")
    pads = _const_value(b, op.inputs[2], "the paddings").reshape(-1, 2)
    b.op(OP.SPACE_TO_BATCH_ND, [b.tensor(op.inputs[0]), b.i32_vector(block),
                                b.const(pads.astype(np.int32), T.TENSOR_INT32)], [b.output(op.outputs[0])])
    return ["SPACE_TO_BATCH_ND"]


def _map_lstm(b: _Builder, op: _Op) -> list[str]:
    x = b.info(op.inputs[0])
    _require(x.type_name == "FLOAT32", f"{x.type_name} input (only float LSTMs map)")
    for k in range(1, min(len(op.inputs), 24)):
        t = op.inputs[k]
        _require(t < 0 or b.info(t).type_name == "FLOAT32",
                 f"input {k} of type {b.info(t).type_name} (hybrid / quantized LSTM)")
    _require(len(op.outputs) == 1, f"{len(op.outputs)} outputs")
    ins = []
    for k in range(20):
        t = op.inputs[k] if k < len(op.inputs) else -1
        ins.append(b.omitted() if t < 0 else b.tensor(t))
    o = op.options
    act = int(o.get("FusedActivationFunction", 4))
    _require(act in (0, 1, 3, 4, 6), f"activation {ACTIVATIONS.get(act, act)}")
    ins += [b.i32(act), b.f32(o.get("CellClip", 0.0)), b.f32(o.get("ProjClip", 0.0)),
            b.boolean(bool(o.get("TimeMajor", False)))]
    for k in range(20, 24):
        t = op.inputs[k] if k < len(op.inputs) else -1
        ins.append(b.omitted() if t < 0 else b.tensor(t))
    b.op(OP.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [b.output(op.outputs[0])])
    return ["UNIDIRECTIONAL_SEQUENCE_LSTM"]


def _float_only(b: _Builder, op: _Op, upto: int | None = None) -> None:
    for k, t in enumerate(op.inputs[:upto]):
        _require(t < 0 or b.info(t).type_name == "FLOAT32",
                 f"input {k} of type {b.info(t).type_name} (only float32 forms map)")


def _opt_inputs(b: _Builder, op: _Op, positions) -> list[int]:
    return [b.omitted() if k >= len(op.inputs) or op.inputs[k] < 0 else b.tensor(op.inputs[k])
            for k in positions]


def _map_lstm_cell(b: _Builder, op: _Op) -> list[str]:
    """TFLite LSTM (full kernel, one step) -> NNAPI LSTM: inputs 0-19, activation, clips,
    layer-norm weights; outputs scratch buffer, output state, cell state (temporaries; the
    TFLite state variables start at zero), output."""
    _require(len(op.inputs) in (20, 24), f"{len(op.inputs)} inputs (the basic kernel does not map)")
    _require(int(op.options.get("KernelType", 0)) == 0, "basic LSTM kernel")
    _float_only(b, op)
    _require(len(op.outputs) == 1, f"{len(op.outputs)} outputs")
    o = op.options
    act = int(o.get("FusedActivationFunction", 4))
    _require(act in (0, 1, 3, 4, 6), f"activation {ACTIVATIONS.get(act, act)}")
    ins = _opt_inputs(b, op, range(20))
    ins += [b.i32(act), b.f32(o.get("CellClip", 0.0)), b.f32(o.get("ProjClip", 0.0))]
    if len(op.inputs) == 24:
        ins += _opt_inputs(b, op, range(20, 24))
    out = b.info(op.outputs[0])
    batch, n_out = out.shape[0], out.shape[-1]
    n_cell = b.info(op.inputs[4]).shape[0]  # input_to_output_weights [num_units, input_size]
    cifg = op.inputs[1] < 0
    scratch = b.temp(T.TENSOR_FLOAT32, (batch, (3 if cifg else 4) * n_cell))
    h = b.temp(T.TENSOR_FLOAT32, (batch, n_out))
    c = b.temp(T.TENSOR_FLOAT32, (batch, n_cell))
    b.op(OP.LSTM, ins, [scratch, h, c, b.output(op.outputs[0])])
    return ["LSTM"]


def _cell_act(op: _Op) -> int:
    """The activation of RNN / SVDF cells: a real activation in TFLite (TANH included),
    a FuseCode (0-3) in NNAPI."""
    act = int(op.options.get("FusedActivationFunction", 0))
    _require(act in (0, 1, 2, 3), f"cell activation {ACTIVATIONS.get(act, act)} (NNAPI takes a FuseCode)")
    return act


def _map_rnn(b: _Builder, op: _Op) -> list[str]:
    _float_only(b, op)
    out = b.info(op.outputs[0])
    h = b.temp(T.TENSOR_FLOAT32, out.shape)
    code = _cell_act(op)
    b.op(OP.RNN, [b.tensor(t) for t in op.inputs[:5]] + [b.i32(code)], [h, b.output(op.outputs[0])])
    return ["RNN"]


def _map_sequence_rnn(b: _Builder, op: _Op) -> list[str]:
    _float_only(b, op)
    code = _cell_act(op)
    b.op(OP.UNIDIRECTIONAL_SEQUENCE_RNN, [b.tensor(t) for t in op.inputs[:5]]
         + [b.i32(code), b.i32(int(bool(op.options.get("TimeMajor", False))))], [b.output(op.outputs[0])])
    return ["UNIDIRECTIONAL_SEQUENCE_RNN"]


def _map_svdf(b: _Builder, op: _Op) -> list[str]:
    _float_only(b, op)
    state = b.info(op.inputs[4])
    code = _cell_act(op)
    ins = _opt_inputs(b, op, range(5)) + [b.i32(int(op.options.get("Rank", 1))), b.i32(code)]
    b.op(OP.SVDF, ins, [b.temp(T.TENSOR_FLOAT32, state.shape), b.output(op.outputs[0])])
    return ["SVDF"]


def _map_topk(b: _Builder, op: _Op) -> list[str]:
    k = int(_const_value(b, op.inputs[1], "k").reshape(-1)[0])
    _require(b.info(op.outputs[1]).type_name == "INT32", "int64 indices")
    b.op(OP.TOPK_V2, [b.tensor(op.inputs[0]), b.i32(k)], [b.output(op.outputs[0]), b.output(op.outputs[1])])
    return ["TOPK_V2"]


def _map_fill(b: _Builder, op: _Op) -> list[str]:
    dims = _const_value(b, op.inputs[0], "the dimensions")
    v = _const_value(b, op.inputs[1], "the value").reshape(-1)[0]
    out = b.info(op.outputs[0])
    _require(out.type_name in ("FLOAT32", "INT32"), f"{out.type_name} output")
    b.op(OP.FILL, [b.i32_vector(dims), b.f32(v) if out.type_name == "FLOAT32" else b.i32(int(v))],
         [b.output(op.outputs[0])])
    return ["FILL"]


def _map_embedding_lookup(b: _Builder, op: _Op) -> list[str]:
    values, out = b.info(op.inputs[1]), b.info(op.outputs[0])
    _require(values.type_name == out.type_name, f"{values.type_name} values giving {out.type_name}")
    b.op(OP.EMBEDDING_LOOKUP, [b.tensor(op.inputs[0]), b.tensor(op.inputs[1])], [b.output(op.outputs[0])])
    return ["EMBEDDING_LOOKUP"]


def _map_cast(b: _Builder, op: _Op) -> list[str]:
    ok = ("FLOAT32", "FLOAT16", "INT32", "UINT8")
    a, o = b.info(op.inputs[0]).type_name, b.info(op.outputs[0]).type_name
    _require(a in ok and o in ok, f"CAST {a} -> {o}")
    b.op(OP.CAST, [b.tensor(op.inputs[0])], [b.output(op.outputs[0])])
    return ["CAST"]


def _map_select(b: _Builder, op: _Op) -> list[str]:
    shapes = {tuple(b.info(t).shape) for t in op.inputs}
    _require(len(shapes) == 1, "inputs of different shapes")
    b.op(OP.SELECT, [b.tensor(t) for t in op.inputs], [b.output(op.outputs[0])])
    return ["SELECT"]


def _map_tile(b: _Builder, op: _Op) -> list[str]:
    b.op(OP.TILE, [b.tensor(op.inputs[0]), b.i32_vector(_const_value(b, op.inputs[1], "the multiples"))],
         [b.output(op.outputs[0])])
    return ["TILE"]


def _f32_extra(*values):
    def extra(b: _Builder, op: _Op) -> list[int]:
        return [b.f32(v) for v in values]
    return extra


def _lrn_extra(b: _Builder, op: _Op) -> list[int]:
    o = op.options
    return [b.i32(o.get("Radius", 5)), b.f32(o.get("Bias", 1.0)), b.f32(o.get("Alpha", 1.0)),
            b.f32(o.get("Beta", 0.5))]


def _map_l2_norm(b: _Builder, op: _Op) -> list[str]:
    return _emit(b, op, OP.L2_NORMALIZATION, [b.tensor(op.inputs[0])], fused=False)


def _map_log_softmax(b: _Builder, op: _Op) -> list[str]:
    b.op(OP.LOG_SOFTMAX, [b.tensor(op.inputs[0]), b.f32(1.0), b.i32(-1)], [b.output(op.outputs[0])])
    return ["LOG_SOFTMAX"]


#: TFLite builtin -> mapping function (the delegate's ``Map`` cases).
MAPPERS: dict[str, Callable[[_Builder, _Op], list[str]]] = {
    "ADD": _map_binary(OP.ADD), "SUB": _map_binary(OP.SUB), "MUL": _map_binary(OP.MUL),
    "DIV": _map_binary(OP.DIV),
    "CONV_2D": _map_conv, "DEPTHWISE_CONV_2D": _map_depthwise, "TRANSPOSE_CONV": _map_transpose_conv,
    "FULLY_CONNECTED": _map_fully_connected,
    "AVERAGE_POOL_2D": _map_pool(OP.AVERAGE_POOL_2D), "MAX_POOL_2D": _map_pool(OP.MAX_POOL_2D),
    "L2_POOL_2D": _map_pool(OP.L2_POOL_2D),
    "CONCATENATION": _map_concat, "PACK": _map_pack,
    "RESHAPE": _map_reshape, "SQUEEZE": _map_squeeze,
    "EXPAND_DIMS": _map_expand_dims,
    "TRANSPOSE": _map_unary(OP.TRANSPOSE, _const_vector_input(1, "the permutation")),
    "SLICE": _map_unary(OP.SLICE, lambda b, op: [b.i32_vector(_const_value(b, op.inputs[1], "the begin")),
                                                b.i32_vector(_const_value(b, op.inputs[2], "the size"))]),
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
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _map_lstm, "LSTM": _map_lstm_cell,
    "RNN": _map_rnn, "UNIDIRECTIONAL_SEQUENCE_RNN": _map_sequence_rnn, "SVDF": _map_svdf,
    "TOPK_V2": _map_topk, "FILL": _map_fill, "EMBEDDING_LOOKUP": _map_embedding_lookup,
}


# --- the importer ---------------------------------------------------------------------------

class _Importer:
    def __init__(self, where: str, name: str, tensors, ops, gin, gout):
        self.where, self.name = where, name
        self.tensors: list[TensorInfo] = tensors
        self.ops: list[_Op] = ops
        self.gin, self.gout = gin, gout
        self.constants: dict[int, np.ndarray] = {}
        self.consumers: dict[int, list[int]] = {}
        for op in ops:
            for t in op.inputs:
                if t >= 0:
                    self.consumers.setdefault(t, []).append(op.index)

    def constant(self, t: int) -> np.ndarray | None:
        return _constant(self.tensors, self.constants, t)

    def _fold(self, op: _Op, kernel) -> str | None:
        """Evaluate ``op`` now if every input is constant (SHAPE: always, from the static
        shape); returns the reason or None."""
        if op.builtin == "SHAPE" and len(op.inputs) == 1 and len(op.outputs) == 1:
            out = self.tensors[op.outputs[0]]
            if out.dtype is not None and out.dtype.kind in "iu":
                self.constants[op.outputs[0]] = np.asarray(self.tensors[op.inputs[0]].shape, out.dtype)
                return f"the static shape of tensor {op.inputs[0]}"
        if not op.inputs or any(t >= 0 and self.constant(t) is None and not
                                (self.tensors[t].is_constant and self.tensors[t].sparsity is not None)
                                for t in op.inputs):
            return None
        if any(self.tensors[t].is_variable for t in op.outputs):
            return None
        if op.builtin == "DEQUANTIZE" and self.tensors[op.inputs[0]].type_name == "FLOAT16":
            v = self.constant(op.inputs[0])
            if v is None:
                return None
            self.constants[op.outputs[0]] = v.astype(np.float32).reshape(self.tensors[op.outputs[0]].shape)
            return "constant float16 -> float32 (the delegate's HALF_TO_FLOAT conversion)"
        if kernel is None:
            return None
        step = self._fallback_step(-1, op, kernel, "")
        vals = []
        for t in op.inputs:
            if t < 0:
                vals.append(None)
            else:
                v = self.constant(t)
                vals.append(self.tensors[t].buffer if v is None else v)  # sparse: stored values
        try:
            outs = kernel(vals, step)
        except (fallback.FallbackError, ArithmeticError, IndexError, TypeError, ValueError):
            return None  # not folded: mapped, or left to run (and report) as a fallback step
        for t, v in zip(op.outputs, outs):
            self.constants[t] = np.asarray(v).reshape(self.tensors[t].shape)
        why = "no NNAPI mapping" if op.builtin not in MAPPERS else "integer shape arithmetic"
        return f"constant inputs, evaluated by the CPU kernel ({why})"

    def _fallback_step(self, index: int, op: _Op, kernel, reason: str) -> FallbackStep:
        return FallbackStep(index, op.index, op.builtin, list(op.inputs), list(op.outputs),
                            [self.tensors[t] if t >= 0 else None for t in op.inputs],
                            [self.tensors[t] for t in op.outputs], dict(op.options), kernel, reason)

    def run(self, refused: dict[int, str]) -> tuple[list, list[OperatorMapping]]:
        """One pass over the operators; ``refused``: operator -> reason the front end gave
        for a previous mapping (those fall back)."""
        steps: list = []
        mapping: list[OperatorMapping] = []
        self.constants = {}
        b = _Builder(self)
        entries: list[OperatorMapping] = []  # mapped operators of the current builder

        def close():
            nonlocal b, entries
            if not b.empty:
                for m in entries:
                    m.step = len(steps)
                steps.append(b)
            b, entries = _Builder(self), []

        for op in self.ops:
            mapper = MAPPERS.get(op.builtin)
            kernel = fallback.kernel_for(op.builtin)
            # Constant subgraphs: an unmapped operator, or integer shape arithmetic (which
            # NNAPI often has no integer form of, e.g. STRIDED_SLICE), is evaluated here.
            shape_math = all(self.tensors[t].type_name in ("INT32", "INT64", "BOOL")
                             and not self.tensors[t].quantized for t in op.outputs)
            folded = self._fold(op, kernel if mapper is None or shape_math else None)
            if folded is not None:
                mapping.append(OperatorMapping(op.index, op.builtin, "folded", reason=folded))
                continue
            reason = refused.get(op.index)
            if mapper is not None and reason is None:
                cp = b.checkpoint()
                b.current, b.note = op.index, ""
                try:
                    names = mapper(b, op)
                except _Unmappable as e:
                    b.rollback(cp)
                    reason = f"no NNAPI mapping: {e}"
                except (IndexError, KeyError, TypeError, ValueError) as e:
                    b.rollback(cp)
                    reason = f"no NNAPI mapping: malformed operator ({type(e).__name__}: {e})"
                else:
                    b.operators.append(op.index)
                    entries.append(OperatorMapping(op.index, op.builtin, "nnapi", names, reason=b.note))
                    mapping.append(entries[-1])
                    continue
            elif reason is None:
                reason = "no NNAPI mapping (the delegate maps no such operator)"
            close()
            status = "fallback" if kernel is not None else "unsupported"
            if kernel is None:
                reason += "; no CPU kernel"
            steps.append(self._fallback_step(len(steps), op, kernel, reason))
            mapping.append(OperatorMapping(op.index, op.builtin, status, reason=reason, step=len(steps) - 1))
        close()
        return steps, mapping


def import_tflite(path_or_bytes, name: str | None = None) -> ImportedModel:
    """Import a ``.tflite`` file (path) or flatbuffer (bytes) as described in the module
    docstring. ``name`` defaults to the file's stem ("model" for bytes). Raises
    TFLiteImportError naming the file (and operator)."""
    data, path, where, tensors, ops, gin, gout, version = _read_model(path_or_bytes)
    name = name or (path.stem if path is not None else "model")
    both = set(gin) & set(gout)
    if both:
        raise TFLiteImportError(f"{where}: tensor {sorted(both)[0]} is both a graph input and a graph "
                                f"output, which an NNAPI model cannot express")
    for k, op in enumerate(ops):
        for t in op.inputs + op.outputs:
            if t >= len(tensors):
                raise TFLiteImportError(f"{where}: operator {k} ({op.builtin}) refers to tensor {t} "
                                        f"({len(tensors)} tensors)")
    imp = _Importer(where, name, tensors, ops, gin, gout)
    refused: dict[int, str] = {}
    from runtime.errors import NnapiError
    from runtime.testing.frontend import build_model
    for _ in range(len(ops) + 1):
        steps, mapping = imp.run(refused)
        later_reads = _later_reads(steps, imp, gout)
        finished = []
        failed = False
        for k, s in enumerate(steps):
            if isinstance(s, _Builder):
                part = s.finish(k, name, later_reads(k))
                try:
                    build_model(part.model)
                except NnapiError as e:
                    culprit = _culprit(s, e.message)
                    if culprit is None or culprit in refused:
                        raise TFLiteImportError(f"{where}: partition {k} (operators {s.operators[0]}-"
                                                f"{s.operators[-1]}) is not a valid NNAPI model: "
                                                f"{e.message}") from None
                    refused[culprit] = f"the NNAPI mapping is invalid ({e.message})"
                    failed = True
                    break
                finished.append(part)
            else:
                finished.append(s)
        if not failed:
            break
    operand_of: dict[int, tuple[int, int]] = {}
    for s in finished:
        if isinstance(s, Partition):
            for t, k in s.operand_of.items():
                if t not in operand_of or s.model.main.operands[k].lifetime in (L.TEMPORARY_VARIABLE,
                                                                                 L.SUBGRAPH_OUTPUT):
                    operand_of[t] = (s.index, k)
    return ImportedModel(name, path, hashlib.sha256(data).hexdigest(), tensors,
                         [tensors[t] for t in gin], [tensors[t] for t in gout], finished, mapping,
                         operand_of, dict(imp.constants), version)


def _culprit(builder: "_Builder", message: str) -> int | None:
    """The TFLite operator whose NNAPI operation a front-end error message names, if any."""
    import re
    m = re.search(r"operation (\d+) \((\w+)\)", message)
    if not m:
        return None
    k, name = int(m.group(1)), m.group(2)
    order = run_order(builder.operations)  # the front end's order: its messages index it
    if k < len(order) and builder.operations[order[k]].type.name == name:
        return builder.origin[order[k]]
    same = [j for j, o in enumerate(builder.operations) if o.type.name == name]
    return builder.origin[same[0]] if len(same) == 1 else None


def _later_reads(steps, imp: _Importer, gout):
    """For step k: a predicate "tensor t is read by a later step or is a graph output"."""
    readers: dict[int, set[int]] = {}
    for k, s in enumerate(steps):
        ins = s.input_tensors if isinstance(s, _Builder) else [t for t in s.inputs if t >= 0]
        for t in ins:
            readers.setdefault(t, set()).add(k)
    outs = set(gout)

    def for_step(k: int):
        return lambda t: t in outs or any(r > k for r in readers.get(t, ()))
    return for_step


# --- describing -------------------------------------------------------------------------------

def describe(imported: ImportedModel) -> str:
    """The per-operator mapping table (what ``nncts mlts import MODEL.tflite`` prints):
    a header (model, inputs, outputs, steps), one line per TFLite operator (index, builtin,
    where it went), and a summary of the operators left to the CPU."""
    lines = [f"model {imported.name}" + (f" ({imported.path})" if imported.path else ""),
             "inputs:  " + "; ".join(f"{t.index} {t.name} {t.describe()}" for t in imported.inputs),
             "outputs: " + "; ".join(f"{t.index} {t.name} {t.describe()}" for t in imported.outputs)]
    n_ops = sum(len(p.model.main.operations) for p in imported.partitions)
    lines.append(f"steps: {len(imported.steps)} ({len(imported.partitions)} NNAPI partitions with "
                 f"{n_ops} NNAPI operations, {len(imported.steps) - len(imported.partitions)} CPU "
                 f"fallback operators); {sum(m.status == 'folded' for m in imported.mapping)} "
                 f"operators folded at import")
    width = max([len(m.builtin) for m in imported.mapping] + [8])
    lines.append(f"{'op':>4}  {'builtin':<{width}}  step  NNAPI")
    for m in imported.mapping:
        step = "-" if m.step is None else str(m.step)
        lines.append(f"{m.index:>4}  {m.builtin:<{width}}  {step:>4}  {m.target}")
    left = imported.fallbacks
    if left:
        names = sorted({m.builtin for m in left})
        lines.append(f"not mapped to NNAPI: {', '.join(names)} "
                     f"({len(left)} operator{'s' if len(left) != 1 else ''})")
    else:
        lines.append("every operator runs on NNAPI (or was folded at import)")
    return "\n".join(lines)
