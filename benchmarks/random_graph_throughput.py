"""Random-graph throughput: 5-operation graphs (AOSP's SMALL size) generated, run on the
sample driver (alone and partitioned across the sample variants) and compared, per second,
against the goal of issue 10 (50 per second) side by side, with the time split between
generation (drafting and the reference executor) and the driver runs; the same for the
single-operation configurations.

Usage: python benchmarks/random_graph_throughput.py [--seeds 10] [--config 'small-*']...
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.graph_configs import all_configs, criteria_for, select  # noqa: E402
from harness.graphs import generate  # noqa: E402
from random_graph.run import run_graph  # noqa: E402
from runtime.nnapi import get_devices  # noqa: E402

GOAL_PER_S = 50.0


def measure(configs, seeds: int, device) -> dict:
    """Graphs per second end to end, and the seconds spent generating and running."""
    gen_s = run_s = 0.0
    counts: dict[str, int] = {}
    n = 0
    for config in configs:
        for seed in range(seeds):
            t = time.perf_counter()
            tm = generate(config, seed, criteria_for(config).name)
            t2 = time.perf_counter()
            outcome = run_graph(tm, device)
            t3 = time.perf_counter()
            gen_s, run_s, n = gen_s + t2 - t, run_s + t3 - t2, n + 1
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
    return {"graphs": n, "per_s": n / (gen_s + run_s), "gen_s": gen_s, "run_s": run_s, "counts": counts}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--config", action="append", default=[])
    args = p.parse_args(argv)
    device = get_devices(["sample"])[0]
    configs = all_configs()
    rows = [("5-operation graphs", select(configs, args.config or ["small-*"]))]
    if not args.config:
        rows.append(("single-operation graphs", select(configs, ["single-*"])))
    print(f"{'what':26s} {'graphs':>7s} {'per s':>8s} {'goal/s':>7s} {'ratio':>6s} {'generate s':>11s} "
          f"{'run s':>7s}  outcomes")
    for what, chosen in rows:
        seeds = args.seeds if what.startswith("5") else max(1, args.seeds // 5)
        m = measure(chosen, seeds, device)
        print(f"{what:26s} {m['graphs']:7d} {m['per_s']:8.1f} {GOAL_PER_S:7.0f} {m['per_s'] / GOAL_PER_S:6.2f} "
              f"{m['gen_s']:11.1f} {m['run_s']:7.1f}  {m['counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
