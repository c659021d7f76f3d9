"""LZG promotion across replicas and pair locks, a bit-identical Trigger 2, a failed edge insert, boundaries.

SPEC §5.3 (promotion across replicas, a failed edge leaves the node, pairs in parallel), §5.5 / §10
(Trigger 2 reproduces Trigger 1 bit for bit), §5.7 (decay table of syn §4.1), §5.8 (K per shell).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import asyncpg
import numpy as np
import numpy.typing as npt
import pytest

from novaberg_core.clusters import default_clusters
from novaberg_core.model import Pair
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from services.lzg.engine import LzgEngine
from services.lzg.rows import EdgeInsert
from services.lzg.store import LzgStore, PairTx
from services.lzg.types import Entity, PromotionOutcome
from services.lzg.weights import damp, days_until
from tests.polling import eventually

from .conftest import (
    DIM,
    NOMIC_PROFILE,
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
)

pytestmark = pytest.mark.integration


async def _edge_rows(store: LzgStore, node_id: int | None = None) -> list[asyncpg.Record]:
    async with store.pool.acquire() as conn:
        if node_id is None:
            return list(await conn.fetch("SELECT * FROM lzg.lzg_kanten ORDER BY knoten_a_id, knoten_b_id"))
        return list(
            await conn.fetch(
                "SELECT * FROM lzg.lzg_kanten WHERE $1 IN (knoten_a_id, knoten_b_id) "
                "ORDER BY knoten_a_id, knoten_b_id",
                node_id,
            )
        )


async def _node_ids(store: LzgStore, pair: tuple[str, str]) -> list[int]:
    rows = await store.pool.fetch(
        "SELECT id FROM lzg.lzg_knoten WHERE user_id = $1 AND character_id = $2 ORDER BY id", *pair
    )
    return [r["id"] for r in rows]


# --- 1. the per-process candidate cache across replicas (SPEC §5.3 step 3) -------------------


@pytest.fixture
async def replica_b(pg_url: str, provider: TableProvider) -> AsyncIterator[LzgEngine]:
    """A second LZG process on the same database: its own pool, its own cache."""
    store_b = await LzgStore.open(pg_url, dimension=DIM, max_size=4)
    try:
        await store_b.check_model(provider.stamp)
        yield LzgEngine(store_b, provider, NOMIC_PROFILE, default_clusters(), PipelineLog(InMemorySink()))
    finally:
        await store_b.close()


async def test_a_replica_with_a_warm_cache_sees_nodes_another_replica_promoted(
    engine: LzgEngine, replica_b: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    # B promotes and reads first: its cache of the pair is warm (one node) before A writes.
    seed = await promote(replica_b, provider, "Wir waren im Zoo", unit(0, 1), themen=["Zoo"])
    warm = await replica_b.spreading_read(
        Pair(*PAIR), query_values=unit(0, 1).tolist(), query_text=None, cluster="werkstatt", nova_emotion=""
    )
    assert [e.knoten_id for e in warm.resonanz.erinnerungen] == [seed.node_id]

    a_node = await promote(engine, provider, "Anna backt Kuchen", unit(1, 0), salienz=0.8)
    assert a_node.outcome is PromotionOutcome.NEW_NODE

    # (a) near-identical on B: a duplicate of A's node, no second node
    dup = await promote(replica_b, provider, "Anna backt gern Kuchen", at_cosine(unit(1, 0), 0.95, axis=6))
    assert dup.outcome is PromotionOutcome.DUPLICATE and dup.node_id == a_node.node_id
    assert dup.candidates == 2 and dup.best_cosine == pytest.approx(0.95, abs=1e-6)

    # (b) unrelated to a duplicate (0.70 < match) but over the embedding layer (0.70 > 0.55): the
    # embedding layer only fires if B's cache holds A's vector — no theme or entity to find it by.
    new = await promote(replica_b, provider, "Kuchen mag ich", at_cosine(unit(1, 0), 0.70, axis=5))
    assert new.outcome is PromotionOutcome.NEW_NODE and new.edges_created == 2
    edges = {(e["knoten_a_id"], e["knoten_b_id"]): e for e in await _edge_rows(store, new.node_id)}
    assert set(edges) == {(new.node_id, a_node.node_id), (a_node.node_id, new.node_id)}
    assert list(edges[(new.node_id, a_node.node_id)]["verbindungs_gruende"]) == ["embedding"]
    assert edges[(new.node_id, a_node.node_id)]["embedding_cosine_initial"] == pytest.approx(0.70, abs=1e-6)
    assert await assert_edges_equal_from_scratch(store, PAIR) == 2
    assert len((await dump(store, "lzg_knoten"))["lzg_knoten"]) == 3

    # B's spreading read finds A's node as an anchor (shell 0)
    read = await replica_b.spreading_read(
        Pair(*PAIR), query_values=unit(1, 0).tolist(), query_text=None, cluster="werkstatt", nova_emotion=""
    )
    anchors = {e.knoten_id for e in read.resonanz.erinnerungen if e.schale == 0}
    assert anchors == {a_node.node_id, new.node_id} and read.resonanz.anker_anzahl == 2


# --- 2. Trigger 2 reproduces Trigger 1 bit for bit (SPEC §5.5, §10) ----------------------------


async def _every_layer_graph(engine: LzgEngine, provider: TableProvider) -> list[int]:
    """About 30 nodes with varied weights: entity, embedding, theme and timeline winners of every precision."""
    rng = np.random.default_rng(20260501)
    entities = [(await engine.upsert_entity(Pair(*PAIR), new_entity(n)))[0].id for n in ("Anna", "Berlin", "Chor")]
    timelines: list[int] = []
    for praezision, offsets in (
        ("minute", (0.0, 0.37, 3.9)),
        ("stunde", (0.1, 2.71, 6.5)),
        ("tag", (0.0, 4.0, 13.0)),
        ("woche", (1.0, 20.0, 45.0)),
        ("monat", (2.0, 70.0, 150.0)),
        ("quartal", (5.0, 200.0, 300.0)),
        ("jahr", (10.0, 400.0, 650.0)),
    ):
        for days in offsets:
            when = T0 + timedelta(days=days, seconds=int(rng.integers(0, 86400)))
            tl = new_timeline(when, praezision)
            timelines.append((await engine.upsert_timeline(Pair(*PAIR), tl))[0].id)
    vocabulary = ["Familie", "Reise", "Musik", "Kuchen", "Garten", "Arbeit"]
    ids: list[int] = []
    for i in range(42):
        # random 8-d directions: about 6 % of the pairs pass the embedding layer (cos > 0.55)
        raw = rng.normal(size=DIM)
        vector: npt.NDArray[np.float32] = (raw / np.linalg.norm(raw)).astype(np.float32)
        themen = sorted(set(rng.choice(vocabulary, int(rng.random() < 0.4) + int(rng.random() < 0.2))))
        ents = [int(rng.choice(entities))] if rng.random() < 0.25 else []
        timeline_id = timelines[i % len(timelines)]  # each timeline twice
        result = await promote(
            engine,
            provider,
            f"knoten {i}",
            vector,
            salienz=float(rng.uniform(0.3, 1.0)),
            themen=[str(t) for t in themen],
            entitaet_ids=ents,
            timeline_id=timeline_id,
        )
        if result.outcome is PromotionOutcome.NEW_NODE:
            ids.append(result.node_id)
    assert len(ids) >= 38
    return ids


async def test_trigger2_without_a_weight_change_leaves_every_edge_byte_identical(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _every_layer_graph(engine, provider)
    before_rows = await _edge_rows(store)
    winners = {r["verbindungs_gruende"][0] for r in before_rows}  # factor order: winner first
    assert winners == {"entitaet", "embedding", "themen", "timeline"}  # every formula branch is exercised
    timeline_only = await store.pool.fetch(
        "SELECT DISTINCT t.praezision FROM lzg.lzg_kanten e JOIN lzg.lzg_knoten a ON a.id = e.knoten_a_id "
        "JOIN lzg.timeline t ON t.id = a.timeline_id WHERE e.verbindungs_gruende = '{timeline}'"
    )
    assert len(timeline_only) == 7  # the SQL timeline depth runs for every precision
    assert len(before_rows) > 100
    before = await dump(store, "lzg_kanten")
    nodes_before = await dump(store, "lzg_knoten")
    updated = 0
    for node_id in ids:
        async with store.pair_writer(*PAIR) as tx:
            n, skipped = await engine.trigger2(tx, node_id)
        assert skipped == []
        updated += n
    assert updated == 2 * len(before_rows)  # every edge was rewritten once from each end
    after_rows = await _edge_rows(store)
    by_key = {(r["knoten_a_id"], r["knoten_b_id"]): r for r in after_rows}
    diffs = {
        col: max(abs(by_key[(r["knoten_a_id"], r["knoten_b_id"])][col] - r[col]) for r in before_rows)
        for col in ("gewicht_roh", "gewicht_absolut")
    }
    differing = sum(
        by_key[(r["knoten_a_id"], r["knoten_b_id"])][c] != r[c]
        for r in before_rows
        for c in ("gewicht_roh", "gewicht_absolut")
    )
    assert await dump(store, "lzg_kanten") == before, (
        f"Trigger 2 changed {differing} weight values of {len(before_rows)} edges; max |diff| {diffs}"
    )
    assert await dump(store, "lzg_knoten") == nodes_before


# --- 3. a failed edge insert leaves the node in place (SPEC §5.3 step 5) -----------------------


async def _two_neighbours(engine: LzgEngine, provider: TableProvider) -> list[int]:
    anna = (await engine.upsert_entity(Pair(*PAIR), new_entity("Anna")))[0].id
    first = await promote(engine, provider, "Anna singt", unit(1, 0), entitaet_ids=[anna], themen=["Chor"])
    second = await promote(engine, provider, "Chorprobe", unit(0, 1), themen=["Chor"])
    return [first.node_id, second.node_id, anna]


@pytest.mark.parametrize("failure", ["raised", "aborted_transaction"])
async def test_a_failed_edge_insert_leaves_the_node_without_edges_and_logs_an_error(
    engine: LzgEngine,
    provider: TableProvider,
    store: LzgStore,
    log_sink: InMemorySink,
    monkeypatch: pytest.MonkeyPatch,
    failure: str,
) -> None:
    first, second, anna = await _two_neighbours(engine, provider)
    edges_before = await dump(store, "lzg_kanten")
    assert len(edges_before["lzg_kanten"]) == 2
    original = PairTx.insert_edges

    async def failing_insert(self: PairTx, edges: list[EdgeInsert]) -> int:
        assert len(edges) == 4  # the new node would connect to both neighbours
        if failure == "raised":
            raise asyncpg.exceptions.DataError("edge insert refused")
        await original(self, edges)  # the rows really reach the table ...
        await self.conn.execute("SELECT 1 / 0")  # ... then PostgreSQL aborts the transaction
        return len(edges)

    monkeypatch.setattr(PairTx, "insert_edges", failing_insert)
    provider.vectors["Anna im Chor"] = unit(0, 0, 1)
    job = entry("Anna im Chor", entitaet_ids=[anna], themen=["Chor"])
    result = await engine.promote(job)
    assert result.outcome is PromotionOutcome.NEW_NODE
    assert result.edges_created == 0 and result.kzg_delete_allowed and not result.already_promoted

    node = await engine.node(Pair(*PAIR), result.node_id)
    assert node.kzg_quell_key == job.entry.kzg_key and list(node.magnets.entitaet_ids) == [anna]
    assert await _edge_rows(store, result.node_id) == []
    assert await dump(store, "lzg_kanten") == edges_before  # the neighbours' edge untouched
    assert await _node_ids(store, PAIR) == [first, second, result.node_id]
    bridge = (await dump(store, "verbindung"))["verbindung"]
    assert sum(job.entry.kzg_key in row and "neu" in row for row in bridge) == 1

    await engine.log.flush()
    errors = [r for r in log_sink.records if r.art == "fehler" and r.node == "promotion"]
    expected_typ = "DataError" if failure == "raised" else "DivisionByZeroError"
    assert [r.inhalt["typ"] for r in errors] == [expected_typ]
    assert errors[0].turn_id == job.log_turn_id and errors[0].user_id == PAIR[0]
    # the neighbours' edge insert was logged; none is logged for the new node
    kanten_writes = [
        r.inhalt["knoten_id"]
        for r in log_sink.records
        if r.art == "db_write" and r.inhalt.get("tabelle") == "lzg_kanten"
    ]
    assert second in kanten_writes and result.node_id not in kanten_writes

    # the job delivered again finds the node: it has fully arrived, nothing is added
    again = await engine.promote(job)
    assert again.already_promoted and again.node_id == result.node_id


# --- 4. different pairs in parallel, one pair serialised (SPEC §5.3) ---------------------------


async def _waiting_advisory_locks(store: LzgStore) -> int:
    value = await store.pool.fetchval(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    return int(value)


async def test_a_held_pair_lock_blocks_that_pair_only(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    provider.vectors["A wartet"] = unit(1)
    provider.vectors["B läuft"] = unit(0, 1)
    async with store.pair_writer(*PAIR):  # the lock every write of PAIR takes, held open
        blocked = asyncio.create_task(engine.promote(entry("A wartet")))
        await eventually(
            lambda: _waiting_advisory_locks(store), lambda n: n == 1, within=2.0, every=0.01, what="one waiting lock"
        )
        assert await _waiting_advisory_locks(store) == 1 and not blocked.done()

        other = await asyncio.wait_for(engine.promote(entry("B läuft", pair=OTHER)), timeout=10)
        assert other.outcome is PromotionOutcome.NEW_NODE
        assert (await engine.node(Pair(*OTHER), other.node_id)).inhalt == "B läuft"

        await asyncio.sleep(0.2)
        assert not blocked.done() and await _waiting_advisory_locks(store) == 1
        assert await _node_ids(store, PAIR) == []  # nothing of PAIR written yet
    done = await asyncio.wait_for(blocked, timeout=10)
    assert done.outcome is PromotionOutcome.NEW_NODE
    assert (await engine.node(Pair(*PAIR), done.node_id)).inhalt == "A wartet"
    assert await _waiting_advisory_locks(store) == 0


async def test_a_burst_of_reads_naming_entities_and_dates_all_finish_on_a_small_pool(
    pg_url: str, provider: TableProvider
) -> None:
    """A read holds a connection while it awaits the lookups of what its question names. They came
    from the same pool: 12 such reads at once on a pool of 2 (or 3) held every connection and waited
    for more, and none ever finished; the lookups have a pool of their own now (LOOKUP_CONNECTIONS)."""
    store = await LzgStore.open(pg_url, dimension=DIM, max_size=2)
    try:
        await store.check_model(TableProvider().stamp)
        engine = LzgEngine(store, provider, NOMIC_PROFILE, default_clusters(), PipelineLog(InMemorySink()))
        clara, _ = await engine.upsert_entity(Pair(*PAIR), Entity(0, Pair("", ""), "Clara", "person", ()))
        for i in range(4):
            await promote(engine, provider, f"Clara, Tag {i}", unit(*[0.0] * i, 1.0), entitaet_ids=[clara.id])

        async def read() -> int:
            result = await engine.spreading_read(
                Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
                recall_k=10, question_entity_ids=[clara.id], zeitfenster=[(T0, "tag")], as_of=T0 + timedelta(days=1),
            )  # fmt: skip
            return sum("entity" in c.quellen for c in result.recall)

        found = await asyncio.wait_for(asyncio.gather(*(read() for _ in range(12))), timeout=20)
        assert found == [4] * 12
    finally:
        await store.close()


# --- 6. boundaries ------------------------------------------------------------------------------


async def test_a_cosine_exactly_at_the_match_threshold_is_a_hit(
    store: LzgStore, provider: TableProvider, log_sink: InMemorySink
) -> None:
    # 0.82 has no float32 twin (cosines are float32 dot products), so the boundary is tested with
    # a profile whose match value is exact in float32: 0.8125 = 13/16.
    profile = replace(NOMIC_PROFILE, match=0.8125)
    engine = LzgEngine(store, provider, profile, default_clusters(), PipelineLog(log_sink))
    node = await promote(engine, provider, "Original", unit(1))
    at = np.zeros(DIM, dtype=np.float32)
    at[0], at[1] = np.float32(0.8125), np.float32(math.sqrt(1 - 0.8125**2))
    below = at.copy()
    below[0] = np.nextafter(np.float32(0.8125), np.float32(0))
    assert float(np.dot(unit(1), at)) == 0.8125 and float(np.dot(unit(1), below)) < 0.8125

    hit = await promote(engine, provider, "genau an der Schwelle", at)
    assert hit.outcome is PromotionOutcome.DUPLICATE and hit.node_id == node.node_id
    assert hit.best_cosine == 0.8125
    miss = await promote(engine, provider, "knapp darunter", below)
    assert miss.outcome is PromotionOutcome.NEW_NODE and miss.best_cosine < 0.8125


async def test_shell_three_follows_at_most_two_edges_per_shell_two_node(
    engine: LzgEngine, provider: TableProvider
) -> None:
    # A —e1— S1 —e2a— S2a —e3a— three leaves; S1 —e2b— S2b —e3b— three leaves. Vectors: A on
    # axis 0 (the query), the others orthogonal or at 0.354 (Hadamard rows): no embedding edges.
    names = ("e1", "e2a", "e2b", "e3a", "e3b")
    e1, e2a, e2b, e3a, e3b = [(await engine.upsert_entity(Pair(*PAIR), new_entity(n)))[0].id for n in names]
    hadamard = [
        np.array([1, -1, 1, -1, 1, -1, 1, -1], dtype=np.float32) / np.float32(math.sqrt(8)),
        np.array([1, 1, -1, -1, 1, 1, -1, -1], dtype=np.float32) / np.float32(math.sqrt(8)),
    ]
    vectors = [unit(*([0.0] * i), 1.0) for i in range(8)] + hadamard
    layout: list[tuple[str, list[int], float]] = [
        ("A", [e1], 1.0),
        ("S1", [e1, e2a, e2b], 0.9),
        ("S2a", [e2a, e3a], 0.8),
        ("S2b", [e2b, e3b], 0.8),
        *[(f"La{i}", [e3a], 0.5 + 0.1 * i) for i in range(3)],
        *[(f"Lb{i}", [e3b], 0.5 + 0.1 * i) for i in range(3)],
    ]
    for (text, ents, salienz), vector in zip(layout, vectors, strict=True):
        await promote(engine, provider, text, vector, entitaet_ids=ents, salienz=salienz)
    pools = {}
    for cluster, hops in (("werkstatt", 0), ("regen", 1), ("bier", 2), ("glut", 3)):
        result = await engine.spreading_read(
            Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster=cluster, nova_emotion=""
        )
        assert result.resonanz.sprung_tiefe == hops and result.resonanz.anker_anzahl == 1
        pools[hops] = result.pool_size
    # shell 0: A; shell 1: S1; shell 2: S2a, S2b (K = 2); shell 3: 2 of 3 leaves each (K = 2)
    assert pools == {0: 1, 1: 2, 2: 4, 3: 8}


async def test_the_strongest_new_node_sleeps_after_6_7_years_the_weakest_after_6_4(
    engine: LzgEngine, provider: TableProvider
) -> None:
    """syn §4.1 table: 3,96 → Ruheschwelle 0,1 in 6,7 Jahren; 3,25 → 6,4 Jahre (SPEC §5.7)."""
    strong = await promote(engine, provider, "stark", unit(1), salienz=1.0)
    weak = await promote(engine, provider, "schwach", unit(0, 1), salienz=0.673)
    assert round(damp(1.0), 2) == 3.96 and round(damp(0.673), 2) == 3.25
    last_day = {
        strong.node_id: math.floor(days_until(damp(1.0), 0.1)),
        weak.node_id: math.floor(days_until(damp(0.673), 0.1)),
    }
    assert round(last_day[strong.node_id] / 365.25, 1) == 6.7
    assert round(last_day[weak.node_id] / 365.25, 1) == 6.4
    checks: list[tuple[int, int, bool]] = []
    for node_id, day in last_day.items():
        checks += [(day, node_id, True), (day + 1, node_id, False)]
    for day, node_id, awake in sorted(checks):
        await engine.run_decay(T0 + timedelta(days=day), pairs=[PAIR])
        node = await engine.node(Pair(*PAIR), node_id)
        assert node.aktiv is awake, (node_id, day, node.gewicht_decay)
        assert (node.gewicht_decay >= 0.1) is awake
