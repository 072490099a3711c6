"""What sharing a model's build, validation and compilation across its execution modes saves
(harness.runner, harness.memo): every default mode of each corpus model run through the CTS
path on the sample driver, once with everything made afresh for each mode (the memos
cleared before each test) and once shared, model by model side by side (so a noisy
machine slows both alike); prints ms per test for each and their ratio.

Usage: python benchmarks/cts_mode_sharing.py [--versions V1_0 V1_1] [-k SUBSTRING]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import runner  # noqa: E402
from harness.modes import DEFAULT_MODES, applies  # noqa: E402
from runtime.nnapi import get_devices  # noqa: E402
from runtime.testing.test_model import iter_corpus  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "cts" / "corpus"


def fresh() -> None:
    """Forget what the modes of a model share (as if each mode were the first)."""
    runner.forget_prepared()
    for memo in (runner._VARIANTS, runner._CHANGED, runner._SKIPS):
        memo.clear()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--versions", nargs="+", default=["V1_0", "V1_1"])
    p.add_argument("-k", default="", help="only models whose test id contains this")
    args = p.parse_args()
    models = [tm for tm in iter_corpus([CORPUS / v for v in args.versions]) if args.k in tm.test_id]
    device = get_devices(["sample"])[0]
    afresh = shared = 0.0
    tests = 0
    for tm in models:
        modes = [m for m in DEFAULT_MODES if applies(tm, m)]
        runner.model_budget(tm)  # the float64 truth is kept per model in both runs
        t = time.perf_counter()
        for mode in modes:
            fresh()
            runner.run_test_model(tm, device, mode)
        afresh += time.perf_counter() - t
        fresh()
        t = time.perf_counter()
        for mode in modes:
            runner.run_test_model(tm, device, mode)
        shared += time.perf_counter() - t
        tests += len(modes)
    print(f"{len(models)} models, {tests} tests (default modes), sample driver")
    print(f"made afresh per mode:    {afresh / tests * 1000:7.2f} ms/test")
    print(f"shared across the modes: {shared / tests * 1000:7.2f} ms/test")
    print(f"ratio shared / afresh:   {shared / afresh:7.2f}")


if __name__ == "__main__":
    main()
