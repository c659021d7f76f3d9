"""All PostgreSQL I/O of the LZG service (SPEC §5): pool, migrations, model stamp, named queries.

Writes of one pair go through :meth:`LzgStore.pair_writer`, a transaction holding the pair's
advisory lock, so promotions, reinforcements and Trigger 3 recomputes of a pair are serialised
while other pairs run in parallel (SPEC §5.3). Reads use :meth:`LzgStore.reader`, a read-only
repeatable-read transaction: a spreading read sees one consistent graph and can write nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
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
from novaberg_core.timeutil import shifted
from services.lzg.layers import LZG_TIMELINE_TOLERANZ, Praezision, TimelineRef, timeline_tiefe
from services.lzg.read_store import PairReader
from services.lzg.rows import (
    EDGE_COLUMNS,
    EdgeInsert,
    Entity,
    LayerNode,
    NewNode,
    PairStats,
    StoredEdge,
    StoredNode,
    Timeline,
    UsageWrite,
    entity_from_row,
    timeline_from_row,
    timeline_ref,
)

# The rows it writes (services/lzg/rows.py) are offered here too, for the store's callers.
__all__ = ["EDGE_COLUMNS", "SCHEMA", "EdgeInsert", "LzgStore", "NewNode", "PairTx", "UsageWrite"]

SCHEMA = "lzg"
"""PostgreSQL schema holding every LZG table."""
_SQL_DIR = Path(__file__).resolve().parent / "sql"

LOOKUP_CONNECTIONS = 4
"""The named lookups' own pool: a read awaits them holding a main-pool connection, so they must never
wait for that pool (a burst of reads hung forever, docs/decisions.md "Pool connections …")."""

DECAY_BATCH_PAIRS = 32
"""Pairs per decay statement (their write locks held, migration 013): a writer waits briefly, the lock
table never fills, and many small pairs are not a round trip each."""

# Days around a timeline that surely hold every other timeline within tolerance of it (one unit
# of slack for calendar units: a month may be 31 days, a distance counts calendar boundaries).
_UNIT_DAYS = {
    Praezision.MINUTE: 1,
    Praezision.STUNDE: 1,
    Praezision.TAG: 1,
    Praezision.WOCHE: 7,
    Praezision.MONAT: 31,
    Praezision.QUARTAL: 92,
    Praezision.JAHR: 366,
}
_WINDOW_DAYS = {p: (LZG_TIMELINE_TOLERANZ[p] + 1) * _UNIT_DAYS[p] for p in Praezision}


def _node_pairs(edges: Iterable[Sequence[Any]]) -> set[tuple[int, int]]:
    """The unordered node pairs (smaller id first) of directed edges given as (a, b, …)."""
    return {(min(e[0], e[1]), max(e[0], e[1])) for e in edges}


def _rows(status: str) -> int:
    """The row count of a command status such as ``UPDATE 3``."""
    return int(status.split()[-1])


class PairTx:
    """A transaction holding one pair's write lock; every method stays inside that pair."""

    def __init__(self, conn: asyncpg.Connection, queries: Mapping[str, str], user_id: str, character_id: str):
        self.conn = conn
        self.q = queries
        self.user_id = user_id
        self.character_id = character_id

    @property
    def pair(self) -> tuple[str, str]:
        return self.user_id, self.character_id

    # --- promotion --------------------------------------------------------------------------

    async def node_id_by_quell_key(self, kzg_key: str) -> int | None:
        """The node made from the KZG entry ``kzg_key``, if any (an entry is promoted once)."""
        return await self.conn.fetchval(self.q["node_by_quell_key"], kzg_key)

    async def known_entity_ids(self, ids: Sequence[int]) -> set[int]:
        if not ids:
            return set()
        rows = await self.conn.fetch(self.q["known_entity_ids"], *self.pair, list(ids))
        return {r["id"] for r in rows}

    async def timeline_ref(self, timeline_id: int) -> TimelineRef | None:
        row = await self.conn.fetchrow(self.q["timeline_ref"], *self.pair, timeline_id)
        return None if row is None else timeline_ref(row["zeitpunkt"], row["praezision"])

    async def timelines_of_precision(self, ref: TimelineRef) -> dict[int, TimelineRef]:
        """The pair's timelines that lie within tolerance of ``ref`` (same precision)."""
        margin = _WINDOW_DAYS[ref.praezision]
        rows = await self.conn.fetch(
            self.q["timelines_of_precision"],
            *self.pair,
            ref.praezision.value,
            shifted(ref.zeitpunkt, -margin),
            shifted(ref.zeitpunkt, margin),
        )
        near = {r["id"]: TimelineRef(r["zeitpunkt"], ref.praezision) for r in rows}
        return {tid: other for tid, other in near.items() if timeline_tiefe(ref, other) is not None}

    async def node_activity(
        self, node_id: int, as_of: datetime, rate: float, minimum: float
    ) -> tuple[bool, float]:
        """Whether the node is a memory at ``as_of`` as the reads judge it, and its ``gewicht_absolut``."""
        row = await self.conn.fetchrow(self.q["node_activity"], node_id, *self.pair, as_of, rate, minimum)
        assert row is not None, f"node {node_id} vanished inside its pair's lock"
        return bool(row["aktiv"]), float(row["gewicht_absolut"])

    async def half_reactivate(self, node_id: int, gewicht_decay: float, as_of: datetime) -> bool:
        status = await self.conn.execute(self.q["half_reactivate"], node_id, gewicht_decay, as_of)
        return status.endswith(" 1")

    async def promotion_candidates(
        self,
        node_ids: Sequence[int],
        themen: Sequence[str],
        entitaet_ids: Sequence[int],
        timeline_ids: Sequence[int],
    ) -> list[LayerNode]:
        rows = await self.conn.fetch(
            self.q["promotion_candidates"],
            *self.pair,
            list(node_ids),
            list(themen),
            list(entitaet_ids),
            list(timeline_ids),
        )
        return [LayerNode.from_row(r) for r in rows]

    async def insert_node(self, node: NewNode) -> int:
        """The node as new (promotion) or as stored (import): see :meth:`NewNode.record`."""
        return int(await self.conn.fetchval(self.q["insert_node"], *node.record()))

    async def insert_edges(self, edges: Sequence[EdgeInsert]) -> int:
        """Bulk insert with binary COPY (Trigger 1), then the pairs' rank rows (migration 003)."""
        return await self.insert_edge_records([e.record() for e in edges])

    async def insert_edge_records(self, records: Sequence[tuple[Any, ...]]) -> int:
        """Bulk insert of edge rows in ``EDGE_COLUMNS`` order with binary COPY, then the pairs' rank rows."""
        if not records:
            return 0
        await self.conn.copy_records_to_table(
            "lzg_kanten", schema_name=SCHEMA, columns=EDGE_COLUMNS, records=records
        )
        await self._rank_rows("rank_rows_insert", _node_pairs(records))
        return len(records)

    async def insert_bridge(
        self,
        *,
        turn_id: str,
        kzg_key: str,
        node_id: int,
        ausgang: str,
        ausloeser_turn_id: str,
        as_of: datetime,
    ) -> None:
        await self.conn.execute(
            self.q["insert_bridge"], turn_id, kzg_key, node_id, *self.pair, ausgang, ausloeser_turn_id, as_of
        )

    # --- reinforcement and Trigger 2 -----------------------------------------------------------

    async def trigger2(self, node_ids: Sequence[int], embedding_schwelle: float) -> tuple[int, list[int]]:
        """Trigger 2 for ``node_ids`` as one statement (migration 004); (edges updated, skipped ids)."""
        row = await self.conn.fetchrow(self.q["trigger2"], list(node_ids), embedding_schwelle)
        assert row is not None
        return int(row["aktualisiert"]), list(row["uebersprungen"])

    # --- Trigger 3 ---------------------------------------------------------------------------

    async def _node_ids(self, query: str, *args: Any) -> list[int]:
        rows = await self.conn.fetch(self.q[query], *self.pair, *args)
        return [r["id"] for r in rows]

    async def _edge_pairs(self, query: str, *args: Any) -> set[tuple[int, int]]:
        rows = await self.conn.fetch(self.q[query], *args)
        return {(r["x"], r["y"]) for r in rows}

    async def node(self, node_id: int) -> StoredNode | None:
        row = await self.conn.fetchrow(self.q["node"], node_id, *self.pair)
        return None if row is None else StoredNode.from_row(row)

    async def _entity(self, query: str, *args: Any) -> Entity | None:
        row = await self.conn.fetchrow(self.q[query], *args)
        return None if row is None else entity_from_row(row)

    async def entity(self, entity_id: int) -> Entity | None:
        return await self._entity("entity", entity_id, *self.pair)

    async def entity_by_name(self, name: str) -> Entity | None:
        return await self._entity("entity_by_name", *self.pair, name)

    async def insert_entity(self, name: str, typ: str, aliases: Sequence[str]) -> Entity | None:
        """The new entity, or None when the pair already has one of that name."""
        return await self._entity("insert_entity", *self.pair, name, typ, list(aliases))

    async def update_entity(
        self, entity_id: int, name: str, typ: str, aliases: Sequence[str]
    ) -> Entity | None:
        return await self._entity("update_entity", entity_id, *self.pair, name, typ, list(aliases))

    async def delete_entity(self, entity_id: int) -> None:
        await self.conn.execute(self.q["delete_entity"], entity_id, *self.pair)

    async def replace_entity_in_nodes(self, source_id: int, target_id: int) -> int:
        """Nodes rewritten: ``source_id`` replaced by ``target_id`` in their entity ids."""
        return _rows(
            await self.conn.execute(self.q["replace_entity_in_nodes"], *self.pair, source_id, target_id)
        )

    async def remove_entity_from_nodes(self, entity_id: int) -> int:
        """Nodes rewritten: ``entity_id`` removed from their entity ids."""
        return _rows(await self.conn.execute(self.q["remove_entity_from_nodes"], *self.pair, entity_id))

    async def timeline(self, timeline_id: int) -> Timeline | None:
        row = await self.conn.fetchrow(self.q["timeline"], timeline_id, *self.pair)
        return None if row is None else timeline_from_row(row)

    async def update_timeline(
        self, timeline_id: int, zeitpunkt: datetime, praezision: str, titel: str, themen: Sequence[str]
    ) -> Timeline | None:
        row = await self.conn.fetchrow(
            self.q["update_timeline"], timeline_id, *self.pair, zeitpunkt, praezision, titel, list(themen)
        )
        return None if row is None else timeline_from_row(row)

    async def delete_timeline(self, timeline_id: int) -> None:
        await self.conn.execute(self.q["delete_timeline"], timeline_id, *self.pair)

    async def nodes_with_entity(self, entity_id: int) -> list[int]:
        return await self._node_ids("nodes_with_entity", entity_id)

    async def nodes_with_timeline(self, timeline_id: int) -> list[int]:
        return await self._node_ids("nodes_with_timeline", timeline_id)

    async def nodes_with_timeline_ids(self, timeline_ids: Sequence[int]) -> list[int]:
        return await self._node_ids("nodes_with_timeline_ids", list(timeline_ids))

    async def edge_pairs_with_entity(self, entity_id: int) -> set[tuple[int, int]]:
        """Node pairs (x < y) whose edges carry ``entity_id`` as a shared entity."""
        return await self._edge_pairs("edge_pairs_with_entity", *self.pair, entity_id)

    async def edge_pairs_of_nodes(self, node_ids: Sequence[int]) -> set[tuple[int, int]]:
        """Node pairs (x < y) of every edge from or to ``node_ids``."""
        return await self._edge_pairs("edge_pairs_of_nodes", list(node_ids))

    async def nodes_for_layers(self, node_ids: Iterable[int]) -> dict[int, LayerNode]:
        """The pair's nodes among ``node_ids`` by id, with their timelines and vectors."""
        rows = await self.conn.fetch(self.q["nodes_for_layers"], list(node_ids), *self.pair)
        return {r["id"]: LayerNode.from_row(r) for r in rows}

    async def frozen_cosines_among(self, node_ids: Iterable[int]) -> list[tuple[int, int, float | None]]:
        """Every edge between two of ``node_ids`` as (from, to, its frozen ``embedding_cosine_initial``)."""
        rows = await self.conn.fetch(self.q["edges_among"], list(node_ids))
        return [(r["knoten_a_id"], r["knoten_b_id"], r["embedding_cosine_initial"]) for r in rows]

    async def upsert_edges(self, edges: Sequence[EdgeInsert]) -> int:
        """Insert or rewrite directed edges, all in one pipelined round trip; returns how many were new."""
        if not edges:
            return 0
        records = [edge.record() for edge in edges]
        pairs = _node_pairs(records)
        await self._rank_rows("rank_rows_delete", pairs)
        rows = await self.conn.fetchmany(self.q["upsert_edge"], records)
        await self._rank_rows("rank_rows_insert", pairs)
        return sum(bool(row["inserted"]) for row in rows)

    async def delete_edges_between(self, pairs: Sequence[tuple[int, int]]) -> int:
        """Both directed edges of each node pair, with the pair's rank row."""
        if not pairs:
            return 0
        await self._rank_rows("rank_rows_delete", _node_pairs(pairs))
        status = await self.conn.execute(
            self.q["delete_edges_between"], [p[0] for p in pairs], [p[1] for p in pairs]
        )
        return int(status.split()[-1])

    async def _rank_rows(self, query: str, pairs: Iterable[tuple[int, int]]) -> None:
        """Insert or delete the rank rows of node pairs (x < y) — derived from lzg_kanten (migration 003)."""
        ordered = sorted(pairs)
        if ordered:
            await self.conn.execute(self.q[query], [x for x, _ in ordered], [y for _, y in ordered])


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
