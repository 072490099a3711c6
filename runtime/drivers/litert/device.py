"""The ``litert`` and ``litert-xnnpack`` drivers: NNAPI HAL models translated to TFLite
flatbuffers (:mod:`.translate`) and run by ai-edge-litert's Interpreter, one thread. No
nncts kernel computes anything here.

=================  ==============================================  ==========================
driver             ``experimental_op_resolver_type``               what computes
=================  ==============================================  ==========================
``litert``         ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``           TFLite's builtin kernels
``litert-xnnpack`` ``AUTO``                                        the XNNPACK delegate for
                                                                   what it takes, builtin
                                                                   kernels for the rest
=================  ==============================================  ==========================

``litert-xnnpack`` also declines QUANTIZE (XNNPACK rounds halves to even, NNAPI away from
zero). Device: type CPU, feature level 7 (``get_supported_operations`` says, per operation use,
whether the translator maps it faithfully), no compilation caching, no memory domains.
Graph inputs whose dimensions the model leaves unknown are resized to the request's
(``resize_tensor_input`` + ``allocate_tensors``) before the run.
"""
from __future__ import annotations

import numpy as np

from ...errors import HalError
from ...hal.types import Model
from ...types import ErrorStatus, OperandType, OperationType, PreferenceCode, PriorityCode
from ..translated import TranslatedPreparedModel, TranslatingDevice
from .builder import Builder
from .translate import to_tflite, translate_operation

INSTALL_HINT = "the litert drivers need `pip install nncts[litert]`"
FEATURE_LEVEL = 7


def _engine():
    """ai_edge_litert.interpreter, imported on first use (ImportError with the install hint)."""
    try:
        from ai_edge_litert import interpreter
    except ImportError as e:
        raise ImportError(f"{INSTALL_HINT} ({e})") from None
    return interpreter


class LiteRTPreparedModel(TranslatedPreparedModel):
    """An ai-edge-litert Interpreter over the translated main subgraph."""

    engine_name = "litert"

    def __init__(self, model: Model, interpreter, inputs: list[int]):
        super().__init__(model)
        self.interpreter = interpreter
        details = interpreter.get_input_details()
        self._inputs = {idx: d["index"] for idx, d in zip(inputs, details)}
        self._shapes = {idx: tuple(int(x) for x in d["shape"]) for idx, d in zip(inputs, details)}
        self._outputs = [d["index"] for d in interpreter.get_output_details()]  # HAL output order

    def reads(self, operand_index: int) -> bool:
        return operand_index in self._inputs

    def run_engine(self, feed: dict[int, np.ndarray]) -> list[np.ndarray]:
        it = self.interpreter
        resized = False
        for idx, arr in feed.items():
            if arr.shape != self._shapes[idx]:
                it.resize_tensor_input(self._inputs[idx], list(arr.shape), strict=False)
                self._shapes[idx] = arr.shape
                resized = True
        if resized:
            it.allocate_tensors()
        for idx, arr in feed.items():
            it.set_tensor(self._inputs[idx], arr)
        it.invoke()
        return [np.array(it.get_tensor(t)) for t in self._outputs]


class LiteRTDevice(TranslatingDevice):
    """NNAPI device over ai-edge-litert's builtin kernels (no delegate)."""

    name = "litert"
    resolver = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"

    engine_modules = ("tflite", "ai_edge_litert", "flatbuffers")
    install_hint = INSTALL_HINT
    feature_level = FEATURE_LEVEL
    types = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_QUANT8_ASYMM,
             OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
             OperandType.FLOAT32, OperandType.INT32, OperandType.BOOL)

    def get_version_string(self) -> str:
        from importlib.metadata import version
        return f"ai-edge-litert {version('ai-edge-litert')} ({self.resolver})"

    def new_builder(self, model: Model) -> Builder:
        return Builder(model, model.main)

    def translate_operation(self, builder: Builder, operation) -> None:
        translate_operation(builder, operation)

    def prepare_model(self, model: Model, preference=PreferenceCode.FAST_SINGLE_ANSWER,
                      priority=PriorityCode.MEDIUM, deadline_ns=None, model_cache=None,
                      data_cache=None, token=None) -> LiteRTPreparedModel:
        self.check_preparable(model, preference, priority, deadline_ns)
        content, inputs, _ = to_tflite(model)
        interpreter = _engine()
        try:
            it = interpreter.Interpreter(
                model_content=content, num_threads=1,
                experimental_op_resolver_type=getattr(interpreter.OpResolverType, self.resolver))
            it.allocate_tensors()
        except Exception as e:  # noqa: BLE001 - the engine refused the model
            raise HalError(ErrorStatus.GENERAL_FAILURE, f"litert could not load the model: {e}") from None
        return LiteRTPreparedModel(model, it, inputs)


class LiteRTXnnpackDevice(LiteRTDevice):
    """NNAPI device over ai-edge-litert with its default delegate, XNNPACK."""

    name = "litert-xnnpack"
    resolver = "AUTO"
    declined = {OperationType.QUANTIZE: "XNNPACK's QUANTIZE rounds halves to even, NNAPI's away from zero "
                                        "(0.25 at scale 0.5: NNAPI 1, XNNPACK 0)"}
