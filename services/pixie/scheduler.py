"""The scheduler: task registry, daily decay once per day across replicas, triggers, pause (SPEC §9).

``synapsen_decay`` = LZG ``RunDecay`` (SPEC §5.7) then log ``Purge`` (SPEC §8) and the purge of
Pixie's own finished runs older than ``run_retention_days``, once per UTC day from ``decay_at``.
The replica whose claim row wins the unique index runs it; the others skip. The scheduled run
covers all pairs on the real clock; a triggered run may be scoped to pairs (a replay on a simulated
clock, e.g. the demo): it decays and purges only those pairs, leaves Pixie's run history alone and
neither needs nor takes the day's claim. An all-pairs trigger with an ``as_of`` in the future is
refused (:mod:`novaberg_core.maintenance`).
``synapsen_promotion`` runs continuously in :class:`PromotionWorker`; both honour pause/resume,
which is persisted so every replica sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, TypeVar

import asyncpg

from novaberg.common.v1 import common_pb2
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.maintenance import PairKey, check_scope
from novaberg_core.peers import PEER_FAILURES, LogPeer, LzgPeer, describe
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.timeutil import to_timestamp, utc_now
from services.pixie.app.promotion import PromotionWorker
from services.pixie.background import every
from services.pixie.config import PixieConfig
from services.pixie.runlog import RunSpan, log_single_run, new_turn_id, pair_fields
from services.pixie.store import PixieStore, RunRecord
from services.pixie.tasks import (
    KIND_DAILY,
    OUTCOME_FAILED,
    OUTCOME_OK,
    OUTCOME_SKIPPED,
    TASK_DECAY,
    TASK_PROMOTION,
    TaskSpec,
    due_day,
    require_task,
    run_day_of,
    task_registry,
)

_LOG = logging.getLogger(__name__)
_T = TypeVar("_T")

DECAY_NODE = TASK_DECAY
"""pipeline_log node of the daily run, named after its task (syn §10, SPEC §8)."""

PAUSED_CACHE_S = 1.0
"""How long the worker trusts a read of the paused set (pause takes effect within this)."""


@dataclass(frozen=True, slots=True)
class TaskView:
    """A task as shown over the API."""

    spec: TaskSpec
    paused: bool
    last_run: RunRecord | None


@dataclass(kw_only=True, eq=False)
class Scheduler:
    """Runs Pixie's tasks on this replica; all coordination with other replicas goes through the store."""

    store: PixieStore
    worker: PromotionWorker
    lzg: lzg_pb2_grpc.LzgServiceStub
    log: log_pb2_grpc.LogServiceStub | None
    plog: PipelineLog
    replica_id: str
    settings: PixieConfig
    """The daily task's knobs: decay time, interval, stale claims, retries, retention, timeouts."""
    clock: Callable[[], datetime] = utc_now
    registry: dict[str, TaskSpec] = field(init=False)
    _stop: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(init=False, default_factory=list)
    _paused_cache: tuple[float, set[str]] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.registry = task_registry(self.settings.decay_at)

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Starts the promotion worker and the daily loop as background tasks."""
        if self._tasks:
            return
        self._stop.clear()
        self._tasks = [
            asyncio.create_task(self.worker.run_forever(self._stop, self._promotion_paused), name="pixie-promotion"),
            asyncio.create_task(self._daily_loop(), name="pixie-daily"),
        ]

    async def stop(self) -> None:
        """Lets the current batch / daily run finish, then ends the loops."""
        self._stop.set()
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:
                _LOG.exception("pixie: background task %s ended with an error", task.get_name())

    async def _daily_loop(self) -> None:
        await every(
            self._stop, self.settings.scheduler_interval_s, self.tick,
            log=_LOG, failure="pixie: daily scheduler tick failed (retrying next tick)",
        )  # fmt: skip

    async def _promotion_paused(self) -> bool:
        loop = asyncio.get_running_loop()
        cached = self._paused_cache
        if cached is None or loop.time() - cached[0] > PAUSED_CACHE_S:
            cached = (loop.time(), await self.store.paused_tasks())
            self._paused_cache = cached
        return TASK_PROMOTION in cached[1]

    # --- the daily task -----------------------------------------------------------------

    async def tick(self, now: datetime | None = None) -> RunRecord | None:
        """One scheduler check: runs ``synapsen_decay`` when due and no replica has it for today."""
        now = now or self.clock()
        spec = self.registry[TASK_DECAY]
        assert spec.daily_at is not None
        day = due_day(now, spec.daily_at)
        if day is None or TASK_DECAY in await self.store.paused_tasks():
            return None
        existing = await self.store.day_run(TASK_DECAY, day)
        if existing is not None and existing.outcome != "running":
            return None  # done today (a running claim may be stale: the claim below checks)
        failed = await self.store.last_failed_day_run(TASK_DECAY, day)
        if (
            failed is not None
            and failed.ended_at is not None
            and (now - failed.ended_at).total_seconds() < self.settings.daily_retry_s
        ):
            return None
        run = await self.store.claim_daily_run(
            TASK_DECAY, day, trigger="schedule", turn_id=new_turn_id(), replica=self.replica_id,
            now=now, stale_after_s=self.settings.stale_run_s,
        )
        if run is None:
            return None  # another replica runs it today
        return await self._execute_decay(run, as_of=now)

    async def _execute_decay(self, run: RunRecord, *, as_of: datetime) -> RunRecord:
        """LZG decay, then log retention (over ``run.pairs`` when scoped); both are attempted and
        reported honestly."""
        counts: dict[str, int] = {}
        errors: list[str] = []
        span = RunSpan(self.plog, DECAY_NODE, run)
        turn = common_pb2.TurnContext(turn_id=run.turn_id, span_id=span.span_id)
        scope = [common_pb2.Pair(user_id=user, character_id=character) for user, character in run.pairs]
        where = pair_fields(run.pairs)
        heartbeat = asyncio.create_task(self._heartbeat(run.id, counts))
        timeout = self.settings.long_rpc_timeout_s

        def written(tabelle: str, operation: str, **details: Any) -> None:
            for pair in where:
                self.plog.db_write(
                    turn_id=run.turn_id, node=DECAY_NODE, tabelle=tabelle, operation=operation,
                    span_id=span.span_id, **details, **pair,
                )  # fmt: skip

        lzg_peer = LzgPeer(self.lzg, timeout, wait_for_ready=None)  # an unreachable LZG fails at once
        try:
            decayed = await _answer(
                lzg_peer.run_decay(lzg_pb2.RunDecayRequest(as_of=to_timestamp(as_of), turn=turn, pairs=scope)),
                "LZG RunDecay failed", errors,
            )  # fmt: skip
            if decayed is not None:
                counts["nodes_decayed"] = decayed.nodes_decayed
                counts["nodes_deactivated"] = decayed.nodes_deactivated
                written(
                    "lzg_knoten", "decay", nodes_decayed=decayed.nodes_decayed,
                    nodes_deactivated=decayed.nodes_deactivated, duration_ms=decayed.duration_ms,
                )  # fmt: skip
            if self.log is None:
                errors.append("log Purge not run: no log service address (NOVABERG_LOG_ADDR) is set")
            else:
                request = log_pb2.PurgeRequest(
                    as_of=to_timestamp(as_of), retention_days=self.settings.log_retention_days, pairs=scope
                )
                log_peer = LogPeer(self.log, timeout, wait_for_ready=None)
                purged = await _answer(log_peer.purge(request), "log Purge failed", errors)
                if purged is not None:
                    counts["log_rows_deleted"] = purged.deleted
                    counts["kept_turn_roh"] = purged.kept_turn_roh
                    written("pipeline_log", "purge", deleted=purged.deleted, kept_turn_roh=purged.kept_turn_roh)
            if self.settings.run_retention_days > 0 and not run.pairs:
                # Pixie's own run history: operational bookkeeping on the real clock, not memory
                # time, so a replay's as_of months ahead does not age it.
                before = self.clock() - timedelta(days=self.settings.run_retention_days)
                try:
                    runs_deleted = await self.store.purge_runs(before)
                except (asyncpg.PostgresError, OSError) as error:
                    errors.append(f"run history purge failed: {type(error).__name__}: {error}")
                else:
                    counts["runs_deleted"] = runs_deleted
                    written("pixie.runs", "purge", deleted=runs_deleted, before=before.isoformat())
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        for message in errors:
            for pair in where:
                self.plog.error(turn_id=run.turn_id, node=DECAY_NODE, typ=TASK_DECAY, message=message,
                                span_id=span.span_id, **pair)
        outcome = OUTCOME_FAILED if errors else OUTCOME_OK
        finished = await self.store.finish_run(
            run.id, outcome=outcome, counts=counts, error="; ".join(errors), now=self.clock()
        )
        span.end(finished)
        return finished

    async def _heartbeat(self, run_id: int, counts: dict[str, int]) -> None:
        interval = max(0.5, min(60.0, self.settings.stale_run_s / 4))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.store.heartbeat(run_id, self.clock(), counts)
            except Exception:
                _LOG.warning("pixie: heartbeat of run %s failed", run_id, exc_info=True)

    # --- API operations -----------------------------------------------------------------

    async def trigger(
        self, task: str, *, as_of: datetime | None, force: bool, pairs: Sequence[PairKey] = ()
    ) -> RunRecord:
        """Runs ``task`` now and returns the finished run (TriggerTask).

        A paused task is not run (recorded ``skipped``) unless forced; a daily task over all pairs
        runs at most once per ``as_of`` day unless forced (a second trigger is recorded
        ``skipped``). With ``pairs`` the run touches only those pairs and claims no day; without
        them an ``as_of`` in the future is refused (InvalidArgument).
        """
        spec = require_task(self.registry, task)
        check_scope(as_of, pairs, what=f"TriggerTask {spec.name}", now=self.clock())
        paused = spec.name in await self.store.paused_tasks()
        if paused and not force:
            reason = f"{spec.name} is paused; resume it or trigger it with force"
            if spec.name == TASK_PROMOTION:
                return await self.worker.skipped_run(trigger="manual", reason=reason, pairs=pairs)
            return await self._skipped_daily(spec.name, run_day_of(as_of or self.clock()), reason, pairs)
        if spec.name == TASK_PROMOTION:
            return await self.worker.drain_run(trigger="manual", forced=force, as_of=as_of, pairs=pairs)
        assert spec.kind == KIND_DAILY
        moment = as_of or self.clock()
        day = run_day_of(moment)
        now = self.clock()
        if force or pairs:
            run = await self.store.insert_run(
                spec.name, trigger="manual", turn_id=new_turn_id(), replica=self.replica_id, now=now,
                run_day=day, forced=force, pairs=pairs,
            )
        else:
            claimed = await self.store.claim_daily_run(
                spec.name, day, trigger="manual", turn_id=new_turn_id(), replica=self.replica_id,
                now=now, stale_after_s=self.settings.stale_run_s,
            )
            if claimed is None:
                holder = await self.store.day_run(spec.name, day)
                held = f" (run {holder.id}, {holder.outcome}, replica {holder.replica})" if holder else ""
                return await self._skipped_daily(
                    spec.name, day,
                    f"{spec.name} already ran for {day.isoformat()}{held}; "
                    "trigger it with force to run it again",
                )  # fmt: skip
            run = claimed
        return await self._execute_decay(run, as_of=moment)

    async def _skipped_daily(
        self, task: str, day: date, reason: str, pairs: Sequence[PairKey] = ()
    ) -> RunRecord:
        run = await self.store.insert_run(
            task, trigger="manual", turn_id=new_turn_id(), replica=self.replica_id, now=self.clock(),
            run_day=day, outcome=OUTCOME_SKIPPED, error=reason, pairs=pairs,
        )
        log_single_run(self.plog, DECAY_NODE, run)
        return run

    async def set_paused(self, task: str, paused: bool) -> TaskView:
        spec = require_task(self.registry, task)
        await self.store.set_paused(spec.name, paused, replica=self.replica_id, now=self.clock())
        self._paused_cache = None
        last = await self.store.last_runs([spec.name])
        return TaskView(spec, paused, last.get(spec.name))

    async def list_tasks(self) -> list[TaskView]:
        paused = await self.store.paused_tasks()
        last = await self.store.last_runs(list(self.registry))
        return [TaskView(spec, spec.name in paused, last.get(spec.name)) for spec in self.registry.values()]

    async def list_runs(self, task: str, limit: int) -> list[RunRecord]:
        name = require_task(self.registry, task).name if task else None
        return await self.store.list_runs(name, limit)


async def _answer(call: Awaitable[_T], failure: str, errors: list[str]) -> _T | None:
    """A peer's answer, or None with ``failure`` and the peer's status noted in ``errors``."""
    try:
        return await call
    except PEER_FAILURES as error:
        errors.append(f"{failure}: {describe(error)}")
        return None
