"""The rank table of the spreading read (migration 003; SPEC §5.5, §5.8 step 3).

Trigger 2 rewrites edge weights as HOT updates; the order "top K outgoing edges by
gewicht_absolut" lives in lzg_kanten_rang. These tests prove the shell read over it returns exactly
what the same read over lzg_kanten would, before and after Trigger 2, and that migration 003
derives the rank rows of an existing store.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import numpy as np
import pytest

from novaberg_core.migrations import apply_migrations
from novaberg_core.pg import create_pool
from services.lzg.engine import LzgEngine
from services.lzg.store import SCHEMA, LzgStore
from services.lzg.types import PromotionOutcome
from services.lzg.weights import LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT

from .conftest import (
    DIM,
    PAIR,
    TableProvider,
    assert_edges_equal_from_scratch,
    assert_rank_rows_match_edges,
    promote,
)

pytestmark = pytest.mark.integration

MIGRATIONS = Path(__file__).resolve().parents[3] / "services" / "lzg" / "sql" / "migrations"

# The same read straight over lzg_kanten: the definition the rank table must reproduce.
REFERENCE = """
SELECT e.id AS kante_id, e.knoten_b_id
FROM lzg.lzg_kanten AS e JOIN lzg.lzg_knoten AS n ON n.id = e.knoten_b_id
WHERE e.knoten_a_id = $1 AND e.knoten_b_id <> $2 AND n.aktiv AND n.user_id = $4 AND n.character_id = $5
ORDER BY e.gewicht_absolut DESC, e.id
LIMIT $3
"""


async def _dense_graph(engine: LzgEngine, provider: TableProvider) -> list[int]:
    """24 nodes over four themes (most pairs connect), a few equal weights to exercise the tie order."""
    rng = np.random.default_rng(20261130)
    vocabulary = ["Familie", "Reise", "Musik", "Garten"]
    ids: list[int] = []
    for i in range(24):
        raw = rng.normal(size=DIM)
        themen = sorted({str(t) for t in rng.choice(vocabulary, int(rng.integers(1, 3)))})
        salienz = 0.7 if i % 5 == 0 else float(rng.uniform(0.3, 1.0))  # every fifth node: equal weights
        result = await promote(
            engine, provider, f"dicht {i}", (raw / np.linalg.norm(raw)).astype(np.float32),
            salienz=salienz, themen=themen,
        )  # fmt: skip
        if result.outcome is PromotionOutcome.NEW_NODE:  # random 8-d vectors: a rare duplicate
            ids.append(result.node_id)
    assert len(ids) >= 20
    return ids


def _as_of_now() -> tuple[datetime, float, float]:
    """The shell read's as-of parameters for a read now (SPEC §11): time, decay rate, least weight."""
    return datetime.now(UTC), LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT


async def _assert_shell_equals_reference(store: LzgStore, ids: list[int]) -> int:
    compared = 0
    as_of_now = _as_of_now()
    async with store.reader() as conn:
        for src in ids:
            neighbours = [r["knoten_b_id"] for r in await conn.fetch(REFERENCE, src, 0, 1000, *PAIR)]
            for pred in (0, *neighbours[:2], *neighbours[-1:]):
                for k in (1, 2, 3, 50):
                    got = await conn.fetch(store.q["shell"], [0], [src], [pred], k, *PAIR, *as_of_now)
                    want = await conn.fetch(REFERENCE, src, pred, k, *PAIR)
                    assert [(r["kante_id"], r["knoten_b_id"]) for r in got] == [
                        (r["kante_id"], r["knoten_b_id"]) for r in want
                    ], (src, pred, k)
                    compared += len(want)
    return compared


async def test_the_shell_read_over_the_rank_table_equals_top_k_over_the_edges(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _dense_graph(engine, provider)
    edges = await assert_edges_equal_from_scratch(store, PAIR)
    assert edges > 200 and await assert_rank_rows_match_edges(store) == edges // 2
    ties = await store.pool.fetchval(
        "SELECT count(*) FROM (SELECT knoten_a_id, gewicht_absolut FROM lzg.lzg_kanten "
        "GROUP BY 1, 2 HAVING count(*) > 1) AS t"
    )
    assert ties > 0  # equal weights of one source: their order is the edge id
    # some targets asleep: the read skips them and reaches further down the order
    await store.pool.execute("UPDATE lzg.lzg_knoten SET aktiv = FALSE WHERE id = ANY($1::int[])", ids[3::4])
    assert await _assert_shell_equals_reference(store, ids) > 1000

    # Trigger 2 after changed anchors: the edges and the rank rows follow, the order too
    for node_id, delta in ((ids[0], 0.9), (ids[7], -0.6), (ids[12], 0.05)):
        await store.pool.execute(
            "UPDATE lzg.lzg_knoten SET gewicht_absolut = gewicht_absolut + $2 WHERE id = $1", node_id, delta
        )
        async with store.pair_writer(*PAIR) as tx:
            updated, skipped = await engine.trigger2(tx, node_id)
        assert updated >= 10 and not skipped
    await assert_edges_equal_from_scratch(store, PAIR)
    await _assert_shell_equals_reference(store, ids)


async def test_trigger2_rewrites_the_edges_as_hot_updates_and_one_rank_row_per_neighbour(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _dense_graph(engine, provider)
    await store.pool.execute(
        "UPDATE lzg.lzg_knoten SET gewicht_absolut = gewicht_absolut + 0.2 WHERE id = $1", ids[5]
    )
    async with store.pair_writer(*PAIR) as tx:
        updated, _ = await engine.trigger2(tx, ids[5])
        stats = {
            r["relname"]: (r["n_tup_upd"], r["n_tup_hot_upd"])
            for r in await tx.conn.fetch(
                "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE schemaname = 'lzg'"
            )
        }
    # its heap pages read by the backend itself (migration 004), its one plan cached (migration 017),
    # for the function's run only
    config = await store.pool.fetchval("SELECT proconfig FROM pg_proc WHERE proname = 'kanten_neu_berechnen'")
    assert config == ["effective_io_concurrency=0", "plan_cache_mode=force_generic_plan"]
    assert await store.pool.fetchval("SHOW effective_io_concurrency") != "0"
    # every edge row of the node rewritten without a new index entry; half as many rank rows
    assert updated >= 10 and stats["lzg_kanten"] == (updated, updated)
    assert stats["lzg_kanten_rang"][0] == updated // 2
    await assert_edges_equal_from_scratch(store, PAIR)


async def test_migration_003_derives_the_rank_rows_of_an_existing_store(
    empty_pg_url: str, tmp_path: Path, provider: TableProvider
) -> None:
    for name in ("001_schema.sql", "002_kanten_formel.sql"):
        shutil.copy(MIGRATIONS / name, tmp_path / name)
    pool = await create_pool(empty_pg_url, SCHEMA, max_size=2)
    try:
        assert await apply_migrations(pool, SCHEMA, tmp_path, {"dimension": DIM}) == [1, 2]
        async with pool.acquire() as conn:
            nodes = [await _old_node(conn, i) for i in range(3)]
            for a, b, w in ((0, 1, 1.5), (1, 0, 2.5), (0, 2, 3.0), (2, 0, 0.5)):
                await conn.execute(
                    "INSERT INTO lzg_kanten (knoten_a_id, knoten_b_id, gewicht_roh, gewicht_absolut, "
                    "verbindungs_gruende) VALUES ($1, $2, $3, $3, '{themen}')",
                    nodes[a], nodes[b], w,
                )  # fmt: skip
    finally:
        await pool.close()
    store = await LzgStore.open(empty_pg_url, dimension=DIM, max_size=2)
    try:
        rows = await store.pool.fetch(
            "SELECT knoten_x_id, knoten_y_id, gewicht_xy, gewicht_yx FROM lzg_kanten_rang ORDER BY 1, 2"
        )
        assert [tuple(r) for r in rows] == [(nodes[0], nodes[1], 1.5, 2.5), (nodes[0], nodes[2], 3.0, 0.5)]
        assert await assert_rank_rows_match_edges(store) == 2
    finally:
        await store.close()


async def _old_node(conn: asyncpg.Connection, i: int) -> int:
    node_id = await conn.fetchval(
        "INSERT INTO lzg_knoten (kzg_quell_key, user_id, inhalt, dimension, gewicht_roh, gewicht_absolut, "
        "gewicht_decay, kzg_erstellt_am) VALUES ($1, $2, 'alt', 'beziehungen', 1, 2, 2, now()) RETURNING id",
        f"kzg:alt:{i}",
        PAIR[0],
    )
    return int(node_id)
