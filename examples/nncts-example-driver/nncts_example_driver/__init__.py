"""nncts-example-driver: a small third-party NNAPI driver plugged into nncts.

The package declares an entry point in the group ``nncts.drivers`` (see ``pyproject.toml``)::

    [project.entry-points."nncts.drivers"]
    example = "nncts_example_driver:make_device"

so ``nncts cts --driver example`` (and ``runtime.drivers.load_driver("example")``) calls
:func:`make_device` and certifies the :class:`~nncts_example_driver.device.ExampleDevice` it
returns. The driver runs its own numpy kernels (:mod:`nncts_example_driver.kernels`) for a
handful of TENSOR_FLOAT32 operations at NNAPI feature level 3.
"""
from .device import FEATURE_LEVEL, ExampleDevice, ExamplePreparedModel
from .kernels import KERNELS

__all__ = ["make_device", "ExampleDevice", "ExamplePreparedModel", "KERNELS", "FEATURE_LEVEL"]


def make_device() -> ExampleDevice:
    """The entry point's factory: one device per call."""
    return ExampleDevice()
