"""The shared request contract (novaberg_core.contract): identifiers, text, numbers, times."""

from __future__ import annotations

import importlib

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.contract import (
    STRING_KINDS,
    TEXT_MAX_CHARS,
    UNDECODABLE,
    check_pair,
    check_request,
    pair_token,
    safe_deserializer,
    string_fields_of,
    user_token,
)
from novaberg_core.errors import InvalidArgument

SERVICES = ("kzg", "lzg", "pipeline", "pixie", "log")
PAIR = common_pb2.Pair(user_id="meister", character_id="nova")


def request_types() -> list[object]:
    found = []
    for name in SERVICES:
        module = importlib.import_module(f"novaberg.{name}.v1.{name}_pb2")
        for service in module.DESCRIPTOR.services_by_name.values():
            found += [method.input_type for method in service.methods]
    return found


def test_every_string_field_of_every_request_has_a_kind() -> None:
    """A new string field must be classified in the contract, or it would only get the text default."""
    unclassified = sorted(
        {f"{message}.{field}" for t in request_types() for message, field in string_fields_of(t)  # type: ignore[arg-type]
         if field not in STRING_KINDS}
    )  # fmt: skip
    assert unclassified == []


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key="kzg:meister:nova:a\x00b"), r"kzg_key must not contain a control character U\+0000"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, inhalt="x" * (TEXT_MAX_CHARS + 1)), f"inhalt must be at most {TEXT_MAX_CHARS}"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, inhalt="line\x1bescape"), "control character U.001B"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, inhalt="a\ufffeb"), "non-character"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, salience=common_pb2.SalienceResult(themen=["ok", "a|b"])), r"salience.themen\[1\] must not contain '\|'"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, embedding=[0.1, float("nan")]), "embedding must hold finite numbers"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, ei=common_pb2.EiFields(arousal=1.5)), r"ei.arousal must lie within 0..1"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, beobachter=7), "beobachter = 7 is not a value of Beobachter"),  # type: ignore[arg-type]
        (kzg_pb2.StoreEntryRequest(pair=PAIR, as_of=Timestamp(seconds=-62135596800)), "as_of must lie between 1970-01-01"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, as_of=Timestamp(seconds=253402300800)), "as_of must lie between"),
        (kzg_pb2.AppendSessionTurnRequest(pair=PAIR, turn=kzg_pb2.SessionTurn(created_at=Timestamp(seconds=253402128000, nanos=1))),
         r"turn.created_at must lie between 1970-01-01 and 9999-12-30 \(seconds 0..253402128000\), got seconds=253402128000, nanos=1"),
        (kzg_pb2.StoreEntryRequest(pair=PAIR, as_of=Timestamp(seconds=5, nanos=-1)), "as_of.nanos"),
        (kzg_pb2.ReadPromotionJobsRequest(consumer="c", count=2**31 - 1), "count must be at most 1000"),
        (kzg_pb2.ReadPromotionJobsRequest(consumer="c", count=-1), "count must not be negative"),
        (lzg_pb2.ResolveEntitiesRequest(pair=PAIR, names=["Anna", "x" * 201]), r"names\[1\] must be at most 200"),
        (lzg_pb2.ResolveEntitiesRequest(pair=PAIR, names=["n"] * 257), "names may hold at most 256 items"),
        (lzg_pb2.UpsertTimelineRequest(pair=PAIR, timeline=lzg_pb2.Timeline(zeitpunkt=Timestamp(seconds=-62135596800))),
         "timeline.zeitpunkt must lie between 0001-01-02"),
        (log_pb2.LogRecord(inhalt_json='{"a": "\\u0000"}'), r"JSON escape \\u0000"),
        (kzg_pb2.GetSessionRequest(pair=common_pb2.Pair(user_id="u:1", character_id="c")), "must not contain ':'"),
    ],
)
def test_refusals_name_the_field(request_: object, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_request(request_)  # type: ignore[arg-type]


def test_the_last_instant_is_9999_12_30_itself() -> None:
    """Its fractions are refused (the refusal case above); the instant itself is accepted
    (tests/service/pixie/test_pixie_rights.py: it travels with its pair)."""
    check_request(kzg_pb2.AppendSessionTurnRequest(pair=PAIR, turn=kzg_pb2.SessionTurn(created_at=Timestamp(seconds=253402128000))))


def test_year_one_is_a_valid_timeline_date_and_text_keeps_line_breaks() -> None:
    check_request(lzg_pb2.UpsertTimelineRequest(pair=PAIR, timeline=lzg_pb2.Timeline(zeitpunkt=Timestamp(seconds=-62135000000))))
    check_request(kzg_pb2.StoreEntryRequest(pair=PAIR, inhalt="Zeile eins\nZeile zwei\tmit Tab"))


def test_identifiers_are_nfc_normalised_in_place() -> None:
    decomposed = "Jose\u0301"  # e + combining acute
    request = kzg_pb2.GetSessionRequest(pair=common_pb2.Pair(user_id=decomposed, character_id="nova"))
    lookup = lzg_pb2.ResolveEntitiesRequest(pair=PAIR, names=["Ame\u0301lie", "Anna"])
    check_request(request)
    check_request(lookup)
    assert request.pair.user_id == "Jos\u00e9"
    assert list(lookup.names) == ["Am\u00e9lie", "Anna"]


def test_text_is_not_normalised() -> None:
    request = kzg_pb2.StoreEntryRequest(pair=PAIR, inhalt="Jose\u0301")
    check_request(request)
    assert request.inhalt == "Jose\u0301"


def test_pair_rule() -> None:
    check_pair("u-1@example.org", "Nova ✨")
    for user, character, message in [("", "c", "user_id must not be empty"), ("u", " c", "whitespace"),
                                     ("u" * 51, "c", "at most 50")]:  # fmt: skip
        with pytest.raises(InvalidArgument, match=message):
            check_pair(user, character)


def test_pair_tokens_separate_pairs_whatever_the_ids_hold() -> None:
    pairs = [("u1", "c"), ("u1,u2", "c"), ("u1", "c,u2"), ("u1|u2", "c"), ("u1 u2", "c"), ("u1", "1c"), ("u11", "c"),
             ("u1\\", "c"), ("u1", "c*"), ("uı", "c")]  # fmt: skip
    tokens = [pair_token(u, c) for u, c in pairs]
    assert len(set(tokens)) == len(pairs)
    assert all(len(t) == 32 and all(ch in "0123456789abcdef" for ch in t) for t in tokens)
    assert user_token("u1") != user_token("u1,u2")


def test_undecodable_bytes_become_a_marker() -> None:
    good = kzg_pb2.GetEntryRequest(kzg_key="abcd").SerializeToString()
    parse = safe_deserializer(kzg_pb2.GetEntryRequest.FromString)
    assert parse(good) == kzg_pb2.GetEntryRequest(kzg_key="abcd")
    marker = parse(good.replace(b"abcd", b"\xff\xfe\xfd\xfc"))
    assert isinstance(marker, UNDECODABLE)
    assert "invalid UTF-8" in str(marker.refuse())
