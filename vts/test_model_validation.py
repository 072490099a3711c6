"""VTS model validation (AOSP ``ValidateModel.cpp``): every mutant of a valid corpus model
must be rejected by the driver, through its HAL only, with ``INVALID_ARGUMENT``:
``IDevice.get_supported_operations`` and ``IDevice.prepare_model`` for the model kinds,
``prepare_model`` alone for an invalid execution preference or priority. One item per
model running every applicable mutation kind, see :mod:`vts.plugin`; the kinds are in
:mod:`vts.mutations`.

Any other outcome fails the item, naming the mutant: the call succeeding, another error
status, or an exception other than HalError (a driver crash).
"""
from __future__ import annotations

import pytest

from runtime.errors import HalError
from runtime.testing.hal_convert import to_hal_model
from runtime.types import ErrorStatus
from vts.mutations import MODEL_KINDS, ModelMutant, clone_model
from vts.plugin import MIN_MODELS_PER_KIND, max_mutants, run_mutation_kinds, vts_collection


def expect_invalid_argument(call, what: str) -> str | None:
    """None when ``call()`` raises HalError(INVALID_ARGUMENT); otherwise what went wrong."""
    try:
        value = call()
    except HalError as e:
        if e.status == ErrorStatus.INVALID_ARGUMENT:
            return None
        return f"{what}: expected INVALID_ARGUMENT, got {e.status.name}: {e.message}"
    except Exception as e:  # noqa: BLE001 - driver code
        return f"{what}: driver crashed: {type(e).__name__}: {e}"
    shown = repr(value)
    return f"{what}: accepted (returned {shown[:80] + '...' if len(shown) > 80 else shown})"


def check_model_mutant(hal, mutant: ModelMutant, supported_operations_too: bool) -> list[str]:
    """Problems of the driver with one mutant (empty when it was rejected as it must be)."""
    problems = []
    # each call gets its own copy, as the HAL passes models by value
    for_prepare = clone_model(mutant.model) if supported_operations_too else mutant.model
    if supported_operations_too:
        problem = expect_invalid_argument(lambda: hal.get_supported_operations(mutant.model),
                                          "get_supported_operations")
        if problem:
            problems.append(f"{mutant.description} [{problem}]")
    problem = expect_invalid_argument(
        lambda: hal.prepare_model(for_prepare, mutant.preference, mutant.priority), "prepare_model")
    if problem:
        problems.append(f"{mutant.description} [{problem}]")
    return problems


def test_model_validation(vts_model_case, nncts_device, request):
    """Apply every mutant of every applicable kind to one corpus model (at most
    ``--vts-max-mutants`` per kind) and expect the driver to reject each with
    INVALID_ARGUMENT; the failure lists the mishandled mutants (``kind: where``)."""
    case = vts_model_case
    if case.rejected:
        pytest.skip(case.rejected)
    hal, model, cap = nncts_device.hal, to_hal_model(case.tm), max_mutants(request.config)

    def check(name, mutant):
        return check_model_mutant(hal, mutant, MODEL_KINDS[name].checks_supported_operations)
    run_mutation_kinds(request.node, case.id, case.kinds, lambda name: MODEL_KINDS[name](model, cap), check)


def test_every_kind_covers_enough_models(request):
    """Coverage of the mutation kinds: how many corpus models each kind mutates (the
    driver's accepted models with some place for the kind to apply). On the default corpus
    with the default driver, every selected kind must reach 100 models."""
    coll = vts_collection(request.config)
    counts = coll.models_per_kind()
    table = "\n".join(f"  {k:32s} {n:6d}" for k, n in counts.items())
    print(f"\nVTS mutation kinds: corpus models per kind (driver {coll.driver}, "
          f"{len(coll.accepted)} models accepted, {len(coll.rejected)} rejected)\n{table}")
    if not (coll.default_corpus and coll.driver == "sample"):
        pytest.skip(f"coverage is only enforced on the default corpus with the sample driver:\n{table}")
    low = {k: n for k, n in counts.items() if n < MIN_MODELS_PER_KIND}
    assert not low, f"kinds mutating fewer than {MIN_MODELS_PER_KIND} corpus models: {low}\n{table}"


# --- the mutation kinds themselves (no driver involved) ---------------------------------

def _sample_models():
    """A few corpus models: with internal operands, constants, quantized and relaxed."""
    from harness.locations import CORPUS as DEFAULT_CORPUS
    from runtime.testing.test_model import load_spec
    names = {"fully_connected_float_all_inputs_as_internal", "mean_quant8_1_all_inputs_as_internal",
             "conv_float_2_relaxed", "add_broadcast_quant8"}
    models = []
    for spec in ("V1_0/fully_connected_float", "V1_1/mean_quant8_1", "V1_1/conv_float_2_relaxed",
                 "V1_0/add_broadcast_quant8"):
        models += [to_hal_model(tm) for tm in load_spec(DEFAULT_CORPUS / f"{spec}.json.gz") if tm.name in names]
    assert len(models) == len(names)
    return models


def _control_flow_models():
    """Corpus models with referenced subgraphs: IF with a branch per value of its condition
    (ADD, SUB), and a WHILE whose body runs a WHILE of its own (4 referenced subgraphs, every
    model kind has a place in them)."""
    from harness.locations import CORPUS as DEFAULT_CORPUS
    from runtime.testing.test_model import load_spec
    names = {"V1_3/if_simple": "if_simple_true_int32",
             "V1_3/while_sum_of_powers_quant8": "while_sum_of_powers_quant8_n_0_all_outputs_as_internal"}
    models = [to_hal_model(tm) for spec, name in names.items()
              for tm in load_spec(DEFAULT_CORPUS / f"{spec}.json.gz") if tm.name == name]
    assert len(models) == len(names) and all(m.referenced for m in models)
    return models


def _fingerprint(model) -> str:
    return repr(model) + "".join(bytes(p.buffer).hex() for p in model.pools)


def test_mutation_kinds_are_complete_and_documented():
    import re
    from vts.mutations import KINDS, REQUEST_KINDS
    assert len(MODEL_KINDS) == 23 and len(REQUEST_KINDS) == 2 and len(KINDS) == 25
    for name, kind in KINDS.items():
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", name), name
        assert "AOSP" in kind.doc and "HAL rule" in kind.doc, f"{name}: docstring must name its AOSP source and HAL rule"
        assert kind.aosp.split()[0] in kind.doc, name


def test_mutants_are_fresh_copies_that_differ_from_the_original():
    for model in _sample_models() + _control_flow_models():
        before = _fingerprint(model)
        for name, kind in MODEL_KINDS.items():
            for mutant in kind(model):
                assert mutant.model is not model and mutant.model.main is not model.main
                assert not {id(sg) for sg in mutant.model.referenced} & {id(sg) for sg in model.referenced}
                assert mutant.model.pools == [] or mutant.model.pools[0] is not model.pools[0]
                changed = _fingerprint(mutant.model) != before
                assert changed or kind.target == "prepare", f"{mutant.description}: same as the original"
                assert mutant.description.startswith(name + ":")
        assert _fingerprint(model) == before, "a mutation modified the original model"


def test_mutant_cap_is_deterministic_and_spread():
    from vts.mutations import spread
    assert spread(list(range(10)), None) == list(range(10))
    assert spread(list(range(10)), 3) == [0, 4, 9] or spread(list(range(10)), 3) == [0, 5, 9]
    assert spread(list(range(100)), 8) == spread(list(range(100)), 8)
    assert len(spread(list(range(100)), 8)) == 8
    model = _sample_models()[0]
    kind = MODEL_KINDS["operation_operand_type"]
    first = [m.description for m in kind(model, 5)]
    assert first == [m.description for m in kind(model, 5)] and len(first) == 5


def test_every_model_mutant_is_rejected_by_the_reference_validator():
    """Every mutant (uncapped) of every model kind, of models with and without referenced
    subgraphs, breaks a HAL rule: the reference validator rejects it with INVALID_ARGUMENT."""
    from runtime.hal.validate import validate_model
    accepted, n = [], 0
    for model in _sample_models() + _control_flow_models():
        validate_model(model)
        for kind in MODEL_KINDS.values():
            if kind.target != "model":
                continue
            for mutant in kind(model):
                n += 1
                try:
                    validate_model(mutant.model)
                    accepted.append(mutant.description)
                except HalError as e:
                    assert e.status == ErrorStatus.INVALID_ARGUMENT, mutant.description
    assert n > 2000 and not accepted, f"{len(accepted)} of {n} mutants are valid: {accepted[:8]}"


def test_model_kinds_mutate_referenced_subgraphs():
    """Each model kind has places in the referenced subgraphs as well as in main; a site
    names its subgraph and a mutant of a referenced subgraph says which, changing that
    subgraph only; main's mutants keep AOSP's wording. A model without referenced subgraphs
    has main's sites only."""
    import re
    model = _control_flow_models()[1]
    for name, kind in MODEL_KINDS.items():
        if kind.target != "model":
            continue
        sites = kind.sites(model)
        where = {g for g, _ in sites}
        assert None in where and where - {None}, (name, where)
        for mutant in kind(model):
            found = re.fullmatch(rf"{name}: (a copy of )?(referenced subgraph (\d+) )?(operand|operation) \d+.*",
                                 mutant.description)
            assert found, mutant.description
            g = None if found[3] is None else int(found[3])
            changed = [r for r, (a, b) in enumerate(zip(model.referenced, mutant.model.referenced)) if a != b]
            assert changed == ([] if g is None else [g]), (mutant.description, changed)
            assert (mutant.model.main != model.main) == (g is None), mutant.description
        first, last = kind(model, 2)  # the cap spreads over every subgraph's sites
        assert "referenced subgraph" not in first.description and "referenced subgraph" in last.description
    for model in _sample_models():
        assert all(g is None for kind in MODEL_KINDS.values() if kind.target == "model"
                   for g, _ in kind.sites(model))
