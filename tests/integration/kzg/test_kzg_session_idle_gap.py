"""A session expires after SESSION_TTL of inactivity in the turns' own time (SPEC §3, §11): a replayed turn
over 4 h after the newest opens a new session, and a read at ``as_of`` shows only the turns since the last
such gap, as live, although Redis (on its own clock) still holds the older ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from novaberg_core.limits import SESSION_TTL
from services.kzg.memory import KzgMemory, session_as_of
from services.kzg.store import session_summary_key, session_taken_key, session_turns_key
from services.kzg.types import SessionState, SessionTurnRecord
from tests.integration.kzg.conftest import PAIR

T0 = datetime.fromtimestamp(1_700_000_000, UTC)  # a replayed conversation's time, long before the wall clock
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


@pytest.fixture
def retrieval_threshold() -> float:
    """Session tests never retrieve; no model profile needed."""
    return 0.5


def _turn(name: str, at: datetime) -> SessionTurnRecord:
    return SessionTurnRecord(role="user", text=f"{name}. Mehr Text.", turn_id=name, created_at=at)


def _names(state: SessionState) -> list[str]:
    return [t.turn_id for t in state.turns]


def test_a_read_keeps_only_the_turns_after_the_last_gap_longer_than_the_ttl() -> None:
    state = SessionState(
        turns=(_turn("a", T0), _turn("b", T0 + 5 * HOUR), _turn("c", T0 + 6 * HOUR)), summary="früher", ttl_seconds=0
    )
    after_gap = session_as_of(state, T0 + 5 * HOUR)
    assert (_names(after_gap), after_gap.summary) == (["b"], "")  # "a" and the summary had expired at T0+4h
    assert after_gap.ttl_seconds == SESSION_TTL
    assert _names(session_as_of(state, T0 + 7 * HOUR)) == ["b", "c"]
    before_gap = session_as_of(state, T0 + 3 * HOUR)
    assert (_names(before_gap), before_gap.summary, before_gap.ttl_seconds) == (["a"], "früher", 3600)


def test_gaps_up_to_the_ttl_keep_the_whole_session_and_its_summary() -> None:
    state = SessionState(
        turns=(_turn("a", T0), _turn("b", T0 + 4 * HOUR), _turn("c", T0 + 7 * HOUR)), summary="früher", ttl_seconds=0
    )
    read = session_as_of(state, T0 + 8 * HOUR)
    assert (_names(read), read.summary) == (["a", "b", "c"], "früher")


async def test_a_turn_after_a_longer_gap_opens_a_new_session(kzg: KzgMemory) -> None:
    """Turns at T0 and T0+5 h: live the first (with its summary) expired at T0+4 h, before the second came."""
    first = [await kzg.append_session_turn(PAIR, _turn(f"t{i}", T0 + i * MINUTE)) for i in range(26)]
    assert first[-1].summarized and first[-1].turn_count == 16
    last_at = T0 + 25 * MINUTE
    assert _names(await kzg.get_session(PAIR, as_of=last_at + 3 * HOUR))[0] == "t10"

    after = await kzg.append_session_turn(PAIR, _turn("later", last_at + 5 * HOUR))
    assert (after.turn_count, after.summarized) == (1, False)
    replayed = await kzg.get_session(PAIR, as_of=last_at + 5 * HOUR)
    assert (_names(replayed), replayed.summary) == (["later"], "")
    assert _names(await kzg.get_session(PAIR)) == ["later"]  # a read now: what Redis holds
    redis = kzg.store.redis
    assert not await redis.exists(session_summary_key(PAIR))
    taken = await redis.zrange(session_taken_key(PAIR), 0, -1)  # kept: resends stay repeats (below)
    assert taken == [f"t{i}\nuser".encode() for i in range(26)] + [b"later\nuser"]
    assert SESSION_TTL - 2 <= await redis.ttl(session_turns_key(PAIR)) <= SESSION_TTL


async def test_a_turn_within_the_ttl_continues_the_session(kzg: KzgMemory) -> None:
    await kzg.append_session_turn(PAIR, _turn("a", T0))
    assert (await kzg.append_session_turn(PAIR, _turn("b", T0 + 4 * HOUR))).turn_count == 2
    assert (await kzg.append_session_turn(PAIR, _turn("older", T0 + HOUR))).turn_count == 3  # out of order
    assert _names(await kzg.get_session(PAIR, as_of=T0 + 5 * HOUR)) == ["a", "b", "older"]


async def test_a_batch_opens_a_new_session_where_a_single_append_would(kzg: KzgMemory) -> None:
    times = [T0, T0 + HOUR, T0 + 6 * HOUR, T0 + 6 * HOUR + MINUTE]
    appends = [(PAIR, _turn(f"t{i}", at), None, True) for i, at in enumerate(times)]
    results = await kzg.append_session_turns(appends)
    assert [r.turn_count for r in results] == [1, 2, 1, 2]
    assert _names(await kzg.get_session(PAIR)) == ["t2", "t3"]
    # The whole batch resent (a replay's retry after a crash): every turn a repeat, the session as it was.
    again = await kzg.append_session_turns(appends)
    assert [(r.repeated, r.turn_count) for r in again] == [(True, 2)] * 4
    assert _names(await kzg.get_session(PAIR)) == ["t2", "t3"]


async def test_turn_times_before_1970_open_a_new_session_alike(kzg: KzgMemory) -> None:
    """Unix seconds below zero are times too (only 0 stands for none in the list's items)."""
    early = datetime(1960, 5, 1, 12, tzinfo=UTC)
    await kzg.append_session_turn(PAIR, _turn("a", early))
    assert (await kzg.append_session_turn(PAIR, _turn("b", early + 3 * HOUR))).turn_count == 2
    assert (await kzg.append_session_turn(PAIR, _turn("c", early + 8 * HOUR))).turn_count == 1
