"""Edge rows from layers and anchors, in bulk (SPEC §5.4, §5.5; syn §7.9.1) — pure.

Trigger 1 (creation) and Trigger 3 (layer data changed) end here: the sequence — winner factor
and depth, bonus, anchors, sinus geometry, depth, damping — over numpy arrays. Trigger 2 runs the
same formula inside PostgreSQL (migration 002), proven equal by tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.lzg.layers import EdgeLayers
from services.lzg.weights import FloatArray, damp_array, edge_raw_array

__all__ = ["EdgePair", "EdgeWeights", "pair_weights", "weights_of_pairs"]


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
