"""log.pipeline_log on real PostgreSQL (SPEC §8, syn §10): schema as the seed, COPY ingest,
a turn's story in order, retention, and the seed's example questions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from novaberg_core.errors import InvalidArgument
from novaberg_core.migrations import apply_migrations
from services.log.domain import LogQuery, NewRow
from services.log.store import SCHEMA, SQL_DIR, LogStore
from tests.integration.log.conftest import batches, row

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SPAN = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


async def _columns(url: str) -> list[tuple[str, str, str, int | None]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT column_name, data_type, is_nullable, character_maximum_length FROM information_schema.columns"
            " WHERE table_schema = 'log' AND table_name = 'pipeline_log' ORDER BY ordinal_position"
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]
    finally:
        await conn.close()


async def test_table_and_indexes_are_the_seeds_plus_trace_id(pg_url: str, log_store: LogStore) -> None:
    assert await _columns(pg_url) == [
        ("id", "bigint", "NO", None),
        ("erstellt_am", "timestamp with time zone", "NO", None),
        ("turn_id", "character varying", "NO", 100),
        ("span_id", "uuid", "YES", None),
        ("quelle", "character varying", "NO", 50),
        ("node", "character varying", "NO", 50),
        ("art", "character varying", "NO", 30),
        ("inhalt", "jsonb", "NO", None),
        ("user_id", "character varying", "YES", 50),
        ("character_id", "character varying", "YES", 50),
        ("trace_id", "character varying", "YES", 32),
    ]
    conn = await asyncpg.connect(pg_url)
    try:
        indexes = {
            r["indexname"]: r["indexdef"]
            for r in await conn.fetch(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'log'"
                " AND tablename = 'pipeline_log'"
            )
        }
        # Applying again changes nothing (idempotent, recorded versions).
        assert await apply_migrations(conn, SCHEMA, SQL_DIR / "migrations") == []
    finally:
        await conn.close()
    assert set(indexes) == {
        "pipeline_log_pkey",
        "idx_pipeline_log_turn",
        "idx_pipeline_log_span",
        "idx_pipeline_log_node_art",
        "idx_pipeline_log_erstellt",
        "idx_pipeline_log_paar",
        "idx_pipeline_log_trace",
    }
    assert "(node, art)" in indexes["idx_pipeline_log_node_art"]
    assert "(erstellt_am DESC)" in indexes["idx_pipeline_log_erstellt"]
    assert "(user_id, character_id)" in indexes["idx_pipeline_log_paar"]


@pytest.mark.parametrize(
    ("art", "user_id", "character_id", "constraint"),
    [
        ("db_zugriff", None, None, "pipeline_log_art_check"),
        ("eingang", "meister", None, "pipeline_log_paar_check"),
        ("eingang", None, "nova", "pipeline_log_paar_check"),
    ],
)
async def test_the_database_itself_refuses_unknown_art_and_half_pairs(
    pg_url: str, log_store: LogStore, art: str, user_id: str | None, character_id: str | None, constraint: str
) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        with pytest.raises(asyncpg.CheckViolationError) as caught:
            await conn.execute(
                "INSERT INTO log.pipeline_log (turn_id, quelle, node, art, inhalt, user_id, character_id)"
                " VALUES ('t', 'System', 'n', $1, 'null', $2, $3)",
                art,
                user_id,
                character_id,
            )
        assert caught.value.constraint_name == constraint
    finally:
        await conn.close()


async def test_a_turns_rows_come_back_in_order_even_with_equal_timestamps(log_store: LogStore) -> None:
    t0 = NOW - timedelta(minutes=5)
    story = [
        row(t0, "turn-a", "span_start", "null", node="salience", span_id=SPAN),
        row(t0, "turn-a", "eingang", '{"text": "Anna hat Geburtstag"}', node="salience", span_id=SPAN),
        row(t0, "turn-a", "berechnung", '{"score": 0.73}', node="salience", span_id=SPAN),
        row(
            t0 + timedelta(microseconds=1),
            "turn-a",
            "span_end",
            '{"status": "ok"}',
            node="salience",
            span_id=SPAN,
        ),
        row(t0 + timedelta(seconds=2), "turn-a", "ausgabe", '{"text": "Glückwunsch!"}', quelle="nova"),
        row(t0 + timedelta(seconds=3), "turn-a", "turn_roh", '{"user_prompt": "…", "response": "…"}'),
    ]
    other = [row(t0 + timedelta(seconds=1), "turn-b", "eingang")]
    # The turn's later rows arrive first (another writer flushed earlier): time orders, then id.
    assert await log_store.write(batches(story[4:], other, story[:4])) == 7

    rows = await log_store.query(LogQuery.build(turn_id="turn-a"))
    assert [r.art for r in rows] == ["span_start", "eingang", "berechnung", "span_end", "ausgabe", "turn_roh"]
    assert json.loads(rows[1].inhalt_json) == {"text": "Anna hat Geburtstag"}

    by_span = await log_store.query(LogQuery.build(span_id=SPAN))
    assert [r.art for r in by_span] == ["span_start", "eingang", "berechnung", "span_end"]
    newest = await log_store.query(LogQuery.build(turn_id="turn-a", descending=True, limit=2))
    assert [r.art for r in newest] == ["turn_roh", "ausgabe"]


async def test_filters_by_node_art_pair_time_quelle_and_trace(log_store: LogStore) -> None:
    pair = ("meister", "nova")
    rows = [
        row(
            NOW - timedelta(hours=3),
            "t1",
            "switch",
            '{"cluster": "naehe"}',
            node="gv",
            pair=pair,
            trace_id=TRACE,
        ),
        row(
            NOW - timedelta(hours=2),
            "t2",
            "switch",
            '{"cluster": "distanz"}',
            node="gv",
            pair=("meister", "luna"),
        ),
        row(
            NOW - timedelta(hours=1),
            "t3",
            "eingang",
            '{"text": "hi"}',
            node="gv",
            pair=pair,
            quelle="meister",
        ),
        row(NOW, "t4", "switch", '{"cluster": "naehe"}', node="gv", pair=pair),
    ]
    await log_store.write(batches(rows))

    async def turns(**filters: object) -> list[str]:
        return [r.turn_id for r in await log_store.query(LogQuery.build(**filters))]  # type: ignore[arg-type]

    assert await turns(node="gv", art="switch") == ["t1", "t2", "t4"]
    assert await turns(user_id="meister", character_id="nova") == ["t1", "t3", "t4"]
    assert await turns(art="switch", since=NOW - timedelta(hours=2), until=NOW) == ["t2"]
    assert await turns(quelle="meister") == ["t3"]
    assert await turns(trace_id=TRACE) == ["t1"]
    assert await turns(limit=2) == ["t1", "t2"]


async def test_a_stream_is_all_or_nothing(log_store: LogStore) -> None:
    async def failing_stream() -> AsyncIterator[list[NewRow]]:
        yield [row(NOW, "t-ok", "eingang")]
        raise InvalidArgument("batch 1, records[0]: art 'x' is not one of …")

    with pytest.raises(InvalidArgument):
        await log_store.write(failing_stream())
    # A row the database refuses (a half pair slipped past the service) fails the stream too.
    with pytest.raises(InvalidArgument, match="refused"):
        await log_store.write(
            batches([row(NOW, "t-ok2")], [(NOW, "t", None, "q", "n", "eingang", "1", "u", None, None)])
        )
    assert await log_store.query(LogQuery.build()) == []


async def test_purge_deletes_old_forensic_rows_and_keeps_turn_roh_and_young_rows(log_store: LogStore) -> None:
    horizon = NOW - timedelta(days=365)
    await log_store.write(
        batches(
            [
                row(horizon - timedelta(days=30), "alt", "eingang"),
                row(horizon - timedelta(seconds=1), "alt", "switch", '{"cluster": "naehe"}'),
                row(horizon - timedelta(days=30), "alt", "turn_roh", '{"user_prompt": "a", "response": "b"}'),
                row(horizon, "grenze", "eingang"),
                row(NOW - timedelta(days=1), "jung", "eingang"),
                row(NOW - timedelta(days=1), "jung", "turn_roh", '{"user_prompt": "c", "response": "d"}'),
            ]
        )
    )
    result = await log_store.purge(horizon)
    assert (result.deleted, result.kept_turn_roh) == (2, 1)
    left = await log_store.query(LogQuery.build())
    assert [(r.turn_id, r.art) for r in left] == [
        ("alt", "turn_roh"),
        ("grenze", "eingang"),
        ("jung", "eingang"),
        ("jung", "turn_roh"),
    ]
    again = await log_store.purge(horizon)
    assert (again.deleted, again.kept_turn_roh) == (0, 1)


async def test_last_answers_of_a_character_newest_first(log_store: LogStore) -> None:
    rows = [
        row(
            NOW - timedelta(minutes=10 - i),
            f"t{i}",
            "ausgabe",
            json.dumps({"text": f"Antwort {i}"}),
            quelle="nova",
            node="responder",
        )
        for i in range(7)
    ]
    rows += [
        row(NOW, "t-plain", "ausgabe", json.dumps("Nur ein Text"), quelle="nova", node="responder"),
        row(NOW, "t-luna", "ausgabe", json.dumps({"text": "Luna"}), quelle="luna", node="responder"),
        row(NOW, "t-in", "eingang", json.dumps({"text": "Meister"}), quelle="nova", node="responder"),
        row(NOW, "t-other-node", "ausgabe", json.dumps({"text": "Salienz"}), quelle="nova", node="salience"),
        # A resent Dispatch's answer: the first sending's again (t6), left out.
        row(NOW, "t6", "ausgabe", json.dumps({"text": "Antwort 6", "wiederholt": True}), quelle="nova", node="responder"),
    ]
    await log_store.write(batches(rows))
    answers = await log_store.last_answers("nova", "responder", 5)
    assert [a.text for a in answers] == ["Nur ein Text", "Antwort 6", "Antwort 5", "Antwort 4", "Antwort 3"]
    assert answers[1].turn_id == "t6" and answers[1].erstellt_am == NOW - timedelta(minutes=4)
    any_node = await log_store.last_answers("nova", None, 10)
    assert {"Salienz", "Nur ein Text"} <= {a.text for a in any_node} and len(any_node) == 9


async def test_cluster_counts_per_week_from_decision_rows_and_gv_rows(log_store: LogStore) -> None:
    pair = ("meister", "nova")

    def choice(at: datetime, cluster: str, who: tuple[str, str] = pair) -> NewRow:
        decision: dict[str, Any] = {
            "entscheidung": "pipeline.cluster",
            "ausgang": cluster,
            "eingang": {},
            "massstab": None,
        }
        return row(at, "t", "switch", json.dumps(decision), node="pipeline", pair=who)

    await log_store.write(
        batches(
            [
                choice(NOW - timedelta(days=1), "naehe"),
                choice(NOW - timedelta(days=2), "naehe"),
                choice(NOW - timedelta(days=3), "spiel"),
                choice(NOW - timedelta(days=8), "spiel"),  # outside the week
                choice(NOW - timedelta(days=1), "distanz", ("meister", "luna")),
                row(NOW - timedelta(days=1), "t", "switch", '{"cluster": "naehe"}', node="gv", pair=pair),
                row(
                    NOW - timedelta(days=1),
                    "t",
                    "switch",
                    json.dumps(
                        {
                            "entscheidung": "thinker.schnellcheck",
                            "ausgang": "reasoning",
                            "eingang": {},
                            "massstab": {},
                        }
                    ),
                    node="thinker",
                    pair=pair,
                ),
            ]
        )
    )
    week = (NOW - timedelta(days=7), NOW)
    assert await log_store.cluster_counts(*week, "meister", "nova") == [("naehe", 3), ("spiel", 1)]
    assert await log_store.cluster_counts(*week, None, None) == [("naehe", 3), ("distanz", 1), ("spiel", 1)]


async def test_token_usage_over_24_hours(log_store: LogStore) -> None:
    def token(at: datetime, inp: int, out: int, cost: float) -> NewRow:
        inhalt = {"modell": "deepseek/…", "input_tokens": inp, "output_tokens": out, "kosten_usd": cost}
        return row(at, "hintergrund", "token", json.dumps(inhalt), node="llm")

    await log_store.write(
        batches(
            [
                token(NOW - timedelta(hours=1), 1689, 185, 0.00010291),
                token(NOW - timedelta(hours=23), 311, 15, 0.00001709),
                token(NOW - timedelta(hours=25), 9999, 9999, 1.0),  # older than 24 h
            ]
        )
    )
    totals = await log_store.token_usage(NOW - timedelta(hours=24), NOW)
    assert (totals.input_tokens, totals.output_tokens, totals.calls) == (2000, 200, 2)
    assert totals.kosten_usd == pytest.approx(0.00012)
    empty = await log_store.token_usage(NOW - timedelta(days=30), NOW - timedelta(days=29))
    assert (empty.input_tokens, empty.output_tokens, empty.kosten_usd, empty.calls) == (0, 0, 0.0, 0)
