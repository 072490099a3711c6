"""The ``onnxruntime`` driver: NNAPI models translated to ONNX and run by onnxruntime's CPU
execution provider (a different engine from the reference kernels). onnx and onnxruntime
are imported on first use only (``pip install nncts[engine]``)."""
from .device import INSTALL_HINT, OnnxRuntimeDevice, OnnxRuntimePreparedModel

__all__ = ["INSTALL_HINT", "OnnxRuntimeDevice", "OnnxRuntimePreparedModel"]
