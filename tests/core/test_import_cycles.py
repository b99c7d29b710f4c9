"""No import cycle anywhere in gridbench: the import graph (grimp, import-linter's own
graph library; every import counted, those under ``TYPE_CHECKING`` and inside functions
too) has no strongly connected component of more than one module, and no module imports
itself. A cycle is broken by moving the shared piece down (docs/architecture.md), never by
a function-local import: that is counted here as well."""

from __future__ import annotations

import itertools
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles of ``graph``: every strongly connected component of more than one
    module (or a module importing itself), each sorted, the list sorted (Tarjan's
    algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    succ = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    for root in sorted(succ):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1 or v in succ[v]:
                        found.append(sorted(component))
    return sorted(found)


def chain(graph: grimp.ImportGraph, component: list[str]) -> list[str]:
    """One cycle through ``component``'s first module, shortest first: a, b, ..., a."""
    start, members = component[0], set(component)
    came: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph.find_modules_directly_imported_by(v)):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if w in members and w not in came:
                came[w] = v
                queue.append(w)
    return component  # not reached: a component's first module is on a cycle


def described(graph: grimp.ImportGraph, components: list[list[str]]) -> str:
    """Each cycle: its modules, then its chain with the line of each import."""
    out = []
    for comp in components:
        steps = chain(graph, comp)
        lines = [f"{len(comp)} modules in a cycle: {', '.join(comp)}"]
        for a, b in itertools.pairwise(steps):
            details = graph.get_import_details(importer=a, imported=b)
            where = ", ".join(f"line {d['line_number']}" for d in details) or "?"
            lines.append(f"    {a} -> {b} ({where})")
        out.append("\n".join(lines))
    return "\n".join(out)


def test_gridbench_has_no_import_cycle() -> None:
    graph = grimp.build_graph("gridbench", cache_dir=None)
    cycles = strongly_connected(graph)
    assert not cycles, "import cycles in gridbench:\n" + described(graph, cycles)


def test_a_cycle_is_found_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a throw-away package with a three-module cycle (one import
    inside a function, one under TYPE_CHECKING) and a module importing itself."""
    pkg = tmp_path / "cyclic_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclic_pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclic_pkg import c\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic_pkg import a\n"
    )
    (pkg / "d.py").write_text("import cyclic_pkg.c\n")
    (pkg / "e.py").write_text("import cyclic_pkg.e\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cyclic_pkg", raising=False)
    graph = grimp.build_graph("cyclic_pkg", cache_dir=None)
    cycles = strongly_connected(graph)
    assert cycles == [
        ["cyclic_pkg.a", "cyclic_pkg.b", "cyclic_pkg.c"],
        ["cyclic_pkg.e"],
    ]
    text = described(graph, cycles)
    assert "cyclic_pkg.a -> cyclic_pkg.b (line 1)" in text
    assert "cyclic_pkg.b -> cyclic_pkg.c (line 2)" in text
    assert "cyclic_pkg.c -> cyclic_pkg.a (line 3)" in text
