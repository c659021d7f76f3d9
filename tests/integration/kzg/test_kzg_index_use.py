"""A write finds its theme neighbours through the index, never by scanning the keyspace (SPEC §4.4).

Redis counts every command in ``INFO commandstats``, including those a Lua script runs, so the
difference around one ``store_entry`` shows exactly what the write asked of the server. The
test Redis is flushed before each test and used by this test alone; nothing else runs on it in
between the two INFO calls.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from services.kzg.memory import KzgMemory
from tests.integration.kzg.conftest import OTHER_PAIR, entry, unit_vector

SHARING = 30
"""Entries of the pair sharing the theme ``Garten`` (in varying spelling)."""
NOT_SHARING = 30
"""Entries of the pair with a theme of their own each."""
OTHER_PAIR_SHARING = 10
"""Entries of another pair with the theme ``Garten``: never neighbours."""
KEYSPACE_COMMANDS = ("keys", "scan", "hscan", "sscan", "zscan", "ft.aggregate", "ft.cursor|read")


@pytest.fixture
def retrieval_threshold() -> float:
    """The write path never reads the retrieval threshold; no model profile needed."""
    return 0.5


def _calls(stats: Mapping[str, object]) -> dict[str, int]:
    """``cmdstat_<name>`` → calls, names lower-cased (module commands are reported upper-case)."""
    calls = {}
    for name, value in stats.items():
        if name.startswith("cmdstat_") and isinstance(value, Mapping):
            calls[name.removeprefix("cmdstat_").lower()] = int(value["calls"])
    return calls


@pytest.mark.parametrize(
    ("themen", "reinforced", "searches"),
    [
        # One FT.SEARCH (the neighbour query: pair + themen_norm tags) reaches all 30 sharers.
        (("GARTEN ", "Urlaub"), SHARING, 1),
        # A theme nobody shares: still exactly one FT.SEARCH, which finds nothing.
        (("Urlaub",), 0, 1),
        # No theme at all: nothing to look for, no search.
        ((), 0, 0),
    ],
)
async def test_one_write_asks_the_index_once_and_scans_nothing(
    kzg: KzgMemory, rng: np.random.Generator, themen: tuple[str, ...], reinforced: int, searches: int
) -> None:
    for i in range(SHARING):
        await kzg.store_entry(
            entry(0.3, ("Garten" if i % 2 else " garten", f"Extra {i}"), embedding=unit_vector(rng))
        )
    for i in range(NOT_SHARING):
        await kzg.store_entry(entry(0.3, (f"Thema {i}",), embedding=unit_vector(rng)))
    for _ in range(OTHER_PAIR_SHARING):
        await kzg.store_entry(entry(0.3, ("Garten",), pair=OTHER_PAIR, embedding=unit_vector(rng)))
    redis = kzg.store.redis
    vector = unit_vector(rng)

    before = _calls(await redis.info("commandstats"))
    result = await kzg.store_entry(entry(0.3, themen, embedding=vector))
    after = _calls(await redis.info("commandstats"))

    grown = {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}
    assert result.stored and result.reinforced_count == reinforced
    assert {name: grown[name] for name in KEYSPACE_COMMANDS if name in grown} == {}, grown
    assert grown.get("ft.search", 0) == searches, grown
    # The write itself is one script call (the script is loaded already: no NOSCRIPT round trip).
    assert grown.get("evalsha", 0) == 1, grown
    # One HSET for the new entry and one per reinforced neighbour: each HSET re-indexes the whole
    # entry and leaves garbage in the index until the search module's GC runs.
    assert grown.get("hset", 0) == 1 + reinforced, grown
