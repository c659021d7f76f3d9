"""Usage reinforcement: which served memories the answer used (SPEC §5.6, syn §7.1a) — pure.

The answer's embedding is compared with each served node; those at least ``usage`` close, best
first, at most ``VERWENDUNG_MAX_JE_TURN``, count as used. The protocol record carries the inputs
of that decision, so a null result can be told apart from a too-high threshold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = [
    "VERWENDUNG_MARKE_TAGE",
    "VERWENDUNG_MAX_JE_TURN",
    "Ausgang",
    "UsageSelection",
    "Verwendungsprotokoll",
    "select_used",
]

VERWENDUNG_MAX_JE_TURN = 3
"""Cap of reinforced nodes per turn (SPEC §5.6)."""

VERWENDUNG_MARKE_TAGE = 7
"""Days a turn's usage mark is kept (migration 014): a resend comes within minutes; the daily decay
drops older marks. Ours, not the seeds'."""


class Ausgang(StrEnum):
    """The six outcomes of one reinforcement run, which must stay distinguishable (SPEC §5.6)."""

    GERECHNET = "gerechnet"
    ANTWORT_LEER = "antwort_leer"
    OHNE_KANDIDAT = "ohne_kandidat"
    EMBED_FEHLER = "embed_fehler"
    VEKTOR_LEER = "vektor_leer"
    DB_FEHLER = "db_fehler"


@dataclass(frozen=True)
class UsageSelection:
    """The decision over the served nodes."""

    naehen_alle: tuple[tuple[int, float], ...]
    """(node id, closeness) of every checked node, closest first."""
    verwendet: tuple[int, ...]
    """Nodes to reinforce, closest first."""
    knappster_verworfener: tuple[int, float] | None
    """The closest node not reinforced (under the threshold or over the cap)."""


def select_used(
    naehen: Mapping[int, float], schwelle: float, deckel: int = VERWENDUNG_MAX_JE_TURN
) -> UsageSelection:
    """Nodes with closeness ≥ ``schwelle``, closest first (ties: smaller id), at most ``deckel``."""
    ordered = tuple(sorted(naehen.items(), key=lambda item: (-item[1], item[0])))
    verwendet = tuple(node for node, naehe in ordered if naehe >= schwelle)[:deckel]
    chosen = set(verwendet)
    rejected = [item for item in ordered if item[0] not in chosen]
    return UsageSelection(
        naehen_alle=ordered,
        verwendet=verwendet,
        knappster_verworfener=rejected[0] if rejected else None,
    )


@dataclass
class Verwendungsprotokoll:
    """One protocol record per turn (SPEC §5.6); also what the pipeline log receives."""

    schwelle: float
    deckel: int
    ausgang: Ausgang
    geprueft: int = 0
    verwendet: list[int] = field(default_factory=list)
    naehen_alle: list[tuple[int, float]] = field(default_factory=list)
    knappster_verworfener: tuple[int, float] | None = None
    kanten_neu: int = 0
    kanten_fehler: int = 0
    kanten_fehler_knoten: list[int] = field(default_factory=list)
    """The nodes whose Trigger 2 failed (syn §7.1a names them; ``kanten_fehler`` is their count)."""
    kanten_dauer_ms: float = 0.0
    error: str = ""
    wiederholt: bool = False
    """A resend of the turn's reinforcement: the first call reinforced; nothing changed now (migration 014)."""

    def as_log(self) -> dict[str, object]:
        """The record as the pipeline log stores it."""
        return {
            "geprueft": self.geprueft,
            "verwendet": self.verwendet,
            "naehen_alle": [{"knoten_id": k, "naehe": round(n, 6)} for k, n in self.naehen_alle],
            "knappster_verworfener": (
                None
                if self.knappster_verworfener is None
                else {
                    "knoten_id": self.knappster_verworfener[0],
                    "naehe": round(self.knappster_verworfener[1], 6),
                }
            ),
            "schwelle": self.schwelle,
            "deckel": self.deckel,
            "ausgang": self.ausgang.value,
            "kanten_neu": self.kanten_neu,
            "kanten_fehler": self.kanten_fehler,
            "kanten_fehler_knoten": self.kanten_fehler_knoten,
            "kanten_dauer_ms": round(self.kanten_dauer_ms, 3),
            "error": self.error,
            "wiederholt": self.wiederholt,
        }
