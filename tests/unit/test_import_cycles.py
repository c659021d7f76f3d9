"""No two modules of the services, the libraries or the benchmarks import each other, not even through
others (issue 15).

A circle of imports makes a module unusable without the others of its circle, and hides which of them
owns what; it also forces imports into functions or under ``TYPE_CHECKING``. Those count here too:
every import a module names, wherever it stands, is an arrow to the module it names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.unit.layout import parse

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "services": ROOT / "services",
    "novaberg_core": ROOT / "libs" / "novaberg_core",
    "novaberg_dev": ROOT / "libs" / "novaberg_dev",
    "bench": ROOT / "bench",
}


def _modules() -> dict[str, Path]:
    """Every hand-written module by its dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for top, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            parts = [top, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The modules of ``modules`` that ``module`` names in an import (``from p import m`` names the
    submodule ``p.m`` where there is one, else the package ``p``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    yield f"{base}.{alias.name}"
                elif base in modules:
                    yield base


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set(_imported(name, path, modules)) - {name} for name, path in modules.items()}


def test_the_graph_is_read() -> None:
    """The reading itself: known arrows are found, or an empty graph would pass the test below."""
    graph = import_graph()
    assert "novaberg_core.config" in graph["services.kzg.config"]
    assert "services.lzg.store" in graph["services.lzg.server"]
    assert "bench.locomo_scores" in graph["bench.locomo_bench"]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_through_others() -> None:
    assert _circles(import_graph()) == []
