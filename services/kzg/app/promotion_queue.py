"""The promotion queue's RPCs (SPEC §4.6): read and acknowledge jobs, inspect the queue, requeue entries."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

from novaberg_core.errors import InvalidArgument
from services.kzg.app.checks import check_key
from services.kzg.app.context import KzgContext, log_turn
from services.kzg.types import Pair, PromotionJobData, QueueState

__all__ = ["DEFAULT_RECLAIM_IDLE_MS", "PromotionQueue"]

DEFAULT_RECLAIM_IDLE_MS = 60_000
"""Pending jobs idle this long are taken over from a consumer presumed dead (SPEC §4.6)."""
_STREAM_ID = re.compile(r"\d+-\d+")
_QUEUE_NODE = "promotion_queue"
_QUEUE_TABLE = "kzg_promotion_queue"


class PromotionQueue:
    """ReadPromotionJobs, AckPromotionJobs, InspectPromotionQueue, EnqueuePromotionJobs."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    async def read_promotion_jobs(
        self, consumer: str, count: int, *, block_ms: int = 0, reclaim_idle_ms: int = 0
    ) -> list[PromotionJobData]:
        if not consumer.strip():
            raise InvalidArgument("consumer must not be empty")
        if count < 0 or block_ms < 0 or reclaim_idle_ms < 0:
            raise InvalidArgument("count, block_ms and reclaim_idle_ms must not be negative")
        jobs = await self.store.read_jobs(
            consumer, count or 10, block_ms=block_ms, reclaim_idle_ms=reclaim_idle_ms or self.ctx.reclaim_idle_ms
        )
        if jobs:  # an empty poll is not worth a record
            self.ctx.log.db_read(
                turn_id=log_turn(""), node=_QUEUE_NODE, tabelle=_QUEUE_TABLE, treffer=len(jobs),
                consumer=consumer, jobs=[{"job_id": j.job_id, "kzg_key": j.kzg_key,
                                          "zustellungen": j.delivery_count} for j in jobs],
            )
        return jobs

    async def ack_promotion_jobs(self, job_ids: Sequence[str]) -> int:
        for job_id in job_ids:
            if not _STREAM_ID.fullmatch(job_id):
                raise InvalidArgument(f"job id {job_id!r} is not a stream id like 1764428000000-0")
        acked = await self.store.ack_jobs(list(job_ids))
        if job_ids:
            self.ctx.log.db_write(
                turn_id=log_turn(""), node=_QUEUE_NODE, tabelle=_QUEUE_TABLE, operation="xack",
                job_ids=list(job_ids), bestaetigt=acked,
            )
        return acked

    async def inspect_promotion_queue(self, limit: int) -> QueueState:
        return await self.store.inspect_queue(limit if limit > 0 else 100)

    async def enqueue(self, jobs: Sequence[tuple[Pair, str, str]]) -> list[str]:
        """(pair, kzg_key, trigger turn) → the new stream id per job, "" where the entry is gone."""
        for pair, key, _ in jobs:
            check_key(pair, key)
        ids = [await self.store.enqueue(key, trigger) for _, key, trigger in jobs]
        if jobs:
            self.ctx.log.db_write(
                turn_id=f"requeue-{uuid.uuid4()}", node=_QUEUE_NODE, tabelle=_QUEUE_TABLE, operation="xadd",
                job_ids=[i for i in ids if i], weg=sum(1 for i in ids if not i),
            )
        return ids
