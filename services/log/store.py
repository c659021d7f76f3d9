"""All I/O of the log service: the ``log.pipeline_log`` table in PostgreSQL (SPEC §8, syn §10)."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import asyncpg

from novaberg_core.errors import InvalidArgument, Unavailable
from novaberg_core.migrations import load_queries, render
from novaberg_core.pg import open_migrated_pool
from services.log.domain import COPY_COLUMNS, LogQuery, NewRow
from services.log.tombstones import TOMBSTONE_WINDOW, EraseCounts, IngestGuard

SCHEMA: Final = "log"
TABLE: Final = "pipeline_log"
SQL_DIR: Final = Path(__file__).resolve().parent / "sql"

_ERASURE_LOCK_KEY: Final = int.from_bytes(hashlib.sha256(b"log:loeschung").digest()[:8], "big", signed=True)
"""Advisory lock between ingest (shared) and erasure (exclusive)."""

# Errors that mean "the database is not there right now": the caller may retry.
_UNREACHABLE = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
)


@dataclass(frozen=True, slots=True)
class StoredRow:
    """One pipeline_log row as read back."""

    id: int
    erstellt_am: datetime
    turn_id: str
    span_id: str | None
    quelle: str
    node: str
    art: str
    inhalt_json: str
    user_id: str | None
    character_id: str | None
    trace_id: str | None


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    text: str
    erstellt_am: datetime
    turn_id: str


@dataclass(frozen=True, slots=True)
class TokenTotals:
    input_tokens: int
    output_tokens: int
    kosten_usd: float
    calls: int


@dataclass(frozen=True, slots=True)
class PurgeResult:
    deleted: int
    kept_turn_roh: int


class LogStore:
    """The pipeline_log table: batched COPY ingest, filter queries, syn §10.4 reports, retention."""

    def __init__(self, pool: asyncpg.Pool, queries: dict[str, str]) -> None:
        self.pool = pool
        self._q = queries

    @classmethod
    async def open(cls, postgres_url: str, *, max_size: int = 8) -> LogStore:
        """Connect (schema ``log``), apply pending migrations, load the named queries."""
        pool = await open_migrated_pool(postgres_url, SCHEMA, SQL_DIR / "migrations", max_size=max_size, vector=False)
        return cls(pool, named_queries())

    async def close(self) -> None:
        await self.pool.close()

    async def write(self, batches: AsyncIterator[list[NewRow]]) -> int:
        """One COPY fed batch by batch as they arrive, in one transaction: all rows of the stream or
        none (syn §10.3). A batch that fails validation aborts the COPY."""

        async def rows(guard: IngestGuard | None) -> AsyncIterator[NewRow]:
            async for batch in batches:
                for row in batch:
                    if guard is None or guard.keep(row):
                        yield row

        try:
            with _reachable():
                async with self.pool.acquire() as conn, conn.transaction():
                    # Records of an erased pair arriving late from a writer's buffer are dropped here.
                    guard = await self._ingest_guard(conn)
                    status = await conn.copy_records_to_table(
                        TABLE, records=rows(guard), columns=COPY_COLUMNS, schema_name=SCHEMA
                    )
        except (asyncpg.DataError, asyncpg.IntegrityConstraintViolationError) as exc:
            raise InvalidArgument(f"the database refused the batch: {exc}") from exc
        return int(status.rsplit(" ", 1)[1])  # "COPY <n>"

    async def _ingest_guard(self, conn: asyncpg.Connection) -> IngestGuard | None:
        """Inside the ingest's transaction: the shared lock, then the tombstones in force (None: none)."""
        await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", _ERASURE_LOCK_KEY)
        rows = await conn.fetch(self._q["active_tombstones"], TOMBSTONE_WINDOW)
        if not rows:
            return None
        return IngestGuard({r["schluessel"]: r["geloescht_am"] for r in rows})

    async def erase(self, user: str, character: str | None, key: str, key_prefix: str) -> EraseCounts:
        """The target's rows (``character`` None: every character of ``user``), the maintenance rows
        whose JSON names ``key_prefix``, then the tombstone ``key`` — under the exclusive lock."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _ERASURE_LOCK_KEY)
            counts: Any = await conn.fetchrow(self._q["erase_rows"], user, character)
            unpaired = int(await conn.fetchval(self._q["erase_unpaired_rows"], key_prefix))
            await conn.execute(self._q["expire_tombstones"], TOMBSTONE_WINDOW)
            await conn.execute(self._q["record_tombstone"], key)
        return EraseCounts(rows=int(counts["rows"]), turn_roh=int(counts["turn_roh"]), unpaired_rows=unpaired)

    async def query(self, q: LogQuery) -> list[StoredRow]:
        """Rows matching every given filter, ordered by (erstellt_am, id), at most ``q.limit``."""
        sql = self._q["query_desc" if q.descending else "query_asc"]
        rows = await self._fetch_custom_plan(
            sql,
            q.turn_id,
            q.span_id,
            q.node,
            q.art,
            q.user_id,
            q.character_id,
            q.since,
            q.until,
            q.trace_id,
            q.quelle,
            q.limit,
        )
        return [StoredRow(**dict(r)) for r in rows]

    async def last_answers(self, quelle: str, node: str | None, limit: int) -> list[StoredAnswer]:
        """syn §10.4: the newest ``ausgabe`` texts of ``quelle``."""
        rows = await self._fetch(self._q["last_answers"], quelle, node, limit)
        return [
            StoredAnswer(text=r["text"], erstellt_am=r["erstellt_am"], turn_id=r["turn_id"]) for r in rows
        ]

    async def cluster_counts(
        self, since: datetime, until: datetime, user_id: str | None, character_id: str | None
    ) -> list[tuple[str, int]]:
        """syn §10.4: how often each cluster was chosen in [since, until), most frequent first."""
        rows = await self._fetch_custom_plan(self._q["cluster_counts"], since, until, user_id, character_id)
        return [(r["cluster"], r["anzahl"]) for r in rows]

    async def token_usage(self, since: datetime, until: datetime) -> TokenTotals:
        """syn §10.4: summed tokens and cost of the ``token`` rows in [since, until)."""
        rows = await self._fetch(self._q["token_usage"], since, until)
        r = rows[0]
        return TokenTotals(
            input_tokens=r["input_tokens"],
            output_tokens=r["output_tokens"],
            kosten_usd=r["kosten_usd"],
            calls=r["calls"],
        )

    async def purge(self, horizon: datetime, pairs: Sequence[tuple[str, str]] = ()) -> PurgeResult:
        """syn §10.5: delete rows created before ``horizon`` except ``turn_roh``; only ``pairs``' if given."""
        if pairs:
            users, characters = [p[0] for p in pairs], [p[1] for p in pairs]
            rows = await self._fetch(self._q["purge_pairs"], horizon, users, characters)
        else:
            rows = await self._fetch(self._q["purge"], horizon)
        return PurgeResult(deleted=rows[0]["deleted"], kept_turn_roh=rows[0]["kept_turn_roh"])

    async def _fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        with _reachable():
            async with self.pool.acquire() as conn:
                return list(await conn.fetch(sql, *args))

    async def _fetch_custom_plan(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        """Fetch with a plan made for these arguments: the optional filters then use their indexes."""
        with _reachable():
            async with self.pool.acquire() as conn, conn.transaction(readonly=True):
                await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
                return list(await conn.fetch(sql, *args))


def named_queries() -> dict[str, str]:
    """The named queries of ``sql/*.sql``; the row query once per direction (oldest or newest first)."""
    queries = {**load_queries(SQL_DIR / "queries.sql"), **load_queries(SQL_DIR / "rights.sql")}
    rows = queries.pop("query")
    queries["query_asc"] = render(rows, {"direction": "ASC"})
    queries["query_desc"] = render(rows, {"direction": "DESC"})
    return queries


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    """A database that is not there right now is :class:`Unavailable` (the caller may retry)."""
    try:
        yield
    except _UNREACHABLE as exc:
        raise Unavailable(f"pipeline_log database not reachable: {exc}") from exc
