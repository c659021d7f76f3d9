"""KZG pure rules with the spec's numbers (SPEC §4.2–§4.4, §4.1 canon, kzg §2a)."""

from __future__ import annotations

import math
import struct

import pytest

from novaberg_core.canon import Canon, default_canon, load_canon
from novaberg_core.embedding import clean_themen
from novaberg_core.errors import InvalidArgument
from services.kzg.domain import (
    KZG_SALIENZ_HIGH,
    KZG_SALIENZ_MID,
    KZG_SALIENZ_MINIMUM,
    KZG_TTL_HIGH_SEKUNDEN,
    KZG_TTL_LOW_SEKUNDEN,
    KZG_TTL_MID_SEKUNDEN,
    Tier,
    check_canon,
    check_pair,
    dedupe_entitaet_ids,
    gate_constant,
    normalise_theme,
    reinforce,
    salienz_berechnen,
    themen_norm,
    tier_for,
    ttl_seconds,
)
from services.kzg.store import escape_tag


def test_gate_constants_are_the_rounded_down_curve_images() -> None:
    assert (KZG_SALIENZ_MINIMUM, KZG_SALIENZ_MID, KZG_SALIENZ_HIGH) == (0.41951, 0.68302, 0.88078)
    # Rounded down, never to nearest: 0.3's exact image is 0.419518…, its gate just below it.
    assert salienz_berechnen(0.3, 1) > KZG_SALIENZ_MINIMUM
    assert salienz_berechnen(0.3, 1) - KZG_SALIENZ_MINIMUM < 1e-5
    assert gate_constant(0.7) == KZG_SALIENZ_HIGH


def test_a_score_of_exactly_the_raw_gate_passes() -> None:
    assert tier_for(salienz_berechnen(0.3, 1)) is Tier.MINIMUM
    assert tier_for(salienz_berechnen(0.5, 1)) is Tier.MID
    assert tier_for(salienz_berechnen(0.7, 1)) is Tier.HIGH
    assert tier_for(salienz_berechnen(0.2999, 1)) is None


@pytest.mark.parametrize(
    ("salienz_eingang", "haeufigkeit", "crosses_high"),
    [(0.5, 8, True), (0.5, 7, False), (0.3, 15, True), (0.3, 14, False)],
)
def test_reinforcements_needed_to_reach_high(salienz_eingang: float, haeufigkeit: int, crosses_high: bool) -> None:
    """kzg §8: with BOOST 0.03 a 0.5 reaches HIGH after seven reinforcements, a 0.3 after fourteen."""
    assert (salienz_berechnen(salienz_eingang, haeufigkeit) >= KZG_SALIENZ_HIGH) is crosses_high


def test_salience_formula_values_and_cap() -> None:
    assert salienz_berechnen(0.5, 1) == pytest.approx(math.sin(0.25 * math.pi) ** 1.1)
    assert salienz_berechnen(0.5, 3) == pytest.approx(math.sin(0.56 * math.pi / 2) ** 1.1)
    assert salienz_berechnen(0.9, 50) == 1.0  # anteil capped at 1.0
    assert salienz_berechnen(1.0, 1) == 1.0


def test_recomputation_is_bit_identical() -> None:
    for score in (0.3, 0.41, 0.5, 0.6133, 0.7, 0.99):
        for h in (1, 2, 8, 15, 110):
            first, second = salienz_berechnen(score, h), salienz_berechnen(score, h)
            assert struct.pack("<d", first) == struct.pack("<d", second)
            # The value survives the hash round trip (repr → float) bit for bit.
            assert struct.pack("<d", float(repr(first))) == struct.pack("<d", first)


def test_tiers_and_ttls() -> None:
    assert [ttl_seconds(t) for t in Tier] == [KZG_TTL_LOW_SEKUNDEN, KZG_TTL_MID_SEKUNDEN, KZG_TTL_HIGH_SEKUNDEN]
    assert (KZG_TTL_LOW_SEKUNDEN, KZG_TTL_MID_SEKUNDEN, KZG_TTL_HIGH_SEKUNDEN) == (604_800, 1_209_600, 2_592_000)
    assert tier_for(KZG_SALIENZ_MID) is Tier.MID
    assert tier_for(KZG_SALIENZ_MID - 1e-9) is Tier.MINIMUM


def test_reinforce_recomputes_from_the_stored_score() -> None:
    step = reinforce(0.5, 7)
    assert step.haeufigkeit == 8
    assert step.salienz == salienz_berechnen(0.5, 8)
    assert step.reaches_high and step.ttl_seconds == KZG_TTL_HIGH_SEKUNDEN
    step = reinforce(0.48, 1)  # 0.51 raw: the 14-day tier
    assert not step.reaches_high and step.ttl_seconds == KZG_TTL_MID_SEKUNDEN


def test_canon_empties_foreign_modus_and_drops_foreign_intentions() -> None:
    canon = Canon(modus=frozenset({"alltag"}), intentionen=frozenset({"planung", "anweisung"}))
    result = check_canon("Alltag", ["planung", "plaudern", "anweisung"], canon)
    assert result.modus == ""
    assert result.intentionen == ("planung", "anweisung")
    assert result.rejections == (("modus", "Alltag"), ("intentionen", "plaudern"))
    clean = check_canon("", ["planung"], canon)
    assert clean.modus == "" and clean.rejections == ()  # an empty modus is not an error
    assert check_canon("alltag", [], canon).modus == "alltag"


def test_shipped_canon_holds_the_values_the_seeds_name() -> None:
    canon = default_canon()
    assert "alltag" in canon.modus
    assert {"anweisung", "information_teilen", "planung", "feedback_geben", "widerspruch", "bestaetigung"} <= (
        canon.intentionen
    )
    assert load_canon() == canon


def test_themes_match_case_insensitively_after_trimming() -> None:
    assert normalise_theme("  Grüner Tee ") == "grüner tee"
    assert clean_themen([" Garten ", "", "  ", "Musik"]) == ["Garten", "Musik"]
    assert themen_norm(["Garten", "GARTEN ", "musik"]) == ["garten", "musik"]
    assert normalise_theme("Straße") == normalise_theme("STRASSE ")
    with pytest.raises(InvalidArgument, match=r"salience\.themen\[1\]"):
        clean_themen(["ok", "a|b"])


def test_entitaet_ids_keep_first_mention_order() -> None:
    assert dedupe_entitaet_ids([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert dedupe_entitaet_ids([]) == []


def test_pair_ids_are_checked() -> None:
    check_pair("anna-maria@example.org", "nova.v2")
    for user, character, field in (("", "nova", "user_id"), ("u", "", "character_id"), ("a:b", "c", "user_id"),
                                   (" u", "c", "user_id")):
        with pytest.raises(InvalidArgument, match=field):
            check_pair(user, character)


def test_tag_escaping_covers_the_characters_of_user_ids() -> None:
    assert escape_tag("anna-maria@example.org") == r"anna\-maria\@example\.org"
    assert escape_tag("grüner tee") == r"grüner\ tee"
