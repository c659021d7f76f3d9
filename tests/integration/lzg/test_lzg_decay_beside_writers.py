"""The daily decay run back to back beside a pair's usage reinforcements: no deadlock (migration 013).

Before migration 013 the decay's one statement over all pairs waited for rows a writer held while
holding the rows it had decayed: over 40 s on this pair, PostgreSQL aborted 4 of 5,841 calls with a
deadlock. CI runs the probe for 2 s; ``NOVABERG_DECAY_PROBE_S=40`` runs it as measured in
docs/decisions.md "The decay waits for no writer".
"""

from __future__ import annotations

import asyncio
import os
import random
from datetime import timedelta

import numpy as np
import pytest

from services.lzg.engine import LzgEngine
from services.lzg.store import LzgStore

from .conftest import PAIR, T0, TableProvider, promote

pytestmark = pytest.mark.integration

PROBE_S = float(os.environ.get("NOVABERG_DECAY_PROBE_S", "2"))


async def test_decay_and_reinforcements_of_one_pair_never_deadlock(
    engine: LzgEngine, provider: TableProvider, store: LzgStore
) -> None:
    rng = np.random.default_rng(1)
    ids = []
    for i in range(400):
        vector = rng.normal(size=8)
        node = await promote(  # seven themes: each reinforcement recomputes a few hundred edges (Trigger 2)
            engine, provider, f"Erinnerung {i}", (vector / np.linalg.norm(vector)).astype(np.float32), themen=[f"t{i % 7}"]
        )
        ids.append(node.node_id)
    for start in range(0, len(ids), 37):  # rows rewritten out of id order, as a store in use has them
        await store.reinforce_used(*PAIR, ids[start : start + 37][::-1], 0.01, T0 + timedelta(days=1), 0.55)

    runs = {"decay": 0, "reinforce": 0}
    failures: list[str] = []
    stop = asyncio.Event()

    async def decay() -> None:
        while not stop.is_set():  # every run decays every node: each as_of a second later
            as_of = T0 + timedelta(days=10, seconds=runs["decay"])
            try:
                await store.run_decay(as_of, 0.0015, 0.1)
            except Exception as error:  # what failed is the finding
                failures.append(f"decay: {type(error).__name__}: {error}")
            runs["decay"] += 1

    async def reinforce() -> None:
        draw = random.Random(7)
        while not stop.is_set():
            try:
                await store.reinforce_used(*PAIR, draw.sample(ids, 6), 0.01, T0 + timedelta(days=3), 0.55)
            except Exception as error:
                failures.append(f"reinforce: {type(error).__name__}: {error}")
            runs["reinforce"] += 1

    tasks = [asyncio.create_task(decay()), asyncio.create_task(reinforce())]
    await asyncio.sleep(PROBE_S)
    stop.set()
    await asyncio.gather(*tasks)
    print(f"decay beside reinforcements for {PROBE_S:g} s: {runs}, failures {len(failures)}")
    assert failures == []
    assert runs["decay"] > 0 and runs["reinforce"] > 0
