"""The LZG's use cases composed over one shared context: what the servicers and the rights hold.

Each operation lives in its module under ``services/lzg/app/`` (promotion, read, usage, decay,
browse, registry); this facade builds them once per process and offers their operations under
one name. The domain types are in ``services/lzg/types.py``.
"""

from __future__ import annotations

from novaberg_core.clusters import ClusterTable
from novaberg_core.embedding import EmbeddingProvider, ModelProfile
from novaberg_core.pipeline_log import PipelineLog
from services.lzg.app.browse import Browse
from services.lzg.app.context import LzgContext
from services.lzg.app.decay import Decay
from services.lzg.app.promotion import Promotion
from services.lzg.app.read import Read
from services.lzg.app.registry import Registry
from services.lzg.app.usage import Usage
from services.lzg.cache import PairCache
from services.lzg.store import LzgStore
from services.lzg.types import PromotionInput

__all__ = ["LzgEngine", "PromotionInput"]  # the input of ``promote``, for its callers


class LzgEngine:
    """One per process: the shared context and every use case over it."""

    def __init__(
        self,
        store: LzgStore,
        provider: EmbeddingProvider,
        profile: ModelProfile,
        clusters: ClusterTable,
        log: PipelineLog,
        *,
        cache_max_bytes: int = 1 << 30,
    ) -> None:
        if provider.dimension != store.dimension:
            raise ValueError(f"provider dimension {provider.dimension} != store dimension {store.dimension}")
        self.store = store
        self.provider = provider
        self.profile = profile
        self.clusters = clusters
        self.log = log
        # Read with the pair's generation (nodes can be deleted: services/lzg/rights.py).
        self.cache = PairCache(store.dimension, cache_max_bytes)
        self.context = LzgContext(store, provider, profile, clusters, log, self.cache)

        self.promotion = Promotion(self.context)
        self.validate_promotion = self.promotion.validate
        self.promote = self.promotion.promote  # SPEC §5.3, Trigger 1

        self.read = Read(self.context)
        self.query_vector = self.read.query_vector
        self.spreading_read = self.read.spreading_read  # SPEC §5.8, §11
        self.render = self.read.render  # SPEC §5.9
        self.missing_nodes = self.read.missing_nodes

        self.usage = Usage(self.context)
        self.reinforce_used = self.usage.reinforce_used  # SPEC §5.6
        self.trigger2 = self.usage.trigger2  # SPEC §5.5

        self.decay = Decay(self.context)
        self.run_decay = self.decay.run_decay  # SPEC §5.7

        self.browse = Browse(self.context)
        self.node = self.browse.node
        self.nodes = self.browse.nodes
        self.edges = self.browse.edges
        self.pair_stats = self.browse.pair_stats

        self.registry = Registry(self.context)  # SPEC §5.5, Trigger 3
        self.upsert_entity = self.registry.upsert_entity
        self.resolve_entities = self.registry.resolve_entities
        self.entities = self.registry.entities
        self.merge_entities = self.registry.merge_entities
        self.delete_entity = self.registry.delete_entity
        self.upsert_timeline = self.registry.upsert_timeline
        self.update_timeline = self.registry.update_timeline
        self.delete_timeline = self.registry.delete_timeline
        self.timelines = self.registry.timelines
