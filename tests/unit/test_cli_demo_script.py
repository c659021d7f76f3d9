"""The shipped demo conversation (``make run``) is well-formed against the canon and the cluster
table, and spans what the demo has to show: weeks of turns, promotable turns, questions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.canon import default_canon
from novaberg_core.clusters import default_clusters
from novaberg_dev.demo import (
    DEFAULT_DEMO_PATH,
    ScriptError,
    describe_path,
    format_protokoll,
    load_script,
    simulated_start,
)

PLUTCHIK = {"freude", "vertrauen", "angst", "ueberraschung", "traurigkeit", "ekel", "wut", "erwartung"}


def test_the_shipped_demo_is_valid() -> None:
    script = load_script()
    assert (script.user_id, script.character_id) == ("meister", "nova")
    assert 25 <= 2 * len(script.turns) <= 40  # user turns + Nova's answers
    assert 6 * 7 <= script.last_day < 8 * 7
    canon, clusters = default_canon(), default_clusters()
    analyses = [a for t in (*script.turns, *script.questions) for a in (t.analysis, t.nova_analysis) if a]
    for turn in (*script.turns, *script.questions):
        clusters.canonical(turn.cluster)  # raises on an unknown cluster
    for a in analyses:
        assert a.emotion in PLUTCHIK, a
        assert a.modus in canon.modus
        assert set(a.intentionen) <= canon.intentionen, a
        assert 0.0 <= a.salienz <= 1.0
        assert set(a.entitaeten) <= set(script.entities), a
    # Promotable user turns (raw ≥ 0.7, SPEC §4.3) with the seeds' examples, and some for the analyzer.
    promotable = {t.analysis.inhalt for t in script.turns if t.analysis and t.analysis.salienz >= 0.7}
    assert "Anna hat mir damals immer Schokolade gegeben" in promotable
    assert "Anna ist meine Schwester" in promotable
    assert any("Bratwürste" in inhalt for inhalt in promotable)
    assert sum(1 for t in script.turns if t.analysis is None) >= 3
    assert any(t.nova_analysis and t.nova_analysis.salienz >= 0.7 for t in script.turns)  # a self-memory
    assert len(script.questions) >= 2 and script.pause_days >= 60
    # Questions are not memories themselves: below the 0.3 gate.
    assert all(q.analysis is not None and q.analysis.salienz < 0.3 for q in script.questions)
    # The last turn before the questions spreads two hops (bier), so paths can show.
    assert clusters.enricher_spruenge(script.turns[-1].cluster) >= 2


def test_malformed_scripts_are_named(tmp_path: Path) -> None:
    raw = json.loads(DEFAULT_DEMO_PATH.read_text())
    raw["turns"][3]["analysis"] = {"inhalt": "x", "salienz": 1.5, "themen": []}
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ScriptError, match=r"turns\[3\]\.analysis\.salienz must be in 0\.\.1"):
        load_script(path)
    raw = json.loads(DEFAULT_DEMO_PATH.read_text())
    raw["turns"][0]["analysis"]["timeline"] = "mondlandung"
    path.write_text(json.dumps(raw))
    with pytest.raises(ScriptError, match="timeline 'mondlandung' is not in 'timelines'"):
        load_script(path)
    raw = json.loads(DEFAULT_DEMO_PATH.read_text())
    del raw["turns"][1]["nova"]
    path.write_text(json.dumps(raw))
    with pytest.raises(ScriptError, match=r"turns\[1\]\.nova is missing"):
        load_script(path)


def test_simulated_weeks_start_on_a_monday_and_end_by_today() -> None:
    now = datetime(2026, 11, 29, 22, 0, tzinfo=UTC)  # a Sunday
    start = simulated_start(46, now)
    assert start.weekday() == 0 and start.hour == 0
    assert start.date().isoformat() == "2026-10-12"
    assert (start.date().toordinal() + 46) <= now.date().toordinal()
    assert simulated_start(0, datetime(2026, 11, 30, 9, 0, tzinfo=UTC)).date().isoformat() == "2026-11-30"


def test_paths_read_like_the_seed() -> None:
    pfad = [
        lzg_pb2.PfadSchritt(von_knoten_id=1, verbindungs_gruende=["entitaet"], geteilte_entitaet_ids=[12]),
        lzg_pb2.PfadSchritt(von_knoten_id=2, verbindungs_gruende=["themen", "embedding"],
                            geteilte_themen=["Schokolade", "Genuss"]),
        lzg_pb2.PfadSchritt(von_knoten_id=3, verbindungs_gruende=["timeline"]),
    ]  # fmt: skip
    assert describe_path(pfad, {12: "Anna"}) == (
        "shared entity Anna → shared themes Schokolade, Genuss, similar content → close in time"
    )
    assert describe_path(pfad[:1], {}) == "shared entity #12"


def test_protokoll_lines_mark_what_was_used() -> None:
    protokoll = lzg_pb2.VerwendungsProtokoll(
        geprueft=2, verwendet=[7], schwelle=0.55, deckel=3, ausgang=lzg_pb2.VERWENDUNG_AUSGANG_GERECHNET,
        naehen_alle=[lzg_pb2.NodeNaehe(knoten_id=8, naehe=0.31), lzg_pb2.NodeNaehe(knoten_id=7, naehe=0.71)],
        kanten_neu=4,
    )  # fmt: skip
    lines = format_protokoll(protokoll, {7: "Ich liebe ja Schokolade", 8: "Anna ist meine Schwester"})
    assert lines[0] == (
        "usage reinforcement (verwendung): ausgang gerechnet, geprueft 2, schwelle 0.55, deckel 3"
    )
    assert lines[1].startswith("  #7 naehe 0.710  used → reinforced")
    assert lines[2].startswith("  #8 naehe 0.310  not used")
    assert lines[3].startswith("  verwendet [7]; kanten_neu (edges recomputed) 4")
