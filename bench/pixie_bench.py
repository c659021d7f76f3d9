"""Promotion throughput end to end (SPEC §4.6, §5.3, §9): jobs/s with one and with two Pixie workers.

Setup, all in a temp dir: embedded PostgreSQL + Redis, and the log, KZG and LZG services as their
own processes (``novaberg_dev.stack``, as in production). ``--pairs`` pairs are seeded with
``--nodes`` LZG nodes each (real embeddings of varied German sentences, themes drawn from a few
common and many rare ones) — written straight into the LZG schema with the LZG's own store code,
because promoting 1,000 × pairs entries through the service first would take minutes; the service's
per-pair cache picks them up like nodes from another replica.

Each phase then queues ``--jobs`` new HIGH entries through the KZG service (spread over the pairs),
starts N Pixie workers as ``python -m services.pixie`` processes (N = 1, then 2; each with
``--concurrency`` pairs in flight) and times the queue from the first acked job until it is empty
and nothing is pending. Every job runs the full path: GetEntry → LZG Promote (embed, compare with
all ~1,000 nodes of the pair, insert, Trigger 1 edges, bridge row) → DeleteEntry with the
pair's hash_dirty marker → ack (one per batch), plus Pixie's lock, attempt bookkeeping and
pipeline-log records.

    .venv/bin/python bench/pixie_bench.py [--pairs 32] [--nodes 1000] [--jobs 1200] [--concurrency 8]

Targets (issue 6): ≥ 50 promotions/s with one worker, two workers ≥ 1.3× one. The last line
printed is one JSON object with ``promotions_per_s_1w`` and ``promotions_per_s_2w``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc.aio
import numpy as np
import psutil
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.embedding import kzg_embed_text, lzg_embed_text, make_provider
from novaberg_core.model import Ei, Magnets, Pair
from novaberg_dev.embedded import stores_status
from novaberg_dev.embedded.state import free_port
from novaberg_dev.stack import REPO_ROOT, Stack, start_stack
from services.kzg.store import PROMOTION_GROUP, PROMOTION_STREAM
from services.lzg.rows import NewNode
from services.lzg.store import LzgStore
from services.lzg.weights import node_weights_at_creation
from services.pixie.store import PixieStore
from services.pixie.tasks import TASK_DECAY, TASK_PROMOTION

SUBJECTS = (
    "Meister", "Seine Schwester", "Der Nachbar", "Die Kollegin", "Sein Vater", "Die alte Lehrerin",
    "Sein bester Freund", "Die Tochter", "Der Hausarzt", "Die Chefin", "Sein Onkel", "Die Großmutter",
)
VERBS = (
    "erzählt von", "träumt von", "streitet über", "lacht über", "plant", "vermisst", "repariert",
    "fotografiert", "malt", "verkauft", "sucht", "entdeckt", "kocht", "organisiert", "bewundert",
)
OBJECTS = (
    "einem alten Segelboot", "dem Schachturnier", "einer Reise nach Island", "dem kaputten Fahrrad",
    "einem Bienenstock", "der Hochzeit im Sommer", "einem Geigenkonzert", "dem Umzug nach Leipzig",
    "einer Wanderung im Allgäu", "dem Gemüsebeet", "einem verlorenen Schlüssel", "der Modelleisenbahn",
    "einem Marathon", "dem Töpferkurs", "einer Ausstellung über Vulkane", "dem Familienfest",
    "einer Bewerbung als Förster", "dem Kater Moritz", "einer Operation am Knie", "dem Dachboden",
)
CIRCUMSTANCES = (
    "trotz des Regens", "am frühen Morgen", "voller Stolz", "mit zitternden Händen", "nach langem Zögern",
    "zum ersten Mal", "gemeinsam mit Freunden", "heimlich", "in der Mittagspause", "unter Tränen",
    "mit großer Geduld", "im Winter", "zum Geburtstag", "ohne Geld", "auf dem Balkon",
)
COMMON_THEMES = ("Familie", "Arbeit", "Freizeit", "Gesundheit", "Reisen")
RARE_THEMES = tuple(f"Thema{i:03d}" for i in range(500))
HEALTH_PIXIE = "novaberg.pixie.v1.PixieService"


def sentence(rng: random.Random) -> str:
    return (
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}, {rng.choice(CIRCUMSTANCES)}, "
        f"und erinnert sich an {rng.choice(OBJECTS)} {rng.choice(CIRCUMSTANCES)}."
    )


def themes(rng: random.Random) -> tuple[str, ...]:
    """A realistic mix: half the entries carry one of a few common themes, all carry a rare one."""
    chosen = [rng.choice(RARE_THEMES)]
    if rng.random() < 0.5:
        chosen.insert(0, rng.choice(COMMON_THEMES))
    return tuple(chosen)


def pair_of(i: int) -> common_pb2.Pair:
    return common_pb2.Pair(user_id=f"bench-user-{i:02d}", character_id="nova")


async def seed_nodes(stack: Stack, provider: Any, pairs: int, nodes: int, rng: random.Random) -> float:
    started = time.perf_counter()
    store = await LzgStore.open(stack.urls.postgres_url, dimension=provider.dimension, max_size=2)
    weights = node_weights_at_creation(0.9)
    now = datetime.now(UTC)
    try:
        for p in range(pairs):
            pair = pair_of(p)
            texts = [sentence(rng) for _ in range(nodes)]
            vectors = await provider.embed([lzg_embed_text(t) for t in texts])
            seeded = [
                NewNode(
                    kzg_quell_key=f"kzg:{pair.user_id}:{pair.character_id}:seed{n}",
                    pair=Pair(pair.user_id, pair.character_id), beobachter="user", inhalt=text,
                    embedding=np.asarray(vector, dtype=np.float32), dimension="interessen",
                    gewicht_roh=weights.gewicht_roh, gewicht_absolut=weights.gewicht_absolut,
                    gewicht_decay=weights.gewicht_decay, haeufigkeit=1, erstellt_am=now, kzg_erstellt_am=now,
                    themen=list(themes(rng)), gedaechtnistyp="episodisch", magnets=Magnets(),
                    ei=Ei(emotion="freude", arousal=0.4),
                )
                for n, (text, vector) in enumerate(zip(texts, vectors, strict=True))
            ]
            async with store.pair_writer(pair.user_id, pair.character_id) as tx:
                for node in seeded:  # the LZG's own insert (PairTx.insert_node), so the columns never drift
                    await tx.insert_node(node)
    finally:
        await store.close()
    return time.perf_counter() - started


async def enqueue(kzg: kzg_pb2_grpc.KzgServiceStub, provider: Any, pairs: int, jobs: int, rng: random.Random,
                  tag: str) -> None:
    texts = [f"{sentence(rng)} ({tag})" for _ in range(jobs)]
    entry_themes = [themes(rng) for _ in range(jobs)]
    vectors = await provider.embed([kzg_embed_text(t, x) for t, x in zip(entry_themes, texts, strict=True)])
    semaphore = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with semaphore:
            response = await kzg.StoreEntry(kzg_pb2.StoreEntryRequest(
                pair=pair_of(i % pairs), beobachter=common_pb2.BEOBACHTER_USER, inhalt=texts[i],
                salience=common_pb2.SalienceResult(salienz=0.9, themen=list(entry_themes[i]),
                                                   gedaechtnistyp="episodisch", dimension="interessen"),
                turn=common_pb2.TurnContext(turn_id=f"bench-{tag}-{i}"), embedding=list(map(float, vectors[i])),
                writer="bench.pixie",
            ))
            assert response.queued_for_promotion

    await asyncio.gather(*(one(i) for i in range(jobs)))


async def queue_state(client: aioredis.Redis) -> tuple[int, int]:
    length = int(await client.xlen(PROMOTION_STREAM))
    try:
        pending = int((await client.xpending(PROMOTION_STREAM, PROMOTION_GROUP))["pending"])
    except ResponseError:
        pending = 0
    return length, pending


@dataclass
class PhaseResult:
    workers: int
    concurrency: int
    jobs: int
    seconds: float
    per_s: float
    counts: dict[str, int]
    cpu_ms_per_job: dict[str, float]
    """CPU time per job of each process group during the timed window (where the time goes)."""
    busy_cores: float
    """Average busy CPU cores of the whole machine during the timed window."""


def _cpu_s(pid: int) -> float:
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.user + times.system)


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and its children (PostgreSQL's backends are children of the postmaster)."""
    try:
        root = psutil.Process(pid)
        return _cpu_s(pid) + sum(_cpu_s(child.pid) for child in root.children(recursive=True))
    except psutil.Error:
        return 0.0


def cpu_snapshot(stack: Stack, pixies: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    """CPU seconds so far of the services, the Pixie workers and this stack's two stores."""
    snap = {name: _cpu_s(process.pid) for name, process in stack.processes.items()}
    snap["pixie"] = sum(_cpu_s(p.pid) for p in pixies)
    status = stores_status(stack.data_dir / "stores")
    for name, store in (("postgres", status.postgres), ("redis", status.redis)):
        snap[name] = _tree_cpu_s(store.pid) if store is not None else 0.0
    return snap


async def edges_per_new_node(log_addr: str) -> float:
    """Mean ``edges_created`` of the new nodes, from Pixie's own decision rows in the pipeline log."""
    async with grpc.aio.insecure_channel(log_addr) as channel:
        rows = (await log_pb2_grpc.LogServiceStub(channel).Query(
            log_pb2.QueryRequest(node="promotion", art="switch", quelle="Pixie", limit=10_000)
        )).records
    edges = [
        json.loads(r.inhalt_json)["massstab"]["edges_created"] for r in rows
        if json.loads(r.inhalt_json).get("ausgang") == "neuer_knoten"
    ]
    return sum(edges) / len(edges) if edges else 0.0


def busy_seconds() -> float:
    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def spawn_pixie(
    stack: Stack, replica: str, concurrency: int, batch: int, log_dir: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = dict(stack.env)
    env.update({
        "NOVABERG_PIXIE_PORT": str(port),
        "NOVABERG_PIXIE_REPLICA_ID": replica,
        "NOVABERG_PIXIE_CONCURRENCY": str(concurrency),
        "NOVABERG_PIXIE_BATCH_SIZE": str(batch),
        "NOVABERG_PIXIE_BLOCK_MS": "200",
        "NOVABERG_PIXIE_LOG_LEVEL": "WARNING",
        "NOVABERG_PIXIE_METRICS_PORT": str(free_port()),  # each worker its own (the stack's is the stack Pixie's)
    })
    with (log_dir / f"{replica}.log").open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "services.pixie"], cwd=REPO_ROOT, env=env,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return process, f"127.0.0.1:{port}"


async def phase(stack: Stack, kzg: kzg_pb2_grpc.KzgServiceStub, provider: Any, args: argparse.Namespace,
                workers: int, concurrency: int, batch: int, rng: random.Random, log_dir: Path) -> PhaseResult:
    tag = f"{workers}w-c{concurrency}"
    await enqueue(kzg, provider, args.pairs, args.jobs, rng, tag)
    client = aioredis.from_url(stack.urls.redis_url, protocol=2)
    replicas = [f"bench-{tag}-{i}" for i in range(workers)]
    processes = [spawn_pixie(stack, r, concurrency, batch, log_dir) for r in replicas]
    try:
        total, _ = await queue_state(client)
        assert total == args.jobs, f"queue holds {total} jobs, expected {args.jobs}"
        start_len, t0 = total, 0.0
        pixies = [p for p, _ in processes]
        while True:  # the clock starts at the first ack (process start-up is not throughput)
            length, _ = await queue_state(client)
            if length < total:
                start_len, t0 = length, time.perf_counter()
                cpu0, busy0 = cpu_snapshot(stack, pixies), busy_seconds()
                break
            for process, _ in processes:
                if process.poll() is not None:
                    raise SystemExit(f"a Pixie worker exited with {process.returncode}; see {log_dir}")
            await asyncio.sleep(0.01)
        deadline = t0 + 600
        while True:
            length, pending = await queue_state(client)
            if length == 0 and pending == 0:
                t1 = time.perf_counter()
                cpu1, busy1 = cpu_snapshot(stack, pixies), busy_seconds()
                break
            if time.perf_counter() > deadline:
                raise SystemExit(f"queue not drained after 600 s ({length} left); see {log_dir}")
            await asyncio.sleep(0.01)
    finally:
        for process, _ in processes:
            process.send_signal(signal.SIGTERM)
        for process, _ in processes:
            await asyncio.to_thread(process.wait, 30)
        await client.aclose()
    counts: dict[str, int] = {}
    store = await PixieStore.open(stack.urls.postgres_url, max_size=2)
    try:
        for run in await store.list_runs(TASK_PROMOTION, 1000):
            if run.replica in replicas:
                for key, value in run.counts.items():
                    counts[key] = counts.get(key, 0) + value
    finally:
        await store.close()
    processed = start_len
    seconds = t1 - t0
    cpu = {k: 1000.0 * (cpu1[k] - cpu0.get(k, 0.0)) / processed for k in cpu1}
    return PhaseResult(
        workers, concurrency, processed, seconds, processed / seconds, counts, cpu, (busy1 - busy0) / seconds
    )


async def main(args: argparse.Namespace) -> None:
    rng = random.Random(20261129)
    data_dir = Path(tempfile.mkdtemp(prefix="pixie-bench-"))
    log_dir = data_dir / "pixie-logs"
    log_dir.mkdir()
    extra_env = {
        "NOVABERG_EMBEDDING": args.embedding,
        "NOVABERG_KZG_REINFORCEMENT": "aus",
        "NOVABERG_LOG_LEVEL": "WARNING",
        # One LZG serves every worker here (production runs LZG replicas): room for two workers'
        # 2 × 8 promotions in flight, each holding a connection for its transaction.
        "NOVABERG_LZG_POOL_MAX": "24",
    }
    print(f"starting stores and log/kzg/lzg services in {data_dir} …", flush=True)
    # Plaintext (numbers comparable with the earlier runs); the bench's own channels are plaintext too.
    stack = await start_stack(data_dir, services=("log", "kzg", "lzg"), extra_env=extra_env, mtls=False)
    try:
        provider = make_provider(args.embedding)
        seed_s = await seed_nodes(stack, provider, args.pairs, args.nodes, rng)
        print(f"seeded {args.pairs} pairs × {args.nodes} nodes in {seed_s:.1f} s", flush=True)
        # The daily decay would otherwise start on the first worker's first tick.
        store = await PixieStore.open(stack.urls.postgres_url, max_size=2)
        try:
            await store.set_paused(TASK_DECAY, True, replica="bench", now=datetime.now(UTC))
        finally:
            await store.close()
        async with grpc.aio.insecure_channel(stack.addresses["kzg"]) as kzg_channel, \
                grpc.aio.insecure_channel(stack.addresses["lzg"]) as lzg_channel:
            kzg = kzg_pb2_grpc.KzgServiceStub(kzg_channel)
            lzg = lzg_pb2_grpc.LzgServiceStub(lzg_channel)
            # The configured worker, then a serial one (one job in flight per worker): on a host whose
            # cores the first already fills, the second shows whether replicas add throughput.
            configs = [(args.concurrency, args.batch), (1, 8)]
            results = [
                await phase(stack, kzg, provider, args, w, c, b, rng, log_dir) for c, b in configs for w in (1, 2)
            ]
            stats = await lzg.GetPairStats(lzg_pb2.GetPairStatsRequest(pair=pair_of(0)))
            mean_edges = await edges_per_new_node(stack.addresses["log"])  # workers flushed at SIGTERM
    finally:
        await stack.stop(grace=10.0)

    print()
    print(f"pairs {args.pairs} × ~{args.nodes} nodes (pair 0 now: {stats.nodes_active} nodes, {stats.edges} edges), "
          f"model {provider.model_id}, "
          f"{os.cpu_count()} CPUs; Trigger 1 formed {mean_edges:.0f} edge rows per new node")
    print(f"{'workers':>7} {'pairs in flight':>15} {'jobs':>6} {'seconds':>8} {'jobs/s':>8} {'busy cores':>10}  outcomes")
    for r in results:
        shown = {k: v for k, v in sorted(r.counts.items()) if v and k not in ("jobs", "acked")}
        print(f"{r.workers:>7} {r.concurrency:>15} {r.jobs:>6} {r.seconds:>8.2f} {r.per_s:>8.1f} "
              f"{r.busy_cores:>10.2f}  {shown}")
    for r in results:
        total = sum(r.cpu_ms_per_job.values())
        parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r.cpu_ms_per_job.items(), key=lambda kv: -kv[1]))
        print(f"CPU ms per job, {r.workers}w × {r.concurrency}: {total:.1f} = {parts}; "
              f"the one LZG process busy {r.cpu_ms_per_job.get('lzg', 0.0) * r.per_s / 1000:.2f} of a core")
    one, two, serial_one, serial_two = (r.per_s for r in results)
    print(f"two workers / one: {two / one:.2f}× (serial workers: {serial_two / serial_one:.2f}×); "
          f"targets: ≥ 50/s with one worker, ≥ 1.3× with two")
    print(json.dumps({
        "promotions_per_s_1w": round(one, 1),
        "promotions_per_s_2w": round(two, 1),
        "speedup_2w": round(two / one, 2),
        "busy_cores_1w": round(results[0].busy_cores, 2),
        "busy_cores_2w": round(results[1].busy_cores, 2),
        "serial_promotions_per_s_1w": round(serial_one, 1),
        "serial_promotions_per_s_2w": round(serial_two, 1),
        "pairs": args.pairs,
        "nodes_per_pair": args.nodes,
        "jobs_per_phase": args.jobs,
        "cpus": os.cpu_count(),
    }))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=32, help="more than a worker's pairs in flight, so a second worker has pairs of its own")
    parser.add_argument("--nodes", type=int, default=1000, help="seeded nodes per pair")
    parser.add_argument("--jobs", type=int, default=1200, help="promotion jobs per phase")
    parser.add_argument("--concurrency", type=int, default=8, help="pairs in flight per worker")
    parser.add_argument("--batch", type=int, default=32, help="jobs per stream read")
    parser.add_argument("--embedding", default="use", choices=("use", "minilm"))
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
