"""The queries of one spreading read (SPEC §5.8 with §11), named here and nowhere else.

A :class:`PairReader` runs in the read-only, repeatable-read transaction of
:meth:`services.lzg.store.LzgStore.pair_reader` (one consistent graph for the whole read) and
returns the read's domain types: node ids, :class:`NodeDetails`, the :class:`PoolItem` of a shell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from services.lzg.spreading import NodeDetails, PfadSchritt, PoolItem

__all__ = ["PairReader", "node_details"]


def node_details(row: Mapping[str, Any]) -> NodeDetails:
    """What a memory shows of a node row (``recall_details`` and ``shell`` queries)."""
    return NodeDetails(
        inhalt=row["inhalt"],
        themen=tuple(row["themen"] or ()),
        entitaet_ids=tuple(row["entitaet_ids"] or ()),
        emotion=row["emotion"],
        erstellt_am=row["erstellt_am"],
        gewicht_decay=float(row["gewicht_decay"]),
        beobachter=row["beobachter"],
        sprecher=row["sprecher"],
        quell_turn_id=row["quell_turn_id"],
        kzg_quell_key=row["kzg_quell_key"],
        kzg_erstellt_am=row["kzg_erstellt_am"],
        antwort_auf=row["antwort_auf"],
    )


class PairReader:
    """One pair's reads in one connection (a reader transaction, or the pool for a single read)."""

    __slots__ = ("character_id", "conn", "q", "user_id")

    def __init__(
        self,
        conn: asyncpg.Connection | asyncpg.Pool,
        queries: Mapping[str, str],
        user_id: str,
        character_id: str,
    ) -> None:
        self.conn = conn
        self.q = queries
        self.user_id = user_id
        self.character_id = character_id

    async def entity_candidates(self, entity_ids: Sequence[int]) -> list[int]:
        """The pair's memories carrying one of ``entity_ids``."""
        rows = await self.conn.fetch(
            self.q["entity_candidates"], self.user_id, self.character_id, list(entity_ids)
        )
        return [int(r["id"]) for r in rows]

    async def timeline_candidates(
        self, firsts: Sequence[datetime], lasts: Sequence[datetime], limit: int
    ) -> list[int]:
        """The pair's memories within the windows (first and last instant, ``novaberg_core.timeline.timeline_window``)
        around the dates a question names, nearest to a window's middle first."""
        rows = await self.conn.fetch(
            self.q["timeline_candidates"],
            self.user_id,
            self.character_id,
            list(firsts),
            list(lasts),
            limit,
        )
        return [int(r["id"]) for r in rows]

    async def details(
        self, ids: Sequence[int], as_of: datetime, rate: float, minimum: float
    ) -> dict[int, NodeDetails]:
        """The memories among ``ids`` as of ``as_of`` (made by then, active with their weight then)."""
        if not ids:
            return {}
        rows = await self.conn.fetch(
            self.q["recall_details"], list(ids), self.user_id, self.character_id, as_of, rate, minimum
        )
        return {int(row["id"]): node_details(row) for row in rows}

    async def shell(
        self, frontier: Sequence[PoolItem], schale: int, k: int, as_of: datetime, rate: float, minimum: float
    ) -> list[PoolItem]:
        """Shell ``schale``: the top ``k`` active edges out of each frontier item, its predecessor
        excluded (syn §8.2.3), each reached node with the path that reached it."""
        rows = await self.conn.fetch(
            self.q["shell"],
            list(range(len(frontier))),
            [item.knoten_id for item in frontier],
            [item.predecessor or 0 for item in frontier],
            k,
            self.user_id,
            self.character_id,
            as_of,
            rate,
            minimum,
        )
        items: list[PoolItem] = []
        for row in rows:
            source = frontier[row["ord"]]
            step = PfadSchritt(
                von_knoten_id=source.knoten_id,
                kante_id=row["kante_id"],
                verbindungs_gruende=tuple(row["verbindungs_gruende"]),
                geteilte_entitaet_ids=tuple(row["geteilte_entitaet_ids"]),
                geteilte_themen=tuple(row["geteilte_themen"]),
            )
            items.append(
                PoolItem(
                    knoten_id=row["knoten_b_id"],
                    schale=schale,
                    details=node_details(row),
                    predecessor=source.knoten_id,
                    pfad=(*source.pfad, step),
                )
            )
        return items

    async def entity_names(self, ids: Sequence[int]) -> dict[int, str]:
        """The names of the pair's entities ``ids``."""
        rows = await self.conn.fetch(self.q["entity_names"], self.user_id, self.character_id, list(ids))
        return {r["id"]: r["name"] for r in rows}
