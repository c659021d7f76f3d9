"""The LZG's domain types: what its operations take and return (SPEC §5)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from novaberg_core.errors import InvalidArgument
from novaberg_core.lexical import QueryTerms
from novaberg_core.model import Beobachter, Ei, Magnets, Pair, PromotionOutcome
from services.lzg.reading import RecallCandidate
from services.lzg.rows import Entity, Timeline, entity_from_row, timeline_from_row
from services.lzg.spreading import LzgResonanz

__all__ = [
    "BEOBACHTER",
    "ERASED",
    "Entity",
    "PromotionInput",
    "PromotionOutcome",
    "PromotionResult",
    "SpreadingResult",
    "Timeline",
    "Trigger3Result",
    "check_finite",
    "entity_from_row",
    "timeline_from_row",
]

BEOBACHTER: tuple[Beobachter, ...] = tuple(Beobachter)
"""Perspectives of an entry (SPEC §0): the shared model's names."""


def check_finite(value: float, name: str) -> float:
    """``value`` unless it is NaN or infinite (InvalidArgument naming the field)."""
    if not math.isfinite(value):
        raise InvalidArgument(f"{name} must be a finite number, got {value}")
    return value


@dataclass(frozen=True)
class PromotionInput:
    """A KZG entry as read fresh by the caller (SPEC §5.3 step 1), plus the job's context."""

    kzg_key: str
    pair: Pair
    beobachter: str
    inhalt: str
    themen: Sequence[str]
    salienz: float
    haeufigkeit: int
    gedaechtnistyp: str
    dimension: str
    ei: Ei
    magnets: Magnets
    erstellt_am: datetime | None
    entry_turn_id: str
    ausloeser_turn_id: str
    log_turn_id: str
    span_id: str | None
    as_of: datetime
    sprecher: str = ""
    """The speaker's display name (SPEC §11), embedded with the content."""
    sprache: str = ""
    """The pair's language code for lexical search."""
    antwort_auf: str = ""
    """The other speaker's question the turn answered (SPEC §11), read by lexical search."""


@dataclass(frozen=True)
class PromotionResult:
    """SPEC §5.3 outcome; ``kzg_delete_allowed`` only after a new node (step 6)."""

    outcome: PromotionOutcome
    node_id: int
    best_cosine: float
    edges_created: int
    kzg_delete_allowed: bool
    already_promoted: bool
    candidates: int


ERASED = PromotionResult(PromotionOutcome.ERASED, 0, 0.0, 0, False, False, 0)
"""The result of a promotion whose pair was erased after the entry was written."""


@dataclass(frozen=True)
class SpreadingResult:
    """``lzg_resonanz`` and the size of the deduplicated pool before the top-3 cut."""

    resonanz: LzgResonanz
    pool_size: int
    memory_blocks: dict[str, str] = field(default_factory=dict)
    """The memory block of each reader the read was asked to render (SPEC §5.9)."""
    recall: list[RecallCandidate] = field(default_factory=list)
    """The recall candidates, best first (SPEC §11)."""
    query_terms: QueryTerms | None = None
    """The lexical query's terms with their idf over the pair (for scoring other layers alike)."""


@dataclass(frozen=True)
class Trigger3Result:
    """SPEC §5.5 Trigger 3: nodes rewritten, directed edges recomputed, directed edges deleted."""

    nodes_rewritten: int = 0
    edges_recomputed: int = 0
    edges_deleted: int = 0
