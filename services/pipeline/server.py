"""Pipeline server wiring (STYLE rule 3): peers, cluster store, analyzer, embedding provider, log."""

from __future__ import annotations

from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.bootstrap import run_from_env
from novaberg_core.channels import Peers
from novaberg_core.clusters import ClusterTable, default_clusters
from novaberg_core.embedding import EmbeddingProvider, provider_from_env
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.server import RunningServer
from novaberg_core.server import create_server as create_grpc_server
from services.pipeline.analyzer import Analyzer, EntityRegistry, OfflineAnalyzer, OllamaChatAnalyzer
from services.pipeline.config import PipelineConfig
from services.pipeline.deadline import PeerSilence
from services.pipeline.dossier import PerspectiveWeights
from services.pipeline.lzg_registry import LzgRegistry
from services.pipeline.registry_cache import RegistryCache
from services.pipeline.servicer import PipelineServicer
from services.pipeline.store import ClusterStore
from services.pipeline.turns import TurnPipeline

__all__ = ["FULL_SERVICE_NAME", "build_analyzer", "create_server", "main"]

FULL_SERVICE_NAME = pipeline_pb2.DESCRIPTOR.services_by_name["PipelineService"].full_name


def build_analyzer(cfg: PipelineConfig, registry: EntityRegistry) -> Analyzer:
    """The analyzer ``cfg.analyzer`` names (``offline`` rules or the ``ollama`` chat model)."""
    if cfg.analyzer == "ollama":
        return OllamaChatAnalyzer(
            registry,
            host=cfg.ollama_url,
            model=cfg.ollama_chat_model,
            timeout_s=cfg.ollama_timeout_s,
            fallback=OfflineAnalyzer(registry) if cfg.ollama_fallback_offline else None,
        )
    return OfflineAnalyzer(registry)


async def create_server(
    cfg: PipelineConfig,
    *,
    provider: EmbeddingProvider | None = None,
    log: PipelineLog | None = None,
    analyzer: Analyzer | None = None,
    cluster_table: ClusterTable | None = None,
) -> RunningServer:
    """Start the pipeline service: Redis reachable, peers dialled, then serve (SPEC §7)."""
    provider = provider or provider_from_env()
    log = log or PipelineLog.from_env("System", tls=cfg.common.tls)
    clusters = ClusterStore.from_url(cfg.redis_url)
    peers = Peers.connect(cfg.kzg_addr, cfg.lzg_addr, cfg.common.tls)
    try:
        await clusters.ping()
        await log.start()
    except BaseException:
        await clusters.close()
        await peers.close()
        raise
    silent_peers = PeerSilence(cfg.silent_peer_pause_s)
    registry = LzgRegistry(peers.lzg, cfg.peer_timeout_s, RegistryCache(cfg.registry_cache_s), silent_peers)
    pipeline = TurnPipeline(
        kzg=peers.kzg,
        lzg=peers.lzg,
        clusters=clusters,
        cluster_table=cluster_table or default_clusters(),
        analyzer=analyzer or build_analyzer(cfg, registry),
        provider=provider,
        log=log,
        weights=PerspectiveWeights(user=cfg.gewicht_user, assistant=cfg.gewicht_assistant),
        kzg_top_k=cfg.kzg_top_k,
        recall_k=cfg.recall_k,
        registry=registry,
        peer_timeout_s=cfg.peer_timeout_s,
        silent_peers=silent_peers,
    )
    servicer = PipelineServicer(pipeline)
    return await create_grpc_server(
        cfg.common,
        lambda server: pipeline_pb2_grpc.add_PipelineServiceServicer_to_server(servicer, server),
        [FULL_SERVICE_NAME],
        on_shutdown=[log.close, peers.close, clusters.close],
    )


def main() -> None:
    """``python -m services.pipeline``."""
    run_from_env(PipelineConfig.from_env, create_server)
