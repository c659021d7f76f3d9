"""Promotion of a KZG entry into the LZG (SPEC §5.3) with Trigger 1, a new node's edges (SPEC §5.4).

Steps: validate (nothing written on refusal, SPEC §10) → erased pair? → embed → under the pair's
write lock: already promoted? → best cosine over the pair's nodes → duplicate / half-reactivation
(step 4) or a new node (step 5) with its edges (Trigger 1) → the bridge row (step 6).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt

from novaberg_core.embedding import lzg_embed_text
from novaberg_core.errors import InvalidArgument
from novaberg_core.limits import GEDAECHTNISTYP_MAX_LEN
from novaberg_core.model import KzgEntry, Magnets
from novaberg_core.rights import kzg_key_prefix
from services.lzg.app.context import UseCase
from services.lzg.cache import PairSnapshot
from services.lzg.edges import Connection, edge_rows
from services.lzg.layers import Compared, TimelineRef, layers_between
from services.lzg.records import PromotionRecords, erased_promotion_dropped
from services.lzg.rows import EdgeInsert, LayerNode, NewNode
from services.lzg.store import PairTx
from services.lzg.store.rights import promotion_erased
from services.lzg.types import (
    ERASED,
    PromotionInput,
    PromotionOutcome,
    PromotionResult,
    check_finite,
)
from services.lzg.weights import (
    LZG_KNOTEN_DECAY_RATE,
    LZG_KNOTEN_MIN_GEWICHT,
    half_reactivation_decay,
    node_weights_at_creation,
)

__all__ = ["Promotion", "trigger1_candidates", "trigger1_edges"]

_LOG = logging.getLogger(__name__)

_FROM_ENTRY = ("pair", "beobachter", "inhalt", "dimension", "haeufigkeit", "sprecher", "sprache", "antwort_auf", "ei")
"""What a new node takes from its entry as it is (SPEC §5.3 step 5)."""


class Promotion(UseCase):
    """SPEC §5.3 over the shared context: one per process."""

    def validate(self, entry: KzgEntry) -> None:
        """Everything a promotion refuses of its entry before touching the store (SPEC §10: nothing changed);
        an entry without ``erstellt_am`` the conversion refused already (:meth:`KzgEntry.from_proto`)."""
        entry.pair.check("entry.pair")
        if not entry.kzg_key:
            raise InvalidArgument("entry.kzg_key must not be empty")
        prefix = kzg_key_prefix(entry.pair.user_id, entry.pair.character_id)
        if not entry.kzg_key.startswith(prefix) or len(entry.kzg_key) == len(prefix):
            raise InvalidArgument(
                f"entry.kzg_key {entry.kzg_key!r} is not a key of the entry's pair (expected '{prefix}<entry_id>')"
            )
        entry.check("entry")
        if entry.haeufigkeit < 1:
            raise InvalidArgument(f"entry.haeufigkeit must be >= 1, got {entry.haeufigkeit}")
        if len(entry.gedaechtnistyp) > GEDAECHTNISTYP_MAX_LEN:
            raise InvalidArgument(f"entry.gedaechtnistyp is longer than {GEDAECHTNISTYP_MAX_LEN} characters")
        # An empty `dimension` is stored as '' (the column is NOT NULL, not non-empty): the KZG
        # accepts such entries, and refusing them here would turn them into poison jobs.
        check_finite(entry.ei.arousal, "entry.ei.arousal")

    async def promote(self, job: PromotionInput) -> PromotionResult:
        """SPEC §5.3: duplicate, half-reactivation or a new node with its edges (Trigger 1)."""
        entry = job.entry
        self.validate(entry)
        if await self._erased(self.store.pool, entry):  # before any log record names the pair
            return ERASED
        records = PromotionRecords.of(self.log, job)
        records.received(job)
        vector = await self.provider.embed_one(lzg_embed_text(entry.inhalt, entry.sprecher))
        async with self.store.pair_writer(entry.pair.user_id, entry.pair.character_id) as tx:
            if await self._erased(tx.conn, entry):  # an erasure committed while this one waited
                return ERASED
            prior = await tx.node_id_by_quell_key(entry.kzg_key)
            if prior is not None:
                # The same job ran before (at-least-once delivery): the entry has fully arrived.
                records.already_promoted(entry.kzg_key, prior)
                return PromotionResult(PromotionOutcome.NEW_NODE, prior, 0.0, 0, True, True, 0)

            entitaet_ids = await _known_entities(tx, entry, records)
            timeline = await _known_timeline(tx, entry, records)
            snapshot = await self.cache.snapshot(tx.conn, entry.pair.user_id, entry.pair.character_id)
            cosines = snapshot.cosines(vector)
            best_row = int(np.argmax(cosines)) if len(snapshot) else -1
            best_cosine = float(cosines[best_row]) if best_row >= 0 else 0.0
            records.cache_read(len(snapshot), best_cosine)
            if best_row >= 0 and best_cosine >= self.profile.match:
                return await self._promotion_hit(
                    tx, job, int(snapshot.ids[best_row]), best_cosine, len(snapshot), records
                )
            eingang = {"bester_cosine": round(best_cosine, 6), "kandidaten": len(snapshot)}
            records.hit(PromotionOutcome.NEW_NODE, eingang, self.profile.match)
            weights = node_weights_at_creation(entry.salienz)
            new_node = NewNode(
                **{name: getattr(entry, name) for name in _FROM_ENTRY},
                kzg_quell_key=entry.kzg_key,
                embedding=vector,
                gewicht_roh=weights.gewicht_roh,
                gewicht_absolut=weights.gewicht_absolut,
                gewicht_decay=weights.gewicht_decay,
                erstellt_am=job.as_of,
                kzg_erstellt_am=entry.erstellt_am,
                themen=list(entry.themen),
                gedaechtnistyp=entry.gedaechtnistyp or None,
                magnets=Magnets.of(entitaet_ids, entry.magnets.timeline_id if timeline is not None else None),
                quell_turn_id=entry.turn_id,
            )
            # Step 3: the candidates' fresh data are read before the insert.
            candidates, near = await trigger1_candidates(
                tx, snapshot, cosines, new_node, timeline, self.profile.embedding_layer
            )
            node_id = await tx.insert_node(new_node)
            records.wrote(
                "lzg_knoten", "insert", knoten_id=node_id,
                gewicht_roh=weights.gewicht_roh, gewicht_absolut=weights.gewicht_absolut,
            )  # fmt: skip
            edges_created = 0
            try:
                async with tx.conn.transaction():  # savepoint: a failed edge leaves the node in place
                    edges = trigger1_edges(
                        node_id, new_node, timeline, candidates, near, snapshot, cosines,
                        self.profile.embedding_layer,
                    )  # fmt: skip
                    edges_created = await tx.insert_edges(edges)
            except (asyncpg.PostgresError, ValueError, ArithmeticError) as exc:
                _LOG.error("promotion %s: edges of node %d failed: %s", entry.kzg_key, node_id, exc)
                records.error(type(exc).__name__, str(exc))
            else:
                records.wrote("lzg_kanten", "insert", knoten_id=node_id, kanten=edges_created)
            await _bridge(tx, job, node_id, PromotionOutcome.NEW_NODE, records)
        return PromotionResult(
            PromotionOutcome.NEW_NODE, node_id, best_cosine, edges_created, True, False, len(snapshot)
        )

    async def _erased(self, conn: Any, entry: KzgEntry) -> bool:
        """A tombstone of the pair (or its user) newer than the entry (services/lzg/rights.py)."""
        if await promotion_erased(conn, entry.pair.user_id, entry.pair.character_id, entry.erstellt_am):
            _LOG.warning("promotion of an entry of an erased pair dropped (docs/decisions.md 'Erasure')")
            erased_promotion_dropped(self.log)
            return True
        return False

    async def _promotion_hit(
        self,
        tx: PairTx,
        job: PromotionInput,
        node_id: int,
        best_cosine: float,
        candidates: int,
        records: PromotionRecords,
    ) -> PromotionResult:
        """Step 4: an active hit is a duplicate (nothing changes); an inactive one is half-reactivated —
        active as of the promotion's instant, as the reads judge it (SPEC §11)."""
        aktiv, gewicht_absolut = await tx.node_activity(
            node_id, job.as_of, LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT
        )
        outcome = PromotionOutcome.DUPLICATE if aktiv else PromotionOutcome.HALF_REACTIVATION
        eingang = {"bester_cosine": round(best_cosine, 6), "knoten_id": node_id, "aktiv": aktiv}
        records.hit(outcome, eingang, self.profile.match)
        if not aktiv:
            half = half_reactivation_decay(gewicht_absolut)
            await tx.half_reactivate(node_id, half, job.as_of)
            records.wrote("lzg_knoten", "update", knoten_id=node_id, gewicht_decay=half)
        await _bridge(tx, job, node_id, outcome, records)
        return PromotionResult(outcome, node_id, best_cosine, 0, False, False, candidates)


async def _known_entities(tx: PairTx, entry: KzgEntry, records: PromotionRecords) -> list[int]:
    """Entity ids of the pair, each once in first-mention order; unknown ones dropped with an ERROR."""
    ordered = list(dict.fromkeys(entry.magnets.entitaet_ids))
    known = await tx.known_entity_ids(ordered)
    unknown = [i for i in ordered if i not in known]
    if unknown:
        _dropped(
            entry,
            records,
            "UnbekannteEntitaet",
            f"entitaet_ids {unknown} are not entities of this pair (deleted or merged away); dropped",
        )
    return [i for i in ordered if i in known]


async def _known_timeline(tx: PairTx, entry: KzgEntry, records: PromotionRecords) -> TimelineRef | None:
    """The entry's timeline reference if it belongs to the pair; otherwise dropped with an ERROR."""
    timeline_id = entry.magnets.timeline_id
    if timeline_id is None:
        return None
    ref = await tx.timeline_ref(timeline_id)
    if ref is None:
        _dropped(
            entry,
            records,
            "UnbekannteTimeline",
            f"timeline_id {timeline_id} is not a timeline of this pair (deleted?); dropped",
        )
    return ref


def _dropped(entry: KzgEntry, records: PromotionRecords, typ: str, message: str) -> None:
    """A reference of the entry the pair does not hold: left out of the node, logged as an error."""
    _LOG.error("promotion %s: %s", entry.kzg_key, message)
    records.error(typ, message)


async def _bridge(
    tx: PairTx, job: PromotionInput, node_id: int, outcome: PromotionOutcome, records: PromotionRecords
) -> None:
    """Step 6: the bridge row turn → KZG key → node (syn §11.2)."""
    await tx.insert_bridge(
        turn_id=job.entry.turn_id,
        kzg_key=job.entry.kzg_key,
        node_id=node_id,
        ausgang=outcome.value,
        ausloeser_turn_id=job.ausloeser_turn_id,
        as_of=job.as_of,
    )
    records.wrote("verbindung", "insert", knoten_id=node_id, ausgang=outcome.value)


async def trigger1_candidates(
    tx: PairTx,
    snapshot: PairSnapshot,
    cosines: npt.NDArray[np.float64],
    node: NewNode,
    timeline: TimelineRef | None,
    embedding_schwelle: float,
) -> tuple[list[LayerNode], dict[int, TimelineRef]]:
    """Fresh data of every node a layer may connect to the new one (SPEC §5.4).

    Embedding neighbours come from the cache's cosines; theme and entity neighbours from the
    GIN indexes, timeline neighbours from the timelines within tolerance (returned too).
    Nodes outside these sets cannot connect.
    """
    close = snapshot.ids[np.nonzero(cosines > embedding_schwelle)[0]].tolist()
    near = await tx.timelines_of_precision(timeline) if timeline is not None else {}
    entitaet_ids = node.magnets.entitaet_ids
    if not close and not node.themen and not entitaet_ids and not near:
        return [], near
    return await tx.promotion_candidates(close, node.themen, entitaet_ids, list(near)), near


def trigger1_edges(
    node_id: int,
    node: NewNode,
    timeline: TimelineRef | None,
    candidates: Sequence[LayerNode],
    near_timelines: Mapping[int, TimelineRef],
    snapshot: PairSnapshot,
    cosines: npt.NDArray[np.float64],
    embedding_schwelle: float,
) -> list[EdgeInsert]:
    """Trigger 1: layers per candidate, then both directed weights for all at once (SPEC §5.4)."""
    if not candidates:
        return []
    cand_rows = snapshot.row_of([c.id for c in candidates])
    newer = Compared(node.themen, node.magnets.entitaet_ids, timeline)
    connected: list[Connection] = []
    for candidate, row in zip(candidates, cand_rows.tolist(), strict=True):
        known_row = row < len(snapshot) and int(snapshot.ids[row]) == candidate.id
        # Timelines of another precision or out of tolerance are not in near_timelines: no layer.
        near = near_timelines.get(candidate.timeline_id) if candidate.timeline_id is not None else None
        older = Compared(candidate.themen, candidate.entitaet_ids, near)
        layers = layers_between(older, newer, float(cosines[row]) if known_row else math.nan, embedding_schwelle)
        if layers is not None:
            connected.append(
                Connection(node_id, candidate.id, node.gewicht_absolut, candidate.gewicht_absolut, layers)
            )
    return edge_rows(connected, node.erstellt_am)
