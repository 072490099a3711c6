"""pytest plugin part of :mod:`harness.plugin`: required vs optional tests.

A test the driver declines (skip kinds in :data:`DECLINE_KINDS`: the model is above the
driver's feature level, the driver does not support one of its operations, rejects or cannot
prepare the model, or lacks an optional feature) is judged by the certification profile of
``--profile FILE|NAME``:

* ``none`` (default): nothing is required; every declined test is skipped with skip_kind
  ``not_applicable`` (the original kind kept as ``declined``).
* ``feature-level``: the driver must support everything its feature level claims: a test is
  required when its model's feature level is at most the driver's and every operation it
  uses is in NNAPI at that level.
* a TOML file: ``feature_level = N`` (required), optionally ``name``, ``operations =
  ["CONV_2D", ...]`` and ``operand_types = ["TENSOR_FLOAT32", ...]``: a test is required
  when its feature level is at most N, its operations are all listed (and in NNAPI at N),
  and, when its record carries operand types, those are all listed too (a test without
  operand types is judged by level and operations only). ``suites = ["precision"]``: suites
  ``nncts certify`` counts in its verdict beyond those it always does (the suite table's
  ``required``, :mod:`harness.suites`); the suites themselves do not read it.
  ``precision = "strict"``: every float output must be within its error budget (the CTS's
  ``--precision strict``: an over-budget output fails); ``"aosp"`` (default) leaves the
  budget a grade beside AOSP's tolerance.

A declined required test fails ("required by profile P: driver X declines ...", record keys
``required: true`` and ``declined``). A ``runtime_rejected`` skip (the front end rejected a model
that must fail before the driver saw it: :func:`harness.runner.run_expected_failure`) is no
decline: never required, never re-kinded, counted as not run. Tests without a feature level (device-wide VTS tests)
are never required. Applied centrally from the suites' record fields (operations,
feature_level, operand_types, skip_kind), whatever the suite.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.driver import driver_identity
from harness.suites import suite
from runtime import ops
from runtime.files import load_toml
from runtime.types import OperandType, OperationType

#: Skip kinds meaning "the driver declines this test" (not a gap of the reference table).
DECLINE_KINDS = frozenset({"feature_level", "unsupported_by_driver", "driver_rejects_model",
                           "driver_cannot_prepare", "driver_feature"})
BUILTIN = ("none", "feature-level")
PROFILE_KEYS = {"name", "feature_level", "operations", "operand_types", "suites", "precision"}
#: A profile's ``precision``: AOSP's tolerance alone is the verdict, or the error budgets too.
PRECISION_VERDICTS = ("aosp", "strict")


@dataclass(frozen=True)
class Profile:
    """A certification profile. ``feature_level`` None means the driver's own level (the
    ``feature-level`` profile); ``operations`` / ``operand_types`` None mean any; ``none``
    (``required_nothing``) requires no test; ``suites``: command names of the suites the
    profile makes ``nncts certify`` require besides its default ones; ``precision``
    "strict": an over-budget float output is a failure (:data:`PRECISION_VERDICTS`)."""

    name: str
    feature_level: int | None = None
    operations: frozenset[str] | None = None
    operand_types: frozenset[str] | None = None
    required_nothing: bool = False
    suites: frozenset[str] = frozenset()
    precision: str = "aosp"

    def requires(self, operations, feature_level: int | None, operand_types, driver_level: int) -> bool:
        """Whether a test (its operation names, model feature level, operand type names or
        None) is required of a driver at ``driver_level``."""
        if self.required_nothing or feature_level is None:
            return False
        level = self.feature_level or driver_level
        if feature_level > level:
            return False
        for op in operations:
            d = ops.get(_operation(op))
            if d is None or d.min_feature_level > level or (self.operations is not None and op not in self.operations):
                return False
        return not (self.operand_types is not None and operand_types
                    and not set(operand_types) <= self.operand_types)


def _operation(name: str):
    return OperationType[name] if name in OperationType.__members__ else -1


def load_profile(spec: str) -> Profile:
    """``none``, ``feature-level`` or a TOML profile file (read under
    :func:`runtime.files.load_toml`'s bounds). Raises ValueError with a one-line message
    naming the file for a missing, too large, too deeply nested or malformed file, an unknown
    key, a feature level outside 1..8, or an unknown operation / operand type name."""
    if spec in BUILTIN:
        return Profile(spec, required_nothing=spec == "none")
    path = Path(spec)
    try:
        doc = load_toml(path)
    except OSError as e:
        raise ValueError(f"{spec}: not a built-in profile ({', '.join(BUILTIN)}) and cannot read it as a file: "
                         f"{e.strerror or e}") from None
    unknown = sorted(set(doc) - PROFILE_KEYS)
    if unknown:
        raise ValueError(f"{spec}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(PROFILE_KEYS))})")
    level = doc.get("feature_level")
    if not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 8:
        raise ValueError(f"{spec}: feature_level must be an integer from 1 to 8")
    name = doc.get("name", path.stem)
    if not isinstance(name, str):
        raise ValueError(f"{spec}: name must be a string")
    precision = doc.get("precision", "aosp")
    if precision not in PRECISION_VERDICTS:
        raise ValueError(f"{spec}: precision must be one of {', '.join(PRECISION_VERDICTS)}, got {precision!r}")
    return Profile(name, level, _names(spec, doc, "operations", OperationType),
                   _names(spec, doc, "operand_types", OperandType), suites=_suites(spec, doc),
                   precision=precision)


def _suites(spec: str, doc: dict) -> frozenset[str]:
    """The profile's ``suites`` as command names (:func:`harness.suites.suite` accepts a
    command or a record name); ValueError naming an unknown one."""
    values = doc.get("suites", [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{spec}: suites must be a list of suite names")
    try:
        return frozenset(suite(v).command for v in values)
    except ValueError as e:
        raise ValueError(f"{spec}: suites: {e}") from None


def _names(spec: str, doc: dict, key: str, enum) -> frozenset[str] | None:
    if key not in doc:
        return None
    values = doc[key]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{spec}: {key} must be a list of names")
    bad = [v for v in values if v not in enum.__members__]
    if bad:
        raise ValueError(f"{spec}: {key}: unknown name(s) {', '.join(bad)}")
    return frozenset(values)


def pytest_addoption(parser):
    parser.getgroup("nncts").addoption(
        "--profile", default="none", metavar="FILE|NAME",
        help="certification profile: which declined tests fail the run. none (default: every declined "
             "test is not_applicable), feature-level (everything at or below the driver's feature level "
             "is required), or a TOML file (feature_level, operations, operand_types; suites: what "
             "nncts certify requires besides its default suites, e.g. [\"precision\"])")


def pytest_configure(config):
    try:
        config._nncts_profile = load_profile(config.getoption("profile"))
    except ValueError as e:
        raise pytest.UsageError(f"--profile: {e}") from None


def _driver(item) -> tuple[str, int]:
    """(name, feature level) of the driver under test: the test's device when it has one,
    else the run's driver (:func:`harness.driver.driver_identity`)."""
    device = (getattr(item, "funcargs", None) or {}).get("nncts_device")
    if device is None:
        return driver_identity(item.config)
    return device.name, device.feature_level


def apply_profile(item, report, record_id: str) -> None:
    """A skipped report whose skip kind is a decline: fail it when the profile requires the
    test, else re-kind it ``not_applicable``; sets the report's record fields
    (``report.nncts``) ``required``, ``declined`` and the new ``skip_kind``."""
    props = report.nncts
    kind = props.get("skip_kind", "")
    profile = getattr(item.config, "_nncts_profile", None)
    if profile is None or not report.skipped or kind not in DECLINE_KINDS:
        return
    required = False
    if not profile.required_nothing and props.get("feature_level") is not None:
        name, level = _driver(item)
        required = profile.requires(props.get("operations", []), props.get("feature_level"),
                                    props.get("operand_types"), level)
    if not required:
        props.update(declined=kind, required=False, skip_kind="not_applicable")
        return
    why = report.longrepr[2].removeprefix("Skipped: ") if isinstance(report.longrepr, tuple) else kind
    report.outcome = "failed"
    report.longrepr = f"{record_id}: required by profile {profile.name}: driver {name} declines it ({kind}: {why})"
    props.update(declined=kind, required=True, skip_kind="")
