"""The TFLite baseline: a ``.tflite`` model run by ai-edge-litert in a SUBPROCESS.

TFLite's kernels can abort the whole process (a failed ``TF_LITE_ENSURE`` in a reference
kernel, a bad flatbuffer), so the interpreter never runs in the caller's process: the
model, the inputs and the settings go to ``python -m mlts.litert REQUEST_DIR`` as files
(``request.json`` + ``inputs.npz``), the child answers with ``result.json`` +
``result.npz``. A child that dies (signal, non-zero exit) or outlives ``timeout_s`` is
reported as :class:`LiteRTError` naming the model, the kernel set and the cause (the
signal's name and the tail of the child's stderr; a hung child is killed).

Kernel sets (both single-threaded, ``num_threads=1``, as the issue's comparison asks):

=========  ==================================================  =============================
name       ``experimental_op_resolver_type``                    what runs
=========  ==================================================  =============================
xnnpack    ``OpResolverType.AUTO``                              TFLite's default: the XNNPACK
                                                                delegate takes what it supports
builtin    ``OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES``  TFLite's optimized builtin
                                                                kernels, no delegate
reference  ``OpResolverType.BUILTIN_REF``                       TFLite's reference kernels
=========  ==================================================  =============================

Intermediate tensors (``keep_tensors=True``) come from a second interpreter created with
``experimental_preserve_all_tensors=True``; TFLite then switches an AUTO or BUILTIN
resolver to BUILTIN_WITHOUT_DEFAULT_DELEGATES (tensors inside an XNNPACK partition are not
observable), so intermediate values are always the builtin kernels' (reference kernels'
for ``reference``). Only tensors an operator writes, plus the graph inputs, are returned
(not the constant weights), keyed by TFLite tensor index of subgraph 0; the outputs and
the latency come from the ordinary interpreter of the chosen kernel set.

Latency: LoadGen single-stream style (:func:`mlts.latency.loadgen_loop`): warm-up queries, then
queries until both ``min_duration_s`` and ``min_iterations`` are reached (capped by
``max_duration_s``). One query = ``set_tensor`` of every input + ``invoke`` + ``get_tensor``
of every output, timed with ``time.perf_counter_ns`` in the child; samples are seconds.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .latency import LatencyStats, loadgen_loop

#: Kernel set name -> ai-edge-litert ``OpResolverType`` member name.
KERNELS = {
    "xnnpack": "AUTO",
    "builtin": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "reference": "BUILTIN_REF",
}
PIP_HINT = "pip install ai-edge-litert (or: pip install 'nncts[mlts]')"
DEFAULT_TIMEOUT_S = 300.0
_PROJECT_ROOT = Path(__file__).resolve().parents[1]


class LiteRTError(RuntimeError):
    """The LiteRT subprocess failed: it died (``signal`` set), raised (its message), hung
    (``timed_out``), or ai-edge-litert is not installed."""

    def __init__(self, message: str, *, timed_out: bool = False, signal: int | None = None,
                 returncode: int | None = None, stderr: str = ""):
        super().__init__(message)
        self.timed_out = timed_out
        self.signal = signal
        self.returncode = returncode
        self.stderr = stderr


@dataclass
class TensorInfo:
    """One TFLite tensor of subgraph 0: ``index``, ``name``, ``shape``, ``dtype`` (numpy
    name), ``quantization`` ``(scale, zero_point)`` of a per-tensor quantized tensor."""

    index: int
    name: str
    shape: list[int]
    dtype: str
    quantization: tuple[float, int] = (0.0, 0)


@dataclass
class OperatorInfo:
    """One TFLite operator in execution order: ``index``, ``name`` (builtin name, e.g.
    ``CONV_2D``), input and output tensor indexes (-1 = omitted optional input)."""

    index: int
    name: str
    inputs: list[int]
    outputs: list[int]


@dataclass
class LiteRTResult:
    """What the subprocess returned.

    ``outputs``: one array per model output, in the model's output order.
    ``tensors``: TFLite tensor index -> value (only with ``keep_tensors``; graph inputs and
    every operator output; builtin/reference kernels, see the module docstring).
    ``latencies_s``: one sample per timed query, seconds (empty with ``iterations=0``).
    ``warmup_s``: the warm-up queries' times, seconds. ``load_s``: interpreter creation +
    ``allocate_tensors``, seconds. ``inputs``/``outputs_info``/``operators``: the model's
    signature and operator list as the interpreter reports them.
    """

    kernels: str
    num_threads: int
    outputs: list[np.ndarray]
    tensors: dict[int, np.ndarray] = field(default_factory=dict)
    latencies_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    warmup_s: list[float] = field(default_factory=list)
    load_s: float = 0.0
    inputs_info: list[TensorInfo] = field(default_factory=list)
    outputs_info: list[TensorInfo] = field(default_factory=list)
    tensor_info: dict[int, TensorInfo] = field(default_factory=dict)
    operators: list[OperatorInfo] = field(default_factory=list)
    version: str = ""

    def stats(self):
        """:class:`mlts.latency.LatencyStats` of ``latencies_s``."""
        return LatencyStats.from_samples(self.latencies_s)


def available() -> bool:
    """Whether ai-edge-litert is installed (checked without importing it)."""
    import importlib.util
    return importlib.util.find_spec("ai_edge_litert") is not None


def run_litert(model, inputs, *, kernels: str = "xnnpack", num_threads: int = 1,
               keep_tensors: bool = False, warmup: int = 0, iterations: int = 0,
               min_duration_s: float = 0.0, max_duration_s: float | None = None,
               timeout_s: float = DEFAULT_TIMEOUT_S, name: str | None = None,
               _fault: str | None = None) -> LiteRTResult:
    """Run ``model`` (a ``.tflite`` path or its bytes) on ``inputs`` (one numpy array per
    model input, in the model's input order, dtype and shape as the model declares) with
    ai-edge-litert in a subprocess.

    ``kernels``: "xnnpack", "builtin" or "reference" (module docstring). ``warmup``:
    untimed-for-stats queries first; ``iterations`` / ``min_duration_s``: timed queries
    until both minima are met (LoadGen; 0 and 0.0 = no timing: one plain invoke for the
    outputs), at most ``max_duration_s`` seconds once ``iterations`` are done.
    ``timeout_s``: wall-clock limit of the whole subprocess.

    Raises ValueError for an unknown kernel set or a missing model file; LiteRTError when
    ai-edge-litert is missing, or the child raised (e.g. a wrong input shape, an invalid
    model: its message), died (signal name) or timed out. ``_fault`` ("abort", "hang",
    "exit") makes the child misbehave on purpose (tests of this error path).
    """
    if kernels not in KERNELS:
        raise ValueError(f"run_litert: unknown kernel set {kernels!r} (one of {', '.join(KERNELS)})")
    label = name or (Path(model).name if isinstance(model, (str, os.PathLike)) else "<bytes>")
    if not available():
        raise LiteRTError(f"LiteRT baseline for {label}: ai-edge-litert is not installed ({PIP_HINT})")
    with tempfile.TemporaryDirectory(prefix="nncts-litert-") as tmp:
        tmp = Path(tmp)
        model_path = _stage(model, inputs, tmp, "run_litert")
        request = dict(model=str(model_path.resolve()), kernels=kernels, num_threads=int(num_threads),
                       keep_tensors=bool(keep_tensors), warmup=int(warmup), iterations=int(iterations),
                       min_duration_s=float(min_duration_s),
                       max_duration_s=None if max_duration_s is None else float(max_duration_s),
                       n_inputs=len(inputs), fault=_fault)
        (tmp / "request.json").write_text(json.dumps(request))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(_PROJECT_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        what = f"LiteRT ({kernels} kernels, {num_threads} thread{'s' if num_threads != 1 else ''}) on {label}"
        try:
            proc = subprocess.run([sys.executable, "-m", "mlts.litert", str(tmp)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            raise LiteRTError(f"{what}: no result within {timeout_s:g} s; the subprocess was killed (HANG)",
                              timed_out=True, stderr=_text(e.stderr)) from None
        stderr = _text(proc.stderr)
        if proc.returncode != 0:
            tail = _tail(stderr)
            if proc.returncode < 0:
                sig = -proc.returncode
                try:
                    signame = signal.Signals(sig).name
                except ValueError:
                    signame = f"signal {sig}"
                raise LiteRTError(f"{what}: the subprocess died with {signame} (CRASH){tail}",
                                  signal=sig, returncode=proc.returncode, stderr=stderr)
            err = tmp / "error.txt"
            msg = err.read_text().strip() if err.exists() else f"exit status {proc.returncode}"
            raise LiteRTError(f"{what}: {msg}{tail if not err.exists() else ''}",
                              returncode=proc.returncode, stderr=stderr)
        return _read_result(tmp, kernels, int(num_threads))


def _text(b) -> str:
    if b is None:
        return ""
    return b.decode("utf-8", "replace") if isinstance(b, (bytes, bytearray)) else str(b)


def _tail(stderr: str, lines: int = 6) -> str:
    kept = [ln for ln in stderr.strip().splitlines() if ln.strip() and "XNNPACK delegate" not in ln]
    return ("; stderr: " + " | ".join(kept[-lines:])) if kept else ""


def _info(d: dict) -> TensorInfo:
    return TensorInfo(int(d["index"]), d["name"], [int(x) for x in d["shape"]], d["dtype"],
                      (float(d["quantization"][0]), int(d["quantization"][1])))


def _read_result(tmp: Path, kernels: str, num_threads: int) -> LiteRTResult:
    meta = json.loads((tmp / "result.json").read_text())
    with np.load(tmp / "result.npz") as z:
        arrays = {k: z[k] for k in z.files}
    outputs = [arrays[f"out{i}"] for i in range(meta["n_outputs"])]
    tensors = {int(k[1:]): v for k, v in arrays.items() if k.startswith("t")}
    return LiteRTResult(
        kernels=kernels, num_threads=num_threads, outputs=outputs, tensors=tensors,
        latencies_s=np.asarray(meta["latencies_s"], dtype=np.float64), warmup_s=meta["warmup_s"],
        load_s=meta["load_s"], inputs_info=[_info(d) for d in meta["inputs"]],
        outputs_info=[_info(d) for d in meta["outputs"]],
        tensor_info={int(d["index"]): _info(d) for d in meta["tensors"]},
        operators=[OperatorInfo(o["index"], o["name"], o["inputs"], o["outputs"]) for o in meta["operators"]],
        version=meta.get("version", ""))


# ---------------------------------------------------------------------------------------
# The child: python -m mlts.litert REQUEST_DIR


def _stage(model, inputs, tmp: Path, who: str) -> Path:
    """Put what the LiteRT process reads in ``tmp``: the model (written there when given as
    bytes) and ``inputs.npz``; returns the model's path. ValueError for a missing file."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        model_path = tmp / "model.tflite"
        model_path.write_bytes(bytes(model))
    else:
        model_path = Path(model)
        if not model_path.is_file():
            raise ValueError(f"{who}: model file {model_path} does not exist")
    np.savez(tmp / "inputs.npz", **{f"in{i}": np.asarray(a) for i, a in enumerate(inputs)})
    return model_path


def _query(it, in_details, out_details, inputs):
    """One inference of interpreter ``it`` on ``inputs``: returns the output arrays."""
    def query():
        for d, a in zip(in_details, inputs):
            it.set_tensor(d["index"], a)
        it.invoke()
        return [it.get_tensor(d["index"]) for d in out_details]
    return query


def _check_inputs(in_details, inputs) -> None:
    """ValueError naming the input whose count, shape or dtype differs from the model's."""
    if len(inputs) != len(in_details):
        raise ValueError(f"the model has {len(in_details)} inputs, {len(inputs)} were given")
    for k, (d, a) in enumerate(zip(in_details, inputs)):
        if list(a.shape) != [int(x) for x in d["shape"]] or a.dtype != np.dtype(d["dtype"]):
            raise ValueError(f"input {k} ({d['name']}): expected {np.dtype(d['dtype']).name}"
                             f"{[int(x) for x in d['shape']]}, got {a.dtype.name}{list(a.shape)}")


def _operators(it) -> list[dict]:
    """The model's operators as the interpreter lists them, less the nodes a delegate
    appended (op_name DELEGATE: the XNNPACK partition; the operators it replaced stay
    listed with their own names)."""
    return [dict(index=int(o["index"]), name=str(o["op_name"]), inputs=[int(x) for x in o["inputs"]],
                 outputs=[int(x) for x in o["outputs"]])
            for o in it._get_ops_details() if o["op_name"] != "DELEGATE"]


def _child(tmp: Path) -> None:
    req = json.loads((tmp / "request.json").read_text())
    fault = req.get("fault")
    if fault == "abort":
        os.abort()
    if fault == "hang":
        while True:
            time.sleep(1)
    if fault == "exit":
        os._exit(3)
    from ai_edge_litert import interpreter as tfl

    with np.load(tmp / "inputs.npz") as z:
        inputs = [z[f"in{i}"] for i in range(req["n_inputs"])]
    resolver = getattr(tfl.OpResolverType, KERNELS[req["kernels"]])
    t0 = time.perf_counter()
    it = tfl.Interpreter(model_path=req["model"], num_threads=req["num_threads"],
                         experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    load_s = time.perf_counter() - t0
    in_details = it.get_input_details()
    out_details = it.get_output_details()
    _check_inputs(in_details, inputs)

    query = _query(it, in_details, out_details, inputs)

    warm, samples, outputs = loadgen_loop(query, warmup=req["warmup"], min_iterations=req["iterations"],
                                          min_duration_s=req["min_duration_s"],
                                          max_duration_s=req["max_duration_s"])
    if outputs is None:
        outputs = query()
    arrays = {f"out{i}": np.asarray(o) for i, o in enumerate(outputs)}
    operators = _operators(it)
    details = it.get_tensor_details()
    if req["keep_tensors"]:
        full = tfl.Interpreter(model_path=req["model"], num_threads=req["num_threads"],
                               experimental_op_resolver_type=resolver, experimental_preserve_all_tensors=True)
        full.allocate_tensors()
        for d, a in zip(full.get_input_details(), inputs):
            full.set_tensor(d["index"], a)
        full.invoke()
        wanted = {d["index"] for d in full.get_input_details()}
        operators = _operators(full)
        for o in operators:
            wanted.update(x for x in o["outputs"] if x >= 0)
        for t in sorted(wanted):
            try:
                arrays[f"t{t}"] = np.array(full.get_tensor(t))
            except ValueError:  # a tensor without data (e.g. an unused output)
                pass
        details = full.get_tensor_details()

    def info(d):
        return dict(index=int(d["index"]), name=d["name"], shape=[int(x) for x in d["shape"]],
                    dtype=np.dtype(d["dtype"]).name,
                    quantization=[float(d["quantization"][0]), int(d["quantization"][1])])

    try:
        from ai_edge_litert import __version__ as version
    except ImportError:
        version = ""
    meta = dict(n_outputs=len(outputs), latencies_s=samples, warmup_s=warm, load_s=load_s,
                inputs=[info(d) for d in in_details], outputs=[info(d) for d in out_details],
                tensors=[info(d) for d in details], operators=operators, version=str(version))
    np.savez(tmp / "result.npz", **arrays)
    (tmp / "result.json").write_text(json.dumps(meta))


class LiteRTSession:
    """A long-lived ai-edge-litert subprocess holding one interpreter of ``model`` with
    ``kernels`` (``num_threads`` threads) and its ``inputs``, for measurements interleaved
    with the driver's (:func:`mlts.bench.bench_model` with ``rounds`` > 1: both sides then
    see the same machine load). Use as a context manager; :meth:`measure` runs a LoadGen
    window in the child and returns ``(warmup_s, samples_s)``. Every call is bounded by
    ``timeout_s``: a child that dies or hangs raises LiteRTError (and is killed)."""

    def __init__(self, model, inputs, *, kernels: str = "xnnpack", num_threads: int = 1,
                 timeout_s: float = DEFAULT_TIMEOUT_S, name: str | None = None):
        if kernels not in KERNELS:
            raise ValueError(f"LiteRTSession: unknown kernel set {kernels!r} (one of {', '.join(KERNELS)})")
        self.label = name or (Path(model).name if isinstance(model, (str, os.PathLike)) else "<bytes>")
        self.what = f"LiteRT ({kernels} kernels, {num_threads} thread{'s' if num_threads != 1 else ''}) on {self.label}"
        if not available():
            raise LiteRTError(f"LiteRT baseline for {self.label}: ai-edge-litert is not installed ({PIP_HINT})")
        self.timeout_s = timeout_s
        self._dir = tempfile.TemporaryDirectory(prefix="nncts-litert-")
        tmp = Path(self._dir.name)
        try:
            model_path = _stage(model, inputs, tmp, "LiteRTSession")
        except ValueError:
            self._dir.cleanup()
            raise
        (tmp / "request.json").write_text(json.dumps(dict(
            model=str(model_path.resolve()), kernels=kernels, num_threads=int(num_threads), n_inputs=len(inputs))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(_PROJECT_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        with open(tmp / "stderr.txt", "wb") as err:  # a file: a chatty child never blocks on a pipe
            self._proc = subprocess.Popen([sys.executable, "-m", "mlts.litert", "--serve", str(tmp)], env=env,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        self._call({"op": "ready"})

    def _call(self, request: dict) -> dict:
        import select
        proc = self._proc
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        ready, _, _ = select.select([proc.stdout], [], [], self.timeout_s)
        line = proc.stdout.readline() if ready else b""
        if not ready:
            proc.kill()
            self.close()
            raise LiteRTError(f"{self.what}: no answer within {self.timeout_s:g} s; the subprocess was killed (HANG)",
                              timed_out=True)
        if not line:
            proc.wait()
            stderr = (Path(self._dir.name) / "stderr.txt").read_text(errors="replace")
            err = Path(self._dir.name) / "error.txt"
            if proc.returncode is not None and proc.returncode < 0:
                try:
                    signame = signal.Signals(-proc.returncode).name
                except ValueError:
                    signame = f"signal {-proc.returncode}"
                msg = f"the subprocess died with {signame} (CRASH){_tail(stderr)}"
            else:
                msg = err.read_text().strip() if err.exists() else f"exit status {proc.returncode}{_tail(stderr)}"
            self.close()
            raise LiteRTError(f"{self.what}: {msg}", signal=-proc.returncode if (proc.returncode or 0) < 0 else None,
                              returncode=proc.returncode, stderr=stderr)
        return json.loads(line)

    def measure(self, *, warmup: int = 0, iterations: int = 1, min_duration_s: float = 0.0,
                max_duration_s: float | None = None) -> tuple[list[float], list[float]]:
        """One LoadGen window in the child: ``(warmup_s, samples_s)`` in seconds."""
        r = self._call({"op": "measure", "warmup": int(warmup), "iterations": int(iterations),
                        "min_duration_s": float(min_duration_s),
                        "max_duration_s": None if max_duration_s is None else float(max_duration_s)})
        return r["warmup_s"], r["latencies_s"]

    def close(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            try:
                proc.stdin.write(b'{"op": "quit"}\n')
                proc.stdin.flush()
                proc.wait(timeout=5)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        for f in (getattr(proc, "stdin", None), getattr(proc, "stdout", None)):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        self._proc = None if proc is None else proc
        if getattr(self, "_dir", None) is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _serve(tmp: Path) -> None:
    """The session child: one interpreter, LoadGen windows on request (JSON lines on stdin,
    answers on stdout; anything else written to fd 1, e.g. TFLite's own messages, goes to
    stderr)."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from ai_edge_litert import interpreter as tfl

    req = json.loads((tmp / "request.json").read_text())
    with np.load(tmp / "inputs.npz") as z:
        inputs = [z[f"in{i}"] for i in range(req["n_inputs"])]
    it = tfl.Interpreter(model_path=req["model"], num_threads=req["num_threads"],
                         experimental_op_resolver_type=getattr(tfl.OpResolverType, KERNELS[req["kernels"]]))
    it.allocate_tensors()
    ins, outs = it.get_input_details(), it.get_output_details()
    _check_inputs(ins, inputs)

    query = _query(it, ins, outs, inputs)
    for line in sys.stdin:
        r = json.loads(line)
        if r["op"] == "quit":
            return
        if r["op"] == "fault":  # tests of the error paths
            if r["kind"] == "abort":
                os.abort()
            while True:
                time.sleep(1)
        if r["op"] == "ready":
            out.write(json.dumps({"ok": True}) + "\n")
        elif r["op"] == "measure":
            warm, samples, _ = loadgen_loop(query, warmup=r["warmup"], min_iterations=r["iterations"],
                                            min_duration_s=r["min_duration_s"], max_duration_s=r["max_duration_s"])
            out.write(json.dumps({"warmup_s": warm, "latencies_s": samples}) + "\n")
        out.flush()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    serve = bool(argv) and argv[0] == "--serve"
    if serve:
        argv = argv[1:]
    if len(argv) != 1:
        print("usage: python -m mlts.litert [--serve] REQUEST_DIR", file=sys.stderr)
        return 2
    tmp = Path(argv[0])
    try:
        if serve:
            _serve(tmp)
        else:
            _child(tmp)
    except Exception as e:  # reported to the parent through error.txt
        (tmp / "error.txt").write_text(f"{type(e).__name__}: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
