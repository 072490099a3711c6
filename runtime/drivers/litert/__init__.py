"""The ``litert`` drivers: NNAPI models translated to TFLite flatbuffers and run by
ai-edge-litert (builtin kernels; ``litert-xnnpack``: with the XNNPACK delegate). tflite,
flatbuffers and ai-edge-litert are imported on first use only (``pip install nncts[litert]``)."""
from .device import INSTALL_HINT, LiteRTDevice, LiteRTPreparedModel, LiteRTXnnpackDevice

__all__ = ["INSTALL_HINT", "LiteRTDevice", "LiteRTPreparedModel", "LiteRTXnnpackDevice"]
