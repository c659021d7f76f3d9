"""The pipeline-log writer client (SPEC §8, syn §10.3) against in-memory sinks: never blocks, bounded,
never drops turn_roh, flushes on time/batch/close, keeps order, drops only invalid records."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from opentelemetry import trace

from novaberg_core.pipeline_log import (
    GrpcLogSink,
    InMemorySink,
    NullSink,
    PendingRecord,
    PipelineLog,
    RejectedRecords,
    encode_inhalt,
)
from novaberg_core.telemetry import install_in_memory_exporter, tracer
from tests.polling import eventually


def _arts(records: Sequence[PendingRecord]) -> list[str]:
    return [r.art for r in records]


async def test_write_returns_in_microseconds_while_sink_is_down_and_records_arrive_after() -> None:
    sink = InMemorySink(down=True)
    plog = PipelineLog(sink, flush_seconds=0.02, batch_size=50, max_backoff_seconds=0.05)
    await plog.start()
    durations = []
    for i in range(2000):
        t0 = time.perf_counter()
        plog.write(turn_id="t-down", node="salience", art="berechnung", inhalt={"i": i})
        durations.append(time.perf_counter() - t0)
        if i % 200 == 0:
            await asyncio.sleep(0)  # let the flusher try (and fail) meanwhile
    await eventually(lambda: sink.failed_sends, lambda failed: failed >= 3, within=3.0, every=0.005)
    durations.sort()
    assert durations[int(len(durations) * 0.99)] < 200e-6  # p99 well under a millisecond, even down
    assert sink.records == [] and plog.buffered == 2000 and plog.dropped == 0

    sink.down = False
    await eventually(lambda: len(sink.records), lambda n: n == 2000, within=3.0, every=0.005)
    assert [r.inhalt["i"] for r in sink.records] == list(range(2000))
    assert plog.buffered == 0
    await plog.close()
    assert plog.sent == 2000 and plog.lost == 0


async def test_full_buffer_drops_oldest_forensic_records_but_never_turn_roh() -> None:
    sink = InMemorySink(down=True)
    plog = PipelineLog(sink, max_buffer=5)
    plog.turn_roh(turn_id="t0", node="pipeline", inhalt={"user_prompt": "a", "response": "b"})
    for i in range(6):
        plog.write(turn_id="t1", node="n", art="eingang", inhalt=i)
    plog.turn_roh(turn_id="t1", node="pipeline", inhalt={"user_prompt": "c", "response": "d"})
    # Bound 5: the oldest forensic rows gave way, both turn_roh stayed.
    assert plog.dropped == 3
    assert plog.buffered == 5
    sink.down = False
    await plog.flush()
    assert [(r.art, r.inhalt) for r in sink.records] == [
        ("turn_roh", {"user_prompt": "a", "response": "b"}),
        ("eingang", 3),
        ("eingang", 4),
        ("eingang", 5),
        ("turn_roh", {"user_prompt": "c", "response": "d"}),
    ]


async def test_buffer_of_only_turn_roh_grows_for_turn_roh_and_refuses_forensic() -> None:
    plog = PipelineLog(InMemorySink(down=True), max_buffer=3)
    for i in range(5):
        plog.turn_roh(turn_id=f"t{i}", node="pipeline", inhalt={"n": i})
    assert plog.buffered == 5 and plog.dropped == 0
    plog.write(turn_id="t9", node="n", art="bemerkung", inhalt="x")
    assert plog.buffered == 5 and plog.dropped == 1
    assert all(r.art == "turn_roh" for r in plog._roh) and not plog._forensic


async def test_failed_flush_requeues_in_order_and_restores_the_bound() -> None:
    sink = InMemorySink(down=True)
    plog = PipelineLog(sink, max_buffer=4, batch_size=2)
    for i in range(4):
        plog.write(turn_id="t", node="n", art="eingang", inhalt=i)
    flushing = asyncio.create_task(plog.flush())
    await asyncio.sleep(0)  # the flush has taken the records out of the buffer ...
    plog.write(turn_id="t", node="n", art="eingang", inhalt=4)  # ... while a new one arrives
    plog.write(turn_id="t", node="n", art="eingang", inhalt=5)
    with pytest.raises(Exception, match="down"):
        await flushing
    assert plog.buffered == 4 and plog.dropped == 2  # the two oldest gave way after the requeue
    sink.down = False
    await plog.flush()
    assert [r.inhalt for r in sink.records] == [2, 3, 4, 5]


async def test_background_flush_runs_on_the_timer_and_early_when_a_batch_fills() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink, flush_seconds=0.05, batch_size=10_000)
    await plog.start()
    plog.write(turn_id="t", node="n", art="eingang", inhalt="a")
    await eventually(lambda: len(sink.records), lambda n: n == 1, within=1.0, every=0.005)
    await plog.close()

    sink = InMemorySink()
    plog = PipelineLog(sink, flush_seconds=60.0, batch_size=100)
    await plog.start()
    for i in range(100):
        plog.write(turn_id="t", node="n", art="eingang", inhalt=i)
    await eventually(lambda: len(sink.records), lambda n: n == 100, within=1.0, every=0.005)  # long before the 60 s timer
    await plog.close()


async def test_close_flushes_everything_written() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink, flush_seconds=60.0, batch_size=64)
    await plog.start()
    for i in range(5000):
        plog.write(turn_id=f"t{i % 7}", node="n", art="db_read", inhalt={"i": i})
        if i % 500 == 0:
            await asyncio.sleep(0)
    await plog.close()
    assert sorted(r.inhalt["i"] for r in sink.records) == list(range(5000))
    assert plog.sent == 5000 and plog.buffered == 0 and plog.lost == 0


async def test_close_right_after_a_full_batch_returns_promptly() -> None:
    """Regression: a wake-up racing with the stop must not leave close() waiting on the flusher."""
    for _ in range(20):
        sink = InMemorySink()
        plog = PipelineLog(sink, flush_seconds=60.0, batch_size=100)
        await plog.start()
        for i in range(250):
            plog.write(turn_id="t", node="n", art="eingang", inhalt=i)
        await asyncio.wait_for(plog.close(), timeout=2.0)
        assert len(sink.records) == 250


async def test_close_is_cancellable_while_waiting_for_the_sink() -> None:
    gate = asyncio.Event()

    class StuckSink(InMemorySink):
        async def send(self, records: Sequence[PendingRecord]) -> None:
            await gate.wait()

    plog = PipelineLog(StuckSink(), flush_seconds=0.01, close_timeout_seconds=30.0)
    await plog.start()
    plog.write(turn_id="t", node="n", art="eingang", inhalt=1)
    await asyncio.sleep(0.05)  # the flusher is inside send now
    closing = asyncio.create_task(plog.close())
    await asyncio.sleep(0.05)
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    gate.set()


async def test_close_gives_up_after_its_timeout_and_counts_the_lost_records() -> None:
    plog = PipelineLog(InMemorySink(down=True), flush_seconds=60.0, close_timeout_seconds=0.2)
    await plog.start()
    plog.write(turn_id="t", node="n", art="eingang", inhalt=1)
    plog.turn_roh(turn_id="t", node="n", inhalt={"x": 1})
    started = time.monotonic()
    await plog.close()
    assert time.monotonic() - started < 1.0
    assert plog.lost == 2


async def test_records_keep_write_order_across_turn_roh_and_forensic() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink)
    plog.write(turn_id="t", node="a", art="eingang", inhalt=1)
    plog.turn_roh(turn_id="t", node="b", inhalt={"n": 2})
    plog.write(turn_id="t", node="c", art="ausgabe", inhalt=3)
    plog.turn_roh(turn_id="t", node="d", inhalt={"n": 4})
    await plog.flush()
    assert [r.node for r in sink.records] == ["a", "b", "c", "d"]


async def test_invalid_records_are_dropped_and_counted_the_rest_is_sent() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink)
    plog.write(turn_id="t", node="n", art="eingang", inhalt="ok-1")
    plog.write(turn_id="t", node="n", art="unbekannt", inhalt="bad art")
    plog.write(turn_id="t", node="n", art="eingang", inhalt="half pair", user_id="u")
    plog.write(turn_id="t", node="n", art="switch", inhalt={"cluster": "x"})  # not the decision shape
    plog.write(turn_id="t", node="n", art="token", inhalt={"input_tokens": "10"})
    plog.write(turn_id="t", node="n", art="eingang", inhalt="naive", erstellt_am=datetime(2026, 1, 1))
    plog.write(turn_id="t", node="n", art="eingang", inhalt="ok-2", user_id="u", character_id="c")
    await plog.flush()
    assert [r.inhalt for r in sink.records] == ["ok-1", "ok-2"]
    assert plog.rejected == 5


class _PickySink:
    """Refuses any send that holds a record whose inhalt is "poison" (like a strict log service)."""

    def __init__(self) -> None:
        self.records: list[PendingRecord] = []
        self.calls = 0

    async def send(self, records: Sequence[PendingRecord]) -> None:
        self.calls += 1
        if any(r.inhalt == "poison" for r in records):
            raise RejectedRecords("records[0]: poison")
        self.records.extend(records)

    async def close(self) -> None:
        return None


async def test_a_refused_send_is_bisected_so_only_the_refused_record_is_lost() -> None:
    sink = _PickySink()
    plog = PipelineLog(sink, batch_size=1000)
    for i in range(64):
        plog.write(turn_id="t", node="n", art="eingang", inhalt="poison" if i == 37 else i)
    await plog.flush()
    assert [r.inhalt for r in sink.records] == [i for i in range(64) if i != 37]
    assert plog.rejected == 1
    assert sink.calls <= 2 * 7 + 1  # log2(64) levels, two halves each


async def test_decision_helper_writes_the_spec_shape_and_prefixes_the_node() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink)
    plog.decision(
        turn_id="t",
        node="thinker",
        entscheidung="schnellcheck",
        ausgang="reasoning",
        eingang={"treffer_antwort": ["km"], "needs_web": False},
        massstab={"indikatoren": 35},
        user_id="u",
        character_id="c",
    )
    plog.decision(turn_id="t", node="pipeline", entscheidung="pipeline.cluster", ausgang="naehe")
    await plog.flush()
    first, second = sink.records
    assert first.art == "switch" and (first.user_id, first.character_id) == ("u", "c")
    assert first.inhalt == {
        "entscheidung": "thinker.schnellcheck",
        "ausgang": "reasoning",
        "eingang": {"treffer_antwort": ["km"], "needs_web": False},
        "massstab": {"indikatoren": 35},
    }
    assert second.inhalt["entscheidung"] == "pipeline.cluster"
    assert plog.rejected == 0


async def test_span_helper_brackets_a_run_with_one_span_id_and_records_failure() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink)
    async with plog.span(turn_id="t", node="salience") as span_id:
        plog.write(turn_id="t", node="salience", art="berechnung", inhalt={"score": 0.73}, span_id=span_id)
    with pytest.raises(RuntimeError):
        async with plog.span(turn_id="t", node="enricher") as failed_span:
            raise RuntimeError("boom")
    await plog.flush()
    assert _arts(sink.records) == ["span_start", "berechnung", "span_end", "span_start", "span_end"]
    assert {r.span_id for r in sink.records[:3]} == {span_id}
    assert uuid.UUID(span_id).version == 4 and failed_span != span_id
    assert sink.records[2].inhalt == {"status": "ok"}
    assert sink.records[4].inhalt == {"status": "error: RuntimeError"}


async def test_helpers_put_record_fields_on_the_record_and_details_into_inhalt() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink, quelle="Pixie")
    plog.db_write(
        turn_id="t",
        node="promotion",
        tabelle="lzg_knoten",
        operation="insert",
        id=247,
        user_id="u",
        character_id="c",
    )
    plog.db_read(turn_id="t", node="kzg", tabelle="kzg", treffer=3, quelle="nova")
    plog.error(turn_id="t", node="salience", typ="JSONParseError", message="kaputt")
    plog.token(
        turn_id="hintergrund",
        node="llm",
        modell="deepseek",
        input_tokens=1689,
        output_tokens=185,
        kosten_usd=0.00010291,
    )
    await plog.flush()
    w, r, e, t = sink.records
    assert (w.art, w.inhalt, w.user_id, w.quelle) == (
        "db_write",
        {"tabelle": "lzg_knoten", "operation": "insert", "id": 247},
        "u",
        "Pixie",
    )
    assert (r.art, r.inhalt, r.quelle) == ("db_read", {"tabelle": "kzg", "treffer": 3}, "nova")
    assert (e.art, e.inhalt) == ("fehler", {"typ": "JSONParseError", "message": "kaputt"})
    assert (t.art, t.inhalt["input_tokens"], t.inhalt["kosten_usd"]) == ("token", 1689, 0.00010291)


async def test_write_captures_the_current_trace_id() -> None:
    install_in_memory_exporter()
    sink = InMemorySink()
    plog = PipelineLog(sink)
    plog.write(turn_id="t", node="n", art="eingang", inhalt=None)
    with tracer(__name__).start_as_current_span("turn") as span:
        plog.write(turn_id="t", node="n", art="eingang", inhalt=None)
        expected = trace.format_trace_id(span.get_span_context().trace_id)
    await plog.flush()
    assert sink.records[0].trace_id is None
    assert sink.records[1].trace_id == expected


async def test_write_from_another_thread_wakes_the_flusher() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink, flush_seconds=60.0, batch_size=100)
    await plog.start()

    def worker() -> None:
        for i in range(100):
            plog.write(turn_id="t", node="n", art="eingang", inhalt=i)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    await eventually(lambda: len(sink.records), lambda n: n == 100, within=1.0, every=0.005)
    await plog.close()


def test_encode_inhalt_keeps_forensic_content_that_json_or_jsonb_cannot_hold() -> None:
    assert json.loads(encode_inhalt({"a": float("nan"), 1: "x"})) == {"a": "nan", "1": "x"}
    assert json.loads(encode_inhalt({"t": "a\x00b"})) == {"t": "a\ufffdb"}
    assert json.loads(encode_inhalt({"at": datetime(2026, 5, 14, tzinfo=UTC)})) == {
        "at": "2026-05-14 00:00:00+00:00"
    }
    assert encode_inhalt("Glückwunsch") == '"Glückwunsch"'
    assert encode_inhalt(None) == "null"


def test_from_env_picks_the_sink_and_reads_the_flush_interval() -> None:
    plain = PipelineLog.from_env("nova", env={})
    assert isinstance(plain.sink, NullSink) and plain.flush_seconds == 10.0 and plain.quelle == "nova"
    seeded = PipelineLog.from_env(env={"LZG_PIPELINE_LOG_FLUSH_SEKUNDEN": "3"})
    assert seeded.flush_seconds == 3.0
    configured = PipelineLog.from_env(
        env={
            "NOVABERG_LOG_ADDR": "localhost:5",
            "NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN": "2.5",
            "NOVABERG_PIPELINE_LOG_BATCH": "500",
            "NOVABERG_PIPELINE_LOG_MAX_BUFFER": "7",
            "NOVABERG_TLS_MODE": "plaintext",
        }
    )
    assert isinstance(configured.sink, GrpcLogSink) and configured.sink.target == "localhost:5"
    assert (configured.flush_seconds, configured.batch_size, configured.max_buffer) == (2.5, 500, 7)


def test_grpc_sink_splits_messages_by_count_and_size_and_keeps_microseconds() -> None:
    at = datetime(2026, 5, 14, 18, 32, 0, 123_456, tzinfo=UTC)
    records = [
        PendingRecord(at, f"t{i}", "n", "eingang", {"text": "x" * (600 if i >= 5 else 1)}, "System", seq=i)
        for i in range(8)
    ]
    sink = GrpcLogSink("localhost:1", batch_size=3, max_message_bytes=1000)
    batches = list(sink._batches(records))
    assert [[r.turn_id for r in b.records] for b in batches] == [
        ["t0", "t1", "t2"],
        ["t3", "t4"],
        ["t5"],
        ["t6"],
        ["t7"],
    ]
    first = batches[0].records[0]
    assert (first.erstellt_am.seconds, first.erstellt_am.nanos) == (1_778_783_520, 123_456_000)
    assert json.loads(first.inhalt_json) == {"text": "x"} and first.span_id == "" and first.user_id == ""
