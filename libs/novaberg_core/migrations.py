"""Ordered SQL migrations and named queries (STYLE rule 4, after procrastinate).

Migrations are files ``NNN_description.sql`` applied in numeric order, each in its own
transaction, recorded in ``<schema>.schema_migrations`` with its file name and checksum; an
advisory lock makes concurrent replicas wait instead of racing. A file may use ``{{name}}``
placeholders (e.g. the vector dimension) that the caller fills in — values are validated
integers/identifiers, never user input.

An applied migration never changes: before applying anything, the recorded ones are checked
against the files (:func:`check_applied`), and a store whose history differs from this build's
refuses to open (docs/decisions.md "An applied migration never changes").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

import asyncpg

from novaberg_core.errors import MigrationMismatch

_MIGRATION_FILE = re.compile(r"^(\d{3,})_[a-z0-9_]+\.sql$")
_QUERY_HEADER = re.compile(r"^--\s*name:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$", re.MULTILINE)


def migration_files(migrations_dir: Path) -> list[tuple[int, Path]]:
    """The migration files of a directory in order; a malformed name is an error, not skipped."""
    found: list[tuple[int, Path]] = []
    for path in sorted(migrations_dir.glob("*.sql")):
        match = _MIGRATION_FILE.match(path.name)
        if not match:
            raise ValueError(f"migration file {path.name} must be named NNN_description.sql")
        found.append((int(match.group(1)), path))
    versions = [v for v, _ in found]
    if len(versions) != len(set(versions)):
        raise ValueError(f"duplicate migration versions in {migrations_dir}")
    return found


def file_checksum(path: Path) -> str:
    """SHA-256 of a migration file as written (before its placeholders are filled), hex."""
    return _checksum(path.read_bytes())


def _checksum(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def check_applied(
    applied: Mapping[int, tuple[str, str | None]], files: list[tuple[int, Path]], schema: str
) -> dict[int, str]:
    """Compare the recorded migrations (version → file name, checksum) with this build's ``files``.

    Returns the checksums to record for the versions recorded without one (applied before checksums
    were kept) whose file still has the recorded name: the file's as it is now. Raises
    :class:`MigrationMismatch` naming every difference: a recorded migration whose file is gone
    (unless it is newer than every file: a replica of an older build beside a store a newer one
    has migrated, as Flyway ignores "future" migrations), renamed, or changed.
    """
    by_version = dict(files)
    newest = max(by_version, default=0)
    unchecked: dict[int, str] = {}
    problems: list[str] = []
    for version, (name, checksum) in sorted(applied.items()):
        path = by_version.get(version)
        if path is None:
            if version <= newest:
                problems.append(f"{name} was applied and has no file any more")
        elif path.name != name:
            problems.append(f"migration {version} was applied as {name}, its file is now {path.name}")
        elif checksum is None:
            unchecked[version] = file_checksum(path)
        elif checksum != file_checksum(path):
            problems.append(f"{name} was changed after it was applied")
    if problems:
        raise MigrationMismatch(
            f"schema {schema} was migrated by other files than this build's: {'; '.join(problems)}. "
            "An applied migration must never change: restore the file as it was applied and put the "
            "change into a new migration (a throwaway store may instead be dropped and created anew)"
        )
    return unchecked


def render(sql: str, params: Mapping[str, str | int]) -> str:
    """Fills ``{{name}}`` placeholders; an unfilled placeholder is an error."""
    for key, value in params.items():
        sql = sql.replace("{{" + key + "}}", str(value))
    left = re.findall(r"\{\{(\w+)\}\}", sql)
    if left:
        raise ValueError(f"migration placeholders without a value: {sorted(set(left))}")
    return sql


async def apply_migrations(
    pool: asyncpg.Pool | asyncpg.Connection,
    schema: str,
    migrations_dir: Path,
    params: Mapping[str, str | int] | None = None,
) -> list[int]:
    """Applies the pending migrations of ``migrations_dir`` to ``schema``; returns their versions."""
    applied_now: list[int] = []
    lock_key = int.from_bytes(hashlib.sha256(f"migrate:{schema}".encode()).digest()[:8], "big", signed=True)

    async def run(conn: asyncpg.Connection) -> None:
        await conn.execute("SELECT pg_advisory_lock($1)", lock_key)
        try:
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {schema}.schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                " applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), checksum TEXT)"
            )
            # A store migrated before checksums were kept gains the column; its rows are checked by name.
            await conn.execute(
                f"ALTER TABLE {schema}.schema_migrations ADD COLUMN IF NOT EXISTS checksum TEXT"
            )
            files = migration_files(migrations_dir)
            applied = {
                r["version"]: (r["name"], r["checksum"])
                for r in await conn.fetch(f"SELECT version, name, checksum FROM {schema}.schema_migrations")
            }
            for version, checksum in check_applied(applied, files, schema).items():
                await conn.execute(
                    f"UPDATE {schema}.schema_migrations SET checksum = $2 WHERE version = $1",
                    version,
                    checksum,
                )
            for version, path in files:
                if version in applied:
                    continue
                raw = path.read_bytes()  # read once: rendered and recorded as the same bytes
                sql = render(raw.decode("utf-8"), params or {})
                async with conn.transaction():
                    await conn.execute(f"SET LOCAL search_path = {schema}, public")
                    await conn.execute(sql)
                    await conn.execute(
                        f"INSERT INTO {schema}.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                        version, path.name, _checksum(raw),
                    )  # fmt: skip
                applied_now.append(version)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", lock_key)

    if isinstance(pool, asyncpg.Pool):
        async with pool.acquire() as conn:
            await run(conn)
    else:
        await run(pool)
    return applied_now


def load_queries(path: Path) -> dict[str, str]:
    """Named queries from one .sql file: each block starts with ``-- name: <name>``."""
    text = path.read_text(encoding="utf-8")
    headers = list(_QUERY_HEADER.finditer(text))
    if not headers:
        raise ValueError(f"{path} holds no '-- name: ...' query")
    queries: dict[str, str] = {}
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[header.end() : end].strip().rstrip(";").strip()
        name = header.group(1)
        if name in queries:
            raise ValueError(f"{path}: query {name!r} defined twice")
        if not body:
            raise ValueError(f"{path}: query {name!r} is empty")
        queries[name] = body
    return queries
