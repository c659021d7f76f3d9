"""Replay-true time in the KZG (SPEC §11): reads at ``as_of`` skip entries expired then or made later."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from novaberg_core.limits import SESSION_TTL
from services.kzg.memory import KzgMemory, session_as_of
from services.kzg.types import RetrieveQuery, SessionState, SessionTurnRecord
from tests.integration.kzg.conftest import PAIR, entry

T0 = datetime.fromtimestamp(1_700_000_000, UTC)  # a replayed turn's own time, long before the wall clock
DAY = timedelta(days=1)


async def _keys_at(kzg: KzgMemory, vector: np.ndarray, as_of: datetime) -> set[str]:
    result = await kzg.retrieve(RetrieveQuery(pair=PAIR, query_vector=vector, top_k=10, as_of=as_of))
    return {hit.entry.kzg_key for hit in result.hits}


async def test_an_entry_expires_in_the_turns_own_time_and_reinforcement_extends_it(kzg: KzgMemory) -> None:
    vector = np.zeros(kzg.provider.dimension, dtype=np.float32)
    vector[0] = 1.0
    minimum = await kzg.store_entry(entry(0.3, ("Garten",), embedding=vector, as_of=T0))  # MINIMUM: 7 d
    assert minimum.ttl_seconds == 7 * DAY.total_seconds()
    assert await _keys_at(kzg, vector, T0 + 6 * DAY) == {minimum.kzg_key}
    assert await _keys_at(kzg, vector, T0 + 8 * DAY) == set()  # expired at as_of, though Redis still holds it
    assert await _keys_at(kzg, vector, T0 - timedelta(seconds=1)) == set()  # not made yet
    # A turn on the same theme on day 5 reinforces it: TTL max(remaining, tier) counted from day 5.
    later = await kzg.store_entry(entry(0.3, ("garten",), embedding=vector, as_of=T0 + 5 * DAY))
    assert later.reinforced_count == 1
    assert await _keys_at(kzg, vector, T0 + 11 * DAY) == {minimum.kzg_key, later.kzg_key}
    assert await _keys_at(kzg, vector, T0 + 13 * DAY) == set()
    stored = await kzg.get_entry(PAIR, minimum.kzg_key)
    assert stored.ablauf_am == T0 + 12 * DAY


def _turn(created_at: datetime) -> SessionTurnRecord:
    return SessionTurnRecord(role="user", text="Hallo", turn_id=f"t{created_at}", created_at=created_at)


def test_a_session_read_at_as_of_is_empty_once_it_had_expired() -> None:
    state = SessionState(turns=(_turn(T0), _turn(T0 + timedelta(seconds=60))), summary="früher", ttl_seconds=100)
    assert [t.created_at for t in session_as_of(state, T0 + timedelta(seconds=30)).turns] == [T0]  # the later turn not yet made
    assert session_as_of(state, T0 + timedelta(seconds=60 + SESSION_TTL - 1)).summary == "früher"
    expired = session_as_of(state, T0 + timedelta(seconds=60 + SESSION_TTL + 1))
    assert expired.turns == () and expired.summary == ""
