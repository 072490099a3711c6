"""pytest plugin of the CTS: ``--mode``, ``--no-require-timing`` and ``--precision``; one test per
corpus test model and execution mode (id ``<version>/<spec>/<name>`` for the base mode,
``...@<mode>`` otherwise), the modes of a test model in one pytest item marked per operation
and ``flN`` (:mod:`harness.grouped`: each mode still its own report and record, fields
:func:`case_fields`). Shared options, the device fixture and the outcome records come from
:mod:`harness.plugin`."""
from __future__ import annotations

import pytest

from harness.modes import BASE, applies, parse_modes
from harness.grouped import Group
from harness.plugin import corpus_models, model_marks
from harness.records import model_operand_types, under_test_fields
from harness.runner import PRECISION_MODES
from harness.suites import suite
from runtime.testing.hal_convert import to_hal_model
from runtime.testing.support import not_implemented_reason

pytest_plugins = ["harness.plugin"]
#: The ``suite`` of this suite's records.
SUITE = suite("cts").record_name


def pytest_addoption(parser):
    g = parser.getgroup("nncts")
    g.addoption("--mode", action="append", default=[],
                help="CTS execution modes (repeatable, comma-separated): default (CI set), all (full cross "
                     "product), an axis value (sync async burst fenced / buffer memory device / specified "
                     "dynamic insufficient / cache / coupling) or a combination like fenced+memory+cache")
    g.addoption("--no-require-timing", action="store_true",
                help="do not fail drivers that report no timing when measurement is requested")
    g.addoption("--precision", choices=PRECISION_MODES, default="aosp",
                help="aosp (default): AOSP's tolerance is the verdict and each float output's error in ULP "
                     "against the float64 truth is graded by the operations' error budgets beside it; strict: "
                     "an over-budget float output fails the test too (a --profile may require strict)")


def precision_mode(config) -> str:
    """The run's precision verdict: ``strict`` when ``--precision strict`` or the
    ``--profile`` requires it (:attr:`harness.requirements.Profile.precision`), else
    ``aosp``."""
    profile = getattr(config, "_nncts_profile", None)
    if config.getoption("precision", "aosp") == "strict" or getattr(profile, "precision", "aosp") == "strict":
        return "strict"
    return "aosp"


def pytest_generate_tests(metafunc):
    if "nncts_case" not in metafunc.fixturenames:
        return
    try:
        modes = parse_modes(metafunc.config.getoption("mode"))
    except ValueError as e:
        raise pytest.UsageError(f"--mode: {e}") from None
    params = []
    for tm in corpus_models(metafunc.config):
        # a model the operation table cannot run yet is one (skipped) test, not one per mode
        runnable = not_implemented_reason(to_hal_model(tm), signatures_too=not tm.expect_failure) is None
        chosen = [m for m in modes if applies(tm, m)] if runnable else [BASE]
        if chosen:
            ids = [tm.test_id if m == BASE else f"{tm.test_id}@{m.name}" for m in chosen]
            group = Group(ids, [(tm, m) for m in chosen], case_fields)
            params.append(pytest.param(group, id=ids[0], marks=model_marks(tm)))
    metafunc.parametrize("nncts_case", params)


def case_fields(case) -> dict:
    """The record of one CTS test ``(TestModel, Mode)``: the model's operations, feature level,
    mode and operand types (as the driver sees them: the coupling mode renames
    TENSOR_QUANT8_ASYMM), and its operation under test with that operation's operand type,
    helper operations and core digest (:func:`harness.records.under_test_fields`)."""
    tm, mode = case
    return {"suite": SUITE, "operations": [t.name for t in tm.operation_types], "feature_level": tm.feature_level,
            "mode": mode.name, "operand_types": model_operand_types(tm, coupling=mode.coupling),
            **under_test_fields(tm, coupling=mode.coupling)}
