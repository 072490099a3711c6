"""Mutations of valid HAL models and requests into invalid ones: the VTS validation tests
(AOSP ``neuralnetworks/1.3/vts/functional/ValidateModel.cpp`` / ``ValidateRequest.cpp`` and
their AIDL successors in ``neuralnetworks/aidl/vts/functional``), re-stated for nncts.

Every mutation kind is a :class:`MutationKind`: call it on a valid HAL model (or request)
to get its mutants, each applied to a fresh copy of the original. The kinds apply "where
it makes sense", with AOSP's rules of where (which operands, which operations, which
values), and every mutant they make breaks one rule of the HAL, so a driver must reject it
with ``INVALID_ARGUMENT``:

* model kinds (21) yield :class:`ModelMutant` ``(description, model, preference,
  priority)`` with the default preference and priority; the VTS passes each mutant to
  ``IDevice.get_supported_operations`` and ``IDevice.prepare_model``;
* prepare-argument kinds (2: ``invalid_execution_preference``, ``invalid_priority``)
  yield the unchanged model with an invalid preference or priority; only
  ``prepare_model`` takes those;
* request kinds (2) yield ``(description, request)`` for a prepared model's execution
  paths.

Beyond AOSP, mutants keep ``numberOfConsumers`` consistent with the operations (as the
HAL 1.3 VTS does where it edits operation inputs), so each mutant is invalid for the
reason its kind names, and no mutant breaks a rule of another kind by accident.

The kinds live in :mod:`.operands` (1-9), :mod:`.operations` (10-20), :mod:`.row_errors`
(21, ``row_error_inputs``: the invalid uses the operation table's rows declare, beyond
AOSP's list) and :mod:`.requests` (prepare arguments and requests); :mod:`.common` holds the copies and the registry. Where
AOSP keeps hand lists of edits that leave a valid operation (``mutateOperationOperandTypeSkip``,
``removeOperandSkip``, ``removeOperationInputSkip``, ``addOperationInputSkip``), the kinds
ask the operation table's signatures instead (tests/test_vts_derived_skips.py compares).

The model kinds apply to every subgraph: the main subgraph and each referenced subgraph
(HAL 1.3 ``Model.referenced``, the subgraphs IF and WHILE run), since the HAL rules hold in
every subgraph (AOSP ``common/types/src/Validation.cpp`` ``validateModel`` runs
``validateModelSubgraph`` on main, then on each referenced subgraph). AOSP's VTS mutates
``model.main`` only, so a driver validating only main passes it; nncts does not. A site
names its subgraph (``(None, place)`` for main, ``(r, place)`` for referenced subgraph
``r``); a mutant of a referenced subgraph says so (``referenced subgraph 1 operand 2 ...``),
one of main keeps AOSP's wording (``operand 2 ...``). Every mutant of a referenced subgraph
is invalid for the same reason as its main-subgraph twin (the kinds' skips read the
subgraph the site is in); changing a referenced subgraph's inputs or outputs may also break
the IF/WHILE rules of the operation that runs it, which only adds a reason.

``kind(model, limit=N)`` caps the mutants at ``N``, chosen deterministically and spread
evenly over the places the kind applies to (in every subgraph, main first);
:meth:`MutationKind.sites` lists those places cheaply (without copying the model).
"""
from __future__ import annotations

from . import operands, operations, row_errors, requests  # noqa: F401  (register the kinds, in this order)
from .common import (KINDS, MODEL_KINDS, REQUEST_KINDS, ModelMutant, MutationKind, clone_model,
                     clone_request, count_consumers, spread)

__all__ = ["MutationKind", "ModelMutant", "MODEL_KINDS", "REQUEST_KINDS", "KINDS",
           "clone_model", "clone_request", "spread", "count_consumers"]

assert len(MODEL_KINDS) == 23 and len(REQUEST_KINDS) == 2, (len(MODEL_KINDS), len(REQUEST_KINDS))
globals().update(KINDS)  # each kind is also a package attribute of its name
__all__ += list(KINDS)
