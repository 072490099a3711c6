"""pytest plugin of the VTS validation tests (AOSP ``ValidateModel.cpp`` /
``ValidateRequest.cpp``): options ``--vts-kind`` and ``--vts-max-mutants``, the
parametrization of ``vts_model_case`` (vts/test_model_validation.py) and
``vts_request_case`` (vts/test_request_validation.py), their outcome-record tags and a
per-kind summary at the end of the run.

Items: one per corpus model and test (model validation, request validation), id
``<version>/<spec>/<name>``, for the corpus models the driver under test accepts unmutated:
collection asks the driver's HAL ``get_supported_operations`` about each model
(``expect_failure`` models are never used); a model it rejects (or crashes on) is one
skipped item of the model validation test, so the skip is recorded. An item runs every
selected mutation kind that applies to its model (some place to mutate, see
:meth:`vts.mutations.MutationKind.sites`), every mutant of each (up to
``--vts-max-mutants``), and fails naming each mutant the driver mishandled. One item per
model, not per (model, kind) or per mutant, keeps a whole-corpus run bounded by the
driver's work rather than by pytest's per-item bookkeeping (about 5,000 items instead of
120,000 for the FL1-3 corpus).

Each item's record fields (:func:`pytest_nncts_record_fields`, :mod:`harness.plugin`) hold
its operations, feature level, mode (``model_validation`` | ``request_validation``, an
execution path for the generated tests) and suite ``vts``; a validation item adds
``kinds`` (``{kind: [mutants, mishandled]}``), from which the per-kind summary is drawn.
Shared options (``--driver``, ``--corpus``, ``--wait-limit``), the device fixture and the
records come from :mod:`harness.plugin`.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

import pytest

from harness.driver import driver_hal, driver_spec
from harness.locations import DEFAULT_ROOTS
from harness.plugin import add_record_fields, corpus_models, corpus_roots, model_marks
from harness.records import model_operand_types, under_test_fields
from harness.suites import suite
from runtime.testing.hal_convert import to_hal_model, to_hal_request
from vts.hal_harness import PATHS
from vts.mutations import KINDS, clone_model

pytest_plugins = ["harness.plugin"]
#: The ``suite`` of this suite's records.
SUITE = suite("vts").record_name

#: Default cap of mutants per (model, kind); 0 on the command line means no cap.
DEFAULT_MAX_MUTANTS = 32
#: Every kind must reach this many corpus models on the default corpus and driver.
MIN_MODELS_PER_KIND = 100
#: The ``mode`` of the items of each validation test.
MODEL_MODE, REQUEST_MODE = "model_validation", "request_validation"


def pytest_addoption(parser):
    g = parser.getgroup("nncts")
    g.addoption("--vts-kind", action="append", default=[],
                help="VTS validation: mutation kinds to run (repeatable, comma-separated; default: all "
                     "23 model and 2 request kinds, see vts/mutations/)")
    g.addoption("--vts-max-mutants", type=int, default=DEFAULT_MAX_MUTANTS, metavar="N",
                help=f"VTS validation: at most N mutants per model and kind, spread evenly over the "
                     f"places the kind applies to (default {DEFAULT_MAX_MUTANTS}; 0 = every mutant)")


@dataclass(frozen=True)
class VtsCase:
    """One VTS validation item: a corpus test model and the mutation kinds to apply to it
    (none, with ``rejected`` set, when the driver rejects the model itself)."""

    tm: object = field(repr=False)
    kinds: tuple[str, ...]
    rejected: str = ""

    @property
    def id(self) -> str:
        return self.tm.test_id


@dataclass
class VtsCollection:
    """What collection learned: the models the driver accepts (with the kinds applicable to
    each) and the ones it rejects (test id -> reason)."""

    driver: str
    default_corpus: bool
    kinds: list[str]
    accepted: list = field(default_factory=list)  # [(tm, [applicable kind names])]
    rejected: dict = field(default_factory=dict)  # test id -> (tm, reason)

    def models_per_kind(self) -> dict[str, int]:
        counts = collections.Counter(k for _, kinds in self.accepted for k in kinds)
        return {k: counts.get(k, 0) for k in self.kinds}


def selected_kinds(config) -> list[str]:
    """The ``--vts-kind`` selection (every kind by default); UsageError for an unknown one."""
    from vts.mutations import KINDS
    names = [n.strip() for opt in config.getoption("vts_kind") for n in opt.split(",") if n.strip()]
    unknown = [n for n in names if n not in KINDS]
    if unknown:
        raise pytest.UsageError(f"--vts-kind: unknown kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
    return [k for k in KINDS if not names or k in names]


def max_mutants(config) -> int | None:
    n = config.getoption("vts_max_mutants")
    return None if n is None or n <= 0 else n


def _acceptance(hal, model) -> str:
    """'' when the driver's get_supported_operations takes ``model``, else why not."""
    from runtime.errors import HalError
    try:
        hal.get_supported_operations(model)
    except HalError as e:
        return f"the driver rejects the unmutated model: get_supported_operations: {e.status.name}: {e.message}"
    except Exception as e:  # noqa: BLE001 - driver code
        return f"the driver crashed on the unmutated model: get_supported_operations: {type(e).__name__}: {e}"
    return ""


def vts_collection(config) -> VtsCollection:
    """Ask the driver (``--driver``, through its HAL) about every corpus model once per
    process; cached on ``config``."""
    cached = getattr(config, "_nncts_vts", None)
    if cached is not None:
        return cached
    spec = driver_spec(config)
    hal = driver_hal(config)
    kinds = selected_kinds(config)
    default = [p.resolve() for p in corpus_roots(config)] == [p.resolve() for p in DEFAULT_ROOTS]
    result = VtsCollection(spec, default, kinds)
    for tm in corpus_models(config):
        if tm.expect_failure:
            continue
        model = to_hal_model(tm)
        reason = _acceptance(hal, clone_model(model))
        if reason:
            result.rejected[tm.test_id] = (tm, reason)
            continue
        request = to_hal_request(tm) if any(KINDS[k].target == "request" for k in kinds) else None
        applicable = [name for name in kinds
                      if KINDS[name].sites(request if KINDS[name].target == "request" else model)]
        result.accepted.append((tm, applicable))
    config._nncts_vts = result
    return result


def pytest_generate_tests(metafunc):
    for argname, target in (("vts_model_case", "model"), ("vts_request_case", "request")):
        if argname not in metafunc.fixturenames:
            continue
        coll = vts_collection(metafunc.config)
        params = []
        for tm, kinds in coll.accepted:
            mine = tuple(k for k in kinds if (KINDS[k].target == "request") == (target == "request"))
            if mine:
                case = VtsCase(tm, mine)
                params.append(pytest.param(case, id=case.id, marks=model_marks(tm)))
        if target == "model":
            for tm, reason in coll.rejected.values():
                case = VtsCase(tm, (), reason)
                params.append(pytest.param(case, id=case.id, marks=model_marks(tm)))
        metafunc.parametrize(argname, params)


def _model_fields(tm, mode: str) -> dict:
    return {"suite": SUITE, "operations": [t.name for t in tm.operation_types], "feature_level": tm.feature_level,
            "mode": mode, "operand_types": model_operand_types(tm), **under_test_fields(tm)}


def pytest_nncts_record_fields(item):
    """A VTS item's record: for a generated test or a validation test, its model's
    operations, feature level, operand types and its path or validation mode (a model the
    driver rejects unmutated: skip kind ``driver_rejects_model``). The device tests give
    theirs in a fixture (:mod:`vts.device_support`)."""
    spec = getattr(item, "callspec", None)
    if spec is None:
        return None
    generated = spec.params.get("vts_generated_case")
    if generated is not None:
        tm, path, _ = generated
        return _model_fields(tm, path or PATHS[0])
    case = spec.params.get("vts_model_case") or spec.params.get("vts_request_case")
    if not isinstance(case, VtsCase):
        return None
    fields = _model_fields(case.tm, MODEL_MODE if "vts_model_case" in spec.params else REQUEST_MODE)
    if case.rejected:
        fields["skip_kind"] = "driver_rejects_model"
    return fields


# --- per-kind summary (controller side: reports of every worker arrive here) ----------

_TALLY: dict = {}


def pytest_configure(config):
    _TALLY.clear()
    selected_kinds(config)  # an unknown --vts-kind is a usage error up front


def record_kinds(node, tally: dict) -> None:
    """Attach ``{kind: [mutants, mishandled]}`` of one item to its reports (the per-kind
    summary and tests read it)."""
    add_record_fields(node, kinds={k: list(v) for k, v in tally.items()})


#: Mishandled mutants quoted in a failing item's message (the count says how many there were).
MAX_REPORTED = 8


def run_mutation_kinds(node, case_id: str, kinds, mutants_of, check, what: str = "mutant(s)") -> None:
    """Run one VTS validation item: every mutant of each kind in ``kinds`` (``mutants_of(kind)``
    yields them) through ``check(kind, mutant)`` (a list of problems, empty when the driver
    rejected it with INVALID_ARGUMENT); records the per-kind tally on ``node`` and fails the
    item quoting the first :data:`MAX_REPORTED` problems."""
    problems, n, tally = [], 0, {}
    for name in kinds:
        before, count = len(problems), 0
        for mutant in mutants_of(name):
            count += 1
            problems += check(name, mutant)
        tally[name] = (count, len(problems) - before)
        n += count
    record_kinds(node, tally)
    if problems:
        shown = "\n  ".join(problems[:MAX_REPORTED])
        more = f"\n  ... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        pytest.fail(f"{case_id}: {len(problems)} problem(s) with {n} {what} that must be rejected "
                    f"with INVALID_ARGUMENT:\n  {shown}{more}", pytrace=False)


def pytest_runtest_logreport(report):
    props = getattr(report, "nncts", None) or {}
    if props.get("suite") != SUITE or props.get("mode") not in (MODEL_MODE, REQUEST_MODE):
        return
    if not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return
    if report.skipped:
        _TALLY.setdefault("(model rejected or not prepared)", collections.Counter())["models"] += 1
        return
    for kind, (mutants, bad) in props.get("kinds", {}).items():
        c = _TALLY.setdefault(kind, collections.Counter())
        c["models"] += 1
        c["mutants"] += mutants
        c["mishandled"] += bad
        c["failed models"] += bool(bad)


def pytest_terminal_summary(terminalreporter, config):
    if not _TALLY:
        return
    terminalreporter.section("vts validation: per mutation kind")
    cols = ("models", "mutants", "mishandled", "failed models")
    terminalreporter.write_line(f"{'kind':34s}" + "".join(f"{c:>15s}" for c in cols))
    for kind, c in sorted(_TALLY.items()):
        terminalreporter.write_line(f"{kind:34s}" + "".join(f"{c[k]:15d}" for k in cols))
