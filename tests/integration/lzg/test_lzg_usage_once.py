"""A turn's usage reinforcement is applied once (SPEC §5.6; migration 014; docs/decisions.md "A resent
turn is written once").

Dispatch may be sent again by a caller that got no answer. The second ReinforceUsed of the same pair and
turn finds the turn's mark, written in the same statement as the first reinforcement, and changes
nothing: no boost, no second haeufigkeit, no Trigger 2 — the protocol says ``wiederholt``. Without a
turn id every call reinforces, as before. The daily decay drops old marks; an erasure the pair's.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import numpy as np
import numpy.typing as npt
import pytest

from novaberg_core.model import Pair
from novaberg_core.pipeline_log import InMemorySink, LogScope
from services.lzg.app.context import NO_TURN
from services.lzg.engine import LzgEngine
from services.lzg.rights import LzgRights
from services.lzg.store import LzgStore
from services.lzg.usage import VERWENDUNG_MARKE_TAGE, Ausgang

from .conftest import OTHER, PAIR, T0, TableProvider, at_cosine, dump, promote, unit

pytestmark = pytest.mark.integration

ANSWER = "die Antwort"


async def _used_nodes(engine: LzgEngine, provider: TableProvider, pair: tuple[str, str] = PAIR) -> list[int]:
    """Three nodes close to the answer (all used, threshold 0.55) sharing a theme (edges for Trigger 2)."""
    answer: npt.NDArray[np.float32] = unit(1)
    provider.vectors[ANSWER] = answer
    return [
        (await promote(engine, provider, f"k{i} {pair[0]}", at_cosine(answer, c, axis=i + 1), pair=pair,
                       themen=["gemeinsam"])).node_id
        for i, c in enumerate((0.8, 0.7, 0.6))
    ]  # fmt: skip


async def _marks(store: LzgStore) -> list[tuple[str, str, str]]:
    async with store.pool.acquire() as conn:
        rows = await conn.fetch("SELECT user_id, character_id, turn_id FROM lzg.verwendung_turn ORDER BY 1, 2, 3")
    return [(r["user_id"], r["character_id"], r["turn_id"]) for r in rows]


async def test_a_resent_turn_is_reinforced_once(
    engine: LzgEngine, provider: TableProvider, store: LzgStore, log_sink: InMemorySink
) -> None:
    ids = await _used_nodes(engine, provider)
    at = T0 + timedelta(days=2)
    first = await engine.reinforce_used(Pair(*PAIR), ANSWER, ids, as_of=at, turn=LogScope("turn-7"))
    after_first = await dump(store, "lzg_knoten", "lzg_kanten")

    again = await engine.reinforce_used(Pair(*PAIR), ANSWER, ids, as_of=at + timedelta(minutes=1), turn=LogScope("turn-7"))

    assert first.ausgang is Ausgang.GERECHNET and first.verwendet == ids and not first.wiederholt
    assert first.kanten_neu > 0
    assert again.ausgang is Ausgang.GERECHNET and again.wiederholt and again.verwendet == ids
    assert (again.kanten_neu, again.kanten_fehler) == (0, 0)
    # Nothing changed: no boost, no second haeufigkeit, no edge recomputed, no verstaerkt_am moved.
    assert await dump(store, "lzg_knoten", "lzg_kanten") == after_first
    assert [(await engine.node(Pair(*PAIR), i)).haeufigkeit for i in ids] == [3, 3, 3]  # 2 after promotion
    await engine.log.flush()
    logged = [r.inhalt["eingang"]["wiederholt"] for r in log_sink.records if r.node == "verwendung"]
    assert logged == [False, True]


async def test_two_calls_for_one_turn_at_once_reinforce_once(engine: LzgEngine, provider: TableProvider) -> None:
    """The mark is taken under the pair's lock: the second call waits for the first and finds it."""
    ids = await _used_nodes(engine, provider)
    at = T0 + timedelta(days=2)
    records = await asyncio.gather(
        *(engine.reinforce_used(Pair(*PAIR), ANSWER, ids, as_of=at, turn=LogScope("turn-7")) for _ in range(2))
    )
    assert sorted(r.wiederholt for r in records) == [False, True]
    assert [(await engine.node(Pair(*PAIR), i)).haeufigkeit for i in ids] == [3, 3, 3]


async def test_without_a_turn_id_every_call_reinforces(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ids = await _used_nodes(engine, provider)
    for _ in range(2):
        record = await engine.reinforce_used(Pair(*PAIR), ANSWER, ids, as_of=T0 + timedelta(days=2), turn=NO_TURN)
        assert not record.wiederholt
    assert [(await engine.node(Pair(*PAIR), i)).haeufigkeit for i in ids] == [4, 4, 4]  # 2 after promotion
    assert await _marks(store) == []


async def test_the_same_turn_id_in_another_pair_is_another_turn(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ours, theirs = await _used_nodes(engine, provider, PAIR), await _used_nodes(engine, provider, OTHER)
    at = T0 + timedelta(days=2)
    await engine.reinforce_used(Pair(*PAIR), ANSWER, ours, as_of=at, turn=LogScope("turn-1"))
    other = await engine.reinforce_used(Pair(*OTHER), ANSWER, theirs, as_of=at, turn=LogScope("turn-1"))
    assert not other.wiederholt and other.verwendet == theirs
    assert [(await engine.node(Pair(*OTHER), i)).haeufigkeit for i in theirs] == [3, 3, 3]
    assert await _marks(store) == sorted([(*PAIR, "turn-1"), (*OTHER, "turn-1")])


async def test_the_daily_decay_drops_old_marks_and_an_erasure_the_pairs(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    ours, theirs = await _used_nodes(engine, provider, PAIR), await _used_nodes(engine, provider, OTHER)
    await engine.reinforce_used(Pair(*PAIR), ANSWER, ours, as_of=T0 + timedelta(days=1), turn=LogScope("old"))
    await engine.reinforce_used(Pair(*PAIR), ANSWER, ours, as_of=T0 + timedelta(days=5), turn=LogScope("new"))
    await engine.reinforce_used(Pair(*OTHER), ANSWER, theirs, as_of=T0 + timedelta(days=5), turn=LogScope("new"))

    await engine.run_decay(T0 + timedelta(days=1 + VERWENDUNG_MARKE_TAGE, minutes=1))

    assert await _marks(store) == sorted([(*PAIR, "new"), (*OTHER, "new")])
    await LzgRights(engine).erase(PAIR, None)
    assert await _marks(store) == [(*OTHER, "new")]
