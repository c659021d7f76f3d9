"""The LZG's shape (issue 15): small modules, no reach into another module's private names, SQL
named only by the store modules, edge rows built in one place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.unit.layout import line_count, parse, private_reach

LZG = Path(__file__).resolve().parents[2] / "services" / "lzg"
MODULES = sorted(p for p in LZG.rglob("*.py") if "__pycache__" not in p.parts)
STORE = LZG / "store"
"""The store package: the only modules that name or run SQL."""
SQL_RUNNERS = {
    "fetch",
    "fetchrow",
    "fetchval",
    "fetchmany",
    "execute",
    "executemany",
    "prepare",
    "copy_records_to_table",
    "copy_to_table",
}
"""A connection's (or pool's) methods that run SQL."""
QUERY_CALLS = SQL_RUNNERS | {"node_ids", "edge_pairs", "rank_rows"}
"""Calls whose first argument, if a string, names a query (the store's own helpers included)."""
QUERY_MAPS = {"q", "queries", "RIGHTS_QUERIES"}
SQL_TEXT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\s", re.ASCII)


def _name(path: Path) -> str:
    return str(path.relative_to(LZG))




@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_lzg_module_is_over_500_lines(path: Path) -> None:
    assert line_count(path) <= 500


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_lzg_module_uses_another_modules_private_names(path: Path) -> None:
    assert private_reach(path) == []


def _query_names(path: Path) -> list[str]:
    """Where a module names a SQL query: a subscript of a query map, a query method called with a
    query's name, or SQL text of its own."""
    found = []
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Subscript) and (
            (isinstance(node.value, ast.Attribute) and node.value.attr in QUERY_MAPS)
            or (isinstance(node.value, ast.Name) and node.value.id in QUERY_MAPS)
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
    return found + _sql_texts(path)


def _sql_texts(path: Path) -> list[str]:
    """SQL written into a module (a string or an f-string's text starting with a statement)."""
    return [
        f"line {node.lineno}: SQL text"
        for node in ast.walk(parse(path))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_TEXT.match(node.value)
    ]


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_sql_lives_in_sql_files(path: Path) -> None:
    """Every statement of the LZG is a named query in ``sql/*.sql`` (STYLE rule 4), the store
    modules' included."""
    assert _sql_texts(path) == []


@pytest.mark.parametrize("path", [p for p in MODULES if not p.is_relative_to(STORE)], ids=_name)
def test_only_the_store_modules_name_sql_queries(path: Path) -> None:
    """Use cases, the read, the rights, the servicers, the domain: none names a query or holds SQL;
    they call the store modules' named methods, which return domain types."""
    assert _query_names(path) == []


@pytest.mark.parametrize("path", [p for p in MODULES if not p.is_relative_to(STORE)], ids=_name)
def test_only_the_store_modules_run_sql(path: Path) -> None:
    """Not even a query handed in from elsewhere: a connection's SQL methods are called by the
    store modules alone (the cache reads through ``store.rights.new_nodes``)."""
    found = [
        f"line {node.lineno}: .{node.func.attr}()"
        for node in ast.walk(parse(path))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in SQL_RUNNERS
    ]
    assert found == []


def test_the_query_check_sees_what_it_forbids(tmp_path: Path) -> None:
    """The check above finds each way of naming a query (so an empty finding means something)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "async def f(conn, store, queries, RIGHTS_QUERIES, tx):\n"
        "    await conn.fetch(store.q['a'])\n"
        "    await conn.fetch(queries['b'])\n"
        "    await conn.fetchval(RIGHTS_QUERIES['c'])\n"
        "    await tx.rank_rows('rank_rows_insert', [])\n"
        "    await conn.fetch('SELECT 1')\n"
        "    await conn.fetch(f'SELECT {1}')\n",
        encoding="utf-8",
    )
    assert {int(f.split(":")[0].removeprefix("line ")) for f in _query_names(sample)} == {2, 3, 4, 5, 6, 7}


def test_edge_rows_are_built_in_one_place() -> None:
    """Trigger 1 and Trigger 3 both end in ``edges.edge_rows`` (SPEC §5.4, §5.5)."""
    builders = sorted(
        _name(path)
        for path in MODULES
        for node in ast.walk(parse(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "EdgeInsert"
    )
    assert builders == ["edges.py", "edges.py"]
