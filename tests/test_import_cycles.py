"""No two files of repscope import each other, directly or through others.

``tests/test_layers.py`` holds the order of the layers between top-level units; this test holds the
files: a reader who opens one module can read it knowing only what it imports, never a module that
needs it back. Every import counts, at any depth (a function-local import too), and ``from pkg import
name`` counts as an import of ``pkg/name.py`` where that is a module, else of ``pkg/__init__.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import repscope

PACKAGE = Path(repscope.__file__).parent


def dotted_name(path: Path) -> str:
    parts = ["repscope", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {dotted_name(path): path for path in PACKAGE.rglob("*.py")}


def imported_files(path: Path) -> set[str]:
    """The repscope modules (dotted names of files) that the file at ``path`` imports."""
    package = dotted_name(path) if path.name == "__init__.py" else dotted_name(path).rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])]
                )
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for name in names:
            # a dotted import names its deepest module that is a file of ours
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    found.discard(dotted_name(path))
    return found


def import_cycles() -> list[list[str]]:
    """The strongly connected groups of more than one file (Tarjan's algorithm, iterative)."""
    graph = {name: sorted(imported_files(path)) for name, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return groups


def test_the_resolver_sees_function_local_and_from_imports():
    cli = imported_files(PACKAGE / "cli" / "__init__.py")
    assert "repscope.errors" in cli
    # `from repscope.data import dsprites` is the module data/dsprites.py, not data/__init__.py
    users = [name for name, path in MODULES.items() if "repscope.data.dsprites" in imported_files(path)]
    assert users


def test_no_two_files_import_each_other():
    assert import_cycles() == [], "make the imports go one way (move what both need to where both can import it)"
