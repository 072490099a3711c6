"""One fuzz iteration: decode the input (:mod:`fuzz.decoder`), run it through the driver's
HAL interface and through the front end, and compare with the reference validator.

Steps (:func:`check_case`):

1. Reference: the test model becomes a HAL model and request (:func:`to_hal_model`,
   :func:`fuzz.request.build_request`), the decoded HAL tweaks are applied, and
   :func:`runtime.hal.validate.validate_model` judges the model.
2. HAL path on the driver: ``get_supported_operations``, ``prepare_model``, then (if
   prepared) ``execute_synchronously`` on the request (``validate_request`` judges it).
3. Front-end path (the untweaked test model): Model (built by
   :func:`runtime.testing.frontend.build_model`, as the CTS builds corpus models; total for
   any decoded model), ``Compilation.create_for_devices`` for the
   driver only, ``Execution`` with the decoded inputs and output buffers of the planned
   sizes, ``compute``.

The *validation* target (:func:`check_validation`, ``python -m fuzz --target validation``)
runs step 1 and the model half of step 2 only: decode, the reference ``validate_model``,
the driver's ``get_supported_operations`` and ``prepare_model``, with the same findings
(crash, masked crash, differential, contract) and no request, execution or front end. It
exists for speed (thousands of inputs per second): model validation is where most of the
input space is decided.

Success and documented errors (HalError with an ErrorStatus on the HAL path, NnapiError
with a ResultCode on the front end) are fine. Findings (:mod:`fuzz.findings`): any other
exception (``crash``); a documented error wrapping a caught crash (``masked-crash``);
the driver accepting a model or request the reference validator rejects
(``differential``: "driver accepted an invalid model: <reason>"); a malformed return value
(``contract``). Hangs and memory blow-ups are caught by libFuzzer (``-timeout``,
``-rss_limit_mb``) and converted after the run.

Every execution (HAL and front end) bounds its WHILE loops by :data:`LOOP_TIMEOUT_NS`
(100 ms, NNAPI's ``loopTimeoutDuration``) instead of the 2 s default: a loop still running
then ends the execution with MISSED_DEADLINE_TRANSIENT, a documented error, as a 2 s loop
would have, and a driver that ignores the bound still hangs into libFuzzer's ``-timeout``.
Loops of the corpus end within a fifth of it under instrumentation.
"""
from __future__ import annotations

import hashlib
import warnings

import numpy as np

from runtime.errors import HalError, NnapiError
from runtime.hal.types import OutputShape, Request
from runtime.hal.validate import freeze_model, validate_model, validate_request
from runtime.nnapi import Compilation, Device, Execution
from runtime.testing.frontend import build_model as build_frontend_model
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import TestModel
from runtime.types import OperandLifeTime

from .decoder import FuzzCase, Rejected, apply_tweaks, decode
from .findings import (Finding, FindingRecorder, crash_finding, is_masked_crash,
                       mask_numbers, masked_crash_finding)
from .request import build_request, output_size, raw_data

L = OperandLifeTime
#: The WHILE loop timeout of every fuzz execution (ns): see the module docstring.
LOOP_TIMEOUT_NS = 100_000_000


def _check_supported(result, n_ops: int) -> str | None:
    try:
        flags = list(result)
    except TypeError:
        return f"get_supported_operations returned {type(result).__name__}, not a list"
    if len(flags) != n_ops:
        return f"get_supported_operations returned {len(flags)} flags for {n_ops} operations"
    if not all(isinstance(f, (bool, np.bool_)) for f in flags):
        return "get_supported_operations returned a non-bool flag"
    return None


def _check_execution_result(result, n_outputs: int) -> str | None:
    try:
        shapes, _timing = result
        shapes = list(shapes)
    except (TypeError, ValueError):
        return f"execute_synchronously returned {type(result).__name__}, not (output shapes, timing)"
    if len(shapes) != n_outputs:
        return f"execute_synchronously returned {len(shapes)} output shapes for {n_outputs} outputs"
    if not all(isinstance(s, OutputShape) for s in shapes):
        return "execute_synchronously returned an output shape that is not an OutputShape"
    return None


def _differential(phase: str, reason: str, what: str = "model") -> Finding:
    return Finding("differential", phase, f"driver accepted an invalid {what} ({phase}): {reason}",
                   f"{what}: {mask_numbers(reason)}")


def check_case(case: FuzzCase, hal_device, device: Device | None, paths=("hal", "frontend")) -> list[Finding]:
    """Run ``case`` on the driver (HAL ``hal_device``; front end ``device``) and return the
    findings (empty when every outcome was success or a documented error)."""
    findings: list[Finding] = []
    tm = case.model
    try:
        hal_model = to_hal_model(tm)
        request = build_request(tm, case.output_plan)
        apply_tweaks(case.tweaks, hal_model, request)
    except Exception as e:  # noqa: BLE001 - a crash of the test-model conversion itself
        return [crash_finding("convert", e)]
    freeze_model(hal_model)  # final from here: the driver calls reuse the reference's key

    if "hal" in paths:
        findings += _hal_path(hal_model, request, hal_device)
    if "frontend" in paths and device is not None:
        findings += _frontend_path(tm, case.output_plan, device)
    return findings


def check_validation(case: FuzzCase, hal_device) -> list[Finding]:
    """The validation-only target: ``case``'s HAL model (with its tweaks) through the
    reference validator and the driver's ``get_supported_operations`` and ``prepare_model``;
    nothing is executed. Returns the findings (empty when all is well)."""
    try:
        hal_model = to_hal_model(case.model)
        apply_tweaks(case.tweaks, hal_model, Request([], [], []))  # request tweaks: no targets
    except Exception as e:  # noqa: BLE001 - a crash of the test-model conversion itself
        return [crash_finding("convert", e)]
    freeze_model(hal_model)
    return _hal_path(hal_model, None, hal_device)


def _hal_path(hal_model, request, drv) -> list[Finding]:
    """HAL checks of ``hal_model`` on driver ``drv``; ``request`` None: model calls only."""
    findings = []
    invalid = None
    try:
        validate_model(hal_model)
    except HalError as e:
        invalid = e.message
    except Exception as e:  # noqa: BLE001
        findings.append(crash_finding("reference:validate_model", e))
        invalid = f"validator crashed ({type(e).__name__})"
    n_ops = len(hal_model.main.operations)
    accepted = []
    try:
        result = drv.get_supported_operations(hal_model)
        problem = _check_supported(result, n_ops)
        if problem and invalid is None:
            findings.append(Finding("contract", "hal:get_supported_operations", problem, problem))
        accepted.append("get_supported_operations")
    except HalError as e:
        if is_masked_crash(e.message):
            findings.append(masked_crash_finding("hal:get_supported_operations", e))
    except Exception as e:  # noqa: BLE001
        findings.append(crash_finding("hal:get_supported_operations", e))
    prepared = None
    try:
        prepared = drv.prepare_model(hal_model)
        accepted.append("prepare_model")
    except HalError as e:
        if is_masked_crash(e.message):
            findings.append(masked_crash_finding("hal:prepare_model", e))
    except Exception as e:  # noqa: BLE001
        findings.append(crash_finding("hal:prepare_model", e))
    if invalid is not None and accepted:
        findings.append(_differential("hal:" + ", ".join(accepted), invalid))
    if prepared is None or invalid is not None or request is None:
        return findings
    bad_request = None
    try:
        validate_request(request, hal_model)
    except HalError as e:
        bad_request = e.message
    except Exception as e:  # noqa: BLE001
        findings.append(crash_finding("reference:validate_request", e))
        bad_request = f"validator crashed ({type(e).__name__})"
    try:  # the request is the driver's now: nothing reads it afterwards
        result = prepared.execute_synchronously(request, loop_timeout_duration_ns=LOOP_TIMEOUT_NS)
        problem = _check_execution_result(result, len(hal_model.main.output_indexes))
        if problem and bad_request is None:
            findings.append(Finding("contract", "hal:execute_synchronously", problem, problem))
        if bad_request is not None:
            findings.append(_differential("hal:execute_synchronously", bad_request, "request"))
    except HalError as e:
        if is_masked_crash(e.message):
            findings.append(masked_crash_finding("hal:execute_synchronously", e))
    except Exception as e:  # noqa: BLE001
        findings.append(crash_finding("hal:execute_synchronously", e))
    return findings


def _frontend_path(tm: TestModel, plan: int, device: Device) -> list[Finding]:
    phase = "frontend:model"
    try:
        model = build_frontend_model(tm)
        freeze_model(model.to_hal())  # the fuzzer's own: the drivers' validations reuse its key
        phase = "frontend:compilation"
        compilation = Compilation.create_for_devices(model, [device])
        compilation.finish()
        phase = "frontend:execution"
        execution = Execution(compilation)
        execution.set_loop_timeout(LOOP_TIMEOUT_NS)
        if plan == 2:
            execution.enable_input_and_output_padding(True)
        for j, idx in enumerate(tm.main.input_indexes):
            o = tm.main.operands[idx]
            if o.data is None:
                execution.set_input(j, None)
            else:
                execution.set_input(j, raw_data(o), list(o.data.shape))
        buffers = [bytearray(output_size(tm, j, plan)) for j in range(len(tm.main.output_indexes))]
        for j, b in enumerate(buffers):
            execution.set_output(j, b)
        phase = "frontend:compute"
        execution.compute()
        for j in range(len(buffers)):
            execution.get_output_operand_dimensions(j)
    except NnapiError as e:
        if is_masked_crash(e.message):
            return [masked_crash_finding(phase, e)]
    except Exception as e:  # noqa: BLE001
        return [crash_finding(phase, e)]
    return []


def incident_finding(incident) -> Finding:
    """The finding of a driver process that died (``crash``) or hung (``timeout``) during a
    call; deduplicated by the call and how the process ended (its signal or exit code)."""
    kind = "timeout" if incident.kind == "hang" else "crash"
    how = incident.detail.split(";", 1)[0]
    message = f"driver process {'hung' if incident.kind == 'hang' else 'died'} during {incident.call}: {incident.detail}"
    return Finding(kind, f"driver-process:{incident.call}", message[:1000],
                   f"driver-process {incident.kind}: {incident.call}: {how}")


class FuzzTarget:
    """The callable libFuzzer runs (``TestOneInput``): decode, check, record findings."""

    #: The targets: ``full`` (HAL model, request and execution, and the front end) and
    #: ``validation`` (model validation calls only, see :func:`check_validation`).
    TARGETS = ("full", "validation")

    def __init__(self, driver: str, recorder: FindingRecorder, paths=("hal", "frontend"),
                 skip: set[str] | None = None, target: str = "full"):
        if target not in self.TARGETS:
            raise ValueError(f"unknown fuzz target {target!r} (expected one of {', '.join(self.TARGETS)})")
        self.target = target
        from runtime.loader import load_driver
        from runtime.remote.incidents import INCIDENTS
        self.incidents = INCIDENTS  # the list out-of-process calls append to (imported once, not per input)
        self.skip = skip or set()  # sha1 of inputs that already hung or blew up (not re-run)
        self.driver = driver
        self.hal_device = load_driver(driver)
        self.device = Device(self.hal_device)
        self.recorder = recorder
        self.paths = tuple(paths)
        self.executions = 0
        warnings.simplefilter("ignore")

    def run(self, data: bytes) -> list[Finding]:
        """Findings of one input (not recorded)."""
        try:
            case = decode(data)
        except Rejected:
            return []
        return self.check(case)

    def check(self, case: FuzzCase) -> list[Finding]:
        """Findings of one decoded ``case`` under this target. With an out-of-process driver
        (``process:NAME``), a death of the driver process during any call is a ``crash``
        finding and a call past the driver timeout a ``timeout`` finding (the process is
        restarted for the next input)."""
        seen = len(self.incidents)
        if self.target == "validation":
            findings = check_validation(case, self.hal_device)
        else:
            findings = check_case(case, self.hal_device, self.device, self.paths)
        return findings + [incident_finding(i) for i in self.incidents[seen:]]

    def __call__(self, data: bytes) -> None:
        self.executions += 1
        if self.skip and hashlib.sha1(data).hexdigest() in self.skip:
            return
        try:
            case = decode(data)
        except Rejected:
            return
        except Exception as e:  # noqa: BLE001 - the decoder must be total: that is a finding too
            self.recorder.record(crash_finding("decode", e), None, data)
            return
        for finding in self.check(case):
            self.recorder.record(finding, case, data)
