"""A person's erasure, orchestrated by Pixie across every store (docs/decisions.md "Erasure").

Crash safety: the erasure is a row of ``pixie.erasures`` written before any store is touched;
each step (``kzg``, ``lzg``, ``pixie``, ``log``) is idempotent and recorded when done. One runner
at a time holds the erasure's advisory lock (released when its process dies), and every replica
looks for unfinished erasures at start and every scheduler interval, so an erasure interrupted by
a crash, a kill or an outage is finished by whichever replica comes next.

In-flight promotions: during the KZG and LZG steps the erasure holds the target's promotion locks
(the pair's lock, or its user's lock exclusively — every promotion holds its user's lock shared),
so no promotion of the target is between reading its entry and writing its node. Jobs a worker
still holds afterwards are older than the stream cutoff the KZG step reported and are dropped
unprocessed (:func:`erased_job_ids`). The LZG's tombstone refuses any other late Promote, and the
log's tombstone drops records of the target still sitting in writers' buffers.

Once done, the row keeps only the target's one-way key, the counts (the receipt) and the reason;
the ids are gone. Nothing Pixie logs about an erasure names the target.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.contract import check_pair, pair_token, user_token
from novaberg_core.errors import NotFound, Unavailable
from novaberg_core.peers import KzgPeer, LogPeer, LzgPeer, describe
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.rights import RIGHTS_NODE, kzg_key_prefix
from novaberg_core.timeutil import utc_now
from services.pixie.background import every
from services.pixie.store import ErasureHeldElsewhere, ErasureRecord, PixieStore

__all__ = [
    "NODE",
    "SCOPE_PAIR",
    "SCOPE_USER",
    "STEPS",
    "ErasureRecord",
    "Erasures",
    "erased_job_ids",
]

_LOG = logging.getLogger(__name__)

NODE: Final = RIGHTS_NODE
"""pipeline_log node of the erasure's maintenance records (no ids of the target)."""
SCOPE_PAIR: Final = "pair"
SCOPE_USER: Final = "user"
STEPS: Final = ("kzg", "lzg", "pixie", "log")
"""In this order: the KZG first (no new job can name an erased entry), the log last (it also
catches the records the other steps' services wrote about the target)."""
SCRUBBED_ERROR: Final = "(Fehlermeldung wegen einer Löschung entfernt)"
"""What a run's error becomes when it quoted a key of an erased target."""


async def erased_job_ids(
    store: PixieStore, user_id: str, character_id: str, job_ids: Sequence[str]
) -> set[str]:
    """The jobs of one pair that an erasure of the pair or its user took (the worker drops them)."""
    if not job_ids:
        return set()
    return await store.erased_jobs(job_ids, [pair_token(user_id, character_id), user_token(user_id)])


@dataclass(kw_only=True, eq=False)
class Erasures:
    """Records, runs and resumes erasures on one replica."""

    store: PixieStore
    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub
    log: log_pb2_grpc.LogServiceStub | None
    plog: PipelineLog
    replica_id: str
    rpc_timeout_s: float = 30.0
    interval_s: float = 30.0
    clock: Callable[[], datetime] = utc_now
    _stop: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = field(init=False, default=None)

    # --- API ----------------------------------------------------------------------------

    async def erase_pair(self, user_id: str, character_id: str, reason: str) -> ErasureRecord:
        """Records the erasure of a pair, then runs it to the end (or raises Unavailable, recorded)."""
        check_pair(user_id, character_id)
        return await self._erase(SCOPE_PAIR, user_id, character_id, pair_token(user_id, character_id), reason)

    async def erase_user(self, user_id: str, reason: str) -> ErasureRecord:
        """The same for every pair of ``user_id`` (all characters)."""
        check_pair(user_id, "-", "user")
        return await self._erase(SCOPE_USER, user_id, None, user_token(user_id), reason)

    async def receipts(self, limit: int) -> list[ErasureRecord]:
        return await self.store.list_erasures(limit)

    async def _erase(
        self, scope: str, user_id: str, character_id: str | None, token: str, reason: str
    ) -> ErasureRecord:
        record = await self.store.insert_erasure(
            scope, user_id, character_id, token, reason, now=self.clock(), replica=self.replica_id
        )
        self._note(record, "aufgezeichnet")
        return await self.run(record.id, wait=True)

    # --- running ------------------------------------------------------------------------

    async def run(self, erasure_id: int, *, wait: bool) -> ErasureRecord:
        """Runs the erasure's remaining steps under its lock; ``wait=False`` skips one held elsewhere."""
        async with self.store.erasure_lock(erasure_id, wait=wait):
            record = await self.store.get_erasure(erasure_id)
            if record is None:
                raise NotFound(f"erasure {erasure_id} does not exist")
            if record.state == "done":
                return record
            try:
                record = await self._steps(record)
            except Exception as error:
                message = f"step failed: {describe(error)}"
                await self.store.erasure_step_failed(erasure_id, message[:2000])
                self._note(record, "schritt_fehlgeschlagen", fehler=message)
                raise Unavailable(
                    f"erasure {erasure_id} is recorded; Pixie finishes it when the failing service is back; "
                    f"{message}"
                ) from error
            record = await self.store.finish_erasure(erasure_id, self.clock())
            self._note(record, "fertig")
            return record

    async def _steps(self, record: ErasureRecord) -> ErasureRecord:
        assert record.user_id is not None
        user, character = record.user_id, record.character_id
        target = common_pb2.ErasureTarget()
        if character is None:
            target.user_id = user
        else:
            target.pair.user_id, target.pair.character_id = user, character
        timeout = self.rpc_timeout_s
        # An unreachable service fails its step at once (no waiting): the erasure is resumed later.
        kzg_peer, lzg_peer = KzgPeer(self.kzg, timeout, wait_for_ready=None), LzgPeer(self.lzg, timeout, wait_for_ready=None)
        if "kzg" not in record.steps_done or "lzg" not in record.steps_done:
            async with self.store.promotions_stopped(user, character, wait_ms=int(timeout * 2000)):
                if "kzg" not in record.steps_done:
                    kzg = await kzg_peer.erase(kzg_pb2.EraseRequest(target=target))
                    record = await self._done(
                        record,
                        "kzg",
                        {
                            "kzg.entries": kzg.entries,
                            "kzg.session_keys": kzg.session_keys,
                            "kzg.hash_dirty": kzg.hash_dirty,
                            "kzg.cluster_keys": kzg.cluster_keys,
                            "kzg.profile_keys": kzg.profile_keys,
                            "kzg.queue_jobs": kzg.queue_jobs,
                        },
                        cutoff=kzg.stream_cutoff,
                    )
                if "lzg" not in record.steps_done:
                    lzg = await lzg_peer.erase(lzg_pb2.EraseRequest(target=target), timeout * 4)
                    record = await self._done(
                        record,
                        "lzg",
                        {
                            "lzg.nodes": lzg.nodes,
                            "lzg.edges": lzg.edges,
                            "lzg.entities": lzg.entities,
                            "lzg.timelines": lzg.timelines,
                            "lzg.verbindungen": lzg.verbindungen,
                        },
                    )
        if "pixie" not in record.steps_done:
            record = await self._done(record, "pixie", await self._erase_own(user, character, record.id))
        if "log" not in record.steps_done:
            if self.log is None:
                # Without a log service every writer discards its records: the log holds nothing.
                counts = {"log.rows": 0, "log.turn_roh": 0, "log.unpaired_rows": 0}
            else:
                log_peer = LogPeer(self.log, timeout, wait_for_ready=None)
                log = await log_peer.erase(log_pb2.EraseRequest(target=target), timeout * 4)
                counts = {
                    "log.rows": log.rows,
                    "log.turn_roh": log.turn_roh,
                    "log.unpaired_rows": log.unpaired_rows,
                }
            record = await self._done(record, "log", counts)
        return record

    async def _erase_own(self, user_id: str, character_id: str | None, erasure_id: int) -> dict[str, int]:
        """Pixie's own records of the target: job attempts, parked jobs, run errors quoting its keys."""
        return await self.store.erase_own(user_id, character_id, kzg_key_prefix(user_id, character_id), SCRUBBED_ERROR)

    async def _done(
        self, record: ErasureRecord, step: str, counts: Mapping[str, int], *, cutoff: str | None = None
    ) -> ErasureRecord:
        updated = await self.store.erasure_step_done(record.id, step, counts, cutoff)
        self._note(updated, f"schritt_{step}", **{k.replace(".", "_"): v for k, v in counts.items()})
        return updated

    def _note(self, record: ErasureRecord, what: str, **details: Any) -> None:
        """A maintenance record of the erasure: its id and counts, never the target's ids."""
        self.plog.write(
            turn_id=f"loeschung-{record.id}",
            node=NODE,
            art="db_write",
            inhalt={"loeschung": record.id, "umfang": record.scope, "ereignis": what, **details},
        )

    # --- resuming -----------------------------------------------------------------------

    async def resume(self) -> list[ErasureRecord]:
        """Finishes every unfinished erasure no other runner holds; returns the ones finished."""
        finished: list[ErasureRecord] = []
        for erasure_id in await self.store.running_erasure_ids():
            try:
                record = await self.run(erasure_id, wait=False)
            except ErasureHeldElsewhere:
                continue
            except Unavailable as error:
                _LOG.warning("pixie: erasure %s not finished yet: %s", erasure_id, error)
                continue
            finished.append(record)
            _LOG.info("pixie: erasure %s finished (resumed)", record.id)
        return finished

    def start(self) -> None:
        """Resumes unfinished erasures now and every ``interval_s`` (a background task)."""
        if self._task is None:
            self._stop.clear()
            self._task = asyncio.create_task(self._loop(), name="pixie-erasures")

    async def stop(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        await every(
            self._stop, self.interval_s, self.resume,
            log=_LOG, failure="pixie: resuming erasures failed (retrying next interval)",
        )  # fmt: skip

