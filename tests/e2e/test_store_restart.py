"""Stores restarting under the running services (hardening: outages are retryable, not bugs).

The stack runs on stores of its own (durable mode), so they can be stopped and started again on
the same ports while the five services keep running. While they are down every call that needs one
answers UNAVAILABLE naming the store; once they answer again, turns succeed at once — no call may
fail on a connection the stores closed while they were down.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_dev.embedded import start_stores, stop_stores
from novaberg_dev.stack import Stack, start_stack
from tests.e2e.conftest import E2E_ENV
from tests.e2e.helpers import Clients

PAIR = common_pb2.Pair(user_id="restart-u", character_id="nova")
USER = common_pb2.BEOBACHTER_USER


@pytest.fixture
async def own_stack(tmp_path: Path) -> AsyncIterator[Stack]:
    running = await start_stack(tmp_path / "stack", extra_env=E2E_ENV)
    try:
        yield running
    finally:
        await running.stop()


async def _turn(clients: Clients, n: int) -> None:
    await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=PAIR, turn_id=f"r-{n}", beobachter=USER, text=f"My sister Anna planted {n} roses in the garden."))  # fmt: skip
    dossier = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=PAIR, turn_id=f"r-{n}", query_text="What did Anna plant?"))  # fmt: skip
    await clients.pipeline.Dispatch(pipeline_pb2.DispatchRequest(
        pair=PAIR, turn_id=f"r-{n}", user_prompt="What did Anna plant?", answer_text="Roses, in the garden.",
        cluster="bier", served_node_ids=list(dossier.served_node_ids)))  # fmt: skip


async def _status(call: object) -> tuple[grpc.StatusCode, str]:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as error:
        return error.code(), error.details() or ""
    return grpc.StatusCode.OK, ""


async def test_outage_is_unavailable_naming_the_store_and_turns_succeed_once_back(own_stack: Stack) -> None:
    assert own_stack.stores_dir is not None
    clients = Clients.connect(own_stack.addresses, own_stack.client_tls)
    try:
        await _turn(clients, 0)
        await asyncio.to_thread(stop_stores, own_stack.stores_dir)

        during = {
            "kzg.GetSession": await _status(clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR), timeout=15)),
            "lzg.ListNodes": await _status(clients.lzg.ListNodes(lzg_pb2.ListNodesRequest(pair=PAIR), timeout=15)),
            "log.Query": await _status(clients.log.Query(log_pb2.QueryRequest(turn_id="r-0"), timeout=15)),
            "pipeline.ObserveTurn": await _status(clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
                pair=PAIR, turn_id="r-down", beobachter=USER, text="Anna is here."), timeout=15)),
            "pipeline.BuildDossier": await _status(clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
                pair=PAIR, turn_id="r-down", query_text="Who is Anna?"), timeout=15)),
        }  # fmt: skip
        expected_store = {"kzg.GetSession": "Redis", "lzg.ListNodes": "PostgreSQL", "log.Query": "PostgreSQL",
                          "pipeline.ObserveTurn": "Redis", "pipeline.BuildDossier": ""}  # fmt: skip
        for call, (code, details) in during.items():
            assert code == grpc.StatusCode.UNAVAILABLE, (call, code, details)
            assert expected_store[call] in details, (call, details)

        await asyncio.to_thread(start_stores, own_stack.stores_dir)
        failures = []
        for n in range(1, 11):  # at once: the pools still hold connections from before the outage
            try:
                await _turn(clients, n)
            except grpc.aio.AioRpcError as error:
                failures.append(f"turn {n}: {error.code().name} {error.details()}")
        assert failures == []
        session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
        assert {t.turn_id for t in session.turns} >= {f"r-{n}" for n in range(11)}
    finally:
        await clients.close()
