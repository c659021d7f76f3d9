"""End-to-end turn latency over gRPC: observe + dossier + dispatch, with a pair of 10,000 nodes (SPEC §7).

Setup (not timed):

1. Embedded PostgreSQL + Redis in a temporary directory; the log, KZG, LZG and pipeline services
   as separate processes (``novaberg_dev.stack``), one embedding model everywhere (``--model``,
   default the offline default), one BLAS thread per process (``OPENBLAS_NUM_THREADS=1``, as the
   LZG and pipeline entry points set it; a spinning second BLAS thread per process starves the
   others on two cores). Pixie is
   left out so no background promotion competes for the two cores while turns are timed (the
   HIGH turns of the run wait in the promotion queue).
2. A synthetic pair of ``--nodes`` LZG nodes: English sentences about ~60 topics (Zipf-distributed,
   so a few themes are common and many rare), ~120 registered entities (people, places,
   organisations), no timeline refs. The nodes are written through the LZG's own store
   code, with weights and edges computed by the LZG's own formulas (SPEC §5.2, §5.4) — as
   promotion would, except that each new node is connected only to up to ``--edges`` earlier
   nodes that share an entity or a theme (production measured ~140 out-edges per node). The
   tables are then vacuumed and analysed, as autovacuum leaves a store that is not freshly loaded
   (measured alternately: Trigger 2 in ReinforceUsed 5.77 / 4.65 → 4.22 / 4.09 ms per call; the
   memory time moved within the machine's drift).
3. ``--kzg`` user and character turns observed through the pipeline, so the KZG holds a history.

Timed: ``--turns`` turns (after ``--warmup``), each ObserveTurn(user text) → BuildDossier(same
text) → Dispatch(an answer, cluster drawn from the table). 60 % of the answers take up the
strongest memory served (the seed measured 15 of 25 real answers carrying a reinforcement,
syn §7.1a), the others take up none. Per turn:

- wall time of the three RPCs as the client sees them;
- model time: all embedding work of the turn, as the pipeline reports it for each call
  (``BuildDossierResponse.model_ms`` and the trailing metadata ``novaberg-model-ms``): the
  KZG embed texts of both observed turns, the query, and the answer — the pipeline embeds the
  answer itself and hands the vector to the LZG's ReinforceUsed (``answer_vector``), so no model
  runs outside the pipeline during a turn (the LZG embeds nothing, the KZG gets its vectors);
- memory time = wall − model time: everything the memory core spends around the models
  (validation, Redis, PostgreSQL, spreading, rendering, the analyzer's registry calls, gRPC);
  "of it in the pipeline" is the part measured inside the pipeline process (its handlers,
  including the KZG/LZG calls they wait for), the rest is the client's gRPC round trips;
- CPU per turn of each process, and what a turn asks of the others: RPCs per method (the services'
  ``rpc.server.duration`` counts) and the servers' mean milliseconds per call (its sums), Redis commands and Redis's time per command (``INFO
  commandstats``; a Lua script's own calls are counted, its time includes theirs), PostgreSQL
  transactions.

    .venv/bin/python bench/turn_bench.py [--nodes 10000] [--turns 200] [--warmup 20] [--loop uvloop]

The client calls from uvloop, as the services call each other (``--loop asyncio`` for the standard
loop: measured alternately, 0.3–0.5 ms more of the client's round trips per turn).

Target on this machine: memory time p50 ≤ 25 ms, p99 ≤ 60 ms. The machine's pace is measured just
before and after the timed turns (``bench.processes.machine_pace``: a Python loop, and a round trip
between two processes, which moves with how fast the VM wakes an idle CPU); compare runs only at a
similar pace. The last line printed is one JSON object with ``memory_p50_ms``, ``memory_p99_ms``,
``model_p50_ms``, ``pace_python_loop_s`` and ``pace_round_trip_us`` (means of before and after).
"""

from __future__ import annotations

import os

# One BLAS thread in this process too (it embeds the seed corpus), as the services do: a spinning second BLAS thread steals the two cores from the services.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import grpc.aio
import uvloop

from bench.processes import MachinePace, cpu_seconds, machine_pace, percentile, round_trips, stack_pids
from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.clusters import default_clusters
from novaberg_core.embedding import (
    DEFAULT_PROVIDER,
    lzg_embed_text,
    make_provider,
    profile_for,
)
from novaberg_core.model import Ei, Magnets, Pair
from novaberg_core.server import EVENT_LOOPS
from novaberg_dev.embedded import start_stores, stop_stores
from novaberg_dev.stack import start_stack
from services.lzg.layers import Compared, TimelineRef, layers_between
from services.lzg.store import EdgeInsert, LzgStore, NewNode
from services.lzg.weights import damp, edge_raw, node_weights_at_creation

PAIR = common_pb2.Pair(user_id="bench-meister", character_id="nova")
SERVICES = ("log", "kzg", "lzg", "pipeline")

PEOPLE = (
    "Anna Tom Lena Max Sophie Paul Mia Felix Laura Jonas Clara Noah Emma Lukas Hannah Elias Marie Leon Julia "
    "David Sarah Simon Nina Jakob Lea Moritz Eva Ben Rosa Karl Ida Otto Greta Emil Frieda Anton Mila Theo Luise "
    "Oskar Alma Henri Vera Bruno Marta Fritz Helga Kurt Ilse Hugo Erna Rudi Berta Willi Olga Franz Edith Gustav"
).split()
PLACES = (
    "Berlin Hamburg Munich Vienna Zurich Prague Lisbon Rome Paris Oslo Treuchtlingen Nuremberg Leipzig Dresden "
    "Cologne Bremen Bonn Graz Salzburg Innsbruck Bologna Verona Lyon Porto Seville Krakow Gdansk Bergen Tallinn "
    "Riga Vilnius Ghent Bruges Utrecht Aarhus Malmo Turku Split Ljubljana Bratislava"
).split()
ORGS = "Siemens Bosch Charite Lufthansa Adidas Bayer Zeiss Miele Haribo Lidl Rewe Audi Porsche Stihl Kaercher Leica Faber Steiff Ritter Melitta".split()
TOPICS = (
    ("baking", "sourdough bread"), ("hiking", "the mountains"), ("gardening", "tomato plants"),
    ("cooking", "a lentil soup"), ("cycling", "a long tour"), ("reading", "a crime novel"),
    ("painting", "a watercolour"), ("swimming", "the lake"), ("running", "a half marathon"),
    ("knitting", "a wool scarf"), ("photography", "old churches"), ("chess", "an endgame"),
    ("piano", "a Chopin nocturne"), ("guitar", "an old folk song"), ("football", "the cup final"),
    ("travel", "a night train"), ("camping", "a small tent"), ("fishing", "a quiet river"),
    ("birdwatching", "a kingfisher"), ("astronomy", "the Andromeda galaxy"), ("pottery", "a clay bowl"),
    ("woodwork", "a bookshelf"), ("dancing", "a tango class"), ("singing", "the church choir"),
    ("yoga", "a morning routine"), ("meditation", "a breathing exercise"), ("dentist", "a root canal"),
    ("doctor", "a blood test"), ("work", "a difficult project"), ("moving", "a new flat"),
    ("birthday", "a surprise party"), ("wedding", "the speech"), ("holiday", "the seaside"),
    ("school", "a parents evening"), ("dog", "a long walk"), ("cat", "the vet"), ("car", "a flat tyre"),
    ("money", "the tax return"), ("movies", "an old western"), ("theatre", "a comedy"),
    ("museum", "an exhibition"), ("concert", "a jazz band"), ("coffee", "a new espresso machine"),
    ("tea", "a green tea"), ("wine", "a tasting"), ("beer", "a brewery tour"), ("sausages", "the butcher"),
    ("market", "fresh asparagus"), ("weather", "a thunderstorm"), ("snow", "a snowman"),
    ("garden party", "the neighbours"), ("flowers", "a bouquet"), ("plants", "a fern"),
    ("language", "Italian lessons"), ("computer", "a new laptop"), ("phone", "a broken screen"),
    ("sleep", "a bad night"), ("health", "a cold"), ("family", "a Sunday lunch"), ("friendship", "an old friend"),
)  # fmt: skip
FEELINGS = ("happy", "proud", "worried", "tired", "excited", "sad", "relieved", "nervous", "grateful", "calm")
TEMPLATES = (
    "I went {topic} with {person} in {place} and it was about {obj}.",
    "{person} told me about {obj} while we talked about {topic} in {place}.",
    "Last time in {place} I felt {feeling} about {obj} and {topic}.",
    "{person} and I planned {obj} for our {topic} weekend in {place}.",
    "I keep thinking about {obj}; {topic} with {person} makes me {feeling}.",
    "At {org} {person} asked me about {topic} and {obj}.",
)
USES_MEMORY = 0.6
"""Share of answers that take up a served memory (15 of 25 in the seed's measurement, syn §7.1a)."""
EMOTIONS = ("freude", "vertrauen", "angst", "ueberraschung", "traurigkeit", "ekel", "wut", "erwartung", "neutral")


@dataclass
class Seeded:
    texts: list[str]
    ids: list[int]
    edges: int
    entity_ids: dict[str, int]


@dataclass
class Samples:
    wall_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    model_ms: list[float] = field(default_factory=list)
    memory_ms: list[float] = field(default_factory=list)
    server_memory_ms: list[float] = field(default_factory=list)
    server_step_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    model_step_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    reinforced: int = 0
    served: list[int] = field(default_factory=list)


def corpus(n: int, rng: random.Random) -> list[tuple[str, list[str], list[str]]]:
    """``n`` sentences with their themes and entity names."""
    weights = [1.0 / (rank + 1) for rank in range(len(TOPICS))]
    rows = []
    for _ in range(n):
        topic, obj = rng.choices(TOPICS, weights)[0]
        second = rng.choices(TOPICS, weights)[0][0]
        person, place, org = rng.choice(PEOPLE), rng.choice(PLACES), rng.choice(ORGS)
        template = rng.choice(TEMPLATES)
        text = template.format(topic=topic, obj=obj, person=person, place=place, org=org, feeling=rng.choice(FEELINGS))
        names = [name for name in (person, place, org) if name in text]
        themen = list(dict.fromkeys([topic, second, *(rng.sample(names, k=min(1, len(names))))]))
        rows.append((text, themen, names))
    return rows


async def register_entities(lzg: lzg_pb2_grpc.LzgServiceStub) -> dict[str, int]:
    names = [*PEOPLE, *PLACES, *ORGS]
    response = await lzg.ResolveEntities(
        lzg_pb2.ResolveEntitiesRequest(pair=PAIR, names=names, create_missing=True, typ_for_new="bench")
    )
    return dict(zip(names, response.entitaet_ids, strict=True))


async def seed_pair(
    postgres_url: str, model: str, n: int, max_edges: int, entity_ids: dict[str, int], rng: random.Random
) -> Seeded:
    provider = make_provider(model)
    profile = profile_for(provider.model_id)
    rows = corpus(n, rng)
    started = time.perf_counter()
    vectors = await provider.embed([lzg_embed_text(text) for text, _, _ in rows])
    print(f"  embedded {n} node texts in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    base = datetime.now(UTC) - timedelta(days=400)
    store = await LzgStore.open(postgres_url, dimension=provider.dimension)
    ids: list[int] = []
    edges_total = 0
    try:
        async with store.pair_writer(PAIR.user_id, PAIR.character_id) as tx:
            by_key: dict[str, list[int]] = defaultdict(list)  # entity/theme → indexes of earlier nodes
            weights_abs: list[float] = []
            refs: list[TimelineRef | None] = []
            batch: list[EdgeInsert] = []
            for index, (text, themen, names) in enumerate(rows):
                created = base + timedelta(minutes=57 * index)
                salienz = rng.uniform(0.88, 1.0)
                w = node_weights_at_creation(salienz)
                ref: TimelineRef | None = None  # no timeline refs in the synthetic pair
                node_id = await tx.insert_node(
                    NewNode(
                        kzg_quell_key=f"kzg:{PAIR.user_id}:{PAIR.character_id}:seed{index}",
                        pair=Pair.of_proto(PAIR),
                        beobachter="user" if index % 3 else "assistant", inhalt=text, embedding=vectors[index],
                        dimension="interessen", gewicht_roh=w.gewicht_roh, gewicht_absolut=w.gewicht_absolut,
                        gewicht_decay=w.gewicht_decay, haeufigkeit=1, erstellt_am=created, kzg_erstellt_am=created,
                        themen=themen, gedaechtnistyp="episodisch",
                        magnets=Magnets.of([entity_ids[x] for x in names], None),
                        ei=Ei(emotion=rng.choice(EMOTIONS), arousal=0.5, intentionen=("information_teilen",)),
                    )
                )  # fmt: skip
                ids.append(node_id)
                weights_abs.append(w.gewicht_absolut)
                refs.append(ref)
                keys = [f"e:{x}" for x in names] + [f"t:{t.lower()}" for t in themen]
                candidates: list[int] = []
                for key in keys:
                    candidates.extend(by_key[key][-max_edges:])
                chosen = rng.sample(sorted(set(candidates)), k=min(max_edges, len(set(candidates))))
                for other in chosen:
                    _, o_themen, o_names = rows[other]
                    layers = layers_between(
                        Compared(o_themen, [entity_ids[x] for x in o_names], refs[other]),
                        Compared(themen, [entity_ids[x] for x in names], ref),
                        float(vectors[other] @ vectors[index]),
                        profile.embedding_layer,
                    )
                    if layers is None:
                        continue
                    ab, ba = edge_raw(weights_abs[other], w.gewicht_absolut, layers.faktor, layers.tiefe, layers.anzahl)
                    batch.append(EdgeInsert(ids[other], node_id, ab, damp(ab), created, layers))
                    batch.append(EdgeInsert(node_id, ids[other], ba, damp(ba), created, layers))
                for key in keys:
                    by_key[key].append(index)
                if len(batch) >= 20_000:
                    edges_total += await tx.insert_edges(batch)
                    batch = []
            edges_total += await tx.insert_edges(batch)
        async with store.pool.acquire() as conn:
            # A settled store, as autovacuum keeps one: without it the timed turns pay for the bulk
            # load's first reads and rewrites (hint bits, visibility map), which production never sees.
            for table in ("lzg.lzg_knoten", "lzg.lzg_kanten", "lzg.lzg_kanten_rang"):
                await conn.execute(f"VACUUM (ANALYZE) {table}")
    finally:
        await store.close()
    return Seeded([r[0] for r in rows], ids, edges_total, entity_ids)


def utterance(rng: random.Random) -> str:
    topic, obj = rng.choice(TOPICS[:30])
    person, place = rng.choice(PEOPLE), rng.choice(PLACES)
    return rng.choice(
        (
            f"Do you remember what {person} said about {obj}?",
            f"I want to go {topic} again, maybe in {place} with {person}.",
            f"Yesterday {person} asked me about {topic} and {obj}.",
            f"What did we talk about when I mentioned {topic}?",
        )
    )


async def run_turns(
    pipeline: pipeline_pb2_grpc.PipelineServiceStub, count: int, rng: random.Random, samples: Samples | None
) -> None:
    clusters = list(default_clusters().known)
    for number in range(count):
        turn_id = f"bench-{'w' if samples is None else 't'}{number}"
        text = utterance(rng)
        t0 = time.perf_counter()
        call = pipeline.ObserveTurn(
            pipeline_pb2.ObserveTurnRequest(pair=PAIR, turn_id=turn_id, beobachter=common_pb2.BEOBACHTER_USER, text=text)
        )
        await call
        t1 = time.perf_counter()
        trailing = dict(await call.trailing_metadata())
        observe_model = float(trailing.get("novaberg-model-ms", 0.0))
        observe_memory = float(trailing.get("novaberg-memory-ms", 0.0))
        dossier = await pipeline.BuildDossier(
            pipeline_pb2.BuildDossierRequest(
                pair=PAIR, turn_id=turn_id, query_text=text, nova_emotion="freude", user_name="Meister",
                character_name="Nova",
            )
        )  # fmt: skip
        t2 = time.perf_counter()
        memories = list(dossier.lzg_resonanz.erinnerungen)
        # The seed measured 15 of 25 real answers taking up a served memory (syn §7.1a): so do 60 % here.
        if memories and rng.random() < USES_MEMORY:
            answer = f"Oh yes, I remember: {memories[-1].inhalt} Tell me more!"
        else:
            answer = "That sounds lovely. How did you feel about it?"
        call = pipeline.Dispatch(
            pipeline_pb2.DispatchRequest(
                pair=PAIR, turn_id=turn_id, user_prompt=text, answer_text=answer, cluster=rng.choice(clusters),
                served_node_ids=dossier.served_node_ids,
            )
        )  # fmt: skip
        dispatched = await call
        t3 = time.perf_counter()
        trailing = dict(await call.trailing_metadata())
        dispatch_model = float(trailing.get("novaberg-model-ms", 0.0))
        dispatch_memory = float(trailing.get("novaberg-memory-ms", 0.0))
        if samples is None:
            continue
        walls = {"observe": (t1 - t0) * 1000, "dossier": (t2 - t1) * 1000, "dispatch": (t3 - t2) * 1000}
        for step, ms in walls.items():
            samples.wall_ms[step].append(ms)
        model_total = observe_model + dossier.model_ms + dispatch_model
        samples.model_ms.append(model_total)
        samples.memory_ms.append(sum(walls.values()) - model_total)
        for step, ms in (("observe", observe_model), ("dossier", dossier.model_ms), ("dispatch", dispatch_model)):
            samples.model_step_ms[step].append(ms)
        samples.server_memory_ms.append(observe_memory + dossier.memory_ms + dispatch_memory)
        samples.server_step_ms["observe"].append(observe_memory)
        samples.server_step_ms["dossier"].append(dossier.memory_ms)
        samples.server_step_ms["dispatch"].append(dispatch_memory)
        samples.reinforced += len(dispatched.protokoll.verwendet)
        samples.served.append(len(dossier.served_node_ids))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--edges", type=int, default=30, help="max earlier nodes each seeded node connects to")
    parser.add_argument("--kzg", type=int, default=200, help="turns observed before timing (KZG history)")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--model", default=DEFAULT_PROVIDER, help="embedding provider of every service")
    parser.add_argument(
        "--loop", choices=EVENT_LOOPS, default="uvloop",
        help="the calling client's event loop (the services run uvloop, novaberg_core.server.run_service)",
    )  # fmt: skip
    return parser.parse_args()


async def main(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="turn-bench-") as tmp:
        root = Path(tmp)
        urls = await asyncio.to_thread(start_stores, root / "stores", ephemeral=True)
        stack = None
        try:
            started = time.perf_counter()
            stack = await start_stack(
                root, urls=urls, services=SERVICES,
                extra_env={"NOVABERG_EMBEDDING": args.model, "NOVABERG_LOG_LEVEL": "WARNING", "OPENBLAS_NUM_THREADS": "1"},
                mtls=False,  # numbers comparable with the earlier runs; the bench's channels are plaintext
            )  # fmt: skip
            print(f"stack up in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            async with grpc.aio.insecure_channel(stack.addresses["lzg"]) as lzg_channel, grpc.aio.insecure_channel(
                stack.addresses["pipeline"]
            ) as channel:
                lzg = lzg_pb2_grpc.LzgServiceStub(lzg_channel)
                pipeline = pipeline_pb2_grpc.PipelineServiceStub(channel)
                entity_ids = await register_entities(lzg)
                started = time.perf_counter()
                seeded = await seed_pair(urls.postgres_url, args.model, args.nodes, args.edges, entity_ids, rng)
                print(
                    f"  seeded {len(seeded.ids)} nodes, {seeded.edges} directed edges in "
                    f"{time.perf_counter() - started:.1f} s",
                    file=sys.stderr,
                )
                stats = await lzg.GetPairStats(lzg_pb2.GetPairStatsRequest(pair=PAIR))
                await run_turns(pipeline, args.kzg + args.warmup, rng, None)
                pids = stack_pids(stack, root / "stores")
                metrics_urls = {name: stack.metrics_url(name) for name in SERVICES}
                pace_before = await asyncio.to_thread(machine_pace)
                trips_before = await round_trips(metrics_urls, urls.redis_url, urls.postgres_url)
                cpu_before = cpu_seconds(pids)
                samples = Samples()
                await run_turns(pipeline, args.turns, rng, samples)
                cpu_after = cpu_seconds(pids)
                pace_after = await asyncio.to_thread(machine_pace)
                trips = (await round_trips(metrics_urls, urls.redis_url, urls.postgres_url)).per_turn(
                    trips_before, args.turns
                )
        finally:
            if stack is not None:
                await stack.stop()
            await asyncio.to_thread(stop_stores, root / "stores")

    print(f"\nturn latency over gRPC, pair of {stats.nodes_active} active nodes / {stats.edges} edges, "
          f"{args.turns} turns after {args.kzg + args.warmup} untimed ones ({stats.model_id})")  # fmt: skip
    print(f"{'':<22}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    rows = [
        *((f"wall {step}", values) for step, values in samples.wall_ms.items()),
        ("model (embedding)", samples.model_ms),
        *((f"    {step}", values) for step, values in samples.model_step_ms.items()),
        ("memory (wall - model)", samples.memory_ms),
        ("  of it in the pipeline", samples.server_memory_ms),
        *((f"    {step}", values) for step, values in samples.server_step_ms.items()),
    ]
    for name, values in rows:
        print(f"{name:<22}{percentile(values, 50):>10.2f}{percentile(values, 99):>10.2f}{statistics.fmean(values):>10.2f}")
    cpu = {name: (cpu_after[name] - cpu_before[name]) * 1000.0 / args.turns for name in cpu_after if name in cpu_before}
    print("CPU ms per turn: " + ", ".join(f"{name} {ms:.1f}" for name, ms in cpu.items()))
    print("per turn: " + ", ".join(f"{name} {count:.2f}" for name, count in trips["postgres"].items()) + " (postgres)")
    print("  RPCs: " + ", ".join(f"{name} {count:.2f}" for name, count in trips["rpcs"].items()))
    print("  server ms per call: " + ", ".join(
        f"{name} {ms:.2f}" for name, ms in sorted(trips["rpc_ms_per_call"].items(), key=lambda kv: -kv[1])
    ))  # fmt: skip
    print("  Redis commands: " + ", ".join(f"{name} {count:.2f}" for name, count in trips["redis"].items()))
    print("  Redis ms: " + ", ".join(f"{name} {ms:.2f}" for name, ms in trips["redis_ms"].items() if ms >= 0.01))
    print(f"load average during the run: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    print(f"before the timed turns: {pace_before.line()}; after: {pace_after.line().removeprefix('machine pace: ')}")
    print(f"memories served per dossier: mean {statistics.fmean(samples.served):.2f}; "
          f"reinforced over the run: {samples.reinforced}")  # fmt: skip
    result = {
        "memory_p50_ms": round(percentile(samples.memory_ms, 50), 2),
        "memory_p99_ms": round(percentile(samples.memory_ms, 99), 2),
        "model_p50_ms": round(percentile(samples.model_ms, 50), 2),
        **MachinePace.mean(pace_before, pace_after).json_fields(),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    arguments = parse_args()
    sys.exit((uvloop.run if arguments.loop == "uvloop" else asyncio.run)(main(arguments)))
