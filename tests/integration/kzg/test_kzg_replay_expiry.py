"""A replay expires KZG entries in the turns' own time (SPEC §4.4, §11): what had expired, or was not made
yet, at a writing turn's time is not reinforced by it, although Redis (on its own clock) still holds it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from services.kzg.memory import KzgMemory
from services.kzg.types import RetrieveQuery
from tests.integration.kzg.conftest import PAIR, entry

T0 = datetime.fromtimestamp(1_700_000_000, UTC)  # a replayed turn's own time, long before the wall clock
DAY = timedelta(days=1)


def _vector(kzg: KzgMemory) -> np.ndarray:
    vector = np.zeros(kzg.provider.dimension, dtype=np.float32)
    vector[0] = 1.0
    return vector


async def _keys_at(kzg: KzgMemory, vector: np.ndarray, as_of: datetime) -> set[str]:
    result = await kzg.retrieve(RetrieveQuery(pair=PAIR, query_vector=vector, top_k=10, as_of=as_of))
    return {hit.entry.kzg_key for hit in result.hits}


async def test_a_same_theme_turn_after_the_entry_expired_in_turn_time_does_not_revive_it(kzg: KzgMemory) -> None:
    vector = _vector(kzg)
    first = await kzg.store_entry(entry(0.3, ("Garten",), embedding=vector, as_of=T0))  # MINIMUM: 7 d
    assert first.ttl_seconds == 7 * DAY.total_seconds()
    later = await kzg.store_entry(entry(0.3, ("garten",), embedding=vector, as_of=T0 + 8 * DAY))
    assert later.stored and later.reinforced_count == 0  # expired on day 7, though Redis still holds it
    stored = await kzg.get_entry(PAIR, first.kzg_key)
    assert (stored.haeufigkeit, stored.ablauf_am) == (1, T0 + 7 * DAY)
    assert await _keys_at(kzg, vector, T0 + 9 * DAY) == {later.kzg_key}


async def test_a_turn_does_not_reinforce_an_entry_made_after_its_own_time(kzg: KzgMemory) -> None:
    vector = _vector(kzg)
    made_later = await kzg.store_entry(entry(0.3, ("Garten",), embedding=vector, as_of=T0 + 3 * DAY))
    earlier = await kzg.store_entry(entry(0.3, ("Garten",), embedding=vector, as_of=T0))
    assert earlier.stored and earlier.reinforced_count == 0  # on day 0 the day-3 entry did not exist yet
    stored = await kzg.get_entry(PAIR, made_later.kzg_key)
    assert (stored.haeufigkeit, stored.ablauf_am) == (1, T0 + 10 * DAY)


async def test_a_same_theme_turn_before_the_expiry_still_reinforces(kzg: KzgMemory) -> None:
    vector = _vector(kzg)
    first = await kzg.store_entry(entry(0.3, ("Garten",), embedding=vector, as_of=T0))
    later = await kzg.store_entry(entry(0.3, ("Garten",), embedding=vector, as_of=T0 + 7 * DAY - timedelta(seconds=1)))
    assert later.reinforced_count == 1
    stored = await kzg.get_entry(PAIR, first.kzg_key)
    assert (stored.haeufigkeit, stored.ablauf_am) == (2, T0 + 14 * DAY - timedelta(seconds=1))
