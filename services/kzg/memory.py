"""The KZG's use cases composed over one shared context: what the servicer holds (SPEC §3, §4).

Each operation lives in its module under ``services/kzg/app/`` (session, storing, retrieval,
entries, promotion_queue; the rights in ``services/kzg/rights.py``); this facade builds them once
per process and offers their operations under one name.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from novaberg_core.canon import Canon, default_canon
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.timeutil import utc_now
from services.kzg.app.context import KzgContext
from services.kzg.app.entries import Entries
from services.kzg.app.promotion_queue import DEFAULT_RECLAIM_IDLE_MS, PromotionQueue
from services.kzg.app.retrieval import DEFAULT_TOP_K, MAX_TOP_K, Retrieval
from services.kzg.app.session import Session, session_as_of
from services.kzg.app.storing import Storing
from services.kzg.domain import REINFORCEMENT_MODES
from services.kzg.store import KzgStore, entry_fields
from services.kzg.summary import ExtractiveSummariser, Summariser

__all__ = ["DEFAULT_RECLAIM_IDLE_MS", "DEFAULT_TOP_K", "MAX_TOP_K", "KzgMemory", "entry_fields", "session_as_of"]


class KzgMemory:
    """One per process: the shared context and every use case over it."""

    def __init__(
        self,
        store: KzgStore,
        provider: EmbeddingProvider,
        log: PipelineLog,
        *,
        retrieval_threshold: float,
        canon: Canon | None = None,
        reinforcement: str = "thema",
        summariser: Summariser | None = None,
        reclaim_idle_ms: int = DEFAULT_RECLAIM_IDLE_MS,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        if reinforcement not in REINFORCEMENT_MODES:
            raise ValueError(f"reinforcement must be one of {REINFORCEMENT_MODES}, got {reinforcement!r}")
        if provider.dimension != store.dimension:
            raise ValueError(f"provider dimension {provider.dimension} != store dimension {store.dimension}")
        self.context = KzgContext(
            store=store,
            provider=provider,
            log=log,
            canon=canon or default_canon(),
            retrieval_threshold=retrieval_threshold,
            reinforcement=reinforcement,
            summariser=summariser or ExtractiveSummariser(),
            reclaim_idle_ms=reclaim_idle_ms,
            clock=clock,
        )
        self.store = store
        self.provider = provider
        self.log = log
        self.retrieval_threshold = retrieval_threshold

        self.session = Session(self.context)  # SPEC §3
        self.append_session_turn = self.session.append_session_turn
        self.append_session_turns = self.session.append_session_turns
        self.get_session = self.session.get_session

        self.storing = Storing(self.context)  # SPEC §4.1–§4.4
        self.store_entry = self.storing.store_entry
        self.store_entries = self.storing.store_entries
        self.bulk_fields = self.storing.bulk_fields

        self.retrieval = Retrieval(self.context)  # SPEC §4.5
        self.retrieve = self.retrieval.retrieve

        self.entries = Entries(self.context)
        self.get_entry = self.entries.get_entry
        self.delete_entry = self.entries.delete_entry
        self.mark_hash_dirty = self.entries.mark_hash_dirty

        self.promotion_queue = PromotionQueue(self.context)  # SPEC §4.6
        self.read_promotion_jobs = self.promotion_queue.read_promotion_jobs
        self.ack_promotion_jobs = self.promotion_queue.ack_promotion_jobs
        self.inspect_promotion_queue = self.promotion_queue.inspect_promotion_queue

    @property
    def summariser(self) -> Summariser:
        """Folds the oldest session turns into the summary (SPEC §3); replaceable at run time."""
        return self.context.summariser

    @summariser.setter
    def summariser(self, summariser: Summariser) -> None:
        self.context.summariser = summariser

    async def start(self) -> None:
        """Model guard, index and consumer group, in that order (SPEC §2, §4.5, §4.6)."""
        await self.store.check_model(self.provider.stamp)
        await self.store.ensure_index()
        await self.store.ensure_promotion_group()
