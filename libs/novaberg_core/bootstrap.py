"""A service process from its environment to its end, written once (STYLE rule 3).

Every ``python -m services.<svc>`` reads its config from the environment, applies the log level,
creates its server and serves until SIGTERM (:func:`novaberg_core.server.serve`); the services
differ only in their config class and their ``create_server``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from novaberg_core.config import CommonConfig
from novaberg_core.server import RunningServer, run_service, serve
from novaberg_core.telemetry import configure_logging

__all__ = ["ServiceConfig", "run_from_env", "serve_from_env"]


class ServiceConfig(Protocol):
    """A service's config: it embeds the settings every server has."""

    @property
    def common(self) -> CommonConfig: ...


_C = TypeVar("_C", bound=ServiceConfig)


async def serve_from_env(
    from_env: Callable[[], _C], create_server: Callable[[_C], Awaitable[RunningServer]]
) -> None:
    """Config from the environment, logging at its level, the server, then serve until SIGTERM."""
    cfg = from_env()
    configure_logging(cfg.common.log_level)
    running = await create_server(cfg)
    await serve(running, cfg.common.grace_seconds)


def run_from_env(from_env: Callable[[], _C], create_server: Callable[[_C], Awaitable[RunningServer]]) -> None:
    """The entry point of ``python -m services.<svc>``: :func:`serve_from_env` under ``run_service``."""

    async def main() -> None:
        await serve_from_env(from_env, create_server)

    run_service(main)
