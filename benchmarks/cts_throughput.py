"""CTS throughput on the vendored corpus: models per second through the front end (the CTS
path: Model -> Compilation -> Execution on the sample driver) and, side by side, through the
HAL path alone (reference executor, no front end), with their ratio, then the slowest
corpus models through the front end (each model's best time over the passes).

Usage: python benchmarks/cts_throughput.py [--versions V1_0 V1_1 V1_2] [--repeat 3] [--slowest 10]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.runner import run_test_model  # noqa: E402
from runtime.nnapi import get_devices  # noqa: E402
from runtime.testing.test_model import iter_corpus  # noqa: E402
from runtime.tools.refcheck import check_model  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "cts" / "corpus"


def rate(models, run, repeat: int) -> tuple[float, dict, dict]:
    """Best models/second over ``repeat`` passes, outcome counts of the last pass, and each
    model's best time in seconds (test id -> s)."""
    best, counts, times = 0.0, {}, {}
    for _ in range(repeat):
        counts = {}
        start = time.perf_counter()
        for tm in models:
            t = time.perf_counter()
            status = run(tm)
            t = time.perf_counter() - t
            times[tm.test_id] = min(times.get(tm.test_id, t), t)
            counts[status] = counts.get(status, 0) + 1
        best = max(best, len(models) / (time.perf_counter() - start))
    return best, counts, times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--versions", nargs="+", default=["V1_0", "V1_1", "V1_2"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--slowest", type=int, default=10, help="list this many slowest models")
    args = p.parse_args()
    t0 = time.perf_counter()
    models = list(iter_corpus([CORPUS / v for v in args.versions]))
    load = time.perf_counter() - t0
    device = get_devices(["sample"])[0]
    front, c1, times = rate(models, lambda tm: run_test_model(tm, device).status, args.repeat)
    hal, c2, _ = rate(models, lambda tm: check_model(tm)[0], args.repeat)
    print(f"corpus {'+'.join(args.versions)}: {len(models)} models, loaded in {load:.2f} s")
    print(f"front end (CTS path):   {front:8.1f} models/s  {c1}")
    print(f"HAL path (executor):    {hal:8.1f} models/s  {c2}")
    print(f"ratio front end / HAL:  {front / hal:8.2f}")
    print(f"slowest {args.slowest} models through the front end (best of {args.repeat}):")
    for test_id, t in sorted(times.items(), key=lambda kv: -kv[1])[:args.slowest]:
        print(f"  {t * 1000:9.1f} ms  {test_id}")


if __name__ == "__main__":
    main()
