"""The pipeline's shape (issue 15): small modules, one per use case, no reach into another module's
private names, Redis spoken only by the store."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit.layout import line_count, parse, private_reach

PIPELINE = Path(__file__).resolve().parents[2] / "services" / "pipeline"
MODULES = sorted(p for p in PIPELINE.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    return str(path.relative_to(PIPELINE))



def _imported_modules(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_pipeline_module_is_over_500_lines(path: Path) -> None:
    assert line_count(path) <= 500


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_pipeline_module_uses_another_modules_private_names(path: Path) -> None:
    """A name starting with ``_`` is its module's own: imported nowhere, reached only through self/cls."""
    assert private_reach(path) == []


def test_each_rpc_family_has_its_use_case_module() -> None:
    """SPEC §7's three steps, one module each, composed by the facade the servicer holds."""
    app = {p.stem for p in (PIPELINE / "app").glob("*.py")}
    assert {"observe", "dossier", "dispatch", "context"} <= app
    assert "services.pipeline.turns" in _imported_modules(parse(PIPELINE / "servicer.py"))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_only_the_store_speaks_redis(path: Path) -> None:
    """The previous-turn cluster and the profile are the pipeline's only state; ``store.py`` holds them."""
    speaks_redis = any(m == "redis" or m.startswith("redis.") for m in _imported_modules(parse(path)))
    assert speaks_redis == (_name(path) == "store.py")
