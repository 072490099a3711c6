"""Count limits of HAL models and requests: how many operands, operations, subgraphs, memory
pools and request arguments one model or request may have.

NNAPI sets none of these (indexes are uint32), but every one of them costs the process that
receives the model time and memory before a single rule is checked: a million empty operands
took a driver host 17 s and 780 MB to refuse. The bounds are far above any real model (the
corpora and MLTS models have at most a few thousand operands) and are read in two places
only: the reference validator (:func:`runtime.hal.validate.validate_model` /
``validate_request``, on HAL objects) and the driver host (:mod:`runtime.remote.wire`, on the
decoded protobuf message, before any HAL object is built). Both raise the same
HalError(INVALID_ARGUMENT) through :func:`check_counts`.
"""
from __future__ import annotations

from ..errors import HalError
from ..types import ErrorStatus

#: Operands of one model, over its main and referenced subgraphs together.
MAX_OPERANDS = 1 << 16
#: Operations of one model, over all its subgraphs.
MAX_OPERATIONS = 1 << 16
#: Subgraphs of one model (the main subgraph and the referenced ones of IF/WHILE).
MAX_SUBGRAPHS = 1 << 12
#: Memory pools of one model or one request.
MAX_POOLS = 1 << 12
#: Input and output arguments of one request (each kind on its own).
MAX_ARGUMENTS = 1 << 17

LIMITS = {"operands": MAX_OPERANDS, "operations": MAX_OPERATIONS, "subgraphs": MAX_SUBGRAPHS,
          "pools": MAX_POOLS, "inputs": MAX_ARGUMENTS, "outputs": MAX_ARGUMENTS}


def check_counts(what: str, **counts: int) -> None:
    """Check each count (keyword: ``operands``, ``operations``, ``subgraphs``, ``pools``,
    ``inputs``, ``outputs``) against its limit in :data:`LIMITS`. ``what`` names the call
    or object for the message, e.g. ``"prepare_model: model"``.

    Raises HalError(INVALID_ARGUMENT), e.g. ``prepare_model: model has 1000000 operands,
    more than the limit of 65536 (runtime.hal.model_limits.MAX_OPERANDS)``; KeyError for a
    count without a limit (a programming error)."""
    for name, n in counts.items():
        limit = LIMITS[name]
        if n > limit:
            constant = {"inputs": "MAX_ARGUMENTS", "outputs": "MAX_ARGUMENTS"}.get(name, f"MAX_{name.upper()}")
            raise HalError(ErrorStatus.INVALID_ARGUMENT, f"{what} has {n} {name}, more than the limit of "
                                                         f"{limit} (runtime.hal.model_limits.{constant})")


def check_model(what: str, main, referenced, pools) -> None:
    """:func:`check_counts` of a model given as its main subgraph, its referenced subgraphs
    and its pools; works on HAL dataclasses and protobuf messages alike (anything with
    ``operands`` and ``operations`` sequences), reading lengths only, subgraphs first (so a
    million referenced subgraphs are not walked). Raises HalError(INVALID_ARGUMENT)."""
    check_counts(what, subgraphs=1 + len(referenced), pools=len(pools))
    subgraphs = [main, *referenced]
    check_counts(what, operands=sum(len(s.operands) for s in subgraphs),
                 operations=sum(len(s.operations) for s in subgraphs))
