"""SIGKILL of a real Pixie process in the middle of an erasure, then a restart (docs/decisions.md
"Erasure"): the erasure was recorded before any store was touched and each step when it finished,
so the restarted Pixie finishes it at start.

Pixie runs as ``python -m services.pixie``; its LZG address first points at a socket that accepts
and never answers, so the erasure hangs in its LZG step (the KZG step done and recorded) when the
process is killed without any shutdown step.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import grpc
import grpc.aio
import pytest

from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2, pixie_pb2_grpc
from novaberg_core.server import RunningServer
from novaberg_dev.embedded.state import free_port
from tests.polling import eventually
from tests.service.pixie.conftest import PAIR, PixieCluster, kzg_has, nodes_of, spawn_pixie, store_entry


@pytest.fixture
async def silent_address() -> AsyncIterator[str]:
    """A TCP address that accepts connections and never answers (a hung LZG)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        with contextlib.suppress(Exception):
            while await reader.read(65536):
                pass

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()


_SETTINGS = {"NOVABERG_PIXIE_SCHEDULER_INTERVAL_S": "0.2", "NOVABERG_PIXIE_RPC_TIMEOUT_S": "60"}


async def _erasure(pg_url: str) -> asyncpg.Record | None:
    conn = await asyncpg.connect(pg_url)
    try:
        return await conn.fetchrow("SELECT * FROM pixie.erasures ORDER BY id DESC LIMIT 1")
    except asyncpg.UndefinedTableError:
        return None
    finally:
        await conn.close()


def _tail(log: Path) -> str:
    return log.read_text()[-3000:]


async def _serving(address: str) -> pixie_pb2_grpc.PixieServiceStub:
    channel = grpc.aio.insecure_channel(address)
    await asyncio.wait_for(channel.channel_ready(), timeout=60)
    return pixie_pb2_grpc.PixieServiceStub(channel)


async def test_sigkill_mid_erasure_then_restart_finishes_it(
    pg_url: str,
    cluster: PixieCluster,
    kzg_server: RunningServer,
    lzg_server: RunningServer,
    kzg: kzg_pb2_grpc.KzgServiceStub,
    lzg: lzg_pb2_grpc.LzgServiceStub,
    silent_address: str,
    processes: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    builder = await cluster.start("pixie-builder")
    for i, text in enumerate(("Meister fährt im Sommer an die Ostsee.", "Die Katze heißt Minka.",
                              "Meister baut einen Schrank aus Eiche.")):  # fmt: skip
        await store_entry(kzg, text, salienz=0.9, turn_id=f"k{i}")
    await builder.api.TriggerTask(pixie_pb2.TriggerTaskRequest(task="synapsen_promotion", force=True))
    queued = await store_entry(kzg, "Meister trinkt schwarzen Kaffee.", salienz=0.9)
    assert len(await nodes_of(lzg)) == 3
    await builder.api.PauseTask(pixie_pb2.PauseTaskRequest(task="synapsen_promotion"))  # the queue stays put
    await cluster.stop(builder)

    port = free_port()
    doomed = spawn_pixie(
        pg_url, kzg_server.target, silent_address, "pixie-doomed", port, tmp_path / "a.log", _SETTINGS
    )
    processes.append(doomed)
    api = await _serving(f"127.0.0.1:{port}")
    call = asyncio.ensure_future(api.ErasePair(pixie_pb2.ErasePairRequest(pair=PAIR, reason="Widerruf")))
    await eventually(  # until the KZG step is recorded and the LZG step hangs
        lambda: _erasure(pg_url), lambda row: row is not None and list(row["steps_done"]) == ["kzg"],
        within=30, every=0.05, what=lambda: "the KZG step; Pixie's log: " + _tail(tmp_path / "a.log"),
    )  # fmt: skip
    assert not await kzg_has(kzg, queued.kzg_key)  # the KZG is erased ...
    assert len(await nodes_of(lzg)) == 3  # ... the LZG not yet
    doomed.kill()
    doomed.wait()
    with pytest.raises(grpc.aio.AioRpcError):
        await call
    row = await _erasure(pg_url)
    assert row is not None and row["state"] == "running" and row["user_id"] == PAIR.user_id

    port2 = free_port()
    second = spawn_pixie(
        pg_url, kzg_server.target, lzg_server.target, "pixie-restarted", port2, tmp_path / "b.log", _SETTINGS
    )
    processes.append(second)
    row = await eventually(
        lambda: _erasure(pg_url), lambda row: row is not None and row["state"] == "done",
        within=30, every=0.05, what=lambda: "the erasure done; Pixie's log: " + _tail(tmp_path / "b.log"),
    )  # fmt: skip
    assert row is not None
    assert list(row["steps_done"]) == ["kzg", "lzg", "pixie", "log"]
    assert row["user_id"] is None and row["character_id"] is None
    assert await nodes_of(lzg) == []
    assert list((await kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))).turns) == []
    second.terminate()
    assert await asyncio.to_thread(second.wait, 15) == 0
