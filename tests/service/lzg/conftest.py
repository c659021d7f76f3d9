"""A real LZG server on port 0 over a fresh database, with the offline model, and a stub on a real channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.server import insecure_channel
from services.lzg.config import LzgConfig
from services.lzg.server import create_server


def lzg_config(pg_url: str) -> LzgConfig:
    return LzgConfig(common=CommonConfig(service_name="lzg", host="127.0.0.1", port=0), postgres_url=pg_url)


@pytest.fixture
async def lzg_stub(
    pg_url: str, provider: EmbeddingProvider, plog: PipelineLog
) -> AsyncIterator[lzg_pb2_grpc.LzgServiceStub]:
    running = await create_server(lzg_config(pg_url), provider=provider, log=plog)
    channel = insecure_channel(running.target)
    try:
        yield lzg_pb2_grpc.LzgServiceStub(channel)
    finally:
        await channel.close()
        await running.stop(None)
