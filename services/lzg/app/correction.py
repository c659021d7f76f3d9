"""CorrectNode (SPEC §5): a node's content and vector rewritten, its edges formed again by Trigger 1.

Steps, under the pair's write lock: the node (by id or KZG key) → the new content's vector → the
row rewritten → its edges deleted → every cache re-reads the pair (the vector changed) → Trigger 1
exactly as at promotion (``app.promotion.trigger1_candidates`` / ``trigger1_edges``, SPEC §5.4),
the node itself left out of its candidates → one log row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from novaberg_core.embedding import lzg_embed_text
from novaberg_core.errors import InvalidArgument, NotFound
from novaberg_core.model import Pair
from novaberg_core.pipeline_log import LogScope
from services.lzg.app.context import NO_TURN, UseCase
from services.lzg.app.promotion import trigger1_candidates, trigger1_edges
from services.lzg.records import rights_write
from services.lzg.rows import StoredNode
from services.lzg.store.rights import (
    correct_node,
    move_generation,
    node_for_correction,
    pair_key,
)

__all__ = ["CorrectResult", "Correction"]


@dataclass(frozen=True)
class CorrectResult:
    node: StoredNode
    previous_inhalt: str
    edges_removed: int
    edges_created: int


class Correction(UseCase):
    """CorrectNode over the shared context."""

    async def correct(
        self,
        pair: Pair,
        *,
        node_id: int,
        kzg_quell_key: str,
        inhalt: str,
        as_of: datetime,
        turn: LogScope = NO_TURN,
    ) -> CorrectResult:
        """New content and vector; the node's edges deleted and formed again by Trigger 1 (SPEC §5.4)."""
        pair.check()
        user_id, character_id = pair.user_id, pair.character_id
        if not inhalt.strip():
            raise InvalidArgument("inhalt must not be empty")
        if node_id <= 0 and not kzg_quell_key:
            raise InvalidArgument("name the node by node_id or kzg_quell_key")
        async with self.store.pair_writer(user_id, character_id) as tx:
            stored = await node_for_correction(tx.conn, user_id, character_id, node_id, kzg_quell_key)
            if stored is None:
                what = f"node {node_id}" if node_id > 0 else f"the node of {kzg_quell_key}"
                raise NotFound(f"{what} is not a node of this pair")
            vector = await self.provider.embed_one(lzg_embed_text(inhalt, stored.sprecher))
            target = stored.id
            await correct_node(tx.conn, target, user_id, character_id, inhalt, vector)
            removed = await tx.delete_edges_between(sorted(await tx.edge_pairs_of_nodes([target])))
            # The vector changed: every cache re-reads the pair (this one in this transaction).
            await move_generation(tx.conn, [await pair_key(tx.conn, user_id, character_id)])
            snapshot = await self.cache.snapshot(tx.conn, user_id, character_id)
            cosines = snapshot.cosines(vector)
            # Trigger 1's input: the stored weights and layers with the new content, edges dated as_of.
            node = replace(stored, inhalt=inhalt, embedding=vector, erstellt_am=as_of)
            timeline = stored.timeline
            # Trigger 1 exactly as at promotion, the node itself left out of its candidates.
            schwelle = self.profile.embedding_layer
            candidates, near = await trigger1_candidates(tx, snapshot, cosines, node, timeline, schwelle)
            candidates = [c for c in candidates if c.id != target]
            edges = trigger1_edges(target, node, timeline, candidates, near, snapshot, cosines, schwelle)
            created = await tx.insert_edges(edges)
            updated = await tx.node(target)
        assert updated is not None
        where = LogScope.of_pair(turn.turn_id or "korrektur", pair, turn.span_id)
        rights_write(
            self.log, **where, operation="correct", tabelle="lzg_knoten",
            knoten_id=target, kanten_entfernt=removed, kanten_neu=created,
        )  # fmt: skip
        return CorrectResult(updated, stored.inhalt, removed, created)
