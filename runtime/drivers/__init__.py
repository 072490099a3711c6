"""Driver discovery: bundled sample drivers, entry points in group ``nncts.drivers``, and
``module:factory`` specs. Each resolves to a factory returning an :class:`IDevice`."""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from ..hal.interfaces import IDevice

ENTRY_POINT_GROUP = "nncts.drivers"
DEFAULT_DRIVER = "sample"


#: Bundled driver name -> "module:factory" (imported on first use).
BUNDLED = {
    "sample": "runtime.drivers.sample:SampleDevice",
    "sample-float-fast": "runtime.drivers.variants:SampleFloatFast",
    "sample-float-slow": "runtime.drivers.variants:SampleFloatSlow",
    "sample-quant": "runtime.drivers.variants:SampleQuant",
    "sample-fixed-point": "runtime.drivers.fixed_point:SampleFixedPoint",
    "sample-minimal": "runtime.drivers.variants:SampleMinimal",
    "sample-fibonacci": "runtime.drivers.fibonacci:FibonacciDevice",
    "onnxruntime": "runtime.drivers.onnxrt:OnnxRuntimeDevice",
    "litert": "runtime.drivers.litert:LiteRTDevice",
    "litert-xnnpack": "runtime.drivers.litert:LiteRTXnnpackDevice",
}


class DriverNotFound(LookupError):
    """No driver of that name (the message lists the names that exist)."""


def available_drivers() -> list[str]:
    """Bundled driver names plus those declared by installed packages' entry points."""
    return sorted(set(BUNDLED) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def load_driver(spec: str = DEFAULT_DRIVER) -> IDevice:
    """Instantiate the driver ``spec``: a bundled name, an entry-point name in group
    ``nncts.drivers``, or ``package.module:factory``.

    The driver runs in this process; :func:`runtime.loader.load_driver` also understands
    the out-of-process specs ``process:SPEC`` and ``endpoint:ADDRESS``.

    Raises DriverNotFound for an unknown name, and TypeError when the factory does not
    return an IDevice.
    """
    spec = BUNDLED.get(spec, spec)
    if ":" in spec:
        module, _, attr = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise DriverNotFound(f"cannot load driver {spec!r}: {e}") from None
    else:
        eps = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == spec]
        if not eps:
            raise DriverNotFound(f"no driver named {spec!r}; available: {', '.join(available_drivers())}"
                                 f" (or give module:factory)")
        factory = eps[0].load()
    device = factory()
    if not isinstance(device, IDevice):
        raise TypeError(f"driver {spec!r} returned {type(device).__name__}, not an IDevice")
    return device
