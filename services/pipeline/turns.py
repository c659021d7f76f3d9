"""One turn through the memory core: observe, build the dossier, dispatch (SPEC §6, §7, mem §13.3).

Each step lives in its module under ``services/pipeline/app/`` (``observe``, ``dossier``,
``dispatch``; what Observe and Dispatch share in ``turn_writer``, what all share in ``context``);
this facade builds them once per process and offers their operations under one name. Each step
checks its request completely first (:mod:`services.pipeline.validation`), so a refused request
changes nothing anywhere; then it calls the KZG and LZG services with one ``turn_id`` (and the
step's ``span_id``) and writes its pipeline-log records under that ``turn_id``.

Time split: ``model_ms`` is the time spent in the embedding model inside this service (the query,
the KZG embed texts, which are computed here and handed to the KZG so its write stays a pure
store operation, and the answer, handed to the LZG's usage reinforcement); ``memory_ms`` is
everything else the call spent. One call runs one model batch at a time, so no model time is
counted twice.
"""

from __future__ import annotations

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg_core.clusters import ClusterTable
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.peers import KzgPeer, LzgPeer
from novaberg_core.pipeline_log import PipelineLog
from services.pipeline.analyzer import Analyzer, EntityRegistry
from services.pipeline.app.context import PipelineContext, Timing, peer_models
from services.pipeline.app.dispatch import Dispatch
from services.pipeline.app.dossier import Dossier
from services.pipeline.app.observe import Observe
from services.pipeline.app.turn_writer import TurnWriter
from services.pipeline.deadline import PeerSilence
from services.pipeline.dossier import PerspectiveWeights
from services.pipeline.store import ClusterStore

__all__ = ["Timing", "TurnPipeline"]


class TurnPipeline:
    """Observe, build the dossier, dispatch — the three steps of a turn (SPEC §7)."""

    def __init__(
        self,
        *,
        kzg: kzg_pb2_grpc.KzgServiceStub,
        lzg: lzg_pb2_grpc.LzgServiceStub,
        clusters: ClusterStore,
        cluster_table: ClusterTable,
        analyzer: Analyzer,
        provider: EmbeddingProvider,
        log: PipelineLog,
        weights: PerspectiveWeights | None = None,
        kzg_top_k: int = 10,
        recall_k: int = 10,
        registry: EntityRegistry | None = None,
        peer_timeout_s: float = 10.0,
        silent_peers: PeerSilence | None = None,
    ) -> None:
        kzg_peer, lzg_peer = KzgPeer(kzg, peer_timeout_s), LzgPeer(lzg, peer_timeout_s)
        self.context = PipelineContext(
            kzg=kzg_peer, lzg=lzg_peer, clusters=clusters, cluster_table=cluster_table, analyzer=analyzer,
            provider=provider, log=log, models=peer_models(provider, kzg_peer, lzg_peer),
            weights=weights or PerspectiveWeights(), kzg_top_k=kzg_top_k, recall_k=recall_k, registry=registry,
            silent_peers=silent_peers or PeerSilence(),
        )  # fmt: skip
        writer = TurnWriter(self.context)

        self.observing = Observe(self.context, writer)
        self.observe = self.observing.observe  # ObserveTurn
        self.observe_batch = self.observing.observe_batch  # ObserveTurns

        self.dossier = Dossier(self.context)
        self.build_dossier = self.dossier.build_dossier  # BuildDossier

        self.dispatching = Dispatch(self.context, writer)
        self.dispatch = self.dispatching.dispatch  # Dispatch
