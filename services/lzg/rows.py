"""The rows the LZG store reads and writes: a new node and a node as stored, a directed edge to
write and one as stored, what the layers compare of a node, the pair's counts, what a usage
reinforcement wrote, an entity and a timeline of the registry (each converted from its row here,
once: no other module reads a column by name)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from pgvector import Vector

from novaberg_core.model import Ei, Magnets, Pair
from services.lzg.layers import EdgeLayers, Praezision, TimelineRef

__all__ = [
    "EDGE_COLUMNS",
    "SCHEMA",
    "EdgeInsert",
    "Entity",
    "LayerNode",
    "NewNode",
    "PairStats",
    "StoredEdge",
    "StoredNode",
    "Timeline",
    "UsageWrite",
    "entity_from_row",
    "timeline_from_row",
    "timeline_ref",
]

SCHEMA = "lzg"
"""PostgreSQL schema holding every LZG table."""


@dataclass(frozen=True)
class NewNode:
    """Every column of a node created by promotion (SPEC §5.3 step 5)."""

    kzg_quell_key: str
    pair: Pair
    beobachter: str
    inhalt: str
    embedding: npt.NDArray[np.float32]
    dimension: str
    gewicht_roh: float
    gewicht_absolut: float
    gewicht_decay: float
    haeufigkeit: int
    erstellt_am: datetime
    kzg_erstellt_am: datetime
    themen: Sequence[str]
    gedaechtnistyp: str | None
    magnets: Magnets
    """The entry's entities known to the pair and its timeline if the pair holds it (SPEC §5.3)."""
    ei: Ei
    sprecher: str = ""
    """The speaker's display name (SPEC §11); part of the embedded text."""
    sprache: str = ""
    """The pair's language code for lexical search (``novaberg_core.lexical``)."""
    quell_turn_id: str = ""
    """The turn the memory was made from."""
    antwort_auf: str = ""
    """The other speaker's question the turn answered, "" for none (SPEC §11): lexical search reads it."""

    def record(self) -> tuple[Any, ...]:
        """The arguments of ``insert_node`` (sql/queries.sql): a new node is active, and reinforced and
        decayed at its creation (SPEC §5.3 step 5)."""
        return self._record(True, self.erstellt_am, self.erstellt_am)

    def _record(self, aktiv: bool, verstaerkt_am: datetime, decay_am: datetime) -> tuple[Any, ...]:
        ei = self.ei
        return (
            *(self.kzg_quell_key, self.pair.user_id, self.pair.character_id, self.beobachter, self.inhalt),
            Vector(self.embedding),
            *(self.dimension, self.gewicht_roh, self.gewicht_absolut, self.gewicht_decay, self.haeufigkeit),
            *(aktiv, self.erstellt_am, verstaerkt_am, decay_am, self.kzg_erstellt_am),
            *(list(self.themen), self.gedaechtnistyp, list(self.magnets.entitaet_ids), self.magnets.timeline_id),
            *(ei.emotion, ei.arousal, ei.emotions_vektor, json.dumps(list(ei.intentionen), ensure_ascii=False)),
            *(ei.modus, ei.sprach_stil, ei.beziehungs_dynamik, ei.tone),
            *(self.sprecher, self.sprache, self.quell_turn_id, self.antwort_auf),
        )


@dataclass(frozen=True, kw_only=True)
class StoredNode(NewNode):
    """A node as stored (``lzg_knoten``, SPEC §5.1): a new node's columns and what has happened to it
    since; what GetNode, ListNodes, the export and CorrectNode read."""

    id: int
    aktiv: bool
    verstaerkt_am: datetime
    decay_am: datetime
    embedding: npt.NDArray[np.float32] | None = None  # type: ignore[assignment]
    """None where the read leaves the vector out (the export) or the node has none."""
    timeline: TimelineRef | None = None
    """The node's timeline where the read joins it (CorrectNode's Trigger 1), else None."""

    def record(self) -> tuple[Any, ...]:
        """The arguments of ``insert_node`` as the node was stored (an import: no formula runs)."""
        return self._record(self.aktiv, self.verstaerkt_am, self.decay_am)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> StoredNode:
        vector = row.get("embedding")
        return cls(
            **{name: row[name] for name in _STORED_NODE_COLUMNS},
            pair=Pair.of_row(row),
            themen=tuple(row["themen"]),
            embedding=None if vector is None else vector.to_numpy(),
            magnets=Magnets.of(row["entitaet_ids"], row["timeline_id"]),
            ei=Ei.from_row(row, _intentionen(row["intentionen"])),
            timeline=timeline_ref(row.get("zeitpunkt"), row.get("praezision")),
        )


_STORED_NODE_COLUMNS = tuple(
    f.name for f in fields(StoredNode) if f.name not in {"pair", "themen", "embedding", "magnets", "ei", "timeline"}
)
"""The node's fields read from the column of the same name as they are."""


def _intentionen(raw: str | None) -> tuple[str, ...]:
    """The stored JSON list of intentions (``intentionen TEXT``); anything else reads as none."""
    try:
        values = json.loads(raw or "[]")
    except ValueError:
        return ()
    return tuple(str(v) for v in values) if isinstance(values, list) else ()


@dataclass(frozen=True)
class EdgeInsert:
    """One directed edge row with its frozen layer characterisation."""

    knoten_a_id: int
    knoten_b_id: int
    gewicht_roh: float
    gewicht_absolut: float
    erstellt_am: datetime
    layers: EdgeLayers

    def record(self) -> tuple[Any, ...]:
        return (
            self.knoten_a_id,
            self.knoten_b_id,
            self.gewicht_roh,
            self.gewicht_absolut,
            self.erstellt_am,
            [g.value for g in self.layers.gruende],
            list(self.layers.geteilte_entitaet_ids),
            list(self.layers.geteilte_themen),
            self.layers.timeline_naehe_tage,
            self.layers.embedding_cosine,
            self.layers.anzahl,
        )


@dataclass(frozen=True, slots=True)
class StoredEdge:
    """A directed edge as stored (``lzg_kanten``, SPEC §5.1, syn §4.2): its weights and frozen
    characterisation; what ListEdges and the export read."""

    id: int
    knoten_a_id: int
    knoten_b_id: int
    gewicht_roh: float
    gewicht_absolut: float
    erstellt_am: datetime
    verbindungs_gruende: tuple[str, ...]
    geteilte_entitaet_ids: tuple[int, ...]
    geteilte_themen: tuple[str, ...]
    timeline_naehe_tage: int | None
    embedding_cosine_initial: float | None
    anzahl_schichten: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> StoredEdge:
        values = {name: row[name] for name in _STORED_EDGE_FIELDS}
        return cls(**values | {name: tuple(values[name]) for name in _EDGE_ARRAYS})


_STORED_EDGE_FIELDS = tuple(f.name for f in fields(StoredEdge))
_EDGE_ARRAYS = ("verbindungs_gruende", "geteilte_entitaet_ids", "geteilte_themen")
EDGE_COLUMNS = _STORED_EDGE_FIELDS[1:]
"""The columns of an edge row as written, in :meth:`EdgeInsert.record`'s order (the id is the database's)."""


@dataclass(frozen=True, slots=True)
class LayerNode:
    """What the four layers compare of a node (SPEC §5.4): Trigger 1's candidates, Trigger 3's nodes."""

    id: int
    gewicht_absolut: float
    themen: tuple[str, ...]
    entitaet_ids: tuple[int, ...]
    timeline_id: int | None
    timeline: TimelineRef | None = None
    """Where the read joins it (Trigger 3); Trigger 1 matches ``timeline_id`` against the timelines near the new node."""
    embedding: npt.NDArray[np.float32] | None = None
    """Where the read brings it (Trigger 3, for pairs without a frozen cosine)."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> LayerNode:
        vector = row.get("embedding")
        return cls(
            row["id"],
            row["gewicht_absolut"],
            tuple(row["themen"]),
            tuple(row["entitaet_ids"]),
            row["timeline_id"],
            timeline_ref(row.get("zeitpunkt"), row.get("praezision")),
            None if vector is None else vector.to_numpy(),
        )


@dataclass(frozen=True, slots=True)
class UsageWrite:
    """What one usage reinforcement wrote (SPEC §5.6, §5.5)."""

    reinforced: list[int]
    """The node ids reinforced (those of the pair), ascending."""
    edges_updated: int
    """Directed edges Trigger 2 recomputed (an edge between two reinforced nodes counts once)."""
    edges_skipped: list[int]
    """Edge ids whose winning layer cannot be reconstructed (left on their weight)."""
    error: str | None
    """Trigger 2's database error (rolled back alone; the reinforcement stays), or None."""
    edges_ms: float
    """Time Trigger 2 took inside the database."""
    repeated: bool = False
    """The turn's reinforcement had been applied by an earlier call: nothing was written (migration 014)."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> UsageWrite:
        """The row of ``verwendung_einmal_verstaerken`` (migration 014)."""
        return cls(
            reinforced=list(row["verstaerkt"]),
            edges_updated=int(row["aktualisiert"]),
            edges_skipped=list(row["uebersprungen"]),
            error=row["fehler"],
            edges_ms=float(row["kanten_ms"]),
            repeated=bool(row["wiederholt"]),
        )


@dataclass(frozen=True)
class Entity:
    """An entity of a pair's registry (SPEC §5.1): a name with its aliases that nodes refer to."""

    id: int
    pair: Pair
    name: str
    typ: str
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class Timeline:
    """A timeline of a pair's registry (SPEC §5.1): an instant with its precision that nodes refer to."""

    id: int
    pair: Pair
    zeitpunkt: datetime
    praezision: str
    titel: str
    themen: tuple[str, ...]


def entity_from_row(row: Mapping[str, Any]) -> Entity:
    return Entity(row["id"], Pair.of_row(row), row["name"], row["typ"], tuple(row["aliases"] or ()))


def timeline_from_row(row: Mapping[str, Any]) -> Timeline:
    return Timeline(
        row["id"],
        Pair.of_row(row),
        row["zeitpunkt"],
        row["praezision"],
        row["titel"],
        tuple(row["themen"] or ()),
    )


@dataclass(frozen=True, slots=True)
class PairStats:
    """A pair's counts (GetPairStats)."""

    nodes_active: int
    nodes_inactive: int
    edges: int
    entities: int
    timelines: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PairStats:
        return cls(*(int(row[f.name] or 0) for f in fields(cls)))


def timeline_ref(zeitpunkt: datetime | None, praezision: str | None) -> TimelineRef | None:
    """A timeline reference from two nullable columns."""
    if zeitpunkt is None or praezision is None:
        return None
    return TimelineRef(zeitpunkt, Praezision(praezision))
