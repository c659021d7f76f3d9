"""A real LZG server on port 0 over a fresh database, with the offline model, and a stub on a real channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.embedding import EmbeddingProvider, make_provider
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from novaberg_core.server import insecure_channel
from services.lzg.config import LzgConfig
from services.lzg.server import create_server


def lzg_config(pg_url: str) -> LzgConfig:
    return LzgConfig(common=CommonConfig(service_name="lzg", host="127.0.0.1", port=0), postgres_url=pg_url)


@pytest.fixture(scope="session")
def provider() -> EmbeddingProvider:
    """all-MiniLM-L6-v2 int8, the offline default; its profile supplies the thresholds."""
    return make_provider("minilm")


@pytest.fixture
def sink() -> InMemorySink:
    return InMemorySink()


@pytest.fixture
def plog(sink: InMemorySink) -> PipelineLog:
    """The server's pipeline-log client; ``await plog.flush()`` moves its records into ``sink``."""
    return PipelineLog(sink)


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
