"""Promotion queue: a stream with the consumer group ``pixie``, at-least-once (SPEC §4.6)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from novaberg_core.errors import InvalidArgument
from services.kzg.memory import KzgMemory
from services.kzg.store import PROMOTION_STREAM
from tests.integration.kzg.conftest import PAIR, entry, unit_vector


@pytest.fixture
def retrieval_threshold() -> float:
    """Queue tests never retrieve; no model profile needed."""
    return 0.5


async def _queue_three(kzg: KzgMemory, rng: np.random.Generator) -> list[str]:
    keys = []
    for i in range(3):
        result = await kzg.store_entry(entry(0.8, (f"thema-{i}",), embedding=unit_vector(rng), turn_id=f"turn-{i}"))
        assert result.queued_for_promotion
        keys.append(result.kzg_key)
    return keys


async def test_each_job_is_delivered_at_least_once_across_a_consumer_crash(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    keys = await _queue_three(kzg, rng)

    first = await kzg.read_promotion_jobs("pixie-a", 10)
    assert [j.kzg_key for j in first] == keys
    assert [j.ausloeser_turn_id for j in first] == ["turn-0", "turn-1", "turn-2"]
    assert all(j.pair == PAIR and j.delivery_count == 1 for j in first)
    assert await kzg.ack_promotion_jobs([first[0].job_id]) == 1
    # pixie-a dies here with two jobs unacked. Not yet idle long enough: nothing to reclaim, nothing new.
    assert await kzg.read_promotion_jobs("pixie-b", 10, reclaim_idle_ms=60_000) == []

    await asyncio.sleep(0.06)
    second = await kzg.read_promotion_jobs("pixie-b", 10, reclaim_idle_ms=50)
    assert [j.kzg_key for j in second] == keys[1:]
    assert [j.job_id for j in second] == [j.job_id for j in first[1:]]
    assert all(j.delivery_count == 2 for j in second)
    assert await kzg.ack_promotion_jobs([j.job_id for j in second]) == 2

    state = await kzg.inspect_promotion_queue(10)
    assert (state.length, state.pending, state.pending_jobs) == (0, 0, ())
    assert set(state.consumers) == {"pixie-a", "pixie-b"}
    assert await kzg.read_promotion_jobs("pixie-b", 10, reclaim_idle_ms=1) == []


async def test_inspect_lists_pending_jobs_with_their_delivery_count(kzg: KzgMemory, rng: np.random.Generator) -> None:
    keys = await _queue_three(kzg, rng)
    await kzg.read_promotion_jobs("pixie-a", 2)
    state = await kzg.inspect_promotion_queue(10)
    assert state.length == 3 and state.pending == 2
    assert [j.kzg_key for j in state.pending_jobs] == keys[:2]
    assert all(j.delivery_count == 1 and j.pair == PAIR for j in state.pending_jobs)


async def test_a_blocking_read_returns_a_job_written_meanwhile(kzg: KzgMemory, rng: np.random.Generator) -> None:
    reader = asyncio.create_task(kzg.read_promotion_jobs("pixie-a", 5, block_ms=2_000))
    await asyncio.sleep(0.05)
    result = await kzg.store_entry(entry(0.9, embedding=unit_vector(rng)))
    jobs = await asyncio.wait_for(reader, 3)
    assert [j.kzg_key for j in jobs] == [result.kzg_key]


async def test_jobs_written_before_the_group_existed_are_delivered(kzg: KzgMemory, rng: np.random.Generator) -> None:
    await kzg.store.redis.delete(PROMOTION_STREAM)
    await kzg.store.redis.xadd(PROMOTION_STREAM, {"kzg_key": "kzg:u:c:1", "ausloeser_turn_id": "t",
                                                  "user_id": "u", "character_id": "c"})
    jobs = await kzg.read_promotion_jobs("pixie-a", 5)  # NOGROUP → group created from the stream's start
    assert [j.kzg_key for j in jobs] == ["kzg:u:c:1"]


async def test_bad_queue_requests_are_refused(kzg: KzgMemory) -> None:
    with pytest.raises(InvalidArgument, match="job id"):
        await kzg.ack_promotion_jobs(["not-an-id"])
    with pytest.raises(InvalidArgument, match="consumer"):
        await kzg.read_promotion_jobs(" ", 5)
