"""The promotion worker's vocabulary (SPEC §5.3, §9): its settings, a run's counts, the step hook,
the two ways a job stops short (a job failure, an outage), and how an error is described."""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc
import grpc.aio

from novaberg.kzg.v1 import kzg_pb2
from services.pixie.config import PixieConfig

NODE = "promotion"
"""pipeline_log node name of every promotion record (SPEC §5.3)."""


class Tally(collections.Counter[str]):
    """Counts of one run, plus the last job error seen (reported in the run's ``error``)."""

    last_error: str = ""


StepHook = Callable[[str, kzg_pb2.PromotionJob], Awaitable[None]]
"""Called at the steps ``started``, ``promoted``, ``deleted``, ``finished`` and ``acked`` of a job.

Observation and fault injection in tests (a hook that never returns stands for a process killed
at that point); None in production.
"""

COUNT_KEYS = (
    "jobs", "promoted_new", "already_promoted", "duplicates", "half_reactivations", "expired",
    "kzg_deleted", "kzg_delete_failed", "failed", "parked", "deferred_locked", "deferred_backoff", "acked",
    "erased",
)
"""Counts of a promotion run (all present, zero when nothing happened)."""

class JobFailed(Exception):
    """One step of a job failed; the job is retried later (or parked)."""


class DependencyDown(Exception):
    """A service Pixie needs is unreachable: an outage, not the job's fault. No attempt is counted
    (an outage must not park healthy jobs); the jobs stay pending and the worker backs off."""


def is_outage(error: BaseException | None) -> bool:
    return isinstance(error, grpc.aio.AioRpcError) and error.code() == grpc.StatusCode.UNAVAILABLE


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """The worker's knobs (see :class:`PixieConfig` for each field's meaning)."""

    batch_size: int = 64
    block_ms: int = 1000
    reclaim_idle_ms: int = 30_000
    concurrency: int = 8
    max_attempts: int = 5
    backoff_base_s: float = 2.0
    backoff_max_s: float = 300.0
    run_window_s: float = 60.0
    rpc_timeout_s: float = 30.0
    pair_lock_wait_ms: int = 2000

    @classmethod
    def from_config(cls, cfg: PixieConfig) -> WorkerSettings:
        return cls(
            batch_size=cfg.batch_size,
            block_ms=cfg.block_ms,
            reclaim_idle_ms=cfg.reclaim_idle_ms,
            concurrency=cfg.concurrency,
            max_attempts=cfg.max_attempts,
            backoff_base_s=cfg.backoff_base_s,
            backoff_max_s=cfg.backoff_max_s,
            run_window_s=cfg.run_window_s,
            rpc_timeout_s=cfg.rpc_timeout_s,
            pair_lock_wait_ms=cfg.pair_lock_wait_ms,
        )


def new_tally() -> Tally:
    return Tally(dict.fromkeys(COUNT_KEYS, 0))

def describe(error: BaseException) -> str:
    if isinstance(error, grpc.aio.AioRpcError):
        return f"{error.code().name}: {error.details()}"
    return str(error) or type(error).__name__
