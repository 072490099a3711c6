"""The fingerprint and environment of a run (pytest plugin part of :mod:`harness.plugin`).

With ``--nncts-report DIR``, the controller (pytest-xdist's too: before its workers start)
loads the driver once at session start (:func:`harness.driver.driver_hal`) and writes
``DIR/run.json``::

    {"fingerprint": {"driver": "nncts-sample (feature level 7)", "corpus": "<sha256>",
                     "modes": "sync,async", "nncts": "0.1.0"},
     "environment": {...harness.environment.collect...}, "started": "<ISO date>"}

The **fingerprint** says which records belong together: the driver's identity
(``IDevice.get_name`` and ``get_feature_level``, :func:`harness.driver.driver_identity`), the
digest of the corpus files (:func:`corpus_digest`), the CTS modes (``--mode``) and the nncts
version. ``--nncts-resume`` refuses (pytest.UsageError, one line) records of another
fingerprint, or records without one: resuming must never mix two runs in one report.

Loading the driver here makes its load errors usage errors before any test: an unknown
driver, a factory that returns no ``IDevice`` (DriverNotFound / TypeError), a driver whose
construction needs a module that is not installed (ImportError: the ``engine`` extra of the
onnxruntime driver, the ``remote`` extra of an out-of-process driver). Any other exception
from the driver's construction stays a test outcome (each test reports it).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness import environment
from harness.driver import corpus_roots, driver_hal, driver_identity
from harness.modes import parse_modes
from harness.records import read_json

#: The run description a suite run writes into its report directory.
RUN_FILE = "run.json"
#: The fingerprint's fields, in the order a refusal names them.
FINGERPRINT_KEYS = ("driver", "corpus", "modes", "nncts")


def corpus_digest(roots) -> str:
    """SHA-256 (hex) over every file below the corpus ``roots``: each file's path relative
    to its root, then the SHA-256 of its bytes (read in chunks), in sorted order; "" for no
    roots."""
    h = hashlib.sha256()
    for root in sorted(Path(r) for r in roots):
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            h.update(str(path.relative_to(root) if root.is_dir() else path.name).encode() + b"\0")
            with open(path, "rb") as f:  # streamed: a corpus file may be of any size
                h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest() if roots else ""


def _modes(config) -> str:
    values = config.getoption("mode", None)
    if values is None:
        return ""
    try:
        return ",".join(m.name for m in parse_modes(values))
    except ValueError as e:
        raise pytest.UsageError(f"--mode: {e}") from None


def fingerprint(config, hal) -> dict[str, str]:
    """The run fingerprint of ``config`` (keys :data:`FINGERPRINT_KEYS`) with the run's
    driver ``hal`` (or the exception its construction raised: the driver is then named by
    its spec)."""
    if isinstance(hal, BaseException):
        driver = f"{config.getoption('driver')} (failed to load: {type(hal).__name__})"
    else:
        name, level = driver_identity(config)
        driver = f"{name} (feature level {level})"
    return {"driver": driver, "corpus": corpus_digest(corpus_roots(config)),
            "modes": _modes(config), "nncts": environment.nncts_version()}


def _load_driver(config):
    """The run's HAL device, or the exception its construction raised (a test outcome);
    pytest.UsageError when it is no driver or needs a module that is missing."""
    try:
        return driver_hal(config)
    except pytest.UsageError:
        raise
    except ImportError as e:
        raise pytest.UsageError(f"--driver: {e}") from None
    except Exception as e:  # the driver's own construction failure: each test reports it
        return e


def check_resume(previous: dict | None, current: dict[str, str]) -> None:
    """Refuse (pytest.UsageError, one line) to resume records whose run description
    ``previous`` (``run.json``, None when missing) has another fingerprint than
    ``current``."""
    old = (previous or {}).get("fingerprint")
    if not isinstance(old, dict):
        raise pytest.UsageError(f"--resume: the report directory holds records without a run fingerprint ({RUN_FILE}); "
                                f"run without --resume to start afresh")
    changed = [f"{k} {old.get(k) or '-'} -> {current[k] or '-'}" for k in FINGERPRINT_KEYS
               if old.get(k) != current[k]]
    if changed:
        raise pytest.UsageError(f"--resume: the report directory holds records of another run ({'; '.join(changed)}); "
                                f"run without --resume or use another --report-dir")


def read_run_file(report_dir: Path) -> dict | None:
    """The run description in ``report_dir``, read under :func:`harness.records.read_json`'s
    bounds (None when missing, unreadable, past a bound or not a JSON object)."""
    try:
        return read_json(Path(report_dir) / RUN_FILE)
    except ValueError:
        return None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """On the controller of a run with ``--nncts-report``: load the driver, check a resumed
    run's fingerprint, write ``run.json``."""
    config = session.config
    report_dir = config.getoption("nncts_report", None)
    if not report_dir or hasattr(config, "workerinput"):
        return
    report_dir = Path(report_dir)
    hal = _load_driver(config)
    current = fingerprint(config, hal)
    if config.getoption("nncts_resume", False) and getattr(config, "_nncts_records", None):
        check_resume(read_run_file(report_dir), current)
    env = environment.collect(hal)
    doc = {"fingerprint": current, "environment": env, "started": env["date"]}
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / RUN_FILE).write_text(json.dumps(doc, indent=2), encoding="utf-8")
