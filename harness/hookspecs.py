"""The hook a suite implements to take part in the outcome records (:mod:`harness.plugin`).

A suite's pytest plugin answers :func:`pytest_nncts_record_fields` for its own items; the
harness calls it once per test (on the worker that runs it, under ``-n N`` too), carries the
answer on the test's reports and writes one record per test (:mod:`harness.records`).
"""
from __future__ import annotations

import pytest


@pytest.hookspec(firstresult=True)
def pytest_nncts_record_fields(item) -> dict | None:
    """The record fields of ``item`` when it belongs to the implementing suite, else None.

    Keys: ``suite`` (the suite's record name, :data:`harness.suites.SUITES`), ``operations``
    (NNAPI operation names), and when known ``feature_level`` (int), ``mode`` (an execution
    mode name, default ``sync``), ``operand_types`` (operand type names). A test adds fields
    it learns while running (``skip_kind``, ...) through :func:`harness.plugin.add_record_fields`.
    """
