"""Memories asleep at the read's time take no anchor's and no recall item's place (SPEC §5.8 step 1, §11).

The anchors are searched among the pair's *active* memories; the cache holds every node, so a read
whose best candidates sleep (inactive, or faded under the minimum weight since their last decay)
must still find the awake ones behind them — anchors and a full recall list.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from itertools import combinations

import numpy as np
import numpy.typing as npt
import pytest

from novaberg_core.model import Pair
from services.lzg.engine import LzgEngine
from services.lzg.store import LzgStore

from .conftest import DIM, PAIR, T0, TableProvider, promote, unit

pytestmark = pytest.mark.integration

READ_AT = T0 + timedelta(days=1)
QUERY = unit(1)


def _vectors(cosines: Sequence[float]) -> list[npt.NDArray[np.float32]]:
    """Unit vectors at the given cosines to QUERY, each leaning on its own two of the other axes: no two
    of them reach the match threshold (0.82), so each is promoted as a node of its own."""
    axes = list(combinations(range(1, DIM), 2))
    out = []
    for cosine, (a, b) in zip(cosines, axes, strict=False):
        v = np.zeros(DIM)
        v[0], v[a], v[b] = cosine, np.sqrt((1 - cosine**2) / 2), np.sqrt((1 - cosine**2) / 2)
        out.append(v.astype(np.float32))
    return out


async def _memories(engine: LzgEngine, provider: TableProvider, cosines: Sequence[float]) -> list[int]:
    """One node per cosine, their turns an hour apart (no one the context of another)."""
    ids = []
    for number, vector in enumerate(_vectors(cosines)):
        turn_at = T0 - timedelta(days=10) + timedelta(hours=number)
        ids.append((await promote(engine, provider, f"memory {number}", vector, erstellt_am=turn_at)).node_id)
    return ids


async def test_the_awake_memory_behind_thirteen_inactive_ones_is_the_anchor(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    *inactive, awake = await _memories(engine, provider, [0.78] * 13 + [0.60])
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE lzg.lzg_knoten SET aktiv = FALSE WHERE id = ANY($1::int[])", inactive)
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=QUERY.tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
        as_of=READ_AT,
    )  # fmt: skip
    assert result.resonanz.anker_anzahl == 1
    assert [(e.knoten_id, e.schale) for e in result.resonanz.erinnerungen] == [(awake, 0)]


async def test_the_recall_list_fills_with_the_awake_memories_past_sixteen_asleep(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    """Eight inactive memories and eight still flagged active whose weight fell under 0.1 two days before
    the read (0.1001 · e^(−0.0015·2) = 0.0998) outrank five awake ones: the anchors are the three best
    awake, the recall list of four their best four."""
    ids = await _memories(engine, provider, [0.78] * 16 + [0.60, 0.58, 0.56, 0.54, 0.52])
    inactive, faded, awake = ids[:8], ids[8:16], ids[16:]
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE lzg.lzg_knoten SET aktiv = FALSE WHERE id = ANY($1::int[])", inactive)
        await conn.execute(
            "UPDATE lzg.lzg_knoten SET gewicht_decay = 0.1001, decay_am = $2 WHERE id = ANY($1::int[])",
            faded, READ_AT - timedelta(days=2),
        )  # fmt: skip
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=QUERY.tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
        as_of=READ_AT, recall_k=4,
    )  # fmt: skip
    assert result.resonanz.anker_anzahl == 3
    assert {e.knoten_id for e in result.resonanz.erinnerungen} == set(awake[:3])
    assert [c.knoten_id for c in result.recall] == awake[:4]
    assert [round(c.cosine, 2) for c in result.recall] == [0.60, 0.58, 0.56, 0.54]

    # Read before they faded (a day earlier: 0.1001 · e^(+0.0015) ≥ 0.1), the faded ones are memories again.
    earlier = await engine.spreading_read(
        Pair(*PAIR), query_values=QUERY.tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
        as_of=READ_AT - timedelta(days=3), recall_k=4,
    )  # fmt: skip
    assert [c.knoten_id for c in earlier.recall] == faded[:4]


async def test_the_awake_memories_behind_more_sleeping_ones_than_a_source_ranks(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    """150 inactive copies of one memory fill the dense source (50 deep) three times over: the read keeps
    reading deeper until it reaches the three awake memories behind them."""
    inactive, *awake = await _memories(engine, provider, [0.78, 0.60, 0.58, 0.56])
    async with store.pool.acquire() as conn:
        await conn.execute("UPDATE lzg.lzg_knoten SET aktiv = FALSE WHERE id = $1", inactive)
        columns = [
            r["attname"] for r in await conn.fetch(
                "SELECT attname FROM pg_attribute WHERE attrelid = 'lzg.lzg_knoten'::regclass AND attnum > 0 "
                "AND NOT attisdropped AND attname NOT IN ('id', 'kzg_quell_key') ORDER BY attnum"
            )
        ]  # fmt: skip
        copied = ", ".join(columns)
        await conn.execute(
            f"INSERT INTO lzg.lzg_knoten (kzg_quell_key, {copied}) "
            f"SELECT 'copy-' || g, {copied} FROM lzg.lzg_knoten, generate_series(1, 150) AS g WHERE id = $1",
            inactive,
        )
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=QUERY.tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
        as_of=READ_AT, recall_k=3,
    )  # fmt: skip
    assert result.resonanz.anker_anzahl == 3
    assert {e.knoten_id for e in result.resonanz.erinnerungen} == set(awake)
    assert [c.knoten_id for c in result.recall] == awake
