"""The promotion worker: consumes the KZG promotion queue (SPEC §4.6) and promotes each entry (§5.3).

Per job: read the entry fresh from the KZG (gone → ``verfallen``), let the LZG promote it, and —
only after a new node — set the pair's ``hash_dirty`` and delete the KZG key, then ack the job.
A failing or unverified delete is logged loudly and counted, not raised (SPEC §5.3 step 6).
Delivery is at-least-once; every effect is idempotent (LZG Promote is idempotent on
``kzg_quell_key``), so a crash at any step loses no entry and creates no second node.

One actor per pair (SPEC §9): a pair's jobs run serially inside a PostgreSQL advisory lock; for a
pair another replica holds, the worker waits briefly, then holds its jobs back for the next batch
(still pending, never lost); different pairs proceed in parallel. A job that keeps failing is
retried with exponential backoff and parked after N attempts; an unreachable service is an
outage, not the job's fault — no attempt is counted and the worker backs off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from novaberg.kzg.v1 import kzg_pb2
from novaberg_core.metrics import record_promotion
from novaberg_core.peers import describe, peer_is_down
from novaberg_core.server import UNTRACED_CALL
from novaberg_core.telemetry import tracer
from services.pixie.app.erasure import erased_job_ids
from services.pixie.app.promotion_job import PromotionSteps
from services.pixie.background import wait_or_stop
from services.pixie.runlog import RunSpan, log_single_run, new_turn_id
from services.pixie.store import JobState, RunRecord
from services.pixie.tasks import (
    OUTCOME_FAILED,
    OUTCOME_OK,
    OUTCOME_SKIPPED,
    TASK_PROMOTION,
    group_by_key,
)
from services.pixie.types import (
    NODE,
    DependencyDown,
    JobFailed,
    Tally,
    new_tally,
)

_LOG = logging.getLogger(__name__)
_TRACER = tracer(__name__)


class PromotionWorker(PromotionSteps):
    """Reads promotion jobs as consumer ``replica_id`` and processes them (SPEC §4.6, §5.3, §9).

    Batches, pairs and runs here; one job's steps are :class:`~services.pixie.app.promotion_job.PromotionSteps`.
    """

    # --- reading ------------------------------------------------------------------------

    async def read_jobs(self, block_ms: int) -> list[kzg_pb2.PromotionJob]:
        """One read of the consumer group (reclaims idle pending jobs of any consumer first).

        The read is not traced (:data:`UNTRACED_CALL`, both sides): an idle worker polls about once a
        second, and each poll would be a root span; the work a poll finds is traced as a batch.
        """
        response = await self.kzg.ReadPromotionJobs(
            kzg_pb2.ReadPromotionJobsRequest(
                consumer=self.replica_id,
                count=self.settings.batch_size,
                block_ms=block_ms,
                reclaim_idle_ms=self.settings.reclaim_idle_ms,
            ),
            timeout=self.settings.rpc_timeout_s + block_ms / 1000.0,
            metadata=(UNTRACED_CALL,),
        )
        return list(response.jobs)

    # --- one batch ----------------------------------------------------------------------

    async def process_batch(
        self, jobs: Sequence[kzg_pb2.PromotionJob], tally: Tally, *, as_of: datetime | None = None
    ) -> list[kzg_pb2.PromotionJob]:
        """Processes a batch: pairs in parallel (bounded), each pair's jobs serially under its lock.

        ``as_of`` (a replay's simulated time) goes to Promote and MarkHashDirty; None → now.
        Returns the jobs left untouched because another replica held their pair.
        """
        before = dict(tally)
        try:
            return await self._process_batch(jobs, tally, as_of=as_of)
        finally:
            record_promotion({key: value - before.get(key, 0) for key, value in tally.items()})

    async def _process_batch(
        self, jobs: Sequence[kzg_pb2.PromotionJob], tally: Tally, *, as_of: datetime | None
    ) -> list[kzg_pb2.PromotionJob]:
        states = await self.store.job_states([j.job_id for j in jobs])
        now = self.clock()
        ready: list[kzg_pb2.PromotionJob] = []
        already_parked: list[str] = []
        for job in jobs:
            state = states.get(job.job_id)
            if state is not None and state.parked:
                already_parked.append(job.job_id)  # parked earlier, its ack got lost
            elif state is not None and state.next_attempt_at is not None and state.next_attempt_at > now:
                tally["deferred_backoff"] += 1
            else:
                ready.append(job)
        if already_parked:
            await self._ack(already_parked, tally)
        groups = group_by_key(((j.pair.user_id, j.pair.character_id), j) for j in ready)
        semaphore = asyncio.Semaphore(self.settings.concurrency)
        deferred: list[kzg_pb2.PromotionJob] = []
        finished: list[kzg_pb2.PromotionJob] = []

        async def run_pair(pair_jobs: list[kzg_pb2.PromotionJob]) -> None:
            async with semaphore:
                if not await self._process_pair(pair_jobs, states, tally, as_of, finished):
                    deferred.extend(pair_jobs)

        results = await asyncio.gather(*(run_pair(g) for g in groups.values()), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        for failure in failures:
            if isinstance(failure, asyncio.CancelledError):
                raise failure
        if finished:
            # One ack for the batch's finished jobs (until then they stay pending to this consumer;
            # a crash replays them, and every step is idempotent).
            await self._ack([j.job_id for j in finished], tally)
            if self.step_hook is not None:
                for job in finished:
                    await self.step_hook("acked", job)
            await self.store.clear_attempts([j.job_id for j in finished if j.job_id in states])
        if failures:
            # Not a job's fault (those are handled per job): a service or the store failed. The
            # groups' unfinished jobs stay pending and come back; the caller backs off.
            for failure in failures[1:]:
                _LOG.warning("promotion: another pair group failed too: %s", describe(failure))
            raise failures[0]
        return deferred

    async def _process_pair(
        self, jobs: list[kzg_pb2.PromotionJob], states: dict[str, JobState], tally: Tally,
        as_of: datetime | None, finished: list[kzg_pb2.PromotionJob],
    ) -> bool:
        """One pair's jobs in order under the pair lock; False when another replica holds the pair.

        Jobs that ran to their outcome are appended to ``finished`` (the batch acks them).
        """
        first = jobs[0]
        async with self.store.pair_lock(
            first.pair.user_id, first.pair.character_id, wait_ms=self.settings.pair_lock_wait_ms
        ) as lock:
            if not lock.held:
                # Another replica promotes this pair right now: leave the jobs pending for later.
                tally["deferred_locked"] += len(jobs)
                return False
            # Jobs an erasure of the pair took are acked unprocessed (services/pixie/app/erasure.py).
            erased = await erased_job_ids(self.store, first.pair.user_id, first.pair.character_id,
                                          [j.job_id for j in jobs])  # fmt: skip
            if erased:
                tally["erased"] += len(erased)
                finished.extend(j for j in jobs if j.job_id in erased)
                jobs = [j for j in jobs if j.job_id not in erased]
            outage: Exception | None = None
            for job in jobs:
                try:
                    if self.step_hook is not None:
                        await self.step_hook("started", job)
                    result = await self._promote_one(job, tally, as_of)
                    if self.step_hook is not None:
                        await self.step_hook("finished", job)
                except Exception as error:
                    if peer_is_down(error) or (isinstance(error, JobFailed) and peer_is_down(error.__cause__)):
                        outage = error
                        break
                    await self._on_failure(job, error, tally)
                    continue
                tally[result] += 1
                finished.append(job)
            if outage is not None:
                raise DependencyDown(describe(outage)) from outage
        return True
    # --- runs ---------------------------------------------------------------------------

    async def drain(
        self, tally: Tally, *, as_of: datetime | None = None, pairs: Sequence[tuple[str, str]] = ()
    ) -> None:
        """Processes the currently available jobs once (new and reclaimable), without blocking.

        With ``pairs`` only their jobs are processed; another pair's job that this read delivered
        is left pending, unacked and untouched (counted ``out_of_scope``): a worker reclaims it
        once it has been idle ``reclaim_idle_ms``, so a replay never promotes another pair's
        entries at its simulated time.
        """
        seen: set[str] = set()
        held_back = _HeldBack(self.settings.reclaim_idle_ms)
        scope = frozenset(pairs)
        while True:
            read = [j for j in await self.read_jobs(0) if j.job_id not in seen]
            seen.update(j.job_id for j in read)
            fresh = read
            if scope:
                fresh = [j for j in read if (j.pair.user_id, j.pair.character_id) in scope]
                tally["out_of_scope"] += len(read) - len(fresh)
            batch = held_back.merge(fresh)
            if not batch:
                if read:
                    continue  # all of this read belonged to other pairs; more may follow
                return
            tally["jobs"] += len(fresh)
            held_back.keep(await self.process_batch(batch, tally, as_of=as_of))

    async def drain_run(
        self, *, trigger: str, forced: bool = False, as_of: datetime | None = None,
        pairs: Sequence[tuple[str, str]] = (),
    ) -> RunRecord:
        """TriggerTask for the promotion task: drain once and record it as one run.

        ``as_of`` (a replay's simulated time) is passed to every promotion; None → now. With
        ``pairs`` only their jobs are promoted (:meth:`drain`).
        """
        run = await self.store.insert_run(
            TASK_PROMOTION, trigger=trigger, turn_id=new_turn_id(), replica=self.replica_id,
            now=self.clock(), forced=forced, pairs=pairs,
        )
        span = RunSpan(self.plog, NODE, run)
        tally = new_tally()
        outcome, error = OUTCOME_OK, ""
        try:
            await self.drain(tally, as_of=as_of, pairs=pairs)
        except Exception as exc:
            outcome, error = OUTCOME_FAILED, f"promotion stopped: {describe(exc)}"
        finished = await self.store.finish_run(
            run.id, outcome=outcome, counts=tally, error=error or _job_error(tally), now=self.clock()
        )
        span.end(finished)
        return finished

    async def skipped_run(
        self, *, trigger: str, reason: str, forced: bool = False, pairs: Sequence[tuple[str, str]] = ()
    ) -> RunRecord:
        """A trigger that did not run (task paused): recorded as ``skipped`` with the reason."""
        run = await self.store.insert_run(
            TASK_PROMOTION, trigger=trigger, turn_id=new_turn_id(), replica=self.replica_id,
            now=self.clock(), outcome=OUTCOME_SKIPPED, error=reason, forced=forced,
            counts=new_tally(), pairs=pairs,
        )
        log_single_run(self.plog, NODE, run)
        return run

    async def run_forever(self, stop: asyncio.Event, is_paused: Callable[[], Awaitable[bool]]) -> None:
        """The continuous task: read, process, record one run per active window (SPEC §9)."""
        run: RunRecord | None = None
        span: RunSpan | None = None
        tally = new_tally()
        window_start = 0.0
        loop = asyncio.get_running_loop()
        failures = 0
        held_back = _HeldBack(self.settings.reclaim_idle_ms)

        async def close(outcome: str, error: str) -> None:
            nonlocal run, span, tally
            if run is None:
                return
            try:
                finished = await self.store.finish_run(
                    run.id, outcome=outcome, counts=tally, error=error or _job_error(tally), now=self.clock()
                )
                if span is not None:
                    span.end(finished)
            except Exception:
                _LOG.exception("promotion: recording run %s failed", run.id)
            run, span, tally = None, None, new_tally()

        try:
            while not stop.is_set():
                try:
                    if await is_paused():
                        await close(OUTCOME_OK, "")
                        await wait_or_stop(stop, 1.0)
                        continue
                    fresh = await self.read_jobs(0 if held_back else self.settings.block_ms)
                    jobs = held_back.merge(fresh)
                    if not jobs:
                        await close(OUTCOME_OK, "")
                        failures = 0
                        continue
                    if run is None:
                        run = await self.store.insert_run(
                            TASK_PROMOTION, trigger="worker", turn_id=new_turn_id(),
                            replica=self.replica_id, now=self.clock(),
                        )
                        span = RunSpan(self.plog, NODE, run)
                        window_start = loop.time()
                    tally["jobs"] += len([j for j in fresh if j.job_id not in held_back.ids])
                    # A root span only when a poll found work; the batch's calls are its children.
                    with _TRACER.start_as_current_span(
                        "pixie synapsen_promotion batch", attributes={"novaberg.jobs": len(jobs)}
                    ):
                        held_back.keep(await self.process_batch(jobs, tally))
                    failures = 0
                    if loop.time() - window_start >= self.settings.run_window_s:
                        await close(OUTCOME_OK, "")
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    failures += 1
                    _LOG.warning("promotion worker: %s (retrying)", describe(exc))
                    await close(OUTCOME_FAILED, f"promotion loop failed: {describe(exc)}")
                    await wait_or_stop(stop, min(30.0, 0.5 * 2 ** min(failures, 6)))
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(close(OUTCOME_OK, ""))


def _job_error(tally: Tally) -> str:
    return f"last job error: {tally.last_error}" if tally.last_error else ""


class _HeldBack:
    """Jobs whose pair another replica held: retried with the next batch instead of waiting for
    the stream's reclaim. Only for half the reclaim time — after that another worker may claim
    them, and they are left to the stream (still pending, never lost).
    """

    def __init__(self, reclaim_idle_ms: int) -> None:
        self.max_age_s = reclaim_idle_ms / 2000.0
        self._jobs: dict[str, tuple[kzg_pb2.PromotionJob, float]] = {}
        self.ids: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def merge(self, fresh: Sequence[kzg_pb2.PromotionJob]) -> list[kzg_pb2.PromotionJob]:
        """The next batch: the fresh jobs, then the held-back ones still young enough."""
        now = time.monotonic()
        self._jobs = {k: v for k, v in self._jobs.items() if now - v[1] < self.max_age_s}
        self.ids = frozenset(self._jobs)
        fresh_ids = {j.job_id for j in fresh}
        return [*fresh, *(job for job_id, (job, _) in self._jobs.items() if job_id not in fresh_ids)]

    def keep(self, deferred: Sequence[kzg_pb2.PromotionJob]) -> None:
        now = time.monotonic()
        self._jobs = {j.job_id: (j, self._jobs.get(j.job_id, (j, now))[1]) for j in deferred}
