"""The example extension ``com.example.fibonacci`` and the bundled driver that implements it,
``sample-fibonacci`` (:class:`FibonacciDevice`), modelled on the example extension that
ships with AOSP's NNAPI runtime (``FibonacciExtension.h`` and its test driver).

The extension (type codes within it; a model's codes are ``prefix << 16 | type``):

* operand type ``EXAMPLE_INT64`` (0): a signed 64-bit scalar, 8 bytes little-endian.
* operand type ``EXAMPLE_TENSOR_QUANT64_ASYMM`` (1): a tensor of unsigned 64-bit integers
  (8 bytes each, little-endian) standing for real numbers
  ``real = (q - zeroPoint) * scale``. Its extension data (``set_operand_extension_data``)
  is ``ExampleQuant64AsymmParams``: 16 bytes, ``<dq`` = float64 ``scale`` (> 0, finite)
  then int64 ``zeroPoint`` (:func:`quant64_params` builds it). The operand's own scale and
  zero point stay 0, as for every extension type.
* operation ``EXAMPLE_FIBONACCI`` (0): one input ``n``, either an ``EXAMPLE_INT64`` scalar or
  a ``TENSOR_FLOAT32`` holding exactly one element (truncated toward zero to an integer);
  one output, a 1-D tensor of shape ``[n]`` holding the first ``n`` Fibonacci numbers
  1, 1, 2, 3, 5, ...: ``TENSOR_FLOAT32`` (rounded to float32), or
  ``EXAMPLE_TENSOR_QUANT64_ASYMM`` quantized as ``q = trunc(fib / scale + zeroPoint)`` (the
  example's formula, evaluated in float64). ``n`` must be >= 1; a quantized value outside
  [0, 2**64) fails the execution (AOSP's example leaves it undefined).

:class:`FibonacciDevice` is the sample driver plus this extension: it reports the extension
from ``get_supported_extensions``, supports ``EXAMPLE_FIBONACCI`` after checking its operands
itself (the HAL's validation skips extension operations), and runs it with a kernel of its
own next to the operation table's (``runtime.executor.execute`` with a driver table and the
extension operand types' dtypes). Execution failures (``n < 1``, an output shape other than
``[n]``) are ``GENERAL_FAILURE``.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from .. import ops
from ..errors import OperationError
from ..executor import execute
from ..drivers.sample import SampleDevice
from ..hal.types import Extension, ExtensionOperandTypeInformation, Model, OutputShape, Request
from ..hal.validate import MAX_OPERAND_BYTES, constant_value
from ..ops.base import OpContext, OperationDef
from ..types import OperandLifeTime, OperandType
from ..extension_types import find_prefix, make_extension_type

__all__ = ["EXTENSION_NAME", "EXAMPLE_INT64", "EXAMPLE_TENSOR_QUANT64_ASYMM", "EXAMPLE_FIBONACCI",
           "EXTENSION", "QUANT64_PARAMS", "quant64_params", "parse_quant64_params", "fibonacci",
           "FibonacciDevice"]

#: The extension's name.
EXTENSION_NAME = "com.example.fibonacci"
#: Operand type within the extension: signed 64-bit scalar.
EXAMPLE_INT64 = 0
#: Operand type within the extension: tensor of uint64 quantized values.
EXAMPLE_TENSOR_QUANT64_ASYMM = 1
#: Operation type within the extension: the first n Fibonacci numbers.
EXAMPLE_FIBONACCI = 0

#: What a driver implementing the extension reports (``IDevice.get_supported_extensions``).
EXTENSION = Extension(EXTENSION_NAME, [
    ExtensionOperandTypeInformation(EXAMPLE_INT64, is_tensor=False, byte_size=8),
    ExtensionOperandTypeInformation(EXAMPLE_TENSOR_QUANT64_ASYMM, is_tensor=True, byte_size=8),
])

#: Layout of ``ExampleQuant64AsymmParams``: float64 scale, int64 zeroPoint (16 bytes).
QUANT64_PARAMS = struct.Struct("<dq")

#: Largest n: the output must stay within the runtime's tensor size limit.
MAX_N = MAX_OPERAND_BYTES // 8

_DTYPES = {EXAMPLE_INT64: np.dtype("<i8"), EXAMPLE_TENSOR_QUANT64_ASYMM: np.dtype("<u8")}


def quant64_params(scale: float, zero_point: int) -> bytes:
    """The extension data of an ``EXAMPLE_TENSOR_QUANT64_ASYMM`` operand."""
    return QUANT64_PARAMS.pack(float(scale), int(zero_point))


def parse_quant64_params(data) -> tuple[float, int]:
    """(scale, zeroPoint) from extension data. Raises OperationError unless it is 16 bytes
    with a finite scale > 0."""
    if data is None or len(data) != QUANT64_PARAMS.size:
        raise OperationError(f"EXAMPLE_TENSOR_QUANT64_ASYMM needs {QUANT64_PARAMS.size} bytes of "
                             f"extension data (scale, zeroPoint), got "
                             f"{'none' if data is None else len(data)}")
    scale, zero_point = QUANT64_PARAMS.unpack(bytes(data))
    if not (math.isfinite(scale) and scale > 0):
        raise OperationError(f"EXAMPLE_TENSOR_QUANT64_ASYMM scale {scale} must be finite and > 0")
    return scale, zero_point


def fibonacci(n: int) -> list[int]:
    """The first ``n`` Fibonacci numbers, 1, 1, 2, 3, 5, ... (exact ints)."""
    out, a, b = [], 1, 1
    for _ in range(n):
        out.append(a)
        a, b = b, a + b
    return out


def _n_of(operand_type, value) -> int:
    """n from the input's value (an int64 scalar or a one-element float32 tensor). Raises
    OperationError unless 1 <= n <= MAX_N."""
    value = np.asarray(value)
    if operand_type == OperandType.TENSOR_FLOAT32:
        if value.size != 1:
            raise OperationError(f"input n (TENSOR_FLOAT32) must hold exactly 1 element, has {value.size}")
        x = float(value.reshape(-1)[0])
        if not math.isfinite(x):
            raise OperationError(f"input n is {x}")
        n = math.trunc(x)
    else:
        n = int(value.reshape(-1)[0])
    if n < 1:
        raise OperationError(f"n must be >= 1, got {n}")
    if n > MAX_N:
        raise OperationError(f"n = {n} needs an output of more than 2^31 bytes")
    return n


def _prepare(ctx: OpContext) -> list[tuple[int, ...]]:
    if ctx.inputs[0].value is None:
        raise OperationError("input n has no value")
    return [(_n_of(ctx.inputs[0].type, ctx.inputs[0].value),)]


def _execute(ctx: OpContext) -> list[np.ndarray]:
    n = _n_of(ctx.inputs[0].type, ctx.value(0))
    numbers = fibonacci(n)
    out = ctx.outputs[0]
    if out.type == OperandType.TENSOR_FLOAT32:
        return [np.array([float(f) for f in numbers], dtype=np.float64).astype(np.float32)]
    scale, zero_point = parse_quant64_params(out.extension_data)
    quantized = []
    for f in numbers:
        q = f / scale + zero_point
        if not (math.isfinite(q) and 0 <= q < 2.0 ** 64):
            raise OperationError(f"fibonacci value {f} quantizes to {q}, outside uint64")
        quantized.append(math.trunc(q))
    return [np.array(quantized, dtype=np.uint64)]


class FibonacciDevice(SampleDevice):
    """The sample driver plus the ``com.example.fibonacci`` extension (bundled as
    ``sample-fibonacci``): every base operation the sample driver runs, and
    ``EXAMPLE_FIBONACCI``."""

    name = "nncts-sample-fibonacci"

    def get_supported_extensions(self) -> list[Extension]:
        return [EXTENSION]

    # -- the extension operation -----------------------------------------------------------
    @staticmethod
    def _codes(model: Model) -> dict[str, int] | None:
        """This model's codes of the extension's types (None when it does not use it)."""
        prefix = find_prefix(model, EXTENSION_NAME)
        if prefix is None:
            return None
        return {"int64": make_extension_type(prefix, EXAMPLE_INT64),
                "quant64": make_extension_type(prefix, EXAMPLE_TENSOR_QUANT64_ASYMM),
                "fibonacci": make_extension_type(prefix, EXAMPLE_FIBONACCI)}

    def check_fibonacci(self, model: Model, operation) -> None:
        """Check one ``EXAMPLE_FIBONACCI`` operation of the main subgraph (the driver's own
        validation). Raises OperationError naming the rule broken."""
        codes = self._codes(model)
        if codes is None or operation.type != codes["fibonacci"]:
            raise OperationError("not an EXAMPLE_FIBONACCI operation")
        if len(operation.inputs) != 1 or len(operation.outputs) != 1:
            raise OperationError(f"takes 1 input and 1 output, got {len(operation.inputs)} and "
                                 f"{len(operation.outputs)}")
        sg = model.main
        x, y = sg.operands[operation.inputs[0]], sg.operands[operation.outputs[0]]
        if x.lifetime == OperandLifeTime.NO_VALUE:
            raise OperationError("input n has no value")
        if x.type == OperandType.TENSOR_FLOAT32:
            if x.dimensions and 0 not in x.dimensions and math.prod(x.dimensions) != 1:
                raise OperationError(f"input n (TENSOR_FLOAT32{list(x.dimensions)}) must hold exactly 1 element")
        elif x.type == codes["int64"]:
            if x.dimensions:
                raise OperationError(f"input n (EXAMPLE_INT64) is a scalar, has dimensions {list(x.dimensions)}")
        else:
            raise OperationError(f"input n has type {int(x.type):#x}; expected TENSOR_FLOAT32 or EXAMPLE_INT64")
        if y.type == codes["quant64"]:
            parse_quant64_params(y.extra_params if isinstance(y.extra_params, (bytes, bytearray)) else None)
        elif y.type != OperandType.TENSOR_FLOAT32:
            raise OperationError(f"output has type {int(y.type):#x}; expected TENSOR_FLOAT32 or "
                                 f"EXAMPLE_TENSOR_QUANT64_ASYMM")
        if y.dimensions and len(y.dimensions) != 1:
            raise OperationError(f"output must be 1-D, declared {list(y.dimensions)}")
        value = constant_value(model, x, _DTYPES[EXAMPLE_INT64] if x.type == codes["int64"] else None)
        if value is not None:
            n = _n_of(x.type, value)
            if y.dimensions and y.dimensions[0] not in (0, n):
                raise OperationError(f"output declared {list(y.dimensions)}, n = {n} gives [{n}]")

    def supports(self, model: Model, operation, levels=None) -> bool:
        """Base operations as the sample driver; ``EXAMPLE_FIBONACCI`` when
        :meth:`check_fibonacci` accepts it; any other extension operation: no."""
        codes = self._codes(model)
        if codes is not None and operation.type == codes["fibonacci"]:
            try:
                self.check_fibonacci(model, operation)
            except OperationError:
                return False
            return True
        return super().supports(model, operation, levels)

    def run(self, model: Model, request: Request) -> list[OutputShape]:
        """The reference executor with this driver's EXAMPLE_FIBONACCI kernel and the dtypes
        of the extension's operand types (int64, uint64)."""
        codes = self._codes(model)
        if codes is None:
            return execute(model, request)
        table = dict(ops.REGISTRY)
        table[codes["fibonacci"]] = OperationDef(codes["fibonacci"], (), _prepare, _execute,
                                                 summary="EXAMPLE_FIBONACCI")
        dtypes = {codes["int64"]: _DTYPES[EXAMPLE_INT64],
                  codes["quant64"]: _DTYPES[EXAMPLE_TENSOR_QUANT64_ASYMM]}
        return execute(model, request, table, dtypes)
