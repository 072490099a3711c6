"""Helpers for the project's tests: run a one-operation model through the front end."""
from __future__ import annotations

import numpy as np

from runtime.nnapi import Compilation, Execution, Model, get_devices
from runtime.types import operand_dtype


def run_op(op, inputs, outputs):
    """Run one operation on the sample driver.

    ``inputs``: list of (OperandType, dims, value, scale, zero_point) where every value is a
    constant except those whose dims are given with ``value`` wrapped as ("input", array).
    ``outputs``: list of (OperandType, dims, scale, zero_point). Returns output arrays.
    """
    model = Model()
    ins, feeds = [], []
    for t, dims, value, scale, zp in inputs:
        i = model.add_operand(t, dims, scale, zp)
        if isinstance(value, tuple) and value[0] == "input":
            feeds.append((i, value[1]))
        else:
            model.set_operand_value(i, np.asarray(value, operand_dtype(t)))
        ins.append(i)
    outs = [model.add_operand(t, dims, scale, zp) for t, dims, scale, zp in outputs]
    model.add_operation(op, ins, outs)
    model.identify_inputs_and_outputs([i for i, _ in feeds], outs)
    model.finish()
    compilation = Compilation.create_for_devices(model, get_devices(["sample"]))
    compilation.finish()
    execution = Execution(compilation)
    for j, (_, value) in enumerate(feeds):
        execution.set_input(j, value)
    results = []
    for j, (t, dims, _, _) in enumerate(outputs):
        results.append(np.zeros(dims, operand_dtype(t)))
        execution.set_output(j, results[-1])
    execution.compute()
    return results
