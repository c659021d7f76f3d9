"""LZG weight and layer formulas against the seeds' worked numbers (SPEC §5.2, §5.4, §5.7; syn §4.1, §5.3, §7.5)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from services.lzg.edges import pair_weights
from services.lzg.layers import (
    LZG_TIMELINE_TOLERANZ,
    Compared,
    Praezision,
    Schicht,
    TimelineRef,
    layers_between,
    shared_themes,
    themen_tiefe,
    timeline_distance,
    timeline_tiefe,
)
from services.lzg.weights import (
    damp,
    damp_array,
    days_until,
    decayed,
    edge_raw,
    edge_raw_array,
    half_reactivation_decay,
    node_weights_at_creation,
    reinforced_weights,
)

NOMIC_EMBEDDING_LAYER = 0.55
T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def _tag(moment: datetime) -> TimelineRef:
    return TimelineRef(moment, Praezision.TAG)


# --- node weights (SPEC §5.2, syn §4.1) ------------------------------------------------------


@pytest.mark.parametrize(("roh", "absolut"), [(0.673, 3.248), (0.900, 3.754), (1.000, 3.955)])
def test_node_weight_at_creation_matches_seed_table(roh: float, absolut: float) -> None:
    weights = node_weights_at_creation(roh)
    assert weights.gewicht_roh == roh
    assert round(weights.gewicht_absolut, 3) == absolut
    assert weights.gewicht_decay == weights.gewicht_absolut


def test_damp_caps_at_ten_and_is_zero_for_nothing() -> None:
    assert damp(10.0) == 10.0
    assert damp(12.5) == 10.0  # gewicht_roh grows freely beyond the cap (syn §4.1)
    assert damp(0.0) == 0.0
    assert damp(-1.0) == 0.0
    xs = np.linspace(0.0, 13.0, 1001)
    assert np.allclose(damp_array(xs), [damp(x) for x in xs], rtol=0, atol=1e-12)


def test_reinforcement_adds_boost_to_roh_and_redamps() -> None:
    weights = reinforced_weights(0.9)
    assert weights.gewicht_roh == pytest.approx(1.0)
    assert weights.gewicht_absolut == damp(0.9 + 0.1)
    assert weights.gewicht_decay == weights.gewicht_absolut


# --- edge geometry (syn §5.3 tables) -----------------------------------------------------------

ASCENDING_B10 = [4.44, 5.00, 5.55, 6.11, 6.66, 7.22, 7.78, 8.33, 8.89, 9.44]
DESCENDING_B10 = [7.03, 7.33, 7.62, 7.92, 8.22, 8.51, 8.81, 9.11, 9.41, 9.70]


@pytest.mark.parametrize("a", range(10))
def test_generic_sinus_geometry_reproduces_value_tables(a: int) -> None:
    up, down = edge_raw(float(a), 10.0, faktor=1.0, tiefe=1.0, n=1)
    # the tables are printed to two decimals (A=5 falling: exactly 8.515, printed 8.51)
    assert abs(up - ASCENDING_B10[a]) <= 0.005 + 1e-12
    assert abs(down - DESCENDING_B10[a]) <= 0.005 + 1e-12
    # the direction follows the strengths, not the argument order
    assert edge_raw(10.0, float(a), 1.0, 1.0, 1) == (down, up)


def test_equal_anchors_collapse_the_asymmetry() -> None:
    assert edge_raw(4.0, 4.0, 1.0, 1.0, 1) == (4.0, 4.0)


def test_bonus_lifts_both_anchors_per_extra_layer() -> None:
    # four layers: +0.3 on both anchors; tiefe 0 collapses both edges onto the weaker anchor
    assert edge_raw(2.0, 6.0, 1.0, 0.0, 4) == pytest.approx((2.3, 2.3))


def test_vectorised_edges_equal_scalar_edges() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.uniform(0, 10, 500), rng.uniform(0, 10, 500)
    f = rng.choice([0.4, 0.5, 0.8, 1.0], 500)
    t, n = rng.uniform(0, 1, 500), rng.integers(1, 5, 500)
    ab, ba = edge_raw_array(a, b, f, t, n)
    for i in range(500):
        assert (ab[i], ba[i]) == edge_raw(float(a[i]), float(b[i]), float(f[i]), float(t[i]), int(n[i]))


# --- worked examples of syn §7.5 ----------------------------------------------------------------


def test_example_1_timeline_only() -> None:
    layers = layers_between(
        Compared([], [], _tag(T0)), Compared([], [], _tag(T0 + timedelta(days=4))), 0.1, NOMIC_EMBEDDING_LAYER
    )
    assert layers is not None
    assert layers.gruende == (Schicht.TIMELINE,)
    assert layers.faktor == 0.4
    assert round(layers.tiefe, 3) == 0.810
    assert layers.timeline_naehe_tage == 4
    ab, ba = edge_raw(0.7, 5.0, layers.faktor, round(layers.tiefe, 3), layers.anzahl)
    assert (round(ab, 3), round(ba, 3)) == (0.899, 1.259)
    exact_ab, exact_ba = edge_raw(0.7, 5.0, layers.faktor, layers.tiefe, layers.anzahl)
    assert (round(exact_ab, 3), round(exact_ba, 3)) == (0.898, 1.259)


def test_example_2_timeline_and_embedding() -> None:
    layers = layers_between(
        Compared([], [], _tag(T0)),
        Compared([], [], _tag(T0 + timedelta(days=4))),
        0.90,
        NOMIC_EMBEDDING_LAYER,
    )
    assert layers is not None
    assert layers.gruende == (Schicht.EMBEDDING, Schicht.TIMELINE)
    assert round(layers.tiefe, 3) == 0.778
    ab, ba = edge_raw(0.7, 5.0, layers.faktor, layers.tiefe, layers.anzahl)
    assert (round(ab, 3), round(ba, 3)) == (1.848, 2.541)


def test_example_3_shared_entity() -> None:
    layers = layers_between(
        Compared([], [12, 47], None), Compared([], [12], None), 0.2, NOMIC_EMBEDDING_LAYER
    )
    assert layers is not None
    assert layers.gruende == (Schicht.ENTITAET,)
    assert layers.geteilte_entitaet_ids == (12,)
    ab, ba = edge_raw(0.7, 5.0, layers.faktor, layers.tiefe, layers.anzahl)
    assert (round(ab, 3), round(ba, 3)) == (2.609, 3.723)


def test_layers_between_two_nodes_keep_the_older_nodes_theme_order() -> None:
    # Triggers 1 and 3 compare two nodes through layers_between: every layer but the themes' order
    # is the same whichever node comes first; the stored shared themes follow the older node.
    older = Compared(["Kindheit", "Anna"], [47, 12], _tag(T0))
    newer = Compared(["Anna", "Kindheit", "Schokolade"], [12], _tag(T0 + timedelta(days=4)))
    layers = layers_between(older, newer, 0.9, NOMIC_EMBEDDING_LAYER)
    assert layers is not None
    assert layers.gruende == (Schicht.ENTITAET, Schicht.EMBEDDING, Schicht.THEMEN, Schicht.TIMELINE)
    assert layers.geteilte_entitaet_ids == (12,)
    assert layers.geteilte_themen == ("Kindheit", "Anna")
    assert layers.timeline_naehe_tage == 4 and layers.embedding_cosine == 0.9
    swapped = layers_between(newer, older, 0.9, NOMIC_EMBEDDING_LAYER)
    assert swapped is not None and swapped.geteilte_themen == ("Anna", "Kindheit")
    assert (swapped.gruende, swapped.tiefe, swapped.geteilte_entitaet_ids, swapped.timeline_naehe_tage) == (
        layers.gruende, layers.tiefe, layers.geteilte_entitaet_ids, layers.timeline_naehe_tage,
    )  # fmt: skip
    assert layers_between(older, Compared([], [], None), 0.1, NOMIC_EMBEDDING_LAYER) is None


def test_no_layer_means_no_edge() -> None:
    assert (
        layers_between(
            Compared(["Anna"], [1], _tag(T0)),
            Compared(["Berlin"], [2], _tag(T0 + timedelta(days=22))),
            0.55,  # equal to the threshold: the layer needs to exceed it
            NOMIC_EMBEDDING_LAYER,
        )
        is None
    )


def test_pair_weights_damp_the_raw_edge() -> None:
    w = pair_weights([0.7], [5.0], [1.0], [1.0], [1])
    assert w.roh_ab[0] == pytest.approx(2.6092)
    assert w.abs_ab[0] == pytest.approx(damp(w.roh_ab[0]), abs=1e-12)
    assert w.abs_ba[0] == pytest.approx(damp(w.roh_ba[0]), abs=1e-12)


# --- themes: max(), folding, spelling -----------------------------------------------------------


def test_themes_depth_divides_by_the_wider_node() -> None:
    wide = [f"t{i}" for i in range(10)]
    narrow = ["t3"]
    layers = layers_between(Compared(wide, [], None), Compared(narrow, [], None), 0.0, NOMIC_EMBEDDING_LAYER)
    assert layers is not None and layers.gruende == (Schicht.THEMEN,)
    assert layers.tiefe == pytest.approx(0.1)  # max(10, 1), not min → 1.0
    assert themen_tiefe(2, 3, 5) == pytest.approx(0.4)


def test_themes_match_exactly_once_each_in_the_older_order() -> None:
    # exact match, like the seed's array overlap; spelling variants differ until normalisation (syn §7.8)
    assert shared_themes(["Anna", "Schokolade", "Anna", "Kindheit"], ["Kindheit", "schokolade", "Anna"]) == (
        "Anna",
        "Kindheit",
    )
    assert shared_themes(["Geburtstag"], ["Annas Geburtstag"]) == ()


# --- timeline: all seven tolerances, precision equality -----------------------------------------

UNIT_STEP = {
    Praezision.MINUTE: timedelta(days=1),
    Praezision.STUNDE: timedelta(days=1),
    Praezision.TAG: timedelta(days=1),
    Praezision.WOCHE: timedelta(weeks=1),
}


@pytest.mark.parametrize("praezision", list(Praezision))
def test_every_precision_has_its_tolerance(praezision: Praezision) -> None:
    tolerance = LZG_TIMELINE_TOLERANZ[praezision]
    base = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)  # a Monday at the start of a quarter

    def shifted(units: int) -> datetime:
        if praezision in UNIT_STEP:
            return base + UNIT_STEP[praezision] * units
        months = {Praezision.MONAT: 1, Praezision.QUARTAL: 3, Praezision.JAHR: 12}[praezision] * units
        return base.replace(
            year=base.year + (base.month - 1 + months) // 12, month=(base.month - 1 + months) % 12 + 1
        )

    a = TimelineRef(base, praezision)
    assert timeline_tiefe(a, TimelineRef(base, praezision)) == 1.0
    assert timeline_distance(base, shifted(1), praezision) == 1.0
    at_edge = timeline_tiefe(a, TimelineRef(shifted(tolerance), praezision))
    assert at_edge == 0.0  # still fires at the tolerance, with depth 0 (syn §7.6.3)
    assert timeline_tiefe(a, TimelineRef(shifted(tolerance + 1), praezision)) is None
    inside = timeline_tiefe(a, TimelineRef(shifted(tolerance - 1), praezision))
    assert inside == pytest.approx(1 / tolerance)


def test_expected_tolerances() -> None:
    assert {p.value: t for p, t in LZG_TIMELINE_TOLERANZ.items()} == {
        "minute": 7,
        "stunde": 7,
        "tag": 21,
        "woche": 8,
        "monat": 6,
        "quartal": 4,
        "jahr": 2,
    }


@pytest.mark.parametrize("other", [p for p in Praezision if p is not Praezision.TAG])
def test_differing_precisions_never_connect(other: Praezision) -> None:
    assert timeline_tiefe(TimelineRef(T0, Praezision.TAG), TimelineRef(T0, other)) is None


def test_sub_day_precisions_measure_fractional_days() -> None:
    a = TimelineRef(T0, Praezision.MINUTE)
    b = TimelineRef(T0 + timedelta(hours=36), Praezision.MINUTE)
    assert timeline_tiefe(a, b) == pytest.approx((7 - 1.5) / 7)


def test_calendar_units_ignore_the_day_inside_the_unit() -> None:
    jan31 = datetime(2026, 1, 31, tzinfo=UTC)
    feb1 = datetime(2026, 2, 1, tzinfo=UTC)
    assert timeline_distance(jan31, feb1, Praezision.MONAT) == 1.0
    assert (
        timeline_distance(
            datetime(2026, 3, 31, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC), Praezision.QUARTAL
        )
        == 1
    )
    assert (
        timeline_distance(
            datetime(2025, 12, 31, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC), Praezision.JAHR
        )
        == 1
    )
    # Sunday → Monday crosses an ISO week
    assert (
        timeline_distance(
            datetime(2026, 1, 4, tzinfo=UTC), datetime(2026, 1, 5, tzinfo=UTC), Praezision.WOCHE
        )
        == 1
    )


# --- decay and half value (SPEC §5.7, syn §4.1, §9.3) --------------------------------------------

YEAR = 365.25


def test_decay_durations_of_the_seed() -> None:
    assert round(days_until(3.25, 1.0) / YEAR, 1) == 2.2
    assert round(days_until(3.25, 0.1) / YEAR, 1) == 6.4
    assert round(days_until(10.0, 0.1) / YEAR, 1) == 8.4
    assert round(days_until(3.96, 1.0) / YEAR, 1) == 2.5
    assert round(days_until(10.0, 1.0) / YEAR, 1) == 4.2


def test_daily_incremental_decay_reaches_the_rest_threshold_after_six_point_four_years() -> None:
    value, days = 3.25, 0
    while value >= 0.1:
        value = decayed(value, 1.0)
        days += 1
    assert round(days / YEAR, 1) == 6.4
    # the incremental form composes: daily steps equal one long step
    assert decayed(3.25, days) == pytest.approx(value, rel=1e-12)


def test_decay_of_zero_or_negative_elapsed_time_changes_nothing() -> None:
    assert decayed(2.0, 0.0) == 2.0
    assert decayed(2.0, -3.0) == 2.0


def test_half_reactivation_holds_across_the_next_decay() -> None:
    half = half_reactivation_decay(4.0)
    assert half == pytest.approx(2.05)
    next_day = decayed(half, 1.0)
    assert next_day == pytest.approx(2.05 * math.exp(-0.0015))
    # the seed's defect would recompute from gewicht_absolut and give ≈ 3.99
    assert next_day < 2.05
