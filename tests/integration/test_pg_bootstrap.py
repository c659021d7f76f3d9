"""One store bootstrap (novaberg_core.pg.open_migrated_pool) on a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import pytest

from novaberg_core import pg


async def test_the_pool_opens_with_its_migrations_applied(empty_pg_url: str, tmp_path: Path) -> None:
    (tmp_path / "001_first.sql").write_text("CREATE TABLE things (id int PRIMARY KEY, n int NOT NULL);\n")
    pool = await pg.open_migrated_pool(empty_pg_url, "bootstrap_test", tmp_path, vector=False)
    try:
        await pool.execute("INSERT INTO things VALUES (1, 2)")  # search_path: the schema
        assert await pool.fetchval("SELECT n FROM bootstrap_test.things") == 2
        assert await pool.fetchval("SELECT max(version) FROM bootstrap_test.schema_migrations") == 1
    finally:
        await pool.close()


async def test_a_failing_migration_closes_the_pool(
    empty_pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "001_broken.sql").write_text("CREATE TABLE broken (;\n")
    opened: list[asyncpg.Pool] = []
    create_pool = pg.create_pool

    async def recorded(*args: Any, **kwargs: Any) -> asyncpg.Pool:
        pool = await create_pool(*args, **kwargs)
        opened.append(pool)
        return pool

    monkeypatch.setattr(pg, "create_pool", recorded)
    with pytest.raises(asyncpg.PostgresSyntaxError):
        await pg.open_migrated_pool(empty_pg_url, "bootstrap_test", tmp_path, vector=False)
    assert len(opened) == 1 and opened[0].is_closing()


async def test_a_released_connection_keeps_no_transaction_and_costs_no_reset_round_trip(
    empty_pg_url: str, tmp_path: Path
) -> None:
    (tmp_path / "001_things.sql").write_text("CREATE TABLE things (id int PRIMARY KEY);\n")
    pool = await pg.open_migrated_pool(empty_pg_url, "release_test", tmp_path, vector=False, max_size=1)
    sent: list[str] = []
    try:
        async with pool.acquire() as conn:
            conn.add_query_logger(lambda logged: sent.append(logged.query))
            await conn.execute("BEGIN")  # left open on purpose: released inside a transaction
            await conn.execute("INSERT INTO things VALUES (1)")
        async with pool.acquire() as again:  # max_size 1: the same connection
            released = [q.strip() for q in sent]
            assert again.is_in_transaction() is False
            assert await again.fetchval("SELECT count(*) FROM things") == 0  # rolled back on release
            assert await again.fetchval("SHOW search_path") == "release_test,public"
        assert released == ["BEGIN", "INSERT INTO things VALUES (1)", "ROLLBACK"]  # and no RESET ALL
    finally:
        await pool.close()
