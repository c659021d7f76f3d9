"""The LZG process killed mid-conversation: every turn still answers within its deadline — the turn is
observed without the registry, the dossier comes from the KZG, Dispatch records the turn — each
naming what it went without; once the LZG is back, the turns are whole again
(services/pipeline/deadline.py; docs/decisions.md "A turn goes on without a peer that does not answer")."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_dev.embedded import StoreUrls
from novaberg_dev.stack import Stack
from tests.e2e.conftest import E2E_ENV, stack_of_its_own
from tests.e2e.helpers import Clients

PAIR = common_pb2.Pair(user_id="lzg-outage@example.org", character_id="nova")
USER = common_pb2.BEOBACHTER_USER
DEADLINE_S = 4.0
PAUSE_S = 1.0


@pytest.fixture(scope="module")
async def own_stack(store_urls: StoreUrls, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """A stack of its own (Pixie left out): this module kills and restarts its LZG."""
    env = {**E2E_ENV, "NOVABERG_PIPELINE_SILENT_PEER_PAUSE_S": str(PAUSE_S)}
    async with stack_of_its_own(
        store_urls, tmp_path_factory.mktemp("e2e-lzg-outage"), "e2e_lzg_outage", ["log", "kzg", "lzg", "pipeline"], env
    ) as running:
        yield running


async def _turn(clients: Clients, n: int, text: str) -> tuple[list[str], list[str], list[str], float]:
    """Observe, dossier, dispatch of turn ``n`` with a deadline each: each call's ``fehler``, and the slowest call."""
    turn_id = f"o-{n}"
    started = time.monotonic()
    observed = await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=PAIR, turn_id=turn_id, beobachter=USER, text=text), timeout=DEADLINE_S)  # fmt: skip
    slowest = time.monotonic() - started
    started = time.monotonic()
    dossier = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=PAIR, turn_id=turn_id, query_text="Who is moving to Hamburg?"), timeout=DEADLINE_S)  # fmt: skip
    assert dossier.kzg_hits, "the KZG answered: its memories are in the dossier"
    slowest = max(slowest, time.monotonic() - started)
    started = time.monotonic()
    dispatched = await clients.pipeline.Dispatch(pipeline_pb2.DispatchRequest(
        pair=PAIR, turn_id=turn_id, user_prompt=text, answer_text="That sounds like a big step for Tom.",
        cluster="bier", served_node_ids=list(dossier.served_node_ids)), timeout=DEADLINE_S)  # fmt: skip
    assert dispatched.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED and dispatched.cluster_persisted == "bier"
    slowest = max(slowest, time.monotonic() - started)
    return list(observed.fehler), list(dossier.fehler), list(dispatched.fehler), slowest


async def test_turns_go_on_while_the_lzg_is_down_and_are_whole_once_it_is_back(own_stack: Stack) -> None:
    clients = Clients.connect(own_stack.addresses, own_stack.client_tls)
    try:
        whole = await _turn(clients, 0, "My brother Tom moves to Hamburg next month.")
        assert whole[:3] == ([], [], [])

        own_stack.kill_service("lzg")
        # The first turn waits for the LZG, the second finds it left out. Each names someone new, whom
        # the registry would have to resolve (names it already gave are remembered by the pipeline).
        for n, helper in ((1, "Lisa"), (2, "Marek")):
            observed, dossier, dispatched, slowest = await _turn(clients, n, f"{helper} helps Tom pack for Hamburg.")
            assert slowest < DEADLINE_S
            assert observed and all(f.startswith("LZG ") for f in observed), observed
            assert dossier and all(f.startswith("LZG ") for f in dossier), dossier
            assert any(f.startswith("usage reinforcement: ") for f in dispatched), dispatched
        session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR), timeout=DEADLINE_S)
        assert {"o-1", "o-2"} <= {t.turn_id for t in session.turns}  # the turns were not lost

        own_stack.start_service("lzg")
        await own_stack.wait_serving("lzg")
        await asyncio.sleep(PAUSE_S)
        back = await _turn(clients, 3, "Tom arrived in Hamburg.")
        assert back[:3] == ([], [], [])
    finally:
        await clients.close()
