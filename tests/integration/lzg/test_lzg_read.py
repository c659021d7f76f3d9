"""Spreading read, memory block and usage reinforcement on real PostgreSQL (SPEC §5.6, §5.8, §5.9)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from novaberg_core.errors import InvalidArgument, NotFound
from novaberg_core.model import Pair, Praezision
from novaberg_core.pipeline_log import InMemorySink, LogScope
from services.lzg.engine import LzgEngine
from services.lzg.reading import NamedLookups, RecallQuery, rank_candidates, recall_list
from services.lzg.spreading import SCHALEN_FAKTOR, sektor_faktor
from services.lzg.store import LzgStore
from services.lzg.usage import Ausgang

from .conftest import OTHER, PAIR, T0, TableProvider, at_cosine, dump, new_entity, promote, unit

pytestmark = pytest.mark.integration


async def _entity(engine: LzgEngine, name: str, pair: tuple[str, str] = PAIR) -> int:
    return (await engine.upsert_entity(Pair(*pair), new_entity(name)))[0].id


async def _chain(engine: LzgEngine, provider: TableProvider, pair: tuple[str, str] = PAIR) -> list[int]:
    """A —Anna— B —Berlin— C —Chor— D, orthogonal vectors: only entity edges."""
    anna, berlin, chor = [await _entity(engine, n, pair) for n in ("Anna", "Berlin", "Chor")]
    ents = [[anna], [anna, berlin], [berlin, chor], [chor]]
    ids = []
    for i, (text, salienz) in enumerate((("A", 0.9), ("B", 0.8), ("C", 0.85), ("D", 0.95))):
        node = await promote(
            engine,
            provider,
            f"{text} {pair[0]}",
            unit(*([0.0] * i), 1.0),
            pair=pair,
            entitaet_ids=ents[i],
            salienz=salienz,
            emotion=["freude", "vertrauen", "angst", "wut"][i],
        )
        ids.append(node.node_id)
    return ids


@pytest.mark.parametrize(
    ("cluster", "hops", "reached"), [("werkstatt", 0, 1), ("regen", 1, 2), ("bier", 2, 3), ("Glut", 3, 4)]
)
async def test_hops_follow_the_cluster_and_paths_are_complete(
    engine: LzgEngine, provider: TableProvider, cluster: str, hops: int, reached: int
) -> None:
    ids = await _chain(engine, provider)
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=unit(1.0, 0.1).tolist(), query_text=None, cluster=cluster,
        nova_emotion="freude",
    )
    res = result.resonanz
    assert (res.anker_anzahl, res.sprung_tiefe, res.cluster, res.nova_sektor) == (
        1,
        hops,
        cluster.lower(),
        "freude",
    )
    assert result.pool_size == reached
    by_id = {e.knoten_id: e for e in res.erinnerungen}
    assert len(res.erinnerungen) == min(reached, 3)
    for e in res.erinnerungen:
        shell = ids.index(e.knoten_id)
        assert e.schale == shell and len(e.pfad) == shell
        node_decay = e.details.gewicht_decay
        assert e.sortier_gewicht == pytest.approx(
            node_decay * SCHALEN_FAKTOR[shell] * sektor_faktor("freude", e.details.emotion)
        )
        # the path walks the chain: every step from the previous node, carrying the shared entity
        assert [s.von_knoten_id for s in e.pfad] == ids[:shell]
        assert all(
            s.verbindungs_gruende == ("entitaet",) and len(s.geteilte_entitaet_ids) == 1 for s in e.pfad
        )
    assert [e.rang for e in res.erinnerungen] == list(range(1, len(res.erinnerungen) + 1))
    weights = [e.sortier_gewicht for e in res.erinnerungen]
    assert weights == sorted(weights, reverse=True)
    if reached == 4:
        assert ids[3] not in by_id  # D at shell 3 (× 0.25 × 0.8) is the weakest: cut by top 3


async def test_top_k_per_shell_predecessor_lock_and_inactive_targets(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    hub = await _entity(engine, "Hub")
    back = await _entity(engine, "Rueck")
    a = await promote(engine, provider, "anker", unit(1), entitaet_ids=[hub, back], salienz=1.0)
    spokes = []
    for i, salienz in enumerate((0.5, 0.6, 0.7, 0.8, 0.9)):  # A's edges grow with the spoke's weight
        spokes.append(
            (
                await promote(
                    engine,
                    provider,
                    f"s{i}",
                    unit(*([0.0] * (i + 1)), 1.0),
                    entitaet_ids=[hub],
                    salienz=salienz,
                )
            ).node_id
        )
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster="regen", nova_emotion=""
    )
    shell1 = {e.knoten_id for e in result.resonanz.erinnerungen if e.schale == 1}
    assert result.pool_size == 1 + 3  # K = 3 at shell 1
    assert shell1 <= set(spokes[2:]) and len(shell1) == 2  # the top-3 cut keeps anchor + 2 spokes
    # an inactive spoke is no target: the next strongest takes its place
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE lzg.lzg_knoten SET aktiv = FALSE WHERE id = $1", spokes[4])
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster="regen", nova_emotion=""
    )
    shell1 = {e.knoten_id for e in result.resonanz.erinnerungen if e.schale == 1}
    assert result.pool_size == 4 and spokes[4] not in shell1
    assert a.node_id in {e.knoten_id for e in result.resonanz.erinnerungen}


async def test_the_edge_back_to_the_predecessor_is_locked(engine: LzgEngine, provider: TableProvider) -> None:
    # A (strongest) — s0, s1; s_i — two leaves each. From s_i the strongest edge leads back to A;
    # with the lock, K = 2 at shell 2 reaches both leaves (pool 7), without it only one (pool 5).
    h0, h1, k0, k1 = [await _entity(engine, n) for n in ("h0", "h1", "k0", "k1")]
    await promote(engine, provider, "A", unit(1), entitaet_ids=[h0, h1], salienz=1.0)
    leaves = []
    for i, (h, k) in enumerate(((h0, k0), (h1, k1))):
        await promote(
            engine, provider, f"s{i}", unit(*([0.0] * (1 + 3 * i)), 1.0), entitaet_ids=[h, k], salienz=0.7
        )
        for j in (1, 2):
            leaf = await promote(
                engine,
                provider,
                f"l{i}{j}",
                unit(*([0.0] * (1 + 3 * i + j)), 1.0),
                entitaet_ids=[k],
                salienz=0.5,
            )
            leaves.append(leaf.node_id)
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster="bier", nova_emotion=""
    )
    assert result.pool_size == 7


async def test_dedup_keeps_the_anchor_shell_and_inactive_nodes_are_no_anchors(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    anna = await _entity(engine, "Anna")
    one = await promote(
        engine, provider, "eins", at_cosine(unit(1), 0.7, axis=1), entitaet_ids=[anna], salienz=0.8
    )
    two = await promote(
        engine, provider, "zwei", at_cosine(unit(1), 0.7, axis=2), entitaet_ids=[anna], salienz=0.9
    )
    asleep = await promote(engine, provider, "drei", at_cosine(unit(1), 0.9, axis=3), salienz=1.0)
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE lzg.lzg_knoten SET aktiv = FALSE WHERE id = $1", asleep.node_id)
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster="glut", nova_emotion=""
    )
    shells = {e.knoten_id: e.schale for e in result.resonanz.erinnerungen}
    assert shells == {one.node_id: 0, two.node_id: 0}  # reached again at shells 1–3, kept at 0
    assert result.resonanz.anker_anzahl == 2 and result.pool_size == 2


async def test_reading_is_passive_and_pairs_are_isolated(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    mine = await _chain(engine, provider, PAIR)
    theirs = await _chain(engine, provider, OTHER)
    before = await dump(store)
    for pair, ids in ((PAIR, mine), (OTHER, theirs)):
        provider.vectors["Wie geht es Anna?"] = unit(1.0, 0.1)
        result = await engine.spreading_read(
            Pair(*pair),
            query_values=None,
            query_text="Wie geht es Anna?",
            cluster="glut",
            nova_emotion="wut",
            turn=LogScope("t9"),
        )
        assert {e.knoten_id for e in result.resonanz.erinnerungen} <= set(ids)
        assert all(s.von_knoten_id in ids for e in result.resonanz.erinnerungen for s in e.pfad)
    assert await dump(store) == before


async def test_no_anchor_over_the_threshold_is_an_empty_result(
    engine: LzgEngine, provider: TableProvider
) -> None:
    await _chain(engine, provider)
    result = await engine.spreading_read(
        Pair(*PAIR),
        query_values=unit(0, 0, 0, 0, 0, 0, 1).tolist(),
        query_text=None,
        cluster="glut",
        nova_emotion="",
    )
    assert result.resonanz.erinnerungen == () and result.resonanz.anker_anzahl == 0
    empty = await engine.spreading_read(
        Pair(*OTHER), query_values=unit(1).tolist(), query_text=None, cluster="glut", nova_emotion=""
    )
    assert empty.pool_size == 0


async def test_bad_read_input_is_a_precise_error(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    await _chain(engine, provider)
    before = await dump(store)
    cases = [
        (dict(query_values=unit(1).tolist(), cluster="disco"), r"unknown cluster 'disco'; known: werkstatt"),
        (
            dict(query_values=[1.0, 0.0, 0.0]),
            r"query_vector has 3 values; the embedding model test-table-8 needs 8",
        ),
        (dict(query_values=[0.0] * 8), "query_vector is all zeros"),
        (dict(query_values=[float("nan")] * 8), "not finite"),
        (dict(query_values=None, query_text=" "), "one of query_vector or query_text is required"),
    ]
    for kwargs, message in cases:
        args = {"query_values": None, "query_text": None, "cluster": "glut", "nova_emotion": "", **kwargs}
        with pytest.raises(InvalidArgument, match=message):
            await engine.spreading_read(Pair(*PAIR), **args)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"pair\.user_id must not be empty"):
        await engine.spreading_read(
            Pair("", "nova"), query_values=unit(1).tolist(), query_text=None, cluster="glut", nova_emotion=""
        )
    assert await dump(store) == before


async def test_memory_block_names_entities_from_the_registry(
    engine: LzgEngine, provider: TableProvider
) -> None:
    await _chain(engine, provider)
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster="bier", nova_emotion=""
    )
    text = await engine.render(Pair(*PAIR), result.resonanz.erinnerungen, "analysis", user_name="Ben")
    assert "Sie ist Nova eingefallen ueber: gemeinsame Entitaet Anna → gemeinsame Entitaet Berlin" in text
    assert "Sie kam Nova direkt zur Frage in den Sinn" in text and "Sprecher: Ben" in text
    with pytest.raises(InvalidArgument, match="unknown reader 'poet'"):
        await engine.render(Pair(*PAIR), result.resonanz.erinnerungen, "poet")


# --- usage reinforcement (SPEC §5.6) ----------------------------------------------------------


async def test_reinforcement_takes_the_closest_three_over_the_threshold(
    engine: LzgEngine, provider: TableProvider, store: LzgStore, log_sink: InMemorySink
) -> None:
    # closeness to the answer: k0 .8, k1 .7, k2 .6, k3 .56, k4 .1 (threshold .55, cap 3)
    answer = unit(1)
    ids = [
        (
            await promote(engine, provider, f"k{i}", at_cosine(answer, c, axis=i + 1), themen=["gemeinsam"])
        ).node_id
        for i, c in enumerate((0.8, 0.7, 0.6, 0.56, 0.1))
    ]
    provider.vectors["die Antwort"] = answer
    record = await engine.reinforce_used(
        Pair(*PAIR), "die Antwort", ids, as_of=T0 + timedelta(days=2), turn=LogScope("turn-7")
    )
    assert record.ausgang is Ausgang.GERECHNET
    assert record.verwendet == ids[:3]
    assert record.knappster_verworfener is not None and record.knappster_verworfener[0] == ids[3]
    assert [k for k, _ in record.naehen_alle] == ids
    assert record.geprueft == 5 and record.schwelle == 0.55 and record.deckel == 3
    # five nodes, all connected: 8 directed edges per node; the 3 × 2 edges among the three used
    # nodes are recomputed once each (the run's directed edges, syn §7.1a), so 3 × 8 − 6
    assert record.kanten_neu == 3 * 8 - 6 and record.kanten_fehler == 0 and record.kanten_dauer_ms > 0
    for node_id in ids[:3]:
        assert (await engine.node(Pair(*PAIR), node_id)).haeufigkeit == 3
    assert (await engine.node(Pair(*PAIR), ids[3])).haeufigkeit == 2
    await engine.log.flush()
    logged = [r for r in log_sink.records if r.node == "verwendung"]
    assert len(logged) == 1 and logged[0].inhalt["ausgang"] == "gerechnet"
    assert set(logged[0].inhalt["eingang"]) == {
        "geprueft",
        "verwendet",
        "naehen_alle",
        "knappster_verworfener",
        "schwelle",
        "deckel",
        "ausgang",
        "kanten_neu",
        "kanten_fehler",
        "kanten_fehler_knoten",
        "kanten_dauer_ms",
        "error",
        "wiederholt",
    }


async def test_a_failed_usage_run_is_logged_at_the_turns_time(
    engine: LzgEngine, provider: TableProvider, log_sink: InMemorySink
) -> None:
    """The error record of a usage run sits beside its decision record: same turn, span and time (a
    replay's ``as_of``, not the moment it was written)."""
    node = (await promote(engine, provider, "x", unit(1))).node_id
    provider.fail = True
    span = "3f1d2c4b-5a69-4788-9a0b-1c2d3e4f5a6b"
    record = await engine.reinforce_used(
        Pair(*PAIR), "weit weg", [node], as_of=T0 + timedelta(days=3), turn=LogScope("turn-9", span)
    )
    assert record.ausgang is Ausgang.EMBED_FEHLER
    await engine.log.flush()
    logged = [r for r in log_sink.records if r.node == "verwendung"]
    assert sorted(r.art for r in logged) == ["fehler", "switch"]
    assert {(r.turn_id, r.span_id, r.erstellt_am) for r in logged} == {("turn-9", span, T0 + timedelta(days=3))}


async def test_the_six_outcomes_stay_distinguishable(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    node = (await promote(engine, provider, "x", unit(1))).node_id
    provider.vectors["weit weg"] = unit(0, 1)
    before = await dump(store, "lzg_knoten", "lzg_kanten")
    outcomes = {
        "gerechnet": await engine.reinforce_used(Pair(*PAIR), "weit weg", [node], as_of=T0),
        "antwort_leer": await engine.reinforce_used(Pair(*PAIR), "  ", [node], as_of=T0),
        "ohne_kandidat": await engine.reinforce_used(Pair(*PAIR), "weit weg", [], as_of=T0),
    }
    provider.fail = True
    outcomes["embed_fehler"] = await engine.reinforce_used(Pair(*PAIR), "weit weg", [node], as_of=T0)
    provider.fail = False
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE lzg.lzg_knoten SET embedding = NULL WHERE id = $1", node)
        outcomes["vektor_leer"] = await engine.reinforce_used(Pair(*PAIR), "weit weg", [node], as_of=T0)
        await conn.execute("ALTER TABLE lzg.lzg_knoten RENAME TO lzg_knoten_weg")
        try:
            outcomes["db_fehler"] = await engine.reinforce_used(Pair(*PAIR), "weit weg", [node], as_of=T0)
        finally:
            await conn.execute("ALTER TABLE lzg.lzg_knoten_weg RENAME TO lzg_knoten")
            await conn.execute("UPDATE lzg.lzg_knoten SET embedding = $2 WHERE id = $1", node, unit(1))
    assert {name: r.ausgang.value for name, r in outcomes.items()} == {name: name for name in outcomes}
    assert outcomes["gerechnet"].verwendet == [] and outcomes["gerechnet"].naehen_alle == [(node, 0.0)]
    assert outcomes["embed_fehler"].error == "RuntimeError: model server down"
    assert "UndefinedTable" in outcomes["db_fehler"].error
    assert outcomes["vektor_leer"].error == "served nodes have no vectors"
    assert await dump(store, "lzg_knoten", "lzg_kanten") == before


async def test_foreign_served_ids_are_not_found_and_nothing_changes(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    mine = (await promote(engine, provider, "mein", unit(1))).node_id
    theirs = (await promote(engine, provider, "dein", unit(1), pair=OTHER)).node_id
    provider.vectors["mein"] = unit(1)
    before = await dump(store)
    with pytest.raises(NotFound, match=rf"served_node_ids \[{theirs}\] are not nodes of this pair"):
        await engine.reinforce_used(Pair(*PAIR), "mein", [mine, theirs], as_of=T0)
    with pytest.raises(NotFound):
        await engine.node(Pair(*PAIR), theirs)
    with pytest.raises(NotFound):
        await engine.edges(Pair(*PAIR), theirs, 0)
    assert await dump(store) == before


async def test_the_turn_after_a_found_question_joins_the_recall_list_as_its_answer(
    engine: LzgEngine, provider: TableProvider
) -> None:
    """SPEC §11 recall sources: "What did you research?" matches the question; the turn right after it
    answers it without sharing its words or meaning — the source ``antwort`` (recall list only)."""
    asked_at = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)
    query = unit(1)

    async def conversation(pair: tuple[str, str], answer_after: timedelta) -> dict[str, int]:
        turns = (
            (f"{pair[0]}, what did you research?", query, asked_at, "user"),
            (f"{pair[0]}, adoption agencies.", unit(0, 1), asked_at + answer_after, "assistant"),
            (f"{pair[0]}, I had tea in the garden.", at_cosine(query, 0.3, axis=2), asked_at + timedelta(hours=3), "user"),
        )  # fmt: skip
        ids = {}
        for text, vector, when, beobachter in turns:
            node = await promote(engine, provider, text, vector, pair=pair, erstellt_am=when, beobachter=beobachter)
            ids[text.split()[1]] = node.node_id
        return ids

    async def recall(pair: tuple[str, str]) -> tuple[int, dict[int, tuple[str, ...]]]:
        result = await engine.spreading_read(
            Pair(*pair), query_values=query.tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
            recall_k=10,
        )  # fmt: skip
        return result.resonanz.anker_anzahl, {c.knoten_id: c.quellen for c in result.recall}

    nodes = await conversation(PAIR, timedelta(seconds=30))
    anchors, found = await recall(PAIR)
    assert anchors == 1  # the question alone passes the anchor gate; an answer is never an anchor
    # The answer (dense rank 3, answer rank 1: 1/13 + 0.5/11) above the question (1/11) and a closer memory.
    assert list(found) == [nodes["adoption"], nodes["what"], nodes["I"]]
    assert found[nodes["adoption"]] == ("dense", "antwort") and "antwort" not in found[nodes["I"]]

    # An answer more than half an hour after the question belongs to another exchange.
    late = await conversation(OTHER, timedelta(minutes=40))
    _, found = await recall(OTHER)
    assert list(found) == [late["what"], late["I"], late["adoption"]]
    assert all("antwort" not in sources for sources in found.values())


async def test_the_cache_orders_a_pairs_memories_by_time_once_per_arrival(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    """The context and the answers walk the memories in the order they were made; the order is sorted
    when nodes arrive, not on every read (``services.lzg.cache``)."""
    start = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)
    for minutes, axis in ((20, 1), (0, 2), (10, 3)):  # promoted out of time order
        await promote(engine, provider, f"turn at {minutes}", unit(*([0.0] * axis), 1.0),
                      erstellt_am=start + timedelta(minutes=minutes))  # fmt: skip
    async with store.pool.acquire() as conn:
        first = await engine.cache.snapshot(conn, *PAIR)
        assert first.order.by_time.tolist() == [1, 2, 0] and first.order.place.tolist() == [2, 0, 1]
        assert (await engine.cache.snapshot(conn, *PAIR)).order is first.order  # nothing new: not sorted again
        await promote(engine, provider, "turn at 5", unit(0, 0, 0, 0, 1), erstellt_am=start + timedelta(minutes=5))
        grown = await engine.cache.snapshot(conn, *PAIR)
    assert grown.order.by_time.tolist() == [1, 3, 2, 0] and first.order.by_time.tolist() == [1, 2, 0]


async def test_the_entities_and_dates_a_question_names_find_their_memories_beyond_meaning_and_words(
    engine: LzgEngine, provider: TableProvider
) -> None:
    """SPEC §11 recall sources: a memory carrying an entity the question names (``entity``) and one
    made on a day it names (``timeline``: the day ± its tolerance, SPEC §5.4) are listed however far
    their vectors and words; a memory made after the read's time is none, whatever it carries."""
    clara = await _entity(engine, "Clara")
    query = unit(1)
    day = datetime(2026, 3, 14, tzinfo=UTC)
    close = await promote(engine, provider, "We baked bread.", at_cosine(query, 0.6, axis=2),
                          erstellt_am=datetime(2026, 1, 5, 9, 0, tzinfo=UTC))  # fmt: skip
    named = await promote(engine, provider, "She phoned at noon.", unit(0, 1), entitaet_ids=[clara],
                          erstellt_am=datetime(2026, 2, 2, 12, 0, tzinfo=UTC))  # fmt: skip
    dated = await promote(engine, provider, "The storm broke the fence.", unit(0, 0, 0, 1),
                          erstellt_am=day + timedelta(hours=18))  # fmt: skip
    later = await promote(engine, provider, "She came by again.", unit(0, 0, 0, 0, 1), entitaet_ids=[clara],
                          erstellt_am=day + timedelta(hours=20))  # fmt: skip

    async def recall(as_of: datetime) -> dict[int, tuple[str, ...]]:
        result = await engine.spreading_read(
            Pair(*PAIR), query_values=query.tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
            recall_k=10, question_entity_ids=[clara], zeitfenster=[(day, "tag")], as_of=as_of,
        )  # fmt: skip
        return {c.knoten_id: c.quellen for c in result.recall}

    found = await recall(T0)
    assert {i for i, sources in found.items() if "entity" in sources} == {named.node_id, later.node_id}
    assert {i for i, sources in found.items() if "timeline" in sources} == {dated.node_id, later.node_id}
    assert "entity" not in found[close.node_id] and "timeline" not in found[close.node_id]
    # Read as of an hour before the later visit: it was not made yet.
    before = await recall(day + timedelta(hours=19))
    assert later.node_id not in before
    assert "entity" in before[named.node_id] and "timeline" in before[dated.node_id]


async def test_named_lookups_keep_only_the_memories_of_the_reads_own_view(
    engine: LzgEngine, provider: TableProvider
) -> None:
    """The entity and date lookups run on their own connections, beside the read's transaction: an id
    they return that the read's view does not hold (a node made or erased meanwhile) is no memory,
    neither listed nor admitted, and a lookup still running when the read ends is cancelled."""
    clara = await _entity(engine, "Clara")
    held = await promote(engine, provider, "Clara phoned.", unit(0, 1), entitaet_ids=[clara])
    unseen = held.node_id + 1_000

    async def ids(*values: int) -> list[int]:
        return list(values)

    query = RecallQuery(
        vector=unit(1), as_of=T0, entity_ids=(clara,), zeitfenster=((T0, Praezision.TAG),), recall_k=10
    )
    named = NamedLookups(asyncio.ensure_future(ids(unseen, held.node_id)), asyncio.ensure_future(ids(unseen)))
    async with engine.store.pair_reader(*PAIR) as graph:
        snapshot = await engine.cache.snapshot(graph.conn, *PAIR)
        candidates = await rank_candidates(graph, snapshot, query, 0.99, named)
    assert candidates.lists["entity"] == [held.node_id] and candidates.lists["timeline"] == []
    assert candidates.admitted == {held.node_id}
    assert [c.knoten_id for c in recall_list(candidates, candidates.anchors, 10)] == [held.node_id]

    pending = NamedLookups(asyncio.ensure_future(asyncio.sleep(60, [held.node_id])), None)
    pending.cancel()
    await asyncio.sleep(0)
    assert pending.entity is not None and pending.entity.cancelled()
