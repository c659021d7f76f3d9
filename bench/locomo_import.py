"""The import half of ``bench/locomo_bench.py`` (and ``bench/import_bench.py``): every turn through
``ObserveTurn`` as ``novaberg import`` sends it, then waiting until Pixie has promoted what was queued; with
``--reuse``, the results kept beside the durable stores so a later run can skip both."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.locomo_turns import Conversation
from bench.processes import cpu_seconds
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2, pixie_pb2_grpc
from novaberg_core.maintenance import TASK_PROMOTION
from novaberg_core.timeutil import to_timestamp
from services.pixie.tasks import OUTCOME_RUNNING

__all__ = [
    "IMPORT_FILE",
    "RPC_TIMEOUT_S",
    "ImportResult",
    "PromotionResult",
    "import_turns",
    "load_import",
    "save_import",
    "wait_for_promotion",
]


@dataclass
class ImportResult:
    turns: int = 0
    seconds: float = 0.0
    tiers: Counter[str] = field(default_factory=Counter)
    queued: int = 0
    key_turns: dict[str, str] = field(default_factory=dict)
    """KZG key → turn id, from ObserveTurnResponse.kzg.kzg_key."""
    turn_tier: dict[str, str] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)


@dataclass
class PromotionResult:
    seconds: float
    drained: bool
    counts: Counter[str]
    runs: int
    parked: int


RPC_TIMEOUT_S = 120.0
"""Every call of the LoCoMo bench (import, promotion waits, evidence lookups, dossiers)."""
IMPORT_FILE = "locomo-import.json"
"""With ``--reuse``: what the import and the promotion gave, so a later run can skip both."""


def save_import(path: Path, imported: ImportResult, promotion: PromotionResult) -> None:
    """The import's and the promotion's results as JSON (Counters as plain objects)."""
    data = {
        "import": {**vars(imported), "tiers": dict(imported.tiers)},
        "promotion": {**vars(promotion), "counts": dict(promotion.counts)},
    }
    path.write_text(json.dumps(data), encoding="utf-8")


def load_import(path: Path) -> tuple[ImportResult, PromotionResult]:
    data = json.loads(path.read_text(encoding="utf-8"))
    raw_import, raw_promotion = data["import"], data["promotion"]
    imported = ImportResult(**{**raw_import, "tiers": Counter(raw_import["tiers"])})
    promotion = PromotionResult(**{**raw_promotion, "counts": Counter(raw_promotion["counts"])})
    return imported, promotion


def _tier_name(stored: kzg_pb2.StoreEntryResponse) -> str:
    if stored.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE:
        return "rejected"
    return kzg_pb2.Tier.Name(stored.tier).removeprefix("TIER_").lower()


async def import_turns(
    pipeline: pipeline_pb2_grpc.PipelineServiceStub,
    conversations: Sequence[Conversation],
    pids: Mapping[str, int],
) -> ImportResult:
    """ObserveTurn for every turn, pair after pair, in session order (analyzer on, as ``novaberg import``)."""
    result = ImportResult()
    cpu_before = cpu_seconds(dict(pids))
    started = time.perf_counter()
    for conv in conversations:
        t0 = time.perf_counter()
        for turn in conv.turns:
            request = pipeline_pb2.ObserveTurnRequest(
                pair=turn.pair, turn_id=turn.turn_id, beobachter=turn.beobachter, text=turn.text, profile=turn.profile
            )
            if turn.as_of is not None:
                request.as_of.CopyFrom(to_timestamp(turn.as_of))
            stored = (await pipeline.ObserveTurn(request, timeout=RPC_TIMEOUT_S)).kzg
            tier = _tier_name(stored)
            result.tiers[tier] += 1
            result.turn_tier[turn.turn_id] = tier
            result.queued += int(stored.queued_for_promotion) + stored.reinforced_queued_count
            if stored.kzg_key:
                result.key_turns[stored.kzg_key] = turn.turn_id
        seconds = time.perf_counter() - t0
        print(
            f"  imported {conv.sample_id}: {len(conv.turns)} turns in {seconds:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    result.seconds = time.perf_counter() - started
    result.turns = sum(len(c.turns) for c in conversations)
    cpu_after = cpu_seconds(dict(pids))
    result.cpu_s = {name: cpu_after[name] - cpu_before[name] for name in cpu_after if name in cpu_before}
    return result


async def wait_for_promotion(
    kzg: kzg_pb2_grpc.KzgServiceStub,
    pixie: pixie_pb2_grpc.PixieServiceStub,
    timeout: float,  # noqa: ASYNC109
) -> PromotionResult:
    """Until the promotion queue is empty, nothing pending and no promotion run open, three polls in a row."""
    started = time.perf_counter()
    stable = 0
    drained = False
    while True:
        queue = await kzg.InspectPromotionQueue(
            kzg_pb2.InspectPromotionQueueRequest(limit=0), timeout=RPC_TIMEOUT_S
        )
        runs = await pixie.ListRuns(
            pixie_pb2.ListRunsRequest(task=TASK_PROMOTION, limit=5), timeout=RPC_TIMEOUT_S
        )
        open_run = any(run.outcome == OUTCOME_RUNNING for run in runs.runs)
        stable = stable + 1 if queue.length == 0 and queue.pending == 0 and not open_run else 0
        if stable >= 3:
            drained = True
            break
        if time.perf_counter() - started > timeout:
            print(
                f"  promotion not drained after {timeout:.0f} s: "
                f"queue {queue.length}, pending {queue.pending}",
                file=sys.stderr,
            )
            break
        await asyncio.sleep(1.0)
    runs = await pixie.ListRuns(
        pixie_pb2.ListRunsRequest(task=TASK_PROMOTION, limit=100_000), timeout=RPC_TIMEOUT_S
    )
    counts: Counter[str] = Counter()
    for run in runs.runs:
        counts.update(dict(run.counts))
    parked = await pixie.ListParkedJobs(pixie_pb2.ListParkedJobsRequest(limit=100_000), timeout=RPC_TIMEOUT_S)
    return PromotionResult(time.perf_counter() - started, drained, counts, len(runs.runs), len(parked.jobs))
