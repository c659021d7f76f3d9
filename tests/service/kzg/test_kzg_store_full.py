"""A Redis at its memory limit (``maxmemory``, no eviction): the KZG's writes are UNAVAILABLE, not a bug.

Production runs Redis with a memory limit and no eviction (an evicted KZG entry would be a memory
lost without a trace), so a full Redis refuses every write with ``OOM command not allowed``. That is
the store being unable to take more for now — entries expire and Pixie promotes them out of Redis —
so the caller gets UNAVAILABLE naming it and retries later, as during an outage (STYLE rule 5).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from redis.asyncio import Redis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc

PAIR = common_pb2.Pair(user_id="full@example.org", character_id="nova")


def _store(inhalt: str) -> kzg_pb2.StoreEntryRequest:
    return kzg_pb2.StoreEntryRequest(
        pair=PAIR, beobachter=common_pb2.BEOBACHTER_USER, inhalt=inhalt, writer="test",
        salience=common_pb2.SalienceResult(salienz=0.7, themen=["Garten"], gedaechtnistyp="episodisch"),
        turn=common_pb2.TurnContext(turn_id="turn-full"),
    )  # fmt: skip


def _append(turn_id: str) -> kzg_pb2.AppendSessionTurnRequest:
    return kzg_pb2.AppendSessionTurnRequest(pair=PAIR, turn=kzg_pb2.SessionTurn(role="user", text="Hallo", turn_id=turn_id))


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    policy = (await client.config_get("maxmemory-policy"))["maxmemory-policy"]
    assert isinstance(policy, bytes | str)
    try:
        yield client
    finally:
        await client.config_set("maxmemory", "0")
        await client.config_set("maxmemory-policy", policy)
        await client.aclose()


async def test_a_full_redis_refuses_writes_as_unavailable_and_serves_reads(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, redis: Redis
) -> None:
    kept = await kzg_stub.StoreEntry(_store("Anna pflanzt Tomaten im Garten."))
    await kzg_stub.AppendSessionTurn(_append("turn-before"))
    keys_before = sorted(await redis.keys("*"))

    await redis.config_set("maxmemory-policy", "noeviction")
    await redis.config_set("maxmemory", "1")  # below what the data holds: every growing write is refused
    for write in (
        kzg_stub.StoreEntry(_store("Anna erntet Gurken im Garten.")),
        kzg_stub.AppendSessionTurn(_append("turn-full")),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await write
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value
        assert "Redis is at its memory limit (maxmemory), retry later" in (refused.value.details() or "")
    assert sorted(await redis.keys("*")) == keys_before  # nothing written

    got = await kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=kept.kzg_key))  # reads go on
    assert got.entry.inhalt == "Anna pflanzt Tomaten im Garten."
    session = await kzg_stub.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
    assert [t.turn_id for t in session.turns] == ["turn-before"]

    await redis.config_set("maxmemory", "0")  # room again: the same write goes through
    assert (await kzg_stub.StoreEntry(_store("Anna erntet Gurken im Garten."))).outcome == kzg_pb2.STORE_OUTCOME_STORED
