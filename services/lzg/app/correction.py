"""CorrectNode (SPEC §5): a node's content and vector rewritten, its edges formed again by Trigger 1.

Steps, under the pair's write lock: the node (by id or KZG key) → the new content's vector → the
row rewritten → its edges deleted → every cache re-reads the pair (the vector changed) → Trigger 1
exactly as at promotion (``app.promotion.trigger1_candidates`` / ``trigger1_edges``, SPEC §5.4),
the node itself left out of its candidates → one log row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from novaberg_core.embedding import lzg_embed_text
from novaberg_core.errors import InvalidArgument, NotFound
from services.lzg.app.context import LzgContext
from services.lzg.app.promotion import trigger1_candidates, trigger1_edges
from services.lzg.rights_store import (
    RIGHTS_LOG_NODE,
    correct_node,
    move_generation,
    node_for_correction,
    pair_key,
)
from services.lzg.rows import NewNode
from services.lzg.store import timeline_ref
from services.lzg.types import check_pair

__all__ = ["CorrectResult", "Correction"]


@dataclass(frozen=True)
class CorrectResult:
    node: asyncpg.Record
    previous_inhalt: str
    edges_removed: int
    edges_created: int


class Correction:
    """CorrectNode over the shared context."""

    def __init__(self, ctx: LzgContext) -> None:
        self.store = ctx.store
        self.provider = ctx.provider
        self.profile = ctx.profile
        self.log = ctx.log
        self.cache = ctx.cache

    async def correct(
        self,
        user_id: str,
        character_id: str,
        *,
        node_id: int,
        kzg_quell_key: str,
        inhalt: str,
        as_of: datetime,
        turn_id: str = "",
        span_id: str | None = None,
    ) -> CorrectResult:
        """New content and vector; the node's edges deleted and formed again by Trigger 1 (SPEC §5.4)."""
        check_pair(user_id, character_id)
        if not inhalt.strip():
            raise InvalidArgument("inhalt must not be empty")
        if node_id <= 0 and not kzg_quell_key:
            raise InvalidArgument("name the node by node_id or kzg_quell_key")
        async with self.store.pair_writer(user_id, character_id) as tx:
            row = await node_for_correction(tx.conn, user_id, character_id, node_id, kzg_quell_key)
            if row is None:
                what = f"node {node_id}" if node_id > 0 else f"the node of {kzg_quell_key}"
                raise NotFound(f"{what} is not a node of this pair")
            vector = await self.provider.embed_one(lzg_embed_text(inhalt, row["sprecher"]))
            target = int(row["id"])
            await correct_node(tx.conn, target, user_id, character_id, inhalt, vector)
            removed = await tx.delete_edges_between(sorted(await tx.edge_pairs_of_nodes([target])))
            # The vector changed: every cache re-reads the pair (this one in this transaction).
            await move_generation(tx.conn, [await pair_key(tx.conn, user_id, character_id)])
            snapshot = await self.cache.snapshot(tx.conn, user_id, character_id)
            cosines = snapshot.cosines(vector)
            node = _as_new_node(row, inhalt, vector, as_of)
            timeline = timeline_ref(row["zeitpunkt"], row["praezision"])
            # Trigger 1 exactly as at promotion, the node itself left out of its candidates.
            schwelle = self.profile.embedding_layer
            candidates, near = await trigger1_candidates(tx, snapshot, cosines, node, timeline, schwelle)
            candidates = [c for c in candidates if c["id"] != target]
            edges = trigger1_edges(target, node, timeline, candidates, near, snapshot, cosines, schwelle)
            created = await tx.insert_edges(edges)
            updated = await tx.node(target)
        assert updated is not None
        self.log.db_write(
            turn_id=turn_id or "korrektur",
            node=RIGHTS_LOG_NODE,
            tabelle="lzg_knoten",
            operation="correct",
            knoten_id=target,
            kanten_entfernt=removed,
            kanten_neu=created,
            span_id=span_id,
            user_id=user_id,
            character_id=character_id,
        )
        return CorrectResult(updated, str(row["inhalt"]), removed, created)


def _as_new_node(row: Mapping[str, Any], inhalt: str, vector: Any, as_of: datetime) -> NewNode:
    """A stored node as Trigger 1's input: its weight, layers and the new content (edges dated ``as_of``)."""
    return NewNode(
        kzg_quell_key=row["kzg_quell_key"],
        user_id=row["user_id"],
        character_id=row["character_id"],
        beobachter=row["beobachter"],
        inhalt=inhalt,
        embedding=vector,
        dimension=row["dimension"],
        gewicht_roh=row["gewicht_roh"],
        gewicht_absolut=row["gewicht_absolut"],
        gewicht_decay=row["gewicht_decay"],
        haeufigkeit=row["haeufigkeit"],
        erstellt_am=as_of,
        kzg_erstellt_am=row["kzg_erstellt_am"],
        themen=list(row["themen"]),
        gedaechtnistyp=row["gedaechtnistyp"],
        entitaet_ids=list(row["entitaet_ids"]),
        timeline_id=row["timeline_id"],
        emotion=row["emotion"],
        arousal=row["arousal"],
        emotions_vektor=row["emotions_vektor"],
        intentionen=[],
        modus=row["modus"],
        sprach_stil=row["sprach_stil"],
        beziehungs_dynamik=row["beziehungs_dynamik"],
        tone=row["tone"],
    )
