"""The client side of drivers out of process: the ``process:``/``endpoint:`` driver specs, the
call timeout and endpoint TLS the test plugins set, whether the ``remote`` extra is installed
(:func:`remote_extra_missing`), and one proxy device per spec and process
(:func:`remote_device`). Imports neither grpcio nor protobuf: the core install imports it."""
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

#: ``(data file prefix, sources)`` when driver hosts this process starts measure their own
#: code coverage (``--driver-coverage``: :func:`set_host_coverage`), else None.
HOST_COVERAGE: tuple[str, str] | None = None

_devices: dict[str, object] = {}
_lock = threading.Lock()


def is_remote_spec(spec: str) -> bool:
    """Whether ``spec`` names an out-of-process driver."""
    return spec.startswith((PROCESS_PREFIX, ENDPOINT_PREFIX))


def remote_extra_missing() -> str:
    """Why drivers out of process cannot run here, in one line naming the extra (``out-of-process
    drivers need the remote extra: pip install 'nncts[remote]' (No module named 'google')``),
    or "" when they can: the gRPC link and proxy modules (grpcio, protobuf) import. This
    module itself imports neither, so in-process users (the fuzzer, ``nncts certify``) run
    in the core install."""
    try:
        from . import link, proxy  # noqa: F401 - the imports are the check
    except ImportError as e:
        return f"out-of-process drivers need the remote extra: pip install 'nncts[remote]' ({e})"
    return ""


def remote_device(spec: str):
    """The :class:`~runtime.remote.proxy.RemoteDevice` of ``process:NAME`` or
    ``endpoint:ADDRESS`` (made once per process; the host is stopped at exit). Raises
    HalError (GENERAL_FAILURE, :func:`remote_extra_missing`'s line) without the remote
    extra, and when the host cannot start or be reached."""
    from ..errors import HalError
    from ..types import ErrorStatus
    if missing := remote_extra_missing():
        raise HalError(ErrorStatus.GENERAL_FAILURE, missing)
    from .link import EndpointLink, ProcessLink
    from .proxy import RemoteDevice
    with _lock:
        device = _devices.get(spec)
        if device is None:
            if spec.startswith(PROCESS_PREFIX):
                link = ProcessLink(spec[len(PROCESS_PREFIX):], CALL_TIMEOUT_S, HOST_COVERAGE)
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


def set_host_coverage(prefix: str | None, sources: str = "auto") -> None:
    """Have every driver host started from now on (``process:`` specs; a host already
    running is stopped, and the next call starts a new one) measure the code
    coverage of its driver (``sources``: ``auto`` or module names, as ``--driver-coverage``)
    into its own data file ``PREFIX.<client pid>.<start>`` (a path the harness chose; a client
    over the HAL never names one), written when the host is stopped; None: no measuring."""
    global HOST_COVERAGE
    HOST_COVERAGE = None if prefix is None else (prefix, sources)
    with _lock:
        for spec, device in _devices.items():
            if spec.startswith(PROCESS_PREFIX):
                device.link.coverage = HOST_COVERAGE
                device.link.stop_host()   # the next call starts a host that measures


def close_devices() -> None:
    """Stop the driver hosts of this process's proxy devices (hosts measuring coverage write
    their data first); a later call to a device starts a new host."""
    with _lock:
        for device in _devices.values():
            if hasattr(device.link, "stop_host"):
                device.link.stop_host()


def set_call_timeout(seconds: float | None) -> None:
    """Bound every later call to a driver process (and the links made so far)."""
    global CALL_TIMEOUT_S
    CALL_TIMEOUT_S = seconds
    for device in _devices.values():
        device.link.call_timeout_s = seconds
