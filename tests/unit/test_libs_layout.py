"""The shared libraries' shape (issue 15): small modules, no reach into another module's private
names, one home for wrapping a gRPC method handler, third-party code kept under ``vendor/``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit.layout import is_private, line_count, parse

LIBS = Path(__file__).resolve().parents[2] / "libs"
PACKAGES = ("novaberg_core", "novaberg_dev")
MODULES = sorted(
    p for package in PACKAGES for p in (LIBS / package).rglob("*.py") if "__pycache__" not in p.parts
)
HANDLER_FACTORIES = {
    "unary_unary_rpc_method_handler",
    "unary_stream_rpc_method_handler",
    "stream_unary_rpc_method_handler",
    "stream_stream_rpc_method_handler",
}


def _name(path: Path) -> str:
    return str(path.relative_to(LIBS))




@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_library_module_is_over_500_lines(path: Path) -> None:
    assert line_count(path) <= 500


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_library_module_imports_another_modules_private_names(path: Path) -> None:
    found = [
        f"line {node.lineno}: from {node.module} import {alias.name}"
        for node in ast.walk(parse(path))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGES)
        for alias in node.names
        if is_private(alias.name)
    ]
    assert found == []


def test_method_handlers_are_rebuilt_in_one_place() -> None:
    """Every server interceptor wraps a handler through ``novaberg_core.method_handlers.rewrap``."""
    builders = sorted(
        {
            _name(path)
            for path in MODULES
            for node in ast.walk(parse(path))
            if isinstance(node, ast.Attribute) and node.attr in HANDLER_FACTORIES
        }
    )
    assert builders == ["novaberg_core/method_handlers.py"]


def test_third_party_assets_live_under_vendor() -> None:
    """Minified third-party scripts sit in a ``vendor/`` folder, each with its licence next to it."""
    scripts = sorted(p for package in PACKAGES for p in (LIBS / package).rglob("*.min.js"))
    assert scripts, "the graph explorer's vendored scripts are missing"
    for script in scripts:
        assert script.parent.name == "vendor", _name(script)
        assert any(script.parent.glob("*LICENSE*")), f"no licence next to {_name(script)}"
