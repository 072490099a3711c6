"""Latency and compilation-time benchmark of an imported model: the NNAPI driver (through
the front end, via :mod:`mlts.execute`) beside ai-edge-litert (:mod:`mlts.litert`, in a
subprocess), 1 thread each, in one run.

Method (MLPerf LoadGen, single-stream scenario, ``mlperf::TestSettings``): ``warmup``
queries are run and discarded, then queries are issued one after the other until BOTH
``min_duration_s`` and ``min_iterations`` are reached; ``max_duration_s`` (LoadGen's
``max_duration_ms``) stops a slow model once ``min_iterations`` are done. One query = set
the inputs, execute, read the outputs (an NNAPI Execution per query, as MLTS does; a
``set_tensor`` + ``invoke`` + ``get_tensor`` for TFLite). Latencies are wall-clock
(``time.perf_counter_ns``), reported in milliseconds.

Parameters: :data:`CI` (small: 2 warm-up, 10 queries, 0.5 s) is the default so tests and
CI stay short. :data:`LOADGEN` is LoadGen's own defaults (``min_duration_ms = 10000``,
``min_query_count = 100``); :data:`MLPERF` is what MLPerf Inference's rules ask of a
single-stream submission (600 s and 1024 queries at least). MLTS runs each model for a
fixed time after a warm-up; ``BenchSettings(min_duration_s=...)`` gives that.

Statistics (:class:`~mlts.latency.LatencyStats`): mean, standard deviation (population, ddof=0), min, max
and the p50/p90/p99 percentiles by nearest rank (LoadGen: the sample at sorted position
``ceil(p * n) - 1``), plus an equal-width histogram between min and max (``bins`` bins).

Compilation (:func:`bench_compilation`): ``prepare_imported`` timed without a cache dir,
then with a fresh cache dir twice: the first compilation prepares and saves to the cache
(``save_s``), the second one prepares from it (``with_cache_s``,
``Compilation.set_caching`` / ``IDevice.prepare_model_from_cache``). A driver without
caching support shows about the same time for both.
"""
from __future__ import annotations

import json
import math
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

from .latency import LatencyStats, loadgen_loop
from .litert import LiteRTSession, run_litert

#: Driver execution modes (NNAPI front end: Execution.compute, start_compute + Event.wait,
#: burst_compute on one Burst object reused across queries).
MODES = ("sync", "async", "burst")
#: ai-edge-litert kernel sets measured by default (see mlts.litert.KERNELS).
BASELINES = ("xnnpack", "builtin")


@dataclass(frozen=True)
class BenchSettings:
    """LoadGen-style run parameters: ``warmup`` queries (discarded), then queries until both
    ``min_iterations`` and ``min_duration_s`` (seconds) are met, stopping at
    ``max_duration_s`` once ``min_iterations`` are done (None: no cap). ``compile_iterations``:
    how many times each compilation time is measured (the minimum is kept).
    ``bins``: histogram bins. ``timeout_s``: limit of each ai-edge-litert subprocess (of each
    call to it with ``rounds`` > 1). ``rounds`` > 1: the runners (driver modes, TFLite
    kernel sets) take turns, each measuring ``rounds`` windows of 1/``rounds`` of the
    iterations and durations (warm-up before the first), so that all see the same machine
    load; their samples are pooled. 1: each runner measures once, one after the other."""

    warmup: int = 2
    min_iterations: int = 10
    min_duration_s: float = 0.5
    max_duration_s: float | None = 60.0
    compile_iterations: int = 1
    bins: int = 20
    timeout_s: float = 600.0
    rounds: int = 1

    def __post_init__(self):
        if (self.warmup < 0 or self.min_iterations < 1 or self.min_duration_s < 0 or self.bins < 1
                or self.rounds < 1):
            raise ValueError(f"BenchSettings: warmup >= 0, min_iterations >= 1, min_duration_s >= 0, "
                             f"bins >= 1 and rounds >= 1 are required ({self})")
        if self.max_duration_s is not None and self.max_duration_s < self.min_duration_s:
            raise ValueError(f"BenchSettings: max_duration_s {self.max_duration_s} is below "
                             f"min_duration_s {self.min_duration_s}")

    def to_dict(self) -> dict:
        return asdict(self)


#: Short runs for tests and CI (the default).
CI = BenchSettings()
#: MLPerf LoadGen's TestSettings defaults (min_duration_ms 10000, min_query_count 100).
LOADGEN = BenchSettings(warmup=10, min_iterations=100, min_duration_s=10.0, max_duration_s=None,
                        compile_iterations=5)
#: MLPerf Inference rules for a single-stream submission (600 s, 1024 queries at least).
MLPERF = BenchSettings(warmup=10, min_iterations=1024, min_duration_s=600.0, max_duration_s=None,
                       compile_iterations=10)


@dataclass
class CompileStats:
    """Compilation times in seconds (the minimum over ``BenchSettings.compile_iterations``):
    ``no_cache_s`` without a cache dir, ``save_s`` the first compilation with a fresh cache dir
    (prepares and saves), ``with_cache_s`` the second one (prepares from the cache);
    ``cache_files``: files the driver wrote to the cache dir (0: no caching support);
    ``samples``: every measured time per kind."""

    no_cache_s: float | None = None
    save_s: float | None = None
    with_cache_s: float | None = None
    cache_files: int = 0
    samples: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class BenchResult:
    """One model's benchmark, JSON-serializable through :meth:`to_dict` (the report's
    ``compile`` and ``latency`` entries plus the ratios).

    ``driver``: {mode: LatencyStats}; ``tflite``: {kernel set: LatencyStats};
    ``ratios``: {"<mode>/<kernels>": driver mean / TFLite mean} (> 1: the driver is slower),
    ``ratios_p50`` the same with medians;
    ``errors``: [{"stage", "message", "traceback"}] of the parts that failed (the rest is
    still measured)."""

    model: str
    device: str
    settings: dict
    compile: CompileStats | None = None
    driver: dict = field(default_factory=dict)
    tflite: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)
    #: BLAS threads of the driver's measurements (1; None: no BLAS control was found).
    driver_blas_threads: int | None = None

    def _ratios(self, stat: str) -> dict:
        """{"<mode>/<kernels>": driver ``stat`` / TFLite ``stat``} (a LatencyStats field in
        ms) for every pair where the driver's figure is known and TFLite's is nonzero."""
        out = {}
        for mode, d in self.driver.items():
            for k, t in self.tflite.items():
                if getattr(d, stat) is not None and getattr(t, stat):
                    out[f"{mode}/{k}"] = getattr(d, stat) / getattr(t, stat)
        return out

    @property
    def ratios(self) -> dict:
        """Driver mean latency / TFLite mean latency per "<mode>/<kernels>"."""
        return self._ratios("mean_ms")

    @property
    def ratios_p50(self) -> dict:
        """As :attr:`ratios` with medians: steadier than means on a loaded machine."""
        return self._ratios("p50_ms")

    def ratio(self, mode: str = "sync", kernels: str = "xnnpack") -> float | None:
        """Driver mean latency in ``mode`` / TFLite ``kernels`` mean latency (None if either
        is missing)."""
        return self.ratios.get(f"{mode}/{kernels}")

    def to_dict(self) -> dict:
        return {"model": self.model, "device": self.device, "settings": self.settings,
                "compile": None if self.compile is None else self.compile.to_dict(),
                "latency": {"driver": {m: s.to_dict() for m, s in self.driver.items()},
                            "tflite": {k: s.to_dict() for k, s in self.tflite.items()}},
                "ratios": self.ratios, "ratios_p50": self.ratios_p50, "driver_blas_threads": self.driver_blas_threads, "errors": self.errors}

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    def table(self) -> str:
        """A plain-text side-by-side table (mean/p50/p90 ms and the ratio to each baseline)."""
        rows = [f"{self.model} on {self.device}"]
        rows.append(f"  {'runner':<18}{'iters':>7}{'mean ms':>10}{'p50 ms':>10}{'p90 ms':>10}"
                    + "".join(f"{'/' + k:>10}" for k in self.tflite))
        for label, s, mode in ([(f"driver {m}", s, m) for m, s in self.driver.items()]
                               + [(f"tflite {k}", s, None) for k, s in self.tflite.items()]):
            if s.mean_ms is None:
                continue
            ratios = "".join(f"{self.ratio(mode, k):>9.2f}x" if mode and self.ratio(mode, k) else f"{'':>10}"
                             for k in self.tflite)
            rows.append(f"  {label:<18}{s.iterations:>7}{s.mean_ms:>10.2f}{s.p50_ms:>10.2f}{s.p90_ms:>10.2f}{ratios}")
        if self.ratios_p50:
            rows.append("  p50 ratios: " + ", ".join(f"{k} {v:.2f}x" for k, v in self.ratios_p50.items()))
        if self.compile is not None and self.compile.no_cache_s is not None:
            c = self.compile
            rows.append(f"  compile: {c.no_cache_s * 1e3:.1f} ms without cache"
                        + (f", {c.save_s * 1e3:.1f} ms saving, {c.with_cache_s * 1e3:.1f} ms from cache "
                           f"({c.cache_files} files)" if c.with_cache_s is not None else ""))
        for e in self.errors:
            rows.append(f"  ERROR {e['stage']}: {e['message']}")
        return "\n".join(rows)


class blas_threads:
    """Context manager limiting numpy's BLAS (OpenBLAS) to ``n`` threads, so the driver's
    reference kernels run on 1 thread like the TFLite baseline (``num_threads=1``); without
    it, OpenBLAS starts one thread per core, and on a loaded machine its spinning threads
    make every matrix product many times slower. Uses threadpoolctl when installed, else
    OpenBLAS's own ``*_set_num_threads`` found among the loaded libraries (Linux).
    ``threads`` after entering: the count set, None when no BLAS control was found."""

    def __init__(self, n: int = 1):
        self.n = n
        self.threads: int | None = None
        self._undo = None

    def __enter__(self):
        try:
            from threadpoolctl import threadpool_limits
            lim = threadpool_limits(limits=self.n, user_api="blas")
            self._undo = lim.restore_original_limits
            self.threads = self.n
            return self
        except ImportError:
            pass
        import ctypes
        try:
            with open("/proc/self/maps") as f:
                libs = sorted({ln.split()[-1] for ln in f if "openblas" in ln.lower() and ".so" in ln})
        except OSError:
            libs = []
        undo = []
        for path in libs:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix in ("scipy_openblas_", "openblas_"):
                for suffix in ("64_", ""):
                    set_ = getattr(lib, f"{prefix}set_num_threads{suffix}", None)
                    get_ = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                    if set_ is not None and get_ is not None:
                        old = int(get_())
                        set_(ctypes.c_int(self.n))
                        undo.append(lambda s=set_, o=old: s(ctypes.c_int(o)))
                        self.threads = self.n
                        break
                else:
                    continue
                break
        self._undo = (lambda: [u() for u in undo]) if undo else None
        return self

    def __exit__(self, *exc):
        if self._undo is not None:
            self._undo()
        return False


def _error(stage: str, e: BaseException) -> dict:
    return {"stage": stage, "message": f"{type(e).__name__}: {e}",
            "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__))}


# ---------------------------------------------------------------------------------------
# nncts side (the importer's API: mlts.execute.prepare_imported / run_imported)


def bench_compilation(imported, device, settings: BenchSettings = CI) -> CompileStats:
    """Time ``prepare_imported(imported, device)`` without a cache, and twice with one fresh
    cache dir (save, then load), ``settings.compile_iterations`` times each. Raises what
    the importer raises (NnapiError of the driver's prepare)."""
    from pathlib import Path

    from .execute import prepare_imported
    samples = {"no_cache_s": [], "save_s": [], "with_cache_s": []}
    files = 0
    with blas_threads(1):
        files = _compile_loop(imported, device, settings, samples, prepare_imported, Path)
    return CompileStats(no_cache_s=min(samples["no_cache_s"]), save_s=min(samples["save_s"]),
                        with_cache_s=min(samples["with_cache_s"]), cache_files=files, samples=samples)


def _compile_loop(imported, device, settings, samples, prepare_imported, Path) -> int:
    files = 0
    for _ in range(settings.compile_iterations):
        t0 = time.perf_counter()
        prepare_imported(imported, device)
        samples["no_cache_s"].append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory(prefix="nncts-cache-") as d:
            t0 = time.perf_counter()
            prepare_imported(imported, device, cache_dir=d)
            samples["save_s"].append(time.perf_counter() - t0)
            files = sum(1 for p in Path(d).rglob("*") if p.is_file())
            t0 = time.perf_counter()
            prepare_imported(imported, device, cache_dir=d)
            samples["with_cache_s"].append(time.perf_counter() - t0)
    return files


def nncts_query(imported, device, inputs, mode: str = "sync", prepared=None):
    """A zero-argument callable running one query of ``imported`` on ``device`` in ``mode``
    (reusing ``prepared`` from ``prepare_imported``; prepared here when None), returning the
    outputs."""
    from .execute import prepare_imported, run_imported
    if mode not in MODES:
        raise ValueError(f"unknown execution mode {mode!r} (one of {', '.join(MODES)})")
    if prepared is None:
        prepared = prepare_imported(imported, device)

    def query():
        return run_imported(imported, device, inputs, mode=mode, prepared=prepared).outputs
    return query


def bench_nncts(imported, device, inputs, settings: BenchSettings = CI, modes=MODES,
                prepared=None, errors: list | None = None) -> dict:
    """{mode: LatencyStats} of the driver for each of ``modes``. A mode that raises is left
    out and its error appended to ``errors`` (raised when ``errors`` is None)."""
    from .execute import prepare_imported
    if prepared is None:
        prepared = prepare_imported(imported, device)
    out = {}
    for mode in modes:
        try:
            q = nncts_query(imported, device, inputs, mode, prepared)
            with blas_threads(1):
                warm, samples, _ = loadgen_loop(q, warmup=settings.warmup, min_iterations=settings.min_iterations,
                                                min_duration_s=settings.min_duration_s,
                                                max_duration_s=settings.max_duration_s)
            out[mode] = LatencyStats.from_samples(samples, warmup=len(warm), bins=settings.bins)
        except Exception as e:
            if errors is None:
                raise
            errors.append(_error(f"benchmark {mode}", e))
    return out


def bench_litert(model, inputs, settings: BenchSettings = CI, kernels=BASELINES,
                 errors: list | None = None, num_threads: int = 1) -> dict:
    """{kernel set: LatencyStats} of ai-edge-litert (subprocess, ``num_threads`` threads) on
    ``model`` (path or bytes). A kernel set that fails (LiteRTError: crash, hang, missing
    package) is left out and reported in ``errors`` (raised when ``errors`` is None)."""
    out = {}
    for k in kernels:
        try:
            r = run_litert(model, inputs, kernels=k, num_threads=num_threads, warmup=settings.warmup,
                           iterations=settings.min_iterations, min_duration_s=settings.min_duration_s,
                           max_duration_s=settings.max_duration_s, timeout_s=settings.timeout_s)
            out[k] = LatencyStats.from_samples(r.latencies_s, warmup=len(r.warmup_s), bins=settings.bins)
        except Exception as e:
            if errors is None:
                raise
            errors.append(_error(f"tflite {k}", e))
    return out


def bench_model(model, device, inputs, settings: BenchSettings = CI, *, modes=MODES, kernels=BASELINES,
                imported=None, compile_times: bool = True, name: str | None = None) -> BenchResult:
    """Benchmark ``model`` (``.tflite`` path or bytes) on ``device`` (a front-end Device)
    and in ai-edge-litert, side by side in this one run: compilation times, the driver's
    latency per mode, TFLite's per kernel set. ``imported``: an already imported model
    (imported here otherwise). Failures of a part are recorded in ``BenchResult.errors``;
    an import failure leaves only the TFLite figures."""
    from pathlib import Path
    label = name or (Path(model).stem if isinstance(model, (str, Path)) else "<bytes>")
    res = BenchResult(model=label, device=getattr(device, "name", str(device)), settings=settings.to_dict())
    with blas_threads(1) as b:
        res.driver_blas_threads = b.threads
    if settings.rounds == 1:
        res.tflite = bench_litert(model, inputs, settings, kernels, res.errors)
    try:
        if imported is None:
            from .tflite_import import import_tflite
            imported = import_tflite(model)
        if compile_times:
            try:
                res.compile = bench_compilation(imported, device, settings)
            except Exception as e:
                res.errors.append(_error("compile", e))
        if settings.rounds == 1:
            res.driver = bench_nncts(imported, device, inputs, settings, modes, errors=res.errors)
    except Exception as e:
        res.errors.append(_error("import", e))
        imported = None
    if settings.rounds > 1:
        res.driver, res.tflite = _interleaved(model, imported, device, inputs, settings, modes, kernels, res.errors)
    return res


def _interleaved(model, imported, device, inputs, settings: BenchSettings, modes, kernels, errors):
    """({mode: LatencyStats}, {kernels: LatencyStats}) measured in ``settings.rounds`` turns
    (see :class:`BenchSettings`); a runner that fails is recorded in ``errors`` and leaves
    the turns."""
    from .execute import prepare_imported
    runners = {}
    if imported is not None:
        try:
            prepared = prepare_imported(imported, device)
            for m in modes:
                runners[("driver", m)] = nncts_query(imported, device, inputs, m, prepared)
        except Exception as e:
            errors.append(_error("benchmark", e))
    sessions = []
    for k in kernels:
        try:
            s = LiteRTSession(model, inputs, kernels=k, timeout_s=settings.timeout_s)
            sessions.append(s)
            runners[("tflite", k)] = s
        except Exception as e:
            errors.append(_error(f"tflite {k}", e))
    n = settings.rounds
    window = dict(min_iterations=math.ceil(settings.min_iterations / n), min_duration_s=settings.min_duration_s / n,
                  max_duration_s=None if settings.max_duration_s is None else settings.max_duration_s / n)
    warm = {key: [] for key in runners}
    samples = {key: [] for key in runners}
    try:
        for r in range(n):
            for key, run in list(runners.items()):
                w = settings.warmup if r == 0 else 0
                try:
                    if key[0] == "driver":
                        with blas_threads(1):
                            ws, xs, _ = loadgen_loop(run, warmup=w, **window)
                    else:
                        ws, xs = run.measure(warmup=w, iterations=window["min_iterations"],
                                             min_duration_s=window["min_duration_s"],
                                             max_duration_s=window["max_duration_s"])
                except Exception as e:
                    errors.append(_error(f"{'benchmark' if key[0] == 'driver' else 'tflite'} {key[1]}", e))
                    del runners[key]
                    samples.pop(key)
                    continue
                warm[key] += ws
                samples[key] += xs
    finally:
        for s in sessions:
            s.close()
    stats = {key: LatencyStats.from_samples(xs, warmup=len(warm[key]), bins=settings.bins)
             for key, xs in samples.items()}
    return ({k[1]: v for k, v in stats.items() if k[0] == "driver"},
            {k[1]: v for k, v in stats.items() if k[0] == "tflite"})


# ---------------------------------------------------------------------------------------
# python -m mlts.bench: the side-by-side measurement (and a profile of the driver)

_PRESETS = {"ci": CI, "loadgen": LOADGEN, "mlperf": MLPERF}


def _attr(x, key, default=None):
    return x.get(key, default) if isinstance(x, dict) else getattr(x, key, default)


def model_inputs(imported, seed: int = 0) -> list:
    """Deterministic inputs for ``imported``'s inputs (shape and dtype from the importer):
    floats uniform in [-1, 1], integers uniform over their type's range (uint8/int8) or
    [0, 10) (others)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in imported.inputs:
        shape = [int(d) for d in _attr(t, "shape")]
        dtype = np.dtype(_attr(t, "dtype"))
        if dtype.kind == "f":
            out.append(rng.uniform(-1, 1, shape).astype(dtype))
        elif dtype in (np.uint8, np.int8):
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, info.max + 1, shape).astype(dtype))
        else:
            out.append(rng.integers(0, 10, shape).astype(dtype))
    return out


def profile_driver(imported, device, inputs, mode: str = "sync", iterations: int = 5, top: int = 25,
                   sort: str = "tottime") -> str:
    """cProfile of ``iterations`` driver queries (after one warm-up): the ``top`` functions
    by ``sort`` ("tottime": own time, "cumulative"), as pstats prints them."""
    import cProfile
    import io
    import pstats
    q = nncts_query(imported, device, inputs, mode)
    prof = cProfile.Profile()
    with blas_threads(1):
        q()
        prof.enable()
        for _ in range(iterations):
            q()
        prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(sort).print_stats(top)
    return buf.getvalue()


def operation_times(imported, inputs, iterations: int = 10, mode: str = "sync") -> dict:
    """Where the sample driver's time goes, per NNAPI operation type: the imported model run
    ``iterations`` times (after one warm-up) on a sample driver whose kernels are wrapped
    by timers (the executor's ``table`` override, as the test drivers plant faults).

    Returns ``{"query_ms": mean wall time of a query, "kernels_ms": mean time inside the
    kernels, "overhead_ms": the rest (front end, HAL, executor, input/output copies),
    "operations": {type: {"count": per query, "ms": per query, "share": of query_ms}}}``,
    operations sorted by time, highest first."""
    import dataclasses

    from runtime import ops
    from runtime.drivers.sample import SampleDevice
    from runtime.executor import execute
    from runtime.nnapi.device import Device
    totals: dict = {}

    def timed(name, kernel):
        def run(ctx):
            t0 = time.perf_counter_ns()
            try:
                return kernel(ctx)
            finally:
                c = totals.setdefault(name, [0, 0])
                c[0] += 1
                c[1] += time.perf_counter_ns() - t0
        return run
    table = {k: dataclasses.replace(d, execute=timed(getattr(k, "name", str(k)), d.execute))
             for k, d in ops.REGISTRY.items()}

    class TimedSample(SampleDevice):
        def run(self, model, request):
            return execute(model, request, table)

    device = Device(TimedSample())
    q = nncts_query(imported, device, inputs, mode)
    with blas_threads(1):
        q()
        totals.clear()
        t0 = time.perf_counter_ns()
        for _ in range(iterations):
            q()
        wall = (time.perf_counter_ns() - t0) / iterations / 1e6
    kernels = sum(v[1] for v in totals.values()) / iterations / 1e6
    rows = sorted(totals.items(), key=lambda kv: -kv[1][1])
    return {"query_ms": wall, "kernels_ms": kernels, "overhead_ms": wall - kernels,
            "operations": {k: {"count": v[0] / iterations, "ms": v[1] / iterations / 1e6,
                               "share": v[1] / iterations / 1e6 / wall} for k, v in rows}}


def format_operation_times(t: dict) -> str:
    """:func:`operation_times` as text lines."""
    lines = [f"  per query: {t['query_ms']:.2f} ms = kernels {t['kernels_ms']:.2f} ms + front end/HAL/"
             f"executor {t['overhead_ms']:.2f} ms ({t['overhead_ms'] / t['query_ms']:.0%})"]
    for k, v in t["operations"].items():
        lines.append(f"    {k:<22}{v['count']:>5.0f} x {v['ms'] / max(v['count'], 1) * 1e3:>8.1f} us"
                     f" = {v['ms']:>7.2f} ms ({v['share']:.0%})")
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m mlts.bench [--driver sample] [--settings ci|loadgen|mlperf]
    [--min-duration S] [--min-iterations N] [--warmup N] [--rounds N] [--modes sync,async,burst]
    [--kernels xnnpack,builtin] [--no-compile] [--profile] [--json FILE] MODEL...``:
    each MODEL (a bundled model's name from mlts.models, or a .tflite path) benchmarked on
    the driver and in ai-edge-litert side by side, printed as a table (the ratio columns
    are driver mean / TFLite mean). ``--profile`` adds the driver's cProfile top functions
    (and, for the sample driver, the time per NNAPI operation type)."""
    import argparse
    import sys
    from pathlib import Path
    p = argparse.ArgumentParser(prog="python -m mlts.bench", description=main.__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--driver", default="sample")
    p.add_argument("--settings", choices=sorted(_PRESETS), default="ci")
    p.add_argument("--min-duration", type=float)
    p.add_argument("--min-iterations", type=int)
    p.add_argument("--warmup", type=int)
    p.add_argument("--rounds", type=int, help="runners take turns in this many windows (default 1)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--kernels", default=",".join(BASELINES))
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--json")
    a = p.parse_args(argv)
    from dataclasses import replace
    s = _PRESETS[a.settings]
    changes = {k: v for k, v in (("min_duration_s", a.min_duration), ("min_iterations", a.min_iterations),
                                 ("warmup", a.warmup), ("rounds", a.rounds)) if v is not None}
    if changes.get("min_duration_s", 0) > (s.max_duration_s or math.inf):
        changes["max_duration_s"] = changes["min_duration_s"]
    try:
        s = replace(s, **changes)
    except ValueError as e:
        p.error(str(e))
    modes = [m for m in a.modes.split(",") if m]
    kernels = [k for k in a.kernels.split(",") if k]
    for m in modes:
        if m not in MODES:
            p.error(f"unknown mode {m!r} (one of {', '.join(MODES)})")

    from runtime.nnapi.device import get_devices

    from .tflite_import import import_tflite
    device = get_devices([a.driver])[0]
    results = []
    for name in a.models:
        spec = None
        path = Path(name)
        if not path.exists():
            try:
                from .models import find_models
                spec = find_models([name])[0]
            except Exception as e:
                print(f"python -m mlts.bench: {name}: not a file nor a bundled model ({e})", file=sys.stderr)
                return 2
            path = spec.path
        imported = import_tflite(path)
        inputs = spec.make_inputs() if spec is not None else model_inputs(imported)
        r = bench_model(path, device, inputs, s, modes=modes, kernels=kernels, imported=imported,
                        compile_times=not a.no_compile, name=spec.name if spec else path.stem)
        print(r.table(), flush=True)
        if a.profile:
            if a.driver == "sample":
                print(format_operation_times(operation_times(imported, inputs, mode=modes[0])), flush=True)
            print(profile_driver(imported, device, inputs, modes[0]), flush=True)
        results.append(r.to_dict())
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
