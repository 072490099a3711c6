"""A TFLite model (schema version 3) written with the ``tflite`` package's flatbuffers
builders: the reverse of what :mod:`mlts.tflite_import` reads with the same package.

:class:`TFLiteGraph` collects one subgraph: tensors (type, shape, per-tensor or per-channel
quantization, an optional constant buffer), operators (a builtin operator code, input and
output tensor indexes, builtin options) and the graph's inputs and outputs;
:meth:`TFLiteGraph.serialize` returns the flatbuffer bytes an ai-edge-litert ``Interpreter``
loads (``model_content=``). Buffer 0 is the empty buffer the schema reserves.

The ``tflite`` and ``flatbuffers`` packages are imported on first use (in
:meth:`TFLiteGraph.serialize` and :func:`options`), so importing this module loads neither.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np

#: TFLite ``TensorType`` values (schema.fbs) of the numpy dtypes used.
TENSOR_TYPE = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int32): 2,
               np.dtype(np.uint8): 3, np.dtype(np.int64): 4, np.dtype(np.bool_): 6,
               np.dtype(np.int16): 7, np.dtype(np.int8): 9}


@dataclass
class Tensor:
    """One TFLite tensor: numpy ``dtype``, ``shape`` (a 0 written as 1: TFLite resizes
    every operator output in its kernel's Prepare, graph inputs at execution), constant
    bytes ``data`` (None for a variable), ``scales``/``zero_points`` (empty when not
    quantized; one each per tensor, or one per channel along ``quantized_dimension``)."""

    dtype: np.dtype
    shape: list[int]
    name: str
    data: bytes | None = None
    scales: list[float] = field(default_factory=list)
    zero_points: list[int] = field(default_factory=list)
    quantized_dimension: int = 0


@dataclass
class Operator:
    """One operator: ``code`` (BuiltinOperator value), tensor indexes (-1 = optional input
    omitted) and ``options`` ``(BuiltinOptions union type, fn(builder) -> offset)`` or None."""

    code: int
    inputs: list[int]
    outputs: list[int]
    options: tuple | None = None


def _module(name: str):
    return importlib.import_module(f"tflite.{name}")


def builtin_operator(name: str) -> int:
    """The BuiltinOperator value of ``name`` (e.g. "CONV_2D")."""
    return getattr(_module("BuiltinOperator").BuiltinOperator, name)


def options(kind: str, **fields) -> tuple:
    """``(union type, fn(builder) -> offset)`` of the builtin options table ``{kind}Options``
    (e.g. "Conv2D") with ``fields`` in the schema's CamelCase (e.g.
    ``FusedActivationFunction=1``; an int32 vector as ``("vector", [ints])``). Raises AttributeError for a field the table lacks."""
    table = f"{kind}Options"
    mod = _module(table)
    union = getattr(_module("BuiltinOptions").BuiltinOptions, table)
    adders = [(k, getattr(mod, f"Add{k}"), v) for k, v in fields.items()]

    def build(b):
        values = {}
        for k, _, v in adders:  # vectors are written before the table
            if isinstance(v, tuple) and v[:1] == ("vector",):
                getattr(mod, f"Start{k}Vector")(b, len(v[1]))
                for x in reversed(v[1]):
                    b.PrependInt32(x)
                values[k] = b.EndVector()
        mod.Start(b)
        for k, add, v in adders:
            add(b, values.get(k, v))
        return mod.End(b)
    return union, build


def _aligned_bytes(b, data: bytes) -> int:
    """A ubyte vector of ``data`` aligned to 16 bytes (kernels read constants in place)."""
    b.StartVector(1, len(data), 16)
    b.head -= len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


class TFLiteGraph:
    """Tensors and operators of a one-subgraph TFLite model, in the order added."""

    def __init__(self):
        self.tensors: list[Tensor] = []
        self.operators: list[Operator] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def add_tensor(self, dtype, shape, name: str, data: np.ndarray | None = None, scales=(),
                   zero_points=(), quantized_dimension: int = 0) -> int:
        """Append a tensor; returns its index. ``data`` (any array) is stored as ``dtype``
        in C order."""
        dtype = np.dtype(dtype)
        if dtype not in TENSOR_TYPE:
            raise ValueError(f"no TFLite tensor type for {dtype}")
        raw = None if data is None else np.ascontiguousarray(np.asarray(data, dtype)).tobytes()
        self.tensors.append(Tensor(dtype, [int(d) if d else 1 for d in shape], name, raw,
                                   [float(s) for s in scales], [int(z) for z in zero_points],
                                   quantized_dimension))
        return len(self.tensors) - 1

    def add_operator(self, name: str, inputs, outputs, opts: tuple | None = None) -> None:
        """Append builtin operator ``name`` reading ``inputs`` and writing ``outputs``."""
        self.operators.append(Operator(builtin_operator(name), list(inputs), list(outputs), opts))

    def serialize(self) -> bytes:
        """The model as TFLite flatbuffer bytes (file identifier ``TFL3``)."""
        import flatbuffers
        m, sgm, tm, qm, om, ocm, bm = (_module(n) for n in (
            "Model", "SubGraph", "Tensor", "QuantizationParameters", "Operator", "OperatorCode", "Buffer"))
        b = flatbuffers.Builder(1024)

        def ivec(start, values, kind="Int32"):
            start(b, len(values))
            for v in reversed(values):
                getattr(b, f"Prepend{kind}")(v)
            return b.EndVector()

        def table_vec(start, offsets):
            start(b, len(offsets))
            for o in reversed(offsets):
                b.PrependUOffsetTRelative(o)
            return b.EndVector()

        # buffers: 0 empty, then one per constant tensor
        buffer_of, datas = {}, []
        for i, t in enumerate(self.tensors):
            if t.data is not None:
                datas.append(t.data)
                buffer_of[i] = len(datas)
        buffers = []
        for data in [None] + datas:
            vec = _aligned_bytes(b, data) if data else None
            bm.Start(b)
            if vec is not None:
                bm.AddData(b, vec)
            buffers.append(bm.End(b))

        tensors = []
        for i, t in enumerate(self.tensors):
            name = b.CreateString(t.name)
            shape = ivec(tm.StartShapeVector, t.shape)
            quant = None
            if t.scales:
                scales = ivec(qm.StartScaleVector, t.scales, "Float32")
                zps = ivec(qm.StartZeroPointVector, t.zero_points, "Int64")
                qm.Start(b)
                qm.AddScale(b, scales)
                qm.AddZeroPoint(b, zps)
                qm.AddQuantizedDimension(b, t.quantized_dimension)
                quant = qm.End(b)
            tm.Start(b)
            tm.AddShape(b, shape)
            tm.AddType(b, TENSOR_TYPE[t.dtype])
            tm.AddBuffer(b, buffer_of.get(i, 0))
            tm.AddName(b, name)
            if quant is not None:
                tm.AddQuantization(b, quant)
            tensors.append(tm.End(b))

        codes: dict[int, int] = {}
        for o in self.operators:
            codes.setdefault(o.code, len(codes))
        code_tables = []
        for code in codes:
            ocm.Start(b)
            ocm.AddDeprecatedBuiltinCode(b, min(code, 127))
            ocm.AddBuiltinCode(b, code)
            ocm.AddVersion(b, 1)
            code_tables.append(ocm.End(b))

        operators = []
        for o in self.operators:
            ins = ivec(om.StartInputsVector, o.inputs)
            outs = ivec(om.StartOutputsVector, o.outputs)
            opt = o.options[1](b) if o.options else None
            om.Start(b)
            om.AddOpcodeIndex(b, codes[o.code])
            om.AddInputs(b, ins)
            om.AddOutputs(b, outs)
            if opt is not None:
                om.AddBuiltinOptionsType(b, o.options[0])
                om.AddBuiltinOptions(b, opt)
            operators.append(om.End(b))

        t_vec = table_vec(sgm.StartTensorsVector, tensors)
        in_vec = ivec(sgm.StartInputsVector, self.inputs)
        out_vec = ivec(sgm.StartOutputsVector, self.outputs)
        op_vec = table_vec(sgm.StartOperatorsVector, operators)
        sg_name = b.CreateString("main")
        sgm.Start(b)
        sgm.AddTensors(b, t_vec)
        sgm.AddInputs(b, in_vec)
        sgm.AddOutputs(b, out_vec)
        sgm.AddOperators(b, op_vec)
        sgm.AddName(b, sg_name)
        subgraph = sgm.End(b)

        sg_vec = table_vec(m.StartSubgraphsVector, [subgraph])
        code_vec = table_vec(m.StartOperatorCodesVector, code_tables)
        buf_vec = table_vec(m.StartBuffersVector, buffers)
        desc = b.CreateString("nncts NNAPI translation")
        m.Start(b)
        m.AddVersion(b, 3)
        m.AddOperatorCodes(b, code_vec)
        m.AddSubgraphs(b, sg_vec)
        m.AddDescription(b, desc)
        m.AddBuffers(b, buf_vec)
        b.Finish(m.End(b), file_identifier=b"TFL3")
        return bytes(b.Output())
