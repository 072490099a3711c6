"""Partial sample drivers for multi-device partitioning, modelled on AOSP's
``SampleDriverFloatFast``, ``SampleDriverFloatSlow``, ``SampleDriverMinimal`` and
``SampleDriverQuant`` (``nn/driver/sample/SampleDriverPartial`` and its subclasses).

Each is the reference :class:`~runtime.drivers.sample.SampleDevice` restricted to a subset
of operations, with capabilities that make the runtime's partitioner
(:mod:`runtime.nnapi.partition`) prefer it for that subset:

=====================  ================================  ====================================
bundled name           supports                          performance (exec_time, power_usage)
=====================  ================================  ====================================
``sample-float-fast``  first input is a float type       float (0.8, 1.2), relaxed (0.7, 1.1)
``sample-float-slow``  first input is a float type       float (1.3, 0.7), relaxed (1.2, 0.6)
``sample-minimal``     ADD, CONCATENATION, CONV_2D,      float (0.4, 0.5), relaxed (0.4, 0.5)
                       FULLY_CONNECTED, on float32
``sample-quant``       first input is 8-bit asymmetric   quant8 (0.6, 0.6)
                       quantized (SELECT: second input)
=====================  ================================  ====================================

As in AOSP, an operation's operand type is the type of its first input (the rule the
partitioner also uses to look up performance). A variant supports an operation only if the
reference driver also does (operation table and feature level). Capabilities list only the
operand types a variant can run (its other types fall back to the worst value, see
``Capabilities.performance_of``), so its figures never claim work it would refuse.
AOSP's quant sample reports exec_time 50 (slow, frugal); here quant is fast and frugal so
that a float+quant device pair splits work the way a DSP/NPU pair would.
"""
from __future__ import annotations

from ..hal.types import Capabilities, Model, PerformanceInfo
from ..types import OperandType, OperationType
from .sample import SampleDevice

T = OperandType
FLOAT_TYPES = (T.FLOAT32, T.TENSOR_FLOAT32, T.FLOAT16, T.TENSOR_FLOAT16)
QUANT8_ASYMM_TYPES = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

__all__ = ["PartialSampleDevice", "SampleFloatFast", "SampleFloatSlow", "SampleMinimal",
           "SampleQuant", "FLOAT_TYPES", "QUANT8_ASYMM_TYPES"]


def _first_input_type(model: Model, operation) -> OperandType | None:
    if not operation.inputs:
        return None
    return model.main.operands[operation.inputs[0]].type


class PartialSampleDevice(SampleDevice):
    """A sample driver that runs only part of the operation table (AOSP
    ``SampleDriverPartial``): :meth:`handles` picks the operations, the reference driver's
    own :meth:`SampleDevice.supports` still applies; ``perf`` / ``relaxed_perf`` give the
    performance of ``operand_types`` (the only types listed in the capabilities)."""

    name = "nncts-sample-partial"
    operand_types: tuple[OperandType, ...] = ()
    perf = PerformanceInfo(1.0, 1.0)
    relaxed_perf = PerformanceInfo(1.0, 1.0)

    def handles(self, model: Model, operation) -> bool:
        """Whether this variant takes ``operation`` at all (before the table check)."""
        return _first_input_type(model, operation) in self.operand_types

    def supports(self, model: Model, operation, levels=None) -> bool:
        return self.handles(model, operation) and super().supports(model, operation, levels)

    def get_capabilities(self) -> Capabilities:
        perf = {t: PerformanceInfo(self.perf.exec_time, self.perf.power_usage)
                for t in self.operand_types}
        relaxed = self.relaxed_perf
        return Capabilities(PerformanceInfo(relaxed.exec_time, relaxed.power_usage),
                            PerformanceInfo(relaxed.exec_time, relaxed.power_usage), perf,
                            PerformanceInfo(1.0, 1.0), PerformanceInfo(1.0, 1.0))


class SampleFloatFast(PartialSampleDevice):
    """AOSP ``nnapi-sample_float_fast``: float operations only, fast but power-hungry
    (exec_time 0.8, power_usage 1.2; relaxed float32 0.7 / 1.1)."""

    name = "nncts-sample-float-fast"
    operand_types = FLOAT_TYPES
    perf = PerformanceInfo(0.8, 1.2)
    relaxed_perf = PerformanceInfo(0.7, 1.1)


class SampleFloatSlow(PartialSampleDevice):
    """AOSP ``nnapi-sample_float_slow``: float operations only, slow but frugal
    (exec_time 1.3, power_usage 0.7; relaxed float32 1.2 / 0.6): it wins under
    PREFER_LOW_POWER what ``sample-float-fast`` wins under PREFER_FAST_SINGLE_ANSWER."""

    name = "nncts-sample-float-slow"
    operand_types = FLOAT_TYPES
    perf = PerformanceInfo(1.3, 0.7)
    relaxed_perf = PerformanceInfo(1.2, 0.6)


class SampleMinimal(PartialSampleDevice):
    """AOSP ``nnapi-sample_minimal``: a few float32 operations (AOSP: ADD, CONCATENATION,
    CONV_2D; here also FULLY_CONNECTED), very fast at them (0.4 / 0.5)."""

    name = "nncts-sample-minimal"
    operand_types = (T.TENSOR_FLOAT32,)
    operations = frozenset({OperationType.ADD, OperationType.CONCATENATION, OperationType.CONV_2D,
                            OperationType.FULLY_CONNECTED})
    perf = PerformanceInfo(0.4, 0.5)
    relaxed_perf = PerformanceInfo(0.4, 0.5)

    def handles(self, model: Model, operation) -> bool:
        return operation.type in self.operations and super().handles(model, operation)


class SampleQuant(PartialSampleDevice):
    """AOSP ``nnapi-sample_quant``: operations on 8-bit asymmetric quantized tensors
    (TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED) as first input, or as second input
    for SELECT (whose first input is the TENSOR_BOOL8 condition)."""

    name = "nncts-sample-quant"
    operand_types = QUANT8_ASYMM_TYPES
    perf = PerformanceInfo(0.6, 0.6)
    relaxed_perf = PerformanceInfo(50.0, 50.0)

    def handles(self, model: Model, operation) -> bool:
        if operation.type == OperationType.SELECT and len(operation.inputs) > 1:
            return model.main.operands[operation.inputs[1]].type in self.operand_types
        return super().handles(model, operation)
