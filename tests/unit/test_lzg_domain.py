"""Spreading selection, memory block, usage selection and the cluster table (SPEC §5.6, §5.8, §5.9, §6)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from novaberg_core.clusters import (
    CLUSTER_ENRICHER_SPRUENGE,
    CLUSTER_GRAVITATION_FAKTOR,
    default_clusters,
)
from novaberg_core.errors import InvalidArgument
from services.lzg.render import render_memory_block
from services.lzg.spreading import (
    Erinnerung,
    NodeDetails,
    PfadSchritt,
    PoolItem,
    dedup_pool,
    sector_of,
    sektor_faktor,
    select_top,
)
from services.lzg.usage import select_used

WHEN = datetime(2024, 8, 13, 12, 22, tzinfo=UTC)


def _details(decay: float, emotion: str = "", inhalt: str = "x", beobachter: str = "user") -> NodeDetails:
    return NodeDetails(
        inhalt=inhalt,
        themen=(),
        entitaet_ids=(),
        emotion=emotion,
        erstellt_am=WHEN,
        gewicht_decay=decay,
        beobachter=beobachter,
    )


# --- clusters (SPEC §5.8 step 2, §6) ---------------------------------------------------------------


def test_cluster_table_has_thirteen_clusters_and_paradox() -> None:
    assert len(CLUSTER_ENRICHER_SPRUENGE) == 14
    assert set(CLUSTER_ENRICHER_SPRUENGE) == set(CLUSTER_GRAVITATION_FAKTOR)
    assert default_clusters().default_cluster == "paradox"
    hops = {h: sorted(c for c, v in CLUSTER_ENRICHER_SPRUENGE.items() if v == h) for h in range(4)}
    assert hops == {
        0: ["foyer", "schlachtfeld", "werkstatt"],
        1: ["beichte", "gewitter", "nebel", "paradox", "regen", "schmollen", "wartezimmer"],
        2: ["bier", "kissenschlacht"],
        3: ["feuerwerk", "glut"],
    }
    assert CLUSTER_GRAVITATION_FAKTOR["werkstatt"] == 0.05
    assert CLUSTER_GRAVITATION_FAKTOR["paradox"] == 0.10
    assert CLUSTER_GRAVITATION_FAKTOR["bier"] == 0.20
    assert CLUSTER_GRAVITATION_FAKTOR["kissenschlacht"] == 0.25
    assert CLUSTER_GRAVITATION_FAKTOR["glut"] == CLUSTER_GRAVITATION_FAKTOR["feuerwerk"] == 0.30


def test_cluster_lookup_ignores_case_and_refuses_unknown_names() -> None:
    table = default_clusters()
    assert table.enricher_spruenge(" Glut ") == 3
    with pytest.raises(InvalidArgument, match=r"unknown cluster 'disco'; known: werkstatt, foyer"):
        table.enricher_spruenge("disco")
    with pytest.raises(InvalidArgument, match="unknown cluster ''"):
        table.gravitation_faktor("")


# --- sector factor (SPEC §5.8 step 5) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "faktor"),
    [
        ("freude", "freude", 1.0),
        ("freude", "vertrauen", 0.9),
        ("freude", "erwartung", 0.9),  # the shorter way round
        ("freude", "angst", 0.8),
        ("freude", "wut", 0.8),
        ("freude", "ueberraschung", 0.7),
        ("freude", "traurigkeit", 0.6),  # opposite
        ("Überraschung", "ueberraschung", 1.0),
        ("neutral", "wut", 1.0),
        ("freude", "", 1.0),
        ("freude", "langeweile", 1.0),
    ],
)
def test_sector_factor_by_wheel_distance(a: str, b: str, faktor: float) -> None:
    assert sektor_faktor(a, b) == faktor


def test_sector_of_unknown_is_none() -> None:
    assert sector_of("neutral") is None
    assert sector_of("WUT") == "wut"


# --- pool: dedup by smallest shell, sort, top 3 ---------------------------------------------------


def test_dedup_keeps_the_smallest_shell() -> None:
    anchor = PoolItem(1, 0, _details(2.0))
    again = PoolItem(
        1, 2, _details(2.0), predecessor=5, pfad=(PfadSchritt(5, 9, ("themen",), (), ("a",)),) * 2
    )
    assert dedup_pool([again, anchor]) == [anchor]


def test_select_top_orders_by_sort_weight_with_shell_and_sector_factors() -> None:
    pool = [
        PoolItem(10, 0, _details(3.0, "traurigkeit")),  # 3.0 × 1.0 × 0.6 = 1.8
        PoolItem(11, 1, _details(4.0, "freude")),  # 4.0 × 0.75 × 1.0 = 3.0
        PoolItem(12, 2, _details(5.0, "vertrauen")),  # 5.0 × 0.5 × 0.9 = 2.25
        PoolItem(13, 3, _details(6.0, "")),  # 6.0 × 0.25 × 1.0 = 1.5
        PoolItem(11, 2, _details(4.0, "freude")),  # duplicate at a larger shell: dropped
    ]
    top = select_top(pool, "freude")
    assert [(e.rang, e.knoten_id) for e in top] == [(1, 11), (2, 12), (3, 10)]
    assert [e.sortier_gewicht for e in top] == pytest.approx([3.0, 2.25, 1.8])
    assert top[0].schale == 1


# --- memory block (SPEC §5.9, syn §8.4.4) ----------------------------------------------------------


def _seed_resonanz() -> list[Erinnerung]:
    anker = Erinnerung(
        1, 247, 0, 5.40, _details(5.4, "freude", "Anna hat mir damals immer Schokolade gegeben"), ()
    )
    schwester = Erinnerung(
        2,
        89,
        1,
        3.18,
        _details(4.7, "vertrauen", "Anna ist meine Schwester"),
        (PfadSchritt(247, 1543, ("entitaet", "themen"), (12,), ("Anna",)),),
    )
    schokolade = Erinnerung(
        3,
        412,
        1,
        2.81,
        _details(3.9, "freude", "Ich liebe ja Schokolade"),
        (PfadSchritt(247, 1622, ("themen",), (), ("Schokolade",)),),
    )
    return [anker, schwester, schokolade]


def test_analysis_block_reproduces_the_seed_example() -> None:
    text = render_memory_block(_seed_resonanz(), "analysis", {12: "Anna", 47: "Schokolade"})
    assert text == "\n".join(
        [
            "Drei Erinnerungen sind Nova gerade da. Die am wenigsten praesente zuerst, die staerkste am Ende.",
            "----- Erinnerung 1 -----",
            '"Ich liebe ja Schokolade"',
            "Sprecher: Nutzer",
            "Nova fuehlt dazu: Freude",
            "Sie ist Nova eingefallen ueber: gemeinsames Thema Schokolade",
            "----- Erinnerung 2 -----",
            '"Anna ist meine Schwester"',
            "Sprecher: Nutzer",
            "Nova fuehlt dazu: Vertrauen",
            "Sie ist Nova eingefallen ueber: gemeinsame Entitaet Anna, gemeinsames Thema Anna",
            "----- Erinnerung 3 -----",
            '"Anna hat mir damals immer Schokolade gegeben"',
            "Sprecher: Nutzer",
            "Nova fuehlt dazu: Freude",
            "Sie kam Nova direkt zur Frage in den Sinn",
        ]
    )
    for internal in ("5.4", "3.18", "247", "1543", "Schale"):
        assert internal not in text


def test_composer_block_names_person_a_and_b_and_paths_show_every_step() -> None:
    deep = Erinnerung(
        1,
        7,
        2,
        1.0,
        _details(2.0, "", "Wir waren am See", beobachter="assistant"),
        (
            PfadSchritt(1, 11, ("entitaet",), (12, 99), ()),
            PfadSchritt(3, 12, ("themen", "timeline"), (), ("Geburtstag", "Sommer")),
        ),
    )
    user_memory = Erinnerung(2, 8, 0, 0.5, _details(1.0, "wut", "Lass mich"), ())
    text = render_memory_block([deep, user_memory], "composer", {12: "Anna"}, user_name="Ben")
    assert "Person A" in text and "Ben" not in text and "Nova" not in text
    assert "Sprecher: Person A" in text  # assistant → the character
    assert "Sprecher: Person B" in text  # user → the user
    assert (
        "Sie ist Person A eingefallen ueber: gemeinsame Entitaet Anna → "
        "gemeinsame Themen Geburtstag, Sommer, zeitliche Naehe"
    ) in text
    assert text.index('"Lass mich"') < text.index('"Wir waren am See"')  # weakest first
    assert "fuehlt dazu" in text.split("----- Erinnerung 2 -----")[0]  # wut shown for the first one


def test_analysis_names_can_be_set_and_unknown_reader_is_an_error() -> None:
    one = [Erinnerung(1, 1, 0, 1.0, _details(1.0, "angst", "Hallo", beobachter="assistant"), ())]
    text = render_memory_block(one, "analysis", {}, user_name="Ben", character_name="Mira")
    assert text.startswith("Eine Erinnerung ist Mira gerade da.")
    assert "Sprecher: Mira" in text and "Mira fuehlt dazu: Angst" in text
    with pytest.raises(InvalidArgument, match="unknown reader 'poet'; known: analysis, composer"):
        render_memory_block(one, "poet", {})
    assert render_memory_block([], "analysis", {}) == ""


# --- usage selection (SPEC §5.6) ------------------------------------------------------------------


def test_usage_selects_best_first_within_the_cap() -> None:
    selection = select_used({1: 0.60, 2: 0.70, 3: 0.56, 4: 0.58, 5: 0.20}, schwelle=0.55, deckel=3)
    assert selection.verwendet == (2, 1, 4)
    assert selection.knappster_verworfener == (3, 0.56)  # over the cap
    assert [k for k, _ in selection.naehen_alle] == [2, 1, 4, 3, 5]


def test_usage_below_threshold_reports_the_closest_rejected() -> None:
    selection = select_used({1: 0.24, 2: 0.29, 3: 0.15}, schwelle=0.55)
    assert selection.verwendet == ()
    assert selection.knappster_verworfener == (2, 0.29)
    assert select_used({}, 0.55).knappster_verworfener is None
