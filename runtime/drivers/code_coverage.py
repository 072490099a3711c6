"""Code coverage of a driver's own source files (coverage.py: lines and branches), for
``--driver-coverage`` (:mod:`harness.driver_coverage`) and the driver host
(``python -m runtime.remote.host --coverage-data PATH``).

A driver's own source files (:func:`driver_sources`) are found from its spec, as
:func:`runtime.drivers.load_driver` reads it (a bundled name, an entry point in group
``nncts.drivers``, or ``module:factory``): the module of the factory. A factory in a package's
``__init__`` measures the whole package (every ``.py`` below it: ``runtime.drivers.onnxrt``,
an installed plug-in); a factory in a plain module measures that module and the sibling
modules of its package it imports, directly or through each other (read from their ``import``
statements, never executed: ``runtime.drivers.sample`` gives ``sample.py``,
``sample_cache.py`` and ``buffers.py``).

coverage.py counts a line when it runs under measurement. A driver module imported before
measuring began (in the test process the runtime imports the sample driver at start-up) had
its import-time lines run unmeasured: :meth:`Measurement.start` credits them from the module's
code objects (the module body and the class bodies in it, never a function body), as an
import of that module runs them; those lines' arcs are credited in source order.
"""
from __future__ import annotations

import ast
import importlib.util
import sys
import types
from importlib.metadata import entry_points
from pathlib import Path

from . import BUNDLED, ENTRY_POINT_GROUP, DriverNotFound

#: The one line a missing coverage.py gives (the extra that installs it named).
COVERAGE_MISSING = "driver code coverage needs coverage.py: pip install 'nncts[coverage]'"


def coverage_missing() -> str:
    """:data:`COVERAGE_MISSING` when coverage.py is not installed, else ""."""
    return COVERAGE_MISSING if importlib.util.find_spec("coverage") is None else ""


def factory_module(spec: str) -> str:
    """The module name of driver ``spec``'s factory (``sample`` -> ``runtime.drivers.sample``,
    ``pkg.mod:make`` -> ``pkg.mod``, an entry point's module). Raises DriverNotFound for a
    name that is neither bundled nor an entry point."""
    spec = BUNDLED.get(spec, spec)
    if ":" in spec:
        return spec.partition(":")[0]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec:
            return ep.value.partition(":")[0].strip()
    raise DriverNotFound(f"no driver named {spec!r} (bundled name, entry point in {ENTRY_POINT_GROUP}, "
                         f"or module:factory)")


def _find(module: str):
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError) as e:
        raise DriverNotFound(f"no module {module!r}: {e}") from None
    if found is None:
        raise DriverNotFound(f"no module named {module!r}")
    if not found.origin or not found.origin.endswith(".py"):
        raise DriverNotFound(f"module {module!r} has no Python source")
    return found


def _sibling_imports(path: Path, module: str, package: str) -> set[str]:
    """Names of the modules of ``package`` that the source of ``module`` (at ``path``) imports,
    by any ``import`` / ``from ... import`` statement (relative or absolute, at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                if node.level else node.module or ""
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}
    prefix = package + "."
    return {n for n in names if n.startswith(prefix) and "." not in n[len(prefix):] and n != module}


def source_files(module: str) -> dict[str, str]:
    """``{absolute path: display path}`` of the source files of ``module`` as
    :func:`driver_sources` measures them (display paths relative to the top package's
    parent, e.g. ``runtime/drivers/sample.py``). Raises DriverNotFound when ``module`` has no
    Python source."""
    found = _find(module)
    depth = module.count(".") + (1 if found.submodule_search_locations else 0)
    root = Path(found.origin).parents[depth]
    if found.submodule_search_locations:
        files = sorted(p for p in Path(found.origin).parent.rglob("*.py") if "__pycache__" not in p.parts)
    else:
        package = module.rpartition(".")[0]
        seen, todo, files = set(), [module], []
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            try:
                path = Path(_find(name).origin)
            except DriverNotFound:
                continue   # an attribute imported from the package, not a module
            files.append(path)
            if package:
                todo += sorted(_sibling_imports(path, name, package))
        files.sort()
    out = {}
    for p in files:
        p = p.resolve()
        try:
            out[str(p)] = p.relative_to(root.resolve()).as_posix()
        except ValueError:
            out[str(p)] = str(p)
    return out


def driver_sources(spec: str) -> dict[str, str]:
    """The source files of driver ``spec`` (see the module docstring), as
    :func:`source_files`. Raises DriverNotFound."""
    return source_files(factory_module(spec))


def _import_arcs(code: types.CodeType) -> set[tuple[int, int]]:
    """The arcs an import runs in ``code`` (a module or class body) and in the class bodies it
    defines: its lines in source order, entered from and left to ``-first line`` as
    coverage.py records them."""
    lines = []
    for _, _, line in code.co_lines():
        if line is not None and line > 0 and (not lines or lines[-1] != line):
            lines.append(line)
    arcs = set()
    if lines:
        entry = -code.co_firstlineno
        arcs |= {(entry, lines[0]), (lines[-1], entry)} | set(zip(lines, lines[1:]))
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and not const.co_flags & 0x2 and const.co_name != "<lambda>" \
                and not const.co_name.startswith("<"):   # 0x2: CO_NEWLOCALS, a function body
            arcs |= _import_arcs(const)
    return {a for a in arcs if a[0] != a[1]}


class Measurement:
    """coverage.py measuring ``files`` (``{absolute path: display path}``: lines and
    branches) into ``data_file``; :meth:`start`, then :meth:`stop` (saves)."""

    def __init__(self, files: dict[str, str], data_file: str):
        import coverage
        self.files = dict(files)
        self.credited: dict[str, list] = {}
        self.cov = coverage.Coverage(data_file=data_file, branch=True, include=list(self.files),
                                     config_file=False, auto_data=False)

    def start(self) -> None:
        """Start measuring, then credit the import-time lines of the files already imported."""
        self.cov.start()
        imported = {str(Path(m.__file__).resolve()) for m in list(sys.modules.values())
                    if isinstance(getattr(m, "__file__", None), str)}
        self.credited = {}
        for path in self.files:
            if path in imported:
                code = compile(Path(path).read_text(encoding="utf-8"), path, "exec")
                self.credited[path] = sorted(_import_arcs(code))

    def stop(self) -> None:
        """Stop measuring and write the data file (with the credited import-time arcs)."""
        self.cov.stop()
        if self.credited:
            self.cov.get_data().add_arcs(self.credited)
        self.cov.save()
