"""Fuzz throughput: the full target and the validation target of ``python -m fuzz`` on the
same inputs, side by side, in executions per second against the goal of issue 25 (the full
target at 1,000 exec/s).

Each target runs in its own child process, set up as the fuzzing child sets it up
(:func:`fuzz.__main__.instrumented_target`: the same atheris instrumentation, driver,
finding recorder and ``gc.freeze``), and calls the target on a fixed list of inputs: a
stride through the seed corpus (``python -m fuzz --make-seeds``: CTS models and generated
inputs at every hostility level) and, after each seed, one libFuzzer-like mutation of it
(bytes flipped, inserted, erased or the input cut; fixed random seed). The two children
take turns on the same chunks of that list (``--chunk`` inputs each, the list repeated
as needed) so that both see the same inputs and the same machine load, until the full
target has run ``--seconds``; exec/s is inputs over the time the target took for them
(the validation target needs less time for the same inputs). ``--libfuzzer`` also runs the real command
(``python -m fuzz --target T -max_total_time=S``) on the same seeds and prints libFuzzer's
own ``stat::average_exec_per_sec``. ``--profile`` prints the top cProfile lines of each
target (instrumented, over the same inputs). ``--compare DIR`` also runs both targets of
another checkout (DIR: its root, e.g. an unchanged copy) in the same turns, so that a
change is measured against its baseline on the same inputs under the same load.

Usage: python benchmarks/fuzz_throughput.py [--seconds 30] [--chunk 100] [--driver sample]
       [--stride 8] [--libfuzzer] [--profile 30] [--compare DIR]
"""
from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_PER_S = 1000.0
TARGETS = ("full", "validation")


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One libFuzzer-like mutation of ``data`` (header byte kept, so the input stays in its
    mode): a few bytes flipped, a run inserted or erased, or the input cut short."""
    b = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0 or len(b) < 3:
        for _ in range(rng.randint(1, 4)):
            if len(b) > 1:
                b[rng.randrange(1, len(b))] ^= 1 << rng.randrange(8)
    elif kind == 1:
        at = rng.randrange(1, len(b))
        b[at:at] = rng.randbytes(rng.randint(1, 8))
    elif kind == 2:
        at = rng.randrange(1, len(b) - 1)
        del b[at:at + rng.randint(1, 8)]
    else:
        del b[rng.randrange(1, len(b)):]
    return bytes(b)


def inputs(seeds: Path, stride: int) -> list[bytes]:
    """Every ``stride``-th seed of ``seeds`` (sorted names), each followed by a mutation."""
    rng = random.Random(25)
    out = []
    for p in sorted(seeds.iterdir())[::stride]:
        data = p.read_bytes()
        out += [data, mutate(data, rng)]
    return out


def child(target: str, driver: str, seeds: Path, stride: int, findings: Path, profile: int) -> int:
    """A child: set the target up as the fuzzing child does, then serve ``run START COUNT``
    lines on stdin (inputs START.. of the list, wrapping around) with ``COUNT SECONDS``
    lines on stdout."""
    from fuzz.__main__ import instrumented_target
    args = argparse.Namespace(driver=driver, findings=str(findings), max_findings=200,
                              paths="hal,frontend", target=target)
    fuzz_target = instrumented_target(args)
    data = inputs(seeds, stride)
    for d in data[:50]:  # warm: first calls fill caches and lazy imports
        fuzz_target(d)
    if profile:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for d in data:
            fuzz_target(d)
        pr.disable()
        print(f"=== {target} target: {len(data)} inputs, cProfile", file=sys.stderr)
        stats = pstats.Stats(pr, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats(profile)
        stats.sort_stats("tottime").print_stats(profile)
    print("ready", flush=True)
    for line in sys.stdin:
        _, first, count = line.split()
        first, count = int(first), int(count)
        start = time.perf_counter()
        for k in range(first, first + count):
            fuzz_target(data[k % len(data)])
        print(count, time.perf_counter() - start, flush=True)
    return 0


def side_by_side(args, seeds: Path, work: Path) -> dict[str, float]:
    """Executions per second of each target on the same chunks of inputs, taking turns
    (who goes first alternates) until the full target has run ``args.seconds``. With
    ``args.compare`` (another checkout's root), its two targets take the same turns, under
    the keys ``"baseline full"`` and ``"baseline validation"``."""
    children = {t: Path(__file__).resolve() for t in TARGETS}
    if args.compare:
        other = Path(args.compare).resolve() / "benchmarks" / "fuzz_throughput.py"
        if not other.is_file():
            raise SystemExit(f"--compare: {other} does not exist")
        children.update({f"baseline {t}": other for t in TARGETS})
    procs = {}
    for name, script in children.items():
        cmd = [sys.executable, str(script), "--child", name.split()[-1], "--driver", args.driver,
               "--seeds-dir", str(seeds), "--stride", str(args.stride),
               "--findings", str(work / f"findings-{name.replace(' ', '-')}"), "--profile", str(args.profile)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        procs[name] = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                       cwd=script.parents[1], stderr=None if args.profile else subprocess.DEVNULL)
    for name, p in procs.items():
        if p.stdout.readline().strip() != "ready":
            raise SystemExit(f"the {name} child did not start")
    totals = {name: [0, 0.0] for name in procs}
    order, first = list(procs), 0
    while totals["full"][1] < args.seconds:
        for name in order:
            procs[name].stdin.write(f"run {first} {args.chunk}\n")
            procs[name].stdin.flush()
            n, s = procs[name].stdout.readline().split()
            totals[name][0] += int(n)
            totals[name][1] += float(s)
        order.reverse()
        first += args.chunk
    for p in procs.values():
        p.stdin.close()
        p.wait()
    return {name: n / s for name, (n, s) in totals.items()}


def libfuzzer(args, seeds: Path, work: Path) -> dict[str, float]:
    """libFuzzer's own average exec/s of ``python -m fuzz`` for each target (same seeds, same
    ``-seed``; the first ``--seconds`` of a run, seed corpus included)."""
    sample = work / "seed-sample"
    sample.mkdir()
    for p in sorted(seeds.iterdir())[::args.stride]:
        (sample / p.name).write_bytes(p.read_bytes())
    out = {}
    for t in TARGETS:
        cmd = [sys.executable, "-m", "fuzz", "--driver", args.driver, "--target", t, "--findings",
               str(work / f"lf-{t}"), "--seeds", str(sample), f"-max_total_time={int(args.seconds)}", "-seed=1"]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        m = re.search(r"stat::average_exec_per_sec:\s*(\d+)", proc.stderr)
        out[t] = float(m.group(1)) if m else float("nan")
    return out


def report(what: str, rates: dict[str, float]) -> None:
    """Print both targets' exec/s and their ratios; with ``--compare`` rates (keys
    ``"baseline ..."``), a line for the baseline and this checkout's speed-up over it."""
    full, val = rates["full"], rates["validation"]
    print(f"{what:34s} full {full:8.0f}/s  validation {val:8.0f}/s  full/validation {full / val:5.2f}  "
          f"full/goal {full / GOAL_PER_S:5.2f} (goal {GOAL_PER_S:.0f}/s)")
    if "baseline full" in rates:
        bf, bv = rates["baseline full"], rates["baseline validation"]
        print(f"{'  baseline (--compare), same turns':34s} full {bf:8.0f}/s  validation {bv:8.0f}/s  "
              f"full/validation {bf / bv:5.2f}  full/goal {bf / GOAL_PER_S:5.2f}")
        print(f"{'  this checkout / baseline':34s} full {full / bf:8.2f}x  validation {val / bv:8.2f}x")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=30.0, help="seconds of the full target (default 30)")
    p.add_argument("--chunk", type=int, default=100, help="inputs per turn (default 100)")
    p.add_argument("--driver", default="sample")
    p.add_argument("--stride", type=int, default=8, help="every n-th seed (default 8)")
    p.add_argument("--libfuzzer", action="store_true", help="also run python -m fuzz for --seconds per target")
    p.add_argument("--profile", type=int, default=0, metavar="LINES", help="print cProfile's top LINES per target")
    p.add_argument("--compare", metavar="DIR", help="also run both targets of the checkout at DIR "
                   "(e.g. an unchanged copy) in the same turns and print the speed-up")
    p.add_argument("--child", choices=TARGETS, help=argparse.SUPPRESS)
    p.add_argument("--seeds-dir", help=argparse.SUPPRESS)
    p.add_argument("--findings", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.child, args.driver, Path(args.seeds_dir), args.stride, Path(args.findings), args.profile)
    from fuzz.__main__ import make_seeds
    with tempfile.TemporaryDirectory(prefix="fuzz-throughput-") as tmp:
        work = Path(tmp)
        seeds = work / "seeds"
        n = make_seeds(seeds)
        print(f"{n} seeds, every {args.stride}th with one mutation each; {args.seconds:g} s of the full target, "
              f"same inputs for both in turns of {args.chunk}, driver {args.driver}")
        report("same inputs, instrumented targets", side_by_side(args, seeds, work))
        if args.libfuzzer:
            report("python -m fuzz (libFuzzer stats)", libfuzzer(args, seeds, work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
