"""``python -m fuzz``: coverage-guided fuzzing (atheris / libFuzzer) of a driver's model
and request validation, through the HAL and the front end (see :mod:`fuzz.target`).

Usage::

    python -m fuzz --driver NAME [--target full|validation] [--findings DIR] [--seeds DIR | --no-seeds] [--paths hal,frontend]
                   [--keep-going N] [libFuzzer flags, e.g. -runs=N -max_total_time=S
                   -timeout=S -rss_limit_mb=M] [corpus dirs]
    python -m fuzz --driver NAME --driver-process ...           # the driver in its own process
    python -m fuzz --driver NAME --replay FINDING_OR_DIR...   # re-run saved findings
    python -m fuzz --make-seeds DIR                           # encode the CTS corpus

Targets (``--target``): ``full`` (default) runs each input through the HAL (model, request,
execution) and the front end (:func:`fuzz.target.check_case`), with the runtime instrumented
(control and data flow) but its plumbing and hot generic helpers (:data:`FULL_UNINSTRUMENTED`);
``validation`` stops after model validation
(decode, the reference ``validate_model``, the driver's ``get_supported_operations`` and
``prepare_model``: :func:`fuzz.target.check_validation`) and instruments only
``runtime.hal.validate`` (control and data flow), the operation table's rule modules and
the drivers (control flow), and a third-party driver's package (control and data flow), for
several times the full target's speed (:func:`instrument_for_validation`).

The command supervises a child process that runs libFuzzer (its statistics lines, ``#N
... cov: ... ft: ... exec/s: ...``, and the final ``stat::`` lines go to stderr). Findings
are saved by the child as they happen (:mod:`fuzz.findings`); when libFuzzer itself stops
the child (``-timeout``, ``-rss_limit_mb``, an escaped exception) its artifact
(``<findings>/artifacts/{timeout,oom,crash}-*``) is converted into a finding afterwards,
and with ``--keep-going N`` the child is restarted up to N times (inputs that already
stopped a run are skipped from then on). Defaults added unless
given: ``-artifact_prefix=<findings>/artifacts/``, ``-timeout=30``,
``-print_final_stats=1``.

``--seeds DIR`` (default ``<findings>/seeds``; ``--no-seeds``: none) fills DIR (when
empty) with every vendored corpus model the operation table can run, encoded by
:func:`fuzz.decoder.encode` (expected outputs left out, data above 256 bytes as a hash
fill) plus generated-mode inputs (one operation per signature of the operation table, at
each hostility level), and hands it to libFuzzer as a read-only corpus directory. When no
corpus directory is given, ``<findings>/corpus`` is the one libFuzzer writes new inputs to.

``--driver-process`` runs the driver in its own process over the HAL protocol of ``hal.proto``
(:mod:`runtime.remote`): a death of that process is recorded as a ``crash`` finding and a
call past ``--driver-timeout`` as a ``timeout`` finding (:func:`fuzz.target.incident_finding`),
the process is restarted and fuzzing goes on. Coverage then guides by the runtime's side
(the reference validator, the proxy): the driver's code runs in the other process.

Exit status: 0 when the run ended normally without any new finding, 1 otherwise; 2 (one
line) for bad options, and for a driver out of process without the ``remote`` extra (an
in-process driver needs neither grpcio nor protobuf: the child leaves :mod:`runtime.remote`'s
gRPC modules unimported, :func:`runtime_modules`).
``--replay`` prints one line per file (``OPEN``, ``fixed``, or ``BAD`` with what is wrong
with a file that cannot be read as a finding: :func:`fuzz.findings.read_finding_input`) and
exits 2 when a file was malformed, else 1 when a finding is still open, else 0.
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import subprocess
import sys
from pathlib import Path

from runtime.remote.client import PROCESS_PREFIX, is_remote_spec, remote_extra_missing, set_call_timeout
from runtime.argparsing import OneLineParser

ROOT = Path(__file__).resolve().parents[1]
#: Instrumentation of the validation target (the full target: all of runtime, control and
#: data flow): see :func:`instrument_for_validation`.
VALIDATION_DATAFLOW = ("runtime.hal.validate",)
VALIDATION_CONTROL_FLOW = ("runtime.ops", "runtime.drivers", "runtime.hal.operand_rules")
VALIDATION_UNINSTRUMENTED = ("runtime.ops.base",)
#: What the full target leaves uninstrumented: the harness's own plumbing (the test-model
#: converters and front-end builder of runtime.testing, the decoder's drafting in
#: runtime.ops.generation, the validation memo's keys) and the hot generic helpers (operand
#: type predicates, the operation table's signature matching), whose branches say nothing
#: the branches of their callers do not; together a quarter of the branch events and a
#: fifth of the time of an input (:func:`full_target_exclusions`).
FULL_UNINSTRUMENTED = ("runtime.testing", "runtime.ops.generation", "runtime.hal.validation_memo",
                       "runtime.types", "runtime.extension_types", "runtime.ops.base")


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m fuzz", allow_abbrev=False,
                                description="Fuzz an NNAPI driver's validation (atheris/libFuzzer). "
                                            "Unknown arguments go to libFuzzer.")
    p.add_argument("--driver", default="sample",
                   help="driver: bundled name, entry point or module:factory (default: sample)")
    p.add_argument("--driver-process", action="store_true",
                   help="run the driver in its own process (runtime/remote/hal.proto): its death is a crash "
                        "finding, a call past --driver-timeout a timeout finding, and the fuzzing goes on")
    p.add_argument("--driver-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="with --driver-process: longest one driver call may take (default 10)")
    p.add_argument("--target", default="full", choices=("full", "validation"),
                   help="full (default): HAL model, request and execution, and the front end; "
                        "validation: decode, validate_model, get_supported_operations and "
                        "prepare_model only (fast)")
    p.add_argument("--findings", default="fuzz-findings", metavar="DIR",
                   help="where findings go: DIR/V_FUZZ/*.json.gz (corpus schema) and DIR/inputs/*.bin")
    p.add_argument("--seeds", metavar="DIR",
                   help="seed corpus directory, filled from the CTS corpus when empty (default: DIR/seeds of --findings)")
    p.add_argument("--no-seeds", action="store_true", help="start from an empty corpus")
    p.add_argument("--paths", default="hal,frontend", help="which paths to run: hal, frontend or both")
    p.add_argument("--max-findings", type=int, default=200, help="most finding files one run writes")
    p.add_argument("--keep-going", type=int, default=0, metavar="N",
                   help="restart the fuzzer up to N times after libFuzzer stops on a crash, timeout or oom")
    p.add_argument("--replay", nargs="+", metavar="PATH",
                   help="re-run saved findings (.json.gz, .bin, or directories of them) and report which are open")
    p.add_argument("--replay-timeout", type=int, default=60, help="seconds per replayed input")
    p.add_argument("--make-seeds", metavar="DIR", help="write the seed corpus into DIR and exit")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--convert-artifact", nargs=2, metavar=("FILE", "KIND"), help=argparse.SUPPRESS)
    return p


def _has_flag(args: list[str], name: str) -> bool:
    return any(a.startswith(f"-{name}=") for a in args)


# --- seeds ------------------------------------------------------------------------------

def make_seeds(directory: Path) -> int:
    """Fill ``directory`` with seed inputs; returns how many were written."""
    from runtime import ops
    from runtime.testing.hal_convert import to_hal_model
    from runtime.testing.support import not_implemented_reason
    from runtime.testing.test_model import iter_corpus
    from fuzz.decoder import encode
    directory.mkdir(parents=True, exist_ok=True)
    n = 0
    corpus = ROOT / "cts" / "corpus"
    for tm in iter_corpus(sorted(p for p in corpus.iterdir() if p.is_dir())):
        if not_implemented_reason(to_hal_model(tm), signatures_too=not tm.expect_failure):
            continue  # the table follows: a model joins the seeds when its operations land
        try:
            data = encode(tm, expected_outputs=False, max_raw_bytes=256)
        except ValueError:
            continue
        (directory / f"cts_{tm.version}_{tm.name}.bin").write_bytes(data)
        n += 1
    table = sorted(ops.REGISTRY)
    for k, op in enumerate(table):  # generated mode, one operation, each hostility level
        for s in range(len(ops.REGISTRY[op].signatures)):
            for hostility in range(4):
                rng = random.Random(f"{op.name}/{s}/{hostility}")  # fixed: same seeds every time
                data = bytes([0x01 | hostility << 4, 0x00, k, s]) + rng.randbytes(160)
                # named by level first: every n-th seed of the sorted names covers each level
                (directory / f"gen_h{hostility}_{op.name}_{s}.bin").write_bytes(data)
                n += 1
    return n


# --- child: the libFuzzer process -------------------------------------------------------

def child_main(args, libfuzzer_args: list[str]) -> None:
    import atheris
    target = instrumented_target(args)
    atheris.Setup([sys.argv[0], *libfuzzer_args], target)
    atheris.Fuzz()


def instrumented_target(args):
    """The :class:`fuzz.target.FuzzTarget` of ``args`` (``driver``, ``findings``,
    ``max_findings``, ``paths``, ``target``) with the runtime instrumented for coverage as
    the fuzzing child runs it: the full target instruments the runtime's modules but
    :data:`FULL_UNINSTRUMENTED` (and a third-party driver's package) at import, control and
    data flow; the validation target
    only what :func:`instrument_for_validation` names. Used by :func:`child_main` and
    ``benchmarks/fuzz_throughput.py``."""
    import atheris
    driver_top = None
    if ":" in args.driver and not is_remote_spec(args.driver):  # a driver out of process is not ours to instrument
        top = args.driver.split(":", 1)[0].split(".")[0]
        if top not in ("runtime", "fuzz"):
            driver_top = top
    if args.target == "full":  # the runtime but FULL_UNINSTRUMENTED, control and data flow
        include = ["runtime"] + ([driver_top] if driver_top else [])
        with atheris.instrument_imports(include=include, exclude=full_target_exclusions()):
            target = _make_target(args)
    else:
        target = _make_target(args)
        instrument_for_validation(extra_dataflow=(driver_top,) if driver_top else ())
    gc.freeze()  # what exists now lives as long as the process: keep it out of collections
    return target


#: The runtime's gRPC side (the ``remote`` extra: grpcio, protobuf), imported by the child
#: only for a driver out of process (:func:`_make_target`).
OUT_OF_PROCESS_MODULES = ("runtime.remote",)


def runtime_modules(remote: bool) -> list[str]:
    """The runtime's modules the child imports before fuzzing (so that lazy imports inside
    functions are instrumented too): all of them, without :data:`OUT_OF_PROCESS_MODULES`'
    submodules unless the driver is out of process (``remote``), so that an in-process
    driver fuzzes in the core install (no protobuf)."""
    import pkgutil
    import runtime
    names = [info.name for info in pkgutil.walk_packages(runtime.__path__, "runtime.")]
    return [n for n in names if remote or not any(n.startswith(p + ".") for p in OUT_OF_PROCESS_MODULES)]


def full_target_exclusions() -> list[str]:
    """The modules (exact names, as ``atheris.instrument_imports`` takes them) the full
    target imports uninstrumented: :data:`FULL_UNINSTRUMENTED` and their submodules, listed
    from the source tree (importing them to list them would import the runtime before the
    import hook instruments it)."""
    import runtime
    base = Path(next(iter(runtime.__path__)))
    names = []
    for name in FULL_UNINSTRUMENTED:
        names.append(name)
        top = base.joinpath(*name.split(".")[1:])
        names += [".".join((name, *f.relative_to(top).with_suffix("").parts)).removesuffix(".__init__")
                  for f in sorted(top.rglob("*.py")) if f.parent != top or f.name != "__init__.py"]
    return names


def _make_target(args):
    import importlib
    for name in runtime_modules(is_remote_spec(args.driver)):
        importlib.import_module(name)
    from fuzz.findings import FindingRecorder
    from fuzz.target import FuzzTarget
    recorder = FindingRecorder(Path(args.findings), args.driver, args.max_findings)
    converted = Path(args.findings) / "artifacts" / "converted"
    known = {p.name.split("-", 1)[1] for p in converted.glob("*-*")} if converted.is_dir() else set()
    return FuzzTarget(args.driver, recorder, args.paths.split(","), skip=known, target=args.target)


def _under(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def instrument_for_validation(extra_dataflow=()) -> int:
    """Instrument, after import, the functions the validation target's coverage is read
    from: :data:`VALIDATION_DATAFLOW` (and ``extra_dataflow``, a third-party driver's
    package) with control and data flow (comparisons), :data:`VALIDATION_CONTROL_FLOW`
    with control flow only; everything else (converters, data types, the decoder, the
    operation table's generic signature matching in runtime.ops.base) runs uninstrumented.
    Instrumented code runs at about half speed and comparison tracing costs a further
    fifth, hence the split (operand field rules, :mod:`runtime.hal.operand_rules`, are
    control flow only: plain range checks). Returns the number of functions instrumented."""
    import types
    from atheris.instrument_bytecode import patch_code
    dataflow = VALIDATION_DATAFLOW + tuple(extra_dataflow)
    n = 0
    for f in [o for o in gc.get_objects() if isinstance(o, types.FunctionType)]:
        module = getattr(f, "__module__", None) or ""
        if _under(module, VALIDATION_UNINSTRUMENTED):
            continue
        df = _under(module, dataflow)
        if df or _under(module, VALIDATION_CONTROL_FLOW):
            f.__code__ = patch_code(f.__code__, trace_dataflow=df)
            n += 1
    return n


# --- artifacts --------------------------------------------------------------------------

def _artifact_kind(name: str) -> str | None:
    for prefix, kind in (("timeout-", "timeout"), ("oom-", "oom"), ("crash-", "crash"), ("leak-", "crash")):
        if name.startswith(prefix):
            return kind
    return None


def convert_artifact(args, path: Path, kind: str, run_target: bool = True) -> None:
    """Save libFuzzer artifact ``path`` as a finding (in this process)."""
    import hashlib
    from fuzz.decoder import Rejected, decode
    from fuzz.findings import Finding, FindingRecorder
    data = path.read_bytes()
    recorder = FindingRecorder(Path(args.findings), args.driver, args.max_findings)
    try:
        case = decode(data)
    except Rejected:
        return
    if kind == "crash" and run_target:
        from fuzz.target import FuzzTarget
        found = FuzzTarget(args.driver, recorder, args.paths.split(","), target=args.target).run(data)
        for f in found:
            recorder.record(f, case, data)
        if found:
            return
    # one finding per kind and set of operation types (a hang has no traceback to group by)
    op_types = ",".join(sorted({op.type.name for op in case.model.main.operations})) or "no operations"
    what = {"timeout": "ran past libFuzzer's -timeout", "oom": "went past libFuzzer's -rss_limit_mb",
            "crash": "crashed the fuzzing process"}[kind]
    finding = Finding(kind, "libfuzzer", f"the input {what} (artifact {path.name}; operations {op_types})",
                      f"{kind}: {op_types}" if kind != "crash" else f"crash: {hashlib.sha1(data).hexdigest()}")
    recorder.record(finding, case, data, run_reference=False)


def convert_new_artifacts(args, artifacts: Path) -> list[Path]:
    """Convert every not yet converted artifact; returns the artifacts converted."""
    done_dir = artifacts / "converted"
    done = []
    for path in sorted(artifacts.glob("*-*")):
        kind = _artifact_kind(path.name)
        if kind is None or not path.is_file() or (done_dir / path.name).exists():
            continue
        cmd = [sys.executable, "-m", "fuzz", "--convert-artifact", str(path), kind, "--driver", args.driver,
               "--findings", args.findings, "--paths", args.paths, "--target", args.target]
        try:
            ok = kind == "crash" and subprocess.run(cmd, cwd=os.getcwd(), timeout=120).returncode == 0
        except subprocess.TimeoutExpired:
            ok = False
        if not ok:  # the target itself may hang or blow up: save without running it
            convert_artifact(args, path, kind, run_target=False)
        done_dir.mkdir(exist_ok=True)
        (done_dir / path.name).write_bytes(b"")
        done.append(path)
    return done


# --- replay -----------------------------------------------------------------------------

def replay_main(args) -> int:
    """``--replay``: re-run each saved finding (``.json.gz``, ``.bin``, or directories of
    them) and print whether it is still open; a file that is not a readable finding is one
    ``BAD`` line and the others still replay. Returns the exit status (module docstring)."""
    import signal
    from fuzz.findings import FindingRecorder, read_finding_input
    from fuzz.target import FuzzTarget
    target = FuzzTarget(args.driver, FindingRecorder(None, args.driver, quiet=True), args.paths.split(","),
                        target=args.target)
    files: list[Path] = []
    for p in map(Path, args.replay):
        if p.is_dir():  # a findings directory (its models, and inputs that never decoded) or of inputs
            found = sorted(p.rglob("*.json.gz"))
            stems = {f.name[:-len(".json.gz")] for f in found}
            found += [b for b in sorted((p / "inputs").glob("*.bin")) if b.stem not in stems]
            files += found or sorted(p.glob("*.bin"))
        else:
            files.append(p)

    def on_alarm(signum, frame):
        raise TimeoutError(f"replay ran past {args.replay_timeout} s")

    signal.signal(signal.SIGALRM, on_alarm)
    still_open = malformed = 0
    for f in files:
        try:
            data = read_finding_input(f)
        except ValueError as e:  # one bad file is reported, the others still replay
            malformed += 1
            print(f"BAD   {' '.join(str(e).split())}")
            continue
        signal.alarm(args.replay_timeout)
        try:
            found = [x.message for x in target.run(data)]
        except TimeoutError as e:
            found = [str(e)]
        finally:
            signal.alarm(0)
        still_open += bool(found)
        print(f"{'OPEN ' if found else 'fixed'} {f.name}{': ' + found[0] if found else ''}")
    print(f"{len(files) - malformed} replayed, {still_open} still open"
          + (f", {malformed} malformed (not replayed)" if malformed else ""))
    return 2 if malformed else 1 if still_open else 0


# --- parent -----------------------------------------------------------------------------

def parent_main(args, libfuzzer_args: list[str]) -> int:
    findings = Path(args.findings).resolve()
    args.findings = str(findings)
    artifacts = findings / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    lib = list(libfuzzer_args)
    for a in lib:  # libFuzzer wants its corpus directories to exist
        if not a.startswith("-") and not Path(a).exists():
            Path(a).mkdir(parents=True)
    if not _has_flag(lib, "artifact_prefix"):
        lib.append(f"-artifact_prefix={artifacts}/")
    if not _has_flag(lib, "timeout"):
        lib.append("-timeout=30")
    if not _has_flag(lib, "print_final_stats"):
        lib.append("-print_final_stats=1")
    if not any(not a.startswith("-") for a in lib):  # a fresh main corpus: seeds stay read-only
        (findings / "corpus").mkdir(exist_ok=True)
        lib.append(str(findings / "corpus"))
    if not args.no_seeds:
        seeds = Path(args.seeds) if args.seeds else findings / "seeds"
        if not seeds.is_dir() or not any(seeds.iterdir()):
            print(f"nncts-fuzz: wrote {make_seeds(seeds)} seed inputs to {seeds}", file=sys.stderr)
        lib.append(str(seeds))
    existing = set((findings / "V_FUZZ").glob("*.json.gz")) | set((findings / "inputs").glob("*.bin"))
    convert_new_artifacts(args, artifacts)  # left over from an earlier run
    restarts = 0
    while True:
        cmd = [sys.executable, "-m", "fuzz", "--child", "--driver", args.driver, "--findings", args.findings,
               "--driver-timeout", str(args.driver_timeout),
               "--paths", args.paths, "--target", args.target, "--max-findings", str(args.max_findings), *lib]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        rc = subprocess.call(cmd, env=env)
        converted = convert_new_artifacts(args, artifacts)
        if rc != 0 and converted and restarts < args.keep_going:
            restarts += 1
            print(f"nncts-fuzz: libFuzzer stopped on {converted[-1].name}; restart {restarts}/{args.keep_going}",
                  file=sys.stderr)
            continue
        break
    now = set((findings / "V_FUZZ").glob("*.json.gz")) | set((findings / "inputs").glob("*.bin"))
    new = sorted(p for p in now - existing if p.suffix != ".bin" or
                 not (findings / "V_FUZZ" / (p.stem + ".json.gz")).exists())
    print(f"nncts-fuzz: exit {rc}, {restarts} restart(s), {len(new)} new finding(s) in {findings}", file=sys.stderr)
    for p in new:
        print(f"  {p}", file=sys.stderr)
    return 0 if rc == 0 and not new else 1


def main(argv=None) -> int:
    args, rest = _parser().parse_with_libfuzzer_flags(argv)
    if args.driver_process and not is_remote_spec(args.driver):
        args.driver = PROCESS_PREFIX + args.driver
    if is_remote_spec(args.driver) and (missing := remote_extra_missing()):
        _parser().error(f"--driver {args.driver}: {missing}")
    set_call_timeout(args.driver_timeout)
    if args.make_seeds:
        print(f"wrote {make_seeds(Path(args.make_seeds))} seed inputs to {args.make_seeds}")
        return 0
    if args.replay:
        return replay_main(args)
    if args.convert_artifact:
        convert_artifact(args, Path(args.convert_artifact[0]), args.convert_artifact[1])
        return 0
    if args.child:
        child_main(args, rest)
        return 0
    return parent_main(args, rest)


if __name__ == "__main__":
    sys.exit(main())
