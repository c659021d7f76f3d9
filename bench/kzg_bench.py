"""KZG store and retrieval latency on the embedded Redis + RediSearch (issue 3, SPEC §4).

    .venv/bin/python bench/kzg_bench.py [--sizes 3000,30000] [--algorithms FLAT,HNSW]

For each pair size and vector algorithm: a fresh index, the pair loaded in bulk to its size
minus the measured writes, then

- store: ``KzgMemory.store_entry`` with an explicit vector (embedding excluded), gate, canon,
  the index lookup of theme neighbours and the one Lua script (write + reinforcement + queue);
- retrieve: ``KzgMemory.retrieve`` with a query vector, KNN 10 within the pair, threshold.

Themes follow the seeds' production pair (kzg header: ``haeufigkeit`` mean 8.1, max 110 over
2,911 entries): 1–3 themes per entry, each with probability 0.15 one of 300 common themes
(Zipf 1.0), else one of 3,000 specific ones — simulated over 2,911 entries this gives
``haeufigkeit`` mean 8.1, max ~145. Vectors: 384-d, near one of 300 topic centres.

Prints a table; the last line is one JSON object with the issue's keys (FLAT, the default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from novaberg_core.embedding import make_provider
from novaberg_core.model import Ei, Magnets
from novaberg_core.pipeline_log import PipelineLog
from novaberg_dev.embedded import reset_redis, start_stores, stop_stores
from services.kzg.memory import KzgMemory
from services.kzg.store import KzgStore
from services.kzg.types import EntryInput, Pair, RetrieveQuery

PAIR = Pair("meister@example.org", "nova")
DIMENSION = 384
WARMUP = 20
STORES = 300
QUERIES = 300
COMMON_THEMES, SPECIFIC_THEMES, COMMON_SHARE = 300, 3_000, 0.15
CENTRES = 300


class ThemeModel:
    """Theme and vector generator of the benchmark (module docstring)."""

    def __init__(self, seed: int, common_themes: int = COMMON_THEMES, common_share: float = COMMON_SHARE) -> None:
        self.rng = np.random.default_rng(seed)
        self.common_themes, self.common_share = common_themes, common_share
        weights = 1.0 / np.arange(1, common_themes + 1)
        self.common_weights = weights / weights.sum()
        centres = self.rng.standard_normal((CENTRES, DIMENSION)).astype(np.float32)
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)

    def themen(self) -> tuple[str, ...]:
        chosen: list[str] = []
        for _ in range(int(self.rng.integers(1, 4))):
            if self.rng.random() < self.common_share:
                theme = f"Thema-{int(self.rng.choice(self.common_themes, p=self.common_weights))}"
            else:
                theme = f"Spezial-{int(self.rng.integers(SPECIFIC_THEMES))}"
            if theme not in chosen:
                chosen.append(theme)
        return tuple(chosen)

    def vector(self) -> np.ndarray:
        v = self.centres[int(self.rng.integers(CENTRES))] + 0.6 * self.rng.standard_normal(DIMENSION) / np.sqrt(
            DIMENSION
        )
        return (v / np.linalg.norm(v)).astype(np.float32)

    def entry(self, i: int) -> EntryInput:
        return EntryInput(
            pair=PAIR,
            beobachter="user" if i % 3 else "assistant",
            inhalt=f"Aussage {i}: Meister erzählt etwas über seinen Tag.",
            salienz=float(self.rng.uniform(0.3, 0.69)),
            themen=self.themen(),
            ei=Ei(emotion="freude", modus="alltag", intentionen=("information_teilen",)),
            magnets=Magnets(entitaet_ids=(int(self.rng.integers(50)),)),
            turn_id=f"turn-{i}",
            embedding=self.vector(),
        )


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


async def run_case(redis_url: str, size: int, algorithm: str, threshold: float) -> dict[str, float]:
    reset_redis(redis_url)
    provider = make_provider("minilm")  # model_id and dimension only: vectors are given explicitly
    store = KzgStore.from_url(redis_url, dimension=provider.dimension, vector_algorithm=algorithm)
    memory = KzgMemory(store, provider, PipelineLog(), retrieval_threshold=threshold)
    await memory.start()
    model = ThemeModel(seed=size)
    try:
        started = time.perf_counter()
        bulk = []
        for i in range(size - WARMUP - STORES):
            prepared = memory.bulk_fields(model.entry(i))
            assert prepared is not None
            bulk.append(prepared)
        await store.bulk_load(bulk)
        await _wait_indexed(store, size - WARMUP - STORES)
        load_s = time.perf_counter() - started

        for i in range(WARMUP):
            await memory.store_entry(model.entry(size + i))
        store_ms: list[float] = []
        fan_out: list[int] = []
        for i in range(STORES):
            entry = model.entry(size + WARMUP + i)
            t0 = time.perf_counter()
            result = await memory.store_entry(entry)
            store_ms.append((time.perf_counter() - t0) * 1000)
            fan_out.append(result.reinforced_count)

        retrieve_ms: list[float] = []
        hits: list[int] = []
        for _ in range(QUERIES):
            query = RetrieveQuery(PAIR, query_vector=model.vector(), top_k=10)
            t0 = time.perf_counter()
            found = await memory.retrieve(query)
            retrieve_ms.append((time.perf_counter() - t0) * 1000)
            hits.append(len(found.hits))
        return {
            "size": size,
            "load_s": load_s,
            "store_p50": percentile(store_ms, 50),
            "store_p99": percentile(store_ms, 99),
            "retrieve_p50": percentile(retrieve_ms, 50),
            "retrieve_p99": percentile(retrieve_ms, 99),
            "fan_out_mean": statistics.fmean(fan_out),
            "fan_out_p99": percentile(fan_out, 99),
            "hits_mean": statistics.fmean(hits),
        }
    finally:
        await store.close()


async def _wait_indexed(store: KzgStore, expected: int) -> None:
    """Wait until the index holds the bulk-loaded hashes (indexing runs on write, but be sure)."""
    for _ in range(600):
        info = await store.redis.execute_command("FT.INFO", store.index_name)
        docs = int(info.get(b"num_docs", info.get("num_docs", 0)))
        if docs >= expected:
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"index holds fewer than {expected} documents after 60 s")


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3000,30000")
    parser.add_argument("--algorithms", default="FLAT,HNSW")
    parser.add_argument("--threshold", type=float, default=0.31, help="retrieval threshold (minilm profile)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    algorithms = [a.strip().upper() for a in args.algorithms.split(",")]

    data_dir = Path(tempfile.mkdtemp(prefix="kzg-bench-"))
    urls = start_stores(data_dir, ephemeral=True)
    rows = []
    try:
        for algorithm in algorithms:
            for size in sizes:
                row = await run_case(urls.redis_url, size, algorithm, args.threshold)
                row["algorithm"] = algorithm
                rows.append(row)
                print(f"  done: {algorithm} {size} (load {row['load_s']:.1f} s)", file=sys.stderr)
    finally:
        stop_stores(data_dir)

    header = (f"{'algorithm':<9} {'entries':>7} {'store p50':>10} {'store p99':>10} {'retr p50':>9} "
              f"{'retr p99':>9} {'fan-out mean':>12} {'fan-out p99':>11} {'hits':>5}")
    print(f"KZG bench: {STORES} stores (after {WARMUP} warm-up) and {QUERIES} retrievals per row, times in ms")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['algorithm']:<9} {int(r['size']):>7} {r['store_p50']:>10.2f} {r['store_p99']:>10.2f} "
              f"{r['retrieve_p50']:>9.2f} {r['retrieve_p99']:>9.2f} {r['fan_out_mean']:>12.1f} "
              f"{r['fan_out_p99']:>11.0f} {r['hits_mean']:>5.1f}")
    flat = {int(r["size"]): r for r in rows if r["algorithm"] == "FLAT"} or {int(r["size"]): r for r in rows}
    summary = {
        "store_p50_ms_3k": round(flat[3000]["store_p50"], 3) if 3000 in flat else None,
        "store_p99_ms_3k": round(flat[3000]["store_p99"], 3) if 3000 in flat else None,
        "retrieve_p50_ms_3k": round(flat[3000]["retrieve_p50"], 3) if 3000 in flat else None,
        "retrieve_p50_ms_30k": round(flat[30000]["retrieve_p50"], 3) if 30000 in flat else None,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(main())
