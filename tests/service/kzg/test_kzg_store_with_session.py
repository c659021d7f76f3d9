"""StoreEntry with ``session_turn``: the write and the session append in one call (SPEC §3, §4, §10)."""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
import pytest
from redis.asyncio import Redis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg_core.embedding import EmbeddingProvider, kzg_embed_text
from novaberg_core.timeutil import to_timestamp

PAIR = common_pb2.Pair(user_id="sitzung@example.org", character_id="nova")
AS_OF = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
Stub = kzg_pb2_grpc.KzgServiceStub


def _turn(
    text: str = "Ich war heute mit Anna wandern.", role: str = "user", arousal: float = 0.0
) -> kzg_pb2.SessionTurn:
    return kzg_pb2.SessionTurn(role=role, text=text, turn_id="turn-1", emotion="freude", arousal=arousal)


def _store(salienz: float = 0.6, **fields: object) -> kzg_pb2.StoreEntryRequest:
    request = kzg_pb2.StoreEntryRequest(
        pair=PAIR, beobachter=common_pb2.BEOBACHTER_USER, inhalt="Ich war heute mit Anna wandern.",
        salience=common_pb2.SalienceResult(salienz=salienz, themen=["wandern"], gedaechtnistyp="episodisch"),
        turn=common_pb2.TurnContext(turn_id="turn-1"), writer="test", as_of=to_timestamp(AS_OF),
    )  # fmt: skip
    for name, value in fields.items():
        field = getattr(request, name)
        if isinstance(value, list):
            field.extend(value)
        elif hasattr(field, "CopyFrom"):
            field.CopyFrom(value)
        else:
            setattr(request, name, value)
    return request


async def _state(redis_url: str) -> list[tuple[object, object]]:
    """Every key with its content (hashes, lists, strings): nothing may change on a refused call."""
    redis = Redis.from_url(redis_url)
    try:
        out: list[tuple[object, object]] = []
        for key in sorted(await redis.keys("*")):
            kind = await redis.type(key)
            if kind == b"hash":
                out.append((key, sorted((await redis.hgetall(key)).items())))
            elif kind == b"list":
                out.append((key, await redis.lrange(key, 0, -1)))
            elif kind == b"string":
                out.append((key, await redis.get(key)))
            else:
                out.append((key, kind))
        return out
    finally:
        await redis.aclose()


async def test_one_call_writes_the_entry_and_appends_the_session_turn(
    kzg_stub: Stub, provider: EmbeddingProvider
) -> None:
    await kzg_stub.AppendSessionTurn(kzg_pb2.AppendSessionTurnRequest(pair=PAIR, turn=_turn("Hallo.")))
    vector = await provider.embed_one(kzg_embed_text(["wandern"], "Ich war heute mit Anna wandern."))
    stored = await kzg_stub.StoreEntry(_store(embedding=vector.tolist(), session_turn=_turn()))
    assert stored.outcome == kzg_pb2.STORE_OUTCOME_STORED and stored.kzg_key.startswith(
        "kzg:sitzung@example.org:nova:"
    )
    assert stored.HasField("session") and stored.session.turn_count == 2
    session = await kzg_stub.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
    assert [(t.role, t.text, t.emotion) for t in session.turns] == [
        ("user", "Hallo.", "freude"),
        ("user", "Ich war heute mit Anna wandern.", "freude"),
    ]
    assert session.turns[1].created_at == to_timestamp(
        AS_OF
    )  # the request's as_of, as AppendSessionTurn would
    entry = await kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=stored.kzg_key))
    assert entry.entry.inhalt == "Ich war heute mit Anna wandern."

    # Below the gate the KZG stores nothing, the session still gets the turn; without it, no session result.
    below = await kzg_stub.StoreEntry(_store(0.1, session_turn=_turn("Ok.")))
    assert below.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE and below.session.turn_count == 3
    plain = await kzg_stub.StoreEntry(_store(0.1))
    assert not plain.HasField("session")


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (_store(session_turn=_turn(role="narrator")), "session_turn.role must be one of"),
        (_store(session_turn=_turn(text="  ")), "session_turn.text must not be empty"),
        (_store(session_turn=_turn(arousal=float("nan"))), "session_turn.arousal must be a finite number"),
        (_store(1.5, session_turn=_turn()), "salience.salienz"),
        (_store(embedding=[0.1] * 10, session_turn=_turn()), "embedding has 10 values"),
    ],
)
async def test_a_bad_entry_or_session_turn_writes_neither(
    kzg_stub: Stub, redis_url: str, request_: kzg_pb2.StoreEntryRequest, message: str
) -> None:
    await kzg_stub.AppendSessionTurn(kzg_pb2.AppendSessionTurnRequest(pair=PAIR, turn=_turn("Hallo.")))
    before = await _state(redis_url)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await kzg_stub.StoreEntry(request_)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (caught.value.details() or "")
    assert await _state(redis_url) == before


async def test_an_existing_entry_id_appends_no_session_turn(kzg_stub: Stub, redis_url: str) -> None:
    first = await kzg_stub.StoreEntry(_store(entry_id="e1", session_turn=_turn()))
    assert first.session.turn_count == 1
    before = await _state(redis_url)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await kzg_stub.StoreEntry(_store(entry_id="e1", session_turn=_turn("Noch einmal.")))
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert await _state(redis_url) == before
