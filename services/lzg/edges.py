"""Both directed edge weights for many node pairs at once (SPEC §5.4; syn §7.9.1) — pure.

Trigger 1 (creation) and Trigger 3 (layer data changed) end here: the sequence — winner factor
and depth, bonus, anchors, sinus geometry, depth, damping — over numpy arrays. Trigger 2 runs the
same formula inside PostgreSQL (migration 002), proven equal by tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from services.lzg.layers import EdgeLayers
from services.lzg.rows import EdgeInsert
from services.lzg.weights import FloatArray, damp_array, edge_raw_array

__all__ = ["Connection", "EdgeWeights", "edge_rows", "pair_weights"]


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
    """A→B and B→A for each pair: anchors from ``gewicht_absolut``, winner factor/depth, layer count."""
    roh_ab, roh_ba = edge_raw_array(a_abs, b_abs, faktor, tiefe, anzahl)
    return EdgeWeights(roh_ab=roh_ab, roh_ba=roh_ba, abs_ab=damp_array(roh_ab), abs_ba=damp_array(roh_ba))


@dataclass(frozen=True)
class Connection:
    """Two nodes that at least one layer connects: their ids, ``gewicht_absolut`` and layers."""

    a_id: int
    b_id: int
    a_abs: float
    b_abs: float
    layers: EdgeLayers


def edge_rows(connections: Sequence[Connection], erstellt_am: datetime) -> list[EdgeInsert]:
    """Both directed edge rows of every connection, A→B then B→A, dated ``erstellt_am`` (SPEC §5.4).

    The one place Trigger 1 (promotion, correction) and Trigger 3 (recompute) build edge rows.
    """
    if not connections:
        return []
    weights = pair_weights(
        [c.a_abs for c in connections],
        [c.b_abs for c in connections],
        [c.layers.faktor for c in connections],
        [c.layers.tiefe for c in connections],
        [c.layers.anzahl for c in connections],
    )
    rows: list[EdgeInsert] = []
    for i, c in enumerate(connections):
        rows.append(
            EdgeInsert(
                c.a_id, c.b_id, float(weights.roh_ab[i]), float(weights.abs_ab[i]), erstellt_am, c.layers
            )
        )
        rows.append(
            EdgeInsert(
                c.b_id, c.a_id, float(weights.roh_ba[i]), float(weights.abs_ba[i]), erstellt_am, c.layers
            )
        )
    return rows
