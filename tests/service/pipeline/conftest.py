"""Pipeline service tests: the real KZG and LZG servers on port 0 over real stores, the pipeline on port 0.

The pipeline's own log goes to an in-memory sink so its records can be read back directly; the KZG and
the LZG share another, so a test sees the records a callee writes for the pipeline's calls (each event is
logged once, where it happens).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc.aio
import pytest

from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.pipeline_log import InMemorySink, PendingRecord, PipelineLog
from novaberg_core.server import RunningServer
from services.kzg.config import KzgConfig
from services.kzg.server import create_server as create_kzg_server
from services.lzg.config import LzgConfig
from services.lzg.server import create_server as create_lzg_server
from services.pipeline.analyzer import Analyzer
from services.pipeline.config import PipelineConfig
from services.pipeline.server import create_server as create_pipeline_server
from tests.service.pipeline.proxies import PAUSE_S, PeerProxy, Proxied, unary_methods


@dataclass
class Peers:
    kzg: RunningServer
    lzg: RunningServer
    redis_url: str
    sink: InMemorySink = field(default_factory=InMemorySink)
    """Where the KZG's and the LZG's records go (when the fixture built their log)."""
    log: PipelineLog = field(default_factory=PipelineLog)

    async def records(self, turn_id: str) -> list[PendingRecord]:
        """The records the KZG and the LZG wrote under ``turn_id``."""
        await self.log.flush()
        return [r for r in self.sink.records if r.turn_id == turn_id]


@pytest.fixture
async def peers(redis_url: str, pg_url: str, provider: EmbeddingProvider) -> AsyncIterator[Peers]:
    sink = InMemorySink()
    log = PipelineLog(sink)
    kzg = await create_kzg_server(
        KzgConfig(common=CommonConfig("kzg"), redis_url=redis_url), provider=provider, log=log
    )
    lzg = await create_lzg_server(
        LzgConfig(common=CommonConfig("lzg"), postgres_url=pg_url), provider=provider, log=log
    )
    try:
        yield Peers(kzg, lzg, redis_url, sink, log)
    finally:
        await lzg.stop(None)
        await kzg.stop(None)


@dataclass
class PipelineUnderTest:
    server: RunningServer
    sink: InMemorySink
    log: PipelineLog
    pipeline: pipeline_pb2_grpc.PipelineServiceStub
    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub
    peers: Peers

    async def records(self, turn_id: str) -> list[PendingRecord]:
        """The records the pipeline itself wrote under ``turn_id``."""
        await self.log.flush()
        return [r for r in self.sink.records if r.turn_id == turn_id]


async def start_pipeline(
    peers: Peers, provider: EmbeddingProvider, analyzer: Analyzer | None = None
) -> tuple[RunningServer, InMemorySink, PipelineLog]:
    sink = InMemorySink()
    log = PipelineLog(sink)
    cfg = PipelineConfig(
        common=CommonConfig("pipeline"),
        kzg_addr=peers.kzg.target,
        lzg_addr=peers.lzg.target,
        redis_url=peers.redis_url,
    )
    server = await create_pipeline_server(cfg, provider=provider, log=log, analyzer=analyzer)
    return server, sink, log


@pytest.fixture
async def service(peers: Peers, provider: EmbeddingProvider) -> AsyncIterator[PipelineUnderTest]:
    server, sink, log = await start_pipeline(peers, provider)
    channels = [grpc.aio.insecure_channel(t) for t in (server.target, peers.kzg.target, peers.lzg.target)]
    try:
        yield PipelineUnderTest(
            server=server,
            sink=sink,
            log=log,
            pipeline=pipeline_pb2_grpc.PipelineServiceStub(channels[0]),
            kzg=kzg_pb2_grpc.KzgServiceStub(channels[1]),
            lzg=lzg_pb2_grpc.LzgServiceStub(channels[2]),
            peers=peers,
        )
    finally:
        for channel in channels:
            await channel.close()
        await server.stop(None)


@pytest.fixture
async def proxied(peers: Peers, provider: EmbeddingProvider) -> AsyncIterator[Proxied]:
    """A pipeline over proxies of the real peers, not called yet (its model check still to come)."""
    kzg = PeerProxy("novaberg.kzg.v1.KzgService", unary_methods(kzg_pb2.DESCRIPTOR.services_by_name["KzgService"]),
                    peers.kzg.target)  # fmt: skip
    lzg = PeerProxy("novaberg.lzg.v1.LzgService", unary_methods(lzg_pb2.DESCRIPTOR.services_by_name["LzgService"]),
                    peers.lzg.target)  # fmt: skip
    started = [await kzg.start(), await lzg.start()]
    sink = InMemorySink()
    log = PipelineLog(sink)
    cfg = PipelineConfig(
        common=CommonConfig("pipeline"), kzg_addr=kzg.address, lzg_addr=lzg.address, redis_url=peers.redis_url,
        silent_peer_pause_s=PAUSE_S,
    )
    server = await create_pipeline_server(cfg, provider=provider, log=log)
    channel = grpc.aio.insecure_channel(server.target)
    kzg_channel, lzg_channel = grpc.aio.insecure_channel(peers.kzg.target), grpc.aio.insecure_channel(peers.lzg.target)
    try:
        yield Proxied(
            pipeline_pb2_grpc.PipelineServiceStub(channel), kzg, lzg, sink, log,
            kzg_pb2_grpc.KzgServiceStub(kzg_channel), lzg_pb2_grpc.LzgServiceStub(lzg_channel),
        )  # fmt: skip
    finally:
        await kzg_channel.close()
        await lzg_channel.close()
        await channel.close()
        await server.stop(None)
        for proxy_server, proxy_channel in started:
            await proxy_server.stop(None)
            await proxy_channel.close()
