"""Pure parts of a person's rights: the export format (novaberg.export/1), the log's ingest guard,
SCAN pattern escaping, the KZG key prefix as JSON text, and what every service's rights RPCs share
(``novaberg_core.rights``: the erasure target, a oneof target, the ImportPair stream's pair, chunks)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.contract import pair_token, user_token
from novaberg_core.errors import InvalidArgument
from novaberg_core.rights import (
    StreamPair,
    check_erasure_target,
    chunks,
    erasure_scope,
    erasure_target_of,
    erasure_written,
    kzg_key,
    kzg_key_prefix,
    named_target,
    pair_ids,
    rights_write,
)
from services.kzg.rights import glob_escape
from services.log.rights import key_prefix_in_json
from services.log.tombstones import IngestGuard
from services.pixie.export_format import EXPORT_SCHEMA, export_lines, parse_lines

PAIR = common_pb2.Pair(user_id="meister", character_id="nova")
T = datetime(2026, 5, 1, 12, tzinfo=UTC)


def _export() -> list[str]:
    node = lzg_pb2.Node(id=7, kzg_quell_key="kzg:meister:nova:e1", inhalt="Anna hat Geburtstag", gewicht_roh=0.9,
                        gewicht_absolut=3.754, gewicht_decay=3.5, aktiv=True, themen=["anna"],
                        magnets=common_pb2.Magnets(entitaet_ids=[3], timeline_id=4), pair=PAIR,
                        beobachter=common_pb2.BEOBACHTER_USER)  # fmt: skip
    node.erstellt_am.FromDatetime(T)
    edge = lzg_pb2.Edge(id=1, knoten_a_id=7, knoten_b_id=8, gewicht_roh=1.848, gewicht_absolut=4.2,
                        verbindungs_gruende=["embedding", "timeline"], timeline_naehe_tage=4,
                        embedding_cosine_initial=0.9, anzahl_schichten=2)  # fmt: skip
    lzg = [lzg_pb2.ExportPairChunk(model_id="minilm", counts=lzg_pb2.ExportCounts(nodes=1, edges=1)),
           lzg_pb2.ExportPairChunk(entities=[lzg_pb2.Entity(id=3, name="Anna", pair=PAIR)],
                                   timelines=[lzg_pb2.Timeline(id=4, praezision="tag")], nodes=[node], edges=[edge])]
    entry = common_pb2.KzgEntry(kzg_key="kzg:meister:nova:e2", entry_id="e2", inhalt="Tee", salienz=0.8,
                                ttl_seconds=3600, haeufigkeit=2, pair=PAIR, embedding=[0.1, 0.2])
    kzg = [kzg_pb2.ExportPairResponse(entries=[kzg_pb2.ExportedEntry(entry=entry, promotion_queued=True)],
                                      session_turns=[kzg_pb2.SessionTurn(role="user", text="Hallo")],
                                      session_summary="früher",
                                      profile=common_pb2.PairProfile(user_name="Jörg", character_name="Nova",
                                                                     sprache="de", zeitzone="Europe/Berlin"))]  # fmt: skip
    return export_lines(PAIR, "minilm", lzg, kzg)


def test_the_export_starts_with_its_header_and_holds_no_vectors_or_pairs() -> None:
    lines = _export()
    header = json.loads(lines[0])
    assert header["schema"] == EXPORT_SCHEMA == "novaberg.export/1"
    assert header["pair"] == {"user_id": "meister", "character_id": "nova"} and header["model_id"] == "minilm"
    assert header["counts"] == {
        "entity": 1, "timeline": 1, "node": 1, "edge": 1, "kzg_entry": 1, "session_turn": 1, "profile": 1,
    }  # fmt: skip
    records = [json.loads(line) for line in lines[1:]]
    assert [r["type"] for r in records] == ["entity", "timeline", "node", "edge", "kzg_entry", "session", "profile"]
    assert records[6] == {
        "type": "profile", "user_name": "Jörg", "character_name": "Nova", "sprache": "de", "zeitzone": "Europe/Berlin",
    }  # fmt: skip
    assert "Jörg" in lines[7]  # names as written, not ASCII-escaped
    assert all("embedding" not in r and "pair" not in r for r in records)
    node = records[2]
    assert node["gewicht_absolut"] == 3.754 and node["magnets"] == {"entitaet_ids": [3], "timeline_id": 4}
    assert records[4]["promotion_queued"] is True and records[4]["ttl_seconds"] == 3600


def test_parsing_an_export_gives_the_messages_back() -> None:
    parsed = parse_lines(_export())
    assert [e.name for e in parsed.entities] == ["Anna"] and [t.id for t in parsed.timelines] == [4]
    (node,) = parsed.nodes
    assert (node.id, node.gewicht_absolut, list(node.magnets.entitaet_ids), node.erstellt_am.ToDatetime(UTC)) == (
        7, 3.754, [3], T,
    )  # fmt: skip
    (edge,) = parsed.edges
    assert list(edge.verbindungs_gruende) == ["embedding", "timeline"] and edge.embedding_cosine_initial == 0.9
    (entry,) = parsed.entries
    assert entry.promotion_queued and entry.entry.inhalt == "Tee" and list(entry.entry.embedding) == []
    assert [t.text for t in parsed.turns] == ["Hallo"] and parsed.summary == "früher"
    assert parsed.profile == common_pb2.PairProfile(user_name="Jörg", character_name="Nova", sprache="de", zeitzone="Europe/Berlin")


def test_an_export_without_a_profile_has_no_profile_line_and_parses_to_none() -> None:
    lines = [line for line in _export() if json.loads(line).get("type") != "profile"]
    assert parse_lines(lines).profile is None
    kzg = [kzg_pb2.ExportPairResponse(session_summary="früher")]
    assert [json.loads(line).get("type") for line in export_lines(PAIR, "minilm", [], kzg)[1:]] == ["session"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "holds no lines"),
        (["not json"], "line 1 is not JSON"),
        ([json.dumps({"schema": "novaberg.export/2"})], "must be a novaberg.export/1 header"),
        ([json.dumps({"schema": EXPORT_SCHEMA}), json.dumps({"type": "wurst"})], "unknown record type 'wurst'"),
        ([json.dumps({"schema": EXPORT_SCHEMA}), json.dumps({"type": "node", "gewicht": 1})], "line 2 \\(node\\)"),
        ([json.dumps({"schema": EXPORT_SCHEMA}), "[1, 2]"], "line 2 is not a JSON object"),
        ([json.dumps({"schema": EXPORT_SCHEMA}), *[json.dumps({"type": "profile", "user_name": "A"})] * 2],
         "line 3: the import holds more than one profile line"),
        ([json.dumps({"schema": EXPORT_SCHEMA}), json.dumps({"type": "profile", "alter": 3})], "line 2 \\(profile\\)"),
    ],
)
def test_a_file_that_is_not_an_export_is_refused_naming_the_line(lines: list[str], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_lines(lines)


def test_the_ingest_guard_drops_records_of_an_erased_pair_dated_up_to_the_erasure() -> None:
    guard = IngestGuard({pair_token("u", "c"): T, user_token("v"): T})

    def row(when: datetime, user: str | None, character: str | None, inhalt: str = "{}") -> tuple[object, ...]:
        return (when, "t", None, "q", "n", "eingang", inhalt, user, character, None)

    early, late = T - timedelta(seconds=1), T + timedelta(seconds=1)
    assert not guard.keep(row(early, "u", "c"))  # type: ignore[arg-type]
    assert not guard.keep(row(T, "u", "c"))  # type: ignore[arg-type]
    assert guard.keep(row(late, "u", "c"))  # type: ignore[arg-type]
    assert guard.keep(row(early, "u", "other"))  # type: ignore[arg-type]
    assert not guard.keep(row(early, "v", "any"))  # type: ignore[arg-type]  # the user's erasure
    assert not guard.keep(row(early, None, None, '{"jobs": [{"kzg_key": "kzg:u:c:e1"}]}'))  # type: ignore[arg-type]
    assert guard.keep(row(early, None, None, '{"jobs": [{"kzg_key": "kzg:u:d:e1"}]}'))  # type: ignore[arg-type]
    assert guard.dropped == 4


def test_ids_are_literal_inside_scan_patterns_and_json_text() -> None:
    assert glob_escape("u*[x]?\\") == "u\\*\\[x\\]\\?\\\\"
    assert key_prefix_in_json('a"b', "c") == 'kzg:a\\"b:c:' and key_prefix_in_json("ä", None) == "kzg:ä:"


def test_an_erasure_target_names_a_pair_or_a_user() -> None:
    by_pair = common_pb2.ErasureTarget(pair=PAIR)
    assert erasure_target_of(by_pair, pair_ids) == (("meister", "nova"), None)
    assert erasure_target_of(common_pb2.ErasureTarget(user_id=""), pair_ids) == (None, "")
    assert erasure_target_of(by_pair, lambda p: p.character_id) == ("nova", None)
    with pytest.raises(InvalidArgument, match=r"^target must name a pair or a user_id$"):
        erasure_target_of(common_pb2.ErasureTarget(), pair_ids)


def test_the_checked_erasure_target_is_one_pair_or_every_pair_of_a_user() -> None:
    assert check_erasure_target(("meister", "nova"), None) == ("meister", "nova")
    assert check_erasure_target(None, "meister") == ("meister", None)
    assert (erasure_scope("nova"), erasure_scope(None)) == ("paar", "nutzer")
    for pair, user in ((None, None), (("meister", "nova"), "meister")):
        with pytest.raises(InvalidArgument, match=r"^target must name either a pair or a user_id$"):
            check_erasure_target(pair, user)
    with pytest.raises(InvalidArgument, match=r"^target\.pair\.character_id must not be empty"):
        check_erasure_target(("meister", ""), None)
    with pytest.raises(InvalidArgument, match=r"^target\.user_id must not be empty"):
        check_erasure_target(None, " ")
    with pytest.raises(InvalidArgument, match=r"^pair\.user_id must not be empty"):
        check_erasure_target(None, "", pair_field="pair", user_field="pair")


def test_a_oneof_target_is_read_as_its_field_and_value() -> None:
    request = lzg_pb2.CorrectNodeRequest(node_id=7)
    assert named_target(request, "name it") == {"node_id": 7}
    with pytest.raises(InvalidArgument, match=r"^name it$"):
        named_target(lzg_pb2.CorrectNodeRequest(), "name it")


def test_the_kzg_key_prefix_of_a_pair_and_of_a_user() -> None:
    assert kzg_key_prefix("meister", "nova") == "kzg:meister:nova:"
    assert kzg_key_prefix("meister", None) == "kzg:meister:"
    assert kzg_key("meister", "nova", "e1") == "kzg:meister:nova:e1"


def test_an_import_stream_names_its_pair_first_and_no_other_later() -> None:
    stream = StreamPair()
    with pytest.raises(InvalidArgument, match=r"^the first message of ImportPair must name the pair$"):
        StreamPair().check(lzg_pb2.ImportPairChunk())
    assert pair_ids(stream.check(lzg_pb2.ImportPairChunk(pair=PAIR))) == ("meister", "nova")
    assert pair_ids(stream.check(lzg_pb2.ImportPairChunk())) == ("meister", "nova")
    assert pair_ids(stream.check(lzg_pb2.ImportPairChunk(pair=PAIR))) == ("meister", "nova")
    other = common_pb2.Pair(user_id="meister", character_id="lyra")
    with pytest.raises(InvalidArgument, match=r"^every message of one ImportPair must name the same pair$"):
        stream.check(lzg_pb2.ImportPairChunk(pair=other))


def test_a_streamed_export_comes_in_chunks_of_at_most_the_size() -> None:
    assert [list(c) for c in chunks([1, 2, 3, 4, 5], 2)] == [[1, 2], [3, 4], [5]]
    assert list(chunks([], 2)) == []


def test_a_rights_operation_writes_one_record_at_the_rights_node() -> None:
    written: list[dict[str, object]] = []

    class Log:
        def db_write(self, **record: object) -> None:
            written.append(record)

    rights_write(Log(), turn_id="t", operation="erase", tabelle="kzg", umfang="paar")
    erasure_written(Log(), turn_id="t", tabelle="lzg", character_id=None, knoten=2)
    assert written == [
        {"turn_id": "t", "node": "loeschung", "tabelle": "kzg", "operation": "erase", "umfang": "paar"},
        {"turn_id": "t", "node": "loeschung", "tabelle": "lzg", "operation": "erase", "umfang": "nutzer", "knoten": 2},
    ]
