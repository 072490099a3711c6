"""``nncts triage RUN_A RUN_B [--json] [--report-dir DIR] [--limit N]``: which side of two runs
is wrong.

For every test whose verdict differs between the two runs (pass on one side, fail on the
other: :func:`reports.triage.disagreements`) the test model is rebuilt from what its record
says (a CTS record's corpus model by its id under the run's ``--corpus`` roots, in the
record's ``mode``; a random graph by its configuration and seed), run on the reference
runtime (:func:`runtime.executor.execute`) and judged with NNAPI's criteria
(:func:`runtime.testing.criteria.judge`), and where it has float outputs evaluated in float64
(:func:`runtime.precision.truth.float64_outputs`) to check the golden values themselves.
Records carry no outputs, so each side's driver is re-run on the model when it loads from
the run's ``meta["driver"]`` (a name or ``module:factory``; an out-of-process driver is
loaded in this process; a driver endpoint is not re-run) and the two runs name different
drivers: a CTS test through :func:`harness.runner.run_test_model` in its mode, plus one
plain execution whose outputs give the error as a multiple of the tolerance. Otherwise a
side is judged by its recorded verdict against the reference's. Attribution, borderline
and clusters: :mod:`reports.triage`.

Output: one console line per cluster with the counts; ``--json`` prints the document instead;
``--report-dir DIR`` also writes ``triage.json`` and ``triage.html`` there (``nncts report``
shows the section for a run directory holding ``triage.json``). Exit 0. Bad arguments (a
missing directory, one that is not a report directory, an unreadable record file, a bad
``--limit``) are one line on stderr and exit 2.
"""
from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import numpy as np

from harness.changed_inputs import changed_inputs
from harness.graph_configs import MAX_FEATURE_LEVEL, all_configs, criteria_for
from harness.graphs import GenerationError, generate
from harness.locations import CORPUS, DEFAULT_CORPUS_LABEL, DEFAULT_ROOTS, ROOT, SPECS, SPECS_LABEL
from harness.modes import BASE, parse_mode
from harness.runner import PRECISION_MODES, WAIT_LIMIT_S, execute_compilation, run_test_model, variant
from nncts import triage_suites as sides
from nncts.localize import localize
from random_graph.judge import ambiguity
from reports import triage as doc_
from reports.replay import replay_command
from reports.run import all_records, load_run
from runtime.drivers import DriverNotFound, load_driver
from runtime.errors import HalError, NnapiError
from runtime.executor import execute
from runtime.nnapi import Compilation, Device
from runtime.precision.truth import float64_outputs
from runtime.testing.criteria import is_relaxed, judge, tolerance_for
from runtime.testing.frontend import build_model
from runtime.testing.hal_convert import read_outputs, to_hal_model, to_hal_request
from runtime.testing.test_model import CorpusError, TestModel, corpus_files, load_spec
from runtime.types import OperandType, operand_dtype

#: Disagreements re-run by default (the rest are counted, judged by nothing: undecided).
DEFAULT_LIMIT = 20000
_FLOAT = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.FLOAT32, OperandType.FLOAT16)
#: What a reference or driver run may raise on a hostile or broken model (besides the
#: driver's NnapiError): reported as the run's problem, never a crash of the command.
_RUN_ERRORS = (HalError, NnapiError, ArithmeticError, ValueError, IndexError, TypeError, KeyError)


class ModelSource:
    """Test models by id under a run's corpus roots (``meta["corpus"]``: the labels
    :data:`harness.locations.DEFAULT_CORPUS_LABEL` and ``SPECS_LABEL`` or directories, a
    relative one from the current directory, else the project root; the default roots
    without any that exists), each spec document loaded once. A document whose file stem is
    the id's spec is read first, then (rarely) every other one."""

    def __init__(self, corpus: list | None):
        labels = {DEFAULT_CORPUS_LABEL: CORPUS, SPECS_LABEL: SPECS}
        given = corpus if isinstance(corpus, list) else []
        roots = [labels.get(c) or (Path(c) if Path(c).exists() else ROOT / c) for c in given if isinstance(c, str)]
        self.files = corpus_files([r for r in roots if r.exists()] or list(DEFAULT_ROOTS))
        self.models: dict[str, TestModel] = {}
        self._loaded: set[Path] = set()

    def _load(self, path: Path) -> None:
        if path in self._loaded:
            return
        self._loaded.add(path)
        try:
            for tm in load_spec(path):
                self.models.setdefault(tm.test_id, tm)
        except CorpusError:
            pass

    def find(self, test_id: str) -> TestModel | None:
        """The test model of id ``<version>/<spec>/<name>``; None when no document has it."""
        if test_id in self.models:
            return self.models[test_id]
        spec = test_id.split("/")[1] if test_id.count("/") >= 2 else ""
        first = [f for f in self.files if f.name.split(".")[0] == spec]
        for f in first + [f for f in self.files if f not in first]:
            self._load(f)
            if test_id in self.models:
                return self.models[test_id]
        return None


def rebuild(record: dict, source: ModelSource) -> tuple[TestModel, object] | str:
    """(test model, mode: :class:`harness.modes.Mode`) of a CTS or random-graph record, or
    why it cannot be rebuilt (another suite, an unknown model, mode or configuration)."""
    suite = record.get("suite", "cts")
    if suite == "random_graph":
        parts = record["id"].split("/")
        if len(parts) != 3 or not (parts[2].isdigit() and len(parts[2]) <= 18):
            return f"not a random graph id: {record['id'][:200]!r}"
        name, seed = parts[1], int(parts[2])
        level = name.rsplit("-fl", 1)[1] if "-fl" in name else ""
        level_ok = level.isdigit() and len(level) <= 2 and 1 <= int(level) <= MAX_FEATURE_LEVEL
        configs = all_configs(int(level)) if level_ok else all_configs()
        if name not in configs:
            return f"unknown random-graph configuration {name[:200]!r}"
        try:
            return generate(configs[name], seed, criteria_for(configs[name]).name), BASE
        except GenerationError as e:
            return f"the generator refuses graph {record['id'][:200]}: {e}"
    if suite != "cts":
        return f"suite {suite[:50]} is not rebuilt (CTS and random-graph tests are)"
    try:
        mode = parse_mode(record.get("mode") or "sync")
    except ValueError as e:
        return str(e)
    tm = source.find(record["id"].split("@", 1)[0])
    if tm is None:
        return f"no corpus model {record['id'][:200]!r} under the run's corpus"
    return tm, mode


def error_ratio(tm: TestModel, outputs, against=None) -> float | None:
    """The largest element error of ``outputs`` (one array per main output, None where
    missing) as a multiple of the NNAPI tolerance for its type (``|a - e| / (atol + rtol *
    |e|)``; an exact type: 0 or inf), against ``against`` (one array per output, None to
    skip it) or the expected values; None when no output was measured. Outputs of other
    element counts are inf."""
    worst = None
    for j, idx in enumerate(tm.main.output_indexes):
        o = tm.main.operands[idx]
        expected = o.data if against is None else against[j]
        if expected is None or o.is_ignored or j >= len(outputs) or outputs[j] is None:
            continue
        e = np.asarray(expected, np.float64).reshape(-1)
        a = np.asarray(outputs[j], np.float64).reshape(-1)
        if not e.size:
            continue
        tol = tolerance_for(o.type, is_relaxed(tm), tm.name)
        if a.size != e.size:
            ratio = math.inf
        elif tol.exact or tol.atol + tol.rtol == 0:
            ratio = 0.0 if np.array_equal(a, e) else math.inf
        else:
            with np.errstate(invalid="ignore"):
                r = np.abs(a - e) / (tol.atol + tol.rtol * np.abs(e))
            ratio = math.inf if np.isnan(r).any() else float(r.max())
        worst = ratio if worst is None else max(worst, ratio)
    return worst


def _float_truth(tm: TestModel) -> list | None:
    """The float64 truth of ``tm``'s float outputs (None per other output); None when it has
    none or the reference cannot compute it."""
    if not any(tm.main.operands[i].type in _FLOAT for i in tm.main.output_indexes):
        return None
    try:
        truth = float64_outputs(to_hal_model(tm), [tm.main.operands[i].data for i in tm.main.input_indexes])
    except _RUN_ERRORS:
        return None
    return [t if tm.main.operands[i].type in _FLOAT else None for i, t in zip(tm.main.output_indexes, truth)]


def reference(tm: TestModel, ambiguous=None) -> dict:
    """The reference's judgement of ``tm``: ``verdict`` (pass / fail against the expected
    values, elements of ``ambiguous`` (a random graph's masks, one per output or None:
    :func:`random_graph.judge.ambiguity`) left out; None for a model that must fail, or when
    the reference refuses it), ``error``
    (:func:`error_ratio` of its outputs), ``golden_vs_truth`` (the expected values' error
    against the float64 truth, float outputs only), ``problem`` (its first problem), and the
    ``truth`` arrays (not serialized)."""
    if tm.expect_failure:
        return {"verdict": None, "error": None, "golden_vs_truth": None,
                "problem": "a model that must fail: judged by the recorded verdicts only", "truth": None}
    request = to_hal_request(tm)
    try:
        shapes = execute(to_hal_model(tm), request)
        outs = read_outputs(tm, request, shapes)
    except _RUN_ERRORS as e:
        return {"verdict": None, "error": None, "golden_vs_truth": None,
                "problem": f"the reference refuses the model: {e}", "truth": None}
    problems = judge(tm, [o.tobytes() for o in outs], [list(s.dimensions) for s in shapes], ambiguous)
    truth = _float_truth(tm)
    golden = [tm.main.operands[i].data for i in tm.main.output_indexes]
    return {"verdict": "fail" if problems else "pass", "error": error_ratio(tm, outs),
            "golden_vs_truth": error_ratio(tm, golden, truth) if truth else None,
            "problem": problems[0] if problems else "", "truth": truth}


def driver_device(label) -> tuple[Device | None, str]:
    """(front-end Device, "") of a run's ``meta["driver"]`` label, or (None, why not). A
    ``module:factory`` module is looked for as the suites' pytest finds it: also in the
    current directory and the project's root (both appended to ``sys.path``)."""
    if not isinstance(label, str) or not label:
        return None, "driver not recorded"
    if label.endswith(" (driver endpoint)"):
        return None, "a driver endpoint is not re-run"
    for folder in (str(Path.cwd()), str(ROOT)):   # where pytest's rootdir conftest finds module:factory
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        return Device(load_driver(label.removesuffix(" (out of process)"))), ""
    except (DriverNotFound, TypeError, ImportError, OSError, RuntimeError) as e:
        return None, f"driver {label[:200]} does not load: {' '.join(str(e).split())[:300]}"


def _outputs(tm: TestModel, device: Device) -> tuple[list | None, str]:
    """One plain (sync) execution of ``tm`` on ``device``: (output arrays, "") or (None, why)."""
    try:
        compilation = Compilation.create_for_devices(build_model(tm), [device])
        compilation.finish()
        (raw, dims), = execute_compilation(compilation, tm, require_timing=False)
    except Exception as e:  # noqa: BLE001 - a driver's fault is a finding, never a crash of triage
        return None, f"{type(e).__name__}: {e}"
    outs = []
    for j, idx in enumerate(tm.main.output_indexes):
        # the dimensions are the driver's word: an output whose bytes do not hold them is not measured
        dtype = operand_dtype(tm.main.operands[idx].type)
        n = math.prod(int(d) for d in dims[j])
        data = bytes(raw[j][:n * dtype.itemsize]) if raw is not None else b""
        outs.append(np.frombuffer(data, dtype).reshape(dims[j]) if len(data) == n * dtype.itemsize else None)
    return outs, ""


def run_options(meta: dict) -> dict:
    """The options a run's CTS tests ran with, read from the command line its ``meta``
    records (``environment["command line"]``, ``run.json``): ``require_timing`` (False with
    ``--no-require-timing``), ``precision`` (``--precision aosp|strict``, :data:`
    harness.runner.PRECISION_MODES`) and ``wait_limit_s`` (``--wait-limit``); the suites'
    defaults for those not given or unreadable (a hostile command line is never run, only
    read)."""
    env = meta.get("environment") if isinstance(meta, dict) else None
    line = env.get("command line") if isinstance(env, dict) else None
    out = {"require_timing": True, "precision": "aosp", "wait_limit_s": WAIT_LIMIT_S}
    try:
        words = shlex.split(line[:10_000]) if isinstance(line, str) else []
    except ValueError:
        words = []
    for k, w in enumerate(words):
        key, _, value = w.partition("=")
        if not value and k + 1 < len(words):
            value = words[k + 1]
        if w == "--no-require-timing":
            out["require_timing"] = False
        elif key == "--precision" and value in PRECISION_MODES:
            out["precision"] = value
        elif key == "--wait-limit":
            try:
                limit = float(value)
            except ValueError:
                continue
            if 0 < limit <= 3600:
                out["wait_limit_s"] = limit
    return out


def rerun(tm: TestModel, mode, device: Device, ref: dict, cts: bool, options: dict | None = None,
          ambiguous=None, plain: tuple | None = None) -> dict:
    """A side's re-run of test model ``tm`` in ``mode``: ``rerun`` (pass / fail: a CTS test
    through :func:`harness.runner.run_test_model` in its mode with the run's ``options``
    (:func:`run_options`), a graph by its outputs with its ``ambiguous`` masks left out),
    ``message`` (the re-run's problem), ``error`` and ``truth_error`` (:func:`error_ratio` of
    one plain execution of the mode's variant against the expected values and the float64
    truth ``ref["truth"]``). ``plain``: that execution's (outputs, why) when already made
    (the modes of one model variant share it)."""
    options = options or run_options({})
    run = variant(tm, mode)
    outs, why = plain if plain is not None else _outputs(run, device)
    out = {"error": error_ratio(run, outs) if outs else None,
           "truth_error": error_ratio(run, outs, ref["truth"]) if outs and ref.get("truth") else None}
    if cts:
        outcome = run_test_model(tm, device, mode, **options)
        verdict = {"passed": "pass", "failed": "fail"}.get(outcome.status)
        message = outcome.message
    else:
        if outs is None or any(o is None for o in outs):
            problems = [why or "an output's bytes do not hold the dimensions the driver reported"]
        else:
            problems = judge(run, [o.tobytes() for o in outs], [list(o.shape) for o in outs], ambiguous)
        verdict, message = ("fail", problems[0]) if problems else ("pass", "")
    return {**out, "rerun": verdict, "message": message if verdict == "fail" else ""}


def culprit(tm: TestModel, mode, device: Device) -> dict | None:
    """The operation ``device`` gets wrong first in ``tm`` as ``mode`` runs it
    (:func:`nncts.localize.localize`, each operation alone in a plain execution) on the
    example inputs, else, for a mode that runs changed inputs too (a burst, a reusable
    execution, shared memories: :func:`harness.changed_inputs.changed_inputs`), on those;
    None when none does alone."""
    run = variant(tm, mode)
    tried = [run] + ([changed_inputs(run)] if mode.reuses else [])
    for model in (m for m in tried if m is not None):
        try:
            found = localize(model, [model.main.operands[i].data for i in model.main.input_indexes],
                             lambda m: _outputs(m, device))
        except _RUN_ERRORS:  # a model the isolation cannot take apart: clustered by its message
            found = None
        if found is not None:
            return found
    return None


def triage(a_path: str, b_path: str, limit: int = DEFAULT_LIMIT) -> dict:
    """The triage document (:func:`reports.triage.build`) of runs ``a_path`` and ``b_path``
    (report directories or bundles: :func:`reports.run.load_run`, whose ValueError says
    which is not one). At most ``limit`` disagreements are rebuilt and re-run; the others
    are undecided (noted). Models are looked for under run A's corpus, then run B's."""
    runs = {"A": load_run([a_path]), "B": load_run([b_path])}
    for s, path in (("A", a_path), ("B", b_path)):
        if not any((d.path / "outcomes.jsonl").is_file() for d in runs[s]):
            raise ValueError(f"{path}: no outcome records (outcomes.jsonl): not a suite's report directory")
    records = {s: all_records(d) for s, d in runs.items()}
    metas = {s: (d[0].meta if d else {}) for s, d in runs.items()}
    pairs, compared, one_sided = doc_.disagreements(records["A"], records["B"])
    labels = {s: metas[s].get("driver") if isinstance(metas[s].get("driver"), str) else "" for s in runs}
    devices, why_not = {}, {}
    for s in runs:
        devices[s], why_not[s] = driver_device(labels[s]) if labels["A"] != labels["B"] else \
            (None, "both runs name the same driver: judged by the recorded verdicts")
    sources = {s: ModelSource(metas[s].get("corpus")) for s in runs}
    options = {s: run_options(metas[s]) for s in runs}
    memo: dict = {}
    entries = []
    for n, (ra, rb) in enumerate(pairs):
        entry = {"suite": ra.get("suite", "cts"), "id": ra["id"], "mode": ra.get("mode", ""), "how": "recorded",
                 "note": "",
                 **{s.lower(): {"outcome": r["outcome"], "verdict": doc_.verdict(r), "rerun": None, "error": None,
                                "truth_error": None, "message": r.get("message", ""),
                                "replay": replay_command(r, metas[s])} for s, r in (("A", ra), ("B", rb))}}
        if entry["suite"] in ("vts", "precision") and n < limit:
            entry.update(_other_suite(entry, ra, devices, options))
            entries.append(entry)
            continue
        built = rebuild(ra, sources["A"]) if n < limit else f"past --limit {limit}: not re-run"
        if isinstance(built, str) and built.startswith("no corpus model"):
            built = rebuild(ra, sources["B"])
        if isinstance(built, str):
            entry["reference"] = {"verdict": None, "error": None, "golden_vs_truth": None, "problem": ""}
            entry["note"] = built
        else:
            tm, mode = built
            # what depends on the model variant only is computed once for all its modes
            key = (entry["suite"], tm.test_id if entry["suite"] == "cts" else ra["id"], mode.coupling, mode.outputs)
            if key not in memo:
                memo.clear()  # a model's modes are adjacent in the sorted pairs: keep one
                masks = ambiguity(tm).masks if entry["suite"] == "random_graph" else None
                memo[key] = {"masks": masks, "ref": reference(variant(tm, mode), masks)}
            known = memo[key]
            ref, masks = known["ref"], known["masks"]
            for s in runs:
                if devices[s] is not None:
                    if ("plain", s) not in known:
                        known[("plain", s)] = _outputs(variant(tm, mode), devices[s])
                    entry[s.lower()].update(rerun(tm, mode, devices[s], ref, entry["suite"] == "cts", options[s],
                                                  masks, known[("plain", s)]))
                    entry["how"] = "re-run"
            entry["reference"] = {k: v for k, v in ref.items() if k != "truth"}
            wrong = doc_.attribute(entry)
            for s in runs:
                side = entry[s.lower()]
                if devices[s] is not None and wrong in (s, "both") and doc_.side_verdict(side) == "fail":
                    if ("culprit", s) not in known:
                        known[("culprit", s)] = culprit(tm, mode, devices[s])
                    side["culprit"] = known[("culprit", s)]
            notes = [f"{s}: {why_not[s]}" for s in runs if devices[s] is None and why_not[s]]
            if ref.get("golden_vs_truth") is not None and ref["golden_vs_truth"] > 1:
                notes.append("the expected values disagree with the float64 truth beyond the tolerance")
            entry["note"] = "; ".join(dict.fromkeys(notes))
        entries.append(entry)
    run_info = {s: {"path": str(p), "driver": labels[s]} for s, p in (("A", a_path), ("B", b_path))}
    return doc_.build(entries, records["A"], records["B"], run_info, compared, one_sided)


def _other_suite(entry: dict, record: dict, devices: dict, options: dict) -> dict:
    """``reference``, ``how``, ``note`` and the sides' re-runs of a VTS or precision-sweep
    entry (:mod:`nncts.triage_suites`)."""
    if entry["suite"] == "vts":
        return {"reference": dict(sides.VTS_REFERENCE), "how": "HAL contract", "note": sides.VTS_NOTE}
    found = sides.sweep_case(record)
    if isinstance(found, str):
        return {"reference": dict(sides.SWEEP_REFERENCE), "how": "recorded", "note": f"{sides.SWEEP_NOTE}; {found}"}
    case, mode = found
    how = "recorded"
    for s, device in devices.items():
        if device is not None:
            entry[s.lower()].update(sides.rerun_sweep(case, mode, device, options[s]))
            how = "re-run"
    return {"reference": dict(sides.SWEEP_REFERENCE), "how": how, "note": sides.SWEEP_NOTE}


def _triage(args, parser) -> int:
    prog = "nncts triage"
    if args.limit < 0:
        parser.exit(2, f"{prog}: error: --limit: must be at least 0\n")
    try:
        doc = triage(args.a, args.b, args.limit)
        paths = doc_.write(doc, args.report_dir) if args.report_dir else []
    except (ValueError, OSError) as e:
        parser.exit(2, f"{prog}: error: {' '.join(str(e).split())}\n")
    if args.json:
        print(json.dumps(doc, indent=1, sort_keys=True))
    else:
        print("\n".join(doc_.format_lines(doc)))
        if paths:
            print("report:", ", ".join(map(str, paths)))
    return 0


def add_parsers(sub) -> None:
    """Add ``triage`` to the nncts parser's subparsers ``sub``."""
    p = sub.add_parser("triage", help="for every test whose verdict differs between two runs: re-run it on the "
                                      "reference (float64 truth for float outputs) and say which side is wrong, "
                                      "which is borderline, in clusters by operation, operand type and message")
    p.add_argument("a", metavar="RUN_A", help="the first run: a report directory (outcomes.jsonl) or a bundle")
    p.add_argument("b", metavar="RUN_B", help="the second run: a report directory or a bundle")
    p.add_argument("--json", action="store_true", help="print the triage document as JSON instead of the summary")
    p.add_argument("--report-dir", default=None, metavar="DIR",
                   help="also write triage.json and triage.html into DIR (created)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                   help=f"re-run at most N disagreements (default {DEFAULT_LIMIT}); the rest stay undecided")
    p.set_defaults(handler=_triage)

