"""Pixie's store (all its I/O with PostgreSQL): runs, task state, job attempts, parked jobs, pair locks,
erasures.

Schema ``pixie`` of the database given by ``NOVABERG_POSTGRES_URL`` (SPEC §1: Pixie owns its run
history and leases). Coordination between replicas uses PostgreSQL only — a unique claim row per
daily task and day, and transaction-level advisory locks per pair — no home-made consensus.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import asyncpg

from novaberg_core.errors import Unavailable
from novaberg_core.migrations import load_queries
from novaberg_core.pg import open_migrated_pool
from services.pixie.tasks import OUTCOMES, pair_lock_key, user_lock_key

SCHEMA = "pixie"
_SQL_DIR = Path(__file__).parent / "sql"
_QUERIES = {**load_queries(_SQL_DIR / "queries.sql"), **load_queries(_SQL_DIR / "rights.sql")}


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One row of ``pixie.runs``."""

    id: int
    task: str
    run_day: date | None
    forced: bool
    trigger: str
    turn_id: str
    started_at: datetime
    ended_at: datetime | None
    outcome: str
    counts: dict[str, int]
    error: str
    replica: str
    day_claim: bool = False
    pairs: tuple[tuple[str, str], ...] = ()
    """The pairs a scoped run was limited to; () = all pairs."""


@dataclass(frozen=True, slots=True)
class JobState:
    """What Pixie knows about a job still in the stream: failures so far, when to retry, parked."""

    job_id: str
    attempts: int
    next_attempt_at: datetime | None
    parked: bool


@dataclass(frozen=True, slots=True)
class ParkedJobRecord:
    """One row of ``pixie.parked_jobs``."""

    job_id: str
    kzg_key: str
    ausloeser_turn_id: str
    user_id: str
    character_id: str
    attempts: int
    last_error: str
    parked_at: datetime
    replica: str


@dataclass(frozen=True, slots=True)
class JobRef:
    """The identity of a promotion job as the store needs it."""

    job_id: str
    kzg_key: str
    ausloeser_turn_id: str
    user_id: str
    character_id: str


@dataclass(frozen=True, slots=True)
class ErasureRecord:
    """One row of ``pixie.erasures``."""

    id: int
    scope: str
    user_id: str | None
    character_id: str | None
    token: str
    state: str
    steps_done: tuple[str, ...]
    counts: dict[str, int]
    stream_cutoff: str | None
    reason: str
    error: str
    requested_at: datetime
    finished_at: datetime | None


class ErasureHeldElsewhere(Exception):
    """Another runner holds the erasure's lock."""


@dataclass(slots=True)
class PairLock:
    """A held (or refused) pair lock; ``held`` is False when another actor has the pair."""

    held: bool
    key: int


_R = TypeVar("_R", RunRecord, ErasureRecord, ParkedJobRecord)


def _json(raw: Any) -> Any:
    """A ``jsonb`` column as Python data (asyncpg hands it over as text)."""
    return json.loads(raw) if isinstance(raw, str) else raw


def _counts(raw: Any) -> dict[str, int]:
    return {str(k): int(v) for k, v in (_json(raw) or {}).items()}


def _record(cls: type[_R], row: asyncpg.Record, **converted: Any) -> _R:
    """A record dataclass from a row: each field from its column of the same name, unless converted."""
    return cls(**{f.name: row[f.name] for f in fields(cls) if f.name not in converted}, **converted)


def _run(row: asyncpg.Record) -> RunRecord:
    pairs = tuple((str(user), str(character)) for user, character in _json(row["pairs"]) or ())
    return _record(RunRecord, row, counts=_counts(row["counts"]), pairs=pairs)


def _erasure(row: asyncpg.Record) -> ErasureRecord:
    return _record(
        ErasureRecord, row, token=row["schluessel"], steps_done=tuple(row["steps_done"]), counts=_counts(row["counts"])
    )


def _counts_json(counts: Mapping[str, int]) -> str:
    return json.dumps({k: int(v) for k, v in sorted(counts.items())})


class PixieStore:
    """Async access to the ``pixie`` schema; one per process, shared by worker, scheduler and API."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    @classmethod
    async def open(cls, url: str, *, max_size: int = 10) -> PixieStore:
        """Pool on schema ``pixie`` with migrations applied (idempotent, safe with several replicas)."""
        return cls(await open_migrated_pool(url, SCHEMA, _SQL_DIR / "migrations", max_size=max_size, vector=False))

    async def close(self) -> None:
        await self.pool.close()

    # --- runs ---------------------------------------------------------------------------

    async def claim_daily_run(
        self,
        task: str,
        run_day: date,
        *,
        trigger: str,
        turn_id: str,
        replica: str,
        now: datetime,
        stale_after_s: float,
    ) -> RunRecord | None:
        """Claims ``task`` for ``run_day``; None when another run holds the day (SPEC §9, one actor).

        A claim whose replica stopped heart-beating ``stale_after_s`` ago is closed as failed
        first, so a crashed replica cannot block the day for ever.
        """
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                _QUERIES["expire_stale_claim"], task, run_day, now, now - timedelta(seconds=stale_after_s)
            )
            row = await conn.fetchrow(_QUERIES["claim_daily_run"], task, run_day, trigger, turn_id, now, replica)
        return None if row is None else _run(row)

    async def insert_run(
        self,
        task: str,
        *,
        trigger: str,
        turn_id: str,
        replica: str,
        now: datetime,
        run_day: date | None = None,
        forced: bool = False,
        outcome: str = "running",
        counts: Mapping[str, int] | None = None,
        error: str = "",
        pairs: Sequence[tuple[str, str]] = (),
    ) -> RunRecord:
        """A run row that claims no day (continuous work, forced, scoped or skipped runs)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        ended_at = None if outcome == "running" else now
        row = await self.pool.fetchrow(
            _QUERIES["insert_run"], task, run_day, forced, trigger, turn_id, now, outcome,
            _counts_json(counts or {}), error, replica, ended_at, json.dumps([list(p) for p in pairs]),
        )
        assert row is not None
        return _run(row)

    async def parked_count(self) -> dict[str, float]:
        """Parked jobs of all pairs, for the metrics."""
        return {"novaberg.pixie.parked_jobs": float(await self.pool.fetchval(_QUERIES["parked_count"]))}

    async def heartbeat(self, run_id: int, now: datetime, counts: Mapping[str, int]) -> None:
        await self.pool.execute(_QUERIES["heartbeat_run"], run_id, now, _counts_json(counts))

    async def finish_run(
        self, run_id: int, *, outcome: str, counts: Mapping[str, int], error: str, now: datetime
    ) -> RunRecord:
        """Closes a run; a failed daily run releases its day for a later retry."""
        if outcome not in OUTCOMES or outcome == "running":
            raise ValueError(f"a finished run's outcome must be ok, failed or skipped, got {outcome!r}")
        row = await self.pool.fetchrow(_QUERIES["finish_run"], run_id, now, outcome, _counts_json(counts), error)
        if row is None:
            raise LookupError(f"run {run_id} does not exist")
        return _run(row)

    async def get_run(self, run_id: int) -> RunRecord | None:
        row = await self.pool.fetchrow(_QUERIES["get_run"], run_id)
        return None if row is None else _run(row)

    async def day_run(self, task: str, run_day: date) -> RunRecord | None:
        """The run holding ``task``'s claim on ``run_day`` (running or ok), if any."""
        row = await self.pool.fetchrow(_QUERIES["day_run"], task, run_day)
        return None if row is None else _run(row)

    async def last_failed_day_run(self, task: str, run_day: date) -> RunRecord | None:
        row = await self.pool.fetchrow(_QUERIES["last_failed_day_run"], task, run_day)
        return None if row is None else _run(row)

    async def list_runs(self, task: str | None, limit: int) -> list[RunRecord]:
        """Newest first; ``task`` None → all tasks."""
        rows = await self.pool.fetch(_QUERIES["list_runs"], task, limit)
        return [_run(r) for r in rows]

    async def purge_runs(self, before: datetime) -> int:
        """Deletes finished runs started before ``before``, keeping each task's newest; returns how many."""
        status = await self.pool.execute(_QUERIES["purge_runs"], before)
        return int(status.rsplit(" ", 1)[-1])

    async def last_runs(self, tasks: Sequence[str]) -> dict[str, RunRecord]:
        rows = await self.pool.fetch(_QUERIES["last_runs"], list(tasks))
        return {r["task"]: _run(r) for r in rows}

    # --- task state ---------------------------------------------------------------------

    async def set_paused(self, task: str, paused: bool, *, replica: str, now: datetime) -> None:
        """Persists pause/resume so every replica honours it."""
        await self.pool.execute(_QUERIES["set_paused"], task, paused, now, replica)

    async def paused_tasks(self) -> set[str]:
        return {r["task"] for r in await self.pool.fetch(_QUERIES["paused_tasks"])}

    # --- promotion jobs -----------------------------------------------------------------

    async def job_states(self, job_ids: Sequence[str]) -> dict[str, JobState]:
        """States of those jobs that failed before or were parked (one query per batch)."""
        if not job_ids:
            return {}
        rows = await self.pool.fetch(_QUERIES["job_states"], list(job_ids))
        return {
            r["job_id"]: JobState(r["job_id"], r["attempts"] or 0, r["next_attempt_at"], r["parked"])
            for r in rows
        }

    async def record_failure(
        self, job: JobRef, error: str, *, now: datetime, retry_at: Callable[[int], datetime]
    ) -> int:
        """Counts one more failed attempt; returns the attempts so far and sets the next retry time."""
        async with self.pool.acquire() as conn, conn.transaction():
            attempts: int = await conn.fetchval(
                _QUERIES["record_failure"], job.job_id, job.kzg_key, job.user_id, job.character_id,
                error, now, now,
            )
            await conn.execute(_QUERIES["set_next_attempt"], job.job_id, retry_at(attempts))
        return attempts

    async def clear_attempts(self, job_ids: Sequence[str]) -> None:
        if job_ids:
            await self.pool.execute(_QUERIES["clear_attempts"], list(job_ids))

    async def park_job(self, job: JobRef, *, attempts: int, error: str, now: datetime, replica: str) -> None:
        """Moves the job from the attempt table to the parked jobs (idempotent)."""
        await self.pool.execute(
            _QUERIES["park_job"], job.job_id, job.kzg_key, job.ausloeser_turn_id, job.user_id,
            job.character_id, attempts, error, now, replica,
        )

    async def list_parked(self, limit: int) -> list[ParkedJobRecord]:
        """Newest first."""
        return [_record(ParkedJobRecord, r) for r in await self.pool.fetch(_QUERIES["list_parked"], limit)]

    async def parked_jobs(self, job_ids: Sequence[str] | None, limit: int) -> list[ParkedJobRecord]:
        """The parked jobs named by ``job_ids`` (None: all, at most ``limit``), oldest first."""
        if job_ids is None:
            rows = await self.pool.fetch(_QUERIES["all_parked"], limit)
        else:
            rows = await self.pool.fetch(_QUERIES["parked_by_ids"], list(dict.fromkeys(job_ids)))
        return [_record(ParkedJobRecord, r) for r in rows]

    async def unpark_jobs(self, job_ids: Sequence[str]) -> None:
        """The jobs leave the parked list and their attempt counts (they were requeued or are gone)."""
        await self.pool.execute(_QUERIES["unpark_jobs"], list(job_ids))

    # --- pair exclusivity ---------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def pair_lock(
        self, user_id: str, character_id: str, *, wait_ms: int = 0
    ) -> AsyncIterator[PairLock]:
        """Locks the pair for the duration of the block (SPEC §9: one actor per pair).

        A transaction-level advisory lock on a connection of its own: it is released when the
        block ends, and also when this process dies (its session ends). Waits at most ``wait_ms``
        (0: not at all); when another replica still holds the pair, ``held`` is False and the
        caller leaves the job for later.
        """
        key = pair_lock_key(user_id, character_id)
        # The user's lock, shared: a user's erasure takes it exclusively (services/pixie/app/erasure.py).
        user_key = user_lock_key(user_id)
        async with self.pool.acquire() as conn:
            transaction = conn.transaction()
            await transaction.start()
            open_ = True
            try:
                if wait_ms > 0:
                    await conn.execute(f"SET LOCAL lock_timeout = {int(wait_ms)}")
                    try:
                        await conn.execute("SELECT pg_advisory_xact_lock($1), pg_advisory_xact_lock_shared($2)",
                                           key, user_key)  # fmt: skip
                        held = True
                    except asyncpg.LockNotAvailableError:
                        held = False
                else:
                    held = bool(await conn.fetchval(
                        "SELECT pg_try_advisory_xact_lock($1) AND pg_try_advisory_xact_lock_shared($2)", key, user_key
                    ))  # fmt: skip
                if not held:
                    open_ = False
                    await transaction.rollback()
                    yield PairLock(held=False, key=key)
                    return
                yield PairLock(held=True, key=key)
            except BaseException:
                if open_:
                    await transaction.rollback()
                raise
            await transaction.commit()

    @contextlib.asynccontextmanager
    async def user_lock(self, user_id: str, *, wait_ms: int) -> AsyncIterator[bool]:
        """The user's promotion lock, exclusive (every promotion holds it shared) for the block;
        yields False when it stayed held for ``wait_ms``."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = {int(wait_ms)}")
            try:
                await conn.execute("SELECT pg_advisory_xact_lock($1)", user_lock_key(user_id))
            except asyncpg.LockNotAvailableError:
                held = False
            else:
                held = True
            yield held

    @contextlib.asynccontextmanager
    async def promotions_stopped(self, user_id: str, character_id: str | None, *, wait_ms: int) -> AsyncIterator[None]:
        """The promotion lock of the pair, or (``character_id`` None) the user's exclusively, for the
        block: no promotion of it is between reading its entry and writing its node meanwhile.

        What changes a person's memories across the KZG and the LZG (an erasure, a forget, a
        correction) holds it, or a worker that read an entry before the change writes the node after
        it. :class:`Unavailable` when a worker held it for ``wait_ms``.
        """
        if character_id is not None:
            async with self.pair_lock(user_id, character_id, wait_ms=wait_ms) as lock:
                if not lock.held:
                    raise Unavailable("the pair's promotion lock stayed held by a promotion worker, retry")
                yield
            return
        async with self.user_lock(user_id, wait_ms=wait_ms) as held:
            if not held:
                raise Unavailable("the user's promotion lock stayed held by a promotion worker, retry")
            yield

    # --- erasures -----------------------------------------------------------------------

    async def insert_erasure(
        self, scope: str, user_id: str, character_id: str | None, token: str, reason: str, *, now: datetime,
        replica: str,
    ) -> ErasureRecord:
        """Records an erasure before any store is touched (crash safety)."""
        row = await self.pool.fetchrow(
            _QUERIES["insert_erasure"], scope, user_id, character_id, token, reason, now, replica
        )
        assert row is not None
        return _erasure(row)

    async def get_erasure(self, erasure_id: int) -> ErasureRecord | None:
        row = await self.pool.fetchrow(_QUERIES["get_erasure"], erasure_id)
        return None if row is None else _erasure(row)

    async def list_erasures(self, limit: int) -> list[ErasureRecord]:
        """Newest first."""
        return [_erasure(r) for r in await self.pool.fetch(_QUERIES["list_erasures"], limit)]

    async def running_erasure_ids(self) -> list[int]:
        return [r["id"] for r in await self.pool.fetch(_QUERIES["running_erasures"])]

    @contextlib.asynccontextmanager
    async def erasure_lock(self, erasure_id: int, *, wait: bool) -> AsyncIterator[None]:
        """Holds the erasure's lock for the block (released when this process dies);
        ``wait=False`` raises :class:`ErasureHeldElsewhere` when another runner holds it."""
        digest = hashlib.sha256(f"pixie:erasure\x00{erasure_id}".encode()).digest()
        key = int.from_bytes(digest[:8], "big", signed=True)
        async with self.pool.acquire() as conn, conn.transaction():
            if wait:
                await conn.execute("SELECT pg_advisory_xact_lock($1)", key)
            elif not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", key):
                raise ErasureHeldElsewhere
            yield

    async def erasure_step_done(
        self, erasure_id: int, step: str, counts: Mapping[str, int], cutoff: str | None
    ) -> ErasureRecord:
        """Records a finished step and its counts; a step recorded already leaves the row as it is."""
        row = await self.pool.fetchrow(
            _QUERIES["erasure_step_done"], erasure_id, step, json.dumps(dict(counts)), cutoff or None
        )
        if row is None:  # recorded already (a step repeated after a crash): read it back
            row = await self.pool.fetchrow(_QUERIES["get_erasure"], erasure_id)
        assert row is not None
        return _erasure(row)

    async def erasure_step_failed(self, erasure_id: int, message: str) -> None:
        await self.pool.execute(_QUERIES["erasure_step_failed"], erasure_id, message)

    async def finish_erasure(self, erasure_id: int, now: datetime) -> ErasureRecord:
        """Done: the ids go, the key and the counts stay as the receipt."""
        row = await self.pool.fetchrow(_QUERIES["finish_erasure"], erasure_id, now)
        assert row is not None
        return _erasure(row)

    async def erased_jobs(self, job_ids: Sequence[str], tokens: Sequence[str]) -> set[str]:
        """Those of ``job_ids`` (one pair's) that an erasure of one of ``tokens`` took."""
        rows = await self.pool.fetch(_QUERIES["erased_jobs"], list(job_ids), list(tokens))
        return {r["job_id"] for r in rows}

    async def erase_own(
        self, user_id: str, character_id: str | None, key_prefix: str, scrubbed: str
    ) -> dict[str, int]:
        """Pixie's own records of the target: job attempts, parked jobs, run errors quoting its keys."""
        async with self.pool.acquire() as conn, conn.transaction():
            attempts = await conn.fetchval(_QUERIES["erase_job_attempts"], user_id, character_id)
            parked = await conn.fetchval(_QUERIES["erase_parked_jobs"], user_id, character_id)
            scrubbed_runs = await conn.fetchval(_QUERIES["scrub_run_errors"], key_prefix, scrubbed)
        return {
            "pixie.job_attempts": int(attempts),
            "pixie.parked_jobs": int(parked),
            "pixie.run_errors": int(scrubbed_runs),
        }
