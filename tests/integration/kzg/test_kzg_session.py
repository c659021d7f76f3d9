"""Session (working memory): list per pair, 4 h inactivity TTL, summarise at 25 (SPEC §3)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from novaberg_core.errors import InvalidArgument
from novaberg_core.limits import SESSION_TTL
from services.kzg.memory import KzgMemory
from services.kzg.store import session_summary_key, session_turns_key
from services.kzg.types import SessionTurnRecord
from tests.integration.kzg.conftest import OTHER_PAIR, PAIR


@pytest.fixture
def retrieval_threshold() -> float:
    """Session tests never retrieve; no model profile needed."""
    return 0.5


def _turn(i: int) -> SessionTurnRecord:
    return SessionTurnRecord(role="user" if i % 2 == 0 else "assistant", text=f"Turn {i}. Mehr Text.",
                             turn_id=f"t{i}", emotion="freude", arousal=0.25)


async def test_append_sets_and_refreshes_the_inactivity_ttl(kzg: KzgMemory) -> None:
    result = await kzg.append_session_turn(PAIR, _turn(0), as_of=datetime.fromtimestamp(1_790_000_000, UTC))
    assert result.turn_count == 1 and not result.summarized
    redis = kzg.store.redis
    assert SESSION_TTL - 2 <= await redis.ttl(session_turns_key(PAIR)) <= SESSION_TTL
    await redis.expire(session_turns_key(PAIR), 30)
    # A minute later in turn time (a turn over 4 h later would open a new session, SPEC §3).
    await kzg.append_session_turn(PAIR, _turn(1), as_of=datetime.fromtimestamp(1_790_000_060, UTC))
    assert SESSION_TTL - 2 <= await redis.ttl(session_turns_key(PAIR)) <= SESSION_TTL

    state = await kzg.get_session(PAIR)
    assert [t.text for t in state.turns] == ["Turn 0. Mehr Text.", "Turn 1. Mehr Text."]
    assert state.turns[0].created_at == datetime.fromtimestamp(1_790_000_000, UTC) and state.turns[0].arousal == 0.25
    assert SESSION_TTL - 2 <= state.ttl_seconds <= SESSION_TTL
    assert (await kzg.get_session(OTHER_PAIR)).turns == ()


async def test_the_26th_turn_folds_the_oldest_ten_into_the_summary(kzg: KzgMemory) -> None:
    results = [await kzg.append_session_turn(PAIR, _turn(i)) for i in range(26)]
    assert not any(r.summarized for r in results[:25])
    assert results[25].summarized and not results[25].trimmed and results[25].turn_count == 16
    state = await kzg.get_session(PAIR)
    assert [t.turn_id for t in state.turns] == [f"t{i}" for i in range(10, 26)]
    assert state.summary.splitlines() == [f"{_turn(i).role}: Turn {i}." for i in range(10)]
    assert SESSION_TTL - 2 <= await kzg.store.redis.ttl(session_summary_key(PAIR)) <= SESSION_TTL


async def test_a_failing_summariser_keeps_the_newest_twenty(kzg: KzgMemory) -> None:
    async def broken(previous_summary: str, turns: Sequence[SessionTurnRecord]) -> str:
        raise RuntimeError("model down")

    kzg.summariser = broken
    for i in range(25):
        await kzg.append_session_turn(PAIR, _turn(i))
    result = await kzg.append_session_turn(PAIR, _turn(25))
    assert result.trimmed and not result.summarized and result.turn_count == 20
    state = await kzg.get_session(PAIR)
    assert [t.turn_id for t in state.turns] == [f"t{i}" for i in range(6, 26)]
    assert state.summary == ""


async def test_bad_turns_are_refused(kzg: KzgMemory) -> None:
    with pytest.raises(InvalidArgument, match="role"):
        await kzg.append_session_turn(PAIR, SessionTurnRecord(role="system", text="x"))
    with pytest.raises(InvalidArgument, match="text"):
        await kzg.append_session_turn(PAIR, SessionTurnRecord(role="user", text=" "))
    with pytest.raises(InvalidArgument, match="user_id"):
        await kzg.append_session_turn(type(PAIR)("", "nova"), _turn(0))
    assert not await kzg.store.redis.exists(session_turns_key(PAIR))
