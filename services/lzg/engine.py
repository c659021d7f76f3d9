"""The LZG's operations: promotion, spreading read, usage reinforcement, decay, triggers 1–3, CRUD.

Each operation validates its input (InvalidArgument naming the field, before anything is written),
combines the pure formulas (weights, layers, edges, spreading, usage) with the store, and writes
its pipeline-log entries. Proto translation lives in ``servicer.py``; SQL in ``store.py``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt

from novaberg_core.clusters import ClusterTable
from novaberg_core.contract import check_pair as check_pair_ids
from novaberg_core.embedding import EmbeddingProvider, ModelProfile, lzg_embed_text, query_embed_text
from novaberg_core.errors import AlreadyExists, InvalidArgument, NotFound
from novaberg_core.lexical import QueryTerms
from novaberg_core.maintenance import check_scope
from novaberg_core.metrics import record_decay
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.timeutil import utc_now
from services.lzg.cache import PairCache, PairSnapshot
from services.lzg.edges import pair_weights
from services.lzg.layers import (
    EdgeLayers,
    Praezision,
    TimelineRef,
    evaluate_layers,
    parse_praezision,
)
from services.lzg.reading import RecallCandidate, RecallQuery, node_details, rank_candidates, recall_list
from services.lzg.render import reader_names, render_memory_block
from services.lzg.rights_store import CACHE_QUERY, promotion_erased
from services.lzg.spreading import (
    K_PRO_SCHALE,
    Erinnerung,
    LzgResonanz,
    PfadSchritt,
    PoolItem,
    dedup_pool,
    sector_of,
    select_top,
)
from services.lzg.store import EdgeInsert, LzgStore, NewNode, PairTx, timeline_ref
from services.lzg.usage import VERWENDUNG_MAX_JE_TURN, Ausgang, Verwendungsprotokoll, select_used
from services.lzg.weights import (
    LZG_KNOTEN_DECAY_RATE,
    LZG_KNOTEN_MIN_GEWICHT,
    LZG_KNOTEN_REINFORCEMENT_BOOST,
    half_reactivation_decay,
    node_weights_at_creation,
)

__all__ = [
    "BEOBACHTER",
    "Entity",
    "LzgEngine",
    "PromotionInput",
    "PromotionOutcome",
    "PromotionResult",
    "SpreadingResult",
    "Timeline",
    "Trigger3Result",
    "check_pair",
]

_LOG = logging.getLogger(__name__)

BEOBACHTER = ("user", "assistant")
"""Perspectives of an entry (SPEC §0)."""
_GEDAECHTNISTYP_MAX = 20  # VARCHAR(20)
_ANCHOR_BATCHES = (16, 256)  # cosine-ranked ids checked for activity per round before "all the rest"


def check_pair(user_id: str, character_id: str, field_name: str = "pair") -> tuple[str, str]:
    """The shared pair rule (SPEC §0); returns the ids for convenience."""
    check_pair_ids(user_id, character_id, field_name)
    return user_id, character_id


def _finite(value: float, name: str) -> float:
    if not math.isfinite(value):
        raise InvalidArgument(f"{name} must be a finite number, got {value}")
    return value


class PromotionOutcome(StrEnum):
    """SPEC §5.3: what a promotion did (the value is what ``verbindung.ausgang`` stores)."""

    NEW_NODE = "neu"
    DUPLICATE = "dublette"
    HALF_REACTIVATION = "halbreaktivierung"
    ERASED = "geloescht"
    """The pair was erased after the entry was written: nothing written (docs/decisions.md "Erasure")."""


@dataclass(frozen=True)
class PromotionInput:
    """A KZG entry as read fresh by the caller (SPEC §5.3 step 1), plus the job's context."""

    kzg_key: str
    user_id: str
    character_id: str
    beobachter: str
    inhalt: str
    themen: Sequence[str]
    salienz: float
    haeufigkeit: int
    gedaechtnistyp: str
    dimension: str
    emotion: str
    modus: str
    arousal: float
    emotions_vektor: str
    sprach_stil: str
    beziehungs_dynamik: str
    tone: str
    intentionen: Sequence[str]
    entitaet_ids: Sequence[int]
    timeline_id: int | None
    erstellt_am: datetime | None
    entry_turn_id: str
    ausloeser_turn_id: str
    log_turn_id: str
    span_id: str | None
    as_of: datetime
    sprecher: str = ""
    """The speaker's display name (SPEC §11), embedded with the content."""
    sprache: str = ""
    """The pair's language code for lexical search."""


@dataclass(frozen=True)
class PromotionResult:
    """SPEC §5.3 outcome; ``kzg_delete_allowed`` only after a new node (step 6)."""

    outcome: PromotionOutcome
    node_id: int
    best_cosine: float
    edges_created: int
    kzg_delete_allowed: bool
    already_promoted: bool
    candidates: int


@dataclass(frozen=True)
class SpreadingResult:
    """``lzg_resonanz`` and the size of the deduplicated pool before the top-3 cut."""

    resonanz: LzgResonanz
    pool_size: int
    memory_blocks: dict[str, str] = field(default_factory=dict)
    """The memory block of each reader the read was asked to render (SPEC §5.9)."""
    recall: list[RecallCandidate] = field(default_factory=list)
    """The recall candidates, best first (SPEC §11)."""
    query_terms: QueryTerms | None = None
    """The lexical query's terms with their idf over the pair (for scoring other layers alike)."""


@dataclass(frozen=True)
class Trigger3Result:
    """SPEC §5.5 Trigger 3: nodes rewritten, directed edges recomputed, directed edges deleted."""

    nodes_rewritten: int = 0
    edges_recomputed: int = 0
    edges_deleted: int = 0


@dataclass(frozen=True)
class Entity:
    id: int
    user_id: str
    character_id: str
    name: str
    typ: str
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class Timeline:
    id: int
    user_id: str
    character_id: str
    zeitpunkt: datetime
    praezision: str
    titel: str
    themen: tuple[str, ...]


@dataclass
class _Recompute:
    """Node pairs whose layers a Trigger 3 re-evaluates, and nodes it rewrote."""

    pairs: set[tuple[int, int]] = field(default_factory=set)
    nodes_rewritten: int = 0


def _entity(row: Mapping[str, Any]) -> Entity:
    return Entity(
        row["id"], row["user_id"], row["character_id"], row["name"], row["typ"], tuple(row["aliases"] or ())
    )


def _timeline(row: Mapping[str, Any]) -> Timeline:
    return Timeline(
        row["id"],
        row["user_id"],
        row["character_id"],
        row["zeitpunkt"],
        row["praezision"],
        row["titel"],
        tuple(row["themen"] or ()),
    )


def _unordered(x: int, y: int) -> tuple[int, int]:
    return (x, y) if x < y else (y, x)


class LzgEngine:
    """One per process: the store, the embedding provider and its profile, the log, the caches."""

    def __init__(
        self,
        store: LzgStore,
        provider: EmbeddingProvider,
        profile: ModelProfile,
        clusters: ClusterTable,
        log: PipelineLog,
        *,
        cache_max_bytes: int = 1 << 30,
    ) -> None:
        if provider.dimension != store.dimension:
            raise ValueError(f"provider dimension {provider.dimension} != store dimension {store.dimension}")
        self.store = store
        self.provider = provider
        self.profile = profile
        self.clusters = clusters
        self.log = log
        # The watermark read with the pair's generation (nodes can be deleted: services/lzg/rights.py).
        self.cache = PairCache(store.dimension, CACHE_QUERY, cache_max_bytes)

    # ================================================================ promotion (SPEC §5.3)

    def validate_promotion(self, entry: PromotionInput) -> None:
        """Everything a promotion refuses before touching the store (SPEC §10: nothing changed)."""
        check_pair(entry.user_id, entry.character_id, "entry.pair")
        if not entry.kzg_key:
            raise InvalidArgument("entry.kzg_key must not be empty")
        prefix = f"kzg:{entry.user_id}:{entry.character_id}:"
        if not entry.kzg_key.startswith(prefix) or len(entry.kzg_key) == len(prefix):
            raise InvalidArgument(
                f"entry.kzg_key {entry.kzg_key!r} is not a key of the entry's pair (expected '{prefix}<entry_id>')"
            )
        if entry.beobachter not in BEOBACHTER:
            raise InvalidArgument(f"entry.beobachter must be one of {', '.join(BEOBACHTER)}")
        if not entry.inhalt.strip():
            raise InvalidArgument("entry.inhalt must not be empty")
        if not (math.isfinite(entry.salienz) and 0.0 <= entry.salienz <= 1.0):
            raise InvalidArgument(f"entry.salienz must be in 0..1, got {entry.salienz}")
        if entry.haeufigkeit < 1:
            raise InvalidArgument(f"entry.haeufigkeit must be >= 1, got {entry.haeufigkeit}")
        if len(entry.gedaechtnistyp) > _GEDAECHTNISTYP_MAX:
            raise InvalidArgument(f"entry.gedaechtnistyp is longer than {_GEDAECHTNISTYP_MAX} characters")
        # An empty `dimension` is stored as '' (the column is NOT NULL, not non-empty): the KZG
        # accepts such entries, and refusing them here would turn them into poison jobs.
        _finite(entry.arousal, "entry.ei.arousal")
        if entry.erstellt_am is None:
            raise InvalidArgument("entry.erstellt_am must be set")
        if any(i <= 0 for i in entry.entitaet_ids):
            raise InvalidArgument("entry.magnets.entitaet_ids must be positive ids")
        if entry.timeline_id is not None and entry.timeline_id <= 0:
            raise InvalidArgument("entry.magnets.timeline_id must be a positive id")

    async def promote(self, entry: PromotionInput) -> PromotionResult:
        """SPEC §5.3: duplicate, half-reactivation or a new node with its edges (Trigger 1)."""
        self.validate_promotion(entry)
        if await self._erased(self.store.pool, entry):  # before any log record names the pair
            return _ERASED
        log_kw: dict[str, Any] = {
            "user_id": entry.user_id,
            "character_id": entry.character_id,
            "span_id": entry.span_id,
            "erstellt_am": entry.as_of,
        }
        turn = entry.log_turn_id
        self.log.write(
            turn_id=turn,
            node="promotion",
            art="eingang",
            inhalt={"kzg_key": entry.kzg_key, "ausloeser_turn_id": entry.ausloeser_turn_id},
            **log_kw,
        )
        vector = await self.provider.embed_one(lzg_embed_text(entry.inhalt, entry.sprecher))
        async with self.store.pair_writer(entry.user_id, entry.character_id) as tx:
            if await self._erased(tx.conn, entry):  # an erasure committed while this one waited
                return _ERASED
            prior = await tx.node_by_quell_key(entry.kzg_key)
            if prior is not None:
                # The same job ran before (at-least-once delivery): the entry has fully arrived.
                self.log.decision(
                    turn_id=turn,
                    node="promotion",
                    entscheidung="promotion.bereits_promotet",
                    ausgang="neu",
                    eingang={"kzg_key": entry.kzg_key, "knoten_id": prior["id"]},
                    massstab={"eindeutig": "kzg_quell_key"},
                    **log_kw,
                )
                return PromotionResult(PromotionOutcome.NEW_NODE, prior["id"], 0.0, 0, True, True, 0)

            entitaet_ids = await self._known_entities(tx, entry, turn, log_kw)
            timeline = await self._known_timeline(tx, entry, turn, log_kw)
            snapshot = await self.cache.snapshot(tx.conn, entry.user_id, entry.character_id)
            cosines = snapshot.cosines(vector)
            best_row = int(np.argmax(cosines)) if len(snapshot) else -1
            best_cosine = float(cosines[best_row]) if best_row >= 0 else 0.0
            self.log.db_read(
                turn_id=turn,
                node="promotion",
                tabelle="lzg_knoten",
                treffer=len(snapshot),
                bester_cosine=round(best_cosine, 6),
                **log_kw,
            )
            if best_row >= 0 and best_cosine >= self.profile.match:
                return await self._promotion_hit(
                    tx, entry, int(snapshot.ids[best_row]), best_cosine, len(snapshot), turn, log_kw
                )
            self.log.decision(
                turn_id=turn,
                node="promotion",
                entscheidung="promotion.treffer",
                ausgang=PromotionOutcome.NEW_NODE.value,
                eingang={"bester_cosine": round(best_cosine, 6), "kandidaten": len(snapshot)},
                massstab={"match": self.profile.match},
                **log_kw,
            )
            weights = node_weights_at_creation(entry.salienz)
            new_node = NewNode(
                kzg_quell_key=entry.kzg_key,
                user_id=entry.user_id,
                character_id=entry.character_id,
                beobachter=entry.beobachter,
                inhalt=entry.inhalt,
                embedding=vector,
                dimension=entry.dimension,
                gewicht_roh=weights.gewicht_roh,
                gewicht_absolut=weights.gewicht_absolut,
                gewicht_decay=weights.gewicht_decay,
                haeufigkeit=entry.haeufigkeit,
                erstellt_am=entry.as_of,
                kzg_erstellt_am=entry.erstellt_am or entry.as_of,
                themen=list(entry.themen),
                gedaechtnistyp=entry.gedaechtnistyp or None,
                entitaet_ids=entitaet_ids,
                timeline_id=entry.timeline_id if timeline is not None else None,
                emotion=entry.emotion,
                arousal=entry.arousal,
                emotions_vektor=entry.emotions_vektor,
                intentionen=list(entry.intentionen),
                modus=entry.modus,
                sprach_stil=entry.sprach_stil,
                beziehungs_dynamik=entry.beziehungs_dynamik,
                tone=entry.tone,
                sprecher=entry.sprecher,
                sprache=entry.sprache,
                quell_turn_id=entry.entry_turn_id,
            )
            # Step 3: the candidates' fresh data are read before the insert.
            candidates, near = await self._edge_candidates(tx, snapshot, cosines, new_node, timeline)
            node_id = await tx.insert_node(new_node)
            self.log.db_write(
                turn_id=turn,
                node="promotion",
                tabelle="lzg_knoten",
                operation="insert",
                knoten_id=node_id,
                gewicht_roh=weights.gewicht_roh,
                gewicht_absolut=weights.gewicht_absolut,
                **log_kw,
            )
            edges_created = 0
            try:
                async with tx.conn.transaction():  # savepoint: a failed edge leaves the node in place
                    edges = self._trigger1_edges(
                        node_id, new_node, timeline, candidates, near, snapshot, cosines
                    )
                    edges_created = await tx.insert_edges(edges)
            except (asyncpg.PostgresError, ValueError, ArithmeticError) as exc:
                _LOG.error("promotion %s: edges of node %d failed: %s", entry.kzg_key, node_id, exc)
                self.log.error(
                    turn_id=turn, node="promotion", typ=type(exc).__name__, message=str(exc), **log_kw
                )
            else:
                self.log.db_write(
                    turn_id=turn,
                    node="promotion",
                    tabelle="lzg_kanten",
                    operation="insert",
                    knoten_id=node_id,
                    kanten=edges_created,
                    **log_kw,
                )
            await self._bridge(tx, entry, node_id, PromotionOutcome.NEW_NODE, turn, log_kw)
        return PromotionResult(
            PromotionOutcome.NEW_NODE, node_id, best_cosine, edges_created, True, False, len(snapshot)
        )

    async def _erased(self, conn: Any, entry: PromotionInput) -> bool:
        """A tombstone of the pair (or its user) newer than the entry (services/lzg/rights.py)."""
        assert entry.erstellt_am is not None
        if await promotion_erased(conn, entry.user_id, entry.character_id, entry.erstellt_am):
            _LOG.warning("promotion of an entry of an erased pair dropped (docs/decisions.md 'Erasure')")
            self.log.decision(
                turn_id="loeschung", node="promotion", entscheidung="promotion.ausgang",
                ausgang=PromotionOutcome.ERASED.value, massstab="Paar nach dem Schreiben des Eintrags geloescht",
            )  # fmt: skip
            return True
        return False

    async def _known_entities(
        self, tx: PairTx, entry: PromotionInput, turn: str, log_kw: dict[str, Any]
    ) -> list[int]:
        """Entity ids of the pair, each once in first-mention order; unknown ones dropped with an ERROR."""
        ordered = list(dict.fromkeys(entry.entitaet_ids))
        known = await tx.known_entity_ids(ordered)
        unknown = [i for i in ordered if i not in known]
        if unknown:
            message = (
                f"entitaet_ids {unknown} are not entities of this pair (deleted or merged away); dropped"
            )
            _LOG.error("promotion %s: %s", entry.kzg_key, message)
            self.log.error(
                turn_id=turn, node="promotion", typ="UnbekannteEntitaet", message=message, **log_kw
            )
        return [i for i in ordered if i in known]

    async def _known_timeline(
        self, tx: PairTx, entry: PromotionInput, turn: str, log_kw: dict[str, Any]
    ) -> TimelineRef | None:
        """The entry's timeline reference if it belongs to the pair; otherwise dropped with an ERROR."""
        if entry.timeline_id is None:
            return None
        ref = await tx.timeline_ref(entry.timeline_id)
        if ref is None:
            message = f"timeline_id {entry.timeline_id} is not a timeline of this pair (deleted?); dropped"
            _LOG.error("promotion %s: %s", entry.kzg_key, message)
            self.log.error(
                turn_id=turn, node="promotion", typ="UnbekannteTimeline", message=message, **log_kw
            )
        return ref

    async def _promotion_hit(
        self,
        tx: PairTx,
        entry: PromotionInput,
        node_id: int,
        best_cosine: float,
        candidates: int,
        turn: str,
        log_kw: dict[str, Any],
    ) -> PromotionResult:
        """Step 4: an active hit is a duplicate (nothing changes); an inactive one is half-reactivated."""
        aktiv, gewicht_absolut = await tx.node_activity(node_id)
        outcome = PromotionOutcome.DUPLICATE if aktiv else PromotionOutcome.HALF_REACTIVATION
        self.log.decision(
            turn_id=turn,
            node="promotion",
            entscheidung="promotion.treffer",
            ausgang=outcome.value,
            eingang={"bester_cosine": round(best_cosine, 6), "knoten_id": node_id, "aktiv": aktiv},
            massstab={"match": self.profile.match},
            **log_kw,
        )
        if not aktiv:
            half = half_reactivation_decay(gewicht_absolut)
            await tx.half_reactivate(node_id, half, entry.as_of)
            self.log.db_write(
                turn_id=turn,
                node="promotion",
                tabelle="lzg_knoten",
                operation="update",
                knoten_id=node_id,
                gewicht_decay=half,
                **log_kw,
            )
        await self._bridge(tx, entry, node_id, outcome, turn, log_kw)
        return PromotionResult(outcome, node_id, best_cosine, 0, False, False, candidates)

    async def _bridge(
        self,
        tx: PairTx,
        entry: PromotionInput,
        node_id: int,
        outcome: PromotionOutcome,
        turn: str,
        log_kw: dict[str, Any],
    ) -> None:
        """Step 6: the bridge row turn → KZG key → node (syn §11.2)."""
        await tx.insert_bridge(
            turn_id=entry.entry_turn_id,
            kzg_key=entry.kzg_key,
            node_id=node_id,
            ausgang=outcome.value,
            ausloeser_turn_id=entry.ausloeser_turn_id,
            as_of=entry.as_of,
        )
        self.log.db_write(
            turn_id=turn,
            node="promotion",
            tabelle="verbindung",
            operation="insert",
            knoten_id=node_id,
            ausgang=outcome.value,
            **log_kw,
        )

    async def _edge_candidates(
        self,
        tx: PairTx,
        snapshot: PairSnapshot,
        cosines: npt.NDArray[np.float64],
        node: NewNode,
        timeline: TimelineRef | None,
    ) -> tuple[list[asyncpg.Record], dict[int, TimelineRef]]:
        """Fresh data of every node a layer may connect to the new one (SPEC §5.4).

        Embedding neighbours come from the cache's cosines; theme and entity neighbours from the
        GIN indexes, timeline neighbours from the timelines within tolerance (returned too).
        Nodes outside these sets cannot connect.
        """
        close = snapshot.ids[np.nonzero(cosines > self.profile.embedding_layer)[0]].tolist()
        near = await tx.timelines_of_precision(timeline) if timeline is not None else {}
        if not close and not node.themen and not node.entitaet_ids and not near:
            return [], near
        return await tx.promotion_candidates(close, node.themen, node.entitaet_ids, list(near)), near

    def _trigger1_edges(
        self,
        node_id: int,
        node: NewNode,
        timeline: TimelineRef | None,
        candidates: Sequence[asyncpg.Record],
        near_timelines: Mapping[int, TimelineRef],
        snapshot: PairSnapshot,
        cosines: npt.NDArray[np.float64],
    ) -> list[EdgeInsert]:
        """Trigger 1: layers per candidate, then both directed weights for all at once (SPEC §5.4)."""
        if not candidates:
            return []
        cand_rows = snapshot.row_of([c["id"] for c in candidates])
        connected: list[tuple[int, float, EdgeLayers]] = []
        for candidate, row in zip(candidates, cand_rows.tolist(), strict=True):
            known_row = row < len(snapshot) and int(snapshot.ids[row]) == candidate["id"]
            # Timelines of another precision or out of tolerance are not in near_timelines: no layer.
            timeline_id = candidate["timeline_id"]
            layers = evaluate_layers(
                older_themen=candidate["themen"],
                newer_themen=node.themen,
                entitaet_ids_a=node.entitaet_ids,
                entitaet_ids_b=candidate["entitaet_ids"],
                timeline_a=timeline,
                timeline_b=near_timelines.get(timeline_id) if timeline_id is not None else None,
                cosine=float(cosines[row]) if known_row else math.nan,
                embedding_schwelle=self.profile.embedding_layer,
            )
            if layers is not None:
                connected.append((int(candidate["id"]), float(candidate["gewicht_absolut"]), layers))
        if not connected:
            return []
        weights = pair_weights(
            [node.gewicht_absolut] * len(connected),
            [c[1] for c in connected],
            [c[2].faktor for c in connected],
            [c[2].tiefe for c in connected],
            [c[2].anzahl for c in connected],
        )
        edges: list[EdgeInsert] = []
        for i, (other, _, layers) in enumerate(connected):
            edges.append(
                EdgeInsert(
                    node_id,
                    other,
                    float(weights.roh_ab[i]),
                    float(weights.abs_ab[i]),
                    node.erstellt_am,
                    layers,
                )
            )
            edges.append(
                EdgeInsert(
                    other,
                    node_id,
                    float(weights.roh_ba[i]),
                    float(weights.abs_ba[i]),
                    node.erstellt_am,
                    layers,
                )
            )
        return edges

    # ================================================================ spreading read (SPEC §5.8)

    def query_vector(self, values: Sequence[float]) -> npt.NDArray[np.float32]:
        """A caller's query vector checked against the model and scaled to norm 1."""
        if len(values) != self.provider.dimension:
            raise InvalidArgument(
                f"query_vector has {len(values)} values; the embedding model {self.provider.model_id} "
                f"needs {self.provider.dimension}"
            )
        vector = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(vector)):
            raise InvalidArgument("query_vector holds a value that is not finite")
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            raise InvalidArgument("query_vector is all zeros")
        return (vector / norm).astype(np.float32)

    async def spreading_read(
        self,
        user_id: str,
        character_id: str,
        *,
        query_values: Sequence[float] | None,
        query_text: str | None,
        cluster: str,
        nova_emotion: str,
        turn_id: str = "",
        span_id: str | None = None,
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
        §5.9) is rendered from the same consistent view, the entity names read once for all.
        """
        check_pair(user_id, character_id)
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

        async with self.store.reader() as conn:
            snapshot = await self.cache.snapshot(conn, user_id, character_id)
            candidates = await rank_candidates(
                conn, self.store.q, snapshot, query, self.profile.anchor, (user_id, character_id)
            )
            anchors = candidates.anchors
            pool: list[PoolItem] = list(anchors)
            frontier = anchors
            for schale in range(1, hops + 1):
                if not frontier:
                    break
                frontier = await self._shell(conn, frontier, schale, user_id, character_id, moment)
                pool.extend(frontier)
            top = select_top(pool, nova_emotion)
            names = await self._entity_names(conn, user_id, character_id, top) if readers else {}
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
        if turn_id:
            self.log.db_read(
                turn_id=turn_id,
                node="enricher",
                tabelle="lzg_knoten",
                treffer=len(top),
                anker=len(anchors),
                pool=pool_size,
                cluster=canonical,
                sprung_tiefe=hops,
                lzg_resonanz_ids=[e.knoten_id for e in top],
                quellen={source: len(ids) for source, ids in candidates.lists.items()},
                recall_ids=[r.knoten_id for r in recall],
                user_id=user_id,
                character_id=character_id,
                span_id=span_id,
                erstellt_am=as_of,
            )
        return SpreadingResult(resonanz, pool_size, blocks, recall, candidates.query_terms)

    async def _shell(
        self,
        conn: asyncpg.Connection,
        frontier: Sequence[PoolItem],
        schale: int,
        user_id: str,
        character_id: str,
        as_of: datetime,
    ) -> list[PoolItem]:
        """Shell ``schale``: top K outgoing edges of every frontier item, predecessor excluded (syn §8.2.3)."""
        rows = await conn.fetch(
            self.store.q["shell"],
            list(range(len(frontier))),
            [item.knoten_id for item in frontier],
            [item.predecessor or 0 for item in frontier],
            K_PRO_SCHALE[schale],
            user_id,
            character_id,
            as_of,
            LZG_KNOTEN_DECAY_RATE,
            LZG_KNOTEN_MIN_GEWICHT,
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

    # ================================================================ memory block (SPEC §5.9)

    async def render(
        self,
        user_id: str,
        character_id: str,
        erinnerungen: Sequence[Erinnerung],
        reader: str,
        *,
        user_name: str = "",
        character_name: str = "",
    ) -> str:
        """The memory block for one reader, entity names looked up in the pair's registry."""
        check_pair(user_id, character_id)
        reader_names(reader)  # an unknown reader fails before any read
        async with self.store.pool.acquire() as conn:
            names = await self._entity_names(conn, user_id, character_id, erinnerungen)
        return render_memory_block(
            erinnerungen, reader, names, user_name=user_name, character_name=character_name
        )

    async def _entity_names(
        self, conn: asyncpg.Connection, user_id: str, character_id: str, erinnerungen: Sequence[Erinnerung]
    ) -> dict[int, str]:
        """Names of the entities the paths of ``erinnerungen`` share, from the pair's registry."""
        ids = sorted({i for e in erinnerungen for step in e.pfad for i in step.geteilte_entitaet_ids})
        if not ids:
            return {}
        rows = await conn.fetch(self.store.q["entity_names"], user_id, character_id, ids)
        return {r["id"]: r["name"] for r in rows}

    # ================================================================ usage reinforcement (SPEC §5.6)

    async def reinforce_used(
        self,
        user_id: str,
        character_id: str,
        answer_text: str,
        served_node_ids: Sequence[int],
        *,
        as_of: datetime,
        turn_id: str = "",
        span_id: str | None = None,
        answer_vector: npt.NDArray[np.float32] | None = None,
    ) -> Verwendungsprotokoll:
        """Reinforce the served nodes the answer used, then Trigger 2 for each; one protocol record.

        ``answer_vector`` is the caller's embedding of ``answer_text`` (already checked); without it
        the answer is embedded here.
        """
        check_pair(user_id, character_id)
        served = list(dict.fromkeys(served_node_ids))
        if any(i <= 0 for i in served):
            raise InvalidArgument("served_node_ids must be positive node ids")
        schwelle = self.profile.usage
        record = Verwendungsprotokoll(
            schwelle=schwelle, deckel=VERWENDUNG_MAX_JE_TURN, ausgang=Ausgang.GERECHNET
        )
        record.geprueft = len(served)
        try:
            await self._reinforce(user_id, character_id, answer_text, served, as_of, record, answer_vector)
        except (asyncpg.PostgresError, OSError) as exc:
            record.ausgang = Ausgang.DB_FEHLER
            record.error = f"{type(exc).__name__}: {exc}"
        if turn_id:
            kw: dict[str, Any] = {"user_id": user_id, "character_id": character_id, "span_id": span_id}
            self.log.decision(
                turn_id=turn_id,
                node="verwendung",
                entscheidung="verwendung.verstaerken",
                ausgang=record.ausgang.value,
                eingang=record.as_log(),
                massstab={"schwelle": schwelle, "deckel": record.deckel},
                erstellt_am=as_of,
                **kw,
            )
            if record.error:
                self.log.error(
                    turn_id=turn_id, node="verwendung", typ=record.ausgang.value, message=record.error, **kw
                )
        return record

    async def _reinforce(
        self,
        user_id: str,
        character_id: str,
        answer_text: str,
        served: list[int],
        as_of: datetime,
        record: Verwendungsprotokoll,
        answer_vector: npt.NDArray[np.float32] | None = None,
    ) -> None:
        # Foreign ids are an error of the call, checked before anything else happens; the same
        # read brings the served nodes' vectors.
        rows = await self.store.fetch("served_nodes", served, user_id, character_id) if served else []
        missing = sorted(set(served) - {r["id"] for r in rows})
        if missing:
            raise NotFound(f"served_node_ids {missing} are not nodes of this pair")
        if not answer_text.strip():
            record.ausgang = Ausgang.ANTWORT_LEER
            return
        if not served:
            record.ausgang = Ausgang.OHNE_KANDIDAT
            return
        try:
            if answer_vector is not None:
                answer = answer_vector
            else:
                answer = await self.provider.embed_one(query_embed_text(answer_text))
        except Exception as exc:  # any model failure is an outcome of the record, not a call error
            record.ausgang = Ausgang.EMBED_FEHLER
            record.error = f"{type(exc).__name__}: {exc}"
            return
        vectors = {r["id"]: r["embedding"].to_numpy() for r in rows if r["embedding"] is not None}
        answer_norm = float(np.linalg.norm(answer))
        usable = {i: v for i, v in vectors.items() if float(np.linalg.norm(v)) > 0.0}
        if answer_norm == 0.0 or not usable:
            record.ausgang = Ausgang.VEKTOR_LEER
            record.error = "answer vector is empty" if answer_norm == 0.0 else "served nodes have no vectors"
            return
        naehen = {
            i: float(np.dot(v.astype(np.float64), answer.astype(np.float64))) for i, v in usable.items()
        }
        selection = select_used(naehen, record.schwelle, record.deckel)
        record.naehen_alle = list(selection.naehen_alle)
        record.verwendet = list(selection.verwendet)
        record.knappster_verworfener = selection.knappster_verworfener
        if not selection.verwendet:
            return
        # The nodes (roh += boost, SPEC §5.6) and Trigger 2 of all of them in one round trip; a
        # failing Trigger 2 rolls back alone and leaves the edges on their old weight (syn §7.9.2).
        written = await self.store.reinforce_used(
            user_id, character_id, selection.verwendet, LZG_KNOTEN_REINFORCEMENT_BOOST, as_of,
            self.profile.embedding_layer,
        )  # fmt: skip
        record.kanten_neu = written.edges_updated
        record.kanten_dauer_ms = written.edges_ms
        if written.edges_skipped:
            _LOG.error(
                "trigger 2 for nodes %s skipped edges without a layer: %s",
                written.reinforced,
                written.edges_skipped,
            )
        if written.error is not None:
            record.kanten_fehler = len(written.reinforced)
            record.kanten_fehler_knoten = list(written.reinforced)
            record.error = f"trigger 2 for nodes {written.reinforced}: {written.error}"

    async def trigger2(self, tx: PairTx, node_ids: int | Sequence[int]) -> tuple[int, list[int]]:
        """Trigger 2 (SPEC §5.5): every edge from or to the nodes from frozen layers and current anchors.

        One set-based statement in ``tx``; returns (directed edges updated, edges skipped because
        their winning layer cannot be reconstructed — they keep their weight, syn §7.9.2).
        """
        ids = [node_ids] if isinstance(node_ids, int) else list(node_ids)
        return await tx.trigger2(ids, self.profile.embedding_layer)

    # ================================================================ decay (SPEC §5.7)

    async def run_decay(
        self,
        as_of: datetime,
        *,
        pairs: Sequence[tuple[str, str]] = (),
        turn_id: str = "",
        span_id: str | None = None,
    ) -> tuple[int, int, float]:
        """One set-based statement over all active nodes, or only those of ``pairs``; returns
        (decayed, deactivated, ms).

        Incremental form (SPEC §5.7): each node decays by the time since its own ``decay_am``, so
        two runs on one day decay by the elapsed hours only and together equal one run at the later
        time; a run at or before a node's ``decay_am`` (a repeat or a backdated replay) leaves it
        untouched. This is how "idempotent within a day" holds without a calendar-day rule. An
        all-pairs run with ``as_of`` in the future is refused (:mod:`novaberg_core.maintenance`).
        """
        check_scope(as_of, pairs, what="RunDecay")
        started = time.perf_counter()
        decayed, deactivated = await self.store.run_decay(
            as_of, LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT, pairs
        )
        duration_ms = (time.perf_counter() - started) * 1000.0
        record_decay(decayed, deactivated, scoped=bool(pairs))
        # SPEC §8: the all-pairs run's row leaves the pair NULL; a scoped run's rows carry each pair
        # (its counts are the run's, over all of its pairs).
        scope: dict[str, Any] = {"paare": len(pairs)} if pairs else {}
        targets: Sequence[tuple[str | None, str | None]] = pairs or [(None, None)]
        for user_id, character_id in targets:
            self.log.db_write(
                turn_id=turn_id or f"synapsen_decay:{as_of.astimezone(UTC).isoformat()}",
                node="synapsen_decay",
                tabelle="lzg_knoten",
                operation="update",
                verfallen=decayed,
                deaktiviert=deactivated,
                dauer_ms=round(duration_ms, 1),
                rate=LZG_KNOTEN_DECAY_RATE,
                min_gewicht=LZG_KNOTEN_MIN_GEWICHT,
                **scope,
                span_id=span_id,
                erstellt_am=as_of,
                user_id=user_id,
                character_id=character_id,
            )
        return decayed, deactivated, duration_ms

    # ================================================================ reads

    async def node(self, user_id: str, character_id: str, node_id: int) -> asyncpg.Record:
        """One node of the pair; another pair's node is NotFound."""
        check_pair(user_id, character_id)
        row = await self.store.fetchrow("node", node_id, user_id, character_id)
        if row is None:
            raise NotFound(f"node {node_id} is not a node of this pair")
        return row

    async def nodes(
        self, user_id: str, character_id: str, limit: int, include_inactive: bool
    ) -> list[asyncpg.Record]:
        check_pair(user_id, character_id)
        if limit < 0:
            raise InvalidArgument("limit must not be negative")
        return await self.store.fetch("nodes", user_id, character_id, include_inactive, limit or 50)

    async def edges(self, user_id: str, character_id: str, node_id: int, limit: int) -> list[asyncpg.Record]:
        check_pair(user_id, character_id)
        if limit < 0:
            raise InvalidArgument("limit must not be negative")
        if node_id:
            await self.node(user_id, character_id, node_id)
            return await self.store.fetch("edges_of_node", node_id, limit or 500)
        return await self.store.fetch("edges_of_pair", user_id, character_id, limit or 500)

    async def pair_stats(self, user_id: str, character_id: str) -> tuple[asyncpg.Record, str]:
        check_pair(user_id, character_id)
        row = await self.store.fetchrow("pair_stats", user_id, character_id)
        assert row is not None
        return row, await self.store.model_id()

    # ================================================================ entities (Trigger 3)

    async def upsert_entity(self, user_id: str, character_id: str, entity: Entity) -> tuple[Entity, bool]:
        """id 0: create, or return the entity of that name; else update name/typ/aliases."""
        check_pair(user_id, character_id)
        name = entity.name.strip()
        if not name:
            raise InvalidArgument("entity.name must not be empty")
        aliases = [a.strip() for a in entity.aliases if a.strip()]
        if entity.id == 0:
            async with self.store.pair_writer(user_id, character_id) as tx:
                row = await tx.fetchrow("insert_entity", user_id, character_id, name, entity.typ, aliases)
                if row is not None:
                    return _entity(row), True
                existing = await tx.fetchrow("entity_by_name", user_id, character_id, name)
                assert existing is not None
                return _entity(existing), False
        async with self.store.pair_writer(user_id, character_id) as tx:
            other = await tx.fetchrow("entity_by_name", user_id, character_id, name)
            if other is not None and other["id"] != entity.id:
                raise AlreadyExists(f"entity {other['id']} of this pair is already named {name!r}")
            row = await tx.fetchrow(
                "update_entity", entity.id, user_id, character_id, name, entity.typ, aliases
            )
            if row is None:
                raise NotFound(f"entity {entity.id} is not an entity of this pair")
            return _entity(row), False

    async def resolve_entities(
        self, user_id: str, character_id: str, names: Sequence[str], create_missing: bool, typ_for_new: str
    ) -> list[int]:
        """Ids for names or aliases (case-insensitive), 0 where unknown unless created."""
        check_pair(user_id, character_id)
        blank = [index for index, raw in enumerate(names) if not raw.strip()]
        if blank:  # refused before anything is read or created
            raise InvalidArgument(f"names must not contain blank names (index {blank})")
        rows = await self.store.fetch("entities", user_id, character_id, [])
        by_key: dict[str, int] = {}
        for row in rows:
            for alias in row["aliases"] or ():
                by_key.setdefault(alias.strip().casefold(), row["id"])
        for row in rows:  # a name wins over another entity's alias
            by_key[row["name"].strip().casefold()] = row["id"]
        result: list[int] = []
        for raw in names:
            key = raw.strip().casefold()
            if key not in by_key and create_missing:
                entity, _ = await self.upsert_entity(
                    user_id, character_id, Entity(0, user_id, character_id, raw.strip(), typ_for_new, ())
                )
                by_key[key] = entity.id
            result.append(by_key.get(key, 0))
        return result

    async def entities(self, user_id: str, character_id: str, ids: Sequence[int]) -> list[Entity]:
        check_pair(user_id, character_id)
        return [_entity(r) for r in await self.store.fetch("entities", user_id, character_id, list(ids))]

    async def merge_entities(
        self, user_id: str, character_id: str, source_id: int, target_id: int, *, turn_id: str = ""
    ) -> Trigger3Result:
        """Source merged into target: names become aliases, references rewritten, edges recomputed."""
        check_pair(user_id, character_id)
        if source_id == target_id:
            raise InvalidArgument("source_id and target_id must differ")
        async with self.store.pair_writer(user_id, character_id) as tx:
            source = await tx.fetchrow("entity", source_id, user_id, character_id)
            target = await tx.fetchrow("entity", target_id, user_id, character_id)
            if source is None:
                raise NotFound(f"entity {source_id} (source_id) is not an entity of this pair")
            if target is None:
                raise NotFound(f"entity {target_id} (target_id) is not an entity of this pair")
            with_source = await tx.node_ids("nodes_with_entity", source_id)
            with_target = await tx.node_ids("nodes_with_entity", target_id)
            status = await tx.execute("replace_entity_in_nodes", user_id, character_id, source_id, target_id)
            aliases = _merged_aliases(target["name"], target["aliases"], [source["name"], *source["aliases"]])
            await tx.execute("delete_entity", source_id, user_id, character_id)
            await tx.execute(
                "update_entity", target_id, user_id, character_id, target["name"], target["typ"], aliases
            )
            # Every pair whose shared entities can change: a node that had the source with a node
            # that has the target now (syn §7.9.2, Trigger 3).
            everyone = set(with_source) | set(with_target)
            work = _Recompute(
                pairs={_unordered(x, y) for x in with_source for y in everyone if x != y},
                nodes_rewritten=int(status.split()[-1]),
            )
            result = await self._reevaluate(tx, work, datetime.now(UTC))
        self._log_trigger3(
            turn_id, "entitaet_merge", user_id, character_id, result, source=source_id, target=target_id
        )
        return result

    async def delete_entity(
        self, user_id: str, character_id: str, entity_id: int, *, turn_id: str = ""
    ) -> Trigger3Result:
        """Entity deleted: removed from every node, edges carrying it recomputed (or deleted)."""
        check_pair(user_id, character_id)
        async with self.store.pair_writer(user_id, character_id) as tx:
            if await tx.fetchrow("entity", entity_id, user_id, character_id) is None:
                raise NotFound(f"entity {entity_id} is not an entity of this pair")
            pairs = await tx.edge_pairs("edge_pairs_with_entity", user_id, character_id, entity_id)
            status = await tx.execute("remove_entity_from_nodes", user_id, character_id, entity_id)
            await tx.execute("delete_entity", entity_id, user_id, character_id)
            work = _Recompute(pairs=pairs, nodes_rewritten=int(status.split()[-1]))
            result = await self._reevaluate(tx, work, datetime.now(UTC))
        self._log_trigger3(turn_id, "entitaet_loeschen", user_id, character_id, result, entitaet_id=entity_id)
        return result

    # ================================================================ timeline (Trigger 3)

    def _timeline_fields(self, zeitpunkt: datetime | None, praezision: str) -> tuple[datetime, Praezision]:
        if zeitpunkt is None:
            raise InvalidArgument("timeline.zeitpunkt must be set")
        return zeitpunkt, parse_praezision(praezision, "timeline.praezision")

    async def upsert_timeline(
        self, user_id: str, character_id: str, timeline: Timeline
    ) -> tuple[Timeline, bool]:
        """id 0: create; else update every field (a move or precision change fires Trigger 3)."""
        check_pair(user_id, character_id)
        zeitpunkt, praezision = self._timeline_fields(timeline.zeitpunkt, timeline.praezision)
        if timeline.id == 0:
            row = await self.store.fetchrow(
                "insert_timeline",
                user_id,
                character_id,
                zeitpunkt,
                praezision.value,
                timeline.titel,
                list(timeline.themen),
            )
            assert row is not None
            return _timeline(row), True
        updated, _ = await self.update_timeline(user_id, character_id, timeline)
        return updated, False

    async def update_timeline(
        self, user_id: str, character_id: str, timeline: Timeline, *, turn_id: str = ""
    ) -> tuple[Timeline, Trigger3Result]:
        """Move / precision change: timeline-layer edges of the nodes referencing it recomputed."""
        check_pair(user_id, character_id)
        zeitpunkt, praezision = self._timeline_fields(timeline.zeitpunkt, timeline.praezision)
        async with self.store.pair_writer(user_id, character_id) as tx:
            before = await tx.fetchrow("timeline", timeline.id, user_id, character_id)
            if before is None:
                raise NotFound(f"timeline {timeline.id} is not a timeline of this pair")
            row = await tx.fetchrow(
                "update_timeline",
                timeline.id,
                user_id,
                character_id,
                zeitpunkt,
                praezision.value,
                timeline.titel,
                list(timeline.themen),
            )
            assert row is not None
            moved = before["zeitpunkt"] != zeitpunkt or before["praezision"] != praezision.value
            result = Trigger3Result()
            if moved:
                work = await self._timeline_pairs(tx, timeline.id, TimelineRef(zeitpunkt, praezision))
                result = await self._reevaluate(tx, work, datetime.now(UTC))
        if moved:
            self._log_trigger3(
                turn_id, "timeline_aendern", user_id, character_id, result, timeline_id=timeline.id
            )
        return _timeline(row), result

    async def delete_timeline(
        self, user_id: str, character_id: str, timeline_id: int, *, turn_id: str = ""
    ) -> Trigger3Result:
        """Timeline deleted: nodes lose the reference (FK SET NULL), their timeline edges recomputed."""
        check_pair(user_id, character_id)
        async with self.store.pair_writer(user_id, character_id) as tx:
            if await tx.fetchrow("timeline", timeline_id, user_id, character_id) is None:
                raise NotFound(f"timeline {timeline_id} is not a timeline of this pair")
            referencing = await tx.node_ids("nodes_with_timeline", timeline_id)
            pairs = await tx.edge_pairs("edge_pairs_of_nodes", referencing) if referencing else set()
            await tx.execute("delete_timeline", timeline_id, user_id, character_id)
            work = _Recompute(pairs=pairs, nodes_rewritten=len(referencing))
            result = await self._reevaluate(tx, work, datetime.now(UTC))
        self._log_trigger3(
            turn_id, "timeline_loeschen", user_id, character_id, result, timeline_id=timeline_id
        )
        return result

    async def timelines(
        self,
        user_id: str,
        character_id: str,
        ids: Sequence[int] = (),
        at: tuple[datetime, str] | None = None,
    ) -> list[Timeline]:
        """The pair's timeline refs, optionally only ``ids`` and/or those at an instant with a precision."""
        check_pair(user_id, character_id)
        zeitpunkt, praezision = (at[0], parse_praezision(at[1], "praezision").value) if at else (None, None)
        rows = await self.store.fetch("timelines", user_id, character_id, list(ids), zeitpunkt, praezision)
        return [_timeline(r) for r in rows]

    async def missing_nodes(self, user_id: str, character_id: str, node_ids: Sequence[int]) -> list[int]:
        """The ids that are no node of the pair, in the given order (SPEC §10: served ids belong to the pair)."""
        check_pair(user_id, character_id)
        found = {r["id"] for r in await self.store.fetch("node_ids_of_pair", list(node_ids), user_id, character_id)}
        return [i for i in node_ids if i not in found]

    async def _timeline_pairs(self, tx: PairTx, timeline_id: int, ref: TimelineRef) -> _Recompute:
        """Pairs a moved timeline can change: its nodes' edges, and its nodes × nodes now within tolerance."""
        referencing = await tx.node_ids("nodes_with_timeline", timeline_id)
        if not referencing:
            return _Recompute()
        pairs = await tx.edge_pairs("edge_pairs_of_nodes", referencing)
        near = list(await tx.timelines_of_precision(ref))
        partners = await tx.node_ids("nodes_with_timeline_ids", near) if near else []
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
        nodes = {r["id"]: r for r in await tx.nodes_for_layers(ids)}
        existing: set[tuple[int, int]] = set()
        frozen: dict[tuple[int, int], float] = {}
        for row in await tx.edges_among(ids):
            key = _unordered(row["knoten_a_id"], row["knoten_b_id"])
            if key in work.pairs:
                existing.add(key)
                if row["embedding_cosine_initial"] is not None:
                    frozen[key] = row["embedding_cosine_initial"]
        refs = {i: timeline_ref(nodes[i]["zeitpunkt"], nodes[i]["praezision"]) for i in nodes}
        connected: list[tuple[int, int, EdgeLayers]] = []
        deletions: list[tuple[int, int]] = []
        for x, y in sorted(work.pairs):
            if x not in nodes or y not in nodes:
                continue
            cosine = frozen.get((x, y))
            if cosine is None:
                cosine = _cosine(nodes[x]["embedding"], nodes[y]["embedding"])
            layers = evaluate_layers(
                older_themen=nodes[x]["themen"],
                newer_themen=nodes[y]["themen"],
                entitaet_ids_a=nodes[x]["entitaet_ids"],
                entitaet_ids_b=nodes[y]["entitaet_ids"],
                timeline_a=refs[x],
                timeline_b=refs[y],
                cosine=cosine,
                embedding_schwelle=self.profile.embedding_layer,
            )
            if layers is None:
                if (x, y) in existing:
                    deletions.append((x, y))
            else:
                connected.append((x, y, layers))
        rows: list[EdgeInsert] = []
        if connected:
            weights = pair_weights(
                [nodes[x]["gewicht_absolut"] for x, _, _ in connected],
                [nodes[y]["gewicht_absolut"] for _, y, _ in connected],
                [layers.faktor for _, _, layers in connected],
                [layers.tiefe for _, _, layers in connected],
                [layers.anzahl for _, _, layers in connected],
            )
            for i, (x, y, layers) in enumerate(connected):
                rows.append(
                    EdgeInsert(x, y, float(weights.roh_ab[i]), float(weights.abs_ab[i]), as_of, layers)
                )
                rows.append(
                    EdgeInsert(y, x, float(weights.roh_ba[i]), float(weights.abs_ba[i]), as_of, layers)
                )
        await tx.upsert_edges(rows)
        deleted = await tx.delete_edges_between(deletions)
        return Trigger3Result(
            nodes_rewritten=work.nodes_rewritten, edges_recomputed=len(rows), edges_deleted=deleted
        )

    def _log_trigger3(
        self, turn_id: str, art: str, user_id: str, character_id: str, result: Trigger3Result, **details: Any
    ) -> None:
        self.log.db_write(
            turn_id=turn_id or f"trigger3:{art}",
            node="trigger3",
            tabelle="lzg_kanten",
            operation=art,
            knoten_umgeschrieben=result.nodes_rewritten,
            kanten_neu_berechnet=result.edges_recomputed,
            kanten_geloescht=result.edges_deleted,
            user_id=user_id,
            character_id=character_id,
            **details,
        )


_ERASED = PromotionResult(PromotionOutcome.ERASED, 0, 0.0, 0, False, False, 0)


def _cosine(a: Any, b: Any) -> float:
    """Cosine of two stored vectors (both norm 1), computed like the cache does (float32 dot)."""
    if a is None or b is None:
        return math.nan
    return float(np.float32(np.dot(a.to_numpy(), b.to_numpy())))


def _merged_aliases(target_name: str, target_aliases: Iterable[str], incoming: Iterable[str]) -> list[str]:
    seen = {target_name.strip().casefold()}
    merged: list[str] = []
    for alias in [*target_aliases, *incoming]:
        key = alias.strip().casefold()
        if key and key not in seen:
            seen.add(key)
            merged.append(alias.strip())
    return merged
