"""The shape of Pixie, the log service and the shared bootstrap (issue 15): small modules, the same
rooms in each service, no reach into another module's private names, SQL named only by the store."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.unit.layout import line_count, parse, private_reach

ROOT = Path(__file__).resolve().parents[2]
PIXIE = ROOT / "services" / "pixie"
LOG = ROOT / "services" / "log"
CORE = ROOT / "libs" / "novaberg_core"
CORE_MODULES = [
    *sorted((CORE / "pipeline_log").glob("*.py")),
    *(CORE / name for name in ("server.py", "server_interceptors.py", "metrics.py", "rpc_metrics.py")),
]


def _modules(service: Path) -> list[Path]:
    return sorted(p for p in service.rglob("*.py") if "__pycache__" not in p.parts)


PIXIE_MODULES = _modules(PIXIE)
LOG_MODULES = _modules(LOG)
SERVICE_MODULES = [*PIXIE_MODULES, *LOG_MODULES]
MODULES = [*SERVICE_MODULES, *CORE_MODULES]

ROOMS = ("config.py", "server.py", "servicer.py", "store.py")
"""The rooms every service has (docs/architecture.md); the domain modules are named per service."""
DOMAIN_MODULES = {PIXIE: ("tasks.py", "export_format.py"), LOG: ("domain.py", "rights.py")}
STORE_MODULES = {"store.py"}
QUERY_CALLS = {"fetch", "fetchrow", "fetchval", "execute", "executemany", "copy_records_to_table", "cursor"}
QUERY_TABLES = {"q", "_q", "QUERIES", "_QUERIES"}
SQL_TEXT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|SET)\s", re.IGNORECASE)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))




def test_the_split_modules_exist() -> None:
    """The modules the size check names are there (a rename must update this test, not skip it)."""
    assert all(path.is_file() for path in CORE_MODULES)
    assert len(CORE_MODULES) == 10 and len(PIXIE_MODULES) >= 17 and len(LOG_MODULES) >= 9


def test_pixies_use_cases_live_in_app_as_the_other_services_do() -> None:
    """Promotion, erasure and the rights' RPC family in ``app/`` (docs/architecture.md), none beside it."""
    names = {str(path.relative_to(PIXIE)) for path in PIXIE_MODULES}
    assert {"app/__init__.py", "app/promotion.py", "app/promotion_job.py", "app/erasure.py", "app/rights.py"} <= names
    assert not names & {"promotion.py", "promotion_job.py", "erasure.py", "rights.py"}


@pytest.mark.parametrize("service", [PIXIE, LOG], ids=lambda p: p.name)
def test_each_service_has_the_same_rooms(service: Path) -> None:
    """config, server, servicer, store and its domain modules; SQL in sql/queries.sql and migrations."""
    for room in (*ROOMS, *DOMAIN_MODULES[service]):
        assert (service / room).is_file(), f"{service.name} lacks {room}"
    assert (service / "sql" / "queries.sql").is_file()
    assert sorted((service / "sql" / "migrations").glob("*.sql"))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_is_over_500_lines(path: Path) -> None:
    assert line_count(path) <= 500


@pytest.mark.parametrize("path", SERVICE_MODULES, ids=_name)
def test_no_module_uses_another_modules_private_names(path: Path) -> None:
    """Neither an import of a private name nor ``obj._name`` on anything but ``self``/``cls``."""
    assert private_reach(path, ("services.", "novaberg_core")) == []


@pytest.mark.parametrize("path", [p for p in SERVICE_MODULES if p.name not in STORE_MODULES], ids=_name)
def test_only_the_store_names_a_query(path: Path) -> None:
    """No servicer, use case or domain module loads, looks up, runs or spells out SQL."""
    found = []
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.ImportFrom) and any(a.name == "load_queries" for a in node.names):
            found.append(f"line {node.lineno}: imports load_queries")
        elif isinstance(node, ast.Subscript) and (
            (isinstance(node.value, ast.Attribute) and node.value.attr in QUERY_TABLES)
            or (isinstance(node.value, ast.Name) and node.value.id in QUERY_TABLES)
        ):
            found.append(f"line {node.lineno}: query lookup")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in QUERY_CALLS:
            found.append(f"line {node.lineno}: .{node.func.attr}(…)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_TEXT.match(node.value):
            found.append(f"line {node.lineno}: SQL text {node.value[:30]!r}")
    assert found == []


def test_the_layout_check_sees_a_query_outside_the_store(tmp_path: Path) -> None:
    """The query check is not vacuous: a servicer that runs a named query is caught."""
    bad = tmp_path / "servicer.py"
    bad.write_text('async def f(store):\n    return await store.pool.fetch(QUERIES["get_run"], 1)\n')
    with pytest.raises(AssertionError):
        test_only_the_store_names_a_query(bad)
