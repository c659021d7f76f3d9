"""Decay and edge triggers 2 and 3 on real PostgreSQL (SPEC §5.5, §5.6, §5.7)."""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta

import pytest

from novaberg_core.errors import InvalidArgument, NotFound
from novaberg_core.model import Pair
from novaberg_core.pipeline_log import LogScope
from services.lzg.engine import LzgEngine
from services.lzg.store import LzgStore
from services.lzg.types import Entity, Timeline
from services.lzg.weights import damp, reinforced_weights
from tests.polling import eventually

from .conftest import (
    OTHER,
    PAIR,
    T0,
    TableProvider,
    assert_edges_equal_from_scratch,
    at_cosine,
    dump,
    new_entity,
    new_timeline,
    promote,
    unit,
)

pytestmark = pytest.mark.integration


# --- decay (SPEC §5.7) -----------------------------------------------------------------------


async def test_decay_is_incremental_deactivates_below_the_floor_and_leaves_edges(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    weak = await promote(engine, provider, "schwach", unit(1, 0), salienz=0.5, themen=["t"])
    strong = await promote(engine, provider, "stark", unit(0, 1), salienz=1.0, themen=["t"])
    edges_before = await dump(store, "lzg_kanten")
    day_2140 = T0 + timedelta(days=2140)
    # 2140 days ahead, months past today: a run scoped to its pair (an all-pairs one is refused).
    decayed, deactivated, _ = await engine.run_decay(day_2140, pairs=[PAIR])
    assert (decayed, deactivated) == (2, 0)
    w = await engine.node(Pair(*PAIR), weak.node_id)
    s = await engine.node(Pair(*PAIR), strong.node_id)
    assert w.gewicht_decay == pytest.approx(damp(0.5) * math.exp(-0.0015 * 2140), rel=1e-12)
    assert w.gewicht_absolut == pytest.approx(damp(0.5))  # never changed by decay
    assert w.decay_am == day_2140 and w.verstaerkt_am == T0
    assert s.aktiv and w.aktiv
    # 2.801 × e^(−0.0015 × 2140) = 0.113 → after another 100 days 0.097 < 0.1
    decayed, deactivated, _ = await engine.run_decay(day_2140 + timedelta(days=100), pairs=[PAIR])
    assert (decayed, deactivated) == (2, 1)
    assert not (await engine.node(Pair(*PAIR), weak.node_id)).aktiv
    # inactive nodes are not decayed any more, nothing is deleted, edges are untouched
    decayed, deactivated, _ = await engine.run_decay(day_2140 + timedelta(days=101), pairs=[PAIR])
    assert (decayed, deactivated) == (1, 0)
    assert await dump(store, "lzg_kanten") == edges_before
    assert len((await dump(store, "lzg_knoten"))["lzg_knoten"]) == 2


async def test_decay_twice_on_one_day_does_not_decay_twice(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    node = await promote(engine, provider, "ein Knoten", unit(1), salienz=0.8)
    day = T0 + timedelta(days=30)
    await engine.run_decay(day)
    once = await dump(store, "lzg_knoten")
    assert await engine.run_decay(day) == (0, 0, pytest.approx(0.0, abs=10_000))
    assert await dump(store, "lzg_knoten") == once  # same as_of again: nothing at all
    await engine.run_decay(day + timedelta(hours=6))  # later that day: only the 6 hours elapsed
    twice = (await engine.node(Pair(*PAIR), node.node_id)).gewicht_decay
    single = damp(0.8) * math.exp(-0.0015 * (30 + 0.25))
    assert twice == pytest.approx(single, rel=1e-12)
    # a backdated run (as_of before the last one) decays nothing
    assert (await engine.run_decay(day - timedelta(days=1)))[:2] == (0, 0)


@pytest.mark.parametrize("pairs", [(), (PAIR, OTHER)], ids=["all pairs", "scoped"])
async def test_decay_waits_for_a_writer_of_a_pair_without_holding_anything(
    engine: LzgEngine, provider: TableProvider, store: LzgStore, pairs: tuple[tuple[str, str], ...]
) -> None:
    """A writer holding a pair's lock and two of its nodes, locked one after the other as the usage
    reinforcement does: the decay does the other pairs, then that pair once the writer is done.

    The one statement over all pairs waited for the first node while holding the rows it had
    decayed, so the writer's second node closed a deadlock (measured: 4 in 40 s of decay beside
    reinforcements, tests/integration/lzg/test_lzg_decay_beside_writers.py), and no pair was
    decayed while the writer held its lock (migration 013)."""
    first = await promote(engine, provider, "erster", unit(1), salienz=0.8)
    second = await promote(engine, provider, "zweiter", unit(0, 1), salienz=0.8)
    other = await promote(engine, provider, "anderes Paar", unit(0, 0, 1), salienz=0.8, pair=OTHER)
    day = T0 + timedelta(days=30)

    async def decay_am(pair: tuple[str, str], node_id: int) -> datetime:
        return (await engine.node(Pair(*pair), node_id)).decay_am

    async with store.pair_writer(*PAIR) as tx:
        touch = "UPDATE lzg.lzg_knoten SET haeufigkeit = haeufigkeit WHERE id = $1"
        await tx.conn.execute(touch, first.node_id)
        run = asyncio.create_task(engine.run_decay(day, pairs=pairs))
        await eventually(lambda: decay_am(OTHER, other.node_id), lambda at: at == day, within=10.0, what="OTHER decayed")
        await tx.conn.execute(touch, second.node_id)  # the writer's second node: no deadlock
        await asyncio.sleep(0.2)
        assert not run.done()
        assert await decay_am(PAIR, first.node_id) == T0 and await decay_am(PAIR, second.node_id) == T0
    decayed, deactivated, _ = await asyncio.wait_for(run, timeout=10)
    assert (decayed, deactivated) == (3, 0)
    for pair, node in ((PAIR, first), (PAIR, second), (OTHER, other)):
        got = await engine.node(Pair(*pair), node.node_id)
        assert got.decay_am == day
        assert got.gewicht_decay == pytest.approx(damp(0.8) * math.exp(-0.0015 * 30), rel=1e-12)


# --- Trigger 2 (SPEC §5.5, §5.6) ---------------------------------------------------------------


async def _graph(engine: LzgEngine, provider: TableProvider) -> list[int]:
    """A small graph with every layer: 7 nodes, entities, timelines, themes, close vectors."""
    anna = (await engine.upsert_entity(Pair(*PAIR), new_entity("Anna")))[0].id
    berlin = (await engine.upsert_entity(Pair(*PAIR), new_entity("Berlin")))[0].id
    tl = [
        (await engine.upsert_timeline(Pair(*PAIR), new_timeline(T0 + timedelta(days=d))))[0].id
        for d in (0, 5, 12)
    ]
    specs = [
        ("n1", unit(1, 0, 0), dict(entitaet_ids=[anna], themen=["Familie", "Anna"], timeline_id=tl[0])),
        ("n2", at_cosine(unit(1, 0, 0), 0.7), dict(entitaet_ids=[anna, berlin], themen=["Familie"])),
        ("n3", unit(0, 1, 0), dict(timeline_id=tl[1], themen=["Reise", "Berlin", "Zug"])),
        ("n4", unit(0, 0, 1), dict(entitaet_ids=[berlin], timeline_id=tl[2], themen=["Zug"])),
        ("n5", at_cosine(unit(0, 1, 0), 0.6, axis=6), dict(themen=["Reise"])),
        ("n6", unit(0, 0, 0, 1), dict(timeline_id=tl[0])),
        ("n7", unit(0, 0, 0, 0, 1), dict(themen=["Anna"], entitaet_ids=[anna])),
    ]
    ids = []
    for i, (text, vector, kwargs) in enumerate(specs):
        result = await promote(engine, provider, text, vector, salienz=0.5 + 0.07 * i, **kwargs)  # type: ignore[arg-type]
        ids.append(result.node_id)
    return ids


async def test_trigger2_after_reinforcement_equals_a_from_scratch_recompute(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _graph(engine, provider)
    assert await assert_edges_equal_from_scratch(store, PAIR) > 10
    provider.vectors["Antwort über Anna"] = at_cosine(unit(1, 0, 0), 0.9, axis=5)
    record = await engine.reinforce_used(
        Pair(*PAIR), "Antwort über Anna", [ids[0], ids[2], ids[6]], as_of=T0 + timedelta(days=1),
        turn=LogScope("t1"),
    )
    assert record.ausgang.value == "gerechnet"
    assert record.verwendet == [ids[0]]
    node = await engine.node(Pair(*PAIR), ids[0])
    expected = reinforced_weights(0.5)
    assert node.gewicht_roh == pytest.approx(expected.gewicht_roh)
    assert node.gewicht_absolut == pytest.approx(expected.gewicht_absolut)
    assert node.gewicht_decay == node.gewicht_absolut and node.haeufigkeit == 3
    assert node.verstaerkt_am == node.decay_am == T0 + timedelta(days=1)
    n_edges = len([e for e in await engine.edges(Pair(*PAIR), ids[0], 0)])
    assert record.kanten_neu == n_edges > 0
    assert await assert_edges_equal_from_scratch(store, PAIR) > 10


async def test_reinforcement_in_sql_equals_the_python_rule_to_the_last_bit(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _graph(engine, provider)
    before = {
        r["id"]: r["gewicht_roh"]
        for r in await store.pool.fetch("SELECT id, gewicht_roh FROM lzg.lzg_knoten")
    }
    written = await store.reinforce_used(*PAIR, ids[:4], 0.1, T0 + timedelta(days=3), 0.9)
    assert written.reinforced == sorted(ids[:4]) and written.error is None
    for node_id in ids[:4]:
        node = await engine.node(Pair(*PAIR), node_id)
        expected = reinforced_weights(before[node_id])
        assert node.gewicht_roh == expected.gewicht_roh
        assert node.gewicht_absolut == pytest.approx(expected.gewicht_absolut, rel=1e-15)
        assert node.gewicht_decay == node.gewicht_absolut
    # another pair's ids are not reinforced, even when named
    assert (await store.reinforce_used(*OTHER, ids[:1], 0.1, T0, 0.9)).reinforced == []


async def test_a_failing_trigger2_keeps_the_reinforcement_and_reports_every_node(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _graph(engine, provider)
    edges_before = await dump(store, "lzg_kanten")
    await store.pool.execute(
        """
        CREATE FUNCTION lzg.kanten_gesperrt() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'kanten gesperrt'; END $$;
        CREATE TRIGGER kanten_gesperrt BEFORE UPDATE ON lzg.lzg_kanten
        FOR EACH ROW EXECUTE FUNCTION lzg.kanten_gesperrt();
        """
    )
    provider.vectors["Antwort über Anna"] = at_cosine(unit(1, 0, 0), 0.9, axis=5)
    record = await engine.reinforce_used(
        Pair(*PAIR), "Antwort über Anna", [ids[0], ids[2], ids[6]], as_of=T0 + timedelta(days=1),
        turn=LogScope("t1"),
    )
    assert record.ausgang.value == "gerechnet" and record.verwendet == [ids[0]]
    assert record.kanten_fehler == 1 and record.kanten_neu == 0
    assert record.kanten_fehler_knoten == [ids[0]]  # the seed names the failing nodes (SPEC §5.6)
    assert record.error is not None and "kanten gesperrt" in record.error and str(ids[0]) in record.error
    node = await engine.node(Pair(*PAIR), ids[0])
    assert node.haeufigkeit == 3 and node.gewicht_roh == reinforced_weights(0.5).gewicht_roh
    assert await dump(store, "lzg_kanten") == edges_before


async def test_trigger2_touches_only_the_edges_of_the_node(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _graph(engine, provider)
    others_before = {
        (e.knoten_a_id, e.knoten_b_id): e.gewicht_roh
        for e in await engine.edges(Pair(*PAIR), 0, 0)
        if ids[3] not in (e.knoten_a_id, e.knoten_b_id)
    }
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE lzg.lzg_knoten SET gewicht_absolut = 9.5 WHERE id = $1", ids[3])
    async with store.pair_writer(*PAIR) as tx:
        updated, skipped = await engine.trigger2(tx, ids[3])
    assert updated == len(await engine.edges(Pair(*PAIR), ids[3], 0)) and not skipped
    others_after = {
        (e.knoten_a_id, e.knoten_b_id): e.gewicht_roh
        for e in await engine.edges(Pair(*PAIR), 0, 0)
        if ids[3] not in (e.knoten_a_id, e.knoten_b_id)
    }
    assert others_after == others_before
    await assert_edges_equal_from_scratch(store, PAIR)


# --- Trigger 3 (SPEC §5.5) ---------------------------------------------------------------------


async def test_entity_merge_rewrites_nodes_and_equals_a_from_scratch_recompute(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    annie = (await engine.upsert_entity(Pair(*PAIR), Entity(0, Pair("", ""), "Annie", "person", ("Ann",))))[0].id
    anna = (await engine.upsert_entity(Pair(*PAIR), new_entity("Anna")))[0].id
    a = await promote(engine, provider, "mit Annie", unit(1, 0), entitaet_ids=[annie])
    b = await promote(engine, provider, "mit Anna", unit(0, 1), entitaet_ids=[anna])
    c = await promote(engine, provider, "mit beiden", unit(0, 0, 1), entitaet_ids=[anna, annie])
    assert await assert_edges_equal_from_scratch(store, PAIR) == 4  # a↔c, b↔c; a and b unconnected
    result = await engine.merge_entities(Pair(*PAIR), annie, anna)
    assert result.nodes_rewritten == 2
    assert list((await engine.node(Pair(*PAIR), c.node_id)).magnets.entitaet_ids) == [anna]
    assert list((await engine.node(Pair(*PAIR), a.node_id)).magnets.entitaet_ids) == [anna]
    # a and b now share Anna: the merge connects them; the other edges carry Anna instead of Annie
    assert await assert_edges_equal_from_scratch(store, PAIR) == 6
    assert result.edges_recomputed == 6 and result.edges_deleted == 0
    merged = (await engine.entities(Pair(*PAIR), [anna]))[0]
    assert merged.aliases == ("Annie", "Ann")
    assert await engine.entities(Pair(*PAIR), [annie]) == []
    assert b.node_id


async def test_entity_delete_removes_the_layer_and_edges_left_without_one(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    anna = (await engine.upsert_entity(Pair(*PAIR), new_entity("Anna")))[0].id
    await promote(engine, provider, "a", unit(1, 0), entitaet_ids=[anna])
    await promote(engine, provider, "b", unit(0, 1), entitaet_ids=[anna], themen=["x"])
    await promote(engine, provider, "c", unit(0, 0, 1), entitaet_ids=[anna], themen=["x"])
    assert await assert_edges_equal_from_scratch(store, PAIR) == 6
    result = await engine.delete_entity(Pair(*PAIR), anna)
    assert result.nodes_rewritten == 3
    assert result.edges_deleted == 4  # a↔b and a↔c had only the entity
    assert result.edges_recomputed == 2  # b↔c keep the theme
    assert await assert_edges_equal_from_scratch(store, PAIR) == 2


async def test_timeline_move_precision_change_and_delete_equal_a_from_scratch_recompute(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    def tl(days: int, p: str = "tag", id_: int = 0) -> Timeline:
        return Timeline(id_, Pair("", ""), T0 + timedelta(days=days), p, "", ())

    t_a = (await engine.upsert_timeline(Pair(*PAIR), tl(0)))[0]
    t_b = (await engine.upsert_timeline(Pair(*PAIR), tl(30)))[0]
    t_c = (await engine.upsert_timeline(Pair(*PAIR), tl(10)))[0]
    a = await promote(engine, provider, "a", unit(1, 0), timeline_id=t_a.id)
    await promote(engine, provider, "b", unit(0, 1), timeline_id=t_b.id)
    await promote(engine, provider, "c", unit(0, 0, 1), timeline_id=t_c.id, themen=["q"])
    await promote(engine, provider, "d", unit(0, 0, 0, 1), timeline_id=t_a.id, themen=["q"])
    # a↔c, a↔d, c↔b (20 d), c↔d: 4 pairs
    assert await assert_edges_equal_from_scratch(store, PAIR) == 8

    moved, result = await engine.update_timeline(Pair(*PAIR), tl(25, id_=t_a.id))  # a and d move next to b
    assert moved.zeitpunkt == T0 + timedelta(days=25)
    assert result.edges_deleted == 0  # c↔d keep their theme; a↔c, a↔d stay within 21 days
    assert await assert_edges_equal_from_scratch(store, PAIR) == 12  # new: a↔b, d↔b

    _, result = await engine.update_timeline(Pair(*PAIR), tl(25, "woche", id_=t_a.id))
    assert await assert_edges_equal_from_scratch(store, PAIR) == 6  # only a↔d (same week) and c↔d, c↔b
    assert result.edges_deleted > 0

    result = await engine.delete_timeline(Pair(*PAIR), t_a.id)
    assert result.nodes_rewritten == 2
    assert (await engine.node(Pair(*PAIR), a.node_id)).magnets.timeline_id is None
    assert await assert_edges_equal_from_scratch(store, PAIR) == 4  # c↔d (theme), c↔b (timeline)


async def test_trigger3_input_errors_change_nothing(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    mine = (await engine.upsert_entity(Pair(*PAIR), new_entity("Anna")))[0].id
    theirs = (await engine.upsert_entity(Pair(*OTHER), new_entity("Anna")))[0].id
    foreign_tl = (await engine.upsert_timeline(Pair(*OTHER), new_timeline(T0)))[0].id
    await promote(engine, provider, "a", unit(1), entitaet_ids=[mine])
    before = await dump(store)
    with pytest.raises(NotFound, match=f"entity {theirs} \\(source_id\\) is not an entity of this pair"):
        await engine.merge_entities(Pair(*PAIR), theirs, mine)
    with pytest.raises(InvalidArgument, match="source_id and target_id must differ"):
        await engine.merge_entities(Pair(*PAIR), mine, mine)
    with pytest.raises(NotFound):
        await engine.delete_entity(Pair(*PAIR), theirs)
    with pytest.raises(NotFound):
        await engine.delete_timeline(Pair(*PAIR), foreign_tl)
    with pytest.raises(NotFound):
        await engine.update_timeline(Pair(*PAIR), Timeline(foreign_tl, Pair("", ""), T0, "tag", "", ()))
    with pytest.raises(InvalidArgument, match=r"timeline\.praezision 'sekunde' is not a timeline precision"):
        await engine.upsert_timeline(Pair(*PAIR), new_timeline(T0, "sekunde"))
    assert await dump(store) == before
