"""Promotion on real PostgreSQL: new node, duplicate, half-reactivation, idempotency, Trigger 1 (SPEC §5.3, §5.4)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from novaberg_core.errors import InvalidArgument
from novaberg_core.model import Pair
from services.lzg.engine import LzgEngine
from services.lzg.store import LzgStore
from services.lzg.types import PromotionOutcome
from services.lzg.weights import damp, half_reactivation_decay

from .conftest import (
    OTHER,
    PAIR,
    T0,
    TableProvider,
    assert_edges_equal_from_scratch,
    at_cosine,
    dump,
    entry,
    new_entity,
    new_timeline,
    promote,
    unit,
    with_entry,
)

pytestmark = pytest.mark.integration


async def test_new_node_takes_every_kzg_field_and_allows_deleting_the_entry(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ent = (await engine.upsert_entity(Pair(*PAIR), new_entity("Anna")))[0]
    tl = (await engine.upsert_timeline(Pair(*PAIR), new_timeline(T0)))[0]
    provider.vectors["Anna hat mir Schokolade gegeben"] = unit(1, 0)
    job = entry(
        "Anna hat mir Schokolade gegeben",
        themen=["Anna", "Schokolade"],
        entitaet_ids=[ent.id, ent.id],
        timeline_id=tl.id,
        salienz=0.673,
    )
    result = await engine.promote(job)
    assert result.outcome is PromotionOutcome.NEW_NODE
    assert result.kzg_delete_allowed and not result.already_promoted
    assert result.candidates == 0 and result.best_cosine == 0.0

    node = await engine.node(Pair(*PAIR), result.node_id)
    assert node.kzg_quell_key == job.entry.kzg_key
    assert node.inhalt == job.entry.inhalt and node.beobachter == "user"
    assert node.gewicht_roh == 0.673
    assert round(node.gewicht_absolut, 3) == 3.248
    assert node.gewicht_decay == node.gewicht_absolut
    assert node.aktiv and node.haeufigkeit == 2
    assert node.erstellt_am == node.verstaerkt_am == node.decay_am == T0
    assert node.kzg_erstellt_am == job.entry.erstellt_am
    assert list(node.themen) == ["Anna", "Schokolade"]
    assert list(node.magnets.entitaet_ids) == [ent.id]  # each id once
    assert node.magnets.timeline_id == tl.id
    assert node.ei == job.entry.ei
    assert node.dimension == job.entry.dimension
    assert node.gedaechtnistyp == "episodisch" and node.ei.arousal == 0.6
    assert list(node.ei.intentionen) == ["information_teilen"]
    assert node.embedding is not None and node.embedding.tolist() == pytest.approx(unit(1, 0).tolist())
    bridge = (await dump(store, "verbindung"))["verbindung"]
    assert len(bridge) == 1 and "neu" in bridge[0] and job.entry.kzg_key in bridge[0]


async def test_duplicate_leaves_the_node_byte_identical_and_keeps_the_kzg_entry(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    first = await promote(engine, provider, "Ich liebe Schokolade", unit(1, 0), themen=["Schokolade"])
    await promote(engine, provider, "Wir waren am See", unit(0, 1), themen=["See"])
    before = await dump(store, "lzg_knoten", "lzg_kanten")
    again = await promote(
        engine, provider, "Schokolade liebe ich sehr", at_cosine(unit(1, 0), 0.83), themen=["Schokolade"]
    )
    assert again.outcome is PromotionOutcome.DUPLICATE
    assert again.node_id == first.node_id
    assert not again.kzg_delete_allowed
    assert again.best_cosine == pytest.approx(0.83, abs=1e-6)
    assert again.candidates == 2 and again.edges_created == 0
    assert await dump(store, "lzg_knoten", "lzg_kanten") == before
    bridge = (await dump(store, "verbindung"))["verbindung"]
    assert sum("dublette" in row for row in bridge) == 1


async def test_below_the_match_threshold_a_new_node_forms_edges(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    await promote(engine, provider, "Ich liebe Schokolade", unit(1, 0), themen=["Schokolade"])
    near = await promote(engine, provider, "Schokolade macht glücklich", at_cosine(unit(1, 0), 0.81))
    assert near.outcome is PromotionOutcome.NEW_NODE
    assert near.edges_created == 2  # embedding layer (0.81 > 0.55): A→B and B→A
    await assert_edges_equal_from_scratch(store, PAIR)


async def test_the_same_job_twice_creates_one_node(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    provider.vectors["Einmal reicht"] = unit(0, 0, 1)
    job = entry("Einmal reicht")
    first = await engine.promote(job)
    before = await dump(store)
    second = await engine.promote(job)
    assert second.node_id == first.node_id
    assert second.outcome is PromotionOutcome.NEW_NODE and second.already_promoted
    assert second.kzg_delete_allowed  # the entry arrived in full the first time
    assert await dump(store) == before


async def test_concurrent_copies_of_one_job_still_create_one_node(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    provider.vectors["Parallel"] = unit(0, 0, 0, 1)
    job = entry("Parallel")
    results = await asyncio.gather(*(engine.promote(job) for _ in range(4)))
    assert len({r.node_id for r in results}) == 1
    assert sum(not r.already_promoted for r in results) == 1
    assert len((await dump(store, "lzg_knoten"))["lzg_knoten"]) == 1


async def test_half_reactivation_wakes_an_inactive_hit_and_holds_after_the_next_decay(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    old = await promote(engine, provider, "Der alte Hund", unit(1, 1), salienz=0.9)
    later = T0 + timedelta(days=3000)  # 3.754 → 0.042 < 0.1: asleep
    decayed, deactivated, _ = await engine.run_decay(later, pairs=[PAIR])
    assert (decayed, deactivated) == (1, 1)
    woken_at = later + timedelta(days=1)
    hit = await promote(engine, provider, "Unser alter Hund", at_cosine(unit(1, 1), 0.9), as_of=woken_at)
    assert hit.outcome is PromotionOutcome.HALF_REACTIVATION and hit.node_id == old.node_id
    assert not hit.kzg_delete_allowed
    node = await engine.node(Pair(*PAIR), old.node_id)
    half = half_reactivation_decay(damp(0.9))
    assert node.aktiv and node.gewicht_decay == pytest.approx(half)
    assert node.gewicht_roh == 0.9 and node.gewicht_absolut == pytest.approx(damp(0.9))
    assert node.verstaerkt_am == node.decay_am == woken_at
    await engine.run_decay(woken_at + timedelta(days=1), pairs=[PAIR])
    node = await engine.node(Pair(*PAIR), old.node_id)
    # decays from the half value, not from gewicht_absolut (the seed's one-day defect)
    assert node.gewicht_decay == pytest.approx(half * 0.998501124, rel=1e-9)
    assert node.aktiv


async def test_inactive_nodes_are_candidates_and_get_edges(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    sleeper = await promote(engine, provider, "Schlafender Knoten", unit(1, 0), themen=["Garten"])
    await engine.run_decay(T0 + timedelta(days=3000), pairs=[PAIR])
    fresh = await promote(
        engine,
        provider,
        "Neuer Gartenknoten",
        unit(0, 1),
        themen=["Garten", "Beet"],
        as_of=T0 + timedelta(days=3001),
    )
    assert fresh.outcome is PromotionOutcome.NEW_NODE and fresh.edges_created == 2
    edges = await engine.edges(Pair(*PAIR), sleeper.node_id, 0)
    assert {(e.knoten_a_id, e.knoten_b_id) for e in edges} == {
        (fresh.node_id, sleeper.node_id),
        (sleeper.node_id, fresh.node_id),
    }
    assert list(edges[0].geteilte_themen) == ["Garten"]


async def test_edges_to_every_candidate_match_the_formula_for_all_layers(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    anna = (await engine.upsert_entity(Pair(*PAIR), new_entity("Anna")))[0]
    tag = (await engine.upsert_timeline(Pair(*PAIR), new_timeline(T0)))[0]
    tag_4 = (await engine.upsert_timeline(Pair(*PAIR), new_timeline(T0 + timedelta(days=4))))[0]
    minute = (await engine.upsert_timeline(Pair(*PAIR), new_timeline(T0, "minute")))[0]
    await promote(engine, provider, "a", unit(1, 0, 0), entitaet_ids=[anna.id], salienz=0.5)
    await promote(engine, provider, "b", unit(0, 1, 0), timeline_id=tag.id, themen=["x", "y"], salienz=0.7)
    await promote(engine, provider, "c", unit(0, 0, 1), timeline_id=minute.id, salienz=0.95)
    await promote(engine, provider, "d", at_cosine(unit(0, 0, 1), 0.8, axis=6), themen=["z"], salienz=1.0)
    await promote(engine, provider, "e", unit(0, 0, 0, 1), salienz=0.8)  # connects to nobody
    result = await promote(
        engine,
        provider,
        "new",
        at_cosine(unit(0, 0, 1), 0.8, axis=5),
        entitaet_ids=[anna.id],
        timeline_id=tag_4.id,
        themen=["y", "q"],
        salienz=0.6,
    )
    # a: entity; b: timeline (tag, 4 days) + theme y; c: embedding (minute precision ≠ tag);
    # d: embedding via the vector's closeness; e: none.
    assert result.edges_created == 8
    count = await assert_edges_equal_from_scratch(store, PAIR)
    assert count == 2 * 5  # new↔a, b, c, d plus c↔d (formed when d came)
    out = {
        e.knoten_b_id: e
        for e in await engine.edges(Pair(*PAIR), result.node_id, 0)
        if e.knoten_a_id == result.node_id
    }
    gruende = {
        (await engine.node(Pair(*PAIR), other)).inhalt: list(e.verbindungs_gruende)
        for other, e in out.items()
    }
    assert gruende == {"a": ["entitaet"], "b": ["themen", "timeline"], "c": ["embedding"], "d": ["embedding"]}
    b_edge = next(e for e in out.values() if list(e.verbindungs_gruende) == ["themen", "timeline"])
    assert b_edge.timeline_naehe_tage == 4 and list(b_edge.geteilte_themen) == ["y"]


async def test_pairs_never_share_an_edge(engine: LzgEngine, provider: TableProvider, store: LzgStore) -> None:
    for pair in (PAIR, OTHER):
        await promote(engine, provider, f"Schokolade {pair[0]}", unit(1, 0), pair=pair, themen=["Schokolade"])
        await promote(
            engine, provider, f"Mehr Schokolade {pair[0]}", unit(0, 1), pair=pair, themen=["Schokolade"]
        )
    async with store.pool.acquire() as conn:
        crossing = await conn.fetchval(
            "SELECT count(*) FROM lzg.lzg_kanten e JOIN lzg.lzg_knoten a ON a.id = e.knoten_a_id "
            "JOIN lzg.lzg_knoten b ON b.id = e.knoten_b_id "
            "WHERE (a.user_id, a.character_id) <> (b.user_id, b.character_id)"
        )
        total = await conn.fetchval("SELECT count(*) FROM lzg.lzg_kanten")
    assert crossing == 0 and total == 4
    # an identical text in another pair is no duplicate of this pair's node
    foreign = await promote(engine, provider, f"Schokolade {PAIR[0]} kopie", unit(1, 0), pair=OTHER)
    assert foreign.outcome is PromotionOutcome.DUPLICATE
    assert (await engine.node(Pair(*OTHER), foreign.node_id)).pair.user_id == OTHER[0]


async def test_same_pair_promotions_are_serialised_and_all_edges_form(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    jobs = []
    for i in range(8):
        provider.vectors[f"parallel {i}"] = unit(*([0.0] * i), 1.0) if i < 8 else unit(1)
        jobs.append(entry(f"parallel {i}", themen=["gemeinsam"]))
    jobs += [entry(f"fremd {i}", pair=OTHER, themen=["gemeinsam"]) for i in range(4)]
    results = await asyncio.gather(*(engine.promote(j) for j in jobs))
    assert all(r.outcome is PromotionOutcome.NEW_NODE for r in results)
    # every two nodes of a pair share the theme: a complete graph per pair, none lost to a race
    assert await assert_edges_equal_from_scratch(store, PAIR) == 8 * 7
    assert await assert_edges_equal_from_scratch(store, OTHER) == 4 * 3


async def test_bad_input_is_refused_before_anything_is_written(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    await promote(engine, provider, "da", unit(1))
    before = await dump(store)
    bad: list[tuple[dict[str, Any], str]] = [
        (dict(salienz=1.2), "entry.salienz must be a number within 0..1, got 1.2"),
        (dict(beobachter="narrator"), "entry.beobachter must be one of user, assistant"),
        (dict(inhalt="  "), "entry.inhalt must not be empty"),
        (dict(kzg_key="kzg:someone-else:nova:e1"), "is not a key of the entry's pair"),
        (dict(pair=Pair("", PAIR[1])), "entry.pair.user_id must not be empty"),
        (dict(haeufigkeit=0), "entry.haeufigkeit must be >= 1"),
    ]
    for change, message in bad:
        with pytest.raises(InvalidArgument, match=message):
            await engine.promote(with_entry(entry("neu"), **change))
    assert await dump(store) == before


async def test_unknown_entity_and_foreign_timeline_are_dropped_and_logged(
    engine: LzgEngine, provider: TableProvider, store: LzgStore, log_sink: object
) -> None:
    foreign_tl = (await engine.upsert_timeline(Pair(*OTHER), new_timeline(T0)))[0]
    mine = (await engine.upsert_entity(Pair(*PAIR), new_entity("Anna")))[0]
    result = await promote(
        engine, provider, "x", unit(1), entitaet_ids=[999, mine.id], timeline_id=foreign_tl.id
    )
    node = await engine.node(Pair(*PAIR), result.node_id)
    assert list(node.magnets.entitaet_ids) == [mine.id] and node.magnets.timeline_id is None
    await engine.log.flush()
    errors = [r.inhalt["typ"] for r in log_sink.records if r.art == "fehler"]  # type: ignore[attr-defined]
    assert errors == ["UnbekannteEntitaet", "UnbekannteTimeline"]


async def test_promotion_writes_its_steps_to_the_pipeline_log(
    engine: LzgEngine, provider: TableProvider, log_sink: object
) -> None:
    await promote(engine, provider, "eins", unit(1, 0), themen=["t"])
    await promote(engine, provider, "zwei", unit(0, 1), themen=["t"])
    await engine.log.flush()
    records = [r for r in log_sink.records if r.node == "promotion"]  # type: ignore[attr-defined]
    arten = [r.art for r in records[-6:]]
    assert arten == ["eingang", "db_read", "switch", "db_write", "db_write", "db_write"]
    switch = next(r for r in records[::-1] if r.art == "switch")
    assert switch.inhalt["entscheidung"] == "promotion.treffer" and switch.inhalt["ausgang"] == "neu"
    assert switch.inhalt["massstab"] == {"match": 0.82}
    assert all(r.user_id == PAIR[0] and r.turn_id == "turn-job-1" for r in records)


async def test_an_entry_without_dimension_is_promoted_not_refused(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    """The KZG accepts entries without a `dimension`; refusing them here would make poison jobs."""
    provider.vectors["Ohne Dimension"] = unit(0, 1, 1)
    result = await engine.promote(entry("Ohne Dimension", dimension=""))
    assert result.outcome is PromotionOutcome.NEW_NODE
    rows = (await dump(store, "lzg_knoten"))["lzg_knoten"]
    assert len(rows) == 1 and "" in rows[0] and "Ohne Dimension" in rows[0]
