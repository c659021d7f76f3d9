"""Reading the KZG is passive (SPEC §10): Retrieve, GetEntry and GetSession change no key and no TTL.

Every key's TTL is first cut to a distinctive value well below its tier's (and the session's
4 h), so a read that refreshed or extended a TTL would show as a PTTL that grew; one that
shortened or removed it, as a PTTL that fell by more than the time that passed.
"""

from __future__ import annotations

import time
from typing import Any

from redis.asyncio import Redis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc

PAIR = common_pb2.Pair(user_id="anna@example.org", character_id="nova")
OTHER = common_pb2.Pair(user_id="ben", character_id="nova")
PROMOTION_STREAM = "kzg:promotion:queue"
PTTL_ROUNDING_MS = 5
"""PTTL is whole milliseconds; allowance for rounding on top of the measured elapsed time."""

ANNA = [
    (0.9, ["Hochzeit"], "Anna is getting married in May.", common_pb2.BEOBACHTER_USER),
    (
        0.6,
        ["Schach"],
        "Anna plays chess every Sunday with her grandfather in the park.",
        common_pb2.BEOBACHTER_USER,
    ),
    (
        0.5,
        ["schach", "Park"],
        "Nova promised to teach Anna the Sicilian defence.",
        common_pb2.BEOBACHTER_ASSISTANT,
    ),
    (0.4, ["Hund"], "Anna's dog Bruno is afraid of thunderstorms.", common_pb2.BEOBACHTER_USER),
]


async def _snapshot(redis: Redis) -> dict[str, tuple[Any, int]]:
    """Every key → (its content by type, its PTTL in ms; -1 = no TTL)."""
    state: dict[str, tuple[Any, int]] = {}
    async for raw_key in redis.scan_iter(count=1_000):
        key = _s(raw_key)
        kind = _s(await redis.type(key))
        content: Any
        if kind == "hash":
            content = await redis.hgetall(key)
        elif kind == "list":
            content = await redis.lrange(key, 0, -1)
        elif kind == "string":
            content = await redis.get(key)
        elif kind == "stream":
            content = (await redis.xlen(key), await redis.xrange(key), await redis.xinfo_groups(key))
        elif kind == "zset":
            content = await redis.zrange(key, 0, -1, withscores=True)
        else:
            raise AssertionError(f"unexpected key type {kind} of {key}")
        state[key] = ((kind, content), int(await redis.pttl(key)))
    return state


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def test_retrieve_get_entry_and_get_session_change_no_key_and_no_ttl(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, redis_url: str
) -> None:
    keys = []
    for salienz, themen, inhalt, beobachter in ANNA:
        stored = await kzg_stub.StoreEntry(
            kzg_pb2.StoreEntryRequest(
                pair=PAIR,
                beobachter=beobachter,
                inhalt=inhalt,
                turn=common_pb2.TurnContext(turn_id="turn-1"),
                salience=common_pb2.SalienceResult(
                    salienz=salienz, themen=themen, gedaechtnistyp="episodisch"
                ),
            )
        )
        keys.append(stored.kzg_key)
    await kzg_stub.StoreEntry(
        kzg_pb2.StoreEntryRequest(
            pair=OTHER,
            beobachter=common_pb2.BEOBACHTER_USER,
            inhalt="Ben plays chess too.",
            salience=common_pb2.SalienceResult(salienz=0.6, themen=["Schach"]),
        )
    )
    for i in range(26):  # the 26th folds ten turns into the summary: turns list and summary string
        await kzg_stub.AppendSessionTurn(
            kzg_pb2.AppendSessionTurnRequest(
                pair=PAIR, turn=kzg_pb2.SessionTurn(role="user", text=f"Satz {i}.", turn_id=f"t{i}")
            )
        )

    redis = Redis.from_url(redis_url)
    try:
        expiring = [_s(k) async for k in redis.scan_iter(count=1_000) if await redis.pttl(k) > 0]
        assert set(keys) | {f"session:{PAIR.user_id}:{PAIR.character_id}:turns"} <= set(expiring)
        for i, key in enumerate(sorted(expiring)):
            await redis.pexpire(key, 3_600_000 + 1_000 * i)
        assert await redis.xlen(PROMOTION_STREAM) == 1

        started = time.monotonic()
        before = await _snapshot(redis)

        chess = await kzg_stub.Retrieve(
            kzg_pb2.RetrieveRequest(pair=PAIR, query_text="Who does Anna play chess with?")
        )
        filtered = await kzg_stub.Retrieve(
            kzg_pb2.RetrieveRequest(
                pair=PAIR,
                query_text="Nova will teach Anna the Sicilian defence in chess.",
                beobachter=common_pb2.BEOBACHTER_ASSISTANT,
                filters=kzg_pb2.RetrieveFilters(themen=["Schach"]),
                top_k=3,
            )
        )
        got = [
            await kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=key, include_embedding=True))
            for key in keys
        ]
        session = await kzg_stub.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))

        after = await _snapshot(redis)
        elapsed_ms = (time.monotonic() - started) * 1_000
    finally:
        await redis.aclose()

    assert after.keys() == before.keys()
    assert {key: content for key, (content, _) in after.items()} == {key: c for key, (c, _) in before.items()}
    assert after[PROMOTION_STREAM][0][1][0] == 1  # the promotion stream's length
    for key, (_, pttl_before) in before.items():
        pttl_after = after[key][1]
        if pttl_before < 0:
            assert pttl_after == pttl_before, key  # still without a TTL
        else:
            # Only the time that passed: never refreshed or extended, never cut short.
            assert 0 <= pttl_before - pttl_after <= elapsed_ms + PTTL_ROUNDING_MS, (
                key,
                pttl_before,
                pttl_after,
            )

    # The reads did read: hits, entries and the session came back.
    assert keys[1] in [h.entry.kzg_key for h in chess.hits]
    assert [h.entry.kzg_key for h in filtered.hits] == [keys[2]]
    assert [g.entry.kzg_key for g in got] == keys and all(len(g.entry.embedding) == 384 for g in got)
    assert len(session.turns) == 16 and session.summary
