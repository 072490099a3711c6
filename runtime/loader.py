"""One entry for every driver spec: a driver in this process (:func:`runtime.drivers.load_driver`:
a bundled name, an entry point in group ``nncts.drivers``, or ``module:factory``) or out of
process (:mod:`runtime.remote`: ``process:SPEC`` runs driver SPEC in its own process,
``endpoint:ADDRESS`` connects to a driver host serving at a gRPC address); both give an
:class:`~runtime.hal.interfaces.IDevice`. It sits above the drivers and the remote transport,
so neither needs the other."""
from __future__ import annotations

from .drivers import DEFAULT_DRIVER, DriverNotFound, available_drivers
from .drivers import load_driver as load_local_driver
from .errors import HalError
from .hal.interfaces import IDevice
from .remote.client import is_remote_spec, remote_device

__all__ = ["load_driver", "DriverNotFound", "available_drivers", "DEFAULT_DRIVER", "is_remote_spec"]


def load_driver(spec: str = DEFAULT_DRIVER) -> IDevice:
    """The :class:`IDevice` of driver ``spec``: ``process:SPEC`` and ``endpoint:ADDRESS`` give a
    proxy (made once per spec and process), anything else loads in this process.

    Raises DriverNotFound for an unknown name or a driver process that cannot start or be
    reached, and TypeError when a factory does not return an IDevice."""
    if not is_remote_spec(spec):
        return load_local_driver(spec)
    try:
        return remote_device(spec)
    except HalError as e:
        raise DriverNotFound(f"{spec}: {e.message}") from None
