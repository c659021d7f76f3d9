"""The four connection layers of an edge and their depth factors (SPEC §5.4, syn §7.3–§7.6) — pure.

A layer *fires* between two nodes (entitaet, embedding, themen, timeline); all four are always
evaluated. The winner is the firing layer with the highest Schicht-Faktor; it sets the anchor
factor and the depth (Tiefe) of the edge. Canonical choices made here (the seeds leave them open):

- Themes match exactly, as the seed's array overlap (``themen && …``, served by the GIN index);
  spelling variants are different themes until theme normalisation exists (syn §7.8). The depth
  divides by the raw array lengths (syn §7.4: ``max(themen_a.length, themen_b.length)``);
  ``geteilte_themen`` lists the shared themes once each, in the older node's order.
- ``geteilte_entitaet_ids`` is sorted ascending; ``verbindungs_gruende`` is in factor order
  (entitaet, embedding, themen, timeline).
- Timeline distances are taken in UTC: minute/stunde in fractional days, tag in calendar days,
  woche in ISO weeks (Monday to Monday), monat/quartal/jahr in calendar units. A distance equal
  to the tolerance still fires, with depth 0 (syn §7.6.3). ``timeline_naehe_tage`` stores the
  calendar-day distance when the layer fires.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple, Protocol

from novaberg_core.model import Praezision  # the shared model's; re-exported for the LZG's modules
from novaberg_core.timeline import (  # the shared geometry (SPEC §5.4); re-exported for the LZG's modules
    LZG_TIMELINE_TOLERANZ,
    as_utc,
    parse_praezision,
    timeline_distance,
    timeline_window,
)

__all__ = [
    "LZG_SCHICHT_FAKTOR",
    "LZG_TIMELINE_TOLERANZ",
    "SCHICHT_ORDER",
    "Compared",
    "EdgeLayers",
    "LayeredNode",
    "Praezision",
    "Schicht",
    "TimelineRef",
    "embedding_tiefe",
    "layers_between",
    "parse_praezision",
    "shared_entities",
    "shared_themes",
    "themen_tiefe",
    "timeline_distance",
    "timeline_tiefe",
    "timeline_window",
    "winner_of",
]


class Schicht(StrEnum):
    """A reason two nodes connect (SPEC §0, §5.4); the value is what ``verbindungs_gruende`` stores."""

    ENTITAET = "entitaet"
    EMBEDDING = "embedding"
    THEMEN = "themen"
    TIMELINE = "timeline"


LZG_SCHICHT_FAKTOR: dict[Schicht, float] = {
    Schicht.ENTITAET: 1.0,
    Schicht.EMBEDDING: 0.8,
    Schicht.THEMEN: 0.5,
    Schicht.TIMELINE: 0.4,
}
"""Schicht-Faktor per layer (SPEC §5.4, syn §6)."""

SCHICHT_ORDER: tuple[Schicht, ...] = (Schicht.ENTITAET, Schicht.EMBEDDING, Schicht.THEMEN, Schicht.TIMELINE)
"""Layers by descending factor: the canonical order of ``verbindungs_gruende``; the first firing one wins."""


@dataclass(frozen=True)
class TimelineRef:
    """The timeline row a node refers to: when, and how precisely."""

    zeitpunkt: datetime
    praezision: Praezision


@dataclass(frozen=True)
class EdgeLayers:
    """Which layers fire between two nodes and the frozen characterisation of their edge (syn §4.2)."""

    gruende: tuple[Schicht, ...]
    """Firing layers in :data:`SCHICHT_ORDER`; never empty."""
    tiefe: float
    """Depth of the winning layer, in [0, 1]."""
    geteilte_entitaet_ids: tuple[int, ...] = ()
    geteilte_themen: tuple[str, ...] = ()
    timeline_naehe_tage: int | None = None
    embedding_cosine: float | None = None

    @property
    def winner(self) -> Schicht:
        """The firing layer with the highest factor."""
        return self.gruende[0]

    @property
    def faktor(self) -> float:
        """Schicht-Faktor of the winner."""
        return LZG_SCHICHT_FAKTOR[self.winner]

    @property
    def anzahl(self) -> int:
        """Number of firing layers (``anzahl_schichten``)."""
        return len(self.gruende)


def winner_of(gruende: Iterable[str]) -> Schicht:
    """The winning layer of a stored ``verbindungs_gruende``; an unknown or empty list is an error."""
    present = {Schicht(g) for g in gruende}
    for schicht in SCHICHT_ORDER:
        if schicht in present:
            return schicht
    raise ValueError("an edge needs at least one layer")


# --- themes ---------------------------------------------------------------------------------


def shared_themes(themen_older: Sequence[str], themen_newer: Iterable[str]) -> tuple[str, ...]:
    """Themes both nodes carry (exact match), once each, in the older node's order."""
    newer = set(themen_newer)
    seen: set[str] = set()
    shared: list[str] = []
    for theme in themen_older:
        if theme in newer and theme not in seen:
            seen.add(theme)
            shared.append(theme)
    return tuple(shared)


def themen_tiefe(n_shared: int, n_themen_a: int, n_themen_b: int) -> float:
    """``shared / max(|themen_a|, |themen_b|)`` — breadth dilutes (syn §7.4: max, not min)."""
    widest = max(n_themen_a, n_themen_b)
    return n_shared / widest if widest > 0 else 0.0


# --- entities and embedding -------------------------------------------------------------------


def shared_entities(ids_a: Iterable[int], ids_b: Iterable[int]) -> tuple[int, ...]:
    """Entity ids both nodes carry, ascending."""
    return tuple(sorted(set(ids_a) & set(ids_b)))


def embedding_tiefe(cosine: float, schwelle: float) -> float | None:
    """``(cos − s) / (1 − s)`` when cos exceeds the threshold (strictly, syn §7.3), else None."""
    if not cosine > schwelle:
        return None
    return min((cosine - schwelle) / (1.0 - schwelle), 1.0)


# --- timeline --------------------------------------------------------------------------------


def timeline_tiefe(a: TimelineRef | None, b: TimelineRef | None) -> float | None:
    """Depth ``(tol − dist) / tol`` when both refs exist, share the precision and lie within tolerance.

    Different precisions never connect (syn §7.6.1); outside the tolerance the layer does not
    fire; None means "does not fire".
    """
    if a is None or b is None or a.praezision is not b.praezision:
        return None
    toleranz = LZG_TIMELINE_TOLERANZ[a.praezision]
    distance = timeline_distance(a.zeitpunkt, b.zeitpunkt, a.praezision)
    if distance > toleranz:
        return None
    return (toleranz - distance) / toleranz


def calendar_days(a: datetime, b: datetime) -> int:
    """Whole calendar days between two moments (UTC dates): the frozen ``timeline_naehe_tage``."""
    return abs((as_utc(b).date() - as_utc(a).date()).days)


# --- one pair of nodes ------------------------------------------------------------------------


class LayeredNode(Protocol):
    """What the four layers compare of a node (SPEC §5.4): its themes, entities and timeline ref."""

    @property
    def themen(self) -> Sequence[str]: ...
    @property
    def entitaet_ids(self) -> Iterable[int]: ...
    @property
    def timeline(self) -> TimelineRef | None: ...


class Compared(NamedTuple):
    """A :class:`LayeredNode` put together where a node's parts come from different places (Trigger 1)."""

    themen: Sequence[str]
    entitaet_ids: Iterable[int]
    timeline: TimelineRef | None


def layers_between(
    older: LayeredNode, newer: LayeredNode, cosine: float, embedding_schwelle: float
) -> EdgeLayers | None:
    """All four layers between two nodes (SPEC §5.4); None when none fires (no edge). Triggers 1 and 3.

    ``older`` is the node with the smaller id (the candidate at creation): its order of the shared
    themes is the one stored. ``embedding_cosine`` is always recorded (it is frozen and Trigger 2/3
    read it); ``timeline_naehe_tage`` only when the timeline layer fires.
    """
    gruende: list[Schicht] = []
    tiefen: list[float] = []
    entities = shared_entities(older.entitaet_ids, newer.entitaet_ids)
    if entities:
        gruende.append(Schicht.ENTITAET)
        tiefen.append(1.0)
    emb = embedding_tiefe(cosine, embedding_schwelle)
    if emb is not None:
        gruende.append(Schicht.EMBEDDING)
        tiefen.append(emb)
    themes = shared_themes(older.themen, newer.themen)
    if themes:
        gruende.append(Schicht.THEMEN)
        tiefen.append(themen_tiefe(len(themes), len(older.themen), len(newer.themen)))
    timeline_a, timeline_b = older.timeline, newer.timeline
    tl = timeline_tiefe(timeline_a, timeline_b)
    naehe: int | None = None
    if tl is not None:
        assert timeline_a is not None and timeline_b is not None
        gruende.append(Schicht.TIMELINE)
        tiefen.append(tl)
        naehe = calendar_days(timeline_a.zeitpunkt, timeline_b.zeitpunkt)
    if not gruende:
        return None
    return EdgeLayers(
        gruende=tuple(gruende),
        tiefe=tiefen[0],
        geteilte_entitaet_ids=entities,
        geteilte_themen=themes,
        timeline_naehe_tage=naehe,
        embedding_cosine=None if math.isnan(cosine) else float(cosine),
    )
