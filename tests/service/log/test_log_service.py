"""The log service over real gRPC (SPEC §8, syn §10): the writer client against a real server and
PostgreSQL — outage and recovery, shutdown flush, validation, queries, retention, seed questions."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.common.v1 import common_pb2
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg_core.pipeline_log import GrpcLogSink, PipelineLog
from novaberg_core.server import RunningServer, insecure_channel
from novaberg_core.timeutil import from_timestamp, to_timestamp
from services.log.server import create_server
from tests.polling import eventually
from tests.service.log.conftest import log_config

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SPAN = "f47ac10b-58cc-4372-a567-0e02b2c3d479"


def _record(
    turn_id: str = "t",
    art: str = "eingang",
    inhalt: object = None,
    *,
    at: datetime | None = None,
    quelle: str = "System",
    node: str = "salience",
    **fields: Any,
) -> log_pb2.LogRecord:
    record = log_pb2.LogRecord(
        turn_id=turn_id, quelle=quelle, node=node, art=art, inhalt_json=json.dumps(inhalt), **fields
    )
    if at is not None:
        record.erstellt_am.CopyFrom(to_timestamp(at))
    return record


def _stream(*batches: list[log_pb2.LogRecord]) -> Iterator[log_pb2.WriteBatch]:
    return iter([log_pb2.WriteBatch(records=b) for b in batches])


async def _rows(stub: log_pb2_grpc.LogServiceStub, **filters: object) -> list[log_pb2.LogRecord]:
    response = await stub.Query(log_pb2.QueryRequest(**filters))  # type: ignore[arg-type]
    return list(response.records)


async def _wait_rows(stub: log_pb2_grpc.LogServiceStub, n: int, **filters: object) -> list[log_pb2.LogRecord]:
    return await eventually(
        lambda: _rows(stub, **filters), lambda rows: len(rows) >= n, within=10.0, every=0.05, what=f"{n} log rows"
    )


async def test_write_stream_then_a_turns_full_story_in_order(log_stub: log_pb2_grpc.LogServiceStub) -> None:
    t0 = NOW - timedelta(minutes=1)
    summary = await log_stub.Write(
        _stream(
            [
                _record("turn-a", "span_start", None, at=t0, span_id=SPAN),
                _record("turn-a", "eingang", {"text": "Anna hat Geburtstag"}, at=t0, span_id=SPAN),
            ],
            [
                _record("turn-b", "eingang", "anderer Turn", at=t0),
                _record("turn-a", "span_end", {"status": "ok"}, at=t0, span_id=SPAN),
                _record(
                    "turn-a", "ausgabe", {"text": "Glückwunsch!"}, user_id="meister", character_id="nova"
                ),
            ],
        )
    )
    assert summary.inserted == 5
    rows = await _rows(log_stub, turn_id="turn-a")
    assert [r.art for r in rows] == ["span_start", "eingang", "span_end", "ausgabe"]
    assert from_timestamp(rows[0].erstellt_am) == t0 and rows[0].span_id == SPAN
    assert json.loads(rows[1].inhalt_json) == {"text": "Anna hat Geburtstag"}
    assert rows[0].id < rows[1].id < rows[2].id < rows[3].id
    # Unset erstellt_am is stamped by the service: later than the explicit ones here.
    assert from_timestamp(rows[3].erstellt_am) > NOW and (rows[3].user_id, rows[3].character_id) == (
        "meister",
        "nova",
    )
    assert [r.art for r in await _rows(log_stub, span_id=SPAN)] == ["span_start", "eingang", "span_end"]
    pair = common_pb2.Pair(user_id="meister", character_id="nova")
    assert [r.turn_id for r in await _rows(log_stub, pair=pair)] == ["turn-a"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (_record(art="db_zugriff"), "art 'db_zugriff'"),
        (_record(user_id="meister"), "half pair"),
        (_record(character_id="nova"), "half pair"),
        (_record(span_id="salienz-lauf-1"), "span_id"),
        (
            log_pb2.LogRecord(turn_id="t", quelle="q", node="n", art="eingang", inhalt_json="{kaputt"),
            "inhalt_json",
        ),
        (_record(art="switch", inhalt={"cluster": "naehe"}), "switch"),
    ],
)
async def test_invalid_records_are_refused_naming_the_record_and_nothing_is_written(
    log_stub: log_pb2_grpc.LogServiceStub, bad: log_pb2.LogRecord, message: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await log_stub.Write(_stream([_record("ok-1")], [_record("ok-2"), _record("ok-3"), bad]))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "batch 1, records[2]" in (caught.value.details() or "")
    assert message in (caught.value.details() or "")
    assert await _rows(log_stub) == []


async def test_writer_never_blocks_while_the_log_service_is_down_and_delivers_after(pg_url: str) -> None:
    # The port stays bound (not listening: connections are refused) until the service takes it, so no
    # other process on the machine can start listening there in between.
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    plog = PipelineLog(
        GrpcLogSink(f"127.0.0.1:{port}", timeout_seconds=2.0),
        flush_seconds=0.05,
        batch_size=100,
        max_backoff_seconds=0.2,
    )
    await plog.start()
    durations = []
    for i in range(500):
        t0 = time.perf_counter()
        plog.write(turn_id=f"t{i // 50}", node="salience", art="berechnung", inhalt={"i": i})
        durations.append(time.perf_counter() - t0)
        if i % 100 == 0:
            await asyncio.sleep(0.02)  # the flusher tries meanwhile and fails: nobody listens
    plog.turn_roh(turn_id="t0", node="pipeline", inhalt={"user_prompt": "Hallo", "response": "Hi"})
    await asyncio.sleep(0.3)

    async def counts() -> tuple[int, int, int]:
        return plog.buffered, plog.sent, plog.dropped

    # A failing send holds its records until it fails (``buffered`` does not count a send in flight);
    # between attempts every record is back in the buffer, none sent, none dropped.
    await eventually(counts, lambda c: c[0] == 501, within=10.0, what="all 501 records buffered")
    assert plog.sent == 0 and plog.dropped == 0
    durations.sort()
    assert durations[int(len(durations) * 0.99)] < 200e-6

    holder.close()
    running = await create_server(log_config(pg_url, port=port))
    try:
        async with insecure_channel(running.target) as channel:
            stub = log_pb2_grpc.LogServiceStub(channel)
            rows = await _wait_rows(stub, 501)
            assert len(rows) == 501
            assert [json.loads(r.inhalt_json)["i"] for r in rows if r.art == "berechnung"] == list(range(500))
            assert [r.art for r in await _rows(stub, art="turn_roh")] == ["turn_roh"]
        await plog.close()
        assert plog.sent == 501 and plog.dropped == 0 and plog.lost == 0
    finally:
        await running.stop(1.0)


async def test_graceful_close_flushes_every_buffered_record(
    log_server: RunningServer, log_stub: log_pb2_grpc.LogServiceStub
) -> None:
    plog = PipelineLog(GrpcLogSink(log_server.target, batch_size=500), flush_seconds=60.0, batch_size=500)
    await plog.start()
    for i in range(3000):
        plog.write(
            turn_id=f"turn-{i % 10}", node="kzg", art="db_read", inhalt={"tabelle": "kzg", "treffer": i}
        )
        if i % 1000 == 0:
            await asyncio.sleep(0)
    plog.turn_roh(turn_id="turn-0", node="pipeline", inhalt={"user_prompt": "a", "response": "b"})
    await plog.close()
    rows = await _rows(log_stub, limit=5000)
    assert len(rows) == 3001
    assert sorted(json.loads(r.inhalt_json).get("treffer", -1) for r in rows) == [-1, *range(3000)]


async def test_purge_keeps_turn_roh_and_young_rows(log_stub: log_pb2_grpc.LogServiceStub) -> None:
    await log_stub.Write(
        _stream(
            [
                _record("alt", "eingang", "x", at=NOW - timedelta(days=400)),
                _record("alt", "berechnung", {"score": 1}, at=NOW - timedelta(days=366)),
                _record(
                    "alt", "turn_roh", {"user_prompt": "a", "response": "b"}, at=NOW - timedelta(days=400)
                ),
                _record("jung", "eingang", "y", at=NOW - timedelta(days=364)),
            ]
        )
    )
    purged = await log_stub.Purge(log_pb2.PurgeRequest(as_of=to_timestamp(NOW)))
    assert (purged.deleted, purged.kept_turn_roh) == (2, 1)
    assert [(r.turn_id, r.art) for r in await _rows(log_stub)] == [("alt", "turn_roh"), ("jung", "eingang")]
    shorter = await log_stub.Purge(log_pb2.PurgeRequest(as_of=to_timestamp(NOW), retention_days=30))
    assert (shorter.deleted, shorter.kept_turn_roh) == (1, 1)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await log_stub.Purge(log_pb2.PurgeRequest(retention_days=-1))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_seed_questions_answered_by_rpcs(log_stub: log_pb2_grpc.LogServiceStub) -> None:
    now = datetime.now(UTC)
    answers = [
        _record(
            f"t{i}",
            "ausgabe",
            {"text": f"Antwort {i}"},
            at=now - timedelta(minutes=10 - i),
            quelle="nova",
            node="responder",
        )
        for i in range(6)
    ]
    choice: dict[str, Any] = {
        "entscheidung": "pipeline.cluster",
        "ausgang": "naehe",
        "eingang": {},
        "massstab": None,
    }
    clusters = [
        _record(
            "t1",
            "switch",
            choice,
            at=now - timedelta(days=d),
            node="pipeline",
            user_id="meister",
            character_id="nova",
        )
        for d in (1, 2, 9)
    ]
    tokens = [
        _record(
            "hintergrund",
            "token",
            {"modell": "m", "input_tokens": 1689, "output_tokens": 185, "kosten_usd": 0.00010291},
            at=now - timedelta(hours=h),
        )
        for h in (1, 30)
    ]
    await log_stub.Write(_stream(answers, clusters, tokens))

    last = await log_stub.LastAnswers(log_pb2.LastAnswersRequest(quelle="nova", node="responder"))
    assert [a.text for a in last.answers] == ["Antwort 5", "Antwort 4", "Antwort 3", "Antwort 2", "Antwort 1"]
    assert last.answers[0].turn_id == "t5"

    counts = await log_stub.ClusterCounts(
        log_pb2.ClusterCountsRequest(pair=common_pb2.Pair(user_id="meister", character_id="nova"))
    )
    assert [(c.cluster, c.count) for c in counts.counts] == [("naehe", 2)]

    usage = await log_stub.TokenUsage(log_pb2.TokenUsageRequest())
    assert (usage.input_tokens, usage.output_tokens, usage.calls) == (1689, 185, 1)
    assert usage.kosten_usd == pytest.approx(0.00010291)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.Query(log_pb2.QueryRequest(pair=common_pb2.Pair(user_id="meister"))),
        lambda s: s.Query(log_pb2.QueryRequest(art="db_zugriff")),
        lambda s: s.Query(log_pb2.QueryRequest(limit=-5)),
        lambda s: s.ClusterCounts(log_pb2.ClusterCountsRequest(pair=common_pb2.Pair(character_id="nova"))),
        lambda s: s.LastAnswers(log_pb2.LastAnswersRequest()),
        lambda s: s.TokenUsage(
            log_pb2.TokenUsageRequest(
                since=Timestamp(seconds=2_000_000_000), until=Timestamp(seconds=1_000_000_000)
            )
        ),
    ],
)
async def test_bad_query_requests_are_invalid_argument(
    log_stub: log_pb2_grpc.LogServiceStub, call: object
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(log_stub)  # type: ignore[operator]
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
