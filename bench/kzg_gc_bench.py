"""KZG retrieval under steady reinforcement vs the search module's GC interval (SPEC §4.4, §4.5).

Every HSET of an indexed hash re-indexes the entry under a new document id; the old postings stay
until the search module's fork GC collects them, and every search walks them until then. Thematic
reinforcement (SPEC §4.4) rewrites each same-theme neighbour on every write, so a busy pair makes
garbage fast. Per interval: a fresh embedded store whose index is created after
``FT.CONFIG SET FORK_GC_RUN_INTERVAL`` (the GC timer is set when an index is created), then
``--turns`` turns of two ``store_entry`` and one ``retrieve`` (KNN 25 at ``as_of`` + full text,
as the dossier asks), themes drawn as in ``kzg_bench.py`` but from 60 common themes with share
0.5 (a busy pair: the table shows the neighbours reinforced per timed write). Timed: the second half.

    .venv/bin/python bench/kzg_gc_bench.py [--intervals 30,1] [--turns 1000]

The last line is one JSON object: interval → store and retrieve p50 in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import kzg_bench

from novaberg_core.embedding import make_provider
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.timeutil import utc_now
from novaberg_dev.embedded import reset_redis, start_stores, stop_stores
from services.kzg.memory import KzgMemory
from services.kzg.store import KzgStore
from services.kzg.types import RetrieveQuery

COMMON_THEMES, COMMON_SHARE = 60, 0.5
"""Fewer common themes, drawn more often than in ``kzg_bench.py``: a busy pair, many neighbours per write."""


async def run_interval(redis_url: str, interval_s: int, turns: int) -> dict[str, float]:
    reset_redis(redis_url)
    provider = make_provider("minilm")  # model_id and dimension only: vectors are given explicitly
    store = KzgStore.from_url(redis_url, dimension=provider.dimension)
    await store.redis.execute_command("FT.CONFIG", "SET", "FORK_GC_RUN_INTERVAL", str(interval_s))
    memory = KzgMemory(store, provider, PipelineLog(), retrieval_threshold=0.31)
    await memory.start()
    model = kzg_bench.ThemeModel(seed=1, common_themes=COMMON_THEMES, common_share=COMMON_SHARE)
    store_ms: list[float] = []
    retrieve_ms: list[float] = []
    fan_out: list[int] = []
    try:
        written = 0
        for turn in range(turns):
            timed = turn >= turns // 2
            for _ in range(2):
                started = time.perf_counter()
                stored = await memory.store_entry(model.entry(written))
                written += 1
                if timed:
                    store_ms.append((time.perf_counter() - started) * 1000)
                    fan_out.append(stored.reinforced_count)
            query = RetrieveQuery(
                kzg_bench.PAIR, query_vector=model.vector(), top_k=25, as_of=utc_now(),
                lexical_text="Thema Spezial Garten", sprache="de",
            )  # fmt: skip
            started = time.perf_counter()
            await memory.retrieve(query)
            if timed:
                retrieve_ms.append((time.perf_counter() - started) * 1000)
        info = await store.redis.execute_command("FT.INFO", store.index_name)
        gc = info[b"gc_stats"]
        return {
            "interval_s": interval_s,
            "store_p50": statistics.median(store_ms),
            "retrieve_p50": statistics.median(retrieve_ms),
            "retrieve_p90": kzg_bench.percentile(retrieve_ms, 90),
            "fan_out_mean": statistics.fmean(fan_out),
            "gc_cycles": float(gc[b"total_cycles"]),
            "gc_ms": float(gc[b"total_ms_run"]),
        }
    finally:
        await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intervals", default="30,1", help="FORK_GC_RUN_INTERVAL values (seconds)")
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="kzg-gc-bench-") as data_dir:
        urls = start_stores(data_dir, ephemeral=True)
        try:
            for interval in (int(value) for value in args.intervals.split(",")):
                results.append(await run_interval(urls.redis_url, interval, args.turns))
        finally:
            stop_stores(data_dir)
    print(f"{args.turns} turns of 2 writes + 1 retrieval, timed: the second half")
    print(
        "GC interval s   store p50 ms   retrieve p50 ms   retrieve p90 ms   neighbours/write   GC cycles   GC ms"
    )
    for row in results:
        print(
            f"{row['interval_s']:>13.0f}   {row['store_p50']:>12.2f}   {row['retrieve_p50']:>15.2f}   "
            f"{row['retrieve_p90']:>15.2f}   {row['fan_out_mean']:>16.1f}   {row['gc_cycles']:>9.0f}   {row['gc_ms']:>5.0f}"
        )
    print(
        json.dumps(
            {
                str(int(r["interval_s"])): {
                    "store_p50_ms": round(r["store_p50"], 2),
                    "retrieve_p50_ms": round(r["retrieve_p50"], 2),
                }
                for r in results
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
