"""ObserveTurns (issue 16): a batch stores what ObserveTurn turn after turn stores, and a bad batch nothing.

One LoCoMo conversation's first 90 turns go through both paths — one by one into pair A, in batches
into pair B — over real KZG and LZG servers and real stores, with the offline analyzer on; the KZG
entries, the session, the promotion jobs, the analyses, the responses and the log records of each
turn must match (ids, keys and the pair aside).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import numpy as np
import pytest
import redis.asyncio as aioredis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.contract import BATCH_MAX_TURNS
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.errors import Unavailable
from novaberg_core.pipeline_log import InMemorySink, PendingRecord, PipelineLog
from novaberg_core.timeutil import to_timestamp
from novaberg_dev.cli import ImportedTurn, parse_locomo
from services.kzg.config import KzgConfig
from services.kzg.server import create_server as create_kzg_server
from services.kzg.store import PROMOTION_STREAM
from services.lzg.config import LzgConfig
from services.lzg.server import create_server as create_lzg_server
from services.pipeline.analyzer import AnalyzedTurn
from services.pipeline.app.observe import WRITE_CHUNK
from tests.redis_values import bytes_stream
from tests.service.pipeline.conftest import Peers, start_pipeline

LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")
TURNS = 90
BATCH = 70
"""Two batches (70, 20), the first written in two chunks (WRITE_CHUNK 64): reinforcement and the
session fold cross chunk and batch borders."""
ONE_BY_ONE = common_pb2.Pair(user_id="bulk-one-by-one", character_id="melanie")
BATCHED = common_pb2.Pair(user_id="bulk-batched", character_id="melanie")
PROFILE = common_pb2.PairProfile(user_name="Caroline", character_name="Melanie", sprache="en")


@dataclass
class Bulk:
    pipeline: pipeline_pb2_grpc.PipelineServiceStub
    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub
    logs: list[tuple[PipelineLog, InMemorySink]]
    redis_url: str

    async def records(self, pair: common_pb2.Pair) -> list[PendingRecord]:
        for log, _ in self.logs:
            await log.flush()
        return [r for _, sink in self.logs for r in sink.records if r.user_id == pair.user_id]


@pytest.fixture
async def bulk(redis_url: str, pg_url: str, provider: EmbeddingProvider) -> AsyncIterator[Bulk]:
    """KZG and LZG servers whose logs (with the pipeline's) land in memory, and the pipeline."""
    kzg_sink = InMemorySink()
    kzg_log = PipelineLog(kzg_sink)
    kzg = await create_kzg_server(KzgConfig(common=CommonConfig("kzg"), redis_url=redis_url), provider=provider, log=kzg_log)
    lzg = await create_lzg_server(LzgConfig(common=CommonConfig("lzg"), postgres_url=pg_url), provider=provider, log=PipelineLog())
    server, sink, log = await start_pipeline(Peers(kzg, lzg, redis_url), provider)
    channels = [grpc.aio.insecure_channel(t) for t in (server.target, kzg.target, lzg.target)]
    try:
        yield Bulk(
            pipeline=pipeline_pb2_grpc.PipelineServiceStub(channels[0]),
            kzg=kzg_pb2_grpc.KzgServiceStub(channels[1]),
            lzg=lzg_pb2_grpc.LzgServiceStub(channels[2]),
            logs=[(log, sink), (kzg_log, kzg_sink)],
            redis_url=redis_url,
        )
    finally:
        for channel in channels:
            await channel.close()
        await server.stop(None)
        await lzg.stop(None)
        await kzg.stop(None)


def conversation() -> list[ImportedTurn]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    return parse_locomo(data, samples=["conv-26"])[:TURNS]


def observed(turn: ImportedTurn) -> pipeline_pb2.ObservedTurn:
    message = pipeline_pb2.ObservedTurn(turn_id=turn.turn_id, beobachter=turn.beobachter, text=turn.text)
    if turn.as_of is not None:
        message.as_of.CopyFrom(to_timestamp(turn.as_of))
    return message


async def names_of(bulk: Bulk, pair: common_pb2.Pair) -> tuple[dict[int, str], dict[int, tuple[int, str]]]:
    """The pair's entity names and timeline refs (instant, precision) by id: ids differ between pairs."""
    entities = await bulk.lzg.ListEntities(lzg_pb2.ListEntitiesRequest(pair=pair))
    timelines = await bulk.lzg.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=pair))
    return (
        {e.id: e.name for e in entities.entities},
        {t.id: (t.zeitpunkt.seconds, t.praezision) for t in timelines.timelines},
    )


def portable(magnets: common_pb2.Magnets, names: tuple[dict[int, str], dict[int, tuple[int, str]]]) -> Any:
    entities, timelines = names
    return (
        [entities[i] for i in magnets.entitaet_ids],
        timelines[magnets.timeline_id] if magnets.HasField("timeline_id") else None,
    )


def analysis_of(analysis: pipeline_pb2.TurnAnalysis, names: Any) -> Any:
    plain = pipeline_pb2.TurnAnalysis()
    plain.CopyFrom(analysis)
    plain.ClearField("magnets")
    return plain.SerializeToString(deterministic=True), portable(analysis.magnets, names)


def stored_of(stored: kzg_pb2.StoreEntryResponse) -> bytes:
    plain = kzg_pb2.StoreEntryResponse()
    plain.CopyFrom(stored)
    plain.ClearField("kzg_key")
    return plain.SerializeToString(deterministic=True)


async def kzg_entries(bulk: Bulk, pair: common_pb2.Pair) -> dict[str, tuple[Any, ...]]:
    """Every KZG entry of the pair by turn id, without its key, pair and trace (remaining TTL to the minute)."""
    names = await names_of(bulk, pair)
    entries: dict[str, tuple[Any, ...]] = {}
    async for chunk in bulk.kzg.ExportPair(kzg_pb2.ExportPairRequest(pair=pair)):
        for exported in chunk.entries:
            entry = common_pb2.KzgEntry()
            entry.CopyFrom(exported.entry)
            magnets = portable(entry.magnets, names)
            ttl_minutes = round(entry.ttl_seconds / 60)
            for name in ("kzg_key", "entry_id", "pair", "magnets", "traceparent", "ttl_seconds"):
                entry.ClearField(name)
            entries[entry.turn_id] = (
                entry.SerializeToString(deterministic=True), magnets, ttl_minutes, exported.promotion_queued
            )
    return entries


async def embeddings(bulk: Bulk, pair: common_pb2.Pair, keys: Sequence[str]) -> np.ndarray:
    vectors = []
    for key in keys:
        got = await bulk.kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=pair, kzg_key=key, include_embedding=True))
        vectors.append(np.asarray(got.entry.embedding, dtype=np.float32))
    return np.stack(vectors)


async def queued_jobs(redis_url: str, pair: common_pb2.Pair) -> int:
    client = aioredis.Redis.from_url(redis_url)
    try:
        jobs = bytes_stream(await client.xrange(PROMOTION_STREAM))
    finally:
        await client.aclose()
    return sum(1 for _, fields in jobs if fields[b"user_id"] == pair.user_id.encode())


def kinds_by_turn(records: Sequence[PendingRecord]) -> dict[str, Counter[tuple[str, str]]]:
    kinds: dict[str, Counter[tuple[str, str]]] = {}
    for record in records:
        kinds.setdefault(record.turn_id, Counter())[(record.node, record.art)] += 1
    return kinds


async def test_a_batch_stores_what_turn_after_turn_stores(bulk: Bulk) -> None:
    turns = conversation()
    one_by_one = []
    for turn in turns:
        request = pipeline_pb2.ObserveTurnRequest(
            pair=ONE_BY_ONE, turn_id=turn.turn_id, beobachter=turn.beobachter, text=turn.text, profile=PROFILE
        )
        if turn.as_of is not None:
            request.as_of.CopyFrom(to_timestamp(turn.as_of))
        one_by_one.append(await bulk.pipeline.ObserveTurn(request))
    batched: list[pipeline_pb2.ObserveTurnResponse] = []
    for start in range(0, len(turns), BATCH):
        response = await bulk.pipeline.ObserveTurns(pipeline_pb2.ObserveTurnsRequest(
            pair=BATCHED, profile=PROFILE, turns=[observed(t) for t in turns[start : start + BATCH]]))  # fmt: skip
        batched += response.results
    assert len(batched) == len(one_by_one) == TURNS

    # The responses, turn by turn: analysis, store outcome, tier, reinforcement, session length.
    names_a, names_b = await names_of(bulk, ONE_BY_ONE), await names_of(bulk, BATCHED)
    for turn, a, b in zip(turns, one_by_one, batched, strict=True):
        assert analysis_of(a.analysis, names_a) == analysis_of(b.analysis, names_b), turn.turn_id
        assert stored_of(a.kzg) == stored_of(b.kzg), turn.turn_id
        assert (a.analyzed_by_service, a.session_turn_count) == (b.analyzed_by_service, b.session_turn_count)
    outcomes = Counter(r.kzg.outcome for r in batched)
    assert outcomes[kzg_pb2.STORE_OUTCOME_STORED] > 20 and sum(r.kzg.reinforced_count for r in batched) > 0
    assert sorted(names_a[0].values()) == sorted(names_b[0].values()) != []

    # The stored state: KZG entries (content, salience, haeufigkeit, tier, themes, entities by name).
    entries_a, entries_b = await kzg_entries(bulk, ONE_BY_ONE), await kzg_entries(bulk, BATCHED)
    assert entries_a == entries_b and len(entries_a) == outcomes[kzg_pb2.STORE_OUTCOME_STORED]
    keys_a = [r.kzg.kzg_key for r in one_by_one if r.kzg.kzg_key]
    keys_b = [r.kzg.kzg_key for r in batched if r.kzg.kzg_key]
    vectors_a, vectors_b = await embeddings(bulk, ONE_BY_ONE, keys_a), await embeddings(bulk, BATCHED, keys_b)
    assert np.min(np.sum(vectors_a * vectors_b, axis=1)) > 0.9999  # one model batch: the same vectors

    # The session and the promotion jobs. LoCoMo's sessions lie days apart: each opens a new session
    # (over 4 h idle in turn time, SPEC §3, §11), in a batch where a single append opens it, so the last
    # one's 14 turns (none folded) are left.
    session_a = await bulk.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=ONE_BY_ONE))
    session_b = await bulk.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=BATCHED))
    assert list(session_a.turns) == list(session_b.turns) and session_a.summary == session_b.summary == ""
    assert [t.turn_id for t in session_b.turns] == [t.turn_id for t in turns[76:]]
    assert [r.session_turn_count for r in batched[16:20]] == [17, 18, 1, 2]
    jobs = await queued_jobs(bulk.redis_url, ONE_BY_ONE)
    assert jobs == await queued_jobs(bulk.redis_url, BATCHED) > 0

    # The log records of each turn: the same kinds from the pipeline and the KZG.
    # (The reads of this test leave records under turn ids of their own.)
    turn_ids = {t.turn_id for t in turns}
    kinds_a, kinds_b = kinds_by_turn(await bulk.records(ONE_BY_ONE)), kinds_by_turn(await bulk.records(BATCHED))
    kinds_a, kinds_b = ({k: v for k, v in kinds.items() if k in turn_ids} for kinds in (kinds_a, kinds_b))
    assert set(kinds_a) == turn_ids
    # Which question a turn answers: turn after turn reads the session's last turn each time; a batch
    # reads it for its first turn only and knows the turn before each later one itself (the analyses
    # above are the same either way).
    session_reads = ("session", "db_read")
    firsts = {t.turn_id for t in turns[::BATCH]}
    assert all(kinds_a[t.turn_id].pop(session_reads) == 1 for t in turns)
    assert [kinds_b[t.turn_id].pop(session_reads, 0) for t in turns] == [int(t.turn_id in firsts) for t in turns]
    assert kinds_a == kinds_b
    assert kinds_a[turns[0].turn_id][("observe", "span_start")] == 1


async def refused(call: Any, request: Any) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
    return caught.value.details() or ""


async def nothing_written(bulk: Bulk, pair: common_pb2.Pair) -> None:
    assert await bulk.records(pair) == []  # first: the reads below leave records of their own
    session = await bulk.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=pair))
    assert list(session.turns) == [] and await kzg_entries(bulk, pair) == {}
    assert (await names_of(bulk, pair)) == ({}, {})


async def test_a_bad_turn_in_the_middle_refuses_the_batch_and_writes_nothing(bulk: Bulk) -> None:
    turns = [observed(t) for t in conversation()[:8]]
    pair = common_pb2.Pair(user_id="bulk-refused", character_id="melanie")

    blank = list(turns)
    blank[3] = pipeline_pb2.ObservedTurn(turn_id="blank", beobachter=common_pb2.BEOBACHTER_USER, text="   ")
    details = await refused(bulk.pipeline.ObserveTurns, pipeline_pb2.ObserveTurnsRequest(pair=pair, turns=blank))
    assert details.startswith("turns[3].text must not be empty")

    no_speaker = list(turns)
    no_speaker[5] = pipeline_pb2.ObservedTurn(turn_id="who", text="Hello there, Melanie!")
    details = await refused(bulk.pipeline.ObserveTurns, pipeline_pb2.ObserveTurnsRequest(pair=pair, turns=no_speaker))
    assert details.startswith("turns[5].beobachter must be")

    foreign = list(turns)
    given = pipeline_pb2.ObservedTurn(turn_id="foreign", beobachter=common_pb2.BEOBACHTER_USER, text="Anna came by.")
    given.analysis.salience.salienz = 0.8
    given.analysis.salience.dimension = "beziehungen"
    given.analysis.magnets.entitaet_ids.append(4711)  # not an entity of this pair
    foreign[6] = given
    details = await refused(bulk.pipeline.ObserveTurns, pipeline_pb2.ObserveTurnsRequest(pair=pair, turns=foreign))
    assert details.startswith("turns[6].analysis.magnets.entitaet_ids [4711] are not entities of this pair")

    control = list(turns)
    control[2] = pipeline_pb2.ObservedTurn(turn_id="ctl", beobachter=common_pb2.BEOBACHTER_USER, text="a\x00b")
    details = await refused(bulk.pipeline.ObserveTurns, pipeline_pb2.ObserveTurnsRequest(pair=pair, turns=control))
    assert details.startswith("turns[2].text")  # the request contract, before the handler

    assert await refused(bulk.pipeline.ObserveTurns, pipeline_pb2.ObserveTurnsRequest(pair=pair)) == (
        "turns must hold at least one turn"
    )
    await nothing_written(bulk, pair)


async def test_an_oversize_batch_is_refused(bulk: Bulk) -> None:
    pair = common_pb2.Pair(user_id="bulk-oversize", character_id="melanie")
    turns = [pipeline_pb2.ObservedTurn(turn_id=f"t{i}", beobachter=common_pb2.BEOBACHTER_USER, text=f"Turn {i}.")
             for i in range(BATCH_MAX_TURNS + 1)]  # fmt: skip
    details = await refused(bulk.pipeline.ObserveTurns, pipeline_pb2.ObserveTurnsRequest(pair=pair, turns=turns))
    assert details == f"turns may hold at most {BATCH_MAX_TURNS} items, got {BATCH_MAX_TURNS + 1}"
    await nothing_written(bulk, pair)
    # The largest batch is accepted.
    response = await bulk.pipeline.ObserveTurns(pipeline_pb2.ObserveTurnsRequest(pair=pair, turns=turns[:-1]))
    assert [r.session_turn_count for r in response.results][:3] == [1, 2, 3]


class FailingAnalyzer:
    """Analyses every turn alike, and fails (as an unreachable analyzer would) on the text ``FAIL``."""

    name = "test"

    async def analyze(
        self, text: str, pair: common_pb2.Pair, beobachter: common_pb2.Beobachter, as_of: datetime,
        *, question_before: str = "",
    ) -> AnalyzedTurn:
        if text == "FAIL":
            raise Unavailable("analyzer test: down")
        analysis = pipeline_pb2.TurnAnalysis(
            salience=common_pb2.SalienceResult(salienz=0.5, themen=["garden"], gedaechtnistyp="episodisch",
                                               dimension="interessen"),
            inhalt=text,
        )  # fmt: skip
        return AnalyzedTurn(analysis=analysis, herkunft=self.name)


async def test_a_failure_in_a_later_chunk_leaves_the_earlier_chunks_complete(
    peers: Peers, provider: EmbeddingProvider
) -> None:
    """Written chunk by chunk (WRITE_CHUNK): what arrived is a prefix of whole turns, as with ObserveTurn."""
    server, _, _ = await start_pipeline(peers, provider, analyzer=FailingAnalyzer())
    pair = common_pb2.Pair(user_id="bulk-partial", character_id="melanie")
    turns = [pipeline_pb2.ObservedTurn(turn_id=f"p{i}", beobachter=common_pb2.BEOBACHTER_USER,
                                       text="FAIL" if i == WRITE_CHUNK + 3 else f"In the garden, day {i}.")
             for i in range(WRITE_CHUNK + 8)]  # fmt: skip
    try:
        async with grpc.aio.insecure_channel(server.target) as channel, grpc.aio.insecure_channel(peers.kzg.target) as kzg:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await pipeline_pb2_grpc.PipelineServiceStub(channel).ObserveTurns(
                    pipeline_pb2.ObserveTurnsRequest(pair=pair, turns=turns)
                )
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            stub = kzg_pb2_grpc.KzgServiceStub(kzg)
            session = await stub.GetSession(kzg_pb2.GetSessionRequest(pair=pair))
            assert session.turns[-1].turn_id == f"p{WRITE_CHUNK - 1}" and session.summary
            entries = [e.entry.turn_id async for chunk in stub.ExportPair(kzg_pb2.ExportPairRequest(pair=pair))
                       for e in chunk.entries]  # fmt: skip
            assert sorted(entries) == sorted(f"p{i}" for i in range(WRITE_CHUNK))
    finally:
        await server.stop(None)
