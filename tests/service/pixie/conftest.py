"""Pixie service tests: real KZG/LZG/log servers on port 0, real Redis and PostgreSQL, Pixie replicas.

Each Pixie replica is a :class:`PixieApp` with its own pool, channels and pipeline-log sink,
served on its own port, so two replicas in one process coordinate exactly as two pods would:
through PostgreSQL (claims, advisory locks) and the KZG stream's consumer group.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc.aio
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.log.v1 import log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.pipeline_log import InMemorySink, LogSink, PendingRecord, PipelineLog
from novaberg_core.server import RunningServer
from services.kzg.config import KzgConfig
from services.kzg.server import create_server as create_kzg_server
from services.log.config import LogConfig
from services.log.server import create_server as create_log_server
from services.lzg.config import LzgConfig
from services.lzg.server import create_server as create_lzg_server
from services.pixie.config import PixieConfig
from services.pixie.server import PixieApp, create_server
from services.pixie.types import StepHook

REPO_ROOT = Path(__file__).resolve().parents[3]
PAIR = common_pb2.Pair(user_id="meister", character_id="nova")
UNREACHABLE = "localhost:1"
"""An address nothing listens on: calls fail UNAVAILABLE at once."""

_entry_numbers = itertools.count(1)


@pytest.fixture
def kzg_log() -> PipelineLog:
    """The KZG's own pipeline log (in memory): what it records of Pixie's reads and deletes."""
    return PipelineLog(InMemorySink(), quelle="KZG")


@pytest.fixture
async def kzg_server(
    redis_url: str, provider: EmbeddingProvider, kzg_log: PipelineLog
) -> AsyncIterator[RunningServer]:
    cfg = KzgConfig(common=CommonConfig("kzg"), redis_url=redis_url, reinforcement="aus")
    running = await create_kzg_server(cfg, provider=provider, log=kzg_log)
    try:
        yield running
    finally:
        await running.stop(None)


@pytest.fixture
async def log_server(pg_url: str) -> AsyncIterator[RunningServer]:
    running = await create_log_server(LogConfig(common=CommonConfig("log"), postgres_url=pg_url))
    try:
        yield running
    finally:
        await running.stop(None)


@pytest.fixture
async def log_api(log_server: RunningServer) -> AsyncIterator[log_pb2_grpc.LogServiceStub]:
    async with grpc.aio.insecure_channel(log_server.target) as channel:
        yield log_pb2_grpc.LogServiceStub(channel)


@pytest.fixture
async def lzg_server(pg_url: str, provider: EmbeddingProvider) -> AsyncIterator[RunningServer]:
    running = await create_lzg_server(
        LzgConfig(common=CommonConfig("lzg"), postgres_url=pg_url), provider=provider,
        log=PipelineLog(InMemorySink()),
    )
    try:
        yield running
    finally:
        await running.stop(None)


@pytest.fixture
async def lzg(lzg_server: RunningServer) -> AsyncIterator[lzg_pb2_grpc.LzgServiceStub]:
    async with grpc.aio.insecure_channel(lzg_server.target) as channel:
        yield lzg_pb2_grpc.LzgServiceStub(channel)


@pytest.fixture
async def kzg(kzg_server: RunningServer) -> AsyncIterator[kzg_pb2_grpc.KzgServiceStub]:
    async with grpc.aio.insecure_channel(kzg_server.target) as channel:
        yield kzg_pb2_grpc.KzgServiceStub(channel)


async def store_entry(
    kzg: kzg_pb2_grpc.KzgServiceStub,
    inhalt: str,
    *,
    salienz: float = 0.8,
    themen: tuple[str, ...] = ("Garten",),
    pair: common_pb2.Pair = PAIR,
    turn_id: str | None = None,
) -> kzg_pb2.StoreEntryResponse:
    """One KZG write through the real service; salienz ≥ 0.7 (raw) queues it for promotion."""
    number = next(_entry_numbers)
    return await kzg.StoreEntry(
        kzg_pb2.StoreEntryRequest(
            pair=pair,
            beobachter=common_pb2.BEOBACHTER_USER,
            inhalt=inhalt,
            salience=common_pb2.SalienceResult(
                salienz=salienz, themen=list(themen), gedaechtnistyp="episodisch", dimension="interessen"
            ),
            turn=common_pb2.TurnContext(turn_id=turn_id or f"turn-{number}"),
            writer="tests.pixie",
        )
    )


@dataclass(frozen=True)
class QueueState:
    length: int
    pending: int


async def queue_state(kzg: kzg_pb2_grpc.KzgServiceStub) -> QueueState:
    """Length and pending count of the KZG promotion stream (InspectPromotionQueue)."""
    state = await kzg.InspectPromotionQueue(kzg_pb2.InspectPromotionQueueRequest(limit=1))
    return QueueState(state.length, state.pending)


async def expire(kzg: kzg_pb2_grpc.KzgServiceStub, kzg_key: str, pair: common_pb2.Pair = PAIR) -> None:
    """The entry vanishes as by TTL (deleted through the KZG service)."""
    await kzg.DeleteEntry(
        kzg_pb2.DeleteEntryRequest(pair=pair, kzg_key=kzg_key, turn=common_pb2.TurnContext(turn_id="test-expire"))
    )


@dataclass
class Replica:
    """One running Pixie replica: its app (worker, scheduler, store), server, API stub, log sink."""

    app: PixieApp
    server: RunningServer
    channel: grpc.aio.Channel
    api: pixie_pb2_grpc.PixieServiceStub
    sink: InMemorySink

    async def logged(self, node: str) -> list[PendingRecord]:
        """The replica's pipeline-log records of ``node`` so far (buffer flushed first)."""
        await self.app.plog.flush()
        return [r for r in self.sink.records if r.node == node]


@dataclass
class PixieCluster:
    """Starts Pixie replicas against one database and one set of services."""

    base: PixieConfig
    replicas: list[Replica] = field(default_factory=list)

    async def start(
        self,
        replica_id: str,
        *,
        background: bool = False,
        step_hook: StepHook | None = None,
        log_sink: LogSink | None = None,
        **overrides: Any,
    ) -> Replica:
        """A replica; its pipeline log goes to an in-memory sink, or to ``log_sink`` when given."""
        cfg = dataclasses.replace(self.base, replica_id=replica_id, **overrides)
        sink = InMemorySink()
        plog = PipelineLog(log_sink or sink, quelle="Pixie")
        app = await PixieApp.open(cfg, pipeline_log=plog, step_hook=step_hook)
        server = await create_server(cfg, app=app, background=background)
        channel = grpc.aio.insecure_channel(server.target)
        replica = Replica(app, server, channel, pixie_pb2_grpc.PixieServiceStub(channel), sink)
        self.replicas.append(replica)
        return replica

    async def stop(self, replica: Replica) -> None:
        """A graceful stop (SIGTERM path): the worker finishes its batch, runs are closed."""
        if replica in self.replicas:
            self.replicas.remove(replica)
        await replica.channel.close()
        await replica.server.stop(1.0)
        await replica.app.plog.close()  # flushes; an in-memory sink keeps its records

    async def close(self) -> None:
        for replica in list(self.replicas):
            await self.stop(replica)


def pixie_config(pg_url: str, *, kzg_addr: str, lzg_addr: str, log_addr: str) -> PixieConfig:
    """Test timing: short blocks, fast reclaim and backoff, so retries happen in milliseconds."""
    return PixieConfig(
        common=CommonConfig("pixie"),
        postgres_url=pg_url,
        kzg_addr=kzg_addr,
        lzg_addr=lzg_addr,
        log_addr=log_addr,
        replica_id="pixie-test",
        scheduler_interval_s=0.05,
        max_attempts=3,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        batch_size=32,
        block_ms=50,
        reclaim_idle_ms=150,
        concurrency=4,
        run_window_s=60.0,
        stale_run_s=30.0,
        daily_retry_s=3600.0,
        rpc_timeout_s=20.0,
    )


@pytest.fixture
async def kzg_only_cluster(pg_url: str, kzg_server: RunningServer) -> AsyncIterator[PixieCluster]:
    """Pixie with the real KZG; LZG and log unreachable (tests whose jobs never reach the LZG)."""
    cluster = PixieCluster(pixie_config(pg_url, kzg_addr=kzg_server.target, lzg_addr=UNREACHABLE, log_addr=""))
    try:
        yield cluster
    finally:
        await cluster.close()


@pytest.fixture
async def cluster(
    pg_url: str, kzg_server: RunningServer, lzg_server: RunningServer, log_server: RunningServer
) -> AsyncIterator[PixieCluster]:
    """Pixie with the real KZG, LZG and log services."""
    cluster = PixieCluster(
        pixie_config(pg_url, kzg_addr=kzg_server.target, lzg_addr=lzg_server.target, log_addr=log_server.target)
    )
    try:
        yield cluster
    finally:
        await cluster.close()


async def nodes_of(lzg: lzg_pb2_grpc.LzgServiceStub, pair: common_pb2.Pair = PAIR) -> list[lzg_pb2.Node]:
    """All nodes of the pair, active and inactive."""
    response = await lzg.ListNodes(lzg_pb2.ListNodesRequest(pair=pair, limit=1000, include_inactive=True))
    return list(response.nodes)


async def kzg_has(kzg: kzg_pb2_grpc.KzgServiceStub, kzg_key: str, pair: common_pb2.Pair = PAIR) -> bool:
    try:
        await kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=pair, kzg_key=kzg_key))
    except grpc.aio.AioRpcError as error:
        if error.code() == grpc.StatusCode.NOT_FOUND:
            return False
        raise
    return True


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Pixie processes a test started (:func:`spawn_pixie`); any still running is killed after it."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def spawn_pixie(
    pg_url: str, kzg_addr: str, lzg_addr: str, replica: str, port: int, log: Path, settings: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """A Pixie process as production runs it (``python -m services.pixie``), its output appended to
    ``log``, in a session of its own so that a test can kill it without any shutdown step."""
    env = {
        **os.environ,
        "NOVABERG_POSTGRES_URL": pg_url,
        "NOVABERG_KZG_ADDR": kzg_addr,
        "NOVABERG_LZG_ADDR": lzg_addr,
        "NOVABERG_LOG_ADDR": "",
        "NOVABERG_PIXIE_HOST": "127.0.0.1",
        "NOVABERG_PIXIE_PORT": str(port),
        "NOVABERG_PIXIE_REPLICA_ID": replica,
        "PYTHONUNBUFFERED": "1",
        "NOVABERG_TLS_MODE": "plaintext",  # the in-process KZG/LZG servers of these tests are plaintext
        **settings,
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "services.pixie"], cwd=REPO_ROOT, env=env, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
