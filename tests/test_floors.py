"""The floors of the tree (docs/architecture.md) hold: import-linter's contracts in
pyproject.toml are all kept (CLI > suites > reports > harness > runtime, the suites
independent, the runtime's own floors, no product import of the tests, no circle between a
package's modules), and the whole import graph, imports inside functions included, has no
circle, so no import sits inside a function to dodge one."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]


def test_every_import_linter_contract_is_kept():
    """lint-imports (import-linter's command) over pyproject.toml's contracts: all kept."""
    proc = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                           "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    summary = re.search(r"Contracts: (\d+) kept, (\d+) broken", proc.stdout)
    assert summary, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert int(summary[1]) >= 4 and int(summary[2]) == 0, proc.stdout[-5000:]
    assert proc.returncode == 0


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph.modules:
                    continue
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def test_no_import_circle_anywhere_even_through_imports_inside_functions(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert _cycles(graph) == []


def test_the_circle_finder_finds_a_circle(tmp_path, monkeypatch):
    """The check above can fail: a package whose two modules import each other (one of them
    inside a function) is one circle."""
    pkg = tmp_path / "circle_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from circle_pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from circle_pkg import a\n    return a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("circle_pkg", cache_dir=None)) == [["circle_pkg.a", "circle_pkg.b"]]
