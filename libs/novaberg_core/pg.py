"""PostgreSQL access shared by the services that own tables (lzg, log, pixie).

Each service keeps its tables in its own schema of the database given by URL; the pool sets
``search_path`` to that schema and registers pgvector on every connection (STYLE: RedisVL +
pgvector-python).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from novaberg_core.errors import Unavailable
from novaberg_core.migrations import apply_migrations

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def _checked_schema(schema: str) -> str:
    if not _SCHEMA_NAME.match(schema):
        raise ValueError(f"schema name must match {_SCHEMA_NAME.pattern}, got {schema!r}")
    return schema


async def ensure_schema(url: str, schema: str) -> None:
    """Creates the service's schema and the vector extension once (DDL at start-up only)."""
    conn = await _connect(url)
    try:
        # Two replicas racing on CREATE ... IF NOT EXISTS: the loser's error means the object exists.
        for ddl in ("CREATE EXTENSION IF NOT EXISTS vector", f"CREATE SCHEMA IF NOT EXISTS {_checked_schema(schema)}"):
            with contextlib.suppress(asyncpg.UniqueViolationError):
                await conn.execute(ddl)
    finally:
        await conn.close()


class SessionlessConnection(asyncpg.Connection):  # type: ignore[misc]
    """A pool connection released without asyncpg's reset round trip.

    asyncpg sends ``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`` on every release
    (0.15 ms each, three per turn on the LZG's path, bench/turn_bench.py). The services keep no
    session state on a pooled connection: advisory locks are transaction-scoped (the migration lock
    is released by its own code), settings are ``SET LOCAL``, cursors live inside transactions, no
    one listens. A connection released inside a transaction is still rolled back (asyncpg prefixes
    ``ROLLBACK`` whatever the reset query).
    """

    def get_reset_query(self) -> str:
        return ""


async def create_pool(
    url: str, schema: str, *, min_size: int = 1, max_size: int = 10, vector: bool = True
) -> asyncpg.Pool:
    """A pool whose connections use ``schema`` (then public, where pgvector lives)."""
    await ensure_schema(url, schema)

    async def init(conn: asyncpg.Connection) -> None:
        if vector:
            await register_vector(conn)

    try:
        pool = await asyncpg.create_pool(
            url,
            min_size=min_size,
            max_size=max_size,
            init=init,
            connection_class=SessionlessConnection,
            server_settings={"search_path": f"{_checked_schema(schema)},public"},
        )
    except (OSError, asyncpg.PostgresError) as exc:
        raise Unavailable(f"PostgreSQL at {_redact(url)} is not reachable: {exc}") from exc
    assert pool is not None
    return pool


async def open_migrated_pool(
    url: str,
    schema: str,
    migrations_dir: Path,
    params: Mapping[str, str | int] | None = None,
    *,
    min_size: int = 1,
    max_size: int = 10,
    vector: bool = True,
) -> asyncpg.Pool:
    """A store's pool (:func:`create_pool`) with its pending migrations applied; closed again if they fail.

    Every store that owns tables opens this way at start-up (idempotent, safe with several replicas).
    """
    pool = await create_pool(url, schema, min_size=min_size, max_size=max_size, vector=vector)
    try:
        await apply_migrations(pool, schema, migrations_dir, params)
    except BaseException:
        await pool.close()
        raise
    return pool


async def _connect(url: str) -> Any:
    try:
        return await asyncpg.connect(url)
    except (OSError, asyncpg.PostgresError) as exc:
        raise Unavailable(f"PostgreSQL at {_redact(url)} is not reachable: {exc}") from exc


def _redact(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)
