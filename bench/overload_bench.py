"""The pipeline under more calls than it can handle: what a concurrency limit saves (load shedding).

Starts the stores and the log, KZG, LZG and pipeline services (``novaberg_dev.stack``, the offline
model), warms the pipeline up with ``--warmup`` calls one after the other, then offers ``--calls``
calls at a fixed rate (``--rate`` per second, above what two cores handle) with a deadline each
(``--deadline``): ObserveTurn, BuildDossier and Dispatch in turn over ``--pairs`` pairs. Twice, each
on a fresh stack: with the pipeline's limit (``--limit``, its default ``MAX_CONCURRENT_RPCS``) and
without one (``NOVABERG_PIPELINE_MAX_CONCURRENT_RPCS=0``), the order alternating with ``--rounds``.

Per run: calls answered OK, refused at the limit (UNAVAILABLE), past their deadline
(DEADLINE_EXCEEDED), any other status (must be none), goodput (OK calls per second of the offered
window) and the OK calls' latency p50/p99. Without a limit every call waits behind all the others,
so most run past their deadline after the work was spent; with one the calls within it finish in time
and the rest are refused at once (novaberg_core.load_shedding).

    .venv/bin/python bench/overload_bench.py [--calls 1500] [--rate 300] [--deadline 2] [--rounds 1]

The last line is one JSON object: ``limited_goodput_per_s``, ``unlimited_goodput_per_s``,
``limited_ok``, ``unlimited_ok``, ``limited_p99_ms``, ``unlimited_p99_ms`` (medians over the rounds).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the services: no spinning second BLAS thread

import argparse
import asyncio
import collections
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import grpc.aio
import uvloop

from bench.processes import percentile
from novaberg.common.v1 import common_pb2
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_dev.embedded import start_stores, stop_stores
from novaberg_dev.stack import start_stack
from services.pipeline.config import MAX_CONCURRENT_RPCS

SERVICES = ("log", "kzg", "lzg", "pipeline")
TEXTS = (
    "Anna and I planted roses in the garden yesterday.",
    "My sister Clara moved to Berlin last week for her new job at Siemens.",
    "We talked about the trip to Paris next Friday.",
    "I'm worried about my exam on Monday, it's about chemistry.",
)
ANSWER = "That sounds lovely, tell me more about the roses."


@dataclass
class Run:
    limit: int
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    ok_ms: list[float] = field(default_factory=list)
    window_s: float = 0.0

    @property
    def goodput(self) -> float:
        return self.statuses["OK"] / self.window_s


async def _call(pipeline: pipeline_pb2_grpc.PipelineServiceStub, i: int, pairs: int, deadline: float) -> None:
    pair = common_pb2.Pair(user_id=f"overload-{i % pairs}", character_id="nova")
    text = TEXTS[i % len(TEXTS)]
    kind = i % 3
    if kind == 0:
        await pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
            pair=pair, turn_id=f"t{i}", beobachter=common_pb2.BEOBACHTER_USER, text=text), timeout=deadline)  # fmt: skip
    elif kind == 1:
        await pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
            pair=pair, turn_id=f"t{i}", query_text=text, recall_k=10), timeout=deadline)  # fmt: skip
    else:
        await pipeline.Dispatch(pipeline_pb2.DispatchRequest(
            pair=pair, turn_id=f"t{i}", answer_text=ANSWER, cluster="werkstatt"), timeout=deadline)  # fmt: skip


async def one_run(limit: int, args: argparse.Namespace) -> Run:
    run = Run(limit)
    with tempfile.TemporaryDirectory(prefix="overload-bench-") as tmp:
        root = Path(tmp)
        urls = await asyncio.to_thread(start_stores, root / "stores", ephemeral=True)
        stack = None
        try:
            stack = await start_stack(
                root, urls=urls, services=SERVICES, mtls=False,
                extra_env={"NOVABERG_LOG_LEVEL": "WARNING", "OPENBLAS_NUM_THREADS": "1",
                           "NOVABERG_PIPELINE_MAX_CONCURRENT_RPCS": str(limit)},
            )  # fmt: skip
            async with grpc.aio.insecure_channel(stack.addresses["pipeline"]) as channel:
                pipeline = pipeline_pb2_grpc.PipelineServiceStub(channel)
                for i in range(args.warmup):
                    await _call(pipeline, 1_000_000 + i, args.pairs, 30.0)

                async def timed(i: int) -> None:
                    started = time.perf_counter()
                    try:
                        await _call(pipeline, i, args.pairs, args.deadline)
                    except grpc.aio.AioRpcError as error:
                        run.statuses[error.code().name] += 1
                    else:
                        run.statuses["OK"] += 1
                        run.ok_ms.append((time.perf_counter() - started) * 1000)

                started = time.perf_counter()
                calls = []
                for i in range(args.calls):  # a fixed arrival rate, whatever the answers do
                    calls.append(asyncio.ensure_future(timed(i)))
                    await asyncio.sleep(max(0.0, started + (i + 1) / args.rate - time.perf_counter()))
                await asyncio.gather(*calls)
                run.window_s = time.perf_counter() - started
        finally:
            if stack is not None:
                await stack.stop()
            await asyncio.to_thread(stop_stores, root / "stores")
    return run


async def main(args: argparse.Namespace) -> int:
    runs: list[Run] = []
    for round_ in range(args.rounds):
        limits = (args.limit, 0) if round_ % 2 == 0 else (0, args.limit)
        for limit in limits:
            run = await one_run(limit, args)
            runs.append(run)
            print(f"  round {round_ + 1}, limit {limit or 'none'}: {dict(run.statuses)} in {run.window_s:.1f} s",
                  file=sys.stderr)  # fmt: skip

    print(f"\n{args.calls} calls offered at {args.rate:.0f}/s, deadline {args.deadline} s, {args.pairs} pairs "
          f"(ObserveTurn, BuildDossier, Dispatch in turn)")  # fmt: skip
    print(f"{'pipeline limit':<16}{'OK':>6}{'shed':>7}{'late':>7}{'other':>7}{'goodput/s':>11}{'p50 ms':>9}{'p99 ms':>9}")
    for run in runs:
        other = sum(n for code, n in run.statuses.items() if code not in ("OK", "UNAVAILABLE", "DEADLINE_EXCEEDED"))
        print(f"{run.limit or 'none':<16}{run.statuses['OK']:>6}{run.statuses['UNAVAILABLE']:>7}"
              f"{run.statuses['DEADLINE_EXCEEDED']:>7}{other:>7}{run.goodput:>11.1f}"
              f"{percentile(run.ok_ms, 50):>9.0f}{percentile(run.ok_ms, 99):>9.0f}")  # fmt: skip

    def median(limited: bool, value: str) -> float:
        chosen = [r for r in runs if (r.limit > 0) == limited]
        pick = {"goodput": lambda r: r.goodput, "ok": lambda r: r.statuses["OK"],
                "p99": lambda r: percentile(r.ok_ms, 99)}[value]  # fmt: skip
        return round(statistics.median(pick(r) for r in chosen), 1)

    print(json.dumps({
        "limited_goodput_per_s": median(True, "goodput"), "unlimited_goodput_per_s": median(False, "goodput"),
        "limited_ok": median(True, "ok"), "unlimited_ok": median(False, "ok"),
        "limited_p99_ms": median(True, "p99"), "unlimited_p99_ms": median(False, "p99"),
    }))  # fmt: skip
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--calls", type=int, default=1500)
    parser.add_argument("--rate", type=float, default=300.0, help="calls offered per second")
    parser.add_argument("--deadline", type=float, default=2.0, help="each call's deadline (s)")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--limit", type=int, default=MAX_CONCURRENT_RPCS, help="the pipeline's limit under test")
    parser.add_argument("--rounds", type=int, default=1, help="limited and unlimited runs each, order alternating")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(uvloop.run(main(parse_args())))
