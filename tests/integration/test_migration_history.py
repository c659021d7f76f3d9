"""An applied migration never changes (novaberg_core.migrations; docs/decisions.md): a store whose
recorded migrations differ from the build's files refuses to open, on a real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from novaberg_core import pg
from novaberg_core.errors import MigrationMismatch
from novaberg_core.migrations import apply_migrations, file_checksum

SCHEMA = "history_test"
FIRST = "CREATE TABLE things (id int PRIMARY KEY);\n"
SECOND = "ALTER TABLE things ADD COLUMN n int NOT NULL DEFAULT 0;\n"
THIRD = "CREATE TABLE more_things (id int PRIMARY KEY);\n"


def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(exist_ok=True)
    for name, sql in files.items():
        (directory / name).write_text(sql)
    return directory


async def _tables(conn: asyncpg.Connection) -> set[str]:
    rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", SCHEMA)
    return {r["tablename"] for r in rows}


@pytest.fixture
async def conn(empty_pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    await pg.ensure_schema(empty_pg_url, SCHEMA)
    connection = await asyncpg.connect(empty_pg_url)
    yield connection
    await connection.close()


async def test_each_applied_migration_is_recorded_with_its_name_and_checksum(
    conn: asyncpg.Connection, tmp_path: Path
) -> None:
    migrations = _write(tmp_path / "m", {"001_first.sql": FIRST, "002_second.sql": SECOND})
    assert await apply_migrations(conn, SCHEMA, migrations) == [1, 2]
    rows = await conn.fetch(f"SELECT version, name, checksum FROM {SCHEMA}.schema_migrations ORDER BY 1")
    assert [tuple(r) for r in rows] == [
        (1, "001_first.sql", file_checksum(migrations / "001_first.sql")),
        (2, "002_second.sql", file_checksum(migrations / "002_second.sql")),
    ]
    assert await apply_migrations(conn, SCHEMA, migrations) == []  # unchanged files: nothing to do


async def test_a_migration_changed_after_it_was_applied_refuses_the_store_and_applies_nothing(
    conn: asyncpg.Connection, tmp_path: Path
) -> None:
    migrations = _write(tmp_path / "m", {"001_first.sql": FIRST, "002_second.sql": SECOND})
    await apply_migrations(conn, SCHEMA, migrations)
    _write(migrations, {"002_second.sql": SECOND.replace("DEFAULT 0", "DEFAULT 1"), "003_third.sql": THIRD})
    with pytest.raises(MigrationMismatch) as raised:
        await apply_migrations(conn, SCHEMA, migrations)
    assert (
        f"schema {SCHEMA} was migrated by other files than this build's: 002_second.sql was changed"
        in str(raised.value)
    )
    assert "put the change into a new migration" in str(raised.value)
    assert await _tables(conn) == {"things", "schema_migrations"}  # 003 was not applied
    assert await conn.fetchval(f"SELECT max(version) FROM {SCHEMA}.schema_migrations") == 2


async def test_a_renamed_or_removed_migration_refuses_the_store(
    conn: asyncpg.Connection, tmp_path: Path
) -> None:
    """The case behind the rule: migration 017 renamed and rewritten after a store had applied it left
    that store without the new definition, silently (docs/decisions.md)."""
    migrations = _write(
        tmp_path / "m", {"001_first.sql": FIRST, "002_second.sql": SECOND, "003_third.sql": THIRD}
    )
    await apply_migrations(conn, SCHEMA, migrations)
    (migrations / "002_second.sql").rename(migrations / "002_renamed.sql")
    (migrations / "001_first.sql").unlink()
    with pytest.raises(MigrationMismatch) as raised:
        await apply_migrations(conn, SCHEMA, migrations)
    message = str(raised.value)
    assert "001_first.sql was applied and has no file any more" in message
    assert "migration 2 was applied as 002_second.sql, its file is now 002_renamed.sql" in message


async def test_a_store_migrated_by_a_newer_build_opens_for_an_older_one(
    conn: asyncpg.Connection, tmp_path: Path
) -> None:
    """A replica of the previous release beside a store the next one has migrated (a rolling update)."""
    newer = _write(
        tmp_path / "newer", {"001_first.sql": FIRST, "002_second.sql": SECOND, "003_third.sql": THIRD}
    )
    await apply_migrations(conn, SCHEMA, newer)
    older = _write(tmp_path / "older", {"001_first.sql": FIRST, "002_second.sql": SECOND})
    assert await apply_migrations(conn, SCHEMA, older) == []


async def test_a_store_migrated_before_checksums_were_kept_gains_them_and_is_checked_from_then_on(
    conn: asyncpg.Connection, tmp_path: Path
) -> None:
    migrations = _write(tmp_path / "m", {"001_first.sql": FIRST, "002_second.sql": SECOND})
    # the table and rows as the runner wrote them before it kept checksums
    await conn.execute(
        f"CREATE TABLE {SCHEMA}.schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    await conn.execute(f"SET search_path = {SCHEMA}, public")
    await conn.execute(FIRST)
    await conn.execute(f"INSERT INTO {SCHEMA}.schema_migrations (version, name) VALUES (1, '001_first.sql')")
    _write(migrations, {"003_third.sql": THIRD})
    assert await apply_migrations(conn, SCHEMA, migrations) == [2, 3]
    checksums = await conn.fetch(f"SELECT version, checksum FROM {SCHEMA}.schema_migrations ORDER BY 1")
    assert [tuple(r) for r in checksums] == [(v, file_checksum(p)) for v, p in (
        (1, migrations / "001_first.sql"), (2, migrations / "002_second.sql"), (3, migrations / "003_third.sql")
    )]  # fmt: skip
    _write(migrations, {"001_first.sql": FIRST + "-- edited\n"})
    with pytest.raises(MigrationMismatch, match=r"001_first\.sql was changed after it was applied"):
        await apply_migrations(conn, SCHEMA, migrations)


async def test_a_store_with_a_changed_migration_does_not_open(empty_pg_url: str, tmp_path: Path) -> None:
    migrations = _write(tmp_path / "m", {"001_first.sql": FIRST})
    pool = await pg.open_migrated_pool(empty_pg_url, SCHEMA, migrations, vector=False)
    await pool.close()
    _write(migrations, {"001_first.sql": FIRST.replace("id int", "id bigint")})
    with pytest.raises(MigrationMismatch):
        await pg.open_migrated_pool(empty_pg_url, SCHEMA, migrations, vector=False)
