"""MLTS latency of every bundled model: the sample driver beside ai-edge-litert's builtin
kernels and XNNPACK, 1 thread each, in one run (``mlts.bench.bench_model`` with
``rounds`` > 1, so the runners take turns and see the same machine load).

Prints one line per model: mean ms of the driver (sync mode), of TFLite builtin and XNNPACK,
and the ratios driver / builtin and driver / XNNPACK (p50 ratios beside them), then the
issue 25 targets. ``--json FILE`` writes the rows.

Usage: python benchmarks/mlts_speed.py [--min-duration 2] [--rounds 4] [--warmup 2]
       [--json FILE] [MODEL ...]   (default: every model of mlts.models.BUNDLED)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: issue 25 targets: model -> (kernel set, largest ratio); every other model: builtin <= 2x.
TARGETS = {"mobilenet_v1_1.0_224": ("xnnpack", 1.5), "face_detection_short_range": ("builtin", 1.2)}


def main(argv=None) -> int:
    """Run the side-by-side benchmark over the chosen models and print the ratio table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*")
    p.add_argument("--min-duration", type=float, default=2.0, help="seconds per runner (default 2)")
    p.add_argument("--min-iterations", type=int, default=10)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--json")
    a = p.parse_args(argv)

    from mlts.bench import BenchSettings, bench_model
    from mlts.models import BUNDLED, find_models
    from mlts.tflite_import import import_tflite
    from runtime.nnapi.device import get_devices

    specs = find_models(a.models) if a.models else BUNDLED
    settings = BenchSettings(warmup=a.warmup, min_iterations=a.min_iterations, min_duration_s=a.min_duration,
                             max_duration_s=max(60.0, a.min_duration), rounds=a.rounds)
    device = get_devices(["sample"])[0]
    rows = []
    print(f"{'model':<36}{'driver ms':>10}{'builtin':>9}{'xnnpack':>9}{'/builtin':>10}{'/xnnpack':>10}"
          f"{'p50/b':>8}{'p50/x':>8}  target", flush=True)
    for spec in specs:
        imported = import_tflite(spec.path)
        r = bench_model(spec.path, device, spec.make_inputs(), settings, modes=("sync",),
                        kernels=("builtin", "xnnpack"), imported=imported, compile_times=False, name=spec.name)
        d, t = r.driver.get("sync"), r.tflite
        kset, limit = TARGETS.get(spec.name, ("builtin", 2.0))
        ratio = r.ratio("sync", kset)
        verdict = "?" if ratio is None else ("ok" if ratio <= limit else "OVER")
        rb, rx = r.ratio("sync", "builtin"), r.ratio("sync", "xnnpack")
        pb, px = r.ratios_p50.get("sync/builtin"), r.ratios_p50.get("sync/xnnpack")

        def f(x, w, fmt):
            return f"{'-':>{w}}" if x is None else f"{x:>{w}{fmt}}"
        print(f"{spec.name:<36}{f(d and d.mean_ms, 10, '.2f')}{f(t.get('builtin') and t['builtin'].mean_ms, 9, '.2f')}"
              f"{f(t.get('xnnpack') and t['xnnpack'].mean_ms, 9, '.2f')}{f(rb, 9, '.2f')}x{f(rx, 9, '.2f')}x"
              f"{f(pb, 7, '.2f')}x{f(px, 7, '.2f')}x  {kset} <= {limit}x {verdict}", flush=True)
        for e in r.errors:
            print(f"    ERROR {e['stage']}: {e['message']}", flush=True)
        rows.append({"model": spec.name, "ratios": r.ratios, "ratios_p50": r.ratios_p50,
                     "driver_ms": d and d.mean_ms, "target": [kset, limit], "verdict": verdict})
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
