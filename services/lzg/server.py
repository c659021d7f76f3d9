"""LZG server wiring (STYLE rule 3): store and model guard, embedding provider, pipeline log, servicer."""

from __future__ import annotations

from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.bootstrap import profiled_provider, run_from_env, sampled_until_shutdown
from novaberg_core.clusters import default_clusters
from novaberg_core.embedding import EmbeddingProvider, ModelProfile
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.server import RunningServer
from novaberg_core.server import create_server as create_grpc_server
from services.lzg.config import LzgConfig
from services.lzg.engine import LzgEngine
from services.lzg.servicer import LzgServicer
from services.lzg.store import LzgStore

FULL_SERVICE_NAME = lzg_pb2.DESCRIPTOR.services_by_name["LzgService"].full_name


async def create_server(
    cfg: LzgConfig,
    *,
    provider: EmbeddingProvider | None = None,
    profile: ModelProfile | None = None,
    log: PipelineLog | None = None,
) -> RunningServer:
    """Start the LZG service: migrations, model guard (SPEC §2), then serve (SPEC §5).

    The vector column takes the provider's dimension at the first migration; a store filled by
    another model or dimension refuses to start (ModelMismatch). ``profile`` defaults to the
    provider's measured profile; a model without one refuses to start.
    """
    provider, profile = profiled_provider(provider, profile)
    log = log or PipelineLog.from_env("System", tls=cfg.common.tls)
    store = await LzgStore.open(cfg.postgres_url, dimension=provider.dimension, max_size=cfg.pool_max_size)
    try:
        await store.check_model(provider.stamp)
        await log.start()
        engine = LzgEngine(
            store, provider, profile, default_clusters(), log, cache_max_bytes=cfg.cache_max_mb << 20
        )
        servicer = LzgServicer(engine)
        stop_sampling = sampled_until_shutdown(store.graph_size, min_interval_s=30.0)  # memory growth, when scraped
        return await create_grpc_server(
            cfg.common,
            lambda server: lzg_pb2_grpc.add_LzgServiceServicer_to_server(servicer, server),
            [FULL_SERVICE_NAME],
            on_shutdown=[stop_sampling, log.close, store.close],
        )
    except BaseException:
        await store.close()
        raise


def main() -> None:
    """``python -m services.lzg``."""
    run_from_env(LzgConfig.from_env, create_server)
