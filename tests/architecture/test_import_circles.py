"""No import circle between the package's files: lazy (function-level) and ``TYPE_CHECKING`` imports count.

A circle hides behind lazy imports until the day someone moves one to the top of the file; the
rule is that the files form a graph without cycles. ``from kbqa_lit.a import b`` is an edge to the
module ``a.b`` when that is a file, else to ``a`` (its ``__init__``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture import test_import_floors as floors


def import_graph() -> dict[str, set[str]]:
    """Module → the package's modules it imports (anywhere in the file)."""
    files = {floors._module_name(p): p for p in floors.PACKAGE.rglob("*.py")}

    def resolve(target: str) -> str:
        while target and target not in files:
            target = target.rpartition(".")[0]
        return target

    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        for _, target in floors._imports(path):
            found = resolve(target)
            if found and found != module:
                graph[module].add(found)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle_between_files() -> None:
    assert circles(import_graph()) == []


def test_the_finder_sees_lazy_and_type_checking_circles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "kbqa_lit"
    for rel, text in {
        "__init__.py": "",
        "kb/__init__.py": "",
        "kb/a.py": "from kbqa_lit.kb.b import B\n",
        "kb/b.py": "def f():\n    from kbqa_lit.kb import c\n",
        "kb/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kbqa_lit.kb.a import A\n",
        "kb/d.py": "from kbqa_lit.kb.a import A\n",  # imports into the circle, is not part of it
        "data/x.py": "from . import y\n",
        "data/y.py": "from .x import X\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    monkeypatch.setattr(floors, "PACKAGE", pkg)
    assert circles(import_graph()) == [
        ["kbqa_lit.data.x", "kbqa_lit.data.y"],
        ["kbqa_lit.kb.a", "kbqa_lit.kb.b", "kbqa_lit.kb.c"],
    ]
