"""Which test models the operation table can run yet (used to skip, never to pass)."""
from __future__ import annotations

from .. import ops
from ..hal.types import Model
from ..hal.validate import _signature_error, operand_view
from ..types import OperandLifeTime, OperationType


def not_implemented_reason(model: Model, signatures_too: bool = True) -> str | None:
    """Why ``model`` needs something the operation table lacks, or None.

    An operation type missing from the table always counts; with ``signatures_too``, so does
    an operation whose operand types/ranks match none of its implemented signatures (a
    signature of a later feature level).
    """
    for sg in [model.main, *model.referenced]:
        for k, operation in enumerate(sg.operations):
            op_type = OperationType(operation.type)
            opdef = ops.get(op_type)
            if opdef is None:
                return f"{op_type.name} is not in the operation table yet"
            if not signatures_too:
                continue
            ins = [operand_view(sg.operands[i], None, sg.operands[i].lifetime == OperandLifeTime.NO_VALUE)
                   for i in operation.inputs]
            outs = [operand_view(sg.operands[i]) for i in operation.outputs]
            if opdef.match(ins, outs) is None:
                return (f"{op_type.name} signature not implemented yet: "
                        f"{_signature_error(opdef, ins, outs, 99)}")
    return None
