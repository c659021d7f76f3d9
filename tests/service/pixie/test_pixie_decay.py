"""The daily task ``synapsen_decay`` (SPEC §9): LZG decay then log retention, once per day, honest outcomes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.pipeline_log import GrpcLogSink
from novaberg_core.server import RunningServer
from novaberg_core.timeutil import to_timestamp
from tests.service.pixie.conftest import UNREACHABLE, PixieCluster, pixie_config

AS_OF = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture
async def log_only_cluster(
    pg_url: str, kzg_server: RunningServer, log_server: RunningServer
) -> AsyncIterator[PixieCluster]:
    """Pixie with the real KZG and log services; the LZG unreachable."""
    cluster = PixieCluster(
        pixie_config(pg_url, kzg_addr=kzg_server.target, lzg_addr=UNREACHABLE, log_addr=log_server.target)
    )
    try:
        yield cluster
    finally:
        await cluster.close()


def _record(erstellt_am: datetime, art: str, turn_id: str) -> log_pb2.LogRecord:
    return log_pb2.LogRecord(
        erstellt_am=to_timestamp(erstellt_am), turn_id=turn_id, quelle="System", node="test", art=art,
        inhalt_json=json.dumps({"text": "alt"}), user_id="meister", character_id="nova",
    )


async def test_purge_still_runs_when_the_lzg_is_down_and_the_partial_outcome_is_recorded(
    log_only_cluster: PixieCluster, log_server: RunningServer, log_api: log_pb2_grpc.LogServiceStub
) -> None:
    old = AS_OF - timedelta(days=400)
    batch = log_pb2.WriteBatch(records=[
        _record(old, "bemerkung", "t-old-1"), _record(old, "db_write", "t-old-2"),
        _record(old + timedelta(hours=1), "berechnung", "t-old-3"), _record(old, "turn_roh", "t-old-roh"),
        _record(AS_OF - timedelta(days=10), "bemerkung", "t-recent"),
    ])
    assert (await log_api.Write(iter([batch]))).inserted == 5

    a = await log_only_cluster.start("pixie-a", log_sink=GrpcLogSink(log_server.target))
    run = (await a.api.TriggerTask(
        pixie_pb2.TriggerTaskRequest(task="synapsen_decay", as_of=to_timestamp(AS_OF))
    )).run
    assert run.outcome == "failed" and run.run_day == "2026-11-29"
    assert dict(run.counts) == {"log_rows_deleted": 3, "kept_turn_roh": 1, "runs_deleted": 0}
    assert run.error.startswith("LZG RunDecay failed: UNAVAILABLE") and "Purge" not in run.error

    left = (await log_api.Query(log_pb2.QueryRequest(node="test"))).records
    assert sorted(r.turn_id for r in left) == ["t-old-roh", "t-recent"]

    # The run's own rows reached the log service: maintenance rows, pair NULL, one turn_id.
    await log_only_cluster.stop(a)
    rows = (await log_api.Query(log_pb2.QueryRequest(node="synapsen_decay"))).records
    assert [r.art for r in rows] == ["span_start", "db_write", "db_write", "fehler", "berechnung", "span_end"]
    assert {(r.user_id, r.character_id, r.quelle) for r in rows} == {("", "", "Pixie")}
    assert len({r.turn_id for r in rows}) == 1 and len({r.span_id for r in rows}) == 1
    assert json.loads(rows[1].inhalt_json)["deleted"] == 3
    assert json.loads(rows[2].inhalt_json)["deleted"] == 0  # no run older than 90 days yet
    result = json.loads(rows[4].inhalt_json)
    assert result["outcome"] == "failed"
    assert result["counts"] == {"log_rows_deleted": 3, "kept_turn_roh": 1, "runs_deleted": 0}


async def test_a_second_trigger_on_the_same_day_is_skipped_unless_forced(
    pg_url: str, kzg_server: RunningServer, log_server: RunningServer
) -> None:
    # Another replica ran the day successfully (its claim row, written through the store).
    cluster = PixieCluster(
        pixie_config(pg_url, kzg_addr=kzg_server.target, lzg_addr=UNREACHABLE, log_addr=log_server.target)
    )
    try:
        a = await cluster.start("pixie-a")
        store = a.app.store
        claimed = await store.claim_daily_run(
            "synapsen_decay", AS_OF.date(), trigger="schedule", turn_id="t", replica="pixie-z",
            now=AS_OF, stale_after_s=60,
        )
        assert claimed is not None
        await store.finish_run(claimed.id, outcome="ok", counts={"nodes_decayed": 1}, error="", now=AS_OF)

        skipped = (await a.api.TriggerTask(
            pixie_pb2.TriggerTaskRequest(task="synapsen_decay", as_of=to_timestamp(AS_OF))
        )).run
        assert skipped.outcome == "skipped" and skipped.run_day == "2026-11-29"
        assert f"already ran for 2026-11-29 (run {claimed.id}, ok, replica pixie-z)" in skipped.error

        forced = (await a.api.TriggerTask(
            pixie_pb2.TriggerTaskRequest(task="synapsen_decay", as_of=to_timestamp(AS_OF), force=True)
        )).run
        assert forced.outcome == "failed" and forced.run_day == "2026-11-29"  # the LZG is down
        assert forced.counts["log_rows_deleted"] == 0

        decay = (await a.api.ListTasks(pixie_pb2.ListTasksRequest())).tasks[1]
        assert decay.name == "synapsen_decay" and decay.last_run.id == forced.id
    finally:
        await cluster.close()



async def test_the_daily_task_purges_old_runs_but_keeps_each_tasks_newest(log_only_cluster: PixieCluster) -> None:
    a = await log_only_cluster.start("pixie-a")
    store = a.app.store
    now = datetime.now(UTC)

    async def run(task: str, days_ago: float, *, finished: bool = True) -> int:
        started = now - timedelta(days=days_ago)
        record = await store.insert_run(task, trigger="worker", turn_id="t", replica="pixie-z", now=started)
        if finished:
            await store.finish_run(record.id, outcome="ok", counts={}, error="", now=started)
        return record.id

    old_promotions = [await run("synapsen_promotion", d) for d in (200, 120, 91)]
    recent_promotion = await run("synapsen_promotion", 89)
    unfinished_old = await run("synapsen_promotion", 150, finished=False)
    old_decay = await run("synapsen_decay", 300)  # the run below becomes its task's newest
    newest_promotion = await run("synapsen_promotion", 95)  # old too, but the newest of its task: stays

    decay = (await a.api.TriggerTask(
        pixie_pb2.TriggerTaskRequest(task="synapsen_decay", as_of=to_timestamp(AS_OF), force=True)
    )).run
    assert decay.counts["runs_deleted"] == len(old_promotions) + 1
    left = {r.id for r in await store.list_runs(None, 100)}
    assert left.isdisjoint([*old_promotions, old_decay])
    assert {recent_promotion, unfinished_old, newest_promotion, decay.id} <= left
