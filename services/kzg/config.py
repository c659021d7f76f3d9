"""KZG configuration from the environment (prefix ``NOVABERG_KZG_``), failing fast (STYLE rule 2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from novaberg_core.config import ENV_REDIS_URL, CommonConfig
from novaberg_core.env import env_choice, env_int, env_prefix, env_str
from services.kzg.domain import REINFORCEMENT_MODES
from services.kzg.store import VECTOR_ALGORITHMS

SERVICE_NAME = "kzg"
"""The service's short name: its telemetry resource and its variables' prefix."""
PREFIX = env_prefix(SERVICE_NAME)
"""``NOVABERG_KZG_``: the prefix of the service's own variables."""


@dataclass(frozen=True, slots=True)
class KzgConfig:
    """Everything the KZG service needs; one instance per process (SPEC §3, §4)."""

    common: CommonConfig
    """Server settings shared by all services (host, port, grace, telemetry)."""

    redis_url: str
    """Redis with the search module (``NOVABERG_REDIS_URL``): session lists, entries, index, queue."""

    reinforcement: str = "thema"
    """Thematic reinforcement (SPEC §4.4): ``thema`` (default) or ``aus`` (``NOVABERG_KZG_REINFORCEMENT``)."""

    vector_algorithm: str = "FLAT"
    """``FLAT`` (exact; measured faster up to 30,000 entries a pair, bench/kzg_bench.py) or ``HNSW``."""

    reclaim_idle_ms: int = 60_000
    """Default idle time after which pending promotion jobs are reclaimed from another consumer."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> KzgConfig:
        return cls(
            common=CommonConfig.from_env(SERVICE_NAME, PREFIX, env=env),
            redis_url=env_str(ENV_REDIS_URL, env=env),
            reinforcement=env_choice(f"{PREFIX}REINFORCEMENT", REINFORCEMENT_MODES, "thema", env=env),
            vector_algorithm=env_choice(f"{PREFIX}VECTOR_ALGORITHM", VECTOR_ALGORITHMS, "FLAT", env=env),
            reclaim_idle_ms=env_int(f"{PREFIX}RECLAIM_IDLE_MS", 60_000, min_value=1, env=env),
        )
