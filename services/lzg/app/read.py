"""The spreading read (SPEC §5.8 with §11) and the memory block (SPEC §5.9); reads only.

Steps: validate (unknown readers, windows, the query) → the query vector → the lookups of the
entities and dates the question names, started on their own connections → in one consistent view:
the pair's anchors and recall candidates (``reading.rank_candidates``) → the shells along the
strongest edges (``spreading``) → dedup, sort, top 3 → the memory blocks (``render``) → the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from novaberg_core.embedding import query_embed_text
from novaberg_core.errors import InvalidArgument
from novaberg_core.model import Pair, check_vector
from novaberg_core.pipeline_log import LogScope
from novaberg_core.pipeline_log.nodes import NODE_ENRICHER
from novaberg_core.timeutil import utc_now
from services.lzg.app.context import NO_TURN, UseCase
from services.lzg.layers import parse_praezision
from services.lzg.reading import NamedLookups, RecallQuery, rank_candidates, recall_list
from services.lzg.render import reader_names, render_memory_block
from services.lzg.spreading import (
    K_PRO_SCHALE,
    Erinnerung,
    LzgResonanz,
    PoolItem,
    dedup_pool,
    sector_of,
    select_top,
)
from services.lzg.store.reader import PairReader
from services.lzg.types import SpreadingResult
from services.lzg.weights import LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT

__all__ = ["Read"]


class Read(UseCase):
    """Spreading read, memory block and the served-ids check over the shared context."""

    def query_vector(self, values: Sequence[float]) -> npt.NDArray[np.float32]:
        """A caller's query vector checked against the model and scaled to norm 1."""
        vector = check_vector(values, self.provider.dimension, "query_vector", self.provider.model_id).astype(np.float64)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            raise InvalidArgument("query_vector is all zeros")
        return (vector / norm).astype(np.float32)

    async def spreading_read(
        self,
        pair: Pair,
        *,
        query_values: Sequence[float] | None,
        query_text: str | None,
        cluster: str,
        nova_emotion: str,
        turn: LogScope = NO_TURN,
        readers: Sequence[str] = (),
        user_name: str = "",
        character_name: str = "",
        as_of: datetime | None = None,
        lexical_text: str = "",
        sprache: str = "",
        question_entity_ids: Sequence[int] = (),
        zeitfenster: Sequence[tuple[datetime, str]] = (),
        recall_k: int = 0,
    ) -> SpreadingResult:
        """Hybrid anchors, shells, dedup, sort, top 3 (SPEC §5.8 with §11), and the recall candidates; reads only.

        The read happens as of ``as_of`` (None → now): memories made later are not seen, weights
        and activity are those at that time. With ``readers``, the memory block of each (SPEC
        §5.9) is rendered from the same consistent view, the entity names read once for all. The
        read is logged when ``turn`` names a turn.
        """
        pair.check()
        for reader in readers:  # an unknown reader fails before anything is read (SPEC §10)
            reader_names(reader)
        windows = tuple((moment, parse_praezision(p, "zeitfenster.praezision")) for moment, p in zeitfenster)
        canonical = self.clusters.canonical(cluster)
        hops = self.clusters.enricher_spruenge(canonical)
        if query_values is not None:
            vector = self.query_vector(query_values)
        elif query_text is not None and query_text.strip():
            vector = await self.provider.embed_one(query_embed_text(query_text))
        else:
            raise InvalidArgument(
                "one of query_vector or query_text is required (query_text must not be blank)"
            )
        moment = as_of or utc_now()
        query = RecallQuery(
            vector=vector, as_of=moment, lexical_text=lexical_text, sprache=sprache,
            entity_ids=tuple(dict.fromkeys(question_entity_ids)), zeitfenster=windows, recall_k=recall_k,
        )  # fmt: skip

        # The entities and dates the question names are looked up while the transaction opens.
        named = NamedLookups.start(self.store.lookup_reader(pair.user_id, pair.character_id), query)
        try:
            async with self.store.pair_reader(pair.user_id, pair.character_id) as graph:
                snapshot = await self.cache.snapshot(graph.conn, pair.user_id, pair.character_id)
                candidates = await rank_candidates(graph, snapshot, query, self.profile.anchor, named)
                anchors = candidates.anchors
                pool: list[PoolItem] = list(anchors)
                frontier = anchors
                for schale in range(1, hops + 1):
                    if not frontier:
                        break
                    frontier = await graph.shell(
                        frontier,
                        schale,
                        K_PRO_SCHALE[schale],
                        moment,
                        LZG_KNOTEN_DECAY_RATE,
                        LZG_KNOTEN_MIN_GEWICHT,
                    )
                    pool.extend(frontier)
                top = select_top(pool, nova_emotion)
                names = await _entity_names(graph, top) if readers else {}
        finally:
            named.cancel()
        blocks = {
            reader: render_memory_block(
                top, reader, names, user_name=user_name, character_name=character_name
            )
            for reader in readers
        }
        sektor = sector_of(nova_emotion)
        resonanz = LzgResonanz(
            anker_anzahl=len(anchors),
            sprung_tiefe=hops,
            cluster=canonical,
            nova_sektor=sektor or "neutral",
            erinnerungen=tuple(top),
        )
        pool_size = len(dedup_pool(pool))
        recall = recall_list(candidates, pool, recall_k)
        if turn.turn_id:
            self.log.db_read(
                **LogScope.of_pair(turn.turn_id, pair, turn.span_id, as_of),
                node=NODE_ENRICHER,
                tabelle="lzg_knoten",
                treffer=len(top),
                anker=len(anchors),
                pool=pool_size,
                cluster=canonical,
                sprung_tiefe=hops,
                lzg_resonanz_ids=[e.knoten_id for e in top],
                quellen={source: len(ids) for source, ids in candidates.lists.items()},
                recall_ids=[r.knoten_id for r in recall],
            )
        return SpreadingResult(resonanz, pool_size, blocks, recall, candidates.query_terms)

    # ================================================================ memory block (SPEC §5.9)

    async def render(
        self,
        pair: Pair,
        erinnerungen: Sequence[Erinnerung],
        reader: str,
        *,
        user_name: str = "",
        character_name: str = "",
    ) -> str:
        """The memory block for one reader, entity names looked up in the pair's registry."""
        pair.check()
        reader_names(reader)  # an unknown reader fails before any read
        names = await _entity_names(self.store.pool_reader(pair.user_id, pair.character_id), erinnerungen)
        return render_memory_block(
            erinnerungen, reader, names, user_name=user_name, character_name=character_name
        )

    async def missing_nodes(self, pair: Pair, node_ids: Sequence[int]) -> list[int]:
        """The ids that are no node of the pair, in the given order (SPEC §10: served ids belong to the pair)."""
        pair.check()
        found = await self.store.node_ids_of_pair(node_ids, pair.user_id, pair.character_id)
        return [i for i in node_ids if i not in found]


async def _entity_names(reader: PairReader, erinnerungen: Sequence[Erinnerung]) -> dict[int, str]:
    """Names of the entities the paths of ``erinnerungen`` share, from the pair's registry."""
    ids = sorted({i for e in erinnerungen for step in e.pfad for i in step.geteilte_entitaet_ids})
    if not ids:
        return {}
    return await reader.entity_names(ids)
