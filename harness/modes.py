"""CTS execution modes: the seams every corpus model is run through (AOSP
``GeneratedTestHarness``: executor x memory type x output type, plus compilation caching and
the quantization-coupling variant).

A :class:`Mode` picks one value per axis. ``--mode`` takes mode names (comma-separated or
repeated): a preset (``default``, ``all``), an axis value (``async``, ``device``,
``dynamic``, ``cache``, ``coupling`` ...: that value with every other axis at its base), or
an explicit combination joined by ``+`` (``fenced+memory+cache``).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from runtime import ops
from runtime.testing.test_model import TestModel
from runtime.types import OperandType

COMPUTE = ("sync", "async", "burst", "fenced", "reusable")
MEMORY = ("buffer", "memory", "device")
OUTPUTS = ("specified", "dynamic", "insufficient")



def _rows_with(flag: str, op_types) -> bool:
    """Whether a table row of one of ``op_types`` sets ``flag`` (``coupling_excluded``,
    ``dynamic_shape_excluded``: AOSP's exclusions, each row saying why)."""
    return any(getattr(ops.get(t), flag, False) for t in op_types)


@dataclass(frozen=True)
class Mode:
    """One execution mode: compute path, where arguments live, how outputs are declared,
    compilation caching, and the asymm-to-signed quantization coupling."""

    compute: str = "sync"
    memory: str = "buffer"
    outputs: str = "specified"
    cache: bool = False
    coupling: bool = False

    @property
    def name(self) -> str:
        """``sync`` for the base mode, else the non-base values joined by ``+``."""
        parts = [p for p, base in ((self.compute, "sync"), (self.memory, "buffer"),
                                   (self.outputs, "specified")) if p != base]
        parts += ["cache"] * self.cache + ["coupling"] * self.coupling
        return "+".join(parts) or "sync"

    @property
    def reuses(self) -> bool:
        """Whether executions reuse an object: a burst, a reusable execution (one Execution
        computed several times, NNAPI FL5 ``setReusable``), shared memory objects or driver
        memories. Such modes run the example inputs, changed inputs, then the example
        inputs again (:mod:`harness.changed_inputs`)."""
        return self.compute in ("burst", "reusable") or self.memory != "buffer"

    @property
    def valid(self) -> bool:
        """Combinations the harness can run: fenced and driver memory need fully specified
        outputs (as in AOSP's harness)."""
        if self.outputs != "specified" and (self.compute == "fenced" or self.memory == "device"):
            return False
        return True


BASE = Mode()


def parse_mode(name: str) -> Mode:
    """A Mode from ``a+b+c`` axis values. Raises ValueError naming an unknown value."""
    fields = {}
    for part in name.split("+"):
        if part in ("sync",):
            fields["compute"] = part
        elif part in COMPUTE:
            fields["compute"] = part
        elif part in MEMORY:
            fields["memory"] = part
        elif part in OUTPUTS:
            fields["outputs"] = part
        elif part in ("cache", "coupling"):
            fields[part] = True
        else:
            raise ValueError(f"unknown mode {part!r}; axis values: {', '.join(COMPUTE + MEMORY + OUTPUTS)}, "
                             f"cache, coupling; presets: default, all")
    mode = Mode(**fields)
    if not mode.valid:
        raise ValueError(f"mode {name!r} is not a valid combination (fenced and device memory need "
                         f"fully specified outputs)")
    return mode


#: The CI default: every axis value once, with the other axes at their base.
DEFAULT_MODES = [BASE] + [parse_mode(n) for n in ("async", "burst", "fenced", "reusable", "memory", "device",
                                                    "dynamic", "insufficient", "cache", "coupling")]


def all_modes() -> list[Mode]:
    """The full cross product of the axes (invalid combinations left out)."""
    modes = [Mode(c, m, o, cache, coupling) for c, m, o, cache, coupling in
             itertools.product(COMPUTE, MEMORY, OUTPUTS, (False, True), (False, True))]
    return [m for m in modes if m.valid]


def parse_modes(values: list[str]) -> list[Mode]:
    """Modes named by ``--mode`` values (presets, axis values, combinations), in order,
    without repeats. Raises ValueError."""
    out: list[Mode] = []
    for value in values or ["default"]:
        for name in filter(None, (v.strip() for v in value.split(","))):
            modes = DEFAULT_MODES if name == "default" else all_modes() if name == "all" else [parse_mode(name)]
            out.extend(m for m in modes if m not in out)
    return out


def applies(tm: TestModel, mode: Mode) -> bool:
    """Whether ``mode`` is run for ``tm`` at all (AOSP derives variants only where they make
    sense): validation models (expect_failure) only in the base mode; dynamic and
    insufficient outputs not for RANK/IF/WHILE models, insufficient only with an output of
    more than one byte to shrink; coupling only for single-operation TENSOR_QUANT8_ASYMM models."""
    if tm.expect_failure:
        return mode == BASE
    op_types = set(tm.operation_types)
    if mode.outputs != "specified":
        if _rows_with("dynamic_shape_excluded", op_types):
            return False
        if mode.outputs == "insufficient" and not any(
                tm.main.operands[i].data is not None and tm.main.operands[i].data.nbytes > 1
                for i in tm.main.output_indexes):
            return False
    if mode.coupling:
        if tm.referenced or len(tm.main.operations) != 1 or _rows_with("coupling_excluded", op_types):
            return False
        if not any(o.type == OperandType.TENSOR_QUANT8_ASYMM for o in tm.main.operands):
            return False
    if mode.compute == "fenced" or mode.memory == "device":
        return tm.outputs_fully_specified
    return True
