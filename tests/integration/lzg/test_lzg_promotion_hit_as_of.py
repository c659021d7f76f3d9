"""A promotion judges its hit active or asleep as the reads do: by the hit's weight at the promotion's
instant (SPEC §5.3 step 4, §5.7, §11; migration 011 ``knoten_am``), not by the flag the daily decay
has not yet turned."""

from __future__ import annotations

from datetime import timedelta

import pytest

from novaberg_core.model import Pair
from services.lzg.engine import LzgEngine
from services.lzg.store import LzgStore
from services.lzg.types import PromotionOutcome
from services.lzg.weights import damp, half_reactivation_decay

from .conftest import PAIR, T0, TableProvider, at_cosine, promote, unit

pytestmark = pytest.mark.integration

DECAYED_AT = T0 + timedelta(days=8)
"""The last decay of the hit: it left 0.1001, still active. Under 0.1 from 0.666 days after."""


async def test_a_hit_faded_under_the_minimum_since_its_last_decay_is_half_reactivated(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    old = await promote(engine, provider, "Der alte Hund", unit(1, 1), salienz=0.9)
    async with store.pool.acquire() as conn:
        await conn.execute(
            "UPDATE lzg.lzg_knoten SET gewicht_decay = 0.1001, decay_am = $2 WHERE id = $1", old.node_id, DECAYED_AT
        )
    # Half a day on: 0.1001 · e^(−0.0015 · 0.5) = 0.10002, a memory: a duplicate, nothing changes.
    early = await promote(engine, provider, "Unser alter Hund", at_cosine(unit(1, 1), 0.9),
                          as_of=DECAYED_AT + timedelta(hours=12))  # fmt: skip
    assert (early.outcome, early.node_id) == (PromotionOutcome.DUPLICATE, old.node_id)
    node = await engine.node(Pair(*PAIR), old.node_id)
    assert (node.aktiv, node.gewicht_decay, node.decay_am) == (True, 0.1001, DECAYED_AT)

    # Two days on: 0.1001 · e^(−0.003) = 0.0998, which every read hides, though the flag is still set.
    woken_at = DECAYED_AT + timedelta(days=2)
    hit = await promote(engine, provider, "Der Hund von damals", at_cosine(unit(1, 1), 0.9, axis=6), as_of=woken_at)
    assert (hit.outcome, hit.node_id) == (PromotionOutcome.HALF_REACTIVATION, old.node_id)
    node = await engine.node(Pair(*PAIR), old.node_id)
    assert node.aktiv and node.gewicht_decay == pytest.approx(half_reactivation_decay(damp(0.9)))
    assert node.verstaerkt_am == node.decay_am == woken_at


async def test_a_hit_made_after_the_promotions_instant_is_a_duplicate(
    engine: LzgEngine, provider: TableProvider
) -> None:
    """An entry promoted late (its instant before the hit's turn) finds an active hit: judged when the hit
    was made, it is a memory — a duplicate, not a memory to wake."""
    made_at = T0 + timedelta(days=5)
    newer = await promote(engine, provider, "Der neue Hund", unit(1, 1), erstellt_am=made_at, as_of=made_at)
    late = await promote(engine, provider, "Unser neuer Hund", at_cosine(unit(1, 1), 0.9), as_of=T0)
    assert (late.outcome, late.node_id) == (PromotionOutcome.DUPLICATE, newer.node_id)
    node = await engine.node(Pair(*PAIR), newer.node_id)
    assert node.decay_am == made_at and node.gewicht_decay == pytest.approx(damp(0.9))
