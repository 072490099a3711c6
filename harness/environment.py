"""The environment of a run: what a reader of a report needs to know to trust it or
reproduce it (the ``environment`` of a suite run's ``meta`` and ``run.json``).

:func:`collect` gives an ordered ``dict[str, str]``::

    nncts            0.1.0
    commit           3e309bc9d0... (modified)   # only in a git checkout
    driver           nncts-sample               # IDevice.get_name
    driver version   1.0                        # IDevice.get_version_string
    feature level    7                          # IDevice.get_feature_level
    device type      CPU                        # IDevice.get_type (DeviceTypeCode)
    capabilities     relaxed fp32 as fp16: scalar 1/1, tensor 1/1; 15 operand types: exec_time 1..1, ...
    command line     nncts cts --driver sample -k add
    python           CPython 3.11.2
    machine          Linux-6.1.0-x86_64-with-glibc2.36, 2 CPUs
    date             2025-01-01T12:00:00+00:00

A driver query that raises is shown as ``error: <exception>`` (a broken driver still gets a
report); performance numbers (HAL ``Capabilities``: ``exec_time`` / ``power_usage`` ratios
vs. the CPU) are summarised as ranges. :func:`nncts_version` and :func:`git_commit` are also
what ``nncts --version`` prints.
"""
from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

from runtime.types import DeviceTypeCode

#: The checkout (or installed tree) holding the nncts packages.
ROOT = Path(__file__).resolve().parents[1]


def nncts_version() -> str:
    """The installed nncts distribution's version ("unknown" when not installed)."""
    try:
        return importlib.metadata.version("nncts")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def git_commit(root: Path = ROOT) -> str:
    """The commit checked out at ``root`` (40 hex digits, `` (modified)`` when tracked files
    differ from it), or "" when ``root`` is no git checkout or git is unavailable."""
    if not (root / ".git").exists():
        return ""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    try:
        commit = git("rev-parse", "HEAD")
        modified = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return ""
    return commit + (" (modified)" if modified else "")


def _ask(query) -> str:
    try:
        return str(query())
    except Exception as e:  # a broken driver still gets an environment block
        return f"error: {type(e).__name__}: {e}"


def _ratio(value: float) -> str:
    return f"{value:g}"


def summarise_capabilities(caps) -> str:
    """One line of a HAL ``Capabilities``: the relaxed-float performance (scalar, tensor),
    the number of operand types with a performance entry and the ranges of their
    ``exec_time`` and ``power_usage``, and IF / WHILE; each as ``exec_time/power_usage``."""
    def pair(p) -> str:
        return f"{_ratio(p.exec_time)}/{_ratio(p.power_usage)}"
    perf = list(caps.operand_performance.values())
    if perf:
        ex = [p.exec_time for p in perf]
        pw = [p.power_usage for p in perf]
        operands = (f"{len(perf)} operand types: exec_time {_ratio(min(ex))}..{_ratio(max(ex))}, "
                    f"power_usage {_ratio(min(pw))}..{_ratio(max(pw))}")
    else:
        operands = "no operand type listed"
    return (f"relaxed fp32 as fp16: scalar {pair(caps.relaxed_float32_to_float16_performance_scalar)}, "
            f"tensor {pair(caps.relaxed_float32_to_float16_performance_tensor)}; {operands}; "
            f"IF {pair(caps.if_performance)}, WHILE {pair(caps.while_performance)}")


def driver_facts(hal) -> dict[str, str]:
    """The driver's identity and capabilities (``IDevice`` queries), each a string; ``hal``
    may be an exception (the driver did not load), shown as ``error: ...``."""
    if isinstance(hal, BaseException):
        return {"driver": f"error: {type(hal).__name__}: {hal}"}

    def device_type() -> str:
        code = hal.get_type()
        try:
            return DeviceTypeCode(int(code)).name
        except ValueError:
            return str(code)
    return {"driver": _ask(hal.get_name), "driver version": _ask(hal.get_version_string),
            "feature level": _ask(hal.get_feature_level), "device type": _ask(device_type),
            "capabilities": _ask(lambda: summarise_capabilities(hal.get_capabilities()))}


def command_line(argv: list[str] | None = None) -> str:
    """The command that started this process (``sys.argv``), shell-quoted; the program as
    its name (``nncts``, ``pytest``), ``python -m nncts.cli`` shown as ``nncts``."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    program = Path(argv[0])
    name = "nncts" if program.parts[-2:] == ("nncts", "cli.py") else \
        program.parent.name if program.name == "__main__.py" else program.name
    return shlex.join([name, *argv[1:]])


def collect(hal, argv: list[str] | None = None) -> dict[str, str]:
    """The environment of a run with driver ``hal`` (an ``IDevice``, or the exception that
    kept it from loading), as ordered ``str -> str`` (see the module docstring)."""
    env = {"nncts": nncts_version()}
    commit = git_commit()
    if commit:
        env["commit"] = commit
    env.update(driver_facts(hal))
    env["command line"] = command_line(argv)
    env["python"] = f"{platform.python_implementation()} {platform.python_version()}"
    env["machine"] = f"{platform.platform()}, {os.cpu_count() or '?'} CPUs"
    env["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return env
