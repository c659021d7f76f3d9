"""Both directed edge weights for many node pairs at once (SPEC §5.4; syn §7.9.1) — pure.

Trigger 1 (creation) and Trigger 3 (layer data changed) end here: the sequence — winner factor
and depth, bonus, anchors, sinus geometry, depth, damping — over numpy arrays. Trigger 2 runs the
same formula inside PostgreSQL (migration 002), proven equal by tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.lzg.weights import FloatArray, damp_array, edge_raw_array

__all__ = ["EdgeWeights", "pair_weights"]


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
