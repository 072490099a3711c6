"""Drivers with one planted process-level fault, for the out-of-process tests
(``--driver tests.remote_drivers:<factory> --driver-process``): the sample driver that aborts
the process (SIGABRT) when it executes TANH or ADD, and one that never returns from TANH."""
from __future__ import annotations

from mlts.stress_drivers import CrashingDevice, HangingDevice
from runtime.types import OperationType


def abort_on_tanh() -> CrashingDevice:
    return CrashingDevice({OperationType.TANH})


def abort_on_add() -> CrashingDevice:
    return CrashingDevice({OperationType.ADD})


def hang_on_tanh() -> HangingDevice:
    return HangingDevice({OperationType.TANH})
