"""Pixie configuration from the environment (prefix ``NOVABERG_PIXIE_``), failing fast (STYLE rule 2)."""

from __future__ import annotations

import os
import re
import socket
import uuid
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from datetime import time
from typing import Any, TypeVar

from novaberg_core.config import ENV_KZG_ADDR, ENV_LOG_ADDR, ENV_LZG_ADDR, ENV_POSTGRES_URL, CommonConfig
from novaberg_core.env import ConfigError, env_float, env_int, env_prefix, env_str

SERVICE_NAME = "pixie"
"""The service's short name: its telemetry resource and its variables' prefix."""
PREFIX = env_prefix(SERVICE_NAME)
"""``NOVABERG_PIXIE_``: the prefix of the service's own variables."""

_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def parse_hhmm(name: str, raw: str) -> time:
    """``"03:30"`` → ``time(3, 30)``; anything else is a :class:`ConfigError` naming ``name``."""
    match = _HHMM.match(raw.strip())
    if not match:
        raise ConfigError(name, f"{name} must be a UTC time HH:MM (00:00–23:59), got {raw!r}")
    return time(int(match.group(1)), int(match.group(2)))


_BOUNDS = "bounds"
_N = TypeVar("_N", int, float)


def setting(default: _N, *, min_value: _N, max_value: _N | None = None) -> _N:
    """A tunable number of :class:`PixieConfig`: its default, written once, and the bounds within
    which ``from_env`` reads it from ``NOVABERG_PIXIE_<FIELD NAME>``."""
    return field(default=default, metadata={_BOUNDS: (min_value, max_value)})


def _read_setting(f: Field[Any], env: Mapping[str, str] | None) -> Any:
    """A :func:`setting` from ``NOVABERG_PIXIE_<NAME>``: an int or float as its default is, within its bounds."""
    name, default, (min_value, max_value) = f"{PREFIX}{f.name.upper()}", f.default, f.metadata[_BOUNDS]
    if isinstance(default, int):
        return env_int(name, default, min_value=min_value, max_value=max_value, env=env)
    assert isinstance(default, float)
    return env_float(name, default, min_value=min_value, max_value=max_value, env=env)


def _default_replica_id() -> str:
    return f"pixie-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True, slots=True)
class PixieConfig:
    """Everything Pixie needs; one instance per process (SPEC §9)."""

    common: CommonConfig
    """Server settings shared by all services (host, port, grace, telemetry)."""

    postgres_url: str
    """PostgreSQL holding Pixie's own schema ``pixie`` (runs, task state, job attempts, parked jobs)."""

    kzg_addr: str
    """host:port of the KZG service (promotion queue, entries, hash_dirty)."""

    lzg_addr: str
    """host:port of the LZG service (Promote, RunDecay)."""

    log_addr: str
    """host:port of the log service (retention Purge); empty → the purge step of the daily run fails."""

    replica_id: str
    """This replica's name: the stream consumer name and the ``replica`` of its runs. Must be unique."""

    decay_at: time = time(3, 30)
    """UTC time of day from which ``synapsen_decay`` is due (``NOVABERG_PIXIE_DECAY_AT``, HH:MM)."""

    scheduler_interval_s: float = setting(30.0, min_value=0.01)
    """How often the scheduler checks whether the daily task is due."""

    max_attempts: int = setting(5, min_value=1)
    """A promotion job that failed this many times is parked and acked (never blocks the rest)."""

    backoff_base_s: float = setting(2.0, min_value=0.0)
    """Retry delay after the first failure; doubles per further failure."""

    backoff_max_s: float = setting(300.0, min_value=0.0)
    """Upper bound of the retry delay."""

    batch_size: int = setting(64, min_value=1, max_value=10_000)
    """Jobs read from the stream per ReadPromotionJobs call."""

    block_ms: int = setting(1000, min_value=0)
    """How long one read blocks for new jobs."""

    reclaim_idle_ms: int = setting(30_000, min_value=1)
    """Pending jobs (of a crashed worker, or left for later) idle this long are reclaimed."""

    concurrency: int = setting(8, min_value=1, max_value=256)
    """Pairs promoted in parallel by one replica (same pair: always serial)."""

    pair_lock_wait_ms: int = setting(2000, min_value=0)
    """How long a worker waits for a pair another replica is promoting before leaving its jobs for later."""

    run_window_s: float = setting(60.0, min_value=0.0)
    """A continuous promotion run is closed and recorded after this long (or when the queue is empty)."""

    stale_run_s: float = setting(900.0, min_value=1.0)
    """A daily claim whose replica stopped heart-beating this long ago may be taken over."""

    daily_retry_s: float = setting(900.0, min_value=0.0)
    """After a failed daily run, the scheduler retries the same day after this long."""

    rpc_timeout_s: float = setting(30.0, min_value=0.1)
    """Deadline of each call to the KZG, LZG and log services (RunDecay/Purge get 20× this)."""

    log_retention_days: int = setting(0, min_value=0)
    """Retention horizon passed to Purge; 0 → the log service's default (365 days, SPEC §8)."""

    run_retention_days: int = setting(90, min_value=0)
    """The daily task deletes finished runs older than this (the newest run of each task stays); 0 keeps all."""

    @property
    def long_rpc_timeout_s(self) -> float:
        """RunDecay and Purge are set-based over all pairs and may take long (SPEC §5.7)."""
        return self.rpc_timeout_s * 20

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PixieConfig:
        """Read ``NOVABERG_PIXIE_*`` plus the shared ``NOVABERG_POSTGRES_URL`` and service addresses."""
        p = PREFIX
        return cls(
            common=CommonConfig.from_env(SERVICE_NAME, p, env=env),
            postgres_url=env_str(ENV_POSTGRES_URL, env=env),
            kzg_addr=env_str(ENV_KZG_ADDR, env=env),
            lzg_addr=env_str(ENV_LZG_ADDR, env=env),
            log_addr=env_str(ENV_LOG_ADDR, "", env=env),
            replica_id=env_str(f"{p}REPLICA_ID", _default_replica_id(), env=env),
            decay_at=parse_hhmm(f"{p}DECAY_AT", env_str(f"{p}DECAY_AT", "03:30", env=env)),
            **{f.name: _read_setting(f, env) for f in fields(cls) if _BOUNDS in f.metadata},
        )
