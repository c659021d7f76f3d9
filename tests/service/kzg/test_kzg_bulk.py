"""StoreEntries and AppendSessionTurns (issue 16): a batch does what the single calls do one after another."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from redis.asyncio import Redis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg_core.embedding import EmbeddingProvider, kzg_embed_text
from services.kzg.domain import salienz_berechnen

PAIR = common_pb2.Pair(user_id="anna", character_id="nova")
SEQUENTIAL = common_pb2.Pair(user_id="anna-sequential", character_id="nova")
CHESS = [
    (0.7, "Anna plays chess every Sunday.", ["Schach"]),
    (0.2, "Hm.", []),  # below the gate: nothing written, as with StoreEntry
    (0.5, "Anna's dog is afraid of thunder.", ["Hund"]),
    (0.4, "Anna won a chess tournament.", ["schach"]),
    (0.45, "Chess again, with the dog watching.", ["Schach", "Hund"]),
]


def _entry(pair: common_pb2.Pair, salienz: float, inhalt: str, themen: list[str], n: int) -> kzg_pb2.StoreEntryRequest:
    return kzg_pb2.StoreEntryRequest(
        pair=pair, beobachter=common_pb2.BEOBACHTER_USER, inhalt=inhalt, sprecher="Anna",
        salience=common_pb2.SalienceResult(salienz=salienz, themen=themen, gedaechtnistyp="episodisch"),
        turn=common_pb2.TurnContext(turn_id=f"turn-{n}"), writer="test",
    )  # fmt: skip


async def _entries(stub: kzg_pb2_grpc.KzgServiceStub, pair: common_pb2.Pair, keys: list[str]) -> list[common_pb2.KzgEntry]:
    return [
        (await stub.GetEntry(kzg_pb2.GetEntryRequest(pair=pair, kzg_key=key, include_embedding=True))).entry
        for key in keys
    ]


async def test_a_batch_writes_reinforces_and_queues_as_single_writes_in_order(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, provider: EmbeddingProvider
) -> None:
    sequential = [await kzg_stub.StoreEntry(_entry(SEQUENTIAL, *item, n)) for n, item in enumerate(CHESS)]
    batch = await kzg_stub.StoreEntries(
        kzg_pb2.StoreEntriesRequest(entries=[_entry(PAIR, *item, n) for n, item in enumerate(CHESS)])
    )
    for one, many in zip(sequential, batch.results, strict=True):
        assert (one.outcome, one.tier, one.salienz, one.reinforced_count, one.queued_for_promotion) == (
            many.outcome, many.tier, many.salienz, many.reinforced_count, many.queued_for_promotion
        )  # fmt: skip
    assert [r.reinforced_count for r in batch.results] == [0, 0, 0, 1, 3]
    assert batch.results[1].outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE
    stored = [r.kzg_key for r in batch.results if r.kzg_key]
    written = await _entries(kzg_stub, PAIR, stored)
    expected = await _entries(kzg_stub, SEQUENTIAL, [r.kzg_key for r in sequential if r.kzg_key])
    assert [(e.haeufigkeit, e.salienz) for e in written] == [(e.haeufigkeit, e.salienz) for e in expected]
    assert [e.haeufigkeit for e in written] == [3, 2, 2, 1]
    assert written[0].salienz > salienz_berechnen(0.7, 1)
    # Entries sent without a vector were embedded by the service, in one batch, as StoreEntry embeds one.
    texts = [kzg_embed_text(list(e.themen), e.inhalt, "Anna") for e in written]
    vectors = await provider.embed(texts)
    assert np.allclose(np.asarray([list(e.embedding) for e in written]), vectors, atol=1e-4)


async def _refused(stub: kzg_pb2_grpc.KzgServiceStub, redis_url: str, method: str, request: object) -> str:
    redis = Redis.from_url(redis_url)
    try:
        before = sorted(await redis.keys("*"))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await getattr(stub, method)(request)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
        assert sorted(await redis.keys("*")) == before
        return caught.value.details() or ""
    finally:
        await redis.aclose()


async def test_a_bad_entry_or_a_foreign_pair_refuses_the_whole_batch(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, redis_url: str
) -> None:
    entries = [_entry(PAIR, *item, n) for n, item in enumerate(CHESS)]
    bad = list(entries)
    bad[2] = _entry(PAIR, 0.5, " ", ["Hund"], 2)
    details = await _refused(kzg_stub, redis_url, "StoreEntries", kzg_pb2.StoreEntriesRequest(entries=bad))
    assert details == "entries[2].inhalt must not be empty"
    foreign = list(entries)
    foreign[3] = _entry(SEQUENTIAL, *CHESS[3], 3)
    details = await _refused(kzg_stub, redis_url, "StoreEntries", kzg_pb2.StoreEntriesRequest(entries=foreign))
    assert details.startswith("entries[3].pair is anna-sequential:nova, not the batch's pair anna:nova")
    short_vector = list(entries)
    short_vector[4] = kzg_pb2.StoreEntryRequest()
    short_vector[4].CopyFrom(entries[4])
    short_vector[4].embedding.extend([0.1] * 10)
    details = await _refused(kzg_stub, redis_url, "StoreEntries", kzg_pb2.StoreEntriesRequest(entries=short_vector))
    assert details.startswith("entries[4].embedding has 10 values")
    twice = [_entry(PAIR, *CHESS[0], 0), _entry(PAIR, *CHESS[3], 1)]
    for entry in twice:
        entry.entry_id = "same"
    details = await _refused(kzg_stub, redis_url, "StoreEntries", kzg_pb2.StoreEntriesRequest(entries=twice))
    assert details == "entries: an entry_id may appear at most once in a batch"
    assert await _refused(kzg_stub, redis_url, "StoreEntries", kzg_pb2.StoreEntriesRequest()) == (
        "entries must not be empty"
    )
    too_many = kzg_pb2.StoreEntriesRequest(entries=[_entry(PAIR, *CHESS[0], n) for n in range(257)])
    details = await _refused(kzg_stub, redis_url, "StoreEntries", too_many)
    assert details == "entries may hold at most 256 items, got 257"


async def test_session_appends_in_a_batch_fold_as_single_appends(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, redis_url: str
) -> None:
    def append(pair: common_pb2.Pair, i: int) -> kzg_pb2.AppendSessionTurnRequest:
        return kzg_pb2.AppendSessionTurnRequest(
            pair=pair, turn=kzg_pb2.SessionTurn(role="user", text=f"Satz {i}.", turn_id=f"t{i}")
        )

    bad = [append(PAIR, i) for i in range(5)]
    bad[3].turn.role = "narrator"
    details = await _refused(
        kzg_stub, redis_url, "AppendSessionTurns", kzg_pb2.AppendSessionTurnsRequest(appends=bad)
    )
    assert details.startswith("appends[3].turn.role must be one of")

    for pair in (SEQUENTIAL, PAIR):  # a session that holds turns already
        for i in range(7):
            await kzg_stub.AppendSessionTurn(append(pair, 100 + i))
    sequential = [await kzg_stub.AppendSessionTurn(append(SEQUENTIAL, i)) for i in range(45)]
    batch = await kzg_stub.AppendSessionTurns(
        kzg_pb2.AppendSessionTurnsRequest(appends=[append(PAIR, i) for i in range(45)])
    )
    assert list(batch.results) == sequential
    assert [r.turn_count for r in batch.results][16:21] == [24, 25, 16, 17, 18]
    assert [i for i, r in enumerate(batch.results) if r.summarized] == [18, 28, 38]
    one = await kzg_stub.GetSession(kzg_pb2.GetSessionRequest(pair=SEQUENTIAL))
    many = await kzg_stub.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
    assert [t.text for t in one.turns] == [t.text for t in many.turns] and one.summary == many.summary != ""
