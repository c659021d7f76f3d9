"""A service process from its environment to its end, written once (STYLE rule 3).

Every ``python -m services.<svc>`` reads its config from the environment, applies the log level,
creates its server and serves until SIGTERM (:func:`novaberg_core.server.serve`); the services
differ only in their config class and their ``create_server``. What more than one ``create_server``
does is here too: the embedding provider checked against its measured profile, and a store gauge
that stops with the server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

from novaberg_core.config import CommonConfig
from novaberg_core.embedding import EmbeddingProvider, ModelProfile, profile_for, provider_from_env
from novaberg_core.metrics import StoreSampler
from novaberg_core.server import RunningServer, ShutdownStep, run_service, serve
from novaberg_core.telemetry import configure_logging

__all__ = ["ServiceConfig", "profiled_provider", "run_from_env", "sampled_until_shutdown"]


class ServiceConfig(Protocol):
    """A service's config: it embeds the settings every server has."""

    @property
    def common(self) -> CommonConfig: ...


_C = TypeVar("_C", bound=ServiceConfig)


def run_from_env(from_env: Callable[[], _C], create_server: Callable[[_C], Awaitable[RunningServer]]) -> None:
    """The entry point of ``python -m services.<svc>``, under ``run_service``: config from the
    environment, logging at its level, the server, then serve until SIGTERM."""

    async def main() -> None:
        cfg = from_env()
        configure_logging(cfg.common.log_level)
        running = await create_server(cfg)
        await serve(running, cfg.common.grace_seconds)

    run_service(main)


def profiled_provider(
    provider: EmbeddingProvider | None = None, profile: ModelProfile | None = None
) -> tuple[EmbeddingProvider, ModelProfile]:
    """The service's embedding provider (from the environment unless given) and its measured
    profile (the model's, unless given): a model without a profile, or a profile of another
    dimension than the provider's vectors, refuses to start (SPEC §2)."""
    provider = provider or provider_from_env()
    profile = profile or profile_for(provider.model_id)
    if profile.dimension != provider.dimension:
        raise ValueError(
            f"profile of {provider.model_id} says {profile.dimension}-d, the provider gives {provider.dimension}-d"
        )
    return provider, profile


def sampled_until_shutdown(
    read: Callable[[], Awaitable[Mapping[str, float]]], *, min_interval_s: float = 10.0
) -> ShutdownStep:
    """Gauges ``read`` from a store only when scraped (:class:`StoreSampler`); returns the server's
    shutdown step that stops them."""
    sampler = StoreSampler(read, min_interval_s=min_interval_s)

    async def stop_sampling() -> None:
        sampler.close()

    return stop_sampling
