"""What every step of a turn shares: the peers, the pair state, the model, the log, the checks.

One :class:`PipelineContext` per process. Besides the parts it holds, it offers what more than one
step needs: one model batch counted as model time (:class:`Timing`), the check that a caller's
magnets are the pair's own (SPEC §10), and the check that served node ids are the pair's own,
with the ids this process already served remembered (:class:`PairNodeCache`).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from opentelemetry import trace

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.clusters import ClusterTable
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.errors import InvalidArgument, NotFound
from novaberg_core.peers import KzgPeer, LzgPeer
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.telemetry import set_turn_attributes, tracer
from novaberg_core.timeutil import as_of_or_now
from services.pipeline.analyzer import Analyzer, EntityRegistry
from services.pipeline.deadline import PeerSilence
from services.pipeline.dossier import PerspectiveWeights
from services.pipeline.model_guard import ModelGuard
from services.pipeline.store import ClusterStore

__all__ = [
    "ROLE",
    "TRACER",
    "PairNodeCache",
    "PipelineContext",
    "Timing",
    "peer_models",
    "turn_time",
]

TRACER = tracer("services.pipeline")

ROLE = {common_pb2.BEOBACHTER_USER: "user", common_pb2.BEOBACHTER_ASSISTANT: "assistant"}
"""A turn's ``beobachter`` as the session and the pipeline log name it."""


Dated = (
    pipeline_pb2.ObserveTurnRequest
    | pipeline_pb2.ObservedTurn
    | pipeline_pb2.BuildDossierRequest
    | pipeline_pb2.DispatchRequest
)
"""A request (or a batch's turn) with an optional ``as_of``."""


def turn_time(dated: Dated) -> datetime:
    """The turn's time: the caller's ``as_of`` (a replay's simulated time), else now."""
    return as_of_or_now(dated.as_of if dated.HasField("as_of") else None)


@dataclass(slots=True)
class Timing:
    """Where one call's time went: the embedding model in this service, and everything else."""

    started: float = field(default_factory=time.perf_counter)
    model_ms: float = 0.0
    model_turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while this call's batch runs: two steps of one call never overlap in the model's time."""

    def memory_ms(self) -> float:
        return max((time.perf_counter() - self.started) * 1000.0 - self.model_ms, 0.0)


class PairNodeCache:
    """Node ids known to belong to a pair, learnt from the dossiers this process served.

    A node never changes its pair and is never hard-deleted (SPEC §5.7, §10), so a node once
    served to a pair belongs to it for good: Dispatch checks only ids it has not seen (another
    replica's dossier, or a caller's guess) against the LZG. Bounded: least recently used pairs
    are forgotten first, and a pair keeps at most ``max_ids`` ids.
    """

    def __init__(self, max_pairs: int = 10_000, max_ids: int = 1_000) -> None:
        self.max_pairs = max_pairs
        self.max_ids = max_ids
        self._ids: OrderedDict[tuple[str, str], set[int]] = OrderedDict()

    def add(self, pair: common_pb2.Pair, node_ids: list[int]) -> None:
        key = (pair.user_id, pair.character_id)
        known = self._ids.pop(key, set())
        if len(known) + len(node_ids) > self.max_ids:
            known = set()
        known.update(node_ids)
        self._ids[key] = known
        while len(self._ids) > self.max_pairs:
            self._ids.popitem(last=False)

    def unknown(self, pair: common_pb2.Pair, node_ids: list[int]) -> list[int]:
        known = self._ids.get((pair.user_id, pair.character_id), set())
        return [node_id for node_id in node_ids if node_id not in known]


def peer_models(provider: EmbeddingProvider, kzg: KzgPeer, lzg: LzgPeer) -> ModelGuard:
    """The guard comparing both peers' models with the pipeline's (SPEC §2)."""
    return ModelGuard(provider.stamp, {"KZG": kzg.get_model, "LZG": lzg.get_model})


@dataclass(eq=False)
class PipelineContext:
    """The peers, the pair state, the analyzer, the model, the log and the dossier's settings."""

    kzg: KzgPeer
    lzg: LzgPeer
    clusters: ClusterStore
    cluster_table: ClusterTable
    analyzer: Analyzer
    provider: EmbeddingProvider
    log: PipelineLog
    models: ModelGuard
    weights: PerspectiveWeights
    kzg_top_k: int
    recall_k: int
    registry: EntityRegistry | None
    """Resolves the names a question mentions (SPEC §11: entity candidates); None → no entity source."""
    known_nodes: PairNodeCache = field(default_factory=PairNodeCache)
    silent_peers: PeerSilence = field(default_factory=PeerSilence)
    """Peers left out for a few seconds after they gave no answer (services.pipeline.deadline)."""

    async def begin(self, turn_id: str, pair: common_pb2.Pair) -> None:
        """What every step does once its request is checked: the peers' models are the pipeline's
        (SPEC §2; a peer that does not answer is asked on a later call, :meth:`ModelGuard.check`) and
        the call's span names the turn."""
        await self.models.check(silence=self.silent_peers)
        set_turn_attributes(trace.get_current_span(), turn_id, pair.user_id, pair.character_id)

    async def open_turn(
        self, request: pipeline_pb2.ObserveTurnRequest | pipeline_pb2.DispatchRequest, analysis: str
    ) -> tuple[common_pb2.Pair, datetime]:
        """How observe and dispatch open a checked turn: :meth:`begin`, the turn's time, and the
        magnets of the caller's analysis (the field ``analysis``, when sent) checked as the pair's own.
        Returns the pair and the turn's time."""
        pair = request.pair
        await self.begin(request.turn_id, pair)
        as_of = turn_time(request)
        if request.HasField(analysis):
            await self.check_magnets(pair, getattr(request, analysis).magnets, analysis)
        return pair, as_of

    async def embed_texts(self, texts: list[str], timing: Timing) -> np.ndarray:
        """One batch through the model, counted as model time."""
        async with timing.model_turn:
            started = time.perf_counter()
            with TRACER.start_as_current_span("pipeline.embed") as span:
                span.set_attribute("novaberg.texts", len(texts))
                vectors = await self.provider.embed(texts)
            timing.model_ms += (time.perf_counter() - started) * 1000.0
        return vectors

    async def embed(self, text: str, timing: Timing) -> np.ndarray:
        return (await self.embed_texts([text], timing))[0]

    async def check_magnets(self, pair: common_pb2.Pair, magnets: common_pb2.Magnets, field: str) -> None:
        """A caller's magnet ids must be entities / a timeline ref of this very pair (SPEC §10)."""
        ids = list(magnets.entitaet_ids)
        if len(set(ids)) != len(ids):
            raise InvalidArgument(f"{field}.magnets.entitaet_ids must name each id at most once, got {ids}")
        if ids:
            listed = await self.lzg.list_entities(lzg_pb2.ListEntitiesRequest(pair=pair, ids=ids))
            missing = sorted(set(ids) - {e.id for e in listed.entities})
            if missing:
                raise InvalidArgument(f"{field}.magnets.entitaet_ids {missing} are not entities of this pair")
        if magnets.HasField("timeline_id"):
            timelines = await self.lzg.list_timelines(lzg_pb2.ListTimelinesRequest(pair=pair, ids=[magnets.timeline_id]))
            if magnets.timeline_id not in {t.id for t in timelines.timelines}:
                raise InvalidArgument(
                    f"{field}.magnets.timeline_id {magnets.timeline_id} is not a timeline ref of this pair"
                )

    async def check_served(self, pair: common_pb2.Pair, served: list[int]) -> None:
        """Served node ids must be nodes of this very pair; checked in one call before Dispatch writes anything."""
        node_ids = self.known_nodes.unknown(pair, served)
        if not node_ids:
            return
        checked = await self.lzg.check_nodes(lzg_pb2.CheckNodesRequest(pair=pair, node_ids=node_ids))
        if checked.missing:
            raise NotFound(f"served_node_ids {list(checked.missing)} are not nodes of this pair")
        self.known_nodes.add(pair, node_ids)

