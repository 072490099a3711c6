"""Incidents of out-of-process drivers: a driver process that died (``crash``) or stopped
answering (``hang``) during a call. Recorded by :mod:`runtime.remote.link`, read by the test
plugins and the fuzzer to attribute them (this module imports nothing heavy, so readers work
without the ``remote`` extra)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Incident:
    """A driver host that died (``crash``) or stopped answering (``hang``) during ``call``."""

    kind: str
    call: str
    detail: str
    driver: str
    time: float = field(default_factory=time.time)


#: Every incident of this process, in order (the test plugins attribute them to tests).
INCIDENTS: list[Incident] = []
