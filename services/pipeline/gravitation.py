"""Perception gravitation: the once-per-turn shift of the query vector (SPEC §6, mem §11.3–11.4, syn §8.5).

``e_nova = e_query × (1 − f) + Σ(e_goal × aktivierungs_staerke) × f`` with
``f = CLUSTER_GRAVITATION_FAKTOR[previous-turn cluster]`` and ``f = 0`` when the turn's
intentions contain ``anweisung`` (imperative override, syn §8.5.3: exactly 0, the only value
that guarantees a search with the raw vector).

Re-normalisation: the mix is scaled back to unit length. Cosine search (pgvector ``<=>``,
RediSearch ``COSINE``) is scale-invariant, so for those the scale changes nothing; but every
vector in the system is L2-normalised (SPEC §2), and a consumer that scores by a plain dot
product over unit rows would otherwise see similarities shrunk by ``‖e_nova‖``. With ``f = 0``
the raw query vector is returned unchanged (bit-identical), so the override is checkable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from novaberg_core.errors import FailedPrecondition, InvalidArgument

ANWEISUNG = "anweisung"
"""The one intention that overrides the cluster factor (syn §8.5.3)."""

GRAVITATION_FAKTOR_ANWEISUNG = 0.0
"""Factor under the imperative override (syn §8.5.3: 0.0, not a damped value)."""

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Goal:
    """An activated goal of the character: its embedding and activation strength (syn §8.5.1)."""

    embedding: Vector
    aktivierungs_staerke: float


@dataclass(frozen=True, slots=True)
class GravitationDecision:
    """Which factor applies this turn and why (logged as the ``enricher.gravitation`` decision)."""

    cluster: str
    faktor: float
    cluster_faktor: float
    override: bool


def gravitation_factor(
    cluster: str, intentionen: Sequence[str], table: Mapping[str, float]
) -> GravitationDecision:
    """``f`` for this turn (SPEC §6): the cluster's factor, or 0.0 under ``anweisung``.

    A cluster outside ``table`` is a defect reported loudly, never a silent fall back to
    ``paradox`` (mem §11.4): it can only come from the persisted previous-turn cluster, so it
    is a :class:`FailedPrecondition` of the stored state, not of the request.
    """
    if cluster not in table:
        raise FailedPrecondition(
            f"previous-turn cluster {cluster!r} is not in the cluster table "
            f"(known: {', '.join(sorted(table))})"
        )
    cluster_faktor = float(table[cluster])
    override = ANWEISUNG in intentionen
    faktor = GRAVITATION_FAKTOR_ANWEISUNG if override else cluster_faktor
    return GravitationDecision(cluster=cluster, faktor=faktor, cluster_faktor=cluster_faktor, override=override)


def shift_query(query: Vector, goals: Sequence[Goal], faktor: float) -> Vector:
    """``e_nova`` (SPEC §6), scaled to unit length; ``faktor == 0`` returns ``query`` unchanged.

    With no goals the goal sum is the zero vector, so ``e_nova`` points where ``query`` points.
    """
    if not 0.0 <= faktor <= 1.0:
        raise InvalidArgument(f"gravitation factor must lie in 0..1, got {faktor}")
    raw = np.asarray(query, dtype=np.float32)
    if faktor == 0.0:
        return raw.copy()
    pull = np.zeros(raw.shape, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, by name
        for goal in goals:
            pull += np.asarray(goal.embedding, dtype=np.float64) * goal.aktivierungs_staerke
        mixed = raw.astype(np.float64) * (1.0 - faktor) + pull * faktor
        norm = float(np.linalg.norm(mixed))
    if not np.isfinite(norm):
        raise InvalidArgument("the gravitation shift overflowed: the goals' aktivierungs_staerke are too large")
    if norm == 0.0:
        raise InvalidArgument("the gravitation shift produced a zero vector (goals cancel the query)")
    return (mixed / norm).astype(np.float32)
