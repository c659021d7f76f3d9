"""Bulk import throughput: LoCoMo's dev split through ``PipelineService/ObserveTurns`` (issue 16).

As ``novaberg import`` does it, through the running services:

1. Embedded stores and all five services (``novaberg_dev.stack``), Pixie included — it promotes
   while the import runs, as it would in production; one embedding model everywhere (``--model``,
   default ``minilm``, as ``NOVABERG_EMBEDDING``), one BLAS thread per process.
2. Every conversation of the file its own pair (``parse_locomo``: turn ids ``{sample_id}:{dia_id}``,
   image captions appended, each session's date), imported in session order in batches of
   ``--batch`` turns (the CLI's :func:`~novaberg_dev.cli.observe_batches`) without an analysis,
   so the pipeline's analyzer runs on every turn; one model run per 64 turns in the pipeline;
   the KZG writes each batch's entries in order (thematic reinforcement, promotion queue) and
   appends its session turns; every log record of ObserveTurn is written.
3. For comparison (``--single``, default the smallest conversation; ``--single ''`` skips it), first,
   that conversation twice more into pairs of its own — turn by turn through ``ObserveTurn`` (the
   import before issue 16), then batched — each followed by waiting until Pixie has promoted what
   it queued, so that the CPU per turn of both includes the same promotion work.

Measured: wall time of the import as the client sees it, turns per second, and the CPU seconds of
every process over the batched import (services, PostgreSQL with its backends, Redis, this client).
The machine's other load is printed too (load average, and the CPU seconds of processes outside
the stack are not counted, but they compete for the same cores).

    .venv/bin/python bench/import_bench.py [--data FILE] [--sample conv-26 ...] [--batch 128]
        [--single conv-30] [--model minilm]

Prints a table and, as the last line, one JSON object with ``import_turns_per_s``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from bench.locomo_import import wait_for_promotion
from bench.locomo_turns import Conversation, default_data, load_conversations
from bench.processes import cpu_seconds, stack_pids
from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2_grpc
from novaberg_core.timeutil import to_timestamp
from novaberg_dev.cli import IMPORT_BATCH, ImportedTurn, observe_batches
from novaberg_dev.embedded import start_stores, stop_stores
from novaberg_dev.stack import start_stack
from services.pipeline.servicer import MEMORY_MS_KEY, MODEL_MS_KEY

RPC_TIMEOUT_S = 600.0
SINGLE_SUFFIX = "-single"
BATCHED_SUFFIX = "-batched"
"""The comparison writes into ``<user_id>-single`` and ``<user_id>-batched``: pairs of their own."""


@dataclass
class Imported:
    """One import: turns, wall seconds, store outcomes, CPU seconds per process."""

    turns: int = 0
    seconds: float = 0.0
    tiers: Counter[str] = field(default_factory=Counter)
    per_conversation: list[tuple[str, int, float, float]] = field(default_factory=list)
    """(sample id, turns, wall seconds, CPU seconds of all processes) per conversation."""
    cpu_s: dict[str, float] = field(default_factory=dict)
    model_s: float = 0.0
    """Wall seconds the pipeline spent in the embedding model (its ``novaberg-model-ms`` trailers)."""
    memory_s: float = 0.0
    """Wall seconds the pipeline spent on everything else (analysis, registry, KZG writes)."""
    drain_s: float = 0.0
    """With a drain: seconds until Pixie had promoted what the import queued (counted in ``cpu_s``)."""

    @property
    def rate(self) -> float:
        return self.turns / self.seconds if self.seconds else 0.0


def _tier(stored: kzg_pb2.StoreEntryResponse) -> str:
    if stored.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE:
        return "rejected"
    return kzg_pb2.Tier.Name(stored.tier).removeprefix("TIER_").lower()


def own_pair(turns: Sequence[ImportedTurn], suffix: str) -> list[ImportedTurn]:
    """The turns under a pair of their own (``user_id + suffix``)."""
    return [
        ImportedTurn(
            pair=common_pb2.Pair(user_id=t.pair.user_id + suffix, character_id=t.pair.character_id),
            turn_id=t.turn_id, beobachter=t.beobachter, text=t.text, as_of=t.as_of, profile=t.profile,
        )
        for t in turns
    ]  # fmt: skip


async def import_batched(
    pipeline: pipeline_pb2_grpc.PipelineServiceStub,
    conversations: Sequence[Conversation],
    pids: Mapping[str, int],
    batch: int,
    drain: Callable[[], Awaitable[float]] | None = None,
) -> Imported:
    """ObserveTurns, conversation after conversation, batches in order (as ``novaberg import``).

    With ``drain``, the CPU seconds run on until Pixie has promoted what the import queued."""
    result = Imported()
    cpu_before = cpu_seconds(dict(pids))
    started = time.perf_counter()
    for conv in conversations:
        t0, cpu0 = time.perf_counter(), sum(cpu_seconds(dict(pids)).values())
        for request in observe_batches(conv.turns, batch):
            call = pipeline.ObserveTurns(request, timeout=RPC_TIMEOUT_S)
            response = await call
            result.tiers.update(_tier(r.kzg) for r in response.results)
            trailers = dict(await call.trailing_metadata() or ())
            result.model_s += float(trailers.get(MODEL_MS_KEY, 0.0)) / 1000.0
            result.memory_s += float(trailers.get(MEMORY_MS_KEY, 0.0)) / 1000.0
        seconds = time.perf_counter() - t0
        cpu = sum(cpu_seconds(dict(pids)).values()) - cpu0
        result.per_conversation.append((conv.sample_id, len(conv.turns), seconds, cpu))
        print(f"  {conv.sample_id}: {len(conv.turns)} turns in {seconds:.1f} s", file=sys.stderr, flush=True)
    result.seconds = time.perf_counter() - started
    result.turns = sum(len(c.turns) for c in conversations)
    if drain is not None:
        result.drain_s = await drain()
    cpu_after = cpu_seconds(dict(pids))
    result.cpu_s = {name: cpu_after[name] - cpu_before[name] for name in cpu_after if name in cpu_before}
    return result


async def import_single(
    pipeline: pipeline_pb2_grpc.PipelineServiceStub,
    turns: Sequence[ImportedTurn],
    pids: Mapping[str, int],
    drain: Callable[[], Awaitable[float]] | None = None,
) -> Imported:
    """ObserveTurn for every turn (the import before issue 16); ``drain`` as in :func:`import_batched`."""
    result = Imported()
    cpu_before = cpu_seconds(dict(pids))
    started = time.perf_counter()
    for turn in turns:
        request = pipeline_pb2.ObserveTurnRequest(
            pair=turn.pair, turn_id=turn.turn_id, beobachter=turn.beobachter, text=turn.text, profile=turn.profile
        )
        if turn.as_of is not None:
            request.as_of.CopyFrom(to_timestamp(turn.as_of))
        result.tiers[_tier((await pipeline.ObserveTurn(request, timeout=RPC_TIMEOUT_S)).kzg)] += 1
    result.seconds = time.perf_counter() - started
    result.turns = len(turns)
    if drain is not None:
        result.drain_s = await drain()
    cpu_after = cpu_seconds(dict(pids))
    result.cpu_s = {name: cpu_after[name] - cpu_before[name] for name in cpu_after if name in cpu_before}
    return result


def cpu_lines(imported: Imported) -> list[str]:
    total = sum(imported.cpu_s.values())
    lines = [f"  {'process':<14} {'CPU s':>7} {'share':>6} {'ms/turn':>8}"]
    for name, seconds in sorted(imported.cpu_s.items(), key=lambda item: -item[1]):
        lines.append(
            f"  {name:<14} {seconds:7.1f} {seconds / total * 100 if total else 0:5.1f}% "
            f"{seconds * 1000 / max(imported.turns, 1):8.2f}"
        )
    lines.append(
        f"  {'all':<14} {total:7.1f} {'':>6} {total * 1000 / max(imported.turns, 1):8.2f}"
        f"   (wall {imported.seconds:.1f} s: {total / imported.seconds if imported.seconds else 0:.2f} cores busy)"
    )
    return lines


def report(
    args: argparse.Namespace, batched: Imported, single: Imported | None, same: Imported | None, single_sample: str
) -> dict[str, Any]:
    load = os.getloadavg()
    print(f"\nimport of {batched.turns} turns ({len(batched.per_conversation)} conversations), "
          f"ObserveTurns batches of {args.batch}, model {args.model}, Pixie running")  # fmt: skip
    print(f"  {'conversation':<14} {'turns':>6} {'seconds':>8} {'turns/s':>8} {'CPU ms/turn':>12}")
    for sample_id, turns, seconds, cpu in batched.per_conversation:
        print(f"  {sample_id:<14} {turns:6d} {seconds:8.1f} {turns / seconds if seconds else 0:8.1f} "
              f"{cpu * 1000 / turns:12.1f}")  # fmt: skip
    all_cpu = sum(batched.cpu_s.values())
    print(f"  {'all':<14} {batched.turns:6d} {batched.seconds:8.1f} {batched.rate:8.1f} "
          f"{all_cpu * 1000 / max(batched.turns, 1):12.1f}")  # fmt: skip
    print(f"  inside the pipeline: {batched.model_s:.1f} s in the embedding model, {batched.memory_s:.1f} s on "
          "everything else (analysis and its registry calls, the KZG writes, the log)")  # fmt: skip
    if single is not None and same is not None:
        print(f"  {single_sample} in pairs of its own first, each until Pixie had promoted what it queued "
              "(CPU of all processes, the promotions included):")  # fmt: skip
        for name, one in (("turn by turn (ObserveTurn)", single), ("batched (ObserveTurns)", same)):
            print(f"    {name:<27} {one.turns} turns in {one.seconds:5.1f} s = {one.rate:5.1f} turns/s, "
                  f"{sum(one.cpu_s.values()) * 1000 / max(one.turns, 1):5.1f} CPU ms/turn "
                  f"(promotion done {one.drain_s:.0f} s later)")  # fmt: skip
    print("  KZG outcomes: " + ", ".join(f"{name} {count}" for name, count in sorted(batched.tiers.items())))
    print("\nCPU seconds per process over the batched import:")
    for line in cpu_lines(batched):
        print(line)
    if single is not None:
        print(f"\nCPU seconds per process over the turn-by-turn import ({single_sample}):")
        for line in cpu_lines(single):
            print(line)
    print(f"\nmachine: {os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
          "(other processes on the machine compete for the same cores)")  # fmt: skip
    summary: dict[str, Any] = {
        "import_turns_per_s": round(batched.rate, 1),
        "turns": batched.turns,
        "seconds": round(batched.seconds, 2),
        "pipeline_model_s": round(batched.model_s, 2),
        "pipeline_memory_s": round(batched.memory_s, 2),
        "batch": args.batch,
        "model": args.model,
        "cpu_ms_per_turn": {k: round(v * 1000 / max(batched.turns, 1), 2) for k, v in sorted(batched.cpu_s.items())},
        "load_average_1m": round(load[0], 2),
    }
    summary["cpu_ms_per_turn_all"] = round(sum(batched.cpu_s.values()) * 1000 / max(batched.turns, 1), 1)
    if single is not None and same is not None:
        summary["compared_sample"] = single_sample
        for key, one in (("single", single), ("batched", same)):
            summary[f"{key}_turns_per_s"] = round(one.rate, 1)
            summary[f"{key}_cpu_ms_per_turn_with_promotion"] = round(
                sum(one.cpu_s.values()) * 1000 / max(one.turns, 1), 1
            )
    return summary


async def run(args: argparse.Namespace, root: Path) -> int:
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    conversations = load_conversations(data, samples=args.sample or ())
    print(f"{Path(args.data).name}: {len(conversations)} conversations, "
          f"{sum(len(c.turns) for c in conversations)} turns", file=sys.stderr, flush=True)  # fmt: skip
    single_sample = args.single
    if single_sample is None:
        single_sample = min(conversations, key=lambda c: len(c.turns)).sample_id
    single_turns = [t for c in conversations if c.sample_id == single_sample for t in c.turns]
    if single_sample and not single_turns:
        print(f"error: --single {single_sample} is not a conversation of the import", file=sys.stderr)
        return 2
    urls = await asyncio.to_thread(start_stores, root / "stores", ephemeral=True)
    stack = None
    try:
        stack = await start_stack(
            root, urls=urls, mtls=False,
            extra_env={"NOVABERG_EMBEDDING": args.model, "NOVABERG_LOG_LEVEL": "WARNING", "OPENBLAS_NUM_THREADS": "1"},
        )  # fmt: skip
        pids = stack_pids(stack, root / "stores")
        async with contextlib.AsyncExitStack() as channels:
            channel = {
                name: await channels.enter_async_context(grpc.aio.insecure_channel(stack.addresses[name]))
                for name in ("pipeline", "kzg", "pixie")
            }
            pipeline = pipeline_pb2_grpc.PipelineServiceStub(channel["pipeline"])
            kzg = kzg_pb2_grpc.KzgServiceStub(channel["kzg"])
            pixie = pixie_pb2_grpc.PixieServiceStub(channel["pixie"])

            async def drain() -> float:
                return (await wait_for_promotion(kzg, pixie, args.promotion_timeout)).seconds

            single = same = None
            if single_turns:
                print(f"  compared: {single_sample}, {len(single_turns)} turns, turn by turn and batched",
                      file=sys.stderr, flush=True)  # fmt: skip
                single = await import_single(pipeline, own_pair(single_turns, SINGLE_SUFFIX), pids, drain)
                own = next(c for c in conversations if c.sample_id == single_sample)
                renamed = dataclasses.replace(own, turns=own_pair(single_turns, BATCHED_SUFFIX))
                same = await import_batched(pipeline, [renamed], pids, args.batch, drain)
            batched = await import_batched(pipeline, conversations, pids, args.batch)
        summary = report(args, batched, single, same, single_sample)
        print(json.dumps(summary), flush=True)
    finally:
        if stack is not None:
            await stack.stop()
        await asyncio.to_thread(stop_stores, root / "stores")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=default_data(), help="a LoCoMo-format JSON file")
    parser.add_argument("--sample", action="append", help="one conversation by sample_id (repeatable; default all)")
    parser.add_argument("--batch", type=int, default=IMPORT_BATCH, help="turns per ObserveTurns call (1..256)")
    parser.add_argument(
        "--single", default=None,
        help="a conversation also imported turn by turn for comparison (default the smallest; '' skips it)",
    )  # fmt: skip
    parser.add_argument("--model", default="minilm", help="embedding provider of every service")
    parser.add_argument(
        "--promotion-timeout", type=float, default=600.0, help="max seconds to wait for Pixie in the comparison"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not Path(args.data).exists():
        print(f"error: no LoCoMo file at {args.data} (use --data)", file=sys.stderr)
        return 2
    if not 1 <= args.batch <= 256:
        print("error: --batch must be within 1..256", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        return asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    sys.exit(main())
