"""A person's rights through PixieService with the real KZG, LZG and log services (issue 13 parts 3–6):
erasure (receipt, resumption after an outage, stale jobs dropped), export → erase → import, forget,
correct, requeue of parked jobs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import grpc
import grpc.aio
import pytest
import redis.asyncio as aioredis
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2, pixie_pb2_grpc
from novaberg_core.contract import TIME_MAX, pair_token
from novaberg_core.timeutil import to_timestamp
from services.pixie.store import JobRef
from services.pixie.types import new_tally
from tests.polling import eventually
from tests.service.pixie.conftest import (
    PAIR,
    UNREACHABLE,
    PixieCluster,
    kzg_has,
    nodes_of,
    store_entry,
)

KEEP = common_pb2.Pair(user_id="anna", character_id="nova")
TEXTS = (
    "Meister hat im Mai Geburtstag und feiert ihn immer im Garten seiner Eltern.",
    "Die Katze des Meisters heißt Minka und schläft am liebsten auf der Heizung.",
    "Meister arbeitet als Tischler und baut gerade einen Schrank aus Eichenholz.",
)


async def _promote(api: pixie_pb2_grpc.PixieServiceStub) -> pixie_pb2.Run:
    return (await api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion", force=True))).run


async def _memories(kzg: kzg_pb2_grpc.KzgServiceStub, api: pixie_pb2_grpc.PixieServiceStub, pair: common_pb2.Pair) -> None:
    """Nodes with edges (promoted), one entry still queued, a session turn."""
    for i, text in enumerate(TEXTS):
        await store_entry(kzg, f"{text} ({pair.user_id})", salienz=0.9, pair=pair, themen=("Meister",),
                          turn_id=f"{pair.user_id}-t{i}")  # fmt: skip
    assert (await _promote(api)).counts["promoted_new"] >= 2
    await kzg.AppendSessionTurn(kzg_pb2.AppendSessionTurnRequest(
        pair=pair, turn=kzg_pb2.SessionTurn(role="user", text="Hallo", turn_id=f"{pair.user_id}-t0")))  # fmt: skip


async def _log_rows(log_api: log_pb2_grpc.LogServiceStub, pair: common_pb2.Pair) -> list[log_pb2.LogRecord]:
    return list((await log_api.Query(log_pb2.QueryRequest(pair=pair, limit=1000))).records)


async def test_erase_pair_returns_a_receipt_and_no_rpc_returns_anything_of_the_pair(
    cluster: PixieCluster,
    kzg: kzg_pb2_grpc.KzgServiceStub,
    lzg: lzg_pb2_grpc.LzgServiceStub,
    log_api: log_pb2_grpc.LogServiceStub,
) -> None:
    a = await cluster.start("pixie-a")
    await _memories(kzg, a.api, PAIR)
    await _memories(kzg, a.api, KEEP)
    for pair in (PAIR, KEEP):  # one entry each still queued for promotion
        await store_entry(kzg, f"Noch nicht befördert ({pair.user_id})", salienz=0.9, pair=pair, turn_id="q")
    await lzg.UpsertTimeline(lzg_pb2.UpsertTimelineRequest(pair=PAIR, timeline=lzg_pb2.Timeline(
        zeitpunkt=to_timestamp(datetime(2026, 5, 1, tzinfo=UTC)), praezision="tag", titel="Geburtstag")))  # fmt: skip
    entity = (await lzg.UpsertEntity(lzg_pb2.UpsertEntityRequest(pair=PAIR, entity=lzg_pb2.Entity(name="Minka")))).entity
    ref = JobRef("1-0", f"kzg:{PAIR.user_id}:{PAIR.character_id}:weg", "t", PAIR.user_id, PAIR.character_id)
    await a.app.store.park_job(ref, attempts=3, error=f"failed on {ref.kzg_key}", now=datetime.now(UTC), replica="x")
    for pair in (PAIR, KEEP):
        await log_api.Write(iter([log_pb2.WriteBatch(records=[log_pb2.LogRecord(
            turn_id=f"{pair.user_id}-t0", quelle="test", node="dispatcher", art=art, inhalt_json='{"a": 1}',
            user_id=pair.user_id, character_id=pair.character_id) for art in ("turn_roh", "eingang")])]))  # fmt: skip
    keep_nodes = [n.SerializeToString() for n in await nodes_of(lzg, KEEP)]
    keep_log = [r.SerializeToString() for r in await _log_rows(log_api, KEEP)]

    receipt = await a.api.ErasePair(pixie_pb2.ErasePairRequest(pair=PAIR, reason="Art. 17 DSGVO"))
    assert receipt.state == "done" and list(receipt.steps_done) == ["kzg", "lzg", "pixie", "log"]
    counts = dict(receipt.counts)
    assert counts["kzg.entries"] >= 1 and counts["kzg.session_keys"] == 2 and counts["kzg.queue_jobs"] == 1
    assert counts["lzg.nodes"] >= 2 and counts["lzg.edges"] >= 2 and counts["lzg.entities"] == 1
    assert counts["lzg.timelines"] == 1
    assert counts["pixie.parked_jobs"] == 1 and counts["log.turn_roh"] == 1 and counts["log.rows"] == 2
    assert receipt.token == pair_token(PAIR.user_id, PAIR.character_id) and receipt.reason == "Art. 17 DSGVO"

    # Nothing of the pair comes back from any RPC.
    assert await nodes_of(lzg, PAIR) == []
    assert list((await lzg.ListEntities(lzg_pb2.ListEntitiesRequest(pair=PAIR))).entities) == []
    with pytest.raises(grpc.aio.AioRpcError):
        await lzg.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=entity.id))
    assert list((await kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))).turns) == []
    assert list((await kzg.Retrieve(kzg_pb2.RetrieveRequest(pair=PAIR, query_text=TEXTS[0]))).hits) == []
    queue = await kzg.InspectPromotionQueue(kzg_pb2.InspectPromotionQueueRequest(limit=100))
    assert all(j.pair.user_id != PAIR.user_id for j in queue.pending_jobs)
    parked = (await a.api.ListParkedJobs(pixie_pb2.ListParkedJobsRequest(limit=100))).jobs
    assert [j for j in parked if j.user_id == PAIR.user_id] == []
    assert await _log_rows(log_api, PAIR) == []
    # The other pair is untouched; the receipt keeps no id.
    assert [n.SerializeToString() for n in await nodes_of(lzg, KEEP)] == keep_nodes
    assert [r.SerializeToString() for r in await _log_rows(log_api, KEEP)] == keep_log
    async with a.app.store.pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM pixie.erasures WHERE id = $1", receipt.id)
    assert row["user_id"] is None and row["character_id"] is None and PAIR.user_id not in str(dict(row))
    listed = (await a.api.ListErasures(pixie_pb2.ListErasuresRequest())).erasures
    assert [e.id for e in listed] == [receipt.id]


async def test_an_interrupted_erasure_is_finished_by_the_next_replica(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub
) -> None:
    a = await cluster.start("pixie-a")
    await _memories(kzg, a.api, PAIR)
    down = await cluster.start("pixie-down", lzg_addr=UNREACHABLE)
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await down.api.ErasePair(pixie_pb2.ErasePairRequest(pair=PAIR))
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE and "is recorded" in (failed.value.details() or "")
    (running,) = (await a.api.ListErasures(pixie_pb2.ListErasuresRequest())).erasures
    assert running.state == "running" and list(running.steps_done) == ["kzg"] and "UNAVAILABLE" in running.error
    assert await nodes_of(lzg, PAIR) != []  # the LZG step has not run
    await cluster.stop(down)
    b = await cluster.start("pixie-b", background=True)  # resumes unfinished erasures at start

    async def the_erasure() -> pixie_pb2.ErasureReceipt:
        (erasure,) = (await b.api.ListErasures(pixie_pb2.ListErasuresRequest())).erasures
        return erasure

    erasure = await eventually(
        the_erasure, lambda e: e.state == "done", within=10.0, every=0.05, what="the resumed erasure"
    )
    assert erasure.state == "done" and list(erasure.steps_done) == ["kzg", "lzg", "pixie", "log"]
    assert await nodes_of(lzg, PAIR) == []


async def test_jobs_a_worker_held_before_the_erasure_are_dropped_unprocessed(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub
) -> None:
    a = await cluster.start("pixie-a")
    await store_entry(kzg, TEXTS[0], salienz=0.9)
    held = await a.app.worker.read_jobs(0)  # in the worker's hands (pending), not yet promoted
    assert len(held) == 1
    await a.api.ErasePair(pixie_pb2.ErasePairRequest(pair=PAIR))
    records = len(a.sink.records)
    tally = new_tally()
    await a.app.worker.process_batch(held, tally)
    assert tally["erased"] == 1 and tally["promoted_new"] == 0 and tally["expired"] == 0
    assert await nodes_of(lzg, PAIR) == []
    await a.app.plog.flush()
    assert [r for r in a.sink.records[records:] if r.user_id == PAIR.user_id] == []
    # A job queued after the erasure is a new memory of the pair.
    await store_entry(kzg, TEXTS[1], salienz=0.9)
    assert (await _promote(a.api)).counts["promoted_new"] == 1


async def test_export_erase_import_restores_the_same_memories(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub
) -> None:
    a = await cluster.start("pixie-a")
    await _memories(kzg, a.api, PAIR)
    lines = [line async for chunk in a.api.ExportPair(pixie_pb2.ExportPairRequest(pair=PAIR)) for line in chunk.lines]
    header = json.loads(lines[0])
    assert header["schema"] == "novaberg.export/1" and header["pair"] == {"user_id": "meister", "character_id": "nova"}
    before = await _graph(lzg, PAIR)
    await a.api.ErasePair(pixie_pb2.ErasePairRequest(pair=PAIR))
    assert await _graph(lzg, PAIR) == ([], [])

    async def requests() -> AsyncIterator[pixie_pb2.ImportPairRequest]:
        yield pixie_pb2.ImportPairRequest(pair=PAIR)
        for start in range(0, len(lines), 2):
            yield pixie_pb2.ImportPairRequest(lines=lines[start : start + 2])

    imported = await a.api.ImportPair(requests())
    assert imported.counts["nodes"] == len(before[0]) and imported.counts["session_turns"] == 1
    assert await _graph(lzg, PAIR) == before
    with pytest.raises(grpc.aio.AioRpcError) as again:
        await a.api.ImportPair(requests())
    assert again.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_a_session_turn_at_the_last_instant_travels_with_its_pair(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub
) -> None:
    """9999-12-30T00:00:00 is the last instant a request may name; a fraction of a second after it was
    accepted too, the KZG's float epoch rounded it to the next second, and the pair's export then held
    a time its import refused (found by the attack suite, seed 3030)."""
    a = await cluster.start("pixie-a")
    last = to_timestamp(TIME_MAX)
    after = Timestamp(seconds=last.seconds, nanos=1)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await kzg.AppendSessionTurn(kzg_pb2.AppendSessionTurnRequest(
            pair=PAIR, turn=kzg_pb2.SessionTurn(role="user", text="Danach", turn_id="t-danach", created_at=after)))  # fmt: skip
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    await kzg.AppendSessionTurn(kzg_pb2.AppendSessionTurnRequest(
        pair=PAIR, turn=kzg_pb2.SessionTurn(role="user", text="Am Ende", turn_id="t-ende", created_at=last)))  # fmt: skip
    lines = [line async for chunk in a.api.ExportPair(pixie_pb2.ExportPairRequest(pair=PAIR)) for line in chunk.lines]
    target = common_pb2.Pair(user_id="meister-kopie", character_id="nova")

    async def requests() -> AsyncIterator[pixie_pb2.ImportPairRequest]:
        yield pixie_pb2.ImportPairRequest(pair=target, lines=lines)

    assert (await a.api.ImportPair(requests())).counts["session_turns"] == 1
    copied = (await kzg.GetSession(kzg_pb2.GetSessionRequest(pair=target))).turns
    assert [(t.text, t.created_at) for t in copied] == [("Am Ende", last)]


async def _graph(lzg: lzg_pb2_grpc.LzgServiceStub, pair: common_pb2.Pair) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Nodes (content, weights) and edges (by content, weights, reasons): everything but ids."""
    nodes = await nodes_of(lzg, pair)
    text = {n.id: n.inhalt for n in nodes}
    edges = (await lzg.ListEdges(lzg_pb2.ListEdgesRequest(pair=pair, limit=1000))).edges
    return (
        sorted((n.inhalt, n.gewicht_roh, n.gewicht_absolut, n.gewicht_decay, n.aktiv, tuple(n.themen)) for n in nodes),
        sorted((text[e.knoten_a_id], text[e.knoten_b_id], e.gewicht_roh, e.gewicht_absolut, tuple(e.verbindungs_gruende),
                tuple(e.geteilte_themen)) for e in edges),
    )  # fmt: skip


async def test_forget_and_correct_one_memory(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub
) -> None:
    a = await cluster.start("pixie-a")
    await _memories(kzg, a.api, PAIR)
    nodes = await nodes_of(lzg, PAIR)
    first = next(n for n in nodes if n.inhalt.startswith(TEXTS[0][:20]))
    with pytest.raises(grpc.aio.AioRpcError) as no_reason:
        await a.api.ForgetMemory(pixie_pb2.ForgetMemoryRequest(pair=PAIR, node_id=first.id))
    assert no_reason.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    forgot = await a.api.ForgetMemory(pixie_pb2.ForgetMemoryRequest(pair=PAIR, node_id=first.id, reason="bitte vergessen"))
    assert list(forgot.node_ids) == [first.id] and forgot.edges >= 2 and forgot.session_turns == 1
    assert first.id not in [n.id for n in await nodes_of(lzg, PAIR)]
    assert [r.inhalt["grund"] for r in await a.logged("vergessen")] == ["bitte vergessen"]
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await a.api.ForgetMemory(pixie_pb2.ForgetMemoryRequest(pair=PAIR, node_id=first.id, reason="nochmal"))
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND

    second = next(n for n in await nodes_of(lzg, PAIR) if n.inhalt.startswith(TEXTS[1][:20]))
    corrected = await a.api.CorrectMemory(pixie_pb2.CorrectMemoryRequest(
        pair=PAIR, node_id=second.id, inhalt="Die Katze des Meisters heißt Mimi.", reason="falscher Name"))  # fmt: skip
    assert corrected.node_id == second.id and corrected.previous_inhalt == second.inhalt
    node = (await lzg.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=second.id))).node
    assert node.inhalt == "Die Katze des Meisters heißt Mimi." and node.gewicht_absolut == second.gewicht_absolut
    logged = [r.inhalt for r in await a.logged("korrektur")]
    assert logged and logged[-1]["vorher"] == second.inhalt and logged[-1]["grund"] == "falscher Name"
    # An entry still in the KZG is corrected there (by key).
    entry = await store_entry(kzg, "Meister mag grünen Tee.", salienz=0.5)
    fixed = await a.api.CorrectMemory(pixie_pb2.CorrectMemoryRequest(
        pair=PAIR, kzg_key=entry.kzg_key, inhalt="Meister mag schwarzen Tee.", reason="Tippfehler"))  # fmt: skip
    assert fixed.kzg_key == entry.kzg_key and fixed.node_id == 0
    got = (await kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=entry.kzg_key))).entry
    assert got.inhalt == "Meister mag schwarzen Tee."


@pytest.mark.parametrize("right", ["forget", "correct"])
async def test_a_forget_or_correction_while_the_pair_is_promoted_is_not_undone_by_the_promotion(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub, right: str
) -> None:
    """The person's request arrives after a worker read the entry and before it wrote the node.

    Forget and correct found no node yet and changed the KZG entry; the worker then wrote the node
    from what it had read — the forgotten or the uncorrected text — and deleted the entry: the
    request answered OK and was undone. They hold the pair's promotion lock now, as an erasure does."""
    text = "Meister hat Angst vor Spinnen und erzählt es niemandem."
    entry = await store_entry(kzg, text, salienz=0.9, turn_id="t-geheim")
    request: list[asyncio.Task[Any]] = []

    async def meanwhile(step: str, job: kzg_pb2.PromotionJob) -> None:
        if step != "read" or request:
            return
        if right == "forget":
            call = a.api.ForgetMemory(pixie_pb2.ForgetMemoryRequest(pair=PAIR, source_turn_id="t-geheim", reason="bitte"))
        else:
            call = a.api.CorrectMemory(pixie_pb2.CorrectMemoryRequest(
                pair=PAIR, kzg_key=entry.kzg_key, inhalt="Meister mag Spinnen.", reason="stimmt nicht"))  # fmt: skip
        request.append(asyncio.ensure_future(call))
        await asyncio.sleep(0.5)  # the request's time to run while the worker holds what it read

    a = await cluster.start("pixie-a", step_hook=meanwhile)
    assert (await _promote(a.api)).counts["promoted_new"] == 1
    answer = await asyncio.wait_for(request[0], timeout=30)
    contents = [n.inhalt for n in await nodes_of(lzg, PAIR)]
    assert not await kzg_has(kzg, entry.kzg_key)
    if right == "forget":
        assert contents == [] and len(answer.node_ids) == 1  # the node the promotion made, forgotten
    else:
        assert contents == ["Meister mag Spinnen."] and answer.node_id > 0 and answer.previous_inhalt == text


async def test_requeue_puts_parked_jobs_back_and_drops_gone_ones(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub, redis_url: str
) -> None:
    a = await cluster.start("pixie-a")  # max_attempts 3
    poison = await store_entry(kzg, TEXTS[2], salienz=0.9)
    gone = await store_entry(kzg, TEXTS[1], salienz=0.9)
    client = aioredis.from_url(redis_url)
    try:
        for key in (poison.kzg_key, gone.kzg_key):
            await client.hset(key, "inhalt", "Briefmarken\x00")  # a NUL: the LZG refuses it
        for _ in range(3):
            await _promote(a.api)
            await asyncio.sleep(0.25)  # past the backoff and the reclaim time of the test config
        parked = {j.kzg_key: j.job_id for j in (await a.api.ListParkedJobs(pixie_pb2.ListParkedJobsRequest())).jobs}
        assert set(parked) == {poison.kzg_key, gone.kzg_key}
        await client.hset(poison.kzg_key, "inhalt", TEXTS[2])  # the cause is fixed
        await client.delete(gone.kzg_key)
    finally:
        await client.aclose()
    with pytest.raises(grpc.aio.AioRpcError) as neither:
        await a.api.RequeueParkedJobs(pixie_pb2.RequeueParkedJobsRequest())
    assert neither.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    answer = await a.api.RequeueParkedJobs(pixie_pb2.RequeueParkedJobsRequest(all=True))
    assert (answer.requeued, answer.gone, len(answer.job_ids)) == (1, 1, 1)
    assert list((await a.api.ListParkedJobs(pixie_pb2.ListParkedJobsRequest())).jobs) == []
    assert (await _promote(a.api)).counts["promoted_new"] == 1
    assert [n.kzg_quell_key for n in await nodes_of(lzg, PAIR)] == [poison.kzg_key]
    assert not await kzg_has(kzg, poison.kzg_key)
    one = await a.api.RequeueParkedJobs(pixie_pb2.RequeueParkedJobsRequest(job_ids=[parked[poison.kzg_key]]))
    assert one.requeued == 0  # no longer parked
