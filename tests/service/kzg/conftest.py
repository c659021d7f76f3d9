"""A real KZG server on port 0 over the test Redis, and a stub on a real channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.server import insecure_channel
from services.kzg.config import KzgConfig
from services.kzg.server import create_server


@pytest.fixture
async def kzg_stub(
    redis_url: str, provider: EmbeddingProvider, plog: PipelineLog
) -> AsyncIterator[kzg_pb2_grpc.KzgServiceStub]:
    cfg = KzgConfig(common=CommonConfig(service_name="kzg", host="127.0.0.1", port=0), redis_url=redis_url)
    running = await create_server(cfg, provider=provider, log=plog)
    channel = insecure_channel(running.target)
    try:
        yield kzg_pb2_grpc.KzgServiceStub(channel)
    finally:
        await channel.close()
        await running.stop(None)
