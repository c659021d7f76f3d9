"""A Redis that answers late (paused, overloaded): a write is never sent twice, and a blocking read of
the promotion queue may wait longer than one command may take (novaberg_core.redis_client).

Redis is kept busy by a Lua script on another connection, as a slow disk or a fork would pause it:
commands sent meanwhile wait in its socket and run once it wakes. The store's client here waits
``READ_TIMEOUT`` for an answer (production: ``READ_TIMEOUT_S``, 5 s), so the tests take a second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
import redis.exceptions

from novaberg_core import redis_client
from novaberg_core.store_errors import store_outage
from services.kzg.store import PROMOTION_STREAM, KzgStore
from services.kzg.types import SessionTurnRecord
from tests.integration.kzg.conftest import PAIR

READ_TIMEOUT = 0.5

SPIN_LUA = "local n = 0; for i = 1, tonumber(ARGV[1]) do n = n + 1 end; return n"
"""Keeps Redis busy for ARGV[1] loop rounds (a script sees a frozen clock, so it cannot wait for a time)."""

CALIBRATION_ROUNDS = 20_000_000


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[KzgStore]:
    """The KZG's store on a client that waits ``READ_TIMEOUT`` for an answer."""
    client = redis_client.connect(redis_url, decode_responses=False, read_timeout=READ_TIMEOUT)
    kzg_store = KzgStore(client, dimension=384)
    await kzg_store.ensure_promotion_group()
    try:
        yield kzg_store
    finally:
        await kzg_store.close()


@pytest.fixture
async def busy(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        yield client
    finally:
        await client.aclose()


async def _keep_busy(busy: aioredis.Redis, ms: int) -> asyncio.Task[object]:
    """Redis busy for about ``ms`` (well below its 5 s busy-script threshold, so no one gets BUSY)."""
    started = time.monotonic()
    await busy.eval(SPIN_LUA, 0, CALIBRATION_ROUNDS)
    rounds_per_ms = CALIBRATION_ROUNDS / max((time.monotonic() - started) * 1000.0, 1.0)
    task = asyncio.ensure_future(busy.eval(SPIN_LUA, 0, int(rounds_per_ms * ms)))
    await asyncio.sleep(0.05)  # the script runs now
    return task


async def test_a_session_turn_redis_answered_late_is_appended_once_and_reported_as_unknown(
    store: KzgStore, busy: aioredis.Redis
) -> None:
    await store.session_append(PAIR, SessionTurnRecord(role="user", text="vorher", turn_id="t0"))
    paused = await _keep_busy(busy, int(READ_TIMEOUT * 2000))

    turn = SessionTurnRecord(role="user", text="Anna pflanzt Rosen.", turn_id="t1")
    with pytest.raises(redis.exceptions.TimeoutError) as unanswered:
        await store.session_append(PAIR, turn)
    await paused

    # Redis ran the append once it woke; a second attempt would have appended the turn twice.
    assert [turn.turn_id for turn in (await store.session_read(PAIR)).turns] == ["t0", "t1"]
    outage = store_outage(unanswered.value)
    assert outage is not None
    assert str(outage).startswith("Redis did not answer in time (paused or overloaded?); a write may have taken")


async def test_a_blocking_read_may_wait_longer_than_one_command_may_take(store: KzgStore) -> None:
    block_ms = int(READ_TIMEOUT * 3000)
    started = time.monotonic()
    assert await store.read_jobs("pixie-a", 5, block_ms=block_ms, reclaim_idle_ms=60_000) == []
    assert time.monotonic() - started >= block_ms / 1000 - 0.05

    reader = asyncio.ensure_future(store.read_jobs("pixie-a", 5, block_ms=block_ms, reclaim_idle_ms=60_000))
    await asyncio.sleep(READ_TIMEOUT * 1.5)  # past one command's read timeout
    await store.redis.xadd(PROMOTION_STREAM, {"kzg_key": "kzg:u:c:1", "ausloeser_turn_id": "t1",
                                              "user_id": PAIR.user_id, "character_id": PAIR.character_id})  # fmt: skip
    jobs = await asyncio.wait_for(reader, block_ms / 1000)
    assert [job.kzg_key for job in jobs] == ["kzg:u:c:1"]
