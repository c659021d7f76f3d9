"""Node and edge weight formulas of the LZG (SPEC §5.2, §5.4, §5.6, §5.7) — pure, no I/O.

Every formula exists twice only where a bulk path needs it: a scalar function (``math``) that
states the spec, and a numpy form for many edges at once. The numpy forms use the same
operations in the same order, so they agree with the scalar ones to the last bit for the
arithmetic parts and to ~1 ulp where ``sin``/``sqrt`` come from different libraries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "LZG_KANTEN_DAEMPFUNG_EXP",
    "LZG_KANTEN_GEWICHT_CAP",
    "LZG_KANTEN_SCHICHT_BONUS",
    "LZG_KANTEN_ZIEH_FAKTOR_HOCH",
    "LZG_KANTEN_ZIEH_FAKTOR_RUNTER",
    "LZG_KNOTEN_DAEMPFUNG_EXP",
    "LZG_KNOTEN_DECAY_RATE",
    "LZG_KNOTEN_GEWICHT_CAP",
    "LZG_KNOTEN_MIN_GEWICHT",
    "LZG_KNOTEN_REINFORCEMENT_BOOST",
    "FloatArray",
    "NodeWeights",
    "damp",
    "damp_array",
    "days_until",
    "decayed",
    "edge_raw",
    "edge_raw_array",
    "half_reactivation_decay",
    "node_weights_at_creation",
    "reinforced_weights",
]

FloatArray = npt.NDArray[np.float64]

# --- constants (syn §6; the code-verified values where the seed's block is stale) ----------

LZG_KNOTEN_GEWICHT_CAP = 10.0
"""Cap of the damped node weight (syn §6)."""
LZG_KNOTEN_DAEMPFUNG_EXP = 0.5
"""Exponent of the sin^x damping of node weights (syn §6)."""
LZG_KNOTEN_DECAY_RATE = 0.0015
"""Daily exponential decay rate of ``gewicht_decay`` (SPEC §5.7)."""
LZG_KNOTEN_MIN_GEWICHT = 0.1
"""Below this ``gewicht_decay`` a node is deactivated; also the floor of the half value (SPEC §5.7)."""
LZG_KNOTEN_REINFORCEMENT_BOOST = 0.1
"""Added to ``gewicht_roh`` per usage reinforcement (SPEC §5.6; the seed block's 0.5 is stale)."""
LZG_KANTEN_GEWICHT_CAP = 10.0
"""Cap of the damped edge weight, mirror of the node cap (syn §6)."""
LZG_KANTEN_DAEMPFUNG_EXP = 0.5
"""Exponent of the edge damping, mirror of the node exponent (syn §6)."""
LZG_KANTEN_ZIEH_FAKTOR_HOCH = 0.444
"""Pull of the weaker node towards the stronger one, ``sin(0.25·π/2)^0.85`` as the seed fixes it (syn §5.1)."""
LZG_KANTEN_ZIEH_FAKTOR_RUNTER = 0.297
"""Pull of the stronger node towards the weaker one, ``1 − sin(0.75·π/2)^4.5`` as fixed (syn §5.1)."""
LZG_KANTEN_SCHICHT_BONUS = 0.1
"""Added to both anchors per additional firing layer (SPEC §5.4)."""

_HALF_PI = math.pi / 2.0


def _root(x: float, exponent: float) -> float:
    # sqrt is correctly rounded in every libm and in numpy, so exponent 0.5 agrees bit for bit.
    return math.sqrt(x) if exponent == 0.5 else x**exponent


def damp(x: float, cap: float = LZG_KNOTEN_GEWICHT_CAP, exponent: float = LZG_KNOTEN_DAEMPFUNG_EXP) -> float:
    """``damp(x) = CAP × sin(min(x/CAP, 1) × π/2) ^ 0.5`` (SPEC §5.2); x ≤ 0 gives 0.

    Check values: 0.673 → 3.248, 0.900 → 3.754, 1.000 → 3.955 (syn §4.1).
    """
    if not x > 0.0:
        return 0.0
    return cap * _root(math.sin(min(x / cap, 1.0) * _HALF_PI), exponent)


def damp_array(
    x: npt.ArrayLike, cap: float = LZG_KANTEN_GEWICHT_CAP, exponent: float = LZG_KANTEN_DAEMPFUNG_EXP
) -> FloatArray:
    """:func:`damp` over an array (edge weights in bulk)."""
    values = np.asarray(x, dtype=np.float64)
    s = np.sin(np.minimum(np.maximum(values, 0.0) / cap, 1.0) * _HALF_PI)
    root = np.sqrt(s) if exponent == 0.5 else np.power(s, exponent)
    return np.asarray(cap * root, dtype=np.float64)


@dataclass(frozen=True)
class NodeWeights:
    """The three strength fields of a node (syn §9.1)."""

    gewicht_roh: float
    gewicht_absolut: float
    gewicht_decay: float


def node_weights_at_creation(salienz: float) -> NodeWeights:
    """Creation (SPEC §5.2): roh = KZG salienz (curved), absolut = damp(roh), decay = absolut."""
    absolut = damp(salienz)
    return NodeWeights(gewicht_roh=salienz, gewicht_absolut=absolut, gewicht_decay=absolut)


def reinforced_weights(gewicht_roh: float) -> NodeWeights:
    """Usage reinforcement (SPEC §5.6): roh += BOOST, absolut = damp(roh), decay = absolut."""
    roh = gewicht_roh + LZG_KNOTEN_REINFORCEMENT_BOOST
    absolut = damp(roh)
    return NodeWeights(gewicht_roh=roh, gewicht_absolut=absolut, gewicht_decay=absolut)


def half_reactivation_decay(gewicht_absolut: float) -> float:
    """Half value of a woken inactive node: ``(absolut + MIN_GEWICHT) / 2`` (SPEC §5.7, syn §9.3)."""
    return (gewicht_absolut + LZG_KNOTEN_MIN_GEWICHT) / 2.0


def decayed(gewicht_decay: float, days: float) -> float:
    """Incremental decay over ``days``: ``decay × exp(−RATE × days)`` (SPEC §5.7); days ≤ 0 change nothing."""
    if days <= 0.0:
        return gewicht_decay
    return gewicht_decay * math.exp(-LZG_KNOTEN_DECAY_RATE * days)


def days_until(start: float, target: float) -> float:
    """Days of undisturbed decay from ``start`` down to ``target`` (the "Haltbarkeit" of syn §4.1)."""
    if not 0.0 < target <= start:
        raise ValueError(f"target {target} must be in (0, start={start}]")
    return math.log(start / target) / LZG_KNOTEN_DECAY_RATE


def edge_raw(a_abs: float, b_abs: float, faktor: float, tiefe: float, n: int) -> tuple[float, float]:
    """``gewicht_roh`` of the edges A→B and B→A (SPEC §5.4, syn §7.5).

    ``a_abs``/``b_abs`` are the nodes' ``gewicht_absolut``; ``faktor`` and ``tiefe`` those of the
    winning layer; ``n`` the number of firing layers. Anchors ``A' = abs × faktor + 0.1 (n − 1)``;
    the weaker→stronger edge reads the rising curve (``ZIEH_HOCH``), the stronger→weaker one the
    falling curve (``ZIEH_RUNTER``); both lifts above the weaker anchor are scaled by ``tiefe``.
    """
    bonus = LZG_KANTEN_SCHICHT_BONUS * (n - 1)
    a = a_abs * faktor + bonus
    b = b_abs * faktor + bonus
    lo, hi = (a, b) if a <= b else (b, a)
    up = lo + (hi - lo) * LZG_KANTEN_ZIEH_FAKTOR_HOCH
    down = hi - (hi - lo) * LZG_KANTEN_ZIEH_FAKTOR_RUNTER
    weak_to_strong = lo + (up - lo) * tiefe
    strong_to_weak = lo + (down - lo) * tiefe
    return (weak_to_strong, strong_to_weak) if a <= b else (strong_to_weak, weak_to_strong)


def edge_raw_array(
    a_abs: npt.ArrayLike,
    b_abs: npt.ArrayLike,
    faktor: npt.ArrayLike,
    tiefe: npt.ArrayLike,
    n: npt.ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """:func:`edge_raw` over arrays: returns (A→B, B→A) ``gewicht_roh`` per element."""
    bonus = LZG_KANTEN_SCHICHT_BONUS * (np.asarray(n, dtype=np.float64) - 1.0)
    f = np.asarray(faktor, dtype=np.float64)
    a = np.asarray(a_abs, dtype=np.float64) * f + bonus
    b = np.asarray(b_abs, dtype=np.float64) * f + bonus
    t = np.asarray(tiefe, dtype=np.float64)
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    up = lo + (hi - lo) * LZG_KANTEN_ZIEH_FAKTOR_HOCH
    down = hi - (hi - lo) * LZG_KANTEN_ZIEH_FAKTOR_RUNTER
    weak_to_strong = lo + (up - lo) * t
    strong_to_weak = lo + (down - lo) * t
    a_weaker = a <= b
    ab = np.where(a_weaker, weak_to_strong, strong_to_weak)
    ba = np.where(a_weaker, strong_to_weak, weak_to_strong)
    return ab, ba
