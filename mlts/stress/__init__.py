"""MLTS-style stress tests: drivers under parallel, multi-process and killed clients,
memory-mapped and random models, and competing compilations; each test isolated in its own
process with a watchdog, classified SUCCESS / FAILURE / HANG / CRASH.

``python -m mlts.stress --driver sample --duration 5 --report stress.jsonl`` (or
:func:`main`); :func:`run_tests` / :func:`plan` from Python. Analogues of Android MLTS's crash
tests (``platform/test/mlts/benchmark``: ``com.android.nn.crashtest`` and
``NNParallel*/NNMultipleProcess*/NNMemoryMapped*/NNRandomGraph*Test``); AOSP's values are
used with ``--aosp`` (durations in minutes; CI passes seconds):

==========================  ======================================  =========================================
test                        what (defaults)                         AOSP MLTS values (``--aosp``)
==========================  ======================================  =========================================
parallel-inference          8 threads cycle through the models:     8 threads 30 min (also 12 threads 20 min)
                            compile, 10 checked inferences
client-early-termination    a client compiling the models on 4      4 threads, 70 s, killed in [1/4, 1/2]
                            threads (cached) is SIGKILLed at a
                            random time in [D/4, D/2]
multi-process-inference     6 processes x 10 threads infer on one   6 x 10: 30 min at 0 %, 20 min at 80 %
                            model, each killed with p = 80 % at a   (``--aosp``: 20 min, 80 %)
                            random time
multi-process-model-load    same, loading + compiling (cached),     6 x 10: 20 min at 0 % and 50 %,
                            p = 50 %, 0.3-0.8 s pauses              10 min at 100 % (``--aosp``: 20 min, 50 %)
memory-mapped-model-load    4 threads load models with weights      4 threads, 70 s, compilation only
                            mmapped from the file, and compile
random-graph-inference      random graphs (``small-*``: 5 ops,      600 graphs of 10 ops / dims <= 1000 and of
                            dims <= 1000; ``large-*``: 40 ops,      600 ops / dims <= 10; at most 15 min;
                            dims <= 10) compiled and executed       300 ms pauses
random-graph-load           the same, compiled only                 same
performance-degradation     mean inference latency alone, then      3 s warm-up, 10 s runs, 5 compiler threads,
                            while competitor processes compile (20  20 ms pauses, 500 ms apart, max 100 %,
                            ms apart; one per spare CPU, at most    every model compiled in turn
                            5); degradation <= 100 %; ``rounds``
                            alternations (default 1)
==========================  ======================================  =========================================

Every test but performance-degradation runs MLTS's driver liveness checker (one model run
and checked over and over beside the stress); the tests that kill clients end with "the
next run": a fresh client that compiles from the same cache directory, runs and checks.

Durations: ``--duration D`` (seconds, default :data:`DEFAULT_DURATION_S`) is every test's
nominal run time; the watchdog declares a HANG at ``D + grace`` (``--grace``, default
:data:`DEFAULT_GRACE_S`, AOSP's 20 s ``SHUTDOWN_TIMEOUT``; it must also cover starting the
client processes, about a second each wave). Models: ``--models`` (see
:mod:`mlts.stress.workloads`; default: the bundled MLTS models through the TFLite importer,
or small CTS corpus models and a random graph when the importer is unavailable). Test
drivers that prove the classification: :mod:`mlts.stress_drivers` (``crashing`` -> CRASH,
``hanging`` -> HANG on every test).
"""
from __future__ import annotations

import argparse
import fnmatch
import os

from .core import CRASH, FAILURE, HANG, OUTCOMES, SUCCESS
from .runner import run_one, run_tests
from .tests import TESTS, StressTest

__all__ = ["TESTS", "StressTest", "SUCCESS", "FAILURE", "HANG", "CRASH", "OUTCOMES", "DEFAULT_DURATION_S",
           "DEFAULT_GRACE_S", "params_for", "select_tests", "plan", "run_one", "run_tests", "main"]

#: Default nominal duration of each test (seconds).
DEFAULT_DURATION_S = 10.0
#: Default watchdog grace beyond the duration (seconds): AOSP's 20 s SHUTDOWN_TIMEOUT.
DEFAULT_GRACE_S = 20.0


class UsageError(ValueError):
    """Bad arguments (the CLI prints the message on one line and exits 2)."""


def select_tests(patterns: list[str] | None) -> list[str]:
    """Test names matching any of ``patterns`` (names or shell globs), in run order; all when
    none. Raises UsageError naming a pattern that matches none."""
    if not patterns:
        return list(TESTS)
    chosen = set()
    for p in patterns:
        names = fnmatch.filter(TESTS, p)
        if not names:
            raise UsageError(f"no stress test matches {p!r} (tests: {', '.join(TESTS)})")
        chosen.update(names)
    return [t for t in TESTS if t in chosen]


def _coerce(test: str, key: str, value, default):
    try:
        if isinstance(default, bool):
            return str(value).lower() in ("1", "true", "yes")
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{test}: parameter {key}={value!r} is not a {type(default).__name__}") from None
    return str(value)


def params_for(test: str, duration: float | None = None, models: list[str] | None = None,
                seed: int | None = None, aosp: bool = False, overrides: dict | None = None) -> dict:
    """The parameters of ``test``: its defaults (AOSP's with ``aosp``), then ``duration``
    (seconds), ``models`` (spec strings; default :func:`~mlts.stress.workloads.default_models`),
    ``seed`` (default: drawn at random and recorded) and ``overrides`` (name -> value; only
    names the test has, the others are ignored so one set of overrides serves every test).
    Raises UsageError for a bad value."""
    from .workloads import default_models
    t = TESTS[test]
    params = dict(t.aosp if aosp else t.params)
    params.setdefault("duration", DEFAULT_DURATION_S)
    params["models"] = list(models) if models else default_models()
    if aosp and test == "performance-degradation":  # AOSP: 26.5 s per compiled model, every model
        params["duration"] = t.aosp["duration"] * len(params["models"])
    if duration is not None:
        params["duration"] = float(duration)
    for key, value in (overrides or {}).items():
        if key in t.params:
            params[key] = _coerce(test, key, value, t.params[key])
    params["seed"] = int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little")
    if params["duration"] <= 0:
        raise UsageError(f"{test}: duration must be > 0 seconds, not {params['duration']}")
    if test == "performance-degradation" and params["competitor"] not in ("process", "thread"):
        raise UsageError(f"{test}: competitor must be 'process' or 'thread', not {params['competitor']!r}")
    if test == "performance-degradation" and params["statistic"] not in ("mean", "median"):
        raise UsageError(f"{test}: statistic must be 'mean' or 'median', not {params['statistic']!r}")
    return params


def plan(tests: list[str] | None = None, drivers: list[str] = ("sample",), **kwargs) -> list[tuple[str, str, dict]]:
    """[(test, driver, params)] for every selected test on every driver (driver-major);
    ``kwargs`` go to :func:`params_for`."""
    names = select_tests(tests)
    return [(t, d, params_for(t, **kwargs)) for d in drivers for t in names]


def _check_driver(spec: str) -> None:
    """Resolve a driver spec without instantiating it (UsageError when unknown)."""
    import importlib
    from importlib.metadata import entry_points
    from runtime.drivers import BUNDLED, ENTRY_POINT_GROUP, available_drivers
    target = BUNDLED.get(spec, spec)
    if ":" in target:
        module, _, attr = target.partition(":")
        try:
            getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise UsageError(f"cannot load driver {spec!r}: {e}") from None
    elif not any(ep.name == spec for ep in entry_points(group=ENTRY_POINT_GROUP)):
        raise UsageError(f"no driver named {spec!r}; available: {', '.join(available_drivers())} "
                         f"(or give module:factory)")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


def build_parser(prog: str = "python -m mlts.stress") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="MLTS-style crash/hang stress tests of an NNAPI driver, each in its "
                                       "own process with a watchdog (SUCCESS / FAILURE / HANG / CRASH).")
    p.add_argument("--driver", action="append", help="driver under test: bundled name, entry point or "
                   "module:factory (repeatable; default sample)")
    p.add_argument("--tests", action="append", help="comma-separated test names or globs (default: all; "
                   "see --list)")
    p.add_argument("--duration", type=float, help=f"seconds each test runs (default {DEFAULT_DURATION_S:g}; "
                   "--aosp: AOSP's minutes)")
    p.add_argument("--grace", type=float, default=DEFAULT_GRACE_S,
                   help=f"seconds past the duration before a test is a HANG (default {DEFAULT_GRACE_S:g})")
    p.add_argument("--models", action="append", help="comma-separated model specs: corpus:<version>/<spec>, "
                   "graph:<config>:<seed>, a .tflite path or a bundled model name")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", default=[],
                   help="a test parameter, e.g. threads=4, kill_rate=100 (repeatable; see --list)")
    p.add_argument("--aosp", action="store_true", help="AOSP MLTS's durations and counts (hours in all)")
    p.add_argument("--seed", type=int, help="seed of the random choices (default: random, recorded)")
    p.add_argument("--report", help="JSON-lines file of outcomes, one record per test, written as they end")
    p.add_argument("--append", action="store_true", help="append to --report instead of starting it afresh")
    p.add_argument("--list", action="store_true", help="list the tests and their parameters, then exit")
    p.add_argument("--jobs", type=int, default=1, help="tests run at a time, each in its own process "
                   "(performance-degradation always alone; default 1)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    return p


def list_tests() -> str:
    lines = []
    for t in TESTS.values():
        params = ", ".join(f"{k}={v}" for k, v in t.params.items())
        aosp = ", ".join(f"{k}={v}" for k, v in t.aosp.items())
        lines += [f"{t.name}: {t.summary}", f"    parameters: {params or '-'}", f"    AOSP ({t.mirrors}): {aosp}"]
    return "\n".join(lines)


def parse(argv=None, prog: str = "python -m mlts.stress"):
    """(parser, args, plan) from the command line; exits 2 (one line) on bad arguments."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.list:
        return parser, args, []
    try:
        if args.duration is not None and args.duration <= 0:
            raise UsageError(f"--duration must be > 0 seconds, not {args.duration:g}")
        if args.jobs < 1:
            raise UsageError(f"--jobs must be >= 1, not {args.jobs}")
        if args.grace < 0:
            raise UsageError(f"--grace must be >= 0 seconds, not {args.grace:g}")
        drivers = _split(args.driver) or ["sample"]
        for d in drivers:
            _check_driver(d)
        models = _split(args.models) or None
        if models:
            from .workloads import WorkloadError, check_spec
            try:
                for m in models:
                    check_spec(m)
            except WorkloadError as e:
                raise UsageError(str(e)) from None
        overrides = {}
        known = {k for t in TESTS.values() for k in t.params}
        for item in args.set:
            key, eq, value = item.partition("=")
            if not eq or key.strip() not in known:
                raise UsageError(f"--set {item!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(known))}")
            overrides[key.strip()] = value.strip()
        runs = plan(_split(args.tests) or None, drivers, duration=args.duration, models=models, seed=args.seed,
                    aosp=args.aosp, overrides=overrides)
    except UsageError as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
    return parser, args, runs


def main(argv=None, prog: str = "python -m mlts.stress") -> int:
    """Command line: run the selected tests on each driver; 0 when every outcome is SUCCESS,
    1 otherwise, 2 for bad arguments (one line on stderr)."""
    parser, args, runs = parse(argv, prog)
    if args.list:
        print(list_tests())
        return 0
    records = run_tests(runs, args.grace, args.report, progress=not args.quiet, append=args.append,
                        jobs=args.jobs)
    counts = {o: sum(r["outcome"] == o for r in records) for o in OUTCOMES}
    print(", ".join(f"{n} {o}" for o, n in counts.items() if n) or "no test ran",
          f"({len(records)} tests)" + (f"; records in {args.report}" if args.report else ""))
    return 0 if counts[SUCCESS] == len(records) else 1


