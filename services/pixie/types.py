"""Pixie's domain types, the promotion worker's vocabulary (SPEC §5.3, §9): a run's counts, the step hook,
the two ways a job stops short (a job failure, an outage). How a peer's error reads and whether it
is an outage: :mod:`novaberg_core.peers` (re-exported here for the worker's modules)."""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable

from novaberg.kzg.v1 import kzg_pb2
from novaberg_core.pipeline_log.nodes import NODE_PROMOTION

NODE = NODE_PROMOTION
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


def new_tally() -> Tally:
    return Tally(dict.fromkeys(COUNT_KEYS, 0))


__all__ = [
    "COUNT_KEYS", "NODE", "DependencyDown", "JobFailed", "StepHook", "Tally", "new_tally",
]  # fmt: skip
