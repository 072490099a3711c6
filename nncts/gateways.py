"""Running the suites on pytest-xdist's remote execnet gateways (``--tx socket=HOST:PORT``,
``--tx ssh=HOST``): pytest plugin part of :mod:`harness.plugin` (through
:mod:`harness.sharding`).

pytest-xdist sends a remote worker the controller's command line, with every argument that
names an existing local file rewritten relative to the directories it rsyncs (pytest's own;
``--rsyncdir`` is deprecated in xdist 3), and fails on any other local path. nncts does not
rsync: each remote machine has nncts installed and imports the suites from its own copy.
So, before the workers start, the controller rewrites what it sends them
(:func:`remote_args`):

- a test path (``cts/test_generated.py``, ``/x/nncts/vts``, ``...py::test_model[V1_0/...]``)
  becomes its module's dotted name (``cts.test_generated``), with ``--pyargs``;
- an option value naming a local path (``--corpus cts/corpus/V1_0``) becomes absolute
  (``--corpus=/x/nncts/cts/corpus/V1_0``); on the worker, a path inside the controller's
  nncts tree is mapped to the worker's own nncts tree (:func:`map_path`), any other must exist
  at the same absolute path there (a shared mount);
- the tests an ``--nncts-resume`` run already recorded travel in the worker input (the
  report directory is the controller's), so every worker deselects them.

Outcome records, junit.xml and the reports are written on the controller only.
"""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from harness.locations import ROOT

#: The directory holding the nncts packages (nncts, cts, vts, runtime, ...) on this machine.
NNCTS_ROOT = ROOT


def module_name(path: Path) -> str | None:
    """The dotted name under which ``path`` (a .py file or a package directory) imports, by
    walking up its ``__init__.py`` packages; None when it is not inside a package on
    ``sys.path``, or that name imports from elsewhere."""
    path = path.resolve()
    parts = [] if path.is_dir() else [path.stem]
    if path.is_file() and path.suffix != ".py":
        return None
    package = path if path.is_dir() else path.parent
    while (package / "__init__.py").exists():
        parts.insert(0, package.name)
        package = package.parent
    if not parts:
        return None
    name = ".".join(parts)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = spec and (spec.origin if not path.is_dir() else spec.submodule_search_locations
                       and spec.submodule_search_locations[0])
    return name if origin and Path(origin).resolve() == path else None


def _local_path(text: str, base: Path) -> Path | None:
    """``text`` (its part before ``::``) as an existing path relative to ``base``, or None."""
    path = base / text.split("::", 1)[0]
    try:
        return path if text and path.exists() else None
    except OSError:
        return None


def _option_values(option) -> set[str]:
    values = set()
    for value in vars(option).values():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, str):
                values.add(v)
    return values


def remote_args(args: list[str], base: Path, positional: list[str], option) -> list[str]:
    """The command line for a remote worker (see the module docstring). ``args`` the
    controller's arguments, ``base`` their directory, ``positional`` the test paths pytest
    took from them (``config.args``), ``option`` the parsed options (``config.option``).
    Raises pytest.UsageError for a test path outside an importable package."""
    out: list[str] = []
    pyargs = False
    values = _option_values(option)
    for arg in args:
        if arg.startswith("--") and "=" in arg:
            opt, value = arg.split("=", 1)
            path = _local_path(value, base)
            out.append(f"{opt}={path.resolve()}" if path else arg)
            continue
        path = _local_path(arg, base)
        if path is None:
            out.append(arg)
        elif arg in values and out and out[-1].startswith("-") and arg not in positional:
            opt = out.pop()
            out.append(f"{opt}={path.resolve()}" if opt.startswith("--") else f"{opt}{path.resolve()}")
        else:
            name = module_name(path)
            if name is None:
                raise pytest.UsageError(f"--tx: {arg} is not inside an importable package; remote workers "
                                        f"import the suites from their own nncts installation")
            out.append(name + ("::" + arg.split("::", 1)[1] if "::" in arg else ""))
            pyargs = True
    return (["--pyargs"] if pyargs and "--pyargs" not in out else []) + out


def map_path(value: str, controller_root: str, root: Path = NNCTS_ROOT) -> str:
    """``value`` with the controller's nncts tree ``controller_root`` replaced by this
    machine's ``root`` when it lies inside it; otherwise unchanged."""
    prefix = controller_root.rstrip("/") + "/"
    if value == controller_root or value.startswith(prefix):
        return str(root / value[len(prefix):]) if value != controller_root else str(root)
    return value


def _remote(spec) -> bool:
    """xdist rewrites the arguments of a gateway that is not a local popen (or one with chdir)."""
    return not spec.popen or bool(spec.chdir)


#: Run on each new gateway before its worker starts: where nncts is installed there (None when
#: it is not), also put in the gateway process's environment as ``$NNCTS_ROOT`` (for ``--rootdir``).
_PROBE = """
import importlib.util, os
spec = importlib.util.find_spec("nncts")
root = os.path.dirname(os.path.dirname(os.path.abspath(spec.origin))) if spec and spec.origin else None
if root:
    os.environ["NNCTS_ROOT"] = root
channel.send(root)
"""


class RemoteGateways:
    """Controller-side hooks (registered when pytest-xdist is active): when a gateway is
    remote, every worker gets :func:`remote_args`, ``--rootdir`` under its own nncts tree (so
    node ids are the same as in a local run) and the resume state in its input."""

    def __init__(self, config):
        self.config = config
        self.saved = None

    def pytest_xdist_setupnodes(self, config, specs):
        if not any(_remote(s) for s in specs):
            return
        params = config.invocation_params
        args = remote_args(list(params.args), params.dir, [str(a) for a in config.args], config.option)
        try:
            relative = config.rootpath.resolve().relative_to(NNCTS_ROOT)
        except ValueError:
            relative = None
        if relative is not None and not any(a == "--rootdir" or a.startswith("--rootdir=") for a in args):
            args.append("--rootdir=" + "/".join(["$NNCTS_ROOT", *relative.parts]))
        self.saved = params
        config.invocation_params = dataclasses.replace(params, args=tuple(args))

    def pytest_xdist_newgateway(self, gateway):
        if self.saved is None:
            return
        channel = gateway.remote_exec(_PROBE)
        root = channel.receive(timeout=60)
        channel.waitclose(timeout=60)
        if root is None:
            raise pytest.UsageError(f"--tx {gateway.spec}: nncts is not installed on that side "
                                    f"(pip install nncts into the Python that serves the gateway)")

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session):
        """Restore the command line once the workers are set up."""
        try:
            return (yield)
        finally:
            if self.saved is not None:
                self.config.invocation_params, self.saved = self.saved, None

    def pytest_configure_node(self, node):
        """What a worker cannot read from the controller's disk goes in its input."""
        node.workerinput["nncts_root"] = str(NNCTS_ROOT)
        node.workerinput["nncts_done"] = sorted(getattr(node.config, "_nncts_done", ()))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Controller: register :class:`RemoteGateways` under pytest-xdist. Worker: map option
    values inside the controller's nncts tree to this machine's."""
    if not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(RemoteGateways(config), "nncts-remote-gateways")
    controller_root = getattr(config, "workerinput", {}).get("nncts_root")
    if not controller_root or controller_root == str(NNCTS_ROOT):
        return
    for name, value in vars(config.option).items():
        if isinstance(value, str):
            setattr(config.option, name, map_path(value, controller_root))
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            setattr(config.option, name, [map_path(v, controller_root) for v in value])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Worker: the tests the controller's ``--nncts-resume`` records hold are done."""
    done = getattr(config, "workerinput", {}).get("nncts_done")
    if done:
        config._nncts_done = set(done) | set(getattr(config, "_nncts_done", ()))

