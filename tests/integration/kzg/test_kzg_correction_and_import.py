"""A person's correction and an import, seen by what they leave in Redis: a corrected entry is found by
its new words only (SPEC §11), an imported one keeps its expiry in turn time (SPEC §4.4, §11), the
canon's ERROR lines (SPEC §4.1) and an absent salienz_eingang (SPEC §4.4). Real Redis with the search
module; the export passes through the proto messages and a novaberg.export/1 file as a person's does."""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import timedelta

import numpy as np
import pytest

from novaberg.kzg.v1 import kzg_pb2
from novaberg_core.errors import InvalidArgument
from novaberg_core.model import Ei, Magnets
from novaberg_core.pipeline_log import InMemorySink
from novaberg_core.timeutil import utc_now
from services.kzg.convert import exported_entry_from_proto, exported_entry_to_proto
from services.kzg.domain import salienz_berechnen
from services.kzg.memory import KzgMemory
from services.kzg.rights import KzgRights
from services.kzg.types import KzgEntry, Pair, RetrieveQuery
from services.pixie.export_format import export_lines, parse_lines
from tests.integration.kzg.conftest import PAIR, entry, unit_vector
from tests.redis_values import as_bytes

pytestmark = pytest.mark.integration

DAY = timedelta(days=1)


async def _lexical(kzg: KzgMemory, words: str, rng: np.random.Generator) -> list[str]:
    """The keys full-text retrieval finds for ``words`` (a random query vector: nothing by meaning)."""
    result = await kzg.retrieve(
        RetrieveQuery(pair=PAIR, query_vector=unit_vector(rng), lexical_text=words, sprache="de")
    )
    return [hit.entry.kzg_key for hit in result.hits if "lexical" in hit.quellen]


async def _field(kzg: KzgMemory, key: str, name: str) -> str | None:
    value = await kzg.store.redis.hget(key, name)
    return None if value is None else as_bytes(value).decode()


async def _through_a_file(rights: KzgRights, pair: Pair, *, without: str = "") -> list[KzgEntry]:
    """The pair's entries as an import reads them back from an export file: domain → the ExportPair
    messages → the file's lines (each entry's ``without`` field left out, as an older file has it) →
    their parse → the ImportPair conversion."""
    chunks = [
        kzg_pb2.ExportPairResponse(entries=[exported_entry_to_proto(e) for e in chunk.entries])
        async for chunk in rights.export(pair)
    ]
    lines = [json.loads(line) for line in export_lines(pair.to_proto(), "minilm", [], chunks)]
    for record in lines:
        if record.get("type") == "kzg_entry" and without:
            del record[without]
    parsed = parse_lines([json.dumps(record) for record in lines])
    return [exported_entry_from_proto(e) for e in parsed.entries]


async def test_a_corrected_entry_is_found_by_its_new_words_and_no_longer_by_the_old(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    stored = await kzg.store_entry(
        entry(0.5, ("Haustiere",), inhalt="Meister liebt Katzen.", sprecher="Anna", sprache="de")
    )
    key = stored.kzg_key
    assert await _lexical(kzg, "Katzen", rng) == [key]
    assert await _field(kzg, key, "suchtext") == "Anna: Meister liebt Katzen."

    previous = await KzgRights(kzg).correct(PAIR, key, "Meister liebt Hunde.")

    assert previous == "Meister liebt Katzen."
    assert await _lexical(kzg, "Katzen", rng) == []
    assert await _lexical(kzg, "Hunde", rng) == [key]
    # The text the write path indexes, made by its own function, and its language as before.
    assert await _field(kzg, key, "suchtext") == "Anna: Meister liebt Hunde."
    assert await _field(kzg, key, "suchsprache") == "german"
    assert (await kzg.get_entry(PAIR, key)).inhalt == "Meister liebt Hunde."


async def test_an_answer_is_found_by_the_words_of_its_question_after_a_correction_and_an_import_too(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    """SPEC §11: full-text retrieval reads the question an entry answers (``antwort_auf``) with its content;
    the question stays the entry's through a correction and an export and import."""
    stored = await kzg.store_entry(entry(
        0.5, ("Forschung",), inhalt="Adoptionsagenturen.", sprecher="Melanie", sprache="de",
        antwort_auf="Was hast du recherchiert?", embedding=unit_vector(rng),
    ))  # fmt: skip
    key = stored.kzg_key
    assert await _field(kzg, key, "suchtext") == "Melanie: Adoptionsagenturen.\nWas hast du recherchiert?"
    assert await _lexical(kzg, "recherchiert", rng) == [key]  # a word of the question alone
    assert (await kzg.get_entry(PAIR, key)).antwort_auf == "Was hast du recherchiert?"

    rights = KzgRights(kzg)
    await rights.correct(PAIR, key, "Pflegefamilien.")
    assert await _lexical(kzg, "recherchiert", rng) == [key]
    assert await _lexical(kzg, "Adoptionsagenturen", rng) == []

    exported = await _through_a_file(rights, PAIR)
    await rights.erase(PAIR, None)
    assert await _lexical(kzg, "recherchiert", rng) == []
    await rights.import_pair(PAIR, exported, [], "")
    assert await _field(kzg, key, "antwort_auf") == "Was hast du recherchiert?"
    assert await _lexical(kzg, "recherchiert", rng) == [key]


async def test_an_import_keeps_the_exported_expiry_in_turn_time_reinforcement_included(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    made = utc_now() - 5 * DAY
    vector = unit_vector(rng)
    old = await kzg.store_entry(entry(0.5, ("Garten",), embedding=vector, as_of=made, turn_id="t-0"))  # MID: 14 d
    later = await kzg.store_entry(entry(0.5, ("garten",), embedding=unit_vector(rng), as_of=made + 2 * DAY))
    assert later.reinforced_count == 1
    ablauf_am = await _field(kzg, old.kzg_key, "ablauf_am")
    assert ablauf_am is not None and float(ablauf_am) == pytest.approx((made + 16 * DAY).timestamp(), abs=1e-3)
    rights = KzgRights(kzg)
    exported = await _through_a_file(rights, PAIR)
    ttl_of = {e.kzg_key: e.ttl_seconds for e in exported}
    await rights.erase(PAIR, None)

    counts = await rights.import_pair(PAIR, exported, [], "")

    assert counts.entries == 2
    assert await _field(kzg, old.kzg_key, "ablauf_am") == ablauf_am  # not erstellt_am + remaining TTL (14 d)
    assert (await kzg.get_entry(PAIR, old.kzg_key)).ablauf_am == next(
        e.ablauf_am for e in exported if e.kzg_key == old.kzg_key
    )
    # Redis's own clock keeps the remaining TTL, as before.
    for key, ttl in ttl_of.items():
        assert ttl - 5 <= await kzg.store.redis.ttl(key) <= ttl


async def test_an_imported_entry_keeps_the_trace_of_the_turn_that_wrote_it(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    stored = await kzg.store_entry(entry(0.5, ("Garten",), embedding=unit_vector(rng), traceparent=traceparent))
    rights = KzgRights(kzg)
    exported = await _through_a_file(rights, PAIR)
    await rights.erase(PAIR, None)

    await rights.import_pair(PAIR, exported, [], "")

    assert await _field(kzg, stored.kzg_key, "traceparent") == traceparent


async def test_an_import_of_a_file_without_ablauf_am_counts_the_remaining_ttl_from_erstellt_am(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    made = utc_now() - 3 * DAY
    stored = await kzg.store_entry(entry(0.5, ("Garten",), embedding=unit_vector(rng), as_of=made))
    rights = KzgRights(kzg)
    (exported,) = await _through_a_file(rights, PAIR, without="ablauf_am")
    assert exported.ablauf_am is None
    await rights.erase(PAIR, None)

    await rights.import_pair(PAIR, [exported], [], "")

    ablauf_am = await _field(kzg, stored.kzg_key, "ablauf_am")
    assert ablauf_am == f"{exported.erstellt_am.timestamp() + exported.ttl_seconds:.3f}"


async def test_an_old_files_entry_message_without_ablauf_am_reads_as_none() -> None:
    message = dataclasses.replace(_domain_entry(), ablauf_am=None).to_proto()
    assert not message.HasField("ablauf_am")
    assert KzgEntry.from_proto(message).ablauf_am is None
    at = utc_now().replace(microsecond=123000)
    assert KzgEntry.from_proto(dataclasses.replace(_domain_entry(), ablauf_am=at).to_proto()).ablauf_am == at


def _domain_entry() -> KzgEntry:
    return KzgEntry(
        kzg_key=f"kzg:{PAIR.user_id}:{PAIR.character_id}:e1", entry_id="e1", pair=PAIR, beobachter="user",
        inhalt="x", themen=("a",), salienz=0.7, salienz_eingang=0.5, salienz_eingang_herkunft="gemessen",
        haeufigkeit=1, gedaechtnistyp="", dimension="", ei=Ei(), magnets=Magnets(), erstellt_am=utc_now(),
        turn_id="t", ttl_seconds=10,
    )  # fmt: skip


async def test_an_imported_modus_outside_the_canon_is_stored_empty_with_an_error_line(
    kzg: KzgMemory, rng: np.random.Generator, caplog: pytest.LogCaptureFixture, sink: InMemorySink
) -> None:
    stored = await kzg.store_entry(entry(0.5, embedding=unit_vector(rng), ei=Ei(modus="alltag")))
    rights = KzgRights(kzg)
    (exported,) = await _through_a_file(rights, PAIR)
    foreign = dataclasses.replace(exported, ei=dataclasses.replace(exported.ei, modus="Alltag"))
    await rights.erase(PAIR, None)
    caplog.set_level(logging.ERROR, logger="novaberg.kzg")

    await rights.import_pair(PAIR, [foreign], [], "")

    assert await _field(kzg, stored.kzg_key, "modus") == ""
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert "writer=kzg.import" in errors[0] and "field=modus" in errors[0] and "'Alltag'" in errors[0]
    assert stored.kzg_key in errors[0]
    await kzg.log.flush()
    kanon = [r for r in sink.records if r.art == "fehler" and r.inhalt["typ"] == "kanon"]
    assert [r.inhalt["message"] for r in kanon] == [f"writer=kzg.import field=modus value='Alltag' nicht im Kanon ({stored.kzg_key})"]


async def test_an_entry_exported_without_salienz_eingang_is_imported_without_and_reinforcement_skips_it(
    kzg: KzgMemory, rng: np.random.Generator, caplog: pytest.LogCaptureFixture
) -> None:
    legacy = await kzg.store_entry(entry(0.9, ("Garten",), embedding=unit_vector(rng)))
    await kzg.store.redis.hdel(legacy.kzg_key, "salienz_eingang")
    rights = KzgRights(kzg)
    (exported,) = await _through_a_file(rights, PAIR)
    assert exported.salienz_eingang is None  # the file's 0 is none, not a measured 0
    await rights.erase(PAIR, None)
    await rights.import_pair(PAIR, [exported], [], "")
    assert await _field(kzg, legacy.kzg_key, "salienz_eingang") is None
    salienz = await _field(kzg, legacy.kzg_key, "salienz")
    assert salienz is not None and float(salienz) == salienz_berechnen(0.9, 1)
    caplog.set_level(logging.ERROR, logger="novaberg.kzg")

    later = await kzg.store_entry(entry(0.5, ("Garten",), embedding=unit_vector(rng)))

    assert later.reinforced_count == 0
    assert await _field(kzg, legacy.kzg_key, "salienz") == salienz  # not 0.0347 from an input of 0
    assert await _field(kzg, legacy.kzg_key, "haeufigkeit") == "1"
    assert any(legacy.kzg_key in r.getMessage() and "salienz_eingang" in r.getMessage() for r in caplog.records)


async def test_an_import_refuses_a_salienz_eingang_outside_the_unit_interval(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    await kzg.store_entry(entry(0.5, embedding=unit_vector(rng)))
    rights = KzgRights(kzg)
    (exported,) = await _through_a_file(rights, PAIR)
    bad = dataclasses.replace(exported, salienz_eingang=1.5)
    with pytest.raises(InvalidArgument, match=r"entries\[0\]\.salienz_eingang"):
        await rights.import_pair(PAIR, [bad], [], "", check_empty=False, validate_only=True)
