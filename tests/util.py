"""Helpers for the project's tests: run a one-operation model through the front end, or one
operation's table row directly on operand views.

Operand tuples for ``run_op``:

* input: ``(type, dims, value[, scale, zero_point[, channel_quant]])`` where ``value`` is a
  constant (array or scalar), ``("input", array)`` for a model input fed at execution, or
  ``OMIT`` for an omitted optional operand (NO_VALUE). ``scale``/``zero_point`` default to
  0.0/0; ``channel_quant`` is ``None`` or ``(scales, channelDim)`` for
  TENSOR_QUANT8_SYMM_PER_CHANNEL constants.
* output: ``(type, dims[, scale, zero_point])``.

``inp``, ``const``, ``i32``, ``f32``, ``f16``, ``flag``, ``act`` and ``out`` build these
tuples; ``view`` builds an ``OperandView`` for ``run_direct`` and ``level``.
"""
from __future__ import annotations

import numpy as np

from runtime.hal.validate import operation_feature_level
from runtime.nnapi import Compilation, Execution, Model, get_devices
from runtime.ops import REGISTRY
from runtime.ops.base import OpContext, OperandView
from runtime.types import FuseCode, OperandType as T, operand_dtype


class _Omit:
    def __repr__(self):
        return "OMIT"


OMIT = _Omit()
"""Value of an omitted optional input of ``run_op`` (the operand gets NO_VALUE)."""


# --- operand tuples for run_op -----------------------------------------------------------------

def inp(t, x, scale=0.0, zp=0):
    """A model input fed at execution: ``(t, shape of x, ("input", x), scale, zp)``."""
    x = np.asarray(x)
    return (t, list(x.shape), ("input", x), scale, zp)


def const(t, x, scale=0.0, zp=0, channel_quant=None):
    """A constant operand: ``(t, shape of x, x, scale, zp, channel_quant)``;
    ``channel_quant``: ``(scales, channelDim)`` for a per-channel type, else ``None``."""
    x = np.asarray(x)
    return (t, list(x.shape), x, scale, zp, channel_quant)


def i32(v):
    """An INT32 scalar constant: ``(INT32, [], v, 0.0, 0)``."""
    return (T.INT32, [], v, 0.0, 0)


def f32(v):
    """A FLOAT32 scalar constant: ``(FLOAT32, [], v, 0.0, 0)``."""
    return (T.FLOAT32, [], v, 0.0, 0)


def f16(v):
    """A FLOAT16 scalar constant: ``(FLOAT16, [], v, 0.0, 0)``."""
    return (T.FLOAT16, [], v, 0.0, 0)


def flag(v):
    """A BOOL scalar constant: ``(BOOL, [], v, 0.0, 0)``."""
    return (T.BOOL, [], v, 0.0, 0)


def act(code=FuseCode.NONE):
    """A fused activation (INT32 scalar constant): ``(INT32, [], code, 0.0, 0)``."""
    return (T.INT32, [], code, 0.0, 0)


def out(t, dims, scale=0.0, zp=0):
    """An output: ``(t, dims, scale, zp)``."""
    return (t, list(dims), scale, zp)


# --- runners ---------------------------------------------------------------------------------

def run_op(op, inputs, outputs, driver: str = "sample"):
    """Run one operation on bundled driver ``driver`` (default the sample driver) through
    the front end.

    ``inputs``: list of ``(type, dims, value[, scale, zero_point[, channel_quant]])`` (see the
    module docstring: ``value`` a constant, ``("input", array)`` or ``OMIT``).
    ``outputs``: list of ``(type, dims[, scale, zero_point])``. Returns the output arrays.
    """
    model = Model()
    ins, feeds = [], []
    for t, dims, value, *q in inputs:
        scale, zp, channel_quant = tuple(q) + (0.0, 0, None)[len(q):]
        i = model.add_operand(t, dims, scale, zp)
        if channel_quant is not None:
            model.set_operand_symm_per_channel_quant_params(i, *channel_quant)
        if isinstance(value, tuple) and value[0] == "input":
            feeds.append((i, value[1]))
        elif value is OMIT:
            model.set_operand_value(i, None)
        else:
            model.set_operand_value(i, np.asarray(value, operand_dtype(t)))
        ins.append(i)
    outs = [model.add_operand(t, dims, *(q or (0.0, 0))) for t, dims, *q in outputs]
    model.add_operation(op, ins, outs)
    model.identify_inputs_and_outputs([i for i, _ in feeds], outs)
    model.finish()
    compilation = Compilation.create_for_devices(model, get_devices([driver]))
    compilation.finish()
    execution = Execution(compilation)
    for j, (_, value) in enumerate(feeds):
        execution.set_input(j, value)
    results = []
    for j, (t, dims, *_) in enumerate(outputs):
        results.append(np.zeros(dims, operand_dtype(t)))
        execution.set_output(j, results[-1])
    execution.compute()
    return results


def view(t, x, scale=0.0, zp=0, channel_quant=None):
    """An ``OperandView`` of type ``t`` holding ``x`` (converted to the type's dtype);
    ``channel_quant``: ``(scales, channelDim)`` for a per-channel type, else ``None``."""
    x = np.asarray(x, operand_dtype(t))
    cq = None if channel_quant is None else (np.asarray(channel_quant[0], np.float32),
                                             channel_quant[1])
    return OperandView(t, tuple(x.shape), scale, zp, value=x, channel_quant=cq)


def run_direct(op, inputs, outputs, validate=True):
    """``validate`` (unless ``validate=False``, to reach ``prepare``'s own checks) + prepare +
    execute of the table row of ``op`` on operand views, without a model (for zero-sized
    tensors and shapes the front end cannot bind). ``inputs``: views with values;
    ``outputs``: views with the declared type, dims, scale and zero point (their dims are
    replaced by the prepared shapes). Returns ``(shapes, values)``, lists in output order."""
    opdef, ctx = REGISTRY[op], OpContext(op, inputs, outputs)
    if validate and opdef.validate is not None:
        opdef.validate(ctx)
    shapes = opdef.prepare(ctx)
    for v, s in zip(outputs, shapes):
        v.dims = s
    return shapes, opdef.execute(ctx)


def level(op, inputs, outputs):
    """The feature level of ``op`` on input and output views (not relaxed)."""
    return operation_feature_level(REGISTRY[op], inputs, outputs, False)[0]
