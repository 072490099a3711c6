"""The ``onnxruntime`` driver: NNAPI HAL models translated to ONNX (:mod:`.translate`) and
run by onnxruntime's CPU execution provider. No nncts kernel computes anything here.

Device: type CPU, feature level 7 (the highest level among the operations mapped;
``get_supported_operations`` says, per operation use, whether the translator maps it),
no compilation caching, no memory domains. Relaxed float32 models run in float32.
"""
from __future__ import annotations

import numpy as np

from ...errors import HalError
from ...hal.types import Model
from ...types import (ErrorStatus, OperandLifeTime, OperandType, PreferenceCode,
                      PriorityCode, is_tensor_type)
from ..translated import TranslatedPreparedModel, TranslatingDevice, translate_every
from .builder import OPSET, Builder, onnx_elem_type
from .translate import translate_operation

INSTALL_HINT = "the onnxruntime driver needs `pip install nncts[engine]`"
FEATURE_LEVEL = 7


def _engine():
    """(onnx, onnxruntime), imported on first use; HalError-free ImportError with the
    install hint when missing."""
    try:
        import onnx
        import onnxruntime
    except ImportError as e:
        raise ImportError(f"{INSTALL_HINT} ({e})") from None
    return onnx, onnxruntime


class OnnxRuntimePreparedModel(TranslatedPreparedModel):
    """An onnxruntime InferenceSession over the translated main subgraph."""

    engine_name = "onnxruntime"

    def __init__(self, model: Model, session, output_names: list[str]):
        super().__init__(model)
        self.session = session
        self.output_names = output_names
        self.input_names = {i.name for i in session.get_inputs()}

    def reads(self, operand_index: int) -> bool:
        return f"v{operand_index}" in self.input_names

    def run_engine(self, feed: dict[int, np.ndarray]) -> list[np.ndarray]:
        return self.session.run(self.output_names, {f"v{i}": a for i, a in feed.items()})


class OnnxRuntimeDevice(TranslatingDevice):
    """NNAPI device over onnxruntime (CPU execution provider)."""

    name = "onnxruntime"

    engine_modules = ("onnx", "onnxruntime")
    install_hint = INSTALL_HINT
    feature_level = FEATURE_LEVEL
    types = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32,
             OperandType.TENSOR_BOOL8, OperandType.TENSOR_QUANT8_ASYMM,
             OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM,
             OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, OperandType.FLOAT32, OperandType.FLOAT16,
             OperandType.INT32, OperandType.BOOL)

    def get_version_string(self) -> str:
        return f"onnxruntime {_engine()[1].__version__}"

    # --- support -------------------------------------------------------------------------
    def new_builder(self, model: Model) -> Builder:
        _engine()
        return Builder(model, model.main)

    def translate_operation(self, builder: Builder, operation) -> None:
        translate_operation(builder, operation)

    def prepare_model(self, model: Model, preference=PreferenceCode.FAST_SINGLE_ANSWER,
                      priority=PriorityCode.MEDIUM, deadline_ns=None, model_cache=None,
                      data_cache=None, token=None) -> OnnxRuntimePreparedModel:
        self.check_preparable(model, preference, priority, deadline_ns)
        proto, output_names = self.to_onnx(model)
        _, ort = _engine()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            session = ort.InferenceSession(proto.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - the engine refused the graph
            raise HalError(ErrorStatus.GENERAL_FAILURE,
                           f"onnxruntime could not create a session: {e}") from None
        return OnnxRuntimePreparedModel(model, session, output_names)

    def to_onnx(self, model: Model):
        """(ONNX ModelProto of ``model.main``, graph output names in HAL output order)."""
        onnx, _ = _engine()
        h = onnx.helper
        sg = model.main
        b = Builder(model, sg)
        translate_every(b, sg.operations, translate_operation)  # checked before; kept for to_onnx alone

        def value_info(idx: int, with_shape: bool):
            o = sg.operands[idx]
            elem = onnx_elem_type(o.type)
            if not is_tensor_type(o.type):
                return h.make_tensor_value_info(f"v{idx}", elem, [])
            dims = list(o.dimensions)
            shape = [d if d else None for d in dims] if (dims and with_shape) else None
            return h.make_tensor_value_info(f"v{idx}", elem, shape)

        inputs = [value_info(i, True) for i in sg.input_indexes
                  if sg.operands[i].lifetime == OperandLifeTime.SUBGRAPH_INPUT]
        outputs = [value_info(i, False) for i in sg.output_indexes]
        graph = h.make_graph(b.nodes, "nnapi", inputs, outputs, initializer=b.initializers)
        proto = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)], producer_name="nncts")
        proto.ir_version = 8
        return proto, [f"v{i}" for i in sg.output_indexes]
