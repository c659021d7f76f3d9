"""A pipeline process at its limit of calls at once (``NOVABERG_PIPELINE_MAX_CONCURRENT_RPCS``) refuses the
rest UNAVAILABLE, names the limit, and serves again right after (novaberg_core.load_shedding)."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from novaberg.common.v1 import common_pb2
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_dev.embedded import StoreUrls
from tests.e2e.conftest import E2E_ENV, stack_of_its_own
from tests.e2e.helpers import open_channel

LIMIT = 2
PAIR = common_pb2.Pair(user_id="overload@example.org", character_id="nova")


@pytest.fixture(scope="module")
async def limited(store_urls: StoreUrls, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to the pipeline of a stack (Pixie left out) whose pipeline admits ``LIMIT`` calls at once."""
    env = {**E2E_ENV, "NOVABERG_PIPELINE_MAX_CONCURRENT_RPCS": str(LIMIT)}
    async with stack_of_its_own(
        store_urls, tmp_path_factory.mktemp("e2e-overload"), "e2e_overload", ["log", "kzg", "lzg", "pipeline"], env
    ) as running:
        channel = open_channel(running.addresses["pipeline"], running.client_tls)
        try:
            yield channel
        finally:
            await channel.close()


async def test_calls_beyond_the_pipelines_limit_are_refused_and_it_serves_again(limited: grpc.aio.Channel) -> None:
    pipeline = pipeline_pb2_grpc.PipelineServiceStub(limited)
    observed = await pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=PAIR, turn_id="t0", beobachter=common_pb2.BEOBACHTER_USER,
        text="Anna hat im Garten Rosen gepflanzt, gelbe und rote."), timeout=30)  # fmt: skip
    assert observed.kzg.kzg_key

    async def dossier(index: int) -> str:
        try:
            await pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
                pair=PAIR, turn_id=f"q{index}", query_text="Was hat Anna gepflanzt?"), timeout=30)  # fmt: skip
        except grpc.aio.AioRpcError as error:
            assert error.details() == f"pipeline is at its limit ({LIMIT} calls at once); retry with backoff", error
            return error.code().name
        return "OK"

    answers = collections.Counter(await asyncio.gather(*(dossier(i) for i in range(24))))
    assert set(answers) == {"OK", "UNAVAILABLE"}, answers  # some served, the rest refused, nothing else
    assert answers["OK"] >= LIMIT

    health = health_pb2_grpc.HealthStub(limited)
    assert (await health.Check(health_pb2.HealthCheckRequest())).status == health_pb2.HealthCheckResponse.SERVING
    served = [await dossier(100 + i) for i in range(3)]  # one after the other: each within the limit
    assert served == ["OK", "OK", "OK"]
