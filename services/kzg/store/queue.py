"""The promotion queue in Redis (SPEC §4.6): a stream with the consumer group ``pixie``."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from redis.exceptions import ResponseError

from novaberg_core.redis_client import read_timeout_s
from services.kzg.store.base import StoreBase
from services.kzg.store.codec import consumer_name, job_from_fields, stream_entries, text
from services.kzg.store.keys import PROMOTION_GROUP, PROMOTION_STREAM
from services.kzg.types import PromotionJobData, QueueState

__all__ = ["QueueStore"]

_MAX_BLOCK_MS = 30_000
_BLOCK_SHARE_OF_READ_TIMEOUT = 0.5
"""One blocking read waits at most this share of the client's read timeout: Redis ends a block up to
a tick of its clock late (``hz`` 10: 100 ms), and the answer needs its way back."""
_PAGE = 1_000
_ACK_CHUNK = 500


class QueueStore(StoreBase):
    """XREADGROUP/XAUTOCLAIM/XACK over ``kzg:promotion:queue``."""

    async def ensure_promotion_group(self) -> None:
        """The consumer group ``pixie`` on the stream, reading from its start (idempotent)."""
        try:
            await self.redis.xgroup_create(PROMOTION_STREAM, PROMOTION_GROUP, id="0", mkstream=True)
        except ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise

    async def read_jobs(
        self, consumer: str, count: int, *, block_ms: int, reclaim_idle_ms: int
    ) -> list[PromotionJobData]:
        """Reclaimed pending jobs idle ≥ ``reclaim_idle_ms`` first, then new ones (SPEC §4.6)."""
        try:
            return await self._read_jobs(consumer, count, block_ms, reclaim_idle_ms)
        except ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            await self.ensure_promotion_group()  # the stream was deleted under us
            return await self._read_jobs(consumer, count, block_ms, reclaim_idle_ms)

    async def _read_jobs(self, consumer: str, count: int, block_ms: int, reclaim_idle_ms: int) -> list[PromotionJobData]:
        messages: list[tuple[str, Mapping[bytes, bytes]]] = []
        claimed = await self.redis.xautoclaim(
            PROMOTION_STREAM, PROMOTION_GROUP, consumer, reclaim_idle_ms, "0-0", count=count
        )
        # Entries deleted meanwhile come back in claimed[2] and leave the pending list.
        messages.extend((text(message_id), fields) for message_id, fields in claimed[1] if fields is not None)
        remaining = count - len(messages)
        if remaining > 0:
            block = min(block_ms, _MAX_BLOCK_MS) if not messages else 0
            new = await self._read_new(consumer, remaining, block)
            messages.extend((text(message_id), fields) for message_id, fields in new)
        if not messages:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for message_id, _ in messages:
                pipe.xpending_range(PROMOTION_STREAM, PROMOTION_GROUP, message_id, message_id, 1)
            pendings = await pipe.execute()
        return [
            job_from_fields(message_id, fields, int(pending[0]["times_delivered"]) if pending else 1)
            for (message_id, fields), pending in zip(messages, pendings, strict=True)
        ]

    async def _read_new(self, consumer: str, count: int, block_ms: int) -> list[tuple[bytes, Mapping[bytes, bytes]]]:
        """Up to ``count`` new jobs, waiting up to ``block_ms`` for the first (0: not at all), in reads
        that each end well within the client's read timeout: a longer ``BLOCK`` would be cut off as an
        unanswered command (:mod:`novaberg_core.redis_client`)."""
        read_timeout = read_timeout_s(self.redis)
        longest_ms = block_ms if read_timeout is None else max(int(read_timeout * _BLOCK_SHARE_OF_READ_TIMEOUT * 1e3), 1)
        deadline = time.monotonic() + block_ms / 1000.0
        while True:
            left_ms = int((deadline - time.monotonic()) * 1000.0)
            block = min(left_ms, longest_ms) if left_ms > 0 else None  # BLOCK 0 would wait for ever
            response = await self.redis.xreadgroup(
                PROMOTION_GROUP, consumer, {PROMOTION_STREAM: ">"}, count=count, block=block
            )
            entries = stream_entries(response)
            if entries or block is None or left_ms <= longest_ms:
                return entries

    async def ack_jobs(self, job_ids: Sequence[str]) -> int:
        """XACK, then XDEL (the stream holds only unprocessed jobs); returns how many were pending."""
        if not job_ids:
            return 0
        acked, _ = await self._ack_and_delete(job_ids)
        return acked

    async def _ack_and_delete(self, job_ids: Sequence[str]) -> tuple[int, int]:
        """XACK and XDEL in one transaction → (acked, deleted)."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xack(PROMOTION_STREAM, PROMOTION_GROUP, *job_ids)
            pipe.xdel(PROMOTION_STREAM, *job_ids)
            acked, deleted = await pipe.execute()
        return int(acked), int(deleted)

    async def enqueue(self, key: str, trigger_turn_id: str) -> str:
        """A promotion job for an entry that still exists → its stream id, "" when the entry is gone."""
        new_id = await self._enqueue(keys=[key, PROMOTION_STREAM], args=[trigger_turn_id])
        return text(new_id) if new_id else ""

    async def inspect_queue(self, limit: int) -> QueueState:
        length = int(await self.redis.xlen(PROMOTION_STREAM))
        try:
            summary = await self.redis.xpending(PROMOTION_STREAM, PROMOTION_GROUP)
            consumers_raw = await self.redis.xinfo_consumers(PROMOTION_STREAM, PROMOTION_GROUP)
        except ResponseError as error:
            if "NOGROUP" not in str(error) and "no such key" not in str(error).lower():
                raise
            return QueueState(length=length, pending=0, consumers=(), pending_jobs=())
        pending = int(summary["pending"])
        consumers = tuple(consumer_name(c) for c in consumers_raw)
        jobs: list[PromotionJobData] = []
        if pending and limit > 0:
            rows = await self.redis.xpending_range(PROMOTION_STREAM, PROMOTION_GROUP, "-", "+", limit)
            async with self.redis.pipeline(transaction=False) as pipe:
                for row in rows:
                    pipe.xrange(PROMOTION_STREAM, min=row["message_id"], max=row["message_id"], count=1)
                ranges = await pipe.execute()
            for row, found in zip(rows, ranges, strict=True):
                fields = found[0][1] if found else {}
                message_id: bytes = row["message_id"]  # type: ignore[assignment]
                jobs.append(job_from_fields(text(message_id), fields, int(row["times_delivered"])))
        return QueueState(length=length, pending=pending, consumers=consumers, pending_jobs=tuple(jobs))

    async def queue_metrics(self) -> dict[str, float]:
        """Cheap numbers for the metrics (one round trip): jobs queued (XLEN), delivered and not
        acked (XPENDING), the age of the oldest job in seconds, and the entries in the index."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xlen(PROMOTION_STREAM)
            pipe.xrange(PROMOTION_STREAM, count=1)
            pipe.xpending(PROMOTION_STREAM, PROMOTION_GROUP)
            pipe.execute_command("FT.INFO", self.index_name)
            length, oldest, pending, info = await pipe.execute(raise_on_error=False)
        values: dict[str, float] = {}
        if not isinstance(length, Exception):
            values["novaberg.promotion.queue.length"] = float(length)
        if not isinstance(pending, Exception):
            values["novaberg.promotion.queue.pending"] = float(pending["pending"])
        if not isinstance(oldest, Exception):
            lag = 0.0
            if oldest:
                millis = int(text(oldest[0][0]).split("-", 1)[0])
                lag = max(time.time() - millis / 1000.0, 0.0)
            values["novaberg.promotion.queue.lag"] = lag
        if not isinstance(info, Exception):
            fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=False))
            docs = fields.get(b"num_docs", fields.get("num_docs"))
            if docs is not None:
                values["novaberg.kzg.entries"] = float(text(docs) if isinstance(docs, bytes) else docs)
        return values

    async def stream_cutoff(self) -> str:
        """The promotion stream's last id now ("0-0" without a stream)."""
        try:
            info = await self.redis.xinfo_stream(PROMOTION_STREAM)
        except ResponseError:
            return "0-0"
        raw: dict[Any, Any] = dict(info)
        return text(raw.get("last-generated-id", raw.get(b"last-generated-id"))) or "0-0"

    async def erase_jobs(self, user_id: str, character_id: str | None, characters: set[str]) -> int:
        """Acks and deletes the jobs of the user (of one character, or all) in the stream (which holds
        only unprocessed jobs); adds their characters to ``characters``; returns how many went."""
        ids: list[str] = []
        start = "-"
        while True:
            batch = await self.redis.xrange(PROMOTION_STREAM, min=start, max="+", count=_PAGE)
            if not batch:
                break
            for message_id, raw_fields in batch:
                fields: dict[Any, Any] = dict(raw_fields or {})
                if text(fields.get(b"user_id")) != user_id:
                    continue
                job_character = text(fields.get(b"character_id"))
                if character_id is None or job_character == character_id:
                    ids.append(text(message_id))
                    characters.add(job_character)
            start = "(" + text(batch[-1][0])
            if len(batch) < _PAGE:
                break
        removed = 0
        for begin in range(0, len(ids), _ACK_CHUNK):
            _, deleted = await self._ack_and_delete(ids[begin : begin + _ACK_CHUNK])
            removed += deleted
        return removed
