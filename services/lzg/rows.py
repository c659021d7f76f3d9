"""The rows the LZG store reads and writes: a new node, a directed edge, what a usage reinforcement
wrote, an entity and a timeline of the registry (each converted from its row here, once)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from novaberg_core.model import Ei, Magnets, Pair
from services.lzg.layers import EdgeLayers

__all__ = [
    "EDGE_COLUMNS",
    "EdgeInsert",
    "Entity",
    "NewNode",
    "Timeline",
    "UsageWrite",
    "entity_from_row",
    "timeline_from_row",
]

EDGE_COLUMNS = (  # the columns of an edge row, in EdgeInsert.record()'s order
    "knoten_a_id",
    "knoten_b_id",
    "gewicht_roh",
    "gewicht_absolut",
    "erstellt_am",
    "verbindungs_gruende",
    "geteilte_entitaet_ids",
    "geteilte_themen",
    "timeline_naehe_tage",
    "embedding_cosine_initial",
    "anzahl_schichten",
)


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
