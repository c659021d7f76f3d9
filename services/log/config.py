"""Configuration of the log service, read once at start-up (STYLE rule 2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from novaberg_core.config import ENV_POSTGRES_URL, CommonConfig
from novaberg_core.env import env_int, env_prefix, env_str

SERVICE_NAME = "log"
"""The service's short name: its telemetry resource and its variables' prefix."""
PREFIX = env_prefix(SERVICE_NAME)
"""``NOVABERG_LOG_``: the prefix of the service's own variables."""
DEFAULT_RETENTION_DAYS = 365
"""LZG_PIPELINE_LOG_VORHALTUNG_TAGE (syn §10.5)."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of the log service; env prefix ``NOVABERG_LOG_``."""

    common: CommonConfig
    """Host, port, grace, tracing and log level (``NOVABERG_LOG_HOST`` …)."""

    postgres_url: str
    """Database holding the ``log`` schema (``NOVABERG_POSTGRES_URL``)."""

    retention_days: int = DEFAULT_RETENTION_DAYS
    """Default horizon of ``Purge`` in days (``NOVABERG_LOG_VORHALTUNG_TAGE``, or the seed's
    ``LZG_PIPELINE_LOG_VORHALTUNG_TAGE``; 365)."""

    pool_max_size: int = 8
    """Most PostgreSQL connections (``NOVABERG_LOG_POOL_MAX``)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LogConfig:
        """Read the configuration; a missing or malformed variable raises ConfigError naming it."""
        seed_days = env_int("LZG_PIPELINE_LOG_VORHALTUNG_TAGE", DEFAULT_RETENTION_DAYS, min_value=1, env=env)
        return cls(
            common=CommonConfig.from_env(SERVICE_NAME, PREFIX, env=env),
            postgres_url=env_str(ENV_POSTGRES_URL, env=env),
            retention_days=env_int(f"{PREFIX}VORHALTUNG_TAGE", seed_days, min_value=1, env=env),
            pool_max_size=env_int(f"{PREFIX}POOL_MAX", 8, min_value=1, max_value=100, env=env),
        )
