"""Dispatch embeds the answer in the pipeline and hands the vector to the LZG; the dossier's blocks
come from SpreadingRead itself (SPEC §5.6, §5.9, §7).

The LZG here counts every text its model embeds: during Dispatch it must embed none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import grpc.aio
import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.embedding import (
    DEFAULT_CHARACTER_NAME,
    EmbeddingProvider,
    kzg_embed_text,
    query_embed_text,
)
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.timeutil import to_timestamp
from services.kzg.config import KzgConfig
from services.kzg.server import create_server as create_kzg_server
from services.lzg.config import LzgConfig
from services.lzg.server import create_server as create_lzg_server
from services.pipeline.config import PipelineConfig
from services.pipeline.server import create_server as create_pipeline_server
from services.pipeline.servicer import MODEL_MS_KEY
from tests.recording_provider import RecordingProvider

PAIR = common_pb2.Pair(user_id="vektor", character_id="nova")
T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
HIKE_TEXT = "We went hiking in the Alps last summer."
QUERY = "Tell me about our hiking trip in the mountains."
ANSWER = "We went hiking in the Alps last summer, do you remember the view?"


class Stack:
    def __init__(self, channels: list[grpc.aio.Channel]) -> None:
        self.pipeline = pipeline_pb2_grpc.PipelineServiceStub(channels[0])
        self.lzg = lzg_pb2_grpc.LzgServiceStub(channels[1])
        self.kzg = kzg_pb2_grpc.KzgServiceStub(channels[2])


@pytest.fixture
async def stack(
    redis_url: str, pg_url: str, provider: EmbeddingProvider
) -> AsyncIterator[tuple[Stack, RecordingProvider]]:
    counting = RecordingProvider(provider)
    kzg = await create_kzg_server(
        KzgConfig(common=CommonConfig("kzg"), redis_url=redis_url), provider=provider, log=PipelineLog()
    )
    lzg = await create_lzg_server(
        LzgConfig(common=CommonConfig("lzg"), postgres_url=pg_url), provider=counting, log=PipelineLog()
    )
    cfg = PipelineConfig(
        common=CommonConfig("pipeline"), kzg_addr=kzg.target, lzg_addr=lzg.target, redis_url=redis_url
    )
    pipeline = await create_pipeline_server(cfg, provider=provider, log=PipelineLog())
    channels = [grpc.aio.insecure_channel(s.target) for s in (pipeline, lzg, kzg)]
    try:
        yield Stack(channels), counting
    finally:
        for channel in channels:
            await channel.close()
        for server in (pipeline, lzg, kzg):
            await server.stop(None)


async def _hike_node(lzg: lzg_pb2_grpc.LzgServiceStub) -> lzg_pb2.Node:
    entry = common_pb2.KzgEntry(
        kzg_key=f"kzg:{PAIR.user_id}:{PAIR.character_id}:hike", entry_id="hike", pair=PAIR,
        beobachter=common_pb2.BEOBACHTER_USER, inhalt=HIKE_TEXT, themen=["hiking"], salienz=0.9,
        salienz_eingang=0.85, haeufigkeit=1, gedaechtnistyp="episodisch", dimension="interessen",
        ei=common_pb2.EiFields(emotion="freude", modus="alltag"), erstellt_am=to_timestamp(T0 - timedelta(days=3)),
        turn_id="turn-hike",
    )  # fmt: skip
    promoted = await lzg.Promote(
        lzg_pb2.PromoteRequest(
            entry=entry, turn=common_pb2.TurnContext(turn_id="job"), as_of=to_timestamp(T0)
        )
    )
    request = lzg_pb2.GetNodeRequest(pair=PAIR, node_id=promoted.node_id, include_embedding=True)
    return (await lzg.GetNode(request)).node


async def test_dispatch_embeds_the_answer_itself_and_the_lzg_embeds_nothing(
    stack: tuple[Stack, RecordingProvider], provider: EmbeddingProvider
) -> None:
    services, lzg_model = stack
    node = await _hike_node(services.lzg)
    dossier = await services.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="turn-ask", query_text=QUERY)
    )
    assert list(dossier.served_node_ids) == [node.id]
    lzg_model.texts.clear()
    call = services.pipeline.Dispatch(
        pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id="turn-answer", user_prompt=QUERY, cluster="werkstatt", answer_text=ANSWER,
            served_node_ids=dossier.served_node_ids,
        )
    )  # fmt: skip
    response = await call
    assert lzg_model.texts == []  # the answer vector came with the request
    assert float(dict(await call.trailing_metadata())[MODEL_MS_KEY]) > 0.0
    protokoll = response.protokoll
    assert protokoll.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_GERECHNET and list(protokoll.verwendet) == [
        node.id
    ]
    answer = await provider.embed_one(query_embed_text(ANSWER))
    expected = float(np.dot(np.asarray(node.embedding, dtype=np.float64), answer.astype(np.float64)))
    assert protokoll.naehen_alle[0].naehe == pytest.approx(expected, abs=1e-6)
    # The character's own entry, embedded in the same model batch: its own text's vector, not the answer's.
    entry = (
        await services.kzg.GetEntry(
            kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=response.kzg.kzg_key, include_embedding=True)
        )
    ).entry
    assert entry.beobachter == common_pb2.BEOBACHTER_ASSISTANT and entry.inhalt == ANSWER
    own = await provider.embed_one(kzg_embed_text(list(entry.themen), entry.inhalt, DEFAULT_CHARACTER_NAME))
    assert np.asarray(entry.embedding, dtype=np.float32) == pytest.approx(own, abs=1e-6)
    assert float(np.dot(own, answer)) < 0.99


async def test_dossier_blocks_are_the_lzg_render_of_the_served_resonanz(
    stack: tuple[Stack, RecordingProvider],
) -> None:
    services, _ = stack
    await _hike_node(services.lzg)
    dossier = await services.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(
            pair=PAIR, turn_id="turn-ask", query_text=QUERY, user_name="Mara", character_name="Nova"
        )
    )
    assert set(dossier.memory_blocks) == {"analysis", "composer"}
    for reader, block in dossier.memory_blocks.items():
        alone = await services.lzg.RenderMemoryBlock(
            lzg_pb2.RenderMemoryBlockRequest(
                pair=PAIR,
                lzg_resonanz=dossier.lzg_resonanz,
                reader=reader,
                user_name="Mara",
                character_name="Nova",
            )
        )
        assert block == alone.text and f'"{HIKE_TEXT}"' in block
    assert "Sprecher: Mara" in dossier.memory_blocks["analysis"]
