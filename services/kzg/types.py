"""The KZG's domain types: what its operations take and return, between servicer, use cases and store
(SPEC §3, §4); no I/O, no formulas."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from novaberg_core.model import Ei, KzgEntry, Magnets, Pair, Praezision, Profile
from services.kzg.domain import Tier

__all__ = [
    "AppendResult",
    "Appended",
    "Ei",
    "EntryInput",
    "EraseCounts",
    "ExportChunk",
    "Hit",
    "ImportCounts",
    "KzgEntry",
    "Magnets",
    "Pair",
    "PromotionJobData",
    "QueueState",
    "RetrieveFilters",
    "RetrieveQuery",
    "RetrieveResult",
    "SessionState",
    "SessionTurnRecord",
    "StoreResult",
    "Vector",
]  # Ei, KzgEntry, Magnets and Pair are the shared model's, re-exported for the KZG's modules

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class EntryInput:
    """A StoreEntry request after translation from proto (SPEC §4.1); validated by the write path."""

    pair: Pair
    beobachter: str
    """``user`` or ``assistant``; anything else is refused."""
    inhalt: str
    salienz: float
    """The model's score 0..1; becomes ``salienz_eingang``."""
    themen: tuple[str, ...] = ()
    gedaechtnistyp: str = ""
    dimension: str = ""
    ei: Ei = field(default_factory=Ei)
    magnets: Magnets = field(default_factory=Magnets)
    turn_id: str = ""
    span_id: str = ""
    embedding: Vector | None = None
    """Precomputed embedding of the KZG embed text; None → the service embeds."""
    entry_id: str = ""
    """Empty → generated."""
    resend_safe: bool = False
    """With ``entry_id``: an entry of that id from the same turn is a repeat, not ALREADY_EXISTS."""
    as_of: datetime | None = None
    """The turn's own time; None → now."""
    writer: str = ""
    """Who writes, for the canon ERROR lines."""
    sprecher: str = ""
    """The speaker's display name (SPEC §11); part of the embedded text."""
    sprache: str = ""
    """The pair's language code for full-text retrieval."""
    antwort_auf: str = ""
    """The other speaker's question the turn answers (SPEC §11): full-text retrieval reads it, never embedded."""
    traceparent: str = ""
    """The writing turn's trace context, so its promotion can link to it."""


@dataclass(frozen=True)
class StoreResult:
    """Outcome of one write (SPEC §4.3, §4.4)."""

    stored: bool
    kzg_key: str = ""
    tier: Tier | None = None
    salienz: float = 0.0
    ttl_seconds: int = 0
    queued_for_promotion: bool = False
    reinforced_count: int = 0
    reinforced_queued_count: int = 0
    canon_rejections: tuple[str, ...] = ()
    repeated: bool = False
    """A resent write: the entry stood already, nothing was written (EntryInput.resend_safe)."""


@dataclass(frozen=True)
class RetrieveFilters:
    """Optional filters of a retrieval (SPEC §4.5); each list means "any of"."""

    emotion: tuple[str, ...] = ()
    modus: tuple[str, ...] = ()
    entitaet_ids: tuple[int, ...] = ()
    themen: tuple[str, ...] = ()
    timeline_id: int | None = None
    min_salienz: float | None = None


@dataclass(frozen=True)
class RetrieveQuery:
    """A Retrieve request after translation (SPEC §4.5): text or vector, never both."""

    pair: Pair
    query_text: str | None = None
    query_vector: Vector | None = None
    beobachter: str | None = None
    """None → both perspectives."""
    filters: RetrieveFilters = field(default_factory=RetrieveFilters)
    top_k: int = 10
    turn_id: str = ""
    span_id: str = ""
    as_of: datetime | None = None
    """The time of the read (a replay's simulated time); None → now. Entries expired then, or
    made later, are not returned (SPEC §11)."""
    lexical_text: str = ""
    """The question's text for full-text candidates (hybrid retrieval, SPEC §11); empty → dense only."""
    sprache: str = ""
    question_entity_ids: tuple[int, ...] = ()
    full_entries: int = 0
    """How many of the best hits found by meaning carry the whole entry; the others are brief
    (:data:`services.kzg.store.codec.BRIEF_FIELDS` only). 0 → every hit whole."""
    zeitfenster: tuple[tuple[datetime, Praezision], ...] = ()
    """Dates or periods the question names (SPEC §11): entries made within their §5.4 tolerance are
    candidates too (source ``timeline``)."""


@dataclass(frozen=True)
class Hit:
    entry: KzgEntry
    similarity: float
    quellen: tuple[str, ...] = ("dense",)
    """Which sources found it: dense, lexical, entity."""
    brief: bool = False
    """The entry holds only what a recall item needs (:data:`services.kzg.store.codec.BRIEF_FIELDS`)."""


@dataclass(frozen=True)
class RetrieveResult:
    hits: tuple[Hit, ...]
    threshold: float
    model_id: str
    dropped_below_threshold: int


@dataclass(frozen=True)
class PromotionJobData:
    """One promotion job as delivered from the stream (SPEC §4.6)."""

    job_id: str
    kzg_key: str
    ausloeser_turn_id: str
    pair: Pair
    delivery_count: int
    ausgeloest_am: datetime | None = None
    """The queueing turn's own time: the promotion happens as of then (SPEC §11)."""


@dataclass(frozen=True)
class QueueState:
    length: int
    pending: int
    consumers: tuple[str, ...]
    pending_jobs: tuple[PromotionJobData, ...]


@dataclass(frozen=True)
class SessionState:
    turns: tuple[SessionTurnRecord, ...]
    summary: str
    ttl_seconds: int


@dataclass(frozen=True)
class SessionTurnRecord:
    """A session turn (SPEC §3), one JSON item of the list."""

    role: str
    text: str
    turn_id: str = ""
    created_at: datetime | None = None
    """When the turn was made; None until the use case stamps it (the caller's, else ``as_of``, else now)."""
    intention: str = ""
    emotion: str = ""
    modus: str = ""
    arousal: float = 0.0
    emotions_vektor: str = ""


@dataclass(frozen=True)
class AppendResult:
    turn_count: int
    summarized: bool
    trimmed: bool
    repeated: bool = False
    """A resent turn the session held already: nothing was appended (AppendSessionTurnRequest.resend_safe)."""


class Appended(NamedTuple):
    """One turn's append as the session list took it: its length after, and whether it was a repeat."""

    length: int
    repeated: bool


@dataclass
class EraseCounts:
    """What one erasure removed from Redis."""

    entries: int = 0
    session_keys: int = 0
    hash_dirty: int = 0
    cluster_keys: int = 0
    profile_keys: int = 0
    queue_jobs: int = 0
    stream_cutoff: str = "0-0"
    characters: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class ExportChunk:
    """One chunk of a pair's export; the first also carries the session and the pipeline's profile."""

    entries: list[KzgEntry]
    """The entries as exported: their fields (without vector) and whether each was queued for promotion."""
    session: SessionState | None = None
    profile: Profile | None = None


@dataclass
class ImportCounts:
    entries: int = 0
    queued: int = 0
    session_turns: int = 0
    skipped_expired: int = 0
    profile: int = 0
