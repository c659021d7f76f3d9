"""Fixtures of the log service tests: the real server on a free port over a fresh database."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from novaberg.log.v1 import log_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.server import RunningServer, insecure_channel
from services.log.config import LogConfig
from services.log.server import create_server


def log_config(pg_url: str, port: int = 0) -> LogConfig:
    return LogConfig(
        common=CommonConfig(service_name="log", host="127.0.0.1", port=port), postgres_url=pg_url
    )


@pytest.fixture
async def log_server(pg_url: str) -> AsyncIterator[RunningServer]:
    running = await create_server(log_config(pg_url))
    try:
        yield running
    finally:
        await running.stop(1.0)


@pytest.fixture
async def log_stub(log_server: RunningServer) -> AsyncIterator[log_pb2_grpc.LogServiceStub]:
    async with insecure_channel(log_server.target) as channel:
        yield log_pb2_grpc.LogServiceStub(channel)
