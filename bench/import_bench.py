"""Bulk import throughput: LoCoMo's dev split through ``PipelineService/ObserveTurns`` (issue 16).

As ``novaberg import`` does it, through the running services:

1. Embedded stores and all five services (``novaberg_core.stack``), Pixie included — it promotes
   while the import runs, as it would in production; one embedding model everywhere (``--model``,
   default ``minilm``, as ``NOVABERG_EMBEDDING``), one BLAS thread per process.
2. Every conversation of the file its own pair (``parse_locomo``: turn ids ``{sample_id}:{dia_id}``,
   image captions appended, each session's date), imported in session order in batches of
   ``--batch`` turns (the CLI's :func:`~novaberg_core.cli.observe_batches`) without an analysis,
   so the pipeline's analyzer runs on every turn; one embedding batch per request in the pipeline;
   the KZG writes each batch's entries in order (thematic reinforcement, promotion queue) and
   appends its session turns; every log record of ObserveTurn is written.
3. For comparison (``--single``, default the smallest conversation; ``--single ''`` skips it), the
   same conversation turn by turn through ``ObserveTurn`` into a pair of its own, first, so the
   batched import does not start with Pixie idle and the single one with it busy.

Measured: wall time of the import as the client sees it, turns per second, and the CPU seconds of
every process over the batched import (services, PostgreSQL with its backends, Redis, this client).
The machine's other load is printed too (load average, and the CPU seconds of processes outside
the stack are not counted, but they compete for the same cores).

    .venv/bin/python bench/import_bench.py [--data FILE] [--sample conv-26 ...] [--batch 64]
        [--single conv-30] [--model minilm]

Prints a table and, as the last line, one JSON object with ``import_turns_per_s``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from bench.locomo_bench import Conversation, default_data, load_conversations, stack_pids
from bench.turn_bench import cpu_seconds
from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.cli import IMPORT_BATCH, ImportedTurn, observe_batches
from novaberg_core.embedded import start_stores, stop_stores
from novaberg_core.stack import start_stack
from novaberg_core.timeutil import to_timestamp
from services.pipeline.servicer import MEMORY_MS_KEY, MODEL_MS_KEY

RPC_TIMEOUT_S = 600.0
SINGLE_SUFFIX = "-single"
"""The turn-by-turn comparison writes into ``<user_id>-single``: a pair of its own."""


@dataclass
class Imported:
    """One import: turns, wall seconds, store outcomes, CPU seconds per process."""

    turns: int = 0
    seconds: float = 0.0
    tiers: Counter[str] = field(default_factory=Counter)
    per_conversation: list[tuple[str, int, float]] = field(default_factory=list)
    cpu_s: dict[str, float] = field(default_factory=dict)
    model_s: float = 0.0
    """Wall seconds the pipeline spent in the embedding model (its ``novaberg-model-ms`` trailers)."""
    memory_s: float = 0.0
    """Wall seconds the pipeline spent on everything else (analysis, registry, KZG writes)."""

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
) -> Imported:
    """ObserveTurns, conversation after conversation, batches in order (as ``novaberg import``)."""
    result = Imported()
    cpu_before = cpu_seconds(dict(pids))
    started = time.perf_counter()
    for conv in conversations:
        t0 = time.perf_counter()
        for request in observe_batches(conv.turns, batch):
            call = pipeline.ObserveTurns(request, timeout=RPC_TIMEOUT_S)
            response = await call
            result.tiers.update(_tier(r.kzg) for r in response.results)
            trailers = dict(await call.trailing_metadata() or ())
            result.model_s += float(trailers.get(MODEL_MS_KEY, 0.0)) / 1000.0
            result.memory_s += float(trailers.get(MEMORY_MS_KEY, 0.0)) / 1000.0
        seconds = time.perf_counter() - t0
        result.per_conversation.append((conv.sample_id, len(conv.turns), seconds))
        print(f"  {conv.sample_id}: {len(conv.turns)} turns in {seconds:.1f} s", file=sys.stderr, flush=True)
    result.seconds = time.perf_counter() - started
    result.turns = sum(len(c.turns) for c in conversations)
    cpu_after = cpu_seconds(dict(pids))
    result.cpu_s = {name: cpu_after[name] - cpu_before[name] for name in cpu_after if name in cpu_before}
    return result


async def import_single(
    pipeline: pipeline_pb2_grpc.PipelineServiceStub, turns: Sequence[ImportedTurn], pids: Mapping[str, int]
) -> Imported:
    """ObserveTurn for every turn (the import before issue 16)."""
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


def report(args: argparse.Namespace, batched: Imported, single: Imported | None, single_sample: str) -> dict[str, Any]:
    load = os.getloadavg()
    print(f"\nimport of {batched.turns} turns ({len(batched.per_conversation)} conversations), "
          f"ObserveTurns batches of {args.batch}, model {args.model}, Pixie running")  # fmt: skip
    print(f"  {'conversation':<14} {'turns':>6} {'seconds':>8} {'turns/s':>8}")
    for sample_id, turns, seconds in batched.per_conversation:
        print(f"  {sample_id:<14} {turns:6d} {seconds:8.1f} {turns / seconds if seconds else 0:8.1f}")
    print(f"  {'all':<14} {batched.turns:6d} {batched.seconds:8.1f} {batched.rate:8.1f}")
    print(f"  inside the pipeline: {batched.model_s:.1f} s in the embedding model, {batched.memory_s:.1f} s on "
          "everything else (analysis and its registry calls, the KZG writes, the log)")  # fmt: skip
    if single is not None:
        print(f"  turn by turn (ObserveTurn), {single_sample}: {single.turns} turns in {single.seconds:.1f} s = "
              f"{single.rate:.1f} turns/s; batched is {batched.rate / single.rate if single.rate else 0:.1f}x")  # fmt: skip
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
    if single is not None:
        summary["single_turns_per_s"] = round(single.rate, 1)
        summary["single_sample"] = single_sample
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
        async with grpc.aio.insecure_channel(stack.addresses["pipeline"]) as channel:
            pipeline = pipeline_pb2_grpc.PipelineServiceStub(channel)
            single = None
            if single_turns:
                print(f"  turn by turn: {single_sample}, {len(single_turns)} turns", file=sys.stderr, flush=True)
                single = await import_single(pipeline, own_pair(single_turns, SINGLE_SUFFIX), pids)
            batched = await import_batched(pipeline, conversations, pids, args.batch)
        summary = report(args, batched, single, single_sample)
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
