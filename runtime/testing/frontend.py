"""Build a test model through the front end (the CTS path, and the fuzzer's front-end path)."""
from __future__ import annotations

import numpy as np

from ..nnapi import Memory, Model
from ..nnapi.model import pack_constants
from ..types import OperandLifeTime, operand_dtype
from .test_model import TestModel

L = OperandLifeTime


def _raw(o) -> bytes:
    return np.ascontiguousarray(o.data, operand_dtype(o.type)).tobytes()


def build_model(tm: TestModel) -> Model:
    """The finished front-end Model of ``tm`` (main subgraph). CONSTANT_COPY values go
    through ``set_operand_value``, CONSTANT_REFERENCE values through one Memory object and
    ``set_operand_value_from_memory`` (as the AOSP harness does), laid out by
    :func:`~runtime.nnapi.model.pack_constants` (every offset non-zero); a constant without data
    gets an empty value, which the front end must refuse. Referenced subgraphs (IF/WHILE)
    become finished Models of their own, each built once, given to the SUBGRAPH operands
    that name them through ``set_operand_value_from_model``. Raises NnapiError from the
    front end (BAD_DATA naming the operand or operation); a subgraph reference that is out
    of range or circular is BAD_DATA too."""
    from ..errors import NnapiError
    from ..types import ResultCode
    built: dict[int, Model] = {}
    building: set[int] = set()

    def referenced(index: int) -> Model:
        if not 0 <= index < len(tm.referenced):
            raise NnapiError(ResultCode.BAD_DATA, f"subgraph reference {index} is out of range "
                             f"({len(tm.referenced)} referenced subgraphs)")
        if index in building:
            raise NnapiError(ResultCode.BAD_DATA, f"referenced subgraph {index} references itself")
        if index not in built:
            building.add(index)
            built[index] = _build(tm.referenced[index], False)
            building.discard(index)
        return built[index]

    def _build(sg, is_main: bool) -> Model:
        model = Model()
        refs = [i for i, o in enumerate(sg.operands) if o.lifetime == L.CONSTANT_REFERENCE and o.data is not None]
        blob, at = pack_constants([_raw(sg.operands[i]) for i in refs])  # non-zero offsets
        offsets = dict(zip(refs, at))
        memory = Memory.from_bytes(blob) if offsets else None
        for i, o in enumerate(sg.operands):
            model.add_operand(o.type, o.dimensions, o.scale, o.zero_point)
            if o.channel_quant is not None:
                model.set_operand_symm_per_channel_quant_params(i, *o.channel_quant)
            if o.lifetime == L.CONSTANT_COPY or (o.lifetime == L.CONSTANT_REFERENCE and i not in offsets):
                model.set_operand_value(i, b"" if o.data is None else _raw(o))
            elif o.lifetime == L.CONSTANT_REFERENCE:
                model.set_operand_value_from_memory(i, memory, offsets[i], len(_raw(o)))
            elif o.lifetime == L.NO_VALUE:
                model.set_operand_value(i, None)
            elif o.lifetime == L.SUBGRAPH:
                index = int(o.data.reshape(-1)[0]) if o.data is not None and o.data.size else -1
                model.set_operand_value_from_model(i, referenced(index))
        for op in sg.operations:
            model.add_operation(op.type, op.inputs, op.outputs)
        model.identify_inputs_and_outputs(sg.input_indexes, sg.output_indexes)
        model.relax_computation_float32_to_float16(tm.is_relaxed)
        model.finish()
        return model

    try:
        return _build(tm.main, True)
    finally:  # the two closures refer to each other: break the cycle (no wait for the collector)
        del _build, referenced
