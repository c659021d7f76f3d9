"""Reads and Trigger 2 look nodes up by id, whatever the planner believes of the pair (SPEC §5.5, §5.8, §11).

The spreading read's shells and the recall list's details read nodes "as of" an instant through the
inlined SQL function ``knoten_am``. Before migration 017 fenced its body, the planner was free to join
the pair's whole node list instead of looking up each id: on a LoCoMo pair of ~430 nodes the shell's
custom plan hashed all 367 of its memories, planned anew on every call; a generic plan does so whenever
the table's average pair looks small, and then reads a large pair's every node on every read (here,
before the fence: the details' generic plan read all 408 nodes of the pair for 5 ids). Trigger 2
(migration 004) had the same flaw the other way round: its generic plan hashed every node of the
table, so each call was planned anew. Here a pair of ~400 nodes sits among 40 small pairs; under
either plan the rows read from ``lzg_knoten`` must stay within the ids and edges asked about
(docs/decisions.md "A node reached is looked up by its id", "Trigger 2 and the reinforcement are
planned once").
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import numpy as np
import pytest

from services.lzg.engine import LzgEngine
from services.lzg.store import LzgStore
from services.lzg.weights import LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT

from .conftest import PAIR, T0, TableProvider, promote

pytestmark = pytest.mark.integration

PLAN_MODES = ("force_custom_plan", "force_generic_plan")
AS_OF = T0.replace(year=T0.year + 1)


async def _bulk_nodes(conn: Any, user_id: str, character_id: str, count: int, tag: str) -> None:
    """``count`` edge-less active nodes of one pair in one statement (what matters here is only how many)."""
    await conn.execute(
        """
        INSERT INTO lzg.lzg_knoten (kzg_quell_key, user_id, character_id, inhalt, dimension, gewicht_roh,
                                    gewicht_absolut, gewicht_decay, kzg_erstellt_am, erstellt_am,
                                    verstaerkt_am, decay_am)
        SELECT $3 || ':' || i, $1, $2, 'filler ' || i, '8', 1.0, 1.0, 1.0, $4, $4, $4, $4
        FROM generate_series(1, $5) AS i
        """,
        user_id, character_id, tag, T0, count,
    )  # fmt: skip


def _literal(value: Any) -> str:
    """A SQL literal of an argument of the statements explained here (id lists, ids, names, instants, numbers)."""
    if isinstance(value, list):
        return f"'{{{','.join(str(int(v)) for v in value)}}}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    return repr(value)


def _rows_read_from(plan: list[dict[str, Any]], relation: str) -> int:
    """Rows every scan of ``relation`` returned, over all its loops (EXPLAIN ANALYZE, JSON)."""
    total = 0.0
    stack = [plan[0]["Plan"]]
    while stack:
        node = stack.pop()
        if node.get("Relation Name") == relation:
            total += node["Actual Rows"] * node["Actual Loops"]
        stack.extend(node.get("Plans", []))
    return round(total)


async def _explained(conn: Any, mode: str, name: str, types: str, query: str, args: tuple[Any, ...]) -> int:
    """Rows the query read from lzg_knoten under plan cache ``mode`` (a prepared statement, as asyncpg runs it)."""
    await conn.execute(f"SET LOCAL plan_cache_mode = {mode}")
    await conn.execute(f"PREPARE {name} ({types}) AS {query}")
    # EXECUTE takes no bind parameters: the arguments go in as literals.
    raw = await conn.fetchval(
        f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE {name} ({', '.join(map(_literal, args))})"
    )
    await conn.execute(f"DEALLOCATE {name}")
    return _rows_read_from(json.loads(raw) if isinstance(raw, str) else raw, "lzg_knoten")


async def _garden_among_many_pairs(engine: LzgEngine, provider: TableProvider, store: LzgStore) -> list[int]:
    """Eight connected nodes of PAIR, 400 more without edges, 40 pairs of 10 beside it; analysed."""
    rng = np.random.default_rng(20261206)
    graph: list[int] = []
    for i in range(8):  # one theme: every two of them are connected
        raw = rng.normal(size=8)
        result = await promote(
            engine,
            provider,
            f"Gartenarbeit {i}",
            (raw / np.linalg.norm(raw)).astype(np.float32),
            themen=["Garten"],
        )
        graph.append(result.node_id)
    async with store.pool.acquire() as conn:
        await _bulk_nodes(conn, *PAIR, 400, "gross")
        for n in range(40):
            await _bulk_nodes(conn, f"klein-{n}", "nova", 10, f"klein-{n}")
        await conn.execute("ANALYZE lzg.lzg_knoten")
        pair_nodes = await conn.fetchval(
            "SELECT count(*) FROM lzg.lzg_knoten WHERE user_id = $1 AND character_id = $2", *PAIR
        )
    assert pair_nodes == 408
    return graph


async def test_the_read_looks_up_the_nodes_it_reaches_not_the_pairs_node_list(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    graph = await _garden_among_many_pairs(engine, provider, store)
    frontier = graph[:3]
    async with store.pool.acquire() as conn:
        rank_rows = await conn.fetchval(
            "SELECT count(*) FROM lzg.lzg_kanten_rang WHERE knoten_x_id = ANY($1::int[]) OR knoten_y_id = ANY($1::int[])",
            frontier,
        )
    assert 0 < rank_rows <= 3 * 7
    as_of = (AS_OF, LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT)
    async with store.reader() as conn:
        for mode in PLAN_MODES:
            details = await _explained(
                conn, mode, "details", "int[], text, text, timestamptz, float8, float8",
                store.q["recall_details"].rstrip().rstrip(";"), (graph[:5], *PAIR, *as_of),
            )  # fmt: skip
            assert details <= 5, (mode, details)
            shell = await _explained(
                conn, mode, "schale", "int[], int[], int[], int, text, text, timestamptz, float8, float8",
                store.q["shell"].rstrip().rstrip(";"), ([0, 1, 2], frontier, [0, 0, 0], 3, *PAIR, *as_of),
            )  # fmt: skip
            assert shell <= rank_rows, (mode, shell, rank_rows)


async def test_trigger2_looks_up_the_anchors_of_each_edge_not_every_node(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    graph = await _garden_among_many_pairs(engine, provider, store)
    async with store.pool.acquire() as conn:
        body, config = await conn.fetchrow(
            "SELECT prosrc, proconfig FROM pg_proc WHERE proname = 'kanten_neu_berechnen'"
        )
        assert "plan_cache_mode=force_generic_plan" in config  # the plan explained below is the one it runs
        edges = await conn.fetchval(
            "SELECT count(*) FROM lzg.lzg_kanten WHERE knoten_a_id = $1 OR knoten_b_id = $1", graph[0]
        )
        statement = body.replace("p_knoten", "$1").replace("p_schwelle", "$2").strip().rstrip(";")
        transaction = conn.transaction()
        await transaction.start()  # EXPLAIN ANALYZE runs the updates: rolled back below
        try:
            read = await _explained(
                conn, "force_generic_plan", "trigger2", "int[], float8", statement, ([graph[0]], 0.55)
            )
        finally:
            await transaction.rollback()
    assert 0 < edges and read <= 2 * edges, (read, edges)  # both anchors of each edge, nothing more
