"""Calibrate the quantized mean-error bound (``runtime.testing.criteria.QUANT_MEAN_ERROR_BOUND``)
from measurement (issue 10).

For each configuration and seed, the graph (:func:`harness.graphs.generate`) runs
through the front end on each driver alone and, for graphs of more than one operation,
partitioned across the driver and the sample variants (as :mod:`random_graph.run`). For
every quantized output (8- and 16-bit quantized types) with at least
``criteria.MIN_ELEMENTS_FOR_AGGREGATES`` elements it records the mean error in quanta
(``mean(actual - expected)``, the ``bias`` that ``criteria.aggregate_problems`` bounds). It
prints, per configuration family (``single-<OPERATION>``, ``small-<TYPE>``,
``large-<TYPE>``) and driver, the largest |mean error|, its 99th percentile and the number
of outputs; an overall table; and how many outputs bounds of 0.25, 0.5 and 1.0 quanta would
flag. For comparison it measures a driver whose every quantized CONV_2D output is one
quantum high (``tests.broken_drivers.QuantConvOneHigh``) over the single-CONV_2D quantized
configurations (``--one-high PATTERN`` for others), per output and per graph (caught when
some output passes the bound): the bound must sit between the two.

Reading the figures: expected outputs are the reference executor's, so ``sample`` (the
reference kernels) measures exactly 0; partitioned runs give every operation whose first
input is 8-bit asymmetric quantized to ``sample-quant`` (its capabilities beat the
driver's 1.0), so a driver's partitioned figures show how its float work and the reference's
quantized work combine, not its own quantized kernels.

Default configurations: every ``single-*`` whose signature's input 0 is quantized, and
``small-`` / ``large-TENSOR_QUANT8_ASYMM(_SIGNED)-rank*``. A configuration whose graph cannot
be generated (``GenerationError``) is counted and reported, never fatal.

    python -m random_graph.calibrate [--seeds 50] [--config PATTERN]... \\
        [--drivers sample,sample-fixed-point] [--jobs 2] [--one-high PATTERN]... \\
        [--no-one-high] [--records FILE.jsonl]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter, defaultdict

import numpy as np

#: Bounds (quanta) whose flag counts are printed.
BOUNDS = (0.25, 0.5, 1.0)
#: Name under which the one-quantum-high comparison driver is reported.
ONE_HIGH = "quant-conv-one-high"
ONE_HIGH_PATTERN = "single-CONV_2D-*"
DEFAULT_DRIVERS = ("sample", "sample-fixed-point")


# --- configurations -------------------------------------------------------------------------

def default_patterns(configs) -> list[str]:
    """Names of the default configurations (module docstring)."""
    from runtime import ops
    from runtime.types import OperandType as T, is_quantized_type
    names = []
    for name, c in configs.items():
        if name.startswith("single-"):
            sig = ops.REGISTRY[c.only[0]].signatures[c.signature]
            if sig.inputs and is_quantized_type(sig.inputs[0].type):
                names.append(name)
        elif c.types and c.types[0] in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
            names.append(name)
    return names


def family(config_name: str) -> str:
    """``single-<OPERATION>`` (signature index dropped), ``small-<TYPE>``, ``large-<TYPE>``."""
    if config_name.startswith("single-"):
        return config_name.rsplit("-", 1)[0]
    return config_name.rsplit("-rank", 1)[0]


# --- the comparison driver --------------------------------------------------------------------

def one_high_device():
    """The HAL device whose quantized CONV_2D outputs are one quantum high (the fault the
    calibration measures the criteria against)."""
    from runtime import ops
    from runtime.drivers.sample import SampleDevice
    from runtime.executor import execute
    from runtime.ops.common import is_quant
    from runtime.types import OperationType

    class OneHigh(SampleDevice):
        def run(self, model, request):
            table = dict(ops.REGISTRY)
            original = table[OperationType.CONV_2D]

            def patched(ctx):
                out = original.execute(ctx)
                if not is_quant(ctx.outputs[0]):
                    return out
                info = np.iinfo(out[0].dtype)
                return [np.clip(out[0].astype(np.int64) + 1, info.min, info.max).astype(out[0].dtype)]
            table[OperationType.CONV_2D] = dataclasses.replace(original, execute=patched)
            return execute(model, request, table)
    return OneHigh()


# --- one graph --------------------------------------------------------------------------------

_STATE: dict = {}


def _init_worker(drivers: list[str]) -> None:
    from harness.graph_configs import all_configs
    from random_graph.run import variant_devices
    from runtime.nnapi import Device, get_devices
    _STATE["configs"] = all_configs()
    _STATE["devices"] = dict(zip(drivers, get_devices(drivers)))
    _STATE["one_high"] = Device(one_high_device())
    _STATE["variants"] = variant_devices()


def _outputs(tm, devices):
    """Run ``tm`` compiled for ``devices`` (the runtime partitions across several):
    ``("ok", outputs, dims)``, ``("skipped", reason)`` or ``("failed", message)``."""
    from harness.runner import Failure, execute_compilation
    from runtime.errors import NnapiError
    from runtime.nnapi import Compilation, get_supported_operations_for_devices
    from runtime.testing.frontend import build_model
    try:
        model = build_model(tm)
        if not all(get_supported_operations_for_devices(model, devices)):
            return ("skipped", "unsupported")
        compilation = Compilation.create_for_devices(model, devices)
        compilation.finish()
        outputs, dims = execute_compilation(compilation, tm, require_timing=False)[0]
    except (NnapiError, Failure) as e:
        return ("failed", str(e).splitlines()[0][:200])
    return ("ok", outputs, dims)


def _mean_errors(tm, outputs, dims) -> list[dict]:
    """Per quantized output of ``tm`` with enough elements: type, elements, mean and largest
    absolute error in quanta (or a dimensions mismatch)."""
    from runtime.testing.criteria import MIN_ELEMENTS_FOR_AGGREGATES, QUANT16_TYPES, QUANT8_TYPES
    from runtime.types import OperandType as T, operand_dtype
    rows = []
    for j, idx in enumerate(tm.main.output_indexes):
        o = tm.main.operands[idx]
        if o.type not in QUANT8_TYPES | QUANT16_TYPES or o.data is None or o.is_ignored:
            continue
        if o.data.size < MIN_ELEMENTS_FOR_AGGREGATES:
            continue
        row = {"output": j, "type": T(o.type).name, "elements": int(o.data.size)}
        if list(dims[j]) != list(o.data.shape):
            row["problem"] = f"dimensions {list(dims[j])}, expected {list(o.data.shape)}"
        else:
            dtype = operand_dtype(o.type)
            actual = np.frombuffer(bytes(outputs[j][:o.data.size * dtype.itemsize]), dtype)
            diff = actual.astype(np.float64) - o.data.reshape(-1).astype(np.float64)
            row["mean_error"] = float(diff.mean())
            row["max_abs_error"] = float(np.abs(diff).max())
        rows.append(row)
    return rows


def measure(task: tuple[str, int, bool]) -> dict:
    """Graph (configuration, seed) on every driver (alone and partitioned) and, when
    ``one_high``, on the one-quantum-high CONV_2D driver: a record of what was measured."""
    from harness.graph_configs import criteria_for
    from harness.graphs import GenerationError, generate
    name, seed, one_high = task
    config = _STATE["configs"][name]
    record = {"config": name, "family": family(name), "seed": seed, "runs": []}
    start = time.monotonic()
    try:
        tm = generate(config, seed, criteria_for(config).name)
    except GenerationError as e:
        record["generation_error"] = str(e).splitlines()[0][:300]
        return record
    except Exception as e:  # a generator crash is a finding too, never the end of the run
        record["generation_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        return record
    record["operations"] = len(tm.main.operations)
    runs = [(driver, "alone", [device]) for driver, device in _STATE["devices"].items()]
    if len(tm.main.operations) > 1:
        for driver, device in _STATE["devices"].items():
            others = [d for d in _STATE["variants"] if d.name != device.name]
            runs.append((driver, "partitioned", [device] + others))
    if one_high:
        runs.append((ONE_HIGH, "alone", [_STATE["one_high"]]))
    for driver, where, devices in runs:
        result = _outputs(tm, devices)
        run = {"driver": driver, "where": where, "status": result[0]}
        if result[0] == "ok":
            run["outputs"] = _mean_errors(tm, result[1], result[2])
        else:
            run["message"] = result[1]
        record["runs"].append(run)
    record["seconds"] = round(time.monotonic() - start, 3)
    return record


# --- the report -------------------------------------------------------------------------------

def _stats(values: list[float]) -> str:
    if not values:
        return f"{0:>7}  {'-':>8}  {'-':>8}  {'-':>9}"
    a = np.abs(np.asarray(values))
    return (f"{len(a):>7}  {a.max():>8.4f}  {np.percentile(a, 99):>8.4f}  "
            f"{float(np.mean(values)):>+9.4f}")


def report(records: list[dict], out=None) -> dict:
    """Print the tables (module docstring) to ``out`` (default stdout); returns the summary
    figures by ``"driver/where"``."""
    out = sys.stdout if out is None else out

    def p(*a):
        print(*a, file=out)
    by_family = defaultdict(list)  # (family, driver, where) -> mean errors
    overall = defaultdict(list)  # (driver, where) -> mean errors
    status = Counter()  # (driver, where, status)
    problems = Counter()
    gen_fail = Counter()
    gen_examples = {}
    graphs = Counter()
    for r in records:
        if "generation_error" in r:
            gen_fail[r["config"]] += 1
            gen_examples.setdefault(r["config"], r["generation_error"])
            continue
        graphs[r["family"]] += 1
        for run in r["runs"]:
            key = (run["driver"], run["where"])
            status[key + (run["status"],)] += 1
            for o in run.get("outputs", []):
                if "mean_error" in o:
                    by_family[(r["family"], *key)].append(o["mean_error"])
                    overall[key].append(o["mean_error"])
                else:
                    problems[key] += 1
    total = len(records)
    p(f"graphs: {total} drawn, {total - sum(gen_fail.values())} generated, "
      f"{sum(gen_fail.values())} generation failures in {len(gen_fail)} configurations")
    head = f"{'outputs':>7}  {'max|m|':>8}  {'p99|m|':>8}  {'mean(m)':>9}"
    p("\nmean error per quantized output (quanta; m = mean(actual - expected), outputs of >= 10 elements)")
    p(f"{'family':<44} {'driver':<22} {'where':<11} {head}")
    for fam, driver, where in sorted(by_family):
        p(f"{fam:<44} {driver:<22} {where:<11} {_stats(by_family[(fam, driver, where)])}")
    p("\noverall")
    flags = "  ".join(f"{'>' + format(b, 'g'):>6}" for b in BOUNDS)
    p(f"{'driver':<22} {'where':<11} {head}  {flags}   runs ok/skipped/failed, dims mismatches")
    summary = {}
    for key in sorted(overall.keys() | {k[:2] for k in status}):
        values = overall.get(key, [])
        a = np.abs(np.asarray(values)) if values else np.zeros(0)
        flagged = [int(np.count_nonzero(a > b)) for b in BOUNDS]
        counts = "/".join(str(status[key + (s,)]) for s in ("ok", "skipped", "failed"))
        p(f"{key[0]:<22} {key[1]:<11} {_stats(values)}  "
          + "  ".join(f"{f:>6}" for f in flagged) + f"   {counts}, {problems[key]}")
        summary["/".join(key)] = {
            "outputs": len(values), "max_abs_mean_error": float(a.max()) if a.size else None,
            "p99_abs_mean_error": float(np.percentile(a, 99)) if a.size else None,
            "flagged": dict(zip(map(str, BOUNDS), flagged))}
    one_high = overall.get((ONE_HIGH, "alone"), [])
    if one_high:
        a = np.asarray(one_high)
        p(f"\n{ONE_HIGH}: {len(a)} outputs, mean error min {a.min():+.4f}, 1st percentile "
          f"{np.percentile(a, 1):+.4f}, median {np.median(a):+.4f}, max {a.max():+.4f}")
        # per graph: caught when some output's |m| passes the bound, among the graphs where
        # the fault reached an output (some |m| > 0)
        worst = [max((abs(o["mean_error"]) for o in run.get("outputs", []) if "mean_error" in o), default=0.0)
                 for r in records for run in r.get("runs", []) if run["driver"] == ONE_HIGH]
        reached = [w for w in worst if w > 0]
        p(f"{ONE_HIGH}: the fault reached an output in {len(reached)} of {len(worst)} graphs; caught "
          f"(some |m| > bound) in " + ", ".join(f"{sum(w > b for w in reached)} at {b:g}" for b in BOUNDS)
          + (f"; smallest largest-|m| of a graph {min(reached):.4f}" if reached else ""))
    if gen_fail:
        p("\ngeneration failures (configuration: graphs; first error)")
        for name, n in sorted(gen_fail.items()):
            p(f"  {name}: {n}; {gen_examples[name][:160]}")
    failed = [(r["config"], r["seed"], run["driver"], run["where"], run["message"]) for r in records
              for run in r.get("runs", []) if run["status"] == "failed"]
    if failed:
        p(f"\nfailed runs ({len(failed)}; first 10)")
        for f in failed[:10]:
            p("  " + " ".join(map(str, f[:4])) + ": " + f[4][:160])
    return summary


# --- command line -----------------------------------------------------------------------------

def _progress(iterable, total: int):
    try:
        from tqdm import tqdm
        yield from tqdm(iterable, total=total, file=sys.stderr)
        return
    except ImportError:
        pass
    start, step = time.monotonic(), max(1, total // 50)
    for k, item in enumerate(iterable, 1):
        if k % step == 0 or k == total:
            elapsed = time.monotonic() - start
            print(f"[calibrate] {k}/{total} graphs, {elapsed:.0f} s elapsed, "
                  f"~{elapsed / k * (total - k):.0f} s left", file=sys.stderr, flush=True)
        yield item


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m random_graph.calibrate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=50, help="seeds 0..N-1 per configuration (default 50)")
    ap.add_argument("--config", action="append", default=[], metavar="PATTERN",
                    help="configuration glob (repeatable); default: every quantized configuration")
    ap.add_argument("--drivers", default=",".join(DEFAULT_DRIVERS),
                    help="comma-separated driver names (default: sample,sample-fixed-point)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--one-high", action="append", default=[], metavar="PATTERN",
                    help=f"configurations (glob, repeatable) also run on the {ONE_HIGH} comparison "
                         f"driver (default {ONE_HIGH_PATTERN})")
    ap.add_argument("--no-one-high", action="store_true", help=f"skip the {ONE_HIGH} comparison")
    ap.add_argument("--records", metavar="FILE", help="also write every record as JSON lines")
    args = ap.parse_args(argv)

    from harness.graph_configs import all_configs, select
    import fnmatch
    configs = all_configs()
    try:
        chosen = [c.name for c in select(configs, args.config)] if args.config else default_patterns(configs)
    except ValueError as e:
        ap.error(str(e))
    drivers = [d.strip() for d in args.drivers.split(",") if d.strip()]
    from runtime.loader import DriverNotFound, load_driver
    for d in drivers:
        try:
            load_driver(d)
        except DriverNotFound as e:
            ap.error(str(e))
    one_high = args.one_high or [ONE_HIGH_PATTERN]
    tasks = [(name, seed, not args.no_one_high and any(fnmatch.fnmatch(name, p) for p in one_high))
             for name in chosen for seed in range(args.seeds)]
    print(f"[calibrate] {len(chosen)} configurations x {args.seeds} seeds = {len(tasks)} graphs; "
          f"drivers {', '.join(drivers)} (alone and partitioned across the sample variants); "
          f"{args.jobs} jobs", file=sys.stderr, flush=True)
    records = []
    sink = open(args.records, "w") if args.records else None
    try:
        if args.jobs > 1:
            import multiprocessing
            with multiprocessing.Pool(args.jobs, _init_worker, (drivers,)) as pool:
                for r in _progress(pool.imap_unordered(measure, tasks, chunksize=1), len(tasks)):
                    records.append(r)
                    if sink:
                        sink.write(json.dumps(r) + "\n")
        else:
            _init_worker(drivers)
            for r in _progress(map(measure, tasks), len(tasks)):
                records.append(r)
                if sink:
                    sink.write(json.dumps(r) + "\n")
    finally:
        if sink:
            sink.close()
    records.sort(key=lambda r: (r["config"], r["seed"]))
    report(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
