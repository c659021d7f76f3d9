"""Pixie's store against a real PostgreSQL: once-per-day claims, pair locks, attempts, parking (SPEC §9)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta

import pytest

from services.pixie.store import JobRef, PixieStore, RunRecord
from services.pixie.tasks import TASK_DECAY, TASK_PROMOTION

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)
DAY = date(2026, 11, 29)


@pytest.fixture
async def stores(pg_url: str) -> AsyncIterator[tuple[PixieStore, PixieStore]]:
    """Two replicas' stores on one database (each with its own pool)."""
    a = await PixieStore.open(pg_url)
    b = await PixieStore.open(pg_url)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


async def _claim(store: PixieStore, replica: str, now: datetime = NOW, day: date = DAY) -> RunRecord | None:
    return await store.claim_daily_run(
        TASK_DECAY, day, trigger="schedule", turn_id=f"t-{replica}", replica=replica, now=now, stale_after_s=600
    )


async def test_migrations_are_idempotent_and_recorded(pg_url: str) -> None:
    first = await PixieStore.open(pg_url)
    second = await PixieStore.open(pg_url)
    try:
        versions = await first.pool.fetch("SELECT version FROM pixie.schema_migrations ORDER BY 1")
        assert [r["version"] for r in versions] == [1, 2, 3]  # 2: erasures (a person's rights), 3: a scoped run's pairs
    finally:
        await first.close()
        await second.close()


async def test_only_one_replica_claims_a_day(stores: tuple[PixieStore, PixieStore]) -> None:
    a, b = stores
    results = await asyncio.gather(*(_claim(s, f"r{i}") for i in range(5) for s in (a, b)))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert winners[0].outcome == "running" and winners[0].run_day == DAY and winners[0].day_claim
    # The next day is a new claim.
    assert await _claim(b, "rb", NOW + timedelta(days=1), DAY + timedelta(days=1)) is not None
    # A finished ok run keeps the day.
    await a.finish_run(winners[0].id, outcome="ok", counts={"nodes_decayed": 3}, error="", now=NOW)
    assert await _claim(b, "rb") is None
    held = await b.day_run(TASK_DECAY, DAY)
    assert held is not None and held.id == winners[0].id and held.counts == {"nodes_decayed": 3}


async def test_failed_run_releases_the_day_for_a_retry(stores: tuple[PixieStore, PixieStore]) -> None:
    a, b = stores
    run = await _claim(a, "ra")
    assert run is not None
    failed = await a.finish_run(run.id, outcome="failed", counts={"nodes_decayed": 2}, error="log down", now=NOW)
    assert failed.outcome == "failed" and not failed.day_claim and failed.error == "log down"
    assert await b.day_run(TASK_DECAY, DAY) is None
    assert (await b.last_failed_day_run(TASK_DECAY, DAY)).id == run.id  # type: ignore[union-attr]
    retry = await _claim(b, "rb", NOW + timedelta(minutes=20))
    assert retry is not None and retry.replica == "rb"


async def test_stale_claim_of_a_vanished_replica_is_taken_over(stores: tuple[PixieStore, PixieStore]) -> None:
    a, b = stores
    run = await _claim(a, "ra")
    assert run is not None
    # Heart-beating keeps it.
    await a.heartbeat(run.id, NOW + timedelta(seconds=500), {"x": 1})
    assert await _claim(b, "rb", NOW + timedelta(seconds=700)) is None
    # Silent for longer than stale_after_s (600 s): closed as failed, the day goes to b.
    taken = await _claim(b, "rb", NOW + timedelta(seconds=1200))
    assert taken is not None and taken.replica == "rb"
    old = await b.get_run(run.id)
    assert old is not None and old.outcome == "failed" and "ra stopped heart-beating" in old.error


async def test_forced_and_skipped_runs_do_not_touch_the_claim(stores: tuple[PixieStore, PixieStore]) -> None:
    a, _ = stores
    claim = await _claim(a, "ra")
    assert claim is not None
    forced = await a.insert_run(TASK_DECAY, trigger="manual", turn_id="f", replica="ra", now=NOW,
                                run_day=DAY, forced=True)
    skipped = await a.insert_run(TASK_DECAY, trigger="manual", turn_id="s", replica="ra", now=NOW,
                                 run_day=DAY, outcome="skipped", error="paused")
    assert forced.outcome == "running" and forced.forced and not forced.day_claim
    assert skipped.outcome == "skipped" and skipped.ended_at == NOW
    assert (await a.day_run(TASK_DECAY, DAY)).id == claim.id  # type: ignore[union-attr]
    runs = await a.list_runs(None, 10)
    assert [r.id for r in runs] == [skipped.id, forced.id, claim.id]
    assert await a.list_runs(TASK_PROMOTION, 10) == []
    assert (await a.last_runs([TASK_DECAY, TASK_PROMOTION])).keys() == {TASK_DECAY}
    with pytest.raises(ValueError):
        await a.finish_run(claim.id, outcome="running", counts={}, error="", now=NOW)


async def test_pause_is_shared_by_replicas(stores: tuple[PixieStore, PixieStore]) -> None:
    a, b = stores
    assert await b.paused_tasks() == set()
    await a.set_paused(TASK_PROMOTION, True, replica="ra", now=NOW)
    assert await b.paused_tasks() == {TASK_PROMOTION}
    await b.set_paused(TASK_PROMOTION, False, replica="rb", now=NOW)
    assert await a.paused_tasks() == set()


async def test_pair_lock_excludes_other_replicas_but_not_other_pairs(
    stores: tuple[PixieStore, PixieStore],
) -> None:
    a, b = stores
    async with a.pair_lock("meister", "nova") as held:
        assert held.held
        async with b.pair_lock("meister", "nova") as other:
            assert not other.held
        async with b.pair_lock("meister", "luna") as different_pair:
            assert different_pair.held
    async with b.pair_lock("meister", "nova") as after:
        assert after.held


async def test_pair_lock_is_released_when_the_block_fails(stores: tuple[PixieStore, PixieStore]) -> None:
    a, b = stores
    with pytest.raises(RuntimeError):
        async with a.pair_lock("u", "c") as held:
            assert held.held
            raise RuntimeError("crash inside the job")
    async with b.pair_lock("u", "c") as after:
        assert after.held


async def test_failures_count_up_then_the_job_is_parked(stores: tuple[PixieStore, PixieStore]) -> None:
    a, b = stores
    job = JobRef(job_id="1-0", kzg_key="kzg:u:c:e1", ausloeser_turn_id="t1", user_id="u", character_id="c")
    other = JobRef(job_id="2-0", kzg_key="kzg:u:c:e2", ausloeser_turn_id="t2", user_id="u", character_id="c")
    assert await a.job_states(["1-0", "2-0"]) == {}
    attempts = [
        await a.record_failure(job, f"boom {i}", now=NOW, retry_at=lambda n: NOW + timedelta(seconds=n))
        for i in range(3)
    ]
    assert attempts == [1, 2, 3]
    state = (await b.job_states(["1-0", "2-0"]))["1-0"]
    assert state.attempts == 3 and state.next_attempt_at == NOW + timedelta(seconds=3) and not state.parked
    await a.park_job(job, attempts=3, error="boom 2", now=NOW, replica="ra")
    await a.park_job(job, attempts=3, error="boom 2", now=NOW, replica="ra")  # idempotent
    states = await b.job_states(["1-0", "2-0"])
    assert states["1-0"].parked and states["1-0"].attempts == 0
    parked = await b.list_parked(10)
    assert [(p.job_id, p.kzg_key, p.attempts, p.last_error, p.user_id) for p in parked] == [
        ("1-0", "kzg:u:c:e1", 3, "boom 2", "u")
    ]
    await a.record_failure(other, "x", now=NOW, retry_at=lambda n: NOW)
    await a.clear_attempts(["2-0"])
    assert "2-0" not in await a.job_states(["2-0"])


async def test_pair_lock_waits_up_to_wait_ms_for_the_holder(stores: tuple[PixieStore, PixieStore]) -> None:
    a, b = stores
    release = asyncio.Event()

    async def hold_for_a_while() -> None:
        async with a.pair_lock("u", "c") as held:
            assert held.held
            await release.wait()

    holder = asyncio.create_task(hold_for_a_while())
    await asyncio.sleep(0.05)
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with b.pair_lock("u", "c", wait_ms=100) as refused:
        assert not refused.held
    assert 0.09 <= loop.time() - started < 1.0
    # Released while b waits: b gets the pair.
    loop.call_later(0.1, release.set)
    async with b.pair_lock("u", "c", wait_ms=2000) as granted:
        assert granted.held
    await holder
    # The refused attempt left its connection clean (no aborted transaction).
    assert await b.pool.fetchval("SELECT 1") == 1
