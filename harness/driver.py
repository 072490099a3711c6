"""The driver under test, read once per run: its spec from the command line and its HAL
device, loaded on first use and shared by the session fixture, the profile
(:mod:`harness.requirements`) and the suites' collection (the VTS asks it about every model,
random graphs read its feature level). Under ``--driver-process`` that is one driver process
for the whole run, not one per reader. Also the corpus options and roots the suites read
(``--corpus``, ``--specs``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.locations import DEFAULT_ROOTS, SPECS
from runtime.hal.interfaces import IDevice
from runtime.loader import DriverNotFound, load_driver
from runtime.remote.access import ENDPOINT_TLS_HELP
from runtime.remote.client import ENDPOINT_PREFIX, PROCESS_PREFIX

#: Options (dests) of a driver endpoint: the address and the client's mutual-TLS files.
ENDPOINT_OPTIONS = ("driver_endpoint", *(f"driver_endpoint_{part}" for part in ENDPOINT_TLS_HELP))

_HAL = pytest.StashKey[IDevice]()


def add_driver_options(add) -> None:
    """Declare the options that name the driver under test with ``add`` (pytest's
    ``group.addoption`` or argparse's ``add_argument``: the same declaration for the pytest
    plugin and the ``nncts`` command): ``--driver``, ``--driver-process``,
    ``--driver-endpoint`` with the client's mutual-TLS files, ``--driver-timeout``."""
    add("--driver", default="sample",
        help="driver under test: bundled name, entry point in group nncts.drivers, or module:factory "
             "(default: sample)")
    add("--driver-process", action="store_true",
        help="run the driver in its own process, served over the HAL protocol of runtime/remote/hal.proto: "
             "a crash is reported as DEAD_OBJECT for the test in flight, a call past --driver-timeout "
             "as a hang; the process is restarted and the run goes on")
    add("--driver-endpoint", default=None, metavar="ADDRESS",
        help="use the driver host already serving at this gRPC address (unix:/path.sock or host:port; "
             "python -m runtime.remote.host --driver NAME --listen ADDRESS); TCP needs mutual TLS "
             "(--driver-endpoint-key/-cert/-ca) unless the address is loopback")
    for part, text in ENDPOINT_TLS_HELP.items():
        add(f"--driver-endpoint-{part}", default=None, metavar="PEM", help=text)
    add("--driver-timeout", type=float, default=None, metavar="SECONDS",
        help="with --driver-process/--driver-endpoint: longest one driver call may take before it "
             "counts as a hang (default: --timeout, else 300)")


def add_corpus_options(add) -> None:
    """Declare ``--corpus`` and ``--specs`` with ``add`` (as :func:`add_driver_options`)."""
    add("--corpus", action="append", default=[],
        help="corpus directory (root or any folder below it; repeatable); default: the vendored AOSP "
             "corpus and our own specs (cts/specs/built)")
    add("--specs", action="store_true",
        help="run our own golden specs (cts/specs/built): alone, or next to the --corpus directories given")


def corpus_roots(config) -> list[Path]:
    """The ``--corpus`` directories, plus the built specs with ``--specs`` (``--specs``
    alone: only the specs; neither: the vendored corpus and the built specs); UsageError if
    a directory is missing."""
    roots = [Path(p) for p in config.getoption("corpus")]
    if config.getoption("specs"):
        roots.append(SPECS)
    roots = roots or list(DEFAULT_ROOTS)
    missing = [str(r) for r in roots if not r.exists()]
    if missing:
        raise pytest.UsageError(f"--corpus: no such directory: {', '.join(missing)}")
    return roots


def driver_spec(config) -> str:
    """The driver spec of ``--driver`` as ``--driver-process`` / ``--driver-endpoint`` make
    it (``process:NAME``, ``endpoint:ADDRESS``; see :func:`runtime.loader.load_driver`)."""
    if config.getoption("driver_endpoint", None):
        return ENDPOINT_PREFIX + config.getoption("driver_endpoint")
    if config.getoption("driver_process", False):
        return PROCESS_PREFIX + config.getoption("driver")
    return config.getoption("driver")


def driver_hal(config) -> IDevice:
    """The HAL device of the run's driver (loaded once per pytest process, kept on
    ``config``). Raises pytest.UsageError naming ``--driver`` when it does not load (an
    unknown name, a factory that returns no IDevice, a driver process that cannot start)."""
    if _HAL not in config.stash:
        try:
            config.stash[_HAL] = load_driver(driver_spec(config))
        except (DriverNotFound, TypeError) as e:
            raise pytest.UsageError(f"--driver {config.getoption('driver')}: {e}") from None
    return config.stash[_HAL]


def driver_identity(config) -> tuple[str, int]:
    """(name, feature level) the driver reports (``IDevice.get_name`` /
    ``get_feature_level``), asked once per run."""
    key = "_nncts_driver_identity"
    if not hasattr(config, key):
        hal = driver_hal(config)
        setattr(config, key, (hal.get_name(), int(hal.get_feature_level())))
    return getattr(config, key)
