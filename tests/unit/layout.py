"""What the layout tests of every service and the libraries share (issue 15): parsing a module,
telling a private name, and finding a reach into another module's private names."""

from __future__ import annotations

import ast
from pathlib import Path


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def private_reach(path: Path, packages: tuple[str, ...] = ("services.",)) -> list[str]:
    """Imports of a private name from ``packages`` and ``obj._name`` on anything but ``self``/``cls``."""
    found = []
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(packages):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if is_private(a.name)]
        elif isinstance(node, ast.Attribute) and is_private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}):
                found.append(f"line {node.lineno}: .{node.attr}")
    return found
