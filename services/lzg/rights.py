"""A person's rights over their memories in the LZG (SPEC §5): erase, export, import, forget, correct.

- **Erase** deletes every row of a pair (or of all pairs of a user) with one DELETE per table, in one
  transaction under the pairs' write locks; records a tombstone and moves the cache generation
  (migration 010). Nothing left names the pair: the tombstone and generation rows hold one-way keys.
- **Export** reads entities, timelines, nodes (weights, no vectors) and edges (reasons) in one
  repeatable-read transaction; **import** writes them into an empty pair in one transaction, each
  record with a new id (references remapped), nodes re-embedded from their text, weights and edges
  as exported.
- **Forget** deletes nodes with their edges and provenance: SPEC §5.7 forbids decay to hard-delete,
  but an explicit forget is the person's right, and a deactivated node would keep the content.
- **Correct** rewrites a node's content and vector and forms its edges again with Trigger 1, the
  promotion's own code path (``app/correction.py``, offered here as :meth:`LzgRights.correct`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace

import asyncpg

from novaberg_core.embedding import lzg_embed_text
from novaberg_core.errors import FailedPrecondition, InvalidArgument
from novaberg_core.limits import GEDAECHTNISTYP_MAX_LEN
from novaberg_core.model import Magnets, Pair
from novaberg_core.pipeline_log import LogScope, count_fields
from novaberg_core.rights import check_erasure_target, erasure_written, kzg_key, rights_write
from services.lzg.app.context import NO_TURN
from services.lzg.app.correction import Correction, CorrectResult
from services.lzg.engine import LzgEngine
from services.lzg.layers import parse_praezision
from services.lzg.records import ERASED_COUNTS
from services.lzg.rows import Entity, StoredEdge, StoredNode, Timeline
from services.lzg.store import PairTx
from services.lzg.store.rights import (
    EraseCounts,
    ExportRows,
    ForgottenNode,
    characters_of_user,
    erase_rows,
    export_rows,
    forget_rows,
    forget_targets,
    import_entity,
    import_timeline,
    lift_tombstone,
    move_generation,
    pair_is_empty,
    pair_key,
    record_tombstone,
    user_key,
)
from services.lzg.types import BEOBACHTER

__all__ = [
    "CorrectResult",
    "EraseCounts",
    "ExportData",
    "ForgetResult",
    "ForgottenNode",
    "ImportChunk",
    "ImportResult",
    "LzgRights",
]

_LOG = logging.getLogger(__name__)

_EMBED_BATCH = 64


@dataclass(frozen=True)
class ExportData(ExportRows):
    """Everything of a pair, read in one consistent view, and the model that filled the store."""

    model_id: str


@dataclass
class ImportChunk:
    """One chunk of an import, the records with their exported (old) ids."""

    entities: list[Entity] = field(default_factory=list)
    timelines: list[Timeline] = field(default_factory=list)
    nodes: list[StoredNode] = field(default_factory=list)
    edges: list[StoredEdge] = field(default_factory=list)


@dataclass
class ImportResult:
    entity_ids: dict[int, int] = field(default_factory=dict)
    timeline_ids: dict[int, int] = field(default_factory=dict)
    node_ids: dict[int, int] = field(default_factory=dict)
    edges: int = 0
    quell_keys: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class ForgetResult:
    nodes: tuple[ForgottenNode, ...]
    edges: int


def _target_key(key: str, user_id: str, character_id: str) -> str:
    """An exported ``kzg_quell_key`` under the target pair (the entry id kept; keys are unique)."""
    entry_id = key.rsplit(":", 1)[-1] if key else ""
    if not entry_id:
        raise InvalidArgument(f"node kzg_quell_key {key!r} names no entry")
    return kzg_key(user_id, character_id, entry_id)


class LzgRights:
    """The rights operations over one :class:`LzgEngine` (its store, provider, cache and log)."""

    def __init__(self, engine: LzgEngine) -> None:
        self.engine = engine
        self.store = engine.store
        self.correct = Correction(engine.context).correct  # SPEC §5.4, Trigger 1 as at promotion

    # ================================================================ erase

    async def erase(self, pair: tuple[str, str] | None, user_id: str | None) -> EraseCounts:
        """Every row of ``pair`` or of every pair of ``user_id``, one DELETE per table; idempotent."""
        user, character = check_erasure_target(pair, user_id)
        async with self.store.pool.acquire() as conn, conn.transaction():
            characters = [character] if character is not None else await characters_of_user(conn, user)
            for each in sorted(characters):  # the pairs' write locks, in one order (no deadlock)
                await self.store.lock_pair(conn, user, each)
            counts = await erase_rows(conn, user, character, len(characters))
            key = await (pair_key(conn, user, character) if character is not None else user_key(conn, user))
            await record_tombstone(conn, key)
            await move_generation(conn, [key])
        for each in characters:
            self.engine.cache.forget(user, each)  # this replica at once; the others by the generation
        counted = count_fields(counts, ERASED_COUNTS)
        erasure_written(self.engine.log, turn_id="loeschung", tabelle="lzg", character_id=character, **counted)
        return counts

    # ================================================================ export / import

    async def export(self, pair: Pair) -> ExportData:
        """Entities, timelines, nodes (no vectors) and edges of the pair in one consistent view."""
        pair.check()
        async with self.store.reader() as conn:
            rows = await export_rows(conn, pair.user_id, pair.character_id)
        return ExportData(rows.entities, rows.timelines, rows.nodes, rows.edges, await self.store.model_id())

    async def import_pair(self, pair: Pair, chunks: AsyncIterator[ImportChunk]) -> ImportResult:
        """Writes exported records into the empty pair in one transaction (ids new, references remapped)."""
        pair.check()
        user_id, character_id = pair.user_id, pair.character_id
        result = ImportResult()
        async with self.store.pair_writer(user_id, character_id) as tx:
            if not await pair_is_empty(tx.conn, user_id, character_id):
                raise FailedPrecondition(
                    f"pair {user_id} · {character_id} holds nodes, entities or timelines; "
                    "import into an empty pair"
                )
            # The pair is re-created by the person's own data: its entries may be promoted again.
            await lift_tombstone(tx.conn, user_id, character_id)
            async for chunk in chunks:
                await self._import_entities(tx, chunk.entities, result)
                await self._import_timelines(tx, chunk.timelines, result)
                await self._import_nodes(tx, chunk.nodes, result)
                await self._import_edges(tx, chunk.edges, result)
            await move_generation(tx.conn, [await pair_key(tx.conn, user_id, character_id)])
        self.engine.cache.forget(user_id, character_id)
        where = LogScope.of_pair("import", pair)
        rights_write(
            self.engine.log, **where, operation="import", tabelle="lzg", entitaeten=len(result.entity_ids),
            timelines=len(result.timeline_ids), knoten=len(result.node_ids), kanten=result.edges,
        )  # fmt: skip
        return result

    async def _import_entities(self, tx: PairTx, entities: Sequence[Entity], result: ImportResult) -> None:
        # One INSERT per record: each new id is mapped to its exported one (a rare, offline operation).
        for entity in entities:
            if not entity.name.strip():
                raise InvalidArgument(f"entity {entity.id}: name must not be empty")
            if entity.id in result.entity_ids:
                raise InvalidArgument(f"entity {entity.id} appears twice")
            try:
                new_id = await import_entity(tx.conn, tx.pair, entity.name, entity.typ, entity.aliases)
            except asyncpg.UniqueViolationError:
                raise InvalidArgument(f"entity {entity.id}: the name {entity.name!r} appears twice") from None
            result.entity_ids[entity.id] = new_id

    async def _import_timelines(self, tx: PairTx, timelines: Sequence[Timeline], result: ImportResult) -> None:
        for timeline in timelines:
            if timeline.zeitpunkt is None:
                raise InvalidArgument(f"timeline {timeline.id}: zeitpunkt must be set")
            praezision = parse_praezision(timeline.praezision, f"timeline {timeline.id}.praezision")
            new_id = await import_timeline(
                tx.conn, tx.pair, timeline.zeitpunkt, praezision.value, timeline.titel, timeline.themen
            )
            result.timeline_ids[timeline.id] = new_id

    async def _import_nodes(self, tx: PairTx, nodes: Sequence[StoredNode], result: ImportResult) -> None:
        pair = Pair(*tx.pair)
        for start in range(0, len(nodes), _EMBED_BATCH):
            batch = nodes[start : start + _EMBED_BATCH]
            for node in batch:
                self._check_node(node, result)
            vectors = await self.engine.provider.embed([lzg_embed_text(n.inhalt, n.sprecher) for n in batch])
            for node, vector in zip(batch, vectors, strict=True):
                key = _target_key(node.kzg_quell_key, *tx.pair)
                if key in result.quell_keys:
                    raise InvalidArgument(f"node {node.id}: its kzg_quell_key appears twice in the import")
                result.quell_keys.add(key)
                timeline_id = node.magnets.timeline_id
                imported = replace(
                    node,
                    kzg_quell_key=key,
                    pair=pair,
                    embedding=vector,
                    haeufigkeit=max(node.haeufigkeit, 1),
                    gedaechtnistyp=node.gedaechtnistyp or None,
                    magnets=Magnets.of(
                        [result.entity_ids[i] for i in node.magnets.entitaet_ids],
                        result.timeline_ids[timeline_id] if timeline_id is not None else None,
                    ),
                )
                result.node_ids[node.id] = await tx.insert_node(imported)

    def _check_node(self, node: StoredNode, result: ImportResult) -> None:
        name = f"node {node.id}"
        if node.id in result.node_ids:
            raise InvalidArgument(f"{name} appears twice")
        if node.beobachter not in BEOBACHTER:
            raise InvalidArgument(f"{name}: beobachter must be one of {', '.join(BEOBACHTER)}")
        if not node.inhalt.strip():
            raise InvalidArgument(f"{name}: inhalt must not be empty")
        if len(node.gedaechtnistyp or "") > GEDAECHTNISTYP_MAX_LEN:
            raise InvalidArgument(f"{name}: gedaechtnistyp is longer than {GEDAECHTNISTYP_MAX_LEN} characters")
        for column in ("erstellt_am", "verstaerkt_am", "decay_am", "kzg_erstellt_am"):
            if getattr(node, column) is None:
                raise InvalidArgument(f"{name}: {column} must be set")
        for column in ("gewicht_roh", "gewicht_absolut", "gewicht_decay"):
            value = getattr(node, column)
            if not (math.isfinite(value) and value >= 0.0):
                raise InvalidArgument(f"{name}: {column} must be a finite number >= 0")
        missing = [i for i in node.magnets.entitaet_ids if i not in result.entity_ids]
        if missing:
            raise InvalidArgument(f"{name} names entities {missing} that the import did not bring before it")
        timeline_id = node.magnets.timeline_id
        if timeline_id is not None and timeline_id not in result.timeline_ids:
            raise InvalidArgument(f"{name} names timeline {timeline_id} that the import did not bring before it")

    async def _import_edges(self, tx: PairTx, edges: Sequence[StoredEdge], result: ImportResult) -> None:
        if not edges:
            return
        records = []
        for edge in edges:
            a, b = edge.knoten_a_id, edge.knoten_b_id
            if a not in result.node_ids or b not in result.node_ids or a == b:
                raise InvalidArgument(f"edge {edge.id} joins nodes {a} → {b} the import did not bring")
            records.append(
                (
                    result.node_ids[a],
                    result.node_ids[b],
                    edge.gewicht_roh,
                    edge.gewicht_absolut,
                    edge.erstellt_am,
                    list(edge.verbindungs_gruende),
                    [result.entity_ids.get(i, i) for i in edge.geteilte_entitaet_ids],
                    list(edge.geteilte_themen),
                    edge.timeline_naehe_tage,
                    edge.embedding_cosine_initial,
                    edge.anzahl_schichten,
                )
            )
        try:
            # With the rank rows of the pairs whose both edges exist now.
            result.edges += await tx.insert_edge_records(records)
        except asyncpg.UniqueViolationError:
            raise InvalidArgument("an edge appears twice in the import") from None

    # ================================================================ forget

    async def forget(
        self, pair: Pair, node_ids: Sequence[int], source_turn_id: str, *, turn: LogScope = NO_TURN
    ) -> ForgetResult:
        """Deletes the named nodes (or a source turn's nodes) with edges and provenance; idempotent."""
        pair.check()
        user_id, character_id = pair.user_id, pair.character_id
        if not node_ids and not source_turn_id:
            raise InvalidArgument("name node_ids or a source_turn_id to forget")
        if any(i <= 0 for i in node_ids):
            raise InvalidArgument("node_ids must be positive node ids")
        async with self.store.pair_writer(user_id, character_id) as tx:
            nodes = tuple(await forget_targets(tx.conn, user_id, character_id, node_ids, source_turn_id))
            ids = [node.node_id for node in nodes]
            edges = 0
            if ids:
                edges = await forget_rows(tx.conn, user_id, character_id, ids)
                await move_generation(tx.conn, [await pair_key(tx.conn, user_id, character_id)])
        if ids:
            where = LogScope.of_pair(turn.turn_id or "vergessen", pair, turn.span_id)
            rights_write(
                self.engine.log, **where, operation="forget", tabelle="lzg_knoten",
                knoten_ids=ids, kanten=edges, quell_turn_id=source_turn_id or None,
            )  # fmt: skip
        return ForgetResult(nodes, edges)
