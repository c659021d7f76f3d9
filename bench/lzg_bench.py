"""LZG benchmark on embedded PostgreSQL: promotion, spreading read, Trigger 2, decay (SPEC §5).

Synthetic but realistic pairs: themes from a Zipf-like vocabulary (many rare, a few common),
entities, timeline references of mixed precision, clustered 384-d embeddings, and the edges a
real promotion sequence would have formed (every pair of nodes that fires a layer, computed
with the service's own layer and weight code) — tuned to ~140 outgoing edges per node, as in
the seeds' production pair. Thresholds: the offline default model's profile (all-MiniLM-L6-v2).

Measured in-process through the engine (no gRPC hop; the embedding model is replaced by a
table of precomputed vectors — MiniLM adds ~3 ms per text, notes/measured-here.md):

- promotion of one node against 3,000 and 20,000 candidates (incl. edge insert and commit);
- spreading read, depth 3 (cluster ``glut``), in a pair of 20,000 nodes;
- Trigger 2 for a node with ~1,000 edge rows (its anchor changed before each run);
- decay over all ~1,000,000 nodes (one statement; the second day's run too);
- hybrid read (SPEC §11: dense + BM25 anchors fused, spreading read depth 3, a recall list of 10)
  in a pair of 100,000 nodes (stage ``hybrid``; its edges are sparser than the seeds' — ~10 out
  per node, same-topic — since a shell reads the top K of a node's edges by index whatever their
  number, and 14 million formation edges would take the load beyond the run's minutes).

    .venv/bin/python bench/lzg_bench.py            # ~1,000,000 nodes (several minutes)
    .venv/bin/python bench/lzg_bench.py --nodes 200000 --rounds 30
    .venv/bin/python bench/lzg_bench.py --only trigger2,spread --nodes 0   # just the 20k pair
    .venv/bin/python bench/lzg_bench.py --only hybrid --nodes 0            # the 100k pair alone

With ``--only`` the JSON line holds only the keys of the stages that ran.

The last line printed is one JSON object with ``promote_p50_ms_3k``, ``promote_p50_ms_20k``,
``spread_p50_ms_20k``, ``trigger2_p50_ms_1k``, ``decay_s_1m``, ``hybrid_read_p50_ms_100k``, and the
machine's pace measured after the stages (``pace_python_loop_s``, ``pace_round_trip_us``,
``bench.processes.machine_pace``): compare timings only at a similar pace.
"""

from __future__ import annotations

import os

# One BLAS thread: on two cores a multi-threaded matrix-vector product waits for a busy core
# (measured: median 8 ms vs 1 ms for 20,000 × 384 under load); the service does the same.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "libs"))

from bench.lzg_pairs import (
    DIM,
    EMOTIONS,
    MODEL,
    RANK_ROWS,
    T_LOAD,
    PairData,
    PairGenerator,
    VectorTable,
    copy_nodes,
    drop_secondary_indexes,
    load_filler,
    load_pair,
    node_record,
)
from bench.processes import machine_pace
from novaberg_core.clusters import default_clusters
from novaberg_core.embedding import profile_for
from novaberg_core.model import Ei, KzgEntry, Magnets, Pair
from novaberg_core.pipeline_log import NullSink, PipelineLog
from novaberg_dev.embedded import create_database, start_stores, stop_stores
from services.lzg.engine import LzgEngine, PromotionInput
from services.lzg.store import SCHEMA, LzgStore
from services.lzg.weights import damp


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def bench_promotions(
    engine: LzgEngine, provider: VectorTable, gen: PairGenerator, pair: PairData, rounds: int
) -> tuple[list[float], list[int], list[int]]:
    fresh = gen.nodes(rounds + 3)
    fresh.entity_ids, fresh.timeline_ids = pair.entity_ids, pair.timeline_ids
    times: list[float] = []
    edges: list[int] = []
    candidates: list[int] = []
    for i in range(rounds + 3):
        provider.vectors[fresh.texts[i]] = fresh.embeddings[i]
        timeline = fresh.timelines[i]
        entry = KzgEntry(
            kzg_key=f"kzg:{pair.user_id}:nova:p{i}", entry_id=f"p{i}", pair=Pair(pair.user_id, "nova"),
            beobachter="user", inhalt=fresh.texts[i], themen=tuple(fresh.themen[i]),
            salienz=float(fresh.salienz[i]), salienz_eingang=None, salienz_eingang_herkunft="", haeufigkeit=1,
            gedaechtnistyp="episodisch", dimension="beziehungen",
            ei=Ei(emotion=fresh.emotion[i], modus="alltag", arousal=0.5, intentionen=("planung",)),
            magnets=Magnets.of(
                [pair.entity_ids[e] for e in fresh.entities[i]],
                None if timeline is None else pair.timeline_ids[timeline],
            ),
            erstellt_am=T_LOAD, turn_id="bench", ttl_seconds=0,
        )
        job = PromotionInput(entry, ausloeser_turn_id="bench", log_turn_id="bench", span_id=None,
                             as_of=T_LOAD + timedelta(hours=1))  # fmt: skip
        started = time.perf_counter()
        result = await engine.promote(job)
        elapsed = (time.perf_counter() - started) * 1000
        if i >= 3:  # the first ones warm the cache and the plans
            times.append(elapsed)
            edges.append(result.edges_created)
            candidates.append(result.candidates)
    return times, edges, candidates


async def bench_spreading(
    engine: LzgEngine, pair: PairData, rng: np.random.Generator, rounds: int
) -> tuple[list[float], list[int]]:
    times: list[float] = []
    pools: list[int] = []
    for i in range(rounds + 5):
        base = pair.embeddings[int(rng.integers(len(pair.texts)))].astype(np.float64)
        query = base + rng.normal(size=DIM) * 0.02
        started = time.perf_counter()
        result = await engine.spreading_read(
            Pair(pair.user_id, "nova"), query_values=query.tolist(), query_text=None, cluster="glut",
            nova_emotion=EMOTIONS[i % len(EMOTIONS)],
        )  # fmt: skip
        elapsed = (time.perf_counter() - started) * 1000
        if i >= 5:
            times.append(elapsed)
            pools.append(result.pool_size)
    return times, pools


HYBRID_NODES = 100_000


async def load_hybrid_pair(store: LzgStore, rng: np.random.Generator) -> PairData:
    """The 100k pair: nodes as the generator makes them, ~10 same-topic edges out per node (both rows)."""
    gen = PairGenerator(rng, HYBRID_NODES, "bench-100k")
    pair = gen.nodes(HYBRID_NODES)
    pair.entity_ids = list(range(1, gen.n_entities + 1))  # registry rows are not read by the hybrid read
    pair.timeline_ids = []
    pair.timelines = [None] * HYBRID_NODES
    pair.entities = [[] for _ in range(HYBRID_NODES)]
    for start in range(0, HYBRID_NODES, 20_000):
        records = [node_record(pair, i, f"kzg:bench-100k:nova:h{i}") for i in range(start, min(start + 20_000, HYBRID_NODES))]
        await copy_nodes(store, records)
    pair.node_ids = [
        r["id"] for r in await store.pool.fetch(
            "SELECT id FROM lzg.lzg_knoten WHERE user_id = 'bench-100k' ORDER BY id")
    ]  # fmt: skip
    topic = np.array([int(str(t[0]).rsplit("-", 1)[1]) // 4 if t else 0 for t in pair.themen])
    by_topic: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(topic.tolist()):
        by_topic[t].append(i)
    pairs_seen: set[tuple[int, int]] = set()
    for members in by_topic.values():
        if len(members) < 2:
            continue
        picks = rng.choice(len(members), size=(len(members), 5))
        for i, row in zip(members, picks, strict=True):
            for j in row:
                other = members[int(j)]
                if other != i:
                    pairs_seen.add((min(i, other), max(i, other)))
    records = []
    for a, b in pairs_seen:
        weight = float(rng.uniform(1.0, 4.0))
        for x, y in ((a, b), (b, a)):
            records.append((pair.node_ids[x], pair.node_ids[y], weight, damp(weight), T_LOAD, ["themen"], [],
                            [pair.themen[x][0]], None, None, 1))  # fmt: skip
    async with store.pool.acquire() as conn:
        for start in range(0, len(records), 200_000):
            await conn.copy_records_to_table(
                "lzg_kanten", schema_name=SCHEMA,
                columns=("knoten_a_id", "knoten_b_id", "gewicht_roh", "gewicht_absolut", "erstellt_am",
                         "verbindungs_gruende", "geteilte_entitaet_ids", "geteilte_themen", "timeline_naehe_tage",
                         "embedding_cosine_initial", "anzahl_schichten"),
                records=records[start : start + 200_000],
            )  # fmt: skip
    print(f"  bench-100k: {HYBRID_NODES:,} nodes, {len(records):,} edge rows", file=sys.stderr)
    return pair


async def bench_hybrid(engine: LzgEngine, pair: PairData, rng: np.random.Generator, rounds: int) -> list[float]:
    """Hybrid anchors + spreading read (depth 3) + recall list of 10, question text and vector from a node."""
    times: list[float] = []
    for i in range(rounds + 3):  # the first read loads the pair into the cache (vectors and terms)
        source = int(rng.integers(len(pair.texts)))
        query = pair.embeddings[source].astype(np.float64) + rng.normal(size=DIM) * 0.02
        started = time.perf_counter()
        await engine.spreading_read(
            Pair(pair.user_id, "nova"), query_values=query.tolist(), query_text=None, cluster="glut",
            nova_emotion=EMOTIONS[i % len(EMOTIONS)], lexical_text=f"Was war mit {pair.texts[source].split(':')[1]}?",
            sprache="de", recall_k=10, as_of=T_LOAD + timedelta(days=1),
        )  # fmt: skip
        elapsed = (time.perf_counter() - started) * 1000
        if i >= 3:
            times.append(elapsed)
    return times


async def bench_trigger2(
    engine: LzgEngine, store: LzgStore, pair: PairData, rounds: int
) -> tuple[list[float], float]:
    """Trigger 2 once each for ``rounds`` nodes with ~1,000 edge rows (900–1,100), anchor changed first.

    Distinct nodes, as in operation: the same node recomputed twenty times in a row would time
    twenty generations of its own dead row versions, which autovacuum removes between turns.
    """
    subjects = await store.pool.fetch(
        "SELECT e.knoten_a_id AS id, count(*) * 2 AS rows FROM lzg.lzg_kanten e "
        "JOIN lzg.lzg_knoten k ON k.id = e.knoten_a_id WHERE k.user_id = $1 "
        "GROUP BY 1 HAVING count(*) * 2 BETWEEN 900 AND 1100 ORDER BY 1 LIMIT $2",
        pair.user_id,
        rounds + 3,
    )
    times: list[float] = []
    counts: list[int] = []
    for i, subject in enumerate(subjects):
        node_id = subject["id"]
        # a reinforcement changed the anchor: every edge row gets a new value (no HOT shortcut)
        await store.pool.execute(
            "UPDATE lzg.lzg_knoten SET gewicht_absolut = gewicht_absolut + 0.05 WHERE id = $1", node_id
        )
        started = time.perf_counter()
        async with store.pair_writer(pair.user_id, pair.character_id) as tx:
            updated, skipped = await engine.trigger2(tx, node_id)
        elapsed = (time.perf_counter() - started) * 1000
        assert not skipped and updated == subject["rows"]
        if i >= 3:
            times.append(elapsed)
            counts.append(updated)
    return times, statistics.fmean(counts)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    stages = set(args.only)
    rng = np.random.default_rng(20261129)
    profile = profile_for(MODEL)
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="lzg-bench-stores-")
    urls = start_stores(data_dir, ephemeral=not args.durable)
    out: dict[str, Any] = {"data_dir": data_dir}
    try:
        url = create_database(urls.postgres_url, f"lzg_bench_{os.getpid()}")
        print(f"  database {url}", file=sys.stderr)
        store = await LzgStore.open(url, dimension=DIM, max_size=4)
        provider = VectorTable()
        await store.check_model(provider.stamp)
        engine = LzgEngine(store, provider, profile, default_clusters(), PipelineLog(NullSink()))
        started = time.perf_counter()
        ddl = await drop_secondary_indexes(store)
        gens = {n: PairGenerator(rng, n, f"bench-{n // 1000}k") for n in (3_000, 20_000)}
        pairs = {n: g.nodes(n) for n, g in gens.items()}
        if not stages & {"promote", "spread"}:  # Trigger 2 and decay need only the 20k pair
            del pairs[3_000]
        filler = max(0, args.nodes - sum(gens) - (HYBRID_NODES if "hybrid" in stages else 0))
        await load_filler(store, rng, filler)
        edge_rows = {}
        if not stages & {"promote", "spread", "trigger2", "decay"}:
            pairs.clear()
        for n, pair in pairs.items():
            edge_rows[n] = await load_pair(store, pair, profile.embedding_layer, gens[n])
        hybrid_pair = await load_hybrid_pair(store, rng) if "hybrid" in stages else None
        async with store.pool.acquire() as conn:
            # the rank rows Trigger 1 writes with each node's edges (migration 003), all at once
            await conn.execute(RANK_ROWS)
            await conn.execute("SET maintenance_work_mem = '512MB'")
            for statement in ddl:
                await conn.execute(statement)
            await conn.execute("VACUUM (ANALYZE, FREEZE) lzg.lzg_knoten")
            await conn.execute("VACUUM (ANALYZE, FREEZE) lzg.lzg_kanten")
            await conn.execute("VACUUM (ANALYZE, FREEZE) lzg.lzg_kanten_rang")
            await conn.execute("RESET maintenance_work_mem")  # pooled connections keep no session state (novaberg_core.pg)
            out["nodes_total"] = await conn.fetchval("SELECT count(*) FROM lzg.lzg_knoten")
            out["heap_mb"] = await conn.fetchval("SELECT pg_relation_size('lzg.lzg_knoten') / 1048576")
            out["table_mb"] = await conn.fetchval("SELECT pg_total_relation_size('lzg.lzg_knoten') / 1048576")
        out["load_s"] = time.perf_counter() - started
        out["edge_rows"] = edge_rows
        out["out_degree"] = {n: edge_rows[n] / n for n in pairs}
        print(f"  loaded in {out['load_s']:.0f} s", file=sys.stderr)

        for n, pair in pairs.items():
            if "spread" in stages:
                times, pools = await bench_spreading(engine, pair, rng, args.rounds * 4)
                out[f"spread_{n}"] = (times, pools)
            if "promote" in stages:
                times, edges, candidates = await bench_promotions(
                    engine, provider, gens[n], pair, args.rounds
                )
                out[f"promote_{n}"] = (times, edges, candidates)
        if hybrid_pair is not None:
            out["hybrid"] = await bench_hybrid(engine, hybrid_pair, rng, args.rounds * 2)
        if "trigger2" in stages:
            times, rows = await bench_trigger2(engine, store, pairs[20_000], args.rounds)
            out["trigger2"] = (times, rows)

        if "decay" in stages:
            decay_runs = []
            for day in (1, 2):
                started = time.perf_counter()
                decayed, deactivated, _ = await engine.run_decay(T_LOAD + timedelta(days=day))
                decay_runs.append((time.perf_counter() - started, decayed, deactivated))
            out["decay"] = decay_runs
        await store.close()
    finally:
        if not args.keep:
            stop_stores(data_dir)
            if not args.data_dir:
                shutil.rmtree(data_dir, ignore_errors=True)
    return out


STAGES = ("promote", "spread", "trigger2", "decay", "hybrid")


def stages_arg(text: str) -> tuple[str, ...]:
    chosen = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = [s for s in chosen if s not in STAGES]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"stages are {', '.join(STAGES)}; got {text!r}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--nodes", type=int, default=1_000_000, help="nodes in the database (default 1,000,000)"
    )
    parser.add_argument("--rounds", type=int, default=60, help="timed promotions / Trigger 2 runs per case")
    parser.add_argument("--durable", action="store_true", help="PostgreSQL with fsync (default: ephemeral)")
    parser.add_argument("--data-dir", help="stores directory (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="leave the stores running")
    parser.add_argument(
        "--only",
        type=stages_arg,
        default=STAGES,
        help=f"comma-separated stages to time (default all: {','.join(STAGES)})",
    )
    args = parser.parse_args()
    out = asyncio.run(run(args))
    pace = machine_pace()

    def row(name: str, values: Sequence[float], target: str, unit: str = "ms") -> None:
        print(f"| {name} | {pct(values, 0.5):.1f} {unit} | {pct(values, 0.99):.1f} {unit} | {target} |")

    summary: dict[str, float] = {}
    print(f"cores: {os.cpu_count()}; PostgreSQL {'durable' if args.durable else 'ephemeral (fsync off)'}; "
          f"{out['nodes_total']:,} nodes, lzg_knoten heap {out['heap_mb']} MB / total {out['table_mb']} MB; load {out['load_s']:.0f} s")  # fmt: skip
    print("edge rows: " + ", ".join(
        f"{n // 1000}k pair {out['edge_rows'][n]:,} ({out['out_degree'][n]:.0f} out per node)" for n in out["edge_rows"]
    ))  # fmt: skip
    if "promote_3000" in out:
        _, e3, c3 = out["promote_3000"]
        _, e20, c20 = out["promote_20000"]
        print(f"promotion: mean edges formed {statistics.fmean(e3):.0f} (3k) / {statistics.fmean(e20):.0f} (20k), "
              f"candidates {max(c3):,} / {max(c20):,}")  # fmt: skip
    if "spread_3000" in out:
        print(f"spreading pool mean {statistics.fmean(out['spread_3000'][1]):.1f} (3k) / "
              f"{statistics.fmean(out['spread_20000'][1]):.1f} (20k)")  # fmt: skip
    print()
    print("| measurement | p50 | p99 | target |")
    print("|---|---|---|---|")
    if "promote_3000" in out:
        p3, p20 = out["promote_3000"][0], out["promote_20000"][0]
        row("promotion vs 3,000 candidates (incl. edge insert, commit)", p3, "≤ 30 ms")
        row("promotion vs 20,000 candidates (incl. edge insert, commit)", p20, "≤ 150 ms")
        summary["promote_p50_ms_3k"] = round(pct(p3, 0.5), 2)
        summary["promote_p50_ms_20k"] = round(pct(p20, 0.5), 2)
    if "spread_3000" in out:
        s3, s20 = out["spread_3000"][0], out["spread_20000"][0]
        row("spreading read depth 3, 3,000 nodes", s3, "")
        row("spreading read depth 3, 20,000 nodes", s20, "≤ 10 ms p50")
        summary["spread_p50_ms_20k"] = round(pct(s20, 0.5), 2)
    if "hybrid" in out:
        row("hybrid read (dense+BM25 anchors, spreading depth 3, recall 10), 100,000 nodes", out["hybrid"], "≤ 25 ms p50")
        summary["hybrid_read_p50_ms_100k"] = round(pct(out["hybrid"], 0.5), 2)
    if "trigger2" in out:
        t2, t2_rows = out["trigger2"]
        row(f"Trigger 2, nodes with ~1,000 edge rows (mean {t2_rows:,.0f})", t2, "≤ 20 ms")
        summary["trigger2_p50_ms_1k"] = round(pct(t2, 0.5), 2)
    if "decay" in out:
        (d1, n1, _), (d2, n2, _) = out["decay"]
        print(f"| decay over {n1:,} nodes (day 1 / day 2: {n2:,}) | {d1:.1f} s | {d2:.1f} s | ≤ 20 s |")
        summary["decay_s_1m"] = round(max(d1, d2), 2)
    print(pace.line())
    summary |= pace.json_fields()
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
