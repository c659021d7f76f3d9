"""The pipeline's own records (services/pipeline/records.py): one step's records all carry its turn, span,
pair and time, in the shapes SPEC §8 gives them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from services.pipeline.records import step_records

PAIR = common_pb2.Pair(user_id="anna@example.org", character_id="nova")
AS_OF = datetime(2026, 5, 4, 18, 30, tzinfo=UTC)


async def test_a_steps_records_carry_its_turn_span_pair_and_time_between_its_span_records() -> None:
    sink = InMemorySink()
    log = PipelineLog(sink)
    async with step_records(log, "dispatcher", "turn-1", PAIR, AS_OF) as records:
        assert records.turn == common_pb2.TurnContext(turn_id="turn-1", span_id=records.where.span_id)
        records.received({"cluster": "glut"})
        records.decided("cluster", "glut", {"vorher": None}, {"tabelle": ["glut"]})
        records.wrote("pipeline:cluster", "set", cluster="glut")
        records.failed("Unavailable", "own KZG entry: down")
        records.answered({"text": "Gern."}, quelle="nova")
        records.usage_without_lzg(lzg_pb2.VerwendungsProtokoll(ausgang=lzg_pb2.VERWENDUNG_AUSGANG_DB_FEHLER))
        records.turn_roh({"user_prompt": "Und?", "response": "Gern."})
    await log.flush()

    written = sink.records
    assert [(r.node, r.art) for r in written] == [
        ("dispatcher", "span_start"), ("dispatcher", "eingang"), ("dispatcher", "switch"),
        ("dispatcher", "db_write"), ("dispatcher", "fehler"), ("dispatcher", "ausgabe"),
        ("verwendung", "berechnung"), ("dispatcher", "turn_roh"), ("dispatcher", "span_end"),
    ]  # fmt: skip
    span_id = written[0].span_id
    assert span_id and all(
        (r.turn_id, r.span_id, r.user_id, r.character_id, r.erstellt_am)
        == ("turn-1", span_id, PAIR.user_id, PAIR.character_id, AS_OF)
        for r in written
    )
    by_art = {r.art: r for r in written}
    assert by_art["switch"].inhalt == {
        "entscheidung": "dispatcher.cluster", "ausgang": "glut", "eingang": {"vorher": None},
        "massstab": {"tabelle": ["glut"]},
    }  # fmt: skip
    assert by_art["db_write"].inhalt == {"tabelle": "pipeline:cluster", "operation": "set", "cluster": "glut"}
    assert by_art["fehler"].inhalt == {"typ": "Unavailable", "message": "own KZG entry: down"}
    assert by_art["ausgabe"].quelle == "nova" and by_art["eingang"].quelle == log.quelle
    assert by_art["berechnung"].inhalt["ausgang"] == "VERWENDUNG_AUSGANG_DB_FEHLER"


async def test_a_step_that_fails_ends_its_span_with_the_error() -> None:
    sink = InMemorySink()
    log = PipelineLog(sink)
    with pytest.raises(RuntimeError):
        async with step_records(log, "enricher", "turn-2", PAIR, AS_OF) as records:
            records.received({"query_text": "Wer?"}, quelle=PAIR.user_id)
            raise RuntimeError("boom")
    await log.flush()
    end = sink.records[-1]
    assert (end.art, end.span_id) == ("span_end", sink.records[0].span_id)
    assert sink.records[1].quelle == PAIR.user_id
    assert "RuntimeError" in str(end.inhalt)
