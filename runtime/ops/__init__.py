"""The operation table (single source of truth for every NNAPI operation).

Importing this package registers every implemented operation in :data:`REGISTRY`.
Query helpers: :func:`get`, :func:`implemented`, :func:`signatures_at`.
"""
from __future__ import annotations

from ..types import OperandType, OperationType
from .base import REGISTRY, Arg, OperandView, OpContext, OperationDef, Signature

from . import elementwise  # noqa: F401  (registration side effects)
from . import conv, pool, fully_connected  # noqa: F401
from . import shape_ops, block_ops, resize, reduce  # noqa: F401
from . import normalization  # noqa: F401
from . import lookup, recurrent  # noqa: F401
from . import comparison, math_ops, cast  # noqa: F401  (FL3 element-wise)
from . import indexing, arg_topk  # noqa: F401  (FL3 shape / selection)
from . import transpose_conv, instance_norm  # noqa: F401  (FL3 convolution / normalization)
from . import detection, roi  # noqa: F401  (FL3 detection)
from . import sequence, quantized_lstm, multinomial  # noqa: F401  (FL3 recurrent / random)
from . import activation, tensor_ops, batch_matmul, control_flow  # noqa: F401  (FL4+)

__all__ = ["REGISTRY", "Arg", "OperandView", "OpContext", "OperationDef", "Signature",
           "get", "implemented", "signatures_at", "operand_types_at"]


def get(op: OperationType) -> OperationDef | None:
    """The table row of ``op``, or None if not implemented yet (or not a base operation
    type, e.g. an extension operation code)."""
    try:
        return REGISTRY.get(OperationType(op))
    except ValueError:
        return None


def implemented(max_feature_level: int = 99) -> list[OperationType]:
    """Operations with at least one signature at or below ``max_feature_level``."""
    return sorted(t for t, d in REGISTRY.items()
                  if any(s.feature_level <= max_feature_level for s in d.signatures))


def signatures_at(op: OperationType, feature_level: int) -> list[Signature]:
    """Signatures of ``op`` available at ``feature_level`` (cumulative)."""
    d = get(op)
    return [] if d is None else [s for s in d.signatures if s.feature_level <= feature_level]


def operand_types_at(op: OperationType, feature_level: int) -> set[OperandType]:
    """Operand types of the first input of ``op`` across its signatures up to ``feature_level``."""
    return {s.inputs[0].type for s in signatures_at(op, feature_level) if s.inputs}
