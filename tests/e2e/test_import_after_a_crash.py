"""The pipeline process killed (SIGKILL) in the middle of an import batch: the batch is sent again once
the pipeline is back, and every turn is in the memory once — the turns that arrived before the crash
answer ``repeated``, the others are written (docs/decisions.md "A resent turn is written once")."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg_dev.cli import observe_batches, parse_locomo
from novaberg_dev.embedded import StoreUrls
from novaberg_dev.stack import Stack
from tests.e2e.conftest import E2E_ENV, stack_of_its_own
from tests.e2e.helpers import Clients
from tests.stored import kzg_entry_turns

LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")
PAIR = common_pb2.Pair(user_id="import-crash@example.org", character_id="melanie")
TURNS = 160
"""Three chunks of the pipeline's writes (WRITE_CHUNK 64): the kill falls after the first is written."""


@pytest.fixture(scope="module")
async def own_stack(store_urls: StoreUrls, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """A stack of its own (Pixie left out, so no entry leaves the KZG): this module kills its pipeline."""
    async with stack_of_its_own(
        store_urls, tmp_path_factory.mktemp("e2e-import-crash"), "e2e_import_crash", ["log", "kzg", "lzg", "pipeline"],
        E2E_ENV,
    ) as running:  # fmt: skip
        yield running


async def _entries(redis_url: str) -> Counter[tuple[str, str]]:
    """How often each (turn_id, beobachter) stands among the pair's KZG entries."""
    return Counter(await kzg_entry_turns(redis_url, PAIR))


async def test_a_batch_resent_after_the_pipeline_was_killed_leaves_every_turn_once(
    own_stack: Stack, store_urls: StoreUrls
) -> None:
    turns = parse_locomo(json.loads(LOCOMO.read_text()), samples=["conv-26"], user_id=PAIR.user_id,
                         character_id=PAIR.character_id)[:TURNS]  # fmt: skip
    (batch,) = observe_batches(turns, size=TURNS)
    clients = Clients.connect(own_stack.addresses, own_stack.client_tls)
    try:
        first = asyncio.ensure_future(clients.pipeline.ObserveTurns(batch, timeout=120))
        while not await _entries(store_urls.redis_url):  # the first chunk is written
            assert not first.done(), "the batch ended before the kill"
            await asyncio.sleep(0.05)
        own_stack.kill_service("pipeline")
        with pytest.raises(grpc.aio.AioRpcError) as crashed:
            await first
        assert crashed.value.code() == grpc.StatusCode.UNAVAILABLE
        before = await _entries(store_urls.redis_url)
        assert 0 < len(before) and max(before.values()) == 1

        own_stack.start_service("pipeline")
        await own_stack.wait_serving("pipeline")
        resent = await clients.pipeline.ObserveTurns(batch, timeout=120)

        outcomes = Counter(r.kzg.outcome for r in resent.results)
        assert outcomes[kzg_pb2.STORE_OUTCOME_REPEATED] and outcomes[kzg_pb2.STORE_OUTCOME_STORED], (
            "the crash fell between the chunks: some turns had arrived, others not"
        )
        after = await _entries(store_urls.redis_url)
        assert max(after.values()) == 1, [key for key, count in after.items() if count > 1]
        # Every turn the gate let through stands once: those that arrived before the crash (the KZG may
        # finish a chunk the pipeline sent before it died) answer REPEATED, the rest were written now.
        role = {common_pb2.BEOBACHTER_USER: "user", common_pb2.BEOBACHTER_ASSISTANT: "assistant"}
        by_outcome = {
            outcome: {(t.turn_id, role[t.beobachter]) for t, r in zip(batch.turns, resent.results, strict=True)
                      if r.kzg.outcome == outcome}
            for outcome in (kzg_pb2.STORE_OUTCOME_REPEATED, kzg_pb2.STORE_OUTCOME_STORED)
        }  # fmt: skip
        assert set(after) == by_outcome[kzg_pb2.STORE_OUTCOME_REPEATED] | by_outcome[kzg_pb2.STORE_OUTCOME_STORED]
        assert set(before) <= by_outcome[kzg_pb2.STORE_OUTCOME_REPEATED]
        assert any(r.repeated for r in resent.results)  # session turn and entry both there: nothing written
        session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
        ids = [(t.turn_id, t.role) for t in session.turns]
        assert len(ids) == len(set(ids)) and ids[-1][0] == batch.turns[-1].turn_id
    finally:
        await clients.close()
