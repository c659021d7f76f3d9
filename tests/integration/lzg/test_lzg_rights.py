"""A person's rights in the LZG on real PostgreSQL: erase, tombstone, cache generation, forget,
correct (Trigger 1), export → import (services/lzg/rights.py, docs/decisions.md "Erasure")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import asdict, fields
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from novaberg_core.clusters import default_clusters
from novaberg_core.contract import pair_token, user_token
from novaberg_core.errors import FailedPrecondition, NotFound
from novaberg_core.model import Pair
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from services.lzg.engine import LzgEngine
from services.lzg.rights import ImportChunk, LzgRights
from services.lzg.store import LzgStore
from services.lzg.types import Entity, PromotionOutcome, Timeline

from .conftest import (
    NOMIC_PROFILE,
    OTHER,
    PAIR,
    T0,
    TableProvider,
    assert_edges_equal_from_scratch,
    assert_rank_rows_match_edges,
    at_cosine,
    dump,
    entry,
    promote,
    unit,
)

pytestmark = pytest.mark.integration

TABLES = ("lzg_knoten", "lzg_kanten", "lzg_kanten_rang", "entitaet", "timeline", "verbindung")
SECOND = ("anna-user", "luna")


async def _memories(engine: LzgEngine, provider: TableProvider, pair: tuple[str, str]) -> list[int]:
    """Three connected nodes with an entity and a timeline ref (every LZG table gets rows)."""
    user, character = pair
    entity = (await engine.upsert_entity(Pair(user, character), Entity(0, Pair("", ""), "Anna", "person", ())))[0]
    timeline = (await engine.upsert_timeline(
        Pair(user, character), Timeline(0, Pair("", ""), T0, "tag", "Geburtstag", ("feier",))))[0]  # fmt: skip
    ids = []
    for text, vector in (("Anna hat Geburtstag", unit(1, 0, 0)), ("Torte für Anna", unit(0, 1, 0)),
                         ("Kerzen auf der Torte", unit(0, 0, 1))):  # fmt: skip
        result = await promote(
            engine, provider, f"{text} ({user}/{character})", vector, pair=pair, themen=["feier"],
            entitaet_ids=[entity.id], timeline_id=timeline.id,
        )  # fmt: skip
        ids.append(result.node_id)
    return ids


async def _rows_naming(store: LzgStore, text: str) -> list[str]:
    """Rows of every LZG table whose text form holds ``text`` (ids, keys, tokens)."""
    found = []
    async with store.pool.acquire() as conn:
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'lzg' AND table_type = 'BASE TABLE'"
        )
        for row in tables:
            hits = await conn.fetch(f"SELECT t::text AS r FROM lzg.{row['table_name']} t WHERE strpos(t::text, $1) > 0",
                                    text)  # fmt: skip
            found += [f"{row['table_name']}: {h['r'][:80]}" for h in hits]
    return found


async def test_erase_pair_removes_every_row_and_leaves_the_other_pairs_byte_identical(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    await _memories(engine, provider, PAIR)
    await _memories(engine, provider, SECOND)  # the same user with another character
    await _memories(engine, provider, OTHER)
    async with store.pool.acquire() as conn:
        await conn.execute("INSERT INTO lzg.verbindung (turn_id, kzg_key, lzg_id, user_id, character_id, ausgang) "
                           "SELECT 't', kzg_quell_key || '-dup', id, user_id, character_id, 'dublette' "
                           "FROM lzg.lzg_knoten")  # fmt: skip
    others_before = {p: await _pair_rows(store, p) for p in (SECOND, OTHER)}
    counts = await LzgRights(engine).erase(PAIR, None)
    assert (counts.nodes, counts.entities, counts.timelines, counts.characters) == (3, 1, 1, 1)
    assert counts.edges == 6 and counts.verbindungen == 6
    assert await _pair_rows(store, PAIR) == {t: [] for t in TABLES}
    assert {p: await _pair_rows(store, p) for p in (SECOND, OTHER)} == others_before
    assert await _rows_naming(store, f"{PAIR[0]}:{PAIR[1]}") == []
    assert await _rows_naming(store, f"({PAIR[0]}/{PAIR[1]})") == []  # the pair's memories
    # What stays is the one-way key (the tombstone and the generation), equal to the KZG's token.
    assert {r.split(": ")[0] for r in await _rows_naming(store, pair_token(*PAIR))} == {"loeschung", "paar_generation"}
    await assert_rank_rows_match_edges(store)
    # idempotent
    assert (await LzgRights(engine).erase(PAIR, None)).nodes == 0


async def _pair_rows(store: LzgStore, pair: tuple[str, str]) -> dict[str, list[str]]:
    async with store.pool.acquire() as conn:
        nodes = [r["id"] for r in await conn.fetch(
            "SELECT id FROM lzg.lzg_knoten WHERE user_id = $1 AND character_id = $2", *pair)]  # fmt: skip
        out = {}
        for table in TABLES:
            args: list[Any]
            if table == "lzg_kanten":
                where, args = "knoten_a_id = ANY($1::int[]) OR knoten_b_id = ANY($1::int[])", [nodes]
            elif table == "lzg_kanten_rang":
                where, args = "knoten_x_id = ANY($1::int[]) OR knoten_y_id = ANY($1::int[])", [nodes]
            else:
                where, args = "user_id = $1 AND character_id = $2", list(pair)
            rows = await conn.fetch(f"SELECT t::text AS r FROM lzg.{table} t WHERE {where} ORDER BY 1", *args)
            out[table] = [r["r"] for r in rows]
    return out


async def test_erase_user_takes_every_character_of_the_user(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    await _memories(engine, provider, PAIR)
    await _memories(engine, provider, SECOND)
    await _memories(engine, provider, OTHER)
    other_before = await _pair_rows(store, OTHER)
    counts = await LzgRights(engine).erase(None, PAIR[0])
    assert (counts.nodes, counts.characters) == (6, 2)
    assert await _rows_naming(store, PAIR[0]) == []
    assert await _pair_rows(store, OTHER) == other_before
    assert await _rows_naming(store, user_token(PAIR[0]))  # the user's tombstone


async def test_a_promotion_of_an_entry_written_before_the_erasure_is_dropped(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    await _memories(engine, provider, PAIR)
    await LzgRights(engine).erase(PAIR, None)
    before = await dump(store, *TABLES)
    now = datetime.now(UTC)
    late = await promote(engine, provider, "noch unterwegs", unit(0, 0, 1), erstellt_am=now - timedelta(minutes=1))
    assert late.outcome is PromotionOutcome.ERASED and late.node_id == 0
    assert await dump(store, *TABLES) == before
    # An entry written after the erasure is a new memory of the pair.
    fresh = await promote(engine, provider, "ganz neu", unit(0, 0, 1), erstellt_am=now + timedelta(seconds=1))
    assert fresh.outcome is PromotionOutcome.NEW_NODE
    # The user's erasure drops the other characters' late promotions too.
    await LzgRights(engine).erase(None, PAIR[0])
    assert (await promote(engine, provider, "anders", unit(0, 1), pair=SECOND,
                          erstellt_am=now)).outcome is PromotionOutcome.ERASED  # fmt: skip


class _Counting:
    """An asyncpg connection that counts its ``fetch`` calls."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.fetches = 0

    async def fetch(self, *args: Any) -> Any:
        self.fetches += 1
        return await self.conn.fetch(*args)


async def test_another_replicas_cache_drops_deleted_nodes_with_one_query_per_read(
    store: LzgStore, provider: TableProvider
) -> None:
    """Two engines = two replicas: one erases or forgets, the other's cached vectors follow."""
    reader = LzgEngine(store, provider, NOMIC_PROFILE, default_clusters(), PipelineLog(InMemorySink()))
    writer = LzgEngine(store, provider, NOMIC_PROFILE, default_clusters(), PipelineLog(InMemorySink()))
    ids = await _memories(writer, provider, PAIR)
    async with store.pool.acquire() as conn:
        counting = _Counting(conn)
        assert (await reader.cache.snapshot(counting, *PAIR)).ids.tolist() == ids
        assert (await reader.cache.snapshot(counting, *PAIR)).ids.tolist() == ids
        assert counting.fetches == 2  # one statement per read, as before: watermark and generation
        await LzgRights(writer).forget(Pair(*PAIR), [ids[1]], "")
        counting.fetches = 0
        assert (await reader.cache.snapshot(counting, *PAIR)).ids.tolist() == [ids[0], ids[2]]
        assert counting.fetches == 2  # the generation moved: the pair is read afresh once
        counting.fetches = 0
        await reader.cache.snapshot(counting, *PAIR)
        assert counting.fetches == 1
        await LzgRights(writer).erase(None, PAIR[0])
        assert len(await reader.cache.snapshot(conn, *PAIR)) == 0
    read = await reader.spreading_read(Pair(*PAIR), query_values=unit(1, 0).tolist(), query_text=None,
                                       cluster="bier", nova_emotion="freude")  # fmt: skip
    assert read.resonanz.erinnerungen == ()


async def test_forget_deletes_the_node_with_its_edges_and_provenance(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _memories(engine, provider, PAIR)
    rights = LzgRights(engine)
    result = await rights.forget(Pair(*PAIR), [], "turn-kzg-1")  # every node of that source turn
    assert sorted(n.node_id for n in result.nodes) == ids and result.edges == 6
    assert all(n.turn_ids == ("turn-kzg-1",) for n in result.nodes)
    assert await _pair_rows(store, PAIR) | {"entitaet": [], "timeline": []} == {t: [] for t in TABLES}
    ids = await _memories(engine, provider, OTHER)
    result = await rights.forget(Pair(*OTHER), [ids[0]], "")
    assert [n.node_id for n in result.nodes] == [ids[0]] and result.nodes[0].kzg_keys
    rows = await _pair_rows(store, OTHER)
    assert len(rows["lzg_knoten"]) == 2 and len(rows["lzg_kanten"]) == 2 and len(rows["verbindung"]) == 2
    await assert_edges_equal_from_scratch(store, OTHER)
    assert (await rights.forget(Pair(*OTHER), [ids[0]], "")).nodes == ()  # idempotent
    with pytest.raises(NotFound):
        await engine.node(Pair(*OTHER), ids[0])


async def test_correct_re_embeds_and_forms_the_edges_again_by_trigger1(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    a = await promote(engine, provider, "Hund im Garten", unit(1, 0, 0))
    b = await promote(engine, provider, "Katze auf dem Dach", unit(0, 1, 0))
    c = await promote(engine, provider, "der Hund bellt", at_cosine(unit(1, 0, 0), 0.7))
    edges = {(e.knoten_a_id, e.knoten_b_id) for e in await engine.edges(Pair(*PAIR), 0, 100)}
    assert edges == {(a.node_id, c.node_id), (c.node_id, a.node_id)}
    provider.vectors["die Katze miaut"] = at_cosine(unit(0, 1, 0), 0.7)
    result = await LzgRights(engine).correct(
        Pair(*PAIR), node_id=c.node_id, kzg_quell_key="", inhalt="die Katze miaut",
        as_of=T0 + timedelta(days=1),
    )
    assert result.previous_inhalt == "der Hund bellt" and result.node.inhalt == "die Katze miaut"
    assert (result.edges_removed, result.edges_created) == (2, 2)
    edges = {(e.knoten_a_id, e.knoten_b_id) for e in await engine.edges(Pair(*PAIR), 0, 100)}
    assert edges == {(b.node_id, c.node_id), (c.node_id, b.node_id)}
    # exactly what Trigger 1 forms from scratch, with the node's weight unchanged
    await assert_edges_equal_from_scratch(store, PAIR)
    node = await engine.node(Pair(*PAIR), c.node_id, )
    assert node.embedding is not None and np.allclose(node.embedding, provider.vectors["die Katze miaut"])
    # the cache serves the new vector: a read for the cat finds the corrected node
    read = await engine.spreading_read(Pair(*PAIR), query_values=unit(0, 1, 0).tolist(), query_text=None,
                                       cluster="werkstatt", nova_emotion="")  # fmt: skip
    assert {e.knoten_id for e in read.resonanz.erinnerungen} == {b.node_id, c.node_id}
    with pytest.raises(NotFound):
        await LzgRights(engine).correct(
            Pair(*OTHER), node_id=c.node_id, kzg_quell_key="", inhalt="x", as_of=T0
        )


async def _chunks_of(data: Any) -> AsyncIterator[ImportChunk]:
    yield ImportChunk(entities=data.entities, timelines=data.timelines)
    yield ImportChunk(nodes=data.nodes)
    yield ImportChunk(edges=data.edges)


def _content(data: Any) -> dict[str, Any]:
    """What must survive export → import: everything but ids (references as contents)."""
    entity = {e.id: e.name for e in data.entities}
    timeline = {t.id: (t.zeitpunkt, t.praezision) for t in data.timelines}
    node = {n.id: n.inhalt for n in data.nodes}
    skip = {"id", "magnets", "kzg_quell_key", "pair", "ei"}  # the EI fields compared one by one
    return {
        "entities": sorted((e.name, e.typ, tuple(e.aliases)) for e in data.entities),
        "timelines": sorted((t.zeitpunkt, t.praezision, t.titel, tuple(t.themen)) for t in data.timelines),
        "nodes": sorted(
            (tuple((f.name, getattr(n, f.name)) for f in fields(n) if f.name not in skip), tuple(asdict(n.ei).items()),
             tuple(entity[i] for i in n.magnets.entitaet_ids), timeline.get(n.magnets.timeline_id),
             n.kzg_quell_key.rsplit(":", 1)[-1])
            for n in data.nodes
        ),
        "edges": sorted(
            (node[e.knoten_a_id], node[e.knoten_b_id], e.gewicht_roh, e.gewicht_absolut, e.erstellt_am,
             tuple(e.verbindungs_gruende), tuple(entity[i] for i in e.geteilte_entitaet_ids),
             tuple(e.geteilte_themen), e.timeline_naehe_tage, e.embedding_cosine_initial, e.anzahl_schichten)
            for e in data.edges
        ),
    }  # fmt: skip


async def test_export_then_import_into_the_erased_pair_restores_it(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    await _memories(engine, provider, PAIR)
    rights = LzgRights(engine)
    exported = await rights.export(Pair(*PAIR))
    assert (len(exported.nodes), len(exported.edges), exported.model_id) == (3, 6, provider.model_id)
    await rights.erase(PAIR, None)
    result = await rights.import_pair(Pair(*PAIR), _chunks_of(exported))
    assert (len(result.node_ids), result.edges) == (3, 6)
    restored = await rights.export(Pair(*PAIR))
    assert _content(restored) == _content(exported)
    assert {n.id for n in restored.nodes}.isdisjoint({n.id for n in exported.nodes})  # ids are new
    await assert_rank_rows_match_edges(store)
    # the tombstone is lifted: an entry written before the erasure may be promoted into the new pair
    assert (await engine.promote(entry("wieder da", erstellt_am=datetime.now(UTC) - timedelta(hours=1)))).outcome \
        is PromotionOutcome.NEW_NODE  # fmt: skip
    with pytest.raises(FailedPrecondition):
        await rights.import_pair(Pair(*PAIR), _chunks_of(exported))
