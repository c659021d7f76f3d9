"""PixieService over a real channel: tasks, pause/resume, trigger-now, run history, parked jobs (SPEC §9).

The promotion jobs here never reach the LZG (expired or corrupt entries), so the LZG and log
services are left unreachable; the end-to-end promotion tests live in test_pixie_promotion.py.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import grpc
import grpc.aio
import pytest
import redis.asyncio as aioredis

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.timeutil import to_timestamp
from tests.polling import eventually
from tests.service.pixie.conftest import PixieCluster, QueueState, expire, kzg_has, queue_state, store_entry


async def test_list_tasks_shows_both_tasks_with_schedule_and_priority(kzg_only_cluster: PixieCluster) -> None:
    replica = await kzg_only_cluster.start("pixie-a")
    tasks = (await replica.api.ListTasks(pixie_pb2.ListTasksRequest())).tasks
    assert [(t.name, t.schedule, t.priority, t.paused, t.HasField("last_run")) for t in tasks] == [
        ("synapsen_promotion", "continuous", 0.9, False, False),
        ("synapsen_decay", "daily 03:30", 0.5, False, False),
    ]


async def test_unknown_task_and_bad_limit_are_invalid_arguments(kzg_only_cluster: PixieCluster) -> None:
    replica = await kzg_only_cluster.start("pixie-a")
    calls = [
        replica.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_traum")),
        replica.api.PauseTask(pixie_pb2.PauseTaskRequest(task="")),
        replica.api.ListRuns(pixie_pb2.ListRunsRequest(task="nope")),
    ]
    for call in calls:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await call
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "task must be one of synapsen_promotion, synapsen_decay" in (error.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as bad_limit:
        await replica.api.ListRuns(pixie_pb2.ListRunsRequest(limit=-1))
    assert bad_limit.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "limit must not be negative" in (bad_limit.value.details() or "")
    assert (await replica.api.ListRuns(pixie_pb2.ListRunsRequest())).runs == []


async def test_pause_is_seen_by_every_replica_and_blocks_unforced_triggers(
    kzg_only_cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub
) -> None:
    a = await kzg_only_cluster.start("pixie-a")
    b = await kzg_only_cluster.start("pixie-b")
    paused = await a.api.PauseTask(pixie_pb2.PauseTaskRequest(task="synapsen_promotion"))
    assert paused.name == "synapsen_promotion" and paused.paused
    seen_by_b = {t.name: t.paused for t in (await b.api.ListTasks(pixie_pb2.ListTasksRequest())).tasks}
    assert seen_by_b == {"synapsen_promotion": True, "synapsen_decay": False}

    # A queued job whose entry is gone: a run would process it (→ expired).
    queued = await store_entry(kzg, "Meister hat im Mai Geburtstag.", salienz=0.9)
    assert queued.queued_for_promotion
    await expire(kzg, queued.kzg_key)

    skipped = (await b.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion"))).run
    assert skipped.outcome == "skipped" and "paused" in skipped.error and skipped.replica == "pixie-b"
    assert (await queue_state(kzg)).length == 1

    forced = (await b.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion", force=True))).run
    assert forced.outcome == "ok" and forced.counts["expired"] == 1 and forced.counts["acked"] == 1

    resumed = await b.api.ResumeTask(pixie_pb2.ResumeTaskRequest(task="synapsen_promotion"))
    assert not resumed.paused and resumed.last_run.id == forced.id
    assert not {t.name: t.paused for t in (await a.api.ListTasks(pixie_pb2.ListTasksRequest())).tasks}[
        "synapsen_promotion"
    ]
    after = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion"))).run
    assert after.outcome == "ok" and after.counts["jobs"] == 0

    history = (await a.api.ListRuns(pixie_pb2.ListRunsRequest(task="synapsen_promotion"))).runs
    assert [(r.id, r.outcome) for r in history] == [(after.id, "ok"), (forced.id, "ok"), (skipped.id, "skipped")]
    assert [r.id for r in (await a.api.ListRuns(pixie_pb2.ListRunsRequest(limit=2))).runs] == [after.id, forced.id]


async def test_paused_continuous_worker_leaves_the_queue_alone_until_resumed(
    kzg_only_cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub
) -> None:
    a = await kzg_only_cluster.start("pixie-a", background=True)
    await a.api.PauseTask(pixie_pb2.PauseTaskRequest(task="synapsen_promotion"))
    await asyncio.sleep(1.2)  # the worker's cached paused state has expired
    queued = await store_entry(kzg, "Meister fährt gern Rad.", salienz=0.9)
    await expire(kzg, queued.kzg_key)
    await asyncio.sleep(0.5)
    assert (await queue_state(kzg)).length == 1
    await a.api.ResumeTask(pixie_pb2.ResumeTaskRequest(task="synapsen_promotion"))
    await eventually(
        lambda: queue_state(kzg), lambda q: q.length == 0, within=5.0, every=0.05, what="an empty queue"
    )
    assert (await queue_state(kzg)).length == 0
    await kzg_only_cluster.stop(a)  # a graceful stop closes the open run
    b = await kzg_only_cluster.start("pixie-b")
    runs = (await b.api.ListRuns(pixie_pb2.ListRunsRequest(task="synapsen_promotion"))).runs
    assert len(runs) == 1 and runs[0].replica == "pixie-a" and runs[0].outcome == "ok"
    assert runs[0].counts["expired"] == 1 and runs[0].counts["acked"] == 1


async def test_expired_entry_ends_as_verfallen_and_is_logged_for_its_pair(
    kzg_only_cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub
) -> None:
    a = await kzg_only_cluster.start("pixie-a")
    queued = await store_entry(kzg, "Meister trinkt morgens Tee.", salienz=0.75, turn_id="turn-tee")
    await expire(kzg, queued.kzg_key)
    run = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion"))).run
    assert run.outcome == "ok" and run.replica == "pixie-a" and run.run_day == ""
    assert {k: v for k, v in run.counts.items() if v} == {"jobs": 1, "expired": 1, "acked": 1}
    assert await queue_state(kzg) == QueueState(0, 0)

    decisions = [r for r in (await a.logged("promotion")) if r.art == "switch"]
    assert len(decisions) == 1
    d = decisions[0]
    assert d.inhalt["entscheidung"] == "promotion.ausgang" and d.inhalt["ausgang"] == "verfallen"
    assert (d.turn_id, d.user_id, d.character_id, d.quelle) == ("turn-tee", "meister", "nova", "Pixie")
    assert d.inhalt["eingang"]["kzg_key"] == queued.kzg_key
    # The run itself: a maintenance span with the pair left NULL (both).
    run_rows = [r for r in (await a.logged("promotion")) if r.art in ("span_start", "berechnung", "span_end")
                and r.user_id is None]
    assert [r.art for r in run_rows] == ["span_start", "berechnung", "span_end"]
    assert run_rows[1].inhalt["counts"]["expired"] == 1 and run_rows[0].character_id is None


async def test_poison_job_is_retried_then_parked_and_visible_while_others_pass(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, redis_url: str
) -> None:
    a = await cluster.start("pixie-a")  # max_attempts 3
    poison = await store_entry(kzg, "Meister sammelt Briefmarken.", salienz=0.9)
    # Corrupt the stored hash: the LZG refuses its text, every Promote of it fails.
    client = aioredis.from_url(redis_url)
    try:
        await client.hset(poison.kzg_key, "inhalt", "Briefmarken\x00")  # a NUL: the LZG refuses it
    finally:
        await client.aclose()

    others = ("Meister fährt im Sommer nach Lissabon.", "Annas Katze heißt Mimi.", "Der Keller ist feucht.")
    runs = []
    for attempt, text in enumerate(others):
        # Every round brings another job, which must pass while the poison job fails.
        await store_entry(kzg, text, salienz=0.9, themen=(f"r{attempt}",))
        runs.append((await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion"))).run)
        await asyncio.sleep(0.2)  # past reclaim_idle_ms, so the failed job is delivered again

    assert [(r.counts["failed"], r.counts["parked"], r.counts["promoted_new"]) for r in runs] == [
        (1, 0, 1), (1, 0, 1), (0, 1, 1),
    ]
    assert "last job error" in runs[0].error and "INVALID_ARGUMENT" in runs[0].error
    parked = (await a.api.ListParkedJobs(pixie_pb2.ListParkedJobsRequest())).jobs
    assert len(parked) == 1
    job = parked[0]
    assert (job.kzg_key, job.user_id, job.character_id, job.attempts) == (poison.kzg_key, "meister", "nova", 3)
    assert job.last_error.startswith("LZG Promote: INVALID_ARGUMENT")
    # Parked means acked: nothing of it is left in the stream, so it blocks nothing.
    assert await queue_state(kzg) == QueueState(0, 0)
    # The entry itself is untouched in the KZG (it may still expire by TTL there).
    parked_decisions = [r for r in (await a.logged("promotion"))
                        if r.art == "switch" and r.inhalt["ausgang"] == "geparkt"]
    assert len(parked_decisions) == 1 and parked_decisions[0].inhalt["massstab"]["attempts"] == 3
    assert len([r for r in (await a.logged("promotion")) if r.art == "fehler"]) == 3


async def test_decay_trigger_records_an_honest_failure_when_lzg_and_log_are_down(
    kzg_only_cluster: PixieCluster,
) -> None:
    a = await kzg_only_cluster.start("pixie-a")
    as_of = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    run = (await a.api.TriggerTask(
        pixie_pb2.TriggerTaskRequest(task="synapsen_decay", as_of=to_timestamp(as_of))
    )).run
    assert run.outcome == "failed" and run.run_day == "2026-11-29" and dict(run.counts) == {"runs_deleted": 0}
    assert "LZG RunDecay failed: UNAVAILABLE" in run.error
    assert "log Purge not run" in run.error
    # A failed run releases the day: the next trigger runs again instead of being skipped.
    again = (await a.api.TriggerTask(
        pixie_pb2.TriggerTaskRequest(task="synapsen_decay", as_of=to_timestamp(as_of))
    )).run
    assert again.outcome == "failed" and again.id != run.id
    rows = (await a.logged("synapsen_decay"))
    assert rows and all(r.user_id is None and r.character_id is None for r in rows)
    assert len([r for r in rows if r.art == "fehler"]) == 4


async def test_an_unreachable_lzg_is_an_outage_not_a_poison_job(
    kzg_only_cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub
) -> None:
    a = await kzg_only_cluster.start("pixie-a")  # max_attempts 3; the LZG is unreachable
    stored = await store_entry(kzg, "Meister hat einen Hund namens Bello.", salienz=0.9)
    for _ in range(5):
        run = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion"))).run
        assert run.outcome == "failed"
        assert run.error.startswith("promotion stopped: LZG Promote: UNAVAILABLE")
        assert run.counts["failed"] == 0 and run.counts["parked"] == 0
        await asyncio.sleep(0.2)  # reclaimable again
    # Five outages later the job is neither parked nor lost: it waits in the stream.
    assert (await a.api.ListParkedJobs(pixie_pb2.ListParkedJobsRequest())).jobs == []
    assert await a.app.store.pool.fetchval("SELECT count(*) FROM pixie.job_attempts") == 0
    assert await queue_state(kzg) == QueueState(1, 1)
    assert await kzg_has(kzg, stored.kzg_key)
