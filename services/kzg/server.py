"""KZG server wiring (STYLE rule 3): store, embedding provider, pipeline log, servicer."""

from __future__ import annotations

from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg_core.bootstrap import profiled_provider, run_from_env, sampled_until_shutdown
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.server import RunningServer
from novaberg_core.server import create_server as create_grpc_server
from services.kzg.config import KzgConfig
from services.kzg.memory import KzgMemory
from services.kzg.servicer import KzgServicer
from services.kzg.store import KzgStore
from services.kzg.summary import Summariser

FULL_SERVICE_NAME = kzg_pb2.DESCRIPTOR.services_by_name["KzgService"].full_name


async def create_server(
    cfg: KzgConfig,
    *,
    provider: EmbeddingProvider | None = None,
    log: PipelineLog | None = None,
    summariser: Summariser | None = None,
    retrieval_threshold: float | None = None,
) -> RunningServer:
    """Start the KZG service: model guard, index, consumer group, then serve (SPEC §2, §4).

    ``retrieval_threshold`` defaults to the provider's profile (``kzg_retrieval``); a model
    without a measured profile refuses to start.
    """
    provider, profile = profiled_provider(provider)
    threshold = retrieval_threshold if retrieval_threshold is not None else profile.kzg_retrieval
    log = log or PipelineLog.from_env("System", tls=cfg.common.tls)
    store = KzgStore.from_url(cfg.redis_url, dimension=provider.dimension, vector_algorithm=cfg.vector_algorithm)
    memory = KzgMemory(
        store, provider, log, retrieval_threshold=threshold, reinforcement=cfg.reinforcement,
        summariser=summariser, reclaim_idle_ms=cfg.reclaim_idle_ms,
    )
    try:
        await memory.start()
        await log.start()
    except BaseException:
        await store.close()
        raise
    servicer = KzgServicer(memory)
    # Queue depth and lag, index size: read from Redis only when scraped, at most every 10 s.
    stop_sampling = sampled_until_shutdown(store.queue_metrics)
    return await create_grpc_server(
        cfg.common,
        lambda server: kzg_pb2_grpc.add_KzgServiceServicer_to_server(servicer, server),
        [FULL_SERVICE_NAME],
        on_shutdown=[stop_sampling, log.close, store.close],
    )


def main() -> None:
    """``python -m services.kzg``."""
    run_from_env(KzgConfig.from_env, create_server)
