"""LZG configuration from the environment (prefix ``NOVABERG_LZG_``), failing fast (STYLE rule 2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from novaberg_core.config import ENV_POSTGRES_URL, CommonConfig
from novaberg_core.env import env_int, env_prefix, env_str

SERVICE_NAME = "lzg"
"""The service's short name: its telemetry resource and its variables' prefix."""
PREFIX = env_prefix(SERVICE_NAME)
"""``NOVABERG_LZG_``: the prefix of the service's own variables."""


@dataclass(frozen=True, slots=True)
class LzgConfig:
    """Everything the LZG service needs; one instance per process (SPEC §5)."""

    common: CommonConfig
    """Server settings shared by all services (``NOVABERG_LZG_HOST``, ``_PORT`` …)."""

    postgres_url: str
    """PostgreSQL with pgvector holding the ``lzg`` schema (``NOVABERG_POSTGRES_URL``)."""

    pool_max_size: int = 10
    """Most PostgreSQL connections (``NOVABERG_LZG_POOL_MAX``)."""

    cache_max_mb: int = 1024
    """Memory for the per-pair embedding matrices, least recently used pairs evicted first
    (``NOVABERG_LZG_CACHE_MB``; a 20,000-node pair of 384-d vectors takes ~31 MB)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LzgConfig:
        """Read the configuration; a missing or malformed variable raises ConfigError naming it."""
        return cls(
            common=CommonConfig.from_env(SERVICE_NAME, PREFIX, env=env),
            postgres_url=env_str(ENV_POSTGRES_URL, env=env),
            pool_max_size=env_int(f"{PREFIX}POOL_MAX", 10, min_value=2, max_value=100, env=env),
            cache_max_mb=env_int(f"{PREFIX}CACHE_MB", 1024, min_value=1, env=env),
        )
