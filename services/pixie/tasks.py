"""Pixie's task registry and the pure rules of its scheduling (SPEC §9). No I/O here.

Two tasks exist: ``synapsen_promotion`` consumes the KZG promotion queue continuously (priority
``PIXIE_PROMOTION_PRIORITAET = 0.9``, kzg §8), ``synapsen_decay`` runs once per UTC day from a
configured time (LZG decay SPEC §5.7, then pipeline-log retention SPEC §8).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final, TypeVar

from novaberg_core.errors import InvalidArgument
from novaberg_core.maintenance import TASK_DECAY, TASK_PROMOTION

PIXIE_PROMOTION_PRIORITAET: Final = 0.9
"""Scheduler priority of the promotion task (kzg §8 constant table)."""

PIXIE_DECAY_PRIORITAET: Final = 0.5
"""Scheduler priority of the daily decay; the seeds name none, it only has to rank below promotion."""

OUTCOME_RUNNING: Final = "running"
OUTCOME_OK: Final = "ok"
OUTCOME_FAILED: Final = "failed"
OUTCOME_SKIPPED: Final = "skipped"
OUTCOMES: Final = (OUTCOME_RUNNING, OUTCOME_OK, OUTCOME_FAILED, OUTCOME_SKIPPED)

KIND_CONTINUOUS: Final = "continuous"
KIND_DAILY: Final = "daily"


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One registered task: its name, how it is scheduled and its priority."""

    name: str
    kind: str
    priority: float
    daily_at: time | None = None

    @property
    def schedule(self) -> str:
        """``"continuous"`` or ``"daily HH:MM"`` (UTC), as shown over the API."""
        if self.kind == KIND_DAILY and self.daily_at is not None:
            return f"daily {self.daily_at.strftime('%H:%M')}"
        return self.kind


def task_registry(decay_at: time) -> dict[str, TaskSpec]:
    """The registered tasks, highest priority first (SPEC §9)."""
    specs = [
        TaskSpec(TASK_PROMOTION, KIND_CONTINUOUS, PIXIE_PROMOTION_PRIORITAET),
        TaskSpec(TASK_DECAY, KIND_DAILY, PIXIE_DECAY_PRIORITAET, decay_at),
    ]
    return {spec.name: spec for spec in sorted(specs, key=lambda s: -s.priority)}


def require_task(registry: dict[str, TaskSpec], name: str, field: str = "task") -> TaskSpec:
    """The task called ``name``, or :class:`InvalidArgument` naming the field and the known tasks."""
    spec = registry.get(name)
    if spec is None:
        known = ", ".join(registry)
        raise InvalidArgument(f"{field} must be one of {known}, got {name!r}")
    return spec


def run_day_of(as_of: datetime) -> date:
    """The UTC day a daily run at ``as_of`` belongs to."""
    if as_of.tzinfo is None:
        raise ValueError("run_day_of needs an aware datetime")
    return as_of.astimezone(UTC).date()


def due_day(now: datetime, daily_at: time) -> date | None:
    """The day whose daily run is due at ``now`` (today once ``daily_at`` has passed), else None.

    A day that was missed entirely (no replica up after ``daily_at``) is not run afterwards:
    decay is incremental (SPEC §5.7), so the next day's run covers the elapsed time.
    """
    utc = now.astimezone(UTC)
    if utc.time() >= daily_at:
        return utc.date()
    return None


def backoff_seconds(attempts: int, base_s: float, max_s: float) -> float:
    """Delay before the next try after ``attempts`` failures: base, 2·base, 4·base, … capped at max."""
    if attempts < 1:
        return 0.0
    return float(min(max_s, base_s * 2.0 ** min(attempts - 1, 60)))


def next_attempt_at(now: datetime, attempts: int, base_s: float, max_s: float) -> datetime:
    """When a job that has failed ``attempts`` times may be tried again."""
    return now + timedelta(seconds=backoff_seconds(attempts, base_s, max_s))


def should_park(attempts: int, max_attempts: int) -> bool:
    """A job is parked once it has failed ``max_attempts`` times."""
    return attempts >= max_attempts


def pair_lock_key(user_id: str, character_id: str) -> int:
    """Signed 64-bit advisory-lock key of a pair (PostgreSQL ``pg_try_advisory_xact_lock(bigint)``).

    Namespaced so it cannot collide with other advisory locks (e.g. the migration lock).
    """
    digest = hashlib.sha256(f"pixie:pair\x00{user_id}\x00{character_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def user_lock_key(user_id: str) -> int:
    """Advisory-lock key of all pairs of one user: promotions hold it shared, a user's erasure
    exclusively, so no promotion of the user is in flight while the erasure runs (docs/decisions.md)."""
    digest = hashlib.sha256(f"pixie:user\x00{user_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


_T = TypeVar("_T")
_K = TypeVar("_K", bound=Hashable)


def group_by_key(items: Iterable[tuple[_K, _T]]) -> dict[_K, list[_T]]:
    """Groups ``(key, item)`` pairs by key, keeping first-seen key order and item order."""
    groups: dict[_K, list[_T]] = {}
    for k, item in items:
        groups.setdefault(k, []).append(item)
    return groups
