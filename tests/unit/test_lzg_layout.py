"""The LZG's shape (issue 15): small modules, no reach into another module's private names, SQL
named only by the store modules, edge rows built in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LZG = Path(__file__).resolve().parents[2] / "services" / "lzg"
MODULES = sorted(p for p in LZG.rglob("*.py") if "__pycache__" not in p.parts)
STORE_MODULES = {"store.py", "rights_store.py"}
QUERY_CALLS = {"fetch", "fetchrow", "fetchval", "execute", "node_ids", "edge_pairs"}


def _name(path: Path) -> str:
    return str(path.relative_to(LZG))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_lzg_module_is_over_500_lines(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 500


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_lzg_module_uses_another_modules_private_names(path: Path) -> None:
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("services."):
            found += [f"import {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}):
                found.append(f"line {node.lineno}: .{node.attr}")
    assert found == []


@pytest.mark.parametrize("path", [p for p in MODULES if p.parent.name == "app"], ids=_name)
def test_the_use_cases_name_no_sql_query(path: Path) -> None:
    """Only the store modules name queries; a use case calls their named methods."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Subscript) and (
            (isinstance(node.value, ast.Attribute) and node.value.attr == "q")
            or (isinstance(node.value, ast.Name) and node.value.id == "RIGHTS_QUERIES")
        ):
            found.append(f"line {node.lineno}: query subscript")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in QUERY_CALLS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(f"line {node.lineno}: {node.func.attr}({node.args[0].value!r})")
    assert found == []


def test_edge_rows_are_built_in_one_place() -> None:
    """Trigger 1 and Trigger 3 both end in ``edges.edge_rows`` (SPEC §5.4, §5.5)."""
    builders = sorted(
        _name(path)
        for path in MODULES
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "EdgeInsert"
    )
    assert builders == ["edges.py", "edges.py"]
