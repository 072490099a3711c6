"""pytest plugin of the precision suite: option ``--sweep full|quick``; one test item per sweep
case (:func:`precision.cases.cases`), id ``PRECISION/<operation>/<types>/<sweep>[-<pair>]``,
marked with its operation and feature level. Each item records its operation, input type
and feature level, the sweep mode as its ``mode``, and (the test adds it) the sweep's figures
as ``sweep`` (:func:`precision.measure.summarize`). Shared options (``--driver``, ...), the
device fixture and the records come from :mod:`harness.plugin`."""
from __future__ import annotations

import pytest

from harness.suites import suite

from .cases import MODES, SweepCase, cases

pytest_plugins = ["harness.plugin"]
#: The ``suite`` of this suite's records.
SUITE = suite("precision").record_name


def pytest_addoption(parser):
    g = parser.getgroup("nncts")
    g.addoption("--sweep", default="full", choices=MODES, metavar="MODE",
                help="precision sweeps: full (every float16 input, every quant8 input under three "
                     "quantizations, a stratified float32 sample of ~8,700 values; the default) or quick "
                     "(every 7th float16 input, the float32 binades' edges, one quantization: for CI)")


def pytest_generate_tests(metafunc):
    if "sweep_case" not in metafunc.fixturenames:
        return
    params = [pytest.param(c, id=c.id, marks=[getattr(pytest.mark, c.operation.name),
                                              getattr(pytest.mark, f"fl{c.feature_level}")])
              for c in cases(metafunc.config.getoption("sweep"))]
    metafunc.parametrize("sweep_case", params)


def pytest_nncts_record_fields(item):
    """A sweep's record: suite, mode (the sweep mode), its operation (under test), input
    type and feature level."""
    spec = getattr(item, "callspec", None)
    case = spec.params.get("sweep_case") if spec is not None else None
    if not isinstance(case, SweepCase):
        return None
    return {"suite": SUITE, "mode": item.config.getoption("sweep"), "operations": [case.operation.name],
            "operation_under_test": case.operation.name, "operand_type": case.in_type.name,
            "operand_types": [case.in_type.name], "feature_level": case.feature_level}
