"""Reading a TFLite flatbuffer (subgraph 0) into :class:`~mlts.tflite_import.model.TensorInfo`
and :class:`Op` records, with the ``tflite`` package (the generated flatbuffer classes of
TFLite's ``schema.fbs``; imported lazily, it is an optional extra).

A model file is read under :data:`MAX_TFLITE_BYTES` (``nncts mlts import`` is handed files
nncts did not write): a larger file, or a stream that goes on past the limit, raises
:class:`~mlts.tflite_import.model.TFLiteImportError` naming the file, without reading more
than the limit (see :mod:`runtime.files`)."""
from __future__ import annotations

import inspect
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from runtime.files import BoundedReader, FileLimitError

from .model import TFLITE_TYPES, DimensionLevel, SparsityInfo, TensorInfo, TFLiteImportError

#: Most bytes a ``.tflite`` file may hold (512 MiB; the largest model MLTS runs, MobileNet v1
#: 1.0 224 float32, is 16 MiB).
MAX_TFLITE_BYTES = 512 * 1024 * 1024

_OPTION_CLASSES: dict[int, str] | None = None
_ACCESSORS: dict[type, list[tuple[str, str]]] = {}


def _option_class_names() -> dict[int, str]:
    """TFLite BuiltinOptions union code -> options class name (``tflite.BuiltinOptions``)."""
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
    """An int64 array of a sparse level's segments or indices (a SparseIndexVector union:
    1 Int32Vector, 2 Uint16Vector, 3 Uint8Vector); empty when absent."""
    import tflite
    cls = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}.get(kind)
    if cls is None or table_obj is None:
        return np.zeros(0, np.int64)
    v = cls()
    v.Init(table_obj.Bytes, table_obj.Pos)
    arr = v.ValuesAsNumpy()
    return np.zeros(0, np.int64) if isinstance(arr, int) else arr.astype(np.int64)


def _read_sparsity(s) -> SparsityInfo:
    """A TFLite ``SparsityParameters`` table as a :class:`SparsityInfo`."""
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
    """Tensor ``i`` of subgraph ``g``: type, shape, quantization, sparsity and constant value
    (from the buffer table, or from ``data`` at the buffer's offset for models stored with
    external buffers). Raises TFLiteImportError for a constant numpy cannot hold or whose
    buffer size does not match the shape."""
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
class Op:
    """One TFLite operator of subgraph 0: its ``index`` (execution order), ``builtin`` name
    (``CUSTOM:<code>`` for a custom operator, ``BUILTIN_<n>`` for a code the ``tflite``
    package does not name), ``inputs`` / ``outputs`` (tensor indexes, -1 = omitted optional
    input), builtin ``options`` (see :func:`_read_options`) and operator ``version``."""

    index: int
    builtin: str
    inputs: list[int]
    outputs: list[int]
    options: dict
    version: int


class RawModel(NamedTuple):
    """What :func:`read_model` read: the file's bytes (``data``), its ``path`` (None for
    bytes), ``where`` (the name used in error messages), subgraph 0's ``tensors`` and
    ``ops``, its graph inputs ``gin`` and outputs ``gout`` (tensor indexes) and the model's
    schema ``version``."""

    data: bytes
    path: Path | None
    where: str
    tensors: list[TensorInfo]
    ops: list[Op]
    gin: list[int]
    gout: list[int]
    version: int


def read_file(path: Path, limit: int | None = None) -> bytes:
    """The bytes of the file at ``path``, at most ``limit`` (default
    :data:`MAX_TFLITE_BYTES`). Raises TFLiteImportError naming the file when it cannot be
    read or holds more than the limit: a regular file is refused from its size before any
    read, anything else (a pipe, a device) once one read went past the limit."""
    limit = MAX_TFLITE_BYTES if limit is None else limit
    too_big = (f"{path}: more than {limit:,} bytes, the limit for a TFLite model "
               f"(mlts.tflite_import.MAX_TFLITE_BYTES)")
    try:
        with open(path, "rb") as raw:
            st = os.fstat(raw.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise TFLiteImportError(too_big)
            with io.BufferedReader(BoundedReader(raw, limit, str(path))) as f:
                return f.read()
    except FileLimitError:
        raise TFLiteImportError(too_big) from None
    except OSError as e:
        raise TFLiteImportError(f"{path}: cannot read ({e.strerror or e})") from None


def _as_list(v) -> list[int]:
    """A flatbuffer int vector read ``AsNumpy`` as a list (the accessor returns 0 when the
    vector is absent)."""
    return [] if isinstance(v, int) else [int(x) for x in v]


def read_model(path_or_bytes) -> RawModel:
    """Read a ``.tflite`` file (path, under :data:`MAX_TFLITE_BYTES`) or flatbuffer
    (bytes): subgraph 0's tensors (constant values included) and operators. Raises
    TFLiteImportError naming the file: unreadable or too large, no ``TFL3`` identifier, no
    ``tflite`` package, no subgraph, a corrupt flatbuffer, a constant of a type numpy cannot
    hold or whose buffer does not match its shape."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data, path, where = bytes(path_or_bytes), None, "<tflite bytes>"
    else:
        path = Path(path_or_bytes)
        where = str(path)
        data = read_file(path)
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
            ops.append(Op(k, name, _as_list(o.InputsAsNumpy()), _as_list(o.OutputsAsNumpy()),
                          _read_options(o), int(code.Version())))
        gin, gout = _as_list(g.InputsAsNumpy()), _as_list(g.OutputsAsNumpy())
        version = int(model.Version())
    except TFLiteImportError:
        raise
    except Exception as e:  # noqa: BLE001 - a corrupt flatbuffer raises anything
        raise TFLiteImportError(f"{where}: corrupt TFLite flatbuffer ({type(e).__name__}: {e})") from None
    return RawModel(data, path, where, tensors, ops, gin, gout, version)
