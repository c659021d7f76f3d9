"""The KZG's shape (issue 15): small modules, no reach into another module's private names, Redis
spoken only by the store package, one conversion module for the servicers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit.layout import line_count, parse, private_reach

KZG = Path(__file__).resolve().parents[2] / "services" / "kzg"
MODULES = sorted(p for p in KZG.rglob("*.py") if "__pycache__" not in p.parts)
STORE = KZG / "store"
OUTSIDE_STORE = [p for p in MODULES if STORE not in p.parents]
REDIS_COMMANDS = {
    "execute_command", "ft", "pipeline", "register_script", "evalsha", "scan",
    "hset", "hget", "hmget", "hgetall", "hdel", "expire", "ttl",
    "rpush", "lrange", "llen", "ltrim", "lrem",
    "xadd", "xack", "xdel", "xlen", "xrange", "xreadgroup", "xautoclaim", "xpending", "xpending_range",
    "xgroup_create", "xinfo_stream", "xinfo_consumers",
}  # fmt: skip
"""Redis client methods whose names nothing else in the KZG uses (``get``/``set``/``delete`` are
left out: dictionaries have them too; the ``.redis`` check below covers those)."""


def _name(path: Path) -> str:
    return str(path.relative_to(KZG))




def test_the_layout_is_what_the_tests_below_expect() -> None:
    """The rooms exist: the store package, the use cases, one conversion module."""
    names = {_name(p) for p in MODULES}
    assert {"store/__init__.py", "app/__init__.py", "convert.py", "servicer.py", "domain.py"} <= names
    assert not (KZG / "store.py").exists()
    assert len([p for p in MODULES if p.parent == STORE]) >= 5
    assert len([p for p in MODULES if p.parent.name == "app"]) >= 5


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_kzg_module_is_over_500_lines(path: Path) -> None:
    assert line_count(path) <= 500


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_kzg_module_uses_another_modules_private_names(path: Path) -> None:
    assert private_reach(path) == []


@pytest.mark.parametrize("path", OUTSIDE_STORE, ids=_name)
def test_only_the_store_speaks_redis(path: Path) -> None:
    """Use cases, servicers and facades call the store's named methods; no Redis client, no command."""
    found = []
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"line {node.lineno}: import {m}" for m in modules if m.split(".")[0] == "redis"]
        elif isinstance(node, ast.Attribute) and node.attr == "redis":
            found.append(f"line {node.lineno}: .redis")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in REDIS_COMMANDS
        ):
            found.append(f"line {node.lineno}: .{node.func.attr}(")
    assert found == []


@pytest.mark.parametrize("path", OUTSIDE_STORE, ids=_name)
def test_only_the_store_names_query_syntax(path: Path) -> None:
    """Index clauses (``@field:{…}``) and FT.* commands are written in the store package only."""
    found = [
        f"line {node.lineno}: {node.value!r}"
        for node in ast.walk(parse(path))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and ("FT." in node.value or node.value.startswith("@"))
    ]
    assert found == []


def test_proto_conversions_live_in_convert_only() -> None:
    """The servicers construct no domain record from a message themselves: ``convert`` does."""
    records = {"Pair", "EntryInput", "KzgEntry", "SessionTurnRecord", "RetrieveQuery", "RetrieveFilters"}
    found = sorted(
        f"{_name(path)}:{node.lineno} {node.func.id}"
        for path in (KZG / "servicer.py", KZG / "rights_servicer.py")
        for node in ast.walk(parse(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in records
    )
    assert found == []
