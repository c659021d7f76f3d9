"""Where a record belongs, passed as one value (``LogScope``), and a result's counts under their log
names (``count_fields``): the records are the ones the spelled-out keywords write."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

import pytest

from novaberg_core.model import Pair
from novaberg_core.pipeline_log import InMemorySink, LogScope, PipelineLog, count_fields, count_names

AS_OF = datetime(2026, 5, 14, 18, 32, tzinfo=UTC)
SPAN = str(uuid.UUID(int=7))


def _columns(record: object) -> tuple[object, ...]:
    names = ("erstellt_am", "turn_id", "node", "art", "inhalt", "quelle", "span_id", "user_id", "character_id")
    return tuple(getattr(record, name) for name in names)


async def test_a_scope_writes_the_records_its_keywords_write() -> None:
    sink = InMemorySink()
    plog = PipelineLog(sink, quelle="nova")
    where = LogScope("t1", SPAN, "u", "c", AS_OF)
    spelled = {"turn_id": "t1", "span_id": SPAN, "user_id": "u", "character_id": "c", "erstellt_am": AS_OF}
    for scope in (where, spelled):
        plog.db_write(**scope, node="n", tabelle="lzg_knoten", operation="update", verfallen=3)
        plog.decision(**scope, node="n", entscheidung="gate", ausgang="ja")
        plog.error(**scope, node="n", typ="ValueError", message="kaputt")
    await plog.flush()
    by_scope, by_keywords = sink.records[:3], sink.records[3:]
    assert [_columns(r) for r in by_scope] == [_columns(r) for r in by_keywords]
    assert by_scope[0].inhalt == {"tabelle": "lzg_knoten", "operation": "update", "verfallen": 3}


def test_a_scope_is_the_mapping_of_the_record_keywords() -> None:
    where = LogScope.of_pair("t1", Pair("u", "c"), SPAN, AS_OF)
    assert dict(where) == {
        "turn_id": "t1",
        "span_id": SPAN,
        "user_id": "u",
        "character_id": "c",
        "erstellt_am": AS_OF,
    }
    assert dict(LogScope("t2")) == {
        "turn_id": "t2",
        "span_id": None,
        "user_id": None,
        "character_id": None,
        "erstellt_am": None,
    }
    with pytest.raises(KeyError):
        where["node"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        where.turn_id = "t3"  # type: ignore[misc]


def test_count_fields_names_each_count_in_the_tables_order() -> None:
    @dataclasses.dataclass
    class Counts:
        nodes: int = 2
        edges: int = 5

    names = count_names(Counts, kanten="edges", knoten="nodes")
    assert list(count_fields(Counts(), names).items()) == [("kanten", 5), ("knoten", 2)]
    with pytest.raises(TypeError, match="Counts has no field entities"):
        count_names(Counts, entitaeten="entities")
    with pytest.raises(TypeError):
        names["knoten"] = "edges"  # type: ignore[index]
