"""NNAPI HAL model -> ONNX graph, for the ``onnxruntime`` driver: the entry point.

One entry per NNAPI operation in :data:`.builder.TABLE` (``OperationType -> Entry``): the
operand types it accepts for the deciding input (the tensor that fixes the signature's
type) and a function that emits the ONNX nodes of one use of the operation into a
:class:`.builder.Builder`. A function raises :class:`.builder.Unsupported` (the reason)
when this use needs something ONNX or the adapter does not map faithfully (a parameter
given as a model input, a padding scheme, mixed quantization, ...);
``get_supported_operations`` answers False for exactly those uses, by translating each
operation alone.

The rules live in three modules, all imported here so that the table is complete before
:func:`translate_operation` runs: :mod:`.translate_elementwise` (element-wise, activation,
comparison/logical and softmax operations), :mod:`.translate_shape` (shape, data-movement,
reduction, arg/top-k and matmul operations) and :mod:`.translate_nn` (convolution, pooling,
resizing, normalization and quantization).

Semantics follow the NNAPI documentation as the reference modules under ``runtime/ops``
state them (parameter order, rounding, broadcast); nothing here computes with them. ONNX
opset 18 (:data:`.builder.OPSET`).
"""
from __future__ import annotations

from ...types import OperationType as O
from . import translate_elementwise, translate_nn, translate_shape  # noqa: F401  (fill TABLE)
from .builder import TABLE, Builder, Unsupported


def deciding_input(operation) -> int:
    """Index of the input whose type selects the signature (PACK: 1, SELECT: 1, else 0)."""
    return 1 if operation.type in (O.PACK, O.SELECT, O.EMBEDDING_LOOKUP) else 0


def translate_operation(b: Builder, operation) -> None:
    """Emit ``operation`` into ``b``: as it is when its type is in the entry's ``types``,
    else (or when that is Unsupported) in QDQ form when the entry allows it. Raises
    Unsupported with the reason; ``b`` is left as it was on failure."""
    entry = TABLE.get(operation.type)
    name = getattr(operation.type, "name", str(operation.type))
    if entry is None:
        raise Unsupported(f"{name} has no ONNX mapping in this driver")
    k = deciding_input(operation)
    t = b.operand(operation.inputs[k]).type if len(operation.inputs) > k else None
    modes = ([False] if t in entry.types else []) + ([True] if t in entry.qdq else [])
    if not modes:
        raise Unsupported(f"{name} on {getattr(t, 'name', t)} is not mapped")
    for n, qdq in enumerate(modes):
        state = b.snapshot()
        b.qdq = qdq
        try:
            entry.emit(b, operation)
            return
        except Unsupported as e:
            b.restore(state)
            if n == len(modes) - 1:
                raise Unsupported(f"{name}: {e}") from None
        finally:
            b.qdq = False
