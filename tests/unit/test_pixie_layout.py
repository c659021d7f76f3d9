"""Pixie's shape and the shared bootstrap's (issue 15): small modules, no reach into another module's
private names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIXIE = ROOT / "services" / "pixie"
CORE = ROOT / "libs" / "novaberg_core"
CORE_MODULES = [
    *sorted((CORE / "pipeline_log").glob("*.py")),
    *(CORE / name for name in ("server.py", "server_interceptors.py", "metrics.py", "rpc_metrics.py")),
]
PIXIE_MODULES = sorted(p for p in PIXIE.rglob("*.py") if "__pycache__" not in p.parts)
MODULES = [*PIXIE_MODULES, *CORE_MODULES]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_split_modules_exist() -> None:
    """The modules the size check names are there (a rename must update this test, not skip it)."""
    assert all(path.is_file() for path in CORE_MODULES)
    assert len(CORE_MODULES) == 9 and len(PIXIE_MODULES) >= 17


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_is_over_500_lines(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 500


@pytest.mark.parametrize("path", PIXIE_MODULES, ids=_name)
def test_no_pixie_module_imports_another_modules_private_names(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = [
        f"line {node.lineno}: import {alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("services.", "novaberg_core"))
        for alias in node.names
        if _private(alias.name)
    ]
    assert found == []
