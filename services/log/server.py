"""Log service bootstrap: store, servicer and the shared gRPC server wiring (STYLE rule 3)."""

from __future__ import annotations

from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg_core.bootstrap import run_from_env
from novaberg_core.server import RunningServer
from novaberg_core.server import create_server as create_grpc_server
from services.log.config import LogConfig
from services.log.servicer import LogServicer
from services.log.store import LogStore

FULL_SERVICE_NAME = log_pb2.DESCRIPTOR.services_by_name["LogService"].full_name


async def create_server(cfg: LogConfig, *, store: LogStore | None = None) -> RunningServer:
    """Open the store (unless given), start the server; stopping it closes a store it opened."""
    owned = store is None
    if store is None:
        store = await LogStore.open(cfg.postgres_url, max_size=cfg.pool_max_size)
    servicer = LogServicer(store, retention_days=cfg.retention_days)
    try:
        return await create_grpc_server(
            cfg.common,
            lambda server: log_pb2_grpc.add_LogServiceServicer_to_server(servicer, server),
            [FULL_SERVICE_NAME],
            on_shutdown=[store.close] if owned else [],
        )
    except BaseException:
        if owned:
            await store.close()
        raise


def main() -> None:
    """Entry point of ``python -m services.log``."""
    run_from_env(LogConfig.from_env, create_server)
