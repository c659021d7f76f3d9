"""SIGKILL of a real Pixie process in the middle of promoting, then a restart (SPEC §4.6, §9).

Pixie runs as ``python -m services.pixie`` (as in production) against the real KZG and LZG
services of this test process. It is killed without any shutdown step while jobs are in flight;
a fresh replica then finishes the queue. Wherever the kill landed, every queued entry ends as
exactly one node and leaves the KZG, and nothing stays pending.
"""

from __future__ import annotations

import asyncio
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg_core.server import RunningServer
from novaberg_dev.embedded.state import free_port
from services.pixie.store import PixieStore
from services.pixie.tasks import TASK_DECAY
from tests.polling import eventually
from tests.service.pixie.conftest import QueueState, kzg_has, nodes_of, queue_state, spawn_pixie, store_entry

USERS = ("meister", "anna", "ben")
SUBJECTS = (
    "Gartenarbeit", "Schachturnier", "Segeltörn", "Kochkurs", "Bergwanderung", "Geigenunterricht",
    "Töpferei", "Marathonlauf", "Imkerei", "Modelleisenbahn", "Fotografie", "Ahnenforschung",
)
PLACES = ("in Lübeck", "am Bodensee", "im Allgäu", "in Leipzig", "auf Rügen")


_SETTINGS = {
    "NOVABERG_PIXIE_BLOCK_MS": "100",
    "NOVABERG_PIXIE_RECLAIM_IDLE_MS": "300",
    "NOVABERG_PIXIE_BATCH_SIZE": "6",
}


async def _nodes_made(lzg: lzg_pb2_grpc.LzgServiceStub) -> int:
    pairs = [common_pb2.Pair(user_id=user, character_id="nova") for user in USERS]
    return sum([len(await nodes_of(lzg, pair)) for pair in pairs])


async def test_sigkill_mid_promotion_then_restart_leaves_one_node_per_entry(
    pg_url: str,
    kzg_server: RunningServer,
    lzg_server: RunningServer,
    kzg: kzg_pb2_grpc.KzgServiceStub,
    lzg: lzg_pb2_grpc.LzgServiceStub,
    processes: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    store = await PixieStore.open(pg_url)  # the daily decay stays out of the way
    try:
        await store.set_paused(TASK_DECAY, True, replica="test", now=datetime.now(UTC))
    finally:
        await store.close()
    queued: list[tuple[common_pb2.Pair, str]] = []
    for i in range(120):
        pair = common_pb2.Pair(user_id=USERS[i % 3], character_id="nova")
        text = f"{pair.user_id} erzählt von {SUBJECTS[i % 12]} {PLACES[i % 5]} und Erlebnis Nummer {i}."
        stored = await store_entry(kzg, text, salienz=0.9, pair=pair, themen=(SUBJECTS[i % 12],))
        assert stored.queued_for_promotion
        queued.append((pair, stored.kzg_key))

    port = free_port()
    first = spawn_pixie(
        pg_url, kzg_server.target, lzg_server.target, "pixie-doomed", port, tmp_path / "a.log", _SETTINGS
    )
    processes.append(first)
    # Kill as soon as promotion is under way (some nodes exist, jobs are still in flight).
    await eventually(lambda: _nodes_made(lzg), lambda made: made >= 4, within=30, every=0.005, what="4 nodes")
    first.kill()
    first.wait()
    before_restart = await queue_state(kzg)
    assert before_restart.length > 0, "the kill came too late to test anything"

    port2 = free_port()
    second = spawn_pixie(
        pg_url, kzg_server.target, lzg_server.target, "pixie-restarted", port2, tmp_path / "b.log", _SETTINGS
    )
    processes.append(second)
    await eventually(
        lambda: queue_state(kzg), lambda state: state == QueueState(0, 0), within=30, every=0.05,
        what=lambda: "an empty queue; the restarted Pixie's log: " + (tmp_path / "b.log").read_text()[-3000:],
    )  # fmt: skip

    # Every entry ended exactly once: as a node that left the KZG, or as a duplicate of an
    # earlier node that stays in the KZG (SPEC §5.3 step 4); no kzg_quell_key twice.
    nodes = 0
    for user in USERS:
        pair = common_pb2.Pair(user_id=user, character_id="nova")
        keys = [n.kzg_quell_key for n in await nodes_of(lzg, pair)]
        assert len(keys) == len(set(keys))
        mine = [k for p, k in queued if p.user_id == user]
        assert set(keys) <= set(mine)
        for key in mine:
            assert (key in keys) != await kzg_has(kzg, key, pair), key
        nodes += len(keys)
    assert nodes >= 60  # most sentences are distinct enough to become nodes
    second.terminate()
    assert await asyncio.to_thread(second.wait, 15) == 0
