"""Findings of the fuzzer and how they are stored: each as a replayable test model in the
corpus schema, ``<findings_dir>/V_FUZZ/<name>.json.gz`` (one spec document holding one
model), plus the raw fuzz input as ``<findings_dir>/inputs/<name>.bin``.

A finding is any outcome other than success or a documented error result (see
:mod:`fuzz.target`). Its kinds:

``crash``
    an exception other than HalError (HAL) / NnapiError (front end) escaped a call;
``masked-crash``
    a documented error whose message says a guard caught a crash (``reference kernel
    raised ...``, ``driver raised ...``): the model passed validation, yet code crashed;
``differential``
    the reference validator (:func:`runtime.hal.validate.validate_model` /
    ``validate_request``) rejects the model or request, but the driver accepted it;
``contract``
    a driver call returned something of the wrong form (count of supported flags or of
    output shapes);
``timeout`` / ``oom``
    libFuzzer stopped the run (``-timeout``, ``-rss_limit_mb``); converted from its
    artifact after the run.

The stored model: ``version`` ``V_FUZZ``; ``expect_failure`` true when the reference
validator rejects it or its reference execution fails (then also ``expected_failure``
``"execution failure"``: the driver may reject it or fail its execution), else false with every output's
``data`` computed by the reference executor (an output whose declared dimensions are not
fully specified gets the computed ones; an output holding NaN is ``is_ignored``);
``min_supported_version`` the lowest feature level the validator accepts it at (V1_0 for
invalid models), so that ``pytest cts/ --corpus <findings_dir>`` runs it. The extra key
``fuzz`` of the model (ignored by the loader) records the kind, phase, message, signature,
driver, HAL tweaks, traceback and the input (base64).

Findings are deduplicated by signature (crash and masked crash: exception type and
innermost project frame, or the operation whose reference kernel raised; differential:
the validator's rule with numbers masked): the file name is
``<kind>_<sha1(signature)[:12]>``, and no second file is written for a signature that
already has one (of any kind).
"""
from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import re
import sys
import sysconfig
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runtime.errors import HalError, NnapiError
from runtime.files import MAX_DOCUMENT_BYTES, load_json, read_bytes
from runtime.executor import run_subgraph
from runtime.hal.validate import validate_model, validate_request
from runtime.testing.corpus_writer import model_json as corpus_model_json, write_document
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.test_model import TestModel, load_spec
from runtime.types import OperandLifeTime, is_tensor_type, operand_dtype

from .request import build_request

L = OperandLifeTime
REPO = Path(__file__).resolve().parents[1]
FINDINGS_VERSION = "V_FUZZ"
#: Messages of documented errors that wrap a crash caught by a guard.
MASKED_CRASH_MARKERS = ("reference kernel raised", "driver raised")
_FL_NAMES = {1: "V1_0", 2: "V1_1", 3: "V1_2", 4: "V1_3", 5: "AIDL_V1", 6: "AIDL_V2", 7: "AIDL_V3"}


@dataclass
class Finding:
    """One finding: ``kind`` (see module docstring), ``phase`` (which call, e.g.
    ``hal:prepare_model``), ``message``, dedup ``signature`` and a ``traceback`` text."""

    kind: str
    phase: str
    message: str
    signature: str
    traceback: str = ""

    @property
    def digest(self) -> str:
        return hashlib.sha1(self.signature.encode()).hexdigest()[:12]

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.digest}"


_LIBRARY_DIRS = tuple(str(Path(p).resolve()) for p in {sysconfig.get_paths()["stdlib"],
                                                       sysconfig.get_paths()["purelib"],
                                                       sysconfig.get_paths()["platlib"]})


def _project_frame(tb) -> str:
    """``path:line (function)`` of the innermost traceback frame in project or driver code
    (not the fuzzer's own, not the standard library or installed packages such as numpy),
    else the innermost frame. Paths inside the repository are relative to it."""
    frames = traceback.extract_tb(tb) if tb is not None else []
    chosen = None
    for fr in frames:
        path = Path(fr.filename).resolve()
        if str(path).startswith(_LIBRARY_DIRS) or "site-packages" in path.parts:
            continue
        try:
            rel = path.relative_to(REPO)
        except ValueError:
            rel = path
        if rel.parts and rel.parts[0] == "fuzz":
            continue
        chosen = f"{rel}:{fr.lineno} ({fr.name})"
    if chosen is None and frames:
        fr = frames[-1]
        chosen = f"{Path(fr.filename).name}:{fr.lineno} ({fr.name})"
    return chosen or "?"


def mask_numbers(text: str) -> str:
    """``text`` with numbers (and nan/inf spellings) replaced by ``N``, for dedup."""
    text = re.sub(r"(?i)-?\b(nan|inf|infinity)\b", "N", text)
    return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", text)


def crash_finding(phase: str, exc: BaseException, kind: str = "crash") -> Finding:
    """A finding for exception ``exc`` raised (or, for a masked crash, caught) in ``phase``."""
    tb_text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    where = _project_frame(exc.__traceback__)
    return Finding(kind, phase, f"{phase}: {type(exc).__name__}: {str(exc)[:500]}",
                   f"{type(exc).__name__} at {where}", tb_text[-6000:])


def masked_crash_finding(phase: str, err: Exception) -> Finding:
    """A finding for a documented error ``err`` whose message wraps a crash; the signature
    comes from the chained original exception when there is one."""
    cause = err.__cause__
    while isinstance(cause, (HalError, NnapiError)) and cause.__cause__ is not None:
        cause = cause.__cause__  # down to the exception a guard caught
    msg = getattr(err, "message", str(err))
    kernel = re.search(r"\((\w+)\): reference kernel raised (\w+)", msg)
    if kernel:  # the same kernel crash reached through the HAL or the front end
        f = crash_finding(phase, cause, "masked-crash") if cause is not None else \
            Finding("masked-crash", phase, "", "")
        f.message = f"{phase}: {type(err).__name__} {str(err)[:500]}"
        f.signature = f"{kernel.group(2)} in the {kernel.group(1)} kernel"
        return f
    if cause is not None and not isinstance(cause, (HalError, NnapiError)):
        f = crash_finding(phase, cause, "masked-crash")
        f.message = f"{phase}: {type(err).__name__} {str(err)[:500]}"
        return f
    m = re.search(r"(reference kernel raised|driver raised) (\w+)", msg)
    sig = f"{m.group(2) if m else '?'}: {mask_numbers(msg)[:200]}"
    return Finding("masked-crash", phase, f"{phase}: {str(err)[:500]}", sig)


def is_masked_crash(message: str) -> bool:
    return any(m in message for m in MASKED_CRASH_MARKERS)


# --- the stored test model ---------------------------------------------------------------

def _reference_outputs(tm: TestModel):
    """(list of output arrays, None) from the reference executor, or (None, why)."""
    hal = to_hal_model(tm)
    try:
        validate_request(build_request(tm, 0), hal)
        inputs = []
        for idx in tm.main.input_indexes:
            o = tm.main.operands[idx]
            if o.data is None:
                inputs.append((None, list(o.dimensions)))
            else:
                arr = np.ascontiguousarray(o.data, operand_dtype(o.type))
                inputs.append((arr, list(arr.shape)))
        return run_subgraph(hal, hal.main, inputs, tm.is_relaxed), None
    except HalError as e:
        return None, f"reference execution fails: {e}"
    except Exception as e:  # noqa: BLE001 - recorded, the finding is about it anyway
        return None, f"reference execution crashed: {type(e).__name__}: {e}"


def replay_model(tm: TestModel, name: str, run_reference: bool = True) -> tuple[TestModel, str]:
    """A copy of ``tm`` named ``name`` with expect_failure, min_supported_version and the
    expected outputs set from the reference (module docstring); and a note saying why it
    is expected to fail (empty when it is not)."""
    m = copy.deepcopy(tm)
    m.name, m.spec, m.version = name, name, FINDINGS_VERSION
    m.min_supported_version, m.expect_failure = "V1_0", True
    try:
        hal = to_hal_model(m)
        validate_model(hal)
    except HalError as e:
        return m, f"invalid model: {e.message}"
    except Exception as e:  # noqa: BLE001
        return m, f"validator crashed: {type(e).__name__}: {e}"
    for level in range(1, 9):
        try:
            validate_model(hal, level)
        except HalError:
            continue
        m.min_supported_version = _FL_NAMES.get(level, "UNKNOWN")
        break
    if not run_reference:
        return m, "valid model; the reference execution was not run (timeout or memory finding)"
    results, why = _reference_outputs(m)
    if results is None:
        m.expected_failure = "execution failure"
        return m, why
    m.expect_failure = False
    for idx, result in zip(m.main.output_indexes, results):
        o = m.main.operands[idx]
        if o.dimensions == [] and not is_tensor_type(o.type):
            pass
        elif not o.dimensions or 0 in o.dimensions:
            o.dimensions = list(result.shape)
        o.data = None if result.size == 0 else np.ascontiguousarray(result, operand_dtype(o.type))
        if o.data is not None and o.data.dtype.kind == "f" and bool(np.isnan(o.data).any()):
            o.is_ignored = True
    return m, ""


def model_json(tm: TestModel, extra: dict | None = None) -> dict:
    """The corpus-schema JSON object of ``tm`` (main and referenced subgraphs,
    :func:`runtime.testing.corpus_writer.model_json`), with ``extra`` under the key ``fuzz``."""
    return corpus_model_json(tm, {"fuzz": extra} if extra else None)


def write_spec(path: Path, tm: TestModel, extra: dict | None = None) -> None:
    """Write ``tm`` as a one-model spec document (gzip JSON) at ``path``."""
    write_document(path, tm.spec, tm.version, [model_json(tm, extra)], f"fuzz/{tm.name}")


class FindingRecorder:
    """Saves findings under ``root`` (None: only counts and prints them), at most
    ``max_findings`` files per recorder, one per signature."""

    def __init__(self, root: Path | None, driver: str, max_findings: int = 200, quiet: bool = False):
        self.root = Path(root) if root is not None else None
        self.driver = driver
        self.max_findings = max_findings
        self.quiet = quiet
        self.seen: set[str] = set()
        self.saved: list[Path] = []
        self.count = 0  # every finding, duplicates included

    def record(self, finding: Finding, case, data: bytes, run_reference: bool = True) -> Path | None:
        """Save ``finding`` for ``case`` (decoded from ``data``) unless its signature was
        seen; returns the path written, or None."""
        self.count += 1
        name = finding.name
        if finding.digest in self.seen:  # one finding per signature, whatever its kind
            return None
        self.seen.add(finding.digest)
        if self.root is None:
            if not self.quiet:
                print(f"NNCTS-FUZZ FINDING {name}: {finding.message}", file=sys.stderr, flush=True)
            return None
        path = self.root / FINDINGS_VERSION / f"{name}.json.gz"
        if any((self.root / FINDINGS_VERSION).glob(f"*_{finding.digest}.json.gz")) or \
                len(self.saved) >= self.max_findings:
            return None
        if case is None:  # the input did not even decode: keep the input only
            (self.root / "inputs").mkdir(parents=True, exist_ok=True)
            path = self.root / "inputs" / f"{name}.bin"
            path.write_bytes(data)
            self.saved.append(path)
            print(f"NNCTS-FUZZ FINDING {name}: {finding.message} -> {path}", file=sys.stderr, flush=True)
            return path
        model, note = replay_model(case.model, name, run_reference)
        extra = {"kind": finding.kind, "phase": finding.phase, "message": finding.message,
                 "signature": finding.signature, "driver": self.driver, "mode": case.mode,
                 "output_plan": case.output_plan,
                 "hal_tweaks": [t.describe() for t in case.tweaks],
                 "expectation": note or "reference outputs",
                 "input_b64": base64.b64encode(data).decode("ascii"),
                 "traceback": finding.traceback, "time": time.time()}
        write_spec(path, model, extra)
        (self.root / "inputs").mkdir(parents=True, exist_ok=True)
        (self.root / "inputs" / f"{name}.bin").write_bytes(data)
        load_spec(path)  # the file must load as a corpus document (raises CorpusError if not)
        self.saved.append(path)
        if not self.quiet:
            print(f"NNCTS-FUZZ FINDING {name}: {finding.message} -> {path}", file=sys.stderr, flush=True)
        return path


#: Where a finding document keeps its fuzz input (base64).
_INPUT_FIELD = ("models", 0, "fuzz", "input_b64")


def read_finding_input(path: Path) -> bytes:
    """The fuzz input of a finding file (``.json.gz``: its ``models[0].fuzz.input_b64``) or
    of a raw input file (any other file), read under the bounds of :mod:`runtime.files`
    (64 MiB once inflated, 64 levels of nesting). Raises ValueError, one line naming the
    file and what is wrong: it cannot be read, breaks a bound, is not gzip JSON, lacks the
    input field or holds no base64 in it."""
    path = Path(path)
    try:
        if not path.name.endswith(".json.gz"):
            return read_bytes(path, MAX_DOCUMENT_BYTES)
        node = load_json(path)
    except OSError as e:
        raise ValueError(f"{path}: cannot read ({e.strerror or e})") from None
    trail = ""
    for step in _INPUT_FIELD:
        found = (isinstance(node, list) and len(node) > step) if isinstance(step, int) else \
            (isinstance(node, dict) and step in node)
        trail += f"[{step}]" if isinstance(step, int) else f".{step}" if trail else step
        if not found:
            raise ValueError(f"{path}: not a fuzz finding: no {trail}")
        node = node[step]
    if not isinstance(node, str):
        raise ValueError(f"{path}: not a fuzz finding: {trail} is not a string")
    try:
        return binascii.a2b_base64(node, strict_mode=True)
    except (binascii.Error, ValueError) as e:  # ValueError: a character that is not ASCII
        raise ValueError(f"{path}: {trail} is not base64 ({e})") from None
