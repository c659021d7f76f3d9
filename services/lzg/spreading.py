"""Spreading read: shells, Plutchik sector factor, dedup and top-3 selection (SPEC §5.8, syn §8) — pure.

The store walks the graph (one query per shell); this module decides what the walk keeps and in
which order. Choices the seeds leave open: the frontier of a shell keeps every item it reached,
repeats included (cycles are resolved only at the end, syn §8.2.3); among items of the same
node and shell the first discovered wins; ties in the final order go to the smaller shell, then
the smaller node id.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

__all__ = [
    "ANKER_ANZAHL",
    "K_PRO_SCHALE",
    "PLUTCHIK_SEKTOREN",
    "SCHALEN_FAKTOR",
    "TOP_ERINNERUNGEN",
    "Erinnerung",
    "LzgResonanz",
    "NodeDetails",
    "PfadSchritt",
    "PoolItem",
    "dedup_pool",
    "sector_of",
    "sektor_faktor",
    "select_top",
]

ANKER_ANZAHL = 3
"""Anchors kept from the initial cosine search (SPEC §5.8 step 1)."""
K_PRO_SCHALE: dict[int, int] = {1: 3, 2: 2, 3: 2}
"""Outgoing edges followed per node of the previous shell (SPEC §5.8 step 3)."""
SCHALEN_FAKTOR: tuple[float, ...] = (1.00, 0.75, 0.50, 0.25)
"""Penalty per hop distance from the anchor (SPEC §5.8 step 5)."""
TOP_ERINNERUNGEN = 3
"""Memories handed on (SPEC §5.8 step 6)."""
PLUTCHIK_SEKTOREN: tuple[str, ...] = (
    "freude",
    "vertrauen",
    "angst",
    "ueberraschung",
    "traurigkeit",
    "ekel",
    "wut",
    "erwartung",
)
"""The 8-sector Plutchik wheel in wheel order (SPEC §5.8 step 5)."""

_SEKTOR_FAKTOR_PRO_ABSTAND = (1.0, 0.9, 0.8, 0.7, 0.6)
_TRANSLITERATION = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})


def sector_of(label: str | None) -> str | None:
    """The Plutchik sector of an emotion label (any case, umlauts or their ASCII forms); None if neutral/unknown."""
    if not label:
        return None
    key = unicodedata.normalize("NFC", label).strip().lower().translate(_TRANSLITERATION)
    return key if key in PLUTCHIK_SEKTOREN else None


def sektor_faktor(nova_emotion: str | None, knoten_emotion: str | None) -> float:
    """1.0 / 0.9 / 0.8 / 0.7 / 0.6 by wheel distance the shorter way round; neutral/unknown → 1.0."""
    a, b = sector_of(nova_emotion), sector_of(knoten_emotion)
    if a is None or b is None:
        return 1.0
    step = abs(PLUTCHIK_SEKTOREN.index(a) - PLUTCHIK_SEKTOREN.index(b))
    return _SEKTOR_FAKTOR_PRO_ABSTAND[min(step, len(PLUTCHIK_SEKTOREN) - step)]


@dataclass(frozen=True)
class PfadSchritt:
    """One hop of an association path (syn §8.4.2)."""

    von_knoten_id: int
    kante_id: int
    verbindungs_gruende: tuple[str, ...]
    geteilte_entitaet_ids: tuple[int, ...]
    geteilte_themen: tuple[str, ...]


@dataclass(frozen=True)
class NodeDetails:
    """What a memory shows of its node (syn §8.4.2)."""

    inhalt: str
    themen: tuple[str, ...]
    entitaet_ids: tuple[int, ...]
    emotion: str
    erstellt_am: datetime
    gewicht_decay: float
    """As of the read (SPEC §11: the decay carried to the read's ``as_of``)."""
    beobachter: str
    sprecher: str = ""
    quell_turn_id: str = ""
    kzg_quell_key: str = ""
    kzg_erstellt_am: datetime | None = None
    """The turn's own time."""
    antwort_auf: str = ""
    """The other speaker's question the memory answers (SPEC §11), "" for none."""


@dataclass(frozen=True)
class PoolItem:
    """A node reached by the walk: its shell, the node it came from and the full path."""

    knoten_id: int
    schale: int
    details: NodeDetails
    predecessor: int | None = None
    pfad: tuple[PfadSchritt, ...] = ()


@dataclass(frozen=True)
class Erinnerung:
    """One memory of ``lzg_resonanz`` (syn §8.4.2)."""

    rang: int
    knoten_id: int
    schale: int
    sortier_gewicht: float
    details: NodeDetails
    pfad: tuple[PfadSchritt, ...]


@dataclass(frozen=True)
class LzgResonanz:
    """The state structure ``lzg_resonanz`` (SPEC §5.8 step 6)."""

    anker_anzahl: int
    sprung_tiefe: int
    cluster: str
    nova_sektor: str
    erinnerungen: tuple[Erinnerung, ...] = field(default_factory=tuple)


def dedup_pool(items: Iterable[PoolItem]) -> list[PoolItem]:
    """A node reached twice keeps its smallest shell; on equal shells the first discovered (SPEC §5.8 step 4)."""
    best: dict[int, PoolItem] = {}
    for item in items:
        kept = best.get(item.knoten_id)
        if kept is None or item.schale < kept.schale:
            best[item.knoten_id] = item
    return list(best.values())


def select_top(
    pool: Sequence[PoolItem], nova_emotion: str | None, top: int = TOP_ERINNERUNGEN
) -> list[Erinnerung]:
    """``sortier_gewicht = gewicht_decay × schalen_faktor × sektor_faktor``; the strongest ``top``, ranked."""
    scored = [
        (
            item.details.gewicht_decay
            * SCHALEN_FAKTOR[item.schale]
            * sektor_faktor(nova_emotion, item.details.emotion),
            item,
        )
        for item in dedup_pool(pool)
    ]
    scored.sort(key=lambda pair: (-pair[0], pair[1].schale, pair[1].knoten_id))
    return [
        Erinnerung(
            rang=rank,
            knoten_id=item.knoten_id,
            schale=item.schale,
            sortier_gewicht=weight,
            details=item.details,
            pfad=item.pfad,
        )
        for rank, (weight, item) in enumerate(scored[:top], start=1)
    ]
