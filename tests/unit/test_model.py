"""The shared model (issue 15): one conversion to and from proto per type, the checks of the contract."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg_core.embedding.guard import ModelStamp
from novaberg_core.errors import InvalidArgument
from novaberg_core.model import (
    DEFAULT_ZONE,
    EI_FIELDS,
    EI_SCALARS,
    Beobachter,
    Ei,
    KzgEntry,
    Magnets,
    Pair,
    Profile,
    PromotionOutcome,
    check_unit_interval,
    check_vector,
    model_info,
    model_stamp,
    time_zone,
)


def test_a_perspective_round_trips_and_unspecified_is_refused_for_writes() -> None:
    for name in Beobachter:
        assert Beobachter.from_proto(name.to_proto()) is name
    assert Beobachter.from_proto(common_pb2.BEOBACHTER_ASSISTANT) == "assistant"
    with pytest.raises(InvalidArgument, match=r"turn\.beobachter must be BEOBACHTER_USER or BEOBACHTER_ASSISTANT, got 0"):
        Beobachter.from_proto(common_pb2.BEOBACHTER_UNSPECIFIED, "turn.beobachter")
    with pytest.raises(InvalidArgument, match="got 7"):
        Beobachter.from_proto(7)


def test_a_read_filter_takes_unspecified_as_both_perspectives() -> None:
    assert Beobachter.filter_from_proto(common_pb2.BEOBACHTER_UNSPECIFIED) is None
    assert Beobachter.filter_from_proto(common_pb2.BEOBACHTER_USER) is Beobachter.USER
    with pytest.raises(InvalidArgument):
        Beobachter.filter_from_proto(9)


def test_a_stored_perspective_name_is_checked() -> None:
    assert Beobachter.of_name("user") is Beobachter.USER
    with pytest.raises(InvalidArgument, match=r"row\.beobachter must be one of user, assistant, got 'nova'"):
        Beobachter.of_name("nova", "row.beobachter")


def test_a_pair_is_checked_by_the_shared_rule_naming_the_field() -> None:
    pair = Pair.from_proto(common_pb2.Pair(user_id="u,1", character_id="nova"))
    assert pair == Pair("u,1", "nova") and pair.to_proto() == common_pb2.Pair(user_id="u,1", character_id="nova")
    with pytest.raises(InvalidArgument, match=r"request\.pair\.character_id must not be empty"):
        Pair.from_proto(common_pb2.Pair(user_id="u1"), "request.pair")
    with pytest.raises(InvalidArgument, match=r"pair\.user_id"):
        Pair("u:1", "nova").check()


def test_the_ei_fields_round_trip_through_proto_and_a_row() -> None:
    ei = Ei("freude", "spiel", 0.7, "[0.1]", "locker", "nah", "warm", ("fragen", "teilen"))
    assert EI_FIELDS == tuple(common_pb2.EiFields.DESCRIPTOR.fields_by_name)
    assert Ei.from_proto(ei.to_proto()) == ei
    row = ei.as_dict()
    assert row["intentionen"] == ["fragen", "teilen"]
    assert Ei.from_row(row) == ei
    assert Ei.from_row({**row, "intentionen": None}).intentionen == ()


def test_magnets_keep_an_absent_timeline_apart_from_timeline_zero() -> None:
    none = Magnets.from_proto(common_pb2.Magnets(entitaet_ids=[3, 1]))
    assert none == Magnets((3, 1), None) and not none.to_proto().HasField("timeline_id")
    zero = Magnets.of([3], 0)
    assert zero.to_proto().HasField("timeline_id") and Magnets.from_proto(zero.to_proto()) == zero


def test_magnets_name_registry_rows_by_positive_ids() -> None:
    assert Magnets.of([3, 1], 7).check() == Magnets((3, 1), 7)
    assert Magnets().check("entry.magnets") == Magnets()
    with pytest.raises(InvalidArgument, match=r"^entry\.magnets\.timeline_id must be a positive id, got 0$"):
        Magnets.of([3], 0).check("entry.magnets")
    with pytest.raises(InvalidArgument, match=r"^magnets\.entitaet_ids must be positive ids, got \[3, -1\]$"):
        Magnets.of([3, -1], None).check()


def test_a_vector_has_the_models_dimension_and_finite_values_in_one_wording() -> None:
    vector = check_vector([1.0, 0.5, 0.0], 3, "query_vector", "m-3")
    assert vector.dtype == np.float32 and vector.tolist() == [1.0, 0.5, 0.0]
    with pytest.raises(InvalidArgument, match=r"^query_vector has 2 values; the embedding model m-3 needs 3$"):
        check_vector([1.0, 0.5], 3, "query_vector", "m-3")
    with pytest.raises(InvalidArgument, match=r"^goals\[0\]\.embedding has 2 values; the embedding model needs 3$"):
        check_vector([1.0, 0.5], 3, "goals[0].embedding")
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(InvalidArgument, match=r"^embedding holds a value that is not finite$"):
            check_vector(np.array([1.0, bad, 0.0], dtype=np.float32), 3, "embedding")


def test_the_scalar_ei_fields_are_the_eight_but_the_list() -> None:
    assert EI_SCALARS == tuple(name for name in EI_FIELDS if name != "intentionen")
    assert len(EI_SCALARS) == 7


def test_a_model_stamp_round_trips_through_its_get_model_answer() -> None:
    stamp = ModelStamp("m-8", 8, "texts-v2")
    info = model_info(stamp)
    assert (info.model_id, info.dimension, info.recipe) == ("m-8", 8, "texts-v2")
    assert model_stamp(info) == stamp


def test_lenient_perspective_conversions_leave_the_refusal_to_the_use_case() -> None:
    assert Beobachter.name_of_proto(common_pb2.BEOBACHTER_USER) == "user"
    assert Beobachter.name_of_proto(common_pb2.BEOBACHTER_UNSPECIFIED) == ""
    assert Beobachter.name_of_proto(7, "<7>") == "<7>"
    assert Beobachter.proto_of_name("assistant") == common_pb2.BEOBACHTER_ASSISTANT
    assert Beobachter.proto_of_name("nova") == common_pb2.BEOBACHTER_UNSPECIFIED


def test_a_pair_of_a_message_is_unchecked_until_asked() -> None:
    message = common_pb2.Pair(user_id="anna", character_id="")
    assert Pair.of_proto(message) == Pair("anna", "")
    with pytest.raises(InvalidArgument):
        Pair.from_proto(message)


def test_a_pair_of_a_store_row_is_its_two_id_columns() -> None:
    row = {"id": 7, "user_id": "anna", "character_id": "nova", "name": "Anna"}
    assert Pair.of_row(row) == Pair("anna", "nova")


def test_a_score_is_a_finite_number_within_0_to_1() -> None:
    for good in (0.0, 0.5, 1.0):
        check_unit_interval("ei.arousal", good)
    for bad in (-0.1, 1.5, float("nan"), float("inf")):
        with pytest.raises(InvalidArgument, match=r"^ei\.arousal must be a number within 0\.\.1, got "):
            check_unit_interval("ei.arousal", bad)


def test_a_promotion_outcome_round_trips_and_keeps_its_stored_name() -> None:
    for outcome in PromotionOutcome:
        assert PromotionOutcome.from_proto(outcome.to_proto()) is outcome
    assert PromotionOutcome.from_proto(common_pb2.PROMOTION_OUTCOME_DUPLICATE) == "dublette"
    with pytest.raises(InvalidArgument, match="outcome 0 is not a promotion outcome"):
        PromotionOutcome.from_proto(common_pb2.PROMOTION_OUTCOME_UNSPECIFIED)


def test_a_profile_takes_the_fields_given_and_keeps_the_others() -> None:
    stored = Profile(user_name="Maria", character_name="Nova", sprache="en")
    assert stored.merged(common_pb2.PairProfile(user_name=" Mia ")) == Profile("Mia", "Nova", "en")
    assert Profile.from_proto(common_pb2.PairProfile(character_name="Luna")) == Profile("Nutzer", "Luna", "de")
    assert stored.speaker(common_pb2.BEOBACHTER_USER) == "Maria" and stored.speaker(common_pb2.BEOBACHTER_ASSISTANT) == "Nova"
    with pytest.raises(InvalidArgument, match=r"profiles\[0\]\.sprache must be one of de, en or empty, got 'tr'"):
        Profile.from_proto(common_pb2.PairProfile(sprache="tr"), "profiles[0]")


def test_a_profile_names_its_time_zone_from_the_zone_database_only() -> None:
    assert Profile().zeitzone == DEFAULT_ZONE == "UTC" and Profile().zone == ZoneInfo("UTC")
    berlin = Profile().merged(common_pb2.PairProfile(zeitzone=" Europe/Berlin "))
    assert berlin.zone == ZoneInfo("Europe/Berlin")
    assert berlin.merged(common_pb2.PairProfile(user_name="Mia")).zeitzone == "Europe/Berlin"  # empty keeps it
    assert time_zone("America/Los_Angeles").key == "America/Los_Angeles"
    # Only names the database lists: no directory, data file or path of the zone database is opened.
    for name in ("Mars/Base", "utc", "Europe", "zone.tab", "../../etc/passwd", "/etc/localtime", "Europe/Berlin\x00"):
        with pytest.raises(InvalidArgument, match="is no IANA time zone"):
            time_zone(name)
    with pytest.raises(InvalidArgument, match=r"^profile\.zeitzone: 'Mars/Base' is no IANA time zone"):
        Profile.from_proto(common_pb2.PairProfile(zeitzone="Mars/Base"))


def test_a_stored_profile_round_trips_and_an_unreadable_one_is_none() -> None:
    profile = Profile(user_name="Jörg Ä.", character_name="Nova", sprache="en")
    assert Profile.from_json(profile.to_json()) == profile and "Jörg" in profile.to_json()
    assert Profile.from_proto(profile.to_proto()) == profile
    assert Profile.from_json(None) is None and Profile.from_json("{kaputt") is None and Profile.from_json("[1]") is None
    assert Profile.from_json('{"sprache": "xx"}') == Profile()  # an unknown stored language reads as the default
    berlin = Profile(zeitzone="Europe/Berlin")
    assert Profile.from_json(berlin.to_json()) == berlin and Profile.from_proto(berlin.to_proto()) == berlin
    assert Profile.from_json('{"zeitzone": "Mars/Base"}') == Profile()  # a zone the database lacks reads as UTC


def _kzg_entry() -> KzgEntry:
    return KzgEntry(
        kzg_key="kzg:u:c:e1", entry_id="e1", pair=Pair("u", "c"), beobachter="assistant", inhalt="Anna kocht",
        themen=("kochen",), salienz=0.7, salienz_eingang=0.6, salienz_eingang_herkunft="gemessen", haeufigkeit=3,
        gedaechtnistyp="episodisch", dimension="alltag", ei=Ei(emotion="freude", arousal=0.4, intentionen=("teilen",)),
        magnets=Magnets((4, 2), 9), erstellt_am=datetime(2026, 4, 20, 9, 0, 1, 500, tzinfo=UTC), turn_id="t1",
        ttl_seconds=600, embedding=np.array([0.6, 0.8], dtype=np.float32), sprecher="Nova", sprache="de",
        ablauf_am=datetime(2026, 4, 27, 9, tzinfo=UTC), traceparent="00-ab-cd-01", antwort_auf="Was kochst du?",
    )  # fmt: skip


def test_a_kzg_entry_round_trips_through_its_message_but_the_queue_state() -> None:
    entry = _kzg_entry()
    back = KzgEntry.from_proto(entry.to_proto())
    assert back.embedding is not None and back.embedding.tolist() == pytest.approx([0.6, 0.8])
    assert replace(back, embedding=None) == replace(entry, embedding=None)
    queued = replace(entry, promotion_queued=True)
    assert KzgEntry.from_proto(queued.to_proto()).promotion_queued is False  # the export's message carries it


def test_a_kzg_entry_message_reads_zero_and_unset_as_none_where_the_field_is_optional() -> None:
    entry = replace(_kzg_entry(), salienz_eingang=None, ablauf_am=None, embedding=None)
    message = entry.to_proto()
    assert not message.HasField("ablauf_am") and message.salienz_eingang == 0.0 and not message.embedding
    assert KzgEntry.from_proto(message) == entry
    message.entry_id = ""  # a file written before the id was carried: the key's last part
    assert KzgEntry.from_proto(message).entry_id == "e1"


def test_a_kzg_entry_without_its_creation_time_is_refused_naming_the_field() -> None:
    message = _kzg_entry().to_proto()
    message.ClearField("erstellt_am")
    with pytest.raises(InvalidArgument, match=r"^entries\[3\]\.erstellt_am must be set$"):
        KzgEntry.from_proto(message, "entries[3]")


def test_a_brief_kzg_entry_carries_what_a_recall_item_needs_only() -> None:
    brief = _kzg_entry().brief_proto()
    assert {f.name for f, _ in brief.ListFields()} == {
        "kzg_key", "entry_id", "pair", "beobachter", "inhalt", "turn_id", "ttl_seconds", "sprecher", "sprache",
        "antwort_auf", "erstellt_am", "ablauf_am",
    }  # fmt: skip
    assert brief.beobachter == common_pb2.BEOBACHTER_ASSISTANT and brief.erstellt_am.nanos == 500_000


def test_a_kzg_entry_is_checked_by_the_rules_every_reader_holds_it_to_naming_the_field() -> None:
    entry = _kzg_entry()
    assert entry.check() is entry
    bad: list[tuple[dict[str, Any], str]] = [
        (dict(beobachter="narrator"), r"^entries\[1\]\.beobachter must be one of user, assistant"),
        (dict(inhalt=" \n"), r"^entries\[1\]\.inhalt must not be empty$"),
        (dict(salienz=float("nan")), r"^entries\[1\]\.salienz must be a number within 0\.\.1, got nan$"),
        (dict(salienz=1.01), r"^entries\[1\]\.salienz must be a number within 0\.\.1, got 1\.01$"),
        (dict(magnets=Magnets((3, 0))), r"^entries\[1\]\.magnets\.entitaet_ids must be positive ids"),
    ]
    for change, message in bad:
        with pytest.raises(InvalidArgument, match=message):
            replace(entry, **change).check("entries[1]")
