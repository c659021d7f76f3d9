"""Edge rows from layers and anchors, in bulk (SPEC §5.4, §5.5; syn §7.9.1) — pure.

Trigger 1 (creation), Trigger 2 (an anchor changed) and Trigger 3 (layer data changed) all end
here: the same sequence — winner factor and depth, bonus, anchors, sinus geometry, depth,
damping — run over numpy arrays, so a recompute gives the numbers a fresh formation would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.lzg.layers import (
    LZG_SCHICHT_FAKTOR,
    EdgeLayers,
    Schicht,
    TimelineRef,
    embedding_tiefe,
    themen_tiefe,
    timeline_tiefe,
    winner_of,
)
from services.lzg.weights import FloatArray, damp_array, edge_raw_array

__all__ = [
    "EdgePair",
    "EdgeWeights",
    "FrozenEdge",
    "frozen_winner_tiefe",
    "pair_weights",
    "recompute_frozen",
    "weights_of_pairs",
]


@dataclass(frozen=True)
class EdgePair:
    """Two nodes of one pair that connect, with their current anchors (``gewicht_absolut``)."""

    a_id: int
    a_abs: float
    b_id: int
    b_abs: float
    layers: EdgeLayers


@dataclass(frozen=True)
class EdgeWeights:
    """``gewicht_roh`` and ``gewicht_absolut`` of both directions, one element per pair."""

    roh_ab: FloatArray
    roh_ba: FloatArray
    abs_ab: FloatArray
    abs_ba: FloatArray


def pair_weights(
    a_abs: Sequence[float] | FloatArray,
    b_abs: Sequence[float] | FloatArray,
    faktor: Sequence[float] | FloatArray,
    tiefe: Sequence[float] | FloatArray,
    anzahl: Sequence[int] | FloatArray,
) -> EdgeWeights:
    """Both directed weights for many node pairs at once (SPEC §5.4 + damping)."""
    roh_ab, roh_ba = edge_raw_array(a_abs, b_abs, faktor, tiefe, anzahl)
    return EdgeWeights(roh_ab=roh_ab, roh_ba=roh_ba, abs_ab=damp_array(roh_ab), abs_ba=damp_array(roh_ba))


def weights_of_pairs(pairs: Sequence[EdgePair]) -> EdgeWeights:
    """:func:`pair_weights` for :class:`EdgePair` records."""
    return pair_weights(
        np.fromiter((p.a_abs for p in pairs), np.float64, len(pairs)),
        np.fromiter((p.b_abs for p in pairs), np.float64, len(pairs)),
        np.fromiter((p.layers.faktor for p in pairs), np.float64, len(pairs)),
        np.fromiter((p.layers.tiefe for p in pairs), np.float64, len(pairs)),
        np.fromiter((p.layers.anzahl for p in pairs), np.float64, len(pairs)),
    )


@dataclass(frozen=True)
class FrozenEdge:
    """What Trigger 2 reads of one directed edge: frozen layer data plus current node data."""

    kante_id: int
    a_abs: float
    b_abs: float
    verbindungs_gruende: Sequence[str]
    anzahl_schichten: int
    embedding_cosine_initial: float | None
    n_geteilte_themen: int
    n_themen_a: int
    n_themen_b: int
    timeline_a: TimelineRef | None
    timeline_b: TimelineRef | None


def frozen_winner_tiefe(edge: FrozenEdge, embedding_schwelle: float) -> tuple[float, float] | None:
    """(faktor, tiefe) of the edge's frozen winning layer; None when the layer cannot be reconstructed."""
    winner = winner_of(edge.verbindungs_gruende)
    faktor = LZG_SCHICHT_FAKTOR[winner]
    if winner is Schicht.ENTITAET:
        return faktor, 1.0
    if winner is Schicht.EMBEDDING:
        if edge.embedding_cosine_initial is None:
            return None
        tiefe = embedding_tiefe(edge.embedding_cosine_initial, embedding_schwelle)
        return None if tiefe is None else (faktor, tiefe)
    if winner is Schicht.THEMEN:
        return faktor, themen_tiefe(edge.n_geteilte_themen, edge.n_themen_a, edge.n_themen_b)
    tiefe = timeline_tiefe(edge.timeline_a, edge.timeline_b)
    return None if tiefe is None else (faktor, tiefe)


def recompute_frozen(
    edges: Sequence[FrozenEdge], embedding_schwelle: float
) -> tuple[list[int], FloatArray, FloatArray, list[int]]:
    """Trigger 2 (syn §7.9.1): new (roh, absolut) of each directed edge A→B from frozen layers.

    Returns (ids, roh, absolut, skipped ids); an edge whose winning layer can no longer be
    reconstructed is skipped loudly by the caller and keeps its old weight (syn §7.9.2).
    """
    ids: list[int] = []
    a_abs: list[float] = []
    b_abs: list[float] = []
    faktor: list[float] = []
    tiefe: list[float] = []
    anzahl: list[int] = []
    skipped: list[int] = []
    for edge in edges:
        winner = frozen_winner_tiefe(edge, embedding_schwelle)
        if winner is None:
            skipped.append(edge.kante_id)
            continue
        ids.append(edge.kante_id)
        a_abs.append(edge.a_abs)
        b_abs.append(edge.b_abs)
        faktor.append(winner[0])
        tiefe.append(winner[1])
        anzahl.append(edge.anzahl_schichten)
    weights = pair_weights(a_abs, b_abs, faktor, tiefe, anzahl)
    # Each row is the A→B direction of its own pair; the reverse row comes as its own element.
    return ids, weights.roh_ab, weights.abs_ab, skipped
