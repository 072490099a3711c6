"""NNAPI HAL model -> TFLite flatbuffer, for the ``litert`` drivers: the entry point.

One :class:`.builder.Rule` per NNAPI operation in :data:`.builder.TABLE` (filled by
:mod:`.translate_elementwise`, :mod:`.translate_nn`, :mod:`.translate_shape` and
:mod:`.translate_more`, imported here). A rule raises
:class:`~runtime.drivers.translated.Unsupported` (the reason) when this use of the
operation needs something the translator does not map faithfully (a type, a quantization
TFLite's kernel computes differently, NCHW layout, a parameter given as a model input,
...); ``get_supported_operations`` answers False for exactly those uses, by translating
each operation alone. :func:`to_tflite` writes the whole main subgraph.
"""
from __future__ import annotations

from ...errors import HalError
from ...types import ErrorStatus, OperandLifeTime, is_tensor_type
from . import translate_elementwise, translate_more, translate_nn, translate_shape
from .builder import TABLE, Builder
from ..translated import Unsupported, translate_every

#: The rule modules; importing them fills TABLE.
RULE_MODULES = (translate_elementwise, translate_nn, translate_shape, translate_more)


def translate_operation(b: Builder, operation) -> None:
    """Emit ``operation`` into ``b``. Raises Unsupported with the reason; ``b`` is left as
    it was on failure."""
    rule = TABLE.get(operation.type)
    name = getattr(operation.type, "name", str(operation.type))
    if rule is None:
        raise Unsupported(f"{name} has no TFLite mapping in this driver")
    k = rule.deciding
    t = b.operand(operation.inputs[k]).type if len(operation.inputs) > k else None
    if t not in rule.types:
        raise Unsupported(f"{name} on {getattr(t, 'name', t)} is not mapped")
    for j in range(len(operation.outputs) if rule.same_type else 0):
        out = b.operand(operation.outputs[j]).type
        if out != t:
            raise Unsupported(f"{name}: output {j} is {out.name}, input {k} {t.name}")
    state = b.snapshot()
    try:
        rule.emit(b, operation)
    except Unsupported as e:
        b.restore(state)
        raise Unsupported(f"{name}: {e}") from None


def to_tflite(model) -> tuple[bytes, list[int], list[int]]:
    """(TFLite flatbuffer of ``model.main``, NNAPI operand indexes of its graph inputs,
    of its graph outputs). Raises HalError(INVALID_ARGUMENT) naming the operation when one
    is not mapped; every main tensor input becomes a graph input (NNAPI order)."""
    sg = model.main
    b = Builder(model, sg)
    translate_every(b, sg.operations, translate_operation)
    inputs = [i for i in sg.input_indexes if sg.operands[i].lifetime == OperandLifeTime.SUBGRAPH_INPUT
              and is_tensor_type(sg.operands[i].type) and i in b.tensors]
    outputs = list(sg.output_indexes)
    try:
        for i in outputs:
            b.tensor(i)
    except Unsupported as e:
        raise HalError(ErrorStatus.INVALID_ARGUMENT, f"model output: {e}") from None
    b.graph.inputs = [b.tensors[i] for i in inputs]
    b.graph.outputs = [b.tensors[i] for i in outputs]
    return b.graph.serialize(), inputs, outputs
