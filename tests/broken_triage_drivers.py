"""Drivers with planted faults for ``nncts triage``'s clustering (tests/test_triage.py)."""
from __future__ import annotations

import dataclasses

import numpy as np

from runtime import ops
from runtime.drivers.sample import SampleDevice
from runtime.executor import execute
from runtime.ops.common import is_quant
from runtime.types import OperationType


def _quanta_up(kernel, quanta: int):
    """``kernel`` with ``quanta`` added to its quantized outputs, clipped to the output
    type's range (int8 or uint8); float outputs unchanged."""
    def run(ctx):
        out = kernel(ctx)
        if not is_quant(ctx.outputs[0]):
            return out
        info = np.iinfo(out[0].dtype)
        return [np.clip(out[0].astype(np.int64) + quanta, info.min, info.max).astype(out[0].dtype)]
    return run


class AddAndMulFaults(SampleDevice):
    """Two unrelated faults: ADD's quantized results 2 quanta too high, MUL's 3 quanta too
    high (NNAPI allows 1): triage must show two clusters, one per operation."""

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        for op, quanta in ((OperationType.ADD, 2), (OperationType.MUL, 3)):
            table[op] = dataclasses.replace(table[op], execute=_quanta_up(table[op].execute, quanta))
        return execute(model, request, table)


class ReluOffByTwoQuanta(SampleDevice):
    """RELU's quantized results 2 quanta too high (a precision sweep's fault)."""

    def run(self, model, request):
        table = dict(ops.REGISTRY)
        table[OperationType.RELU] = dataclasses.replace(table[OperationType.RELU],
                                                        execute=_quanta_up(table[OperationType.RELU].execute, 2))
        return execute(model, request, table)
