"""Run one corpus test model through the front end (Model -> Compilation -> Execution) on a
device, in one execution mode (:mod:`harness.modes`), and judge it with the NNAPI accuracy
criteria."""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from runtime.errors import NnapiError
from runtime.nnapi import Compilation, Device, Execution, Model, get_supported_operations_for_devices
from runtime.nnapi.burst import Burst
from runtime.precision.budgets import OVER, TestBudget, grade, measure, test_budget, worst
from runtime.testing.criteria import judge
from runtime.testing.expected_failure import EXECUTION, PREPARE, SUPPORT, ExpectedFailure, expected_failure
from runtime.testing.frontend import build_model  # noqa: F401  (re-exported for tests)
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.support import not_implemented_reason
from runtime.testing.test_model import TestModel
from runtime.testing.transforms import with_dynamic_outputs, with_signed_quantization
from runtime.types import NO_TIMING, DurationCode, OperandType, ResultCode, operand_dtype

from .binding import Binding
from .changed_inputs import changed_inputs
from .memo import IdentityMemo
from .modes import BASE, Mode

#: Longest the harness waits on an asynchronous or fenced completion by default (seconds).
WAIT_LIMIT_S = 30.0


@dataclass
class Outcome:
    """Result of one test model in one mode: ``status`` is passed, failed or skipped;
    ``message`` says why; ``skip_kind`` groups skips (not_implemented, feature_level,
    unsupported_by_driver, runtime_rejected: the front end rejected a model that must fail
    before the driver saw it, so nothing of the driver was judged). ``precision``: the
    record fields of the precision grade (:func:`precision_fields`), empty when no float
    output was measured."""

    status: str
    message: str = ""
    skip_kind: str = ""
    details: list[str] = field(default_factory=list)
    precision: dict = field(default_factory=dict)


class Failure(Exception):
    """A check of the harness failed (the message says which)."""


#: What the modes of one test model share, computed once per worker process: why it cannot
#: run, its variants, the built front-end model with the driver's support answer, the
#: compilation (every mode but the cache modes, which compile through files), the changed
#: inputs of the modes that reuse objects (:mod:`harness.memo`).
_SKIPS = IdentityMemo(16)
_VARIANTS = IdentityMemo(16)
_BUILT = IdentityMemo(8)
_COMPILED = IdentityMemo(8)
_CHANGED = IdentityMemo(8)


def skip_reason(tm: TestModel, device: Device) -> tuple[str, str] | None:
    """(kind, reason) when ``tm`` cannot be judged yet on ``device``, else None (computed
    once per test model and device in this process)."""
    return _SKIPS.get((tm, device), (), lambda: _skip_reason(tm, device))


def _skip_reason(tm: TestModel, device: Device) -> tuple[str, str] | None:
    reason = not_implemented_reason(to_hal_model(tm), signatures_too=not tm.expect_failure)
    if reason:
        return "not_implemented", reason
    if tm.feature_level > device.feature_level:
        return "feature_level", (f"not implemented by the driver: the model needs feature level "
                                 f"{tm.feature_level}, driver {device.name} implements up to "
                                 f"{device.feature_level}")
    return None


def variant(tm: TestModel, mode: Mode) -> TestModel:
    """``tm`` as ``mode`` runs it: signed quantization, unspecified output dimensions (the
    same object for every mode that makes the same variant of ``tm``, in this process)."""
    return _variant(tm, mode)[0]


def _variant(tm: TestModel, mode: Mode) -> tuple[TestModel, str | None]:
    """(``variant(tm, mode)``, why the operation table cannot run it or None)."""
    return _VARIANTS.get((tm,), (mode.coupling, mode.outputs != "specified"), lambda: _make_variant(tm, mode))


def _make_variant(tm: TestModel, mode: Mode) -> tuple[TestModel, str | None]:
    reason = None
    if mode.coupling:
        tm = with_signed_quantization(tm)
    if mode.outputs != "specified":
        tm = with_dynamic_outputs(tm)
    if mode.coupling:
        reason = not_implemented_reason(to_hal_model(tm))
    return tm, reason


def _build(tm: TestModel, device: Device) -> tuple[Model, list[bool]]:
    """The front-end model of ``tm`` (built and validated once per test model variant in
    this process) and ``device``'s support answer for each of its operations."""
    def build():
        model = build_model(tm)
        return model, get_supported_operations_for_devices(model, [device])
    return _BUILT.get((tm, device), (), build)


def forget_prepared() -> None:
    """Drop every kept compilation and built model: called after a failed test, since a
    driver that failed (or whose process was restarted) may no longer stand behind them."""
    _BUILT.clear()
    _COMPILED.clear()


def scratch_dir() -> str | None:
    """Where cache-mode compilations put their cache files when no ``workdir`` is given: a
    memory file system (``/dev/shm``) when there is a writable one, since creating and
    removing a few small files per model costs milliseconds on a disk and the caches never
    outlive the test; else the system's temporary directory (None)."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


SCRATCH = scratch_dir()


def _compile(model: Model, device: Device, tm: TestModel, mode: Mode, workdir: Path | None) -> Compilation:
    """Compile for ``device`` only; in cache mode compile once to write the cache, then again
    (from the cache) and return that second compilation."""
    def compile_once(cache_dir=None, token=None) -> Compilation:
        c = Compilation.create_for_devices(model, [device])
        if cache_dir is not None:
            c.set_caching(cache_dir, token)
        c.finish()
        return c

    if not mode.cache:
        return _COMPILED.get((model, device), (), compile_once)
    token = hashlib.sha256(tm.test_id.encode()).digest()
    cache_dir = Path(tempfile.mkdtemp(prefix="nncts-cache-", dir=workdir or SCRATCH))
    try:
        compile_once(cache_dir, token)
        return compile_once(cache_dir, token)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def _decoy_model() -> Model:
    """A tiny valid model (ADD of two float32[1]) whose cache is planted as a foreign cache
    (built once per process: a finished Model may be compiled any number of times)."""
    m = Model()
    a, b = m.add_operand(OperandType.TENSOR_FLOAT32, [1]), m.add_operand(OperandType.TENSOR_FLOAT32, [1])
    act = m.add_operand(OperandType.INT32)
    m.set_operand_value(act, np.int32(0))
    out = m.add_operand(OperandType.TENSOR_FLOAT32, [1])
    m.add_operation(0, [a, b, act], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    return m


def bad_cache_compilations(model: Model, device: Device, tm: TestModel, workdir: Path | None):
    """Yield (what, Compilation) for compilations made over a planted foreign cache (another
    model's cache files under this model's file names; the runtime's driver token is tied to
    the model, so a careful driver rejects it) and over a corrupted cache; each must still
    give the right results (the driver rejects the bad cache and prepares fully). Nothing
    when the driver does not cache."""
    if device.hal.get_number_of_cache_files_needed() == (0, 0):
        return
    token = hashlib.sha256(tm.test_id.encode()).digest()
    base = Path(tempfile.mkdtemp(prefix="nncts-badcache-", dir=workdir or SCRATCH))
    try:
        good, decoy = base / "good", base / "decoy"
        good.mkdir()
        decoy.mkdir()
        c = Compilation.create_for_devices(_decoy_model(), [device])
        c.set_caching(decoy, token)  # same app token: the runtime's driver token still differs
        c.finish()
        for path in decoy.iterdir():
            shutil.copy(path, good / path.name)
        c = Compilation.create_for_devices(model, [device])
        c.set_caching(good, token)
        c.finish()
        yield "a foreign cache (another model's, same file names)", c
        for path in good.iterdir():
            data = bytearray(path.read_bytes())
            for k in range(len(data) // 2, len(data), max(len(data) // 16, 1)):
                data[k] ^= 0x5A
            path.write_bytes(bytes(data))
        c = Compilation.create_for_devices(model, [device])
        c.set_caching(good, token)
        c.finish()
        yield "a corrupted cache", c
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _check_timing(execution: Execution, fenced: bool) -> None:
    codes = [DurationCode.ON_HARDWARE, DurationCode.IN_DRIVER]
    if fenced:
        codes += [DurationCode.FENCED_ON_HARDWARE, DurationCode.FENCED_IN_DRIVER]
    values = {c: execution.get_duration(c) for c in codes}
    missing = [c.name for c, v in values.items() if v == NO_TIMING]
    if missing:
        raise Failure(f"timing was requested but not reported: {', '.join(missing)} is UINT64_MAX")
    if values[DurationCode.ON_HARDWARE] > values[DurationCode.IN_DRIVER]:
        raise Failure(f"timing on hardware {values[DurationCode.ON_HARDWARE]} ns exceeds time in driver "
                      f"{values[DurationCode.IN_DRIVER]} ns")


def _compute(execution: Execution, compute: str, burst: Burst | None, wait_limit_s: float) -> None:
    if compute in ("sync", "reusable"):
        execution.compute()
    elif compute == "async":
        execution.start_compute().wait(wait_limit_s)
    elif compute == "burst":
        execution.burst_compute(burst)
    else:
        execution.start_compute_with_dependencies([], 0).wait(wait_limit_s)


def _execute(compilation: Compilation, sequence: list[TestModel], mode: Mode, require_timing: bool,
             wait_limit_s: float = WAIT_LIMIT_S, measure_timing: bool = True, loop_timeout_ns: int | None = None):
    """Run each test model of ``sequence`` (one model, perhaps with other input values) in
    turn on ``compilation`` in ``mode``, over one :class:`~harness.binding.Binding` (outputs
    poisoned before each run, inputs rewritten in place between runs), one Burst for a
    burst and one reusable Execution for ``reusable``; returns a list of (output bytes,
    dimensions) per run (output bytes None after OUTPUT_INSUFFICIENT_SIZE). Each execution
    gets ``loop_timeout_ns`` (``set_loop_timeout``) unless it is None (the default 2 s)."""
    runs, execution = [], None
    binding = Binding(compilation, sequence[0], mode.memory, mode.outputs == "insufficient")
    burst = Burst(compilation) if mode.compute == "burst" else None
    n_out = len(sequence[0].main.output_indexes)
    try:
        for k, tm in enumerate(sequence):
            if k and tm is not sequence[k - 1]:
                binding.load(tm)
            binding.poison(tm)
            if execution is None or mode.compute != "reusable":
                execution = Execution(compilation)
                if mode.compute == "reusable":
                    execution.set_reusable(True)
                if measure_timing:
                    execution.set_measure_timing(True)
                if loop_timeout_ns is not None:
                    execution.set_loop_timeout(loop_timeout_ns)
                binding.attach(execution)
            try:
                _compute(execution, mode.compute, burst, wait_limit_s)
            except NnapiError as e:
                if mode.outputs != "insufficient" or e.code != ResultCode.OUTPUT_INSUFFICIENT_SIZE:
                    raise
                try:
                    dims = [execution.get_output_operand_dimensions(j) for j in range(n_out)]
                except NnapiError:
                    raise Failure("OUTPUT_INSUFFICIENT_SIZE without output dimensions") from None
                runs.append((None, dims))
                continue
            if require_timing:
                _check_timing(execution, mode.compute == "fenced")
            runs.append((binding.read(), [execution.get_output_operand_dimensions(j) for j in range(n_out)]))
    finally:
        if burst:
            burst.free()
    return runs


def run_sequence(tm: TestModel, mode: Mode) -> list[tuple[str, TestModel]]:
    """(label, test model) per run of ``tm`` in ``mode``: one run, or for a mode that
    reuses objects (:attr:`Mode.reuses`) the example inputs, changed inputs
    (:func:`harness.changed_inputs.changed_inputs`; the example inputs again when nothing can
    change, or the outputs are insufficient), then the example inputs."""
    if not mode.reuses:
        return [("", tm)]
    changed = None if mode.outputs == "insufficient" else _CHANGED.get((tm,), (), lambda: changed_inputs(tm))
    if changed is None:
        return [("run 1", tm), ("run 2", tm)]
    return [("run 1", tm), ("run 2 (changed inputs)", changed), ("run 3", tm)]


def execute_compilation(compilation: Compilation, tm: TestModel, require_timing: bool = True,
                        wait_limit_s: float = WAIT_LIMIT_S):
    """Run ``tm`` once on a finished ``compilation`` (sync, user buffers); returns
    [(output bytes, dimensions)]. Timing is requested only with ``require_timing`` (NNAPI
    allows it for single-device compilations only). Raises NnapiError or :class:`Failure`."""
    return _execute(compilation, [tm], BASE, require_timing, wait_limit_s, measure_timing=require_timing)


# --- precision: the driver's error in ULP against the float64 truth, graded by the budgets ----

#: ``--precision`` values: ``aosp`` (the AOSP tolerance is the verdict, the budget a grade
#: beside it) or ``strict`` (an over-budget float output fails the test too).
PRECISION_MODES = ("aosp", "strict")
_FLOAT_OUTPUTS = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.FLOAT32, OperandType.FLOAT16)
#: Test models whose truth and bounds this process keeps (the modes of a model share them).
BUDGET_CACHE_SIZE = 32
_BUDGETS = IdentityMemo(BUDGET_CACHE_SIZE)


def model_budget(tm: TestModel) -> TestBudget | None:
    """The float64 truth and output bounds of ``tm``'s example
    (:func:`runtime.precision.budgets.test_budget`), computed once per test model in this
    process and kept for the next :data:`BUDGET_CACHE_SIZE` models (every execution mode
    of a model runs its example). None without a float output, or when the reference
    cannot compute the truth."""
    return _BUDGETS.get((tm,), (), lambda: _model_budget(tm))


def _model_budget(tm: TestModel) -> TestBudget | None:
    if not any(tm.main.operands[i].type in _FLOAT_OUTPUTS for i in tm.main.output_indexes):
        return None
    try:
        return test_budget(to_hal_model(tm), [tm.main.operands[i].data for i in tm.main.input_indexes])
    except Exception:  # noqa: BLE001 - no truth, no grade (the AOSP verdict stands alone)
        return None


def precision_errors(tm: TestModel, tb: TestBudget, outputs, dims) -> list:
    """:func:`runtime.precision.budgets.measure` of each float output of one execution of
    ``tm`` (``outputs`` / ``dims`` as :func:`runtime.testing.criteria.judge` takes them)
    with an expected value of the expected dimensions, not ignored and not empty."""
    errors = []
    for j, idx in enumerate(tm.main.output_indexes):
        o, bound = tm.main.operands[idx], tb.outputs[j]
        if bound is None or o.is_ignored or o.data is None or not o.data.size or list(dims[j]) != list(o.data.shape):
            continue
        dtype = operand_dtype(o.type)
        actual = np.frombuffer(bytes(outputs[j][:o.data.size * dtype.itemsize]), dtype)
        if actual.size == o.data.size:
            errors.append(measure(bound, tb.truth[j], actual, j))
    return errors


def precision_fields(tm: TestModel, errors) -> dict:
    """Record fields of a test's precision (none without a measured output): ``precision``
    (its grade: "within budget", "over budget", "no budget"), and of its worst output
    (:func:`runtime.precision.budgets.worst`) ``ulp_max`` (null when infinite), ``ulp_mean``
    and ``ulp_budget`` (when it has one) in ULP, and ``ulp_worst``: output, element, ULP,
    budget and values in words."""
    g, w = grade(errors), worst(errors)
    if not g or w is None:
        return {}
    finite = w.ulp_max < float("inf")
    fields = {"precision": g, "ulp_max": round(w.ulp_max, 4) if finite else None,
              "ulp_mean": round(w.ulp_mean, 4) if w.ulp_mean < float("inf") else None,
              "ulp_worst": w.describe(_output_type(tm, w.output))}
    if w.budget < float("inf"):
        fields["ulp_budget"] = w.budget
    return fields


def _output_type(tm: TestModel, j: int) -> str:
    return tm.main.operands[tm.main.output_indexes[j]].type.name


def strict_problems(tm: TestModel, errors) -> list[str]:
    """``--precision strict``: one problem per over-budget output (its worst execution),
    naming the output, element, ULP and budget."""
    worst_of: dict[int, object] = {}
    for e in errors:
        if e is not None and e.grade == OVER and (e.output not in worst_of or e.ulp_max > worst_of[e.output].ulp_max):
            worst_of[e.output] = e
    return [f"precision (strict): {e.describe(_output_type(tm, j))} over budget" for j, e in sorted(worst_of.items())]


def run_test_model(tm: TestModel, device: Device, mode: Mode = BASE, workdir: Path | None = None,
                   require_timing: bool = True, wait_limit_s: float = WAIT_LIMIT_S,
                   precision: str = "aosp") -> Outcome:
    """Build, compile for ``device`` only, execute in ``mode`` and compare ``tm``; never
    raises for a driver's fault (it becomes a failed Outcome). The modes of one test model
    share its built model, the driver's support answer and (but for the cache modes) its
    compilation, each made once in this process; a failed outcome drops them all
    (:func:`forget_prepared`), so the next test builds and prepares afresh. A model that must fail
    (``expect_failure``) is judged by :func:`run_expected_failure`. Every execution of the
    example inputs is also graded by the error budgets (:func:`model_budget`,
    ``Outcome.precision``); with ``precision`` "strict" (:data:`PRECISION_MODES`) an
    over-budget float output fails the test (:func:`strict_problems`)."""
    outcome = _run_test_model(tm, device, mode, workdir, require_timing, wait_limit_s, precision)
    if outcome.status == "failed":
        forget_prepared()
    return outcome


def _run_test_model(tm: TestModel, device: Device, mode: Mode, workdir: Path | None, require_timing: bool,
                    wait_limit_s: float, precision: str) -> Outcome:
    skip = skip_reason(tm, device)
    if skip:
        return Outcome("skipped", skip[1], skip[0])
    run, reason = _variant(tm, mode)
    if reason:
        return Outcome("skipped", f"signed variant: {reason}", "not_implemented")
    if tm.expect_failure:
        return run_expected_failure(run, device, expected_failure(tm), mode, workdir, wait_limit_s)
    try:
        model, supported = _build(run, device)
        if not all(supported):
            return _declined(run, device, supported)
        compilation = _compile(model, device, tm, mode, workdir)
        sequence = run_sequence(run, mode)
        runs = _execute(compilation, [t for _, t in sequence], mode, require_timing, wait_limit_s)
        extra = []
        if mode.cache:
            what = "planting a bad cache"
            try:
                for what, c in bad_cache_compilations(model, device, tm, workdir):
                    extra.append((what, _execute(c, [run], BASE, require_timing, wait_limit_s)))
            except NnapiError as e:
                raise Failure(f"after {what}: {e}") from None
    except NnapiError as e:
        return Outcome("failed", str(e))
    except Failure as e:
        return Outcome("failed", str(e))
    if mode.outputs == "insufficient":
        outputs, dims = runs[0]
        if outputs is not None:
            return Outcome("failed", "an output buffer one byte too small did not give OUTPUT_INSUFFICIENT_SIZE")
        wrong = [f"output {j}: dimensions {dims[j]}, expected {list(tm.main.operands[i].data.shape)}"
                 for j, i in enumerate(tm.main.output_indexes)
                 if tm.main.operands[i].data is not None and dims[j] != list(tm.main.operands[i].data.shape)]
        return Outcome("failed", "; ".join(wrong)) if wrong else Outcome("passed")
    problems = []
    for (label, judged), (outputs, dims) in zip(sequence, runs):
        problems += [f"{label}: {p}" if label else p for p in judge(judged, outputs, dims)]
    for what, extra_runs in extra:
        problems += [f"after {what}: {p}" for p in judge(run, *extra_runs[0])]
    tb, errors = model_budget(tm), []
    if tb is not None:
        for (_, judged), (outputs, dims) in [*zip(sequence, runs), *((("", run), r[0]) for _, r in extra)]:
            if judged is run:
                errors += precision_errors(run, tb, outputs, dims)
        if precision == "strict":
            problems += strict_problems(run, errors)
    fields = precision_fields(run, errors)
    if problems:
        return Outcome("failed", "; ".join(problems), details=problems, precision=fields)
    return Outcome("passed", precision=fields)


def _declined(tm: TestModel, device: Device, supported: list[bool]) -> Outcome:
    """The skip of a model some of whose operations ``device`` does not support."""
    ops = [tm.main.operations[k].type.name for k, ok in enumerate(supported) if not ok]
    return Outcome("skipped", f"driver {device.name} does not support {', '.join(ops)}", "unsupported_by_driver")


def run_expected_failure(tm: TestModel, device: Device, due: ExpectedFailure, mode: Mode = BASE,
                         workdir: Path | None = None, wait_limit_s: float = WAIT_LIMIT_S) -> Outcome:
    """Judge a model that must fail (:mod:`runtime.testing.expected_failure`) on ``device``:
    build it, ask ``getSupportedOperationsForDevices``, compile (``Compilation.finish``:
    the driver's ``prepare_model``) and execute once in ``mode`` (an endless loop with its
    1 ms loop timeout). Passed only when the failure ``due`` comes at a stage and with a code
    it allows. Skipped ``runtime_rejected`` when the front end rejects the model while it is
    built (the driver never saw it: not a pass), ``unsupported_by_driver`` when the driver
    declines an operation. Failed for any other failure (a driver's exception is OP_FAILED,
    a GENERAL_FAILURE is OP_FAILED, an execution failure where rejection was due), the
    message naming the stage and code seen and those due, and when every step succeeds."""
    try:
        model = build_model(tm)
    except NnapiError as e:
        return Outcome("skipped", f"the runtime rejected the model before driver {device.name} saw it ({e}); "
                                  f"expected of the driver: {due.describe(front_end=True)}", "runtime_rejected")
    stage = SUPPORT
    try:
        supported = get_supported_operations_for_devices(model, [device])
        if not all(supported):
            return _declined(tm, device, supported)
        stage = PREPARE
        compilation = _compile(model, device, tm, mode, workdir)
        stage = EXECUTION
        _execute(compilation, [tm], mode, False, wait_limit_s, measure_timing=False,
                 loop_timeout_ns=due.loop_timeout_ns)
    except NnapiError as e:
        problem = due.judge(stage, e.code)
        if problem is None:
            return Outcome("passed", f"failed as due ({due.describe(front_end=True)}): {e}")
        return Outcome("failed", f"{problem}: {e}")
    except Failure as e:  # the execution ended without an error code the harness could judge
        return Outcome("failed", f"expected {due.describe(front_end=True)}; got no error from the execution: {e}")
    return Outcome("failed", due.every_step_succeeded(front_end=True))
