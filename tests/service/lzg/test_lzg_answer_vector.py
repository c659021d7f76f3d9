"""ReinforceUsed takes the caller's answer vector: refused when malformed, otherwise the same protocol as
the text path (SPEC §5.6, §10), over a real gRPC channel with the offline model.
"""

from __future__ import annotations

from datetime import timedelta

import grpc
import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.embedding import EmbeddingProvider, query_embed_text
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from novaberg_core.timeutil import to_timestamp
from tests.service.lzg.memories import PAIR, T0, Stub, pair_with_memories

ANSWER = "Anna hat dir früher immer Schokolade mitgebracht, das weiß ich noch."


async def _node(stub: Stub, node_id: int) -> bytes:
    node = await stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=node_id, include_embedding=True))
    return node.SerializeToString(deterministic=True)


async def test_answer_vector_of_wrong_size_or_not_finite_changes_nothing(
    lzg_stub: Stub, provider: EmbeddingProvider, sink: InMemorySink, plog: PipelineLog
) -> None:
    ids = await pair_with_memories(lzg_stub)
    before = {i: await _node(lzg_stub, i) for i in ids}
    good = (await provider.embed_one(query_embed_text(ANSWER))).tolist()
    for values, message in (
        ([*good, 0.0], f"answer_vector has {provider.dimension + 1} values"),
        (good[:-1], f"answer_vector has {provider.dimension - 1} values"),
        ([float("nan"), *good[1:]], "answer_vector.values must hold finite numbers only"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await lzg_stub.ReinforceUsed(
                lzg_pb2.ReinforceUsedRequest(
                    pair=PAIR, answer_text=ANSWER, served_node_ids=ids, answer_vector=lzg_pb2.QueryVector(values=values),
                    turn=common_pb2.TurnContext(turn_id="turn-bad"), as_of=to_timestamp(T0 + timedelta(hours=1)),
                )
            )  # fmt: skip
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in (caught.value.details() or "")
        assert {i: await _node(lzg_stub, i) for i in ids} == before
    await plog.flush()
    assert not [r for r in sink.records if r.turn_id == "turn-bad"]  # not even a protocol record


async def test_answer_vector_gives_the_protocol_of_the_text_path(
    lzg_stub: Stub, provider: EmbeddingProvider
) -> None:
    ids = await pair_with_memories(lzg_stub)

    async def reinforce(vector: list[float] | None, hours: int) -> lzg_pb2.VerwendungsProtokoll:
        request = lzg_pb2.ReinforceUsedRequest(
            pair=PAIR,
            answer_text=ANSWER,
            served_node_ids=ids,
            as_of=to_timestamp(T0 + timedelta(hours=hours)),
        )
        if vector is not None:
            request.answer_vector.values.extend(vector)
        protokoll = (await lzg_stub.ReinforceUsed(request)).protokoll
        protokoll.kanten_dauer_ms = 0.0  # wall time, the only field that may differ
        return protokoll

    by_text = await reinforce(None, 1)
    assert by_text.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_GERECHNET and by_text.verwendet[0] == ids[0]
    assert by_text.kanten_neu > 0
    vector = await provider.embed_one(query_embed_text(ANSWER))
    by_vector = await reinforce(vector.tolist(), 2)
    assert by_vector == by_text
    node = (await lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=ids[0]))).node
    assert node.haeufigkeit == 3  # reinforced by both calls

    # A vector of another length is scaled to norm 1 first: the same nearness, to float32 precision.
    scaled = await reinforce((vector * 3.0).tolist(), 3)
    assert list(scaled.verwendet) == list(by_text.verwendet)
    assert [n.naehe for n in scaled.naehen_alle] == pytest.approx(
        [n.naehe for n in by_text.naehen_alle], abs=1e-6
    )
    # An all-zero vector is an empty answer vector, recorded as such (SPEC §5.6), not a call error.
    empty = await reinforce(np.zeros(provider.dimension).tolist(), 4)
    assert empty.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_VEKTOR_LEER and list(empty.verwendet) == []
