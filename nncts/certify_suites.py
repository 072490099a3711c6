"""The suites ``nncts certify`` runs, each as a subprocess of the ``nncts`` command (or of
``python -m fuzz``) with its results under ``<bundle>/results/<suite>/``, so a suite that
crashes does not end the certification.

Suites: ``cts`` (every corpus model in each ``--modes`` mode), ``vts``, ``random-graph``,
``precision`` (the sweeps; ``--sweep quick`` under ``--quick``), ``relations`` (the metamorphic
relations, full budget; three random graphs under ``--quick``), ``fuzz`` (a time budget, findings in ``results/fuzz/findings``) and ``mlts`` (``nncts mlts
--quick``: real models' accuracy; only when the ``mlts`` extra imports). ``--quick`` runs the
CI-sized selection: the V1_0 corpus directory filtered by :data:`harness.suites.QUICK_K` (quantized and
broadcast ADD, a float CONV_2D, a quantized CONV_2D), one seed of a few random-graph
configurations, a few seconds of fuzzing without the seed corpus, one MLTS model.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import suites as table

#: The suites in the order certify runs them (the suite table, :mod:`harness.suites`).
SUITES = tuple(s.command for s in table.SUITES)
#: The modules the mlts extra provides (``nncts mlts`` needs them).
MLTS_MODULES = ("tflite", "ai_edge_litert")
#: Outcomes of a record that fail a suite.
FAILING = ("failed", "unexpected_pass")
#: Most failures one suite lists in the verdict (the report lists them all).
MAX_LISTED = 200
#: The bundle's folder of suite results (``<bundle>/results/<suite>/``).
RESULTS = "results"


@dataclass
class SuiteResult:
    """One suite of a certification: ``status`` is ``passed``, ``failed`` or ``not run``;
    ``counts`` the outcome counts (records, MLTS models or fuzz findings); ``failures`` up to
    :data:`MAX_LISTED` of ``{"id", "message"}``; ``reason`` why it failed without a failing
    test (exit code, time limit) or why it did not run; ``required``: whether the verdict
    needs it (the suite table's, or the profile's ``suites``: :func:`nncts.certify.verdict`);
    ``driver_coverage``: with ``--driver-coverage``, the lines and branches of the driver's
    source this suite reached (:func:`driver_coverage_summary`)."""

    suite: str
    status: str
    command: list[str] = field(default_factory=list)
    exit_code: int | None = None
    seconds: float = 0.0
    counts: dict = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)
    failures_total: int = 0
    reason: str = ""
    required: bool = True
    driver_coverage: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The JSON form (``verdict.json``'s ``suites``)."""
        return asdict(self)


def mlts_unavailable() -> str:
    """Why the MLTS cannot run here ("" when it can): a module of the mlts extra missing."""
    missing = [m for m in MLTS_MODULES if importlib.util.find_spec(m) is None]
    return f"the mlts extra is not installed (no module {', '.join(missing)}; pip install 'nncts[mlts]')" \
        if missing else ""


def _nncts(*args: str) -> list[str]:
    return [sys.executable, "-m", "nncts.cli", *args]


def _pytest_suite(args, spec, out: Path) -> list[str]:
    cmd = _nncts(spec.command, "--driver", args.driver, "--report-dir", str(out), "--profile", args.profile)
    cmd += ["--driver-process"] if args.driver_process else []
    cmd += ["--driver-coverage"] if getattr(args, "driver_coverage", False) else []
    cmd += ["--baseline", str(Path(args.baseline).resolve())] if args.baseline else []
    cmd += ["--retries", str(args.retries)] if args.retries else []
    cmd += ["-n", str(args.jobs)] if args.jobs is not None else []   # else the suites' default: every core
    return cmd + spec.certify_options(args) + list(spec.quick_options if args.quick else ())


def command(args, name: str, out: Path, fuzz_seeds: Path | None) -> list[str]:
    """The command line of suite ``name`` (:data:`harness.suites.SUITES`) for the certify
    options ``args`` (driver, driver_process, quick, modes, profile, baseline, retries, jobs,
    fuzz_seconds), its results in ``out``; the fuzzer's seed corpus in ``fuzz_seeds`` (None:
    no seeds). ValueError for an unknown suite."""
    spec = table.suite(name)
    if spec.runs_under_pytest:
        return _pytest_suite(args, spec, out)
    driver = ["--driver", args.driver] + (["--driver-process"] if args.driver_process else [])
    if spec.command == "fuzz":
        seeds = ["--seeds", str(fuzz_seeds)] if fuzz_seeds else ["--no-seeds"]
        return [sys.executable, "-m", "fuzz", *driver, "--findings", str(out / "findings"), *seeds,
                f"-max_total_time={args.fuzz_seconds}"]
    return _nncts("mlts", "--quick", *driver, "--report-dir", str(out), "--no-progress",
                  *(spec.quick_options if args.quick else ()))


def _run(cmd: list[str], log: Path, limit: float | None) -> tuple[int | None, str]:
    """Run ``cmd`` (its own process group) with stdout and stderr into ``log``; returns
    (exit code, "") or (None, why) when it outlived ``limit`` seconds (the group killed)."""
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            return proc.wait(timeout=limit), ""
        except subprocess.TimeoutExpired:
            _stop(proc)
            return None, f"stopped after the suite time limit of {limit:g} s"
        except BaseException:
            _stop(proc)
            raise


#: Seconds a suite has, after SIGTERM, to publish its interrupted report before SIGKILL.
GRACE_S = 15.0


def _stop(proc: subprocess.Popen) -> None:
    """End ``proc``'s process group: SIGTERM first (a suite then publishes the records it has,
    its report marked interrupted), SIGKILL after :data:`GRACE_S` seconds."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


def _pytest_outcomes(out: Path) -> tuple[dict, list[dict]]:
    from harness.records import EXPECTATION_OUTCOMES, read_records, totals
    path = out / "outcomes.jsonl"
    records = read_records(path) if path.is_file() else []
    t = totals(records)
    counts = {k: t[k] for k in ("passed", "failed", "skipped", *EXPECTATION_OUTCOMES)}
    counts["tests"] = len(records)
    return counts, [{"id": r["id"], "outcome": r["outcome"], "message": (r.get("message") or "")[:300]}
                    for r in records if r["outcome"] in FAILING]


def _mlts_outcomes(out: Path) -> tuple[dict, list[dict]]:
    import json
    from reports.mlts import model_status, totals
    path = out / "mlts.json"
    doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    t = totals(doc)
    return ({k: t[k] for k in ("models", "passed", "inaccurate", "failed")},
            [{"id": m.get("name", "?"), "outcome": model_status(m), "message": ""}
             for m in doc.get("models") or [] if model_status(m) != "passed"])


def libfuzzer_stats(log: Path) -> dict:
    """libFuzzer's final statistics in a fuzz console log (``-print_final_stats=1``, which
    ``python -m fuzz`` adds): ``{"executions": units executed, summed over the child's
    restarts, "exec_per_s": the last run's average}``; ``{}`` when the log has none (the
    fuzzer stopped before libFuzzer ran)."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    executed = [int(n) for n in re.findall(r"^stat::number_of_executed_units:\s*(\d+)", text, re.M)]
    rates = re.findall(r"^stat::average_exec_per_sec:\s*(\d+)", text, re.M)
    return {"executions": sum(executed), "exec_per_s": int(rates[-1]) if rates else 0} if executed else {}


def _finding(path: Path, findings: Path, bundle_rel: str, driver: list[str]) -> dict:
    """One failing entry for the finding file at ``path`` (a ``V_FUZZ/*.json.gz`` model or an
    ``inputs/*.bin`` input that never decoded): its kind, phase and message from the model's
    ``fuzz`` key (:mod:`fuzz.findings`), the file relative to the bundle and the replay command."""
    from runtime.files import load_json
    rel = path.relative_to(findings).as_posix()
    entry = {"id": f"fuzz/{rel}", "outcome": "finding", "kind": path.name.split("_", 1)[0], "phase": "",
             "message": "the input does not decode (raw input kept)" if path.suffix == ".bin" else "",
             "file": f"{bundle_rel}/{rel}",
             "replay": shlex.join(["python", "-m", "fuzz", *driver, "--replay", f"{bundle_rel}/{rel}"])}
    if path.suffix != ".bin":
        try:
            doc = load_json(path)
            fuzz = doc["models"][0]["fuzz"]
            entry.update(kind=str(fuzz.get("kind", entry["kind"])), phase=str(fuzz.get("phase", "")),
                         message=str(fuzz.get("message", ""))[:300])
        except (OSError, ValueError, LookupError, TypeError, AttributeError) as e:
            entry["message"] = f"finding file not readable: {' '.join(str(e).split())[:200]}"
    return entry


def _fuzz_outcomes(out: Path, args) -> tuple[dict, list[dict]]:
    """The findings the fuzzer saved (``findings/V_FUZZ/*.json.gz``, and ``findings/inputs/*.bin``
    without a model: an input that did not decode) and libFuzzer's statistics."""
    findings = out / "findings"
    models = sorted((findings / "V_FUZZ").glob("*.json.gz"))
    stems = {p.name[:-len(".json.gz")] for p in models}
    found = models + [p for p in sorted((findings / "inputs").glob("*.bin")) if p.stem not in stems]
    driver = ["--driver", args.driver] + (["--driver-process"] if args.driver_process else [])
    bundle_rel = f"{RESULTS}/{out.name}/findings"
    return ({"findings": len(found), "budget_s": args.fuzz_seconds, **libfuzzer_stats(out / "console.log")},
            [_finding(p, findings, bundle_rel, driver) for p in found])


def outcomes(name: str, out: Path, args) -> tuple[dict, list[dict]]:
    """(counts, failing entries) of suite ``name`` from what it wrote into ``out``
    (``<bundle>/results/<name>``) under the certify options ``args``: for a pytest suite its
    outcome counts and failing records (``{"id", "outcome", "message"}``); for the MLTS its
    model counts and models not passed; for the fuzzer ``{"findings", "budget_s",
    "executions", "exec_per_s"}`` (:func:`libfuzzer_stats`) and one entry per finding with
    ``kind``, ``phase``, ``file`` (relative to the bundle) and ``replay`` (the ``python -m
    fuzz --replay`` command, run from the bundle directory)."""
    if name == "fuzz":
        return _fuzz_outcomes(out, args)
    if name == "mlts":
        return _mlts_outcomes(out)
    return _pytest_outcomes(out)


def driver_coverage_summary(out: Path) -> dict:
    """The driver code coverage a pytest suite wrote into ``out`` (``--driver-coverage``:
    :mod:`harness.driver_coverage`) as the certificate records it: ``{"lines": "342/430",
    "line_percent", "branches": "98/162", "branch_percent", "percent", "files": {path:
    {"line_percent", "branch_percent", "not_reached"}}}``; {} when it wrote none. ValueError
    (one line) for a file that is not such a document."""
    from reports.driver_coverage import load
    section = load(out)
    if section is None:
        return {}

    def figures(row: dict) -> dict:
        return {"lines": f"{row['covered_lines']}/{row['statements']}", "line_percent": row["line_percent"],
                "branches": f"{row['covered_branches']}/{row['branches']}", "branch_percent": row["branch_percent"],
                "percent": row["percent"]}
    return {**figures(section["totals"]), "process": section["process"],
            "files": {f["path"]: dict(figures(f), not_reached=f["missing_ranges"]) for f in section["files"]}}


def _tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


def run_suite(args, name: str, results: Path, fuzz_seeds: Path | None = None) -> SuiteResult:
    """Run suite ``name`` into ``results/<name>/`` (its console output in ``console.log``)
    and judge it: passed when it exited 0 with no failing test, model or finding. Prints a
    line when it starts and one when it ends (status, counts, seconds)."""
    out = results / name
    out.mkdir(parents=True, exist_ok=True)
    cmd = command(args, name, out, fuzz_seeds)
    print(f"certify: {name}: started: {shlex.join(cmd)}", flush=True)
    start = time.monotonic()
    code, reason = _run(cmd, out / "console.log", args.suite_timeout)
    res = SuiteResult(name, "failed", cmd, code, round(time.monotonic() - start, 3))
    try:
        res.counts, failing = outcomes(name, out, args)
    except (OSError, ValueError) as e:
        failing, reason = [], reason or f"its results cannot be read: {e}"
    res.failures, res.failures_total = failing[:MAX_LISTED], len(failing)
    if getattr(args, "driver_coverage", False) and table.suite(name).runs_under_pytest:
        try:
            res.driver_coverage = driver_coverage_summary(out)
        except ValueError as e:
            reason = reason or str(e)
    if code == 0 and not failing and not reason:
        res.status = "passed"
    elif not failing:
        res.reason = reason or f"exit code {code}: {_tail(out / 'console.log')}"
    counts = ", ".join(f"{v} {k}" for k, v in res.counts.items() if v or k in ("passed", "failed", "findings"))
    print(f"certify: {name}: {res.status} in {res.seconds:.1f} s ({counts or 'no results'})"
          + (f": {res.reason}" if res.reason else ""), flush=True)
    return res


def not_run(name: str, reason: str) -> SuiteResult:
    """A suite recorded as not run, with the reason (printed as a progress line)."""
    print(f"certify: {name}: not run: {reason}", flush=True)
    return SuiteResult(name, "not run", reason=reason)
