"""The stress tests: analogues of Android MLTS's crash tests (``platform/test/mlts/benchmark``,
``com.android.nn.crashtest``), each a function of a :class:`~mlts.stress.core.Ctx` run in
its own process by :mod:`mlts.stress.runner`. Parameters, defaults and AOSP's values are in
:data:`TESTS` (and the table of :mod:`mlts.stress`).

Every test but performance-degradation runs MLTS's driver liveness checker
(:class:`~mlts.stress.core.Liveness`) beside the stress; the tests with client processes
end with a fresh client ("the next run") that compiles with the same cache directory, runs
and checks every model, so a killed client that left the driver or its cache broken is seen.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .core import FAILURE, SUCCESS, Client, Ctx, Result, _error_text, mp_context, watch_clients, worst

#: Inferences per compilation in parallel-inference (MLTS's Processor runs each model for a
#: while after compiling it).
RUNS_PER_COMPILATION = 10


def _run_threads(n: int, body: Callable[[int], None]) -> list[str]:
    """Run ``body(i)`` on ``n`` threads and wait for all; returns "thread i: error" lines."""
    errors: list[str | None] = [None] * n

    def run(i: int) -> None:
        try:
            body(i)
        except Exception as e:  # noqa: BLE001 - the driver's failure is the finding
            errors[i] = _error_text(e)

    threads = [threading.Thread(target=run, args=(i,), name=f"stress-{i}", daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [f"thread {i}: {e}" for i, e in enumerate(errors) if e]


def _checked(w, result) -> None:
    problems = w.check(result)
    if problems:
        raise RuntimeError(f"{w.name}: wrong outputs: {'; '.join(problems)}")


def _result(ctx: Ctx, verdicts, success: str, details: dict) -> Result:
    details["elapsed_s"] = round(ctx.elapsed(), 3)
    decided = worst(list(verdicts))
    if decided:
        return Result(decided[0], decided[1], details)
    return Result(SUCCESS, success, details)


# --- parallel inference -----------------------------------------------------------------------

def parallel_inference(ctx: Ctx) -> Result:
    """``threads`` threads each cycle through the models (compile, then
    :data:`RUNS_PER_COMPILATION` checked inferences) until the duration ends (MLTS
    ``NNParallelInferenceTest`` / ``RunModelsInParallel``)."""
    works = ctx.workloads()
    n = int(ctx.params["threads"])
    live = ctx.liveness(works[0])
    inferences, compilations = [0] * n, [0] * n

    def body(i: int) -> None:
        k = i
        while k == i or not ctx.expired():  # every thread does at least one round
            w = works[k % len(works)]
            k += 1
            prepared = w.compile(ctx.device)
            compilations[i] += 1
            for _ in range(RUNS_PER_COMPILATION):
                _checked(w, w.run(prepared))
                inferences[i] += 1
                if ctx.expired():
                    break

    ctx.progress(f"{n} threads running inference on {len(works)} models")
    errors = _run_threads(n, body)
    ctx.progress("threads done; stopping the liveness checker")
    verdicts = [(FAILURE, f"{len(errors)} of {n} threads failed: {errors[0]}") if errors else None, live.stop()]
    details = {"threads": n, "models": [w.name for w in works], "inferences": sum(inferences),
               "compilations": sum(compilations), "liveness_runs": live.runs, "thread_errors": errors}
    return _result(ctx, verdicts, f"{sum(inferences)} checked inferences and {sum(compilations)} "
                   f"compilations on {n} threads; liveness {live.runs} runs", details)


# --- early client termination -----------------------------------------------------------------

def _next_run(ctx: Ctx, names: list[str], cache_dir) -> tuple[Client, tuple[str, str] | None]:
    """A fresh client that compiles (with ``cache_dir``), runs and checks every model."""
    ctx.progress("next run: a fresh client compiles, runs and checks every model")
    verify = ctx.spawn_client("verify", names, cache_dir=cache_dir)
    watch_clients(ctx, [verify])
    v = verify.verdict()
    return verify, (v[0], f"the next run after the kills failed: {v[1]}") if v else None


def client_early_termination(ctx: Ctx) -> Result:
    """A client process compiles every model on ``clients`` threads (with a compilation
    cache) and is SIGKILLed at a uniform random time in [duration/4, duration/2] after it is
    ready (MLTS ``NNClientEarlyTerminationTest``: 4 threads, 70 s, killed between 1/4 and 1/2
    of it). The client must have been killed by the test (not died or ended on its own), the
    liveness checker must pass throughout, and a fresh client must then compile from the same
    cache directory, run and check every model."""
    works = ctx.workloads()
    names = [w.name for w in works]
    cache = ctx.tmp / "cache"
    live = ctx.liveness(works[0])
    client = ctx.spawn_client("compile", names, threads=int(ctx.params["clients"]), run_s=ctx.duration,
                              cache_dir=cache)
    lo, hi = ctx.duration / 4, ctx.duration / 2
    ctx.progress("client starting")
    watch_clients(ctx, [client], kill_after=lambda c: float(ctx.rng.uniform(lo, hi)))
    verdict = client.verdict()
    if verdict is None and client.killed_at is None:
        verdict = (FAILURE, f"client {client.index} ended ({client.exitcode}) before it was killed: "
                            f"it was expected to be killed")
    verify, after = _next_run(ctx, names, cache)
    details = {"clients": int(ctx.params["clients"]), "models": names, "client": client.summary(),
               "next_run": verify.summary()}
    verdicts = [verdict, after, live.stop()]
    details["liveness_runs"] = live.runs
    return _result(ctx, verdicts, f"client killed after {client.count} compilations at "
                   f"{details['client']['planned_kill_s']} s; liveness {live.runs} runs; next run passed",
                   details)


# --- multiple processes -----------------------------------------------------------------------

def _multi_process(ctx: Ctx, mode: str) -> Result:
    works = ctx.workloads()
    model = [works[0].name]
    p = ctx.params
    processes, threads, rate = int(p["processes"]), int(p["threads"]), float(p["kill_rate"])
    cache = ctx.tmp / "cache" if mode == "compile" else None
    pause = (float(p.get("pause_min", 0.0)), float(p.get("pause_max", 0.0)))
    live = ctx.liveness(works[0])
    plans = {}
    clients = []
    for _ in range(processes):
        plan = float(ctx.rng.uniform(0, ctx.duration)) if ctx.rng.uniform(0, 100) < rate else None
        c = ctx.spawn_client(mode, model, threads=threads, run_s=ctx.duration, cache_dir=cache, pause=pause)
        plans[c.index] = plan
        clients.append(c)
    ctx.progress(f"{processes} clients x {threads} threads starting ({sum(v is not None for v in plans.values())} "
                 f"planned kills)")
    watch_clients(ctx, clients, kill_after=lambda c: plans[c.index])
    verdicts = [c.verdict() for c in clients]
    verify, after = _next_run(ctx, model, cache)
    verdicts += [after, live.stop()]
    unit = "inferences" if mode == "infer" else "compilations"
    total = sum(c.count for c in clients)
    killed = sum(c.killed_at is not None for c in clients)
    details = {"processes": processes, "threads": threads, "kill_rate": rate, "model": model[0],
               unit: total, "killed": killed, "clients": [c.summary() for c in clients],
               "next_run": verify.summary(), "liveness_runs": live.runs}
    return _result(ctx, verdicts, f"{total} {unit} in {processes} processes x {threads} threads, "
                   f"{killed} killed early; liveness {live.runs} runs; next run passed", details)


def multi_process_inference(ctx: Ctx) -> Result:
    """``processes`` client processes of ``threads`` threads run checked inferences on one
    model for the duration; each is SIGKILLed, with probability ``kill_rate`` %, at a uniform
    random time within the duration (MLTS ``NNMultipleProcessInferenceTest`` /
    ``RunModelsInMultipleProcesses``: 6 x 10, 30 min at 0 %, 20 min at 80 %). A client that
    dies otherwise is a CRASH; then liveness and the next run must pass."""
    return _multi_process(ctx, "infer")


def multi_process_model_load(ctx: Ctx) -> Result:
    """As multi-process-inference, but the clients load and compile the model over and over
    (with a shared compilation cache), pausing ``pause_min``-``pause_max`` seconds between
    compilations (MLTS ``NNMultipleProcessModelLoadTest``: 6 x 10; 20 min at 0 % and 50 %,
    10 min at 100 %; pauses of 300-800 ms)."""
    return _multi_process(ctx, "compile")


# --- memory-mapped model loading --------------------------------------------------------------

def memory_mapped_model_load(ctx: Ctx) -> Result:
    """``threads`` threads load each model with its weights memory-mapped from a file (the
    ``.tflite`` file itself, or a weights file for corpus models and graphs) and compile it,
    over and over (MLTS ``NNMemoryMappedModelCompilationTest``: 4 threads, 70 s, compilation
    only, ``memory_map_model``); each thread also runs and checks the first compilation of
    every model, so the driver must read constants from the mapping. The liveness checker
    runs a mapped compilation."""
    works = ctx.workloads()
    n = int(ctx.params["threads"])
    mapdir = ctx.tmp / "mapped"
    mapdir.mkdir(parents=True, exist_ok=True)
    live = ctx.liveness(works[0], mapped=True)
    loads, runs = [0] * n, [0] * n

    def body(i: int) -> None:
        checked, k = set(), i
        while k == i or not ctx.expired():  # every thread loads at least once
            w = works[k % len(works)]
            k += 1
            prepared = w.compile(ctx.device, w.build_mapped(mapdir))
            loads[i] += 1
            if w.name not in checked:
                _checked(w, w.run(prepared))
                runs[i] += 1
                checked.add(w.name)

    ctx.progress(f"{n} threads loading memory-mapped models")
    errors = _run_threads(n, body)
    verdicts = [(FAILURE, f"{len(errors)} of {n} threads failed: {errors[0]}") if errors else None, live.stop()]
    details = {"threads": n, "models": [w.name for w in works], "mapped_loads": sum(loads),
               "checked_runs": sum(runs), "liveness_runs": live.runs, "thread_errors": errors}
    return _result(ctx, verdicts, f"{sum(loads)} memory-mapped loads and compilations, {sum(runs)} checked "
                   f"runs on {n} threads; liveness {live.runs} runs", details)


# --- random graphs ----------------------------------------------------------------------------

def _random_graphs(ctx: Ctx, compile_only: bool) -> Result:
    from harness.graph_configs import all_configs, select
    from harness.graphs import GenerationError
    from .workloads import TestModelWorkload, random_graph_model
    patterns = [s.strip() for s in str(ctx.params["configs"]).split(",") if s.strip()]
    configs = select(all_configs(min(ctx.device.feature_level, 8)), patterns)
    works = ctx.workloads()
    live = ctx.liveness(works[0])
    limit, pause = int(ctx.params["graphs"]), float(ctx.params["pause"])
    stats = {"graphs": 0, "invalid": 0, "unsupported": 0, "compiled": 0, "executed": 0}
    verdict, tried = None, 0
    # at least one graph however soon the duration ends (up to 20 draws to find a usable one)
    while stats["graphs"] < limit and (not ctx.expired() or (stats["graphs"] == 0 and tried < 20)):
        tried += 1
        config = configs[int(ctx.rng.integers(len(configs)))]
        seed = int(ctx.rng.integers(1 << 31))
        name = f"graph:{config.name}:{seed}"
        ctx.progress(f"graph {stats['graphs'] + 1}: {name}")
        try:
            w = TestModelWorkload(name, random_graph_model(config.name, seed))
        except GenerationError:
            stats["invalid"] += 1   # MLTS: no valid model generated is not the driver's fault
            continue
        if w.unsupported(ctx.device):
            stats["unsupported"] += 1
            continue
        stats["graphs"] += 1
        stage = "compilation"
        try:
            prepared = w.compile(ctx.device)
            stats["compiled"] += 1
            if not compile_only:
                stage = "execution"
                w.run(prepared)
                stats["executed"] += 1
        except Exception as e:  # noqa: BLE001
            verdict = (FAILURE, f"{stage} failed on {name} (rerun it with --models {name}): {_error_text(e)}")
            break
        if pause > 0:
            time.sleep(max(0.0, min(pause, ctx.deadline - time.monotonic())))
    verdicts = [verdict, live.stop()]
    stats["liveness_runs"] = live.runs
    stats["configs"] = patterns
    what = "compiled" if compile_only else "compiled and executed"
    return _result(ctx, verdicts, f"{stats['graphs']} random graphs {what} ({stats['unsupported']} unsupported "
                   f"and {stats['invalid']} undrawable skipped); liveness {live.runs} runs", stats)


def random_graph_inference(ctx: Ctx) -> Result:
    """Random graphs (:func:`harness.graphs.generate` on the configurations matching
    ``configs``, random seeds) are drawn, compiled and executed one after another, pausing
    ``pause`` s, until ``graphs`` ran or the duration ends (MLTS ``NNRandomGraphTest`` /
    ``RandomGraphTest``: 600 graphs of 10 operations with dimensions up to 1000, and of 600
    operations up to 10, at most 15 min, 300 ms pauses). A failed compilation or execution is
    a FAILURE naming the graph; graphs the driver does not fully support are skipped (MLTS
    succeeds when it cannot find a supported model). Outputs are not judged here (the
    random-graph suite does that)."""
    return _random_graphs(ctx, compile_only=False)


def random_graph_load(ctx: Ctx) -> Result:
    """As random-graph-inference, compiling only (MLTS ``NNRandomGraphLoadTest``)."""
    return _random_graphs(ctx, compile_only=True)


# --- performance degradation ------------------------------------------------------------------

def _timed_runs(w, prepared, seconds: float, at_least: int = 3) -> list[float]:
    """Wall-clock seconds of each run of ``w`` on ``prepared`` for ``seconds`` (at least
    ``at_least`` runs)."""
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end or len(times) < at_least:
        t = time.perf_counter()
        w.run(prepared)
        times.append(time.perf_counter() - t)
    return times


def _stats(times: list[float]) -> dict:
    a = np.array(times)
    return {"runs": len(times), "mean_s": float(a.mean()), "p50_s": float(np.median(a))}


class _CompilerThreads:
    """MLTS's ``ModelCompiler`` threads: compile ``w`` over and over, ``pause`` s apart,
    while ``gate`` is set."""

    def __init__(self, ctx: Ctx, w, n: int, pause: float, gate: threading.Event):
        self.stop_event, self.count, self.errors = threading.Event(), [0] * n, []

        def body(i: int) -> None:
            try:
                while not self.stop_event.is_set():
                    gate.wait(0.1)
                    if not gate.is_set():
                        continue
                    w.compile(ctx.device, w.build())
                    self.count[i] += 1
                    self.stop_event.wait(pause)
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"compiler thread {i}: {_error_text(e)}")

        self.threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def stop(self) -> tuple[int, list]:
        self.stop_event.set()
        for t in self.threads:
            t.join()
        return sum(self.count), [(FAILURE, e) for e in self.errors]


def _compiler_processes(ctx: Ctx, w, n: int, pause: float, gate) -> list[Client]:
    """``n`` client processes compiling ``w`` over and over while ``gate`` is set; returns
    once all are ready (or ended)."""
    clients = [ctx.spawn_client("compile", [w.name], threads=1, run_s=1e9, pause=(pause, pause), gate=gate)
               for _ in range(n)]
    for c in clients:
        while c.ready_at is None and c.process.is_alive():
            if c.conn.poll(0.05):
                try:
                    c.handle(c.conn.recv())
                except (EOFError, OSError):
                    break
    return clients


def _stop_compiler_processes(ctx: Ctx, clients: list[Client]) -> tuple[int, list]:
    for c in clients:
        if c.process.is_alive():
            c.kill_decided, c.kill_at = True, time.monotonic()
    watch_clients(ctx, clients)
    return sum(c.count for c in clients), [c.verdict() for c in clients]


def performance_degradation(ctx: Ctx) -> Result:
    """Inference latency of the first model alone, then while ``compilers`` competitors
    compile a model over and over (``compile_pause`` s apart); the degradation
    ``(loaded / alone - 1) x 100 %`` must not exceed ``max_degradation`` (MLTS
    ``PerformanceDegradationTest``: 3 s warm-up, 10 s runs, 5 compiler threads, 20 ms
    pauses, 500 ms between the two measurements, mean latency, 100 %; every model in turn as
    the compiled one).

    The duration is shared by the ``compile_models`` first models (0: all). For each, the
    competitors start paused; then ``rounds`` times (AOSP: 1) a window alone and a window
    while they compile (``interval`` s after each switch before timing; 3/13 of the first
    window is warm-up), so a load that drifts on a shared machine weighs on both sides.
    ``statistic``: ``mean`` (AOSP) or ``median`` (steadier). ``compilers``: 0 (default) is
    one per spare CPU (CPUs - 1, at most AOSP's 5): MLTS runs on phones with eight cores and
    an accelerator, and a pure-CPU driver on a small machine would otherwise measure CPU
    scarcity, not the driver (``--aosp``: 5). ``competitor``: ``process``
    (default) compiles in client processes; ``thread``, as AOSP, in threads of the test
    process, which in CPython also measures the interpreter lock (a pure-Python driver's
    compilation holds it), not only the driver."""
    works = ctx.workloads()
    inference = works[0]
    p = ctx.params
    k = int(p["compile_models"])
    compiled_models = works if k <= 0 else works[:k]
    rounds = max(1, int(p["rounds"]))
    window = ctx.duration / len(compiled_models) / (2 * rounds)
    settle = min(float(p["interval"]), window * 0.2)
    n, pause, limit = int(p["compilers"]), float(p["compile_pause"]), float(p["max_degradation"])
    if n <= 0:   # one competitor per spare CPU, at most AOSP's 5
        n = max(1, min(5, (os.cpu_count() or 2) - 1))
    stat = "p50_s" if p["statistic"] == "median" else "mean_s"
    threads = p["competitor"] == "thread"
    prepared = inference.compile(ctx.device)
    _checked(inference, inference.run(prepared))
    rows, verdicts = [], []
    for cm in compiled_models:
        ctx.progress(f"starting {n} competitors to compile {cm.name} (paused)")
        gate = threading.Event() if threads else ctx_gate()
        competitors = _CompilerThreads(ctx, cm, n, pause, gate) if threads else _compiler_processes(ctx, cm, n, pause,
                                                                                                     gate)
        alone, loaded = [], []
        try:
            for r in range(rounds):
                ctx.progress(f"round {r + 1}/{rounds}: latency of {inference.name} alone")
                gate.clear()
                if r == 0:
                    _timed_runs(inference, prepared, window * 3 / 13, at_least=1)   # warm-up
                    alone += _timed_runs(inference, prepared, window * 10 / 13)
                else:
                    time.sleep(settle)
                    alone += _timed_runs(inference, prepared, window - settle)
                ctx.progress(f"round {r + 1}/{rounds}: latency of {inference.name} while {cm.name} compiles")
                gate.set()
                time.sleep(settle)
                loaded += _timed_runs(inference, prepared, window - settle)
        finally:
            gate.set()
            compilations, problems = competitors.stop() if threads else _stop_compiler_processes(ctx, competitors)
        verdicts += problems
        a, b = _stats(alone), _stats(loaded)
        degradation = (b[stat] / a[stat] - 1.0) * 100.0
        rows.append({"inference_model": inference.name, "compiled_model": cm.name, "alone": a, "loaded": b,
                     "competing_compilations": compilations, "degradation_pct": round(degradation, 1)})
        if degradation > limit:
            verdicts.append((FAILURE, f"performance degradation of {inference.name} while {cm.name} compiles "
                                      f"on {n} {p['competitor']} competitors is {degradation:.0f} % "
                                      f"({p['statistic']} {a[stat] * 1e3:.2f} -> {b[stat] * 1e3:.2f} ms); "
                                      f"max acceptable is {limit:.0f} %"))
    worst_row = max(rows, key=lambda r: r["degradation_pct"])
    details = {"compilers": n, "competitor": p["competitor"], "statistic": p["statistic"], "rounds": rounds,
               "max_degradation_pct": limit, "measurements": rows}
    return _result(ctx, verdicts, f"worst degradation {worst_row['degradation_pct']:.0f} % (limit {limit:.0f} %) "
                   f"with {n} competing {p['competitor']} compilers", details)


def ctx_gate():
    """An Event shared with client processes (:func:`~mlts.stress.core.mp_context`)."""
    return mp_context().Event()


# --- the registry -----------------------------------------------------------------------------

@dataclass(frozen=True)
class StressTest:
    """A stress test: ``body(ctx) -> Result``; ``params``: its parameters and their default
    values (besides ``duration``, ``models``, ``seed``); ``aosp``: AOSP MLTS's values
    (``duration`` in seconds), used by ``--aosp``; ``mirrors``: the MLTS test."""

    name: str
    body: Callable[[Ctx], Result]
    mirrors: str
    params: dict = field(default_factory=dict)
    aosp: dict = field(default_factory=dict)

    @property
    def summary(self) -> str:
        return " ".join((self.body.__doc__ or "").strip().split("\n\n")[0].split())


_GRAPH = {"graphs": 600, "configs": "small-*,large-*", "pause": 0.3}

#: Every stress test by name, in run order.
TESTS: dict[str, StressTest] = {t.name: t for t in [
    StressTest("parallel-inference", parallel_inference, "NNParallelInferenceTest (parallel-inference-stress)",
               {"threads": 8}, {"threads": 8, "duration": 1800.0}),
    StressTest("client-early-termination", client_early_termination,
               "NNClientEarlyTerminationTest (client-early-termination-stress)",
               {"clients": 4}, {"clients": 4, "duration": 70.0}),
    StressTest("multi-process-inference", multi_process_inference,
               "NNMultipleProcessInferenceTest (multi-process-inference-stress)",
               {"processes": 6, "threads": 10, "kill_rate": 80.0},
               {"processes": 6, "threads": 10, "kill_rate": 80.0, "duration": 1200.0}),
    StressTest("multi-process-model-load", multi_process_model_load,
               "NNMultipleProcessModelLoadTest (multi-process-model-load-stress)",
               {"processes": 6, "threads": 10, "kill_rate": 50.0, "pause_min": 0.3, "pause_max": 0.8},
               {"processes": 6, "threads": 10, "kill_rate": 50.0, "pause_min": 0.3, "pause_max": 0.8,
                "duration": 1200.0}),
    StressTest("memory-mapped-model-load", memory_mapped_model_load,
               "NNMemoryMappedModelCompilationTest (memory-mapped-model-load-stress)",
               {"threads": 4}, {"threads": 4, "duration": 70.0}),
    StressTest("random-graph-inference", random_graph_inference, "NNRandomGraphTest / RandomGraphTest",
               dict(_GRAPH), {**_GRAPH, "duration": 900.0}),
    StressTest("random-graph-load", random_graph_load, "NNRandomGraphLoadTest (compilation only)",
               dict(_GRAPH), {**_GRAPH, "duration": 900.0}),
    StressTest("performance-degradation", performance_degradation, "PerformanceDegradationTest",
               {"compilers": 0, "compile_pause": 0.02, "interval": 0.5, "max_degradation": 100.0,
                "compile_models": 1, "competitor": "process", "statistic": "mean", "rounds": 1},
               {"compilers": 5, "compile_pause": 0.02, "interval": 0.5, "max_degradation": 100.0,
                "compile_models": 0, "competitor": "process", "statistic": "mean", "rounds": 1,
                "duration": 26.5}),
]}
