"""Runs scoped to pairs (issue 16): a replay's decay, retention and promotion touch its pairs only;
an all-pairs run with an as_of in the future is refused; the scheduled daily run stays all-pairs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.timeutil import to_timestamp, utc_now
from tests.service.pixie.conftest import PAIR, PixieCluster, nodes_of, store_entry

ANNA = common_pb2.Pair(user_id="anna", character_id="nova")


def _pairs(run: pixie_pb2.Run) -> list[tuple[str, str]]:
    return [(p.user_id, p.character_id) for p in run.pairs]


async def test_a_scoped_decay_months_ahead_ages_only_its_pair_and_claims_no_day(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub
) -> None:
    a = await cluster.start("pixie-a")
    await store_entry(kzg, "Meister baut ein Vogelhaus für den Garten.", salienz=0.9)
    await store_entry(kzg, "Anna fährt im Sommer nach Lissabon.", salienz=0.9, pair=ANNA)
    promoted = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion"))).run
    assert promoted.counts["promoted_new"] == 2 and _pairs(promoted) == []
    (anna_before,) = await nodes_of(lzg, ANNA)

    ahead = utc_now() + timedelta(days=90)
    run = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(
        task="synapsen_decay", as_of=to_timestamp(ahead), pairs=[PAIR],
    ))).run  # fmt: skip
    assert run.outcome == "ok" and run.counts["nodes_decayed"] == 1 and "runs_deleted" not in run.counts
    assert _pairs(run) == [("meister", "nova")]
    (meister,) = await nodes_of(lzg, PAIR)
    assert meister.decay_am == to_timestamp(ahead)
    assert await nodes_of(lzg, ANNA) == [anna_before]

    rows = await a.logged("synapsen_decay")
    # SPEC §8: a scoped run's rows carry the pair.
    assert rows and {(r.user_id, r.character_id) for r in rows} == {("meister", "nova")}
    listed = (await a.api.ListRuns(pixie_pb2.ListRunsRequest(task="synapsen_decay"))).runs
    assert _pairs(listed[0]) == [("meister", "nova")]

    # A scoped run today holds no claim: the all-pairs run of today still runs, unforced.
    today = utc_now()
    scoped_today = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(
        task="synapsen_decay", as_of=to_timestamp(today), pairs=[ANNA],
    ))).run  # fmt: skip
    daily = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_decay"))).run
    assert (scoped_today.outcome, daily.outcome) == ("ok", "ok") and _pairs(daily) == []
    assert "runs_deleted" in daily.counts
    # The all-pairs run's rows leave the pair NULL (SPEC §8).
    assert any(r.user_id is None and r.character_id is None for r in await a.logged("synapsen_decay"))


@pytest.mark.parametrize("task", ["synapsen_decay", "synapsen_promotion"])
async def test_an_all_pairs_run_in_the_future_is_refused_and_recorded_nowhere(
    cluster: PixieCluster, task: str
) -> None:
    a = await cluster.start("pixie-a")
    ahead = to_timestamp(utc_now() + timedelta(days=90))
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task=task, as_of=ahead, force=True))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = refused.value.details() or ""
    assert f"TriggerTask {task} over all pairs" in details and "in the future" in details
    assert list((await a.api.ListRuns(pixie_pb2.ListRunsRequest(task=task))).runs) == []


async def test_a_scoped_promotion_leaves_another_pairs_job_pending_for_the_worker(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub
) -> None:
    a = await cluster.start("pixie-a")
    await store_entry(kzg, "Meister hat sich einen Hund namens Bruno geholt.", salienz=0.9)
    other = await store_entry(kzg, "Anna lernt seit Januar Portugiesisch.", salienz=0.9, pair=ANNA)
    when = datetime(2026, 3, 14, 18, 30, tzinfo=UTC)
    run = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(
        task="synapsen_promotion", as_of=to_timestamp(when), force=True, pairs=[PAIR],
    ))).run  # fmt: skip
    assert (run.counts["promoted_new"], run.counts["out_of_scope"]) == (1, 1)
    (node,) = await nodes_of(lzg, PAIR)
    assert node.erstellt_am == to_timestamp(when)
    assert await nodes_of(lzg, ANNA) == []
    queue = await kzg.InspectPromotionQueue(kzg_pb2.InspectPromotionQueueRequest(limit=10))
    assert [j.kzg_key for j in queue.pending_jobs] == [other.kzg_key]  # pending, unacked, untouched

    await asyncio.sleep(0.3)  # past reclaim_idle_ms: any worker may now claim it
    later = (await a.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion"))).run
    assert later.counts["promoted_new"] == 1
    (anna,) = await nodes_of(lzg, ANNA)
    assert anna.erstellt_am != to_timestamp(when)  # promoted on the real clock, not the replay's
