"""Hand-golden models every translated driver (onnxruntime, litert, litert-xnnpack) must get
right: the same HAL model and the same expected values for each engine, so a fix in one
translator cannot drift from the others. Each driver is skipped when its engine is not
installed (extras ``nncts[onnxrt]`` / ``nncts[litert]``)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from runtime.loader import load_driver
from runtime.types import OperandType as T, OperationType as O
from tests.hal_models import Net, run

#: Each translated driver and the modules its engine needs.
ENGINES = {"onnxruntime": ("onnx", "onnxruntime"), "litert": ("tflite", "ai_edge_litert"),
           "litert-xnnpack": ("tflite", "ai_edge_litert")}


@pytest.fixture(scope="module", params=sorted(ENGINES))
def device(request):
    missing = [m for m in ENGINES[request.param] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{request.param}: {', '.join(missing)} not installed")
    return load_driver(request.param)


def test_quantized_add_requantizes(device):
    # golden by hand: reals 0.5 * (q - 10) + 0.25 * q, requantized to scale 0.5, zero point 5:
    # 0 + 0 = 0 -> 5; 2 + 2 = 4 -> 13; 10 + 1 = 11 -> 27
    n = Net()
    a = n.input(T.TENSOR_QUANT8_ASYMM, [3])
    n.operands[a].scale, n.operands[a].zero_point = 0.5, 10
    b = n.input(T.TENSOR_QUANT8_ASYMM, [3])
    n.operands[b].scale = 0.25
    o = n.output(T.TENSOR_QUANT8_ASYMM, [3])
    n.operands[o].scale, n.operands[o].zero_point = 0.5, 5
    n.op(O.ADD, [a, b, n.scalar(T.INT32, 0)], [o])
    (y,), _, _ = run(device, n.model(), [np.array([10, 14, 30], np.uint8), np.array([0, 8, 4], np.uint8)])
    np.testing.assert_array_equal(y, [5, 13, 27])
