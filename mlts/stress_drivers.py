"""Deliberately misbehaving drivers that prove the stress suite's classification
(:mod:`mlts.stress`): each is the reference sample driver with one planted fault, loadable as
``--driver mlts.stress_drivers:<factory>`` (see :func:`runtime.drivers.load_driver`).

===============  =========================================================  =================
factory          fault                                                      stress outcome
===============  =========================================================  =================
``crashing``     ``os.abort()`` (SIGABRT) inside the kernel of the first    CRASH
                 operation executed whose type is in ``crash_on``
``hanging``      sleeps forever inside the kernel of the first operation    HANG
                 executed whose type is in ``hang_on``
``failing``      every execution fails with ``GENERAL_FAILURE``             FAILURE
``serializing``  holds a machine-wide lock (``flock`` on a file) for        FAILURE (perf.
                 ``compile_s`` while preparing a model, and takes it for    degradation)
                 every execution: inference waits for other clients'
                 compilations
===============  =========================================================  =================

``crash_on`` / ``hang_on`` default to every operation type; the environment variables
``NNCTS_STRESS_CRASH_ON`` / ``NNCTS_STRESS_HANG_ON`` (comma-separated operation names, e.g.
``CONV_2D,ADD``) narrow them, so a model without those operations runs normally. Prepare,
capabilities and supported operations are the sample driver's (the faults strike on
execution, as a driver's kernel crash or a lost hardware interrupt would).
"""
from __future__ import annotations

import dataclasses
import fcntl
import os
import tempfile
import threading
import time
from pathlib import Path

from runtime import ops
from runtime.drivers.sample import SampleDevice
from runtime.errors import HalError
from runtime.executor import execute
from runtime.types import ErrorStatus, OperationType

__all__ = ["CrashingDevice", "HangingDevice", "FailingDevice", "SerializingDevice",
           "crashing", "hanging", "failing", "serializing"]


def _operation_set(env_name: str) -> frozenset[OperationType]:
    """Operation types named in ``$env_name`` (comma-separated); every type when unset.
    Raises ValueError naming the variable and an unknown name."""
    text = os.environ.get(env_name, "").strip()
    if not text:
        return frozenset(OperationType)
    chosen = set()
    for name in (n.strip() for n in text.split(",") if n.strip()):
        try:
            chosen.add(OperationType[name])
        except KeyError:
            raise ValueError(f"{env_name}: {name!r} is not an NNAPI operation name") from None
    return frozenset(chosen)


class _FaultyKernelDevice(SampleDevice):
    """Sample driver whose kernels of the operation types in :attr:`targets` call
    :meth:`fault` instead of computing."""

    targets: frozenset[OperationType] = frozenset()

    def fault(self, ctx) -> list:
        raise NotImplementedError

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        for op_type in self.targets:
            if op_type in table:
                table[op_type] = dataclasses.replace(table[op_type], execute=self.fault)
        return execute(model, request, table)


class CrashingDevice(_FaultyKernelDevice):
    """Aborts the process (``os.abort()``, SIGABRT) when it executes an operation of a type
    in ``crash_on`` (default: all; ``$NNCTS_STRESS_CRASH_ON`` narrows it)."""

    name = "nncts-stress-crashing"

    def __init__(self, crash_on=None):
        super().__init__()
        self.targets = frozenset(crash_on) if crash_on is not None else _operation_set("NNCTS_STRESS_CRASH_ON")

    def fault(self, ctx) -> list:
        os.abort()


class HangingDevice(_FaultyKernelDevice):
    """Never returns from executing an operation of a type in ``hang_on`` (default: all;
    ``$NNCTS_STRESS_HANG_ON`` narrows it): the kernel sleeps forever."""

    name = "nncts-stress-hanging"

    def __init__(self, hang_on=None):
        super().__init__()
        self.targets = frozenset(hang_on) if hang_on is not None else _operation_set("NNCTS_STRESS_HANG_ON")

    def fault(self, ctx) -> list:
        forever = threading.Event()
        while True:
            forever.wait(3600.0)


class FailingDevice(SampleDevice):
    """Every execution fails with ``ErrorStatus.GENERAL_FAILURE`` (the front end reports
    OP_FAILED): a test's own checks fail, the process survives."""

    name = "nncts-stress-failing"

    def run(self, model, request):
        raise HalError(ErrorStatus.GENERAL_FAILURE, f"{self.name}: planted execution failure")


class SerializingDevice(SampleDevice):
    """One "accelerator" shared by every process of the machine, guarded by an exclusive
    ``flock`` on :attr:`lock_path`: a prepare holds it for ``compile_s`` seconds (0.5) on top
    of the real work, and each execution takes it. Inference latency then grows with other
    clients' compilations, which the performance-degradation stress test must catch."""

    name = "nncts-stress-serializing"
    compile_s = 0.5

    def __init__(self, lock_path: str | os.PathLike | None = None):
        super().__init__()
        self.lock_path = Path(lock_path or Path(tempfile.gettempdir()) / f"nncts-serializing-{os.getuid()}.lock")

    def _locked(self):
        return _FileLock(self.lock_path)

    def prepare_model(self, model, *args, **kwargs):
        with self._locked():
            time.sleep(self.compile_s)
            return super().prepare_model(model, *args, **kwargs)

    def run(self, model, request):
        with self._locked():
            return super().run(model, request)


class _FileLock:
    """Exclusive ``flock`` on a file for the duration of a ``with`` block (also between
    threads: each acquisition opens its own descriptor)."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = -1

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = -1


def crashing() -> CrashingDevice:
    """``--driver mlts.stress_drivers:crashing``."""
    return CrashingDevice()


def hanging() -> HangingDevice:
    """``--driver mlts.stress_drivers:hanging``."""
    return HangingDevice()


def failing() -> FailingDevice:
    """``--driver mlts.stress_drivers:failing``."""
    return FailingDevice()


def serializing() -> SerializingDevice:
    """``--driver mlts.stress_drivers:serializing``."""
    return SerializingDevice()
