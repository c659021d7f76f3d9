"""The LZG's domain types: what its operations take and return (SPEC §5)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from novaberg_core.errors import InvalidArgument
from novaberg_core.lexical import QueryTerms
from novaberg_core.model import Beobachter, KzgEntry, PromotionOutcome
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
    """A promotion job (SPEC §5.3): the KZG entry as read fresh by the caller (step 1), and its context."""

    entry: KzgEntry
    ausloeser_turn_id: str
    """The turn whose write queued the job (the bridge row's ``ausloeser_turn_id``, syn §11.2)."""
    log_turn_id: str
    """The turn the promotion's pipeline-log records name."""
    span_id: str | None
    as_of: datetime
    """The promotion's instant (a replay's simulated time, SPEC §11)."""


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
