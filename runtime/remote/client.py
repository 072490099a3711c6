"""The client side of drivers out of process: the ``process:``/``endpoint:`` driver specs, the
call timeout and endpoint TLS the test plugins set, and one proxy device per spec and
process (:func:`remote_device`)."""
from __future__ import annotations

import atexit
import threading

PROCESS_PREFIX = "process:"
ENDPOINT_PREFIX = "endpoint:"

#: Longest any one call to a driver process may take before it counts as a hang and the
#: process is killed (seconds; the test plugins set it from ``--timeout``/``--driver-timeout``).
CALL_TIMEOUT_S = 300.0

#: The client's mutual-TLS files (:class:`~runtime.remote.tls.TlsFiles`) for ``endpoint:``
#: specs, None for none (a ``unix:`` or loopback endpoint); the test plugins set it from
#: ``--driver-endpoint-key/-cert/-ca`` through :func:`set_endpoint_tls`.
ENDPOINT_TLS = None

_devices: dict[str, object] = {}
_lock = threading.Lock()


def is_remote_spec(spec: str) -> bool:
    """Whether ``spec`` names an out-of-process driver."""
    return spec.startswith((PROCESS_PREFIX, ENDPOINT_PREFIX))


def remote_device(spec: str):
    """The :class:`~runtime.remote.proxy.RemoteDevice` of ``process:NAME`` or
    ``endpoint:ADDRESS`` (made once per process; the host is stopped at exit). Raises
    HalError when the host cannot start or be reached."""
    from ..errors import HalError
    from ..types import ErrorStatus
    try:
        from .link import EndpointLink, ProcessLink
        from .proxy import RemoteDevice
    except ImportError as e:
        raise HalError(ErrorStatus.GENERAL_FAILURE, f"out-of-process drivers need the remote extra: "
                       f"pip install 'nncts[remote]' ({e})") from None
    with _lock:
        device = _devices.get(spec)
        if device is None:
            if spec.startswith(PROCESS_PREFIX):
                link = ProcessLink(spec[len(PROCESS_PREFIX):], CALL_TIMEOUT_S)
            else:
                link = EndpointLink(spec[len(ENDPOINT_PREFIX):], CALL_TIMEOUT_S, ENDPOINT_TLS)
            try:
                device = RemoteDevice(link)
            except BaseException:
                link.close()
                raise
            atexit.register(link.close)
            _devices[spec] = device
        return device


def set_endpoint_tls(tls) -> None:
    """Connect ``endpoint:`` specs made from now on with ``tls`` (a
    :class:`~runtime.remote.tls.TlsFiles` of the client's key, certificate and CA; None: no
    TLS, for ``unix:`` and loopback endpoints). Devices already made keep their link."""
    global ENDPOINT_TLS
    ENDPOINT_TLS = tls


def set_call_timeout(seconds: float | None) -> None:
    """Bound every later call to a driver process (and the links made so far)."""
    global CALL_TIMEOUT_S
    CALL_TIMEOUT_S = seconds
    for device in _devices.values():
        device.link.call_timeout_s = seconds
