"""LoadGen-style latency measurement shared by the benchmark (:mod:`mlts.bench`, the
driver's side) and the ai-edge-litert runner (:mod:`mlts.litert`, TFLite's side, also in
its subprocess, which is why this module needs nothing but numpy).

:func:`loadgen_loop` is MLPerf LoadGen's single-stream scenario (``mlperf::TestSettings``):
``warmup`` queries run and discarded, then queries one after the other until BOTH
``min_iterations`` and ``min_duration_s`` are reached, ``max_duration_s`` (LoadGen's
``max_duration_ms``) stopping a slow model once ``min_iterations`` are done. Latencies are
wall-clock (``time.perf_counter_ns``).

:class:`LatencyStats`: mean, standard deviation (population, ddof=0), min, max and the
p50/p90/p99 percentiles by nearest rank (LoadGen: the sample at sorted position
``ceil(p * n) - 1``), plus an equal-width histogram between min and max, in milliseconds.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np


def loadgen_loop(query, *, warmup: int = 0, min_iterations: int = 0, min_duration_s: float = 0.0,
                 max_duration_s: float | None = None):
    """Run ``query()`` ``warmup`` times, then until ``min_iterations`` queries AND
    ``min_duration_s`` seconds are done (no timed query when both are 0), stopping once
    ``max_duration_s`` has passed and ``min_iterations`` are done.

    Returns ``(warmup_s, samples_s, last_result)``: the warm-up queries' times, the timed
    queries' times (seconds, lists of floats) and the last query's return value (None when no
    query ran). Exceptions of ``query`` propagate."""
    result = None
    warm = []
    for _ in range(warmup):
        t0 = time.perf_counter_ns()
        result = query()
        warm.append((time.perf_counter_ns() - t0) * 1e-9)
    samples: list[float] = []
    if min_iterations <= 0 and min_duration_s <= 0:
        return warm, samples, result
    start = time.perf_counter_ns()
    min_ns = int(min_duration_s * 1e9)
    max_ns = None if max_duration_s is None else int(max_duration_s * 1e9)
    while True:
        t0 = time.perf_counter_ns()
        result = query()
        t1 = time.perf_counter_ns()
        samples.append((t1 - t0) * 1e-9)
        elapsed = t1 - start
        if len(samples) >= min_iterations and (elapsed >= min_ns or (max_ns is not None and elapsed >= max_ns)):
            break
    return warm, samples, result


@dataclass
class LatencyStats:
    """Statistics of latency samples, in milliseconds (JSON: the report's STATS dict).

    ``iterations``: timed queries; ``warmup``: discarded queries; ``duration_s``: sum of the
    timed queries' latencies (seconds); ``histogram``: ``{"edges_ms": [bins + 1],
    "counts": [bins]}``. Every figure is None for zero samples."""

    iterations: int
    warmup: int
    duration_s: float
    mean_ms: float | None
    std_ms: float | None
    min_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    histogram: dict = field(default_factory=lambda: {"edges_ms": [], "counts": []})

    @classmethod
    def from_samples(cls, samples_s, warmup: int = 0, bins: int = 20) -> "LatencyStats":
        """Stats of ``samples_s`` (seconds; any sequence of numbers). Percentiles by nearest
        rank: the sample at sorted position ``ceil(p * n) - 1`` (LoadGen)."""
        ms = np.sort(np.asarray(samples_s, dtype=np.float64).reshape(-1)) * 1e3
        n = int(ms.size)
        if n == 0:
            return cls(0, warmup, 0.0, None, None, None, None, None, None, None)

        def pct(p: float) -> float:
            return float(ms[max(0, math.ceil(p * n) - 1)])

        counts, edges = np.histogram(ms, bins=bins)
        return cls(iterations=n, warmup=warmup, duration_s=float(ms.sum() / 1e3),
                   mean_ms=float(ms.mean()), std_ms=float(ms.std()), min_ms=float(ms[0]),
                   p50_ms=pct(0.50), p90_ms=pct(0.90), p99_ms=pct(0.99), max_ms=float(ms[-1]),
                   histogram={"edges_ms": [float(e) for e in edges], "counts": [int(c) for c in counts]})

    def to_dict(self) -> dict:
        return asdict(self)
