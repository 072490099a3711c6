"""Fixtures of the VTS driver-level test modules (``vts/test_device_*.py``): the driver's
HAL device and the wait limit. Their helpers are in :mod:`vts.device_support`."""
from __future__ import annotations

import pytest


@pytest.fixture
def hal(nncts_device):
    """The HAL ``IDevice`` of the driver under test (``--driver``)."""
    return nncts_device.hal


@pytest.fixture
def wait_limit(request):
    """Longest wait for an asynchronous callback or a sync fence (``--wait-limit``, seconds)."""
    return request.config.getoption("wait_limit")
