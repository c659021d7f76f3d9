"""The pipeline when its embedding model fails or differs from its peers' (SPEC §2, §5.6, §7, §8)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.embedding.base import Vectors
from novaberg_core.errors import Unavailable
from tests.service.pipeline.conftest import Peers, start_pipeline

PAIR = common_pb2.Pair(user_id="modell-u", character_id="nova")


class FlakyModel(EmbeddingProvider):
    """The service's model, until ``down`` is set: then every call fails as an unreachable model server does."""

    def __init__(self, inner: EmbeddingProvider, *, model_id: str | None = None) -> None:
        self.inner = inner
        self.model_id = model_id or inner.model_id
        self.dimension = inner.dimension
        self.down = False

    async def _embed(self, texts: list[str]) -> Vectors:
        if self.down:
            raise Unavailable("model server at 127.0.0.1:11434 cannot be reached")
        return await self.inner.embed(texts)


@pytest.fixture
async def flaky(peers: Peers, provider: EmbeddingProvider) -> AsyncIterator[tuple[FlakyModel, pipeline_pb2_grpc.PipelineServiceStub]]:
    model = FlakyModel(provider)
    server, _, _ = await start_pipeline(peers, model)
    async with grpc.aio.insecure_channel(server.target) as channel:
        yield model, pipeline_pb2_grpc.PipelineServiceStub(channel)
    await server.stop(None)


async def test_dispatch_records_the_turn_when_the_model_fails(
    flaky: tuple[FlakyModel, pipeline_pb2_grpc.PipelineServiceStub], peers: Peers
) -> None:
    model, pipeline = flaky
    model.down = True
    response = await pipeline.Dispatch(pipeline_pb2.DispatchRequest(
        pair=PAIR, turn_id="m-1", user_prompt="Wie war dein Tag?", answer_text="Ich habe heute Brot gebacken, Meister.",
        cluster="bier",
        answer_analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(
            salienz=0.6, themen=["backen"], gedaechtnistyp="episodisch", dimension="alltag")),
    ))  # fmt: skip
    assert [f for f in response.fehler if f.startswith("embedding model:")], list(response.fehler)
    assert response.cluster_persisted == "bier"
    # The KZG embedded the character's own entry itself (its model works); the turn is not lost.
    assert response.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED
    async with grpc.aio.insecure_channel(peers.kzg.target) as channel:
        session = await kzg_pb2_grpc.KzgServiceStub(channel).GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
    assert [t.turn_id for t in session.turns] == ["m-1"]


async def test_a_pipeline_with_another_model_writes_nothing(peers: Peers, provider: EmbeddingProvider) -> None:
    server, _, _ = await start_pipeline(peers, FlakyModel(provider, model_id="another-model"))
    try:
        async with grpc.aio.insecure_channel(server.target) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await pipeline_pb2_grpc.PipelineServiceStub(channel).ObserveTurn(pipeline_pb2.ObserveTurnRequest(
                    pair=PAIR, turn_id="m-2", beobachter=common_pb2.BEOBACHTER_USER, text="Anna backt Brot."))  # fmt: skip
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "KZG service serves embedding model" in (refused.value.details() or "")
        async with grpc.aio.insecure_channel(peers.kzg.target) as channel:
            session = await kzg_pb2_grpc.KzgServiceStub(channel).GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
        assert list(session.turns) == []
    finally:
        await server.stop(None)


async def test_a_vector_of_another_model_is_refused_by_the_kzg(peers: Peers, provider: EmbeddingProvider) -> None:
    vector = (await provider.embed_one("Anna")).tolist()
    async with grpc.aio.insecure_channel(peers.kzg.target) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await kzg_pb2_grpc.KzgServiceStub(channel).Retrieve(kzg_pb2.RetrieveRequest(
                pair=PAIR, query_vector=kzg_pb2.QueryVector(values=vector, model_id="another-model")))  # fmt: skip
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
