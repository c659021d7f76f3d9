"""The pair's entity and timeline registry (SPEC §5.5) with Trigger 3, the edges it changes.

A merge, an entity's deletion, a timeline's move, precision change or deletion rewrites the
nodes that reference it and re-evaluates all four layers of every node pair whose shared data
can change, under the pair's write lock: each pair's edges upserted, or deleted in both
directions when no layer is left.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from novaberg_core.errors import AlreadyExists, InvalidArgument, NotFound
from novaberg_core.model import Pair
from novaberg_core.pipeline_log import LogScope, count_fields
from services.lzg.app.context import NO_TURN, UseCase
from services.lzg.edges import Connection, edge_rows
from services.lzg.layers import Praezision, TimelineRef, layers_between, parse_praezision
from services.lzg.records import TRIGGER3_COUNTS
from services.lzg.store import PairTx
from services.lzg.types import Entity, Timeline, Trigger3Result

__all__ = ["Registry"]


@dataclass
class _Recompute:
    """Node pairs whose layers a Trigger 3 re-evaluates, and nodes it rewrote."""

    pairs: set[tuple[int, int]] = field(default_factory=set)
    nodes_rewritten: int = 0


def _unordered(x: int, y: int) -> tuple[int, int]:
    return (x, y) if x < y else (y, x)


class Registry(UseCase):
    """Entities and timelines of a pair, and Trigger 3, over the shared context."""

    # ================================================================ entities (Trigger 3)

    async def upsert_entity(self, pair: Pair, entity: Entity) -> tuple[Entity, bool]:
        """id 0: create, or return the entity of that name; else update name/typ/aliases."""
        pair.check()
        name = entity.name.strip()
        if not name:
            raise InvalidArgument("entity.name must not be empty")
        aliases = [a.strip() for a in entity.aliases if a.strip()]
        if entity.id == 0:
            async with self.store.pair_writer(pair.user_id, pair.character_id) as tx:
                created = await tx.insert_entity(name, entity.typ, aliases)
                if created is not None:
                    return created, True
                existing = await tx.entity_by_name(name)
                assert existing is not None
                return existing, False
        async with self.store.pair_writer(pair.user_id, pair.character_id) as tx:
            other = await tx.entity_by_name(name)
            if other is not None and other.id != entity.id:
                raise AlreadyExists(f"entity {other.id} of this pair is already named {name!r}")
            updated = await tx.update_entity(entity.id, name, entity.typ, aliases)
            if updated is None:
                raise NotFound(f"entity {entity.id} is not an entity of this pair")
            return updated, False

    async def resolve_entities(
        self, pair: Pair, names: Sequence[str], create_missing: bool, typ_for_new: str
    ) -> list[int]:
        """Ids for names or aliases (case-insensitive), 0 where unknown unless created."""
        pair.check()
        blank = [index for index, raw in enumerate(names) if not raw.strip()]
        if blank:  # refused before anything is read or created
            raise InvalidArgument(f"names must not contain blank names (index {blank})")
        known = await self.store.entities(pair.user_id, pair.character_id, [])
        by_key: dict[str, int] = {}
        for each in known:
            for alias in each.aliases:
                by_key.setdefault(alias.strip().casefold(), each.id)
        for each in known:  # a name wins over another entity's alias
            by_key[each.name.strip().casefold()] = each.id
        result: list[int] = []
        for raw in names:
            key = raw.strip().casefold()
            if key not in by_key and create_missing:
                entity, _ = await self.upsert_entity(pair, Entity(0, pair, raw.strip(), typ_for_new, ()))
                by_key[key] = entity.id
            result.append(by_key.get(key, 0))
        return result

    async def entities(self, pair: Pair, ids: Sequence[int]) -> list[Entity]:
        pair.check()
        return await self.store.entities(pair.user_id, pair.character_id, ids)

    async def merge_entities(
        self, pair: Pair, source_id: int, target_id: int, *, turn: LogScope = NO_TURN
    ) -> Trigger3Result:
        """Source merged into target: names become aliases, references rewritten, edges recomputed."""
        pair.check()
        if source_id == target_id:
            raise InvalidArgument("source_id and target_id must differ")

        async def merge(tx: PairTx) -> _Recompute:
            source = await tx.entity(source_id)
            target = await tx.entity(target_id)
            if source is None:
                raise NotFound(f"entity {source_id} (source_id) is not an entity of this pair")
            if target is None:
                raise NotFound(f"entity {target_id} (target_id) is not an entity of this pair")
            with_source = await tx.nodes_with_entity(source_id)
            with_target = await tx.nodes_with_entity(target_id)
            rewritten = await tx.replace_entity_in_nodes(source_id, target_id)
            aliases = _merged_aliases(target.name, target.aliases, [source.name, *source.aliases])
            await tx.delete_entity(source_id)
            await tx.update_entity(target_id, target.name, target.typ, aliases)
            # Every pair whose shared entities can change: a node that had the source with a node
            # that has the target now (syn §7.9.2, Trigger 3).
            everyone = set(with_source) | set(with_target)
            pairs = {_unordered(x, y) for x in with_source for y in everyone if x != y}
            return _Recompute(pairs=pairs, nodes_rewritten=rewritten)

        details = {"source": source_id, "target": target_id}
        return await self._trigger3(pair, merge, turn, "entitaet_merge", details)

    async def delete_entity(self, pair: Pair, entity_id: int, *, turn: LogScope = NO_TURN) -> Trigger3Result:
        """Entity deleted: removed from every node, edges carrying it recomputed (or deleted)."""
        pair.check()

        async def delete(tx: PairTx) -> _Recompute:
            if await tx.entity(entity_id) is None:
                raise NotFound(f"entity {entity_id} is not an entity of this pair")
            pairs = await tx.edge_pairs_with_entity(entity_id)
            rewritten = await tx.remove_entity_from_nodes(entity_id)
            await tx.delete_entity(entity_id)
            return _Recompute(pairs=pairs, nodes_rewritten=rewritten)

        details = {"entitaet_id": entity_id}
        return await self._trigger3(pair, delete, turn, "entitaet_loeschen", details)

    # ================================================================ timeline (Trigger 3)

    def _timeline_fields(self, zeitpunkt: datetime | None, praezision: str) -> tuple[datetime, Praezision]:
        if zeitpunkt is None:
            raise InvalidArgument("timeline.zeitpunkt must be set")
        return zeitpunkt, parse_praezision(praezision, "timeline.praezision")

    async def upsert_timeline(self, pair: Pair, timeline: Timeline) -> tuple[Timeline, bool]:
        """id 0: create; else update every field (a move or precision change fires Trigger 3)."""
        pair.check()
        zeitpunkt, praezision = self._timeline_fields(timeline.zeitpunkt, timeline.praezision)
        if timeline.id == 0:
            created = await self.store.insert_timeline(
                pair.user_id, pair.character_id, zeitpunkt, praezision.value, timeline.titel, timeline.themen
            )
            return created, True
        updated, _ = await self.update_timeline(pair, timeline)
        return updated, False

    async def update_timeline(
        self, pair: Pair, timeline: Timeline, *, turn: LogScope = NO_TURN
    ) -> tuple[Timeline, Trigger3Result]:
        """Move / precision change: timeline-layer edges of the nodes referencing it recomputed."""
        pair.check()
        zeitpunkt, praezision = self._timeline_fields(timeline.zeitpunkt, timeline.praezision)
        async with self.store.pair_writer(pair.user_id, pair.character_id) as tx:
            before = await tx.timeline(timeline.id)
            if before is None:
                raise NotFound(f"timeline {timeline.id} is not a timeline of this pair")
            updated = await tx.update_timeline(
                timeline.id, zeitpunkt, praezision.value, timeline.titel, timeline.themen
            )
            assert updated is not None
            moved = before.zeitpunkt != zeitpunkt or before.praezision != praezision.value
            result = Trigger3Result()
            if moved:
                work = await self._timeline_pairs(tx, timeline.id, TimelineRef(zeitpunkt, praezision))
                result = await self._reevaluate(tx, work, datetime.now(UTC))
        if moved:
            self._log_trigger3(turn, "timeline_aendern", pair, result, timeline_id=timeline.id)
        return updated, result

    async def delete_timeline(
        self, pair: Pair, timeline_id: int, *, turn: LogScope = NO_TURN
    ) -> Trigger3Result:
        """Timeline deleted: nodes lose the reference (FK SET NULL), their timeline edges recomputed."""
        pair.check()

        async def delete(tx: PairTx) -> _Recompute:
            if await tx.timeline(timeline_id) is None:
                raise NotFound(f"timeline {timeline_id} is not a timeline of this pair")
            referencing = await tx.nodes_with_timeline(timeline_id)
            pairs = await tx.edge_pairs_of_nodes(referencing) if referencing else set()
            await tx.delete_timeline(timeline_id)
            return _Recompute(pairs=pairs, nodes_rewritten=len(referencing))

        details = {"timeline_id": timeline_id}
        return await self._trigger3(pair, delete, turn, "timeline_loeschen", details)

    async def timelines(
        self,
        pair: Pair,
        ids: Sequence[int] = (),
        at: tuple[datetime, str] | None = None,
    ) -> list[Timeline]:
        """The pair's timeline refs, optionally only ``ids`` and/or those at an instant with a precision."""
        pair.check()
        zeitpunkt, praezision = (at[0], parse_praezision(at[1], "praezision").value) if at else (None, None)
        return await self.store.timelines(pair.user_id, pair.character_id, ids, zeitpunkt, praezision)

    async def _timeline_pairs(self, tx: PairTx, timeline_id: int, ref: TimelineRef) -> _Recompute:
        """Pairs a moved timeline can change: its nodes' edges, and its nodes × nodes now within tolerance."""
        referencing = await tx.nodes_with_timeline(timeline_id)
        if not referencing:
            return _Recompute()
        pairs = await tx.edge_pairs_of_nodes(referencing)
        near = list(await tx.timelines_of_precision(ref))
        partners = await tx.nodes_with_timeline_ids(near) if near else []
        pairs |= {_unordered(x, y) for x in referencing for y in partners if x != y}
        return _Recompute(pairs=pairs, nodes_rewritten=0)

    async def _reevaluate(self, tx: PairTx, work: _Recompute, as_of: datetime) -> Trigger3Result:
        """Trigger 3 core: all four layers of each node pair from current data; upsert or delete both rows.

        The embedding layer reads the frozen ``embedding_cosine_initial`` where an edge exists and
        the nodes' vectors where none does; an edge left with no layer is deleted in both directions.
        """
        if not work.pairs:
            return Trigger3Result(nodes_rewritten=work.nodes_rewritten)
        ids = {x for p in work.pairs for x in p}
        nodes = await tx.nodes_for_layers(ids)
        existing: set[tuple[int, int]] = set()
        frozen: dict[tuple[int, int], float] = {}
        for a, b, cosine_initial in await tx.frozen_cosines_among(ids):
            key = _unordered(a, b)
            if key in work.pairs:
                existing.add(key)
                if cosine_initial is not None:
                    frozen[key] = cosine_initial
        connected: list[Connection] = []
        deletions: list[tuple[int, int]] = []
        for x, y in sorted(work.pairs):
            if x not in nodes or y not in nodes:
                continue
            older, newer = nodes[x], nodes[y]
            cosine = frozen.get((x, y))
            if cosine is None:
                cosine = _cosine(older.embedding, newer.embedding)
            layers = layers_between(older, newer, cosine, self.profile.embedding_layer)
            if layers is None:
                if (x, y) in existing:
                    deletions.append((x, y))
            else:
                connected.append(Connection(x, y, older.gewicht_absolut, newer.gewicht_absolut, layers))
        rows = edge_rows(connected, as_of)
        await tx.upsert_edges(rows)
        deleted = await tx.delete_edges_between(deletions)
        return Trigger3Result(
            nodes_rewritten=work.nodes_rewritten, edges_recomputed=len(rows), edges_deleted=deleted
        )

    async def _trigger3(
        self,
        pair: Pair,
        change: Callable[[PairTx], Awaitable[_Recompute]],
        turn: LogScope,
        art: str,
        details: dict[str, Any],
    ) -> Trigger3Result:
        """One registry change under the pair's write lock, the pairs it names re-evaluated, one log record."""
        async with self.store.pair_writer(pair.user_id, pair.character_id) as tx:
            work = await change(tx)
            result = await self._reevaluate(tx, work, datetime.now(UTC))
        self._log_trigger3(turn, art, pair, result, **details)
        return result

    def _log_trigger3(
        self, turn: LogScope, art: str, pair: Pair, result: Trigger3Result, **details: Any
    ) -> None:
        where = LogScope.of_pair(turn.turn_id or f"trigger3:{art}", pair, turn.span_id)
        counts = count_fields(result, TRIGGER3_COUNTS)
        self.log.db_write(**where, node="trigger3", tabelle="lzg_kanten", operation=art, **counts, **details)


def _cosine(a: npt.NDArray[np.float32] | None, b: npt.NDArray[np.float32] | None) -> float:
    """Cosine of two stored vectors (both norm 1), computed like the cache does (float32 dot)."""
    if a is None or b is None:
        return math.nan
    return float(np.float32(np.dot(a, b)))


def _merged_aliases(target_name: str, target_aliases: Iterable[str], incoming: Iterable[str]) -> list[str]:
    seen = {target_name.strip().casefold()}
    merged: list[str] = []
    for alias in [*target_aliases, *incoming]:
        key = alias.strip().casefold()
        if key and key not in seen:
            seen.add(key)
            merged.append(alias.strip())
    return merged
