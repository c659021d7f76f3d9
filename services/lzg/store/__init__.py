"""All PostgreSQL I/O of the LZG service (SPEC §5): the only code that names a query.

:class:`LzgStore` here holds the pool, the migrations, the model stamp and the reads and writes of
the service as a whole (the Get/List RPCs, usage reinforcement, decay). One part per concern beside it:
``writer`` (:class:`PairTx`, the writes of one pair under its advisory lock: promotions, usage and
Trigger 3 recomputes of a pair are serialised while other pairs run in parallel, SPEC §5.3),
``reader`` (:class:`PairReader`, the queries of one spreading read in a read-only, repeatable-read
transaction: one consistent graph, no write possible) and ``rights`` (a person's rights: erasure,
export, import, forgetting, correction, and the tombstones, ``sql/rights.sql``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt

from novaberg_core.embedding import ModelStamp, check_store_model
from novaberg_core.migrations import load_queries
from novaberg_core.pg import create_pool, open_migrated_pool
from services.lzg.rows import (
    EDGE_COLUMNS,
    SCHEMA,
    EdgeInsert,
    Entity,
    NewNode,
    PairStats,
    StoredEdge,
    StoredNode,
    Timeline,
    UsageWrite,
    entity_from_row,
    timeline_from_row,
)
from services.lzg.store.reader import PairReader
from services.lzg.store.writer import PairTx

# The rows it writes (services/lzg/rows.py) and its parts are offered here too, for the store's callers.
__all__ = ["EDGE_COLUMNS", "SCHEMA", "EdgeInsert", "LzgStore", "NewNode", "PairReader", "PairTx", "UsageWrite"]

_SQL_DIR = Path(__file__).resolve().parents[1] / "sql"

LOOKUP_CONNECTIONS = 4
"""The named lookups' own pool: a read awaits them holding a main-pool connection, so they must never
wait for that pool (a burst of reads hung forever, docs/decisions.md "Pool connections …")."""

DECAY_BATCH_PAIRS = 32
"""Pairs per decay statement (their write locks held, migration 013): a writer waits briefly, the lock
table never fills, and many small pairs are not a round trip each."""


class LzgStore:
    """The LZG's PostgreSQL schema: opened once per process, shared by all requests."""

    def __init__(self, pool: asyncpg.Pool, queries: Mapping[str, str], dimension: int, lookup_pool: asyncpg.Pool):
        self.pool = pool
        self.lookup_pool = lookup_pool  # the named lookups' (LOOKUP_CONNECTIONS)
        self.q = queries
        self.dimension = dimension

    @classmethod
    async def open(cls, url: str, *, dimension: int, min_size: int = 1, max_size: int = 10) -> LzgStore:
        """Pool on schema ``lzg``, migrations applied (vector column of ``dimension``), queries loaded;
        and the small pool of the named lookups."""
        migrations = _SQL_DIR / "migrations"
        pool = await open_migrated_pool(url, SCHEMA, migrations, {"dimension": dimension}, min_size=min_size, max_size=max_size)
        try:
            lookup_pool = await create_pool(url, SCHEMA, min_size=1, max_size=LOOKUP_CONNECTIONS, vector=False)
        except BaseException:
            await pool.close()
            raise
        return cls(pool, load_queries(_SQL_DIR / "queries.sql"), dimension, lookup_pool)

    async def close(self) -> None:
        await self.lookup_pool.close()
        await self.pool.close()

    async def check_model(self, configured: ModelStamp) -> None:
        """Record the model on first start; refuse another model or vector length (SPEC §2)."""
        async with self.pool.acquire() as conn:
            async with conn.transaction():
                await conn.execute(
                    self.q["record_model_stamp"], configured.model_id, configured.dimension, configured.recipe
                )
                row = await conn.fetchrow(self.q["model_stamp"])
                column = await conn.fetchval(self.q["vector_column_dimension"])
        assert row is not None
        check_store_model(ModelStamp(row["model_id"], row["dimension"], row["rezept"]), configured)
        check_store_model(ModelStamp(row["model_id"], int(column), row["rezept"]), configured)

    async def model_id(self) -> str:
        row = await self.pool.fetchrow(self.q["model_stamp"])
        return "" if row is None else str(row["model_id"])

    @asynccontextmanager
    async def pair_writer(self, user_id: str, character_id: str) -> AsyncIterator[PairTx]:
        """A transaction holding the pair's write lock until commit or rollback."""
        async with self.pool.acquire() as conn, conn.transaction():
            await self.lock_pair(conn, user_id, character_id)
            yield PairTx(conn, self.q, user_id, character_id)

    async def lock_pair(self, conn: asyncpg.Connection, user_id: str, character_id: str) -> None:
        """The pair's write lock, held by ``conn``'s transaction until it ends (SPEC §5.3)."""
        await conn.execute(self.q["lock_pair"], user_id, character_id)

    @asynccontextmanager
    async def reader(self) -> AsyncIterator[asyncpg.Connection]:
        """A read-only, repeatable-read transaction: one consistent view, no writes possible."""
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            yield conn

    @asynccontextmanager
    async def pair_reader(self, user_id: str, character_id: str) -> AsyncIterator[PairReader]:
        """The queries of one spreading read of the pair, all in one :meth:`reader` transaction."""
        async with self.reader() as conn:
            yield PairReader(conn, self.q, user_id, character_id)

    def pool_reader(self, user_id: str, character_id: str) -> PairReader:
        """The same reads, each on its own pool connection (no shared view)."""
        return PairReader(self.pool, self.q, user_id, character_id)

    def lookup_reader(self, user_id: str, character_id: str) -> PairReader:
        """The same reads on the named lookups' pool (LOOKUP_CONNECTIONS)."""
        return PairReader(self.lookup_pool, self.q, user_id, character_id)

    async def _fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        return list(await self.pool.fetch(self.q[query], *args))

    async def _fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None:
        return await self.pool.fetchrow(self.q[query], *args)

    # --- reads (SPEC §5.8, §5.9, the Get/List RPCs) ---------------------------------------------

    async def node(self, node_id: int, user_id: str, character_id: str) -> StoredNode | None:
        row = await self._fetchrow("node", node_id, user_id, character_id)
        return None if row is None else StoredNode.from_row(row)

    async def nodes(self, user_id: str, character_id: str, include_inactive: bool, limit: int) -> list[StoredNode]:
        return [StoredNode.from_row(r) for r in await self._fetch("nodes", user_id, character_id, include_inactive, limit)]

    async def edges_of_node(self, node_id: int, limit: int) -> list[StoredEdge]:
        return [StoredEdge.from_row(r) for r in await self._fetch("edges_of_node", node_id, limit)]

    async def edges_of_pair(self, user_id: str, character_id: str, limit: int) -> list[StoredEdge]:
        return [StoredEdge.from_row(r) for r in await self._fetch("edges_of_pair", user_id, character_id, limit)]

    async def pair_stats(self, user_id: str, character_id: str) -> PairStats:
        row = await self._fetchrow("pair_stats", user_id, character_id)
        assert row is not None
        return PairStats.from_row(row)

    async def node_ids_of_pair(self, node_ids: Sequence[int], user_id: str, character_id: str) -> set[int]:
        """The ids among ``node_ids`` that are nodes of the pair."""
        return {r["id"] for r in await self._fetch("node_ids_of_pair", list(node_ids), user_id, character_id)}

    async def served_vectors(
        self, node_ids: Sequence[int], user_id: str, character_id: str
    ) -> dict[int, npt.NDArray[np.float32] | None]:
        """The pair's nodes among ``node_ids`` with their vectors, None where a node has none (SPEC §5.6)."""
        rows = await self._fetch("served_nodes", list(node_ids), user_id, character_id)
        return {r["id"]: None if r["embedding"] is None else r["embedding"].to_numpy() for r in rows}

    async def entities(self, user_id: str, character_id: str, ids: Sequence[int]) -> list[Entity]:
        """The pair's entities, only ``ids`` unless empty."""
        return [entity_from_row(r) for r in await self._fetch("entities", user_id, character_id, list(ids))]

    async def timelines(
        self,
        user_id: str,
        character_id: str,
        ids: Sequence[int],
        zeitpunkt: datetime | None,
        praezision: str | None,
    ) -> list[Timeline]:
        """The pair's timelines, only ``ids`` unless empty, only those at ``zeitpunkt`` unless None."""
        rows = await self._fetch("timelines", user_id, character_id, list(ids), zeitpunkt, praezision)
        return [timeline_from_row(r) for r in rows]

    async def insert_timeline(
        self,
        user_id: str,
        character_id: str,
        zeitpunkt: datetime,
        praezision: str,
        titel: str,
        themen: Sequence[str],
    ) -> Timeline:
        row = await self._fetchrow(
            "insert_timeline", user_id, character_id, zeitpunkt, praezision, titel, list(themen)
        )
        assert row is not None
        return timeline_from_row(row)

    async def reinforce_used(
        self,
        user_id: str,
        character_id: str,
        node_ids: Sequence[int],
        boost: float,
        as_of: datetime,
        embedding_schwelle: float,
        turn_id: str = "",
    ) -> UsageWrite:
        """SPEC §5.6, §5.5 for ``node_ids`` in one call under the pair lock, once per ``turn_id`` (migrations 004, 014)."""
        args = (user_id, character_id, turn_id, list(node_ids), boost, as_of, embedding_schwelle)
        row = await self.pool.fetchrow(self.q["reinforce_used"], *args)
        assert row is not None
        return UsageWrite.from_row(row)

    async def expire_usage_marks(self, before: datetime) -> int:
        """Deletes the turns' usage marks made before ``before`` (migration 014); how many went."""
        return int(await self.pool.fetchval(self.q["expire_usage_marks"], before))

    async def graph_size(self) -> dict[str, float]:
        """Nodes and edges of all pairs (live-row estimates), for the metrics."""
        row = await self.pool.fetchrow(self.q["graph_size"])
        assert row is not None
        return {"novaberg.lzg.nodes": float(row["nodes"]), "novaberg.lzg.edges": float(row["edges"])}

    async def run_decay(
        self, as_of: datetime, rate: float, minimum: float, pairs: Sequence[tuple[str, str]] = ()
    ) -> tuple[int, int]:
        """SPEC §5.7 for every pair with an active node, or only ``pairs``; returns (decayed, deactivated).

        Pair batches, each one statement taking the pairs' write locks without waiting (migration 013);
        a pair a writer held is decayed after them, alone: never a deadlock, never a writer held long.
        """
        if not pairs:
            pairs = [(r["user_id"], r["character_id"]) for r in await self._fetch("active_pairs")]
        decayed = deactivated = 0
        busy: list[tuple[str, str]] = []
        for start in range(0, len(pairs), DECAY_BATCH_PAIRS):
            batch = pairs[start : start + DECAY_BATCH_PAIRS]
            row = await self._fetchrow("decay_pairs", as_of, rate, minimum, [p[0] for p in batch], [p[1] for p in batch])
            assert row is not None
            decayed, deactivated = decayed + int(row["decayed"]), deactivated + int(row["deactivated"])
            busy.extend(zip(row["busy_users"], row["busy_characters"], strict=True))
        for user_id, character_id in busy:
            async with self.pair_writer(user_id, character_id) as tx:
                row = await tx.conn.fetchrow(self.q["decay_pairs"], as_of, rate, minimum, [user_id], [character_id])
            assert row is not None
            decayed, deactivated = decayed + int(row["decayed"]), deactivated + int(row["deactivated"])
        return decayed, deactivated
