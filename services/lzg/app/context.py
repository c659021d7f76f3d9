"""What every LZG use case shares: one per process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from novaberg_core.clusters import ClusterTable
from novaberg_core.embedding import EmbeddingProvider, ModelProfile
from novaberg_core.pipeline_log import LogScope, PipelineLog
from services.lzg.cache import PairCache
from services.lzg.store import LzgStore

__all__ = ["NO_TURN", "LzgContext", "UseCase"]

NO_TURN: Final = LogScope("")
"""The ``turn`` of a call outside any turn. A use case takes the caller's turn and span as a
:class:`LogScope` whose pair and time are unset: it places its records with its own ``pair``."""


@dataclass(frozen=True)
class LzgContext:
    """The store, the embedding provider and its measured profile, the clusters, the log, the cache."""

    store: LzgStore
    provider: EmbeddingProvider
    profile: ModelProfile
    """The model's thresholds (SPEC §2): match, anchor, embedding layer, usage."""
    clusters: ClusterTable
    log: PipelineLog
    cache: PairCache
    """The pairs' node vectors, read with the pair's generation (nodes can be deleted: ``rights.py``)."""


class UseCase:
    """A use case over the shared context, whose parts it holds under their own names."""

    def __init__(self, ctx: LzgContext) -> None:
        self.store = ctx.store
        self.provider = ctx.provider
        self.profile = ctx.profile
        self.clusters = ctx.clusters
        self.log = ctx.log
        self.cache = ctx.cache
