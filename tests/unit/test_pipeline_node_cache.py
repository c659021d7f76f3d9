"""The pipeline's memory of which node ids belong to which pair (saves LZG lookups in Dispatch)."""

from __future__ import annotations

from novaberg.common.v1 import common_pb2
from services.pipeline.app.context import PairNodeCache

A = common_pb2.Pair(user_id="meister", character_id="nova")
B = common_pb2.Pair(user_id="gast", character_id="nova")


def test_ids_are_known_per_pair_only() -> None:
    cache = PairNodeCache()
    cache.add(A, [1, 2, 3])
    assert cache.unknown(A, [3, 2, 7]) == [7]
    assert cache.unknown(B, [1, 2]) == [1, 2]  # another pair's ids are never assumed


def test_least_recently_used_pair_is_forgotten_first() -> None:
    cache = PairNodeCache(max_pairs=2)
    cache.add(A, [1])
    cache.add(B, [2])
    cache.add(A, [3])  # A is used again: B is now the oldest
    cache.add(common_pb2.Pair(user_id="dritte", character_id="nova"), [4])
    assert cache.unknown(B, [2]) == [2]
    assert cache.unknown(A, [1, 3]) == []


def test_a_pair_holds_a_bounded_number_of_ids() -> None:
    cache = PairNodeCache(max_ids=3)
    cache.add(A, [1, 2, 3])
    cache.add(A, [4])  # over the bound: start again rather than grow
    assert cache.unknown(A, [1, 4]) == [1]
