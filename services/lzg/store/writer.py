"""The writes of one pair (SPEC §5.3–§5.5): :class:`PairTx`, a transaction holding the pair's advisory
lock, opened by :meth:`services.lzg.store.LzgStore.pair_writer`. Promotions, usage reinforcements and
the registry's Trigger 3 recomputes of a pair run one after the other; other pairs run in parallel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from novaberg_core.timeutil import shifted
from services.lzg.layers import LZG_TIMELINE_TOLERANZ, Praezision, TimelineRef, timeline_tiefe
from services.lzg.rows import (
    EDGE_COLUMNS,
    SCHEMA,
    EdgeInsert,
    Entity,
    LayerNode,
    NewNode,
    StoredNode,
    Timeline,
    entity_from_row,
    timeline_from_row,
    timeline_ref,
)

__all__ = ["PairTx"]

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
