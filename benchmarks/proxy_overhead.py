"""CTS throughput through the out-of-process proxy (runtime.remote: the driver served by a host
process over gRPC) against the same driver in process, side by side, per execution mode, with
the ratio (goal: under 2x, i.e. the proxy at least half as fast as in process).

Each pass runs every selected corpus model in each mode through the CTS harness
(harness.runner.run_test_model, the path ``pytest cts/`` takes); the best pass of ``--repeat``
counts. Both runs must give the same outcomes (checked, printed when not).

Usage: python benchmarks/proxy_overhead.py [--driver sample] [--versions V1_0 V1_1 V1_2]
                                           [--modes default] [--repeat 3] [--limit N]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.runner import run_test_model  # noqa: E402
from harness.modes import applies, parse_modes  # noqa: E402
from runtime.nnapi import get_devices  # noqa: E402
from runtime.testing.test_model import iter_corpus  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "cts" / "corpus"


def measure(cases, device, repeat: int) -> tuple[float, dict[str, float], dict]:
    """(best tests/second, per-mode seconds of the best pass, outcome per case)."""
    best, best_modes, outcomes = 0.0, {}, {}
    for _ in range(repeat):
        per_mode: dict[str, float] = {}
        start = time.perf_counter()
        for tm, mode in cases:
            t = time.perf_counter()
            outcomes[(tm.test_id, mode.name)] = run_test_model(tm, device, mode).status
            per_mode[mode.name] = per_mode.get(mode.name, 0.0) + time.perf_counter() - t
        rate = len(cases) / (time.perf_counter() - start)
        if rate > best:
            best, best_modes = rate, per_mode
    return best, best_modes, outcomes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--driver", default="sample")
    p.add_argument("--versions", nargs="+", default=["V1_0", "V1_1", "V1_2"])
    p.add_argument("--modes", nargs="+", default=["default"], help="CTS --mode values (default: the CI set)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--limit", type=int, default=None, help="first N models only")
    args = p.parse_args()
    models = list(iter_corpus([CORPUS / v for v in args.versions]))[:args.limit]
    modes = parse_modes(args.modes)
    cases = [(tm, m) for tm in models for m in modes if applies(tm, m)]
    local, remote = get_devices([args.driver, f"process:{args.driver}"])
    print(f"{len(models)} models x {len(modes)} modes = {len(cases)} CTS tests; driver {args.driver}; "
          f"shared memory: {remote.hal.shared}")
    t0 = time.perf_counter()
    in_rate, in_modes, in_out = measure(cases, local, args.repeat)
    out_rate, out_modes, out_out = measure(cases, remote, args.repeat)
    print(f"in process:       {in_rate:8.1f} tests/s")
    print(f"out of process:   {out_rate:8.1f} tests/s")
    print(f"ratio (time out/in): {in_rate / out_rate:6.2f}x   (goal: under 2x)")
    print(f"{'mode':14s} {'in s':>8s} {'out s':>8s} {'ratio':>6s}")
    for name, s in in_modes.items():
        print(f"{name:14s} {s:8.2f} {out_modes[name]:8.2f} {out_modes[name] / s:6.2f}")
    differ = [k for k in in_out if in_out[k] != out_out.get(k)]
    print(f"outcomes identical: {not differ}" + (f" ({len(differ)} differ, e.g. {differ[:3]})" if differ else ""))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
