"""The rules of a pipeline_log record (SPEC §8, syn §10.1–10.2) and the log service's pure domain."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.log.v1 import log_pb2
from novaberg_core.errors import InvalidArgument
from novaberg_core.pipeline_log import ARTEN, PendingRecord, record_problem
from services.log.domain import (
    LogQuery,
    decode_inhalt,
    new_row,
    retention_horizon,
    time_from_parts,
    window,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SPAN = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
DECISION = {
    "entscheidung": "thinker.schnellcheck",
    "ausgang": "reasoning",
    "eingang": {"treffer_antwort": ["km"], "needs_web": False},
    "massstab": {"indikatoren": 35},
}


def _problem(**overrides: Any) -> str | None:
    fields: dict[str, Any] = {
        "turn_id": "humangraph-2026-05-14T18:32-uuid",
        "node": "salience",
        "art": "berechnung",
        "quelle": "System",
        "inhalt": None,
        "span_id": SPAN,
        "user_id": "meister",
        "character_id": "nova",
        "trace_id": TRACE,
    }
    fields.update(overrides)
    inhalt = fields.pop("inhalt")
    return record_problem(PendingRecord(NOW, inhalt=inhalt, **fields), inhalt)


def test_the_thirteen_arten_of_the_spec() -> None:
    spec_8 = "eingang, prompt, berechnung, switch, db_write, db_read, ausgabe, fehler, bemerkung, span_start, span_end, token, turn_roh"
    assert ARTEN == set(spec_8.split(", "))
    shaped = {
        "switch": DECISION,
        "token": {"input_tokens": 1, "output_tokens": 2, "kosten_usd": 0.1},
        "turn_roh": {"user_prompt": "hi", "response": "ho"},
    }
    for art in ARTEN:
        assert _problem(art=art, inhalt=shaped.get(art)) is None, art


def test_a_valid_record_and_maintenance_rows_without_a_pair() -> None:
    assert _problem() is None
    assert _problem(user_id=None, character_id=None, span_id=None, trace_id=None) is None
    assert _problem(user_id="", character_id="", span_id="", trace_id="") is None


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        ({"art": "db_zugriff"}, "art 'db_zugriff'"),
        ({"user_id": None}, "half pair"),
        ({"character_id": ""}, "half pair"),
        ({"turn_id": ""}, "turn_id"),
        ({"turn_id": "x" * 101}, "turn_id"),
        ({"node": ""}, "node"),
        ({"node": "n" * 51}, "node"),
        ({"quelle": ""}, "quelle"),
        ({"quelle": "q" * 51}, "quelle"),
        ({"user_id": "u" * 51}, "user_id"),
        ({"span_id": "not-a-uuid"}, "span_id"),
        ({"trace_id": "XYZ"}, "trace_id"),
        ({"trace_id": "0" * 32}, "trace_id"),
        ({"art": "switch", "inhalt": "gv wählt naehe"}, "switch"),
        ({"art": "switch", "inhalt": {"entscheidung": "gv.cluster", "ausgang": "x"}}, "eingang, massstab"),
        ({"art": "switch", "inhalt": {**DECISION, "entscheidung": "schnellcheck"}}, "<node>.<weiche>"),
        ({"art": "switch", "inhalt": {**DECISION, "ausgang": None}}, "ausgang"),
        ({"art": "switch", "inhalt": {**DECISION, "eingang": [1, 2]}}, "eingang"),
        (
            {"art": "token", "inhalt": {"input_tokens": 1, "output_tokens": -2, "kosten_usd": 0.1}},
            "output_tokens",
        ),
        (
            {"art": "token", "inhalt": {"input_tokens": True, "output_tokens": 2, "kosten_usd": 0.1}},
            "input_tokens",
        ),
        ({"art": "token", "inhalt": {"input_tokens": 1, "output_tokens": 2}}, "kosten_usd"),
        ({"art": "turn_roh", "inhalt": "nur Text"}, "turn_roh"),
    ],
)
def test_each_broken_rule_is_named(overrides: dict[str, Any], names: str) -> None:
    problem = _problem(**overrides)
    assert problem is not None and names in problem


def test_decision_rows_accept_a_null_eingang_and_any_massstab() -> None:
    assert _problem(art="switch", inhalt={**DECISION, "eingang": None, "massstab": 0.82}) is None
    assert _problem(art="switch", inhalt={**DECISION, "massstab": "Eintrag nicht mehr vorhanden"}) is None


def test_decode_inhalt_refuses_what_jsonb_cannot_store() -> None:
    assert decode_inhalt("") is None
    assert decode_inhalt('{"text": "Anna hat Geburtstag"}') == {"text": "Anna hat Geburtstag"}
    assert (
        decode_inhalt('"GV-Cluster-Wechsel überraschend abrupt"') == "GV-Cluster-Wechsel überraschend abrupt"
    )
    assert decode_inhalt('{"pfad": "\\\\u0000 ist erlaubt"}') == {"pfad": "\\u0000 ist erlaubt"}
    for bad in ('{"a": NaN}', "[Infinity]", '{"a": "x\\u0000y"}', "{nicht json", '{"a": 1} extra'):
        with pytest.raises(ValueError):
            decode_inhalt(bad)


def _row(**overrides: Any) -> Any:
    fields: dict[str, Any] = {
        "turn_id": "t",
        "span_id": "",
        "quelle": "nova",
        "node": "responder",
        "art": "ausgabe",
        "inhalt_json": '{"text": "Glückwunsch"}',
        "user_id": "",
        "character_id": "",
        "trace_id": "",
    }
    stamp = Timestamp(seconds=overrides.pop("seconds", 0), nanos=overrides.pop("nanos", 0))
    fields.update(overrides)
    return new_row(log_pb2.LogRecord(erstellt_am=stamp, **fields), NOW)


def test_new_row_stamps_now_when_unset_and_maps_empty_to_null() -> None:
    assert _row() == (
        NOW,
        "t",
        None,
        "nova",
        "responder",
        "ausgabe",
        '{"text": "Glückwunsch"}',
        None,
        None,
        None,
    )
    stamped = _row(
        seconds=1_778_783_520,
        nanos=123_456_789,
        span_id=SPAN,
        user_id="u",
        character_id="c",
        trace_id=TRACE,
        inhalt_json="",
    )
    assert stamped[0] == datetime(2026, 5, 14, 18, 32, 0, 123_456, tzinfo=UTC)
    assert stamped[2] == SPAN and stamped[6] == "null" and stamped[7:] == ("u", "c", TRACE)


def test_new_row_names_the_broken_field() -> None:
    with pytest.raises(ValueError, match="half pair"):
        _row(user_id="u")
    with pytest.raises(ValueError, match="inhalt_json"):
        _row(inhalt_json="{")
    with pytest.raises(ValueError, match="erstellt_am"):
        _row(seconds=10**12)


def test_time_from_parts_is_exact_to_the_microsecond() -> None:
    assert time_from_parts(0, 999_999_999) == datetime(1970, 1, 1, 0, 0, 0, 999_999, tzinfo=UTC)
    assert time_from_parts(-1, 0) == datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)


def test_retention_horizon_is_365_days_before_as_of() -> None:
    assert retention_horizon(NOW, 365) == datetime(2025, 11, 29, 12, 0, tzinfo=UTC)
    with pytest.raises(InvalidArgument, match="retention_days"):
        retention_horizon(NOW, 0)


def test_windows_default_to_the_seeds_spans() -> None:
    assert window(None, None, timedelta(days=7), NOW) == (NOW - timedelta(days=7), NOW)
    until = NOW - timedelta(days=1)
    assert window(None, until, timedelta(hours=24), NOW) == (until - timedelta(hours=24), until)
    with pytest.raises(InvalidArgument, match="since"):
        window(NOW, NOW, timedelta(days=7), NOW)


def test_log_query_validates_filters() -> None:
    q = LogQuery.build(turn_id="t", span_id=SPAN, art="switch", trace_id=TRACE.upper())
    assert (q.turn_id, str(q.span_id), q.art, q.trace_id, q.limit) == ("t", SPAN, "switch", TRACE, 1000)
    assert q.node is None and q.user_id is None
    for kwargs, field in (
        ({"art": "db_zugriff"}, "art"),
        ({"span_id": "123"}, "span_id"),
        ({"user_id": "u"}, "pair"),
        ({"limit": -1}, "limit"),
        ({"limit": 10_001}, "limit"),
        ({"since": NOW, "until": NOW}, "since"),
    ):
        with pytest.raises(InvalidArgument, match=field):
            LogQuery.build(**kwargs)  # type: ignore[arg-type]
