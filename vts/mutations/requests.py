"""The VTS kinds beyond the model itself: invalid prepare_model arguments (execution
preference, priority; AOSP ``ValidateModel.cpp``) and the request kinds (AOSP
``ValidateRequest.cpp``). See :mod:`vts.mutations`.
"""
from __future__ import annotations

from runtime.hal.types import Model, Request

from .common import (INVALID_PREFERENCES, INVALID_PRIORITIES, ModelMutant, clone_model,
                     clone_request, register_kind)


# 21-22. prepare arguments ------------------------------------------------------------

@register_kind("invalid_execution_preference", "prepare", "mutateExecutionPreferenceTest",
       lambda model: list(INVALID_PREFERENCES))
def _invalid_execution_preference(model: Model, site) -> ModelMutant:
    """AOSP ``mutateExecutionPreferenceTest``: the (valid) model is prepared with
    preference LOW_POWER - 1 or SUSTAINED_SPEED + 1. Only prepare_model takes it.

    HAL rule broken: the execution preference is LOW_POWER, FAST_SINGLE_ANSWER or
    SUSTAINED_SPEED."""
    return ModelMutant(f"invalid_execution_preference: preference {site}", clone_model(model),
                       preference=int(site))


@register_kind("invalid_priority", "prepare", "mutateExecutionPriorityTest",
       lambda model: list(INVALID_PRIORITIES))
def _invalid_priority(model: Model, site) -> ModelMutant:
    """AOSP ``mutateExecutionPriorityTest``: the (valid) model is prepared with priority
    LOW - 1 or HIGH + 1. Only prepare_model takes it.

    HAL rule broken: the priority is LOW, MEDIUM or HIGH."""
    return ModelMutant(f"invalid_priority: priority {site}", clone_model(model), priority=int(site))


# --- request kinds --------------------------------------------------------------------

def _without_argument(request: Request, role: str, site: int) -> tuple[str, Request]:
    """A copy of ``request`` without argument ``site`` of its ``inputs`` or ``outputs``."""
    r = clone_request(request)
    del getattr(r, role)[site]
    kind, which = ("removed_input", "input") if role == "inputs" else ("removed_output", "output")
    return f"{kind}: request {which} {site} removed", r


@register_kind("removed_input", "request", "removeInputTest (ValidateRequest.cpp)",
       lambda request: list(range(len(request.inputs))))
def _removed_input(request: Request, site) -> tuple[str, Request]:
    """AOSP ``removeInputTest``: one argument is removed from the request's inputs.

    HAL rule broken: a request has one input argument per model input."""
    return _without_argument(request, "inputs", site)


@register_kind("removed_output", "request", "removeOutputTest (ValidateRequest.cpp)",
       lambda request: list(range(len(request.outputs))))
def _removed_output(request: Request, site) -> tuple[str, Request]:
    """AOSP ``removeOutputTest``: one argument is removed from the request's outputs.

    HAL rule broken: a request has one output argument per model output."""
    return _without_argument(request, "outputs", site)
