"""Checks of an ``nncts`` suite command's arguments before any test starts.

Every check raises ValueError with a one-line message naming the option and the problem;
the command (:mod:`nncts.cli`) prints it as ``nncts <command>: error: <message>`` and exits
with code 2. :func:`check_suite_arguments` runs them all for ``nncts cts|vts|random-graph``
(and what ``nncts certify`` runs through them): the driver, the timeouts, the corpus
directories and files (none may be empty), the remote extra of a driver out of process,
the suite options the plugins validate (``--shard``, ``--mode``, ``--baseline``,
``--profile``, ``--retries``, ``--wait-limit``), then the report directory (created only
when the run publishes its reports, :mod:`nncts.rundir`).

What pytest itself rejects later (an unknown option, a value its plugins refuse in
``pytest_configure`` or while collecting) leaves ``pytest.main`` as
:class:`PytestUsageError` through the :class:`OneLineUsageErrors` plugin object, so that it
too is one line and exit 2 instead of pytest's multi-line ``ERROR: usage: ...`` and exit 4.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path

import pytest

from runtime.argparsing import OneLineParser  # noqa: F401 (the nncts CLI imports it from here)


def one_line(text: str) -> str:
    """``text`` with its whitespace runs (newlines included) collapsed to single spaces."""
    return " ".join(str(text).split())


def usage_exit(prog: str, error) -> None:
    """Exit (SystemExit) with code 2 and ``<prog>: error: <message>`` on one line of stderr."""
    sys.stderr.write(f"{prog}: error: {one_line(error)}\n")
    sys.exit(2)


def check_driver(spec: str) -> None:
    """A ``--driver`` value must name a driver that loads: a bundled name (its module must
    import: e.g. ``onnxruntime`` needs its package), an entry point in group
    ``nncts.drivers``, or ``module:factory`` whose module imports and has that attribute.
    The factory is not called (a driver's own construction failures are test outcomes).
    Raises ValueError (``no driver named ...``, ``cannot load driver ...``)."""
    from runtime.drivers import BUNDLED, available_drivers
    target = BUNDLED.get(spec, spec)
    if ":" in target:
        module, _, attr = target.partition(":")
        try:
            getattr(importlib.import_module(module), attr)
        except Exception as e:  # ImportError, AttributeError, or the module failing as it imports
            raise ValueError(f"cannot load driver {spec!r}: {one_line(e) or type(e).__name__}") from None
    elif spec not in available_drivers():
        raise ValueError(f"no driver named {spec!r}; available: {', '.join(available_drivers())} "
                         f"(or give module:factory)")


def is_factory_spec(spec: str) -> bool:
    """Whether ``spec`` is a ``module:factory`` driver spec (not a driver name)."""
    from runtime.drivers import BUNDLED
    return spec not in BUNDLED and ":" in spec


def check_endpoint_options(args) -> None:
    """``--driver-endpoint ADDRESS`` and its mutual-TLS files ``--driver-endpoint-key/-cert/-ca``
    (:func:`runtime.remote.access.endpoint_tls`): all three files or none, each a readable PEM
    file, given only with an endpoint; a TCP endpoint without them must be loopback. The
    endpoint is not contacted. Raises ValueError."""
    from runtime.remote.access import ENDPOINT_TLS_HELP, endpoint_tls
    endpoint_tls(getattr(args, "driver_endpoint", None),
                 *(getattr(args, f"driver_endpoint_{part}", None) for part in ENDPOINT_TLS_HELP))


def check_positive(option: str, value: float | None) -> None:
    """A number of seconds (``--timeout``, ``--driver-timeout``) must be positive when
    given. Raises ValueError."""
    if value is not None and not value > 0:
        raise ValueError(f"{option}: must be a positive number of seconds, got {value:g}")


def check_corpus(corpus: list[str]) -> None:
    """The ``--corpus`` directories must exist and every test model in them must load (the
    suites' loader, :func:`runtime.testing.test_model.iter_corpus`), so a malformed corpus
    file or one past a bound of :mod:`runtime.files` (a gzip bomb, nesting too deep:
    :class:`~runtime.testing.test_model.CorpusError`, naming the file, model and field) stops
    the command before pytest starts: under pytest-xdist a worker's collection error would
    not be one line; so does a directory without any test model. About two seconds for a
    corpus the size of the vendored one; the vendored corpus and the built specs (the
    default, and ``--specs``) are not checked again here.
    Raises ValueError."""
    from runtime.testing.test_model import CorpusError, iter_corpus
    missing = [c for c in corpus if not Path(c).exists()]
    if missing:
        raise ValueError(f"--corpus: no such directory: {', '.join(missing)}")
    for directory in corpus:
        try:
            models = sum(1 for _ in iter_corpus([directory]))
        except CorpusError as e:
            raise ValueError(f"--corpus: {one_line(e)}") from None
        if not models:
            raise ValueError(f"--corpus: no test model in {directory} (no *.json.gz corpus file below it)")


def _option_checks() -> list[tuple[str, str, object]]:
    """``(dest, option, check)`` of the suite options (argparse dests, as the ``nncts``
    parsers read them from the plugins' declarations): the function their plugin checks them
    with (ValueError)."""
    from harness.expectations import load_baseline
    from harness.modes import parse_modes
    from harness.requirements import load_profile
    from harness.sharding import parse_shard
    return [("shard", "--shard", parse_shard), ("mode", "--mode", parse_modes),
            ("baseline", "--baseline", load_baseline), ("profile", "--profile", load_profile),
            ("retries", "--retries", check_count)]


def check_count(value: int) -> None:
    """A count (``--retries N``) must be at least 0. Raises ValueError."""
    if value < 0:
        raise ValueError(f"must be at least 0, got {value}")


def check_pytest_options(args) -> None:
    """The suite options the ``nncts`` parser read from the plugins' declarations (in
    ``args`` only when given), checked with the functions their plugins use: ``--shard I/N``
    (:func:`harness.sharding.parse_shard`), ``--mode`` (:func:`harness.modes.parse_modes`),
    ``--baseline FILE`` (:func:`harness.expectations.load_baseline`), ``--profile``
    (:func:`harness.requirements.load_profile`), ``--retries`` (at least 0), ``--wait-limit``
    (positive). Raises ValueError."""
    check_positive("--wait-limit", getattr(args, "wait_limit", None))
    for dest, option, check in _option_checks():
        value = getattr(args, dest, None)
        if value is None:
            continue
        try:
            check(value)
        except ValueError as e:
            raise ValueError(f"{option}: {one_line(e)}") from None


def check_report_dir(path: str | Path) -> Path:
    """The report directory must be a directory or creatable: its parent is created (the run
    writes beside it, :mod:`nncts.rundir`), the directory itself only when the run publishes
    its reports. Raises ValueError when a file is in the way or the parent cannot be created."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--report-dir {path}: cannot create it (a file is in the way)")
    try:
        path.absolute().parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"--report-dir {path}: cannot create it ({e.strerror or e})") from None
    return path


def check_remote_extra(args) -> None:
    """A driver out of process (``--driver-process``, ``--driver-endpoint``) needs the
    ``remote`` extra (grpcio, protobuf). Raises ValueError naming it."""
    from runtime.remote.client import remote_extra_missing
    if getattr(args, "driver_process", False) or getattr(args, "driver_endpoint", None):
        missing = remote_extra_missing()
        if missing:
            raise ValueError(f"--driver: {missing}")


def check_suite_arguments(args) -> Path:
    """Every check of a suite command (``args`` from its parser: ``driver``, the remote
    extra for a driver out of process, ``driver_endpoint`` and its TLS files, ``timeout``,
    ``driver_timeout``, the suite options of the plugins, ``corpus`` when the suite reads one,
    ``report_dir``), cheapest first, the corpus last; then the report directory is checked
    (:func:`check_report_dir`) and returned. A driver endpoint is not
    contacted, and a ``module:factory`` driver is checked once pytest has set up its import
    path (:class:`FactoryDriverCheck`). Raises ValueError."""
    if not getattr(args, "driver_endpoint", None) and not is_factory_spec(args.driver):
        try:
            check_driver(args.driver)
        except ValueError as e:
            raise ValueError(f"--driver: {e}") from None
    check_remote_extra(args)
    check_endpoint_options(args)
    check_positive("--timeout", getattr(args, "timeout", None))
    check_positive("--driver-timeout", getattr(args, "driver_timeout", None))
    check_pytest_options(args)
    check_corpus(getattr(args, "corpus", None) or [])
    return check_report_dir(args.report_dir)


class PytestUsageError(Exception):
    """pytest rejected its arguments; ``str()`` is pytest's message on one line."""


def _pytest_message(e: pytest.UsageError) -> str:
    """pytest's usage error as one line: the ``error: ...`` line of an argument-parsing
    error (without the usage text and the inifile/rootdir lines), else its message."""
    lines = [line for arg in e.args for line in str(arg).splitlines() if line.strip()]
    for line in lines:
        if ": error: " in line:
            return one_line(line.split(": error: ", 1)[1])
    return one_line("; ".join(lines))


@contextlib.contextmanager
def _one_line_usage_error():
    try:
        yield
    except pytest.UsageError as e:
        raise PytestUsageError(_pytest_message(e)) from None


class OneLineUsageErrors:
    """pytest plugin object (``pytest.main(args, plugins=[OneLineUsageErrors()])``): a usage
    error from parsing pytest's options, from a plugin's ``pytest_configure`` (a test path
    that does not exist, checked here) or from
    collection (a ``pytest_generate_tests`` raising UsageError, a path that does not exist)
    leaves ``pytest.main`` as :class:`PytestUsageError` instead of pytest's own multi-line
    report (exit 4) or a collection error."""

    @pytest.hookimpl(wrapper=True)
    def pytest_cmdline_parse(self, pluginmanager, args):
        with _one_line_usage_error():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_cmdline_main(self, config):
        with _one_line_usage_error():
            return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        """The test paths on the command line must exist: under pytest-xdist the controller
        collects nothing, and a worker's "not found" would be no usage error."""
        for arg in [] if config.option.pyargs else config.args:
            path = Path(config.invocation_params.dir, arg.split("::", 1)[0])
            if not path.exists():
                raise pytest.UsageError(f"file or directory not found: {arg}")

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector):
        report = yield
        call = getattr(report, "call", None)
        if call is not None and call.excinfo is not None and isinstance(call.excinfo.value, pytest.UsageError):
            raise call.excinfo.value
        return report


class FactoryDriverCheck:
    """pytest plugin object checking a ``module:factory`` driver spec (:func:`check_driver`)
    in ``pytest_configure``, before any test: the module may be importable only on the
    import path pytest sets up (the root conftest's directory, ``pythonpath``), as the tests
    will import it. Raises UsageError (one line through :class:`OneLineUsageErrors`)."""

    def __init__(self, spec: str):
        self.spec = spec

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        if hasattr(config, "workerinput"):
            return
        try:
            check_driver(self.spec)
        except ValueError as e:
            raise pytest.UsageError(f"--driver: {e}") from None
