"""Pure parts of the dossier (SPEC §7, mem §11.2, §11.6): perspective weights of KZG hits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from novaberg.common.v1 import common_pb2

__all__ = ["PerspectiveWeights", "WeightedIndex", "weigh_hits"]


@dataclass(frozen=True, slots=True)
class PerspectiveWeights:
    """``RETRIEVAL_KZG_GEWICHT_USER`` / ``…_ASSISTANT`` (mem §11.6): empathy source 1.0, self source 0.7."""

    user: float = 1.0
    assistant: float = 0.7

    def of(self, beobachter: int) -> float:
        """The weight of a hit of perspective ``beobachter`` (an unspecified one weighs nothing)."""
        if beobachter == common_pb2.BEOBACHTER_USER:
            return self.user
        if beobachter == common_pb2.BEOBACHTER_ASSISTANT:
            return self.assistant
        return 0.0


@dataclass(frozen=True, slots=True)
class WeightedIndex:
    """Position of a hit in the retrieval answer, its weight and ``score = similarity × weight``."""

    index: int
    weight: float
    score: float


def weigh_hits(hits: Sequence[tuple[int, float]], weights: PerspectiveWeights) -> list[WeightedIndex]:
    """``(beobachter, similarity)`` per hit → weighted, best score first (ties keep retrieval order)."""
    weighted = [
        WeightedIndex(index=i, weight=weights.of(b), score=similarity * weights.of(b))
        for i, (b, similarity) in enumerate(hits)
    ]
    return sorted(weighted, key=lambda w: (-w.score, w.index))
